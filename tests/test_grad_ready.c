/* model_set_grad_ready: during a backward the model announces gradient ranges that tile
 * the flat buffer exactly once, in backward order (LM head and final norm, blocks L-1 .. 0,
 * embedding), each holding the parameters of its part of the model; a range is final when
 * announced (a snapshot taken then equals the buffer after the backward, bit for bit, on
 * top of gradients accumulated by an earlier backward); and the gradient buckets built
 * from the announcements (one process: the sums are no-ops, the grouping is counted). */
#include <stdio.h>
#include <string.h>

#include "cpu/real.h"
#include "harness.h"
#include "model/model.h"
#include "testutil.h"
#include "train/grad_buckets.h"
#include "util/error.h"
#include "variants.h"

#define LAYERS 3
#define MAX_RANGES 16

typedef struct {
    const real *grads;
    int n;
    int64_t lo[MAX_RANGES], hi[MAX_RANGES];
    real *snap[MAX_RANGES]; /* the gradient of each range when it was announced */
} Record;

static void record(void *ctx, int64_t lo, int64_t hi) {
    Record *r = ctx;
    CHECK_MSG(r->n < MAX_RANGES, "more than %d ranges announced", MAX_RANGES);
    if (r->n == MAX_RANGES) return;
    r->lo[r->n] = lo;
    r->hi[r->n] = hi;
    r->snap[r->n] = hi > lo ? tu_copy(r->grads + lo, hi - lo) : NULL;
    r->n++;
}

typedef struct {
    Model *m;
    Batch b;
    int32_t *tok, *lab;
} Setup;

static Setup setup(const ModelConfig *cfg) {
    Setup s;
    s.m = model_create(cfg, backend_cpu());
    model_init_weights(s.m, 5);
    Rng r;
    rng_init(&r, 17, 0);
    int B = 2, T = 70;
    s.tok = rt_malloc(sizeof(int32_t) * B * T);
    s.lab = rt_malloc(sizeof(int32_t) * B * T);
    for (int i = 0; i < B * T; i++) {
        s.tok[i] = (int32_t)rng_below(&r, (uint64_t)cfg->vocab_size);
        s.lab[i] = rng_uniform(&r) < 0.1 ? -100 : (int32_t)rng_below(&r, (uint64_t)cfg->vocab_size);
    }
    s.tok[9] = s.tok[T + 30] = cfg->bos_id;
    s.b = (Batch){B, T, s.tok, s.lab, NULL};
    return s;
}

static void teardown(Setup *s) {
    rt_free(s->tok);
    rt_free(s->lab);
    model_free(s->m);
}

static void backward(Setup *s) {
    model_forward(s->m, &s->b, 0.01, NULL);
    model_backward(s->m);
}

/* Index of the announced range that must hold parameter `name` (fla's names; Mamba2's
 * backbone.*). */
static int expected_range(const char *name) {
    int l;
    if (!strcmp(name, "lm_head.weight") || !strcmp(name, "model.norm.weight") ||
        !strcmp(name, "backbone.norm_f.weight"))
        return 0;
    if (sscanf(name, "model.layers.%d.", &l) == 1 || sscanf(name, "backbone.layers.%d.", &l) == 1)
        return 1 + (LAYERS - 1 - l);
    return LAYERS + 1; /* the embedding */
}

static void check_ranges(const ModelConfig *cfg, const char *label) {
    Setup s = setup(cfg);
    const ParamTable *t = model_params(s.m);
    real *g = model_grads(s.m);
    model_zero_grads(s.m);
    backward(&s); /* an earlier micro-step: the announced backward accumulates on top */
    real *before = tu_copy(g, t->total);
    Record rec = {.grads = g};
    model_set_grad_ready(s.m, record, &rec);
    backward(&s);

    CHECK_MSG(rec.n == LAYERS + 2, "%s: %d ranges announced, expected %d", label, rec.n,
              LAYERS + 2);
    for (int i = 0; i < rec.n; i++) {
        int64_t lo = rec.lo[i], hi = rec.hi[i];
        /* each range ends where the previous one began: together they tile [0, total) once */
        int64_t want_hi = i == 0 ? t->total : rec.lo[i - 1];
        CHECK_MSG(lo < hi && hi == want_hi,
                  "%s: range %d is [%lld, %lld), expected it to end at %lld", label, i,
                  (long long)lo, (long long)hi, (long long)want_hi);
        if (lo >= hi) continue;
        CHECK_MSG(!memcmp(rec.snap[i], g + lo, sizeof(real) * (size_t)(hi - lo)),
                  "%s: range %d [%lld, %lld) changed after it was announced", label, i,
                  (long long)lo, (long long)hi);
        /* the backward did write the range (else the comparison above proves nothing) */
        CHECK_MSG(memcmp(before + lo, g + lo, sizeof(real) * (size_t)(hi - lo)),
                  "%s: range %d [%lld, %lld) was not written by the backward", label, i,
                  (long long)lo, (long long)hi);
    }
    CHECK_MSG(rec.n > 0 && rec.lo[rec.n - 1] == 0, "%s: the last range does not start at 0", label);
    if (rec.n == LAYERS + 2)
        for (int p = 0; p < t->n; p++) {
            const ParamInfo *pi = &t->p[p];
            int k = expected_range(pi->name);
            CHECK_MSG(pi->offset >= rec.lo[k] && pi->offset + pi->numel <= rec.hi[k],
                      "%s: %s [%lld, %lld) is outside range %d [%lld, %lld)", label, pi->name,
                      (long long)pi->offset, (long long)(pi->offset + pi->numel), k,
                      (long long)rec.lo[k], (long long)rec.hi[k]);
        }

    /* switched off: nothing more is announced */
    int n = rec.n;
    model_set_grad_ready(s.m, NULL, NULL);
    backward(&s);
    CHECK_MSG(rec.n == n, "%s: ranges announced after the callback was removed", label);

    for (int i = 0; i < rec.n; i++) rt_free(rec.snap[i]);
    rt_free(before);
    teardown(&s);
}

static void run_variants(MixerKind mixer) {
    for (int option = 0; option <= 1; option++)
        for (int k = 0; k < N_PE_VARIANTS; k++) {
            ModelConfig c = tu_tiny_model(mixer, LAYERS);
            apply_mixer_option(&c, option);
            if (!pe_variant_applies(&c, k)) continue;
            apply_pe_variant(&c, k);
            char label[160];
            snprintf(label, sizeof label, "%s %s", mixer_option_name(&c, option),
                     pe_variant_name(&c, k));
            check_ranges(&c, label);
        }
}

static void test_gla(void) { run_variants(MIXER_GLA); }
static void test_gdn(void) { run_variants(MIXER_GDN); }
static void test_fox(void) { run_variants(MIXER_FOX); }
static void test_deltanet(void) { run_variants(MIXER_DELTANET); }
static void test_mamba2(void) { run_variants(MIXER_MAMBA2); }
static void test_lru(void) { run_variants(MIXER_LRU); }
static void test_rotrnn(void) { run_variants(MIXER_ROTRNN); }
static void test_nnrnn(void) { run_variants(MIXER_NNRNN); } /* prenorm and rnn blocks */
static void test_lstm(void) { run_variants(MIXER_LSTM); }

/* Buckets started in one backward with buckets of `elems` elements. */
static int buckets_of(Setup *s, int64_t elems) {
    GradBuckets gb;
    grad_buckets_init(&gb, s->m, grad_comm_init(backend_cpu(), COLLECTIVES_AUTO, 0), NULL,
                      (double)elems * (double)sizeof(real) / 1048576.0);
    model_set_grad_ready(s->m, grad_buckets_ready, &gb);
    backward(s);
    model_set_grad_ready(s->m, NULL, NULL);
    return grad_buckets_finish(&gb);
}

/* The grouping rule: ranges join the open bucket, which starts once it holds `elems`
 * elements; the last, partly filled one starts at the end. */
static int expected_buckets(const Record *rec, int64_t elems) {
    int n = 0;
    int64_t open = 0;
    for (int i = 0; i < rec->n; i++) {
        open += rec->hi[i] - rec->lo[i];
        if (open >= elems) n++, open = 0;
    }
    return n + (open > 0);
}

static void test_buckets(void) {
    ModelConfig c = tu_tiny_model(MIXER_GLA, LAYERS);
    Setup s = setup(&c);
    Record rec = {.grads = model_grads(s.m)};
    model_set_grad_ready(s.m, record, &rec);
    backward(&s);
    model_set_grad_ready(s.m, NULL, NULL);
    CHECK(rec.n == LAYERS + 2);
    int64_t total = model_params(s.m)->total, head = rec.hi[0] - rec.lo[0],
            block = rec.hi[1] - rec.lo[1];
    const int64_t sizes[] = {1, head, head + 1, block, 2 * block, total / 2, total, 1000 * total};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int got = buckets_of(&s, sizes[i]), want = expected_buckets(&rec, sizes[i]);
        CHECK_MSG(got == want, "buckets of %lld elements: %d started, expected %d",
                  (long long)sizes[i], got, want);
    }
    CHECK(expected_buckets(&rec, 1) == LAYERS + 2 && expected_buckets(&rec, total) == 1);
    for (int i = 0; i < rec.n; i++) rt_free(rec.snap[i]);
    teardown(&s);
}

static const TestCase tests[] = {
    {"grad_ready_gla", test_gla},       {"grad_ready_gdn", test_gdn},
    {"grad_ready_fox", test_fox},       {"grad_ready_deltanet", test_deltanet},
    {"grad_ready_mamba2", test_mamba2}, {"grad_ready_lru", test_lru},
    {"grad_ready_rotrnn", test_rotrnn}, {"grad_ready_nnrnn", test_nnrnn},
    {"grad_ready_lstm", test_lstm},     {"grad_buckets", test_buckets},
};

TH_MAIN(tests)
