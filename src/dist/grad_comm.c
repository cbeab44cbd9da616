#include "dist/grad_comm.h"

#include "dist/dist.h"
#include "util/error.h"

/* MPI on a backend whose buffers are device memory: each sum or gather runs on a host copy.
 * A range is downloaded when its sum starts (the download waits for the gradients queued
 * before it) and uploaded back once every started sum has arrived. */
typedef struct {
    void *buf;
    int64_t lo, hi;
} StagedRange;

struct GradStage {
    char *host; /* max_elems [f32] elements */
    int64_t max_elems;
    StagedRange *pending; /* started and not yet waited for */
    int npending, cap;
};

GradComm grad_comm_init(const Backend *be, Collectives how, int64_t max_elems) {
    if (how == COLLECTIVES_BACKEND && !be->comm_init)
        rt_die(
            "run.collectives = backend: the %s backend has no collectives of its own (auto or mpi)",
            be->name);
    if (how == COLLECTIVES_BACKEND ||
        (how == COLLECTIVES_AUTO && be->comm_init && (dist_world() > 1 || dist_launched())))
        return grad_comm_init_device(be);
    GradComm gc = {be, 0, NULL};
    if (be->comm_init) { /* the backend's buffers are not host memory */
        gc.stage = rt_calloc(1, sizeof(GradStage));
        gc.stage->host = rt_malloc((size_t)max_elems * be->f32_size);
        gc.stage->max_elems = max_elems;
    }
    return gc;
}

void grad_comm_free(GradComm *gc) {
    if (gc->stage) {
        rt_free(gc->stage->host);
        rt_free(gc->stage->pending);
        rt_free(gc->stage);
    }
    gc->stage = NULL;
}

/* The host copy of buf[lo, hi), downloaded. */
static char *stage_in(const GradComm *gc, const void *buf, int64_t lo, int64_t hi) {
    GradStage *st = gc->stage;
    RT_ASSERT(lo >= 0 && lo <= hi && hi <= st->max_elems);
    size_t es = gc->be->f32_size;
    gc->be->download(st->host + (size_t)lo * es, (const char *)buf + (size_t)lo * es,
                     (size_t)(hi - lo) * es);
    return st->host;
}

static void stage_out(const GradComm *gc, void *buf, int64_t lo, int64_t hi) {
    size_t es = gc->be->f32_size;
    gc->be->upload((char *)buf + (size_t)lo * es, gc->stage->host + (size_t)lo * es,
                   (size_t)(hi - lo) * es);
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
    return (GradComm){be, 1, NULL};
}

int grad_comm_summing(const GradComm *gc) { return gc->device || dist_world() > 1; }

const char *grad_comm_name(const GradComm *gc) {
    return gc->device ? "NCCL" : gc->stage ? "MPI through host memory" : "MPI";
}

void grad_comm_reduce_start(const GradComm *gc, void *buf, int64_t lo, int64_t hi,
                            const int64_t *ranges) {
    if (gc->device) {
        gc->be->reduce_start(buf, lo, hi, ranges);
    } else if (gc->stage) {
        GradStage *st = gc->stage;
        if (st->npending == st->cap) {
            st->cap = st->cap ? 2 * st->cap : 16;
            st->pending = rt_realloc(st->pending, sizeof(StagedRange) * (size_t)st->cap);
        }
        st->pending[st->npending++] = (StagedRange){buf, lo, hi};
        dist_reduce_start(stage_in(gc, buf, lo, hi), lo, hi, ranges, gc->be->f32_size);
    } else {
        dist_reduce_start(buf, lo, hi, ranges, gc->be->f32_size);
    }
}

/* The backend's wait for its started collectives, which a dead peer hangs: watched. */
static void device_wait(const GradComm *gc, const char *what) {
    dist_watch_begin(what);
    gc->be->comm_wait();
    dist_watch_end();
}

void grad_comm_reduce_wait(const GradComm *gc) {
    if (gc->device) {
        device_wait(gc, "the gradient sums of the buckets (NCCL)");
        return;
    }
    dist_reduce_wait();
    if (!gc->stage) return;
    for (int i = 0; i < gc->stage->npending; i++) {
        StagedRange *r = &gc->stage->pending[i];
        stage_out(gc, r->buf, r->lo, r->hi);
    }
    gc->stage->npending = 0;
}

void grad_comm_allgather(const GradComm *gc, void *buf, const int64_t *ranges) {
    if (gc->device) {
        gc->be->allgather_start(buf, ranges);
        device_wait(gc, "a parameter all-gather (NCCL)");
    } else if (gc->stage) {
        int64_t n = ranges[dist_world()];
        dist_allgather(stage_in(gc, buf, 0, n), ranges, gc->be->f32_size);
        stage_out(gc, buf, 0, n);
    } else {
        dist_allgather(buf, ranges, gc->be->f32_size);
    }
}
