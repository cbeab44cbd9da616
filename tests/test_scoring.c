/* The CPU backend's scoring ops against plain references in fp64 over random logits with
 * planted ties: cross_entropy without a gradient (the validation loss), token_logprobs
 * (rotor eval) and logit_scores (rotor serve: lse, the label's log p, the top k of the
 * vocabulary in order, ties to the lower id). The f64 build runs the same checks. */
#include <math.h>
#include <stdlib.h>

#include "backend.h"
#include "cpu/real.h"
#include "harness.h"
#include "util/error.h"
#include "util/rng.h"

/* Rows of logits: row n has values on a coarse grid (many ties) and these planted rows:
 * 0 a tie at the top (ids 5 and 9), 1 the top at the last id of the vocabulary, 2 an output
 * past the vocabulary larger than all (it counts in lse, never in the top), 3 every logit equal. */
typedef struct {
    int64_t N;
    int V, vocab;
    real *x;
    int32_t *lab;
} Logits;

static Logits logits_make(int64_t N, int V, int vocab, uint64_t seed) {
    Logits L = {N, V, vocab, rt_malloc(sizeof(real) * (size_t)(N * V)),
                rt_malloc(sizeof(int32_t) * (size_t)N)};
    Rng r;
    rng_init(&r, seed, 0);
    for (int64_t i = 0; i < N * V; i++) L.x[i] = (real)((int)rng_below(&r, 64) - 40) / 8;
    for (int64_t n = 0; n < N; n++)
        L.lab[n] = n % 5 == 4 ? -100 : (int32_t)rng_below(&r, (uint64_t)V);
    L.x[5] = L.x[9] = 20;
    L.x[1 * V + vocab - 1] = 30;
    if (vocab < V) L.x[2 * V + V - 1] = 40;
    for (int j = 0; j < V; j++) L.x[3 * V + j] = (real)1.5;
    L.lab[1] = vocab - 1;
    return L;
}

static void logits_free(Logits *L) {
    rt_free(L->x);
    rt_free(L->lab);
}

static double ref_lse(const real *x, int V) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < V; j++) mx = fmax(mx, (double)x[j]);
    for (int j = 0; j < V; j++) sum += exp((double)x[j] - mx);
    return mx + log(sum);
}

/* The rank of id i among x[0, vocab): how many ids come before it (larger, or equal and lower). */
static int ref_rank(const real *x, int vocab, int i) {
    int before = 0;
    for (int j = 0; j < vocab; j++) before += x[j] > x[i] || (x[j] == x[i] && j < i);
    return before;
}

/* Tolerance: the fp32 build sums exp in vector lanes and stores [f32]. */
#define TOL (sizeof(real) == 8 ? 1e-12 : 2e-5)

static void test_cross_entropy_loss(void) {
    const Backend *be = backend_cpu();
    Logits L = logits_make(37, 1003, 1003, 1);
    double ref = 0;
    for (int64_t n = 0; n < L.N; n++)
        if (L.lab[n] != -100) ref += ref_lse(L.x + n * L.V, L.V) - (double)L.x[n * L.V + L.lab[n]];
    double got = be->cross_entropy(L.x, L.lab, L.N, L.V, 0.0);
    CHECK_MSG(fabs(got - ref) <= TOL * fabs(ref), "cross_entropy %.10g, reference %.10g", got, ref);
    logits_free(&L);
}

static void test_token_logprobs(void) {
    const Backend *be = backend_cpu();
    Logits L = logits_make(37, 1003, 1003, 2);
    real logp[37];
    uint8_t greedy[37];
    be->token_logprobs(L.x, L.lab, L.N, L.V, logp, greedy);
    int bad = 0;
    for (int64_t n = 0; n < L.N; n++) {
        const real *x = L.x + n * L.V;
        int y = L.lab[n];
        double want = y == -100 ? 0 : (double)x[y] - ref_lse(x, L.V);
        int first = y == -100 || ref_rank(x, L.V, y) == 0;
        bad += fabs((double)logp[n] - want) > TOL * fmax(1, fabs(want)) || greedy[n] != first;
    }
    CHECK_MSG(!bad, "token_logprobs: %d of %lld rows differ from the reference", bad,
              (long long)L.N);
    CHECK(greedy[0] == (L.lab[0] == 5)); /* the tie at the top: only the lower id is the argmax */
    logits_free(&L);
}

static void logit_scores_case(int64_t N, int V, int vocab, int k) {
    const Backend *be = backend_cpu();
    Logits L = logits_make(N, V, vocab, 3 + (uint64_t)k);
    real *lse = rt_malloc(sizeof(real) * (size_t)N), *lp = rt_malloc(sizeof(real) * (size_t)N);
    real *top_lp = rt_malloc(sizeof(real) * (size_t)(N * k));
    int32_t *top_id = rt_malloc(sizeof(int32_t) * (size_t)(N * k));
    be->logit_scores(&(LogitScoresArgs){L.x, L.lab, N, V, vocab, k, lse, lp, top_id, top_lp});
    int bad = 0;
    for (int64_t n = 0; n < N; n++) {
        const real *x = L.x + n * V;
        int y = L.lab[n];
        double l = ref_lse(x, V), want = y == -100 ? 0 : (double)x[y] - l;
        bad += fabs((double)lse[n] - l) > TOL * fmax(1, fabs(l));
        bad += fabs((double)lp[n] - want) > TOL * fmax(1, fabs(want));
        for (int r = 0; r < k; r++) {
            int id = top_id[n * k + r];
            bad += id < 0 || id >= vocab || ref_rank(x, vocab, id) != r;
            if (id >= 0 && id < vocab)
                bad +=
                    fabs((double)top_lp[n * k + r] - ((double)x[id] - l)) > TOL * fmax(1, fabs(l));
        }
    }
    CHECK_MSG(!bad, "logit_scores N=%lld V=%d vocab=%d k=%d: %d values differ from the reference",
              (long long)N, V, vocab, k, bad);
    /* the planted rows test what they should */
    CHECK(top_id[0] == 5 && (k == 1 || top_id[1] == 9) && top_id[k] == vocab - 1 &&
          top_id[3 * k] == 0);
    if (vocab < V) CHECK(lse[2] >= 40);
    rt_free(lse);
    rt_free(lp);
    rt_free(top_lp);
    rt_free(top_id);
    logits_free(&L);
}

/* Rows with a NaN logit (a model whose activations overflowed) score NaN, without reading past
 * the row, and do not disturb the other rows: rotor eval then refuses the results. */
static void test_token_logprobs_nan(void) {
    const Backend *be = backend_cpu();
    Logits L = logits_make(8, 1003, 1003, 4);
    for (int64_t n = 0; n < L.N; n++) L.lab[n] = 7;
    for (int j = 0; j < L.V; j++) L.x[6 * L.V + j] = NAN; /* every logit */
    L.x[5 * L.V + 100] = NAN;                             /* one */
    real logp[8];
    uint8_t greedy[8];
    be->token_logprobs(L.x, L.lab, L.N, L.V, logp, greedy);
    for (int64_t n = 0; n < L.N; n++) {
        int nan_row = n == 5 || n == 6;
        CHECK_MSG(nan_row ? isnan((double)logp[n]) : isfinite((double)logp[n]),
                  "row %lld: log p %g greedy %d", (long long)n, (double)logp[n], greedy[n]);
    }
    logits_free(&L);
}

static void test_logit_scores(void) {
    logit_scores_case(41, 1003, 1003, 1);
    logit_scores_case(41, 1003, 1000, 5);
    logit_scores_case(9, 300, 300, 300); /* every id, in order */
    logit_scores_case(23, 32000, 32000, 20);
}

static const TestCase tests[] = {
    {"scoring_cross_entropy", test_cross_entropy_loss},
    {"scoring_token_logprobs", test_token_logprobs},
    {"scoring_token_logprobs_nan", test_token_logprobs_nan},
    {"scoring_logit_scores", test_logit_scores},
};

TH_MAIN(tests)
