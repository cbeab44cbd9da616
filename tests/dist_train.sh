#!/usr/bin/env bash
# Data parallelism under mpirun on the CPU (MPI all-reduce), ZeRO-1, resumption across world
# sizes, and fault tolerance:
#  - 2 ranks give the losses (to 1e-6 relative) and weights (1e-5) of 1 rank with twice the
#    accumulation steps, with and without ZeRO-1, with the gradients summed in one bucket
#    (the default run.bucket_mb for this model) and in one bucket per block (bucket_mb 0.01;
#    also with 2 accumulation steps per rank, whose first backward must not communicate);
#  - a ZeRO-1 checkpoint written by 2 ranks resumes at 1 and at 3 ranks (the same global
#    batch) and continues the uninterrupted losses;
#  - SIGTERM (1 process) and SIGUSR1 through mpirun (2 ranks) finish the step, checkpoint and
#    exit 0, and resuming reproduces the uninterrupted losses;
#  - SIGKILL of one rank ends the job with a non-zero status; a stopped (hanging) rank makes
#    the others exit with an error after run.collective_timeout.
# On a GPU (scripts/gpu_check.sh part multirank): DIST_DEVICE=cuda, DIST_COLLECTIVES=mpi (two
# ranks on one GPU sum through host memory: NCCL refuses them), DIST_PARTS="equivalence resume"
# (of equivalence buckets resume signals faults), DIST_RTOL / DIST_WTOL the loss and weight
# tolerances (bf16 kernels with atomic sums are not bit-reproducible), DIST_CONFIG the tiny
# config, PYTHON a python3 with numpy.
set -uo pipefail
rotor=$1
here=$(cd "$(dirname "$0")" && pwd)
cfg=${DIST_CONFIG:-$here/../configs/tiny/gla-selective.ini}
rtol=${DIST_RTOL:-1e-6} wtol=${DIST_WTOL:-1e-5} python=${PYTHON:-/usr/bin/python3}
parts=" ${DIST_PARTS:-equivalence buckets resume signals faults} "
out=$(mktemp -d)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
# sandboxed machines may forbid cross-process memory access (CMA): plain shared memory
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi=(mpirun --oversubscribe --bind-to none)
trap 'rm -rf "$out"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
common=(--set train.steps=20 --set train.log_every=1 --set train.val_every=10 --set train.checkpoint_every=10
        --set train.keep_checkpoints=0 --set train.seq_len=64 --set run.threads=1
        --set run.device="${DIST_DEVICE:-cpu}" --set run.collectives="${DIST_COLLECTIVES:-auto}")
compare() { # compare A B FROM_STEP RTOL: losses of steps >= FROM_STEP
  "$python" - "$1/metrics.jsonl" "$2/metrics.jsonl" "$3" "$4" <<'PY'
import json, sys
a = {j["step"]: j for j in map(json.loads, open(sys.argv[1]))}
b = {j["step"]: j for j in map(json.loads, open(sys.argv[2]))}
first, rtol = int(sys.argv[3]), float(sys.argv[4])
steps = [s for s in sorted(a) if s >= first]
assert steps and all(s in b for s in steps), f"steps {steps} missing in {sorted(b)}"
worst = max(abs(a[s]["loss"] - b[s]["loss"]) / abs(a[s]["loss"]) for s in steps)
assert worst <= rtol, f"losses differ by {worst:.3g} (> {rtol})"
print(f"    steps {steps[0]}-{steps[-1]}: losses agree to {worst:.2g}")
PY
}
launch() { # launch NP ARGS...: rotor train with NP ranks (0 = no mpirun), as one process
  local np=$1; shift
  if [ "$np" = 0 ]; then exec "$rotor" train "$cfg" "${common[@]}" "$@"
  else exec "${mpi[@]}" -np "$np" "$rotor" train "$cfg" "${common[@]}" "$@"; fi
}
run() { # run NAME NP ARGS...: launch into $out/NAME, logged to NAME.log
  local name=$1 np=$2; shift 2
  (launch "$np" --set run.dir="$out/$name" "$@") >"$out/$name.log" 2>&1
}

if [[ $parts == *" equivalence "* ]]; then
echo "data parallel equivalence (global batch 12 rows)"
run one 0 --set train.micro_batch=6 --set train.grad_accum=2 || fail "1 rank run"
run two 2 --set train.micro_batch=6 --set train.grad_accum=1 || fail "2 rank run"
compare "$out/one" "$out/two" 1 "$rtol" || fail "2 ranks vs 1 rank x 2 accumulation"
"$python" "$here/compare_checkpoints.py" "$out/one/checkpoints/step_00000020" "$out/two/checkpoints/step_00000020" --rtol "$wtol" || fail "2-rank weights"
run zero 2 --set train.micro_batch=6 --set train.grad_accum=1 --set train.zero=true || fail "ZeRO-1 run"
compare "$out/one" "$out/zero" 1 "$rtol" || fail "ZeRO-1 2 ranks vs 1 rank"
"$python" "$here/compare_checkpoints.py" "$out/one/checkpoints/step_00000020" "$out/zero/checkpoints/step_00000020" --rtol "$wtol" || fail "ZeRO-1 weights"
ls "$out/zero/checkpoints/step_00000010" | grep -q "optimizer.rank00001-of-00002" || fail "ZeRO-1 checkpoint has no per-rank optimizer files"
grep -q "gradient sums: 1 bucket per step" "$out/two.log" || fail "the default run.bucket_mb is not one bucket"
fi

if [[ $parts == *" buckets "* ]]; then
echo "bucketed gradient sums (run.bucket_mb = 0.01: one bucket per block, overlapped with the backward)"
buckets() { # buckets NAME: the number of buckets per step the run reported
  sed -n 's/.*gradient sums: \([0-9]*\) buckets per step.*/\1/p' "$out/$1.log"
}
for v in "bucket 6 1" "bucket_zero 6 1 --set train.zero=true" "bucket_accum 3 2"; do
  set -- $v
  name=$1 mb=$2 accum=$3; shift 3
  run "$name" 2 --set train.micro_batch="$mb" --set train.grad_accum="$accum" --set run.bucket_mb=0.01 "$@" || fail "$name run"
  [ "$(buckets "$name")" = 4 ] || fail "$name: $(buckets "$name") buckets per step, expected 4 (head, 2 blocks, embedding)"
  compare "$out/one" "$out/$name" 1 "$rtol" || fail "$name: 2 ranks vs 1 rank"
  "$python" "$here/compare_checkpoints.py" "$out/one/checkpoints/step_00000020" "$out/$name/checkpoints/step_00000020" --rtol "$wtol" || fail "$name weights"
done
fi

if [[ $parts == *" resume "* ]]; then
echo "ZeRO-1 checkpoint of 2 ranks resumed at 1 and 3 ranks"
for np in 1 3; do
  mkdir -p "$out/re$np/checkpoints"
  cp -r "$out/zero/checkpoints/step_00000010" "$out/re$np/checkpoints/"
  if [ $np = 1 ]; then run re1 0 --set train.micro_batch=6 --set train.grad_accum=2 --set train.zero=true --resume auto
  else run re3 3 --set train.micro_batch=4 --set train.grad_accum=1 --set train.zero=true --resume auto; fi || fail "resume at $np"
  grep -q "resumed from .*step_00000010 at step 10 (.*written by 2 ranks)" "$out/re$np.log" || fail "re$np did not resume"
  compare "$out/one" "$out/re$np" 11 "$(awk -v r="$rtol" 'BEGIN { print r < 1e-5 ? 1e-5 : r }')" || fail "resume at $np ranks"
done
fi

wait_for_step() { # wait_for_step DIR N: until metrics.jsonl has N lines (max 60 s)
  for _ in $(seq 600); do
    [ -f "$1/metrics.jsonl" ] && [ "$(wc -l <"$1/metrics.jsonl")" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}
long=(--set train.steps=400 --set train.checkpoint_every=0 --set train.val_every=0 --set train.seq_len=128)

# stop_and_resume NAME NP SIGNAL RTOL OPTION...: the long run NAME with NP ranks, sent SIGNAL
# after step 20, stops early with a message and exit status 0; resumed, its losses are those of
# the uninterrupted run NAME-straight (to RTOL)
stop_and_resume() {
  local name=$1 np=$2 sig=$3 rtol=$4 status stopped
  shift 4
  run "$name-straight" "$np" "${long[@]}" "$@" || fail "$name: uninterrupted run"
  launch "$np" "${long[@]}" "$@" --set run.dir="$out/$name" >"$out/$name.log" 2>&1 &
  pid=$!
  wait_for_step "$out/$name" 20 || fail "$name: run did not start"
  kill -"$sig" $pid
  wait $pid; status=$?
  [ $status = 0 ] || fail "$sig: exit status $status"
  stopped=$(sed -n 's/.*stopped by a signal after step \([0-9]*\).*/\1/p' "$out/$name.log")
  [ -n "$stopped" ] && [ "$stopped" -lt 400 ] || fail "$sig did not stop early (step $stopped)"
  run "$name" "$np" "${long[@]}" "$@" --resume auto || fail "resume after $sig"
  compare "$out/$name-straight" "$out/$name" 1 "$rtol" || fail "$sig resume differs"
}

if [[ $parts == *" signals "* ]]; then
echo "SIGTERM: checkpoint, exit 0, resume = uninterrupted"
stop_and_resume term 0 TERM 0
echo "SIGUSR1 through mpirun (2 ranks)"
stop_and_resume usr1 2 USR1 "$rtol" --set train.micro_batch=4
fi

if [[ $parts == *" faults "* ]]; then

echo "SIGKILL of one rank ends the job"
# job_fails WHAT PIDS...: the job $pid (started at $start) ends within 60 s with a non-zero
# status (else the PIDS are killed); sets $status
job_fails() {
  local what=$1; shift
  for _ in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then fail "job still running 60 s after $what"; kill -KILL "$@"; fi
  wait $pid; status=$?
  [ $status != 0 ] || fail "$what: exit status 0"
  echo "    ended with status $status after $(( $(date +%s) - start )) s"
}

"${mpi[@]}" -np 2 "$rotor" train "$cfg" "${common[@]}" --set train.steps=100000 --set run.dir="$out/kill" >"$out/kill.log" 2>&1 &
pid=$!
wait_for_step "$out/kill" 5 || fail "run did not start"
kill -KILL "$(pgrep -P $pid | tail -1)"
start=$(date +%s)
job_fails SIGKILL $pid

echo "a hanging rank: the others exit after run.collective_timeout"
"${mpi[@]}" -np 2 "$rotor" train "$cfg" "${common[@]}" --set train.steps=100000 --set run.collective_timeout=5 \
  --set run.dir="$out/hang" >"$out/hang.log" 2>&1 &
pid=$!
wait_for_step "$out/hang" 5 || fail "run did not start"
victim=$(pgrep -P $pid | tail -1)
kill -STOP "$victim"
start=$(date +%s)
job_fails "a rank stopped" $pid "$victim"
grep -q "another rank has died or hangs" "$out/hang.log" || fail "hang: no watchdog message"
kill -KILL "$victim" 2>/dev/null
fi

[ $fails = 0 ] && echo "all distributed checks passed"
exit $((fails != 0))
