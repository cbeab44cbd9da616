/* Weighted mixtures of shard sets (src/data/shard_source.c, data/mixture_spec.h): every
 * prefix of a stage holds each source's share of its windows to within one window; a
 * source's windows come once per epoch, in its own order; the global order does not depend
 * on the world size or the read-ahead; a run stopped and resumed (across a stage change,
 * with another world size) reads what an uninterrupted run reads; data.on_exhausted = stop
 * ends at a step's start with the position kept; bad mixtures and stages are errors naming
 * the key and the part of the value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/run_config.h"
#include "data/datasource.h"
#include "data/mixture_spec.h"
#include "harness.h"
#include "testutil.h"
#include "util/error.h"

#define T 8
#define OFFSET_B 20000 /* the tokens of source b begin here, those of c at 2 OFFSET_B */

static char *dir_a, *dir_b, *dir_c, mix2[4096], mix3[4096];
static const int64_t SIZES_A[2] = {900, 701}, SIZES_B[1] = {650}, SIZES_C[1] = {121};
static const int64_t WIN_A = (900 + 701 - 1) / T, WIN_B = (650 - 1) / T, WIN_C = (121 - 1) / T;

typedef struct {
    const char *spec, *stages;
    int rank, world, prefetch;
    int64_t windows_per_step, holdout;
    DataSplit split;
    DataExhausted on_exhausted;
} Open;

static DataSource *open_mix(const Open *o, char *err, size_t errlen) {
    RunConfig rc;
    run_config_defaults(&rc);
    rc.model.vocab_size = 65536;
    snprintf(rc.data.stages, sizeof rc.data.stages, "%s", o->stages ? o->stages : "");
    rc.data.on_exhausted = o->on_exhausted;
    DataOptions opt = {.seq_len = T,
                       .seed = 7,
                       .split = o->split,
                       .rank = o->rank,
                       .world = o->world ? o->world : 1,
                       .holdout_windows = o->holdout,
                       .prefetch = o->prefetch,
                       .windows_per_step = o->windows_per_step};
    return datasource_open(o->spec, &rc, &opt, err, errlen);
}

/* Source (0 = a, 1 = b, 2 = c) and window of a window read, from its first token. */
static int source_of(int32_t first, int64_t *window) {
    int s = first >= 2 * OFFSET_B ? 2 : first >= OFFSET_B ? 1 : 0;
    *window = (first - s * OFFSET_B) / T;
    return s;
}

/* The first tokens of `steps` global micro-batches of `world` ranks x B windows, in global
 * order, read by `world` sources opened with o (rank and world replaced). */
static int32_t *global_order(const Open *o, int world, int B, int steps) {
    DataSource *src[4];
    char err[1024];
    for (int r = 0; r < world; r++) {
        Open or = *o;
        or.rank = r;
        or.world = world;
        src[r] = open_mix(& or, err, sizeof err);
        if (!src[r]) rt_die("%s", err);
    }
    int32_t *order = rt_malloc(sizeof(int32_t) * (size_t)(steps * world * B));
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)(B * (T + 1)));
    for (int s = 0; s < steps; s++)
        for (int r = 0; r < world; r++) {
            RT_ASSERT(!src[r]->next(src[r], tok, NULL, B, err, sizeof err));
            for (int b = 0; b < B; b++)
                order[((int64_t)s * world + r) * B + b] = tok[(size_t)b * (T + 1)];
        }
    for (int r = 0; r < world; r++) datasource_free(src[r]);
    rt_free(tok);
    return order;
}

static void test_shares_and_epochs(void) {
    Open o = {.spec = mix3, .prefetch = 2};
    int64_t n = 6 * WIN_C * 4; /* c (weight 0.25 of 3 windows in 12) wraps several times */
    int32_t *order = global_order(&o, 1, 4, (int)(n / 4));
    const double w[3] = {0.5, 0.25, 0.25};
    const int64_t count[3] = {WIN_A, WIN_B, WIN_C};
    int64_t drawn[3] = {0}, worst = 0;
    char *seen[3];
    for (int s = 0; s < 3; s++) seen[s] = rt_calloc((size_t)count[s], 1);
    for (int64_t i = 0; i < n; i++) {
        int64_t win;
        int s = source_of(order[i], &win);
        CHECK(win >= 0 && win < count[s]);
        int64_t epoch = drawn[s] / count[s];
        if (drawn[s] % count[s] == 0) memset(seen[s], 0, (size_t)count[s]);
        CHECK_MSG(!seen[s][win]++, "source %d, epoch %lld: window %lld drawn twice", s,
                  (long long)epoch, (long long)win);
        drawn[s]++;
        for (int k = 0; k < 3; k++)
            if (fabs((double)drawn[k] - w[k] * (double)(i + 1)) >= 1) worst++;
    }
    CHECK_MSG(!worst, "%lld prefixes hold a source's share off by a window or more",
              (long long)worst);
    CHECK(drawn[2] > 2 * WIN_C); /* c went through several epochs */
    for (int s = 0; s < 3; s++) rt_free(seen[s]);
    rt_free(order);
}

static void test_order_independent_of_world_size(void) {
    Open o = {.spec = mix3, .stages = "5: a=0, b=1, c=1; 9: a=3, b=1, c=0", .windows_per_step = 12};
    int steps = 16;
    int32_t *o1 = global_order(&o, 1, 12, steps);
    o.prefetch = 3;
    int32_t *o2 = global_order(&o, 2, 6, steps);
    o.prefetch = 1;
    int32_t *o3 = global_order(&o, 3, 4, steps);
    size_t bytes = sizeof(int32_t) * (size_t)(steps * 12);
    CHECK(!memcmp(o1, o2, bytes));
    CHECK(!memcmp(o1, o3, bytes));
    /* the stages: steps 5..8 draw no window of a, steps 9.. none of c */
    int64_t a_in_2 = 0, c_in_3 = 0, a_in_3 = 0, win;
    for (int i = 5 * 12; i < 9 * 12; i++) a_in_2 += source_of(o1[i], &win) == 0;
    for (int i = 9 * 12; i < steps * 12; i++) {
        int s = source_of(o1[i], &win);
        c_in_3 += s == 2;
        a_in_3 += s == 0;
    }
    CHECK(a_in_2 == 0 && c_in_3 == 0);
    CHECK_MSG(a_in_3 == 3 * (steps - 9) * 12 / 4, "stage 2 drew %lld windows of a",
              (long long)a_in_3);
    rt_free(o1);
    rt_free(o2);
    rt_free(o3);
}

/* Stop after `stop` steps of world w1, save the position, resume at world w2. */
static void resume_case(const char *stages, int w1, int w2, int stop) {
    int G = 12, steps = 20;
    Open o = {.spec = mix3, .stages = stages, .windows_per_step = G, .prefetch = 2};
    int32_t *straight = global_order(&o, 1, G, steps);
    char err[1024];
    int32_t *got = rt_malloc(sizeof(int32_t) * (size_t)(steps * G));
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)(G * (T + 1)));
    json_t *state = NULL;
    DataSource *src[4];
    for (int phase = 0; phase < 2; phase++) {
        int world = phase ? w2 : w1, B = G / world;
        for (int r = 0; r < world; r++) {
            Open or = o;
            or.rank = r;
            or.world = world;
            src[r] = open_mix(& or, err, sizeof err);
            RT_ASSERT(src[r]);
            if (state) CHECK_MSG(!src[r]->set_state(src[r], state, err, sizeof err), "%s", err);
            CHECK_MSG(!src[r]->notice[0], "resuming the same mixture noted: %s", src[r]->notice);
        }
        for (int s = phase ? stop : 0; s < (phase ? steps : stop); s++)
            for (int r = 0; r < world; r++) {
                RT_ASSERT(!src[r]->next(src[r], tok, NULL, B, err, sizeof err));
                for (int b = 0; b < B; b++)
                    got[(int64_t)s * G + r * B + b] = tok[(size_t)b * (T + 1)];
            }
        json_decref(state);
        state = src[0]->get_state(src[0]);
        for (int r = 0; r < world; r++) datasource_free(src[r]);
    }
    CHECK_MSG(
        !memcmp(straight, got, sizeof(int32_t) * (size_t)(steps * G)),
        "stages '%s': resume %d -> %d ranks after step %d differs from the uninterrupted order",
        stages, w1, w2, stop);
    json_decref(state);
    rt_free(straight);
    rt_free(got);
    rt_free(tok);
}

static void test_resume_across_stages(void) {
    const char *stages = "6: a=1, b=2, c=1; 11: a=1, b=0, c=0";
    resume_case(stages, 1, 1, 3);  /* inside stage 0 */
    resume_case(stages, 1, 1, 6);  /* at the change */
    resume_case(stages, 2, 3, 8);  /* inside stage 1, another world size */
    resume_case(stages, 3, 2, 13); /* inside stage 2 */
    resume_case("", 2, 1, 7);      /* no stages */
}

/* A state saved by one mixture, restored into another: matched by name, with notices. */
static void test_resume_changed_mixture(void) {
    char err[1024], spec[4096];
    int32_t tok[4 * (T + 1)];
    Open o = {.spec = mix3, .windows_per_step = 4};
    DataSource *s = open_mix(&o, err, sizeof err);
    RT_ASSERT(s);
    for (int i = 0; i < 5; i++) RT_ASSERT(!s->next(s, tok, NULL, 4, err, sizeof err));
    json_t *st = s->get_state(s);
    datasource_free(s);
    /* b dropped, a reweighted: a's position kept */
    snprintf(spec, sizeof spec, "a=%s:1, c=%s:1", dir_a, dir_c);
    o.spec = spec;
    s = open_mix(&o, err, sizeof err);
    RT_ASSERT(s);
    CHECK_MSG(!s->set_state(s, st, err, sizeof err), "%s", err);
    CHECK_MSG(strstr(s->notice, "source 'b' of the checkpoint is not in this mixture") &&
                  strstr(s->notice, "weights apply afresh"),
              "%s", s->notice);
    const char *names[4];
    int64_t drawn[4];
    CHECK(s->drawn(s, names, drawn, 4) == 2 && !strcmp(names[0], "a") && drawn[0] == 10 &&
          drawn[1] == 5);
    datasource_free(s);
    /* one shard set cannot take a mixture's position */
    o.spec = dir_a;
    s = open_mix(&o, err, sizeof err);
    RT_ASSERT(s);
    CHECK(s->set_state(s, st, err, sizeof err) && strstr(err, "not that of one shard set"));
    datasource_free(s);
    /* nor a mixture with stages one of another global batch */
    o.spec = mix3;
    o.stages = "9: a=1, b=1, c=1";
    o.windows_per_step = 8;
    s = open_mix(&o, err, sizeof err);
    RT_ASSERT(s);
    CHECK(s->set_state(s, st, err, sizeof err) &&
          strstr(err, "the global batch must stay the same"));
    datasource_free(s);
    json_decref(st);
}

static void test_exhausted_stop(void) {
    char err[1024];
    int32_t tok[4 * (T + 1)];
    for (int prefetch = 0; prefetch <= 2; prefetch += 2) {
        Open o = {.spec = mix2,
                  .windows_per_step = 4,
                  .prefetch = prefetch,
                  .on_exhausted = DATA_EXHAUSTED_STOP};
        DataSource *s = open_mix(&o, err, sizeof err);
        RT_ASSERT(s);
        /* c has WIN_C windows at a quarter of each step's 4: it runs out after WIN_C steps */
        int64_t steps = 0;
        int rc;
        json_t *before = NULL;
        while (!(rc = s->next(s, tok, NULL, 4, err, sizeof err))) {
            steps++;
            json_decref(before);
            before = s->get_state(s);
            RT_ASSERT(steps < 1000);
        }
        CHECK_MSG(rc == 1 && steps == WIN_C, "prefetch %d: rc %d after %lld steps", prefetch, rc,
                  (long long)steps);
        CHECK_MSG(strstr(err, "source 'c'") && strstr(err, "ran out"), "%s", err);
        json_t *after = s->get_state(s);
        CHECK(json_equal(before, after)); /* the position did not move */
        CHECK(s->next(s, tok, NULL, 4, err, sizeof err) == 1);
        json_decref(before);
        json_decref(after);
        datasource_free(s);
        /* restart: the same steps, then c's second epoch, noted */
        o.on_exhausted = DATA_EXHAUSTED_RESTART;
        s = open_mix(&o, err, sizeof err);
        RT_ASSERT(s);
        for (int64_t i = 0; i <= steps; i++) RT_ASSERT(!s->next(s, tok, NULL, 4, err, sizeof err));
        CHECK_MSG(strstr(s->notice, "source 'c'") && strstr(s->notice, "epoch 1 done"), "%s",
                  s->notice);
        datasource_free(s);
    }
}

static void test_holdout(void) {
    char err[1024];
    int32_t tok[T + 1];
    int64_t hold = 4, win;
    Open v = {.spec = mix2, .split = SPLIT_VAL, .holdout = hold};
    DataSource *s = open_mix(&v, err, sizeof err);
    RT_ASSERT(s);
    for (int i = 0; i < 8; i++) { /* in order, from the end of each source */
        RT_ASSERT(!s->next(s, tok, NULL, 1, err, sizeof err));
        int src = source_of(tok[0], &win);
        CHECK(win >= (src ? WIN_C : WIN_A) - hold);
    }
    datasource_free(s);
    Open t = {.spec = mix2, .holdout = hold, .prefetch = 1};
    s = open_mix(&t, err, sizeof err);
    RT_ASSERT(s);
    for (int i = 0; i < 400; i++) {
        RT_ASSERT(!s->next(s, tok, NULL, 1, err, sizeof err));
        int src = source_of(tok[0], &win);
        CHECK(win < (src ? WIN_C : WIN_A) - hold);
    }
    datasource_free(s);
}

static void expect_error(const char *spec, const char *stages, const char *needle) {
    MixSpec m;
    char err[1024] = "";
    int rc = mix_spec_parse("data.train", spec, stages, &m, err, sizeof err);
    CHECK_MSG(rc && strstr(err, needle), "'%s' / '%s': expected an error containing '%s', got '%s'",
              spec, stages ? stages : "", needle, rc ? err : "(parsed)");
}

static void test_spec(void) {
    MixSpec m;
    char err[1024];
    CHECK(!mix_spec_parse("data.train", "/d/web/*.h5:3, code=/d/stack:1", " 10 : web=1, code = 1 ",
                          &m, err, sizeof err));
    CHECK(m.n == 2 && !strcmp(m.src[0].name, "web") && !strcmp(m.src[0].path, "/d/web/*.h5"));
    CHECK(!strcmp(m.src[1].name, "code") && !strcmp(m.src[1].path, "/d/stack"));
    CHECK(m.stage[0].weight[0] == 0.75 && m.stage[0].weight[1] == 0.25);
    CHECK(m.stages == 2 && m.stage[1].step == 10 && m.stage[1].weight[0] == 0.5);
    CHECK(mix_stage_at(&m, 9) == 0 && mix_stage_at(&m, 10) == 1);
    CHECK(!mix_spec_parse("data.train", "/runs/a:b/shards", NULL, &m, err, sizeof err) &&
          m.n == 1 &&
          !strcmp(m.src[0].path,
                  "/runs/a:b/shards")); /* a ':' not followed by a number is the path's */
    expect_error("a:1, b", NULL, "every source of a mixture needs a weight");
    expect_error("a:-1, b:1", NULL, "must be a number >= 0");
    expect_error("a:0, b:0", NULL, "the weights sum to 0");
    expect_error("x/d:1, y/d:1", NULL, "two sources are named 'd'");
    CHECK(!mix_spec_parse("data.train", "/s/web/train:1, /s/code/train/*.h5:1", NULL, &m, err,
                          sizeof err) &&
          !strcmp(m.src[0].name, "web") && !strcmp(m.src[1].name, "code"));
    expect_error("a b=c:1", NULL, "a source's name is letters");
    expect_error("a:1, b:1", "5: a=1, z=1",
                 "'z=1' must be NAME=WEIGHT with a source of data.train");
    expect_error("a:1, b:1", "5: a=1", "gives no weight for 'b' (give b=0");
    expect_error("a:1, b:1", "5: a=1, b=1; 5: a=1, b=2", "must come after the one at step 5");
    expect_error("a:1, b:1", "0: a=1, b=1", "STEP > 0");
    expect_error("a:1", "5: a=1", "stages change the weights of a mixture");
    /* run_config_validate: a stage beyond train.steps, stages without a mixture */
    RunConfig rc;
    run_config_defaults(&rc);
    snprintf(rc.data.train, sizeof rc.data.train, "%s", mix2);
    snprintf(rc.data.stages, sizeof rc.data.stages, "%lld: a=1, c=1", (long long)rc.train.steps);
    CHECK(run_config_validate(&rc, "x.ini", err, sizeof err) &&
          strstr(err, "never starts: train.steps"));
    snprintf(rc.data.train, sizeof rc.data.train, "synthetic:markov");
    CHECK(run_config_validate(&rc, "x.ini", err, sizeof err) && strstr(err, "data.stages = "));
    rc.data.stages[0] = 0;
    rc.data.on_exhausted = DATA_EXHAUSTED_STOP;
    CHECK(run_config_validate(&rc, "x.ini", err, sizeof err) && strstr(err, "an endless stream"));
}

static const TestCase tests[] = {
    {"spec", test_spec},
    {"shares_and_epochs", test_shares_and_epochs},
    {"order_independent_of_world_size", test_order_independent_of_world_size},
    {"resume_across_stages", test_resume_across_stages},
    {"resume_changed_mixture", test_resume_changed_mixture},
    {"exhausted_stop", test_exhausted_stop},
    {"holdout", test_holdout},
};

int main(int argc, char **argv) {
    dir_a = rt_sprintf("%s/a", th_tmp_dir());
    dir_b = rt_sprintf("%s/b", th_tmp_dir());
    dir_c = rt_sprintf("%s/c", th_tmp_dir());
    tu_write_shards(dir_a, "0123456789abcdef", 65536, SIZES_A, 2, 0);
    tu_write_shards(dir_b, "0123456789abcdef", 65536, SIZES_B, 1, OFFSET_B);
    tu_write_shards(dir_c, "0123456789abcdef", 65536, SIZES_C, 1, 2 * OFFSET_B);
    snprintf(mix3, sizeof mix3, "a=%s:2, %s:1, c=%s:1", dir_a, dir_b, dir_c);
    snprintf(mix2, sizeof mix2, "a=%s:3, c=%s:1", dir_a, dir_c);
    int rc = th_run(tests, TH_COUNT(tests), argc, argv);
    rt_free(dir_a);
    rt_free(dir_b);
    rt_free(dir_c);
    return rc;
}
