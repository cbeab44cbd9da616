#!/usr/bin/env bash
# nnRNN's copy task (docs/nnrnn.md), short enough for the suite: a delay of 30 blanks, 300
# RMSprop steps. The nnRNN goes well below the memoryless baseline (its test loss under a
# fifth of it, the copied symbols mostly right) while the plain tanh RNN stays at the
# baseline (within 5%, accuracy near chance 1/8). A few seconds on one core.
set -euo pipefail
rotor=$1
configs=$(cd "$(dirname "$0")/../configs" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for t in nnrnn rnn; do
  "$rotor" synth "$configs/nnrnn/copy-cpu.ini" --set model.type=$t --set task.delay=30 --set train.steps=300 \
    --set train.val_every=100 --set run.dir="$out/$t" >"$out/$t.log"
  grep '^copy_memory:' "$out/$t.log" | sed "s/^/$t: /"
done
/usr/bin/python3 - "$out/nnrnn/synth_results.json" "$out/rnn/synth_results.json" <<'PY'
import json, sys
nn, rnn = (json.load(open(p))["metrics"] for p in sys.argv[1:3])
base = nn["baseline_loss"]
assert nn["test_loss"] < 0.2 * base and nn["accuracy"] > 0.6, f"nnrnn: {nn}"
assert abs(rnn["test_loss"] - base) < 0.05 * base and rnn["accuracy"] < 0.25, f"rnn: {rnn}"
print(f"nnrnn {nn['test_loss']:.4f} and rnn {rnn['test_loss']:.4f} against the baseline {base:.4f}")
PY
