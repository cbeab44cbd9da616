/* The next-token sampler of eval/sampling.h: greedy is the first argmax; top-k = 1 and a
 * tiny top-p are greedy at any temperature; seeded draws follow softmax(logits / T),
 * restricted and renormalised to the top-k set and the nucleus as Hugging Face's warpers
 * define them (a naive reference here); excluded tokens never come out; the streams are
 * reproducible, differ by seed and by row, and a row's draws do not depend on other rows;
 * rows with their own settings and streams (several requests in one batch) draw what each
 * draws in its own sampler; logits that are not finite are refused. */
#include <math.h>
#include <string.h>

#include "harness.h"
#include "sampling.h"
#include "util/rng.h"

static Sampler *make(double t, int k, double p, uint64_t seed, int vocab, int rows) {
    SamplingArgs a = {t, k, p, seed};
    return sampler_create(&a, vocab, rows);
}

static void random_logits(float *x, int n, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    for (int i = 0; i < n; i++) x[i] = (float)(3 * rng_normal(&r));
}

static int first_argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* The reference distribution: softmax(x / t) over the tokens the k highest values keep
 * (ties with the k-th kept), then over the smallest most-likely prefix of mass >= p. */
static void reference_probs(const float *x, int n, double t, int k, double p, double *out) {
    double *z = malloc(sizeof(double) * n);
    int *order = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) z[i] = x[i] / t, order[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort: decreasing, ties by id */
        for (int j = i; j > 0 && z[order[j]] > z[order[j - 1]]; j--) {
            int s = order[j];
            order[j] = order[j - 1], order[j - 1] = s;
        }
    int kept = n;
    if (k > 0 && k < n) {
        kept = k;
        while (kept < n && z[order[kept]] == z[order[k - 1]]) kept++;
    }
    double sum = 0;
    for (int j = 0; j < kept; j++) sum += exp(z[order[j]] - z[order[0]]);
    double before = 0;
    int nucleus = 0;
    while (nucleus < kept && (nucleus == 0 || before < p))
        before += exp(z[order[nucleus++]] - z[order[0]]) / sum;
    memset(out, 0, sizeof(double) * n);
    double s2 = 0;
    for (int j = 0; j < nucleus; j++) s2 += exp(z[order[j]] - z[order[0]]);
    for (int j = 0; j < nucleus; j++) out[order[j]] = exp(z[order[j]] - z[order[0]]) / s2;
    free(z);
    free(order);
}

/* Draws n tokens and compares their frequencies with the reference within 5 standard
 * errors; a token of reference probability 0 must never come out. */
static void check_frequencies(const float *x, int V, double t, int k, double p) {
    enum { N = 200000 };
    double *want = malloc(sizeof(double) * V);
    int *count = calloc((size_t)V, sizeof(int));
    reference_probs(x, V, t, k, p, want);
    Sampler *s = make(t, k, p, 42, V, 1);
    for (int i = 0; i < N; i++) count[sampler_next(s, 0, x)]++;
    for (int i = 0; i < V; i++) {
        double f = (double)count[i] / N, se = sqrt(want[i] * (1 - want[i]) / N);
        if (want[i] == 0)
            CHECK_MSG(count[i] == 0, "T=%g k=%d p=%g: excluded token %d drawn %d times", t, k, p, i,
                      count[i]);
        else
            CHECK_MSG(fabs(f - want[i]) <= 5 * se + 1e-4,
                      "T=%g k=%d p=%g: token %d frequency %.5f, softmax %.5f", t, k, p, i, f,
                      want[i]);
    }
    sampler_free(s);
    free(want);
    free(count);
}

static void test_greedy(void) {
    const float x[] = {1, 3, 0.5f, 3, 2};
    Sampler *s = make(0, 0, 1, 7, 5, 1);
    CHECK(sampler_next(s, 0, x) == 1); /* the first of the tied maxima */
    sampler_free(s);
    float y[300];
    for (uint64_t seed = 1; seed <= 20; seed++) {
        random_logits(y, 300, seed);
        Sampler *g = make(0, 5, 0.3, seed, 300, 1); /* top-k and top-p do not matter at T = 0 */
        CHECK(sampler_next(g, 0, y) == first_argmax(y, 300));
        sampler_free(g);
    }
}

static void test_top_k_one_and_tiny_top_p_are_greedy(void) {
    float y[500];
    const double temps[] = {0.1, 1, 3, 50};
    for (uint64_t seed = 1; seed <= 10; seed++) {
        random_logits(y, 500, seed);
        int want = first_argmax(y, 500);
        for (int ti = 0; ti < 4; ti++) {
            Sampler *k1 = make(temps[ti], 1, 1, seed, 500, 1),
                    *p0 = make(temps[ti], 0, 1e-9, seed, 500, 1);
            for (int i = 0; i < 50; i++) {
                CHECK(sampler_next(k1, 0, y) == want);
                CHECK(sampler_next(p0, 0, y) == want);
            }
            sampler_free(k1);
            sampler_free(p0);
        }
    }
    const float tie[] = {1, 3, 0.5f, 3}; /* the nucleus of one token takes the lower id */
    Sampler *p0 = make(2, 0, 1e-9, 3, 4, 1);
    for (int i = 0; i < 50; i++) CHECK(sampler_next(p0, 0, tie) == 1);
    sampler_free(p0);
}

static void test_frequencies(void) {
    const float x[] = {2.0f, 1.5f, 0.0f, -1.0f, 1.0f, 0.5f, -3.0f, 1.9f};
    check_frequencies(x, 8, 1.0, 0, 1.0);
    check_frequencies(x, 8, 0.7, 0, 1.0);
    check_frequencies(x, 8, 2.5, 0, 1.0);
    check_frequencies(x, 8, 1.0, 3, 1.0);
    check_frequencies(x, 8, 0.7, 0, 0.8);
    check_frequencies(x, 8, 1.5, 5, 0.6); /* top-p on what top-k left, renormalised */
    const float tie[] = {5, 4, 4, 1, 0};  /* top-k = 2 keeps both tokens tied with the 2nd */
    check_frequencies(tie, 5, 1.0, 2, 1.0);
}

/* Large vocabularies: the top-k selection and the nucleus never let an excluded token out. */
static void test_excluded_never_drawn(void) {
    enum { V = 2000 };
    float y[V];
    static double want[V];
    random_logits(y, V, 99);
    const struct {
        double t;
        int k;
        double p;
    } cases[] = {{1, 10, 1}, {1, 0, 0.5}, {3, 50, 0.9}, {0.5, 200, 0.95}};
    for (int c = 0; c < 4; c++) {
        reference_probs(y, V, cases[c].t, cases[c].k, cases[c].p, want);
        Sampler *s = make(cases[c].t, cases[c].k, cases[c].p, 5, V, 1);
        for (int i = 0; i < 5000; i++) {
            int id = sampler_next(s, 0, y);
            CHECK_MSG(id >= 0 && id < V && want[id] > 0, "T=%g k=%d p=%g drew excluded token %d",
                      cases[c].t, cases[c].k, cases[c].p, id);
        }
        sampler_free(s);
    }
    /* a sampler over the first 4 of a longer row never looks past them */
    const float padded[] = {0, 0.1f, 0.2f, 0.3f, 9, 9};
    Sampler *s = make(1, 0, 1, 1, 4, 1);
    for (int i = 0; i < 1000; i++) CHECK(sampler_next(s, 0, padded) < 4);
    sampler_free(s);
}

static void draw(Sampler *s, int row, const float *x, int *out, int n) {
    for (int i = 0; i < n; i++) out[i] = sampler_next(s, row, x);
}

static void test_streams(void) {
    enum { V = 64, N = 200 };
    float y[V];
    random_logits(y, V, 3);
    for (int i = 0; i < V; i++) y[i] *= 0.2f; /* flat enough that streams differ */
    int a[N], b[N], c[N], r0[N], r2[N];
    Sampler *s1 = make(1, 0, 1, 11, V, 1), *s2 = make(1, 0, 1, 11, V, 1),
            *s3 = make(1, 0, 1, 12, V, 1);
    draw(s1, 0, y, a, N);
    draw(s2, 0, y, b, N);
    draw(s3, 0, y, c, N);
    CHECK(!memcmp(a, b, sizeof a));
    CHECK(memcmp(a, c, sizeof a) != 0);
    /* rows interleaved in one sampler: row 0 draws what a one-row sampler draws, row 2 its own */
    Sampler *batch = make(1, 0, 1, 11, V, 3);
    for (int i = 0; i < N; i++)
        for (int r = 0; r < 3; r++) {
            int t = sampler_next(batch, r, y);
            if (r == 0) r0[i] = t;
            if (r == 2) r2[i] = t;
        }
    CHECK(!memcmp(a, r0, sizeof a));
    CHECK(memcmp(r0, r2, sizeof r0) != 0);
    sampler_free(s1);
    sampler_free(s2);
    sampler_free(s3);
    sampler_free(batch);
}

/* sampler_create_rows: row 0 with settings A and stream 2, row 1 with settings B and stream 0
 * draw, interleaved, what row 2 of a sampler of A and row 0 of a sampler of B draw. */
static void test_rows_own_settings(void) {
    enum { V = 64, N = 200 };
    float y[V];
    random_logits(y, V, 5);
    for (int i = 0; i < V; i++) y[i] *= 0.2f;
    const SamplingArgs args[2] = {{0.8, 20, 1, 7}, {1.3, 0, 0.9, 9}};
    const uint64_t stream[2] = {2, 0};
    Sampler *both = sampler_create_rows(args, stream, V, 2), *sa = sampler_create(&args[0], V, 3),
            *sb = sampler_create(&args[1], V, 1);
    int a[N], b[N], ra[N], rb[N];
    for (int i = 0; i < N; i++) {
        ra[i] = sampler_next(both, 0, y);
        rb[i] = sampler_next(both, 1, y);
    }
    draw(sa, 2, y, a, N);
    draw(sb, 0, y, b, N);
    CHECK(!memcmp(a, ra, sizeof a));
    CHECK(!memcmp(b, rb, sizeof b));
    CHECK(memcmp(ra, rb, sizeof ra) != 0);
    sampler_free(both);
    sampler_free(sa);
    sampler_free(sb);
}

/* Logits with a NaN or an infinity among the first `vocab` define no distribution: every
 * setting answers SAMPLER_NONFINITE; past `vocab` they are not looked at. */
static void test_nonfinite(void) {
    const float bad[] = {NAN, INFINITY, -INFINITY};
    const SamplingArgs settings[] = {{0, 0, 1, 0}, {1, 0, 1, 0}, {0.8, 3, 1, 0}, {1, 0, 0.9, 0}};
    for (size_t b = 0; b < 3; b++)
        for (int at = 0; at < 8; at += 7)
            for (size_t k = 0; k < 4; k++) {
                float x[9];
                random_logits(x, 9, 7);
                x[at] = bad[b];
                Sampler *s = sampler_create(&settings[k], 8, 1);
                CHECK_MSG(sampler_next(s, 0, x) == SAMPLER_NONFINITE, "%g at %d, setting %zu",
                          (double)bad[b], at, k);
                x[at] = 0, x[8] = bad[b];
                CHECK(sampler_next(s, 0, x) >= 0);
                sampler_free(s);
            }
}

/* Each caller's spelling of the setting at fault: generate's option, serve's JSON field. */
static void test_check(void) {
    char msg[256];
    const SamplingNames options = {"--temperature", "--top-k", "--top-p"},
                        fields = {"temperature", "top_k", "top_p"};
    const struct {
        SamplingArgs a;
        int which;
    } bad[] = {
        {{-0.5, 0, 1, 0}, 0}, {{NAN, 0, 1, 0}, 0}, {{INFINITY, 0, 1, 0}, 0}, {{1, -1, 1, 0}, 1},
        {{1, 0, 0, 0}, 2},    {{1, 0, 1.5, 0}, 2}, {{1, 0, -0.1, 0}, 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        for (int k = 0; k < 2; k++) {
            const SamplingNames *n = k ? &fields : &options;
            const char *want = bad[i].which == 0   ? n->temperature
                               : bad[i].which == 1 ? n->top_k
                                                   : n->top_p;
            const char *got = sampling_check(&bad[i].a, n, msg, sizeof msg);
            char start[64];
            snprintf(start, sizeof start, "%s = ", want);
            CHECK_MSG(got == want && !strncmp(msg, start, strlen(start)), "case %zu (%s): %s", i,
                      want, got ? msg : "(accepted)");
        }
    const SamplingArgs good[] = {{0, 0, 1, 0}, {0.7, 40, 0.95, 1}, {1, 0, 1e-9, 2}};
    for (size_t i = 0; i < 3; i++)
        CHECK(sampling_check(&good[i], &fields, msg, sizeof msg) == NULL);
}

static const TestCase tests[] = {
    {"greedy", test_greedy},
    {"top_k_one_and_tiny_top_p_are_greedy", test_top_k_one_and_tiny_top_p_are_greedy},
    {"frequencies", test_frequencies},
    {"excluded_never_drawn", test_excluded_never_drawn},
    {"streams", test_streams},
    {"rows_own_settings", test_rows_own_settings},
    {"nonfinite", test_nonfinite},
    {"check", test_check},
};

TH_MAIN(tests)
