#!/usr/bin/env bash
# TensorBoard event files written by `rotor train` (run.tensorboard, src/io/tb_events.h), read
# back with TensorBoard's own reader (the tensorboard package from PyPI, in a virtual
# environment BUILD/tb-venv, or $ROTOR_TB_VENV, made on first use; skipped when it cannot be
# made): on a tiny GLA trained on real text with validations, every number of metrics.jsonl
# (loss, lr, grad_norm, tokens_per_s, val loss / ppl) is a scalar at its step, equal as fp32;
# after a resume from the step-20 checkpoint of a 30-step run (its later steps logged twice),
# TensorBoard's view (the START event of the new file drops the old file's later steps)
# equals metrics.jsonl again; run.tensorboard = false writes no event file.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"
venv=${ROTOR_TB_VENV:-$(cd "$(dirname "$rotor")" && pwd)/tb-venv}
test_venv "$venv" "import tensorboard" "tensorboard==2.21.0"
train_ckpt gla-selective.ini 30 --set train.val_every=10 --set train.log_every=1 --set train.checkpoint_every=10 \
  --set train.keep_checkpoints=0 --set run.threads=1
compare() { # the scalars of RUN_DIR's event files against its metrics.jsonl
  "$venv/bin/python" - "$1" <<'PY'
import glob, json, math, struct, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
run = sys.argv[1]
files = glob.glob(run + "/tensorboard/events.out.tfevents.*")
assert files, "no event file"
acc = EventAccumulator(run + "/tensorboard", size_guidance={"scalars": 0})
acc.Reload()
tb = {}
for tag in acc.Tags()["scalars"]:
    events = acc.Scalars(tag)
    tb[tag] = {e.step: e.value for e in events}
    # one value a step: after a resume the old file's later steps are dropped, not doubled
    assert len(events) == len(tb[tag]), (tag, len(events), len(tb[tag]))
want = {}
for line in open(run + "/metrics.jsonl"):
    r = json.loads(line)
    if "step" not in r:
        continue
    for k, v in r.items():
        if k == "step" or not isinstance(v, (int, float)) or isinstance(v, bool):
            continue
        tag = "val/" + k[4:] if k.startswith("val_") else "train/" + k
        want.setdefault(tag, {})[r["step"]] = v
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]
assert set(tb) == set(want), (sorted(tb), sorted(want))
for tag, steps in want.items():
    assert set(tb[tag]) == set(steps), (tag, sorted(set(tb[tag]) ^ set(steps)))
    for s, v in steps.items():
        assert math.isclose(tb[tag][s], f32(v), rel_tol=1e-6, abs_tol=1e-30), (tag, s, tb[tag][s], v)
for tag in ("train/loss", "train/lr", "train/grad_norm", "train/tokens_per_s", "val/loss", "val/ppl"):
    assert tag in tb, tag
print("%d scalars in %d tags, %d event file(s)" % (sum(map(len, tb.values())), len(tb), len(files)))
PY
}
compare "$out/run" || fail "the event file of a fresh run"
# the last 10 steps again from the step-20 checkpoint
rm -rf "$out/run/checkpoints/step_00000030"
sleep 1 # a new event file name (seconds in the name)
"$rotor" train "$here/../configs/tiny/gla-selective.ini" --set run.dir="$out/run" --set model.vocab_size=32000 \
  --set model.doc_mask=true --set data.train="$out/shards/train" --set data.val="$out/shards/val" \
  --set data.tokenizer="$tok" --set train.steps=30 --set train.val_every=10 --set train.log_every=1 \
  --set train.checkpoint_every=10 --set train.keep_checkpoints=0 --set run.threads=1 --resume auto \
  >"$out/resume.log" 2>&1 || { cat "$out/resume.log"; fail "resume"; }
grep -q "resumed from .*step_00000020 at step 20" "$out/resume.log" || fail "did not resume at step 20"
[ "$(ls "$out/run/tensorboard" | wc -l)" = 2 ] || fail "a resumed run writes a second event file"
compare "$out/run" || fail "the event files after a resume"
"$rotor" train "$here/../configs/tiny/gla-selective.ini" --set run.dir="$out/off" --set model.vocab_size=32000 \
  --set data.train="$out/shards/train" --set data.tokenizer="$tok" --set train.steps=2 --set train.val_every=0 \
  --set run.threads=1 --set run.tensorboard=false >"$out/off.log" 2>&1 || { cat "$out/off.log"; fail "run.tensorboard=false"; }
[ ! -e "$out/off/tensorboard" ] || fail "run.tensorboard = false wrote $out/off/tensorboard"
finish tensorboard
