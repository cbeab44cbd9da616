#!/usr/bin/env bash
# Asynchronous checkpoints (train.async_checkpoint, the default), with the test hook
# ROTOR_TEST_CKPT_WRITE_DELAY_MS slowing the writer's thread down (a sleep after each file):
#  - the checkpoints of a run written in the background equal those written synchronously,
#    file for file (rotor.ini aside, which names the run directory and the key);
#  - the step goes on while a checkpoint is written: steps after it are logged while its
#    temporary directory is there, and a save that finds the previous one still being written
#    waits for it and says how long;
#  - kill -9 while the writer runs leaves the last complete checkpoint; the next start resumes
#    from it, removes the partial temporary directory, and trains to the end with the losses
#    and final weights of the uninterrupted run, bit for bit; the run's end waits for the last
#    checkpoint, complete, before exit status 0;
#  - a background write that fails (its temporary directory removed under it) ends the run
#    with a non-zero status and a message naming the file and the error.
#   tests/async_checkpoint.sh ROTOR
set -uo pipefail
rotor=$1
configs=$(cd "$(dirname "$0")/../configs" && pwd)
out=$(mktemp -d)
pid=
trap 'kill -9 $pid 2>/dev/null; rm -rf "$out"' EXIT
export OMP_WAIT_POLICY=passive
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
steps=40
args=("$configs/tiny/gla-selective.ini" --set train.steps=$steps --set train.checkpoint_every=10
      --set train.log_every=1 --set train.val_every=20 --set run.threads=1 --set train.seq_len=32
      --set train.micro_batch=4)
train() { "$rotor" train "${args[@]}" "$@"; }
# logged RUN: the highest step in RUN/metrics.jsonl (0 before the first)
logged() { tail -n 1 "$1/metrics.jsonl" 2>/dev/null | sed -n 's/^{"step": *\([0-9]*\).*/\1/p' | grep . || echo 0; }
# wait_for COND...: until COND holds, at most 60 s
wait_for() { for _ in $(seq 3000); do "$@" && return 0; sleep 0.02; done; return 1; }

# -- the same checkpoints, written in the background and synchronously
train --set train.keep_checkpoints=0 --set run.dir="$out/async" >"$out/async.log" 2>&1 ||
  { cat "$out/async.log"; fail "the asynchronous run"; }
train --set train.keep_checkpoints=0 --set train.async_checkpoint=false --set run.dir="$out/sync" >"$out/sync.log" 2>&1 ||
  { cat "$out/sync.log"; fail "the synchronous run"; }
grep -q "step_00000040 (the step stalled [0-9.]* s for the host copy; written in [0-9.]* s in the background" "$out/async.log" ||
  fail "the asynchronous run does not report the step's stall and the write's time apart"
grep -q "step_00000040 (written in [0-9.]* s, the step waiting)" "$out/sync.log" || fail "the synchronous run's report"
/usr/bin/python3 - "$out/async/checkpoints" "$out/sync/checkpoints" <<'PY' || fail "async and sync checkpoints differ"
import filecmp, json, os, sys
a, b = sys.argv[1:3]
steps = sorted(d for d in os.listdir(a) if d.startswith("step_"))
assert steps == sorted(d for d in os.listdir(b) if d.startswith("step_")) and len(steps) == 4, steps
for s in steps:
    sa, sb = (json.load(open(f"{d}/{s}/trainer_state.json")) for d in (a, b))
    for st in (sa, sb):  # rotor.ini names run.dir and train.async_checkpoint: compared below
        del st["files"]["rotor.ini"], st["file_sizes"]["rotor.ini"]
    assert sa == sb, f"{s}: trainer_state.json differs"
    for f in sa["files"]:
        assert filecmp.cmp(f"{a}/{s}/{f}", f"{b}/{s}/{f}", shallow=False), f"{s}/{f} differs"
    ia, ib = (open(f"{d}/{s}/rotor.ini").read().splitlines() for d in (a, b))
    diff = [(x, y) for x, y in zip(ia, ib) if x != y]
    assert len(ia) == len(ib) and all(x.split(" =")[0] in ("dir", "async_checkpoint") for x, _ in diff), diff
print(f"{len(steps)} checkpoints, async and sync: every file the same")
PY

# -- killed with -9 while the checkpoint of step 20 is being written
run=$out/killed ck=$out/killed/checkpoints
ROTOR_TEST_CKPT_WRITE_DELAY_MS=400 "$rotor" train "${args[@]}" --set train.keep_checkpoints=2 --set run.dir="$run" \
  >"$out/killed.log" 2>&1 &
pid=$!
in_flight() { [ -d "$ck/.tmp-step_00000020" ] && (($(logged "$run") > 20)); }
if wait_for in_flight; then
  kill -9 $pid
  wait $pid 2>/dev/null
  echo "killed at step $(logged "$run") while step_00000020 was being written"
else
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  cat "$out/killed.log"
  fail "no step after 20 was logged while step 20's checkpoint was being written (the step waited for the write?)"
fi
[ -d "$ck/step_00000010" ] && [ ! -e "$ck/step_00000020" ] && [ "$(cat "$ck/latest" 2>/dev/null)" = step_00000010 ] ||
  fail "after the kill: $(ls -A "$ck" | tr '\n' ' '), latest $(cat "$ck/latest" 2>/dev/null)"
grep -q "step_00000010 (the step stalled .*; the next checkpoint waited [0-9.]* s for it)" "$out/killed.log" ||
  fail "the save of step 20 does not say how long it waited for step 10's write"

# -- the next start resumes from step 10 and trains to the end, the last write waited for
ROTOR_TEST_CKPT_WRITE_DELAY_MS=100 train --set train.keep_checkpoints=2 --set run.dir="$run" --resume auto \
  >"$out/resumed.log" 2>&1 || { cat "$out/resumed.log"; fail "the resumed run"; }
grep -q "resumed from .*step_00000010 at step 10" "$out/resumed.log" || fail "did not resume from step 10"
grep -q "skipping the checkpoint" "$out/resumed.log" && fail "the resume met a damaged checkpoint"
grep -q "step_00000040 (.*; the end of the run waited [0-9.]* s for it)" "$out/resumed.log" ||
  fail "the run's end did not wait for the last checkpoint"
[ "$(ls -A "$ck" | tr '\n' ' ')" = "latest step_00000030 step_00000040 " ] && [ "$(cat "$ck/latest")" = step_00000040 ] ||
  fail "at the end: $(ls -A "$ck" | tr '\n' ' ') (the partial directory removed, two kept, latest step_00000040)"
last=step_$(printf %08d $steps)
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$out/async/checkpoints/$last/$f" "$ck/$last/$f" || fail "$f differs from the uninterrupted run's"
done
/usr/bin/python3 - "$out/async/metrics.jsonl" "$run/metrics.jsonl" "$steps" <<'PY' || fail "metrics.jsonl"
import json, sys
def steps(path):
    by = {}
    for r in map(json.loads, open(path)):
        assert r["step"] not in by, f"{path}: step {r['step']} logged twice"
        by[r["step"]] = r
    return by
a, b = steps(sys.argv[1]), steps(sys.argv[2])
n = int(sys.argv[3])
assert sorted(b) == list(range(1, n + 1)), f"steps logged: {sorted(b)}"
for s in a:
    for k in ("loss", "grad_norm", "lr", "tokens") + (("val_loss",) if "val_loss" in a[s] else ()):
        assert a[s][k] == b[s][k], f"step {s}: {k} uninterrupted {a[s][k]!r}, killed and resumed {b[s][k]!r}"
print(f"metrics.jsonl: {n} steps, each once, the uninterrupted run's losses (final {b[n]['loss']:.6f})")
PY

# -- a background write that fails is reported, and the run fails
run=$out/failing ck=$out/failing/checkpoints
ROTOR_TEST_CKPT_WRITE_DELAY_MS=400 "$rotor" train "${args[@]}" --set run.dir="$run" >"$out/failing.log" 2>&1 &
pid=$!
# removed in the writer's sleep after its first file, the next file cannot be created
wait_for test -f "$ck/.tmp-step_00000010/model.safetensors" && rm -rf "$ck/.tmp-step_00000010" ||
  fail "no write of step 10 seen"
wait $pid
status=$?
pid=
[ $status != 0 ] || fail "a failed background write ended with exit status 0"
grep -q "error: .*/\.tmp-step_00000010/.*: No such file or directory" "$out/failing.log" ||
  { cat "$out/failing.log"; fail "the failed write's message does not name the file and the error"; }
[ ! -e "$ck/step_00000010" ] || fail "the failed checkpoint was installed"

[ $fails = 0 ] && echo "asynchronous checkpoints: the same files as synchronous ones, training goes on while they are written, kill -9 resumes from the last complete one"
exit $((fails != 0))
