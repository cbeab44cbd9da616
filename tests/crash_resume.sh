#!/usr/bin/env bash
# Crash consistency: a trainer killed with SIGKILL at random moments (at start-up, in a step,
# inside a checkpoint's write or the update of `latest`), each time followed by
# `rotor train --resume auto`, loses nothing and gets nothing wrong:
#  - no resume ever skips a damaged checkpoint: a step_* directory is complete or absent;
#  - the run ends with the weights and optimizer state of an uninterrupted run, bit for bit,
#    and metrics.jsonl holds every step once, with the uninterrupted run's losses.
# At least 30 kills, of which at least 3 inside a checkpoint write, within a time bound.
#   tests/crash_resume.sh ROTOR [KILLS] [SECONDS]   (defaults 30 and 240; the seed of the
#   random delays is printed, ROTOR_CRASH_SEED repeats it)
set -uo pipefail
rotor=$1 kills_wanted=${2:-30} bound=${3:-240}
configs=$(cd "$(dirname "$0")/../configs" && pwd)
out=$(mktemp -d)
trap 'kill -9 $pid 2>/dev/null; rm -rf "$out"' EXIT
export OMP_WAIT_POLICY=passive
pid=
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
seed=${ROTOR_CRASH_SEED:-$(date +%s)}
RANDOM=$seed
echo "random delays from seed $seed (ROTOR_CRASH_SEED=$seed repeats them)"

steps=300
args=("$configs/tiny/gla-selective.ini" --set train.steps=$steps --set train.checkpoint_every=1
      --set train.keep_checkpoints=2 --set train.log_every=1 --set train.val_every=50 --set run.threads=1
      --set train.seq_len=32 --set train.micro_batch=4) # small steps: checkpoint writes take much of the time
start=$(date +%s)
"$rotor" train "${args[@]}" --set run.dir="$out/straight" >"$out/straight.log" 2>&1 ||
  { cat "$out/straight.log"; echo "FAIL: the uninterrupted run"; exit 1; }
straight_s=$(($(date +%s) - start))

# kill -9 after a random delay of 0.05 .. 0.05 + the uninterrupted run's duration / 30
run=$out/killed ck=$out/killed/checkpoints
max_ms=$((50 + straight_s * 1000 / 30))
kills=0 in_write=0 in_latest=0 attempt=0
deadline=$(($(date +%s) + bound))
while ((kills < kills_wanted || in_write < 3)) && (($(date +%s) < deadline)); do
  attempt=$((attempt + 1))
  "$rotor" train "${args[@]}" --set run.dir="$run" --resume auto >"$out/attempt-$attempt.log" 2>&1 &
  pid=$!
  delay=$((50 + RANDOM % max_ms))
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  if ! kill -9 $pid 2>/dev/null; then # it finished before the kill: start over from a fresh directory
    wait $pid
    grep -q "^done:" "$out/attempt-$attempt.log" || { cat "$out/attempt-$attempt.log"; fail "attempt $attempt failed"; break; }
    rm -rf "$run"
    continue
  fi
  wait $pid 2>/dev/null
  kills=$((kills + 1))
  # leftovers of this attempt (newer than its log): it was killed inside a write
  [ -n "$(find "$ck" -maxdepth 1 -name '.tmp-step_*' -newer "$out/attempt-$attempt.log" 2>/dev/null)" ] &&
    in_write=$((in_write + 1))
  [ -n "$(find "$ck" -maxdepth 1 -name latest.tmp -newer "$out/attempt-$attempt.log" 2>/dev/null)" ] &&
    in_latest=$((in_latest + 1))
done
echo "$kills kills in $attempt attempts: $in_write inside a checkpoint write, $in_latest inside the update of latest"
((kills >= kills_wanted && in_write >= 3)) || fail "within $bound s: $kills kills ($in_write inside a write)"

# the last attempt runs to the end
"$rotor" train "${args[@]}" --set run.dir="$run" --resume auto >"$out/final.log" 2>&1 ||
  { cat "$out/final.log"; fail "the final resume"; }
if grep -l "skipping the checkpoint\|none of its" "$out"/attempt-*.log "$out/final.log" >"$out/skipped" 2>/dev/null; then
  fail "a resume found a damaged checkpoint:"
  cat $(cat "$out/skipped")
fi
last=step_$(printf %08d $steps)
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$out/straight/checkpoints/$last/$f" "$ck/$last/$f" || fail "$f differs from the uninterrupted run's"
done
/usr/bin/python3 - "$out/straight/metrics.jsonl" "$run/metrics.jsonl" "$steps" <<'PY' || fail "metrics.jsonl"
import json, sys
def steps(path):
    rows = [json.loads(line) for line in open(path)]
    by = {}
    for r in rows:
        assert r["step"] not in by, f"{path}: step {r['step']} logged twice"
        by[r["step"]] = r
    return by
a, b = steps(sys.argv[1]), steps(sys.argv[2])
assert sorted(b) == list(range(1, int(sys.argv[3]) + 1)), f"steps logged: {sorted(set(range(1, int(sys.argv[3]) + 1)) - set(b))} missing"
for s in a:
    for k in ("loss", "grad_norm", "lr", "tokens") + (("val_loss",) if "val_loss" in a[s] else ()):
        assert a[s][k] == b[s][k], f"step {s}: {k} uninterrupted {a[s][k]!r}, killed and resumed {b[s][k]!r}"
print(f"metrics.jsonl: {len(b)} steps, each once, the uninterrupted run's losses")
PY
[ $fails = 0 ] && echo "crash consistency: $kills kills, the same final weights and losses as the uninterrupted run"
exit $((fails != 0))
