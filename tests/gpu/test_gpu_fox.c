/* FoX forgetting attention on the GPU (kernels/ops/fox.cu) against the CPU backend, forward
 * (o, lse) and backward (dq, dk, dv, dlogf), docs/models.md §fox, and the same without a
 * forget gate (logf NULL: the Transformer's attention, §transformer).
 *
 * Shapes (H, D) = (2, 32) (tiny config), (16, 64) (370M config), (1, 128); segment layouts
 * with ragged ends, length-1 segments and segments starting off the 64-token grid; forget
 * gates log f = logsigmoid(z) mild (z ~ N(2, 2): attention reaches far back) and strong
 * (z ~ N(-2, 1): about e^-2 per token, only the last few keys count), or none (logf NULL,
 * dlogf NULL on both sides: the op must neither read nor write it). Every GPU output is
 * pre-filled with garbage (all of them overwrite). The backward gets the CPU forward's o
 * (rounded to bf16, so both sides see the same o) and lse. The backward's scratch (dQ
 * accumulator) is reused dirty from one case to the next, so its zeroing is exercised. The
 * fox_fwd / fox_bwd variants (kernels/ops/fox_v2.cu: 128-token blocks, so [1000] and [300,5]
 * end in ragged blocks and [1,63,64,65,130] has one of two chunks) run these cases under
 * ROTOR_KERNEL_VARIANT (the speed part of scripts/gpu_check.sh). */
#include <math.h>
#include <stdio.h>

#include "gpu_test.h"

static const GtLayout LAYOUTS[] = {
    {"[64]", 1, {64}},
    {"[1,63,64,65,130]", 5, {1, 63, 64, 65, 130}},
    {"[300,5]", 2, {300, 5}},
    {"[1000]", 1, {1000}},
};

typedef struct {
    int present; /* 0: no forget gate */
    double mean, std;
    const char *name;
} Gates;

static const Gates MILD = {1, 2.0, 2.0, "mild"}, STRONG = {1, -2.0, 1.0, "strong"},
                   NONE = {0, 0, 0, "no gate"};

static double logsigmoid(double x) { return fmin(x, 0.0) - log1p(exp(-fabs(x))); }

static void fox_case(int H, int D, const GtLayout *L, const Gates *G) {
    Seqs *s = gt_seqs(L->lens, L->nseg);
    int64_t N = s->ntok, nx = N * H * D, nh = N * H;
    double scale = 1.0 / sqrt((double)D);
    char tag[96], what[160];
    snprintf(tag, sizeof tag, "H=%d D=%d %s %s", H, D, L->name, G->name);

    float *q = gt_randn(nx, 1.0), *k = gt_randn(nx, 1.0), *v = gt_randn(nx, 1.0);
    float *lf = G->present ? gt_randn(nh, G->std) : NULL;
    for (int64_t i = 0; lf && i < nh; i++) lf[i] = (float)logsigmoid(G->mean + lf[i]);
    void *q_d = gt_act(q, nx), *k_d = gt_act(k, nx), *v_d = gt_act(v, nx);
    void *lf_d = lf ? gt_f32(lf, nh) : NULL;

    /* ---- forward ---- */
    float *o = gt_rand(nx, -1, 1), *lse = gt_rand(nh, -1, 1);
    gt_cpu->fox_fwd(&(AttnArgs){.s = s,
                                .H = H,
                                .D = D,
                                .scale = scale,
                                .q = q,
                                .k = k,
                                .v = v,
                                .logf = lf,
                                .o = o,
                                .lse = lse});
    void *o_d = gt_act(gt_rand(nx, -100, 100), nx), *lse_d = gt_f32(gt_rand(nh, -100, 100), nh);
    gt_gpu->fox_fwd(&(AttnArgs){.s = s,
                                .H = H,
                                .D = D,
                                .scale = scale,
                                .q = q_d,
                                .k = k_d,
                                .v = v_d,
                                .logf = lf_d,
                                .o = o_d,
                                .lse = lse_d});
    /* o: bf16 output (2^-8 rounding) of P V with P rounded to bf16 before the tensor-core
     * product, fp32 accumulation: ~4e-3 of max|o| at worst, tolerance 2e-2. */
    snprintf(what, sizeof what, "fox_fwd o %s", tag);
    gt_compare(what, gt_get_act(o_d, nx), o, nx, 2e-2);
    /* lse: fp32 throughout (exact bf16 products, fp32 sums, fp32 row sums of the unrounded
     * P); only summation order and exp2 differ: 1e-3 of max|lse|. */
    snprintf(what, sizeof what, "fox_fwd lse %s", tag);
    gt_compare(what, gt_get_f32(lse_d, nh), lse, nh, 1e-3);

    /* ---- backward ---- */
    void *o_bf = gt_act(o, nx);
    float *o_r = gt_get_act(o_bf, nx); /* o rounded to bf16: the same on both sides */
    float *dout = gt_randn(nx, 1.0);
    void *dout_d = gt_act(dout, nx), *lse_in = gt_f32(lse, nh);
    float *dq = gt_rand(nx, -1, 1), *dk = gt_rand(nx, -1, 1);
    float *dv = gt_rand(nx, -1, 1), *dlogf = lf ? gt_rand(nh, -1, 1) : NULL;
    gt_cpu->fox_bwd(&(AttnGrads){.a = {.s = s,
                                       .H = H,
                                       .D = D,
                                       .scale = scale,
                                       .q = q,
                                       .k = k,
                                       .v = v,
                                       .logf = lf,
                                       .o = o_r,
                                       .lse = lse},
                                 .dout = dout,
                                 .dq = dq,
                                 .dk = dk,
                                 .dv = dv,
                                 .dlogf = dlogf});
    void *dq_d = gt_act(gt_rand(nx, -100, 100), nx), *dk_d = gt_act(gt_rand(nx, -100, 100), nx);
    void *dv_d = gt_act(gt_rand(nx, -100, 100), nx);
    void *dlogf_d = lf ? gt_f32(gt_rand(nh, -100, 100), nh) : NULL;
    gt_gpu->fox_bwd(&(AttnGrads){.a = {.s = s,
                                       .H = H,
                                       .D = D,
                                       .scale = scale,
                                       .q = q_d,
                                       .k = k_d,
                                       .v = v_d,
                                       .logf = lf_d,
                                       .o = o_bf,
                                       .lse = lse_in},
                                 .dout = dout_d,
                                 .dq = dq_d,
                                 .dk = dk_d,
                                 .dv = dv_d,
                                 .dlogf = dlogf_d});
    /* dq, dk, dv: products of bf16-rounded P and dS (2^-8 each) summed over up to 1000
     * keys/queries in fp32, then rounded to bf16: tolerance 3e-2 of the max. */
    snprintf(what, sizeof what, "fox_bwd dq %s", tag);
    gt_compare(what, gt_get_act(dq_d, nx), dq, nx, 3e-2);
    snprintf(what, sizeof what, "fox_bwd dk %s", tag);
    gt_compare(what, gt_get_act(dk_d, nx), dk, nx, 3e-2);
    snprintf(what, sizeof what, "fox_bwd dv %s", tag);
    gt_compare(what, gt_get_act(dv_d, nx), dv, nx, 3e-2);
    /* dlogf: fp32 sums of fp32 dS (P and dP unrounded), then a reverse cumulative sum that
     * cancels to 0 at each segment start: 3e-2 of the max covers the order of summation
     * (expected ~1e-4; a larger error points at a dropped or doubled row/column sum). */
    if (lf) {
        snprintf(what, sizeof what, "fox_bwd dlogf %s", tag);
        gt_compare(what, gt_get_f32(dlogf_d, nh), dlogf, nh, 3e-2);
    }
    gt_reset();
}

static void shape_cases(int H, int D) {
    for (int i = 0; i < gt_layout_count(TH_COUNT(LAYOUTS)); i++) {
        fox_case(H, D, &LAYOUTS[i], &MILD);
        fox_case(H, D, &LAYOUTS[i], &STRONG);
        fox_case(H, D, &LAYOUTS[i], &NONE);
    }
}

static void test_fox_h2_d32(void) { shape_cases(2, 32); }
static void test_fox_h16_d64(void) { shape_cases(16, 64); }
static void test_fox_h1_d128(void) { shape_cases(1, 128); }

/* The 370M configuration at its context length: one 4096-token segment (64 key blocks
 * per query block, dQ summed from up to 64 CTAs). */
static void test_fox_long(void) {
    if (gt_small()) return; /* no long cases in small mode (gpu_test.h) */
    const GtLayout L = {"[4096]", 1, {4096}};
    fox_case(16, 64, &L, &MILD);
    fox_case(16, 64, &L, &NONE);
}

static const TestCase tests[] = {
    {"fox_h2_d32", test_fox_h2_d32},
    {"fox_h16_d64", test_fox_h16_d64},
    {"fox_h1_d128", test_fox_h1_d128},
    {"fox_long", test_fox_long},
};

GT_MAIN(tests)
