/* GPU tests of the LRU and RotRNN ops (kernels/ops/cscan.cu, kernels/ops/lru_weights.cu,
 * kernels/ops/rotrnn.cu; docs/models.md §lru, §rotrnn) against the CPU backend: the complex scan
 * forward (h and each segment's final state) and backward (dx, dloga, dangle) on several segment
 * layouts and decay strengths, its decoding step, the LRU's weights, expm(M - M^T) and its gradient
 * through the Frechet derivative, and RotRNN's weights, forward and backward (each with the
 * reverse readout of a bidirectional layer), and segment_reverse (docs/models.md
 * §block-dropout-bidirectional).
 *
 * Outputs the ops overwrite start as garbage on the GPU; parameter gradients start from random
 * values (gt_prefill) and must end at start + the CPU's gradient. The backward of the scan runs
 * on the CPU's h rounded to bf16 on the GPU side, as the forward would leave it.
 *
 * Tolerances, relative to the largest reference value (gpu_test.h):
 *   TOL_BF16 8e-3: one bf16 rounding of an fp32 result (h, dx, Bw, Cw);
 *   TOL_STATE 2e-3: fp32 states after up to 5000 steps, whose eigenvalues come from expf and
 *     sincosf on the GPU and from fp64 on the CPU (an ulp of lambda grows by the step count);
 *   TOL_SUM 1e-2: the eigenvalue gradients, sums over every token of G conj(lambda h) with h in
 *     bf16 on the GPU and fp32 on the CPU;
 *   TOL_F32 1e-5: fp32 elementwise results and short sums;
 *   TOL_EXPM 3e-4: fp32 Taylor steps and up to 8 squarings (each doubles the rounding error)
 *     against the CPU's fp64. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_test.h"

#define TOL_BF16 8e-3
#define TOL_STATE 2e-3
#define TOL_SUM 1e-2
#define TOL_F32 1e-5
#define TOL_EXPM 3e-4

static const GtLayout layouts[] = {
    {"{1}", 1, {1}},
    {"{1,63,64,65,130,7}", 6, {1, 63, 64, 65, 130, 7}},
    {"{5000}", 1, {5000}},
};

/* ---- the scan ---- */

static void cscan_case(const GtLayout *lay, int C, double alo, double ahi) {
    Seqs *s = gt_seqs(lay->lens, lay->nseg);
    int64_t N = s->ntok, n = N * 2 * C, nf = (int64_t)lay->nseg * 2 * C,
            ns = chunk_states_size(s, 1, C, 2);
    float *x = gt_randn(n, 1.0), *dh = gt_randn(n, 1.0);
    float *loga = gt_rand(C, alo, ahi), *angle = gt_rand(C, -3.14, 3.14);
    void *xd = gt_act(x, n), *lad = gt_f32(loga, C), *angd = gt_f32(angle, C);
    float *hc = gt_zeros(n), *fc = gt_zeros(nf);
    CScanArgs ac = {.s = s,
                    .C = C,
                    .loga = loga,
                    .angle = angle,
                    .x = x,
                    .h = hc,
                    .states = gt_zeros(ns),
                    .state = fc};
    gt_cpu->cscan_fwd(&ac);
    void *hd = gt_garbage_act(n), *fd = gt_garbage_f32(nf);
    CScanArgs ad = {.s = s,
                    .C = C,
                    .loga = lad,
                    .angle = angd,
                    .x = xd,
                    .h = hd,
                    .states = gt_garbage_f32(ns),
                    .state = fd};
    gt_gpu->cscan_fwd(&ad);
    const char *tag = lay->name;
    gt_compare(gt_name("cscan_fwd h C=%d loga[%g,%g] %s", C, alo, ahi, tag), gt_get_act(hd, n), hc,
               n, TOL_BF16);
    gt_compare(gt_name("cscan_fwd final state C=%d loga[%g,%g] %s", C, alo, ahi, tag),
               gt_get_f32(fd, nf), fc, nf, TOL_STATE);

    float *dxc = gt_zeros(n), *dlac = gt_zeros(C), *danc = gt_zeros(C);
    gt_cpu->cscan_bwd(&(CScanGrads){.a = ac, .dh = dh, .dx = dxc, .dloga = dlac, .dangle = danc});
    ad.h = gt_act(hc, n);
    void *dxd = gt_garbage_act(n), *dlad = gt_garbage_f32(C), *dand = gt_garbage_f32(C);
    gt_gpu->cscan_bwd(
        &(CScanGrads){.a = ad, .dh = gt_act(dh, n), .dx = dxd, .dloga = dlad, .dangle = dand});
    gt_compare(gt_name("cscan_bwd dx C=%d loga[%g,%g] %s", C, alo, ahi, tag), gt_get_act(dxd, n),
               dxc, n, TOL_BF16);
    gt_compare(gt_name("cscan_bwd dloga C=%d loga[%g,%g] %s", C, alo, ahi, tag),
               gt_get_f32(dlad, C), dlac, C, TOL_SUM);
    gt_compare(gt_name("cscan_bwd dangle C=%d loga[%g,%g] %s", C, alo, ahi, tag),
               gt_get_f32(dand, C), danc, C, TOL_SUM);
    /* accumulate (the bidirectional layer's second scan, docs/models.md
     * §block-dropout-bidirectional): onto the values there */
    float *pre = gt_randn(C, 1);
    void *dlaa = gt_f32(pre, C), *dana = gt_f32(pre, C);
    gt_gpu->cscan_bwd(&(CScanGrads){
        .a = ad, .dh = gt_act(dh, n), .dx = dxd, .dloga = dlaa, .dangle = dana, .accumulate = 1});
    gt_compare(gt_name("cscan_bwd dloga += C=%d %s", C, tag), gt_get_f32(dlaa, C),
               gt_plus(pre, dlac, C), C, TOL_SUM);
    gt_compare(gt_name("cscan_bwd dangle += C=%d %s", C, tag), gt_get_f32(dana, C),
               gt_plus(pre, danc, C), C, TOL_SUM);
    gt_reset();
}

static void test_cscan(void) {
    for (int l = 0; l < gt_layout_count(TH_COUNT(layouts)); l++) {
        cscan_case(&layouts[l], 300, -0.05, -0.001); /* states across many chunks */
        cscan_case(&layouts[l], 7, -3.0, -0.5);      /* gone within a chunk */
    }
}

/* Three steps in a row from random states, rows at position 0 (a zero state) and far out. */
static void test_cscan_step(void) {
    enum { B = 5, C = 200 };
    static const int32_t pos0[B] = {0, 1, 7, 64, 4000};
    int64_t n = (int64_t)B * 2 * C;
    float *loga = gt_rand(C, -0.5, -0.001), *angle = gt_rand(C, -3.14, 3.14);
    float *sc = gt_randn(n, 1.0);
    void *lad = gt_f32(loga, C), *angd = gt_f32(angle, C), *sd = gt_f32(sc, n);
    for (int t = 0; t < 3; t++) {
        int32_t pos[B];
        for (int b = 0; b < B; b++) pos[b] = pos0[b] + t;
        Seqs *s = gt_step_seqs(pos, B);
        float *x = gt_randn(n, 1.0), *hc = gt_zeros(n);
        gt_cpu->cscan_step(&(CScanArgs){
            .s = s, .C = C, .loga = loga, .angle = angle, .x = x, .h = hc, .state = sc});
        void *hd = gt_garbage_act(n);
        gt_gpu->cscan_step(&(CScanArgs){
            .s = s, .C = C, .loga = lad, .angle = angd, .x = gt_act(x, n), .h = hd, .state = sd});
        gt_compare(gt_name("cscan_step h step %d", t), gt_get_act(hd, n), hc, n, TOL_BF16);
        gt_compare(gt_name("cscan_step state step %d", t), gt_get_f32(sd, n), sc, n, TOL_F32);
    }
    gt_reset();
}

/* ---- the LRU's weights ---- */

static void test_lru_weights(void) {
    const int N = 24, d = 40;
    const int64_t nb = (int64_t)N * d;
    float *nu = gt_rand(N, -3, 1), *th = gt_rand(N, -3, 1.5), *gl = gt_rand(N, -2, 0);
    float *Br = gt_randn(nb, 0.3), *Bi = gt_randn(nb, 0.3), *Cr = gt_randn(nb, 0.3),
          *Ci = gt_randn(nb, 0.3);
    float *Cr2 = gt_randn(nb, 0.3), *Ci2 = gt_randn(nb, 0.3);
    LruWeights wc = {N,
                     d,
                     nu,
                     th,
                     gl,
                     Br,
                     Bi,
                     Cr,
                     Ci,
                     gt_zeros(N),
                     gt_zeros(N),
                     gt_zeros(2 * nb),
                     gt_zeros(2 * nb),
                     Cr2,
                     Ci2,
                     gt_zeros(2 * nb)};
    LruWeights wd = {N,
                     d,
                     gt_f32(nu, N),
                     gt_f32(th, N),
                     gt_f32(gl, N),
                     gt_f32(Br, nb),
                     gt_f32(Bi, nb),
                     gt_f32(Cr, nb),
                     gt_f32(Ci, nb),
                     gt_garbage_f32(N),
                     gt_garbage_f32(N),
                     gt_garbage_act(2 * nb),
                     gt_garbage_act(2 * nb),
                     gt_f32(Cr2, nb),
                     gt_f32(Ci2, nb),
                     gt_garbage_act(2 * nb)};
    gt_cpu->lru_weights_fwd(&wc);
    gt_gpu->lru_weights_fwd(&wd);
    gt_compare("lru_weights loga", gt_get_f32(wd.loga, N), wc.loga, N, TOL_F32);
    gt_compare("lru_weights angle", gt_get_f32(wd.angle, N), wc.angle, N, TOL_F32);
    gt_compare("lru_weights Bw", gt_get_act(wd.Bw, 2 * nb), wc.Bw, 2 * nb, TOL_BF16);
    gt_compare("lru_weights Cw", gt_get_act(wd.Cw, 2 * nb), wc.Cw, 2 * nb, TOL_BF16);
    gt_compare("lru_weights Cw2", gt_get_act(wd.Cw2, 2 * nb), wc.Cw2, 2 * nb, TOL_BF16);

    float *dla = gt_randn(N, 1), *dan = gt_randn(N, 1), *dBw = gt_randn(2 * nb, 1),
          *dCw = gt_randn(2 * nb, 1);
    float *dCw2 = gt_randn(2 * nb, 1);
    int64_t sizes[9] = {N, N, N, nb, nb, nb, nb, nb, nb};
    float *gc[9];
    void *gd[9];
    for (int i = 0; i < 9; i++) gc[i] = gt_zeros(sizes[i]);
    gt_cpu->lru_weights_bwd(&(LruWeightGrads){wc, dla, dan, dBw, dCw, gc[0], gc[1], gc[2], gc[3],
                                              gc[4], gc[5], gc[6], dCw2, gc[7], gc[8]});
    float *pre[9];
    for (int i = 0; i < 9; i++)
        pre[i] = gt_prefill(gc[i], sizes[i]), gd[i] = gt_f32(pre[i], sizes[i]);
    wd.Bw = wd.Cw = NULL; /* not read by the backward (Cw2 only says that there is a C2) */
    gt_gpu->lru_weights_bwd(&(LruWeightGrads){
        wd, gt_f32(dla, N), gt_f32(dan, N), gt_f32(dBw, 2 * nb), gt_f32(dCw, 2 * nb), gd[0], gd[1],
        gd[2], gd[3], gd[4], gd[5], gd[6], gt_f32(dCw2, 2 * nb), gd[7], gd[8]});
    static const char *names[9] = {"dnu_log", "dtheta_log", "dgamma_log", "dB_re", "dB_im",
                                   "dC_re",   "dC_im",      "dC_re2",     "dC_im2"};
    for (int i = 0; i < 9; i++)
        gt_compare(gt_name("lru_weights_bwd %s +=", names[i]), gt_get_f32(gd[i], sizes[i]),
                   gt_plus(pre[i], gc[i], sizes[i]), sizes[i], TOL_F32);
    gt_reset();
}

/* ---- RotRNN: expm and the weights ---- */

static void expm_case(int H, int n) {
    int64_t nm = (int64_t)H * n * n;
    float *M = gt_randn(nm, 1.0), *Pc = gt_zeros(nm), *dP = gt_randn(nm, 1.0);
    void *Md = gt_f32(M, nm), *work = gt_garbage_f32(orth_expm_work_size(H, n)),
         *Pd = gt_garbage_f32(nm);
    gt_cpu->orth_expm_fwd(Pc, M, NULL, H, n);
    gt_gpu->orth_expm_fwd(Pd, Md, work, H, n);
    gt_compare(gt_name("orth_expm P H=%d n=%d", H, n), gt_get_f32(Pd, nm), Pc, nm, TOL_EXPM);
    float *dMc = gt_zeros(nm);
    gt_cpu->orth_expm_bwd(dMc, dP, M, NULL, H, n);
    float *pre = gt_prefill(dMc, nm);
    void *dMd = gt_f32(pre, nm);
    gt_gpu->orth_expm_bwd(dMd, gt_f32(dP, nm), Md, work, H, n);
    gt_compare(gt_name("orth_expm dM += H=%d n=%d", H, n), gt_get_f32(dMd, nm),
               gt_plus(pre, dMc, nm), nm, TOL_EXPM);
    gt_reset();
}

static void test_orth_expm(void) {
    expm_case(3, 2);
    expm_case(4, 8);
    expm_case(2, 32);
    expm_case(2, 64);
}

static void rotrnn_weights_case(int H, int n, int d) {
    int64_t nP = (int64_t)H * n * n, C = (int64_t)H * n / 2, nB = (int64_t)H * n * d;
    float *M = gt_randn(nP, 1.0), *P = gt_zeros(nP);
    gt_cpu->orth_expm_fwd(P, M, NULL, H, n);
    float *gl = gt_rand(H, -7, -2), *th = gt_rand(C, 0, 6.28), *B = gt_randn(nB, 0.2),
          *Cm = gt_randn(nB, 0.2);
    float *C2 = gt_randn(nB, 0.2);
    RotWeights wc = {
        H,           n,           d,           P,           gl,           th,           B,
        Cm,          gt_zeros(H), gt_zeros(C), gt_zeros(C), gt_zeros(nB), gt_zeros(nB), C2,
        gt_zeros(nB)};
    RotWeights wd = {H,
                     n,
                     d,
                     gt_f32(P, nP),
                     gt_f32(gl, H),
                     gt_f32(th, C),
                     gt_f32(B, nB),
                     gt_f32(Cm, nB),
                     gt_garbage_f32(H),
                     gt_garbage_f32(C),
                     gt_garbage_f32(C),
                     gt_garbage_act(nB),
                     gt_garbage_act(nB),
                     gt_f32(C2, nB),
                     gt_garbage_act(nB)};
    gt_cpu->rotrnn_weights_fwd(&wc);
    gt_gpu->rotrnn_weights_fwd(&wd);
    char t[64];
    snprintf(t, sizeof t, "H=%d n=%d d=%d", H, n, d);
    gt_compare(gt_name("rotrnn_weights xi %s", t), gt_get_f32(wd.xi, H), wc.xi, H, TOL_F32);
    gt_compare(gt_name("rotrnn_weights loga %s", t), gt_get_f32(wd.loga, C), wc.loga, C, TOL_F32);
    gt_compare(gt_name("rotrnn_weights angle %s", t), gt_get_f32(wd.angle, C), wc.angle, C,
               TOL_F32);
    gt_compare(gt_name("rotrnn_weights Bw %s", t), gt_get_act(wd.Bw, nB), wc.Bw, nB, TOL_BF16);
    gt_compare(gt_name("rotrnn_weights Cw %s", t), gt_get_act(wd.Cw, nB), wc.Cw, nB, TOL_BF16);
    gt_compare(gt_name("rotrnn_weights Cw2 %s", t), gt_get_act(wd.Cw2, nB), wc.Cw2, nB, TOL_BF16);

    float *dla = gt_randn(C, 1), *dan = gt_randn(C, 1), *dBw = gt_randn(nB, 1),
          *dCw = gt_randn(nB, 1);
    float *dCw2 = gt_randn(nB, 1);
    int64_t sizes[5] = {H, C, nB, nB, nB};
    float *gc[5], *pre[5], *dPc = gt_zeros(nP);
    void *gd[5];
    for (int i = 0; i < 5; i++) gc[i] = gt_zeros(sizes[i]);
    gt_cpu->rotrnn_weights_bwd(&(RotWeightGrads){wc, dla, dan, dBw, dCw, dPc, gt_zeros(H), gc[0],
                                                 gc[1], gc[2], gc[3], dCw2, gc[4]});
    for (int i = 0; i < 5; i++)
        pre[i] = gt_prefill(gc[i], sizes[i]), gd[i] = gt_f32(pre[i], sizes[i]);
    void *dPd = gt_garbage_f32(nP);
    wd.xi = gt_f32(wc.xi, H); /* the CPU's, as the backward reads the forward's */
    gt_gpu->rotrnn_weights_bwd(
        &(RotWeightGrads){wd, gt_f32(dla, C), gt_f32(dan, C), gt_f32(dBw, nB), gt_f32(dCw, nB), dPd,
                          gt_garbage_f32(H), gd[0], gd[1], gd[2], gd[3], gt_f32(dCw2, nB), gd[4]});
    gt_compare(gt_name("rotrnn_weights_bwd dP %s", t), gt_get_f32(dPd, nP), dPc, nP, TOL_F32 * 10);
    static const char *names[5] = {"dgamma_log", "dtheta", "dB", "dC", "dC2"};
    for (int i = 0; i < 5; i++)
        gt_compare(gt_name("rotrnn_weights_bwd %s += %s", names[i], t), gt_get_f32(gd[i], sizes[i]),
                   gt_plus(pre[i], gc[i], sizes[i]), sizes[i], TOL_F32 * 10);
    gt_reset();
}

static void test_rotrnn_weights(void) {
    rotrnn_weights_case(1, 2, 5);
    rotrnn_weights_case(4, 16, 64);
    rotrnn_weights_case(8, 64, 256);
}

/* ---- segment_reverse (docs/models.md §block-dropout-bidirectional): a data movement, exact up to
 * the bf16 rounding of an addition ---- */

static void test_segment_reverse(void) {
    for (int l = 0; l < gt_layout_count(TH_COUNT(layouts)); l++) {
        Seqs *s = gt_seqs(layouts[l].lens, layouts[l].nseg);
        int C = 6;
        int64_t n = s->ntok * C;
        float *x = gt_randn(n, 1), *y = gt_randn(n, 1), *ref = gt_zeros(n), *refa = gt_copy(y, n);
        gt_cpu->segment_reverse(ref, x, s, C, 0);
        gt_cpu->segment_reverse(refa, x, s, C, 1);
        void *xd = gt_act(x, n), *yd = gt_garbage_act(n), *ya = gt_act(y, n);
        gt_gpu->segment_reverse(yd, xd, s, C, 0);
        gt_gpu->segment_reverse(ya, xd, s, C, 1);
        gt_compare(gt_name("segment_reverse %s", layouts[l].name), gt_get_act(yd, n), ref, n,
                   TOL_BF16);
        gt_compare(gt_name("segment_reverse accumulate %s", layouts[l].name), gt_get_act(ya, n),
                   refa, n, TOL_BF16);
    }
    gt_reset();
}

static const TestCase tests[] = {
    {"cscan", test_cscan},
    {"cscan_step", test_cscan_step},
    {"lru_weights", test_lru_weights},
    {"orth_expm", test_orth_expm},
    {"rotrnn_weights", test_rotrnn_weights},
    {"segment_reverse", test_segment_reverse},
};

GT_MAIN(tests)
