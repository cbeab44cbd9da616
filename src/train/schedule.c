#include "train/schedule.h"

#include <math.h>

double lr_at(const TrainConfig *tc, int64_t step) {
    int64_t warmup = (int64_t)(tc->warmup_frac * (double)tc->steps);
    if (step < warmup) return tc->lr_start + (tc->lr - tc->lr_start) * (double)step / (double)warmup;
    int64_t decay_steps = tc->steps - 1 - warmup;
    if (tc->schedule == SCHEDULE_CONSTANT || decay_steps <= 0) return tc->lr;
    double progress = (double)(step - warmup) / (double)decay_steps;
    if (progress > 1) progress = 1;
    if (tc->schedule == SCHEDULE_LINEAR) return tc->lr + (tc->lr_min - tc->lr) * progress;
    return tc->lr_min + 0.5 * (tc->lr - tc->lr_min) * (1 + cos(M_PI * progress));
}
