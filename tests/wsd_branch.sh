#!/usr/bin/env bash
# train.schedule = wsd and a decay run branched from a stable-phase checkpoint (docs/models.md §training-recipe,
# "Schedule"), on a tiny GLA trained on real text:
#  - a stable run (no decay: train.decay_frac = 0) holds lr after its warmup;
#  - a decay run with train.decay_from = the stable run's step-20 checkpoint, into a fresh
#    run.dir, starts at step 20 with its weights, optimizer state and data position: its first
#    step's loss equals the stable run's at the same step (same lr there: progress 0), and its
#    learning rates follow lr + (lr_min - lr)(step - 20) / 19 to lr_min at step 39;
#  - continued with --resume auto from its own step-30 checkpoint, it keeps the decay's start
#    at 20;
#  - errors: decay_from without wsd, with --resume CHECKPOINT, into a used run.dir.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"
train_ckpt gla-selective.ini 40 --set train.schedule=wsd --set train.decay_frac=0 --set train.lr=2e-3 \
  --set train.lr_min=1e-4 --set train.warmup_frac=0.1 --set train.log_every=1 --set train.checkpoint_every=10 \
  --set train.keep_checkpoints=0 --set run.threads=1
stable=$out/run
branch=$stable/checkpoints/step_00000020
[ -d "$branch" ] || { fail "no step-20 checkpoint"; finish wsd_branch; }
decay_args=("$here/../configs/tiny/gla-selective.ini" --set model.vocab_size=32000 --set model.doc_mask=true
            --set data.train="$out/shards/train" --set data.val="$out/shards/val" --set data.tokenizer="$tok"
            --set train.val_every=0 --set train.steps=40 --set train.schedule=wsd --set train.lr=2e-3
            --set train.lr_min=1e-4 --set train.warmup_frac=0.1 --set train.log_every=1 --set train.checkpoint_every=10
            --set train.keep_checkpoints=0 --set run.threads=1 --set train.decay_from="$branch")
"$rotor" train "${decay_args[@]}" --set run.dir="$out/decay" >"$out/decay1.log" 2>&1 ||
  { cat "$out/decay1.log"; fail "decay run"; }
grep -q "resumed from $branch at step 20" "$out/decay1.log" || fail "the decay run did not start from the step-20 checkpoint"
# its last checkpoint gone, the run continued from its step-30 one: the decay still from 20
rm -rf "$out/decay/checkpoints/step_00000040"
"$rotor" train "${decay_args[@]}" --set run.dir="$out/decay" --resume auto >"$out/decay2.log" 2>&1 ||
  { cat "$out/decay2.log"; fail "decay run resumed"; }
grep -q "resumed from $out/decay/checkpoints/step_00000030 at step 30" "$out/decay2.log" ||
  { cat "$out/decay2.log"; fail "--resume auto did not take the decay run's own checkpoint"; }
grep -q "schedule: wsd, the decay to lr_min from step 20 of 40" "$out/decay2.log" || fail "the resumed decay does not start at 20"
python3 - "$stable/metrics.jsonl" "$out/decay/metrics.jsonl" <<'PY' || fail "losses or learning rates"
import json, math, sys
def rows(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        if "step" in r and "lr" in r:
            out[r["step"]] = r
    return out
stable, decay = rows(sys.argv[1]), rows(sys.argv[2])
# the stable run: warmup over 4 steps, then lr throughout
for s in range(5, 41):
    if s in stable:
        assert abs(stable[s]["lr"] - 2e-3) < 1e-12, (s, stable[s]["lr"])
# metrics count steps from 1: the line of step s is optimizer step s - 1
first = min(decay)
assert first == 21, first
assert decay[21]["loss"] == stable[21]["loss"], (decay[21]["loss"], stable[21]["loss"])
for s, r in decay.items():
    want = 2e-3 + (1e-4 - 2e-3) * ((s - 1) - 20) / 19
    assert math.isclose(r["lr"], want, rel_tol=1e-9, abs_tol=1e-12), (s, r["lr"], want)
assert max(decay) == 40 and abs(decay[40]["lr"] - 1e-4) < 1e-12
PY
expect() { # NAME PATTERN CMD...: fails, stderr matching PATTERN
  local name=$1 pattern=$2
  shift 2
  if "$@" >"$out/$name.out" 2>"$out/$name.err"; then fail "$name: exit status 0"; return; fi
  grep -Eq -- "$pattern" "$out/$name.err" || { fail "$name: stderr lacks /$pattern/:"; cat "$out/$name.err"; }
}
expect not_wsd "train.decay_from is set: it belongs to train.schedule = wsd \(the schedule is cosine\)" \
  "$rotor" train "${decay_args[@]}" --set train.schedule=cosine --set run.dir="$out/x1"
expect two_starts "--resume $branch and train.decay_from = $branch name two starting points" \
  "$rotor" train "${decay_args[@]}" --set run.dir="$out/x2" --resume "$branch"
expect used_dir "already holds a run" "$rotor" train "${decay_args[@]}" --set run.dir="$out/decay"
expect late "train.decay_from = $branch is at step 20: train.steps = 20 leaves no decay" \
  "$rotor" train "${decay_args[@]}" --set run.dir="$out/x3" --set train.steps=20
expect in_warmup "the decay would begin at step 2, inside the warmup's 4 steps" \
  "$rotor" train "${decay_args[@]}" --set train.decay_from= --set train.decay_frac=0.95 --set run.dir="$out/x4"
finish wsd_branch
