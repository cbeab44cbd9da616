// What each op of the CUDA backend must do per call, for the profiler (profile.cuh): FLOPs
// of its products and the fewest bytes it must move (bf16 [act] = 2 bytes, [f32] = 4; each
// input read once, each output written once, a += output read and written). Mixer FLOPs
// count the dense chunk products as the kernels compute them (per token and head, C = 64):
//   GLA forward 2C(K+V) + 4KV, backward twice that;
//   GDN forward 6CK + 4CV + 6KV (WY/UT form: A, W, U, the state pass, the output), backward
//   twice that;
//   FoX forward 4D per causal (query, key) pair, backward 2.5 times that (five products).
#pragma once

#include <stdarg.h>
#include <stdio.h>

#include "backend/cuda_ops.h"
#include "backend/profile.cuh"

namespace costs {

constexpr double A = 2, F = 4; // bytes of an [act] and an [f32] element

inline OpCost make(double flops, double bytes) {
    OpCost c;
    c.flops = flops;
    c.bytes = bytes;
    return c;
}

__attribute__((format(printf, 2, 3))) inline OpCost shaped(OpCost c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c.shape, sizeof c.shape, fmt, ap);
    va_end(ap);
    return c;
}

// Causal (query, key) pairs over the segments of a batch.
inline double causal_pairs(const Seqs *s) {
    double p = 0;
    for (int i = 0; i < s->nseg; i++) {
        double L = (double)(s->cu[i + 1] - s->cu[i]);
        p += L * (L + 1) / 2;
    }
    return p;
}

// Bytes of the decoding states gla_fwd / gdn_fwd write when a->state is set.
inline double final_states(const LinAttnArgs *a) {
    return a->state ? F * (double)a->s->nseg * a->H * a->K * a->V : 0;
}

// Cache slots a decoding step's rows attend to: sum over the rows of pos + 1.
inline double step_slots(const Seqs *s) {
    double n = 0;
    for (int64_t r = 0; r < s->ntok; r++) n += s->pos[r] + 1.0;
    return n;
}

} // namespace costs

#define ROTOR_COST(fn, ...) template <> struct Cost<fn> { static OpCost of(__VA_ARGS__)
#define ROTOR_COST_END };

ROTOR_COST(cuda_matmul_fwd, void *, const void *, const void *, const void *bias, int M, int N,
           int K) {
    double m = M, n = N, k = K;
    return costs::shaped(costs::make(2 * m * n * k, costs::A * (m * k + n * k + m * n)),
                         "%dx%dx%d", M, N, K);
}
ROTOR_COST_END

ROTOR_COST(cuda_matmul_bwd, void *dx, void *, void *dbias, const void *, const void *,
           const void *, int M, int N, int K, int accumulate) {
    double m = M, n = N, k = K;
    double flops = 2 * m * n * k * (dx ? 2 : 1);
    double bytes = costs::A * (m * n + m * k) + 2 * costs::F * n * k;
    if (dx) bytes += costs::A * (n * k + m * k * (accumulate ? 2 : 1));
    return costs::shaped(costs::make(flops, bytes), "%dx%dx%d", M, N, K);
}
ROTOR_COST_END

ROTOR_COST(cuda_head_matmul_fwd, void *, const void *, const void *, int64_t N, int H, int Din,
           int P) {
    double n = (double)N;
    return costs::make(2 * n * H * Din * P, costs::A * (n * H * (Din + P) + (double)H * Din * P));
}
ROTOR_COST_END

ROTOR_COST(cuda_head_matmul_bwd, void *, void *, const void *, const void *, const void *,
           int64_t N, int H, int Din, int P, int accumulate) {
    double n = (double)N;
    return costs::make(4 * n * H * Din * P,
                       costs::A * n * H * (2 * Din + P) + 2 * costs::F * H * Din * P);
}
ROTOR_COST_END

ROTOR_COST(cuda_to_act, void *, const void *, int64_t n) {
    return costs::make(0, (costs::A + costs::F) * (double)n);
}
ROTOR_COST_END

ROTOR_COST(cuda_embedding_fwd, void *, const int32_t *, const void *, int64_t n, int C) {
    return costs::make(0, 2 * costs::A * (double)n * C + 4.0 * n);
}
ROTOR_COST_END

ROTOR_COST(cuda_embedding_bwd, void *, const int32_t *, const void *, int64_t n, int C) {
    return costs::make(0, (costs::A + 2 * costs::F) * (double)n * C + 4.0 * n);
}
ROTOR_COST_END

ROTOR_COST(cuda_rmsnorm_fwd, void *, void *, const void *, const void *, int64_t N, int G, int C,
           int, double) {
    return costs::make(0, 2 * costs::A * (double)N * G * C + costs::F * (double)N * G);
}
ROTOR_COST_END

ROTOR_COST(cuda_add_rmsnorm_fwd, void *, void *, void *, const void *, const void *,
           const void *, int64_t N, int C, double) {
    return costs::make(0, 4 * costs::A * (double)N * C + costs::F * (double)N);
}
ROTOR_COST_END

ROTOR_COST(cuda_rmsnorm_bwd, void *, void *, const void *, const void *, const void *,
           const void *, int64_t N, int G, int C, int, int accumulate) {
    return costs::make(0, (3 + (accumulate ? 1 : 0)) * costs::A * (double)N * G * C +
                              costs::F * (double)N * G);
}
ROTOR_COST_END

ROTOR_COST(cuda_l2norm_fwd, void *, void *, const void *, int64_t N, int G, int D, double) {
    return costs::make(0, 2 * costs::A * (double)N * G * D + costs::F * (double)N * G);
}
ROTOR_COST_END

ROTOR_COST(cuda_l2norm_bwd, void *, const void *, const void *, const void *, int64_t N, int G,
           int D, int accumulate) {
    return costs::make(0, (3 + (accumulate ? 1 : 0)) * costs::A * (double)N * G * D +
                              costs::F * (double)N * G);
}
ROTOR_COST_END

ROTOR_COST(cuda_gate_mul_fwd, void *, const void *, const void *, int64_t n, Activation) {
    return costs::make(0, 3 * costs::A * (double)n);
}
ROTOR_COST_END

ROTOR_COST(cuda_gate_mul_bwd, void *, void *, const void *, const void *, const void *, int64_t n,
           Activation) {
    return costs::make(0, 5 * costs::A * (double)n);
}
ROTOR_COST_END

ROTOR_COST(cuda_silu_fwd, void *, const void *, int64_t n) {
    return costs::make(0, 2 * costs::A * (double)n);
}
ROTOR_COST_END

ROTOR_COST(cuda_silu_bwd, void *, const void *, const void *, int64_t n) {
    return costs::make(0, 3 * costs::A * (double)n);
}
ROTOR_COST_END

// GELU and ReLU move what SiLU moves.
template <> struct Cost<cuda_gelu_fwd> : Cost<cuda_silu_fwd> {};
template <> struct Cost<cuda_gelu_bwd> : Cost<cuda_silu_bwd> {};
template <> struct Cost<cuda_relu_fwd> : Cost<cuda_silu_fwd> {};
template <> struct Cost<cuda_relu_bwd> : Cost<cuda_silu_bwd> {};

ROTOR_COST(cuda_pair_nli_fwd, void *, const void *, int64_t P, int d) {
    return costs::make(2 * (double)P * d, 6 * costs::A * (double)P * d);
}
ROTOR_COST_END

ROTOR_COST(cuda_pair_nli_bwd, void *, const void *, const void *, int64_t P, int d) {
    return costs::make(6 * (double)P * d, 8 * costs::A * (double)P * d);
}
ROTOR_COST_END

ROTOR_COST(cuda_sigmoid_fwd, void *, const void *, int64_t n) {
    return costs::make(0, (costs::A + costs::F) * (double)n);
}
ROTOR_COST_END

ROTOR_COST(cuda_sigmoid_bwd, void *, const void *, const void *, int64_t n) {
    return costs::make(0, (2 * costs::A + costs::F) * (double)n);
}
ROTOR_COST_END

ROTOR_COST(cuda_logsigmoid_fwd, void *, const void *, int64_t n, double) {
    return costs::make(0, (costs::A + costs::F) * (double)n);
}
ROTOR_COST_END

ROTOR_COST(cuda_logsigmoid_bwd, void *, const void *, const void *, int64_t n, double) {
    return costs::make(0, (2 * costs::A + costs::F) * (double)n);
}
ROTOR_COST_END

ROTOR_COST(cuda_conv_fwd, void *, const void *, const void *, const void *, const Seqs *s, int C,
           Activation) {
    return costs::make(0, 2 * costs::A * (double)s->ntok * C);
}
ROTOR_COST_END

ROTOR_COST(cuda_conv_bwd, void *, void *, void *, const void *, const void *, const void *,
           const void *, const Seqs *s, int C, Activation) {
    return costs::make(0, 3 * costs::A * (double)s->ntok * C);
}
ROTOR_COST_END

ROTOR_COST(cuda_shift_fwd, void *, const void *, const void *, const Seqs *s, int H, int D) {
    return costs::make(0, 2 * costs::A * (double)s->ntok * H * D + costs::A * (double)s->ntok * H);
}
ROTOR_COST_END

ROTOR_COST(cuda_shift_bwd, void *, void *, const void *, const void *, const void *,
           const Seqs *s, int H, int D) {
    return costs::make(0, 3 * costs::A * (double)s->ntok * H * D + 2 * costs::A * (double)s->ntok * H);
}
ROTOR_COST_END

// The per-head decay (GDN, Mamba2) and Mamba2's small ops (docs/models.md §3, §10):
// elementwise passes over their inputs and outputs.
ROTOR_COST(cuda_decay_gates_fwd, void *dt, void *, const void *, const void *, const void *,
           int64_t N, int H) {
    return costs::make(0, (costs::A + (dt ? 2 : 1) * costs::F) * (double)N * H);
}
ROTOR_COST_END

ROTOR_COST(cuda_decay_gates_bwd, void *, void *, void *, const void *ddt, const void *,
           const void *, const void *, const void *, int64_t N, int H) {
    return costs::make(0, (2 * costs::A + (ddt ? 2 : 1) * costs::F) * (double)N * H);
}
ROTOR_COST_END

ROTOR_COST(cuda_head_scale_fwd, void *, const void *, const void *, int64_t N, int H, int D) {
    return costs::make((double)N * H * D, 2 * costs::A * (double)N * H * D + costs::F * (double)N * H);
}
ROTOR_COST_END

ROTOR_COST(cuda_head_scale_bwd, void *, void *, const void *, const void *, const void *, int64_t N,
           int H, int D) {
    return costs::make(3 * (double)N * H * D, 3 * costs::A * (double)N * H * D + 2 * costs::F * (double)N * H);
}
ROTOR_COST_END

ROTOR_COST(cuda_head_skip_fwd, void *, const void *, const void *, int64_t N, int H, int D) {
    return costs::make(2 * (double)N * H * D, 3 * costs::A * (double)N * H * D);
}
ROTOR_COST_END

ROTOR_COST(cuda_head_skip_bwd, void *, void *, const void *, const void *, const void *, int64_t N,
           int H, int D) {
    return costs::make(4 * (double)N * H * D, 4 * costs::A * (double)N * H * D);
}
ROTOR_COST_END

ROTOR_COST(cuda_group_bcast_fwd, void *, const void *, int64_t N, int H, int G, int K) {
    return costs::make(0, costs::A * (double)N * K * (H + G));
}
ROTOR_COST_END

ROTOR_COST(cuda_group_bcast_bwd, void *, const void *, int64_t N, int H, int G, int K) {
    return costs::make((double)N * K * H, costs::A * (double)N * K * (H + G));
}
ROTOR_COST_END

// The LRU / RotRNN scan (docs/models.md §13, §14): 8 flops per complex channel and token
// (a complex multiply-add), the backward twice that plus the eigenvalue sum; x and h read or
// written once per pass that touches them.
ROTOR_COST(cuda_cscan_fwd, const CScanArgs *a) {
    double n = (double)a->s->ntok * a->C;
    return costs::shaped(costs::make(16 * n, 2 * costs::A * 2 * n + 2 * costs::F * 2 * (double)a->s->nchunk * a->C),
                         "C%d", a->C);
}
ROTOR_COST_END

ROTOR_COST(cuda_cscan_bwd, const CScanGrads *g) {
    double n = (double)g->a.s->ntok * g->a.C;
    return costs::shaped(costs::make(32 * n, 4 * costs::A * 2 * n + 2 * costs::F * 2 * (double)g->a.s->nchunk * g->a.C),
                         "C%d", g->a.C);
}
ROTOR_COST_END

ROTOR_COST(cuda_cscan_step, const CScanArgs *a) {
    double n = (double)a->s->ntok * a->C;
    return costs::make(8 * n, 2 * costs::A * 2 * n + 2 * costs::F * 2 * n);
}
ROTOR_COST_END

// The mixers' weight ops: elementwise over the weights (LRU); per head a product of P with
// B_h and C_h (RotRNN: 2 n flops per weight element forward, 6 n backward).
ROTOR_COST(cuda_lru_weights_fwd, const LruWeights *w) {
    double nw = 2.0 * w->N * w->d;
    return costs::make(nw, 2 * nw * (costs::F + costs::A));
}
ROTOR_COST_END

ROTOR_COST(cuda_lru_weights_bwd, const LruWeightGrads *g) {
    double nw = 2.0 * g->w.N * g->w.d;
    return costs::make(3 * nw, 2 * nw * 3 * costs::F);
}
ROTOR_COST_END

ROTOR_COST(cuda_rotrnn_weights_fwd, const RotWeights *w) {
    double nw = (double)w->H * w->n * w->d;
    return costs::make(2 * 2 * nw * w->n, 2 * nw * (costs::F + costs::A));
}
ROTOR_COST_END

ROTOR_COST(cuda_rotrnn_weights_bwd, const RotWeightGrads *g) {
    double nw = (double)g->w.H * g->w.n * g->w.d;
    return costs::make(6 * 2 * nw * g->w.n, 2 * nw * 5 * costs::F);
}
ROTOR_COST_END

// EURNN: L layers rotating every row pair of W, 6 flops per element pair; W is read and
// written once per layer (backward: Y and D, and dW and W once).
ROTOR_COST(cuda_eurnn_weights_fwd, void *, const void *, int n, int L) {
    double nn = (double)n * n;
    return costs::make(3 * nn * L, 2 * costs::F * nn * L);
}
ROTOR_COST_END

ROTOR_COST(cuda_eurnn_weights_bwd, void *, const void *, const void *, const void *, void *, int n, int L) {
    double nn = (double)n * n;
    return costs::make(10 * nn * L, 4 * costs::F * nn * (L + 1));
}
ROTOR_COST_END

ROTOR_COST(cuda_rotate_fwd, void *, const void *, const void *, int64_t N, int H, int D,
           int per_head) {
    double n = (double)N;
    return costs::make(0, 2 * costs::A * n * H * D + costs::F * n * (per_head ? H : 1) * D / 2);
}
ROTOR_COST_END

ROTOR_COST(cuda_rotate_bwd, void *, void *dangle, const void *, const void *, const void *,
           int64_t N, int H, int D, int per_head) {
    double n = (double)N, angle = costs::F * n * (per_head ? H : 1) * D / 2;
    return costs::make(0, (dangle ? 3 : 2) * costs::A * n * H * D + angle * (dangle ? 3 : 1));
}
ROTOR_COST_END

ROTOR_COST(cuda_selrope_fwd, const SelRopeArgs *a) {
    double nh = (double)a->s->ntok * a->H;
    int P = a->P;
    return costs::shaped(costs::make(0, 4 * costs::A * nh * 2 * P + (costs::A + costs::F) * nh * P),
                         "H%d P%d", a->H, P);
}
ROTOR_COST_END

ROTOR_COST(cuda_selrope_bwd, const SelRopeGrads *g) {
    double nh = (double)g->a.s->ntok * g->a.H;
    int P = g->a.P;
    return costs::shaped(
        costs::make(0, 6 * costs::A * nh * 2 * P + (2 * costs::A + costs::F) * nh * P),
        "H%d P%d", g->a.H, P);
}
ROTOR_COST_END

ROTOR_COST(cuda_gla_fwd, const LinAttnArgs *a) {
    int H = a->H, K = a->K, V = a->V;
    double nh = (double)a->s->ntok * H, C = CHUNK_SIZE;
    double bytes = costs::A * nh * (2 * K + 2 * V) + costs::F * nh * K +
                   costs::F * (double)chunk_states_size(a->s, H, K, V) + costs::final_states(a);
    return costs::shaped(costs::make(nh * (2 * C * (K + V) + 4.0 * K * V), bytes),
                         "H%d K%d V%d", H, K, V);
}
ROTOR_COST_END

ROTOR_COST(cuda_gla_bwd, const LinAttnGrads *g) {
    int H = g->a.H, K = g->a.K, V = g->a.V;
    double nh = (double)g->a.s->ntok * H, C = CHUNK_SIZE;
    double bytes = costs::A * nh * (4 * K + 3 * V) + 2 * costs::F * nh * K +
                   costs::F * (double)chunk_states_size(g->a.s, H, K, V);
    return costs::shaped(costs::make(2 * nh * (2 * C * (K + V) + 4.0 * K * V), bytes),
                         "H%d K%d V%d", H, K, V);
}
ROTOR_COST_END

ROTOR_COST(cuda_gdn_fwd, const LinAttnArgs *a) {
    int H = a->H, K = a->K, V = a->V;
    double nh = (double)a->s->ntok * H, C = CHUNK_SIZE;
    double bytes = costs::A * nh * (2 * K + 2 * V) + 2 * costs::F * nh +
                   costs::F * (double)chunk_states_size(a->s, H, K, V) + costs::final_states(a);
    return costs::shaped(costs::make(nh * (6 * C * K + 4 * C * V + 6.0 * K * V), bytes),
                         "H%d K%d V%d", H, K, V);
}
ROTOR_COST_END

ROTOR_COST(cuda_gdn_bwd, const LinAttnGrads *g) {
    int H = g->a.H, K = g->a.K, V = g->a.V;
    double nh = (double)g->a.s->ntok * H, C = CHUNK_SIZE;
    double bytes = costs::A * nh * (4 * K + 3 * V) + 4 * costs::F * nh +
                   costs::F * (double)chunk_states_size(g->a.s, H, K, V);
    return costs::shaped(costs::make(2 * nh * (6 * C * K + 4 * C * V + 6.0 * K * V), bytes),
                         "H%d K%d V%d", H, K, V);
}
ROTOR_COST_END

ROTOR_COST(cuda_fox_fwd, const AttnArgs *a) {
    int H = a->H, D = a->D;
    double nh = (double)a->s->ntok * H;
    return costs::shaped(costs::make(4.0 * D * H * costs::causal_pairs(a->s),
                                     4 * costs::A * nh * D + (a->logf ? 2 : 1) * costs::F * nh),
                         "H%d D%d", H, D);
}
ROTOR_COST_END

ROTOR_COST(cuda_fox_bwd, const AttnGrads *g) {
    int H = g->a.H, D = g->a.D;
    double nh = (double)g->a.s->ntok * H;
    return costs::shaped(costs::make(10.0 * D * H * costs::causal_pairs(g->a.s),
                                     8 * costs::A * nh * D + (g->a.logf ? 3 : 1) * costs::F * nh),
                         "H%d D%d", H, D);
}
ROTOR_COST_END

// Decoding (docs/models.md §11). After a prefill: copies and a cumsum (each element read and
// written once). A step: the short-conv and Selective RoPE tails [3, C] per row are read and
// rewritten, the recurrent states [K, V] per row and head read and written once (GLA 4KV
// FLOPs per row and head: the update and q S; GDN 6KV: S^T k as well), and attention reads
// the keys and values of slots 0..pos (4D FLOPs per slot and head: q.k and the weighted v).
ROTOR_COST(cuda_segment_tail, void *, const void *, const Seqs *s, int C, int W, int f32) {
    return costs::make(0, 2 * (f32 ? costs::F : costs::A) * (double)s->nseg * W * C);
}
ROTOR_COST_END

ROTOR_COST(cuda_segment_cumsum, void *, const void *, const Seqs *s, int C) {
    return costs::make((double)s->ntok * C, 2 * costs::F * (double)s->ntok * C);
}
ROTOR_COST_END

ROTOR_COST(cuda_cache_write, void *, const void *, const Seqs *s, int, int C, int f32) {
    return costs::make(0, 2 * (f32 ? costs::F : costs::A) * (double)s->ntok * C);
}
ROTOR_COST_END

ROTOR_COST(cuda_conv_step, void *, const void *, const void *, const void *, void *,
           const Seqs *s, int C, Activation) {
    return costs::make(0, 8 * costs::A * (double)s->ntok * C);
}
ROTOR_COST_END

ROTOR_COST(cuda_shift_step, void *, const void *, const void *, void *, const Seqs *s, int H,
           int D) {
    double n = (double)s->ntok * H;
    return costs::make(0, 4 * costs::A * n * D + costs::A * n);
}
ROTOR_COST_END

ROTOR_COST(cuda_selrope_step, const SelRopeArgs *a) {
    double nh = (double)a->s->ntok * a->H;
    int P = a->P;
    return costs::shaped(
        costs::make(0, 4 * costs::A * nh * 2 * P + 7 * costs::A * nh * P + 2 * costs::F * nh * P),
        "H%d P%d", a->H, P);
}
ROTOR_COST_END

ROTOR_COST(cuda_gla_step, const LinAttnArgs *a) {
    int H = a->H, K = a->K, V = a->V;
    double nh = (double)a->s->ntok * H;
    double bytes = 2 * costs::F * nh * K * V + costs::A * nh * (2 * K + 2 * V) +
                   costs::F * nh * (a->g_per_head ? 1 : K);
    return costs::shaped(costs::make(4 * nh * K * V, bytes), "H%d K%d V%d", H, K, V);
}
ROTOR_COST_END

ROTOR_COST(cuda_gdn_step, const LinAttnArgs *a) {
    int H = a->H, K = a->K, V = a->V;
    double nh = (double)a->s->ntok * H;
    double bytes = 2 * costs::F * nh * K * V + costs::A * nh * (2 * K + 2 * V) +
                   (a->g ? 2 : 1) * costs::F * nh;
    return costs::shaped(costs::make(6 * nh * K * V, bytes), "H%d K%d V%d", H, K, V);
}
ROTOR_COST_END

ROTOR_COST(cuda_attn_step, const AttnStepArgs *a) {
    int H = a->H, D = a->D;
    double nh = (double)a->s->ntok * H, slots = costs::step_slots(a->s) * H;
    double bytes = 2 * costs::A * slots * D + (a->logf ? costs::F * slots : 0) +
                   4 * costs::A * nh * D;
    return costs::shaped(costs::make(4.0 * D * slots, bytes), "H%d D%d", H, D);
}
ROTOR_COST_END

ROTOR_COST(cuda_cross_entropy, void *, const int32_t *, int64_t N, int V, double grad_scale) {
    return costs::make(0, (grad_scale != 0 ? 2 : 1) * costs::A * (double)N * V + 4.0 * N);
}
ROTOR_COST_END

ROTOR_COST(cuda_sumsq, const void *, int64_t n) { return costs::make(0, costs::F * (double)n); }
ROTOR_COST_END

ROTOR_COST(cuda_scale, void *, int64_t n, double) {
    return costs::make(0, 2 * costs::F * (double)n);
}
ROTOR_COST_END

ROTOR_COST(cuda_adamw, void *, void *w_act, void *, void *, const void *, int64_t n, double,
           double, double, double, double, int64_t) {
    return costs::make(0, (7 * costs::F + (w_act ? costs::A : 0)) * (double)n);
}
ROTOR_COST_END

ROTOR_COST(cuda_rmsprop_update, void *, void *w_act, void *, const void *, int64_t n, double, double,
           double, double) {
    return costs::make(0, (5 * costs::F + (w_act ? costs::A : 0)) * (double)n);
}
ROTOR_COST_END

#undef ROTOR_COST
#undef ROTOR_COST_END
