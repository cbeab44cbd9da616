#!/usr/bin/env bash
# `rotor synth` on Speech Commands end to end (docs/classification.md "Speech Commands"): a
# synthetic tree of tones in the dataset's layout (tests/speech_tones.py: word k of SC10 is a
# tone of 40 + 40 k Hz, with noise, random phase, amplitude and length) read through
# configs/classify/speech-commands-rotrnn-cpu.ini at 1 kHz (task.sample_stride = 16), with a
# one-layer RotRNN whose rotations span [0, pi] per sample. 60 steps of 16 clips must score
# at least 0.3 on the 80 test clips, where chance is 0.1 (here: 0.675, the same on every run). About 15 s.
set -euo pipefail
rotor=$1
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
/usr/bin/python3 "$src/tests/speech_tones.py" "$out/sc" --words 10 --train 16 --val 2 --test 8
"$rotor" synth "$src/configs/classify/speech-commands-rotrnn-cpu.ini" --set run.dir="$out/run" \
    --set task.path="$out/sc" --set task.words=10 --set model.num_classes=10 --set task.sample_stride=16 \
    --set task.max_examples=0 --set model.hidden_size=32 --set model.num_layers=1 --set model.real_state_size=32 \
    --set model.max_phase=3.14 --set model.gamma_min=0.9 --set model.gamma_max=0.999 --set train.lr=1e-2 \
    --set train.steps=60 --set train.val_every=30 --set train.val_batches=2 --set train.log_every=10 \
    --set train.seed=0 > "$out/log" 2>&1 || { cat "$out/log"; fail "rotor synth on the tones failed"; }
grep "test accuracy" "$out/log"
/usr/bin/python3 - "$out/run/synth_results.json" <<'PY' || fail "the tones were not learned"
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
assert m["examples"] == 80 and m["classes"] == 10, m
assert m["accuracy"] >= 0.3, f"test accuracy {m['accuracy']} after 60 steps: chance is 0.1"
PY
