/* GPU tests of the time-mixing and rotary ops (kernels/ops/timemix.cu, kernels/ops/rotary.cu)
 * against the CPU backend: short conv, FoX shift, reverse cumsum, RoPE angles, rotation and
 * the weight norm, forward and backward, on several segment layouts (a single token, segments
 * around the runs and tiles of the conv:v2 variant, short segments around the chunk size,
 * segments aligned with the 256-token scan tiles, one segment of 5000 tokens spanning many
 * tiles). Under ROTOR_KERNEL_VARIANT=conv:v2 the conv cases check that variant: the same
 * math token by token, so it meets the same tolerances (its dw and db partial sums are
 * added in another order). The fused Selective RoPE op has its own
 * program (test_gpu_selrope.c).
 *
 * Activation outputs start as garbage on the GPU (the op must overwrite them). Parameter
 * gradients start on the GPU from random values at the scale of the gradient itself and are
 * expected to end at start + the CPU's gradient from zero (the op must add to them). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu/cpu_ops.h"
#include "gpu_test.h"
#include "revcumsum.h"

/* Tolerances, relative to the largest reference value (gpu_test.h):
 * TOL_BF16: one bf16 rounding of an fp32 result (up to 2^-8 of the value: half an ulp of 8
 * significant bits) with margin 2. */
#define TOL_BF16 8e-3
/* TOL_F32: fp32 elementwise results and short fp32 sums (a few ulp, other order or fma). */
#define TOL_F32 1e-5
/* TOL_SCAN: fp32 cumulative sums over up to 5000 tokens, summed in another order than the
 * CPU's serial loop (~1e-6 seen in estimates); one token too many or too few is >= 2e-4. */
#define TOL_SCAN 5e-5
/* TOL_SUM: fp32 parameter gradients summed over every token (and head), partials in another
 * order than the CPU's per-thread partials. */
#define TOL_SUM 1e-4
/* RoPE angles: pos * theta^(-2j/D) in fp64 rounded to fp32 on both sides. */
#define TOL_ROPE 1e-6

/* The second layout (in small mode too, in which the speed part checks the conv:v2 variant:
 * runs of 64 tokens, tiles of 512) has segments starting at tokens 3, 66, 67, 512 (the first
 * token of a v2 tile), 513, 575 (the last token of a run, a segment of its own) and 576 (the
 * first of a run), the last one across the tiles' boundary at 1024. */
static const GtLayout layouts[] = {
    {"segs{1}", 1, {1}},
    {"segs{3,63,1,445,1,62,1,600}", 8, {3, 63, 1, 445, 1, 62, 1, 600}},
    {"segs{1,3,63,64,65,200}", 6, {1, 3, 63, 64, 65, 200}},
    {"segs{256,256,1,511,32,33}", 6, {256, 256, 1, 511, 32, 33}},
    {"segs{5000}", 1, {5000}},
};

static Seqs *layout_seqs(int l) { return gt_seqs(layouts[l].lens, layouts[l].nseg); }

/* ---- short conv ---- */

/* A conv of K taps (K < 4: BaseConv's; the weight's own layout [C, K]). */
static void conv_case(int l, int C, int K, int with_w, Activation act, int with_dw, int with_b) {
    Seqs *s = layout_seqs(l);
    int64_t N = s->ntok, n = N * C;
    const char *an = act == ACT_SILU ? "silu" : "none";
    char wn[16];
    snprintf(wn, sizeof wn, "%s K=%d", with_b ? "w+b" : with_w ? "w" : "diff", K);
    const char *lay = layouts[l].name;
    float *x = gt_rand(n, -1, 1), *dy = gt_rand(n, -1, 1);
    float *w = with_w ? gt_rand(K * C, -0.5, 0.5) : NULL,
          *b = with_b ? gt_rand(C, -0.5, 0.5) : NULL;
    void *gx = gt_act(x, n), *gdy = gt_act(dy, n), *gw = w ? gt_act(w, K * C) : NULL;
    void *gb = b ? gt_act(b, C) : NULL;

    float *cy = gt_zeros(n);
    gt_cpu->conv_fwd(cy, x, w, b, s, C, K, act);
    void *gy = gt_garbage_act(n);
    gt_gpu->conv_fwd(gy, gx, gw, gb, s, C, K, act);
    gt_compare(gt_name("conv_fwd y C=%d %s %s %s", C, wn, an, lay), gt_get_act(gy, n), cy, n,
               TOL_BF16);

    float *cdx = gt_zeros(n), *cdw = gt_zeros(K * C), *cdb = gt_zeros(C);
    gt_cpu->conv_bwd(cdx, with_dw ? cdw : NULL, cdb, dy, x, w, b, s, C, K, act);
    float *dw0 = gt_prefill(cdw, K * C), *db0 = gt_prefill(cdb, C);
    void *gdx = gt_garbage_act(n), *gdw = gt_f32(dw0, K * C), *gdb = gt_f32(db0, C);
    gt_gpu->conv_bwd(gdx, with_dw ? gdw : NULL, gdb, gdy, gx, gw, gb, s, C, K, act);
    if (with_b)
        gt_compare(gt_name("conv_bwd db+= C=%d %s %s", C, an, lay), gt_get_f32(gdb, C),
                   gt_plus(db0, cdb, C), C, TOL_SUM);
    else /* no bias: db stays as it was */
        gt_compare(gt_name("conv_bwd db untouched C=%d %s %s %s", C, wn, an, lay),
                   gt_get_f32(gdb, C), db0, C, 0);
    gt_compare(gt_name("conv_bwd dx C=%d %s %s %s", C, wn, an, lay), gt_get_act(gdx, n), cdx, n,
               TOL_BF16);
    if (with_w && with_dw)
        gt_compare(gt_name("conv_bwd dw+= C=%d %s %s %s", C, wn, an, lay), gt_get_f32(gdw, K * C),
                   gt_plus(dw0, cdw, K * C), K * C, TOL_SUM);
    else /* no weight (first difference) or no dw wanted: the buffer stays as it was */
        gt_compare(gt_name("conv_bwd dw untouched C=%d %s %s %s%s", C, wn, an, lay,
                           with_dw ? "" : " dw=NULL"),
                   gt_get_f32(gdw, K * C), dw0, K * C, 0);
    gt_reset();
}

static void test_conv(void) {
    static const int Cs[] = {16, 96, 1024};
    for (int l = 0; l < gt_layout_count(TH_COUNT(layouts)); l++)
        for (int ci = 0; ci < 3; ci++)
            for (int with_w = 0; with_w <= 1; with_w++)
                for (int a = 0; a <= 1; a++) {
                    Activation act = a ? ACT_SILU : ACT_NONE;
                    /* C=96 without activation: dw = NULL */
                    conv_case(l, Cs[ci], 4, with_w, act, !(Cs[ci] == 96 && !a), 0);
                    if (with_w) conv_case(l, Cs[ci], 4, 1, act, 1, 1); /* Mamba2's conv bias */
                    /* BaseConv's (3 taps, a bias, no activation); 1 tap: the weight-only edge */
                    if (with_w) conv_case(l, Cs[ci], a ? 1 : 3, 1, act, 1, !a);
                }
}

/* ---- FoX shift ---- */

static void shift_case(int l, int H, int D) {
    Seqs *s = layout_seqs(l);
    int64_t N = s->ntok, n = N * H * D;
    const char *lay = layouts[l].name;
    float *x = gt_rand(n, -1, 1), *al = gt_rand(N * H, -3, 3), *dy = gt_rand(n, -1, 1);
    void *gx = gt_act(x, n), *gal = gt_act(al, N * H), *gdy = gt_act(dy, n);

    float *cy = gt_zeros(n);
    gt_cpu->shift_fwd(cy, x, al, s, H, D);
    void *gy = gt_garbage_act(n);
    gt_gpu->shift_fwd(gy, gx, gal, s, H, D);
    gt_compare(gt_name("shift_fwd y H=%d D=%d %s", H, D, lay), gt_get_act(gy, n), cy, n, TOL_BF16);

    float *cdx = gt_zeros(n), *cda = gt_zeros(N * H);
    gt_cpu->shift_bwd(cdx, cda, dy, x, al, s, H, D);
    void *gdx = gt_garbage_act(n), *gda = gt_garbage_act(N * H);
    gt_gpu->shift_bwd(gdx, gda, gdy, gx, gal, s, H, D);
    gt_compare(gt_name("shift_bwd dx H=%d D=%d %s", H, D, lay), gt_get_act(gdx, n), cdx, n,
               TOL_BF16);
    /* a sum over D of products, then one bf16 rounding */
    gt_compare(gt_name("shift_bwd da_logit H=%d D=%d %s", H, D, lay), gt_get_act(gda, N * H), cda,
               N * H, TOL_BF16);
    gt_reset();
}

static void test_shift(void) {
    static const int HD[][2] = {{4, 64}, {2, 32}, {3, 100}};
    for (int l = 0; l < gt_layout_count(TH_COUNT(layouts)); l++)
        for (int k = 0; k < 3; k++) shift_case(l, HD[k][0], HD[k][1]);
}

/* ---- reverse cumulative sum ---- */

static void revcumsum_case(int l, int C) {
    Seqs *s = layout_seqs(l);
    int64_t n = s->ntok * C;
    const char *lay = layouts[l].name;
    float *x = gt_rand(n, -1, 2); /* positive mean: long sums grow, a lost token shows */
    float *cy = gt_zeros(n);
    cpu_revcumsum(cy, x, s, C);
    void *gx = gt_f32(x, n), *gy = gt_garbage_f32(n);
    cuda_revcumsum(gy, gx, s, C);
    gt_compare(gt_name("revcumsum y C=%d %s", C, lay), gt_get_f32(gy, n), cy, n, TOL_SCAN);
    cuda_revcumsum(gx, gx, s, C);
    gt_compare(gt_name("revcumsum in place C=%d %s", C, lay), gt_get_f32(gx, n), cy, n, TOL_SCAN);
    gt_reset();
}

static void test_revcumsum(void) {
    static const int Cs[] = {1, 16, 40};
    for (int l = 0; l < gt_layout_count(TH_COUNT(layouts)); l++)
        for (int k = 0; k < 3; k++) revcumsum_case(l, Cs[k]);
}

/* ---- RoPE ---- */

static void test_rope_angles(void) {
    static const int Ds[] = {16, 64, 128};
    for (int l = 0; l < gt_layout_count(TH_COUNT(layouts)); l++)
        for (int k = 0; k < 3; k++)
            for (int t = 0; t < 2; t++) {
                double theta = t ? 10000.0 : 500000.0;
                int D = Ds[k];
                Seqs *s = layout_seqs(l);
                int64_t n = s->ntok * (D / 2);
                float *ca = gt_zeros(n);
                gt_cpu->rope_angles(ca, s, D, theta);
                void *ga = gt_garbage_f32(n);
                gt_gpu->rope_angles(ga, s, D, theta);
                gt_compare(gt_name("rope_angles D=%d theta=%g %s", D, theta, layouts[l].name),
                           gt_get_f32(ga, n), ca, n, TOL_ROPE);
                gt_reset();
            }
}

static void rotate_case(int64_t N, int H, int D, int per_head, int with_dangle) {
    int64_t n = N * H * D, na = N * (per_head ? H : 1) * (D / 2);
    const char *mode = per_head ? "per_head" : "shared";
    float *x = gt_rand(n, -1, 1), *dy = gt_rand(n, -1, 1), *angle = gt_rand(na, -100, 100);
    void *gx = gt_act(x, n), *gdy = gt_act(dy, n), *gangle = gt_f32(angle, na);

    float *cy = gt_zeros(n);
    gt_cpu->rotate_fwd(cy, x, angle, N, H, D, per_head);
    void *gy = gt_garbage_act(n);
    gt_gpu->rotate_fwd(gy, gx, gangle, N, H, D, per_head);
    gt_compare(gt_name("rotate_fwd y N=%lld H=%d D=%d %s", (long long)N, H, D, mode),
               gt_get_act(gy, n), cy, n, TOL_BF16);

    float *cdx = gt_zeros(n), *cdangle = gt_zeros(na);
    gt_cpu->rotate_bwd(cdx, with_dangle ? cdangle : NULL, dy, x, angle, N, H, D, per_head);
    float *dangle0 = gt_prefill(cdangle, na);
    void *gdx = gt_garbage_act(n), *gdangle = gt_f32(dangle0, na);
    gt_gpu->rotate_bwd(gdx, with_dangle ? gdangle : NULL, gdy, gx, gangle, N, H, D, per_head);
    gt_compare(gt_name("rotate_bwd dx N=%lld H=%d D=%d %s%s", (long long)N, H, D, mode,
                       with_dangle ? "" : " dangle=NULL"),
               gt_get_act(gdx, n), cdx, n, TOL_BF16);
    if (with_dangle) /* fp32 products of bf16 inputs and fp32 sin/cos */
        gt_compare(gt_name("rotate_bwd dangle+= N=%lld H=%d D=%d", (long long)N, H, D),
                   gt_get_f32(gdangle, na), gt_plus(dangle0, cdangle, na), na, TOL_F32);
    gt_reset();
}

static void test_rotate(void) {
    static const int HD[][2] = {{2, 16}, {4, 128}, {16, 64}, {3, 4}};
    static const int64_t Ns[] = {1, 396, 5000};
    for (int k = 0; k < 3; k++)
        for (int q = 0; q < 4; q++)
            for (int per_head = 0; per_head <= 1; per_head++)
                for (int with_dangle = 0; with_dangle <= per_head; with_dangle++)
                    rotate_case(Ns[k], HD[q][0], HD[q][1], per_head, with_dangle);
}

/* ---- weight norm ---- */

static void weightnorm_case(int H, int Din, int P) {
    int64_t n = (int64_t)H * Din * P;
    float *w = gt_rand(n, -1, 1), *scale = gt_rand(H, 0.5, 2), *dwn = gt_randn(n, 1.0);
    void *gw = gt_act(w, n), *gscale = gt_act(scale, H), *gdwn = gt_f32(dwn, n);

    float *cwn = gt_zeros(n);
    gt_cpu->weightnorm_fwd(cwn, w, scale, H, Din, P);
    void *gwn = gt_garbage_act(n);
    gt_gpu->weightnorm_fwd(gwn, gw, gscale, H, Din, P);
    gt_compare(gt_name("weightnorm_fwd wn H=%d Din=%d P=%d", H, Din, P), gt_get_act(gwn, n), cwn, n,
               TOL_BF16);

    float *cdw = gt_zeros(n), *cdscale = gt_zeros(H);
    gt_cpu->weightnorm_bwd(cdw, cdscale, dwn, w, scale, H, Din, P);
    float *dw0 = gt_prefill(cdw, n), *dscale0 = gt_prefill(cdscale, H);
    void *gdw = gt_f32(dw0, n), *gdscale = gt_f32(dscale0, H);
    gt_gpu->weightnorm_bwd(gdw, gdscale, gdwn, gw, gscale, H, Din, P);
    /* fp32 sums over Din (and P for dscale) of bf16 x fp32 products */
    gt_compare(gt_name("weightnorm_bwd dw+= H=%d Din=%d P=%d", H, Din, P), gt_get_f32(gdw, n),
               gt_plus(dw0, cdw, n), n, TOL_F32);
    gt_compare(gt_name("weightnorm_bwd dscale+= H=%d Din=%d P=%d", H, Din, P),
               gt_get_f32(gdscale, H), gt_plus(dscale0, cdscale, H), H, TOL_F32);
    gt_reset();
}

static void test_weightnorm(void) {
    static const int shapes[][3] = {
        {2, 16, 8}, {16, 64, 32}, {4, 256, 64}, {8, 128, 64}, {3, 20, 6}};
    for (int k = 0; k < 5; k++) weightnorm_case(shapes[k][0], shapes[k][1], shapes[k][2]);
}

static const TestCase tests[] = {
    {"conv", test_conv},           {"shift", test_shift},
    {"revcumsum", test_revcumsum}, {"rope_angles", test_rope_angles},
    {"rotate", test_rotate},       {"weightnorm", test_weightnorm},
};

GT_MAIN(tests)
