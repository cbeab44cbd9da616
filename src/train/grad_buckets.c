#include "train/grad_buckets.h"

#include <stdint.h>

void grad_buckets_init(GradBuckets *gb, Model *m, GradComm comm, const int64_t *ranges,
                       double bucket_mb) {
    gb->comm = comm;
    gb->grads = model_grads(m);
    gb->ranges = ranges;
    double elems = bucket_mb * 1048576.0 / (double)model_backend(m)->f32_size;
    gb->bucket_elems = elems < 1 ? 1 : elems < 0x1p62 ? (int64_t)elems : INT64_MAX;
    gb->lo = gb->hi = 0;
    gb->started = 0;
}

static void start_bucket(GradBuckets *gb) {
    grad_comm_reduce_start(&gb->comm, gb->grads, gb->lo, gb->hi, gb->ranges);
    gb->lo = gb->hi = 0;
    gb->started++;
}

void grad_buckets_ready(void *ctx, int64_t lo, int64_t hi) {
    GradBuckets *gb = ctx;
    /* the model announces each range just below the previous one; one that is not
     * adjacent closes the bucket being filled, which stays contiguous */
    if (gb->lo < gb->hi && hi != gb->lo) start_bucket(gb);
    if (gb->lo == gb->hi) gb->hi = hi;
    gb->lo = lo;
    if (gb->hi - gb->lo >= gb->bucket_elems) start_bucket(gb);
}

int grad_buckets_finish(GradBuckets *gb) {
    if (gb->lo < gb->hi) start_bucket(gb);
    grad_comm_reduce_wait(&gb->comm);
    int n = gb->started;
    gb->started = 0;
    return n;
}
