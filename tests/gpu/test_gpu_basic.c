/* GPU tests of the basic ops (kernels/ops/elementwise.cu, kernels/ops/norm.cu,
 * kernels/ops/loss_optim.cu) against the CPU backend: the bf16 weight copy, add, embedding, output
 * gates, SiLU, log-sigmoid and Gated DeltaNet gates, RMSNorm and L2 norm, the readouts' RMSNorm
 * with their output gate (normgate:fused included), cross-entropy, token log-probabilities, sum of
 * squares, scale and AdamW (per run and over a run table, adamw:fused included), forward and
 * backward.
 *
 * Sizes run from tiny test configs to the 370M model's (hidden 1024, MLP 2816, per-head
 * 64..256, V = 32000), plus odd sizes and pointers offset by one element, which take the
 * scalar head/tail and the non-vectorised kernels. Activation outputs start as garbage on
 * the GPU (the op must overwrite them); parameter gradients start on both sides from random
 * values at the scale of the gradient itself (the op must add to them). Under
 * ROTOR_KERNEL_VARIANT=rmsnorm_bwd:v2 the RMSNorm cases check that variant (rows of 16-byte
 * vectors; the others take the verified kernel): the same expressions as the verified kernel,
 * its dw summed in another order, so the same tolerances hold. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "device/kernel_variants.h"
#include "gpu_test.h"
#include "util/error.h"
#include "util/rng.h"

/* Tolerances, relative to the largest reference value (gpu_test.h):
 * TOL_BF16: one bf16 rounding of an fp32 result (up to 2^-8 of the value: half an ulp of 8
 * significant bits) with margin 2. */
#define TOL_BF16 8e-3
/* TOL_F32: fp32 elementwise results from the same inputs (a few ulp: other exp/log1p, fma). */
#define TOL_F32 1e-5
/* TOL_SUM: fp32 sums over up to 36000 rows in another order than the CPU's (parameter
 * gradients, embedding rows); a missing or doubled row is far above it. */
#define TOL_SUM 1e-4
/* TOL_LOSS: summed cross-entropy, per-row fp32 log-sum-exp (fast exp) vs the CPU's fp64 sum. */
#define TOL_LOSS 1e-5
/* TOL_F64: fp64 sums of squares of fp32 values in another order. */
#define TOL_F64 1e-12
/* TOL_ADAM_W, TOL_ADAM_MV: ten AdamW (or RMSprop) steps in fp32, the CPU and GPU contracting
 * different multiply-adds (up to 1 ulp per step, adding up over the steps: <= 10 ulp = 1.2e-6
 * of the largest weight); an update is ~1e-3 of the largest weight or more, so a wrong step
 * fails. */
#define TOL_ADAM_W 2e-6
#define TOL_ADAM_MV 1e-5

static Rng irng; /* integers: tokens, labels */
static int irng_ready;
static int32_t rand_int(int32_t n) {
    if (!irng_ready) rng_init(&irng, 20261122, 99), irng_ready = 1;
    return (int32_t)rng_below(&irng, (uint64_t)n);
}

/* Host round to nearest even bf16, as bits and as a float. */
static uint16_t bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float bf16_round(float f) {
    uint32_t u = (uint32_t)bf16_bits(f) << 16;
    float r;
    memcpy(&r, &u, 4);
    return r;
}
static float *round_all(const float *x, int64_t n) {
    float *y = gt_copy(x, n);
    for (int64_t i = 0; i < n; i++) y[i] = bf16_round(y[i]);
    return y;
}

/* Device buffer of n + off elements holding host[0..n) from element off on: the op gets
 * the returned pointer, misaligned for the vector paths when off is odd. */
static void *act_at(const float *host, int64_t n, int off) {
    float *h = gt_zeros(n + off);
    memcpy(h + off, host, sizeof(float) * (size_t)n);
    return (char *)gt_act(h, n + off) + 2 * off;
}
static void *f32_at(const float *host, int64_t n, int off) {
    float *h = gt_zeros(n + off);
    memcpy(h + off, host, sizeof(float) * (size_t)n);
    return (char *)gt_f32(h, n + off) + 4 * off;
}

/* ---- to_act: exact round to nearest even ---- */

/* fp32 values with full mantissas over many binades, and the special cases: ties to even
 * (low half exactly 0x8000 over an even and an odd bf16), signed zeros, infinities,
 * subnormals, the largest finite floats (which round to infinity) and bf16 max. */
static float *to_act_inputs(int64_t n) {
    float *x = gt_zeros(n);
    static const uint32_t special[] = {
        0x3f808000u, 0x3f818000u, 0xbf808000u, 0xbf818000u, 0x00000000u, 0x80000000u, 0x7f800000u,
        0xff800000u, 0x00000001u, 0x00008000u, 0x00018000u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu,
        0x7f7f0000u, 0x7f7f7fffu, 0x3f807fffu, 0x3f80ffffu, 0x0080ffffu, 0x42f6e979u};
    int ns = (int)(sizeof special / sizeof special[0]);
    for (int64_t i = 0; i < n; i++) {
        if (i % 97 < ns) {
            memcpy(&x[i], &special[i % 97], 4);
        } else {
            uint32_t u = (uint32_t)rand_int(1 << 30) * 4u + (uint32_t)rand_int(4);
            u = (u & 0x807fffffu) | ((uint32_t)(100 + rand_int(56)) << 23); /* |x| in 2^-27..2^28 */
            memcpy(&x[i], &u, 4);
        }
    }
    return x;
}

static void to_act_case(int64_t n, int off_dst, int off_src) {
    float *x = to_act_inputs(n);
    void *src = f32_at(x, n, off_src);
    char *dst = (char *)gt_garbage_act(n + off_dst) + 2 * off_dst;
    gt_gpu->to_act(dst, src, n);
    uint16_t *got = rt_malloc(2 * (size_t)(n ? n : 1));
    gt_gpu->download(got, dst, 2 * (size_t)n);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (got[i] != bf16_bits(x[i]) && bad++ == 0) first = i;
    printf("  %-28s mismatches=%lld %s\n",
           gt_name("to_act n=%lld off=%d,%d", (long long)n, off_dst, off_src), (long long)bad,
           bad ? "FAIL" : "ok");
    if (bad) {
        uint32_t u;
        memcpy(&u, &x[first], 4);
        CHECK_MSG(0, "to_act: %lld of %lld differ, first at %lld: %08x -> %04x, expected %04x",
                  (long long)bad, (long long)n, (long long)first, u, got[first],
                  bf16_bits(x[first]));
    }
    rt_free(got);
}

static void test_to_act(void) {
    to_act_case(1000003, 0, 0); /* vectors + tail */
    to_act_case(1000003, 1, 1); /* same misalignment: scalar head, vectors, tail */
    to_act_case(100001, 1, 0);  /* different misalignment: all scalar */
    to_act_case(3, 0, 0);
    to_act_case(0, 0, 0);
    gt_reset();
}

/* ---- copy: a device copy of [act] elements, exact, at offsets that are not vector aligned ---- */

static void test_copy(void) {
    static const int64_t ns[] = {1, 7, 1000003};
    for (int k = 0; k < 3; k++)
        for (int off = 0; off < 2; off++) {
            int64_t n = ns[k];
            float *x = gt_randn(n, 1);
            void *src = act_at(x, n, off), *dst = gt_garbage_act(n);
            gt_gpu->copy(dst, src, (size_t)n * gt_gpu->act_size);
            gt_compare(gt_name("copy n=%lld off=%d", (long long)n, off), gt_get_act(dst, n),
                       gt_get_act(src, n), n, 0);
        }
    gt_reset();
}

/* ---- embedding ---- */

/* n tokens over V rows, most of them from a few ids so that rows repeat many times. */
static void embedding_case(int V, int C, int64_t n, int off) {
    int32_t *tok = (int32_t *)gt_rand(n, 0, 1);
    for (int64_t i = 0; i < n; i++) tok[i] = i % 3 == 0 ? rand_int(V) : rand_int(V < 20 ? V : 20);
    tok[0] = V - 1;
    int32_t *dtok = gt_i32(tok, n);
    float *E = gt_randn((int64_t)V * C, 1), *ref = gt_zeros(n * C);
    gt_cpu->embedding_fwd(ref, tok, E, n, C);
    void *out = gt_garbage_act(n * C);
    gt_gpu->embedding_fwd(out, dtok, act_at(E, (int64_t)V * C, off), n, C);
    gt_compare(gt_name("embedding_fwd V=%d C=%d n=%lld off=%d", V, C, (long long)n, off),
               gt_get_act(out, n * C), ref, n * C, 0);

    float *dout = gt_randn(n * C, 1), *inc = gt_zeros((int64_t)V * C);
    gt_cpu->embedding_bwd(inc, tok, dout, n, C);
    float *dE0 = gt_prefill(inc, (int64_t)V * C);
    void *dE = gt_f32(dE0, (int64_t)V * C);
    gt_gpu->embedding_bwd(dE, dtok, act_at(dout, n * C, off), n, C);
    gt_compare(gt_name("embedding_bwd dE V=%d C=%d n=%lld off=%d", V, C, (long long)n, off),
               gt_get_f32(dE, (int64_t)V * C), gt_plus(dE0, inc, (int64_t)V * C), (int64_t)V * C,
               TOL_SUM);
}

static void test_embedding(void) {
    embedding_case(1000, 64, 5000, 0);
    embedding_case(32000, 1024, 2048, 0);
    embedding_case(100, 20, 300, 0); /* C % 8 != 0: scalar */
    embedding_case(50, 64, 300, 1);  /* misaligned rows: scalar */
    embedding_case(19, 16, 1, 0);
    gt_reset();
}

/* ---- scatter_rows (the LM head's labeled rows back into all rows) ---- */

/* Every third of n rows (distinct) receives a source row; the rest keep their contents. */
static void scatter_case(int64_t n, int C) {
    int64_t m = (n + 2) / 3;
    int32_t *rows = (int32_t *)gt_rand(m, 0, 1);
    for (int64_t i = 0; i < m; i++) rows[i] = (int32_t)(3 * i);
    float *src = gt_randn(m * C, 1), *base = gt_randn(n * C, 1), *ref = gt_copy(base, n * C);
    gt_cpu->scatter_rows(ref, rows, src, m, C);
    void *out = gt_act(base, n * C);
    gt_gpu->scatter_rows(out, gt_i32(rows, m), gt_act(src, m * C), m, C);
    gt_compare(gt_name("scatter_rows n=%lld C=%d", (long long)n, C), gt_get_act(out, n * C), ref,
               n * C, 0);
}

static void test_scatter_rows(void) {
    scatter_case(1000, 1024);
    scatter_case(31, 20); /* C % 8 != 0: scalar */
    gt_reset();
}

/* ---- gate_mul, silu ---- */

static const char *act_name(Activation a) {
    return a == ACT_SILU ? "silu" : a == ACT_SIGMOID ? "sigmoid" : "none";
}

static void gate_mul_case(int64_t n, Activation act, int off) {
    float *x = gt_randn(n, 1), *g = gt_randn(n, 3), *ref = gt_zeros(n);
    gt_cpu->gate_mul_fwd(ref, x, g, n, act);
    void *gx = act_at(x, n, off), *gg = act_at(g, n, 0);
    void *out = gt_garbage_act(n);
    gt_gpu->gate_mul_fwd(out, gx, gg, n, act);
    gt_compare(gt_name("gate_mul_fwd %s n=%lld off=%d", act_name(act), (long long)n, off),
               gt_get_act(out, n), ref, n, TOL_BF16);

    float *dout = gt_randn(n, 1), *rdx = gt_zeros(n), *rdg = gt_zeros(n);
    gt_cpu->gate_mul_bwd(rdx, rdg, dout, x, g, n, act);
    void *gdx = gt_garbage_act(n), *gdg = gt_garbage_act(n), *gdout = gt_act(dout, n);
    gt_gpu->gate_mul_bwd(gdx, gdg, gdout, gx, gg, n, act);
    gt_compare(gt_name("gate_mul_bwd dx %s n=%lld off=%d", act_name(act), (long long)n, off),
               gt_get_act(gdx, n), rdx, n, TOL_BF16);
    gt_compare(gt_name("gate_mul_bwd dg %s n=%lld off=%d", act_name(act), (long long)n, off),
               gt_get_act(gdg, n), rdg, n, TOL_BF16);

    /* with the product rebuilt (either gate_rebuild variant): the two ops' bits exactly */
    void *bo = gt_garbage_act(n), *bdx = gt_garbage_act(n), *bdg = gt_garbage_act(n);
    gt_gpu->gate_mul_bwd_rebuild(bo, bdx, bdg, gdout, gx, gg, n, act);
    gt_compare(
        gt_name("gate_mul_bwd_rebuild out %s n=%lld off=%d", act_name(act), (long long)n, off),
        gt_get_act(bo, n), gt_get_act(out, n), n, 0);
    gt_compare(
        gt_name("gate_mul_bwd_rebuild dx %s n=%lld off=%d", act_name(act), (long long)n, off),
        gt_get_act(bdx, n), gt_get_act(gdx, n), n, 0);
    gt_compare(
        gt_name("gate_mul_bwd_rebuild dg %s n=%lld off=%d", act_name(act), (long long)n, off),
        gt_get_act(bdg, n), gt_get_act(gdg, n), n, 0);
}

static void test_gate_mul(void) {
    static const Activation acts[] = {ACT_SILU, ACT_SIGMOID, ACT_NONE};
    for (int a = 0; a < 3; a++) {
        Activation act = acts[a];
        gate_mul_case(300 * 2816 + 3, act, 0);
        gate_mul_case(300 * 2816 + 3, act, 1);
        gate_mul_case(5, act, 0);
    }
    gt_reset();
}

/* ---- add ---- */

static void add_case(int64_t n, int off, int in_place) {
    float *a = gt_randn(n, 1), *b = gt_randn(n, 2), *ref = gt_zeros(n);
    gt_cpu->add(ref, a, b, n);
    void *ga = act_at(a, n, off), *gb = act_at(b, n, 0);
    void *y = in_place ? ga : gt_garbage_act(n);
    gt_gpu->add(y, ga, gb, n);
    gt_compare(gt_name("add n=%lld off=%d%s", (long long)n, off, in_place ? " in place" : ""),
               gt_get_act(y, n), ref, n, TOL_BF16);
}

static void test_add(void) {
    add_case(300 * 2816 + 3, 0, 0);
    add_case(300 * 2816 + 3, 1, 1);
    add_case(5, 0, 0);
    gt_reset();
}

/* silu or gelu, forward and backward */
static void unary_case(int gelu, int64_t n, int off) {
    const char *name = gelu ? "gelu" : "silu";
    void (*cpu_fwd)(void *, const void *, int64_t) = gelu ? gt_cpu->gelu_fwd : gt_cpu->silu_fwd;
    void (*gpu_fwd)(void *, const void *, int64_t) = gelu ? gt_gpu->gelu_fwd : gt_gpu->silu_fwd;
    void (*cpu_bwd)(void *, const void *, const void *, int64_t) =
        gelu ? gt_cpu->gelu_bwd : gt_cpu->silu_bwd;
    void (*gpu_bwd)(void *, const void *, const void *, int64_t) =
        gelu ? gt_gpu->gelu_bwd : gt_gpu->silu_bwd;
    float *x = gt_randn(n, 3), *ref = gt_zeros(n);
    cpu_fwd(ref, x, n);
    void *gx = act_at(x, n, off), *y = gt_garbage_act(n);
    gpu_fwd(y, gx, n);
    gt_compare(gt_name("%s_fwd n=%lld off=%d", name, (long long)n, off), gt_get_act(y, n), ref, n,
               TOL_BF16);
    float *dy = gt_randn(n, 1), *rdx = gt_zeros(n);
    cpu_bwd(rdx, dy, x, n);
    void *gdx = gt_garbage_act(n);
    gpu_bwd(gdx, gt_act(dy, n), gx, n);
    gt_compare(gt_name("%s_bwd n=%lld off=%d", name, (long long)n, off), gt_get_act(gdx, n), rdx, n,
               TOL_BF16);
}

static void test_silu_gelu(void) {
    for (int gelu = 0; gelu < 2; gelu++) {
        unary_case(gelu, 300 * 1024 + 1, 0);
        unary_case(gelu, 300 * 1024 + 1, 1);
        unary_case(gelu, 3, 0);
    }
    gt_reset();
}

/* ---- dropout (docs/models.md §block-dropout-bidirectional): the same hash on both sides, so the
 * same mask; inputs away from zero, so that one element dropped on one side only fails the
 * comparison ---- */

static void dropout_case(int64_t N, int C, int T, int off, double p) {
    int64_t n = N * C;
    float *x = gt_rand(n, 0.5, 2), *ref = gt_zeros(n);
    for (int64_t i = 0; i < n; i += 2) x[i] = -x[i];
    uint64_t key = 0x5eedull + (uint64_t)T;
    gt_cpu->dropout(ref, x, N, C, T, key, p);
    void *gx = act_at(x, n, off), *y = gt_garbage_act(n);
    gt_gpu->dropout(y, gx, N, C, T, key, p);
    gt_compare(gt_name("dropout N=%lld C=%d T=%d off=%d p=%g", (long long)N, C, T, off, p),
               gt_get_act(y, n), ref, n, TOL_BF16);
    gt_gpu->dropout(gx, gx, N, C, T, key, p); /* in place */
    gt_compare(gt_name("dropout in place N=%lld C=%d T=%d", (long long)N, C, T), gt_get_act(gx, n),
               ref, n, TOL_BF16);
}

static void test_dropout(void) {
    dropout_case(4096, 77, 0, 0, 0.3);
    dropout_case(4096, 77, 0, 1, 0.1);
    dropout_case(4096, 64, 512, 0, 0.5);
    dropout_case(3, 5, 0, 0, 0.3);
}

/* relu forward and backward (the pair classifier's MLP, docs/models.md §classification) */
static void relu_case(int64_t n, int off) {
    float *x = gt_randn(n, 3), *ref = gt_zeros(n);
    gt_cpu->relu_fwd(ref, x, n);
    void *gx = act_at(x, n, off), *y = gt_garbage_act(n);
    gt_gpu->relu_fwd(y, gx, n);
    gt_compare(gt_name("relu_fwd n=%lld off=%d", (long long)n, off), gt_get_act(y, n), ref, n,
               TOL_BF16);
    float *dy = gt_randn(n, 1), *rdx = gt_zeros(n);
    gt_cpu->relu_bwd(rdx, dy, x, n);
    void *gdx = gt_garbage_act(n);
    gt_gpu->relu_bwd(gdx, gt_act(dy, n), gx, n);
    gt_compare(gt_name("relu_bwd n=%lld off=%d", (long long)n, off), gt_get_act(gdx, n), rdx, n,
               TOL_BF16);
}

/* the pair classifier's features [u, v, u v, u - v] and their backward */
static void pair_nli_case(int64_t P, int d) {
    float *x = gt_randn(2 * P * d, 1), *ref = gt_zeros(4 * P * d);
    gt_cpu->pair_nli_fwd(ref, x, P, d);
    void *gx = gt_act(x, 2 * P * d), *f = gt_garbage_act(4 * P * d);
    gt_gpu->pair_nli_fwd(f, gx, P, d);
    gt_compare(gt_name("pair_nli_fwd P=%lld d=%d", (long long)P, d), gt_get_act(f, 4 * P * d), ref,
               4 * P * d, TOL_BF16);
    float *df = gt_randn(4 * P * d, 1), *rdx = gt_zeros(2 * P * d);
    gt_cpu->pair_nli_bwd(rdx, df, x, P, d);
    void *gdx = gt_garbage_act(2 * P * d);
    gt_gpu->pair_nli_bwd(gdx, gt_act(df, 4 * P * d), gx, P, d);
    gt_compare(gt_name("pair_nli_bwd P=%lld d=%d", (long long)P, d), gt_get_act(gdx, 2 * P * d),
               rdx, 2 * P * d, TOL_BF16);
}

static void test_relu_pair(void) {
    relu_case(300 * 1024 + 1, 0);
    relu_case(300 * 1024 + 1, 1);
    relu_case(3, 0);
    pair_nli_case(16, 128);
    pair_nli_case(3, 5);
    gt_reset();
}

/* ---- log-sigmoid gates (y, dy [f32]) ---- */

static void logsigmoid_case(int64_t n, double normalizer, int off) {
    float *x = gt_randn(n, 4), *ref = gt_zeros(n);
    gt_cpu->logsigmoid_fwd(ref, x, n, normalizer);
    void *gx = act_at(x, n, off), *y = gt_garbage_f32(n);
    gt_gpu->logsigmoid_fwd(y, gx, n, normalizer);
    gt_compare(gt_name("logsigmoid_fwd n=%lld norm=%g off=%d", (long long)n, normalizer, off),
               gt_get_f32(y, n), ref, n, TOL_F32);
    float *dy = gt_randn(n, 1), *rdx = gt_zeros(n);
    gt_cpu->logsigmoid_bwd(rdx, dy, x, n, normalizer);
    void *gdx = gt_garbage_act(n);
    gt_gpu->logsigmoid_bwd(gdx, gt_f32(dy, n), gx, n, normalizer);
    gt_compare(gt_name("logsigmoid_bwd n=%lld norm=%g off=%d", (long long)n, normalizer, off),
               gt_get_act(gdx, n), rdx, n, TOL_BF16);
}

static void test_logsigmoid(void) {
    logsigmoid_case(300 * 1024 + 3, 16, 0); /* GLA gates */
    logsigmoid_case(300 * 16, 1, 0);        /* FoX forget gates */
    logsigmoid_case(300 * 16 + 1, 16, 1);
    logsigmoid_case(2, 1, 0);
    gt_reset();
}

/* ---- DeltaNet's beta: sigmoid (y, dy [f32]) ---- */

static void sigmoid_case(int64_t n, int off) {
    float *x = gt_randn(n, 4), *ref = gt_zeros(n);
    gt_cpu->sigmoid_fwd(ref, x, n);
    void *gx = act_at(x, n, off), *y = gt_garbage_f32(n);
    gt_gpu->sigmoid_fwd(y, gx, n);
    gt_compare(gt_name("sigmoid_fwd n=%lld off=%d", (long long)n, off), gt_get_f32(y, n), ref, n,
               TOL_F32);
    float *dy = gt_randn(n, 1), *rdx = gt_zeros(n);
    gt_cpu->sigmoid_bwd(rdx, dy, x, n);
    void *gdx = gt_garbage_act(n);
    gt_gpu->sigmoid_bwd(gdx, gt_f32(dy, n), gx, n);
    gt_compare(gt_name("sigmoid_bwd n=%lld off=%d", (long long)n, off), gt_get_act(gdx, n), rdx, n,
               TOL_BF16);
}

static void test_sigmoid(void) {
    sigmoid_case(300 * 16, 0);
    sigmoid_case(300 * 16 + 1, 1);
    sigmoid_case(2, 0);
}

/* ---- Mamba2's small ops (docs/models.md §mamba2) ---- */

static void mamba2_ops_case(int64_t N, int H, int G, int K, int D) {
    int64_t nh = N * H, nx = nh * D, nk = nh * K, ns = N * G * K;
    /* gates */
    float *dt_raw = gt_randn(nh, 2), *A_log = gt_rand(H, 0, 2.77), *dt_bias = gt_rand(H, -7, 0.5);
    float *rdt = gt_zeros(nh), *rg = gt_zeros(nh);
    gt_cpu->decay_gates_fwd(rdt, rg, dt_raw, A_log, dt_bias, N, H);
    void *gdr = gt_act(dt_raw, nh), *gA = gt_f32(A_log, H), *gdb = gt_f32(dt_bias, H);
    void *dt = gt_garbage_f32(nh), *g = gt_garbage_f32(nh);
    gt_gpu->decay_gates_fwd(dt, g, gdr, gA, gdb, N, H);
    gt_compare(gt_name("decay_gates_fwd dt N=%lld H=%d", (long long)N, H), gt_get_f32(dt, nh), rdt,
               nh, TOL_F32);
    gt_compare(gt_name("decay_gates_fwd g N=%lld H=%d", (long long)N, H), gt_get_f32(g, nh), rg, nh,
               TOL_F32);
    float *ddt = gt_randn(nh, 1), *dg = gt_randn(nh, 1);
    float *rddr = gt_zeros(nh), *incA = gt_zeros(H), *incdt = gt_zeros(H);
    gt_cpu->decay_gates_bwd(rddr, incA, incdt, ddt, dg, dt_raw, A_log, dt_bias, N, H);
    float *A0 = gt_prefill(incA, H), *dt0 = gt_prefill(incdt, H);
    void *gddr = gt_garbage_act(nh), *gdA = gt_f32(A0, H), *gddt = gt_f32(dt0, H);
    gt_gpu->decay_gates_bwd(gddr, gdA, gddt, gt_f32(ddt, nh), gt_f32(dg, nh), gdr, gA, gdb, N, H);
    gt_compare(gt_name("decay_gates_bwd ddt_raw N=%lld H=%d", (long long)N, H),
               gt_get_act(gddr, nh), rddr, nh, TOL_BF16);
    gt_compare(gt_name("decay_gates_bwd dA_log N=%lld H=%d", (long long)N, H), gt_get_f32(gdA, H),
               gt_plus(A0, incA, H), H, TOL_SUM);
    gt_compare(gt_name("decay_gates_bwd ddt_bias N=%lld H=%d", (long long)N, H),
               gt_get_f32(gddt, H), gt_plus(dt0, incdt, H), H, TOL_SUM);

    /* per-head scale v = s x and the D skip */
    float *x = gt_randn(nx, 1), *sc = gt_rand(nh, 0, 0.2), *dy = gt_randn(nx, 1),
          *Dp = gt_randn(H, 1);
    void *gx = gt_act(x, nx), *gs = gt_f32(sc, nh), *gdy = gt_act(dy, nx), *gD = gt_f32(Dp, H);
    float *ry = gt_zeros(nx);
    gt_cpu->head_scale_fwd(ry, x, sc, N, H, D);
    void *gy = gt_garbage_act(nx);
    gt_gpu->head_scale_fwd(gy, gx, gs, N, H, D);
    gt_compare(gt_name("head_scale_fwd N=%lld H=%d D=%d", (long long)N, H, D), gt_get_act(gy, nx),
               ry, nx, TOL_BF16);
    float *rdx = gt_zeros(nx), *rds = gt_zeros(nh);
    gt_cpu->head_scale_bwd(rdx, rds, dy, x, sc, N, H, D);
    void *gdx = gt_garbage_act(nx), *gds = gt_garbage_f32(nh);
    gt_gpu->head_scale_bwd(gdx, gds, gdy, gx, gs, N, H, D);
    gt_compare(gt_name("head_scale_bwd dx N=%lld H=%d D=%d", (long long)N, H, D),
               gt_get_act(gdx, nx), rdx, nx, TOL_BF16);
    gt_compare(gt_name("head_scale_bwd ds N=%lld H=%d D=%d", (long long)N, H, D),
               gt_get_f32(gds, nh), rds, nh, TOL_SUM);
    gt_cpu->head_skip_fwd(ry, x, Dp, N, H, D); /* ry += D x, on top of the scale's output */
    gt_gpu->head_skip_fwd(gy, gx, gD, N, H, D);
    gt_compare(gt_name("head_skip_fwd N=%lld H=%d D=%d", (long long)N, H, D), gt_get_act(gy, nx),
               ry, nx, TOL_BF16);
    float *incD = gt_zeros(H);
    gt_cpu->head_skip_bwd(rdx, incD, dy, x, Dp, N, H, D); /* rdx += D dy */
    float *D0 = gt_prefill(incD, H);
    void *gdD = gt_f32(D0, H);
    gt_gpu->head_skip_bwd(gdx, gdD, gdy, gx, gD, N, H, D);
    gt_compare(gt_name("head_skip_bwd dx+= N=%lld H=%d D=%d", (long long)N, H, D),
               gt_get_act(gdx, nx), rdx, nx, TOL_BF16);
    gt_compare(gt_name("head_skip_bwd dD+= N=%lld H=%d D=%d", (long long)N, H, D),
               gt_get_f32(gdD, H), gt_plus(D0, incD, H), H, TOL_SUM);

    /* group broadcast of B, C */
    float *src = gt_randn(ns, 1), *dout = gt_randn(nk, 1);
    float *rout = gt_zeros(nk), *rdsrc = gt_zeros(ns);
    gt_cpu->group_bcast_fwd(rout, src, N, H, G, K);
    void *gout = gt_garbage_act(nk);
    gt_gpu->group_bcast_fwd(gout, gt_act(src, ns), N, H, G, K);
    gt_compare(gt_name("group_bcast_fwd N=%lld H=%d G=%d K=%d", (long long)N, H, G, K),
               gt_get_act(gout, nk), rout, nk, TOL_BF16);
    gt_cpu->group_bcast_bwd(rdsrc, dout, N, H, G, K);
    void *gdsrc = gt_garbage_act(ns);
    gt_gpu->group_bcast_bwd(gdsrc, gt_act(dout, nk), N, H, G, K);
    gt_compare(gt_name("group_bcast_bwd N=%lld H=%d G=%d K=%d", (long long)N, H, G, K),
               gt_get_act(gdsrc, ns), rdsrc, ns, TOL_BF16);
}

static void test_mamba2_ops(void) {
    mamba2_ops_case(1000, 4, 2, 16, 32);   /* the tiny model */
    mamba2_ops_case(4096, 32, 1, 128, 64); /* mamba2-370m */
    mamba2_ops_case(300, 6, 3, 8, 5);      /* odd sizes */
    mamba2_ops_case(1, 2, 1, 4, 4);
    gt_reset();
}

/* ---- the per-head decay as Gated DeltaNet uses it: dt not kept (NULL), no ddt ---- */

static void decay_gates_case(int64_t N, int H) {
    int64_t n = N * H;
    float *a_raw = gt_randn(n, 2);
    float *A_log = gt_rand(H, 0, 2.77), *dt_bias = gt_rand(H, -7, 0.5); /* A in 1..16 */
    float *rg = gt_zeros(n);
    gt_cpu->decay_gates_fwd(NULL, rg, a_raw, A_log, dt_bias, N, H);
    void *ga = gt_act(a_raw, n), *gA = gt_f32(A_log, H), *gdt = gt_f32(dt_bias, H);
    void *g = gt_garbage_f32(n);
    gt_gpu->decay_gates_fwd(NULL, g, ga, gA, gdt, N, H);
    gt_compare(gt_name("decay_gates_fwd g N=%lld H=%d", (long long)N, H), gt_get_f32(g, n), rg, n,
               TOL_F32);

    float *dg = gt_randn(n, 1);
    float *rda = gt_zeros(n), *incA = gt_zeros(H), *incdt = gt_zeros(H);
    gt_cpu->decay_gates_bwd(rda, incA, incdt, NULL, dg, a_raw, A_log, dt_bias, N, H);
    float *A0 = gt_prefill(incA, H), *dt0 = gt_prefill(incdt, H);
    void *gda = gt_garbage_act(n), *gdA = gt_f32(A0, H), *gddt = gt_f32(dt0, H);
    gt_gpu->decay_gates_bwd(gda, gdA, gddt, NULL, gt_f32(dg, n), ga, gA, gdt, N, H);
    gt_compare(gt_name("decay_gates_bwd da_raw N=%lld H=%d", (long long)N, H), gt_get_act(gda, n),
               rda, n, TOL_BF16);
    gt_compare(gt_name("decay_gates_bwd dA_log N=%lld H=%d", (long long)N, H), gt_get_f32(gdA, H),
               gt_plus(A0, incA, H), H, TOL_SUM);
    gt_compare(gt_name("decay_gates_bwd ddt_bias N=%lld H=%d", (long long)N, H),
               gt_get_f32(gddt, H), gt_plus(dt0, incdt, H), H, TOL_SUM);
}

static void test_decay_gates(void) {
    decay_gates_case(1000, 8);
    decay_gates_case(20000, 3); /* 20 row blocks per head */
    decay_gates_case(300, 2);
    decay_gates_case(1, 2);
    gt_reset();
}

/* ---- RMSNorm ---- */

typedef struct {
    int64_t N;
    int G, C, per_group, w_off;
} NormCase;

static void rmsnorm_case(NormCase k) {
    int64_t rows = k.N * k.G, n = rows * k.C;
    int wn = k.per_group ? k.G * k.C : k.C;
    double eps = 1e-6;
    const char *wk = k.per_group ? "grp" : "shared";
    float *x = gt_randn(n, 1.5), *w = gt_rand(wn, 0.5, 1.5);
    float *ry = gt_zeros(n), *rrs = gt_zeros(rows);
    gt_cpu->rmsnorm_fwd(ry, rrs, x, w, k.N, k.G, k.C, k.per_group, eps);
    void *gx = gt_act(x, n), *gw = act_at(w, wn, k.w_off);
    void *y = gt_garbage_act(n), *rs = gt_garbage_f32(rows);
    gt_gpu->rmsnorm_fwd(y, rs, gx, gw, k.N, k.G, k.C, k.per_group, eps);
    gt_compare(
        gt_name("rmsnorm_fwd y N=%lld G=%d C=%d %s off=%d", (long long)k.N, k.G, k.C, wk, k.w_off),
        gt_get_act(y, n), ry, n, TOL_BF16);
    gt_compare(gt_name("rmsnorm_fwd rstd N=%lld G=%d C=%d %s off=%d", (long long)k.N, k.G, k.C, wk,
                       k.w_off),
               gt_get_f32(rs, rows), rrs, rows, TOL_F32);

    float *dy = gt_randn(n, 1);
    void *gdy = gt_act(dy, n), *grs = gt_f32(rrs, rows);
    for (int acc = 0; acc < 2; acc++) {
        float *dx0 = acc ? gt_randn(n, 1) : gt_zeros(n), *rdx = gt_copy(dx0, n),
              *inc = gt_zeros(wn);
        gt_cpu->rmsnorm_bwd(rdx, inc, dy, x, w, rrs, k.N, k.G, k.C, k.per_group, acc);
        float *dw0 = gt_prefill(inc, wn);
        void *gdx = acc ? gt_act(dx0, n) : gt_garbage_act(n), *gdw = gt_f32(dw0, wn);
        gt_gpu->rmsnorm_bwd(gdx, gdw, gdy, gx, gw, grs, k.N, k.G, k.C, k.per_group, acc);
        gt_compare(gt_name("rmsnorm_bwd dx N=%lld G=%d C=%d %s off=%d acc=%d", (long long)k.N, k.G,
                           k.C, wk, k.w_off, acc),
                   gt_get_act(gdx, n), rdx, n, TOL_BF16);
        gt_compare(gt_name("rmsnorm_bwd dw N=%lld G=%d C=%d %s off=%d acc=%d", (long long)k.N, k.G,
                           k.C, wk, k.w_off, acc),
                   gt_get_f32(gdw, wn), gt_plus(dw0, inc, wn), wn, TOL_SUM);
    }
}

/* ---- the readout's RMSNorm and output gate (rmsnorm_gate_fwd/bwd) ---- */

/* A case: N tokens of G heads of C channels, the weight shared or per head, the gate's
 * activation; off misaligns x (every path the pair of verified kernels), dr_off only dr (under
 * normgate:fused the forward fused, the backward the pair after recomputing on). */
typedef struct {
    int64_t N;
    int G, C, per_group;
    Activation act;
    int off, dr_off;
} NormGateCase;

/* The GPU's results of one forward and backward: r, rstd, dx, dgp and dw (added to dw0). */
typedef struct {
    float *r, *rstd, *dx, *dgp, *dw;
} NormGateRun;

static NormGateRun normgate_gpu(const NormGateCase *k, void *x, void *w, void *gp, void *dr,
                                const float *dw0) {
    int64_t rows = k->N * k->G, n = rows * k->C, wn = (int64_t)(k->per_group ? k->G : 1) * k->C;
    RmsnormGateArgs a = {.x = x,
                         .w = w,
                         .gp = gp,
                         .N = k->N,
                         .G = k->G,
                         .C = k->C,
                         .w_per_group = k->per_group,
                         .act = k->act,
                         .eps = 1e-6,
                         .r = gt_garbage_act(n),
                         .rstd = gt_garbage_f32(rows),
                         .on = gt_garbage_act(n)};
    gt_gpu->rmsnorm_gate_fwd(&a);
    RmsnormGateGrads g = {.a = a,
                          .dr = dr,
                          .dx = gt_garbage_act(n),
                          .dgp = gt_garbage_act(n),
                          .dw = gt_f32(dw0, wn),
                          .don = gt_garbage_act(n)};
    gt_gpu->rmsnorm_gate_bwd(&g);
    return (NormGateRun){gt_get_act(a.r, n), gt_get_f32(a.rstd, rows), gt_get_act(g.dx, n),
                         gt_get_act(g.dgp, n), gt_get_f32(g.dw, wn)};
}

/* Against the CPU's rmsnorm_fwd, gate_mul_fwd, gate_mul_bwd and rmsnorm_bwd with the normed
 * values and their gradient rounded to bf16 between them, as the verified kernels store them
 * (the fused kernels round them in registers): the tolerances of RMSNorm and gate_mul. Under
 * ROTOR_KERNEL_VARIANT=normgate:fused the case runs again with the default kernels: r, rstd and
 * dgp must be theirs exactly (the same expressions, the same sums in the same order), dx within
 * one bf16 rounding and dw within TOL_SUM (summed in another order). */
static void normgate_case(NormGateCase k) {
    int64_t rows = k.N * k.G, n = rows * k.C;
    int wn = k.per_group ? k.G * k.C : k.C;
    double eps = 1e-6;
    float *x = gt_randn(n, 1.5), *w = gt_rand(wn, 0.5, 1.5), *gp = gt_randn(n, 3);
    float *dr = gt_randn(n, 1);
    float *on = gt_zeros(n), *rrs = gt_zeros(rows), *rr = gt_zeros(n);
    gt_cpu->rmsnorm_fwd(on, rrs, x, w, k.N, k.G, k.C, k.per_group, eps);
    float *onb = round_all(on, n), *don = gt_zeros(n), *rdgp = gt_zeros(n);
    gt_cpu->gate_mul_fwd(rr, onb, gp, n, k.act);
    gt_cpu->gate_mul_bwd(don, rdgp, dr, onb, gp, n, k.act);
    float *rdx = gt_zeros(n), *inc = gt_zeros(wn);
    gt_cpu->rmsnorm_bwd(rdx, inc, round_all(don, n), x, w, rrs, k.N, k.G, k.C, k.per_group, 0);
    float *dw0 = gt_prefill(inc, wn);
    void *gx = act_at(x, n, k.off), *gw = gt_act(w, wn), *ggp = gt_act(gp, n);
    void *gdr = act_at(dr, n, k.dr_off);
    NormGateRun got = normgate_gpu(&k, gx, gw, ggp, gdr, dw0);
    char what[96];
    snprintf(what, sizeof what, "rmsnorm_gate N=%lld G=%d C=%d %s %s off=%d,%d", (long long)k.N,
             k.G, k.C, k.per_group ? "grp" : "shared", act_name(k.act), k.off, k.dr_off);
    gt_compare(gt_name("%s r", what), got.r, rr, n, TOL_BF16);
    gt_compare(gt_name("%s rstd", what), got.rstd, rrs, rows, TOL_F32);
    gt_compare(gt_name("%s dx", what), got.dx, rdx, n, TOL_BF16);
    gt_compare(gt_name("%s dgp", what), got.dgp, rdgp, n, TOL_BF16);
    gt_compare(gt_name("%s dw", what), got.dw, gt_plus(dw0, inc, wn), wn, TOL_SUM);
    if (!kernel_variant(KV_NORMGATE)) return;
    char spec[256], err[512];
    kernel_variants_describe(spec, sizeof spec);
    RT_ASSERT(kernel_variants_set("", err, sizeof err) == 0);
    NormGateRun def = normgate_gpu(&k, gx, gw, ggp, gdr, dw0);
    RT_ASSERT(kernel_variants_set(spec, err, sizeof err) == 0);
    gt_compare(gt_name("%s r = default's", what), got.r, def.r, n, 0);
    gt_compare(gt_name("%s rstd = default's", what), got.rstd, def.rstd, rows, 0);
    gt_compare(gt_name("%s dgp = default's", what), got.dgp, def.dgp, n, 0);
    gt_compare(gt_name("%s dx ~ default's", what), got.dx, def.dx, n, TOL_BF16);
    gt_compare(gt_name("%s dw ~ default's", what), got.dw, def.dw, wn, TOL_SUM);
}

static void test_rmsnorm_gate(void) {
    static const NormGateCase cases[] = {
        {3000, 4, 256, 0, ACT_SILU, 0, 0},    /* GLA-370M's readout: 4 heads of 256, swish */
        {3000, 8, 128, 0, ACT_SILU, 0, 0},    /* GDN-370M's: 8 heads of 128 */
        {3000, 16, 64, 1, ACT_SIGMOID, 0, 0}, /* FoX-Pro-370M's: 16 of 64, per head, sigmoid */
        {9000, 4, 256, 0, ACT_SILU, 0, 0},    /* several sweeps of a wave over the rows */
        {3001, 8, 128, 1, ACT_SILU, 0, 0},    /* per-head weight, rows not a multiple of a sweep */
        {200, 1, 1024, 0, ACT_SILU, 0, 0},    /* 4 vectors a lane: the widest fused rows */
        {100, 1, 2048, 0, ACT_SIGMOID, 0, 0}, /* 8 a lane: the pair under fused */
        {50, 3, 40, 1, ACT_NONE, 0, 0},       /* 5 vectors a row over 4 lanes: lanes without */
        {37, 5, 10, 0, ACT_SILU, 0, 0},       /* C % 8 != 0: the pair */
        {300, 4, 256, 0, ACT_SILU, 1, 0},     /* x misaligned: the pair */
        {300, 4, 256, 0, ACT_SIGMOID, 0, 1},  /* dr misaligned: fused forward, the pair backward */
        {1, 1, 8, 0, ACT_SIGMOID, 0, 0},
    };
    for (int i = 0; i < TH_COUNT(cases); i++) normgate_case(cases[i]);
    gt_reset();
}

/* LayerNorm (docs/models.md §zoology-shape) against the CPU's: y, mean, rstd; dx (both accumulate
 * modes), dw and db (accumulated onto prefilled values). off misaligns w (the scalar path). */
static void layernorm_case(int64_t N, int C, int off) {
    int64_t n = N * C;
    double eps = 1e-5;
    float *x = gt_randn(n, 1.5), *w = gt_rand(C, 0.5, 1.5), *b = gt_randn(C, 0.5);
    float *ry = gt_zeros(n), *rmu = gt_zeros(N), *rrs = gt_zeros(N);
    gt_cpu->layernorm_fwd(ry, rmu, rrs, x, w, b, N, C, eps);
    void *gx = gt_act(x, n), *gw = act_at(w, C, off), *gb = gt_act(b, C);
    void *y = gt_garbage_act(n), *mu = gt_garbage_f32(N), *rs = gt_garbage_f32(N);
    gt_gpu->layernorm_fwd(y, mu, rs, gx, gw, gb, N, C, eps);
    gt_compare(gt_name("layernorm_fwd y N=%lld C=%d off=%d", (long long)N, C, off),
               gt_get_act(y, n), ry, n, TOL_BF16);
    gt_compare(gt_name("layernorm_fwd mean N=%lld C=%d off=%d", (long long)N, C, off),
               gt_get_f32(mu, N), rmu, N, TOL_F32);
    gt_compare(gt_name("layernorm_fwd rstd N=%lld C=%d off=%d", (long long)N, C, off),
               gt_get_f32(rs, N), rrs, N, TOL_F32);

    float *dy = gt_randn(n, 1);
    void *gdy = gt_act(dy, n), *gmu = gt_f32(rmu, N), *grs = gt_f32(rrs, N);
    for (int acc = 0; acc < 2; acc++) {
        float *dx0 = acc ? gt_randn(n, 1) : gt_zeros(n), *rdx = gt_copy(dx0, n);
        float *incw = gt_zeros(C), *incb = gt_zeros(C);
        gt_cpu->layernorm_bwd(rdx, incw, incb, dy, x, w, rmu, rrs, N, C, acc);
        float *dw0 = gt_prefill(incw, C), *db0 = gt_prefill(incb, C);
        void *gdx = acc ? gt_act(dx0, n) : gt_garbage_act(n), *gdw = gt_f32(dw0, C),
             *gdb = gt_f32(db0, C);
        gt_gpu->layernorm_bwd(gdx, gdw, gdb, gdy, gx, gw, gmu, grs, N, C, acc);
        gt_compare(gt_name("layernorm_bwd dx N=%lld C=%d off=%d acc=%d", (long long)N, C, off, acc),
                   gt_get_act(gdx, n), rdx, n, TOL_BF16);
        gt_compare(gt_name("layernorm_bwd dw N=%lld C=%d off=%d acc=%d", (long long)N, C, off, acc),
                   gt_get_f32(gdw, C), gt_plus(dw0, incw, C), C, TOL_SUM);
        gt_compare(gt_name("layernorm_bwd db N=%lld C=%d off=%d acc=%d", (long long)N, C, off, acc),
                   gt_get_f32(gdb, C), gt_plus(db0, incb, C), C, TOL_SUM);
    }
}

static void test_layernorm(void) {
    layernorm_case(300, 1024, 0); /* hidden 1024, vectors */
    layernorm_case(4096, 64, 0);  /* many rows: several chunks of the parameter sums */
    layernorm_case(300, 1024, 1); /* misaligned weight: scalar, 32 per lane */
    layernorm_case(37, 100, 0);   /* C % 8 != 0 */
    layernorm_case(50, 2048, 0);  /* largest C */
    layernorm_case(1, 8, 0);
    gt_reset();
}

/* The residual add fused with RMSNorm: h must be the bf16 rounding of the fp32 sum exactly
 * (the same two roundings on both sides); y and rstd are the norm of that rounded h, so they
 * are compared with the CPU's norm of the GPU's h. off misaligns a (the scalar path). */
static void add_rmsnorm_case(int64_t N, int C, int off) {
    int64_t n = N * C;
    double eps = 1e-6;
    float *a = gt_randn(n, 1.5), *b = gt_randn(n, 1.5), *w = gt_rand(C, 0.5, 1.5);
    float *rh = gt_zeros(n), *ry = gt_zeros(n), *rrs = gt_zeros(N);
    gt_cpu->add_rmsnorm_fwd(rh, ry, rrs, a, b, w, N, C, eps);
    void *h = gt_garbage_act(n), *y = gt_garbage_act(n), *rs = gt_garbage_f32(N);
    gt_gpu->add_rmsnorm_fwd(h, y, rs, act_at(a, n, off), gt_act(b, n), gt_act(w, C), N, C, eps);
    float *gh = gt_get_act(h, n);
    gt_compare(gt_name("add_rmsnorm_fwd h N=%lld C=%d off=%d", (long long)N, C, off), gh,
               round_all(rh, n), n, 0);
    gt_cpu->rmsnorm_fwd(ry, rrs, gh, w, N, 1, C, 0, eps);
    gt_compare(gt_name("add_rmsnorm_fwd y N=%lld C=%d off=%d", (long long)N, C, off),
               gt_get_act(y, n), ry, n, TOL_BF16);
    gt_compare(gt_name("add_rmsnorm_fwd rstd N=%lld C=%d off=%d", (long long)N, C, off),
               gt_get_f32(rs, N), rrs, N, TOL_F32);
}

static void test_add_rmsnorm(void) {
    add_rmsnorm_case(300, 1024, 0); /* hidden 1024, vectors */
    add_rmsnorm_case(300, 1024, 1); /* misaligned: scalar, 32 per lane */
    add_rmsnorm_case(257, 64, 0);   /* tiny configs */
    add_rmsnorm_case(50, 2048, 0);  /* largest C */
    add_rmsnorm_case(1, 8, 0);
    gt_reset();
}

static void test_rmsnorm(void) {
    static const NormCase cases[] = {
        {300, 1, 1024, 0, 0},                      /* block norms, hidden 1024 */
        {4096, 1, 1024, 0, 0},                     /* several rows per warp in the backward */
        {300, 4, 256, 0, 0},                       /* GLA readout: per head dv 256, shared weight */
        {300, 4, 256, 1, 0},                       /* per-group weight */
        {300, 8, 128, 0, 0},                       /* GDN readout */
        {257, 16, 64, 1, 0},                       /* FoX QK norm, per head */
        {100, 1, 2048, 0, 0},                      /* largest C */
        {65, 2, 32, 0, 0},                         /* tiny configs */
        {65, 2, 16, 1, 0},     {37, 3, 100, 0, 0}, /* C % 8 != 0: scalar */
        {40, 1, 1000, 0, 0},                       /* scalar, 32 values per lane */
        {50, 2, 256, 1, 1},                        /* misaligned weight: scalar */
        {1, 1, 8, 0, 0},       {3, 5, 1, 1, 0},
        {9000, 4, 256, 0, 0},  {3001, 8, 128, 1, 0}, /* several sweeps of a wave over the rows */
    };
    for (int i = 0; i < TH_COUNT(cases); i++) rmsnorm_case(cases[i]);
    gt_reset();
}

/* ---- L2 norm ---- */

static void l2norm_case(int64_t N, int G, int D) {
    int64_t rows = N * G, n = rows * D;
    float *x = gt_randn(n, 1), *ry = gt_zeros(n), *rrn = gt_zeros(rows);
    gt_cpu->l2norm_fwd(ry, rrn, x, N, G, D, 1e-6);
    void *y = gt_garbage_act(n), *rn = gt_garbage_f32(rows);
    gt_gpu->l2norm_fwd(y, rn, gt_act(x, n), N, G, D, 1e-6);
    gt_compare(gt_name("l2norm_fwd y N=%lld G=%d D=%d", (long long)N, G, D), gt_get_act(y, n), ry,
               n, TOL_BF16);
    gt_compare(gt_name("l2norm_fwd rnorm N=%lld G=%d D=%d", (long long)N, G, D),
               gt_get_f32(rn, rows), rrn, rows, TOL_F32);

    float *yb = round_all(ry, n), *dy = gt_randn(n, 1); /* y as the model stores it: bf16 */
    void *gy = gt_act(yb, n), *gdy = gt_act(dy, n), *grn = gt_f32(rrn, rows);
    for (int acc = 0; acc < 2; acc++) {
        float *dx0 = acc ? gt_randn(n, 0.3) : gt_zeros(n), *rdx = gt_copy(dx0, n);
        gt_cpu->l2norm_bwd(rdx, dy, yb, rrn, N, G, D, acc);
        void *gdx = acc ? gt_act(dx0, n) : gt_garbage_act(n);
        gt_gpu->l2norm_bwd(gdx, gdy, gy, grn, N, G, D, acc);
        gt_compare(gt_name("l2norm_bwd dx N=%lld G=%d D=%d acc=%d", (long long)N, G, D, acc),
                   gt_get_act(gdx, n), rdx, n, TOL_BF16);
    }
}

static void test_l2norm(void) {
    l2norm_case(300, 8, 128); /* GDN q, k */
    l2norm_case(300, 4, 16);  /* tiny GDN */
    l2norm_case(257, 16, 64); /* Selective RoPE slices d/H */
    l2norm_case(100, 2, 100); /* scalar */
    l2norm_case(1, 1, 8);
    gt_reset();
}

/* ---- cross-entropy ---- */

/* Logits ~ N(0, 2) with a spike of +8 at the label on every third row; every seventh label
 * is ignored (-100). Returns the labels; *n_valid counts the others. */
static int32_t *ce_inputs(int64_t N, int V, float **logits, int64_t *n_valid) {
    float *x = gt_randn(N * V, 2);
    int32_t *lab = (int32_t *)gt_rand(N, 0, 1);
    *n_valid = 0;
    for (int64_t i = 0; i < N; i++) {
        lab[i] = i % 7 == 3 ? -100 : rand_int(V);
        if (i == 1) lab[i] = V - 1;
        if (lab[i] >= 0) {
            ++*n_valid;
            if (i % 3 == 0) x[i * V + lab[i]] = bf16_round(x[i * V + lab[i]] + 8);
        }
    }
    *logits = x;
    return lab;
}

static void cross_entropy_case(int64_t N, int V) {
    float *x;
    int64_t nv;
    int32_t *lab = ce_inputs(N, V, &x, &nv);
    int32_t *glab = gt_i32(lab, N);
    double gs = 1.0 / (double)nv;
    /* The loss is a sum of nv rows, compared relative to itself or, below one nat per row,
     * to nv: a row whose label dominates (N = 1) has loss log(s), s = 1 + 1e-3, which fp32
     * holds to ~1e-7 absolute, 1e-4 of the loss (H200, 2026-11-28). */

    /* loss only: the logits stay untouched */
    float *rx = gt_copy(x, N * V);
    double rloss = gt_cpu->cross_entropy(rx, lab, N, V, 0.0);
    void *gx = gt_act(x, N * V);
    double loss = gt_gpu->cross_entropy(gx, glab, N, V, 0.0);
    gt_compare_scalar(gt_name("cross_entropy loss N=%lld V=%d gs=0", (long long)N, V), loss, rloss,
                      (double)nv, TOL_LOSS);
    gt_compare(gt_name("cross_entropy logits kept N=%lld V=%d", (long long)N, V),
               gt_get_act(gx, N * V), x, N * V, 0);

    /* loss and gradient in place */
    rx = gt_copy(x, N * V);
    rloss = gt_cpu->cross_entropy(rx, lab, N, V, gs);
    gx = gt_act(x, N * V);
    loss = gt_gpu->cross_entropy(gx, glab, N, V, gs);
    gt_compare_scalar(gt_name("cross_entropy loss N=%lld V=%d", (long long)N, V), loss, rloss,
                      (double)nv, TOL_LOSS);
    gt_compare(gt_name("cross_entropy grad N=%lld V=%d", (long long)N, V), gt_get_act(gx, N * V),
               rx, N * V, TOL_BF16);
}

static void test_cross_entropy(void) {
    cross_entropy_case(257, 32000);
    cross_entropy_case(300, 64);
    cross_entropy_case(50, 1001); /* V % 8 != 0: scalar */
    cross_entropy_case(1, 5);
    gt_reset();
}

/* ---- token log-probabilities ---- */

static void token_logprobs_case(int64_t N, int V) {
    float *x;
    int64_t nv;
    int32_t *lab = ce_inputs(N, V, &x, &nv);
    /* planted ties at the maximum (20 is above every random logit) */
    lab[0] = 9, x[0 * V + 5] = 20, x[0 * V + 9] = 20; /* an earlier index ties: not argmax */
    lab[2] = 3, x[2 * V + 3] = 20, x[2 * V + 4] = 20; /* the label is the first maximum */
    lab[4] = V - 1, x[4 * V + 0] = 20, x[4 * V + V / 2] = 20, x[4 * V + V - 1] = 20;
    lab[5] = V - 1, x[5 * V + V - 1] = 20; /* the last logit is the maximum */
    lab[6] = 0, x[6 * V + 0] = 20, x[6 * V + V - 1] = 20;
    float *rlogp = gt_zeros(N);
    uint8_t *ramax = (uint8_t *)gt_rand(N, 0, 1), *gamax = (uint8_t *)gt_rand(N, 0, 1);
    gt_cpu->token_logprobs(x, lab, N, V, rlogp, ramax);
    void *glogp = gt_garbage_f32(N);
    memset(gamax, 7, (size_t)N);
    gt_gpu->token_logprobs(gt_act(x, N * V), gt_i32(lab, N), N, V, glogp, gamax);
    gt_compare(gt_name("token_logprobs logp N=%lld V=%d", (long long)N, V), gt_get_f32(glogp, N),
               rlogp, N, TOL_F32);
    int64_t bad = 0;
    for (int64_t i = 0; i < N; i++) bad += gamax[i] != ramax[i];
    printf("  %-28s mismatches=%lld %s\n",
           gt_name("token_logprobs argmax N=%lld V=%d", (long long)N, V), (long long)bad,
           bad ? "FAIL" : "ok");
    CHECK_MSG(bad == 0, "token_logprobs: is_argmax differs on %lld rows", (long long)bad);
    CHECK(ramax[0] == 0 && ramax[2] == 1 && ramax[3] == 1 && ramax[4] == 0 && ramax[5] == 1 &&
          ramax[6] == 1); /* the planted rows test what they should (row 3 is ignored) */
}

static void test_token_logprobs(void) {
    token_logprobs_case(257, 32000);
    token_logprobs_case(64, 64);
    token_logprobs_case(20, 1001); /* scalar */
    gt_reset();
}

/* ---- a completions server's statistics: logit_scores ---- */

static void logit_scores_case(int64_t N, int V, int vocab, int k) {
    float *x;
    int64_t nv;
    int32_t *lab = ce_inputs(N, V, &x, &nv); /* bf16 values: ties among the top are common */
    x[0 * V + 5] = 20, x[0 * V + 9] = 20;    /* a planted tie at the top: id 5 first */
    x[2 * V + vocab - 1] = 30;               /* the top at the last id of the vocabulary */
    if (vocab < V)
        x[4 * V + V - 1] = 40; /* an output past the vocabulary: in lse, not in the top */
    float *rlse = gt_zeros(N), *rlp = gt_zeros(N), *rtop = gt_zeros(N * k);
    int32_t *rid = calloc((size_t)(N * k), sizeof(int32_t)),
            *gid = calloc((size_t)(N * k), sizeof(int32_t));
    gt_cpu->logit_scores(&(LogitScoresArgs){x, lab, N, V, vocab, k, rlse, rlp, rid, rtop});
    void *glse = gt_garbage_f32(N), *glp = gt_garbage_f32(N), *gtop = gt_garbage_f32(N * k);
    int32_t *gid_dev = gt_i32(gid, N * k);
    gt_gpu->logit_scores(&(LogitScoresArgs){gt_act(x, N * V), gt_i32(lab, N), N, V, vocab, k, glse,
                                            glp, gid_dev, gtop});
    gt_gpu->download(gid, gid_dev, sizeof(int32_t) * (size_t)(N * k));
    gt_compare(gt_name("logit_scores lse N=%lld V=%d k=%d", (long long)N, V, k),
               gt_get_f32(glse, N), rlse, N, TOL_F32);
    gt_compare(gt_name("logit_scores label N=%lld V=%d k=%d", (long long)N, V, k),
               gt_get_f32(glp, N), rlp, N, TOL_F32);
    gt_compare(gt_name("logit_scores top N=%lld V=%d k=%d", (long long)N, V, k),
               gt_get_f32(gtop, N * k), rtop, N * k, TOL_F32);
    int64_t bad = 0;
    for (int64_t i = 0; i < N * k; i++) bad += gid[i] != rid[i];
    printf("  %-28s mismatches=%lld %s\n",
           gt_name("logit_scores ids N=%lld V=%d k=%d", (long long)N, V, k), (long long)bad,
           bad ? "FAIL" : "ok");
    CHECK_MSG(bad == 0, "logit_scores: top ids differ at %lld places", (long long)bad);
    CHECK(rid[0] == 5 && (k == 1 || rid[1] == 9) &&
          rid[2 * k] == vocab - 1); /* the planted rows as meant */
    free(rid);
    free(gid);
}

static void test_logit_scores(void) {
    logit_scores_case(257, 32000, 32000, 1);
    logit_scores_case(64, 32000, 31990, 20);
    logit_scores_case(40, 1001, 1000, 5); /* scalar */
    gt_reset();
}

/* ---- optimizer: sumsq, scale, adamw, rmsprop_update ---- */

static void sumsq_case(int64_t n, int off) {
    float *x = gt_randn(n, 1);
    double ref = gt_cpu->sumsq(x, n);
    double got = gt_gpu->sumsq(f32_at(x, n, off), n);
    gt_compare_scalar(gt_name("sumsq n=%lld off=%d", (long long)n, off), got, ref, 1e-6, TOL_F64);
}

static void test_sumsq(void) {
    sumsq_case(1 << 22, 0);
    sumsq_case((1 << 20) + 3, 1);
    sumsq_case(5, 0);
    sumsq_case(0, 0);
    gt_reset();
}

static void scale_case(int64_t n, int off, double s) {
    float *x = gt_randn(n, 1), *ref = gt_copy(x, n);
    gt_cpu->scale(ref, n, s);
    void *gx = f32_at(x, n, off);
    gt_gpu->scale(gx, n, s);
    /* one fp32 multiplication by (float)s on both sides: exact */
    gt_compare(gt_name("scale n=%lld off=%d", (long long)n, off), gt_get_f32(gx, n), ref, n, 0);
}

static void test_scale(void) {
    scale_case((1 << 20) + 3, 0, 0.37);
    scale_case((1 << 20) + 3, 3, 0.37);
    scale_case(2, 0, 1e-3);
    gt_reset();
}

/* Steps t = 1..10 with a fresh gradient each, compared after steps 1, 2 and 10. off_w
 * offsets w and g, off_m the moments: equal offsets keep the vector path, unequal ones
 * force the scalar one. off_a offsets the bf16 copy (pre-filled with garbage; -1: none),
 * which must equal the GPU's own fp32 weights rounded to bf16, exactly. */
static void adamw_case(int64_t n, int off_w, int off_m, int off_a, double wd) {
    double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8;
    float *w = gt_randn(n, 1), *m = gt_zeros(n), *v = gt_zeros(n);
    void *gw = f32_at(w, n, off_w), *gm = f32_at(m, n, off_m), *gv = f32_at(v, n, off_m);
    void *ga = off_a < 0 ? NULL : (char *)gt_garbage_act(n + off_a) + 2 * off_a;
    for (int t = 1; t <= 10; t++) {
        float *g = gt_randn(n, t == 3 ? 100 : 1);
        gt_cpu->adamw(w, NULL, m, v, g, n, lr, b1, b2, eps, wd, t);
        gt_gpu->adamw(gw, ga, gm, gv, f32_at(g, n, off_w), n, lr, b1, b2, eps, wd, t);
        if (ga)
            gt_compare(gt_name("adamw bf16 copy t=%d n=%lld off=%d,%d,%d", t, (long long)n, off_w,
                               off_m, off_a),
                       gt_get_act(ga, n), round_all(gt_get_f32(gw, n), n), n, 0);
        if (t == 1 || t == 2 || t == 10) {
            gt_compare(
                gt_name("adamw w t=%d n=%lld off=%d,%d wd=%g", t, (long long)n, off_w, off_m, wd),
                gt_get_f32(gw, n), w, n, TOL_ADAM_W);
            gt_compare(
                gt_name("adamw m t=%d n=%lld off=%d,%d wd=%g", t, (long long)n, off_w, off_m, wd),
                gt_get_f32(gm, n), m, n, TOL_ADAM_MV);
            gt_compare(
                gt_name("adamw v t=%d n=%lld off=%d,%d wd=%g", t, (long long)n, off_w, off_m, wd),
                gt_get_f32(gv, n), v, n, TOL_ADAM_MV);
        }
    }
}

static void test_adamw(void) {
    adamw_case(100003, 0, 0, 0, 0.1);
    adamw_case(100003, 0, 0, -1, 0.0);
    adamw_case(100003, 1, 1, 1, 0.1); /* scalar head, vectors */
    adamw_case(100003, 0, 0, 1, 0.1); /* the copy misaligned for 8-byte stores: scalar */
    adamw_case(100003, 1, 2, 0, 0.1); /* scalar */
    adamw_case(3, 0, 0, 0, 0.1);
    gt_reset();
}

/* adamw_runs over a table of runs with their own learning rates and weight decays (one empty,
 * gaps between them, odd starts and lengths, and in the full mode one run of more tiles than
 * adamw:fused's grid holds), three steps at clip factors 0.37, 1 and 0.37 (the second
 * gradient 100 times larger): against the CPU at adamw's tolerances, the bf16 copy exactly the
 * GPU's weights rounded, the gaps untouched. Under a variant (ROTOR_KERNEL_VARIANT=adamw:fused)
 * the same steps also run with the default kernels from the same values, and the variant must
 * equal them to the last bit: the same fp32 formula, the clip factor's product rounded as the
 * scale pass rounds it. off_w offsets w and g, off_m the moments, off_a the bf16 copy. */
enum { ADAMW_RUNS = 6 };

static void adamw_runs_step(const Backend *be, const AdamWRuns *a, const UpdateRun *runs, float *w,
                            float *m, float *v, void *act, const float *g, int64_t t, double gs) {
    AdamWRuns s = *a;
    s.w = w, s.m = m, s.v = v, s.w_act = act, s.g = (void *)g, s.runs = runs, s.t = t;
    s.grad_scale = gs;
    be->adamw_runs(&s);
}

static void adamw_runs_case(int off_w, int off_m, int off_a) {
    int64_t big = gt_small() ? 40000 : 2500003;
    UpdateRun runs[ADAMW_RUNS] = {{0, 1000, 1e-2, 0.1},   {1003, 7, 3e-3, 0},
                                  {1013, 0, 2e-2, 0.1},   {1013, 4097, 1e-3, 0.05},
                                  {5111, big, 2e-3, 0.1}, {5114 + big, 2049, 5e-3, 0}};
    int64_t n = 5114 + big + 2049 + 5;
    char spec[256], err[512];
    kernel_variants_describe(spec, sizeof spec);
    int variant = kernel_variant(KV_ADAMW) != 0;
    float *w = gt_randn(n, 1), *m = gt_zeros(n), *v = gt_zeros(n);
    float *gw = f32_at(w, n, off_w), *gm = f32_at(m, n, off_m), *gv = f32_at(v, n, off_m);
    float *dw = f32_at(w, n, off_w), *dm = f32_at(m, n, off_m), *dv = f32_at(v, n, off_m);
    void *ga = (char *)gt_garbage_act(n + off_a) + 2 * off_a;
    void *da = (char *)gt_garbage_act(n + off_a) + 2 * off_a;
    float *w0 = gt_copy(w, n);
    AdamWRuns a = {.nruns = ADAMW_RUNS, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8};
    for (int t = 1; t <= 3; t++) {
        double gs = t == 2 ? 1 : 0.37;
        float *g = gt_randn(n, t == 2 ? 100 : 1);
        adamw_runs_step(gt_cpu, &a, runs, w, m, v, NULL, g, t, gs);
        adamw_runs_step(gt_gpu, &a, runs, gw, gm, gv, ga, f32_at(g, n, off_w), t, gs);
        char what[64];
        snprintf(what, sizeof what, "adamw_runs t=%d off=%d,%d,%d", t, off_w, off_m, off_a);
        gt_compare(gt_name("%s copy", what), gt_get_act(ga, n), round_all(gt_get_f32(gw, n), n), n,
                   0);
        gt_compare(gt_name("%s w", what), gt_get_f32(gw, n), w, n, TOL_ADAM_W);
        gt_compare(gt_name("%s m", what), gt_get_f32(gm, n), m, n, TOL_ADAM_MV);
        gt_compare(gt_name("%s v", what), gt_get_f32(gv, n), v, n, TOL_ADAM_MV);
        if (!variant) continue;
        RT_ASSERT(kernel_variants_set("", err, sizeof err) == 0);
        adamw_runs_step(gt_gpu, &a, runs, dw, dm, dv, da, f32_at(g, n, off_w), t, gs);
        RT_ASSERT(kernel_variants_set(spec, err, sizeof err) == 0);
        gt_compare(gt_name("%s w = default's", what), gt_get_f32(gw, n), gt_get_f32(dw, n), n, 0);
        gt_compare(gt_name("%s m = default's", what), gt_get_f32(gm, n), gt_get_f32(dm, n), n, 0);
        gt_compare(gt_name("%s v = default's", what), gt_get_f32(gv, n), gt_get_f32(dv, n), n, 0);
        gt_compare(gt_name("%s copy = default's", what), gt_get_act(ga, n), gt_get_act(da, n), n,
                   0);
    }
    /* the gaps between the runs (1000..1002, 1010..1012, the last 5) keep their weights */
    float *got = gt_get_f32(gw, n);
    int moved = 0;
    for (int64_t i = 0; i < n; i++) {
        int in_run = 0;
        for (int k = 0; k < ADAMW_RUNS; k++)
            in_run |= i >= runs[k].offset && i < runs[k].offset + runs[k].n;
        moved += !in_run && got[i] != w0[i];
    }
    CHECK_MSG(!moved, "adamw_runs off=%d,%d,%d: %d weights outside the runs changed", off_w, off_m,
              off_a, moved);
}

static void test_adamw_runs(void) {
    adamw_runs_case(0, 0, 0);
    adamw_runs_case(1, 1, 1); /* scalar heads, vectors */
    adamw_runs_case(0, 0, 1); /* the copy misaligned for 8-byte stores: scalar */
    adamw_runs_case(1, 2, 0); /* scalar */
    gt_reset();
}

/* RMSprop as adamw_case: steps 1..10 with a fresh gradient each (step 3's 100 times larger),
 * compared after steps 1, 2 and 10; the bf16 copy exactly the GPU's weights rounded. */
static void rmsprop_case(int64_t n, int off_w, int off_s, int off_a, double wd) {
    double lr = 1e-3, alpha = 0.9, eps = 1e-8;
    float *w = gt_randn(n, 1), *sq = gt_zeros(n);
    void *gw = f32_at(w, n, off_w), *gs = f32_at(sq, n, off_s);
    void *ga = off_a < 0 ? NULL : (char *)gt_garbage_act(n + off_a) + 2 * off_a;
    for (int t = 1; t <= 10; t++) {
        float *g = gt_randn(n, t == 3 ? 100 : 1);
        gt_cpu->rmsprop_update(w, NULL, sq, g, n, lr, alpha, eps, wd);
        gt_gpu->rmsprop_update(gw, ga, gs, f32_at(g, n, off_w), n, lr, alpha, eps, wd);
        if (ga)
            gt_compare(gt_name("rmsprop bf16 copy t=%d n=%lld off=%d,%d,%d", t, (long long)n, off_w,
                               off_s, off_a),
                       gt_get_act(ga, n), round_all(gt_get_f32(gw, n), n), n, 0);
        if (t == 1 || t == 2 || t == 10) {
            gt_compare(
                gt_name("rmsprop w t=%d n=%lld off=%d,%d wd=%g", t, (long long)n, off_w, off_s, wd),
                gt_get_f32(gw, n), w, n, TOL_ADAM_W);
            gt_compare(gt_name("rmsprop square_avg t=%d n=%lld off=%d,%d wd=%g", t, (long long)n,
                               off_w, off_s, wd),
                       gt_get_f32(gs, n), sq, n, TOL_ADAM_MV);
        }
    }
}

static void test_rmsprop(void) {
    rmsprop_case(100003, 0, 0, 0, 0.1);
    rmsprop_case(100003, 0, 0, -1, 0.0);
    rmsprop_case(100003, 1, 1, 1, 0.1); /* scalar head, vectors */
    rmsprop_case(100003, 0, 0, 1, 0.1); /* the copy misaligned for 8-byte stores: scalar */
    rmsprop_case(100003, 1, 2, 0, 0.1); /* scalar */
    rmsprop_case(3, 0, 0, 0, 0.1);
    gt_reset();
}

static const TestCase tests[] = {
    {"to_act", test_to_act},
    {"copy", test_copy},
    {"embedding", test_embedding},
    {"scatter_rows", test_scatter_rows},
    {"gate_mul", test_gate_mul},
    {"add", test_add},
    {"silu_gelu", test_silu_gelu},
    {"dropout", test_dropout},
    {"relu_pair", test_relu_pair},
    {"logsigmoid", test_logsigmoid},
    {"sigmoid", test_sigmoid},
    {"decay_gates", test_decay_gates},
    {"mamba2_ops", test_mamba2_ops},
    {"add_rmsnorm", test_add_rmsnorm},
    {"layernorm", test_layernorm},
    {"rmsnorm", test_rmsnorm},
    {"rmsnorm_gate", test_rmsnorm_gate},
    {"l2norm", test_l2norm},
    {"cross_entropy", test_cross_entropy},
    {"token_logprobs", test_token_logprobs},
    {"logit_scores", test_logit_scores},
    {"sumsq", test_sumsq},
    {"scale", test_scale},
    {"adamw", test_adamw},
    {"adamw_runs", test_adamw_runs},
    {"rmsprop", test_rmsprop},
};

GT_MAIN(tests)
