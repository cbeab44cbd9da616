/* The optimizers of docs/models.md §training-recipe (AdamW, RMSprop) with its parameter groups, and
 * global-norm clipping (the learning rate comes from train/schedule.h). Their per-element
 * state lives on the backend in the flat parameter layout. */
#ifndef ROTOR_OPTIMIZER_H
#define ROTOR_OPTIMIZER_H

#include <stdint.h>

#include "model/model.h"
#include "config/config.h"

#define OPT_MAX_STATE 2

typedef struct Optimizer Optimizer;

/* The runs of one update: neighbouring elements of one parameter group each (UpdateRun of
 * backend_ops.h, offsets from the optimizer's lo). */
typedef struct {
    const UpdateRun *r;
    int n;
} OptRuns;

/* An update rule: its name (train.optimizer), its per-element state buffers under the names
 * torch gives them in an optimizer's state (the checkpoint's tensor names), and the update
 * of the runs at the optimizer's step o->t with the gradients multiplied by grad_scale (the
 * clip factor, 1 without clipping). */
typedef struct {
    const char *name;
    int nstate;
    const char *state_names[OPT_MAX_STATE];
    void (*update)(const Optimizer *o, Model *m, const TrainConfig *tc, const OptRuns *runs,
                   double grad_scale);
} OptimizerSpec;

/* The optimizer owns the elements [lo, hi) of the flat parameter buffer: all of it, or one
 * rank's slice with ZeRO-1 (the state is sharded; each rank updates its slice and the slices
 * are then all-gathered). */
struct Optimizer {
    const OptimizerSpec *spec;
    const Backend *be;
    void *state[OPT_MAX_STATE]; /* [f32] spec->nstate buffers of elements lo..hi-1, from 0 */
    int64_t lo, hi;
    int64_t t; /* updates applied so far (AdamW's bias-correction step) */
};

const OptimizerSpec *optimizer_spec(OptimizerKind kind);
Optimizer *optimizer_create(const Backend *be, OptimizerKind kind, int64_t lo, int64_t hi);
void optimizer_free(Optimizer *o);
/* The runs of an update of the elements [lo, hi) of t's layout at learning rate lr (OptRuns):
 * fills runs, room for t->n + 1, and returns their count. */
int optimizer_runs(const ParamTable *t, const TrainConfig *tc, double lr, int64_t lo, int64_t hi,
                   UpdateRun *runs);
/* One update of the trainable parameter elements in [lo, hi) with the current gradients
 * times grad_scale (global-norm clipping's factor, 1 for none), each parameter with its
 * group's learning rate and weight decay (docs/models.md §training-recipe). The gradients are
 * left scaled or not. */
void optimizer_step(Optimizer *o, Model *m, const TrainConfig *tc, double lr, double grad_scale);

/* Global-norm clipping's factor for the gradients (docs/models.md §training-recipe): clip /
 * (gnorm + 1e-6) where clip > 0 and the norm gnorm exceeds it, else 1. */
double grad_clip_factor(double gnorm, double clip);

/* Sum of squared gradients of the elements [lo, hi) (frozen parameters have none). */
double grad_sumsq(Model *m, int64_t lo, int64_t hi);
/* Scales the gradients of the elements [lo, hi) by `s`. */
void grads_scale(Model *m, int64_t lo, int64_t hi, double s);

#endif
