# Shared by the end-to-end tests on a tiny checkpoint trained on real text (eval_test.sh,
# generate_cli.sh): sourced after `set -uo pipefail` with $rotor set; exits 77 (skipped) without
# ../shared/data. Gives $here, $shared, $tok (the Mistral tokenizer), train_ckpt, and
# test_lib.sh's $out, fail and finish.
here=$(cd "$(dirname "$0")" && pwd)
shared=${ROTOR_SHARED_DATA:-$here/../../shared/data} # ROTOR_SHARED_DATA: a checkout without ../shared
if [ ! -f "$shared/tokenizer/mistral-7b-v0.1.model" ]; then echo "skipped: ../shared/data not found"; exit 77; fi
. "$here/test_lib.sh"
tok=$shared/tokenizer/mistral-7b-v0.1.model

# train_ckpt CONFIG STEPS [OPTION...]: tiny Shakespeare tokenized into $out/shards, then
# configs/tiny/CONFIG trained on it for STEPS steps into $out/run (documents masked, no
# validation, OPTIONs added); sets $ckpt to the final checkpoint.
train_ckpt() {
  local config=$1 steps=$2
  shift 2
  "$rotor" data tokenize --tokenizer "$tok" --out "$out/shards" --text-docs paragraph --val-fraction 0.02 \
    "$shared/text/tinyshakespeare.txt" >/dev/null || fail "tokenize"
  "$rotor" train "$here/../configs/tiny/$config" --set run.dir="$out/run" --set model.vocab_size=32000 \
    --set model.doc_mask=true --set data.train="$out/shards/train" --set data.val="$out/shards/val" \
    --set data.tokenizer="$tok" --set train.steps="$steps" --set train.val_every=0 "$@" \
    >"$out/train.log" || fail "train"
  ckpt=$out/run/checkpoints/step_$(printf %08d "$steps")
}

# test_venv DIR CHECK PIP_SPEC: the virtual environment DIR with PIP_SPEC from PyPI, made on
# first use (reused while `DIR/bin/python -c CHECK` succeeds); where it cannot be made, the
# test reports skipped (exit 77) with pip's last lines.
test_venv() {
  local venv=$1 check=$2 spec=$3
  "$venv/bin/python" -c "$check" 2>/dev/null && return 0
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >"$out/venv.log" 2>&1 || ! "$venv/bin/pip" install -q "$spec" >>"$out/venv.log" 2>&1; then
    tail -3 "$out/venv.log"
    rm -rf "$venv"
    echo "skipped: could not install $spec into $venv (python3 -m venv; pip install)"
    exit 77
  fi
}
