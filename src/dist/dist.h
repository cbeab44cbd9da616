/* The process group for data parallelism (MPI). One process per device: under
 * `mpirun -np N` every rank trains on its own windows and the gradients are summed; a
 * process started without mpirun is rank 0 of 1 and every collective is a no-op copy.
 * Buffers passed to the collectives are host memory (the CPU backend's buffers); device
 * buffers go through the backend's communicator (NCCL) once a GPU backend exists.
 *
 * A watchdog thread turns a hang into an error: when a collective has been waiting longer
 * than the timeout (a rank died or stopped), the process prints which collective and exits
 * with status 1, and mpirun then ends the job. */
#ifndef ROTOR_DIST_H
#define ROTOR_DIST_H

#include <stddef.h>
#include <stdint.h>

/* Initialises MPI (safe to call once, before any other dist_ call); timeout_s <= 0 disables
 * the watchdog. */
void dist_init(int *argc, char ***argv);
void dist_set_timeout(double timeout_s);
void dist_finalize(void);

int dist_rank(void);
int dist_world(void);
/* Rank among the processes of this node, and their number (for device selection). */
int dist_local_rank(void);
int dist_local_world(void);
/* 1 when the process was started by an MPI launcher (mpirun, srun), even as a single rank. */
int dist_launched(void);

/* In-place sums over all ranks; elem_size 4 (float) or 8 (double) for the real-typed
 * buffers of the backend. */
void dist_allreduce_sum(void *buf, int64_t n, size_t elem_size);
void dist_allreduce_sum_f64(double *buf, int n);
void dist_allreduce_sum_i64(int64_t *buf, int n);
/* 1 if any rank passes a nonzero flag. */
int dist_any(int flag);
/* ZeRO: sum buf over ranks and keep on each rank its own slice: rank r gets elements
 * [ranges[r], ranges[r+1]) of the sum written into buf at the same offsets. */
void dist_reduce_scatter_sum(void *buf, const int64_t *ranges, size_t elem_size);
/* ZeRO: every rank contributes buf[ranges[r], ranges[r+1]); afterwards all of buf is the
 * same on every rank. */
void dist_allgather(void *buf, const int64_t *ranges, size_t elem_size);
/* Rank 0's bytes to every rank. */
void dist_broadcast(void *buf, size_t bytes);
void dist_barrier(void);

/* Even split of n elements into world contiguous ranges aligned to `align` elements:
 * ranges[0..world], ranges[0] = 0, ranges[world] = n. */
void dist_partition(int64_t n, int world, int64_t align, int64_t *ranges);

#endif
