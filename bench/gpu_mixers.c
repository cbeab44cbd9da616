/* Mixer kernel benchmark on the GPU: rotor's CUDA ops for GLA, Gated DeltaNet and FoX and
 * the fused Selective RoPE, at the shapes of the 370M configs (B = 4 rows of T = 4096 tokens,
 * one segment per row), forward and backward timed apart; the memory-bound RMSNorm (op rmsnorm:
 * the block and per-head norms), the readouts' RMSNorm with their output gate (op normgate),
 * short conv (op conv: 512, 1024, 2048 channels) and the MLP's SwiGLU (op swiglu: its backward
 * with the product rebuilt) at the same token count; (op swiglu_gemm, only when named) the
 * MLP's gated products, the gate in the product; and (op gemm, only when named) the dense
 * products of a GLA-370M layer and its LM head, and (op inproj, only when named) a GLA-370M
 * layer's input projections as one matmul_group, and (op adamw, only when named) one AdamW
 * update of GLA-370M's parameters over the optimizer's runs. bench/fla_mixers.py times
 * flash-linear-attention's Triton kernels on the same shapes; scripts/gpu_check.sh (part
 * "bench") runs both in one session and prints the ratios.
 *   gpu_mixers [--reps N] [--ops a,b | --ops all]
 *   gpu_mixers --compare SPEC [--reps N]
 *   gpu_mixers --list-variants
 * Each time is the median over N repetitions (default 20, after warm-up) of a few calls
 * between two be->synchronize(), by the wall clock. One line per op (--ops: only those; all:
 * every op, those only run when named too):
 *   op=<name> shape=<B>x<T>x<H>x<K>x<V> fwd_ms=<x> bwd_ms=<y>
 * (Selective RoPE: K = V = the head dim 2P). --compare runs the ops that the kernel variants
 * of SPEC (as ROTOR_KERNEL_VARIANT: op:variant,...; src/device/kernel_variants.h) belong to,
 * first with every kernel's default, then with SPEC, on the same inputs, and prints per op
 *   compare op=<name> spec=<SPEC> shape=... base_fwd_ms= base_bwd_ms= fwd_ms= bwd_ms= err=E tol=T ok|FAIL
 * after one line per output (the forward's and the backward's results a caller sees, not the
 * saved states, whose layout a variant may change): err = max|variant - default| / max|default|.
 * --list-variants prints the variant table (kernel_variants_list) and needs no GPU.
 * Prints "skipped: no GPU" and exits 77 without one; exits 1 if an op writes a non-finite value
 * or a comparison fails, 2 on bad arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "config/run_config.h"
#include "device/kernel_variants.h"
#include "model/model.h"
#include "train/optimizer.h"
#include "util/error.h"
#include "util/rng.h"
#include "util/timer.h"

enum { ROWS = 4, SEQ_LEN = 4096, WARMUP = 3, CALLS = 5, MAX_REPS = 1000 };
#define TEMP_THETA 500000.0 /* the configs' temp_theta (docs/models.md §position-embeddings step 7, RoPE-type temperatures) */

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

/* An output a comparison reads: a device buffer of n bf16 ([act]) or fp32 values; `added`:
 * the backward adds to it (a weight gradient), so it is zeroed before each run. */
typedef struct {
    const char *name;
    void *d;
    int64_t n;
    int f32, added;
} Output;

enum { MAX_OUTPUTS = 32, GEMM_SHAPES = 8 };

/* An output's values as fp32 on the host (rt_free them). */
static float *download(const Output *o) {
    float *x = rt_malloc(sizeof(float) * (size_t)o->n);
    if (o->f32) {
        be->download(x, o->d, sizeof(float) * (size_t)o->n);
        return x;
    }
    uint16_t *b = rt_malloc(2 * (size_t)o->n);
    be->download(b, o->d, 2 * (size_t)o->n);
    for (int64_t i = 0; i < o->n; i++) {
        uint32_t u = (uint32_t)b[i] << 16; /* bf16: the high half of an fp32 */
        memcpy(&x[i], &u, sizeof u);
    }
    rt_free(b);
    return x;
}

/* Exits 1 naming the op and the tensor if an output holds an Inf or NaN: a time measured on
 * broken output is no benchmark. */
static void check_finite(const char *op, const Output *o) {
    float *x = download(o);
    int64_t bad = 0;
    for (int64_t i = 0; i < o->n; i++) bad += !isfinite(x[i]);
    rt_free(x);
    if (bad) {
        printf("FAIL %s: %lld non-finite values in %s\n", op, (long long)bad, o->name);
        exit(1);
    }
}

/* ---- timing ---- */

typedef struct {
    int H, K, V, P;
    double scale;
    Output out[MAX_OUTPUTS]; /* what the forward and backward write, for checks and --compare */
    int nout;
    /* inputs and forward outputs (the mixers' o, states, lse; Selective RoPE's qo, ko, Phi) */
    void *q, *k, *v, *g, *beta, *o, *states, *lse;
    void *phi_raw, *conv_w, *gate, *temp, *qo, *ko, *Phi;
    /* backward inputs (dout; dqo, dko) and outputs */
    void *dout, *dqo, *dko, *dq, *dk, *dv, *dg, *dbeta, *dphi, *dconv_w, *dgate;
    /* the products (gemm): x [N, K_i] w_i [N_i, K_i]^T -> y_i, and their gradients */
    void *x, *w[GEMM_SHAPES], *y[GEMM_SHAPES], *dy[GEMM_SHAPES], *dx[GEMM_SHAPES], *dw[GEMM_SHAPES];
    /* the ops of several shapes (rmsnorm, conv): shape i's input and RMSNorm's saved rstd; w, y,
     * dy, dx, dw as the products' */
    void *xs[GEMM_SHAPES], *rstd[GEMM_SHAPES];
    AdamWRuns upd; /* adamw: the update, its buffers of `cols` columns of ntok rows each */
    RmsnormGateGrads ng[GEMM_SHAPES]; /* normgate: shape i's call, forward and backward */
    MatmulGateMulArgs mg; /* swiglu_gemm: the up product with the gate */
    GateMulMatmulDx md;   /* and the down projection's input gradient with the gate's backward */
    int cols;
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

/* ---- GLA (docs/models.md §gla): log-space gates per key channel ---- */

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

/* An output of p: n values of d, fp32 (f32) or bf16. */
static void output(Op *p, const char *name, void *d, int64_t n, int f32) {
    RT_ASSERT(p->nout < MAX_OUTPUTS);
    p->out[p->nout++] = (Output){.name = name, .d = d, .n = n, .f32 = f32};
}

/* An fp32 output the backward adds to. */
static void added_output(Op *p, const char *name, void *d, int64_t n) {
    output(p, name, d, n, 1);
    p->out[p->nout - 1].added = 1;
}

static void setup_gla(Op *p) {
    const int H = p->H, K = p->K, V = p->V;
    int64_t N = seqs.ntok, nk = N * H * K, nv = N * H * V;
    p->scale = 1.0 / sqrt((double)K);
    p->q = act_normal(nk), p->k = act_normal(nk), p->v = act_normal(nv);
    p->g = f32_uniform(nk, -0.1, -0.001);
    p->o = act_out(nv), p->states = f32_out(chunk_states_size(&seqs, H, K, V));
    p->dout = act_normal(nv);
    p->dq = act_out(nk), p->dk = act_out(nk), p->dv = act_out(nv), p->dg = f32_out(nk);
    output(p, "o", p->o, nv, 0);
    output(p, "dq", p->dq, nk, 0);
    output(p, "dk", p->dk, nk, 0);
    output(p, "dv", p->dv, nv, 0);
    output(p, "dg", p->dg, nk, 1);
}

/* ---- Gated DeltaNet (docs/models.md §gated-deltanet): q, k L2-normalised per head (as the mixer does before
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

static void setup_gdn(Op *p) {
    const int H = p->H, K = p->K, V = p->V;
    int64_t N = seqs.ntok, nk = N * H * K, nv = N * H * V, nh = N * H;
    p->scale = 1.0 / sqrt((double)K);
    void *qraw = act_normal(nk), *kraw = act_normal(nk), *rnorm = f32_out(nh);
    p->q = act_out(nk), p->k = act_out(nk);
    be->l2norm_fwd(p->q, rnorm, qraw, N, H, K, 1e-6);
    be->l2norm_fwd(p->k, rnorm, kraw, N, H, K, 1e-6);
    p->v = act_normal(nv);
    p->beta = f32_uniform(nh, 0.05, 0.95), p->g = f32_uniform(nh, -0.5, -0.001);
    p->o = act_out(nv), p->states = f32_out(chunk_states_size(&seqs, H, K, V));
    p->dout = act_normal(nv);
    p->dq = act_out(nk), p->dk = act_out(nk), p->dv = act_out(nv);
    p->dbeta = f32_out(nh), p->dg = f32_out(nh);
    output(p, "o", p->o, nv, 0);
    output(p, "dq", p->dq, nk, 0);
    output(p, "dk", p->dk, nk, 0);
    output(p, "dv", p->dv, nv, 0);
    output(p, "dbeta", p->dbeta, nh, 1);
    output(p, "dg", p->dg, nh, 1);
}

/* ---- FoX (docs/models.md §fox): log forget gates per head, near 0 ---- */

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

static void setup_fox(Op *p) {
    const int H = p->H, D = p->K;
    int64_t N = seqs.ntok, nx = N * H * D, nh = N * H;
    p->scale = 1.0 / sqrt((double)D);
    p->q = act_normal(nx), p->k = act_normal(nx), p->v = act_normal(nx);
    p->g = f32_uniform(nh, -0.1, -0.001);
    p->o = act_out(nx), p->lse = f32_out(nh);
    p->dout = act_normal(nx);
    p->dq = act_out(nx), p->dk = act_out(nx), p->dv = act_out(nx), p->dg = f32_out(nh);
    output(p, "o", p->o, nx, 0);
    output(p, "lse", p->lse, nh, 1);
    output(p, "dq", p->dq, nx, 0);
    output(p, "dk", p->dk, nx, 0);
    output(p, "dv", p->dv, nx, 0);
    output(p, "dg", p->dg, nh, 1);
}

/* ---- Selective RoPE (docs/models.md §position-embeddings steps 3-8) as the 370M configs use it: angle conv with
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

static void setup_selrope(Op *p) {
    const int H = p->H, P = p->K / 2, D = p->K;
    int64_t N = seqs.ntok, nx = N * H * D, na = N * H * P, nh = N * H;
    p->P = P;
    p->q = act_normal(nx), p->k = act_normal(nx);
    p->phi_raw = act_uniform(na, -1, 1), p->conv_w = act_uniform(4 * (int64_t)H * P, -0.5, 0.5);
    p->gate = act_uniform(nh, -3, 3);
    float *temp = rt_malloc(sizeof(float) * (size_t)P);
    for (int j = 0; j < P; j++) temp[j] = (float)pow(TEMP_THETA, -2.0 * j / D);
    p->temp = f32_from(temp, P);
    rt_free(temp);
    p->qo = act_out(nx), p->ko = act_out(nx), p->Phi = f32_out(na);
    p->dqo = act_normal(nx), p->dko = act_normal(nx);
    p->dq = act_out(nx), p->dk = act_out(nx), p->dphi = act_out(na), p->dgate = act_out(nh);
    p->dconv_w = f32_out(4 * (int64_t)H * P);
    output(p, "qo", p->qo, nx, 0);
    output(p, "ko", p->ko, nx, 0);
    output(p, "dq", p->dq, nx, 0);
    output(p, "dk", p->dk, nx, 0);
    output(p, "dphi_raw", p->dphi, na, 0);
    output(p, "dgate_logit", p->dgate, nh, 0);
    added_output(p, "dconv_w", p->dconv_w, 4 * (int64_t)H * P);
}

/* ---- the dense products of a GLA-370M layer and its LM head (cuBLASLt, gemm.cu) at N =
 * 16384 tokens: q/k and v/o projections, the gate's low-rank pair (16), the MLP's up and down,
 * the phase gate's per-head logit (4) and the LM head; [N_i, K_i] of w_i ---- */

static const int gemm_shapes[GEMM_SHAPES][2] = {{512, 1024}, {1024, 1024}, {16, 1024}, {512, 16},
                                                {2816, 1024}, {1024, 2816}, {4, 1024}, {32000, 1024}};
static const char *const gemm_names[GEMM_SHAPES][3] = {
    {"y512x1024", "dx512x1024", "dw512x1024"},     {"y1024x1024", "dx1024x1024", "dw1024x1024"},
    {"y16x1024", "dx16x1024", "dw16x1024"},        {"y512x16", "dx512x16", "dw512x16"},
    {"y2816x1024", "dx2816x1024", "dw2816x1024"},  {"y1024x2816", "dx1024x2816", "dw1024x2816"},
    {"y4x1024", "dx4x1024", "dw4x1024"},           {"y32000x1024", "dx32000x1024", "dw32000x1024"}};

static void gemm_f(const Op *p) {
    for (int i = 0; i < GEMM_SHAPES; i++)
        be->matmul_fwd(p->y[i], p->x, p->w[i], NULL, (int)seqs.ntok, gemm_shapes[i][0], gemm_shapes[i][1]);
}
static void gemm_b(const Op *p) {
    for (int i = 0; i < GEMM_SHAPES; i++)
        be->matmul_bwd(p->dx[i], p->dw[i], NULL, p->dy[i], p->x, p->w[i], (int)seqs.ntok,
                       gemm_shapes[i][0], gemm_shapes[i][1], 0);
}

/* x holds the widest input (K = 2816); a product of K_i < 2816 reads its first K_i columns
 * as a [N, K_i] matrix with row stride K_i, which is just other values of the same kind. */
static void setup_gemm(Op *p) {
    const int64_t N = seqs.ntok;
    p->x = act_uniform(N * 2816, -1, 1);
    for (int i = 0; i < GEMM_SHAPES; i++) {
        const int n = gemm_shapes[i][0], k = gemm_shapes[i][1];
        p->w[i] = act_uniform((int64_t)n * k, -0.05, 0.05);
        p->y[i] = act_out(N * n), p->dy[i] = act_uniform(N * n, -1, 1);
        p->dx[i] = act_out(N * k), p->dw[i] = f32_out((int64_t)n * k);
        output(p, gemm_names[i][0], p->y[i], N * n, 0);
        output(p, gemm_names[i][1], p->dx[i], N * k, 0);
        added_output(p, gemm_names[i][2], p->dw[i], (int64_t)n * k);
    }
}

/* ---- inproj: GLA-370M's input projections of one layer (gate, gk0, q, k, v from d = 1024)
 * as one matmul_group, its weights one after another as the parameter table lays them out ---- */

enum { INPROJ_PARTS = 5 };
static const int inproj_widths[INPROJ_PARTS] = {1024, 16, 512, 512, 1024};
static const char *const inproj_names[INPROJ_PARTS][2] = {
    {"y_gate", "dw_gate"}, {"y_gk0", "dw_gk0"}, {"y_q", "dw_q"}, {"y_k", "dw_k"}, {"y_v", "dw_v"}};

static MatmulGroup inproj_group(const Op *p) {
    MatmulGroup g = {.x = p->x, .M = (int)seqs.ntok, .K = 1024, .n = INPROJ_PARTS};
    for (int i = 0; i < INPROJ_PARTS; i++)
        g.p[i] = (MatmulPart){.w = p->w[i], .y = p->y[i], .N = inproj_widths[i]};
    return g;
}

static void inproj_f(const Op *p) {
    MatmulGroup g = inproj_group(p);
    be->matmul_group_fwd(&g);
}

static void inproj_b(const Op *p) {
    MatmulGroupGrads a = {.g = inproj_group(p), .dx = p->dx[0]};
    for (int i = 0; i < INPROJ_PARTS; i++) a.dy[i] = p->dy[i], a.dw[i] = p->dw[i];
    be->matmul_group_bwd(&a);
}

static void setup_inproj(Op *p) {
    const int64_t N = seqs.ntok, K = 1024;
    int64_t total = 0;
    for (int i = 0; i < INPROJ_PARTS; i++) total += inproj_widths[i];
    p->x = act_uniform(N * K, -1, 1);
    char *w = act_uniform(total * K, -0.05, 0.05), *dw = f32_out(total * K);
    for (int i = 0; i < INPROJ_PARTS; i++) {
        const int n = inproj_widths[i];
        p->w[i] = w, p->dw[i] = dw;
        w += be->act_size * (size_t)(n * K), dw += sizeof(float) * (size_t)(n * K);
        p->y[i] = act_out(N * n), p->dy[i] = act_uniform(N * n, -1, 1);
        output(p, inproj_names[i][0], p->y[i], N * n, 0);
        added_output(p, inproj_names[i][1], p->dw[i], n * K);
    }
    p->dx[0] = act_out(N * K);
    output(p, "dx", p->dx[0], N * K, 0);
}

/* ---- RMSNorm (docs/models.md §backbone) at the 370M shapes, N = 16384 tokens: the block norms
 * over the hidden size 1024 and the per-head norms of the readouts and of FoX's q (H x dv, shared
 * or per-head weight); forward and backward of each ---- */

enum { NORM_SHAPES = 4 };
static const struct {
    int G, C, per_group;
    const char *names[3];
} norm_shapes[NORM_SHAPES] = {
    {1, 1024, 0, {"y1x1024", "dx1x1024", "dw1x1024"}}, /* the block norms */
    {4, 256, 0, {"y4x256", "dx4x256", "dw4x256"}},     /* GLA's readout */
    {8, 128, 0, {"y8x128", "dx8x128", "dw8x128"}},     /* GDN's readout */
    {16, 64, 1, {"y16x64g", "dx16x64g", "dw16x64g"}},  /* FoX's q norm, per head */
};

static void rmsnorm_f(const Op *p) {
    for (int i = 0; i < NORM_SHAPES; i++)
        be->rmsnorm_fwd(p->y[i], p->rstd[i], p->xs[i], p->w[i], seqs.ntok, norm_shapes[i].G,
                        norm_shapes[i].C, norm_shapes[i].per_group, 1e-6);
}
static void rmsnorm_b(const Op *p) {
    for (int i = 0; i < NORM_SHAPES; i++)
        be->rmsnorm_bwd(p->dx[i], p->dw[i], p->dy[i], p->xs[i], p->w[i], p->rstd[i], seqs.ntok,
                        norm_shapes[i].G, norm_shapes[i].C, norm_shapes[i].per_group, 0);
}

static void setup_rmsnorm(Op *p) {
    const int64_t N = seqs.ntok;
    for (int i = 0; i < NORM_SHAPES; i++) {
        const int G = norm_shapes[i].G, C = norm_shapes[i].C;
        const int64_t n = N * G * C, nw = (int64_t)(norm_shapes[i].per_group ? G : 1) * C;
        p->w[i] = act_uniform(nw, 0.5, 1.5);
        p->xs[i] = act_normal(n), p->rstd[i] = f32_out(N * G);
        p->y[i] = act_out(n), p->dy[i] = act_normal(n), p->dx[i] = act_out(n);
        p->dw[i] = f32_out(nw);
        output(p, norm_shapes[i].names[0], p->y[i], n, 0);
        output(p, norm_shapes[i].names[1], p->dx[i], n, 0);
        added_output(p, norm_shapes[i].names[2], p->dw[i], nw);
    }
}

/* ---- the readouts' RMSNorm with their output gate (docs/models.md §gla step 6) at the 370M
 * shapes, N = 16384 tokens: GLA's (4 heads of 256, shared weight, swish), GDN's (8 of 128, shared,
 * swish) and FoX-Pro's (16 of 64, per head, sigmoid); forward (r, rstd) and backward (dx, the
 * gate's gradient, dw) of each ---- */

enum { NORMGATE_SHAPES = 3 };
static const struct {
    int G, C, per_group;
    Activation act;
    const char *names[4];
} normgate_shapes[NORMGATE_SHAPES] = {
    {4, 256, 0, ACT_SILU, {"r4x256", "dx4x256", "dgp4x256", "dw4x256"}},         /* GLA */
    {8, 128, 0, ACT_SILU, {"r8x128", "dx8x128", "dgp8x128", "dw8x128"}},         /* GDN */
    {16, 64, 1, ACT_SIGMOID, {"r16x64g", "dx16x64g", "dgp16x64g", "dw16x64g"}}, /* FoX-Pro */
};

static void normgate_f(const Op *p) {
    for (int i = 0; i < NORMGATE_SHAPES; i++) be->rmsnorm_gate_fwd(&p->ng[i].a);
}
static void normgate_b(const Op *p) {
    for (int i = 0; i < NORMGATE_SHAPES; i++) be->rmsnorm_gate_bwd(&p->ng[i]);
}

static void setup_normgate(Op *p) {
    const int64_t N = seqs.ntok;
    for (int i = 0; i < NORMGATE_SHAPES; i++) {
        const int G = normgate_shapes[i].G, C = normgate_shapes[i].C;
        const int64_t n = N * G * C, nw = (int64_t)(normgate_shapes[i].per_group ? G : 1) * C;
        RmsnormGateGrads *g = &p->ng[i];
        g->a = (RmsnormGateArgs){.x = act_normal(n),
                                 .w = act_uniform(nw, 0.5, 1.5),
                                 .gp = act_normal(n),
                                 .N = N,
                                 .G = G,
                                 .C = C,
                                 .w_per_group = normgate_shapes[i].per_group,
                                 .act = normgate_shapes[i].act,
                                 .eps = 1e-6,
                                 .r = act_out(n),
                                 .rstd = f32_out(N * G),
                                 .on = act_out(n)};
        g->dr = act_normal(n), g->dx = act_out(n), g->dgp = act_out(n), g->dw = f32_out(nw);
        g->don = act_out(n);
        output(p, normgate_shapes[i].names[0], g->a.r, n, 0);
        output(p, normgate_shapes[i].names[1], g->dx, n, 0);
        output(p, normgate_shapes[i].names[2], g->dgp, n, 0);
        added_output(p, normgate_shapes[i].names[3], g->dw, nw);
    }
}

/* ---- the short causal conv (docs/models.md §gla, §gated-deltanet) of the 370M q/k/v
 * prologues, N = 16384 tokens: 4 taps with a weight, SiLU, no bias, at C = 512, 1024, 2048;
 * forward and backward (dx and the weight's fp32 gradient) of each ---- */

enum { CONV_SHAPES = 3 };
static const int conv_widths[CONV_SHAPES] = {512, 1024, 2048};
static const char *const conv_names[CONV_SHAPES][3] = {
    {"y512", "dx512", "dw512"}, {"y1024", "dx1024", "dw1024"}, {"y2048", "dx2048", "dw2048"}};

static void conv_f(const Op *p) {
    for (int i = 0; i < CONV_SHAPES; i++)
        be->conv_fwd(p->y[i], p->xs[i], p->w[i], NULL, &seqs, conv_widths[i], SHORT_CONV_TAPS,
                     ACT_SILU);
}
static void conv_b(const Op *p) {
    for (int i = 0; i < CONV_SHAPES; i++)
        be->conv_bwd(p->dx[i], p->dw[i], NULL, p->dy[i], p->xs[i], p->w[i], NULL, &seqs,
                     conv_widths[i], SHORT_CONV_TAPS, ACT_SILU);
}

static void setup_conv(Op *p) {
    const int64_t N = seqs.ntok;
    for (int i = 0; i < CONV_SHAPES; i++) {
        const int64_t C = conv_widths[i], n = N * C;
        p->w[i] = act_uniform(SHORT_CONV_TAPS * C, -0.5, 0.5);
        p->xs[i] = act_normal(n);
        p->y[i] = act_out(n), p->dy[i] = act_normal(n), p->dx[i] = act_out(n);
        p->dw[i] = f32_out(SHORT_CONV_TAPS * C);
        output(p, conv_names[i][0], p->y[i], n, 0);
        output(p, conv_names[i][1], p->dx[i], n, 0);
        added_output(p, conv_names[i][2], p->dw[i], SHORT_CONV_TAPS * C);
    }
}

/* ---- swiglu: the MLP's swish(gate) * up of GLA-370M (width 2816, N = 16384 tokens),
 * forward, and the backward with the product rebuilt (gate_mul_bwd_rebuild: the gradients of
 * up and gate and the product for the down projection's weight gradient) ---- */

enum { SWIGLU_WIDTH = 2816 };

static void swiglu_f(const Op *p) {
    be->gate_mul_fwd(p->y[0], p->x, p->g, seqs.ntok * SWIGLU_WIDTH, ACT_SILU);
}
static void swiglu_b(const Op *p) {
    be->gate_mul_bwd_rebuild(p->o, p->dx[0], p->dg, p->dy[0], p->x, p->g,
                             seqs.ntok * SWIGLU_WIDTH, ACT_SILU);
}

static void setup_swiglu(Op *p) {
    const int64_t n = seqs.ntok * SWIGLU_WIDTH;
    p->x = act_normal(n), p->g = act_normal(n), p->dy[0] = act_normal(n);
    p->y[0] = act_out(n), p->o = act_out(n), p->dx[0] = act_out(n), p->dg = act_out(n);
    output(p, "act", p->y[0], n, 0);
    output(p, "rebuilt", p->o, n, 0);
    output(p, "dup", p->dx[0], n, 0);
    output(p, "dgate", p->dg, n, 0);
}

/* ---- swiglu_gemm: the MLP's gated products of a GLA-370M layer at N = 16384 tokens,
 * matmul_gate_mul_fwd (the up product with the gate: 16384 x 2816 x 1024) and
 * gate_mul_matmul_dx (the down projection's input gradient with the gate's backward:
 * 16384 x 1024 x 2816, writing the gradients of up and gate and the rebuilt product) ---- */

enum { MODEL_WIDTH = 1024 };

static void swiglu_gemm_f(const Op *p) { be->matmul_gate_mul_fwd(&p->mg); }
static void swiglu_gemm_b(const Op *p) { be->gate_mul_matmul_dx(&p->md); }

static void setup_swiglu_gemm(Op *p) {
    const int N = (int)seqs.ntok, I = SWIGLU_WIDTH, d = MODEL_WIDTH;
    const int64_t ni = (int64_t)N * I;
    p->mg = (MatmulGateMulArgs){.x = act_normal((int64_t)N * d),
                                .w = act_uniform((int64_t)I * d, -0.03, 0.03),
                                .g = act_normal(ni),
                                .y = act_out(ni),
                                .out = act_out(ni),
                                .M = N,
                                .N = I,
                                .K = d,
                                .act = ACT_SILU};
    p->md = (GateMulMatmulDx){.dout = act_normal((int64_t)N * d),
                              .w = act_uniform((int64_t)d * I, -0.02, 0.02),
                              .x = act_normal(ni),
                              .g = p->mg.g,
                              .dx = act_out(ni),
                              .dg = act_out(ni),
                              .p = act_out(ni),
                              .dp = act_out(ni),
                              .M = N,
                              .N = d,
                              .K = I,
                              .act = ACT_SILU};
    output(p, "up", p->mg.y, ni, 0);
    output(p, "act", p->mg.out, ni, 0);
    output(p, "dup", p->md.dx, ni, 0);
    output(p, "dgate", p->md.dg, ni, 0);
    output(p, "rebuilt", p->md.p, ni, 0);
}

/* ---- adamw: one AdamW update of GLA-370M's parameters (configs/gla-370m-selective-pg.ini's
 * model) over the runs the optimizer makes of its parameter table (train/optimizer.h), with a
 * clip factor: the trainer's update of a clipped step. The update changes its inputs (the
 * default kernels scale the gradients in place), so its outputs are compared after one call
 * from the values adamw_fill puts on the device: rope_angles' pos * theta^(-2j/D) >= 0,
 * scaled, so that the launch census touches no host memory for 5 x 375M values ---- */

static const char GLA_370M[] = "[model]\ntype = gla\nnum_heads = 4\nhidden_ratio = 4\n"
                               "expand_k = 0.5\nexpand_v = 1\nshort_conv = true\n"
                               "vocab_size = 32000\nhidden_size = 1024\nnum_layers = 24\n"
                               "[pe]\ntype = selective\nphi_proj = weight_norm\nconv_act = silu\n"
                               "temp_type = rope\ntemp_theta = 500000\ntemp_grad = false\n"
                               "bias = false\nphase_gate = true\n"
                               "[train]\nlr = 1e-3\nweight_decay = 0.1\n"
                               "[data]\ntrain = synthetic:markov\n";
enum { ADAMW_STEP = 1000 };
static UpdateRun *adamw_table; /* the runs of the last setup_adamw */

static void adamw_f(const Op *p) { be->adamw_runs(&p->upd); }

/* x = c pos_n theta^(-2j/D) at [n, j] of a buffer of p->cols columns. */
static void fill_angles(const Op *p, void *x, double theta, double c) {
    be->rope_angles(x, &seqs, 2 * p->cols, theta);
    be->scale(x, seqs.ntok * p->cols, c);
}

static void adamw_fill(const Op *p) {
    fill_angles(p, p->upd.w, 10, 1e-4);
    fill_angles(p, p->upd.m, 1e3, 1e-6);
    fill_angles(p, p->upd.v, 1e2, 1e-9);
    fill_angles(p, p->upd.g, 1e4, 1e-5);
}

static void setup_adamw(Op *p) {
    RunConfig rc;
    char err[512];
    if (run_config_load_string(&rc, GLA_370M, "gla-370m", NULL, 0, err, sizeof err))
        rt_die("gpu_mixers: %s", err);
    ParamTable t;
    model_declare_params(&rc.model, &t);
    rt_free(adamw_table);
    adamw_table = rt_malloc(sizeof(UpdateRun) * (size_t)(t.n + 1));
    int nruns = optimizer_runs(&t, &rc.train, rc.train.lr, 0, t.total, adamw_table);
    p->cols = (int)((t.total + seqs.ntok - 1) / seqs.ntok);
    int64_t n = seqs.ntok * p->cols;
    p->upd = (AdamWRuns){.w = f32_out(n), .w_act = act_out(n), .m = f32_out(n), .v = f32_out(n),
                         .g = f32_out(n), .runs = adamw_table, .nruns = nruns, .beta1 = 0.9,
                         .beta2 = 0.95, .eps = 1e-8, .grad_scale = 0.5, .t = ADAMW_STEP};
    params_free(&t);
    adamw_fill(p);
    output(p, "w", p->upd.w, n, 1);
    output(p, "w_act", p->upd.w_act, n, 0);
    output(p, "m", p->upd.m, n, 1);
    output(p, "v", p->upd.v, n, 1);
}

/* ---- the ops, their runs and comparisons ---- */

typedef struct {
    const char *name;
    void (*setup)(Op *p); /* inputs and outputs at the shape H, K, V */
    OpFn fwd, bwd;   /* bwd NULL: none (0 ms) */
    OpFn reset;      /* an op that changes its inputs: puts them back, before its last call */
    int H, K, V;    /* heads, key and value sizes (Selective RoPE: the head dim 2P) */
    int named_only; /* runs only when --ops or --compare names it (no fla counterpart) */
} Mixer;

/* head shapes of configs/{gla,gdn,fox}-370m-selective-pg.ini (d = 1024) */
static const Mixer mixers[] = {
    {.name = "gla", .setup = setup_gla, .fwd = gla_f, .bwd = gla_b, .H = 4, .K = 128, .V = 256},
    {.name = "gdn", .setup = setup_gdn, .fwd = gdn_f, .bwd = gdn_b, .H = 8, .K = 128, .V = 128},
    {.name = "fox", .setup = setup_fox, .fwd = fox_f, .bwd = fox_b, .H = 16, .K = 64, .V = 64},
    {.name = "selrope_gla", .setup = setup_selrope, .fwd = selrope_f, .bwd = selrope_b, .H = 4, .K = 128, .V = 128},
    {.name = "selrope_gdn", .setup = setup_selrope, .fwd = selrope_f, .bwd = selrope_b, .H = 8, .K = 128, .V = 128},
    {.name = "selrope_fox", .setup = setup_selrope, .fwd = selrope_f, .bwd = selrope_b, .H = 16, .K = 64, .V = 64},
    {.name = "rmsnorm", .setup = setup_rmsnorm, .fwd = rmsnorm_f, .bwd = rmsnorm_b, .H = 1, .K = 1024, .V = 1024},
    {.name = "normgate", .setup = setup_normgate, .fwd = normgate_f, .bwd = normgate_b, .H = 1, .K = 1024, .V = 1024},
    {.name = "conv", .setup = setup_conv, .fwd = conv_f, .bwd = conv_b, .H = 1, .K = 1024, .V = 1024},
    {.name = "swiglu", .setup = setup_swiglu, .fwd = swiglu_f, .bwd = swiglu_b, .H = 1, .K = 2816, .V = 2816},
    {.name = "swiglu_gemm", .setup = setup_swiglu_gemm, .fwd = swiglu_gemm_f, .bwd = swiglu_gemm_b,
     .H = 1, .K = 1024, .V = 2816, .named_only = 1},
    {.name = "gemm", .setup = setup_gemm, .fwd = gemm_f, .bwd = gemm_b, .H = 1, .K = 1024, .V = 1024,
     .named_only = 1},
    {.name = "inproj", .setup = setup_inproj, .fwd = inproj_f, .bwd = inproj_b, .H = 1, .K = 1024,
     .V = 1024, .named_only = 1},
    {.name = "adamw", .setup = setup_adamw, .fwd = adamw_f, .reset = adamw_fill, .H = 1, .K = 1024,
     .V = 1024, .named_only = 1},
};
enum { NMIXERS = sizeof mixers / sizeof mixers[0] };

static Op prepare(const Mixer *m) {
    Op p = {.H = m->H, .K = m->K, .V = m->V};
    m->setup(&p);
    return p;
}

/* Times the forward, then the backward (on the forward's saved results), and checks every
 * output is finite; an op with a reset ends with one forward from its reset inputs. */
static void run(const Mixer *m, const Op *p, double *fwd, double *bwd) {
    for (int i = 0; i < p->nout; i++)
        if (p->out[i].added) be->zero(p->out[i].d, sizeof(float) * (size_t)p->out[i].n);
    *fwd = time_ms(m->fwd, p);
    *bwd = m->bwd ? time_ms(m->bwd, p) : 0;
    if (m->reset) {
        m->reset(p);
        m->fwd(p);
    }
    for (int i = 0; i < p->nout; i++) check_finite(m->name, &p->out[i]);
}

static void bench(const Mixer *m) {
    Op p = prepare(m);
    double fwd, bwd;
    run(m, &p, &fwd, &bwd);
    report(m->name, &p, fwd, bwd);
    release_all();
}

/* Tolerance of a variant against the default kernels: the GPU tests' backward tolerance
 * (tests/gpu/test_gpu_gla.c: bf16 operands one level deeper than the forward's), since both
 * sides carry bf16 rounding in different places. */
#define COMPARE_TOL 3e-2

/* Runs m with the default kernels, then with spec, and compares every output. */
static int compare(const Mixer *m, const char *spec) {
    Op p = prepare(m);
    double base_fwd, base_bwd, fwd, bwd;
    char err[512];
    RT_ASSERT(kernel_variants_set("", err, sizeof err) == 0);
    run(m, &p, &base_fwd, &base_bwd);
    float *base[MAX_OUTPUTS];
    for (int i = 0; i < p.nout; i++) base[i] = download(&p.out[i]);
    RT_ASSERT(kernel_variants_set(spec, err, sizeof err) == 0);
    run(m, &p, &fwd, &bwd);
    double worst = 0;
    for (int i = 0; i < p.nout; i++) {
        float *x = download(&p.out[i]);
        double diff = 0, scale = 1e-6;
        for (int64_t j = 0; j < p.out[i].n; j++) {
            diff = fmax(diff, fabs((double)x[j] - base[i][j]));
            scale = fmax(scale, fabs((double)base[i][j]));
        }
        double e = diff / scale;
        printf("  %s %s err=%.3e tol=%.0e %s\n", m->name, p.out[i].name, e, COMPARE_TOL,
               e <= COMPARE_TOL ? "ok" : "FAIL");
        worst = fmax(worst, e);
        rt_free(x);
        rt_free(base[i]);
    }
    kernel_variants_set("", err, sizeof err);
    printf("compare op=%s spec=%s shape=%dx%dx%dx%dx%d base_fwd_ms=%.4f base_bwd_ms=%.4f "
           "fwd_ms=%.4f bwd_ms=%.4f err=%.3e tol=%.0e %s\n",
           m->name, spec, ROWS, SEQ_LEN, p.H, p.K, p.V, base_fwd, base_bwd, fwd, bwd, worst,
           COMPARE_TOL, worst <= COMPARE_TOL ? "ok" : "FAIL");
    fflush(stdout);
    release_all();
    return worst <= COMPARE_TOL;
}

/* Whether a spec names a variant of an op that m runs. */
static int spec_touches(const char *spec, const Mixer *m) {
    char err[512], saved[256];
    kernel_variants_describe(saved, sizeof saved);
    int hit = 0;
    if (kernel_variants_set(spec, err, sizeof err) == 0)
        for (int i = 0; i < KV_COUNT; i++)
            hit |= kernel_variant((KernelVariantOp)i) && !strcmp(kernel_variant_ops[i].bench, m->name);
    kernel_variants_set(saved, err, sizeof err);
    return hit;
}

/* Whether name is in the comma-separated list. */
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: gpu_mixers [--reps N] [--ops a,b | all] | --compare SPEC [--reps N] | "
                    "--list-variants  (1 <= N <= %d)\n", MAX_REPS);
    return 2;
}

int main(int argc, char **argv) {
    const char *spec = NULL, *ops = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list-variants") && argc == 2) {
            kernel_variants_list(stdout, 0);
            return 0;
        } else if (i + 1 < argc && !strcmp(argv[i], "--reps")) {
            reps = atoi(argv[++i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--compare")) {
            spec = argv[++i];
        } else if (i + 1 < argc && !strcmp(argv[i], "--ops")) {
            ops = argv[++i];
        } else {
            return usage();
        }
    }
    if (reps < 1 || reps > MAX_REPS || (spec && ops)) return usage();
    const int all = ops && !strcmp(ops, "all");
    for (const char *o = all ? NULL : ops; o; o = strchr(o, ',') ? strchr(o, ',') + 1 : NULL) {
        int known = 0;
        for (int i = 0; i < NMIXERS; i++) {
            size_t n = strlen(mixers[i].name);
            known |= !strncmp(o, mixers[i].name, n) && (o[n] == ',' || o[n] == '\0');
        }
        if (!known) {
            fprintf(stderr, "gpu_mixers: --ops %s: '%.*s' is no op (ops: gla, gdn, fox, "
                            "selrope_gla, selrope_gdn, selrope_fox, rmsnorm, normgate, conv, "
                            "swiglu, swiglu_gemm, gemm, inproj, adamw)\n",
                    ops, (int)strcspn(o, ","), o);
            return 2;
        }
    }
    if (spec) {
        char err[512];
        if (kernel_variants_set(spec, err, sizeof err)) {
            fprintf(stderr, "gpu_mixers: --compare %s: %s\n", spec, err);
            return 2;
        }
        kernel_variants_set("", err, sizeof err);
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
    int ok = 1, ran = 0;
    for (int i = 0; i < NMIXERS; i++) {
        const Mixer *m = &mixers[i];
        if (spec ? !spec_touches(spec, m) : all ? 0 : ops ? !listed(ops, m->name) : m->named_only)
            continue;
        ran++;
        if (spec)
            ok &= compare(&mixers[i], spec);
        else
            bench(&mixers[i]);
    }
    be->seqs_release(mirror);
    rt_free(pos);
    if (!ran) {
        fprintf(stderr, "gpu_mixers: %s names no op it runs\n", spec ? "--compare" : "--ops");
        return 2;
    }
    return ok ? 0 : 1;
}
