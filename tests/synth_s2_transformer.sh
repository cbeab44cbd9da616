#!/usr/bin/env bash
# The CPU S2 (parity) result of docs/synthetic.md for the softmax baseline: a one-layer
# Transformer trained on 32 elements with `rotor synth` from
# configs/synthetic/s2-transformer-cpu.ini (lr 1e-3, seed 0). With Selective RoPE it gets
# every test sequence right up to the training length; with NoPE few of them (its attention
# has no way to count positions of the same token). Neither reaches 4x the training length.
set -euo pipefail
rotor=$1
src=$(cd "$(dirname "$0")/.." && pwd)
cfg=$src/configs/synthetic/s2-transformer-cpu.ini
source "$(dirname "$0")/synth_lib.sh"

run selective --set train.lr=1e-3
run nope --set train.lr=1e-3 --set pe.type=nope

sel=$(field selective prefix_accuracy_train_len)
nope=$(field nope prefix_accuracy_train_len)
mixer=$(/usr/bin/env python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['mixer'])" \
    "$out/selective/synth_results.json")
[[ $mixer == transformer ]] || fail "synth_results.json names the mixer '$mixer'"
ge "$sel" 0.95 || fail "Transformer + Selective RoPE: only $sel of the test sequences right up to the training length"
ge 0.5 "$nope" || fail "Transformer NoPE got $nope of the test sequences right up to the training length: the comparison no longer separates"
echo "ok: transformer right up to t = 32: selective $sel, nope $nope"
