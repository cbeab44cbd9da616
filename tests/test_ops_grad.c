/* Finite-difference gradient checks of every CPU op that has a backward (src/backend.h,
 * src/cpu/cpu_ops.h), in double precision (built with ROTOR_REAL_DOUBLE only).
 *
 * Each op is probed with L = sum(w . out) for random w (ops with several outputs: one random
 * w per output), so the backward is called with dout = w. Every differentiable input and
 * every parameter-gradient output is checked against central differences (h = 1e-6,
 * tolerance 1e-6 relative to max |grad|), together with the output conventions of the
 * contract: activation gradients overwrite (the buffers are pre-filled with garbage) unless
 * `accumulate` is set, parameter gradients accumulate (pre-filled with random values that are
 * subtracted before the check). Time-dependent ops run on several segments whose lengths are
 * not multiples of the chunk size, one of them longer than two chunks. Ops without a
 * backward (add, revcumsum, rope_angles, cross-entropy's loss, adamw, rmsprop_update, sumsq, scale) are
 * checked against direct computations. */
#include "cpu/cpu_ops.h"
#include "harness.h"
#include "testutil.h"
#include "util/error.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef ROTOR_REAL_DOUBLE
#error "test_ops_grad needs the double-precision core (rotor_test(... f64))"
#endif

#define FD_H 1e-6
#define FD_TOL 1e-6
#define EXACT_TOL 1e-12
#define MIXER_SAMPLES 60

/* Several segments, none a multiple of 64; the last one spans three chunks (64+64+2). */
static const int LENS[] = {70, 1, 33, 130};
#define NSEG 4

/* ---------------------------------------------------------------- helpers ---- */

/* n values with |x| in [lo, hi] and a random sign: never zero. */
static real *rand_nz(Rng *r, int64_t n, double lo, double hi) {
    real *x = tu_rand(r, n, lo, hi);
    for (int64_t i = 0; i < n; i++)
        if (rng_uniform(r) < 0.5) x[i] = -x[i];
    return x;
}

/* Garbage for buffers that an op must overwrite. */
static real *garbage(Rng *r, int64_t n) { return tu_rand(r, n, 50.0, 100.0); }

/* a - b into a new buffer (the part a `+=` output added to its prior contents b). */
static real *diff(const real *a, const real *b, int64_t n) {
    real *d = tu_zeros(n);
    for (int64_t i = 0; i < n; i++) d[i] = a[i] - b[i];
    return d;
}

static double maxabs(const real *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)x[i]));
    return m;
}

/* The finite differences evaluate the forward thousands of times on small inputs: run them
 * on one thread (the forward values do not depend on the thread count), which keeps the test
 * fast on a loaded machine where tiny OpenMP regions are slow. The analytic backward calls
 * keep the default thread count, so their per-thread partial sums are exercised. */
static int fd_serial_begin(void) {
#ifdef _OPENMP
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    return nt;
#else
    return 1;
#endif
}

static void fd_serial_end(int nt) {
#ifdef _OPENMP
    omp_set_num_threads(nt);
#else
    (void)nt;
#endif
}

/* Finite-difference check of grad against x over `samples` entries (all when n <= samples). */
static void fd_check(const char *what, tu_loss_fn f, void *ctx, real *x, const real *grad,
                     int64_t n, int samples, Rng *r) {
    int nt = fd_serial_begin();
    double e = tu_gradcheck(f, ctx, x, grad, n, samples, FD_H, r);
    fd_serial_end(nt);
    printf("    %-40s fd err %.2e (max|g| %.2g)\n", what, e, maxabs(grad, n));
    CHECK_MSG(e <= FD_TOL, "%s: finite-difference relative error %.3g > %.1g", what, e, FD_TOL);
}

/* Like fd_check, over the first and last element of each listed row (rows of `rowlen`
 * elements): entries at segment starts/ends and chunk boundaries that random sampling may
 * miss. Same normalisation as tu_gradcheck. */
static void fd_check_rows(const char *what, tu_loss_fn f, void *ctx, real *x, const real *grad,
                          int64_t n, int64_t rowlen, const int64_t *rows, int nrows) {
    double gscale = fmax(maxabs(grad, n), 1e-6), worst = 0;
    int nt = fd_serial_begin();
    for (int r = 0; r < nrows; r++)
        for (int side = 0; side < 2; side++) {
            int64_t i = rows[r] * rowlen + (side ? rowlen - 1 : 0);
            RT_ASSERT(i >= 0 && i < n);
            real keep = x[i];
            x[i] = keep + (real)FD_H;
            double fp = f(ctx);
            x[i] = keep - (real)FD_H;
            double fm = f(ctx);
            x[i] = keep;
            double e = fabs((fp - fm) / (2 * FD_H) - (double)grad[i]) / gscale;
            if (!(e <= worst)) worst = e;
        }
    fd_serial_end(nt);
    printf("    %-40s fd err %.2e (boundary rows)\n", what, worst);
    CHECK_MSG(worst <= FD_TOL, "%s (boundary rows): finite-difference relative error %.3g > %.1g",
              what, worst, FD_TOL);
}

/* Exact agreement (up to rounding) of a with the reference b. */
static void check_equal(const char *what, const real *a, const real *b, int64_t n) {
    double e = tu_rel_err(a, b, n, 1e-3);
    printf("    %-40s rel err %.2e\n", what, e);
    CHECK_MSG(e <= EXACT_TOL, "%s: relative error %.3g > %.1g", what, e, EXACT_TOL);
}

static void free_all(real **bufs, int n) {
    for (int i = 0; i < n; i++)
        if (bufs[i]) rt_free(bufs[i]);
}
#define FREE_ALL(...)                                                    \
    do {                                                                 \
        real *_b[] = {__VA_ARGS__};                                      \
        free_all(_b, (int)(sizeof(_b) / sizeof(_b[0])));                 \
    } while (0)

/* ---------------------------------------------------------------- dense ---- */

typedef struct {
    real *out, *x, *w, *bias, *wo;
    int M, N, K;
} MatmulCtx;

static double matmul_loss(void *p) {
    MatmulCtx *c = p;
    cpu_matmul_fwd(c->out, c->x, c->w, c->bias, c->M, c->N, c->K);
    return tu_dot(c->wo, c->out, (int64_t)c->M * c->N);
}

static void matmul_case(int with_bias, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    int M = 37, N = 23, K = 19;
    int64_t nx = (int64_t)M * K, nw = (int64_t)N * K, no = (int64_t)M * N;
    real *x = rand_nz(&r, nx, 0.05, 1.0), *w = rand_nz(&r, nw, 0.05, 1.0);
    real *bias = with_bias ? rand_nz(&r, N, 0.05, 1.0) : NULL;
    real *wo = rand_nz(&r, no, 0.05, 1.0), *out = tu_zeros(no);
    MatmulCtx c = {out, x, w, bias, wo, M, N, K};

    /* forward value against a direct loop */
    real *ref = tu_zeros(no);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = bias ? (double)bias[j] : 0.0;
            for (int kk = 0; kk < K; kk++) acc += (double)x[i * K + kk] * (double)w[j * K + kk];
            ref[i * N + j] = (real)acc;
        }
    cpu_matmul_fwd(out, x, w, bias, M, N, K);
    check_equal(with_bias ? "matmul_fwd value (bias)" : "matmul_fwd value", out, ref, no);

    /* accumulate = 0: dx overwrites garbage; dw, dbias accumulate onto random contents */
    real *dx = garbage(&r, nx), *pw = rand_nz(&r, nw, 0.1, 1.0), *dw = tu_copy(pw, nw);
    real *pb = rand_nz(&r, N, 0.1, 1.0), *db = tu_copy(pb, N);
    cpu_matmul_bwd(dx, dw, bias ? db : NULL, wo, x, w, M, N, K, 0);
    real *gw = diff(dw, pw, nw), *gb = diff(db, pb, N);
    fd_check("matmul dx (accumulate=0)", matmul_loss, &c, x, dx, nx, 1000, &r);
    fd_check("matmul dw (+=)", matmul_loss, &c, w, gw, nw, 1000, &r);
    if (bias) fd_check("matmul dbias (+=)", matmul_loss, &c, bias, gb, N, 1000, &r);
    else check_equal("matmul dbias NULL untouched", db, pb, N);

    /* accumulate = 1: dx adds to its contents */
    real *px = rand_nz(&r, nx, 0.1, 1.0), *dx2 = tu_copy(px, nx), *dw2 = tu_zeros(nw);
    real *db2 = tu_zeros(N);
    cpu_matmul_bwd(dx2, dw2, bias ? db2 : NULL, wo, x, w, M, N, K, 1);
    real *gx2 = diff(dx2, px, nx);
    check_equal("matmul dx (accumulate=1) adds", gx2, dx, nx);
    check_equal("matmul dw from zero", dw2, gw, nw);
    if (bias) check_equal("matmul dbias from zero", db2, gb, N);

    /* dx = NULL and dbias = NULL are allowed */
    real *dw3 = tu_zeros(nw);
    cpu_matmul_bwd(NULL, dw3, NULL, wo, x, w, M, N, K, 0);
    check_equal("matmul dw with dx=dbias=NULL", dw3, gw, nw);
    FREE_ALL(x, w, bias, wo, out, ref, dx, pw, dw, pb, db, gw, gb, px, dx2, dw2, db2, gx2, dw3);
}

static void test_matmul_bias(void) { matmul_case(1, 101); }
static void test_matmul_nobias(void) { matmul_case(0, 102); }

static void test_add(void) {
    Rng r;
    rng_init(&r, 103, 0);
    int64_t n = 301;
    real *a = rand_nz(&r, n, 0.05, 1.0), *b = rand_nz(&r, n, 0.05, 1.0), *out = garbage(&r, n);
    real *ref = tu_zeros(n);
    for (int64_t i = 0; i < n; i++) ref[i] = a[i] + b[i];
    cpu_add(out, a, b, n);
    check_equal("add value", out, ref, n);
    cpu_add(a, a, b, n); /* in place */
    check_equal("add in place", a, ref, n);
    FREE_ALL(a, b, out, ref);
}

typedef struct {
    real *out, *E, *wo;
    const int32_t *tok;
    int64_t n;
    int C;
} EmbCtx;

static double emb_loss(void *p) {
    EmbCtx *c = p;
    cpu_embedding_fwd(c->out, c->tok, c->E, c->n, c->C);
    return tu_dot(c->wo, c->out, c->n * c->C);
}

static void test_embedding(void) {
    Rng r;
    rng_init(&r, 104, 0);
    int Vocab = 11, C = 9;
    int64_t n = 41;
    int32_t tok[41];
    /* ids 0..6 only, so they repeat and ids 7..10 get no gradient; force a run of repeats */
    for (int64_t i = 0; i < n; i++) tok[i] = (int32_t)rng_below(&r, 7);
    tok[5] = tok[6] = tok[7] = 3;
    int64_t nE = (int64_t)Vocab * C;
    real *E = rand_nz(&r, nE, 0.05, 1.0), *wo = rand_nz(&r, n * C, 0.05, 1.0);
    real *out = tu_zeros(n * C);
    EmbCtx c = {out, E, wo, tok, n, C};
    cpu_embedding_fwd(out, tok, E, n, C);
    real *ref = tu_zeros(n * C);
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < C; j++) ref[i * C + j] = E[tok[i] * C + j];
    check_equal("embedding_fwd value", out, ref, n * C);
    real *pE = rand_nz(&r, nE, 0.1, 1.0), *dE = tu_copy(pE, nE);
    cpu_embedding_bwd(dE, tok, wo, n, C);
    real *g = diff(dE, pE, nE);
    fd_check("embedding dE (+=, repeated ids)", emb_loss, &c, E, g, nE, 1000, &r);
    FREE_ALL(E, wo, out, ref, pE, dE, g);
}

/* ---------------------------------------------------------- normalisation ---- */

typedef struct {
    real *y, *rstd, *x, *w, *wo;
    int64_t N;
    int G, C, per_group;
} RmsCtx;

#define RMS_EPS 1e-6f

static double rms_loss(void *p) {
    RmsCtx *c = p;
    cpu_rmsnorm_fwd(c->y, c->rstd, c->x, c->w, c->N, c->G, c->C, c->per_group, RMS_EPS);
    return tu_dot(c->wo, c->y, c->N * c->G * c->C);
}

static void rmsnorm_case(int G, int per_group, const char *tag, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    int64_t N = 13;
    int C = 10;
    int64_t n = N * G * C, nw = per_group ? (int64_t)G * C : C;
    real *x = rand_nz(&r, n, 0.05, 1.5), *w = rand_nz(&r, nw, 0.3, 1.5);
    real *wo = rand_nz(&r, n, 0.05, 1.0), *y = tu_zeros(n), *rstd = tu_zeros(N * G);
    /* the finite differences run the forward on their own scratch, so that the saved rstd
     * stays that of the unperturbed input */
    real *ys = tu_zeros(n), *rstds = tu_zeros(N * G);
    RmsCtx c = {ys, rstds, x, w, wo, N, G, C, per_group};
    cpu_rmsnorm_fwd(y, rstd, x, w, N, G, C, per_group, RMS_EPS);
    /* forward value */
    real *ref = tu_zeros(n);
    for (int64_t row = 0; row < N * G; row++) {
        double ss = 0;
        for (int j = 0; j < C; j++) ss += (double)x[row * C + j] * (double)x[row * C + j];
        double rs = 1.0 / sqrt(ss / C + (double)RMS_EPS);
        const real *wr = w + (per_group ? (row % G) * C : 0);
        for (int j = 0; j < C; j++) ref[row * C + j] = (real)((double)x[row * C + j] * rs * (double)wr[j]);
    }
    char name[96];
    snprintf(name, sizeof name, "rmsnorm %s value", tag);
    check_equal(name, y, ref, n);

    real *dx = garbage(&r, n), *pw = rand_nz(&r, nw, 0.1, 1.0), *dw = tu_copy(pw, nw);
    cpu_rmsnorm_bwd(dx, dw, wo, x, w, rstd, N, G, C, per_group, 0);
    real *gw = diff(dw, pw, nw);
    snprintf(name, sizeof name, "rmsnorm %s dx (accumulate=0)", tag);
    fd_check(name, rms_loss, &c, x, dx, n, 1000, &r);
    snprintf(name, sizeof name, "rmsnorm %s dw (+=)", tag);
    fd_check(name, rms_loss, &c, w, gw, nw, 1000, &r);

    real *px = rand_nz(&r, n, 0.1, 1.0), *dx2 = tu_copy(px, n), *dw2 = tu_zeros(nw);
    cpu_rmsnorm_bwd(dx2, dw2, wo, x, w, rstd, N, G, C, per_group, 1);
    real *gx2 = diff(dx2, px, n);
    snprintf(name, sizeof name, "rmsnorm %s dx (accumulate=1) adds", tag);
    check_equal(name, gx2, dx, n);
    FREE_ALL(x, w, wo, y, rstd, ys, rstds, ref, dx, pw, dw, gw, px, dx2, dw2, gx2);
}

static void test_rmsnorm_g1(void) { rmsnorm_case(1, 0, "G=1", 201); }
static void test_rmsnorm_shared(void) { rmsnorm_case(3, 0, "G=3 shared w", 202); }
static void test_rmsnorm_per_group(void) { rmsnorm_case(3, 1, "G=3 per-group w", 203); }

typedef struct {
    real *y, *rn, *x, *wo;
    int64_t N;
    int G, D;
} L2Ctx;

#define L2_EPS 1e-6f

static double l2_loss(void *p) {
    L2Ctx *c = p;
    cpu_l2norm_fwd(c->y, c->rn, c->x, c->N, c->G, c->D, L2_EPS);
    return tu_dot(c->wo, c->y, c->N * c->G * c->D);
}

static void test_l2norm(void) {
    Rng r;
    rng_init(&r, 204, 0);
    int64_t N = 13;
    int G = 3, D = 8;
    int64_t n = N * G * D;
    real *x = rand_nz(&r, n, 0.05, 1.5), *wo = rand_nz(&r, n, 0.05, 1.0);
    real *y = tu_zeros(n), *rn = tu_zeros(N * G);
    real *ys = tu_zeros(n), *rns = tu_zeros(N * G); /* FD scratch: y, rn stay saved */
    L2Ctx c = {ys, rns, x, wo, N, G, D};
    cpu_l2norm_fwd(y, rn, x, N, G, D, L2_EPS);
    real *ref = tu_zeros(n);
    for (int64_t row = 0; row < N * G; row++) {
        double ss = 0;
        for (int j = 0; j < D; j++) ss += (double)x[row * D + j] * (double)x[row * D + j];
        for (int j = 0; j < D; j++) ref[row * D + j] = (real)((double)x[row * D + j] / sqrt(ss + (double)L2_EPS));
    }
    check_equal("l2norm value", y, ref, n);
    real *dx = garbage(&r, n);
    cpu_l2norm_bwd(dx, wo, y, rn, N, G, D, 0);
    fd_check("l2norm dx (accumulate=0)", l2_loss, &c, x, dx, n, 1000, &r);
    real *px = rand_nz(&r, n, 0.1, 1.0), *dx2 = tu_copy(px, n);
    cpu_l2norm_bwd(dx2, wo, y, rn, N, G, D, 1);
    real *gx2 = diff(dx2, px, n);
    check_equal("l2norm dx (accumulate=1) adds", gx2, dx, n);
    FREE_ALL(x, wo, y, rn, ys, rns, ref, dx, px, dx2, gx2);
}

/* ---------------------------------------------------------- elementwise ---- */

typedef struct {
    real *out, *x, *g, *wo;
    int64_t n;
    Activation act;
    float norm;
} EwCtx;

static double gate_mul_loss(void *p) {
    EwCtx *c = p;
    cpu_gate_mul_fwd(c->out, c->x, c->g, c->n, c->act);
    return tu_dot(c->wo, c->out, c->n);
}

static void gate_mul_case(Activation act, const char *tag, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    int64_t n = 157;
    real *x = rand_nz(&r, n, 0.05, 2.0), *g = rand_nz(&r, n, 0.05, 5.0);
    real *wo = rand_nz(&r, n, 0.05, 1.0), *out = tu_zeros(n);
    EwCtx c = {out, x, g, wo, n, act, 1};
    cpu_gate_mul_fwd(out, x, g, n, act);
    real *ref = tu_zeros(n);
    for (int64_t i = 0; i < n; i++) {
        double s = 1.0 / (1.0 + exp(-(double)g[i]));
        ref[i] = (real)((double)x[i] * (act == ACT_SILU ? (double)g[i] * s : s));
    }
    char name[96];
    snprintf(name, sizeof name, "gate_mul %s value", tag);
    check_equal(name, out, ref, n);
    real *dx = garbage(&r, n), *dg = garbage(&r, n);
    cpu_gate_mul_bwd(dx, dg, wo, x, g, n, act);
    snprintf(name, sizeof name, "gate_mul %s dx", tag);
    fd_check(name, gate_mul_loss, &c, x, dx, n, 1000, &r);
    snprintf(name, sizeof name, "gate_mul %s dg", tag);
    fd_check(name, gate_mul_loss, &c, g, dg, n, 1000, &r);
    FREE_ALL(x, g, wo, out, ref, dx, dg);
}

static void test_gate_mul_silu(void) { gate_mul_case(ACT_SILU, "SILU", 301); }
static void test_gate_mul_sigmoid(void) { gate_mul_case(ACT_SIGMOID, "SIGMOID", 302); }

static double silu_loss(void *p) {
    EwCtx *c = p;
    cpu_silu_fwd(c->out, c->x, c->n);
    return tu_dot(c->wo, c->out, c->n);
}

static void test_silu(void) {
    Rng r;
    rng_init(&r, 303, 0);
    int64_t n = 157;
    real *x = rand_nz(&r, n, 0.05, 6.0), *wo = rand_nz(&r, n, 0.05, 1.0), *out = tu_zeros(n);
    EwCtx c = {out, x, NULL, wo, n, ACT_NONE, 1};
    real *dx = garbage(&r, n);
    cpu_silu_bwd(dx, wo, x, n);
    fd_check("silu dx", silu_loss, &c, x, dx, n, 1000, &r);
    FREE_ALL(x, wo, out, dx);
}

static double gelu_loss(void *p) {
    EwCtx *c = p;
    cpu_gelu_fwd(c->out, c->x, c->n);
    return tu_dot(c->wo, c->out, c->n);
}

static void test_gelu(void) {
    Rng r;
    rng_init(&r, 309, 0);
    int64_t n = 157;
    real *x = rand_nz(&r, n, 0.05, 4.0), *wo = rand_nz(&r, n, 0.05, 1.0), *out = tu_zeros(n);
    EwCtx c = {out, x, NULL, wo, n, ACT_NONE, 1};
    real *dx = garbage(&r, n);
    cpu_gelu_bwd(dx, wo, x, n);
    fd_check("gelu dx", gelu_loss, &c, x, dx, n, 1000, &r);
    /* the erf form: gelu(1) = Phi(1) = 0.841344746 */
    real one = 1, y;
    cpu_gelu_fwd(&y, &one, 1);
    CHECK_MSG(fabs((double)y - 0.8413447460685429) < 1e-6, "gelu(1) = %.9f", (double)y);
    FREE_ALL(x, wo, out, dx);
}

/* Dropout (docs/models.md §16), L = wo . dropout(x): dx = dropout(wo) with the same key (the op
 * is its own backward) against finite differences; the mask is deterministic, keeps about
 * 1 - p of the elements (within 5 sigma), scales them by 1/(1 - p), and in channel mode is the
 * same at every token of a row of T and differs between rows. */
typedef struct {
    real *x, *y, *wo;
    int64_t N;
    int C, T;
    uint64_t key;
    double p;
} DropCtx;

static double dropout_loss(void *q) {
    DropCtx *c = q;
    cpu_dropout(c->y, c->x, c->N, c->C, c->T, c->key, c->p);
    return tu_dot(c->wo, c->y, c->N * c->C);
}

static void dropout_case(int T, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    int64_t N = 240;
    int C = 50;
    int64_t n = N * C;
    DropCtx c = {rand_nz(&r, n, 0.05, 2.0), tu_zeros(n), rand_nz(&r, n, 0.05, 1.0), N, C, T, 0x1234abcdull, 0.3};
    real *dx = garbage(&r, n), *y2 = tu_zeros(n);
    cpu_dropout(dx, c.wo, N, C, T, c.key, c.p);
    fd_check(T ? "dropout dx (channel)" : "dropout dx", dropout_loss, &c, c.x, dx, n, 200, &r);
    dropout_loss(&c);
    cpu_dropout(y2, c.x, N, C, T, c.key, c.p);
    int64_t kept = 0, bad = 0, shared = 0, rows_differ = 0;
    for (int64_t i = 0; i < n; i++) {
        bad += c.y[i] != y2[i];
        if (c.y[i] != 0) kept++, bad += fabs((double)c.y[i] - c.x[i] / 0.7) > 1e-12 * fabs((double)c.x[i]);
        int64_t tok = i / C;
        if (T && tok % T) shared += (c.y[i] != 0) != (c.y[i - C] != 0);
        if (T && tok >= T) rows_differ += (c.y[i] != 0) != (c.y[i - (int64_t)T * C] != 0);
    }
    int64_t draws = T ? (N / T) * C : n;
    double expect = 0.7 * draws, sd = sqrt(draws * 0.7 * 0.3), got = T ? (double)kept / T : (double)kept;
    printf("    %-40s kept %.0f of %lld draws (expected %.0f +- %.0f)\n", T ? "dropout mask (channel)" : "dropout mask",
           got, (long long)draws, expect, sd);
    CHECK_MSG(bad == 0, "dropout: %lld elements not x / (1 - p) or 0, or not reproduced", (long long)bad);
    CHECK(fabs(got - expect) < 5 * sd);
    CHECK_MSG(shared == 0, "dropout channel mode: %lld masks differ within a row", (long long)shared);
    CHECK(!T || rows_differ > 0);
    c.key++; /* another key, another mask */
    dropout_loss(&c);
    int64_t moved = 0;
    for (int64_t i = 0; i < n; i++) moved += (c.y[i] != 0) != (y2[i] != 0);
    CHECK(moved > 0);
    FREE_ALL(c.x, c.y, c.wo, dx, y2);
}

static void test_dropout(void) { dropout_case(0, 311), dropout_case(24, 312); }

/* segment_reverse (docs/models.md §16): every segment turned around, its accumulating form, and
 * being its own adjoint: wo . rev(x) = rev(wo) . x. */
static void test_segment_reverse(void) {
    Rng r;
    rng_init(&r, 313, 0);
    int lens[4] = {1, 5, 64, 3}, C = 3;
    TestSeqs ts = tu_seqs(lens, 4);
    const Seqs *sq = &ts.s;
    int64_t n = sq->ntok * C;
    real *x = tu_randn(&r, n, 1), *y = tu_randn(&r, n, 1), *y0 = tu_copy(y, n), *wo = tu_randn(&r, n, 1), *rw = tu_zeros(n);
    cpu_segment_reverse(y, x, sq, C, 1);
    double worst = 0;
    for (int s = 0; s < sq->nseg; s++)
        for (int64_t t = sq->cu[s]; t < sq->cu[s + 1]; t++)
            for (int c = 0; c < C; c++) {
                int64_t src = sq->cu[s] + sq->cu[s + 1] - 1 - t;
                worst = fmax(worst, fabs((double)y[t * C + c] - y0[t * C + c] - x[src * C + c]));
            }
    cpu_segment_reverse(y, x, sq, C, 0);
    cpu_segment_reverse(rw, wo, sq, C, 0);
    double adj = fabs(tu_dot(wo, y, n) - tu_dot(rw, x, n));
    printf("    %-40s abs err %.2e, adjoint %.2e\n", "segment_reverse", worst, adj);
    CHECK(worst < 1e-12 && adj < 1e-10);
    FREE_ALL(x, y, y0, wo, rw);
    tu_seqs_free(&ts);
}

static double relu_loss(void *p) {
    EwCtx *c = p;
    cpu_relu_fwd(c->out, c->x, c->n);
    return tu_dot(c->wo, c->out, c->n);
}

/* ReLU away from its kink (|x| >= 0.05), its backward in place (dx = dy), and the values. */
static void test_relu(void) {
    Rng r;
    rng_init(&r, 311, 0);
    int64_t n = 157;
    real *x = rand_nz(&r, n, 0.05, 3.0), *wo = rand_nz(&r, n, 0.05, 1.0), *out = tu_zeros(n);
    EwCtx c = {out, x, NULL, wo, n, ACT_NONE, 1};
    real *dx = tu_zeros(n);
    memcpy(dx, wo, sizeof(real) * (size_t)n);
    cpu_relu_bwd(dx, dx, x, n);
    fd_check("relu dx", relu_loss, &c, x, dx, n, 1000, &r);
    cpu_relu_fwd(out, x, n);
    for (int64_t i = 0; i < n; i++) CHECK(out[i] == (x[i] > 0 ? x[i] : 0));
    FREE_ALL(x, wo, out, dx);
}

typedef struct {
    real *f, *x, *wo;
    int64_t P;
    int d;
} PairCtx;

static double pair_loss(void *p) {
    PairCtx *c = p;
    cpu_pair_nli_fwd(c->f, c->x, c->P, c->d);
    return tu_dot(c->wo, c->f, 4 * c->P * c->d);
}

/* The pair classifier's features [u, v, u v, u - v] (docs/models.md §15): values and dx. */
static void test_pair_nli(void) {
    Rng r;
    rng_init(&r, 313, 0);
    int64_t P = 3;
    int d = 5;
    real *x = rand_nz(&r, 2 * P * d, 0.1, 2.0), *wo = rand_nz(&r, 4 * P * d, 0.05, 1.0), *f = tu_zeros(4 * P * d);
    PairCtx c = {f, x, wo, P, d};
    real *dx = garbage(&r, 2 * P * d);
    cpu_pair_nli_bwd(dx, wo, x, P, d);
    fd_check("pair_nli dx", pair_loss, &c, x, dx, 2 * P * d, 1000, &r);
    cpu_pair_nli_fwd(f, x, P, d);
    for (int64_t p = 0; p < P; p++)
        for (int j = 0; j < d; j++) {
            real u = x[2 * p * d + j], v = x[(2 * p + 1) * d + j], *o = f + 4 * p * d;
            CHECK(o[j] == u && o[d + j] == v && o[2 * d + j] == u * v && o[3 * d + j] == u - v);
        }
    FREE_ALL(x, wo, f, dx);
}

static double sigmoid_loss(void *p) {
    EwCtx *c = p;
    cpu_sigmoid_fwd(c->out, c->x, c->n);
    return tu_dot(c->wo, c->out, c->n);
}

static void test_sigmoid(void) {
    Rng r;
    rng_init(&r, 307, 0);
    int64_t n = 157;
    real *x = rand_nz(&r, n, 0.05, 6.0), *wo = rand_nz(&r, n, 0.05, 1.0), *out = tu_zeros(n);
    EwCtx c = {out, x, NULL, wo, n, ACT_NONE, 1};
    cpu_sigmoid_fwd(out, x, n);
    real *ref = tu_zeros(n);
    for (int64_t i = 0; i < n; i++) ref[i] = (real)(1.0 / (1.0 + exp(-(double)x[i])));
    check_equal("sigmoid value", out, ref, n);
    real *dx = garbage(&r, n);
    cpu_sigmoid_bwd(dx, wo, x, n);
    fd_check("sigmoid dx", sigmoid_loss, &c, x, dx, n, 1000, &r);
    FREE_ALL(x, wo, out, ref, dx);
}

static double logsig_loss(void *p) {
    EwCtx *c = p;
    cpu_logsigmoid_fwd(c->out, c->x, c->n, c->norm);
    return tu_dot(c->wo, c->out, c->n);
}

static void logsigmoid_case(float normalizer, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    int64_t n = 157;
    real *x = rand_nz(&r, n, 0.05, 8.0), *wo = rand_nz(&r, n, 0.05, 1.0), *out = tu_zeros(n);
    EwCtx c = {out, x, NULL, wo, n, ACT_NONE, normalizer};
    cpu_logsigmoid_fwd(out, x, n, normalizer);
    real *ref = tu_zeros(n);
    for (int64_t i = 0; i < n; i++)
        ref[i] = (real)(-log1p(exp(-(double)x[i])) / (double)normalizer);
    char name[96];
    snprintf(name, sizeof name, "logsigmoid /%g value", (double)normalizer);
    check_equal(name, out, ref, n);
    real *dx = garbage(&r, n);
    cpu_logsigmoid_bwd(dx, wo, x, n, normalizer);
    snprintf(name, sizeof name, "logsigmoid /%g dx", (double)normalizer);
    fd_check(name, logsig_loss, &c, x, dx, n, 1000, &r);
    FREE_ALL(x, wo, out, ref, dx);
}

static void test_logsigmoid_16(void) { logsigmoid_case(16.0f, 304); }
static void test_logsigmoid_1(void) { logsigmoid_case(1.0f, 305); }

/* The per-head decay of Gated DeltaNet and Mamba2 (docs/models.md §3, §10): dt =
 * softplus(dt_raw + dt_bias), g = -exp(A_log) dt; L = wdt . dt + wg . g, or wg . g alone when
 * dt is not kept (GDN: dt NULL, ddt NULL). */
typedef struct {
    real *dt, *g, *dt_raw, *A_log, *dt_bias, *wdt, *wg;
    int64_t N;
    int H;
} DecayCtx;

static double decay_loss(void *p) {
    DecayCtx *c = p;
    cpu_decay_gates_fwd(c->dt, c->g, c->dt_raw, c->A_log, c->dt_bias, c->N, c->H);
    return (c->dt ? tu_dot(c->wdt, c->dt, c->N * c->H) : 0) + tu_dot(c->wg, c->g, c->N * c->H);
}

static void decay_gates_case(int keep_dt, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    int64_t N = 41;
    int H = 3;
    int64_t n = N * H;
    const char *tag = keep_dt ? "decay_gates (dt kept)" : "decay_gates (no dt)";
    char name[96];
    real *dt_raw = rand_nz(&r, n, 0.05, 4.0), *A_log = rand_nz(&r, H, 0.1, 2.0);
    real *dt_bias = rand_nz(&r, H, 0.1, 3.0);
    real *wdt = rand_nz(&r, n, 0.05, 1.0), *wg = rand_nz(&r, n, 0.05, 1.0);
    real *dt = keep_dt ? tu_zeros(n) : NULL, *g = tu_zeros(n);
    DecayCtx c = {dt, g, dt_raw, A_log, dt_bias, wdt, wg, N, H};
    cpu_decay_gates_fwd(dt, g, dt_raw, A_log, dt_bias, N, H);
    real *rdt = tu_zeros(n), *rg = tu_zeros(n);
    for (int64_t t = 0; t < N; t++)
        for (int h = 0; h < H; h++) {
            int64_t i = t * H + h;
            double sp = log1p(exp((double)dt_raw[i] + (double)dt_bias[h]));
            rdt[i] = (real)sp;
            rg[i] = (real)(-exp((double)A_log[h]) * sp);
        }
    if (keep_dt) {
        snprintf(name, sizeof name, "%s dt value", tag);
        check_equal(name, dt, rdt, n);
    }
    snprintf(name, sizeof name, "%s g value", tag);
    check_equal(name, g, rg, n);
    real *ddr = garbage(&r, n), *pA = rand_nz(&r, H, 0.1, 1.0), *pdt = rand_nz(&r, H, 0.1, 1.0);
    real *dA = tu_copy(pA, H), *ddt = tu_copy(pdt, H);
    cpu_decay_gates_bwd(ddr, dA, ddt, keep_dt ? wdt : NULL, wg, dt_raw, A_log, dt_bias, N, H);
    real *gA = diff(dA, pA, H), *gdt = diff(ddt, pdt, H);
    snprintf(name, sizeof name, "%s ddt_raw", tag);
    fd_check(name, decay_loss, &c, dt_raw, ddr, n, 1000, &r);
    snprintf(name, sizeof name, "%s dA_log (+=)", tag);
    fd_check(name, decay_loss, &c, A_log, gA, H, 1000, &r);
    snprintf(name, sizeof name, "%s ddt_bias (+=)", tag);
    fd_check(name, decay_loss, &c, dt_bias, gdt, H, 1000, &r);
    FREE_ALL(dt_raw, A_log, dt_bias, wdt, wg, dt, g, rdt, rg, ddr, pA, pdt, dA, ddt, gA, gdt);
}

static void test_decay_gates_mamba2(void) { decay_gates_case(1, 307); }
static void test_decay_gates_gdn(void) { decay_gates_case(0, 306); }

/* The per-head scale y = s x (s per token and head) and the skip y += Dp x (Dp per head). */
typedef struct {
    real *y, *x, *s, *wo;
    int64_t N;
    int H, D, skip;
} HeadCtx;

static double head_loss(void *p) {
    HeadCtx *c = p;
    int64_t n = c->N * c->H * c->D;
    if (c->skip) {
        for (int64_t i = 0; i < n; i++) c->y[i] = 0;
        cpu_head_skip_fwd(c->y, c->x, c->s, c->N, c->H, c->D);
    } else {
        cpu_head_scale_fwd(c->y, c->x, c->s, c->N, c->H, c->D);
    }
    return tu_dot(c->wo, c->y, n);
}

static void head_case(int skip, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    int64_t N = 23;
    int H = 3, D = 5;
    int64_t n = N * H * D, ns = skip ? H : N * H;
    real *x = rand_nz(&r, n, 0.05, 1.5), *sc = rand_nz(&r, ns, 0.05, 1.5);
    real *wo = rand_nz(&r, n, 0.05, 1.0), *y = rand_nz(&r, n, 0.05, 1.0), *y0 = tu_copy(y, n);
    HeadCtx c = {y, x, sc, wo, N, H, D, skip};
    if (skip)
        cpu_head_skip_fwd(y, x, sc, N, H, D);
    else
        cpu_head_scale_fwd(y, x, sc, N, H, D);
    real *ref = tu_zeros(n);
    for (int64_t i = 0; i < n; i++) {
        int64_t row = i / D;
        ref[i] = skip ? y0[i] + sc[row % H] * x[i] : sc[row] * x[i];
    }
    check_equal(skip ? "head_skip value (+=)" : "head_scale value", y, ref, n);
    real *px = rand_nz(&r, n, 0.1, 1.0), *dx = skip ? tu_copy(px, n) : garbage(&r, n);
    real *ps = rand_nz(&r, ns, 0.1, 1.0), *ds = skip ? tu_copy(ps, ns) : garbage(&r, ns);
    if (skip)
        cpu_head_skip_bwd(dx, ds, wo, x, sc, N, H, D);
    else
        cpu_head_scale_bwd(dx, ds, wo, x, sc, N, H, D);
    real *gx = skip ? diff(dx, px, n) : tu_copy(dx, n), *gs = skip ? diff(ds, ps, ns) : tu_copy(ds, ns);
    fd_check(skip ? "head_skip dx (+=)" : "head_scale dx", head_loss, &c, x, gx, n, 1000, &r);
    fd_check(skip ? "head_skip dDp (+=)" : "head_scale ds", head_loss, &c, sc, gs, ns, 1000, &r);
    FREE_ALL(x, sc, wo, y, y0, ref, px, dx, ps, ds, gx, gs);
}

static void test_head_scale(void) { head_case(0, 308); }
static void test_head_skip(void) { head_case(1, 309); }

/* B and C of a group go to each of its heads: head h reads group h / (H/G). */
typedef struct {
    real *out, *src, *wo;
    int64_t N;
    int H, G, K;
} BcastCtx;

static double bcast_loss(void *p) {
    BcastCtx *c = p;
    cpu_group_bcast_fwd(c->out, c->src, c->N, c->H, c->G, c->K);
    return tu_dot(c->wo, c->out, c->N * c->H * c->K);
}

static void test_group_bcast(void) {
    Rng r;
    rng_init(&r, 310, 0);
    int64_t N = 13;
    int H = 6, G = 2, K = 4;
    int64_t no = N * H * K, ns = N * G * K;
    real *src = rand_nz(&r, ns, 0.05, 1.5), *wo = rand_nz(&r, no, 0.05, 1.0), *out = garbage(&r, no);
    BcastCtx c = {out, src, wo, N, H, G, K};
    cpu_group_bcast_fwd(out, src, N, H, G, K);
    real *ref = tu_zeros(no);
    for (int64_t t = 0; t < N; t++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < K; i++) ref[(t * H + h) * K + i] = src[(t * G + h / (H / G)) * K + i];
    check_equal("group_bcast value", out, ref, no);
    real *ds = garbage(&r, ns);
    cpu_group_bcast_bwd(ds, wo, N, H, G, K);
    fd_check("group_bcast dsrc", bcast_loss, &c, src, ds, ns, 1000, &r);
    FREE_ALL(src, wo, out, ref, ds);
}

/* ---------------------------------------------------------- time mixing ---- */

typedef struct {
    real *y, *x, *w, *b, *wo;
    const Seqs *s;
    int C;
    Activation act;
} ConvCtx;

static double conv_loss(void *p) {
    ConvCtx *c = p;
    cpu_conv_fwd(c->y, c->x, c->w, c->b, c->s, c->C, c->act);
    return tu_dot(c->wo, c->y, c->s->ntok * c->C);
}

static void conv_case(int with_w, int with_b, Activation act, const char *tag, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int C = 5;
    int64_t n = s->ntok * C, nw = (int64_t)C * 4;
    real *x = rand_nz(&r, n, 0.05, 1.5), *w = with_w ? rand_nz(&r, nw, 0.1, 1.0) : NULL;
    real *b = with_b ? rand_nz(&r, C, 0.1, 1.0) : NULL;
    real *wo = rand_nz(&r, n, 0.05, 1.0), *y = tu_zeros(n);
    ConvCtx c = {y, x, w, b, wo, s, C, act};
    /* forward value: causal, per segment, tap 3 = current token, plus the bias */
    cpu_conv_fwd(y, x, w, b, s, C, act);
    real *ref = tu_zeros(n);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++)
            for (int ch = 0; ch < C; ch++) {
                double p = b ? (double)b[ch] : 0;
                for (int back = 0; back < 4; back++) {
                    if (t - back < s->cu[seg]) break;
                    double tap = w ? (double)w[ch * 4 + 3 - back] : (back == 0 ? 1 : back == 1 ? -1 : 0);
                    p += tap * (double)x[(t - back) * C + ch];
                }
                ref[t * C + ch] = (real)(act == ACT_SILU ? p / (1 + exp(-p)) : p);
            }
    char name[96];
    snprintf(name, sizeof name, "conv %s value", tag);
    check_equal(name, y, ref, n);
    real *dx = garbage(&r, n), *pw = rand_nz(&r, nw, 0.1, 1.0), *dw = tu_copy(pw, nw);
    real *pb = rand_nz(&r, C, 0.1, 1.0), *db = tu_copy(pb, C);
    cpu_conv_bwd(dx, with_w ? dw : NULL, db, wo, x, w, b, s, C, act);
    snprintf(name, sizeof name, "conv %s dx", tag);
    fd_check(name, conv_loss, &c, x, dx, n, 100000, &r);
    if (with_b) {
        real *gb = diff(db, pb, C);
        snprintf(name, sizeof name, "conv %s db (+=)", tag);
        fd_check(name, conv_loss, &c, b, gb, C, 1000, &r);
        rt_free(gb);
    } else {
        snprintf(name, sizeof name, "conv %s db untouched without a bias", tag);
        check_equal(name, db, pb, C);
    }
    if (with_w) {
        real *gw = diff(dw, pw, nw);
        snprintf(name, sizeof name, "conv %s dw (+=)", tag);
        fd_check(name, conv_loss, &c, w, gw, nw, 1000, &r);
        rt_free(gw);
    }
    FREE_ALL(x, w, b, wo, y, ref, dx, pw, dw, pb, db);
    tu_seqs_free(&ts);
}

static void test_conv_w_none(void) { conv_case(1, 0, ACT_NONE, "w, NONE", 401); }
static void test_conv_w_silu(void) { conv_case(1, 0, ACT_SILU, "w, SILU", 402); }
static void test_conv_diff_none(void) { conv_case(0, 0, ACT_NONE, "NULL w (diff), NONE", 403); }
static void test_conv_diff_silu(void) { conv_case(0, 0, ACT_SILU, "NULL w (diff), SILU", 404); }
static void test_conv_bias_none(void) { conv_case(1, 1, ACT_NONE, "w + bias, NONE", 405); }
static void test_conv_bias_silu(void) { conv_case(1, 1, ACT_SILU, "w + bias, SILU", 406); }

typedef struct {
    real *y, *x, *al, *wo;
    const Seqs *s;
    int H, D;
} ShiftCtx;

static double shift_loss(void *p) {
    ShiftCtx *c = p;
    cpu_shift_fwd(c->y, c->x, c->al, c->s, c->H, c->D);
    return tu_dot(c->wo, c->y, c->s->ntok * c->H * c->D);
}

static void test_shift(void) {
    Rng r;
    rng_init(&r, 405, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int H = 2, D = 3;
    int64_t n = s->ntok * H * D, nh = s->ntok * H;
    real *x = rand_nz(&r, n, 0.05, 1.5), *al = rand_nz(&r, nh, 0.05, 3.0);
    real *wo = rand_nz(&r, n, 0.05, 1.0), *y = tu_zeros(n);
    ShiftCtx c = {y, x, al, wo, s, H, D};
    cpu_shift_fwd(y, x, al, s, H, D);
    real *ref = tu_zeros(n);
    for (int64_t t = 0; t < s->ntok; t++)
        for (int h = 0; h < H; h++) {
            double a = 1.0 / (1.0 + exp(-(double)al[t * H + h]));
            for (int d = 0; d < D; d++) {
                int64_t i = (t * H + h) * D + d;
                double prev = s->pos[t] >= 1 ? (double)x[i - H * D] : 0.0;
                ref[i] = (real)(a * prev + (1 - a) * (double)x[i]);
            }
        }
    check_equal("shift value", y, ref, n);
    real *dx = garbage(&r, n), *da = garbage(&r, nh);
    cpu_shift_bwd(dx, da, wo, x, al, s, H, D);
    fd_check("shift dx", shift_loss, &c, x, dx, n, 100000, &r);
    fd_check("shift da_logit", shift_loss, &c, al, da, nh, 100000, &r);
    FREE_ALL(x, al, wo, y, ref, dx, da);
    tu_seqs_free(&ts);
}

static void test_revcumsum(void) {
    Rng r;
    rng_init(&r, 406, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int C = 7;
    int64_t n = s->ntok * C;
    real *x = rand_nz(&r, n, 0.05, 1.5), *y = garbage(&r, n), *ref = tu_zeros(n);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int ch = 0; ch < C; ch++)
            for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++) {
                double acc = 0;
                for (int64_t u = t; u < s->cu[seg + 1]; u++) acc += (double)x[u * C + ch];
                ref[t * C + ch] = (real)acc;
            }
    cpu_revcumsum(y, x, s, C);
    check_equal("revcumsum value", y, ref, n);
    /* linear: it is the adjoint of the per-segment cumsum, <w, revcumsum x> = <cumsum w, x> */
    real *w = rand_nz(&r, n, 0.05, 1.0), *cw = tu_zeros(n);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int ch = 0; ch < C; ch++) {
            double acc = 0;
            for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++) {
                acc += (double)w[t * C + ch];
                cw[t * C + ch] = (real)acc;
            }
        }
    double lhs = tu_dot(w, y, n), rhs = tu_dot(cw, x, n);
    printf("    %-40s %.3e vs %.3e\n", "revcumsum adjoint of cumsum", lhs, rhs);
    CHECK_CLOSE(lhs, rhs, EXACT_TOL);
    cpu_revcumsum(x, x, s, C); /* in place */
    check_equal("revcumsum in place", x, ref, n);
    FREE_ALL(x, y, ref, w, cw);
    tu_seqs_free(&ts);
}

/* ---------------------------------------------------------- positions ---- */

static void test_rope_angles(void) {
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int D = 16, P = D / 2;
    double theta = 500000.0;
    int64_t n = s->ntok * P;
    real *a = tu_zeros(n), *ref = tu_zeros(n);
    for (int64_t t = 0; t < s->ntok; t++)
        for (int j = 0; j < P; j++) ref[t * P + j] = (real)((double)s->pos[t] * pow(theta, -2.0 * j / D));
    cpu_rope_angles(a, s, D, theta);
    check_equal("rope_angles value", a, ref, n);
    FREE_ALL(a, ref);
    tu_seqs_free(&ts);
}

typedef struct {
    real *y, *x, *ang, *wo;
    int64_t N;
    int H, D, per_head;
} RotCtx;

static double rot_loss(void *p) {
    RotCtx *c = p;
    cpu_rotate_fwd(c->y, c->x, c->ang, c->N, c->H, c->D, c->per_head);
    return tu_dot(c->wo, c->y, c->N * c->H * c->D);
}

static void rotate_case(int per_head, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    int64_t N = 21;
    int H = 3, D = 8, P = D / 2;
    int64_t n = N * H * D, na = per_head ? N * H * P : N * P;
    real *x = rand_nz(&r, n, 0.05, 1.5), *ang = rand_nz(&r, na, 0.05, 3.0);
    real *wo = rand_nz(&r, n, 0.05, 1.0), *y = tu_zeros(n);
    RotCtx c = {y, x, ang, wo, N, H, D, per_head};
    cpu_rotate_fwd(y, x, ang, N, H, D, per_head);
    real *ref = tu_zeros(n);
    for (int64_t t = 0; t < N; t++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j < P; j++) {
                double a = (double)ang[per_head ? (t * H + h) * P + j : t * P + j];
                int64_t b = (t * H + h) * D;
                double x0 = (double)x[b + j], x1 = (double)x[b + j + P];
                ref[b + j] = (real)(x0 * cos(a) - x1 * sin(a));
                ref[b + j + P] = (real)(x0 * sin(a) + x1 * cos(a));
            }
    const char *tag = per_head ? "per-head" : "shared";
    char name[96];
    snprintf(name, sizeof name, "rotate %s value", tag);
    check_equal(name, y, ref, n);
    real *dx = garbage(&r, n);
    if (per_head) {
        real *pa = rand_nz(&r, na, 0.1, 1.0), *da = tu_copy(pa, na);
        cpu_rotate_bwd(dx, da, wo, x, ang, N, H, D, per_head);
        real *ga = diff(da, pa, na);
        snprintf(name, sizeof name, "rotate %s dangle (+=)", tag);
        fd_check(name, rot_loss, &c, ang, ga, na, 1000, &r);
        FREE_ALL(pa, da, ga);
    } else {
        /* the contract gives dangle only in the per-head layout */
        cpu_rotate_bwd(dx, NULL, wo, x, ang, N, H, D, per_head);
    }
    snprintf(name, sizeof name, "rotate %s dx", tag);
    fd_check(name, rot_loss, &c, x, dx, n, 1000, &r);
    FREE_ALL(x, ang, wo, y, ref, dx);
}

static void test_rotate_shared(void) { rotate_case(0, 501); }
static void test_rotate_per_head(void) { rotate_case(1, 502); }

typedef struct {
    real *angle, *Phi, *phi, *bias, *gl, *temp, *wo;
    const Seqs *s;
    int H, P;
} SelCtx;

static double sel_loss(void *p) {
    SelCtx *c = p;
    cpu_selrope_angles_fwd(c->angle, c->Phi, c->phi, c->bias, c->gl, c->temp, c->s, c->H, c->P);
    return tu_dot(c->wo, c->angle, c->s->ntok * c->H * c->P);
}

static void selrope_case(int with_bias, int with_gate, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int H = 2, P = 3, HP = H * P;
    int64_t N = s->ntok, n = N * HP, nh = N * H;
    real *phi = rand_nz(&r, n, 0.05, 1.0);
    real *bias = with_bias ? rand_nz(&r, HP, 0.05, 1.0) : NULL;
    real *gl = with_gate ? rand_nz(&r, nh, 0.05, 3.0) : NULL;
    real *temp = tu_rand(&r, P, 0.05, 1.0);
    real *wo = rand_nz(&r, n, 0.05, 1.0), *angle = tu_zeros(n), *Phi = tu_zeros(n);
    SelCtx c = {angle, Phi, phi, bias, gl, temp, wo, s, H, P};
    char tag[64], name[128];
    snprintf(tag, sizeof tag, "bias %s, gate %s", with_bias ? "on" : "off", with_gate ? "on" : "off");

    cpu_selrope_angles_fwd(angle, Phi, phi, bias, gl, temp, s, H, P);
    real *rPhi = tu_zeros(n), *rang = tu_zeros(n);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j < P; j++) {
                double acc = 0;
                for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++) {
                    int64_t i = t * HP + h * P + j;
                    double inc = (double)phi[i] + (bias ? exp((double)bias[h * P + j]) : 0.0);
                    if (gl) inc *= 1.0 / (1.0 + exp(-(double)gl[t * H + h]));
                    acc += inc;
                    rPhi[i] = (real)acc;
                    rang[i] = (real)((double)temp[j] * acc);
                }
            }
    snprintf(name, sizeof name, "selrope (%s) Phi value", tag);
    check_equal(name, Phi, rPhi, n);
    snprintf(name, sizeof name, "selrope (%s) angle value", tag);
    check_equal(name, angle, rang, n);

    real *dangle = tu_copy(wo, n); /* consumed as scratch */
    real *dphi = garbage(&r, n), *dgl = with_gate ? garbage(&r, nh) : NULL;
    real *pb = rand_nz(&r, HP, 0.1, 1.0), *db = tu_copy(pb, HP);
    real *pt = rand_nz(&r, P, 0.1, 1.0), *dt = tu_copy(pt, P);
    cpu_selrope_angles_bwd(dphi, with_bias ? db : NULL, dgl, dt, dangle, phi, bias, gl, temp, Phi,
                           s, H, P);
    snprintf(name, sizeof name, "selrope (%s) dphi", tag);
    fd_check(name, sel_loss, &c, phi, dphi, n, 100000, &r);
    if (with_bias) {
        real *gb = diff(db, pb, HP);
        snprintf(name, sizeof name, "selrope (%s) dbias (+=)", tag);
        fd_check(name, sel_loss, &c, bias, gb, HP, 1000, &r);
        rt_free(gb);
    }
    if (with_gate) {
        snprintf(name, sizeof name, "selrope (%s) dgate_logit", tag);
        fd_check(name, sel_loss, &c, gl, dgl, nh, 100000, &r);
    }
    real *gt = diff(dt, pt, P);
    snprintf(name, sizeof name, "selrope (%s) dtemp (+=)", tag);
    fd_check(name, sel_loss, &c, temp, gt, P, 1000, &r);
    FREE_ALL(phi, bias, gl, temp, wo, angle, Phi, rPhi, rang, dangle, dphi, dgl, pb, db, pt, dt, gt);
    tu_seqs_free(&ts);
}

static void test_selrope_plain(void) { selrope_case(0, 0, 503); }
static void test_selrope_bias(void) { selrope_case(1, 0, 504); }
static void test_selrope_gate(void) { selrope_case(0, 1, 505); }
static void test_selrope_bias_gate(void) { selrope_case(1, 1, 506); }

/* The fused op (docs/models.md §5 steps 3-8), L = wq . qo + wk . ko. */
typedef struct {
    real *qo, *ko, *Phi, *q, *k, *phi_raw, *w, *bias, *gl, *temp, *wq, *wk;
    Activation act;
    const Seqs *s;
    int H, P;
} SelFusedCtx;

static double sel_fused_loss(void *p) {
    SelFusedCtx *c = p;
    cpu_selrope_fwd(&(SelRopeArgs){.s = c->s, .H = c->H, .P = c->P, .q = c->q, .k = c->k,
                                    .phi_raw = c->phi_raw, .conv_w = c->w, .conv_act = c->act,
                                    .bias = c->bias, .gate_logit = c->gl, .temp = c->temp,
                                    .qo = c->qo, .ko = c->ko, .Phi = c->Phi});
    int64_t n = c->s->ntok * c->H * 2 * c->P;
    return tu_dot(c->wq, c->qo, n) + tu_dot(c->wk, c->ko, n);
}

/* qo from the definition in double: conv + act (or first difference), bias, gate, cumsum per
 * segment, rotation of the pairs (j, j+P) by temp_j Phi. */
static void sel_fused_reference(real *qo, const SelFusedCtx *c) {
    const Seqs *s = c->s;
    int H = c->H, P = c->P, C = H * P;
    for (int seg = 0; seg < s->nseg; seg++)
        for (int ch = 0; ch < C; ch++) {
            int h = ch / P, j = ch % P;
            double Phi = 0;
            for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++) {
                double pre = 0;
                for (int back = 0; back < 4 && t - back >= s->cu[seg]; back++) {
                    double tap = c->w ? (double)c->w[ch * 4 + 3 - back]
                                      : (back == 0 ? 1 : back == 1 ? -1 : 0);
                    pre += tap * (double)c->phi_raw[(t - back) * C + ch];
                }
                double inc = c->act == ACT_SILU ? pre / (1 + exp(-pre)) : pre;
                if (c->bias) inc += exp((double)c->bias[ch]);
                if (c->gl) inc /= 1 + exp(-(double)c->gl[t * H + h]);
                Phi += inc;
                double a = (double)c->temp[j] * Phi;
                int64_t b = (t * H + h) * 2 * P;
                double x0 = (double)c->q[b + j], x1 = (double)c->q[b + j + P];
                qo[b + j] = (real)(x0 * cos(a) - x1 * sin(a));
                qo[b + j + P] = (real)(x0 * sin(a) + x1 * cos(a));
            }
        }
}

static void selrope_fused_case(int with_w, Activation act, int with_bias, int with_gate,
                               uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int H = 2, P = 3, C = H * P;
    int64_t N = s->ntok, n = N * C, nq = 2 * n, nh = N * H;
    real *q = rand_nz(&r, nq, 0.05, 1.0), *k = rand_nz(&r, nq, 0.05, 1.0);
    real *phi_raw = rand_nz(&r, n, 0.05, 1.0), *temp = tu_rand(&r, P, 0.05, 1.0);
    real *w = with_w ? rand_nz(&r, 4 * C, 0.1, 1.0) : NULL;
    real *bias = with_bias ? rand_nz(&r, C, 0.05, 1.0) : NULL;
    real *gl = with_gate ? rand_nz(&r, nh, 0.05, 3.0) : NULL;
    real *wq = rand_nz(&r, nq, 0.05, 1.0), *wk = rand_nz(&r, nq, 0.05, 1.0);
    real *qo = tu_zeros(nq), *ko = tu_zeros(nq), *Phi = tu_zeros(n), *ref = tu_zeros(nq);
    SelFusedCtx c = {qo, ko, Phi, q, k, phi_raw, w, bias, gl, temp, wq, wk, act, s, H, P};
    char tag[96], name[160];
    snprintf(tag, sizeof tag, "%s %s%s%s", with_w ? "conv" : "diff",
             act == ACT_SILU ? "silu" : "none", with_bias ? " bias" : "", with_gate ? " gate" : "");

    sel_fused_loss(&c);
    sel_fused_reference(ref, &c);
    snprintf(name, sizeof name, "selrope fused (%s) qo value", tag);
    check_equal(name, qo, ref, nq);

    real *dq = garbage(&r, nq), *dk = garbage(&r, nq), *dphi = garbage(&r, n);
    real *dgl = with_gate ? garbage(&r, nh) : NULL;
    real *pw = rand_nz(&r, 4 * C, 0.1, 1.0), *dw = tu_copy(pw, 4 * C);
    real *pb = rand_nz(&r, C, 0.1, 1.0), *db = tu_copy(pb, C);
    real *pt = rand_nz(&r, P, 0.1, 1.0), *dt = tu_copy(pt, P);
    cpu_selrope_bwd(&(SelRopeGrads){
        .a = {.s = s, .H = H, .P = P, .q = q, .k = k, .phi_raw = phi_raw, .conv_w = w,
              .conv_act = act, .bias = bias, .gate_logit = gl, .temp = temp, .Phi = Phi},
        .dqo = wq, .dko = wk, .dq = dq, .dk = dk, .dphi_raw = dphi, .dconv_w = dw, .dbias = db,
        .dgate_logit = dgl, .dtemp = dt});
    snprintf(name, sizeof name, "selrope fused (%s) dq", tag);
    fd_check(name, sel_fused_loss, &c, q, dq, nq, 300, &r);
    snprintf(name, sizeof name, "selrope fused (%s) dk", tag);
    fd_check(name, sel_fused_loss, &c, k, dk, nq, 300, &r);
    snprintf(name, sizeof name, "selrope fused (%s) dphi_raw", tag);
    fd_check(name, sel_fused_loss, &c, phi_raw, dphi, n, 300, &r);
    real *gw = diff(dw, pw, 4 * C), *gb = diff(db, pb, C), *gt = diff(dt, pt, P);
    if (with_w) {
        snprintf(name, sizeof name, "selrope fused (%s) dconv_w (+=)", tag);
        fd_check(name, sel_fused_loss, &c, w, gw, 4 * C, 1000, &r);
    } else {
        snprintf(name, sizeof name, "selrope fused (%s) dconv_w untouched", tag);
        CHECK_MSG(maxabs(gw, 4 * C) == 0, "%s", name);
    }
    if (with_bias) {
        snprintf(name, sizeof name, "selrope fused (%s) dbias (+=)", tag);
        fd_check(name, sel_fused_loss, &c, bias, gb, C, 1000, &r);
    } else {
        snprintf(name, sizeof name, "selrope fused (%s) dbias untouched", tag);
        CHECK_MSG(maxabs(gb, C) == 0, "%s", name);
    }
    if (with_gate) {
        snprintf(name, sizeof name, "selrope fused (%s) dgate_logit", tag);
        fd_check(name, sel_fused_loss, &c, gl, dgl, nh, 300, &r);
    }
    snprintf(name, sizeof name, "selrope fused (%s) dtemp (+=)", tag);
    fd_check(name, sel_fused_loss, &c, temp, gt, P, 1000, &r);
    FREE_ALL(q, k, phi_raw, temp, w, bias, gl, wq, wk, qo, ko, Phi, ref, dq, dk, dphi, dgl, pw, dw,
             pb, db, pt, dt, gw, gb, gt);
    tu_seqs_free(&ts);
}

static void test_selrope_fused_conv_silu(void) { selrope_fused_case(1, ACT_SILU, 1, 1, 511); }
static void test_selrope_fused_conv_none(void) { selrope_fused_case(1, ACT_NONE, 0, 1, 512); }
static void test_selrope_fused_diff(void) { selrope_fused_case(0, ACT_NONE, 1, 0, 513); }
static void test_selrope_fused_diff_plain(void) { selrope_fused_case(0, ACT_NONE, 0, 0, 514); }

typedef struct {
    real *wn, *w, *sc, *wo;
    int H, Din, P;
} WnCtx;

static double wn_loss(void *p) {
    WnCtx *c = p;
    cpu_weightnorm_fwd(c->wn, c->w, c->sc, c->H, c->Din, c->P);
    return tu_dot(c->wo, c->wn, (int64_t)c->H * c->Din * c->P);
}

static void test_weightnorm(void) {
    Rng r;
    rng_init(&r, 507, 0);
    int H = 2, Din = 7, P = 3;
    int64_t n = (int64_t)H * Din * P;
    real *w = rand_nz(&r, n, 0.05, 1.0), *sc = rand_nz(&r, H, 0.3, 2.0);
    real *wo = rand_nz(&r, n, 0.05, 1.0), *wn = tu_zeros(n);
    WnCtx c = {wn, w, sc, wo, H, Din, P};
    cpu_weightnorm_fwd(wn, w, sc, H, Din, P);
    real *ref = tu_zeros(n);
    for (int h = 0; h < H; h++)
        for (int j = 0; j < P; j++) {
            double ss = 0;
            for (int i = 0; i < Din; i++) ss += pow((double)w[(h * Din + i) * P + j], 2);
            for (int i = 0; i < Din; i++)
                ref[(h * Din + i) * P + j] = (real)((double)sc[h] * (double)w[(h * Din + i) * P + j] / sqrt(ss));
        }
    check_equal("weightnorm value", wn, ref, n);
    real *pw = rand_nz(&r, n, 0.1, 1.0), *dw = tu_copy(pw, n);
    real *ps = rand_nz(&r, H, 0.1, 1.0), *ds = tu_copy(ps, H);
    cpu_weightnorm_bwd(dw, ds, wo, w, sc, H, Din, P);
    real *gw = diff(dw, pw, n), *gs = diff(ds, ps, H);
    fd_check("weightnorm dw (+=)", wn_loss, &c, w, gw, n, 1000, &r);
    fd_check("weightnorm dscale (+=)", wn_loss, &c, sc, gs, H, 1000, &r);
    FREE_ALL(w, sc, wo, wn, ref, pw, dw, ps, ds, gw, gs);
}

typedef struct {
    real *out, *x, *w, *wo;
    int64_t N;
    int H, Din, P;
} HmCtx;

static double hm_loss(void *p) {
    HmCtx *c = p;
    cpu_head_matmul_fwd(c->out, c->x, c->w, c->N, c->H, c->Din, c->P);
    return tu_dot(c->wo, c->out, c->N * c->H * c->P);
}

static void test_head_matmul(void) {
    Rng r;
    rng_init(&r, 508, 0);
    int64_t N = 17;
    int H = 3, Din = 7, P = 4;
    int64_t nx = N * H * Din, nw = (int64_t)H * Din * P, no = N * H * P;
    real *x = rand_nz(&r, nx, 0.05, 1.0), *w = rand_nz(&r, nw, 0.05, 1.0);
    real *wo = rand_nz(&r, no, 0.05, 1.0), *out = tu_zeros(no);
    HmCtx c = {out, x, w, wo, N, H, Din, P};
    cpu_head_matmul_fwd(out, x, w, N, H, Din, P);
    real *ref = tu_zeros(no);
    for (int64_t t = 0; t < N; t++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j < P; j++) {
                double acc = 0;
                for (int i = 0; i < Din; i++)
                    acc += (double)x[(t * H + h) * Din + i] * (double)w[((int64_t)h * Din + i) * P + j];
                ref[(t * H + h) * P + j] = (real)acc;
            }
    check_equal("head_matmul value", out, ref, no);
    real *dx = garbage(&r, nx), *pw = rand_nz(&r, nw, 0.1, 1.0), *dw = tu_copy(pw, nw);
    cpu_head_matmul_bwd(dx, dw, wo, x, w, N, H, Din, P, 0);
    real *gw = diff(dw, pw, nw);
    fd_check("head_matmul dx (accumulate=0)", hm_loss, &c, x, dx, nx, 1000, &r);
    fd_check("head_matmul dw (+=)", hm_loss, &c, w, gw, nw, 1000, &r);
    real *px = rand_nz(&r, nx, 0.1, 1.0), *dx2 = tu_copy(px, nx), *dw2 = tu_zeros(nw);
    cpu_head_matmul_bwd(dx2, dw2, wo, x, w, N, H, Din, P, 1);
    real *gx2 = diff(dx2, px, nx);
    check_equal("head_matmul dx (accumulate=1) adds", gx2, dx, nx);
    check_equal("head_matmul dw from zero", dw2, gw, nw);
    FREE_ALL(x, w, wo, out, ref, dx, pw, dw, gw, px, dx2, dw2, gx2);
}

/* ---------------------------------------------------------- mixers ---- */

/* Gates of the mixer checks are weak (log decay in [-0.05, -0.002] per token, e^-1.7 over a
 * chunk on average) so that states and earlier tiles carried across chunk boundaries matter:
 * with log decays ~U(-1, 0) a chunk decays by ~e^-32 and the inter-chunk terms would be
 * invisible to the check.
 * Tokens at segment starts/ends and chunk boundaries of LENS (cu = 0, 70, 71, 104, 234). */
static const int64_t EDGE_TOKENS[] = {0, 1, 63, 64, 69, 70, 71, 103, 104, 167, 168, 231, 232, 233};
#define NEDGE ((int)(sizeof(EDGE_TOKENS) / sizeof(EDGE_TOKENS[0])))

static void mixer_check(const char *what, tu_loss_fn f, void *ctx, real *x, const real *grad,
                        int64_t n, int64_t rowlen, Rng *r) {
    fd_check(what, f, ctx, x, grad, n, MIXER_SAMPLES, r);
    fd_check_rows(what, f, ctx, x, grad, n, rowlen, EDGE_TOKENS, NEDGE);
}

/* L = wo . o of a linear-attention op (lin) or softmax attention (attn) whose inputs the
 * finite differences perturb in place. */
typedef struct {
    LinAttnArgs lin;
    AttnArgs attn;
    real *wo;
} MixCtx;

static double gla_loss(void *p) {
    MixCtx *c = p;
    cpu_gla_fwd(&c->lin);
    return tu_dot(c->wo, c->lin.o, c->lin.s->ntok * c->lin.H * c->lin.V);
}

/* GLA with a log decay per key channel, or one per head (Mamba2's SSD, scale 1). */
static void gla_case(int per_head, const char *tag, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int H = 2, K = 8, V = 6;
    int64_t N = s->ntok, nk = N * H * K, nv = N * H * V, ng = per_head ? N * H : nk;
    real *q = rand_nz(&r, nk, 0.05, 1.5), *k = rand_nz(&r, nk, 0.05, 1.5);
    real *v = rand_nz(&r, nv, 0.05, 1.5), *g = tu_rand(&r, ng, -0.05, -0.002);
    real *wo = rand_nz(&r, nv, 0.05, 1.0), *o = tu_zeros(nv);
    real *states = tu_zeros(chunk_states_size(s, H, K, V));
    double scale = per_head ? 1.0 : 1.0 / sqrt((double)K);
    MixCtx c = {.lin = {.s = s, .H = H, .K = K, .V = V, .scale = scale, .q = q, .k = k, .v = v,
                        .g = g, .g_per_head = per_head, .o = o, .states = states},
                .wo = wo};
    cpu_gla_fwd(&c.lin);
    real *dq = garbage(&r, nk), *dk = garbage(&r, nk), *dv = garbage(&r, nv), *dg = garbage(&r, ng);
    cpu_gla_bwd(&(LinAttnGrads){.a = c.lin, .dout = wo, .dq = dq, .dk = dk, .dv = dv, .dg = dg});
    char name[64];
#define CHECK_GRAD(what, x, dx, n, row) \
    (snprintf(name, sizeof name, "%s %s", tag, what), mixer_check(name, gla_loss, &c, x, dx, n, row, &r))
    CHECK_GRAD("dq", q, dq, nk, (int64_t)H * K);
    CHECK_GRAD("dk", k, dk, nk, (int64_t)H * K);
    CHECK_GRAD("dv", v, dv, nv, (int64_t)H * V);
    CHECK_GRAD("dg", g, dg, ng, ng / N);
#undef CHECK_GRAD
    FREE_ALL(q, k, v, g, wo, o, states, dq, dk, dv, dg);
    tu_seqs_free(&ts);
}

static void test_gla(void) { gla_case(0, "gla", 601); }
static void test_gla_per_head(void) { gla_case(1, "gla per-head g", 602); }

static void l2normalise_rows(real *x, int64_t rows, int D) {
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int d = 0; d < D; d++) ss += (double)x[r * D + d] * (double)x[r * D + d];
        for (int d = 0; d < D; d++) x[r * D + d] = (real)((double)x[r * D + d] / sqrt(ss + 1e-6));
    }
}

static double gdn_loss(void *p) {
    MixCtx *c = p;
    cpu_gdn_fwd(&c->lin);
    return tu_dot(c->wo, c->lin.o, c->lin.s->ntok * c->lin.H * c->lin.V);
}

/* decay = 0: g == NULL, the ungated delta rule (DeltaNet); no dg. */
static void gdn_grad_case(int decay, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int H = 2, K = 8, V = 6;
    int64_t N = s->ntok, nk = N * H * K, nv = N * H * V, nh = N * H;
    real *q = rand_nz(&r, nk, 0.05, 1.5), *k = rand_nz(&r, nk, 0.05, 1.5);
    l2normalise_rows(q, nh, K);
    l2normalise_rows(k, nh, K);
    real *v = rand_nz(&r, nv, 0.05, 1.5), *beta = tu_rand(&r, nh, 0.05, 0.95);
    real *g = decay ? tu_rand(&r, nh, -0.05, -0.002) : NULL;
    real *wo = rand_nz(&r, nv, 0.05, 1.0), *o = tu_zeros(nv);
    real *states = tu_zeros(chunk_states_size(s, H, K, V));
    double scale = 1.0 / sqrt((double)K);
    MixCtx c = {.lin = {.s = s, .H = H, .K = K, .V = V, .scale = scale, .q = q, .k = k, .v = v,
                        .g = g, .beta = beta, .o = o, .states = states},
                .wo = wo};
    cpu_gdn_fwd(&c.lin);
    real *dq = garbage(&r, nk), *dk = garbage(&r, nk), *dv = garbage(&r, nv);
    real *db = garbage(&r, nh), *dg = decay ? garbage(&r, nh) : NULL;
    cpu_gdn_bwd(&(LinAttnGrads){.a = c.lin, .dout = wo, .dq = dq, .dk = dk, .dv = dv, .dg = dg,
                                .dbeta = db});
    mixer_check("gdn dq", gdn_loss, &c, q, dq, nk, (int64_t)H * K, &r);
    mixer_check("gdn dk", gdn_loss, &c, k, dk, nk, (int64_t)H * K, &r);
    mixer_check("gdn dv", gdn_loss, &c, v, dv, nv, (int64_t)H * V, &r);
    mixer_check("gdn dbeta", gdn_loss, &c, beta, db, nh, H, &r);
    if (decay) mixer_check("gdn dg", gdn_loss, &c, g, dg, nh, H, &r);
    FREE_ALL(q, k, v, beta, g, wo, o, states, dq, dk, dv, db, dg);
    tu_seqs_free(&ts);
}

static void test_gdn(void) { gdn_grad_case(1, 602); }
static void test_deltanet(void) { gdn_grad_case(0, 604); }

static double fox_loss(void *p) {
    MixCtx *c = p;
    cpu_fox_fwd(&c->attn);
    return tu_dot(c->wo, c->attn.o, c->attn.s->ntok * c->attn.H * c->attn.D);
}

/* gated = 0: no forget gate (logf NULL, the Transformer), dlogf left alone. */
static void fox_grad_case(int gated, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int H = 2, D = 8;
    int64_t N = s->ntok, n = N * H * D, nh = N * H;
    real *q = rand_nz(&r, n, 0.05, 1.5), *k = rand_nz(&r, n, 0.05, 1.5);
    real *v = rand_nz(&r, n, 0.05, 1.5), *logf = gated ? tu_rand(&r, nh, -0.05, -0.002) : NULL;
    real *wo = rand_nz(&r, n, 0.05, 1.0), *o = tu_zeros(n), *lse = tu_zeros(nh);
    double scale = 1.0 / sqrt((double)D);
    MixCtx c = {.attn = {.s = s, .H = H, .D = D, .scale = scale, .q = q, .k = k, .v = v,
                         .logf = logf, .o = o, .lse = lse},
                .wo = wo};
    cpu_fox_fwd(&c.attn);
    real *o_saved = tu_copy(o, n), *lse_saved = tu_copy(lse, nh);
    real *dq = garbage(&r, n), *dk = garbage(&r, n), *dv = garbage(&r, n), *df = garbage(&r, nh);
    AttnArgs saved = c.attn;
    saved.o = o_saved, saved.lse = lse_saved;
    cpu_fox_bwd(&(AttnGrads){.a = saved, .dout = wo, .dq = dq, .dk = dk, .dv = dv, .dlogf = df});
    mixer_check("fox dq", fox_loss, &c, q, dq, n, (int64_t)H * D, &r);
    mixer_check("fox dk", fox_loss, &c, k, dk, n, (int64_t)H * D, &r);
    mixer_check("fox dv", fox_loss, &c, v, dv, n, (int64_t)H * D, &r);
    if (gated) mixer_check("fox dlogf", fox_loss, &c, logf, df, nh, H, &r);
    FREE_ALL(q, k, v, logf, wo, o, lse, o_saved, lse_saved, dq, dk, dv, df);
    tu_seqs_free(&ts);
}

static void test_fox(void) { fox_grad_case(1, 603); }
static void test_fox_no_gate(void) { fox_grad_case(0, 604); }


/* ------------------------------------------------- LRU and RotRNN ---- */

/* The complex scan (docs/models.md §13, §14), L = wo . h; weak decays (|lambda| in
 * [e^-0.05, e^-0.002]) so that states carried across chunks matter, angles in [-pi, pi]. */
typedef struct {
    CScanArgs a;
    real *wo;
} ScanCtx;

static double cscan_loss(void *p) {
    ScanCtx *c = p;
    cpu_cscan_fwd(&c->a);
    return tu_dot(c->wo, c->a.h, c->a.s->ntok * 2 * c->a.C);
}

static void test_cscan(void) {
    Rng r;
    rng_init(&r, 701, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int C = 3;
    int64_t n = s->ntok * 2 * C;
    real *x = rand_nz(&r, n, 0.05, 1.5), *wo = rand_nz(&r, n, 0.05, 1.0), *h = tu_zeros(n);
    real *loga = tu_rand(&r, C, -0.05, -0.002), *angle = tu_rand(&r, C, -3.1, 3.1);
    real *states = tu_zeros(chunk_states_size(s, 1, C, 2));
    ScanCtx c = {{.s = s, .C = C, .loga = loga, .angle = angle, .x = x, .h = h, .states = states}, wo};
    cpu_cscan_fwd(&c.a);
    real *dx = garbage(&r, n), *dla = garbage(&r, C), *dan = garbage(&r, C);
    cpu_cscan_bwd(&(CScanGrads){.a = c.a, .dh = wo, .dx = dx, .dloga = dla, .dangle = dan});
    mixer_check("cscan dx", cscan_loss, &c, x, dx, n, 2 * C, &r);
    fd_check("cscan dloga", cscan_loss, &c, loga, dla, C, 100, &r);
    fd_check("cscan dangle", cscan_loss, &c, angle, dan, C, 100, &r);
    FREE_ALL(x, wo, h, loga, angle, states, dx, dla, dan);
    tu_seqs_free(&ts);
}

/* L = sum of random weights times every output of the LRU's weight op. */
typedef struct {
    LruWeights w;
    real *wl, *wa, *wB, *wC, *wC2;
} LruWCtx;

static double lru_w_loss(void *p) {
    LruWCtx *c = p;
    cpu_lru_weights_fwd(&c->w);
    int64_t N = c->w.N, d = c->w.d;
    return tu_dot(c->wl, c->w.loga, N) + tu_dot(c->wa, c->w.angle, N) + tu_dot(c->wB, c->w.Bw, 2 * N * d) +
           tu_dot(c->wC, c->w.Cw, 2 * N * d) + tu_dot(c->wC2, c->w.Cw2, 2 * N * d);
}

static void test_lru_weights(void) {
    Rng r;
    rng_init(&r, 702, 0);
    int N = 5, d = 7;
    int64_t nB = (int64_t)N * d;
    real *nu = tu_rand(&r, N, -3, 1), *th = tu_rand(&r, N, -3, 1), *gl = tu_rand(&r, N, -2, 0);
    real *Br = rand_nz(&r, nB, 0.05, 1), *Bi = rand_nz(&r, nB, 0.05, 1);
    real *Cr = rand_nz(&r, nB, 0.05, 1), *Ci = rand_nz(&r, nB, 0.05, 1);
    real *la = tu_zeros(N), *an = tu_zeros(N), *Bw = tu_zeros(2 * nB), *Cw = tu_zeros(2 * nB);
    /* the bidirectional layer's reverse readout (docs/models.md §16) */
    real *Cr2 = rand_nz(&r, nB, 0.05, 1), *Ci2 = rand_nz(&r, nB, 0.05, 1), *Cw2 = tu_zeros(2 * nB);
    LruWCtx c = {{N, d, nu, th, gl, Br, Bi, Cr, Ci, la, an, Bw, Cw, Cr2, Ci2, Cw2}, rand_nz(&r, N, 0.1, 1),
                 rand_nz(&r, N, 0.1, 1), rand_nz(&r, 2 * nB, 0.1, 1), rand_nz(&r, 2 * nB, 0.1, 1),
                 rand_nz(&r, 2 * nB, 0.1, 1)};
    cpu_lru_weights_fwd(&c.w);
    /* values: Re(C h) = h Cw^T and gamma B u = Bw u for one complex h, real u */
    double worst = 0;
    for (int e = 0; e < d; e++) {
        double ref = 0, got = 0;
        for (int k = 0; k < N; k++) {
            double hr = 0.3 + k, hi = 0.7 - k; /* any complex vector */
            ref += Cr[e * N + k] * hr - Ci[e * N + k] * hi;
            got += Cw[e * 2 * N + 2 * k] * hr + Cw[e * 2 * N + 2 * k + 1] * hi;
        }
        worst = fmax(worst, fabs(ref - got));
    }
    for (int k = 0; k < N; k++) {
        worst = fmax(worst, fabs(la[k] + exp(nu[k])) + fabs(an[k] - exp(th[k])));
        for (int e = 0; e < d; e++)
            worst = fmax(worst, fabs(Bw[2 * k * d + e] - exp(gl[k]) * Br[k * d + e]) +
                                    fabs(Bw[(2 * k + 1) * d + e] - exp(gl[k]) * Bi[k * d + e]));
    }
    printf("    %-40s abs err %.2e\n", "lru_weights value", worst);
    CHECK(worst < 1e-12);
    real *pre[9], *grad[9];
    for (int i = 0; i < 9; i++) {
        int64_t m = i < 3 ? N : nB;
        pre[i] = rand_nz(&r, m, 0.1, 1), grad[i] = tu_copy(pre[i], m);
    }
    cpu_lru_weights_bwd(&(LruWeightGrads){.w = c.w, .dloga = c.wl, .dangle = c.wa, .dBw = c.wB,
                                           .dCw = c.wC, .dnu_log = grad[0], .dtheta_log = grad[1],
                                           .dgamma_log = grad[2], .dB_re = grad[3], .dB_im = grad[4],
                                           .dC_re = grad[5], .dC_im = grad[6], .dCw2 = c.wC2,
                                           .dC_re2 = grad[7], .dC_im2 = grad[8]});
    real *xs[9] = {nu, th, gl, Br, Bi, Cr, Ci, Cr2, Ci2};
    const char *names[9] = {"dnu_log", "dtheta_log", "dgamma_log", "dB_re", "dB_im", "dC_re", "dC_im",
                            "dC_re2", "dC_im2"};
    for (int i = 0; i < 9; i++) {
        int64_t m = i < 3 ? N : nB;
        real *gi = diff(grad[i], pre[i], m);
        char name[64];
        snprintf(name, sizeof name, "lru_weights %s (+=)", names[i]);
        fd_check(name, lru_w_loss, &c, xs[i], gi, m, 1000, &r);
        FREE_ALL(gi, pre[i], grad[i]);
    }
    FREE_ALL(nu, th, gl, Br, Bi, Cr, Ci, la, an, Bw, Cw, c.wl, c.wa, c.wB, c.wC);
    FREE_ALL(Cr2, Ci2, Cw2, c.wC2);
}

/* P = expm(M - M^T): orthogonal; a 2x2 rotation in closed form; dM through the Frechet
 * derivative against finite differences (L = W . P), for heads whose ||S||_1 needs several
 * squarings. */
typedef struct {
    real *P, *M, *W;
    int H, n;
} ExpmCtx;

static double expm_loss(void *p) {
    ExpmCtx *c = p;
    cpu_orth_expm_fwd(c->P, c->M, NULL, c->H, c->n);
    return tu_dot(c->W, c->P, (int64_t)c->H * c->n * c->n);
}

static void test_orth_expm(void) {
    Rng r;
    rng_init(&r, 703, 0);
    real M2[4] = {0.3, 1.9, -0.4, 0.1}, P2[4]; /* S = [[0, 2.3], [-2.3, 0]] */
    cpu_orth_expm_fwd(P2, M2, NULL, 1, 2);
    double a = 2.3, e2 = fabs(P2[0] - cos(a)) + fabs(P2[1] - sin(a)) + fabs(P2[2] + sin(a)) + fabs(P2[3] - cos(a));
    printf("    %-40s abs err %.2e\n", "orth_expm 2x2 rotation", e2);
    CHECK(e2 < 1e-13);
    int H = 2, n = 8;
    int64_t nm = (int64_t)H * n * n;
    ExpmCtx c = {tu_zeros(nm), tu_randn(&r, nm, 1.0), rand_nz(&r, nm, 0.1, 1), H, n};
    cpu_orth_expm_fwd(c.P, c.M, NULL, H, n);
    double orth = 0;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int k = 0; k < n; k++) acc += c.P[h * n * n + k * n + i] * c.P[h * n * n + k * n + j];
                orth = fmax(orth, fabs(acc - (i == j)));
            }
    printf("    %-40s abs err %.2e\n", "orth_expm P^T P = I", orth);
    CHECK(orth < 1e-12);
    real *pre = rand_nz(&r, nm, 0.1, 1), *dM = tu_copy(pre, nm);
    cpu_orth_expm_bwd(dM, c.W, c.M, NULL, H, n);
    real *gM = diff(dM, pre, nm);
    fd_check("orth_expm dM (+=)", expm_loss, &c, c.M, gM, nm, 1000, &r);
    FREE_ALL(c.P, c.M, c.W, pre, dM, gM);
}

/* RotRNN's weight op alone (any P), and chained with the basis: L(M) through expm. */
typedef struct {
    RotWeights w;
    real *M, *wl, *wa, *wB, *wC, *wC2;
    int chain; /* recompute P = expm(M - M^T) first */
} RotWCtx;

static double rot_w_loss(void *p) {
    RotWCtx *c = p;
    const RotWeights *w = &c->w;
    if (c->chain) cpu_orth_expm_fwd((void *)w->P, c->M, NULL, w->H, w->n);
    cpu_rotrnn_weights_fwd(w);
    int64_t C = (int64_t)w->H * w->n / 2, nB = (int64_t)w->H * w->n * w->d;
    return tu_dot(c->wl, w->loga, C) + tu_dot(c->wa, w->angle, C) + tu_dot(c->wB, w->Bw, nB) +
           tu_dot(c->wC, w->Cw, nB) + tu_dot(c->wC2, w->Cw2, nB);
}

static void rotrnn_weights_case(int chain, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    int H = 2, n = 4, d = 5;
    int64_t nP = (int64_t)H * n * n, C = (int64_t)H * n / 2, nB = (int64_t)H * n * d;
    real *M = tu_randn(&r, nP, 1), *P = rand_nz(&r, nP, 0.1, 1);
    real *gl = tu_rand(&r, H, -3, 0), *th = tu_rand(&r, C, 0, 6.28), *B = rand_nz(&r, nB, 0.05, 1);
    real *Cm = rand_nz(&r, nB, 0.05, 1), *xi = tu_zeros(H), *la = tu_zeros(C), *an = tu_zeros(C);
    real *Bw = tu_zeros(nB), *Cw = tu_zeros(nB);
    real *C2 = rand_nz(&r, nB, 0.05, 1), *Cw2 = tu_zeros(nB); /* the reverse readout (§16) */
    RotWCtx c = {{H, n, d, P, gl, th, B, Cm, xi, la, an, Bw, Cw, C2, Cw2}, M, rand_nz(&r, C, 0.1, 1),
                 rand_nz(&r, C, 0.1, 1), rand_nz(&r, nB, 0.1, 1), rand_nz(&r, nB, 0.1, 1),
                 rand_nz(&r, nB, 0.1, 1), chain};
    rot_w_loss(&c);
    if (!chain) { /* xi normalises: ||xi B_h||^2 = 1 - gamma^2 */
        double worst = 0;
        for (int h = 0; h < H; h++) {
            double ss = 0, g = exp(-exp(gl[h]));
            for (int i = 0; i < n * d; i++) ss += pow(xi[h] * B[h * n * d + i], 2);
            worst = fmax(worst, fabs(ss - (1 - g * g)));
        }
        printf("    %-40s abs err %.2e\n", "rotrnn_weights xi", worst);
        CHECK(worst < 1e-12);
    }
    real *dP = garbage(&r, nP), *dxi = garbage(&r, H);
    real *pre[5] = {rand_nz(&r, H, 0.1, 1), rand_nz(&r, C, 0.1, 1), rand_nz(&r, nB, 0.1, 1),
                    rand_nz(&r, nB, 0.1, 1), rand_nz(&r, nB, 0.1, 1)};
    int64_t sizes[5] = {H, C, nB, nB, nB};
    real *grad[5];
    for (int i = 0; i < 5; i++) grad[i] = tu_copy(pre[i], sizes[i]);
    cpu_rotrnn_weights_bwd(&(RotWeightGrads){.w = c.w, .dloga = c.wl, .dangle = c.wa, .dBw = c.wB,
                                              .dCw = c.wC, .dP = dP, .dxi = dxi, .dgamma_log = grad[0],
                                              .dtheta = grad[1], .dB = grad[2], .dC = grad[3],
                                              .dCw2 = c.wC2, .dC2 = grad[4]});
    const char *tag = chain ? "rotrnn expm+weights" : "rotrnn_weights";
    char name[80];
    if (chain) {
        real *dM = tu_zeros(nP);
        cpu_orth_expm_bwd(dM, dP, M, NULL, H, n);
        snprintf(name, sizeof name, "%s dM", tag);
        fd_check(name, rot_w_loss, &c, M, dM, nP, 1000, &r);
        rt_free(dM);
    } else {
        snprintf(name, sizeof name, "%s dP", tag);
        fd_check(name, rot_w_loss, &c, P, dP, nP, 1000, &r);
    }
    real *xs[5] = {gl, th, B, Cm, C2};
    const char *names[5] = {"dgamma_log", "dtheta", "dB", "dC", "dC2"};
    for (int i = 0; i < 5; i++) {
        real *gi = diff(grad[i], pre[i], sizes[i]);
        snprintf(name, sizeof name, "%s %s (+=)", tag, names[i]);
        fd_check(name, rot_w_loss, &c, xs[i], gi, sizes[i], 1000, &r);
        FREE_ALL(gi, pre[i], grad[i]);
    }
    FREE_ALL(M, P, gl, th, B, Cm, xi, la, an, Bw, Cw, c.wl, c.wa, c.wB, c.wC, dP, dxi);
    FREE_ALL(C2, Cw2, c.wC2);
}

static void test_rotrnn_weights(void) { rotrnn_weights_case(0, 704); }
static void test_rotrnn_through_expm(void) { rotrnn_weights_case(1, 705); }


/* The nonlinear recurrence (docs/models.md §17), tanh or modReLU, over the segments; its step
 * form token by token against the forward. */
typedef struct {
    RnnArgs a;
    real *wo;
} RnnCtx;

static double rnn_loss(void *p) {
    RnnCtx *c = p;
    cpu_rnn_fwd(&c->a);
    return tu_dot(c->wo, c->a.h, c->a.s->ntok * c->a.n);
}

/* The backward from c's forward against finite differences: dz (overwritten), dW and the
 * modReLU bias (accumulated onto random values; tanh leaves the bias's gradient alone). */
static void rnn_grad_checks(RnnCtx *c, const char *tag, const char *sub, real *z, real *Wm, real *b, Rng *r) {
    int n = c->a.n;
    int64_t nz = c->a.s->ntok * n, nw = (int64_t)n * n;
    char name[80];
    cpu_rnn_fwd(&c->a);
    real *dz = garbage(r, nz), *preW = rand_nz(r, nw, 0.1, 1), *dW = tu_copy(preW, nw);
    real *preb = rand_nz(r, n, 0.1, 1), *db = tu_copy(preb, n);
    cpu_rnn_bwd(&(RnnGrads){.a = c->a, .dh = c->wo, .dz = dz, .dW = dW, .dbias = b ? db : NULL});
    snprintf(name, sizeof name, "rnn %s%s dz", tag, sub);
    mixer_check(name, rnn_loss, c, z, dz, nz, n, r);
    real *gW = diff(dW, preW, nw), *gb = diff(db, preb, n);
    snprintf(name, sizeof name, "rnn %s%s dW (+=)", tag, sub);
    fd_check(name, rnn_loss, c, Wm, gW, nw, 100, r);
    snprintf(name, sizeof name, b ? "rnn %s%s dbias (+=)" : "rnn %s%s leaves dbias", tag, sub);
    if (b)
        fd_check(name, rnn_loss, c, b, gb, n, 100, r);
    else
        check_equal(name, db, preb, n);
    FREE_ALL(dz, preW, dW, preb, db, gW, gb);
}

static void rnn_case(RnnAct act, const char *tag, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int n = 5;
    int64_t N = s->ntok, nz = N * n;
    real *z = tu_randn(&r, nz, 0.8), *wo = rand_nz(&r, nz, 0.05, 1.0), *h = tu_zeros(nz);
    real *Wm = tu_randn(&r, (int64_t)n * n, act == RNN_MODRELU ? 0.3 : 0.5), *b = act == RNN_MODRELU ? tu_rand(&r, n, -0.3, 0.2) : NULL;
    real *state = tu_zeros((int64_t)NSEG * n);
    RnnCtx c = {{.s = s, .n = n, .act = act, .W = Wm, .bias = b, .z = z, .h = h, .state = state}, wo};
    cpu_rnn_fwd(&c.a);
    /* the step op, one row per segment, reproduces h and the final states */
    real *hs = tu_zeros(nz), *st = tu_zeros((int64_t)NSEG * n), *hrow = tu_zeros((int64_t)NSEG * n);
    int32_t pos[NSEG];
    int64_t cu[NSEG + 1];
    for (int i = 0; i <= NSEG; i++) cu[i] = i;
    for (int t = 0; t < 130; t++) {
        for (int seg = 0; seg < NSEG; seg++) {
            if (t >= LENS[seg]) continue;
            Seqs one = {.ntok = 1, .nseg = 1, .cu = cu, .pos = pos};
            pos[0] = t;
            RnnArgs st1 = {.s = &one, .n = n, .act = act, .W = Wm, .bias = b, .z = z + (s->cu[seg] + t) * n,
                           .h = hrow + seg * n, .state = st + seg * n};
            cpu_rnn_step(&st1);
            memcpy(hs + (s->cu[seg] + t) * n, hrow + seg * n, sizeof(real) * (size_t)n);
        }
    }
    char name[80];
    snprintf(name, sizeof name, "rnn %s step = forward", tag);
    check_equal(name, hs, h, nz);
    snprintf(name, sizeof name, "rnn %s final state", tag);
    check_equal(name, st, state, (int64_t)NSEG * n);
    c.a.state = NULL;
    rnn_grad_checks(&c, tag, "", z, Wm, b, &r);
    /* carried initial states (docs/models.md §19): the gradients with h0 fixed */
    real *h0 = tu_randn(&r, (int64_t)NSEG * n, 0.5);
    c.a.h0 = h0;
    rnn_grad_checks(&c, tag, " h0", z, Wm, b, &r);
    FREE_ALL(z, wo, h, Wm, b, state, hs, st, hrow, h0);
    tu_seqs_free(&ts);
}

/* Carrying the state (docs/models.md §19): each segment run as two windows, the second from
 * the first's final state, equals the segment run whole (the second window's h and final
 * state), for the RNN (lstm = 0) and the LSTM (lstm = 1). */
static const int SPLIT_A[] = {35, 1, 16, 65}, SPLIT_B[] = {35, 2, 17, 65};

static void run_windows(int lstm, const Seqs *s, int n, const real *W, const real *b, const real *z, const real *h0,
                        real *h, real *state) {
    int64_t N = s->ntok;
    if (lstm) {
        real *q = tu_zeros(4 * N * n), *c = tu_zeros(N * n);
        cpu_lstm_fwd(&(LstmArgs){.s = s, .n = n, .W = W, .z = z, .gates = q, .c = c, .h = h, .state = state, .h0 = h0});
        FREE_ALL(q, c);
    } else {
        cpu_rnn_fwd(&(RnnArgs){.s = s, .n = n, .act = RNN_MODRELU, .W = W, .bias = b, .z = z, .h = h, .state = state,
                               .h0 = h0});
    }
}

static void carry_split_case(int lstm) {
    Rng r;
    rng_init(&r, 709 + (uint64_t)lstm, 0);
    int whole[NSEG], n = 4, zw = lstm ? 4 * n : n, sw = lstm ? 2 * n : n;
    for (int i = 0; i < NSEG; i++) whole[i] = SPLIT_A[i] + SPLIT_B[i];
    TestSeqs tw = tu_seqs(whole, NSEG), ta = tu_seqs(SPLIT_A, NSEG), tb = tu_seqs(SPLIT_B, NSEG);
    int64_t N = tw.s.ntok;
    real *W = tu_randn(&r, (int64_t)zw * n, 0.4), *b = tu_rand(&r, n, -0.3, 0.2), *z = tu_randn(&r, N * zw, 0.8);
    real *za = tu_zeros(ta.s.ntok * zw), *zb = tu_zeros(tb.s.ntok * zw), *hw = tu_zeros(N * n), *ha = tu_zeros(ta.s.ntok * n);
    real *hb = tu_zeros(tb.s.ntok * n), *hb_want = tu_zeros(tb.s.ntok * n);
    real *h0 = tu_randn(&r, (int64_t)NSEG * sw, 0.5), *sw_ = tu_zeros((int64_t)NSEG * sw), *sa = tu_zeros((int64_t)NSEG * sw);
    real *sb = tu_zeros((int64_t)NSEG * sw);
    for (int i = 0; i < NSEG; i++) {
        memcpy(za + ta.s.cu[i] * zw, z + tw.s.cu[i] * zw, sizeof(real) * (size_t)(SPLIT_A[i] * zw));
        memcpy(zb + tb.s.cu[i] * zw, z + (tw.s.cu[i] + SPLIT_A[i]) * zw, sizeof(real) * (size_t)(SPLIT_B[i] * zw));
    }
    run_windows(lstm, &tw.s, n, W, b, z, h0, hw, sw_);
    run_windows(lstm, &ta.s, n, W, b, za, h0, ha, sa);
    run_windows(lstm, &tb.s, n, W, b, zb, sa, hb, sb);
    for (int i = 0; i < NSEG; i++)
        memcpy(hb_want + tb.s.cu[i] * n, hw + (tw.s.cu[i] + SPLIT_A[i]) * n, sizeof(real) * (size_t)(SPLIT_B[i] * n));
    check_equal(lstm ? "lstm carried window = whole" : "rnn carried window = whole", hb, hb_want, tb.s.ntok * n);
    check_equal(lstm ? "lstm carried final state" : "rnn carried final state", sb, sw_, (int64_t)NSEG * sw);
    FREE_ALL(W, b, z, za, zb, hw, ha, hb, hb_want, h0, sw_, sa, sb);
    tu_seqs_free(&tw);
    tu_seqs_free(&ta);
    tu_seqs_free(&tb);
}

static void test_carry_split(void) {
    carry_split_case(0);
    carry_split_case(1);
}

static void test_rnn_tanh(void) { rnn_case(RNN_TANH, "tanh", 706); }
static void test_rnn_modrelu(void) { rnn_case(RNN_MODRELU, "modrelu", 707); }

/* The LSTM recurrence (docs/models.md §18); its step form against the forward. */
typedef struct {
    LstmArgs a;
    real *wo;
} LstmCtx;

static double lstm_loss(void *p) {
    LstmCtx *c = p;
    cpu_lstm_fwd(&c->a);
    return tu_dot(c->wo, c->a.h, c->a.s->ntok * c->a.n);
}

static void test_lstm(void) {
    Rng r;
    rng_init(&r, 708, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int n = 3;
    int64_t N = s->ntok, nh = N * n, nz = 4 * nh, nw = 4 * (int64_t)n * n;
    real *z = tu_randn(&r, nz, 1.0), *wo = rand_nz(&r, nh, 0.05, 1.0), *h = tu_zeros(nh);
    real *q = tu_zeros(nz), *cc = tu_zeros(nh), *Wm = tu_randn(&r, nw, 0.6), *state = tu_zeros((int64_t)NSEG * 2 * n);
    LstmCtx c = {{.s = s, .n = n, .W = Wm, .z = z, .gates = q, .c = cc, .h = h, .state = state}, wo};
    cpu_lstm_fwd(&c.a);
    real *hs = tu_zeros(nh), *st = tu_zeros((int64_t)NSEG * 2 * n);
    real *hrow = tu_zeros(n), *crow = tu_zeros(n), *qrow = tu_zeros(4 * n);
    int32_t pos[1];
    int64_t cu[2] = {0, 1};
    for (int seg = 0; seg < NSEG; seg++)
        for (int t = 0; t < LENS[seg]; t++) {
            Seqs one = {.ntok = 1, .nseg = 1, .cu = cu, .pos = pos};
            pos[0] = t;
            LstmArgs a1 = {.s = &one, .n = n, .W = Wm, .z = z + (s->cu[seg] + t) * 4 * n, .gates = qrow, .c = crow,
                           .h = hrow, .state = st + seg * 2 * n};
            cpu_lstm_step(&a1);
            memcpy(hs + (s->cu[seg] + t) * n, hrow, sizeof(real) * (size_t)n);
        }
    check_equal("lstm step = forward", hs, h, nh);
    check_equal("lstm final state", st, state, (int64_t)NSEG * 2 * n);
    c.a.state = NULL;
    real *dz = garbage(&r, nz), *pre = rand_nz(&r, nw, 0.1, 1), *dW = tu_copy(pre, nw);
    cpu_lstm_bwd(&(LstmGrads){.a = c.a, .dh = wo, .dz = dz, .dW = dW});
    mixer_check("lstm dz", lstm_loss, &c, z, dz, nz, 4 * n, &r);
    real *gW = diff(dW, pre, nw);
    fd_check("lstm dW (+=)", lstm_loss, &c, Wm, gW, nw, 100, &r);
    /* carried initial states (docs/models.md §19): the gradients with (h0, c0) fixed */
    real *h0 = tu_randn(&r, (int64_t)NSEG * 2 * n, 0.5), *dW0 = tu_copy(pre, nw);
    c.a.h0 = h0;
    cpu_lstm_fwd(&c.a);
    cpu_lstm_bwd(&(LstmGrads){.a = c.a, .dh = wo, .dz = dz, .dW = dW0});
    mixer_check("lstm h0 dz", lstm_loss, &c, z, dz, nz, 4 * n, &r);
    real *gW0 = diff(dW0, pre, nw);
    fd_check("lstm h0 dW (+=)", lstm_loss, &c, Wm, gW0, nw, 100, &r);
    FREE_ALL(z, wo, h, q, cc, Wm, state, hs, st, hrow, crow, qrow, dz, pre, dW, gW, h0, dW0, gW0);
    tu_seqs_free(&ts);
}

/* The nnRNN's Schur form V = P (Lambda + T) P^T alone (any P), and chained with P = expm(M -
 * M^T): L = W . V. */
typedef struct {
    NnrnnWeights w;
    real *M, *wv;
    int chain;
} NnWCtx;

static void nn_w_forward(NnWCtx *c) {
    if (c->chain) cpu_orth_expm_fwd((void *)c->w.P, c->M, NULL, 1, c->w.n);
    cpu_nnrnn_weights_fwd(&c->w);
}

static double nn_w_loss(void *p) {
    NnWCtx *c = p;
    nn_w_forward(c);
    return tu_dot(c->wv, c->w.V, (int64_t)c->w.n * c->w.n);
}

static void nnrnn_weights_case(int chain, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    int n = 6;
    int64_t nn = (int64_t)n * n;
    real *M = tu_randn(&r, nn, 0.7), *P = rand_nz(&r, nn, 0.1, 1), *gm = tu_rand(&r, n / 2, 0.5, 1.5);
    real *th = tu_rand(&r, n / 2, 0, 6.28), *T = tu_randn(&r, nn, 0.5), *K = tu_zeros(nn), *V = tu_zeros(nn);
    real *work = tu_zeros(2 * nn);
    NnWCtx c = {{n, P, gm, th, T, K, V, work}, M, rand_nz(&r, nn, 0.1, 1), chain};
    nn_w_loss(&c);
    if (!chain) { /* V's value against the product written out */
        double worst = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int a = 0; a < n; a++)
                    for (int b = 0; b < n; b++) {
                        double k = b < a ? T[a * n + b] : 0;
                        if (a / 2 == b / 2) {
                            double ang = th[a / 2];
                            k += gm[a / 2] * (a == b ? cos(ang) : a < b ? -sin(ang) : sin(ang));
                        }
                        acc += P[i * n + a] * k * P[j * n + b];
                    }
                worst = fmax(worst, fabs(acc - V[i * n + j]));
            }
        printf("    %-40s abs err %.2e\n", "nnrnn_weights V", worst);
        CHECK(worst < 1e-12);
    }
    real *dP = garbage(&r, nn);
    real *pre[3] = {rand_nz(&r, n / 2, 0.1, 1), rand_nz(&r, n / 2, 0.1, 1), rand_nz(&r, nn, 0.1, 1)};
    int64_t sizes[3] = {n / 2, n / 2, nn};
    real *grad[3];
    for (int i = 0; i < 3; i++) grad[i] = tu_copy(pre[i], sizes[i]);
    cpu_nnrnn_weights_bwd(&(NnrnnWeightGrads){.w = c.w, .dV = c.wv, .dP = dP, .dgamma = grad[0],
                                               .dtheta = grad[1], .dT = grad[2]});
    const char *tag = chain ? "nnrnn expm+weights" : "nnrnn_weights";
    char name[80];
    if (chain) {
        real *dM = tu_zeros(nn);
        cpu_orth_expm_bwd(dM, dP, M, NULL, 1, n);
        snprintf(name, sizeof name, "%s dM", tag);
        fd_check(name, nn_w_loss, &c, M, dM, nn, 1000, &r);
        rt_free(dM);
    } else {
        snprintf(name, sizeof name, "%s dP", tag);
        fd_check(name, nn_w_loss, &c, P, dP, nn, 1000, &r);
    }
    real *xs[3] = {gm, th, T};
    const char *names[3] = {"dgamma", "dtheta", "dT"};
    for (int i = 0; i < 3; i++) {
        real *gi = diff(grad[i], pre[i], sizes[i]);
        snprintf(name, sizeof name, "%s %s (+=)", tag, names[i]);
        fd_check(name, nn_w_loss, &c, xs[i], gi, sizes[i], 1000, &r);
        FREE_ALL(gi, pre[i], grad[i]);
    }
    FREE_ALL(M, P, gm, th, T, K, V, work, c.wv, dP);
}

static void test_nnrnn_weights(void) { nnrnn_weights_case(0, 709); }
static void test_nnrnn_through_expm(void) { nnrnn_weights_case(1, 710); }

/* The whole nnRNN cell through its parameters: V from (M, gamma, theta, T), then the modReLU
 * recurrence; L = wo . h. */
typedef struct {
    NnWCtx w;
    RnnArgs a;
    real *wo;
} NnCellCtx;

static double nn_cell_loss(void *p) {
    NnCellCtx *c = p;
    nn_w_forward(&c->w);
    cpu_rnn_fwd(&c->a);
    return tu_dot(c->wo, c->a.h, c->a.s->ntok * c->a.n);
}

static void test_nnrnn_cell(void) {
    Rng r;
    rng_init(&r, 711, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int n = 4;
    int64_t nn = (int64_t)n * n, nz = s->ntok * n;
    real *M = tu_randn(&r, nn, 0.7), *P = tu_zeros(nn), *gm = tu_rand(&r, n / 2, 0.6, 0.95);
    real *th = tu_rand(&r, n / 2, 0, 6.28), *T = tu_randn(&r, nn, 0.3), *K = tu_zeros(nn), *V = tu_zeros(nn);
    real *work = tu_zeros(2 * nn), *z = tu_randn(&r, nz, 0.8), *h = tu_zeros(nz), *b = tu_rand(&r, n, -0.2, 0.1);
    NnCellCtx c = {{{n, P, gm, th, T, K, V, work}, M, NULL, 1},
                   {.s = s, .n = n, .act = RNN_MODRELU, .W = V, .bias = b, .z = z, .h = h},
                   rand_nz(&r, nz, 0.05, 1)};
    nn_cell_loss(&c);
    real *dz = garbage(&r, nz), *dV = tu_zeros(nn), *db = tu_zeros(n), *dP = garbage(&r, nn);
    real *dgm = tu_zeros(n / 2), *dth = tu_zeros(n / 2), *dT = tu_zeros(nn), *dM = tu_zeros(nn);
    cpu_rnn_bwd(&(RnnGrads){.a = c.a, .dh = c.wo, .dz = dz, .dW = dV, .dbias = db});
    cpu_nnrnn_weights_bwd(&(NnrnnWeightGrads){.w = c.w.w, .dV = dV, .dP = dP, .dgamma = dgm, .dtheta = dth, .dT = dT});
    cpu_orth_expm_bwd(dM, dP, M, NULL, 1, n);
    fd_check("nnrnn cell dM", nn_cell_loss, &c, M, dM, nn, 1000, &r);
    fd_check("nnrnn cell dgamma", nn_cell_loss, &c, gm, dgm, n / 2, 100, &r);
    fd_check("nnrnn cell dtheta", nn_cell_loss, &c, th, dth, n / 2, 100, &r);
    fd_check("nnrnn cell dT", nn_cell_loss, &c, T, dT, nn, 1000, &r);
    fd_check("nnrnn cell dbias", nn_cell_loss, &c, b, db, n, 100, &r);
    FREE_ALL(M, P, gm, th, T, K, V, work, z, h, b, c.wo, dz, dV, db, dP, dgm, dth, dT, dM);
    tu_seqs_free(&ts);
}

/* coef sum (w - target)^2 and its gradient added to g. */
typedef struct {
    real *w;
    int64_t n;
} PenCtx;

static double pen_loss(void *p) {
    PenCtx *c = p;
    return cpu_l2_penalty(NULL, c->w, c->n, 1.0, 0.3);
}

static void test_l2_penalty(void) {
    Rng r;
    rng_init(&r, 712, 0);
    int64_t n = 9;
    real *w = tu_randn(&r, n, 1), *pre = rand_nz(&r, n, 0.1, 1), *g = tu_copy(pre, n);
    PenCtx c = {w, n};
    double ref = 0;
    for (int64_t i = 0; i < n; i++) ref += 0.3 * (w[i] - 1) * (w[i] - 1);
    double v = cpu_l2_penalty(g, w, n, 1.0, 0.3);
    printf("    %-40s %.12g vs %.12g\n", "l2_penalty value", v, ref);
    CHECK_CLOSE(v, ref, EXACT_TOL);
    real *gd = diff(g, pre, n);
    fd_check("l2_penalty grad (+=)", pen_loss, &c, w, gd, n, 100, &r);
    FREE_ALL(w, pre, g, gd);
}

/* ---------------------------------------------------------- loss ---- */

typedef struct {
    real *logits, *work;
    const int32_t *labels;
    int64_t N;
    int V;
} CeCtx;

static double ce_loss(void *p) {
    CeCtx *c = p;
    memcpy(c->work, c->logits, sizeof(real) * (size_t)(c->N * c->V));
    return cpu_cross_entropy(c->work, c->labels, c->N, c->V, 0.0f);
}

static void test_cross_entropy(void) {
    Rng r;
    rng_init(&r, 701, 0);
    int64_t N = 11;
    int V = 13;
    int64_t n = N * V;
    int32_t labels[11];
    for (int64_t i = 0; i < N; i++) labels[i] = (int32_t)rng_below(&r, (uint64_t)V);
    labels[2] = labels[7] = -100;
    labels[10] = V - 1;
    real *logits = rand_nz(&r, n, 0.05, 4.0), *work = tu_zeros(n);
    CeCtx c = {logits, work, labels, N, V};
    /* loss value against a direct log-softmax */
    double ref = 0;
    for (int64_t i = 0; i < N; i++) {
        if (labels[i] == -100) continue;
        double se = 0;
        for (int j = 0; j < V; j++) se += exp((double)logits[i * V + j]);
        ref -= (double)logits[i * V + labels[i]] - log(se);
    }
    double l0 = ce_loss(&c);
    printf("    %-40s %.12g vs %.12g\n", "cross_entropy loss (grad_scale 0)", l0, ref);
    CHECK_CLOSE(l0, ref, EXACT_TOL);
    check_equal("cross_entropy grad_scale 0 keeps logits", work, logits, n);
    float gs = 0.37f;
    real *grad = tu_copy(logits, n);
    double l1 = cpu_cross_entropy(grad, labels, N, V, gs);
    printf("    %-40s %.12g vs %.12g\n", "cross_entropy loss (grad_scale 0.37)", l1, ref);
    CHECK_CLOSE(l1, ref, EXACT_TOL);
    int ignored_zero = 1;
    for (int j = 0; j < V; j++) ignored_zero &= grad[2 * V + j] == 0 && grad[7 * V + j] == 0;
    CHECK_MSG(ignored_zero, "cross_entropy: rows with label -100 must have zero gradient");
    for (int64_t i = 0; i < n; i++) grad[i] /= (real)gs;
    fd_check("cross_entropy dlogits / grad_scale", ce_loss, &c, logits, grad, n, 1000, &r);
    FREE_ALL(logits, work, grad);
}

/* ---------------------------------------------------------- optimizer ---- */

/* One torch.optim.AdamW step in double: p *= 1 - lr wd; m, v EMAs; bias-corrected update. */
static void adamw_ref(double *w, double *m, double *v, const real *g, int64_t n, double lr,
                      double b1, double b2, double eps, double wd, int64_t t) {
    double bc1 = 1 - pow(b1, (double)t), bc2 = 1 - pow(b2, (double)t);
    for (int64_t i = 0; i < n; i++) {
        double gi = (double)g[i];
        w[i] *= 1 - lr * wd;
        m[i] = b1 * m[i] + (1 - b1) * gi;
        v[i] = b2 * v[i] + (1 - b2) * gi * gi;
        double denom = sqrt(v[i]) / sqrt(bc2) + eps;
        w[i] -= lr / bc1 * m[i] / denom;
    }
}

static void adamw_compare(const char *what, const real *w, const real *m, const real *v,
                          const double *rw, const double *rm, const double *rv, int64_t n) {
    real *a = tu_zeros(n), *b = tu_zeros(n), *cc = tu_zeros(n);
    for (int64_t i = 0; i < n; i++) a[i] = (real)rw[i], b[i] = (real)rm[i], cc[i] = (real)rv[i];
    char name[96];
    snprintf(name, sizeof name, "%s w", what);
    check_equal(name, w, a, n);
    snprintf(name, sizeof name, "%s m", what);
    check_equal(name, m, b, n);
    snprintf(name, sizeof name, "%s v", what);
    check_equal(name, v, cc, n);
    FREE_ALL(a, b, cc);
}

static void test_adamw(void) {
    Rng r;
    rng_init(&r, 801, 0);
    int64_t n = 53;
    /* a large lr and weight decay so that every term of the update is visible */
    float lr = 0.01f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
    real *w = rand_nz(&r, n, 0.1, 2.0), *m = tu_zeros(n), *v = tu_zeros(n);
    double *rw = rt_malloc(sizeof(double) * (size_t)n), *rm = rt_malloc(sizeof(double) * (size_t)n),
           *rv = rt_malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) rw[i] = (double)w[i], rm[i] = 0, rv[i] = 0;
    /* steps 1..5 from zero moments, checking t = 1 and t = 5 (and the ones between) */
    for (int64_t t = 1; t <= 5; t++) {
        real *g = rand_nz(&r, n, 0.001, 1.0);
        real *copy = tu_rand(&r, n, -1.0, 1.0); /* garbage, overwritten */
        cpu_adamw(w, copy, m, v, g, n, lr, b1, b2, eps, wd, t);
        adamw_ref(rw, rm, rv, g, n, lr, b1, b2, eps, wd, t);
        char what[64];
        snprintf(what, sizeof what, "adamw step t=%d:", (int)t);
        adamw_compare(what, w, m, v, rw, rm, rv, n);
        for (int64_t i = 0; i < n; i++) CHECK_MSG(copy[i] == w[i], "adamw copy [%lld]", (long long)i);
        FREE_ALL(g, copy);
    }
    /* a single t = 5 step from arbitrary moments */
    real *m5 = rand_nz(&r, n, 0.01, 0.5), *v5 = tu_rand(&r, n, 0.01, 0.5), *g = rand_nz(&r, n, 0.001, 1.0);
    for (int64_t i = 0; i < n; i++) rw[i] = (double)w[i], rm[i] = (double)m5[i], rv[i] = (double)v5[i];
    cpu_adamw(w, NULL, m5, v5, g, n, lr, b1, b2, eps, wd, 5);
    adamw_ref(rw, rm, rv, g, n, lr, b1, b2, eps, wd, 5);
    adamw_compare("adamw t=5 from given moments:", w, m5, v5, rw, rm, rv, n);
    /* weight decay alone: zero gradient, zero moments -> w *= 1 - lr wd exactly */
    real *z = tu_zeros(n), *mz = tu_zeros(n), *vz = tu_zeros(n), *wz = tu_copy(w, n);
    for (int64_t i = 0; i < n; i++) rw[i] = (double)w[i] * (1 - (double)lr * (double)wd), rm[i] = 0, rv[i] = 0;
    cpu_adamw(wz, NULL, mz, vz, z, n, lr, b1, b2, eps, wd, 1);
    adamw_compare("adamw zero grad (decay only):", wz, mz, vz, rw, rm, rv, n);
    FREE_ALL(w, m, v, m5, v5, g, z, mz, vz, wz);
    rt_free(rw);
    rt_free(rm);
    rt_free(rv);
}

/* Five torch.optim.RMSprop steps (weight decay added to the gradient, eps outside the root)
 * against the same in double, from a zero square average and from a given one; the [act]
 * copy equals the weights. */
static void test_rmsprop_update(void) {
    Rng r;
    rng_init(&r, 803, 0);
    int64_t n = 53;
    double lr = 0.01, alpha = 0.9, eps = 1e-8, wd = 0.1;
    real *w = rand_nz(&r, n, 0.1, 2.0), *sq = tu_zeros(n);
    double *rw = rt_malloc(sizeof(double) * (size_t)n), *rs = rt_calloc((size_t)n, sizeof(double));
    for (int64_t i = 0; i < n; i++) rw[i] = (double)w[i];
    for (int t = 1; t <= 6; t++) {
        real *g = rand_nz(&r, n, 0.001, 1.0), *copy = tu_rand(&r, n, -1.0, 1.0);
        if (t == 6) /* a given square average */
            for (int64_t i = 0; i < n; i++) rs[i] = (double)(sq[i] = (real)(0.01 + 0.3 * rng_uniform(&r)));
        cpu_rmsprop_update(w, copy, sq, g, n, lr, alpha, eps, wd);
        real *ew = tu_zeros(n), *es = tu_zeros(n);
        for (int64_t i = 0; i < n; i++) {
            double gi = (double)g[i] + wd * rw[i];
            rs[i] = alpha * rs[i] + (1 - alpha) * gi * gi;
            rw[i] -= lr * gi / (sqrt(rs[i]) + eps);
            ew[i] = (real)rw[i];
            es[i] = (real)rs[i];
            CHECK_MSG(copy[i] == w[i], "rmsprop copy [%lld]", (long long)i);
        }
        char what[64];
        snprintf(what, sizeof what, "rmsprop step %d: w", t);
        check_equal(what, w, ew, n);
        snprintf(what, sizeof what, "rmsprop step %d: square_avg", t);
        check_equal(what, sq, es, n);
        FREE_ALL(g, copy, ew, es);
    }
    FREE_ALL(w, sq);
    rt_free(rw);
    rt_free(rs);
}

static void test_sumsq_scale(void) {
    Rng r;
    rng_init(&r, 802, 0);
    int64_t n = 1001;
    real *x = rand_nz(&r, n, 0.05, 3.0);
    double ref = 0;
    for (int64_t i = 0; i < n; i++) ref += (double)x[i] * (double)x[i];
    double got = cpu_sumsq(x, n);
    printf("    %-40s %.12g vs %.12g\n", "sumsq value", got, ref);
    CHECK_CLOSE(got, ref, EXACT_TOL);
    real *y = tu_copy(x, n), *yr = tu_zeros(n);
    float sc = 0.3f;
    for (int64_t i = 0; i < n; i++) yr[i] = x[i] * (real)sc;
    cpu_scale(y, n, sc);
    check_equal("scale value", y, yr, n);
    FREE_ALL(x, y, yr);
}

int main(int argc, char **argv) {
    static const TestCase tests[] = {
        {"matmul_bias", test_matmul_bias},
        {"matmul_nobias", test_matmul_nobias},
        {"add", test_add},
        {"embedding", test_embedding},
        {"rmsnorm_g1", test_rmsnorm_g1},
        {"rmsnorm_shared", test_rmsnorm_shared},
        {"rmsnorm_per_group", test_rmsnorm_per_group},
        {"l2norm", test_l2norm},
        {"gate_mul_silu", test_gate_mul_silu},
        {"gate_mul_sigmoid", test_gate_mul_sigmoid},
        {"silu", test_silu},
        {"gelu", test_gelu},
        {"dropout", test_dropout},
        {"segment_reverse", test_segment_reverse},
        {"relu", test_relu},
        {"pair_nli", test_pair_nli},
        {"logsigmoid_16", test_logsigmoid_16},
        {"logsigmoid_1", test_logsigmoid_1},
        {"sigmoid", test_sigmoid},
        {"decay_gates_gdn", test_decay_gates_gdn},
        {"conv_w_none", test_conv_w_none},
        {"conv_w_silu", test_conv_w_silu},
        {"conv_diff_none", test_conv_diff_none},
        {"conv_diff_silu", test_conv_diff_silu},
        {"conv_bias_none", test_conv_bias_none},
        {"conv_bias_silu", test_conv_bias_silu},
        {"shift", test_shift},
        {"revcumsum", test_revcumsum},
        {"rope_angles", test_rope_angles},
        {"rotate_shared", test_rotate_shared},
        {"rotate_per_head", test_rotate_per_head},
        {"selrope_plain", test_selrope_plain},
        {"selrope_bias", test_selrope_bias},
        {"selrope_gate", test_selrope_gate},
        {"selrope_bias_gate", test_selrope_bias_gate},
        {"selrope_fused_conv_silu", test_selrope_fused_conv_silu},
        {"selrope_fused_conv_none", test_selrope_fused_conv_none},
        {"selrope_fused_diff", test_selrope_fused_diff},
        {"selrope_fused_diff_plain", test_selrope_fused_diff_plain},
        {"weightnorm", test_weightnorm},
        {"head_matmul", test_head_matmul},
        {"gla", test_gla},
        {"gla_per_head", test_gla_per_head},
        {"decay_gates_mamba2", test_decay_gates_mamba2},
        {"head_scale", test_head_scale},
        {"head_skip", test_head_skip},
        {"group_bcast", test_group_bcast},
        {"gdn", test_gdn},
        {"deltanet", test_deltanet},
        {"fox", test_fox},
        {"fox_no_gate", test_fox_no_gate},
        {"cscan", test_cscan},
        {"lru_weights", test_lru_weights},
        {"orth_expm", test_orth_expm},
        {"rotrnn_weights", test_rotrnn_weights},
        {"rotrnn_through_expm", test_rotrnn_through_expm},
        {"rnn_tanh", test_rnn_tanh},
        {"rnn_modrelu", test_rnn_modrelu},
        {"lstm", test_lstm},
        {"carry_split", test_carry_split},
        {"nnrnn_weights", test_nnrnn_weights},
        {"nnrnn_through_expm", test_nnrnn_through_expm},
        {"nnrnn_cell", test_nnrnn_cell},
        {"l2_penalty", test_l2_penalty},
        {"cross_entropy", test_cross_entropy},
        {"adamw", test_adamw},
        {"rmsprop_update", test_rmsprop_update},
        {"sumsq_scale", test_sumsq_scale},
    };
    return th_run(tests, sizeof(tests) / sizeof(tests[0]), argc, argv);
}
