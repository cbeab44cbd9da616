#!/usr/bin/env bash
# Data-parallel training across machines listed in an OpenMPI hostfile
# ("node1 slots=8" per line), one rank per GPU.
#   scripts/launch_multinode.sh HOSTFILE RANKS_PER_NODE CONFIG.ini [rotor train options...]
# The repository (with build/rotor) and the data must be at the same path on every node;
# checkpoints are written by every rank into run.dir, which must be on a shared file system.
#
# Network settings passed to every rank (override them in the environment):
#   NCCL_SOCKET_IFNAME   interface for NCCL's bootstrap and TCP traffic (e.g. eth0, ib0)
#   NCCL_IB_HCA          InfiniBand adapters to use (e.g. mlx5_0,mlx5_1), empty: NCCL chooses
#   NCCL_DEBUG           WARN (INFO to see the topology NCCL detects)
#   OMPI_MCA_btl_tcp_if_include  interface OpenMPI's own TCP traffic uses (bootstrap only)
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  exit 1
fi
hostfile=$1 per_node=$2; shift 2
cd "$(dirname "$0")/.."
nodes=$(grep -cv '^\s*\(#\|$\)' "$hostfile")
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-}
export NCCL_IB_HCA=${NCCL_IB_HCA:-}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
forward=(-x NCCL_DEBUG -x NCCL_SOCKET_IFNAME -x NCCL_IB_HCA -x OMP_NUM_THREADS -x PATH -x LD_LIBRARY_PATH)
[ -n "${OMPI_MCA_btl_tcp_if_include:-}" ] && forward+=(--mca btl_tcp_if_include "$OMPI_MCA_btl_tcp_if_include")
exec mpirun --hostfile "$hostfile" -np $((nodes * per_node)) --map-by "ppr:$per_node:node" --bind-to none \
  "${forward[@]}" "$PWD/build/rotor" train "$@"
