#!/usr/bin/env bash
# The CPU S2 (parity) result of docs/synthetic.md: one-layer GLA trained on 32 elements with
# `rotor synth` from configs/synthetic/s2-gla-cpu.ini (seed 0). Selective RoPE gets the test
# sequences right up to the training length and most of them up to twice it; NoPE gets
# almost none right to twice the training length (RoPE behaves like NoPE in the sweep of
# docs/synthetic.md and is left out here for time). Also checks the results JSON and plot,
# and that a vocabulary without room for BOS is refused.
set -euo pipefail
rotor=$1
src=$(cd "$(dirname "$0")/.." && pwd)
cfg=$src/configs/synthetic/s2-gla-cpu.ini
source "$(dirname "$0")/synth_lib.sh"

run selective --set train.steps=3000
run nope --set train.steps=3000 --set pe.type=nope

sel=$(field selective prefix_accuracy_train_len)
sel2=$(at selective 64)
nope2=$(at nope 64)
ge "$sel" 0.95 || fail "Selective RoPE: only $sel of the test sequences right up to the training length"
ge "$sel2" 0.5 || fail "Selective RoPE: only $sel2 of the test sequences right up to twice the training length"
ge 0.2 "$nope2" || fail "NoPE got $nope2 of the test sequences right to twice the training length: the comparison no longer separates"

[[ $(field selective train_len) == 32 && $(field selective test_len) == 128 ]] || fail "train/test lengths in synth_results.json"
grep -q '<polyline' "$out/selective/prefix_accuracy.svg" || fail "no prefix accuracy plot"

if "$rotor" synth "$cfg" --set run.dir="$out/bad" --set model.vocab_size=2 > "$out/bad.log" 2>&1; then
    fail "a vocabulary without room for BOS was accepted"
fi
grep -q "model.vocab_size >= 3" "$out/bad.log" || { cat "$out/bad.log"; fail "unclear error for a small vocabulary"; }
echo "ok: right up to t = 32 / 64: selective $sel / $sel2, nope $(field nope prefix_accuracy_train_len) / $nope2"
