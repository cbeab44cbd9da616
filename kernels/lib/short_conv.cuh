// The depthwise causal short conv of up to 4 taps (docs/models.md §gla, §gated-deltanet,
// §position-embeddings step 3, §zoology-shape) as device pieces, shared by the conv kernels
// (timemix.cu), the fused Selective RoPE kernels (selrope.cu) and the decoding steps (decode.cu): a
// thread holds 2 adjacent channels c, c+1 (a float2) and slides along the tokens.
#pragma once

#include "lib/cuda_common.cuh"
#include "util/error.h"

// The launch conditions of the conv kernels (timemix.cu, decode.cu): C even (a thread holds a
// channel pair), 1 to 4 taps, act NONE or SILU, and the pair-wise accessed buffers a, b, c
// 4-byte aligned.
inline void conv_check(const char *op, const void *a, const void *b, const void *c, int C, int K,
                       Activation act) {
    if (C % 2) rt_die("%s: C=%d channels must be even", op, C);
    if (K < 1 || K > SHORT_CONV_TAPS) rt_die("%s: K=%d taps (1 to %d)", op, K, SHORT_CONV_TAPS);
    if (act != ACT_NONE && act != ACT_SILU) rt_die("%s: activation %d unsupported", op, (int)act);
    cuda_check_aligned(a, 4, op);
    cuda_check_aligned(b, 4, op);
    cuda_check_aligned(c, 4, op);
}

// Tap t multiplies the token 3 - t back. A weight [C, K] of K < KW taps fills the last K taps,
// the first KW - K are 0 (the conv of K taps); a NULL weight gives the first difference (taps
// 0, 0, -1, 1).
constexpr int KW = 4;
static_assert(KW == SHORT_CONV_TAPS, "the widest conv the ops take");

struct Taps {
    float2 t[KW];
};

__device__ __forceinline__ Taps load_taps(const bf16 *w, int c, int K = KW) {
    Taps k;
#pragma unroll
    for (int t = 0; t < KW; t++) {
        int j = t - (KW - K); // the weight's tap
        k.t[t] = !w ? f2(t == KW - 1   ? 1.f
                         : t == KW - 2 ? -1.f
                                       : 0.f,
                         t == KW - 1   ? 1.f
                         : t == KW - 2 ? -1.f
                                       : 0.f)
                 : j < 0 ? f2(0.f, 0.f)
                         : f2(bf2f(w[c * K + j]), bf2f(w[(c + 1) * K + j]));
    }
    return k;
}

// Pre-activation at a token of position p from x at offsets 0 (xc), 1, 2, 3 back.
__device__ __forceinline__ float2 conv_pre(const Taps &k, int p, float2 xc, float2 xm1, float2 xm2,
                                           float2 xm3) {
    float2 pre = f2(0.f, 0.f);
    if (p >= 3) pre = pre + k.t[0] * xm3;
    if (p >= 2) pre = pre + k.t[1] * xm2;
    if (p >= 1) pre = pre + k.t[2] * xm1;
    return pre + k.t[3] * xc;
}

__device__ __forceinline__ float silu1(float p) { return p * sigmoidf_(p); }
// d silu(p) / dp = s (1 + p (1 - s)), s = sigmoid(p)
__device__ __forceinline__ float dsilu1(float p) {
    float s = sigmoidf_(p);
    return s * (1.f + p * (1.f - s));
}

// The weight gradient of a block (32, 8) covering 64 channels: g[t] holds the thread's sums for
// its channels c, c+1 and tap t; the sums over the 8 warps of the weight's K taps (the last K of
// g) go to part[blockIdx.x][C][K] (one of the block's 64 x K entries per thread, the rest idle).
// Every thread of the block must call it.
__device__ __forceinline__ void store_taps_partial(float *part, const float2 (&g)[KW], int C,
                                                   int K = KW) {
    constexpr int WARPS = 8;
    static_assert(WARPS * 32 == 64 * KW, "one entry per thread");
    __shared__ float red[WARPS][32][2 * KW]; // [warp][lane][channel of lane * KW + tap]
#pragma unroll
    for (int t = 0; t < KW; t++) {
        red[threadIdx.y][threadIdx.x][t] = g[t].x;
        red[threadIdx.y][threadIdx.x][KW + t] = g[t].y;
    }
    __syncthreads();
    int kk = threadIdx.y * 32 + threadIdx.x, lc = kk / K, tap = kk % K;
    if (lc >= 64) return;
    float s = 0.f;
    for (int r = 0; r < WARPS; r++) s += red[r][lc / 2][(lc % 2) * KW + tap + (KW - K)];
    int cg = blockIdx.y * 64 + lc;
    if (cg < C) part[((int64_t)blockIdx.x * C + cg) * K + tap] = s;
}

// The bias gradient of a block (32, 8) covering 64 channels: gb holds the thread's sums for its
// channels c, c+1; the sums over the 8 warps go to part[blockIdx.x][C]. Every thread of the
// block must call it.
__device__ __forceinline__ void store_pair_partial(float *part, float2 gb, int C) {
    constexpr int WARPS = 8;
    __shared__ float2 redb[WARPS][32];
    redb[threadIdx.y][threadIdx.x] = gb;
    __syncthreads();
    int c = 2 * (blockIdx.y * 32 + threadIdx.x);
    if (threadIdx.y == 0 && c < C) {
        float2 sb = f2(0.f, 0.f);
        for (int r = 0; r < WARPS; r++) sb = sb + redb[r][threadIdx.x];
        part[(int64_t)blockIdx.x * C + c] = sb.x;
        part[(int64_t)blockIdx.x * C + c + 1] = sb.y;
    }
}
