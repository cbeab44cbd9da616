/* The CPU backend's op profiler (src/cpu/profile.h) and the cost model it reads
 * (src/device/op_costs.h): while the profile is on, each op of the table gives the result of
 * the plain op and is counted per op and shape with its FLOPs and bytes; off, nothing is
 * counted; reading clears the counts. */
#include <string.h>

#include "cpu/real.h"
#include "device/op_costs.h"
#include "harness.h"
#include "util/error.h"
#include "testutil.h"

enum { MAX_ROWS = 64 };

static const OpTime *find(const OpTime *rows, int n, const char *op, const char *shape) {
    for (int i = 0; i < n; i++)
        if (!strcmp(rows[i].op, op) && !strcmp(rows[i].shape, shape)) return &rows[i];
    return NULL;
}

/* Two shapes of matmul_fwd are two rows, each with 2MNK FLOPs a call and its bytes; the timed
 * op writes what the plain one writes; calls after profile(0) are not counted. */
static void test_matmul_rows(void) {
    const Backend *be = backend_cpu();
    Rng r;
    rng_init(&r, 7, 0);
    int M = 8, N = 6, K = 4;
    real *x = tu_randn(&r, M * K, 1), *w = tu_randn(&r, N * K, 1);
    real *plain = tu_zeros(M * N), *timed = tu_zeros(M * N), *small = tu_zeros(3 * 5);
    be->matmul_fwd(plain, x, w, NULL, M, N, K);
    be->profile(1);
    be->matmul_fwd(timed, x, w, NULL, M, N, K);
    be->matmul_fwd(timed, x, w, NULL, M, N, K);
    be->matmul_fwd(small, x, w, NULL, 3, 5, 4);
    be->profile(0);
    be->matmul_fwd(timed, x, w, NULL, M, N, K);
    CHECK(memcmp(plain, timed, sizeof(real) * (size_t)(M * N)) == 0);
    OpTime rows[MAX_ROWS];
    int n = be->profile_read(rows, MAX_ROWS);
    CHECK(n == 2);
    const OpTime *big = find(rows, n, "matmul_fwd", "8x6x4"),
                 *other = find(rows, n, "matmul_fwd", "3x5x4");
    CHECK(big && other);
    if (big && other) {
        CHECK(big->calls == 2 && other->calls == 1);
        CHECK_CLOSE(big->flops, 2 * 2.0 * M * N * K, 0);
        CHECK_CLOSE(big->bytes, 2 * (double)sizeof(real) * (M * K + N * K + M * N), 0);
        CHECK(big->ms >= 0 && other->ms >= 0);
    }
    CHECK(be->profile_read(rows, MAX_ROWS) == 0); /* read clears */
    rt_free(x), rt_free(w), rt_free(plain), rt_free(timed), rt_free(small);
}

/* An op that returns a value returns the plain op's; an op with no cost in the model is
 * counted with its time only; the gradients' memset is timed as "zero". */
static void test_values_and_uncosted(void) {
    const Backend *be = backend_cpu();
    Rng r;
    rng_init(&r, 8, 0);
    real *x = tu_randn(&r, 100, 1), *y = tu_zeros(100);
    double want = be->sumsq(x, 100);
    be->profile(1);
    double got = be->sumsq(x, 100);
    be->segment_cumsum(y, x, &(Seqs){.ntok = 10, .nseg = 1, .cu = (int64_t[]){0, 10}}, 10);
    be->zero(y, sizeof(real) * 100);
    be->weightnorm_fwd(y, x, x, 1, 2, 2);
    be->profile(0);
    CHECK(got == want);
    OpTime rows[MAX_ROWS];
    int n = be->profile_read(rows, MAX_ROWS);
    const OpTime *ss = find(rows, n, "sumsq", ""), *zero = find(rows, n, "zero", ""),
                 *wn = find(rows, n, "weightnorm_fwd", "");
    CHECK(ss && zero && wn && find(rows, n, "segment_cumsum", ""));
    if (ss) CHECK_CLOSE(ss->bytes, 100.0 * sizeof(real), 0);
    if (zero) CHECK_CLOSE(zero->bytes, 100.0 * sizeof(real), 0);
    if (wn) CHECK(wn->calls == 1 && wn->flops == 0 && wn->bytes == 0);
    rt_free(x), rt_free(y);
}

/* The cost model's mixer FLOPs (op_costs.h): GLA forward 2C(K+V) + 4KV per token and head,
 * backward twice that; FoX forward 4D per causal pair and head. */
static void test_mixer_costs(void) {
    const CostUnits u = {2, 4};
    TestSeqs t = tu_seqs((const int[]){100, 28}, 2);
    LinAttnArgs a = {.s = &t.s, .H = 2, .K = 16, .V = 32};
    OpCost c = op_cost_gla_fwd(&u, &a);
    double nh = 128.0 * 2, C = CHUNK_SIZE;
    CHECK_CLOSE(c.flops, nh * (2 * C * (16 + 32) + 4.0 * 16 * 32), 0);
    CHECK(!strcmp(c.shape, "H2 K16 V32"));
    LinAttnGrads g = {.a = a};
    CHECK_CLOSE(op_cost_gla_bwd(&u, &g).flops, 2 * c.flops, 0);
    AttnArgs f = {.s = &t.s, .H = 2, .D = 8};
    CHECK_CLOSE(op_cost_fox_fwd(&u, &f).flops, 4.0 * 8 * 2 * (100.0 * 101 / 2 + 28.0 * 29 / 2), 0);
    OpCost none = OP_COST(&u, weightnorm_fwd, (NULL, NULL, NULL, 1, 2, 2));
    CHECK(op_cost_weightnorm_fwd == NULL && none.flops == 0 && none.bytes == 0);
    tu_seqs_free(&t);
}

static const TestCase tests[] = {
    {"matmul_rows", test_matmul_rows},
    {"values_and_uncosted", test_values_and_uncosted},
    {"mixer_costs", test_mixer_costs},
};

TH_MAIN(tests)
