// The decoding ops (docs/models.md §decoding) on the GPU, CPU reference src/cpu/decode_ops.c: what
// a prefill leaves for decoding (segment tails, the forget gate's cumulative sum, KV-cache writes)
// and one token per row from that state (short conv, shift, Selective RoPE, GLA, Gated DeltaNet,
// causal attention). A step has no chunk machinery: each row's token advances the row's state
// directly. Segments come from the device copy of Seqs; in a step s->dev_pos[r] is row r's
// position, and a row at position 0 reads a zero state (its state is not read).
//
// Precision: [act] bf16 in and out; the recurrent states, angle sums, cumulative gates and every
// sum in fp32.
#include <stdint.h>

#include "backend/cuda_ops.h"
#include "lib/cuda_common.cuh"
#include "lib/selrope_pairs.cuh"
#include "lib/short_conv.cuh"
#include "lib/tile.cuh"
#include "util/error.h"

namespace {

// The largest position of the tokens of s (host positions); dies naming op when one does not
// fit a cache of cap slots.
int max_position(const Seqs *s, int cap, const char *op) {
    int mx = 0;
    for (int64_t n = 0; n < s->ntok; n++) {
        if (s->pos[n] >= cap)
            rt_die("%s: token %lld at position %d does not fit the cache's %d slots", op,
                   (long long)n, s->pos[n], cap);
        mx = s->pos[n] > mx ? s->pos[n] : mx;
    }
    return mx;
}

// ---- after a prefill ----
// Elements move as raw bits: E = uint16_t ([act]) or uint32_t ([f32]).

// tail[seg, j, :] = x[cu[seg+1] - W + j, :], zero before the segment's start.
template <class E>
__global__ void segment_tail_kernel(E *tail, const E *x, const int32_t *cu, int64_t n, int C,
                                    int W) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int64_t row = i / C; // seg * W + j
    const int seg = (int)(row / W), j = (int)(row % W), c = (int)(i % C);
    const int64_t t = (int64_t)cu[seg + 1] - W + j;
    tail[i] = t >= cu[seg] ? x[t * C + c] : E(0);
}

// One warp per (segment, channel): the segment's tokens 32 at a time, an inclusive warp scan
// plus the sum of the tokens before them.
constexpr int CUMSUM_WARPS = 8;

__global__ void __launch_bounds__(32 * CUMSUM_WARPS)
    segment_cumsum_kernel(float *y, const float *x, const int32_t *cu, int C) {
    const int seg = blockIdx.x, lane = threadIdx.x & 31;
    const int c = blockIdx.y * CUMSUM_WARPS + threadIdx.x / 32;
    if (c >= C) return; // whole warps
    const int64_t end = cu[seg + 1];
    float run = 0.f;
    for (int64_t n0 = cu[seg]; n0 < end; n0 += 32) {
        const int64_t n = n0 + lane;
        float excl;
        const float incl = warp_scan(n < end ? x[n * C + c] : 0.f, &excl);
        if (n < end) y[n * C + c] = run + incl;
        run += __shfl_sync(FULL_MASK, incl, 31);
    }
}

// One block per token n: its segment (the last with cu[seg] <= n), then its C elements into
// slot pos[n] of that segment's cache.
template <class E>
__global__ void cache_write_kernel(E *cache, const E *x, const int32_t *cu, const int32_t *pos,
                                   int nseg, int cap, int C) {
    const int64_t n = blockIdx.x;
    int lo = 0, hi = nseg - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (cu[mid] <= n)
            lo = mid;
        else
            hi = mid - 1;
    }
    E *dst = cache + ((int64_t)lo * cap + pos[n]) * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) dst[c] = x[n * C + c];
}

// ---- short conv and shift steps ----

// The conv tail t [3, C] of a row (oldest first) at channels c, c+1: zero at position 0.
struct Tail {
    float2 t0, t1, t2;
};

__device__ __forceinline__ Tail load_tail(const bf16 *t, int C, bool first) {
    const float2 z = f2(0.f, 0.f);
    return first ? Tail{z, z, z} : Tail{ld2(t), ld2(t + C), ld2(t + 2 * C)};
}

// The tail after input x: (t1, t2, x).
__device__ __forceinline__ void push_tail(bf16 *t, int C, const Tail &w, float2 x) {
    st2(t, w.t1);
    st2(t + C, w.t2);
    st2(t + 2 * C, x);
}

// One thread per channel pair (c, c+1) of row r: the conv's pre-activation at x from the
// tail, as conv_fwd_kernel (timemix.cu) at the row's position (short_conv.cuh).
template <bool SILU>
__global__ void conv_step_kernel(bf16 *y, bf16 *tail, const bf16 *x, const bf16 *w, const bf16 *b,
                                 const int32_t *pos, int64_t npairs, int C, int K) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= npairs) return;
    const int64_t r = i / (C / 2);
    const int c = 2 * (int)(i % (C / 2));
    bf16 *t = tail + r * 3 * C + c;
    const Tail w3 = load_tail(t, C, pos[r] == 0);
    const float2 xc = ld2(x + r * C + c);
    float2 pre = conv_pre(load_taps(w, c, K), KW - 1, xc, w3.t2, w3.t1, w3.t0);
    if (b) pre = pre + ld2(b + c);
    if (SILU) pre = f2(silu1(pre.x), silu1(pre.y));
    st2(y + r * C + c, pre);
    push_tail(t, C, w3, xc);
}

// One thread per element: y = a prev + (1 - a) x, a = sigmoid(a_logit) per head, prev = 0 at
// position 0 (docs/models.md §fox); prev becomes x.
__global__ void shift_step_kernel(bf16 *y, bf16 *prev, const bf16 *x, const bf16 *al,
                                  const int32_t *pos, int64_t n, int H, int D) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int64_t rh = i / D; // r * H + h
    const float a = sigmoidf_(bf2f(al[rh])), xc = bf2f(x[i]);
    const float xp = pos[rh / H] ? bf2f(prev[i]) : 0.f;
    y[i] = f2bf(a * xp + (1.f - a) * xc);
    prev[i] = x[i];
}

// ---- Selective RoPE step ----

struct SelRopeStep {
    bf16 *qo, *ko, *tail;
    float *Phi;
    const bf16 *q, *k, *phi_raw, *conv_w, *bias, *gl;
    const float *temp;
    const int32_t *pos;
    int H, P;
    int64_t npairs;
};

// One thread per angle-channel pair (c, c+1) of row r (docs/models.md §position-embeddings steps
// 3-8 for one token): phi' = g (act(conv(phi_raw)) + exp(bias)) from the row's phi_raw tail, Phi +=
// phi' (from 0 at position 0), q and k rotated by temp_j Phi, as selrope_fwd_kernel (selrope.cu).
template <bool SILU> __global__ void selrope_step_kernel(const SelRopeStep a) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.npairs) return;
    const int P = a.P, H = a.H, C = H * P;
    const int64_t r = i / (C / 2);
    const int c = 2 * (int)(i % (C / 2)), h = c / P, j = c % P;
    const bool first = a.pos[r] == 0;
    bf16 *t = a.tail + r * 3 * C + c;
    const Tail w3 = load_tail(t, C, first);
    const float2 xc = ld2(a.phi_raw + r * C + c);
    float2 pre = conv_pre(load_taps(a.conv_w, c), KW - 1, xc, w3.t2, w3.t1, w3.t0);
    if (SILU) pre = f2(silu1(pre.x), silu1(pre.y));
    float *Ph = a.Phi + r * C + c;
    const float2 inc = gate_at(a.gl, (int)r, H, h) * (pre + exp_bias(a.bias, c));
    const float2 Phi = first ? inc : ldf2(Ph) + inc;
    stf2(Ph, Phi);
    float2 s, co;
    sincos2(ldf2(a.temp + j) * Phi, &s, &co);
    const int64_t x = (r * H + h) * 2 * P + j;
    rotate_pairs(a.qo + x, a.q + x, P, co, s);
    rotate_pairs(a.ko + x, a.k + x, P, co, s);
    push_tail(t, C, w3, xc);
}

// ---- GLA and Gated DeltaNet steps ----
// One block per (row, head, LIN_VT columns of V); thread (x, y) holds the 4 columns
// v0 + 4x .. v0 + 4x + 3 of the state rows i = y + RS m (m < LIN_ROWS, RS = blockDim.y row
// slices) in registers: the row's fp32 K x V state is read once and written once, a warp
// covering whole state rows. q, k and GLA's decays sit in shared memory; sums over the rows
// go through shared memory (slice_sum).
constexpr int LIN_VT = 128;   // value columns per block
constexpr int LIN_ROWS = 16;  // state rows per thread
constexpr int LIN_KMAX = 256; // cuda_gla_supports / cuda_gdn_supports: K <= 256
constexpr int LIN_THREADS = (LIN_VT / 4) * (LIN_KMAX / LIN_ROWS);

__device__ __forceinline__ float4 operator+(float4 a, float4 b) {
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
__device__ __forceinline__ float4 operator*(float s, float4 a) {
    return make_float4(s * a.x, s * a.y, s * a.z, s * a.w);
}

// The sum of x over the block's row slices, on every thread (red: one entry per thread).
__device__ __forceinline__ float4 slice_sum(float4 x, float4 *red) {
    red[threadIdx.y * blockDim.x + threadIdx.x] = x;
    __syncthreads();
    float4 t = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int y = 0; y < (int)blockDim.y; y++) t = t + red[y * blockDim.x + threadIdx.x];
    __syncthreads();
    return t;
}

struct LinStep {
    bf16 *o;
    float *state;
    const bf16 *q, *k, *v;
    const float *g, *beta;
    const int32_t *pos;
    int H, K, V, per_head;
    float scale;
};

// GLA (DELTA = false, docs/models.md §gla): S = diag(e^g) S + k^T v.
// Gated DeltaNet (§gated-deltanet): S = e^g (I - beta k k^T) S + beta k v^T = e^g S + k u^T with
// u = beta (v - e^g S^T k), S^T k from the state as read. Then o = scale q S (the new S).
template <bool DELTA>
__global__ void __launch_bounds__(LIN_THREADS) lin_step_kernel(const LinStep a) {
    __shared__ float sq[LIN_KMAX], sk[LIN_KMAX], se[LIN_KMAX];
    __shared__ float4 red[LIN_THREADS];
    const int64_t rh = blockIdx.x; // r * H + h
    const int K = a.K, V = a.V, RS = blockDim.y, nt = blockDim.x * blockDim.y;
    const int j = blockIdx.y * LIN_VT + 4 * threadIdx.x; // the thread's first column
    const bool col = j < V, first = a.pos[rh / a.H] == 0;
    for (int i = threadIdx.y * blockDim.x + threadIdx.x; i < K; i += nt) {
        sq[i] = bf2f(a.q[rh * K + i]);
        sk[i] = bf2f(a.k[rh * K + i]);
        if (!DELTA) se[i] = expf(a.per_head ? a.g[rh] : a.g[rh * K + i]);
    }
    __syncthreads();
    const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
    float4 vj = z;
    if (col) {
        const float2 v01 = ld2(a.v + rh * V + j), v23 = ld2(a.v + rh * V + j + 2);
        vj = make_float4(v01.x, v01.y, v23.x, v23.y);
    }
    float4 *S = reinterpret_cast<float4 *>(a.state + rh * K * V + j); // row i at S + i V/4
    const int64_t ld = V / 4;
    float4 s[LIN_ROWS];
#pragma unroll
    for (int m = 0; m < LIN_ROWS; m++) {
        const int i = threadIdx.y + RS * m;
        s[m] = i < K && col && !first ? S[i * ld] : z;
    }
    float4 u = vj;
    float eg = 1.f;
    if constexpr (DELTA) {
        float4 kS = z;
#pragma unroll
        for (int m = 0; m < LIN_ROWS; m++) {
            const int i = threadIdx.y + RS * m;
            if (i < K) kS = kS + sk[i] * s[m];
        }
        kS = slice_sum(kS, red);
        if (a.g) eg = expf(a.g[rh]);
        u = a.beta[rh] * (vj + (-eg) * kS);
    }
    float4 acc = z;
#pragma unroll
    for (int m = 0; m < LIN_ROWS; m++) {
        const int i = threadIdx.y + RS * m;
        if (i < K && col) {
            s[m] = (DELTA ? eg : se[i]) * s[m] + sk[i] * u;
            S[i * ld] = s[m];
            acc = acc + sq[i] * s[m];
        }
    }
    acc = slice_sum(acc, red);
    if (threadIdx.y == 0 && col) {
        bf16 *out = a.o + rh * V + j;
        st2(out, a.scale * f2(acc.x, acc.y));
        st2(out + 2, a.scale * f2(acc.z, acc.w));
    }
}

void lin_step(const LinAttnArgs *a, bool delta, const char *op) {
    char why[160];
    const int H = a->H, K = a->K, V = a->V;
    if (!(delta ? cuda_gdn_supports : cuda_gla_supports)(H, K, V, why, sizeof why))
        rt_die("%s: %s", op, why);
    if (delta && !a->beta) rt_die("%s: beta is NULL", op);
    const void *ptrs[] = {a->o, a->state, a->v};
    for (const void *p : ptrs) cuda_check_aligned(p, 16, op);
    const int64_t B = a->s->ntok;
    if (B == 0) return;
    LinStep p = {(bf16 *)a->o,
                 (float *)a->state,
                 (const bf16 *)a->q,
                 (const bf16 *)a->k,
                 (const bf16 *)a->v,
                 (const float *)a->g,
                 (const float *)a->beta,
                 a->s->dev_pos,
                 H,
                 K,
                 V,
                 a->g_per_head,
                 (float)a->scale};
    const dim3 grid((unsigned)(B * H), (unsigned)cdiv(V, LIN_VT));
    const dim3 block((V < LIN_VT ? V : LIN_VT) / 4, (unsigned)cdiv(K, LIN_ROWS));
    if (delta)
        lin_step_kernel<true><<<grid, block, 0, cuda_stream()>>>(p);
    else
        lin_step_kernel<false><<<grid, block, 0, cuda_stream()>>>(p);
    CUDA_LAUNCHED();
}

// ---- attention step: flash decoding ----
// Row r's query attends to its cache slots 0..pos (slot pos: the row's own k, v, which the
// block holding that slot also appends to the cache). The slots are split into nsplit spans
// of `span` slots over the blocks (rh, split); a block's ATT_WARPS warps take SPW slots at a
// time, LPS = D/8 lanes per slot with 8 channels each (16-byte loads), and keep an online
// softmax in base 2 (running max m, sum l, unnormalised output) per lane group; the groups
// and warps merge in the block. With one span the block writes o; with several it writes
// (output, m, l) per span and attn_combine_kernel merges them.
constexpr int ATT_WARPS = 4;
constexpr int ATT_MIN_SPAN = 256; // spans: at most cdiv(slots, ATT_MIN_SPAN)

struct AttnStep {
    bf16 *o, *kc, *vc;
    float *fc, *part; // part [B*H][nsplit][D + 2]: unnormalised output, m, l; NULL: one span
    const bf16 *q, *k, *v;
    const float *lf;
    const int32_t *pos;
    int H, cap, span, nsplit;
    float sl2; // scale log2(e)
};

// Merges the softmax state (m2, l2, acc2) into (m, l, acc); m = -inf: no slot yet.
template <int E>
__device__ __forceinline__ void merge(float &m, float &l, float (&acc)[E], float m2, float l2,
                                      const float (&acc2)[E]) {
    const float M = fmaxf(m, m2);
    const float c1 = m == -INFINITY ? 0.f : exp2f(m - M);
    const float c2 = m2 == -INFINITY ? 0.f : exp2f(m2 - M);
    l = l * c1 + l2 * c2;
#pragma unroll
    for (int e = 0; e < E; e++) acc[e] = acc[e] * c1 + acc2[e] * c2;
    m = M;
}

__device__ __forceinline__ void load8(float (&x)[8], const bf16 *p) {
    const Pack<bf16, 8> v = ld_vec<8>(p);
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = bf2f(v.v[e]);
}

// Scores scale q.k_u + F_pos - F_u (F the cumulative log forget gate, docs/models.md §fox; no F
// without GATE), softmax over the slots u <= pos.
template <int D, bool GATE>
__global__ void __launch_bounds__(32 * ATT_WARPS) attn_step_kernel(const AttnStep a) {
    constexpr int LPS = D / 8, SPW = 32 / LPS;
    __shared__ float sm[ATT_WARPS], sl[ATT_WARPS], sacc[ATT_WARPS][D];
    const int64_t rh = blockIdx.x, r = rh / a.H;
    const int h = (int)(rh % a.H), p = a.pos[r];
    const int u0 = blockIdx.y * a.span;
    if (u0 > p) return; // the row needs fewer spans
    const int u1 = min(p + 1, u0 + a.span);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, dl = (lane % LPS) * 8;
    const bf16 *kin = a.k + rh * D, *vin = a.v + rh * D;
    const int64_t sp = (r * a.cap + p) * a.H + h; // slot p of the row and head
    float F = 0.f;
    if (GATE) F = (p ? a.fc[sp - a.H] : 0.f) + a.lf[rh];
    if (u1 == p + 1) { // append the row's token
        if (threadIdx.x < D / 8) {
            st_vec(a.kc + sp * D + 8 * threadIdx.x, ld_vec<8>(kin + 8 * threadIdx.x));
            st_vec(a.vc + sp * D + 8 * threadIdx.x, ld_vec<8>(vin + 8 * threadIdx.x));
        }
        if (GATE && threadIdx.x == 0) a.fc[sp] = F;
    }
    float q[8], acc[8] = {}, m = -INFINITY, l = 0.f;
    load8(q, a.q + rh * D + dl);
    for (int base = u0 + warp * SPW; base < u1; base += ATT_WARPS * SPW) {
        const int u = base + lane / LPS;
        const bool valid = u < u1;
        const int64_t su = (r * a.cap + u) * a.H + h;
        float x[8], dot = 0.f;
        if (valid) {
            load8(x, (u == p ? kin : a.kc + su * D) + dl);
#pragma unroll
            for (int e = 0; e < 8; e++) dot += q[e] * x[e];
        }
#pragma unroll
        for (int o = LPS / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(FULL_MASK, dot, o);
        if (valid) {
            float s = dot * a.sl2;
            if (GATE) s += (F - (u == p ? F : a.fc[su])) * L2E;
            const float mn = fmaxf(m, s), c = exp2f(m - mn), w = exp2f(s - mn);
            load8(x, (u == p ? vin : a.vc + su * D) + dl);
            l = l * c + w;
#pragma unroll
            for (int e = 0; e < 8; e++) acc[e] = acc[e] * c + w * x[e];
            m = mn;
        }
    }
    // the lane groups of the warp (same channels every LPS lanes), then the warps
#pragma unroll
    for (int o = LPS; o < 32; o <<= 1) {
        float acc2[8];
#pragma unroll
        for (int e = 0; e < 8; e++) acc2[e] = __shfl_xor_sync(FULL_MASK, acc[e], o);
        const float m2 = __shfl_xor_sync(FULL_MASK, m, o), l2 = __shfl_xor_sync(FULL_MASK, l, o);
        merge(m, l, acc, m2, l2, acc2);
    }
    if (lane < LPS) {
#pragma unroll
        for (int e = 0; e < 8; e++) sacc[warp][dl + e] = acc[e];
        if (lane == 0) sm[warp] = m, sl[warp] = l;
    }
    __syncthreads();
    if (warp != 0 || lane >= LPS) return;
    for (int w = 1; w < ATT_WARPS; w++) {
        float acc2[8];
#pragma unroll
        for (int e = 0; e < 8; e++) acc2[e] = sacc[w][dl + e];
        merge(m, l, acc, sm[w], sl[w], acc2);
    }
    if (!a.part) {
        float y[8];
#pragma unroll
        for (int e = 0; e < 8; e++) y[e] = acc[e] / l;
        store8(a.o + rh * D + dl, y);
        return;
    }
    float *pt = a.part + (rh * a.nsplit + blockIdx.y) * (D + 2);
#pragma unroll
    for (int e = 0; e < 8; e++) pt[dl + e] = acc[e];
    if (lane == 0) pt[D] = m, pt[D + 1] = l;
}

// One block of D threads per (row, head): o = the spans' outputs merged, / their merged sum.
__global__ void attn_combine_kernel(bf16 *o, const float *part, const int32_t *pos, int H,
                                    int nsplit, int span, int D) {
    const int64_t rh = blockIdx.x;
    const int n = pos[rh / H] / span + 1, d = threadIdx.x;
    const float *pt = part + rh * nsplit * (D + 2);
    float M = -INFINITY, L = 0.f, acc = 0.f;
    for (int i = 0; i < n; i++) M = fmaxf(M, pt[i * (D + 2) + D]);
    for (int i = 0; i < n; i++) {
        const float c = exp2f(pt[i * (D + 2) + D] - M);
        L += c * pt[i * (D + 2) + D + 1];
        acc += c * pt[i * (D + 2) + d];
    }
    o[rh * D + d] = f2bf(acc / L);
}

template <int D, bool GATE> void launch_attn(const AttnStep &p, int64_t rows) {
    attn_step_kernel<D, GATE>
        <<<dim3((unsigned)rows, (unsigned)p.nsplit), 32 * ATT_WARPS, 0, cuda_stream()>>>(p);
    CUDA_LAUNCHED();
}

template <bool GATE> void attn_for_d(int D, const AttnStep &p, int64_t rows) {
    switch (D) {
    case 32: launch_attn<32, GATE>(p, rows); break;
    case 64: launch_attn<64, GATE>(p, rows); break;
    default: launch_attn<128, GATE>(p, rows); break;
    }
}

} // namespace

void cuda_segment_tail(void *tail, const void *x, const Seqs *s, int C, int W, int f32) {
    const int64_t n = (int64_t)s->nseg * W * C;
    if (n == 0) return;
    const unsigned blocks = (unsigned)cdiv(n, 256);
    if (f32)
        segment_tail_kernel<uint32_t><<<blocks, 256, 0, cuda_stream()>>>(
            (uint32_t *)tail, (const uint32_t *)x, s->dev_cu, n, C, W);
    else
        segment_tail_kernel<uint16_t><<<blocks, 256, 0, cuda_stream()>>>(
            (uint16_t *)tail, (const uint16_t *)x, s->dev_cu, n, C, W);
    CUDA_LAUNCHED();
}

void cuda_segment_cumsum(void *y, const void *x, const Seqs *s, int C) {
    if (s->nseg == 0 || C == 0) return;
    segment_cumsum_kernel<<<dim3(s->nseg, (unsigned)cdiv(C, CUMSUM_WARPS)), 32 * CUMSUM_WARPS, 0,
                            cuda_stream()>>>((float *)y, (const float *)x, s->dev_cu, C);
    CUDA_LAUNCHED();
}

void cuda_cache_write(void *cache, const void *x, const Seqs *s, int cap, int C, int f32) {
    max_position(s, cap, "cache_write");
    if (s->ntok == 0 || C == 0) return;
    const unsigned blocks = (unsigned)s->ntok;
    if (f32)
        cache_write_kernel<uint32_t><<<blocks, 128, 0, cuda_stream()>>>(
            (uint32_t *)cache, (const uint32_t *)x, s->dev_cu, s->dev_pos, s->nseg, cap, C);
    else
        cache_write_kernel<uint16_t><<<blocks, 128, 0, cuda_stream()>>>(
            (uint16_t *)cache, (const uint16_t *)x, s->dev_cu, s->dev_pos, s->nseg, cap, C);
    CUDA_LAUNCHED();
}

void cuda_conv_step(void *y, const void *x, const void *w, const void *b, void *tail, const Seqs *s,
                    int C, int K, Activation act) {
    conv_check("conv_step", y, x, tail, C, K, act);
    cuda_check_aligned(b, 4, "conv_step");
    const int64_t npairs = s->ntok * C / 2;
    if (npairs == 0) return;
    const unsigned blocks = (unsigned)cdiv(npairs, 256);
    if (act == ACT_SILU)
        conv_step_kernel<true><<<blocks, 256, 0, cuda_stream()>>>(
            (bf16 *)y, (bf16 *)tail, (const bf16 *)x, (const bf16 *)w, (const bf16 *)b, s->dev_pos,
            npairs, C, K);
    else
        conv_step_kernel<false><<<blocks, 256, 0, cuda_stream()>>>(
            (bf16 *)y, (bf16 *)tail, (const bf16 *)x, (const bf16 *)w, (const bf16 *)b, s->dev_pos,
            npairs, C, K);
    CUDA_LAUNCHED();
}

void cuda_shift_step(void *y, const void *x, const void *a_logit, void *prev, const Seqs *s, int H,
                     int D) {
    const int64_t n = s->ntok * H * D;
    if (n == 0) return;
    shift_step_kernel<<<(unsigned)cdiv(n, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)y, (bf16 *)prev, (const bf16 *)x, (const bf16 *)a_logit, s->dev_pos, n, H, D);
    CUDA_LAUNCHED();
}

void cuda_selrope_step(const SelRopeArgs *a) {
    const char *op = "selrope_step";
    char why[160];
    const int H = a->H, P = a->P, C = H * P;
    if (!cuda_selrope_supports(H, P, why, sizeof why)) rt_die("%s: %s", op, why);
    conv_check(op, a->phi_raw, a->tail, a->qo, C, SHORT_CONV_TAPS, a->conv_act);
    const void *ptrs[] = {a->ko, a->q, a->k};
    for (const void *p : ptrs) cuda_check_aligned(p, 4, op);
    cuda_check_aligned(a->Phi, 8, op);
    cuda_check_aligned(a->temp, 8, op);
    SelRopeStep p = {(bf16 *)a->qo,
                     (bf16 *)a->ko,
                     (bf16 *)a->tail,
                     (float *)a->Phi,
                     (const bf16 *)a->q,
                     (const bf16 *)a->k,
                     (const bf16 *)a->phi_raw,
                     (const bf16 *)a->conv_w,
                     (const bf16 *)a->bias,
                     (const bf16 *)a->gate_logit,
                     (const float *)a->temp,
                     a->s->dev_pos,
                     H,
                     P,
                     a->s->ntok * C / 2};
    if (p.npairs == 0) return;
    const unsigned blocks = (unsigned)cdiv(p.npairs, 256);
    if (a->conv_act == ACT_SILU)
        selrope_step_kernel<true><<<blocks, 256, 0, cuda_stream()>>>(p);
    else
        selrope_step_kernel<false><<<blocks, 256, 0, cuda_stream()>>>(p);
    CUDA_LAUNCHED();
}

void cuda_gla_step(const LinAttnArgs *a) { lin_step(a, false, "gla_step"); }

void cuda_gdn_step(const LinAttnArgs *a) { lin_step(a, true, "gdn_step"); }

void cuda_attn_step(const AttnStepArgs *a) {
    const char *op = "attn_step";
    char why[160];
    const int H = a->H, D = a->D;
    if (!cuda_fox_supports(H, D, why, sizeof why)) rt_die("%s: %s", op, why);
    if (a->logf && !a->fc) rt_die("%s: a forget gate needs its cache fc", op);
    const void *ptrs[] = {a->q, a->k, a->v, a->kc, a->vc, a->o};
    for (const void *p : ptrs) cuda_check_aligned(p, 16, op);
    const int64_t rows = a->s->ntok * H;
    const int slots = max_position(a->s, a->cap, op) + 1;
    if (rows == 0) return;
    // enough spans to fill the GPU twice over, each of at least ATT_MIN_SPAN slots
    const int64_t want = cdiv(2 * (int64_t)cuda_sm_count(), rows);
    const int nsplit = (int)(want < cdiv(slots, ATT_MIN_SPAN) ? want : cdiv(slots, ATT_MIN_SPAN));
    AttnStep p = {(bf16 *)a->o,
                  (bf16 *)a->kc,
                  (bf16 *)a->vc,
                  (float *)a->fc,
                  nullptr,
                  (const bf16 *)a->q,
                  (const bf16 *)a->k,
                  (const bf16 *)a->v,
                  (const float *)a->logf,
                  a->s->dev_pos,
                  H,
                  a->cap,
                  (int)cdiv(slots, nsplit),
                  nsplit,
                  (float)(a->scale * L2E)};
    if (nsplit > 1)
        p.part = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * rows * nsplit * (D + 2));
    if (a->logf)
        attn_for_d<true>(D, p, rows);
    else
        attn_for_d<false>(D, p, rows);
    if (nsplit > 1) {
        attn_combine_kernel<<<(unsigned)rows, D, 0, cuda_stream()>>>(
            (bf16 *)a->o, p.part, a->s->dev_pos, H, nsplit, p.span, D);
        CUDA_LAUNCHED();
    }
}
