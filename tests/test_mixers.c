/* Chunked/blockwise mixers equal their naive recurrent references, forward and backward,
 * on segments whose lengths are not multiples of the chunk size (docs/models.md §gla,
 * §gated-deltanet, §deltanet, §fox, and the gateless attention of the Transformer, §transformer).
 * Built twice: fp64 (tolerance 1e-9) and fp32 (tolerance 2e-4, with strongly decaying gates). */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "harness.h"
#include "model/model.h"
#include "naive.h"
#include "testutil.h"
#include "util/error.h"

#ifdef ROTOR_REAL_DOUBLE
#define TOL 1e-9
#else
#define TOL 2e-4
#endif

static const int LENS[] = {150, 37, 1, 64, 65, 129};
#define NSEG 6

static void check_all(const char *what, const real *a, const real *b, int64_t n) {
    double e = tu_rel_err(a, b, n, 1e-3);
    CHECK_MSG(e <= TOL, "%s: relative error %.3g > %.1g", what, e, TOL);
}

/* GLA, with a log decay per key channel or (per_head, Mamba2's SSD with scale 1) one per
 * head, which the naive recurrence reads as the same decay on every channel; its gradient
 * is then the sum of the channels' gradients. */
static void gla_case(double glo, double ghi, int per_head, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int H = 2, K = 16, V = 12;
    int64_t N = s->ntok, nk = N * H * K, nv = N * H * V, ng = per_head ? N * H : nk;
    real *q = tu_randn(&r, nk, 1), *k = tu_randn(&r, nk, 1), *v = tu_randn(&r, nv, 1);
    real *g = tu_rand(&r, ng, glo, ghi), *dout = tu_randn(&r, nv, 1), *gk = tu_zeros(nk);
    for (int64_t i = 0; i < nk; i++) gk[i] = per_head ? g[i / K] : g[i];
    real *o = tu_zeros(nv), *o_ref = tu_zeros(nv);
    real *states = tu_zeros(chunk_states_size(s, H, K, V));
    double scale = per_head ? 1.0 : 1.0 / sqrt((double)K);
    LinAttnArgs a = {.s = s,
                     .H = H,
                     .K = K,
                     .V = V,
                     .scale = scale,
                     .q = q,
                     .k = k,
                     .v = v,
                     .g = g,
                     .g_per_head = per_head,
                     .o = o,
                     .states = states};
    cpu_gla_fwd(&a);
    naive_gla_fwd(o_ref, q, k, v, gk, s, H, K, V, scale);
    check_all("gla o", o, o_ref, nv);
    real *dq = tu_zeros(nk), *dk = tu_zeros(nk), *dv = tu_zeros(nv), *dg = tu_zeros(ng);
    real *dq2 = tu_zeros(nk), *dk2 = tu_zeros(nk), *dv2 = tu_zeros(nv), *dgk = tu_zeros(nk);
    real *dg2 = tu_zeros(ng);
    cpu_gla_bwd(&(LinAttnGrads){.a = a, .dout = dout, .dq = dq, .dk = dk, .dv = dv, .dg = dg});
    naive_gla_bwd(dq2, dk2, dv2, dgk, dout, q, k, v, gk, s, H, K, V, scale);
    for (int64_t i = 0; i < nk; i++) dg2[per_head ? i / K : i] += dgk[i];
    check_all("gla dq", dq, dq2, nk);
    check_all("gla dk", dk, dk2, nk);
    check_all("gla dv", dv, dv2, nv);
    check_all("gla dg", dg, dg2, ng);
    real *bufs[] = {q,  k,  v,  g,  gk,  dout, o,   o_ref, states,
                    dq, dk, dv, dg, dq2, dk2,  dv2, dgk,   dg2};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) rt_free(bufs[i]);
    tu_seqs_free(&ts);
}

static void test_gla_chunked_equals_recurrent(void) { gla_case(-1.0, -0.001, 0, 1); }

/* Weak decay (about e^-1.7 per chunk): the state carried across chunks dominates. */
static void test_gla_chunked_weak_decay(void) { gla_case(-0.05, -0.002, 0, 7); }

/* Gates down to e^-30 per token: the chunked form must stay finite and exact. */
static void test_gla_chunked_strong_decay(void) { gla_case(-30.0, 0.0, 0, 2); }

/* One log decay per head (Mamba2, docs/models.md §mamba2): typical, weak and strong decays. */
static void test_gla_per_head(void) {
    gla_case(-1.0, -0.001, 1, 11);
    gla_case(-0.05, -0.002, 1, 12);
    gla_case(-30.0, 0.0, 1, 13);
}

static void l2normalise(real *x, int64_t rows, int D) {
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int d = 0; d < D; d++) ss += (double)x[r * D + d] * (double)x[r * D + d];
        for (int d = 0; d < D; d++) x[r * D + d] = (real)((double)x[r * D + d] / sqrt(ss + 1e-6));
    }
}

/* decay = 0: g == NULL, the ungated delta rule (DeltaNet). */
static void gdn_case(int decay, double glo, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int H = 2, K = 16, V = 12;
    int64_t N = s->ntok, nk = N * H * K, nv = N * H * V, nh = N * H;
    real *q = tu_randn(&r, nk, 1), *k = tu_randn(&r, nk, 1), *v = tu_randn(&r, nv, 1);
    l2normalise(q, N * H, K);
    l2normalise(k, N * H, K);
    real *beta = tu_rand(&r, nh, 0.05, 0.95), *g = decay ? tu_rand(&r, nh, glo, 0.0) : NULL;
    real *dout = tu_randn(&r, nv, 1);
    real *o = tu_zeros(nv), *o_ref = tu_zeros(nv);
    real *states = tu_zeros(chunk_states_size(s, H, K, V));
    double scale = 1.0 / sqrt((double)K);
    LinAttnArgs a = {.s = s,
                     .H = H,
                     .K = K,
                     .V = V,
                     .scale = scale,
                     .q = q,
                     .k = k,
                     .v = v,
                     .g = g,
                     .beta = beta,
                     .o = o,
                     .states = states};
    cpu_gdn_fwd(&a);
    naive_gdn_fwd(o_ref, q, k, v, beta, g, s, H, K, V, scale);
    check_all("gdn o", o, o_ref, nv);
    real *dq = tu_zeros(nk), *dk = tu_zeros(nk), *dv = tu_zeros(nv), *db = tu_zeros(nh);
    real *dq2 = tu_zeros(nk), *dk2 = tu_zeros(nk), *dv2 = tu_zeros(nv), *db2 = tu_zeros(nh);
    real *dg = decay ? tu_zeros(nh) : NULL, *dg2 = decay ? tu_zeros(nh) : NULL;
    cpu_gdn_bwd(
        &(LinAttnGrads){.a = a, .dout = dout, .dq = dq, .dk = dk, .dv = dv, .dg = dg, .dbeta = db});
    naive_gdn_bwd(dq2, dk2, dv2, db2, dg2, dout, q, k, v, beta, g, s, H, K, V, scale);
    check_all("gdn dq", dq, dq2, nk);
    check_all("gdn dk", dk, dk2, nk);
    check_all("gdn dv", dv, dv2, nv);
    check_all("gdn dbeta", db, db2, nh);
    if (decay) check_all("gdn dg", dg, dg2, nh);
    real *bufs[] = {q,  k,  v,  beta, g,   dout, o,   o_ref, states, dq,
                    dk, dv, db, dg,   dq2, dk2,  dv2, db2,   dg2};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) rt_free(bufs[i]);
    tu_seqs_free(&ts);
}

static void test_gdn_chunked_equals_recurrent(void) { gdn_case(1, -1.0, 3); }
static void test_gdn_chunked_strong_decay(void) { gdn_case(1, -20.0, 4); }
static void test_gdn_chunked_weak_decay(void) { gdn_case(1, -0.05, 8); }
static void test_deltanet_chunked_equals_recurrent(void) { gdn_case(0, 0, 9); }

/* log f drawn from [flo, 0]; gated = 0: no forget gate (logf NULL, the Transformer). */
static void fox_case(int gated, double flo, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int H = 2, D = 16;
    int64_t N = s->ntok, n = N * H * D, nh = N * H;
    real *q = tu_randn(&r, n, 1), *k = tu_randn(&r, n, 1), *v = tu_randn(&r, n, 1);
    real *logf = gated ? tu_rand(&r, nh, flo, 0.0) : NULL, *dout = tu_randn(&r, n, 1);
    real *o = tu_zeros(n), *o_ref = tu_zeros(n), *lse = tu_zeros(nh);
    double scale = 1.0 / sqrt((double)D);
    AttnArgs a = {.s = s,
                  .H = H,
                  .D = D,
                  .scale = scale,
                  .q = q,
                  .k = k,
                  .v = v,
                  .logf = logf,
                  .o = o,
                  .lse = lse};
    cpu_fox_fwd(&a);
    naive_fox_fwd(o_ref, q, k, v, logf, s, H, D, scale);
    check_all("fox o", o, o_ref, n);
    real *dq = tu_zeros(n), *dk = tu_zeros(n), *dv = tu_zeros(n), *df = tu_zeros(nh);
    real *dq2 = tu_zeros(n), *dk2 = tu_zeros(n), *dv2 = tu_zeros(n), *df2 = tu_zeros(nh);
    cpu_fox_bwd(&(AttnGrads){.a = a, .dout = dout, .dq = dq, .dk = dk, .dv = dv, .dlogf = df});
    naive_fox_bwd(dq2, dk2, dv2, df2, dout, q, k, v, logf, s, H, D, scale);
    check_all("fox dq", dq, dq2, n);
    check_all("fox dk", dk, dk2, n);
    check_all("fox dv", dv, dv2, n);
    if (logf) check_all("fox dlogf", df, df2, nh);
    real *bufs[] = {q, k, v, logf, dout, o, o_ref, lse, dq, dk, dv, df, dq2, dk2, dv2, df2};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) rt_free(bufs[i]);
    tu_seqs_free(&ts);
}

static void test_fox_blockwise_equals_naive(void) { fox_case(1, -1.0, 5); }
static void test_fox_blockwise_strong_forgetting(void) { fox_case(1, -10.0, 6); }
static void test_fox_blockwise_weak_forgetting(void) { fox_case(1, -0.05, 9); }
static void test_transformer_blockwise_equals_naive(void) { fox_case(0, 0, 10); }

/* ---- the LRU / RotRNN scan (docs/models.md §lru, §rotrnn) ---- */

/* The chunked scan against the token-by-token recurrence, forward and backward, with
 * eigenvalue moduli exp(loga) for loga in [alo, ahi] and angles in [-pi, pi]; then one
 * cscan_step per token from the rows' states equals the forward (decoding, §decoding), and the
 * forward's final states equal the steps'. */
static void cscan_case(double alo, double ahi, uint64_t seed) {
    Rng r;
    rng_init(&r, seed, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int C = 5;
    int64_t N = s->ntok, n = N * 2 * C;
    real *x = tu_randn(&r, n, 1), *dh = tu_randn(&r, n, 1);
    real *loga = tu_rand(&r, C, alo, ahi), *angle = tu_rand(&r, C, -3.14, 3.14);
    real *h = tu_zeros(n), *h_ref = tu_zeros(n), *states = tu_zeros(chunk_states_size(s, 1, C, 2));
    real *final = tu_zeros((int64_t)NSEG * 2 * C);
    CScanArgs a = {.s = s,
                   .C = C,
                   .loga = loga,
                   .angle = angle,
                   .x = x,
                   .h = h,
                   .states = states,
                   .state = final};
    cpu_cscan_fwd(&a);
    naive_cscan_fwd(h_ref, x, loga, angle, s, C);
    check_all("cscan h", h, h_ref, n);
    real *dx = tu_zeros(n), *dla = tu_zeros(C), *dan = tu_zeros(C);
    real *dx2 = tu_zeros(n), *dla2 = tu_zeros(C), *dan2 = tu_zeros(C);
    cpu_cscan_bwd(&(CScanGrads){.a = a, .dh = dh, .dx = dx, .dloga = dla, .dangle = dan});
    naive_cscan_bwd(dx2, dla2, dan2, dh, x, loga, angle, s, C);
    check_all("cscan dx", dx, dx2, n);
    check_all("cscan dloga", dla, dla2, C);
    check_all("cscan dangle", dan, dan2, C);
    /* the segments as rows decoded token by token */
    real *st = tu_randn(&r, (int64_t)NSEG * 2 * C, 1),
         *hs = tu_zeros(n); /* garbage: pos 0 resets */
    real *xs = tu_zeros((int64_t)NSEG * 2 * C), *ys = tu_zeros((int64_t)NSEG * 2 * C);
    int64_t *cu = rt_malloc(sizeof(int64_t) * (NSEG + 1));
    int32_t *pos = rt_malloc(sizeof(int32_t) * NSEG);
    for (int t = 0;; t++) {
        int B = 0, row[NSEG];
        for (int seg = 0; seg < NSEG; seg++)
            if (t < LENS[seg]) row[B++] = seg;
        if (!B) break;
        /* rows still running, in their own slots of the state: compact them */
        real *sb = tu_zeros((int64_t)B * 2 * C);
        for (int b = 0; b < B; b++) {
            memcpy(xs + b * 2 * C, x + (s->cu[row[b]] + t) * 2 * C, sizeof(real) * 2 * C);
            memcpy(sb + b * 2 * C, st + row[b] * 2 * C, sizeof(real) * 2 * C);
            cu[b] = b, pos[b] = t;
        }
        cu[B] = B;
        Seqs ss = {.ntok = B, .nseg = B, .cu = cu, .pos = pos};
        cpu_cscan_step(&(CScanArgs){
            .s = &ss, .C = C, .loga = loga, .angle = angle, .x = xs, .h = ys, .state = sb});
        for (int b = 0; b < B; b++) {
            memcpy(hs + (s->cu[row[b]] + t) * 2 * C, ys + b * 2 * C, sizeof(real) * 2 * C);
            memcpy(st + row[b] * 2 * C, sb + b * 2 * C, sizeof(real) * 2 * C);
        }
        rt_free(sb);
    }
    check_all("cscan_step h", hs, h, n);
    check_all("cscan final state", final, st, (int64_t)NSEG * 2 * C);
    real *bufs[] = {x,   dh,  loga, angle, h,    h_ref, states, final, dx,
                    dla, dan, dx2,  dla2,  dan2, st,    hs,     xs,    ys};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) rt_free(bufs[i]);
    rt_free(cu);
    rt_free(pos);
    tu_seqs_free(&ts);
}

static void test_cscan_chunked_equals_recurrent(void) { cscan_case(-0.5, -0.001, 21); }
/* |lambda| near 1 (the LRU's r_max 0.999 and above): states carried over many chunks */
static void test_cscan_weak_decay(void) { cscan_case(-1e-3, -1e-6, 22); }
/* |lambda| down to e^-30: powers of lambda over a chunk underflow to zero */
static void test_cscan_strong_decay(void) { cscan_case(-30.0, -1.0, 23); }

/* Hidden-state norms over 20000 tokens of white, unit-variance input through the layer at
 * init (the RotRNN paper's Figure 3): RotRNN's xi keeps E||x_t||^2 = 1 per head (the state
 * in the rotations' basis has the same norm: P is orthogonal), the LRU's gamma keeps
 * E|h_c|^2 = E|(B u)_c|^2, about 1 per channel with B's init. The time average of the second
 * half stays within 25% of 1 and no token exceeds 3. */
static void state_norm_case(MixerKind mixer) {
    ModelConfig cfg = tu_tiny_model(mixer, 1);
    cfg.hidden_size = 64;
    cfg.num_heads = 2;
    cfg.state_size = 64; /* LRU: 64 complex channels, one group; RotRNN: 2 heads of 32 */
    int rot = mixer == MIXER_ROTRNN, T = 20000, d = cfg.hidden_size;
    Model *m = model_create(&cfg, backend_cpu());
    model_init_weights(m, 3);
    const ParamTable *t = model_params(m);
    const real *w = model_weights(m);
#define PARAM(name) (w + t->p[params_find(t, "model.layers.0.attn." name)].offset)
    const ModelDims *dm = model_dims_of(m);
    int C = dm->key_dim / 2, groups = dm->H, width = dm->dk;
    real *Bw = tu_zeros(2 * (int64_t)C * d), *Cw = tu_zeros(2 * (int64_t)C * d);
    real *loga = tu_zeros(C), *angle = tu_zeros(C);
    if (rot) {
        int H = dm->H, n = dm->dk;
        real *P = tu_zeros((int64_t)H * n * n), *xi = tu_zeros(H);
        cpu_orth_expm_fwd(P, PARAM("M"), NULL, H, n);
        cpu_rotrnn_weights_fwd(&(RotWeights){H, n, d, P, PARAM("gamma_log"), PARAM("theta"),
                                             PARAM("B"), PARAM("C"), xi, loga, angle, Bw, Cw, NULL,
                                             NULL});
        rt_free(P);
        rt_free(xi);
    } else {
        cpu_lru_weights_fwd(&(LruWeights){
            C, d, PARAM("nu_log"), PARAM("theta_log"), PARAM("gamma_log"), PARAM("B_re"),
            PARAM("B_im"), PARAM("C_re"), PARAM("C_im"), loga, angle, Bw, Cw, NULL, NULL, NULL});
        width = 2; /* per complex channel */
        groups = C;
    }
#undef PARAM
    Rng r;
    rng_init(&r, 31, 0);
    int lens[1] = {T};
    TestSeqs ts = tu_seqs(lens, 1);
    real *u = tu_randn(&r, (int64_t)T * d, 1), *x = tu_zeros((int64_t)T * 2 * C),
         *h = tu_zeros((int64_t)T * 2 * C);
    real *states = tu_zeros(chunk_states_size(&ts.s, 1, C, 2));
    cpu_matmul_fwd(x, u, Bw, NULL, T, 2 * C, d);
    cpu_cscan_fwd(&(CScanArgs){
        .s = &ts.s, .C = C, .loga = loga, .angle = angle, .x = x, .h = h, .states = states});
    /* RotRNN: each head's norm; LRU: the mean over the channels of one token */
    double mean = 0, peak = 0;
    for (int64_t n = 0; n < T; n++) {
        double tok = 0;
        for (int g = 0; g < groups; g++) {
            double ss = 0;
            for (int i = 0; i < width; i++) ss += pow((double)h[n * 2 * C + g * width + i], 2);
            if (n >= T / 2) mean += ss / ((double)(T - T / 2) * groups);
            tok = rot ? fmax(tok, ss) : tok + ss / groups;
        }
        peak = fmax(peak, tok);
    }
    printf("    %-8s mean state norm^2 %.3f per %s, largest %.3f\n", mixer_name(mixer), mean,
           rot ? "head" : "channel", peak);
    CHECK_MSG(fabs(mean - 1) < 0.25 && peak < 3, "%s: state norm^2 mean %.3f, largest %.3f",
              mixer_name(mixer), mean, peak);
    real *bufs[] = {Bw, Cw, loga, angle, u, x, h, states};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) rt_free(bufs[i]);
    tu_seqs_free(&ts);
    model_free(m);
}

static void test_linrec_state_norm_bounded(void) {
    state_norm_case(MIXER_ROTRNN);
    state_norm_case(MIXER_LRU);
}

static const TestCase tests[] = {
    {"gla_chunked_equals_recurrent", test_gla_chunked_equals_recurrent},
    {"gla_chunked_strong_decay", test_gla_chunked_strong_decay},
    {"gla_chunked_weak_decay", test_gla_chunked_weak_decay},
    {"gla_per_head_equals_recurrent", test_gla_per_head},
    {"gdn_chunked_equals_recurrent", test_gdn_chunked_equals_recurrent},
    {"gdn_chunked_strong_decay", test_gdn_chunked_strong_decay},
    {"gdn_chunked_weak_decay", test_gdn_chunked_weak_decay},
    {"deltanet_chunked_equals_recurrent", test_deltanet_chunked_equals_recurrent},
    {"fox_blockwise_equals_naive", test_fox_blockwise_equals_naive},
    {"fox_blockwise_strong_forgetting", test_fox_blockwise_strong_forgetting},
    {"fox_blockwise_weak_forgetting", test_fox_blockwise_weak_forgetting},
    {"transformer_blockwise_equals_naive", test_transformer_blockwise_equals_naive},
    {"cscan_chunked_equals_recurrent", test_cscan_chunked_equals_recurrent},
    {"cscan_weak_decay", test_cscan_weak_decay},
    {"cscan_strong_decay", test_cscan_strong_decay},
    {"linrec_state_norm_bounded", test_linrec_state_norm_bounded},
};

TH_MAIN(tests)
