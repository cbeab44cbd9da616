/* The cost model of the backend ops (op_costs.h). */
#include "device/op_costs.h"

#include <stdarg.h>
#include <stdio.h>

#include "device/kernel_variants.h"

OpCost op_cost_none(void) { return (OpCost){0}; }

static OpCost cost_make(double flops, double bytes) {
    return (OpCost){.flops = flops, .bytes = bytes};
}

__attribute__((format(printf, 2, 3))) static OpCost cost_shaped(OpCost c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c.shape, sizeof c.shape, fmt, ap);
    va_end(ap);
    return c;
}

/* Causal (query, key) pairs over the segments of a batch. */
static double causal_pairs(const Seqs *s) {
    double p = 0;
    for (int i = 0; i < s->nseg; i++) {
        double L = (double)(s->cu[i + 1] - s->cu[i]);
        p += L * (L + 1) / 2;
    }
    return p;
}

/* Bytes of the decoding states gla_fwd / gdn_fwd write when a->state is set. */
static double final_states(const CostUnits *u, const LinAttnArgs *a) {
    return a->state ? u->f32 * (double)a->s->nseg * a->H * a->K * a->V : 0;
}

/* Cache slots a decoding step's rows attend to: sum over the rows of pos + 1. */
static double step_slots(const Seqs *s) {
    double n = 0;
    for (int64_t r = 0; r < s->ntok; r++) n += s->pos[r] + 1.0;
    return n;
}

OpCost op_cost_matmul_fwd(const CostUnits *u, void *out, const void *x, const void *w,
                          const void *bias, int M, int N, int K) {
    double m = M, n = N, k = K;
    return cost_shaped(cost_make(2 * m * n * k, u->act * (m * k + n * k + m * n)), "%dx%dx%d", M, N,
                       K);
}

OpCost op_cost_matmul_bwd(const CostUnits *u, void *dx, void *dw, void *dbias, const void *dout,
                          const void *x, const void *w, int M, int N, int K, int accumulate) {
    double m = M, n = N, k = K;
    double flops = 2 * m * n * k * ((dx ? 1 : 0) + (dw ? 1 : 0));
    double bytes = u->act * m * n; /* dout */
    if (dw) bytes += u->act * m * k + 2 * u->f32 * n * k;
    if (dx) bytes += u->act * (n * k + m * k * (accumulate ? 2 : 1));
    return cost_shaped(cost_make(flops, bytes), "%dx%dx%d", M, N, K);
}

/* The parts' products, shaped by their total width. */
OpCost op_cost_matmul_group_fwd(const CostUnits *u, const MatmulGroup *g) {
    OpCost c = {0};
    int N = 0;
    for (int i = 0; i < g->n; i++) {
        OpCost p =
            op_cost_matmul_fwd(u, g->p[i].y, g->x, g->p[i].w, g->p[i].bias, g->M, g->p[i].N, g->K);
        c.flops += p.flops, c.bytes += p.bytes, N += g->p[i].N;
    }
    return cost_shaped(c, "%dx%dx%d (%d parts)", g->M, N, g->K, g->n);
}

OpCost op_cost_matmul_group_bwd(const CostUnits *u, const MatmulGroupGrads *a) {
    const MatmulGroup *g = &a->g;
    OpCost c = {0};
    int N = 0;
    for (int i = 0; i < g->n; i++) {
        OpCost p = op_cost_matmul_bwd(u, a->dx, a->dw[i], a->dbias[i], a->dy[i], g->x, g->p[i].w,
                                      g->M, g->p[i].N, g->K, a->accumulate || i > 0);
        c.flops += p.flops, c.bytes += p.bytes, N += g->p[i].N;
    }
    return cost_shaped(c, "%dx%dx%d (%d parts)", g->M, N, g->K, g->n);
}

/* The product and the gate's pass as one: y and out written, g read; the product's own
 * bytes (x, w, y) as matmul_fwd's. */
OpCost op_cost_matmul_gate_mul_fwd(const CostUnits *u, const MatmulGateMulArgs *a) {
    OpCost c = op_cost_matmul_fwd(u, a->y, a->x, a->w, NULL, a->M, a->N, a->K);
    return cost_shaped(cost_make(c.flops, c.bytes + 2 * u->act * (double)a->M * a->N), "%dx%dx%d",
                       a->M, a->N, a->K);
}

/* dout and w read, x and g read, dx, dg and p written: dp need not reach memory. */
OpCost op_cost_gate_mul_matmul_dx(const CostUnits *u, const GateMulMatmulDx *a) {
    double m = a->M, n = a->N, k = a->K;
    return cost_shaped(cost_make(2 * m * n * k, u->act * (m * n + n * k + 5 * m * k)), "%dx%dx%d",
                       a->M, a->N, a->K);
}

OpCost op_cost_head_matmul_fwd(const CostUnits *u, void *out, const void *x, const void *w,
                               int64_t N, int H, int Din, int P) {
    double n = (double)N;
    return cost_make(2 * n * H * Din * P, u->act * (n * H * (Din + P) + (double)H * Din * P));
}

OpCost op_cost_head_matmul_bwd(const CostUnits *u, void *dx, void *dw, const void *dout,
                               const void *x, const void *w, int64_t N, int H, int Din, int P,
                               int accumulate) {
    double n = (double)N;
    return cost_make(4 * n * H * Din * P,
                     u->act * n * H * (2 * Din + P) + 2 * u->f32 * H * Din * P);
}

OpCost op_cost_to_act(const CostUnits *u, void *dst, const void *src, int64_t n) {
    return cost_make(0, (u->act + u->f32) * (double)n);
}

OpCost op_cost_embedding_fwd(const CostUnits *u, void *out, const int32_t *tok, const void *E,
                             int64_t n, int C) {
    return cost_make(0, 2 * u->act * (double)n * C + 4.0 * n);
}

OpCost op_cost_embedding_bwd(const CostUnits *u, void *dE, const int32_t *tok, const void *dout,
                             int64_t n, int C) {
    return cost_make(0, (u->act + 2 * u->f32) * (double)n * C + 4.0 * n);
}

OpCost op_cost_rmsnorm_fwd(const CostUnits *u, void *y, void *rstd, const void *x, const void *w,
                           int64_t N, int G, int C, int w_per_group, double eps) {
    return cost_make(0, 2 * u->act * (double)N * G * C + u->f32 * (double)N * G);
}

OpCost op_cost_add_rmsnorm_fwd(const CostUnits *u, void *h, void *y, void *rstd, const void *a,
                               const void *b, const void *w, int64_t N, int C, double eps) {
    return cost_make(0, 4 * u->act * (double)N * C + u->f32 * (double)N);
}

OpCost op_cost_rmsnorm_bwd(const CostUnits *u, void *dx, void *dw, const void *dy, const void *x,
                           const void *w, const void *rstd, int64_t N, int G, int C,
                           int w_per_group, int accumulate) {
    return cost_make(0, (3 + (accumulate ? 1 : 0)) * u->act * (double)N * G * C +
                            u->f32 * (double)N * G);
}

/* The fused pass: x and gp read, r written (3 [act] a value), rstd written; on is not counted
 * (a fused kernel writes none). */
OpCost op_cost_rmsnorm_gate_fwd(const CostUnits *u, const RmsnormGateArgs *a) {
    double n = (double)a->N * a->G * a->C;
    return cost_make(0, 3 * u->act * n + u->f32 * (double)a->N * a->G);
}

/* dr, x and gp read, dx and dgp written (5 [act] a value), rstd read. */
OpCost op_cost_rmsnorm_gate_bwd(const CostUnits *u, const RmsnormGateGrads *g) {
    const RmsnormGateArgs *a = &g->a;
    double n = (double)a->N * a->G * a->C;
    return cost_make(0, 5 * u->act * n + u->f32 * (double)a->N * a->G);
}

OpCost op_cost_layernorm_fwd(const CostUnits *u, void *y, void *mean, void *rstd, const void *x,
                             const void *w, const void *b, int64_t N, int C, double eps) {
    return cost_make(0, 2 * u->act * (double)N * C + 2 * u->f32 * (double)N);
}

OpCost op_cost_layernorm_bwd(const CostUnits *u, void *dx, void *dw, void *db, const void *dy,
                             const void *x, const void *w, const void *mean, const void *rstd,
                             int64_t N, int C, int accumulate) {
    return cost_make(0,
                     (3 + (accumulate ? 1 : 0)) * u->act * (double)N * C + 2 * u->f32 * (double)N);
}

OpCost op_cost_l2norm_fwd(const CostUnits *u, void *y, void *rnorm, const void *x, int64_t N, int G,
                          int D, double eps) {
    return cost_make(0, 2 * u->act * (double)N * G * D + u->f32 * (double)N * G);
}

OpCost op_cost_l2norm_bwd(const CostUnits *u, void *dx, const void *dy, const void *y,
                          const void *rnorm, int64_t N, int G, int D, int accumulate) {
    return cost_make(0, (3 + (accumulate ? 1 : 0)) * u->act * (double)N * G * D +
                            u->f32 * (double)N * G);
}

OpCost op_cost_gate_mul_fwd(const CostUnits *u, void *out, const void *x, const void *g, int64_t n,
                            Activation act) {
    return cost_make(0, 3 * u->act * (double)n);
}

OpCost op_cost_gate_mul_bwd(const CostUnits *u, void *dx, void *dg, const void *dout, const void *x,
                            const void *g, int64_t n, Activation act) {
    return cost_make(0, 5 * u->act * (double)n);
}

OpCost op_cost_gate_mul_bwd_rebuild(const CostUnits *u, void *out, void *dx, void *dg,
                                    const void *dout, const void *x, const void *g, int64_t n,
                                    Activation act) {
    return cost_make(0, 6 * u->act * (double)n);
}

OpCost op_cost_add(const CostUnits *u, void *y, const void *a, const void *b, int64_t n) {
    return cost_make((double)n, 3 * u->act * (double)n);
}

OpCost op_cost_silu_fwd(const CostUnits *u, void *y, const void *x, int64_t n) {
    return cost_make(0, 2 * u->act * (double)n);
}

OpCost op_cost_silu_bwd(const CostUnits *u, void *dx, const void *dy, const void *x, int64_t n) {
    return cost_make(0, 3 * u->act * (double)n);
}

/* GELU and ReLU move what SiLU moves. */
OpCost op_cost_gelu_fwd(const CostUnits *u, void *y, const void *x, int64_t n) {
    return op_cost_silu_fwd(u, y, x, n);
}

OpCost op_cost_gelu_bwd(const CostUnits *u, void *dx, const void *dy, const void *x, int64_t n) {
    return op_cost_silu_bwd(u, dx, dy, x, n);
}

OpCost op_cost_relu_fwd(const CostUnits *u, void *y, const void *x, int64_t n) {
    return op_cost_silu_fwd(u, y, x, n);
}

OpCost op_cost_relu_bwd(const CostUnits *u, void *dx, const void *dy, const void *x, int64_t n) {
    return op_cost_silu_bwd(u, dx, dy, x, n);
}

OpCost op_cost_pair_nli_fwd(const CostUnits *u, void *f, const void *x, int64_t P, int d) {
    return cost_make(2 * (double)P * d, 6 * u->act * (double)P * d);
}

OpCost op_cost_pair_nli_bwd(const CostUnits *u, void *dx, const void *df, const void *x, int64_t P,
                            int d) {
    return cost_make(6 * (double)P * d, 8 * u->act * (double)P * d);
}

OpCost op_cost_sigmoid_fwd(const CostUnits *u, void *y, const void *x, int64_t n) {
    return cost_make(0, (u->act + u->f32) * (double)n);
}

OpCost op_cost_sigmoid_bwd(const CostUnits *u, void *dx, const void *dy, const void *x, int64_t n) {
    return cost_make(0, (2 * u->act + u->f32) * (double)n);
}

OpCost op_cost_logsigmoid_fwd(const CostUnits *u, void *y, const void *x, int64_t n,
                              double normalizer) {
    return cost_make(0, (u->act + u->f32) * (double)n);
}

OpCost op_cost_logsigmoid_bwd(const CostUnits *u, void *dx, const void *dy, const void *x,
                              int64_t n, double normalizer) {
    return cost_make(0, (2 * u->act + u->f32) * (double)n);
}

OpCost op_cost_conv_fwd(const CostUnits *u, void *y, const void *x, const void *w, const void *b,
                        const Seqs *s, int C, int K, Activation act) {
    return cost_make(0, 2 * u->act * (double)s->ntok * C);
}

OpCost op_cost_conv_bwd(const CostUnits *u, void *dx, void *dw, void *db, const void *dy,
                        const void *x, const void *w, const void *b, const Seqs *s, int C, int K,
                        Activation act) {
    return cost_make(0, 3 * u->act * (double)s->ntok * C);
}

OpCost op_cost_shift_fwd(const CostUnits *u, void *y, const void *x, const void *a_logit,
                         const Seqs *s, int H, int D) {
    return cost_make(0, 2 * u->act * (double)s->ntok * H * D + u->act * (double)s->ntok * H);
}

OpCost op_cost_shift_bwd(const CostUnits *u, void *dx, void *da_logit, const void *dy,
                         const void *x, const void *a_logit, const Seqs *s, int H, int D) {
    return cost_make(0, 3 * u->act * (double)s->ntok * H * D + 2 * u->act * (double)s->ntok * H);
}

/* The per-head decay (GDN, Mamba2) and Mamba2's small ops (docs/models.md §gated-deltanet,
 * §mamba2): elementwise passes over their inputs and outputs. */
OpCost op_cost_decay_gates_fwd(const CostUnits *u, void *dt, void *g, const void *dt_raw,
                               const void *A_log, const void *dt_bias, int64_t N, int H) {
    return cost_make(0, (u->act + (dt ? 2 : 1) * u->f32) * (double)N * H);
}

OpCost op_cost_decay_gates_bwd(const CostUnits *u, void *ddt_raw, void *dA_log, void *ddt_bias,
                               const void *ddt, const void *dg, const void *dt_raw,
                               const void *A_log, const void *dt_bias, int64_t N, int H) {
    return cost_make(0, (2 * u->act + (ddt ? 2 : 1) * u->f32) * (double)N * H);
}

OpCost op_cost_head_scale_fwd(const CostUnits *u, void *y, const void *x, const void *s, int64_t N,
                              int H, int D) {
    return cost_make((double)N * H * D, 2 * u->act * (double)N * H * D + u->f32 * (double)N * H);
}

OpCost op_cost_head_scale_bwd(const CostUnits *u, void *dx, void *ds, const void *dy, const void *x,
                              const void *s, int64_t N, int H, int D) {
    return cost_make(3 * (double)N * H * D,
                     3 * u->act * (double)N * H * D + 2 * u->f32 * (double)N * H);
}

OpCost op_cost_head_skip_fwd(const CostUnits *u, void *y, const void *x, const void *Dp, int64_t N,
                             int H, int D) {
    return cost_make(2 * (double)N * H * D, 3 * u->act * (double)N * H * D);
}

OpCost op_cost_head_skip_bwd(const CostUnits *u, void *dx, void *dDp, const void *dy, const void *x,
                             const void *Dp, int64_t N, int H, int D) {
    return cost_make(4 * (double)N * H * D, 4 * u->act * (double)N * H * D);
}

OpCost op_cost_group_bcast_fwd(const CostUnits *u, void *out, const void *src, int64_t N, int H,
                               int G, int K) {
    return cost_make(0, u->act * (double)N * K * (H + G));
}

OpCost op_cost_group_bcast_bwd(const CostUnits *u, void *dsrc, const void *dout, int64_t N, int H,
                               int G, int K) {
    return cost_make((double)N * K * H, u->act * (double)N * K * (H + G));
}

/* The LRU / RotRNN scan (docs/models.md §lru, §rotrnn): 8 flops per complex channel and token
 * (a complex multiply-add), the backward twice that plus the eigenvalue sum; x and h read or
 * written once per pass that touches them. */
OpCost op_cost_cscan_fwd(const CostUnits *u, const CScanArgs *a) {
    double n = (double)a->s->ntok * a->C;
    return cost_shaped(
        cost_make(16 * n, 2 * u->act * 2 * n + 2 * u->f32 * 2 * (double)a->s->nchunk * a->C), "C%d",
        a->C);
}

OpCost op_cost_cscan_bwd(const CostUnits *u, const CScanGrads *g) {
    double n = (double)g->a.s->ntok * g->a.C;
    return cost_shaped(
        cost_make(32 * n, 4 * u->act * 2 * n + 2 * u->f32 * 2 * (double)g->a.s->nchunk * g->a.C),
        "C%d", g->a.C);
}

OpCost op_cost_cscan_step(const CostUnits *u, const CScanArgs *a) {
    double n = (double)a->s->ntok * a->C;
    return cost_make(8 * n, 2 * u->act * 2 * n + 2 * u->f32 * 2 * n);
}

/* The mixers' weight ops: elementwise over the weights (LRU); per head a product of P with
 * B_h and C_h (RotRNN: 2 n flops per weight element forward, 6 n backward). */
OpCost op_cost_lru_weights_fwd(const CostUnits *u, const LruWeights *w) {
    double nw = 2.0 * w->N * w->d;
    return cost_make(nw, 2 * nw * (u->f32 + u->act));
}

OpCost op_cost_lru_weights_bwd(const CostUnits *u, const LruWeightGrads *g) {
    double nw = 2.0 * g->w.N * g->w.d;
    return cost_make(3 * nw, 2 * nw * 3 * u->f32);
}

OpCost op_cost_rotrnn_weights_fwd(const CostUnits *u, const RotWeights *w) {
    double nw = (double)w->H * w->n * w->d;
    return cost_make(2 * 2 * nw * w->n, 2 * nw * (u->f32 + u->act));
}

OpCost op_cost_rotrnn_weights_bwd(const CostUnits *u, const RotWeightGrads *g) {
    double nw = (double)g->w.H * g->w.n * g->w.d;
    return cost_make(6 * 2 * nw * g->w.n, 2 * nw * 5 * u->f32);
}

/* EURNN: L layers rotating every row pair of W, 6 flops per element pair; W is read and
 * written once per layer (backward: Y and D, and dW and W once). */
OpCost op_cost_eurnn_weights_fwd(const CostUnits *u, void *W, const void *theta, int n, int L) {
    double nn = (double)n * n;
    return cost_make(3 * nn * L, 2 * u->f32 * nn * L);
}

OpCost op_cost_eurnn_weights_bwd(const CostUnits *u, void *dtheta, const void *dW, const void *W,
                                 const void *theta, void *work, int n, int L) {
    double nn = (double)n * n;
    return cost_make(10 * nn * L, 4 * u->f32 * nn * (L + 1));
}

OpCost op_cost_rotate_fwd(const CostUnits *u, void *y, const void *x, const void *angle, int64_t N,
                          int H, int D, int per_head) {
    double n = (double)N;
    return cost_make(0, 2 * u->act * n * H * D + u->f32 * n * (per_head ? H : 1) * D / 2);
}

OpCost op_cost_rotate_bwd(const CostUnits *u, void *dx, void *dangle, const void *dy, const void *x,
                          const void *angle, int64_t N, int H, int D, int per_head) {
    double n = (double)N, angles = u->f32 * n * (per_head ? H : 1) * D / 2;
    return cost_make(0, (dangle ? 3 : 2) * u->act * n * H * D + angles * (dangle ? 3 : 1));
}

OpCost op_cost_selrope_fwd(const CostUnits *u, const SelRopeArgs *a) {
    double nh = (double)a->s->ntok * a->H;
    int P = a->P;
    return cost_shaped(cost_make(0, 4 * u->act * nh * 2 * P + (u->act + u->f32) * nh * P),
                       "H%d P%d", a->H, P);
}

OpCost op_cost_selrope_bwd(const CostUnits *u, const SelRopeGrads *g) {
    double nh = (double)g->a.s->ntok * g->a.H;
    int P = g->a.P;
    return cost_shaped(cost_make(0, 6 * u->act * nh * 2 * P + (2 * u->act + u->f32) * nh * P),
                       "H%d P%d", g->a.H, P);
}

/* Bytes of a GLA chunk-state element: [act] under gla_state:bf16 (the CUDA backend's). */
static double gla_state_bytes(const CostUnits *u) {
    return kernel_variant(KV_GLA_STATE) ? u->act : u->f32;
}

OpCost op_cost_gla_fwd(const CostUnits *u, const LinAttnArgs *a) {
    int H = a->H, K = a->K, V = a->V;
    double nh = (double)a->s->ntok * H, C = CHUNK_SIZE;
    double bytes = u->act * nh * (2 * K + 2 * V) + u->f32 * nh * K +
                   gla_state_bytes(u) * (double)chunk_states_size(a->s, H, K, V) +
                   final_states(u, a);
    return cost_shaped(cost_make(nh * (2 * C * (K + V) + 4.0 * K * V), bytes), "H%d K%d V%d", H, K,
                       V);
}

OpCost op_cost_gla_bwd(const CostUnits *u, const LinAttnGrads *g) {
    int H = g->a.H, K = g->a.K, V = g->a.V;
    double nh = (double)g->a.s->ntok * H, C = CHUNK_SIZE;
    double bytes = u->act * nh * (4 * K + 3 * V) + 2 * u->f32 * nh * K +
                   gla_state_bytes(u) * (double)chunk_states_size(g->a.s, H, K, V);
    return cost_shaped(cost_make(2 * nh * (2 * C * (K + V) + 4.0 * K * V), bytes), "H%d K%d V%d", H,
                       K, V);
}

OpCost op_cost_gdn_fwd(const CostUnits *u, const LinAttnArgs *a) {
    int H = a->H, K = a->K, V = a->V;
    double nh = (double)a->s->ntok * H, C = CHUNK_SIZE;
    double bytes = u->act * nh * (2 * K + 2 * V) + 2 * u->f32 * nh +
                   u->f32 * (double)chunk_states_size(a->s, H, K, V) + final_states(u, a);
    return cost_shaped(cost_make(nh * (6 * C * K + 4 * C * V + 6.0 * K * V), bytes), "H%d K%d V%d",
                       H, K, V);
}

OpCost op_cost_gdn_bwd(const CostUnits *u, const LinAttnGrads *g) {
    int H = g->a.H, K = g->a.K, V = g->a.V;
    double nh = (double)g->a.s->ntok * H, C = CHUNK_SIZE;
    double bytes = u->act * nh * (4 * K + 3 * V) + 4 * u->f32 * nh +
                   u->f32 * (double)chunk_states_size(g->a.s, H, K, V);
    return cost_shaped(cost_make(2 * nh * (6 * C * K + 4 * C * V + 6.0 * K * V), bytes),
                       "H%d K%d V%d", H, K, V);
}

OpCost op_cost_fox_fwd(const CostUnits *u, const AttnArgs *a) {
    int H = a->H, D = a->D;
    double nh = (double)a->s->ntok * H;
    return cost_shaped(cost_make(4.0 * D * H * causal_pairs(a->s),
                                 4 * u->act * nh * D + (a->logf ? 2 : 1) * u->f32 * nh),
                       "H%d D%d", H, D);
}

OpCost op_cost_fox_bwd(const CostUnits *u, const AttnGrads *g) {
    int H = g->a.H, D = g->a.D;
    double nh = (double)g->a.s->ntok * H;
    return cost_shaped(cost_make(10.0 * D * H * causal_pairs(g->a.s),
                                 8 * u->act * nh * D + (g->a.logf ? 3 : 1) * u->f32 * nh),
                       "H%d D%d", H, D);
}

/* Decoding (docs/models.md §decoding). After a prefill: copies and a cumsum (each element read and
 * written once). A step: the short-conv and Selective RoPE tails [3, C] per row are read and
 * rewritten, the recurrent states [K, V] per row and head read and written once (GLA 4KV
 * FLOPs per row and head: the update and q S; GDN 6KV: S^T k as well), and attention reads
 * the keys and values of slots 0..pos (4D FLOPs per slot and head: q.k and the weighted v). */
OpCost op_cost_segment_tail(const CostUnits *u, void *tail, const void *x, const Seqs *s, int C,
                            int W, int f32) {
    return cost_make(0, 2 * (f32 ? u->f32 : u->act) * (double)s->nseg * W * C);
}

OpCost op_cost_segment_cumsum(const CostUnits *u, void *y, const void *x, const Seqs *s, int C) {
    return cost_make((double)s->ntok * C, 2 * u->f32 * (double)s->ntok * C);
}

OpCost op_cost_cache_write(const CostUnits *u, void *cache, const void *x, const Seqs *s, int cap,
                           int C, int f32) {
    return cost_make(0, 2 * (f32 ? u->f32 : u->act) * (double)s->ntok * C);
}

OpCost op_cost_conv_step(const CostUnits *u, void *y, const void *x, const void *w, const void *b,
                         void *tail, const Seqs *s, int C, int K, Activation act) {
    return cost_make(0, 8 * u->act * (double)s->ntok * C);
}

OpCost op_cost_shift_step(const CostUnits *u, void *y, const void *x, const void *a_logit,
                          void *prev, const Seqs *s, int H, int D) {
    double n = (double)s->ntok * H;
    return cost_make(0, 4 * u->act * n * D + u->act * n);
}

OpCost op_cost_selrope_step(const CostUnits *u, const SelRopeArgs *a) {
    double nh = (double)a->s->ntok * a->H;
    int P = a->P;
    return cost_shaped(
        cost_make(0, 4 * u->act * nh * 2 * P + 7 * u->act * nh * P + 2 * u->f32 * nh * P),
        "H%d P%d", a->H, P);
}

OpCost op_cost_gla_step(const CostUnits *u, const LinAttnArgs *a) {
    int H = a->H, K = a->K, V = a->V;
    double nh = (double)a->s->ntok * H;
    double bytes = 2 * u->f32 * nh * K * V + u->act * nh * (2 * K + 2 * V) +
                   u->f32 * nh * (a->g_per_head ? 1 : K);
    return cost_shaped(cost_make(4 * nh * K * V, bytes), "H%d K%d V%d", H, K, V);
}

OpCost op_cost_gdn_step(const CostUnits *u, const LinAttnArgs *a) {
    int H = a->H, K = a->K, V = a->V;
    double nh = (double)a->s->ntok * H;
    double bytes =
        2 * u->f32 * nh * K * V + u->act * nh * (2 * K + 2 * V) + (a->g ? 2 : 1) * u->f32 * nh;
    return cost_shaped(cost_make(6 * nh * K * V, bytes), "H%d K%d V%d", H, K, V);
}

OpCost op_cost_attn_step(const CostUnits *u, const AttnStepArgs *a) {
    int H = a->H, D = a->D;
    double nh = (double)a->s->ntok * H, slots = step_slots(a->s) * H;
    double bytes = 2 * u->act * slots * D + (a->logf ? u->f32 * slots : 0) + 4 * u->act * nh * D;
    return cost_shaped(cost_make(4.0 * D * slots, bytes), "H%d D%d", H, D);
}

OpCost op_cost_cross_entropy(const CostUnits *u, void *logits, const int32_t *labels, int64_t N,
                             int V, double grad_scale) {
    return cost_make(0, (grad_scale != 0 ? 2 : 1) * u->act * (double)N * V + 4.0 * N);
}

OpCost op_cost_sumsq(const CostUnits *u, const void *x, int64_t n) {
    return cost_make(0, u->f32 * (double)n);
}

OpCost op_cost_scale(const CostUnits *u, void *x, int64_t n, double s) {
    return cost_make(0, 2 * u->f32 * (double)n);
}

OpCost op_cost_adamw(const CostUnits *u, void *w, void *w_act, void *m, void *v, const void *g,
                     int64_t n, double lr, double beta1, double beta2, double eps,
                     double weight_decay, int64_t t) {
    return cost_make(0, (7 * u->f32 + (w_act ? u->act : 0)) * (double)n);
}

/* The fused pass: each run's elements read and written once, the gradient read once. */
OpCost op_cost_adamw_runs(const CostUnits *u, const AdamWRuns *a) {
    double n = 0;
    for (int k = 0; k < a->nruns; k++) n += (double)a->runs[k].n;
    return cost_make(0, (7 * u->f32 + (a->w_act ? u->act : 0)) * n);
}

OpCost op_cost_rmsprop_update(const CostUnits *u, void *w, void *w_act, void *sq, const void *g,
                              int64_t n, double lr, double alpha, double eps, double weight_decay) {
    return cost_make(0, (5 * u->f32 + (w_act ? u->act : 0)) * (double)n);
}
