// Token mixing along time inside each segment: the depthwise short convolution (docs/models.md
// §gla, §gated-deltanet, §position-embeddings step 3), FoX's data-dependent shift (docs/models.md
// §fox) and the reverse cumulative sum. A token at position p of its segment (Seqs dev_pos) sees
// only the p tokens before it.
#include <stdint.h>

#include "backend/cuda_ops.h"
#include "device/kernel_variants.h"
#include "lib/cuda_common.cuh"
#include "lib/segmented_scan.cuh"
#include "lib/short_conv.cuh"
#include "ops/revcumsum.h"
#include "util/error.h"

namespace {

// ---- short conv of K <= 4 taps (short_conv.cuh) ----
// A block covers 64 channels (a lane holds 2) and CONV_WARPS runs of CONV_RUN tokens, one run
// per warp; a thread slides along its run keeping the last inputs in registers.
constexpr int CONV_RUN = 32;
constexpr int CONV_WARPS = 8;
constexpr int CONV_TILE = CONV_RUN * CONV_WARPS;
static_assert(CONV_WARPS == 8, "store_taps_partial reduces blocks of 8 warps");

template <bool SILU>
__global__ void __launch_bounds__(32 * CONV_WARPS)
    conv_fwd_kernel(bf16 *__restrict__ y, const bf16 *__restrict__ x, const bf16 *__restrict__ w,
                    const bf16 *__restrict__ b, const int32_t *__restrict__ pos, int N, int C,
                    int K) {
    int c = 2 * (blockIdx.y * 32 + threadIdx.x);
    int n0 = blockIdx.x * CONV_TILE + threadIdx.y * CONV_RUN;
    if (c >= C || n0 >= N) return;
    Taps k = load_taps(w, c, K);
    float2 z = f2(0.f, 0.f), bias = b ? ld2(b + c) : z;
    float2 xm3 = n0 >= 3 ? ld2(x + (int64_t)(n0 - 3) * C + c) : z;
    float2 xm2 = n0 >= 2 ? ld2(x + (int64_t)(n0 - 2) * C + c) : z;
    float2 xm1 = n0 >= 1 ? ld2(x + (int64_t)(n0 - 1) * C + c) : z;
    int end = min(N, n0 + CONV_RUN);
#pragma unroll 4
    for (int n = n0; n < end; n++) {
        float2 xc = ld2(x + (int64_t)n * C + c);
        float2 pre = conv_pre(k, pos[n], xc, xm1, xm2, xm3) + bias;
        if (SILU) pre = f2(silu1(pre.x), silu1(pre.y));
        st2(y + (int64_t)n * C + c, pre);
        xm3 = xm2;
        xm2 = xm1;
        xm1 = xc;
    }
}

// dpre = dy * act'(pre) at every token of the run and the 3 after it (recomputing pre), then
//   dx[m] = sum_t w_t dpre[m + 3 - t] over the taps whose token m + 3 - t is in m's segment,
//   dw[c, t] = sum_n dpre[n] x[n - (3 - t)] over the taps inside n's segment,
// the dw sums of the weight's K taps reduced over the block into dw_part[tile][C][K]; with a bias
// b, the sums of dpre (its gradient) into db_part[tile][C].
template <bool SILU, bool DW>
__global__ void __launch_bounds__(32 * CONV_WARPS)
    conv_bwd_kernel(bf16 *__restrict__ dx, float *__restrict__ dw_part, float *__restrict__ db_part,
                    const bf16 *__restrict__ dy, const bf16 *__restrict__ x,
                    const bf16 *__restrict__ w, const bf16 *__restrict__ b,
                    const int32_t *__restrict__ pos, int N, int C, int K) {
    int c = 2 * (blockIdx.y * 32 + threadIdx.x);
    int n0 = blockIdx.x * CONV_TILE + threadIdx.y * CONV_RUN;
    float2 z = f2(0.f, 0.f);
    float2 g[KW] = {z, z, z, z}; // dw sums by tap
    float2 gb = z;               // db sum
    if (c < C && n0 < N) {
        Taps k = load_taps(w, c, K);
        float2 bias = b ? ld2(b + c) : z;
        float2 xm3 = n0 >= 3 ? ld2(x + (int64_t)(n0 - 3) * C + c) : z;
        float2 xm2 = n0 >= 2 ? ld2(x + (int64_t)(n0 - 2) * C + c) : z;
        float2 xm1 = n0 >= 1 ? ld2(x + (int64_t)(n0 - 1) * C + c) : z;
        float2 d1 = z, d2 = z, d3 = z; // dpre at n-1, n-2, n-3
        int p1 = 0, p2 = 0;            // positions of n-1, n-2
        for (int n = n0; n < n0 + CONV_RUN + KW - 1; n++) {
            bool in = n < N;
            float2 xc = in ? ld2(x + (int64_t)n * C + c) : z;
            int p = in ? pos[n] : 0;
            float2 dp = in ? ld2(dy + (int64_t)n * C + c) : z;
            if (SILU && in) {
                float2 pre = conv_pre(k, p, xc, xm1, xm2, xm3) + bias;
                dp = dp * f2(dsilu1(pre.x), dsilu1(pre.y));
            }
            if (db_part && in && n < n0 + CONV_RUN) gb = gb + dp;
            if (DW && in && n < n0 + CONV_RUN) {
                if (p >= 3) g[0] = g[0] + dp * xm3;
                if (p >= 2) g[1] = g[1] + dp * xm2;
                if (p >= 1) g[2] = g[2] + dp * xm1;
                g[3] = g[3] + dp * xc;
            }
            int m = n - (KW - 1); // dpre of m .. m+3 = d3, d2, d1, dp is complete
            if (m >= n0 && m < N) {
                float2 s = k.t[3] * d3;
                if (p2 >= 1) s = s + k.t[2] * d2;
                if (p1 >= 2) s = s + k.t[1] * d1;
                if (p >= 3) s = s + k.t[0] * dp;
                st2(dx + (int64_t)m * C + c, s);
            }
            xm3 = xm2;
            xm2 = xm1;
            xm1 = xc;
            d3 = d2;
            d2 = d1;
            d1 = dp;
            p2 = p1;
            p1 = p;
        }
    }
    if constexpr (DW) store_taps_partial(dw_part, g, C, K);
    if (db_part) store_pair_partial(db_part, gb, C);
}

// ---- short conv, variant v2 (conv:v2, src/device/kernel_variants.c) ----
// The math of conv_fwd_kernel and conv_bwd_kernel, token by token, on runs of CONV2_RUN tokens
// a warp (the 3-token halo read for 64 tokens, not 32), with the inputs of CONV2_BATCH tokens
// loaded into registers before any is used: the verified kernels wait for each token's loads
// before issuing the next token's.
constexpr int CONV2_RUN = 64;
constexpr int CONV2_BATCH = 16;
constexpr int CONV2_TILE = CONV2_RUN * CONV_WARPS;

// A batch of tokens' channel pairs (bf16, converted where used) and positions.
struct ConvBatch {
    __nv_bfloat162 x[CONV2_BATCH], dy[CONV2_BATCH];
    int p[CONV2_BATCH];
};

// Tokens n0 + i below end: x, positions and (with dy) dy at channel pair c; zeros beyond.
__device__ __forceinline__ void load_batch(ConvBatch &b, const bf16 *__restrict__ x,
                                           const bf16 *__restrict__ dy,
                                           const int32_t *__restrict__ pos, int n0, int end, int C,
                                           int c) {
    const __nv_bfloat162 zero = __floats2bfloat162_rn(0.f, 0.f);
#pragma unroll
    for (int i = 0; i < CONV2_BATCH; i++) {
        int n = n0 + i;
        bool in = n < end;
        int64_t at = (int64_t)n * C + c;
        b.x[i] = in ? *reinterpret_cast<const __nv_bfloat162 *>(x + at) : zero;
        if (dy) b.dy[i] = in ? *reinterpret_cast<const __nv_bfloat162 *>(dy + at) : zero;
        b.p[i] = in ? pos[n] : 0;
    }
}

template <bool SILU>
__global__ void __launch_bounds__(32 * CONV_WARPS)
    conv_fwd_v2_kernel(bf16 *__restrict__ y, const bf16 *__restrict__ x, const bf16 *__restrict__ w,
                       const bf16 *__restrict__ b, const int32_t *__restrict__ pos, int N, int C,
                       int K) {
    int c = 2 * (blockIdx.y * 32 + threadIdx.x);
    int n0 = blockIdx.x * CONV2_TILE + threadIdx.y * CONV2_RUN;
    if (c >= C || n0 >= N) return;
    Taps k = load_taps(w, c, K);
    float2 z = f2(0.f, 0.f), bias = b ? ld2(b + c) : z;
    float2 xm3 = n0 >= 3 ? ld2(x + (int64_t)(n0 - 3) * C + c) : z;
    float2 xm2 = n0 >= 2 ? ld2(x + (int64_t)(n0 - 2) * C + c) : z;
    float2 xm1 = n0 >= 1 ? ld2(x + (int64_t)(n0 - 1) * C + c) : z;
    int end = min(N, n0 + CONV2_RUN);
    for (int nb = n0; nb < end; nb += CONV2_BATCH) {
        ConvBatch t;
        load_batch(t, x, nullptr, pos, nb, end, C, c);
#pragma unroll
        for (int i = 0; i < CONV2_BATCH; i++) {
            if (nb + i >= end) break;
            float2 xc = __bfloat1622float2(t.x[i]);
            float2 pre = conv_pre(k, t.p[i], xc, xm1, xm2, xm3) + bias;
            if (SILU) pre = f2(silu1(pre.x), silu1(pre.y));
            st2(y + (int64_t)(nb + i) * C + c, pre);
            xm3 = xm2;
            xm2 = xm1;
            xm1 = xc;
        }
    }
}

// The verified backward's recurrence (conv_bwd_kernel) over tokens n0 .. stop - 1 (the run and
// the 3 after it, as far as they exist), batch by batch.
template <bool SILU, bool DW>
__global__ void __launch_bounds__(32 * CONV_WARPS, 2)
    conv_bwd_v2_kernel(bf16 *__restrict__ dx, float *__restrict__ dw_part,
                       float *__restrict__ db_part, const bf16 *__restrict__ dy,
                       const bf16 *__restrict__ x, const bf16 *__restrict__ w,
                       const bf16 *__restrict__ b, const int32_t *__restrict__ pos, int N, int C,
                       int K) {
    int c = 2 * (blockIdx.y * 32 + threadIdx.x);
    int n0 = blockIdx.x * CONV2_TILE + threadIdx.y * CONV2_RUN;
    float2 z = f2(0.f, 0.f);
    float2 g[KW] = {z, z, z, z}; // dw sums by tap
    float2 gb = z;               // db sum
    if (c < C && n0 < N) {
        Taps k = load_taps(w, c, K);
        float2 bias = b ? ld2(b + c) : z;
        float2 xm3 = n0 >= 3 ? ld2(x + (int64_t)(n0 - 3) * C + c) : z;
        float2 xm2 = n0 >= 2 ? ld2(x + (int64_t)(n0 - 2) * C + c) : z;
        float2 xm1 = n0 >= 1 ? ld2(x + (int64_t)(n0 - 1) * C + c) : z;
        float2 d1 = z, d2 = z, d3 = z; // dpre at n-1, n-2, n-3
        int p1 = 0, p2 = 0;            // positions of n-1, n-2
        int own = min(N, n0 + CONV2_RUN), stop = own + KW - 1;
        for (int nb = n0; nb < stop; nb += CONV2_BATCH) {
            ConvBatch t;
            load_batch(t, x, dy, pos, nb, min(N, stop), C, c);
#pragma unroll
            for (int i = 0; i < CONV2_BATCH; i++) {
                int n = nb + i;
                if (n >= stop) break;
                float2 xc = __bfloat1622float2(t.x[i]), dp = __bfloat1622float2(t.dy[i]);
                int p = t.p[i];
                if (SILU && n < N) {
                    float2 pre = conv_pre(k, p, xc, xm1, xm2, xm3) + bias;
                    dp = dp * f2(dsilu1(pre.x), dsilu1(pre.y));
                }
                if (db_part && n < own) gb = gb + dp;
                if (DW && n < own) {
                    if (p >= 3) g[0] = g[0] + dp * xm3;
                    if (p >= 2) g[1] = g[1] + dp * xm2;
                    if (p >= 1) g[2] = g[2] + dp * xm1;
                    g[3] = g[3] + dp * xc;
                }
                int m = n - (KW - 1); // dpre of m .. m+3 = d3, d2, d1, dp is complete
                if (m >= n0) {
                    float2 s = k.t[3] * d3;
                    if (p2 >= 1) s = s + k.t[2] * d2;
                    if (p1 >= 2) s = s + k.t[1] * d1;
                    if (p >= 3) s = s + k.t[0] * dp;
                    st2(dx + (int64_t)m * C + c, s);
                }
                xm3 = xm2;
                xm2 = xm1;
                xm1 = xc;
                d3 = d2;
                d2 = d1;
                d1 = dp;
                p2 = p1;
                p1 = p;
            }
        }
    }
    if constexpr (DW) store_taps_partial(dw_part, g, C, K);
    if (db_part) store_pair_partial(db_part, gb, C);
}

// conv_bwd of the verified kernels, or of conv:v2 (V2) over grid (its tiles, 64-channel blocks).
template <bool SILU, bool V2>
void conv_bwd_launch(bf16 *dx, float *dw, float *db, const bf16 *dy, const bf16 *x, const bf16 *w,
                     const bf16 *b, const Seqs *s, int C, int K, dim3 grid, dim3 block) {
    int N = (int)s->ntok;
    float *bpart =
        db ? (float *)cuda_scratch(SCRATCH_B, sizeof(float) * grid.x * (size_t)C) : nullptr;
    if (dw) {
        float *part = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * grid.x * (size_t)C * K);
        auto kernel = V2 ? conv_bwd_v2_kernel<SILU, true> : conv_bwd_kernel<SILU, true>;
        kernel<<<grid, block, 0, cuda_stream()>>>(dx, part, bpart, dy, x, w, b, s->dev_pos, N, C,
                                                  K);
        CUDA_LAUNCHED();
        cuda_colsum_add(dw, part, (int)grid.x, C * K);
    } else {
        auto kernel = V2 ? conv_bwd_v2_kernel<SILU, false> : conv_bwd_kernel<SILU, false>;
        kernel<<<grid, block, 0, cuda_stream()>>>(dx, nullptr, bpart, dy, x, w, b, s->dev_pos, N, C,
                                                  K);
        CUDA_LAUNCHED();
    }
    if (db) cuda_colsum_add(db, bpart, (int)grid.x, C);
}

// ---- FoX shift ----
// y_t = a_t x_{t-1} + (1 - a_t) x_t, a = sigmoid(a_logit) per head; one thread per 2 channels.
__global__ void shift_fwd_kernel(bf16 *__restrict__ y, const bf16 *__restrict__ x,
                                 const bf16 *__restrict__ al, const int32_t *__restrict__ pos,
                                 int64_t npairs, int H, int D) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= npairs) return;
    int C = H * D, C2 = C / 2;
    int64_t n = i / C2;
    int c = 2 * (int)(i % C2);
    float a = sigmoidf_(bf2f(al[n * H + c / D]));
    float2 xc = ld2(x + 2 * i);
    float2 xp = pos[n] >= 1 ? ld2(x + 2 * i - C) : f2(0.f, 0.f);
    st2(y + 2 * i, a * xp + (1.f - a) * xc);
}

// One warp per (token n, head h):
//   dx_n = (1 - a_n) dy_n + a_{n+1} dy_{n+1} (when n+1 is in n's segment),
//   da_logit = a (1 - a) sum_d dy_n (x_{n-1} - x_n).
__global__ void shift_bwd_kernel(bf16 *__restrict__ dx, bf16 *__restrict__ dal,
                                 const bf16 *__restrict__ dy, const bf16 *__restrict__ x,
                                 const bf16 *__restrict__ al, const int32_t *__restrict__ pos,
                                 int N, int H, int D) {
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; // n * H + h
    if (row >= (int64_t)N * H) return;
    int lane = threadIdx.x % 32, C = H * D;
    int64_t n = row / H;
    float a = sigmoidf_(bf2f(al[row]));
    bool prev = pos[n] >= 1, next = n + 1 < N && pos[n + 1] >= 1;
    float an = next ? sigmoidf_(bf2f(al[row + H])) : 0.f;
    float2 z = f2(0.f, 0.f);
    float da = 0.f;
    for (int d = 2 * lane; d < D; d += 64) {
        int64_t i = row * D + d;
        float2 g = ld2(dy + i), xc = ld2(x + i);
        float2 xp = prev ? ld2(x + i - C) : z;
        float2 gn = next ? ld2(dy + i + C) : z;
        st2(dx + i, (1.f - a) * g + an * gn);
        da += g.x * (xp.x - xc.x) + g.y * (xp.y - xc.y);
    }
    da = warp_sum(da);
    if (lane == 0) dal[row] = f2bf(da * a * (1.f - a));
}

void shift_check(const char *op, const void *a, const void *b, int D) {
    if (D % 2) rt_die("%s: head size D=%d must be even", op, D);
    cuda_check_aligned(a, 4, op);
    cuda_check_aligned(b, 4, op);
}

// ---- reverse cumulative sum ----
// A segmented scan in three passes over tiles of SCAN_TILE tokens (tiles may straddle
// segments). A tile is SCAN_WARPS runs of SCAN_RUN tokens, one run per warp, one channel per
// lane, the run's values in registers. Scanning from the right, a token that ends its
// segment starts the sum afresh; the state after a stretch of tokens is (restarted?, sum),
// combined as (f1, v1) then (f2, v2) -> (f1 | f2, f2 ? v2 : v1 + v2).
//   1. every tile's state from zero (revcumsum_tile_kernel<false>);
//   2. per channel, the state entering each tile from the right (scan_carry_kernel,
//   segmented_scan.cuh);
//   3. every tile again from its carry, writing y (revcumsum_tile_kernel<true>).
constexpr int SCAN_RUN = 32;
constexpr int SCAN_WARPS = 8;
constexpr int SCAN_TILE = SCAN_RUN * SCAN_WARPS;

template <bool FINAL>
__global__ void __launch_bounds__(32 * SCAN_WARPS)
    revcumsum_tile_kernel(float *y, float *__restrict__ tile_val, int *__restrict__ tile_flag,
                          const float *__restrict__ tile_carry, const float *x,
                          const int32_t *__restrict__ pos, int N, int C) {
    __shared__ float sval[SCAN_WARPS][32];
    __shared__ int sflag[SCAN_WARPS];
    int lane = threadIdx.x, wp = threadIdx.y;
    int c = blockIdx.y * 32 + lane;
    bool ch = c < C;
    int n0 = blockIdx.x * SCAN_TILE + wp * SCAN_RUN;
    float v[SCAN_RUN];
    unsigned ends = 0; // bit i: token n0 + i ends its segment
#pragma unroll
    for (int i = 0; i < SCAN_RUN; i++) {
        int n = n0 + i;
        v[i] = n < N && ch ? x[(int64_t)n * C + c] : 0.f;
        if (n < N && (n == N - 1 || pos[n + 1] == 0)) ends |= 1u << i;
    }
    float acc = 0.f;
#pragma unroll
    for (int i = SCAN_RUN - 1; i >= 0; i--) {
        if (ends >> i & 1) acc = 0.f;
        acc += v[i];
    }
    sval[wp][lane] = acc;
    if (lane == 0) sflag[wp] = ends != 0;
    __syncthreads();
    if constexpr (!FINAL) {
        if (wp == 0) { // the tile's state: the runs combined from the right
            float a = 0.f;
            int f = 0;
            for (int r = SCAN_WARPS - 1; r >= 0; r--) {
                a = sflag[r] ? sval[r][lane] : a + sval[r][lane];
                f |= sflag[r];
            }
            if (ch) tile_val[(int64_t)blockIdx.x * C + c] = a;
            if (lane == 0 && blockIdx.y == 0) tile_flag[blockIdx.x] = f;
        }
    } else {
        if (wp == 0) { // the state entering each run, in place of the run's own state
            float a = ch ? tile_carry[(int64_t)blockIdx.x * C + c] : 0.f;
            for (int r = SCAN_WARPS - 1; r >= 0; r--) {
                float t = sval[r][lane];
                sval[r][lane] = a;
                a = sflag[r] ? t : a + t;
            }
        }
        __syncthreads();
        acc = sval[wp][lane];
#pragma unroll
        for (int i = SCAN_RUN - 1; i >= 0; i--) {
            int n = n0 + i;
            if (ends >> i & 1) acc = 0.f;
            acc += v[i];
            if (n < N && ch) y[(int64_t)n * C + c] = acc;
        }
    }
}

} // namespace

void cuda_conv_fwd(void *y, const void *x, const void *w, const void *b, const Seqs *s, int C,
                   int K, Activation act) {
    conv_check("conv_fwd", y, x, w, C, K, act);
    cuda_check_aligned(b, 4, "conv_fwd");
    int N = (int)s->ntok;
    if (N == 0) return;
    bool v2 = kernel_variant(KV_CONV) == 1;
    dim3 grid((unsigned)cdiv(N, v2 ? CONV2_TILE : CONV_TILE), (unsigned)cdiv(C, 64)),
        block(32, CONV_WARPS);
    auto kernel = act == ACT_SILU ? (v2 ? conv_fwd_v2_kernel<true> : conv_fwd_kernel<true>)
                                  : (v2 ? conv_fwd_v2_kernel<false> : conv_fwd_kernel<false>);
    kernel<<<grid, block, 0, cuda_stream()>>>((bf16 *)y, (const bf16 *)x, (const bf16 *)w,
                                              (const bf16 *)b, s->dev_pos, N, C, K);
    CUDA_LAUNCHED();
}

void cuda_conv_bwd(void *dx, void *dw, void *db, const void *dy, const void *x, const void *w,
                   const void *b, const Seqs *s, int C, int K, Activation act) {
    conv_check("conv_bwd", dx, dy, x, C, K, act);
    cuda_check_aligned(b, 4, "conv_bwd");
    if (s->ntok == 0) return;
    bool v2 = kernel_variant(KV_CONV) == 1;
    dim3 grid((unsigned)cdiv(s->ntok, v2 ? CONV2_TILE : CONV_TILE), (unsigned)cdiv(C, 64)),
        block(32, CONV_WARPS);
    float *dwf = w ? (float *)dw : nullptr; // the fixed first difference has no weight
    float *dbf = b ? (float *)db : nullptr;
    auto launch = act == ACT_SILU
                      ? (v2 ? conv_bwd_launch<true, true> : conv_bwd_launch<true, false>)
                      : (v2 ? conv_bwd_launch<false, true> : conv_bwd_launch<false, false>);
    launch((bf16 *)dx, dwf, dbf, (const bf16 *)dy, (const bf16 *)x, (const bf16 *)w,
           (const bf16 *)b, s, C, K, grid, block);
}

void cuda_shift_fwd(void *y, const void *x, const void *a_logit, const Seqs *s, int H, int D) {
    shift_check("shift_fwd", y, x, D);
    int64_t npairs = s->ntok * H * D / 2;
    if (npairs == 0) return;
    shift_fwd_kernel<<<(unsigned)cdiv(npairs, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)y, (const bf16 *)x, (const bf16 *)a_logit, s->dev_pos, npairs, H, D);
    CUDA_LAUNCHED();
}

void cuda_shift_bwd(void *dx, void *da_logit, const void *dy, const void *x, const void *a_logit,
                    const Seqs *s, int H, int D) {
    shift_check("shift_bwd", dx, dy, D);
    cuda_check_aligned(x, 4, "shift_bwd");
    int64_t rows = s->ntok * H;
    if (rows == 0) return;
    shift_bwd_kernel<<<(unsigned)cdiv(rows, 8), 256, 0, cuda_stream()>>>(
        (bf16 *)dx, (bf16 *)da_logit, (const bf16 *)dy, (const bf16 *)x, (const bf16 *)a_logit,
        s->dev_pos, (int)s->ntok, H, D);
    CUDA_LAUNCHED();
}

void cuda_revcumsum(void *y, const void *x, const Seqs *s, int C) {
    int N = (int)s->ntok;
    if (N == 0 || C == 0) return;
    int ntile = (int)cdiv(N, SCAN_TILE);
    size_t nval = (size_t)ntile * C;
    float *val = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * 2 * nval + sizeof(int) * ntile);
    float *carry = val + nval;
    int *flag = (int *)(carry + nval);
    dim3 grid((unsigned)ntile, (unsigned)cdiv(C, 32)), block(32, SCAN_WARPS);
    revcumsum_tile_kernel<false><<<grid, block, 0, cuda_stream()>>>(
        nullptr, val, flag, nullptr, (const float *)x, s->dev_pos, N, C);
    CUDA_LAUNCHED();
    launch_scan_carry<true>(carry, val, flag, ntile, C);
    revcumsum_tile_kernel<true><<<grid, block, 0, cuda_stream()>>>(
        (float *)y, nullptr, nullptr, carry, (const float *)x, s->dev_pos, N, C);
    CUDA_LAUNCHED();
}
