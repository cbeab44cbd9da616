#include "train/checkpoint_snapshot.h"

#include <string.h>

#include "device/host_copy.h"
#include "dist/dist.h"
#include "util/error.h"

/* b holds n floats: allocated by the first call (page-locked where the backend offers it),
 * the same size ever after. */
static float *staging(Staging *b, const Backend *be, int64_t n) {
    if (b->p) {
        RT_ASSERT(b->n == n);
        return b->p;
    }
    size_t bytes = sizeof(float) * (size_t)(n ? n : 1);
    b->p = be->host_alloc ? be->host_alloc(bytes) : NULL;
    b->pinned = b->p ? be : NULL;
    if (!b->p && be->host_alloc)
        rt_warn("checkpoint staging: %.1f MiB of page-locked host memory refused; taking pageable "
                "memory "
                "(slower copies from the device)",
                (double)bytes / 1048576.0);
    if (!b->p) b->p = rt_malloc(bytes);
    b->n = n;
    return b->p;
}

static void staging_free(Staging *b) {
    if (b->pinned)
        b->pinned->host_release(b->p);
    else
        rt_free(b->p);
    *b = (Staging){NULL, 0, NULL};
}

void checkpoint_snapshot_take(CheckpointSnapshot *s, const CheckpointFrom *from) {
    const TrainerState *st = from->state;
    const Optimizer *opt = from->opt;
    const ParamTable *t = model_params(from->model);
    const Backend *be = model_backend(from->model);
    int lead = dist_rank() == 0;
    checkpoint_snapshot_clear(s);
    s->st = *st;
    s->st.data_state = st->data_state ? json_deep_copy(st->data_state) : NULL;
    s->model = *model_config(from->model);
    s->params = t;
    s->spec = opt->spec;
    s->opt_step = opt->t;
    s->lo = opt->lo;
    s->hi = opt->hi;
    s->sharded = opt->lo != 0 || opt->hi != t->total;
    if (lead)
        backend_download_f32(be, staging(&s->weights, be, t->total), model_weights(from->model),
                             t->total);
    int64_t n = s->sharded ? opt->hi - opt->lo
                : lead     ? t->total
                           : 0; /* the state this rank writes */
    for (int k = 0; n && k < opt->spec->nstate; k++)
        backend_download_f32(opt->be, staging(&s->state[k], be, n), opt->state[k], n);
    s->st.carry = NULL;
    if (lead && st->carry) {
        int64_t cn = st->carry_rows * st->carry_width;
        s->st.carry = memcpy(staging(&s->carry, be, cn), st->carry, sizeof(float) * (size_t)cn);
    }
}

void checkpoint_snapshot_clear(CheckpointSnapshot *s) {
    json_decref(s->st.data_state);
    s->st.data_state = NULL;
}

void checkpoint_snapshot_free(CheckpointSnapshot *s) {
    checkpoint_snapshot_clear(s);
    staging_free(&s->weights);
    for (int k = 0; k < OPT_MAX_STATE; k++) staging_free(&s->state[k]);
    staging_free(&s->carry);
}
