/* The learning-rate schedule of docs/models.md §training-recipe: linear warmup, then
 * train.schedule's decay. */
#ifndef ROTOR_SCHEDULE_H
#define ROTOR_SCHEDULE_H

#include <stdint.h>

#include "config/config.h"

/* Learning rate at optimizer step `step` (0-based): linear warmup from lr_start to lr over
 * W = floor(warmup_frac * steps) steps, then from lr at step W to the last step:
 *   cosine    half a cosine down to lr_min,
 *   linear    a straight line down to lr_min,
 *   constant  lr throughout (lr_min unused),
 *   wsd       lr (stable) until the decay's first step D = wsd_decay_start, then from lr at D
 *             to lr_min at the last step in train.decay_shape: linear, cosine (half a cosine)
 *             or 1-sqrt (lr_min + (lr - lr_min)(1 - sqrt(progress))), progress (step - D) /
 *             (steps - 1 - D). A decay of one step (D = steps - 1) is lr_min there. */
double lr_at(const TrainConfig *tc, int64_t step);

/* wsd's first decay step: train.decay_start, or steps - round(decay_frac * steps) (steps
 * itself when decay_frac is 0: no decay). */
int64_t wsd_decay_start(const TrainConfig *tc);

#endif
