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

/* One backend update of a run of neighbouring elements of one parameter group: pointers at
 * the run's first element. */
typedef struct {
    void *w, *w_act;            /* [f32] master weights; [act] copy or NULL */
    void *state[OPT_MAX_STATE]; /* [f32] the optimizer's state buffers */
    const void *g;              /* [f32] gradients */
    int64_t n;
    double lr, weight_decay; /* the group's */
} OptRun;

/* An update rule: its name (train.optimizer), its per-element state buffers under the names
 * torch gives them in an optimizer's state (the checkpoint's tensor names), and the update
 * of one run at the optimizer's step o->t. */
typedef struct {
    const char *name;
    int nstate;
    const char *state_names[OPT_MAX_STATE];
    void (*update)(const Optimizer *o, const TrainConfig *tc, const OptRun *r);
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
/* One update of the trainable parameter elements in [lo, hi) with the current gradients,
 * each parameter with its group's learning rate and weight decay (docs/models.md §training-recipe).
 */
void optimizer_step(Optimizer *o, Model *m, const TrainConfig *tc, double lr);

/* Sum of squared gradients of the elements [lo, hi) (frozen parameters have none). */
double grad_sumsq(Model *m, int64_t lo, int64_t hi);
/* Scales the gradients of the elements [lo, hi) by `s`. */
void grads_scale(Model *m, int64_t lo, int64_t hi, double s);

#endif
