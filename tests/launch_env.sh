#!/usr/bin/env bash
# How rotor is started:
#  - without a launcher, `rotor train` must not initialise MPI: it runs with Open MPI made
#    unusable (OPAL_PREFIX pointing nowhere, which makes MPI_Init fail, as the control run
#    with a launcher's variable shows) and with no mpirun on PATH;
#  - scripts/slurm.sbatch requeues its job (scontrol requeue) when rotor stopped for
#    SIGUSR1 before its last step, and not when the run finished or failed; srun and
#    scontrol are stand-ins on PATH.
set -euo pipefail
rotor=$(readlink -f "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
tiny=(--set train.seq_len=32 --set train.micro_batch=2 --set train.grad_accum=1
      --set train.val_every=0 --set train.checkpoint_every=0 --set train.log_every=1)
launcher_vars=(-u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u PMI_RANK -u PMIX_RANK -u MPI_LOCALNRANKS
               -u SLURM_STEP_NUM_TASKS)

echo "no launcher: rotor train without MPI"
env "${launcher_vars[@]}" OPAL_PREFIX=/nonexistent PATH=/nonexistent "$rotor" train \
    "$root/configs/tiny/gla-selective.ini" "${tiny[@]}" --set train.steps=3 \
    --set run.dir="$out/plain" >"$out/plain.log" 2>&1 || { cat "$out/plain.log"; fail "plain run"; }
grep -q "^done: 3 steps" "$out/plain.log" || fail "plain run did not finish its 3 steps"
echo "control: with a launcher's variable the same run initialises MPI, which fails there"
if env "${launcher_vars[@]}" OMPI_COMM_WORLD_SIZE=1 OPAL_PREFIX=/nonexistent "$rotor" train \
    "$root/configs/tiny/gla-selective.ini" "${tiny[@]}" --set train.steps=3 \
    --set run.dir="$out/control" >"$out/control.log" 2>&1; then
  fail "MPI_Init did not fail with OPAL_PREFIX=/nonexistent: the first check proves nothing"
fi

# stand-ins: srun runs the command after its options (and, with STOP_AFTER_STEP, sends it
# SIGUSR1 once it has logged that step, as SLURM does before the time limit); scontrol
# records its arguments
mkdir -p "$out/bin" "$out/submit/build"
ln -s "$rotor" "$out/submit/build/rotor"
cat >"$out/bin/srun" <<'EOF'
#!/usr/bin/env bash
while [[ $1 == -* ]]; do shift; done
if [ -z "${STOP_AFTER_STEP:-}" ]; then exec "$@"; fi
log=$(mktemp)
"$@" >"$log" 2>&1 &
pid=$!
until grep -q "^step $STOP_AFTER_STEP/" "$log" || ! kill -0 $pid 2>/dev/null; do sleep 0.1; done
kill -USR1 $pid 2>/dev/null || true
status=0
wait $pid || status=$?
cat "$log"
rm -f "$log"
exit $status
EOF
cat >"$out/bin/scontrol" <<EOF
#!/usr/bin/env bash
echo "\$*" >>"$out/scontrol.calls"
EOF
chmod +x "$out/bin/srun" "$out/bin/scontrol"
sbatch_run() { # NAME STOP_AFTER_STEP STEPS: runs the batch script, returns its status
  rm -f "$out/scontrol.calls"
  env "${launcher_vars[@]}" PATH="$out/bin:$PATH" SLURM_JOB_ID=4242 SLURM_SUBMIT_DIR="$out/submit" \
      STOP_AFTER_STEP="$2" bash "$root/scripts/slurm.sbatch" "$root/configs/tiny/gla-selective.ini" \
      "${tiny[@]}" --set train.steps="$3" --set run.dir="$out/$1" >"$out/$1.log" 2>&1
}

echo "slurm.sbatch: SIGUSR1 before the last step -> checkpoint, exit 0, scontrol requeue"
sbatch_run preempted 5 400 || { cat "$out/preempted.log"; fail "pre-empted job exited non-zero"; }
grep -q "stopped by a signal after step" "$out/preempted.log" || fail "rotor did not stop for the signal"
[ -f "$out/scontrol.calls" ] && grep -qx "requeue 4242" "$out/scontrol.calls" ||
  fail "no 'scontrol requeue 4242' after the signal"
ls "$out/preempted/checkpoints" | grep -q "^step_" || fail "no checkpoint written at the signal"
echo "slurm.sbatch: the requeued job resumes and finishes -> no requeue"
# it finishes a few steps after where the signal stopped it (train.steps below that is an error)
stopped=$(sed -n 's/.*stopped by a signal after step \([0-9]*\).*/\1/p' "$out/preempted.log")
sbatch_run preempted "" $((${stopped:-0} + 4)) || { cat "$out/preempted.log"; fail "resumed job exited non-zero"; }
grep -q "resumed from" "$out/preempted.log" || fail "the requeued job did not resume"
[ ! -f "$out/scontrol.calls" ] || fail "a finished run was requeued: $(cat "$out/scontrol.calls")"
echo "slurm.sbatch: a failing run -> its status, no requeue"
if sbatch_run broken "" 0; then fail "a run with train.steps=0 succeeded"; fi
[ ! -f "$out/scontrol.calls" ] || fail "a failed run was requeued"
echo "launch_env: all checks passed"
