/* GPU tests of the chunked GLA kernels (kernels/ops/gla.cu) against the CPU backend
 * (src/cpu/gla_chunk.c): forward (o and the chunk-start states) and backward (dq, dk, dv,
 * dg) for several head sizes, segment layouts and gate strengths.
 *
 * Outputs are pre-filled with garbage on the GPU side (+-100), so an element a kernel fails
 * to write shows up as a large error. The backward runs on the CPU's states (uploaded), so a
 * forward error does not also show up as a backward failure.
 *
 * Under gla_state:bf16 (ROTOR_KERNEL_VARIANT, src/device/kernel_variants.c) the GPU keeps the
 * chunk states in bf16: the forward's come back as bf16 and the backward is given the CPU's
 * rounded to bf16. The program says which it tests.
 *
 * Tolerances, relative to the largest reference value:
 *   o, states 2e-2: tensor-core products of bf16-rounded operands (q e^B, k e^{B_last-B},
 *     the states themselves and A are rounded to bf16, up to 2^-8 each) summed over 64..256 terms;
 *     bf16 states add two roundings of 2^-9 (each chunk's increment, then the state), well
 *     inside it;
 *   dq, dk, dv 3e-2: one more level of bf16 operands (D = dO V^T, the state gradient G);
 *   dg 3e-2: fp32 sums of q dq - k dk over the segment, from dq and dk as above. */
#include <math.h>
#include <stdio.h>

#include "device/kernel_variants.h"
#include "gpu_test.h"

static const GtLayout layouts[] = {
    {"{64}", 1, {64}},
    {"{1,63,64,65,130}", 5, {1, 63, 64, 65, 130}},
    {"{300,5}", 2, {300, 5}},
    {"{1000}", 1, {1000}},
};

typedef enum { GATE_MILD, GATE_MODEL, GATE_STRONG } GateKind;
static const char *gate_names[] = {"U(-0.05,0)", "logsig/16", "U(-2,0)"};

/* log alpha, by the decay over a 64-token chunk (B_last, the in-chunk sum):
 *   mild U(-0.05, 0): B_last ~ -1.6, the state carries several chunks back, so the scan
 *     over chunks matters for o and the gradients;
 *   model logsigmoid(z)/16, z ~ N(0, 3) as in the model: B_last ~ -5.5 (-7.7 .. -3.7);
 *   strong U(-2, 0): B_last ~ -64, e^{B} underflows within a chunk. */
static float *draw_gates(int64_t n, GateKind kind) {
    if (kind == GATE_MILD) return gt_rand(n, -0.05, 0.0);
    if (kind == GATE_STRONG) return gt_rand(n, -2.0, 0.0);
    float *z = gt_randn(n, 3.0);
    for (int64_t i = 0; i < n; i++) {
        double x = z[i];
        z[i] = (float)((fmin(x, 0.0) - log1p(exp(-fabs(x)))) / 16.0);
    }
    return z;
}

/* On a failed comparison, where the largest difference is: [token, head, channel] of an
 * [N, H, D] tensor, or [chunk, head, i, j] of the states. */
static void worst_at(const float *gpu, const float *cpu, int64_t n, int H, int D, int Vs) {
    int64_t w = 0;
    double wd = -1;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)gpu[i] - (double)cpu[i]);
        if (!(d <= wd)) {
            wd = d;
            w = i;
            if (isnan(d)) break;
        }
    }
    if (Vs)
        printf("    worst at chunk %lld head %lld i %lld j %lld: gpu %g cpu %g\n",
               (long long)(w / ((int64_t)H * D * Vs)), (long long)(w / ((int64_t)D * Vs) % H),
               (long long)(w / Vs % D), (long long)(w % Vs), gpu[w], cpu[w]);
    else
        printf("    worst at token %lld head %lld channel %lld: gpu %g cpu %g\n",
               (long long)(w / ((int64_t)H * D)), (long long)(w / D % H), (long long)(w % D),
               gpu[w], cpu[w]);
}

static void compare(const char *what, const char *tag, const float *gpu, const float *cpu,
                    int64_t n, double tol, int H, int D, int Vs) {
    char name[192];
    snprintf(name, sizeof name, "%s %s", what, tag);
    if (!(gt_compare(name, gpu, cpu, n, tol) <= tol)) worst_at(gpu, cpu, n, H, D, Vs);
}

/* Whether the GPU keeps chunk states in bf16 (gla_state:bf16); says which, once. */
static int bf16_states(void) {
    static int said;
    const int bf16 = kernel_variant(KV_GLA_STATE) == 1;
    if (!said++) printf("  GPU chunk states: %s\n", bf16 ? "bf16 (gla_state:bf16)" : "fp32");
    return bf16;
}

/* per_head: one log decay per head [N,H] for every key channel, scale 1 (Mamba2's SSD,
 * docs/models.md §mamba2). */
static void run_case_g(int H, int K, int V, const GtLayout *L, GateKind gate, int per_head) {
    char tag[128];
    snprintf(tag, sizeof tag, "H=%d K=%d V=%d %s g=%s%s", H, K, V, L->name, gate_names[gate],
             per_head ? " per-head" : "");
    Seqs *s = gt_seqs(L->lens, L->nseg);
    const int64_t N = s->ntok, nq = N * H * K, nv = N * H * V, ng = per_head ? N * H : nq;
    const int64_t ns = chunk_states_size(s, H, K, V);
    const double scale = per_head ? 1.0 : 1.0 / sqrt((double)K);
    float *q = gt_randn(nq, 1.0), *k = gt_randn(nq, 1.0), *v = gt_randn(nv, 1.0);
    float *g = draw_gates(ng, gate), *dout = gt_randn(nv, 1.0);
    void *q_d = gt_act(q, nq), *k_d = gt_act(k, nq), *v_d = gt_act(v, nv);
    void *g_d = gt_f32(g, ng), *dout_d = gt_act(dout, nv);

    /* forward */
    float *o_c = gt_rand(nv, -1, 1), *st_c = gt_rand(ns, -1, 1);
    gt_cpu->gla_fwd(&(LinAttnArgs){.s = s,
                                   .H = H,
                                   .K = K,
                                   .V = V,
                                   .scale = scale,
                                   .q = q,
                                   .k = k,
                                   .v = v,
                                   .g = g,
                                   .g_per_head = per_head,
                                   .o = o_c,
                                   .states = st_c});
    void *o_d = gt_act(gt_rand(nv, -100, 100), nv), *st_d = gt_f32(gt_rand(ns, -100, 100), ns);
    gt_gpu->gla_fwd(&(LinAttnArgs){.s = s,
                                   .H = H,
                                   .K = K,
                                   .V = V,
                                   .scale = scale,
                                   .q = q_d,
                                   .k = k_d,
                                   .v = v_d,
                                   .g = g_d,
                                   .g_per_head = per_head,
                                   .o = o_d,
                                   .states = st_d});
    compare("gla_fwd o", tag, gt_get_act(o_d, nv), o_c, nv, 2e-2, H, V, 0);
    /* the buffer is fp32-sized either way; bf16 states fill its first half */
    const int bf16 = bf16_states();
    compare("gla_fwd states", tag, bf16 ? gt_get_act(st_d, ns) : gt_get_f32(st_d, ns), st_c, ns,
            2e-2, H, K, V);

    /* backward */
    float *dq_c = gt_rand(nq, -1, 1), *dk_c = gt_rand(nq, -1, 1), *dv_c = gt_rand(nv, -1, 1);
    float *dg_c = gt_rand(ng, -1, 1);
    gt_cpu->gla_bwd(&(LinAttnGrads){.a = {.s = s,
                                          .H = H,
                                          .K = K,
                                          .V = V,
                                          .scale = scale,
                                          .q = q,
                                          .k = k,
                                          .v = v,
                                          .g = g,
                                          .g_per_head = per_head,
                                          .states = st_c},
                                    .dout = dout,
                                    .dq = dq_c,
                                    .dk = dk_c,
                                    .dv = dv_c,
                                    .dg = dg_c});
    void *dq_d = gt_act(gt_rand(nq, -100, 100), nq), *dk_d = gt_act(gt_rand(nq, -100, 100), nq);
    void *dv_d = gt_act(gt_rand(nv, -100, 100), nv), *dg_d = gt_f32(gt_rand(ng, -100, 100), ng);
    gt_gpu->gla_bwd(&(LinAttnGrads){.a = {.s = s,
                                          .H = H,
                                          .K = K,
                                          .V = V,
                                          .scale = scale,
                                          .q = q_d,
                                          .k = k_d,
                                          .v = v_d,
                                          .g = g_d,
                                          .g_per_head = per_head,
                                          .states = bf16 ? gt_act(st_c, ns) : gt_f32(st_c, ns)},
                                    .dout = dout_d,
                                    .dq = dq_d,
                                    .dk = dk_d,
                                    .dv = dv_d,
                                    .dg = dg_d});
    compare("gla_bwd dq", tag, gt_get_act(dq_d, nq), dq_c, nq, 3e-2, H, K, 0);
    compare("gla_bwd dk", tag, gt_get_act(dk_d, nq), dk_c, nq, 3e-2, H, K, 0);
    compare("gla_bwd dv", tag, gt_get_act(dv_d, nv), dv_c, nv, 3e-2, H, V, 0);
    compare("gla_bwd dg", tag, gt_get_f32(dg_d, ng), dg_c, ng, 3e-2, H, per_head ? 1 : K, 0);
    gt_reset();
}

static void run_case(int H, int K, int V, const GtLayout *L, GateKind gate) {
    run_case_g(H, K, V, L, gate, 0);
}

static void run_all_layouts(int H, int K, int V) {
    for (int i = 0; i < gt_layout_count(TH_COUNT(layouts)); i++)
        for (int gate = GATE_MILD; gate <= GATE_STRONG; gate++)
            run_case(H, K, V, &layouts[i], (GateKind)gate);
}

/* The tiny test model's heads: K, V below one 64-channel tile (zero-padded tiles). */
static void test_gla_tiny(void) { run_all_layouts(2, 16, 32); }
/* The 370M model's heads: 2 K-tiles, 4 V-tiles. */
static void test_gla_370m(void) { run_all_layouts(4, 128, 256); }
/* One tile each way, one head. */
static void test_gla_k64(void) { run_all_layouts(1, 64, 64); }
/* Partial tiles at the end of K and V (80 = 64 + 16, 144 = 2 * 64 + 16) and an odd head
 * count; and the largest supported head. */
static void test_gla_partial_tiles(void) {
    run_case(3, 80, 144, &layouts[1], GATE_MILD);
    run_case(3, 80, 144, &layouts[2], GATE_STRONG);
    run_case(1, 256, 512, &layouts[1], GATE_MODEL);
}

/* One segment of 4096 tokens (64 chunks) and a short one after it: d log alpha's carry sums the
 * totals of up to 63 later chunks (gla_bwd:v2 sums them directly, v1 scans them); two k-tiles
 * at the second head size. Small heads keep the CPU reference cheap. */
static void test_gla_long_segment(void) {
    static const GtLayout long_seg = {"{4096,70}", 2, {4096, 70}};
    run_case(2, 16, 32, &long_seg, GATE_MILD);
    run_case(2, 128, 64, &long_seg, GATE_MODEL);
}

/* Mamba2's SSD: one decay per head; the tiny model's heads (state 16, head_dim 32) and the
 * 370M model's (state 128, head_dim 64, 32 heads). */
static void test_gla_per_head(void) {
    for (int i = 0; i < gt_layout_count(TH_COUNT(layouts)); i++)
        for (int gate = GATE_MILD; gate <= GATE_STRONG; gate++) {
            run_case_g(4, 16, 32, &layouts[i], (GateKind)gate, 1);
            run_case_g(32, 128, 64, &layouts[i], (GateKind)gate, 1);
        }
}

static const TestCase tests[] = {
    {"gla_tiny", test_gla_tiny},
    {"gla_370m", test_gla_370m},
    {"gla_k64", test_gla_k64},
    {"gla_partial_tiles", test_gla_partial_tiles},
    {"gla_long_segment", test_gla_long_segment},
    {"gla_per_head", test_gla_per_head},
};

GT_MAIN(tests)
