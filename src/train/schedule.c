#include "train/schedule.h"

#include <math.h>

int64_t wsd_decay_start(const TrainConfig *tc) {
    if (tc->decay_start > 0) return tc->decay_start;
    return tc->steps - (int64_t)llround(tc->decay_frac * (double)tc->steps);
}

/* wsd's decay from lr at progress 0 to lr_min at progress 1. */
static double decay(const TrainConfig *tc, double progress) {
    switch (tc->decay_shape) {
    case DECAY_LINEAR: return tc->lr + (tc->lr_min - tc->lr) * progress;
    case DECAY_COSINE: return tc->lr_min + 0.5 * (tc->lr - tc->lr_min) * (1 + cos(M_PI * progress));
    case DECAY_1_SQRT: return tc->lr_min + (tc->lr - tc->lr_min) * (1 - sqrt(progress));
    }
    return tc->lr;
}

double lr_at(const TrainConfig *tc, int64_t step) {
    int64_t warmup = (int64_t)(tc->warmup_frac * (double)tc->steps);
    if (step < warmup)
        return tc->lr_start + (tc->lr - tc->lr_start) * (double)step / (double)warmup;
    if (tc->schedule == SCHEDULE_WSD) {
        int64_t start = wsd_decay_start(tc), last = tc->steps - 1;
        if (step < start) return tc->lr;
        if (last <= start) return tc->lr_min; /* a decay of one step */
        double progress = (double)(step - start) / (double)(last - start);
        return decay(tc, progress > 1 ? 1 : progress);
    }
    int64_t decay_steps = tc->steps - 1 - warmup;
    if (tc->schedule == SCHEDULE_CONSTANT || decay_steps <= 0) return tc->lr;
    double progress = (double)(step - warmup) / (double)decay_steps;
    if (progress > 1) progress = 1;
    if (tc->schedule == SCHEDULE_LINEAR) return tc->lr + (tc->lr_min - tc->lr) * progress;
    return tc->lr_min + 0.5 * (tc->lr - tc->lr_min) * (1 + cos(M_PI * progress));
}
