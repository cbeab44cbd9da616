#!/usr/bin/env bash
# Data-parallel training on one machine: one rank per GPU (or per group of CPU cores).
#   scripts/launch_local.sh NRANKS CONFIG.ini [rotor train options...]
# e.g. scripts/launch_local.sh 8 configs/gla-370m-selective.ini --resume auto
# Every rank reads its own windows of each global batch (ranks x micro_batch x grad_accum
# rows); keep that product at 128 for the recipe of docs/models.md §training-recipe. CPU ranks share the cores evenly.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
  exit 1
fi
n=$1; shift
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(( $(nproc) / n > 0 ? $(nproc) / n : 1 ))}
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
# SIGUSR1 sent to mpirun is forwarded to every rank: checkpoint and exit 0
exec mpirun "${root[@]}" -np "$n" --bind-to none -x OMP_NUM_THREADS build/rotor train "$@"
