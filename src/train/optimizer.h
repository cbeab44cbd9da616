/* AdamW with SPEC §7's parameter groups, global-norm clipping and the warmup + cosine
 * schedule. Moments live on the backend in the flat parameter layout. */
#ifndef ROTOR_OPTIMIZER_H
#define ROTOR_OPTIMIZER_H

#include <stdint.h>

#include "model/model.h"
#include "train/train_config.h"

typedef struct {
    const Backend *be;
    void *m, *v;   /* [f32] first and second moments, one entry per parameter element */
    int64_t n;     /* elements (= ParamTable.total) */
    int64_t t;     /* updates applied so far (bias-correction step) */
} AdamW;

AdamW *adamw_create(const Backend *be, int64_t n);
void adamw_free(AdamW *o);
/* One update of every trainable parameter with the current gradients: weight decay only
 * on parameters whose ParamInfo.decay is set. */
void adamw_step(AdamW *o, Model *m, const TrainConfig *tc, double lr);

/* sqrt(sum of squared gradients) over the trainable parameters. */
double grad_global_norm(Model *m);
/* Scales the gradients by `s`. */
void grads_scale(Model *m, double s);

/* Learning rate at optimizer step `step` (0-based): linear warmup from lr_start to lr over
 * warmup_frac * steps, then cosine decay to lr_min at the last step (SPEC §7). */
double lr_at(const TrainConfig *tc, int64_t step);

#endif
