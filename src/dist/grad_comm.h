/* How the gradients and the ZeRO-1 slices of the weights travel between the data-parallel
 * ranks (docs/distributed.md): through the backend's own collectives on its buffers (NCCL
 * on CUDA, src/backend.h) or through MPI on host buffers (dist.h); a backend whose buffers
 * are not host memory copies them through a host stage for MPI. The trainer and the
 * gradient buckets see only this interface; every wait is under the watchdog, and with
 * MPI on a single rank every collective is a no-op. */
#ifndef ROTOR_GRAD_COMM_H
#define ROTOR_GRAD_COMM_H

#include <stdint.h>

#include "backend.h"
#include "config/config.h"

typedef struct GradStage GradStage;

typedef struct {
    const Backend *be;
    int device;       /* the backend's collectives, else MPI (dist.h) */
    GradStage *stage; /* MPI on a backend with its own memory: the host copy, else NULL */
} GradComm;

/* The communication of a run on backend be, after dist_init; every rank calls it. With
 * COLLECTIVES_AUTO the backend's collectives when it has them and the run is distributed
 * (several ranks, or a launcher started it: mpirun -np 1 included), set up from rank 0's
 * communicator id, else MPI; COLLECTIVES_BACKEND the backend's (an error naming
 * run.collectives where it has none); COLLECTIVES_MPI MPI. MPI on a backend with
 * collectives of its own (its buffers are device memory) stages each buffer through host
 * memory: max_elems [f32] elements, the largest buffer it will carry. */
GradComm grad_comm_init(const Backend *be, Collectives how, int64_t max_elems);
/* The backend's collectives (it must have them) whatever the launch: tests of them in one
 * process. */
GradComm grad_comm_init_device(const Backend *be);
/* 1 when the gradients go through the collectives: several ranks, or the backend's own
 * (the identity on one rank, yet run). */
int grad_comm_summing(const GradComm *gc);
/* What carries the sums, for logs: "NCCL", "MPI" or "MPI through host memory". */
const char *grad_comm_name(const GradComm *gc);
/* Frees the host stage; every copy of gc then is unusable. */
void grad_comm_free(GradComm *gc);

/* Starts the sum of the [f32] buffer buf[lo, hi) over the ranks without waiting; buf[lo, hi)
 * must stay untouched until grad_comm_reduce_wait. Without ranges every rank gets the sum;
 * with ranges (ZeRO-1 slices, [world + 1]) rank r gets the sum of [lo, hi) within its
 * slice [ranges[r], ranges[r+1]). Every rank starts the same ranges in the same order. */
void grad_comm_reduce_start(const GradComm *gc, void *buf, int64_t lo, int64_t hi,
                            const int64_t *ranges);
/* Returns once every sum started since the last wait has arrived. */
void grad_comm_reduce_wait(const GradComm *gc);
/* ZeRO-1: every rank contributes its slice buf[ranges[r], ranges[r+1]) of the [f32] buffer;
 * returns once all of buf is the same on every rank. */
void grad_comm_allgather(const GradComm *gc, void *buf, const int64_t *ranges);

#endif
