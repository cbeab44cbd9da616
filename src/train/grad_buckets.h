/* Gradient buckets (docs/distributed.md): during the last backward of an optimizer step,
 * the gradient ranges the model announces as final (model_set_grad_ready) are gathered
 * into buckets of about run.bucket_mb MiB, and the sum of each bucket over the ranks starts
 * as soon as it is full, so that it overlaps the backward of the layers below
 * (dist/grad_comm.h). With ZeRO-1 each rank receives only the sums of its own slice. */
#ifndef ROTOR_GRAD_BUCKETS_H
#define ROTOR_GRAD_BUCKETS_H

#include <stdint.h>

#include "dist/grad_comm.h"
#include "model/model.h"

typedef struct {
    GradComm comm;
    void *grads;
    const int64_t *ranges; /* ZeRO-1 slices [world + 1], or NULL: every rank gets every sum */
    int64_t bucket_elems;  /* a bucket starts once it holds this many elements */
    int64_t lo, hi;        /* the bucket being filled, [lo, hi); empty when lo == hi */
    int started;           /* buckets started since the last grad_buckets_finish */
} GradBuckets;

/* Buckets of bucket_mb MiB over the gradients of m, summed through comm. */
void grad_buckets_init(GradBuckets *gb, Model *m, GradComm comm, const int64_t *ranges,
                       double bucket_mb);
/* The model's GradReadyFn (ctx = the GradBuckets): adds [lo, hi) to the bucket being
 * filled, and starts its sum once it is full. */
void grad_buckets_ready(void *ctx, int64_t lo, int64_t hi);
/* Starts the last, partly filled bucket and waits (watched by the watchdog) until every
 * sum has arrived; returns the number of buckets of this step. */
int grad_buckets_finish(GradBuckets *gb);

#endif
