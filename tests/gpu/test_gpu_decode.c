/* GPU tests of decoding (docs/models.md §decoding): every decoding op of kernels/ops/decode.cu
 * against the CPU backend (src/cpu/decode_ops.c), the final states of the chunked gla_fwd / gdn_fwd
 * (kernels/ops/gla.cu, gdn.cu), and tiny models of every mixer decoding on both backends.
 *
 * The step ops run three steps in a row from random states, so each step reads what the
 * previous one wrote, with rows at position 0 (whose state must not be read: it is random),
 * at small positions, across chunk boundaries and far out (attention caches of ~3000 slots,
 * split over several blocks). GPU outputs start as garbage, so an element a kernel fails to
 * write fails its comparison.
 *
 * Tolerances, relative to the largest reference value (gpu_test.h):
 *   copies (tails, caches, the shift's and conv's state): exact;
 *   fp32 outputs of fp32 arithmetic (cumsum, angle sums, recurrent states, the gate cache):
 *     1e-4, sums in another order (CPU sequential, GPU in warps and blocks) and the GPU's
 *     fast exponentials in the gates;
 *   bf16 outputs: 1e-2, one rounding (2^-8 relative) of an fp32 result;
 *   the chunked ops' final states: 2e-2 as their chunk states (test_gpu_gla, test_gpu_gdn):
 *     bf16 tensor-core operands in the chunk products;
 *   whole-model logits: 3e-2 of the row's largest logit: bf16 activations through two blocks
 *     on both sides, and on the GPU the chunked kernels' bf16 operands against the steps'
 *     fp32 states. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/run_config.h"
#include "device/host_copy.h"
#include "gpu_test.h"
#include "model/decode.h"
#include "model/model.h"
#include "util/error.h"
#include "util/rng.h"

#define STEPS 3 /* steps of each step-op case */

static const int LENS[] = {1, 63, 64, 65, 130}; /* one token, around and across a chunk */
#define NLENS ((int)(sizeof LENS / sizeof LENS[0]))

/* The positions of a case's rows at step t. */
static void advance(int32_t *pos, const int32_t *pos0, int B, int t) {
    for (int r = 0; r < B; r++) pos[r] = pos0[r] + t;
}

static void compare(const char *what, const char *tag, const float *gpu, const float *cpu,
                    int64_t n, double tol) {
    char name[224];
    snprintf(name, sizeof name, "%s %s", what, tag);
    gt_compare(name, gpu, cpu, n, tol);
}

/* ---- after a prefill ---- */

static void test_segment_tail(void) {
    Seqs *s = gt_seqs(LENS, NLENS);
    for (int f32 = 0; f32 <= 1; f32++)
        for (int W = 1; W <= 3; W += 2) {
            const int C = f32 ? 6 : 48;
            const int64_t N = s->ntok, nt = (int64_t)s->nseg * W * C;
            float *x = gt_randn(N * C, 1.0), *tc = gt_rand(nt, -1, 1);
            gt_cpu->segment_tail(tc, x, s, C, W, f32);
            void *td = f32 ? gt_garbage_f32(nt) : gt_garbage_act(nt);
            gt_gpu->segment_tail(td, f32 ? gt_f32(x, N * C) : gt_act(x, N * C), s, C, W, f32);
            char tag[64];
            snprintf(tag, sizeof tag, "%s W=%d C=%d", f32 ? "f32" : "act", W, C);
            compare("segment_tail", tag, f32 ? gt_get_f32(td, nt) : gt_get_act(td, nt), tc, nt, 0);
        }
    gt_reset();
}

static void test_segment_cumsum(void) {
    static const int long_seg[] = {1000, 3};
    for (int layout = 0; layout < 2; layout++) {
        Seqs *s = layout ? gt_seqs(long_seg, 2) : gt_seqs(LENS, NLENS);
        const int C = 5;
        const int64_t n = s->ntok * C;
        float *x = gt_rand(n, -0.1, 0.0), *yc = gt_rand(n, -1, 1); /* log forget gates */
        gt_cpu->segment_cumsum(yc, x, s, C);
        void *yd = gt_garbage_f32(n);
        gt_gpu->segment_cumsum(yd, gt_f32(x, n), s, C);
        compare("segment_cumsum", layout ? "{1000,3}" : "{1,63,64,65,130}", gt_get_f32(yd, n), yc,
                n, 1e-4);
    }
    gt_reset();
}

static void test_cache_write(void) {
    Seqs *s = gt_seqs(LENS, NLENS);
    const int cap = 200;
    for (int f32 = 0; f32 <= 1; f32++) {
        const int C = f32 ? 2 : 64; /* the gate cache's H, the key cache's H * D */
        const int64_t nc = (int64_t)s->nseg * cap * C, nx = s->ntok * C;
        float *x = gt_randn(nx, 1.0), *cc = gt_randn(nc, 1.0); /* untouched slots stay */
        void *cd = f32 ? gt_f32(cc, nc) : gt_act(cc, nc);
        gt_cpu->cache_write(cc, x, s, cap, C, f32);
        gt_gpu->cache_write(cd, f32 ? gt_f32(x, nx) : gt_act(x, nx), s, cap, C, f32);
        compare("cache_write", f32 ? "f32 C=2" : "act C=64",
                f32 ? gt_get_f32(cd, nc) : gt_get_act(cd, nc), cc, nc, 0);
    }
    gt_reset();
}

/* ---- short conv and shift steps ---- */

static const int32_t STEP_POS[] = {0, 1, 2, 3, 700};
#define STEP_ROWS 5

static void conv_step_case(int C, int K, int with_w, Activation act, int with_b) {
    char tag[96];
    snprintf(tag, sizeof tag, "C=%d K=%d %s %s%s", C, K, with_w ? "weight" : "difference",
             act == ACT_SILU ? "silu" : "none", with_b ? " bias" : "");
    const int B = STEP_ROWS;
    const int64_t nx = (int64_t)B * C, nt = 3 * nx;
    float *w = with_w ? gt_randn(K * (int64_t)C, 0.5) : NULL, *b = with_b ? gt_randn(C, 0.5) : NULL;
    float *tc = gt_randn(nt, 1.0);
    void *td = gt_act(tc, nt), *wd = w ? gt_act(w, K * (int64_t)C) : NULL,
         *bd = b ? gt_act(b, C) : NULL;
    for (int t = 0; t < STEPS; t++) {
        int32_t pos[STEP_ROWS];
        advance(pos, STEP_POS, B, t);
        Seqs *s = gt_step_seqs(pos, B);
        float *x = gt_randn(nx, 1.0), *yc = gt_rand(nx, -1, 1);
        gt_cpu->conv_step(yc, x, w, b, tc, s, C, K, act);
        void *yd = gt_garbage_act(nx);
        gt_gpu->conv_step(yd, gt_act(x, nx), wd, bd, td, s, C, K, act);
        compare("conv_step y", tag, gt_get_act(yd, nx), yc, nx, 1e-2);
        compare("conv_step tail", tag, gt_get_act(td, nt), tc, nt, 0);
    }
    gt_reset();
}

static void test_conv_step(void) {
    for (int with_w = 0; with_w <= 1; with_w++)
        for (int silu = 0; silu <= 1; silu++)
            for (int with_b = 0; with_b <= 1; with_b++)
                conv_step_case(96, 4, with_w, silu ? ACT_SILU : ACT_NONE, with_b);
    conv_step_case(96, 3, 1, ACT_NONE, 1); /* BaseConv's */
    conv_step_case(96, 1, 1, ACT_SILU, 0);
}

static void test_shift_step(void) {
    const int B = STEP_ROWS, H = 3, D = 10;
    const int64_t n = (int64_t)B * H * D;
    float *pc = gt_randn(n, 1.0);
    void *pd = gt_act(pc, n);
    for (int t = 0; t < STEPS; t++) {
        int32_t pos[STEP_ROWS];
        advance(pos, STEP_POS, B, t);
        Seqs *s = gt_step_seqs(pos, B);
        float *x = gt_randn(n, 1.0), *al = gt_randn((int64_t)B * H, 1.5), *yc = gt_rand(n, -1, 1);
        gt_cpu->shift_step(yc, x, al, pc, s, H, D);
        void *yd = gt_garbage_act(n);
        gt_gpu->shift_step(yd, gt_act(x, n), gt_act(al, (int64_t)B * H), pd, s, H, D);
        compare("shift_step y", "H=3 D=10", gt_get_act(yd, n), yc, n, 1e-2);
        compare("shift_step prev", "H=3 D=10", gt_get_act(pd, n), pc, n, 0);
    }
    gt_reset();
}

/* ---- Selective RoPE step ---- */

static const int32_t ROPE_POS[] = {0, 1, 2, 3, 4000};

/* conv: 0 the first difference (no weight), 1 a weight, 2 a weight and SiLU. */
static void selrope_step_case(int H, int P, int conv, int with_bias, int with_gate) {
    static const char *conv_names[] = {"difference", "weight", "weight+silu"};
    char tag[96];
    snprintf(tag, sizeof tag, "H=%d P=%d %s%s%s", H, P, conv_names[conv], with_bias ? " bias" : "",
             with_gate ? " gate" : "");
    const int B = STEP_ROWS, C = H * P;
    const int64_t nqk = (int64_t)B * H * 2 * P, nc = (int64_t)B * C;
    const Activation act = conv == 2 ? ACT_SILU : ACT_NONE;
    float *w = conv ? gt_randn(4 * (int64_t)C, 0.5) : NULL,
          *bias = with_bias ? gt_randn(C, 0.5) : NULL;
    float *temp = gt_rand(P, 0.0, 1.0);
    float *Pc = gt_rand(nc, -20, 20), *tc = gt_randn(3 * nc, 1.0);
    void *Pd = gt_f32(Pc, nc), *td = gt_act(tc, 3 * nc), *tempd = gt_f32(temp, P);
    void *wd = w ? gt_act(w, 4 * (int64_t)C) : NULL, *biasd = bias ? gt_act(bias, C) : NULL;
    for (int t = 0; t < STEPS; t++) {
        int32_t pos[STEP_ROWS];
        advance(pos, ROPE_POS, B, t);
        Seqs *s = gt_step_seqs(pos, B);
        float *q = gt_randn(nqk, 1.0), *k = gt_randn(nqk, 1.0), *phi = gt_randn(nc, 0.5);
        float *gl = with_gate ? gt_randn((int64_t)B * H, 1.5) : NULL;
        float *qoc = gt_rand(nqk, -1, 1), *koc = gt_rand(nqk, -1, 1);
        gt_cpu->selrope_step(&(SelRopeArgs){.s = s,
                                            .H = H,
                                            .P = P,
                                            .q = q,
                                            .k = k,
                                            .phi_raw = phi,
                                            .conv_w = w,
                                            .conv_act = act,
                                            .bias = bias,
                                            .gate_logit = gl,
                                            .temp = temp,
                                            .qo = qoc,
                                            .ko = koc,
                                            .Phi = Pc,
                                            .tail = tc});
        void *qod = gt_garbage_act(nqk), *kod = gt_garbage_act(nqk);
        gt_gpu->selrope_step(&(SelRopeArgs){.s = s,
                                            .H = H,
                                            .P = P,
                                            .q = gt_act(q, nqk),
                                            .k = gt_act(k, nqk),
                                            .phi_raw = gt_act(phi, nc),
                                            .conv_w = wd,
                                            .conv_act = act,
                                            .bias = biasd,
                                            .gate_logit = gl ? gt_act(gl, (int64_t)B * H) : NULL,
                                            .temp = tempd,
                                            .qo = qod,
                                            .ko = kod,
                                            .Phi = Pd,
                                            .tail = td});
        compare("selrope_step qo", tag, gt_get_act(qod, nqk), qoc, nqk, 1e-2);
        compare("selrope_step ko", tag, gt_get_act(kod, nqk), koc, nqk, 1e-2);
        compare("selrope_step Phi", tag, gt_get_f32(Pd, nc), Pc, nc, 1e-4);
        compare("selrope_step tail", tag, gt_get_act(td, 3 * nc), tc, 3 * nc, 0);
    }
    gt_reset();
}

/* Every angle conv, bias and gate at the tiny FoX's angle heads (P = D/2 = 16), then the tiny
 * GLA's (P = 8), the 370M GLA's (H4 P64) and FoX's (H16 P32). */
static void test_selrope_step(void) {
    for (int conv = 0; conv < 3; conv++)
        for (int bias = 0; bias <= 1; bias++)
            for (int gate = 0; gate <= 1; gate++) selrope_step_case(2, 16, conv, bias, gate);
    selrope_step_case(2, 8, 2, 0, 1);
    selrope_step_case(4, 64, 2, 1, 1);
    selrope_step_case(16, 32, 1, 0, 1);
}

/* ---- GLA and Gated DeltaNet steps ---- */

static const int32_t LIN_POS[] = {0, 1, 63, 64, 5000};

typedef enum { G_NONE, G_HEAD, G_CHANNEL } GateShape;
static const char *gate_names[] = {"g=NULL", "g per head", "g per channel"};

/* GLA (delta = 0) or Gated DeltaNet (delta = 1; G_NONE: DeltaNet). */
static void lin_step_case(int delta, int H, int K, int V, GateShape gs) {
    char tag[96];
    snprintf(tag, sizeof tag, "H=%d K=%d V=%d %s", H, K, V, gate_names[gs]);
    const char *op_o = delta ? "gdn_step o" : "gla_step o";
    const char *op_s = delta ? "gdn_step state" : "gla_step state";
    const int B = STEP_ROWS;
    const int64_t nk = (int64_t)B * H * K, nv = (int64_t)B * H * V, ns = nv * K;
    const int64_t ng = gs == G_CHANNEL ? nk : (int64_t)B * H;
    const double scale = gs == G_HEAD && !delta ? 1.0 : 1.0 / sqrt((double)K);
    float *Sc = gt_randn(ns, 1.0);
    void *Sd = gt_f32(Sc, ns);
    for (int t = 0; t < STEPS; t++) {
        int32_t pos[STEP_ROWS];
        advance(pos, LIN_POS, B, t);
        Seqs *s = gt_step_seqs(pos, B);
        float *q = gt_randn(nk, 1.0), *k = gt_randn(nk, 1.0), *v = gt_randn(nv, 1.0);
        if (delta) {
            gt_l2norm_rows(q, (int64_t)B * H, K);
            gt_l2norm_rows(k, (int64_t)B * H, K);
        }
        float *g = gs == G_NONE ? NULL : gt_rand(ng, -0.5, 0.0);
        float *beta = delta ? gt_rand((int64_t)B * H, 0.05, 0.95) : NULL;
        float *oc = gt_rand(nv, -1, 1);
        LinAttnArgs a = {.s = s,
                         .H = H,
                         .K = K,
                         .V = V,
                         .scale = scale,
                         .q = q,
                         .k = k,
                         .v = v,
                         .g = g,
                         .g_per_head = gs == G_HEAD,
                         .beta = beta,
                         .o = oc,
                         .state = Sc};
        if (delta)
            gt_cpu->gdn_step(&a);
        else
            gt_cpu->gla_step(&a);
        void *od = gt_garbage_act(nv);
        a.q = gt_act(q, nk), a.k = gt_act(k, nk), a.v = gt_act(v, nv);
        a.g = g ? gt_f32(g, ng) : NULL, a.beta = beta ? gt_f32(beta, (int64_t)B * H) : NULL;
        a.o = od, a.state = Sd;
        if (delta)
            gt_gpu->gdn_step(&a);
        else
            gt_gpu->gla_step(&a);
        compare(op_o, tag, gt_get_act(od, nv), oc, nv, 1e-2);
        compare(op_s, tag, gt_get_f32(Sd, ns), Sc, ns, 1e-4);
    }
    gt_reset();
}

/* The tiny models' heads, the 370M GLA's (two 128-column tiles), partial tiles (K = 80,
 * V = 144: a tile of 16 columns), the largest heads; Mamba2's per-head decay at its tiny
 * and 370M shapes. */
static void test_gla_step(void) {
    lin_step_case(0, 2, 16, 32, G_CHANNEL);
    lin_step_case(0, 4, 128, 256, G_CHANNEL);
    lin_step_case(0, 3, 80, 144, G_CHANNEL);
    lin_step_case(0, 1, 256, 512, G_CHANNEL);
    lin_step_case(0, 4, 16, 32, G_HEAD);
    lin_step_case(0, 32, 128, 64, G_HEAD);
}

static void test_gdn_step(void) {
    for (int gs = G_NONE; gs <= G_HEAD; gs++) {
        lin_step_case(1, 2, 16, 32, (GateShape)gs);
        lin_step_case(1, 8, 128, 128, (GateShape)gs);
        lin_step_case(1, 2, 96, 160, (GateShape)gs);
        lin_step_case(1, 1, 256, 256, (GateShape)gs);
    }
}

/* ---- attention step ---- */

/* B rows at positions pos0 (then + 1, + 2) with caches of cap slots: random keys and values in
 * every slot (slots past a row's position must not be read) and, with a gate, cumulative log
 * forget gates F_u = F_{u-1} + U(-0.05, 0). */
#define ATTN_MAX_ROWS 4

static void attn_step_case(int H, int D, int gate, const int32_t *pos0, int B, int cap) {
    RT_ASSERT(B <= ATTN_MAX_ROWS);
    char tag[96];
    snprintf(tag, sizeof tag, "H=%d D=%d %s B=%d pos0=%d..%d", H, D, gate ? "gate" : "no gate", B,
             pos0[0], pos0[B - 1]);
    const int64_t nq = (int64_t)B * H * D, nc = (int64_t)B * cap * H * D, nf = (int64_t)B * cap * H;
    float *kc = gt_randn(nc, 1.0), *vc = gt_randn(nc, 1.0), *fc = NULL;
    if (gate) {
        fc = gt_rand(nf, -0.05, 0.0);
        for (int64_t r = 0; r < B; r++)
            for (int64_t u = 1; u < cap; u++)
                for (int h = 0; h < H; h++)
                    fc[(r * cap + u) * H + h] += fc[(r * cap + u - 1) * H + h];
    }
    void *kcd = gt_act(kc, nc), *vcd = gt_act(vc, nc), *fcd = gate ? gt_f32(fc, nf) : NULL;
    for (int t = 0; t < STEPS; t++) {
        int32_t pos[ATTN_MAX_ROWS];
        advance(pos, pos0, B, t);
        Seqs *s = gt_step_seqs(pos, B);
        float *q = gt_randn(nq, 1.5), *k = gt_randn(nq, 1.5), *v = gt_randn(nq, 1.0);
        float *lf = gate ? gt_rand((int64_t)B * H, -0.05, 0.0) : NULL, *oc = gt_rand(nq, -1, 1);
        AttnStepArgs a = {.s = s,
                          .H = H,
                          .D = D,
                          .cap = cap,
                          .scale = 1.0 / sqrt((double)D),
                          .q = q,
                          .k = k,
                          .v = v,
                          .logf = lf,
                          .kc = kc,
                          .vc = vc,
                          .fc = fc,
                          .o = oc};
        gt_cpu->attn_step(&a);
        void *od = gt_garbage_act(nq);
        a.q = gt_act(q, nq), a.k = gt_act(k, nq), a.v = gt_act(v, nq);
        a.logf = lf ? gt_f32(lf, (int64_t)B * H) : NULL;
        a.kc = kcd, a.vc = vcd, a.fc = fcd, a.o = od;
        gt_gpu->attn_step(&a);
        compare("attn_step o", tag, gt_get_act(od, nq), oc, nq, 1e-2);
    }
    compare("attn_step kc", tag, gt_get_act(kcd, nc), kc, nc, 0);
    compare("attn_step vc", tag, gt_get_act(vcd, nc), vc, nc, 0);
    if (gate) compare("attn_step fc", tag, gt_get_f32(fcd, nf), fc, nf, 1e-6);
    gt_reset();
}

/* Short caches (one span per row) and long ones (rows of ~3000 slots over several blocks and
 * the combine kernel), each head size, with and without the forget gate; the 370M FoX's
 * heads with rows of different lengths. */
static void test_attn_step(void) {
    static const int32_t short_pos[] = {0, 17, 200}, long_pos[] = {0, 17, 2999},
                         fox_pos[] = {0, 1, 1500, 3000};
    static const int Ds[] = {32, 64, 128};
    for (int i = 0; i < 3; i++)
        for (int gate = 0; gate <= 1; gate++) {
            attn_step_case(2, Ds[i], gate, short_pos, 3, 256);
            attn_step_case(2, Ds[i], gate, long_pos, 3, 3010);
        }
    attn_step_case(16, 64, 1, fox_pos, 4, 3010);
}

/* ---- the chunked ops' final states ---- */

static const int STATE_LAYOUT[] = {1, 63, 64, 65, 130, 300};
#define STATE_NSEG 6

/* gla_fwd (per key channel or per head: Mamba2) or gdn_fwd (with or without decay): o and
 * the state after every segment against the CPU's. */
static void final_state_case(int delta, int H, int K, int V, GateShape gs) {
    char tag[96];
    snprintf(tag, sizeof tag, "H=%d K=%d V=%d %s", H, K, V, gate_names[gs]);
    Seqs *s = gt_seqs(STATE_LAYOUT, STATE_NSEG);
    const int64_t N = s->ntok, nk = N * H * K, nv = N * H * V, nh = N * H;
    const int64_t ns = chunk_states_size(s, H, K, V), nf = (int64_t)s->nseg * H * K * V;
    const int64_t ng = gs == G_CHANNEL ? nk : nh;
    const double scale = 1.0 / sqrt((double)K);
    float *q = gt_randn(nk, 1.0), *k = gt_randn(nk, 1.0), *v = gt_randn(nv, 1.0);
    if (delta) {
        gt_l2norm_rows(q, nh, K);
        gt_l2norm_rows(k, nh, K);
    }
    float *g = gs == G_NONE ? NULL : gt_rand(ng, -0.05, 0.0);
    float *beta = delta ? gt_rand(nh, 0.05, 0.95) : NULL;
    float *oc = gt_rand(nv, -1, 1), *stc = gt_rand(ns, -1, 1), *fc = gt_rand(nf, -1, 1);
    LinAttnArgs a = {.s = s,
                     .H = H,
                     .K = K,
                     .V = V,
                     .scale = scale,
                     .q = q,
                     .k = k,
                     .v = v,
                     .g = g,
                     .g_per_head = gs == G_HEAD,
                     .beta = beta,
                     .o = oc,
                     .states = stc,
                     .state = fc};
    if (delta)
        gt_cpu->gdn_fwd(&a);
    else
        gt_cpu->gla_fwd(&a);
    void *od = gt_garbage_act(nv), *fd = gt_garbage_f32(nf);
    a.q = gt_act(q, nk), a.k = gt_act(k, nk), a.v = gt_act(v, nv);
    a.g = g ? gt_f32(g, ng) : NULL, a.beta = beta ? gt_f32(beta, nh) : NULL;
    a.o = od, a.states = gt_garbage_f32(ns), a.state = fd;
    if (delta)
        gt_gpu->gdn_fwd(&a);
    else
        gt_gpu->gla_fwd(&a);
    compare(delta ? "gdn_fwd o" : "gla_fwd o", tag, gt_get_act(od, nv), oc, nv, 2e-2);
    compare(delta ? "gdn_fwd state" : "gla_fwd state", tag, gt_get_f32(fd, nf), fc, nf, 2e-2);
    gt_reset();
}

static void test_final_states(void) {
    final_state_case(0, 2, 16, 32, G_CHANNEL);
    final_state_case(0, 4, 128, 256, G_CHANNEL);
    final_state_case(0, 4, 16, 32, G_HEAD);
    final_state_case(0, 32, 128, 64, G_HEAD);
    for (int gs = G_NONE; gs <= G_HEAD; gs++) {
        final_state_case(1, 2, 16, 32, (GateShape)gs);
        final_state_case(1, 8, 128, 128, (GateShape)gs);
    }
}

/* ---- whole models ---- */

#define ROWS 3
#define MODEL_STEPS 60
/* a prompt whose document (after its BOS at 20) crosses a chunk boundary, a one-token
 * prompt, a prompt of exactly one chunk; generated BOS tokens restart rows 0 and 1 */
static const int PROMPT[ROWS] = {100, 1, 64};
#define MAX_LEN (100 + MODEL_STEPS)

/* Logits [T, V] of one sequence from one forward pass (every position scored). */
static float *full_logits(Model *m, const Backend *be, const int32_t *tok, int T, int V) {
    int32_t *lab = rt_calloc((size_t)T, sizeof(int32_t));
    model_forward(m, &(Batch){1, T, tok, lab, NULL}, 0.0, NULL);
    void *raw = rt_malloc(be->act_size * (size_t)T * V);
    model_get_logits(m, raw);
    float *out = rt_malloc(sizeof(float) * (size_t)T * V);
    act_to_f32(be->act_size, out, raw, (int64_t)T * V);
    rt_free(raw);
    rt_free(lab);
    return out;
}

/* max |a - b| / max |b| over V logits. */
static double logit_error(const float *a, const float *b, int V) {
    double err = 0, mx = 1e-6;
    for (int i = 0; i < V; i++) {
        mx = fmax(mx, fabs((double)b[i]));
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= err)) err = d;
    }
    return err / mx;
}

static void report(const char *what, const char *name, double err, double tol) {
    char label[128];
    snprintf(label, sizeof label, "%s %s", what, name);
    printf("  %-28s err=%.3e tol=%.1e %s\n", label, err, tol, err <= tol ? "ok" : "FAIL");
    CHECK_MSG(err <= tol, "%s: logits differ by %.3g of the largest", label, err);
}

/* A tiny config decoded on both backends (doc_mask on) from the same weights: every step's
 * logits on the GPU against the CPU's and against the GPU's own full forward pass. */
static void decode_config(const char *name) {
    char path[1024], err[2048];
    const char *root =
        getenv("ROTOR_SOURCE_DIR"); /* a bundle run elsewhere (scripts/gpu_check.sh) */
    snprintf(path, sizeof path, "%s/configs/tiny/%s.ini", root ? root : ROTOR_SOURCE_DIR, name);
    RunConfig rc;
    if (run_config_load(&rc, path, NULL, 0, err, sizeof err)) rt_die("%s", err);
    rc.model.doc_mask = 1;
    const int V = rc.model.vocab_size, bos = rc.model.bos_id;
    Model *mc = model_create(&rc.model, gt_cpu), *mg = model_create(&rc.model, gt_gpu);
    model_init_weights(mc, 7);
    model_init_weights(mg, 7);
    Rng r;
    rng_init(&r, 5, 0);
    static int32_t seq[ROWS][MAX_LEN];
    for (int row = 0; row < ROWS; row++)
        for (int t = 0; t < MAX_LEN; t++) {
            int32_t x = (int32_t)rng_below(&r, (uint64_t)V);
            seq[row][t] = x == bos ? x + 1 : x;
        }
    seq[0][20] = seq[0][130] = seq[1][20] = bos;
    /* small mode (gpu_test.h): 3 steps, enough to race every step kernel of the model */
    const int steps = gt_small() ? 3 : MODEL_STEPS;
    float *full[ROWS];
    for (int row = 0; row < ROWS; row++)
        full[row] = full_logits(mg, gt_gpu, seq[row], PROMPT[row] + steps, V);
    Decoder *dc = decoder_create(mc, ROWS, MAX_LEN), *dg = decoder_create(mg, ROWS, MAX_LEN);
    const int32_t *prompts[ROWS] = {seq[0], seq[1], seq[2]};
    float *lc = rt_malloc(sizeof(float) * ROWS * V), *lg = rt_malloc(sizeof(float) * ROWS * V);
    decoder_prefill(dc, prompts, PROMPT, lc);
    decoder_prefill(dg, prompts, PROMPT, lg);
    double worst_cpu = 0, worst_full = 0, prefill_cpu = 0;
    int worst_step = 0;
    for (int step = 0; step <= steps; step++) {
        for (int row = 0; row < ROWS; row++) {
            const int at = PROMPT[row] - 1 + step;
            const double e = logit_error(lg + row * V, lc + row * V, V);
            if (step == 0) prefill_cpu = fmax(prefill_cpu, e);
            if (e > worst_cpu) worst_cpu = e, worst_step = step;
            worst_full =
                fmax(worst_full, logit_error(lg + row * V, full[row] + (int64_t)at * V, V));
        }
        if (step == steps) break;
        int32_t next[ROWS];
        for (int row = 0; row < ROWS; row++) next[row] = seq[row][PROMPT[row] + step];
        decoder_step(dc, next, lc);
        decoder_step(dg, next, lg);
    }
    /* where the GPU parts from the CPU: after the prefill already, or growing with the steps */
    printf("    %s: after the prefill %.3e, the worst at step %d of %d\n", name, prefill_cpu,
           worst_step, steps);
    report("decode vs cpu", name, worst_cpu, 3e-2);
    report("decode vs forward", name, worst_full, 3e-2);
    for (int row = 0; row < ROWS; row++) rt_free(full[row]);
    rt_free(lc);
    rt_free(lg);
    decoder_free(dc);
    decoder_free(dg);
    model_free(mc);
    model_free(mg);
}

static void test_decode_models(void) {
    static const char *configs[] = {"gla-selective-pg",
                                    "gla-rope",
                                    "gdn-selective-pg",
                                    "deltanet-selective-pg",
                                    "fox-pro-selective-pg",
                                    "fox-rope",
                                    "transformer-selective-pg",
                                    "mamba2",
                                    "lru",
                                    "rotrnn"};
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) decode_config(configs[i]);
}

static const TestCase tests[] = {
    {"segment_tail", test_segment_tail},   {"segment_cumsum", test_segment_cumsum},
    {"cache_write", test_cache_write},     {"conv_step", test_conv_step},
    {"shift_step", test_shift_step},       {"selrope_step", test_selrope_step},
    {"gla_step", test_gla_step},           {"gdn_step", test_gdn_step},
    {"attn_step", test_attn_step},         {"final_states", test_final_states},
    {"decode_models", test_decode_models},
};

GT_MAIN(tests)
