/* The learning-rate schedules of train/schedule.h: the same warmup for each, then cosine
 * (docs/models.md §training-recipe, the default), linear, constant or wsd (warmup, stable, decay in
 * three shapes); values at the warmup's start, middle and end, in the decay and at the last step.
 */
#include <string.h>

#include "harness.h"
#include "train/schedule.h"

/* 1000 steps, 100 of warmup from 1e-5 to 2e-3, decay over steps 100..999 to 1e-4. */
static TrainConfig recipe(Schedule schedule) {
    TrainConfig tc;
    memset(&tc, 0, sizeof tc);
    tc.steps = 1000;
    tc.lr = 2e-3;
    tc.lr_start = 1e-5;
    tc.lr_min = 1e-4;
    tc.warmup_frac = 0.1;
    tc.schedule = schedule;
    return tc;
}

/* Every schedule shares the warmup: linear from lr_start at step 0 to lr at step W. */
static void check_warmup(const TrainConfig *tc) {
    CHECK_CLOSE(lr_at(tc, 0), 1e-5, 1e-12);
    CHECK_CLOSE(lr_at(tc, 50), 1e-5 + (2e-3 - 1e-5) * 0.5, 1e-12);
    CHECK_CLOSE(lr_at(tc, 100), 2e-3, 1e-12);
}

static const int64_t MID = 549; /* progress 449/899 through the decay */

static void test_cosine(void) {
    TrainConfig tc = recipe(SCHEDULE_COSINE);
    check_warmup(&tc);
    CHECK_CLOSE(lr_at(&tc, MID), 1e-4 + 0.5 * (2e-3 - 1e-4) * (1 + cos(M_PI * (MID - 100) / 899.0)),
                1e-12);
    CHECK_CLOSE(lr_at(&tc, 999), 1e-4, 1e-12);
    for (int64_t s = 101; s < 1000; s++) CHECK(lr_at(&tc, s) <= lr_at(&tc, s - 1));
}

static void test_linear(void) {
    TrainConfig tc = recipe(SCHEDULE_LINEAR);
    check_warmup(&tc);
    CHECK_CLOSE(lr_at(&tc, MID), 2e-3 + (1e-4 - 2e-3) * (MID - 100) / 899.0, 1e-12);
    CHECK_CLOSE(lr_at(&tc, 999), 1e-4, 1e-12);
    double drop = (2e-3 - 1e-4) / 899; /* the same decrement every step */
    for (int64_t s = 101; s < 1000; s++)
        CHECK_CLOSE(lr_at(&tc, s - 1) - lr_at(&tc, s), drop, 1e-15);
    /* No warmup: the line starts at lr on step 0. */
    tc.warmup_frac = 0;
    CHECK_CLOSE(lr_at(&tc, 0), 2e-3, 1e-12);
    CHECK_CLOSE(lr_at(&tc, 999), 1e-4, 1e-12);
}

static void test_constant(void) {
    TrainConfig tc = recipe(SCHEDULE_CONSTANT);
    check_warmup(&tc);
    for (int64_t s = 100; s < 1000; s++) CHECK(lr_at(&tc, s) == 2e-3);
}

/* wsd: warmup to step 100, lr until the decay's first step D, then to lr_min at step 999;
 * D = 1000 - round(0.2 * 1000) = 800, progress (step - 800) / 199. */
static void test_wsd(void) {
    TrainConfig tc = recipe(SCHEDULE_WSD);
    tc.decay_frac = 0.2;
    check_warmup(&tc);
    CHECK(wsd_decay_start(&tc) == 800);
    CHECK(lr_at(&tc, 500) == 2e-3 && lr_at(&tc, 799) == 2e-3 && lr_at(&tc, 800) == 2e-3);
    CHECK_CLOSE(lr_at(&tc, 999), 1e-4, 1e-15);
    const double p = 100.0 / 199.0; /* step 900 */
    tc.decay_shape = DECAY_LINEAR;
    CHECK_CLOSE(lr_at(&tc, 900), 2e-3 - 1.9e-3 * p, 1e-15);
    tc.decay_shape = DECAY_COSINE;
    CHECK_CLOSE(lr_at(&tc, 900), 1e-4 + 0.5 * 1.9e-3 * (1 + cos(M_PI * p)), 1e-15);
    CHECK_CLOSE(lr_at(&tc, 999), 1e-4, 1e-15);
    tc.decay_shape = DECAY_1_SQRT;
    CHECK_CLOSE(lr_at(&tc, 900), 1e-4 + 1.9e-3 * (1 - sqrt(p)), 1e-15);
    CHECK_CLOSE(lr_at(&tc, 999), 1e-4, 1e-15);
    for (int shape = DECAY_LINEAR; shape <= DECAY_1_SQRT; shape++) {
        tc.decay_shape = (DecayShape)shape;
        for (int64_t s = 101; s < 1000; s++) CHECK(lr_at(&tc, s) <= lr_at(&tc, s - 1));
    }
    /* an explicit first decay step (a decay run branched at step 950) */
    tc.decay_shape = DECAY_LINEAR;
    tc.decay_start = 950;
    CHECK(lr_at(&tc, 949) == 2e-3 && lr_at(&tc, 950) == 2e-3);
    CHECK_CLOSE(lr_at(&tc, 970), 2e-3 - 1.9e-3 * 20.0 / 49.0, 1e-15);
    CHECK_CLOSE(lr_at(&tc, 999), 1e-4, 1e-15);
    /* no decay (decay_frac 0), and a decay of one step */
    tc.decay_start = 0;
    tc.decay_frac = 0;
    CHECK(wsd_decay_start(&tc) == 1000 && lr_at(&tc, 999) == 2e-3);
    tc.decay_frac = 0.001;
    CHECK(lr_at(&tc, 998) == 2e-3);
    CHECK_CLOSE(lr_at(&tc, 999), 1e-4, 1e-15);
}

static const TestCase tests[] = {
    {"cosine", test_cosine},
    {"linear", test_linear},
    {"constant", test_constant},
    {"wsd", test_wsd},
};

TH_MAIN(tests)
