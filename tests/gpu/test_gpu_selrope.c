/* GPU test of the fused Selective RoPE op (kernels/ops/selrope.cu) against the CPU backend's
 * reference (src/cpu/selrope.c): the forward (Phi, qo, ko) and the backward (dq, dk,
 * dphi_raw, dconv_w, dbias, dgate_logit, dtemp) for the head shapes of the tiny and 370M
 * configs, the angle conv variants of the configs (weight + SiLU, weight without activation,
 * skip_conv's first difference), every bias / phase gate / temperature-gradient combination,
 * on segment layouts whose boundaries fall at and around the scan's runs (32 tokens) and
 * tiles (256 tokens; 64 and 128 in the variants r8, r16), one segment spanning several tiles.
 *
 * Activation outputs start as garbage on the GPU (the op must overwrite them). Parameter
 * gradients start from random values at the scale of the gradient itself and must end at
 * start + the CPU's gradient from zero; a gradient whose option is off (dconv_w without a
 * conv weight, dbias without bias) or that is not asked for (dtemp NULL) must stay as it was. */
#include <stdio.h>

#include "gpu_test.h"

/* Tolerances, relative to the largest reference value (gpu_test.h):
 * TOL_BF16: one bf16 rounding of an fp32 result, up to half an ulp of 8 significant bits:
 * 2^-8 = 3.9e-3 of the largest value when it sits at the bottom of its binade, plus fp32
 * noise. For the rotated q and k (the forward against the CPU rotation by the GPU's own
 * angles temp_j Phi, so that the scan's rounding does not enter; the backward from the CPU's
 * Phi), dphi_raw (fp32 scan, gate and conv backward, one rounding), dgate_logit (an fp32 sum
 * over the P channels, one rounding). A wrong pair, angle or token is an O(1) error. */
#define TOL_BF16 5e-3
/* TOL_SCAN: Phi, fp32 cumulative sums over up to 1000 tokens in another order than the CPU's
 * serial loop (~1e-6 expected); one token too many or too few is >= 2e-4 here (increments
 * of order 1 on sums below 5000). */
#define TOL_SCAN 5e-5
/* TOL_SUM: fp32 parameter gradients summed over every token (and head), partials in another
 * order than the CPU's per-thread partials (dbias, dconv_w: ~1e-6 expected). */
#define TOL_SUM 1e-4
/* TOL_DTEMP: dtemp sums dangle Phi over every token and head with |Phi| up to ~2000: the CPU's
 * serial fp32 sums carry up to ~1e-4 of error themselves (5e-5 seen in an emulated run with
 * P = 2); one token's term missing is ~1e-2. */
#define TOL_DTEMP 5e-4

/* {1}: a single token; then segments ending at tokens 64, 65 and 128, 129 (the first tokens
 * of a tile of the selrope variants r8 and r16: 64 and 128 tokens) and one across the first
 * tile boundary of each (the two layouts of small mode, in which the speed part checks the
 * variants); then the lengths around the run size and the chunk size, the last
 * segment across the first tile boundary; segments ending at tokens 256 and 257 (the first
 * tokens of a tile, whose sums the previous tile's conv backward needs) and a segment across
 * the second tile boundary; one segment of 1000 tokens over four tiles. */
static const GtLayout layouts[] = {
    {"segs{1}", 1, {1}},
    {"segs{3,62,1,63,1,130,300}", 7, {3, 62, 1, 63, 1, 130, 300}},
    {"segs{1,2,3,63,64,65,300}", 7, {1, 2, 3, 63, 64, 65, 300}},
    {"segs{255,2,1,40,300}", 5, {255, 2, 1, 40, 300}},
    {"segs{254,3,1,2,1000}", 5, {254, 3, 1, 2, 1000}},
};

typedef enum { CONV_SILU, CONV_NONE, CONV_DIFF } ConvKind;
static const char *conv_names[] = {"conv+silu", "conv", "diff"};

static void selrope_case(int l, int H, int P, ConvKind conv, int with_bias, int with_gate,
                         int with_dtemp) {
    Seqs *s = gt_seqs(layouts[l].lens, layouts[l].nseg);
    int64_t N = s->ntok, C = (int64_t)H * P, n = N * C, nq = 2 * n, nh = N * H;
    int D = 2 * P, with_w = conv != CONV_DIFF;
    Activation act = conv == CONV_SILU ? ACT_SILU : ACT_NONE;
    char cfg[160];
    snprintf(cfg, sizeof cfg, "H=%d P=%d %s%s%s%s %s", H, P, conv_names[conv],
             with_bias ? " bias" : "", with_gate ? " gate" : "", with_dtemp ? " dtemp" : "",
             layouts[l].name);
    float *q = gt_rand(nq, -1, 1), *k = gt_rand(nq, -1, 1), *phi_raw = gt_rand(n, -1, 1);
    float *w = with_w ? gt_rand(4 * C, -0.5, 0.5) : NULL;
    float *bias = with_bias ? gt_rand(C, -1, 0.5) : NULL;
    float *gl = with_gate ? gt_rand(nh, -3, 3) : NULL;
    /* angles temp_j Phi up to a few hundred radians on the longest segment */
    float *temp = gt_rand(P, 0.01, 0.05);
    void *gq = gt_act(q, nq), *gk = gt_act(k, nq), *gphi = gt_act(phi_raw, n);
    void *gw = w ? gt_act(w, 4 * C) : NULL, *gbias = bias ? gt_act(bias, C) : NULL;
    void *ggl = gl ? gt_act(gl, nh) : NULL, *gtemp = gt_f32(temp, P);

    /* ---- forward ---- */
    float *cqo = gt_zeros(nq), *cko = gt_zeros(nq), *cPhi = gt_zeros(n);
    gt_cpu->selrope_fwd(&(SelRopeArgs){.s = s,
                                       .H = H,
                                       .P = P,
                                       .q = q,
                                       .k = k,
                                       .phi_raw = phi_raw,
                                       .conv_w = w,
                                       .conv_act = act,
                                       .bias = bias,
                                       .gate_logit = gl,
                                       .temp = temp,
                                       .qo = cqo,
                                       .ko = cko,
                                       .Phi = cPhi});
    void *gqo = gt_garbage_act(nq), *gko = gt_garbage_act(nq), *gPhi = gt_garbage_f32(n);
    gt_gpu->selrope_fwd(&(SelRopeArgs){.s = s,
                                       .H = H,
                                       .P = P,
                                       .q = gq,
                                       .k = gk,
                                       .phi_raw = gphi,
                                       .conv_w = gw,
                                       .conv_act = act,
                                       .bias = gbias,
                                       .gate_logit = ggl,
                                       .temp = gtemp,
                                       .qo = gqo,
                                       .ko = gko,
                                       .Phi = gPhi});
    float *Phi = gt_get_f32(gPhi, n);
    gt_compare(gt_name("selrope_fwd Phi %s", cfg), Phi, cPhi, n, TOL_SCAN);
    float *angle = gt_zeros(n), *rqo = gt_zeros(nq), *rko = gt_zeros(nq);
    for (int64_t i = 0; i < n; i++) angle[i] = temp[i % P] * Phi[i];
    gt_cpu->rotate_fwd(rqo, q, angle, N, H, D, 1);
    gt_cpu->rotate_fwd(rko, k, angle, N, H, D, 1);
    gt_compare(gt_name("selrope_fwd qo %s", cfg), gt_get_act(gqo, nq), rqo, nq, TOL_BF16);
    gt_compare(gt_name("selrope_fwd ko %s", cfg), gt_get_act(gko, nq), rko, nq, TOL_BF16);

    /* ---- backward, from the CPU's Phi on both sides ---- */
    float *dqo = gt_rand(nq, -1, 1), *dko = gt_rand(nq, -1, 1);
    float *cdq = gt_zeros(nq), *cdk = gt_zeros(nq), *cdphi = gt_zeros(n), *cdw = gt_zeros(4 * C);
    float *cdb = gt_zeros(C), *cdgl = gt_zeros(nh), *cdt = gt_zeros(P);
    gt_cpu->selrope_bwd(&(SelRopeGrads){.a = {.s = s,
                                              .H = H,
                                              .P = P,
                                              .q = q,
                                              .k = k,
                                              .phi_raw = phi_raw,
                                              .conv_w = w,
                                              .conv_act = act,
                                              .bias = bias,
                                              .gate_logit = gl,
                                              .temp = temp,
                                              .Phi = cPhi},
                                        .dqo = dqo,
                                        .dko = dko,
                                        .dq = cdq,
                                        .dk = cdk,
                                        .dphi_raw = cdphi,
                                        .dconv_w = cdw,
                                        .dbias = cdb,
                                        .dgate_logit = with_gate ? cdgl : NULL,
                                        .dtemp = with_dtemp ? cdt : NULL});
    float *dw0 = gt_prefill(cdw, 4 * C), *db0 = gt_prefill(cdb, C), *dt0 = gt_prefill(cdt, P);
    void *gdq = gt_garbage_act(nq), *gdk = gt_garbage_act(nq), *gdphi = gt_garbage_act(n);
    void *gdgl = gt_garbage_act(nh), *gdw = gt_f32(dw0, 4 * C), *gdb = gt_f32(db0, C);
    void *gdt = gt_f32(dt0, P), *gdqo = gt_act(dqo, nq), *gdko = gt_act(dko, nq);
    /* dconv_w and dbias are always passed: without conv weight or bias they are ignored */
    gt_gpu->selrope_bwd(&(SelRopeGrads){.a = {.s = s,
                                              .H = H,
                                              .P = P,
                                              .q = gq,
                                              .k = gk,
                                              .phi_raw = gphi,
                                              .conv_w = gw,
                                              .conv_act = act,
                                              .bias = gbias,
                                              .gate_logit = ggl,
                                              .temp = gtemp,
                                              .Phi = gt_f32(cPhi, n)},
                                        .dqo = gdqo,
                                        .dko = gdko,
                                        .dq = gdq,
                                        .dk = gdk,
                                        .dphi_raw = gdphi,
                                        .dconv_w = gdw,
                                        .dbias = gdb,
                                        .dgate_logit = with_gate ? gdgl : NULL,
                                        .dtemp = with_dtemp ? gdt : NULL});
    gt_compare(gt_name("selrope_bwd dq %s", cfg), gt_get_act(gdq, nq), cdq, nq, TOL_BF16);
    gt_compare(gt_name("selrope_bwd dk %s", cfg), gt_get_act(gdk, nq), cdk, nq, TOL_BF16);
    gt_compare(gt_name("selrope_bwd dphi_raw %s", cfg), gt_get_act(gdphi, n), cdphi, n, TOL_BF16);
    if (with_gate)
        gt_compare(gt_name("selrope_bwd dgate_logit %s", cfg), gt_get_act(gdgl, nh), cdgl, nh,
                   TOL_BF16);
    if (with_w)
        gt_compare(gt_name("selrope_bwd dconv_w+= %s", cfg), gt_get_f32(gdw, 4 * C),
                   gt_plus(dw0, cdw, 4 * C), 4 * C, TOL_SUM);
    else
        gt_compare(gt_name("selrope_bwd dconv_w untouched %s", cfg), gt_get_f32(gdw, 4 * C), dw0,
                   4 * C, 0);
    if (with_bias)
        gt_compare(gt_name("selrope_bwd dbias+= %s", cfg), gt_get_f32(gdb, C), gt_plus(db0, cdb, C),
                   C, TOL_SUM);
    else
        gt_compare(gt_name("selrope_bwd dbias untouched %s", cfg), gt_get_f32(gdb, C), db0, C, 0);
    if (with_dtemp)
        gt_compare(gt_name("selrope_bwd dtemp+= %s", cfg), gt_get_f32(gdt, P), gt_plus(dt0, cdt, P),
                   P, TOL_DTEMP);
    else
        gt_compare(gt_name("selrope_bwd dtemp untouched %s", cfg), gt_get_f32(gdt, P), dt0, P, 0);
    gt_reset();
}

/* Every layout, conv variant and option combination for one head shape. */
static void shape_cases(int H, int P) {
    for (int l = 0; l < gt_layout_count(TH_COUNT(layouts)); l++)
        for (int conv = CONV_SILU; conv <= CONV_DIFF; conv++)
            for (int opt = 0; opt < 8; opt++)
                selrope_case(l, H, P, (ConvKind)conv, opt & 1, opt >> 1 & 1, opt >> 2 & 1);
}

/* tiny configs (dk 8, 16), GLA/GDN 370M (dk 128: P = 64), FoX 370M (D 64: P = 32, 16 heads),
 * and P = 2 (a head in one lane) */
static void test_h2_p4(void) { shape_cases(2, 4); }
static void test_h2_p8(void) { shape_cases(2, 8); }
static void test_h4_p64(void) { shape_cases(4, 64); }
static void test_h16_p32(void) { shape_cases(16, 32); }
static void test_h3_p2(void) { shape_cases(3, 2); }

static const TestCase tests[] = {
    {"h2_p4", test_h2_p4},     {"h2_p8", test_h2_p8}, {"h4_p64", test_h4_p64},
    {"h16_p32", test_h16_p32}, {"h3_p2", test_h3_p2},
};

GT_MAIN(tests)
