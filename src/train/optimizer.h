/* AdamW with docs/models.md §7's parameter groups and global-norm clipping (the learning rate comes
 * from train/schedule.h). Moments live on the backend in the flat parameter layout. */
#ifndef ROTOR_OPTIMIZER_H
#define ROTOR_OPTIMIZER_H

#include <stdint.h>

#include "model/model.h"
#include "train/train_config.h"

/* The optimizer owns the elements [lo, hi) of the flat parameter buffer: all of it, or one
 * rank's slice with ZeRO-1 (the moments are sharded; each rank updates its slice and the
 * slices are then all-gathered). */
typedef struct {
    const Backend *be;
    void *m, *v;     /* [f32] first and second moments of elements lo..hi-1 */
    int64_t lo, hi;
    int64_t t;       /* updates applied so far (bias-correction step) */
} AdamW;

AdamW *adamw_create(const Backend *be, int64_t lo, int64_t hi);
void adamw_free(AdamW *o);
/* One update of the trainable parameter elements in [lo, hi) with the current gradients:
 * weight decay only on parameters whose ParamInfo.decay is set. */
void adamw_step(AdamW *o, Model *m, const TrainConfig *tc, double lr);

/* Sum of squared gradients of the elements [lo, hi) (frozen parameters have none). */
double grad_sumsq(Model *m, int64_t lo, int64_t hi);
/* Scales the gradients of the elements [lo, hi) by `s`. */
void grads_scale(Model *m, int64_t lo, int64_t hi, double s);

#endif
