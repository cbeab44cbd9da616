#include "train/optimizer.h"

#include <math.h>
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

void adamw_step(AdamW *o, Model *m, const TrainConfig *tc, double lr) {
    const ParamTable *t = model_params(m);
    const Backend *be = o->be;
    size_t F = be->f32_size;
    void *act;
    char *w = model_weights_and_copy(m, &act), *g = model_grads(m), *mm = o->m, *vv = o->v;
    size_t A = be->act_size;
    o->t++;
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        int64_t a = p->offset > o->lo ? p->offset : o->lo;
        int64_t b = p->offset + p->numel < o->hi ? p->offset + p->numel : o->hi;
        if (!p->trainable || a >= b) continue;
        size_t off = (size_t)a * F, moff = (size_t)(a - o->lo) * F;
        be->adamw(w + off, act ? (char *)act + (size_t)a * A : NULL, mm + moff, vv + moff,
                  g + off, b - a, lr, tc->beta1, tc->beta2, tc->adam_eps,
                  p->decay ? tc->weight_decay : 0.0, o->t);
    }
}

double grad_sumsq(Model *m, int64_t lo, int64_t hi) {
    const Backend *be = model_backend(m);
    return be->sumsq((char *)model_grads(m) + (size_t)lo * be->f32_size, hi - lo);
}

void grads_scale(Model *m, int64_t lo, int64_t hi, double s) {
    const Backend *be = model_backend(m);
    be->scale((char *)model_grads(m) + (size_t)lo * be->f32_size, hi - lo, s);
}

double lr_at(const TrainConfig *tc, int64_t step) {
    int64_t warmup = (int64_t)(tc->warmup_frac * (double)tc->steps);
    if (step < warmup) return tc->lr_start + (tc->lr - tc->lr_start) * (double)step / (double)warmup;
    int64_t decay_steps = tc->steps - 1 - warmup;
    if (decay_steps <= 0) return tc->lr;
    double progress = (double)(step - warmup) / (double)decay_steps;
    if (progress > 1) progress = 1;
    return tc->lr_min + 0.5 * (tc->lr - tc->lr_min) * (1 + cos(M_PI * progress));
}
