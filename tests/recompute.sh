#!/usr/bin/env bash
# train.recompute (model.h Recompute): for tiny models of every block shape — prenorm blocks
# with the SwiGLU MLP (GLA + Selective RoPE, FoX, Gated DeltaNet), without an MLP (Mamba2), the
# lra block with channel dropout and bidirectional scans (the LRU classifier of
# configs/classify/fmnist-seq-lru.ini), Zoology's model shape (configs/synthetic/
# mqar-gla-zoology-authors-code-cpu.ini: BaseConv and GLA layers), and rnn blocks (nnRNN) — four steps under none, default, mixer
# and block give bit-identical weights, optimizer states and losses; `rotor info` prints
# each mode's memory, falling from none to block; the modes that re-run the mixers refuse
# train.carry_state.
set -uo pipefail
rotor=$1
configs=$(cd "$(dirname "$0")/../configs" && pwd)
. "$(dirname "$0")/test_lib.sh"
cases=(
  "gla-selective.ini"
  "fox-selective-pg.ini"
  "gdn-selective.ini"
  "mamba2.ini"
  "../classify/fmnist-seq-lru.ini --set train.micro_batch=4 --set model.hidden_size=16 --set model.complex_state_size=8"
  "../synthetic/mqar-gla-zoology-authors-code-cpu.ini --set train.micro_batch=4"
  "nnrnn.ini"
)
for c in "${cases[@]}"; do
  read -r -a args <<<"$c"
  name=$(basename "${args[0]}" .ini)
  for mode in none default mixer block; do
    dir=$out/$name-$mode
    if ! "$rotor" train "$configs/tiny/${args[0]}" "${args[@]:1}" --set train.steps=4 --set train.log_every=1 \
        --set train.val_every=0 --set train.checkpoint_every=4 --set run.threads=1 --set train.recompute=$mode \
        --set run.dir="$dir" >"$dir.log" 2>&1; then
      tail -5 "$dir.log"
      fail "$name: train.recompute = $mode"
      continue
    fi
    [ $mode = none ] && continue
    for f in model.safetensors optimizer.safetensors; do
      cmp -s "$out/$name-none/checkpoints/step_00000004/$f" "$dir/checkpoints/step_00000004/$f" ||
        fail "$name: $f under train.recompute = $mode differs from none's"
    done
    cmp -s <(grep -o '"loss":[^,]*' "$out/$name-none/metrics.jsonl") <(grep -o '"loss":[^,]*' "$dir/metrics.jsonl") ||
      fail "$name: the losses under train.recompute = $mode differ from none's"
  done
  echo "$name: the four modes agree"
done
line=$("$rotor" info "$configs/gla-370m-selective.ini" | grep '^train.recompute:')
echo "$line"
python3 - "$line" <<'PY' || fail "rotor info: the memory does not fall from none to block"
import re, sys
gib = [float(x) for x in re.findall(r"(none|default|mixer|block) ([0-9.]+) GiB", sys.argv[1]) and
       [v for _, v in re.findall(r"(none|default|mixer|block) ([0-9.]+) GiB", sys.argv[1])]]
assert len(gib) == 4 and gib[0] > gib[1] > gib[2] > gib[3], gib
PY
if "$rotor" train "$configs/tiny/rnn.ini" --set data.train=task --set task.type=chars --set train.carry_state=true \
    --set train.recompute=mixer --set run.dir="$out/carry" >/dev/null 2>"$out/carry.err"; then
  fail "train.carry_state with train.recompute = mixer: exit status 0"
elif ! grep -q "train.carry_state = true: the mixers' forward would run twice" "$out/carry.err"; then
  fail "train.carry_state with train.recompute = mixer: $(cat "$out/carry.err")"
fi
finish recompute
