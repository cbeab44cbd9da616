#include "dist/grad_comm.h"

#include "dist/dist.h"
#include "util/error.h"

GradComm grad_comm_init(const Backend *be) {
    if (be->comm_init && (dist_world() > 1 || dist_launched())) return grad_comm_init_device(be);
    return (GradComm){be, 0};
}

GradComm grad_comm_init_device(const Backend *be) {
    if (!be->comm_init) rt_die("the %s backend has no collectives of its own", be->name);
    char *id = rt_calloc(1, be->comm_id_size);
    if (dist_rank() == 0) be->comm_create_id(id);
    dist_broadcast(id, be->comm_id_size);
    dist_watch_begin("the NCCL initialisation");
    be->comm_init(id, dist_rank(), dist_world());
    dist_watch_end();
    rt_free(id);
    return (GradComm){be, 1};
}

int grad_comm_summing(const GradComm *gc) { return gc->device || dist_world() > 1; }

const char *grad_comm_name(const GradComm *gc) { return gc->device ? "NCCL" : "MPI"; }

void grad_comm_reduce_start(const GradComm *gc, void *buf, int64_t lo, int64_t hi,
                            const int64_t *ranges) {
    if (gc->device)
        gc->be->reduce_start(buf, lo, hi, ranges);
    else
        dist_reduce_start(buf, lo, hi, ranges, gc->be->f32_size);
}

/* The backend's wait for its started collectives, which a dead peer hangs: watched. */
static void device_wait(const GradComm *gc, const char *what) {
    dist_watch_begin(what);
    gc->be->comm_wait();
    dist_watch_end();
}

void grad_comm_reduce_wait(const GradComm *gc) {
    if (gc->device)
        device_wait(gc, "the gradient sums of the buckets (NCCL)");
    else
        dist_reduce_wait();
}

void grad_comm_allgather(const GradComm *gc, void *buf, const int64_t *ranges) {
    if (gc->device) {
        gc->be->allgather_start(buf, ranges);
        device_wait(gc, "a parameter all-gather (NCCL)");
    } else {
        dist_allgather(buf, ranges, gc->be->f32_size);
    }
}
