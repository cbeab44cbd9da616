/* The learning-rate schedule of docs/models.md §7: linear warmup, then train.schedule's decay. */
#ifndef ROTOR_SCHEDULE_H
#define ROTOR_SCHEDULE_H

#include <stdint.h>

#include "config/config.h"

/* Learning rate at optimizer step `step` (0-based): linear warmup from lr_start to lr over
 * W = floor(warmup_frac * steps) steps, then from lr at step W to the last step:
 *   cosine    half a cosine down to lr_min,
 *   linear    a straight line down to lr_min,
 *   constant  lr throughout (lr_min unused). */
double lr_at(const TrainConfig *tc, int64_t step);

#endif
