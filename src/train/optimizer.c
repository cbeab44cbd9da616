#include "train/optimizer.h"

#include <stddef.h>

#include "util/error.h"

AdamW *adamw_create(const Backend *be, int64_t lo, int64_t hi) {
    RT_ASSERT(0 <= lo && lo <= hi);
    AdamW *o = rt_calloc(1, sizeof(AdamW));
    o->be = be;
    o->lo = lo;
    o->hi = hi;
    size_t bytes = (size_t)(hi - lo) * be->f32_size;
    o->m = be->alloc(bytes);
    o->v = be->alloc(bytes);
    be->zero(o->m, bytes);
    be->zero(o->v, bytes);
    return o;
}

void adamw_free(AdamW *o) {
    if (!o) return;
    o->be->release(o->m);
    o->be->release(o->v);
    rt_free(o);
}

/* One backend call over elements [a, b) of the optimizer's range, clamped to it. */
static void update_run(AdamW *o, const TrainConfig *tc, double lr, char *w, void *act, char *g,
                       int64_t a, int64_t b, int decay) {
    const Backend *be = o->be;
    if (a < o->lo) a = o->lo;
    if (b > o->hi) b = o->hi;
    if (a >= b) return;
    size_t F = be->f32_size, off = (size_t)a * F, moff = (size_t)(a - o->lo) * F;
    be->adamw(w + off, act ? (char *)act + (size_t)a * be->act_size : NULL, (char *)o->m + moff,
              (char *)o->v + moff, g + off, b - a, lr, tc->beta1, tc->beta2, tc->adam_eps,
              decay ? tc->weight_decay : 0.0, o->t);
}

/* Neighbouring trainable parameters of the same decay group are updated by one call, the
 * alignment padding between them included: padding has zero weights, gradients and moments,
 * so its update is zero. A frozen parameter or a change of group ends a run. */
void adamw_step(AdamW *o, Model *m, const TrainConfig *tc, double lr) {
    const ParamTable *t = model_params(m);
    void *act;
    char *w = model_weights_and_copy(m, &act), *g = model_grads(m);
    o->t++;
    int64_t run_lo = 0, run_hi = 0;
    int run_decay = 0;
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        if (p->trainable && run_hi > run_lo && p->decay == run_decay) {
            run_hi = p->offset + p->numel;
            continue;
        }
        update_run(o, tc, lr, w, act, g, run_lo, run_hi, run_decay);
        run_lo = run_hi = p->offset;
        if (p->trainable) run_hi = p->offset + p->numel, run_decay = p->decay;
    }
    update_run(o, tc, lr, w, act, g, run_lo, run_hi, run_decay);
}

double grad_sumsq(Model *m, int64_t lo, int64_t hi) {
    const Backend *be = model_backend(m);
    return be->sumsq((char *)model_grads(m) + (size_t)lo * be->f32_size, hi - lo);
}

void grads_scale(Model *m, int64_t lo, int64_t hi, double s) {
    const Backend *be = model_backend(m);
    be->scale((char *)model_grads(m) + (size_t)lo * be->f32_size, hi - lo, s);
}
