#!/usr/bin/env bash
# MAD end to end (docs/synthetic.md): scripts/mad_sweep.sh runs `rotor synth` on memorization
# (configs/synthetic/mad-memorization-cpu.ini shrunk to 31 keys, 300 steps) and writes the
# Table-2-shaped results.md; the model must learn the fixed key-value table (>= 0.95 test
# accuracy, mad-lab's metric). Also checks synth_results.json, and that an explicit
# train.seq_len the task does not have is refused with the row length named.
set -euo pipefail
rotor=$1
src=$(cd "$(dirname "$0")/.." && pwd)
cfg=$src/configs/synthetic/mad-memorization-cpu.ini
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$src/scripts/mad_sweep.sh" "$out/sweep" --configs "$cfg" --pe nope --lr 3e-3 --wd 0 --rotor "$rotor" \
    --set task.vocab=64 --set task.seq_len=16 --set train.micro_batch=32 --set train.steps=300 \
    --set task.test_examples=256 > "$out/sweep.log" 2>&1 || { cat "$out/sweep.log"; fail "mad_sweep.sh failed"; }
res=$out/sweep/mad_memorization/baseline/nope-lr3e-3-wd0-seed0/synth_results.json
[[ -f $res ]] || { cat "$out/sweep.log"; fail "no synth_results.json"; }
acc=$(/usr/bin/env python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['metrics']; \
assert m['examples'] == 256 and m['scored_positions'] == 256 * 8 and m['setting']['vocab'] == 64; print(m['accuracy'])" "$res") ||
    fail "synth_results.json fields"
/usr/bin/env python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.95 else 1)" "$acc" ||
    fail "memorization: test accuracy $acc < 0.95"
grep -q '^| nope | — | — | — | [01]\.[0-9]* (1) |' "$out/sweep/results.md" || { cat "$out/sweep/results.md"; fail "results.md table"; }

if "$rotor" synth "$cfg" --set run.dir="$out/bad" --set train.seq_len=17 > "$out/bad.log" 2>&1; then
    fail "a train.seq_len other than the task's was accepted"
fi
grep -q "rows of 32 tokens" "$out/bad.log" || { cat "$out/bad.log"; fail "unclear error for train.seq_len"; }
echo "ok: memorization test accuracy $acc"
