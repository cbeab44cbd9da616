#include "train/optimizer.h"

#include <stddef.h>

#include "util/error.h"

/* AdamW: moments m, v (torch's exp_avg, exp_avg_sq), bias-corrected at step t. */
static void adamw_update(const Optimizer *o, const TrainConfig *tc, const OptRun *r) {
    o->be->adamw(r->w, r->w_act, r->state[0], r->state[1], r->g, r->n, r->lr, tc->beta1, tc->beta2,
                 tc->adam_eps, r->weight_decay, o->t);
}

/* RMSprop: the running average of squared gradients (torch's square_avg). */
static void rmsprop_update(const Optimizer *o, const TrainConfig *tc, const OptRun *r) {
    o->be->rmsprop_update(r->w, r->w_act, r->state[0], r->g, r->n, r->lr, tc->rmsprop_alpha,
                          tc->rmsprop_eps, r->weight_decay);
}

static const OptimizerSpec SPECS[] = {
    [OPTIMIZER_ADAMW] = {"adamw", 2, {"exp_avg", "exp_avg_sq"}, adamw_update},
    [OPTIMIZER_RMSPROP] = {"rmsprop", 1, {"square_avg"}, rmsprop_update},
};

const OptimizerSpec *optimizer_spec(OptimizerKind kind) {
    RT_ASSERT(kind >= 0 && (size_t)kind < sizeof SPECS / sizeof SPECS[0]);
    return &SPECS[kind];
}

Optimizer *optimizer_create(const Backend *be, OptimizerKind kind, int64_t lo, int64_t hi) {
    RT_ASSERT(0 <= lo && lo <= hi);
    Optimizer *o = rt_calloc(1, sizeof(Optimizer));
    o->spec = optimizer_spec(kind);
    o->be = be;
    o->lo = lo;
    o->hi = hi;
    size_t bytes = (size_t)(hi - lo) * be->f32_size;
    for (int k = 0; k < o->spec->nstate; k++) {
        o->state[k] = be->alloc(bytes);
        be->zero(o->state[k], bytes);
    }
    return o;
}

void optimizer_free(Optimizer *o) {
    if (!o) return;
    for (int k = 0; k < o->spec->nstate; k++) o->be->release(o->state[k]);
    rt_free(o);
}

/* A parameter's group (docs/models.md §training-recipe): its learning rate and weight decay. */
typedef enum { GROUP_PLAIN, GROUP_DECAY, GROUP_RECURRENT, GROUP_ORTHOGONAL } Group;

static Group group_of(const ParamInfo *p) {
    return p->orthogonal  ? GROUP_ORTHOGONAL
           : p->recurrent ? GROUP_RECURRENT
           : p->decay     ? GROUP_DECAY
                          : GROUP_PLAIN;
}

/* The schedule's lr scaled by the group's peak over train.lr (a peak of 0: train.lr). */
static double group_lr(const TrainConfig *tc, Group g, double lr) {
    double peak = g == GROUP_RECURRENT    ? tc->lr_recurrent
                  : g == GROUP_ORTHOGONAL ? tc->lr_orthogonal
                                          : 0;
    return peak > 0 && tc->lr > 0 ? lr * peak / tc->lr : lr;
}

static double group_decay(const TrainConfig *tc, Group g) {
    switch (g) {
    case GROUP_DECAY: return tc->weight_decay;
    case GROUP_RECURRENT: return tc->weight_decay_recurrent;
    case GROUP_ORTHOGONAL: return tc->weight_decay_orthogonal;
    case GROUP_PLAIN: break;
    }
    return 0;
}

/* One update over elements [a, b) of the optimizer's range, clamped to it, with the learning
 * rate and weight decay of the group. */
static void update_run(Optimizer *o, const TrainConfig *tc, double lr, char *w, void *act, char *g,
                       int64_t a, int64_t b, Group grp) {
    const Backend *be = o->be;
    if (a < o->lo) a = o->lo;
    if (b > o->hi) b = o->hi;
    if (a >= b) return;
    size_t F = be->f32_size, off = (size_t)a * F, soff = (size_t)(a - o->lo) * F;
    OptRun r = {w + off,
                act ? (char *)act + (size_t)a * be->act_size : NULL,
                {NULL},
                g + off,
                b - a,
                group_lr(tc, grp, lr),
                group_decay(tc, grp)};
    for (int k = 0; k < o->spec->nstate; k++) r.state[k] = (char *)o->state[k] + soff;
    o->spec->update(o, tc, &r);
}

/* Neighbouring trainable parameters of the same group are updated by one call, the
 * alignment padding between them included: padding has zero weights, gradients and state,
 * so its update is zero. A frozen parameter or a change of group ends a run. */
void optimizer_step(Optimizer *o, Model *m, const TrainConfig *tc, double lr) {
    const ParamTable *t = model_params(m);
    void *act;
    char *w = model_weights_and_copy(m, &act), *g = model_grads(m);
    o->t++;
    int64_t run_lo = 0, run_hi = 0;
    Group run = GROUP_PLAIN;
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        Group grp = group_of(p);
        if (p->trainable && run_hi > run_lo && grp == run) {
            run_hi = p->offset + p->numel;
            continue;
        }
        update_run(o, tc, lr, w, act, g, run_lo, run_hi, run);
        run_lo = run_hi = p->offset;
        if (p->trainable) run_hi = p->offset + p->numel, run = grp;
    }
    update_run(o, tc, lr, w, act, g, run_lo, run_hi, run);
}

double grad_sumsq(Model *m, int64_t lo, int64_t hi) {
    const Backend *be = model_backend(m);
    return be->sumsq((char *)model_grads(m) + (size_t)lo * be->f32_size, hi - lo);
}

void grads_scale(Model *m, int64_t lo, int64_t hi, double s) {
    const Backend *be = model_backend(m);
    be->scale((char *)model_grads(m) + (size_t)lo * be->f32_size, hi - lo, s);
}
