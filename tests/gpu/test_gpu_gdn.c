/* Chunked Gated DeltaNet on the GPU (kernels/ops/gdn.cu) against the CPU backend
 * (src/cpu/gdn_chunk.c): gdn_fwd (o, states) and gdn_bwd (dq, dk, dv, dbeta, dg) for several
 * head shapes, segment layouts (single tokens, partial and exact chunks, one long segment)
 * and decay strengths, and without decay (g == NULL, DeltaNet: the kernels' DECAY = false
 * instantiations; no dg).
 *
 * Tolerances (max error relative to the largest reference value, gpu_test.h):
 *   o, states  2e-2: bf16 operands (up to 2^-8 relative rounding) in chained tensor-core products
 *              (T, W, U, P and the state copy are rounded to bf16 once each) with fp32
 *              accumulation and fp32 states; errors stay around 2^-8..2^-7 of the max.
 *   gradients  3e-2: one more chain of bf16 products (dU, dW, dP o Gam and dA o Gam are
 *              tensor-core operands) on top of the forward quantities recomputed in bf16.
 * Every GPU output is pre-filled with NaN, so any element the kernels fail to write fails
 * its comparison (the outputs are overwritten, none accumulates). The backward runs on the
 * CPU's states on both sides so that its comparison isolates the backward kernels; a second
 * backward from the GPU's own states must agree with it to the same tolerance (the model's
 * path). Each GPU op also runs twice and must give bit-identical results: the kernels use
 * no atomics, so a difference points at a race (a missing barrier). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_test.h"

static const GtLayout LAYOUTS[] = {
    {"{64}", 1, {64}},
    {"{1,63,64,65,130}", 5, {1, 63, 64, 65, 130}},
    {"{300,5}", 2, {300, 5}},
    {"{1000}", 1, {1000}},
};

/* Log decays g = -exp(A_log) softplus(.) <= 0, drawn uniformly in [lo, hi]; none: g == NULL. */
typedef struct {
    double lo, hi;
    const char *name;
    int none;
} Decay;

static const Decay NORMAL = {-1.0, -0.001, "g~U(-1,-0.001)", 0}; /* as at initialisation */
static const Decay STRONG = {-20.0, -0.5, "g~U(-20,-0.5)", 0}; /* state forgotten in a few steps */
static const Decay WEAK = {-0.05, -0.0001, "g~U(-0.05,-1e-4)", 0}; /* long memory, largest states */
static const Decay NONE = {0, 0, "g=NULL", 1};                     /* DeltaNet: no forgetting */

static float *filled(int64_t n, float value) {
    float *x = gt_rand(n, 0, 0);
    for (int64_t i = 0; i < n; i++) x[i] = value;
    return x;
}

/* Bit-identical outputs of two GPU runs. */
static void check_same(const char *what, const float *a, const float *b, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    CHECK_MSG(bad == 0, "%s: %lld of %lld values differ between two identical GPU runs", what,
              (long long)bad, (long long)n);
}

static void gdn_case(int H, int K, int V, const GtLayout *ly, Decay dec) {
    char tag[160], what[224];
    snprintf(tag, sizeof tag, "H%d K%d V%d %s %s", H, K, V, ly->name, dec.name);
    Seqs *s = gt_seqs(ly->lens, ly->nseg);
    const int64_t N = s->ntok, nk = N * H * K, nv = N * H * V, nh = N * H;
    const int64_t ns = chunk_states_size(s, H, K, V);
    const double scale = 1.0 / sqrt((double)K);

    float *q = gt_randn(nk, 1), *k = gt_randn(nk, 1), *v = gt_randn(nv, 1);
    gt_l2norm_rows(q, N * H, K);
    gt_l2norm_rows(k, N * H, K);
    float *beta = gt_rand(nh, 0.05, 0.95), *g = dec.none ? NULL : gt_rand(nh, dec.lo, dec.hi);
    float *dout = gt_randn(nv, 1);
    float nanv = NAN;

    /* reference */
    float *o = filled(nv, 0), *st = filled(ns, 0);
    gt_cpu->gdn_fwd(&(LinAttnArgs){.s = s,
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
                                   .states = st});
    float *dq = filled(nk, 0), *dk = filled(nk, 0), *dv = filled(nv, 0), *db = filled(nh, 0),
          *dg = g ? filled(nh, 0) : NULL;
    gt_cpu->gdn_bwd(&(LinAttnGrads){.a = {.s = s,
                                          .H = H,
                                          .K = K,
                                          .V = V,
                                          .scale = scale,
                                          .q = q,
                                          .k = k,
                                          .v = v,
                                          .g = g,
                                          .beta = beta,
                                          .states = st},
                                    .dout = dout,
                                    .dq = dq,
                                    .dk = dk,
                                    .dv = dv,
                                    .dg = dg,
                                    .dbeta = db});

    void *q_ = gt_act(q, nk), *k_ = gt_act(k, nk), *v_ = gt_act(v, nv), *dout_ = gt_act(dout, nv);
    void *beta_ = gt_f32(beta, nh), *g_ = g ? gt_f32(g, nh) : NULL;

    /* forward, twice */
    float *go[2], *gst[2];
    for (int run = 0; run < 2; run++) {
        void *o_ = gt_act(filled(nv, nanv), nv), *st_ = gt_f32(filled(ns, nanv), ns);
        gt_gpu->gdn_fwd(&(LinAttnArgs){.s = s,
                                       .H = H,
                                       .K = K,
                                       .V = V,
                                       .scale = scale,
                                       .q = q_,
                                       .k = k_,
                                       .v = v_,
                                       .g = g_,
                                       .beta = beta_,
                                       .o = o_,
                                       .states = st_});
        go[run] = gt_get_act(o_, nv);
        gst[run] = gt_get_f32(st_, ns);
    }
    snprintf(what, sizeof what, "gdn_fwd o %s", tag);
    gt_compare(what, go[0], o, nv, 2e-2);
    snprintf(what, sizeof what, "gdn_fwd states %s", tag);
    gt_compare(what, gst[0], st, ns, 2e-2);
    check_same("gdn_fwd o", go[0], go[1], nv);
    check_same("gdn_fwd states", gst[0], gst[1], ns);

    /* backward: twice from the CPU states, once from the GPU's */
    float *out[3][5];
    for (int run = 0; run < 3; run++) {
        void *dq_ = gt_act(filled(nk, nanv), nk), *dk_ = gt_act(filled(nk, nanv), nk);
        void *dv_ = gt_act(filled(nv, nanv), nv);
        void *db_ = gt_f32(filled(nh, nanv), nh), *dg_ = g ? gt_f32(filled(nh, nanv), nh) : NULL;
        void *st_ = gt_f32(run < 2 ? st : gst[0], ns);
        gt_gpu->gdn_bwd(&(LinAttnGrads){.a = {.s = s,
                                              .H = H,
                                              .K = K,
                                              .V = V,
                                              .scale = scale,
                                              .q = q_,
                                              .k = k_,
                                              .v = v_,
                                              .g = g_,
                                              .beta = beta_,
                                              .states = st_},
                                        .dout = dout_,
                                        .dq = dq_,
                                        .dk = dk_,
                                        .dv = dv_,
                                        .dg = dg_,
                                        .dbeta = db_});
        out[run][0] = gt_get_act(dq_, nk);
        out[run][1] = gt_get_act(dk_, nk);
        out[run][2] = gt_get_act(dv_, nv);
        out[run][3] = gt_get_f32(db_, nh);
        out[run][4] = g ? gt_get_f32(dg_, nh) : NULL;
    }
    const char *names[5] = {"dq", "dk", "dv", "dbeta", "dg"};
    const float *ref[5] = {dq, dk, dv, db, dg};
    const int64_t len[5] = {nk, nk, nv, nh, nh};
    for (int i = 0; i < (g ? 5 : 4); i++) {
        snprintf(what, sizeof what, "gdn_bwd %s %s", names[i], tag);
        gt_compare(what, out[0][i], ref[i], len[i], 3e-2);
        snprintf(what, sizeof what, "gdn_bwd %s (gpu states) %s", names[i], tag);
        gt_compare(what, out[2][i], ref[i], len[i], 3e-2);
        snprintf(what, sizeof what, "gdn_bwd %s", names[i]);
        check_same(what, out[0][i], out[1][i], len[i]);
    }
    gt_reset();
}

static void run_layouts(int H, int K, int V, Decay dec) {
    for (int i = 0; i < gt_layout_count(TH_COUNT(LAYOUTS)); i++)
        gdn_case(H, K, V, &LAYOUTS[i], dec);
}

/* the tiny test config: one column tile, K tile and 16-column scan */
static void test_gdn_h2_k16_v16_normal(void) { run_layouts(2, 16, 16, NORMAL); }
static void test_gdn_h2_k16_v16_strong(void) { run_layouts(2, 16, 16, STRONG); }
static void test_gdn_h2_k16_v16_weak(void) { run_layouts(2, 16, 16, WEAK); }
/* the 370M config: two K tiles in the backward, four 32-column scan blocks */
static void test_gdn_h8_k128_v128_normal(void) { run_layouts(8, 128, 128, NORMAL); }
static void test_gdn_h8_k128_v128_strong(void) { run_layouts(8, 128, 128, STRONG); }
static void test_gdn_h8_k128_v128_weak(void) { run_layouts(8, 128, 128, WEAK); }
static void test_gdn_h1_k64_v32_normal(void) { run_layouts(1, 64, 32, NORMAL); }
static void test_gdn_h1_k64_v32_strong(void) { run_layouts(1, 64, 32, STRONG); }
static void test_gdn_h1_k64_v32_weak(void) { run_layouts(1, 64, 32, WEAK); }
/* V = 48: a partial 64-column tile and 16-column scan blocks with K = 32 */
static void test_gdn_h3_k32_v48_normal(void) { run_layouts(3, 32, 48, NORMAL); }
/* K = 96, not a multiple of 64: two K tiles of 48 in the backward */
static void test_gdn_h2_k96_v32_normal(void) { run_layouts(2, 96, 32, NORMAL); }
/* the largest sizes: four K tiles, the biggest shared-memory layouts (single-buffered scans) */
static void test_gdn_h2_k256_v256_normal(void) { run_layouts(2, 256, 256, NORMAL); }
/* no decay (DeltaNet): the tiny config, the 370M config (H 8, K = V = 128), a partial
 * column tile, and the largest layouts */
static void test_deltanet_h2_k16_v16(void) { run_layouts(2, 16, 16, NONE); }
static void test_deltanet_h8_k128_v128(void) { run_layouts(8, 128, 128, NONE); }
static void test_deltanet_h3_k32_v48(void) { run_layouts(3, 32, 48, NONE); }
static void test_deltanet_h2_k256_v256(void) { run_layouts(2, 256, 256, NONE); }

static const TestCase tests[] = {
    {"gdn_h2_k16_v16_normal", test_gdn_h2_k16_v16_normal},
    {"gdn_h2_k16_v16_strong", test_gdn_h2_k16_v16_strong},
    {"gdn_h2_k16_v16_weak", test_gdn_h2_k16_v16_weak},
    {"gdn_h8_k128_v128_normal", test_gdn_h8_k128_v128_normal},
    {"gdn_h8_k128_v128_strong", test_gdn_h8_k128_v128_strong},
    {"gdn_h8_k128_v128_weak", test_gdn_h8_k128_v128_weak},
    {"gdn_h1_k64_v32_normal", test_gdn_h1_k64_v32_normal},
    {"gdn_h1_k64_v32_strong", test_gdn_h1_k64_v32_strong},
    {"gdn_h1_k64_v32_weak", test_gdn_h1_k64_v32_weak},
    {"gdn_h3_k32_v48_normal", test_gdn_h3_k32_v48_normal},
    {"gdn_h2_k96_v32_normal", test_gdn_h2_k96_v32_normal},
    {"gdn_h2_k256_v256_normal", test_gdn_h2_k256_v256_normal},
    {"deltanet_h2_k16_v16", test_deltanet_h2_k16_v16},
    {"deltanet_h8_k128_v128", test_deltanet_h8_k128_v128},
    {"deltanet_h3_k32_v48", test_deltanet_h3_k32_v48},
    {"deltanet_h2_k256_v256", test_deltanet_h2_k256_v256},
};

GT_MAIN(tests)
