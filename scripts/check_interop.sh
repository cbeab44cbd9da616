#!/usr/bin/env bash
# Trains a tiny checkpoint of every family x position embedding of configs/tiny/ on real text,
# loads each through transformers' AutoModelForCausalLM with the pinned versions of
# scripts/interop-requirements.txt and compares it with rotor (scripts/check_interop.py):
# per-request log-likelihoods with `rotor eval` (1e-4), greedy tokens of model.generate with
# `rotor generate`; the checkpoints no model computes must refuse to load. docs/interop.md.
#   scripts/check_interop.sh [ROTOR]            # makes the virtual environment when missing
#   scripts/check_interop.sh --if-venv [ROTOR]  # exits 77 (skipped) without it (scripts/test.sh)
#   scripts/check_interop.sh --cases REGEX ...  # only the cases whose names match (grep -E)
#   scripts/check_interop.sh --quick ...        # a case of every family and position embedding
#                                               # kind (ctest's `interop`; the full run takes
#                                               # about 20 minutes on 2 CPU cores)
# ROTOR: the rotor binary (build/rotor). The environment is build/interop-venv or
# $ROTOR_INTEROP_VENV; the text, tokenizer and tasks ../shared/data or $ROTOR_SHARED_DATA.
# On a GPU fla's kernels run there; on the CPU under Triton's interpreter (TRITON_INTERPRET=1),
# with requests of up to 64 tokens.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
if_venv=0 only=.
while [ $# -gt 0 ]; do
  case $1 in
    --if-venv) if_venv=1; shift ;;
    --cases) only=$2; shift 2 ;;
    --quick) only='^(gla-nope|gla-selective-pg-bias|gdn-rope|deltanet-selective|fox-nope|fox-pro-selective-pg|transformer-(nope|rope|selective)|mamba2-groups[12]|lstm)$'; shift ;;
    *) break ;;
  esac
done
rotor=$(realpath "${1:-$repo/build/rotor}")
venv=${ROTOR_INTEROP_VENV:-$repo/build/interop-venv}
shared=${ROTOR_SHARED_DATA:-$repo/../shared/data}
tok=$shared/tokenizer/mistral-7b-v0.1.model
if [ ! -f "$tok" ]; then echo "skipped: $shared (text, tokenizer, tasks) not found"; exit 77; fi
if [ ! -x "$venv/bin/python" ]; then
  if [ $if_venv = 1 ]; then echo "skipped: no virtual environment $venv (scripts/setup.sh --interop)"; exit 77; fi
  (cd "$repo" && ROTOR_INTEROP_VENV=$venv scripts/setup.sh --interop) || exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMP_WAIT_POLICY=passive OMP_NUM_THREADS=1 HF_HOME=$out/hf # transformers caches the remote code there
start=$SECONDS

echo "versions: $("$venv/bin/pip" freeze | grep -E '^(torch|triton|transformers|flash-linear-attention)==' | tr '\n' ' ')"
"$rotor" data tokenize --tokenizer "$tok" --out "$out/shards" --text-docs paragraph --val-fraction 0.02 \
  "$shared/text/tinyshakespeare.txt" >/dev/null || { echo "FAIL: tokenize"; exit 1; }

# case_ NAME CONFIG EXPECT [--set ...]: trains configs/tiny/CONFIG for 20 steps of 2 x 64 tokens
# at a high learning rate (weights well away from their initial values), scores requests and
# greedy completions with rotor; EXPECT is "load" or "refuse"
cases=()
case_() {
  local name=$1 config=$2 expect=$3 dir=$out/$1
  shift 3
  grep -qE "$only" <<<"$name" || return 0
  "$rotor" train "$repo/configs/tiny/$config" --set run.dir="$dir" --set model.vocab_size=32000 \
    --set data.train="$out/shards/train" --set data.val="$out/shards/val" --set data.tokenizer="$tok" \
    --set train.steps=20 --set train.micro_batch=2 --set train.grad_accum=1 --set train.lr=1e-2 \
    --set train.seq_len=64 --set train.val_every=0 \
    --set run.threads=1 "$@" >"$dir.train.log" 2>&1 || { echo "FAIL: train $name"; tail -3 "$dir.train.log"; return; }
  local ckpt=$dir/checkpoints/step_00000020
  "$rotor" eval --ckpt "$ckpt" --tasks piqa,arc_easy --data-dir "$shared/eval" --limit 2 --threads 1 \
    --out "$dir.results.json" --log-samples "$dir.samples.jsonl" >/dev/null 2>"$dir.eval.err" \
    || { echo "FAIL: eval $name"; tail -3 "$dir.eval.err"; return; }
  # the prompt: the shortest context of the requests
  "$venv/bin/python" - "$dir.samples.jsonl" >"$dir.prompts.jsonl" <<'PY'
import json, sys
contexts = sorted({(len(s["tokens"]) - s["n_continuation"], s["context"]) for s in map(json.loads, open(sys.argv[1]))})
for _, c in contexts[:1]:
    print(json.dumps({"prompt": c}))
PY
  "$rotor" generate --ckpt "$ckpt" --prompts "$dir.prompts.jsonl" --temperature 0 --max-new-tokens 3 --threads 1 \
    --out "$dir.gen.jsonl" 2>"$dir.gen.err" || { echo "FAIL: generate $name"; tail -3 "$dir.gen.err"; return; }
  cases+=("$name:$ckpt:$dir.samples.jsonl:$dir.gen.jsonl$([ "$expect" = refuse ] && echo :refuse)")
}

for f in "$repo"/configs/tiny/*.ini; do
  name=$(basename "$f" .ini)
  case $name in
    mamba2) case_ mamba2-groups2 "$name.ini" refuse
            case_ mamba2-groups1 "$name.ini" load --set model.n_groups=1 ;;
    lru | rotrnn | rnn | rnn_orth | exprnn | nnrnn | eurnn | lstm) case_ "$name" "$name.ini" refuse ;;
    *) case_ "$name" "$name.ini" load ;;
  esac
done
echo "trained, scored and generated with rotor: ${#cases[@]} checkpoints ($((SECONDS - start)) s)"

export TRITON_INTERPRET=1 # read by Triton on the CPU only; harmless where a GPU runs the kernels
# without flash-attn (CUDA only) fla's Transformer uses the torch stand-in of interop_shims
"$venv/bin/python" -c "import flash_attn" 2>/dev/null || export PYTHONPATH=$repo/scripts/interop_shims
"$venv/bin/python" "$repo/scripts/check_interop.py" "${cases[@]}" 2>"$out/check.err"
rc=$?
[ $rc = 0 ] || tail -20 "$out/check.err"
echo "check_interop: $((SECONDS - start)) s"
exit $rc
