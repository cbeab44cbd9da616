#include "train/optimizer.h"

#include <math.h>

#include "util/error.h"

AdamW *adamw_create(const Backend *be, int64_t n) {
    AdamW *o = rt_calloc(1, sizeof(AdamW));
    o->be = be;
    o->n = n;
    o->m = be->alloc((size_t)n * be->f32_size);
    o->v = be->alloc((size_t)n * be->f32_size);
    be->zero(o->m, (size_t)n * be->f32_size);
    be->zero(o->v, (size_t)n * be->f32_size);
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
    char *w = model_weights(m), *g = model_grads(m), *mm = o->m, *vv = o->v;
    o->t++;
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        if (!p->trainable) continue;
        size_t off = (size_t)p->offset * F;
        be->adamw(w + off, mm + off, vv + off, g + off, p->numel, lr, tc->beta1,
                  tc->beta2, tc->adam_eps, p->decay ? tc->weight_decay : 0.0,
                  o->t);
    }
}

double grad_global_norm(Model *m) {
    const ParamTable *t = model_params(m);
    const Backend *be = model_backend(m);
    char *g = model_grads(m);
    double ss = 0;
    for (int i = 0; i < t->n; i++)
        if (t->p[i].trainable) ss += be->sumsq(g + (size_t)t->p[i].offset * be->f32_size, t->p[i].numel);
    return sqrt(ss);
}

void grads_scale(Model *m, double s) {
    const Backend *be = model_backend(m);
    be->scale(model_grads(m), model_params(m)->total, s);
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
