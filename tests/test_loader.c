/* The shard loader (src/data/shard_source.c): over every epoch each window is served once
 * across all ranks for N = 1, 2, 3, in a global order that does not depend on N; a run
 * stopped mid-epoch and resumed (with the same or another world size) serves exactly the
 * windows an uninterrupted run would; document starts follow the shards' offsets; the
 * held-out validation windows are never trained on; bad shard sets are rejected. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/run_config.h"
#include "data/datasource.h"
#include "data/shard.h"
#include "harness.h"
#include "testutil.h"
#include "util/error.h"
#include "util/fsutil.h"

#define T 16

static const char *dir;                                 /* the shards of make_shards */
static const int64_t SHARD_TOKENS[3] = {700, 523, 811}; /* documents of 1..40 tokens */

/* Token at stream position p is p (mod 65000): a window is identified by its first token. */
static void make_shards(const char *d, const char *sha, int64_t vocab) {
    tu_write_shards(d, sha, vocab, SHARD_TOKENS, 3, 0);
}

static const int64_t TOTAL = 700 + 523 + 811, WINDOWS = (700 + 523 + 811 - 1) / T;

static ModelConfig model_cfg(void) {
    ModelConfig m;
    model_config_defaults(&m);
    m.vocab_size = 65536;
    return m;
}

static DataSource *open_source(const char *spec, int rank, int world, DataSplit split,
                               int64_t holdout, int prefetch, char *err, size_t errlen) {
    RunConfig rc;
    memset(&rc, 0, sizeof rc);
    rc.model = model_cfg();
    DataOptions opt = {.seq_len = T,
                       .seed = 42,
                       .split = split,
                       .rank = rank,
                       .world = world,
                       .holdout_windows = holdout,
                       .prefetch = prefetch};
    return datasource_open(spec, &rc, &opt, err, errlen);
}

/* Window index of the B windows just read, from their first tokens. */
static void window_ids(const int32_t *tok, int B, int64_t *ids) {
    for (int b = 0; b < B; b++) ids[b] = tok[(size_t)b * (T + 1)] / T;
}

/* The global order of `steps` global micro-batches of N ranks x B windows. */
static int64_t *global_order(int world, int B, int steps, int prefetch) {
    DataSource *src[3];
    char err[512];
    for (int r = 0; r < world; r++) {
        src[r] = open_source(dir, r, world, SPLIT_TRAIN, 0, prefetch, err, sizeof err);
        RT_ASSERT(src[r]);
    }
    int64_t *order = rt_malloc(sizeof(int64_t) * (size_t)(steps * world * B));
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)(B * (T + 1)));
    for (int s = 0; s < steps; s++)
        for (int r = 0; r < world; r++) {
            RT_ASSERT(!src[r]->next(src[r], tok, NULL, B, err, sizeof err));
            window_ids(tok, B, order + ((int64_t)s * world + r) * B);
        }
    for (int r = 0; r < world; r++) datasource_free(src[r]);
    rt_free(tok);
    return order;
}

static void test_every_window_once_per_epoch(void) {
    for (int world = 1; world <= 3; world++) {
        int B = 5, steps = (int)(3 * WINDOWS / (world * B)); /* about three epochs */
        int64_t *order = global_order(world, B, steps, 2);
        int64_t served = (int64_t)steps * world * B;
        char *seen = rt_calloc((size_t)WINDOWS, 1);
        for (int64_t e = 0; (e + 1) * WINDOWS <= served; e++) {
            memset(seen, 0, (size_t)WINDOWS);
            for (int64_t i = e * WINDOWS; i < (e + 1) * WINDOWS; i++) {
                CHECK(order[i] >= 0 && order[i] < WINDOWS);
                if (order[i] >= 0 && order[i] < WINDOWS) seen[order[i]]++;
            }
            int64_t missing = 0;
            for (int64_t w = 0; w < WINDOWS; w++) missing += seen[w] != 1;
            CHECK_MSG(!missing, "world %d, epoch %lld: %lld windows not served exactly once", world,
                      (long long)e, (long long)missing);
        }
        /* a shuffled order, different in every epoch */
        int64_t inorder = 0, same = 0;
        for (int64_t i = 1; i < WINDOWS; i++) inorder += order[i] == order[i - 1] + 1;
        for (int64_t i = 0; i < WINDOWS; i++) same += order[i] == order[i + WINDOWS];
        CHECK(inorder < WINDOWS / 4 && same < WINDOWS / 4);
        rt_free(seen);
        rt_free(order);
    }
}

static void test_order_independent_of_world_size(void) {
    int B = 2, steps1 = 60;
    int64_t *o1 = global_order(1, 6 * B, steps1 / 6, 0);
    int64_t *o2 = global_order(2, 3 * B, steps1 / 6, 3);
    int64_t *o3 = global_order(3, 2 * B, steps1 / 6, 1);
    int64_t n = (int64_t)(steps1 / 6) * 6 * B;
    CHECK(!memcmp(o1, o2, sizeof(int64_t) * (size_t)n));
    CHECK(!memcmp(o1, o3, sizeof(int64_t) * (size_t)n));
    rt_free(o1);
    rt_free(o2);
    rt_free(o3);
}

/* Stop after `stop` global batches at world w1, save the position, resume at world w2. */
static void resume_case(int w1, int w2) {
    int G = 12, steps = 40, stop = 17; /* global batch of 12 windows */
    int64_t *straight = global_order(1, G, steps, 2);
    char err[512];
    int64_t *got = rt_malloc(sizeof(int64_t) * (size_t)(steps * G));
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)(G * (T + 1)));
    json_t *state = NULL;
    DataSource *src[3];
    for (int phase = 0; phase < 2; phase++) {
        int world = phase ? w2 : w1, B = G / world;
        for (int r = 0; r < world; r++) {
            src[r] = open_source(dir, r, world, SPLIT_TRAIN, 0, 2, err, sizeof err);
            RT_ASSERT(src[r]);
            if (state) CHECK(!src[r]->set_state(src[r], state, err, sizeof err));
        }
        for (int s = phase ? stop : 0; s < (phase ? steps : stop); s++)
            for (int r = 0; r < world; r++) {
                RT_ASSERT(!src[r]->next(src[r], tok, NULL, B, err, sizeof err));
                window_ids(tok, B, got + (int64_t)s * G + (int64_t)r * B);
            }
        json_decref(state);
        state = src[0]->get_state(src[0]);
        for (int r = 0; r < world; r++) datasource_free(src[r]);
    }
    CHECK_MSG(!memcmp(straight, got, sizeof(int64_t) * (size_t)(steps * G)),
              "resume %d -> %d ranks differs from the uninterrupted order", w1, w2);
    json_decref(state);
    rt_free(straight);
    rt_free(got);
    rt_free(tok);
}

static void test_resume_same_world(void) {
    resume_case(1, 1), resume_case(2, 2), resume_case(3, 3);
}
static void test_resume_other_world(void) {
    resume_case(2, 1), resume_case(2, 3), resume_case(3, 2);
}

static void test_document_starts(void) {
    char err[512];
    DataSource *s = open_source(dir, 0, 1, SPLIT_VAL, 0, 0, err, sizeof err); /* in order */
    RT_ASSERT(s);
    int32_t tok[T + 1];
    uint8_t doc[T + 1];
    /* recompute the documents of make_shards: starts at p with lengths 1 + (p*7) % 40 */
    char *is_start = rt_calloc((size_t)TOTAL, 1);
    int64_t p = 0;
    for (int i = 0; i < 3; i++) {
        int64_t left = SHARD_TOKENS[i];
        while (left > 0) {
            int len = (int)(left < 40 ? left : 1 + (p * 7) % 40);
            is_start[p] = 1;
            p += len;
            left -= len;
        }
    }
    int64_t bad = 0;
    for (int64_t w = 0; w < WINDOWS; w++) {
        RT_ASSERT(!s->next(s, tok, doc, 1, err, sizeof err));
        for (int t = 0; t <= T; t++) {
            CHECK(tok[t] == (w * T + t) % 65000);
            bad += doc[t] != is_start[w * T + t];
        }
    }
    CHECK_MSG(!bad, "%lld document-start flags wrong", (long long)bad);
    rt_free(is_start);
    datasource_free(s);
}

static void test_holdout(void) {
    char err[512];
    int64_t hold = 9;
    DataSource *v = open_source(dir, 0, 1, SPLIT_VAL, hold, 0, err, sizeof err);
    RT_ASSERT(v);
    int32_t tok[T + 1];
    char *val = rt_calloc((size_t)WINDOWS, 1);
    for (int64_t i = 0; i < hold; i++) {
        RT_ASSERT(!v->next(v, tok, NULL, 1, err, sizeof err));
        int64_t w = tok[0] / T;
        CHECK(w == WINDOWS - hold + i); /* the last windows, in order */
        val[w] = 1;
    }
    datasource_free(v);
    DataSource *t = open_source(dir, 0, 1, SPLIT_TRAIN, hold, 2, err, sizeof err);
    RT_ASSERT(t);
    for (int64_t i = 0; i < 3 * (WINDOWS - hold); i++) {
        RT_ASSERT(!t->next(t, tok, NULL, 1, err, sizeof err));
        CHECK(!val[tok[0] / T]);
    }
    datasource_free(t);
    rt_free(val);
}

static void expect_open_error(const char *spec, const DataConfig *dc, const ModelConfig *mc,
                              const char *needle) {
    char err[1024] = "";
    DataOptions opt = {.seq_len = T, .seed = 1, .split = SPLIT_TRAIN, .world = 1};
    RunConfig rc;
    memset(&rc, 0, sizeof rc);
    rc.model = *mc;
    rc.data = *dc;
    DataSource *s = datasource_open(spec, &rc, &opt, err, sizeof err);
    CHECK_MSG(!s && strstr(err, needle), "expected an error containing '%s', got '%s'", needle,
              s ? "(opened)" : err);
    datasource_free(s);
}

static void test_bad_shard_sets(void) {
    DataConfig dc;
    memset(&dc, 0, sizeof dc);
    ModelConfig mc = model_cfg();
    char path[512];
    /* no shards */
    snprintf(path, sizeof path, "%s/empty", dir);
    fs_mkdirs(path);
    expect_open_error(path, &dc, &mc, "no token shards");
    /* vocabulary larger than the model's */
    ModelConfig small = mc;
    small.vocab_size = 1000;
    expect_open_error(dir, &dc, &small, "larger than model.vocab_size = 1000");
    /* two tokenizers in one set */
    char mixed[512];
    snprintf(mixed, sizeof mixed, "%s/mixed", dir);
    make_shards(mixed, "aaaa", 65536);
    char other[512], cmd[1200];
    snprintf(other, sizeof other, "%s/other", dir);
    make_shards(other, "bbbb", 65536);
    snprintf(cmd, sizeof cmd, "cp %s/shard_00001.h5 %s/shard_00009.h5", other, mixed);
    RT_ASSERT(system(cmd) == 0);
    expect_open_error(mixed, &dc, &mc, "made with tokenizer sha256 bbbb");
    /* data.tokenizer whose sha256 differs from the shards' */
    snprintf(dc.tokenizer, sizeof dc.tokenizer, "%s/shard_00000.h5", dir); /* any file */
    expect_open_error(dir, &dc, &mc, "data.tokenizer");
    memset(&dc, 0, sizeof dc);
    /* too few windows */
    RunConfig rc;
    memset(&rc, 0, sizeof rc);
    rc.model = mc;
    rc.data = dc;
    DataOptions opt = {.seq_len = 4000, .seed = 1, .split = SPLIT_TRAIN, .world = 1};
    char err[1024];
    DataSource *s = datasource_open(dir, &rc, &opt, err, sizeof err);
    CHECK(!s && strstr(err, "windows of 4001 tokens"));
}

static const TestCase tests[] = {
    {"every_window_once_per_epoch", test_every_window_once_per_epoch},
    {"order_independent_of_world_size", test_order_independent_of_world_size},
    {"resume_same_world", test_resume_same_world},
    {"resume_other_world", test_resume_other_world},
    {"document_starts", test_document_starts},
    {"holdout", test_holdout},
    {"bad_shard_sets", test_bad_shard_sets},
};

int main(int argc, char **argv) {
    dir = th_tmp_dir();
    make_shards(dir, "0123456789abcdef", 65536);
    return th_run(tests, TH_COUNT(tests), argc, argv);
}
