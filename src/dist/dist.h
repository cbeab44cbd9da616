/* The process group for data parallelism (MPI). One process per device: under
 * `mpirun -np N` every rank trains on its own windows and the gradients are summed; a
 * process started without mpirun is rank 0 of 1 and every collective is a no-op copy.
 * Buffers passed to the collectives are host memory (the CPU backend's buffers); device
 * buffers go through the backend's communicator (NCCL, src/backend.h), or are copied through
 * host memory first (dist/grad_comm.c, run.collectives = mpi).
 *
 * A watchdog thread turns a hang into an error: when a collective has been waiting longer
 * than the timeout (a rank died or stopped), the process prints which collective and exits
 * with status 1, and mpirun then ends the job. */
#ifndef ROTOR_DIST_H
#define ROTOR_DIST_H

#include <stddef.h>
#include <stdint.h>

/* Initialises MPI when a launcher started the process (dist_launched), else makes it rank 0
 * of 1 without MPI; call once, before any other dist_ call. timeout_s <= 0 disables the
 * watchdog. */
void dist_init(int *argc, char ***argv);
void dist_set_timeout(double timeout_s);
void dist_finalize(void);

int dist_rank(void);
int dist_world(void);
/* Rank among the processes of this node (for device selection). */
int dist_local_rank(void);
/* 1 when the process was started by a launcher (mpirun, mpiexec, srun), even as a single
 * rank. */
int dist_launched(void);

/* In-place sums over all ranks. */
void dist_allreduce_sum_f64(double *buf, int n);
void dist_allreduce_sum_i64(int64_t *buf, int n);
/* 1 if any rank passes a nonzero flag. */
int dist_any(int flag);
/* Gradient buckets (src/train/grad_buckets.c): dist_reduce_start begins summing
 * buf[lo, hi) over the ranks without waiting, and dist_reduce_wait finishes every sum
 * started since the last wait; buf[lo, hi) must stay untouched in between. Without ranges
 * every rank gets the sum; with ranges (ZeRO-1 slices, [world + 1]) rank r gets the sum
 * of [lo, hi) within its slice [ranges[r], ranges[r+1]) and keeps its own values
 * elsewhere. elem_size 4 (float) or 8 (double) for the [f32] buffers of the backend. Every
 * rank must start the same ranges in the same order. */
void dist_reduce_start(void *buf, int64_t lo, int64_t hi, const int64_t *ranges, size_t elem_size);
void dist_reduce_wait(void);
/* ZeRO: every rank contributes buf[ranges[r], ranges[r+1]); afterwards all of buf is the
 * same on every rank. */
void dist_allgather(void *buf, const int64_t *ranges, size_t elem_size);
/* Puts a wait that is not an MPI call under the watchdog (the GPU collectives, whose
 * waiting happens in a CUDA synchronisation): between begin and end, a rank that waits
 * longer than the timeout prints `what` and exits like one stuck in an MPI collective. */
void dist_watch_begin(const char *what);
void dist_watch_end(void);
/* Rank 0's bytes to every rank. */
void dist_broadcast(void *buf, size_t bytes);
void dist_barrier(void);

/* Even split of n elements into world contiguous ranges aligned to `align` elements:
 * ranges[0..world], ranges[0] = 0, ranges[world] = n. */
void dist_partition(int64_t n, int world, int64_t align, int64_t *ranges);

#endif
