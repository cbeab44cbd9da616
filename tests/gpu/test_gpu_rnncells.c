/* GPU tests of the nonlinear recurrences (kernels/ops/rnn.cu; docs/models.md §nonlinear-rnns,
 * §lstm) against the CPU backend: rnn_fwd (h and each segment's final state) and rnn_bwd (dz, dW,
 * the modReLU bias) with tanh and modReLU on several segment layouts, from zero or carried initial
 * states (h0, docs/models.md §carried-states), rnn_step, the LSTM's forward, backward and step
 * (also from carried states), the nnRNN's Schur form and its gradient, EURNN's layers of rotations
 * and their gradient (kernels/ops/eurnn.cu), and l2_penalty.
 *
 * Both backends read the same bf16-rounded inputs z (the CPU gets them back from the GPU), so
 * the trajectories differ only by the rounding of the sums; recurrent matrices are scaled to
 * be contractive (std 0.5 / sqrt(n)) so that rounding does not grow along the sequence. The
 * backward runs on the CPU's h rounded to bf16 on the GPU side, as the forward leaves it.
 * Parameter gradients start from random values (gt_prefill).
 *
 * Tolerances, relative to the largest reference value (gpu_test.h):
 *   TOL_BF16 8e-3: one bf16 rounding of an fp32 result (h, dz, the gates);
 *   TOL_STATE 2e-3: fp32 states after up to 3000 steps of sums in another order;
 *   TOL_SUM 1e-2: dW and the bias gradient, sums over every token of bf16 products;
 *   TOL_F32 1e-4: the fp32 products of n x n matrices (the Schur form) and the penalty. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_test.h"

#define TOL_BF16 8e-3
#define TOL_STATE 2e-3
#define TOL_SUM 1e-2
#define TOL_F32 1e-4

static const GtLayout layouts[] = {
    {"{1}", 1, {1}},
    {"{1,63,64,65,130,7}", 6, {1, 63, 64, 65, 130, 7}},
    {"{3000}", 1, {3000}},
};
/* Small mode (gpu_test.h): the recurrences take one step after another, each the same kernel
 * code, so a few steps over several segments race what 330 would (racecheck did not finish
 * the first case of the full layouts in 86 s on an H200). */
static const GtLayout small_layouts[] = {
    {"{1}", 1, {1}},
    {"{2,1,3}", 3, {2, 1, 3}},
};

/* The layouts of this run and their count. */
static const GtLayout *case_layouts(int *n) {
    *n = gt_small() ? TH_COUNT(small_layouts) : TH_COUNT(layouts);
    return gt_small() ? small_layouts : layouts;
}

/* x rounded to bf16 (what the GPU reads). */
static float *rounded(const float *x, int64_t n) { return gt_get_act(gt_act(x, n), n); }

static void rnn_case(const GtLayout *lay, int n, RnnAct act, int carried) {
    Seqs *s = gt_seqs(lay->lens, lay->nseg);
    int64_t N = s->ntok, nz = N * n, nf = (int64_t)lay->nseg * n, nw = (int64_t)n * n;
    const char *an =
        act == RNN_MODRELU ? (carried ? "modrelu h0" : "modrelu") : (carried ? "tanh h0" : "tanh");
    float *h0 = carried ? gt_randn(nf, 0.5) : NULL;
    float *z = rounded(gt_randn(nz, 1.0), nz), *dh = gt_randn(nz, 1.0),
          *W = gt_randn(nw, 0.5 / sqrt(n));
    float *b = act == RNN_MODRELU ? gt_rand(n, -0.3, 0.2) : NULL;
    float *hc = gt_zeros(nz), *fc = gt_zeros(nf);
    RnnArgs ac = {
        .s = s, .n = n, .act = act, .W = W, .bias = b, .z = z, .h = hc, .state = fc, .h0 = h0};
    gt_cpu->rnn_fwd(&ac);
    void *hd = gt_garbage_act(nz), *fd = gt_garbage_f32(nf);
    RnnArgs ad = {.s = s,
                  .n = n,
                  .act = act,
                  .W = gt_f32(W, nw),
                  .bias = b ? gt_f32(b, n) : NULL,
                  .z = gt_act(z, nz),
                  .h = hd,
                  .state = fd,
                  .h0 = h0 ? gt_f32(h0, nf) : NULL};
    gt_gpu->rnn_fwd(&ad);
    gt_compare(gt_name("rnn_fwd %s h n=%d %s", an, n, lay->name), gt_get_act(hd, nz), hc, nz,
               TOL_BF16);
    gt_compare(gt_name("rnn_fwd %s final state n=%d %s", an, n, lay->name), gt_get_f32(fd, nf), fc,
               nf, TOL_STATE);
    ac.h = rounded(hc, nz);
    ac.state = NULL;
    float *dzc = gt_zeros(nz), *dWc = gt_zeros(nw), *dbc = gt_zeros(n);
    gt_cpu->rnn_bwd(
        &(RnnGrads){.a = ac, .dh = rounded(dh, nz), .dz = dzc, .dW = dWc, .dbias = b ? dbc : NULL});
    float *preW = gt_prefill(dWc, nw), *preb = gt_prefill(dbc, n);
    void *dWd = gt_f32(preW, nw), *dbd = gt_f32(preb, n);
    ad.h = gt_act(ac.h, nz);
    ad.state = NULL;
    void *dzd = gt_garbage_act(nz);
    gt_gpu->rnn_bwd(
        &(RnnGrads){.a = ad, .dh = gt_act(dh, nz), .dz = dzd, .dW = dWd, .dbias = b ? dbd : NULL});
    gt_compare(gt_name("rnn_bwd %s dz n=%d %s", an, n, lay->name), gt_get_act(dzd, nz), dzc, nz,
               TOL_BF16);
    gt_compare(gt_name("rnn_bwd %s dW += n=%d %s", an, n, lay->name), gt_get_f32(dWd, nw),
               gt_plus(preW, dWc, nw), nw, TOL_SUM);
    if (b)
        gt_compare(gt_name("rnn_bwd %s dbias += n=%d %s", an, n, lay->name), gt_get_f32(dbd, n),
                   gt_plus(preb, dbc, n), n, TOL_SUM);
    gt_reset();
}

static void test_rnn(void) {
    int nl;
    const GtLayout *ls = case_layouts(&nl);
    for (int l = 0; l < nl; l++)
        for (int a = 0; a < 2; a++) {
            rnn_case(&ls[l], 48, (RnnAct)a, 0);
            rnn_case(&ls[l], 1100, (RnnAct)a, 0); /* more units than threads */
            rnn_case(&ls[l], 48, (RnnAct)a, 1);
        }
}

static void test_rnn_step(void) {
    enum { B = 5, n = 96 };
    static const int32_t pos0[B] = {0, 1, 7, 64, 4000};
    int64_t nh = (int64_t)B * n;
    float *W = gt_randn((int64_t)n * n, 0.5 / sqrt(n)), *b = gt_rand(n, -0.3, 0.2),
          *sc = gt_randn(nh, 1.0);
    void *Wd = gt_f32(W, (int64_t)n * n), *bd = gt_f32(b, n), *sd = gt_f32(sc, nh);
    for (int t = 0; t < 3; t++) {
        int32_t pos[B];
        for (int r = 0; r < B; r++) pos[r] = pos0[r] + t;
        Seqs *s = gt_step_seqs(pos, B);
        float *z = rounded(gt_randn(nh, 1.0), nh), *hc = gt_zeros(nh);
        gt_cpu->rnn_step(&(RnnArgs){
            .s = s, .n = n, .act = RNN_MODRELU, .W = W, .bias = b, .z = z, .h = hc, .state = sc});
        void *hd = gt_garbage_act(nh);
        gt_gpu->rnn_step(&(RnnArgs){.s = s,
                                    .n = n,
                                    .act = RNN_MODRELU,
                                    .W = Wd,
                                    .bias = bd,
                                    .z = gt_act(z, nh),
                                    .h = hd,
                                    .state = sd});
        gt_compare(gt_name("rnn_step h step %d", t), gt_get_act(hd, nh), hc, nh, TOL_BF16);
        gt_compare(gt_name("rnn_step state step %d", t), gt_get_f32(sd, nh), sc, nh, TOL_STATE);
    }
    gt_reset();
}

static void lstm_case(const GtLayout *lay, int n, int carried) {
    Seqs *s = gt_seqs(lay->lens, lay->nseg);
    int64_t N = s->ntok, nh = N * n, nz = 4 * nh, nf = (int64_t)lay->nseg * 2 * n,
            nw = 4 * (int64_t)n * n;
    float *h0 = carried ? gt_randn(nf, 0.5) : NULL;
    const char *cn = carried ? " h0" : "";
    float *z = rounded(gt_randn(nz, 1.0), nz), *dh = gt_randn(nh, 1.0),
          *W = gt_randn(nw, 0.5 / sqrt(n));
    float *hc = gt_zeros(nh), *cc = gt_zeros(nh), *qc = gt_zeros(nz), *fc = gt_zeros(nf);
    LstmArgs ac = {
        .s = s, .n = n, .W = W, .z = z, .gates = qc, .c = cc, .h = hc, .state = fc, .h0 = h0};
    gt_cpu->lstm_fwd(&ac);
    void *hd = gt_garbage_act(nh), *cd = gt_garbage_f32(nh), *qd = gt_garbage_act(nz),
         *fd = gt_garbage_f32(nf);
    LstmArgs ad = {.s = s,
                   .n = n,
                   .W = gt_f32(W, nw),
                   .z = gt_act(z, nz),
                   .gates = qd,
                   .c = cd,
                   .h = hd,
                   .state = fd,
                   .h0 = h0 ? gt_f32(h0, nf) : NULL};
    gt_gpu->lstm_fwd(&ad);
    gt_compare(gt_name("lstm_fwd h%s n=%d %s", cn, n, lay->name), gt_get_act(hd, nh), hc, nh,
               TOL_BF16);
    gt_compare(gt_name("lstm_fwd c%s n=%d %s", cn, n, lay->name), gt_get_f32(cd, nh), cc, nh,
               TOL_STATE);
    gt_compare(gt_name("lstm_fwd gates%s n=%d %s", cn, n, lay->name), gt_get_act(qd, nz), qc, nz,
               TOL_BF16);
    gt_compare(gt_name("lstm_fwd final state%s n=%d %s", cn, n, lay->name), gt_get_f32(fd, nf), fc,
               nf, TOL_STATE);
    ac.h = rounded(hc, nh), ac.gates = rounded(qc, nz), ac.state = NULL;
    float *dzc = gt_zeros(nz), *dWc = gt_zeros(nw);
    gt_cpu->lstm_bwd(&(LstmGrads){.a = ac, .dh = rounded(dh, nh), .dz = dzc, .dW = dWc});
    float *preW = gt_prefill(dWc, nw);
    void *dWd = gt_f32(preW, nw);
    ad.h = gt_act(ac.h, nh), ad.gates = gt_act(ac.gates, nz), ad.c = gt_f32(cc, nh),
    ad.state = NULL;
    void *dzd = gt_garbage_act(nz);
    gt_gpu->lstm_bwd(&(LstmGrads){.a = ad, .dh = gt_act(dh, nh), .dz = dzd, .dW = dWd});
    gt_compare(gt_name("lstm_bwd dz%s n=%d %s", cn, n, lay->name), gt_get_act(dzd, nz), dzc, nz,
               TOL_BF16);
    gt_compare(gt_name("lstm_bwd dW +=%s n=%d %s", cn, n, lay->name), gt_get_f32(dWd, nw),
               gt_plus(preW, dWc, nw), nw, TOL_SUM);
    gt_reset();
}

static void test_lstm(void) {
    int nl;
    const GtLayout *ls = case_layouts(&nl);
    for (int l = 0; l < nl; l++)
        lstm_case(&ls[l], 40, 0), lstm_case(&ls[l], 300, 0), lstm_case(&ls[l], 40, 1);
}

static void test_lstm_step(void) {
    enum { B = 4, n = 64 };
    static const int32_t pos0[B] = {0, 2, 9, 100};
    int64_t nh = (int64_t)B * n, nz = 4 * nh, nw = 4 * (int64_t)n * n;
    float *W = gt_randn(nw, 0.5 / sqrt(n)), *sc = gt_randn(2 * nh, 1.0);
    void *Wd = gt_f32(W, nw), *sd = gt_f32(sc, 2 * nh);
    for (int t = 0; t < 3; t++) {
        int32_t pos[B];
        for (int r = 0; r < B; r++) pos[r] = pos0[r] + t;
        Seqs *s = gt_step_seqs(pos, B);
        float *z = rounded(gt_randn(nz, 1.0), nz), *hc = gt_zeros(nh);
        gt_cpu->lstm_step(&(LstmArgs){.s = s,
                                      .n = n,
                                      .W = W,
                                      .z = z,
                                      .gates = gt_zeros(nz),
                                      .c = gt_zeros(nh),
                                      .h = hc,
                                      .state = sc});
        void *hd = gt_garbage_act(nh);
        gt_gpu->lstm_step(&(LstmArgs){.s = s,
                                      .n = n,
                                      .W = Wd,
                                      .z = gt_act(z, nz),
                                      .gates = gt_garbage_act(nz),
                                      .c = gt_garbage_f32(nh),
                                      .h = hd,
                                      .state = sd});
        gt_compare(gt_name("lstm_step h step %d", t), gt_get_act(hd, nh), hc, nh, TOL_BF16);
        gt_compare(gt_name("lstm_step state step %d", t), gt_get_f32(sd, 2 * nh), sc, 2 * nh,
                   TOL_STATE);
    }
    gt_reset();
}

static void test_nnrnn_weights(void) {
    int sizes[2] = {6, 130};
    for (int k = 0; k < 2; k++) {
        int n = sizes[k];
        int64_t nn = (int64_t)n * n;
        float *P = gt_randn(nn, 1 / sqrt(n)), *gm = gt_rand(n / 2, 0.5, 1.5),
              *th = gt_rand(n / 2, 0, 6.28);
        float *T = gt_randn(nn, 0.3), *dV = gt_randn(nn, 1.0);
        float *Kc = gt_zeros(nn), *Vc = gt_zeros(nn);
        NnrnnWeights wc = {n, P, gm, th, T, Kc, Vc, gt_zeros(2 * nn)};
        gt_cpu->nnrnn_weights_fwd(&wc);
        void *Kd = gt_garbage_f32(nn), *Vd = gt_garbage_f32(nn);
        NnrnnWeights wd = {
            n,  gt_f32(P, nn),         gt_f32(gm, n / 2), gt_f32(th, n / 2), gt_f32(T, nn), Kd,
            Vd, gt_garbage_f32(2 * nn)};
        gt_gpu->nnrnn_weights_fwd(&wd);
        gt_compare(gt_name("nnrnn_weights V n=%d", n), gt_get_f32(Vd, nn), Vc, nn, TOL_F32);
        float *dPc = gt_zeros(nn), *dgc = gt_zeros(n / 2), *dtc = gt_zeros(n / 2),
              *dTc = gt_zeros(nn);
        gt_cpu->nnrnn_weights_bwd(&(NnrnnWeightGrads){
            .w = wc, .dV = dV, .dP = dPc, .dgamma = dgc, .dtheta = dtc, .dT = dTc});
        float *pg = gt_prefill(dgc, n / 2), *pt = gt_prefill(dtc, n / 2), *pT = gt_prefill(dTc, nn);
        void *dgd = gt_f32(pg, n / 2), *dtd = gt_f32(pt, n / 2), *dTd = gt_f32(pT, nn);
        void *dPd = gt_garbage_f32(nn);
        gt_gpu->nnrnn_weights_bwd(&(NnrnnWeightGrads){
            .w = wd, .dV = gt_f32(dV, nn), .dP = dPd, .dgamma = dgd, .dtheta = dtd, .dT = dTd});
        gt_compare(gt_name("nnrnn_weights dP n=%d", n), gt_get_f32(dPd, nn), dPc, nn, TOL_F32);
        gt_compare(gt_name("nnrnn_weights dgamma += n=%d", n), gt_get_f32(dgd, n / 2),
                   gt_plus(pg, dgc, n / 2), n / 2, TOL_F32);
        gt_compare(gt_name("nnrnn_weights dtheta += n=%d", n), gt_get_f32(dtd, n / 2),
                   gt_plus(pt, dtc, n / 2), n / 2, TOL_F32);
        gt_compare(gt_name("nnrnn_weights dT += n=%d", n), gt_get_f32(dTd, nn),
                   gt_plus(pT, dTc, nn), nn, TOL_F32);
        gt_reset();
    }
}

/* EURNN's W from L layers of rotations, odd and even widths, a few and many layers */
static void test_eurnn_weights(void) {
    int sizes[3][2] = {{7, 3}, {130, 2}, {257, 40}};
    for (int k = 0; k < 3; k++) {
        int n = sizes[k][0], L = sizes[k][1];
        int64_t nn = (int64_t)n * n, na = eurnn_angles(n, L);
        float *th = gt_rand(na, -3.14, 3.14), *dW = gt_randn(nn, 1.0), *Wc = gt_zeros(nn),
              *dtc = gt_zeros(na);
        gt_cpu->eurnn_weights_fwd(Wc, th, n, L);
        void *thd = gt_f32(th, na), *Wd = gt_garbage_f32(nn);
        gt_gpu->eurnn_weights_fwd(Wd, thd, n, L);
        gt_compare(gt_name("eurnn_weights W n=%d L=%d", n, L), gt_get_f32(Wd, nn), Wc, nn, TOL_F32);
        gt_cpu->eurnn_weights_bwd(dtc, dW, Wc, th, gt_zeros(2 * nn), n, L);
        float *pt = gt_prefill(dtc, na);
        void *dtd = gt_f32(pt, na);
        gt_gpu->eurnn_weights_bwd(dtd, gt_f32(dW, nn), Wd, thd, gt_garbage_f32(2 * nn), n, L);
        gt_compare(gt_name("eurnn_weights dtheta += n=%d L=%d", n, L), gt_get_f32(dtd, na),
                   gt_plus(pt, dtc, na), na, TOL_F32);
        gt_reset();
    }
}

static void test_l2_penalty(void) {
    int64_t n = 70000;
    float *w = gt_randn(n, 1.0), *gc = gt_zeros(n);
    double vc = gt_cpu->l2_penalty(gc, w, n, 1.0, 0.3);
    float *pre = gt_prefill(gc, n);
    void *gd = gt_f32(pre, n);
    double vd = gt_gpu->l2_penalty(gd, gt_f32(w, n), n, 1.0, 0.3);
    gt_compare_scalar("l2_penalty value", vd, vc, 1e-6, TOL_F32);
    gt_compare("l2_penalty grad +=", gt_get_f32(gd, n), gt_plus(pre, gc, n), n, TOL_F32);
    gt_reset();
}

static const TestCase tests[] = {
    {"rnn", test_rnn},
    {"rnn_step", test_rnn_step},
    {"lstm", test_lstm},
    {"lstm_step", test_lstm_step},
    {"nnrnn_weights", test_nnrnn_weights},
    {"eurnn_weights", test_eurnn_weights},
    {"l2_penalty", test_l2_penalty},
};

GT_MAIN(tests)
