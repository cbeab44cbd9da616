/* Mixer kernel benchmark on the GPU: rotor's CUDA ops for GLA, Gated DeltaNet and FoX and
 * the fused Selective RoPE, at the shapes of the 370M configs (B = 4 rows of T = 4096 tokens,
 * one segment per row), forward and backward timed apart. bench/fla_mixers.py times
 * flash-linear-attention's Triton kernels on the same shapes; scripts/gpu_check.sh (part
 * "bench") runs both in one session and prints the ratios.
 *   gpu_mixers [--reps N]
 * Each time is the median over N repetitions (default 20, after warm-up) of a few calls
 * between two be->synchronize(), by the wall clock. One line per op:
 *   op=<name> shape=<B>x<T>x<H>x<K>x<V> fwd_ms=<x> bwd_ms=<y>
 * (Selective RoPE: K = V = the head dim 2P). Prints "skipped: no GPU" and exits 77 without
 * one; exits 1 if an op writes a non-finite value. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "util/error.h"
#include "util/rng.h"
#include "util/timer.h"

enum { ROWS = 4, SEQ_LEN = 4096, WARMUP = 3, CALLS = 5, MAX_REPS = 1000 };
#define TEMP_THETA 500000.0 /* the configs' temp_theta (docs/models.md §5 step 7, RoPE-type temperatures) */

static const Backend *be;
static Rng rng;
static Seqs seqs;
static int reps = 20;

/* ---- device buffers, released together after each op ---- */

static void *bufs[64];
static int nbufs;

static void *dev(size_t bytes) {
    RT_ASSERT(nbufs < 64);
    return bufs[nbufs++] = be->alloc(bytes);
}

static void release_all(void) {
    be->synchronize();
    for (int i = 0; i < nbufs; i++) be->release(bufs[i]);
    nbufs = 0;
}

/* [f32] buffer of host values. */
static void *f32_from(const float *x, int64_t n) {
    void *d = dev(sizeof(float) * (size_t)n);
    be->upload(d, x, sizeof(float) * (size_t)n);
    return d;
}

static float *host_uniform(int64_t n, double lo, double hi) {
    float *x = rt_malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * rng_uniform(&rng));
    return x;
}

static void *f32_uniform(int64_t n, double lo, double hi) {
    float *x = host_uniform(n, lo, hi);
    void *d = f32_from(x, n);
    rt_free(x);
    return d;
}

/* [act] (bf16) buffer of host fp32 values (freed), converted on the device. */
static void *act_from(float *x, int64_t n) {
    void *tmp = be->alloc(sizeof(float) * (size_t)n), *d = dev(be->act_size * (size_t)n);
    be->upload(tmp, x, sizeof(float) * (size_t)n);
    be->to_act(d, tmp, n);
    be->synchronize();
    be->release(tmp);
    rt_free(x);
    return d;
}

static void *act_uniform(int64_t n, double lo, double hi) {
    return act_from(host_uniform(n, lo, hi), n);
}

/* standard normal values */
static void *act_normal(int64_t n) {
    float *x = rt_malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)rng_normal(&rng);
    return act_from(x, n);
}

static void *act_out(int64_t n) { return dev(be->act_size * (size_t)n); }
static void *f32_out(int64_t n) { return dev(sizeof(float) * (size_t)n); }

/* Exits 1 naming the op and the tensor if a bf16 buffer holds an Inf or NaN (exponent
 * bits all ones): a time measured on broken output is no benchmark. */
static void check_finite(const char *op, const char *what, const void *d, int64_t n) {
    uint16_t *b = rt_malloc(2 * (size_t)n);
    be->download(b, d, 2 * (size_t)n);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += (b[i] & 0x7f80u) == 0x7f80u;
    rt_free(b);
    if (bad) {
        printf("FAIL %s: %lld non-finite values in %s\n", op, (long long)bad, what);
        exit(1);
    }
}

/* ---- timing ---- */

typedef struct {
    int H, K, V, P;
    double scale;
    /* inputs and forward outputs (the mixers' o, states, lse; Selective RoPE's qo, ko, Phi) */
    void *q, *k, *v, *g, *beta, *o, *states, *lse;
    void *phi_raw, *conv_w, *gate, *temp, *qo, *ko, *Phi;
    /* backward inputs (dout; dqo, dko) and outputs */
    void *dout, *dqo, *dko, *dq, *dk, *dv, *dg, *dbeta, *dphi, *dconv_w, *dgate;
} Op;

typedef void (*OpFn)(const Op *);

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over reps of the mean time of CALLS back-to-back calls, in ms. */
static double time_ms(OpFn fn, const Op *op) {
    double t[MAX_REPS];
    for (int i = 0; i < WARMUP; i++) fn(op);
    for (int r = 0; r < reps; r++) {
        be->synchronize();
        double t0 = rt_now();
        for (int i = 0; i < CALLS; i++) fn(op);
        be->synchronize();
        t[r] = 1e3 * (rt_now() - t0) / CALLS;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    return reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
}

static void report(const char *name, const Op *op, double fwd, double bwd) {
    printf("op=%s shape=%dx%dx%dx%dx%d fwd_ms=%.4f bwd_ms=%.4f\n", name, ROWS, SEQ_LEN, op->H,
           op->K, op->V, fwd, bwd);
    fflush(stdout);
}

/* ---- GLA (docs/models.md §2): log-space gates per key channel ---- */

static void gla_f(const Op *p) {
    be->gla_fwd(&(LinAttnArgs){.s = &seqs, .H = p->H, .K = p->K, .V = p->V, .scale = p->scale,
                               .q = p->q, .k = p->k, .v = p->v, .g = p->g, .o = p->o,
                               .states = p->states});
}
static void gla_b(const Op *p) {
    be->gla_bwd(&(LinAttnGrads){
        .a = {.s = &seqs, .H = p->H, .K = p->K, .V = p->V, .scale = p->scale, .q = p->q,
              .k = p->k, .v = p->v, .g = p->g, .states = p->states},
        .dout = p->dout, .dq = p->dq, .dk = p->dk, .dv = p->dv, .dg = p->dg});
}

static void bench_gla(int H, int K, int V) {
    int64_t N = seqs.ntok, nk = N * H * K, nv = N * H * V;
    Op p = {.H = H, .K = K, .V = V, .scale = 1.0 / sqrt((double)K)};
    p.q = act_normal(nk), p.k = act_normal(nk), p.v = act_normal(nv);
    p.g = f32_uniform(nk, -0.1, -0.001);
    p.o = act_out(nv), p.states = f32_out(chunk_states_size(&seqs, H, K, V));
    p.dout = act_normal(nv);
    p.dq = act_out(nk), p.dk = act_out(nk), p.dv = act_out(nv), p.dg = f32_out(nk);
    double fwd = time_ms(gla_f, &p), bwd = time_ms(gla_b, &p);
    check_finite("gla", "o", p.o, nv);
    check_finite("gla", "dq", p.dq, nk);
    report("gla", &p, fwd, bwd);
    release_all();
}

/* ---- Gated DeltaNet (docs/models.md §3): q, k L2-normalised per head (as the mixer does before
 * gdn_fwd), beta in (0, 1) and a log decay g < 0 per head ---- */

static void gdn_f(const Op *p) {
    be->gdn_fwd(&(LinAttnArgs){.s = &seqs, .H = p->H, .K = p->K, .V = p->V, .scale = p->scale,
                               .q = p->q, .k = p->k, .v = p->v, .g = p->g, .beta = p->beta,
                               .o = p->o, .states = p->states});
}
static void gdn_b(const Op *p) {
    be->gdn_bwd(&(LinAttnGrads){
        .a = {.s = &seqs, .H = p->H, .K = p->K, .V = p->V, .scale = p->scale, .q = p->q,
              .k = p->k, .v = p->v, .g = p->g, .beta = p->beta, .states = p->states},
        .dout = p->dout, .dq = p->dq, .dk = p->dk, .dv = p->dv, .dg = p->dg, .dbeta = p->dbeta});
}

static void bench_gdn(int H, int K, int V) {
    int64_t N = seqs.ntok, nk = N * H * K, nv = N * H * V, nh = N * H;
    Op p = {.H = H, .K = K, .V = V, .scale = 1.0 / sqrt((double)K)};
    void *qraw = act_normal(nk), *kraw = act_normal(nk), *rnorm = f32_out(nh);
    p.q = act_out(nk), p.k = act_out(nk);
    be->l2norm_fwd(p.q, rnorm, qraw, N, H, K, 1e-6);
    be->l2norm_fwd(p.k, rnorm, kraw, N, H, K, 1e-6);
    p.v = act_normal(nv);
    p.beta = f32_uniform(nh, 0.05, 0.95), p.g = f32_uniform(nh, -0.5, -0.001);
    p.o = act_out(nv), p.states = f32_out(chunk_states_size(&seqs, H, K, V));
    p.dout = act_normal(nv);
    p.dq = act_out(nk), p.dk = act_out(nk), p.dv = act_out(nv);
    p.dbeta = f32_out(nh), p.dg = f32_out(nh);
    double fwd = time_ms(gdn_f, &p), bwd = time_ms(gdn_b, &p);
    check_finite("gdn", "o", p.o, nv);
    check_finite("gdn", "dq", p.dq, nk);
    report("gdn", &p, fwd, bwd);
    release_all();
}

/* ---- FoX (docs/models.md §4): log forget gates per head, near 0 ---- */

static void fox_f(const Op *p) {
    be->fox_fwd(&(AttnArgs){.s = &seqs, .H = p->H, .D = p->K, .scale = p->scale, .q = p->q,
                            .k = p->k, .v = p->v, .logf = p->g, .o = p->o, .lse = p->lse});
}
static void fox_b(const Op *p) {
    be->fox_bwd(&(AttnGrads){
        .a = {.s = &seqs, .H = p->H, .D = p->K, .scale = p->scale, .q = p->q, .k = p->k,
              .v = p->v, .logf = p->g, .o = p->o, .lse = p->lse},
        .dout = p->dout, .dq = p->dq, .dk = p->dk, .dv = p->dv, .dlogf = p->dg});
}

static void bench_fox(int H, int D) {
    int64_t N = seqs.ntok, nx = N * H * D, nh = N * H;
    Op p = {.H = H, .K = D, .V = D, .scale = 1.0 / sqrt((double)D)};
    p.q = act_normal(nx), p.k = act_normal(nx), p.v = act_normal(nx);
    p.g = f32_uniform(nh, -0.1, -0.001);
    p.o = act_out(nx), p.lse = f32_out(nh);
    p.dout = act_normal(nx);
    p.dq = act_out(nx), p.dk = act_out(nx), p.dv = act_out(nx), p.dg = f32_out(nh);
    double fwd = time_ms(fox_f, &p), bwd = time_ms(fox_b, &p);
    check_finite("fox", "o", p.o, nx);
    check_finite("fox", "dq", p.dq, nx);
    report("fox", &p, fwd, bwd);
    release_all();
}

/* ---- Selective RoPE (docs/models.md §5 steps 3-8) as the 370M configs use it: angle conv with
 * weight and SiLU, no bias, phase gate, frozen RoPE-type temperatures (no dtemp) ---- */

static void selrope_f(const Op *p) {
    be->selrope_fwd(&(SelRopeArgs){.s = &seqs, .H = p->H, .P = p->P, .q = p->q, .k = p->k,
                                   .phi_raw = p->phi_raw, .conv_w = p->conv_w,
                                   .conv_act = ACT_SILU, .gate_logit = p->gate, .temp = p->temp,
                                   .qo = p->qo, .ko = p->ko, .Phi = p->Phi});
}
static void selrope_b(const Op *p) {
    be->selrope_bwd(&(SelRopeGrads){
        .a = {.s = &seqs, .H = p->H, .P = p->P, .q = p->q, .k = p->k, .phi_raw = p->phi_raw,
              .conv_w = p->conv_w, .conv_act = ACT_SILU, .gate_logit = p->gate, .temp = p->temp,
              .Phi = p->Phi},
        .dqo = p->dqo, .dko = p->dko, .dq = p->dq, .dk = p->dk, .dphi_raw = p->dphi,
        .dconv_w = p->dconv_w, .dgate_logit = p->dgate});
}

static void bench_selrope(const char *name, int H, int P) {
    int D = 2 * P;
    int64_t N = seqs.ntok, nx = N * H * D, na = N * H * P, nh = N * H;
    Op p = {.H = H, .K = D, .V = D, .P = P};
    p.q = act_normal(nx), p.k = act_normal(nx);
    p.phi_raw = act_uniform(na, -1, 1), p.conv_w = act_uniform(4 * (int64_t)H * P, -0.5, 0.5);
    p.gate = act_uniform(nh, -3, 3);
    float *temp = rt_malloc(sizeof(float) * (size_t)P);
    for (int j = 0; j < P; j++) temp[j] = (float)pow(TEMP_THETA, -2.0 * j / D);
    p.temp = f32_from(temp, P);
    rt_free(temp);
    p.qo = act_out(nx), p.ko = act_out(nx), p.Phi = f32_out(na);
    p.dqo = act_normal(nx), p.dko = act_normal(nx);
    p.dq = act_out(nx), p.dk = act_out(nx), p.dphi = act_out(na), p.dgate = act_out(nh);
    p.dconv_w = f32_out(4 * (int64_t)H * P);
    be->zero(p.dconv_w, sizeof(float) * 4 * (size_t)(H * P));
    double fwd = time_ms(selrope_f, &p), bwd = time_ms(selrope_b, &p);
    check_finite(name, "qo", p.qo, nx);
    check_finite(name, "dphi_raw", p.dphi, na);
    report(name, &p, fwd, bwd);
    release_all();
}

int main(int argc, char **argv) {
    int args_ok = argc == 1 || (argc == 3 && !strcmp(argv[1], "--reps"));
    if (args_ok && argc == 3) reps = atoi(argv[2]);
    if (!args_ok || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "usage: gpu_mixers [--reps N]  (1 <= N <= %d)\n", MAX_REPS);
        return 2;
    }
    char why[512];
    be = backend_cuda(0, why, sizeof why);
    if (!be) {
        printf("skipped: no GPU (%s)\n", why);
        return 77;
    }
    RT_ASSERT(be->act_size == 2 && be->f32_size == sizeof(float)); /* bf16 / fp32 */
    rng_init(&rng, 20261122, 0);
    int64_t cu[ROWS + 1];
    int32_t *pos = rt_malloc(sizeof(int32_t) * ROWS * SEQ_LEN);
    for (int r = 0; r <= ROWS; r++) cu[r] = (int64_t)r * SEQ_LEN;
    for (int64_t t = 0; t < ROWS * SEQ_LEN; t++) pos[t] = (int32_t)(t % SEQ_LEN);
    seqs = (Seqs){.ntok = ROWS * SEQ_LEN, .nseg = ROWS, .cu = cu, .pos = pos};
    void *mirror = NULL;
    be->seqs_prepare(&seqs, &mirror);
    printf("device %s: rotor mixer ops, %d rows x %d tokens, median of %d\n", be->device, ROWS,
           SEQ_LEN, reps);
    /* head shapes of configs/{gla,gdn,fox}-370m-selective-pg.ini (d = 1024) */
    bench_gla(4, 128, 256);
    bench_gdn(8, 128, 128);
    bench_fox(16, 64);
    bench_selrope("selrope_gla", 4, 64);
    bench_selrope("selrope_gdn", 8, 64);
    bench_selrope("selrope_fox", 16, 32);
    be->seqs_release(mirror);
    rt_free(pos);
    return 0;
}
