#include "train/optimizer.h"

#include <stddef.h>

#include "util/error.h"

/* The byte offset of element `at` of the optimizer's range in a buffer of the flat layout. */
static size_t flat_offset(const Optimizer *o, int64_t at, size_t elem) {
    return (size_t)(o->lo + at) * elem;
}

/* AdamW: moments m, v (torch's exp_avg, exp_avg_sq), bias-corrected at step t; one backend
 * call for every run, the clip factor applied as the gradients are read. */
static void adamw_update(const Optimizer *o, Model *m, const TrainConfig *tc, const OptRuns *runs,
                         double grad_scale) {
    const Backend *be = o->be;
    void *act;
    char *w = model_weights_and_copy(m, &act), *g = model_grads(m);
    AdamWRuns a = {.w = w + flat_offset(o, 0, be->f32_size),
                   .w_act = act ? (char *)act + flat_offset(o, 0, be->act_size) : NULL,
                   .m = o->state[0],
                   .v = o->state[1],
                   .g = g + flat_offset(o, 0, be->f32_size),
                   .runs = runs->r,
                   .nruns = runs->n,
                   .beta1 = tc->beta1,
                   .beta2 = tc->beta2,
                   .eps = tc->adam_eps,
                   .grad_scale = grad_scale,
                   .t = o->t};
    be->adamw_runs(&a);
}

/* RMSprop: the running average of squared gradients (torch's square_avg), one call per run
 * after the clip factor's pass over the range. */
static void rmsprop_update(const Optimizer *o, Model *m, const TrainConfig *tc, const OptRuns *runs,
                           double grad_scale) {
    const Backend *be = o->be;
    size_t F = be->f32_size;
    void *act;
    char *w = model_weights_and_copy(m, &act), *g = model_grads(m);
    if (grad_scale != 1) grads_scale(m, o->lo, o->hi, grad_scale);
    for (int k = 0; k < runs->n; k++) {
        const UpdateRun *r = &runs->r[k];
        be->rmsprop_update(w + flat_offset(o, r->offset, F),
                           act ? (char *)act + flat_offset(o, r->offset, be->act_size) : NULL,
                           (char *)o->state[0] + (size_t)r->offset * F,
                           g + flat_offset(o, r->offset, F), r->n, r->lr, tc->rmsprop_alpha,
                           tc->rmsprop_eps, r->weight_decay);
    }
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

/* Appends the run of elements [a, b) of the flat layout, clamped to [lo, hi), with the learning
 * rate and weight decay of the group. */
static void add_run(const TrainConfig *tc, double lr, int64_t lo, int64_t hi, UpdateRun *runs,
                    int *n, int64_t a, int64_t b, Group grp) {
    if (a < lo) a = lo;
    if (b > hi) b = hi;
    if (a >= b) return;
    runs[(*n)++] = (UpdateRun){a - lo, b - a, group_lr(tc, grp, lr), group_decay(tc, grp)};
}

/* Neighbouring trainable parameters of the same group make one run, the alignment padding
 * between them included: padding has zero weights, gradients and state, so its update is
 * zero. A frozen parameter or a change of group ends a run. */
int optimizer_runs(const ParamTable *t, const TrainConfig *tc, double lr, int64_t lo, int64_t hi,
                   UpdateRun *runs) {
    int n = 0;
    int64_t run_lo = 0, run_hi = 0;
    Group run = GROUP_PLAIN;
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        Group grp = group_of(p);
        if (p->trainable && run_hi > run_lo && grp == run) {
            run_hi = p->offset + p->numel;
            continue;
        }
        add_run(tc, lr, lo, hi, runs, &n, run_lo, run_hi, run);
        run_lo = run_hi = p->offset;
        if (p->trainable) run_hi = p->offset + p->numel, run = grp;
    }
    add_run(tc, lr, lo, hi, runs, &n, run_lo, run_hi, run);
    return n;
}

void optimizer_step(Optimizer *o, Model *m, const TrainConfig *tc, double lr, double grad_scale) {
    const ParamTable *t = model_params(m);
    UpdateRun *runs = rt_malloc(sizeof(UpdateRun) * (size_t)(t->n + 1));
    o->t++;
    OptRuns r = {runs, optimizer_runs(t, tc, lr, o->lo, o->hi, runs)};
    o->spec->update(o, m, tc, &r, grad_scale);
    rt_free(runs);
}

double grad_clip_factor(double gnorm, double clip) {
    return clip > 0 && gnorm > clip ? clip / (gnorm + 1e-6) : 1;
}

double grad_sumsq(Model *m, int64_t lo, int64_t hi) {
    const Backend *be = model_backend(m);
    return be->sumsq((char *)model_grads(m) + (size_t)lo * be->f32_size, hi - lo);
}

void grads_scale(Model *m, int64_t lo, int64_t hi, double s) {
    const Backend *be = model_backend(m);
    be->scale((char *)model_grads(m) + (size_t)lo * be->f32_size, hi - lo, s);
}
