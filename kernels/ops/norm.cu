// RMSNorm over groups of channels (docs/models.md §backbone; also the per-head readout and FoX QK
// norms), the block norms fused with the residual add before them, LayerNorm (§zoology-shape) and
// L2 normalisation (GDN q/k, docs/models.md §gated-deltanet; Selective RoPE inputs, docs/models.md
// §position-embeddings), and the readouts' RMSNorm with their output gate (§gla step 6).
//
// A row of C channels is owned by a group of W lanes of one warp (W a power of two <= 32):
// lane li of the group holds the vectors li, li + W, ... (NV of them, VEC bf16 each) in
// registers, and the row's sums are xor-shuffles inside the group. VEC = 8 (16-byte loads)
// when C % 8 == 0 and the rows are 16-byte aligned, else 1 (then C <= 1024).
#include <initializer_list>
#include <type_traits>

#include "backend/cuda_ops.h"
#include "device/kernel_variants.h"
#include "lib/cuda_common.cuh"
#include "lib/gate_act.cuh"
#include "util/error.h"

namespace {

constexpr int THREADS = 256;
constexpr int MAX_C = 2048;

// Sum over the W lanes of a lane group; all 32 lanes of the warp call it.
__device__ __forceinline__ float group_sum(float v, int W) {
    for (int o = W >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

// y = x * rs (* w), rs = 1/sqrt(sum x^2 / C + eps) for RMSNorm (docs/models.md §backbone),
// 1/sqrt(sum x^2 + eps) for the L2 norm; one row per lane group. With ADD, x = a + b rounded
// to bf16 is the residual stream: written to h, and normalised as read back.
template <int VEC, int NV, bool RMS, bool ADD = false>
__global__ void __launch_bounds__(THREADS)
    norm_fwd_kernel(bf16 *y, float *rstd, const bf16 *x, const bf16 *w, int64_t rows, int G, int C,
                    int W, int w_per_group, float eps, bf16 *h = nullptr, const bf16 *b = nullptr) {
    int li = threadIdx.x & (W - 1), units = C / VEC;
    int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / W;
    bool active = r < rows;
    const bf16 *xr = x + r * C;
    Pack<bf16, VEC> xv[NV];
    float ss = 0.f;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        if (active && u < units) {
            xv[j] = ld_vec<VEC>(xr + u * VEC);
            if constexpr (ADD) {
                Pack<bf16, VEC> bv = ld_vec<VEC>(b + r * C + u * VEC);
#pragma unroll
                for (int k = 0; k < VEC; k++) xv[j].v[k] = f2bf(bf2f(xv[j].v[k]) + bf2f(bv.v[k]));
                st_vec<VEC>(h + r * C + u * VEC, xv[j]);
            }
#pragma unroll
            for (int k = 0; k < VEC; k++) {
                float a = bf2f(xv[j].v[k]);
                ss += a * a;
            }
        }
    }
    ss = group_sum(ss, W);
    if (!active) return;
    float rs = 1.f / sqrtf((RMS ? ss / (float)C : ss) + eps);
    if (li == 0) rstd[r] = rs;
    const bf16 *wr = RMS ? w + (w_per_group ? (r % G) * C : 0) : nullptr;
    bf16 *yr = y + r * C;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        if (u < units) {
            Pack<bf16, VEC> o;
            if constexpr (RMS) {
                Pack<bf16, VEC> wv = ld_vec<VEC>(wr + u * VEC);
#pragma unroll
                for (int k = 0; k < VEC; k++) o.v[k] = f2bf(bf2f(xv[j].v[k]) * rs * bf2f(wv.v[k]));
            } else {
#pragma unroll
                for (int k = 0; k < VEC; k++) o.v[k] = f2bf(bf2f(xv[j].v[k]) * rs);
            }
            st_vec<VEC>(yr + u * VEC, o);
        }
    }
}

// RMSNorm backward. Rows r = t * Gw + g with Gw = G for per-group weights (else Gw = 1, g = 0,
// t over all N*G rows): block b serves group g = b % Gw only, so every lane keeps its dw
// columns in registers over the rows it visits. At the end the lane groups of a warp, then
// the warps of the block (through shared memory, [warps][C]) are summed in a fixed order into
// part[b][C]; dw_reduce_kernel adds the blocks of each g. With dot = sum_c dy w x:
// dx = rs (dy w - x dot rs^2 / C), dw += dy x rs. The second pass over a row reloads it
// (an L1 hit) rather than holding it: half the registers, twice the resident blocks.
template <int VEC, int NV>
__global__ void __launch_bounds__(THREADS)
    rmsnorm_bwd_kernel(bf16 *dx, float *part, const bf16 *dy, const bf16 *x, const bf16 *w,
                       const float *rstd, int64_t T, int Gw, int C, int W, int accumulate) {
    extern __shared__ float red[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    int li = lane & (W - 1), sub = lane / W, groups = 32 / W, units = C / VEC;
    int g = (int)(blockIdx.x % Gw);
    int64_t nbg = gridDim.x / Gw, bi = blockIdx.x / Gw, stride = nbg * nwarps * groups;
    const bf16 *wg = w + (int64_t)g * C;
    float acc[NV][VEC];
#pragma unroll
    for (int j = 0; j < NV; j++)
#pragma unroll
        for (int k = 0; k < VEC; k++) acc[j][k] = 0.f;
    // t0 is uniform over the warp, so every lane takes part in each group_sum
    for (int64_t t0 = (bi * nwarps + warp) * groups; t0 < T; t0 += stride) {
        int64_t t = t0 + sub, r = t * Gw + g;
        bool active = t < T;
        float rs = active ? rstd[r] : 0.f, dot = 0.f;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            int u = li + j * W;
            if (active && u < units) {
                Pack<bf16, VEC> xv = ld_vec<VEC>(x + r * C + u * VEC);
                Pack<bf16, VEC> dv = ld_vec<VEC>(dy + r * C + u * VEC);
                Pack<bf16, VEC> wv = ld_vec<VEC>(wg + u * VEC);
#pragma unroll
                for (int k = 0; k < VEC; k++) dot += bf2f(dv.v[k]) * bf2f(wv.v[k]) * bf2f(xv.v[k]);
            }
        }
        dot = group_sum(dot, W);
        float kk = dot * rs * rs / (float)C;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            int u = li + j * W;
            if (active && u < units) {
                bf16 *dxp = dx + r * C + u * VEC;
                Pack<bf16, VEC> xv = ld_vec<VEC>(x + r * C + u * VEC);
                Pack<bf16, VEC> dv = ld_vec<VEC>(dy + r * C + u * VEC);
                Pack<bf16, VEC> wv = ld_vec<VEC>(wg + u * VEC), o, old;
                if (accumulate) old = ld_vec<VEC>(dxp);
#pragma unroll
                for (int k = 0; k < VEC; k++) {
                    float d = bf2f(dv.v[k]), xx = bf2f(xv.v[k]);
                    float v = rs * (d * bf2f(wv.v[k]) - xx * kk);
                    o.v[k] = f2bf(accumulate ? bf2f(old.v[k]) + v : v);
                    acc[j][k] += d * xx * rs;
                }
                st_vec<VEC>(dxp, o);
            }
        }
    }
    // lanes with the same li in the warp's lane groups hold the same columns
#pragma unroll
    for (int j = 0; j < NV; j++)
#pragma unroll
        for (int k = 0; k < VEC; k++)
            for (int o = W; o < 32; o <<= 1) acc[j][k] += __shfl_xor_sync(FULL_MASK, acc[j][k], o);
    if (sub == 0) {
#pragma unroll
        for (int j = 0; j < NV; j++) {
            int u = li + j * W;
            if (u < units)
#pragma unroll
                for (int k = 0; k < VEC; k++) red[warp * C + u * VEC + k] = acc[j][k];
        }
    }
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float s = 0.f;
        for (int i = 0; i < nwarps; i++) s += red[i * C + c];
        part[(int64_t)blockIdx.x * C + c] = s;
    }
}

// dw[g*C + c] += sum over the nbg blocks of group g (block bi * Gw + g) of part, in order.
__global__ void dw_reduce_kernel(float *dw, const float *part, int nbg, int Gw, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= Gw * C) return;
    int g = idx / C, c = idx - g * C;
    float s = 0.f;
    for (int b = 0; b < nbg; b++) s += part[((int64_t)b * Gw + g) * C + c];
    dw[idx] += s;
}

// rmsnorm_bwd:v2 (src/device/kernel_variants.c), rows of 16-byte vectors: the expressions of
// rmsnorm_bwd_kernel (dw summed in another order), with x and dy read once and held in
// registers from the row's dot to its dx, and R rows a lane group at a time (rows t0 + q *
// groups + sub, q < R) so that R * NV loads of each are in flight per lane before the first is
// used (the verified kernel has NV, and reads the row again from L1 for dx). The vectors stay 4
// bf16 pairs of 32 bits until used (a Pack of 8 bf16 loaded under a condition is split into halves
// at once, which waits for the load). w of the block's group g is staged in shared memory as fp32;
// the warps' dw sums are added in warp order into shared [C] and written to part[b][C]
// (cuda_colsum_add adds the blocks).
using Pairs = uint4; // 8 bf16 channels, pair i in word i

// 16 bytes at p when ok, else zeros.
__device__ __forceinline__ Pairs ld_pairs(const bf16 *p, bool ok) {
    return ok ? *reinterpret_cast<const uint4 *>(p) : make_uint4(0, 0, 0, 0);
}

// Pair i of v as fp32 (exact: a bf16 is the high half of an fp32).
__device__ __forceinline__ float2 pair(const Pairs &v, int i) {
    unsigned u = i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
    return f2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
}

// The start of rmsnorm_bwd_v2_kernel and rmsnorm_gate_bwd_kernel: wg (C weights of the
// block's group) staged in shared memory as fp32 into ws, and a lane's dw sums zeroed.
template <int NV>
__device__ __forceinline__ void start_block_dw(float2 (&acc)[NV][4], float *ws, const bf16 *wg,
                                               int C) {
    for (int c = threadIdx.x; c < C; c += blockDim.x) ws[c] = bf2f(wg[c]);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < NV; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) acc[j][i] = f2(0.f, 0.f);
}

// The end of rmsnorm_bwd_v2_kernel and rmsnorm_gate_bwd_kernel: a lane's dw sums acc (its
// vectors li + j W of 8 channels) over the warp's lane groups, the warps' sums added in warp
// order into red[C] (shared), and the block's row part[blockIdx.x][C] written.
template <int NV>
__device__ __forceinline__ void store_block_dw(float2 (&acc)[NV][4], float *red, float *part, int C,
                                               int W, int units) {
    constexpr int VEC = 8;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    int li = lane & (W - 1), sub = lane / W;
    // lanes with the same li in the warp's lane groups hold the same columns
#pragma unroll
    for (int j = 0; j < NV; j++)
#pragma unroll
        for (int i = 0; i < VEC / 2; i++)
            for (int o = W; o < 32; o <<= 1) {
                acc[j][i].x += __shfl_xor_sync(FULL_MASK, acc[j][i].x, o);
                acc[j][i].y += __shfl_xor_sync(FULL_MASK, acc[j][i].y, o);
            }
    for (int wp = 0; wp < nwarps; wp++) { // the warps' sums added in warp order
        if (warp == wp && sub == 0) {
#pragma unroll
            for (int j = 0; j < NV; j++) {
                int u = li + j * W;
                if (u < units)
#pragma unroll
                    for (int i = 0; i < VEC / 2; i++) {
                        float2 *rp = reinterpret_cast<float2 *>(red + u * VEC + 2 * i);
                        *rp = (wp ? *rp : f2(0.f, 0.f)) + acc[j][i];
                    }
            }
        }
        __syncthreads();
    }
    for (int c = threadIdx.x; c < C; c += blockDim.x) part[(int64_t)blockIdx.x * C + c] = red[c];
}

template <int NV, int R>
__global__ void __launch_bounds__(THREADS)
    rmsnorm_bwd_v2_kernel(bf16 *dx, float *part, const bf16 *dy, const bf16 *x, const bf16 *w,
                          const float *rstd, int64_t T, int Gw, int C, int W, int accumulate) {
    constexpr int VEC = 8;
    extern __shared__ float sm[]; // [C] w of group g, then [C] the block's dw sums
    float *ws = sm, *red = sm + C;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    int li = lane & (W - 1), sub = lane / W, groups = 32 / W, units = C / VEC;
    int g = (int)(blockIdx.x % Gw);
    int64_t nbg = gridDim.x / Gw, bi = blockIdx.x / Gw, stride = nbg * nwarps * groups * R;
    float2 acc[NV][VEC / 2];
    start_block_dw<NV>(acc, ws, w + (int64_t)g * C, C);
    // t0 is uniform over the warp, so every lane takes part in each group_sum
    for (int64_t t0 = (bi * nwarps + warp) * groups * R; t0 < T; t0 += stride) {
        Pairs xv[R][NV], dv[R][NV];
        float rs[R], dot[R];
#pragma unroll
        for (int q = 0; q < R; q++) {
            int64_t t = t0 + q * groups + sub, r = t * Gw + g;
            bool active = t < T;
            rs[q] = active ? rstd[r] : 0.f;
#pragma unroll
            for (int j = 0; j < NV; j++) {
                int u = li + j * W;
                xv[q][j] = ld_pairs(x + r * C + u * VEC, active && u < units);
                dv[q][j] = ld_pairs(dy + r * C + u * VEC, active && u < units);
            }
        }
#pragma unroll
        for (int q = 0; q < R; q++) {
            dot[q] = 0.f;
#pragma unroll
            for (int j = 0; j < NV; j++) {
                int u = li + j * W; // the vectors of inactive rows and units are zeros
                if (u < units)
#pragma unroll
                    for (int i = 0; i < VEC / 2; i++) {
                        float2 d = pair(dv[q][j], i);
                        float2 xx = pair(xv[q][j], i);
                        dot[q] += d.x * ws[u * VEC + 2 * i] * xx.x;
                        dot[q] += d.y * ws[u * VEC + 2 * i + 1] * xx.y;
                    }
            }
        }
#pragma unroll
        for (int q = 0; q < R; q++) dot[q] = group_sum(dot[q], W);
#pragma unroll
        for (int q = 0; q < R; q++) {
            int64_t t = t0 + q * groups + sub, r = t * Gw + g;
            bool active = t < T;
            float kk = dot[q] * rs[q] * rs[q] / (float)C;
#pragma unroll
            for (int j = 0; j < NV; j++) {
                int u = li + j * W;
                if (active && u < units) {
                    bf16 *dxp = dx + r * C + u * VEC;
                    Pairs old = ld_pairs(dxp, accumulate);
                    __nv_bfloat162 o[VEC / 2];
#pragma unroll
                    for (int i = 0; i < VEC / 2; i++) {
                        float2 d = pair(dv[q][j], i);
                        float2 xx = pair(xv[q][j], i);
                        float2 wv = f2(ws[u * VEC + 2 * i], ws[u * VEC + 2 * i + 1]);
                        float2 v = rs[q] * (d * wv - xx * f2(kk, kk));
                        if (accumulate) v = pair(old, i) + v;
                        o[i] = __floats2bfloat162_rn(v.x, v.y);
                        acc[j][i] = acc[j][i] + d * xx * f2(rs[q], rs[q]);
                    }
                    *reinterpret_cast<uint4 *>(dxp) = *reinterpret_cast<const uint4 *>(o);
                }
            }
        }
    }
    store_block_dw<NV>(acc, red, part, C, W, units);
}

// rmsnorm_gate under normgate:fused (src/device/kernel_variants.c), rows of 16-byte vectors of at
// most 1024 channels. The forward is norm_fwd_kernel's RMSNorm (its sums in its order: the same
// rstd) with the gate applied before the store: on = bf16(x rs w) as rmsnorm_fwd rounds it, then
// r = bf16(on act(gp)) as gate_mul_fwd does; on is not written.
constexpr int NG_MAX_NV = 4; // vectors a lane: 1024 channels at 32 lanes a row

// v through bf16 and back: the rounding of a value the pair of ops stores between them.
__device__ __forceinline__ float bf16r(float v) { return bf2f(f2bf(v)); }

template <int NV>
__global__ void __launch_bounds__(THREADS, NV == 1 ? 8 : 1) // NV 1: 32 registers, 8 blocks a SM
    rmsnorm_gate_fwd_kernel(bf16 *out, float *rstd, const bf16 *x, const bf16 *w, const bf16 *gp,
                            int64_t rows, int G, int C, int W, int w_per_group, Activation act,
                            float eps) {
    constexpr int VEC = 8;
    int li = threadIdx.x & (W - 1), units = C / VEC;
    int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / W;
    bool active = r < rows;
    Pairs xv[NV], gv[NV];
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        xv[j] = ld_pairs(x + r * C + u * VEC, active && u < units);
        gv[j] = ld_pairs(gp + r * C + u * VEC, active && u < units);
    }
    float ss = 0.f; // the zeros of inactive rows and units add nothing
#pragma unroll
    for (int j = 0; j < NV; j++)
#pragma unroll
        for (int i = 0; i < VEC / 2; i++) {
            float2 a = pair(xv[j], i);
            ss += a.x * a.x;
            ss += a.y * a.y;
        }
    ss = group_sum(ss, W);
    if (!active) return;
    float rs = 1.f / sqrtf(ss / (float)C + eps);
    if (li == 0) rstd[r] = rs;
    const bf16 *wr = w + (w_per_group ? (r % G) * C : 0);
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        if (u < units) {
            Pairs wv = ld_pairs(wr + u * VEC, true);
            __nv_bfloat162 o[VEC / 2];
#pragma unroll
            for (int i = 0; i < VEC / 2; i++) {
                float2 xx = pair(xv[j], i), ww = pair(wv, i), g = pair(gv[j], i);
                float2 on = f2(bf16r(xx.x * rs * ww.x), bf16r(xx.y * rs * ww.y));
                o[i] =
                    __floats2bfloat162_rn(on.x * act_value(g.x, act), on.y * act_value(g.y, act));
            }
            *reinterpret_cast<uint4 *>(out + r * C + u * VEC) = *reinterpret_cast<const uint4 *>(o);
        }
    }
}

// The fused backward's arguments: T rows of each of Gw weight groups (rows t * Gw + g) of C
// channels, W lanes a row.
struct NormGateBwd {
    bf16 *dx, *dgp;
    const bf16 *dr, *x, *gp, *w;
    const float *rstd;
    int64_t T;
    int Gw, C, W;
    Activation act;
};

// With the rows laid out as rmsnorm_bwd_v2_kernel's (w of the block's group in shared memory,
// R rows a lane group at a time, x, gp and dr loaded before any is used), the gate's backward
// of the recomputed on = bf16(x rs w) in registers (gate_mul_bwd's values): don = bf16(dr
// act(gp)), kept in dr's registers, and dgp = bf16(dr on act'(gp)), stored; then RMSNorm's
// backward of don (docs/models.md §backbone: rmsnorm_bwd_kernel's expressions, dot summed in
// its order): dx = rs (don w - x rs^2 dot / C) with dot = sum_c don w x, dw += don x rs, the
// block's sums into part[b][C] in warp order (cuda_colsum_add adds the blocks).
template <int NV, int R>
__global__ void __launch_bounds__(THREADS) rmsnorm_gate_bwd_kernel(NormGateBwd a, float *part) {
    constexpr int VEC = 8;
    extern __shared__ float sm[]; // [C] w of group g, then [C] the block's dw sums
    const int C = a.C, W = a.W, Gw = a.Gw;
    float *ws = sm, *red = sm + C;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    int li = lane & (W - 1), sub = lane / W, groups = 32 / W, units = C / VEC;
    int g = (int)(blockIdx.x % Gw);
    int64_t nbg = gridDim.x / Gw, bi = blockIdx.x / Gw, stride = nbg * nwarps * groups * R;
    float2 acc[NV][VEC / 2];
    start_block_dw<NV>(acc, ws, a.w + (int64_t)g * C, C);
    // t0 is uniform over the warp, so every lane takes part in each group_sum
    for (int64_t t0 = (bi * nwarps + warp) * groups * R; t0 < a.T; t0 += stride) {
        Pairs xv[R][NV], gv[R][NV], dv[R][NV]; // dv: dr, then don
        float rs[R], dot[R];
#pragma unroll
        for (int q = 0; q < R; q++) {
            int64_t t = t0 + q * groups + sub, r = t * Gw + g;
            bool active = t < a.T;
            rs[q] = active ? a.rstd[r] : 0.f;
#pragma unroll
            for (int j = 0; j < NV; j++) {
                int u = li + j * W;
                bool ok = active && u < units;
                xv[q][j] = ld_pairs(a.x + r * C + u * VEC, ok);
                gv[q][j] = ld_pairs(a.gp + r * C + u * VEC, ok);
                dv[q][j] = ld_pairs(a.dr + r * C + u * VEC, ok);
            }
        }
#pragma unroll
        for (int q = 0; q < R; q++) {
            int64_t t = t0 + q * groups + sub, r = t * Gw + g;
            bool active = t < a.T;
            dot[q] = 0.f;
#pragma unroll
            for (int j = 0; j < NV; j++) {
                int u = li + j * W; // the vectors of inactive rows are zeros
                if (u < units) {
                    __nv_bfloat162 dn[VEC / 2], dg[VEC / 2];
#pragma unroll
                    for (int i = 0; i < VEC / 2; i++) {
                        float2 xx = pair(xv[q][j], i), gg = pair(gv[q][j], i),
                               d = pair(dv[q][j], i);
                        float2 ww = f2(ws[u * VEC + 2 * i], ws[u * VEC + 2 * i + 1]);
                        float2 on = f2(bf16r(xx.x * rs[q] * ww.x), bf16r(xx.y * rs[q] * ww.y));
                        dn[i] = __floats2bfloat162_rn(d.x * act_value(gg.x, a.act),
                                                      d.y * act_value(gg.y, a.act));
                        dg[i] = __floats2bfloat162_rn(d.x * on.x * act_deriv(gg.x, a.act),
                                                      d.y * on.y * act_deriv(gg.y, a.act));
                        float2 n = __bfloat1622float2(dn[i]);
                        dot[q] += n.x * ww.x * xx.x;
                        dot[q] += n.y * ww.y * xx.y;
                    }
                    dv[q][j] = *reinterpret_cast<const uint4 *>(dn);
                    if (active)
                        *reinterpret_cast<uint4 *>(a.dgp + r * C + u * VEC) =
                            *reinterpret_cast<const uint4 *>(dg);
                }
            }
        }
#pragma unroll
        for (int q = 0; q < R; q++) dot[q] = group_sum(dot[q], W);
#pragma unroll
        for (int q = 0; q < R; q++) {
            int64_t t = t0 + q * groups + sub, r = t * Gw + g;
            float kk = dot[q] * rs[q] * rs[q] / (float)C;
#pragma unroll
            for (int j = 0; j < NV; j++) {
                int u = li + j * W;
                if (t < a.T && u < units) {
                    __nv_bfloat162 o[VEC / 2];
#pragma unroll
                    for (int i = 0; i < VEC / 2; i++) {
                        float2 d = pair(dv[q][j], i), xx = pair(xv[q][j], i);
                        float2 ww = f2(ws[u * VEC + 2 * i], ws[u * VEC + 2 * i + 1]);
                        float2 v = rs[q] * (d * ww - xx * f2(kk, kk));
                        o[i] = __floats2bfloat162_rn(v.x, v.y);
                        acc[j][i] = acc[j][i] + d * xx * f2(rs[q], rs[q]);
                    }
                    *reinterpret_cast<uint4 *>(a.dx + r * C + u * VEC) =
                        *reinterpret_cast<const uint4 *>(o);
                }
            }
        }
    }
    store_block_dw<NV>(acc, red, part, C, W, units);
}

// y = x * rn  =>  dx = rn (dy - y (y . dy)); one row per lane group.
template <int VEC, int NV>
__global__ void __launch_bounds__(THREADS)
    l2norm_bwd_kernel(bf16 *dx, const bf16 *dy, const bf16 *y, const float *rnorm, int64_t rows,
                      int D, int W, int accumulate) {
    int li = threadIdx.x & (W - 1), units = D / VEC;
    int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / W;
    bool active = r < rows;
    Pack<bf16, VEC> yv[NV], dv[NV];
    float dot = 0.f;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        if (active && u < units) {
            yv[j] = ld_vec<VEC>(y + r * D + u * VEC);
            dv[j] = ld_vec<VEC>(dy + r * D + u * VEC);
#pragma unroll
            for (int k = 0; k < VEC; k++) dot += bf2f(yv[j].v[k]) * bf2f(dv[j].v[k]);
        }
    }
    dot = group_sum(dot, W);
    if (!active) return;
    float rn = rnorm[r];
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        if (u < units) {
            bf16 *dxp = dx + r * D + u * VEC;
            Pack<bf16, VEC> o, old;
            if (accumulate) old = ld_vec<VEC>(dxp);
#pragma unroll
            for (int k = 0; k < VEC; k++) {
                float v = rn * (bf2f(dv[j].v[k]) - bf2f(yv[j].v[k]) * dot);
                o.v[k] = f2bf(accumulate ? bf2f(old.v[k]) + v : v);
            }
            st_vec<VEC>(dxp, o);
        }
    }
}

// Lane li's vectors of a row (units li, li + W, ... below `units`) into xv when the row is
// active; returns their sum.
template <int VEC, int NV>
__device__ __forceinline__ float load_row_sum(Pack<bf16, VEC> (&xv)[NV], const bf16 *xr, int li,
                                              int W, int units, bool active) {
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        if (!active || u >= units) continue;
        xv[j] = ld_vec<VEC>(xr + u * VEC);
#pragma unroll
        for (int k = 0; k < VEC; k++) s += bf2f(xv[j].v[k]);
    }
    return s;
}

// LayerNorm (docs/models.md §zoology-shape): y = (x - mean) rs w + b, rs = 1/sqrt(var + eps), the
// row held in registers for the two sums; one row per lane group.
template <int VEC, int NV>
__global__ void __launch_bounds__(THREADS)
    layernorm_fwd_kernel(bf16 *y, float *mean, float *rstd, const bf16 *x, const bf16 *w,
                         const bf16 *b, int64_t rows, int C, int W, float eps) {
    int li = threadIdx.x & (W - 1), units = C / VEC;
    int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / W;
    bool active = r < rows;
    Pack<bf16, VEC> xv[NV];
    float mu = group_sum(load_row_sum<VEC, NV>(xv, x + r * C, li, W, units, active), W) / (float)C,
          ss = 0.f;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        if (active && u < units)
#pragma unroll
            for (int k = 0; k < VEC; k++) {
                float d = bf2f(xv[j].v[k]) - mu;
                ss += d * d;
            }
    }
    ss = group_sum(ss, W);
    if (!active) return;
    float rs = 1.f / sqrtf(ss / (float)C + eps);
    if (li == 0) mean[r] = mu, rstd[r] = rs;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        if (u < units) {
            Pack<bf16, VEC> wv = ld_vec<VEC>(w + u * VEC), bv = ld_vec<VEC>(b + u * VEC), o;
#pragma unroll
            for (int k = 0; k < VEC; k++)
                o.v[k] = f2bf((bf2f(xv[j].v[k]) - mu) * rs * bf2f(wv.v[k]) + bf2f(bv.v[k]));
            st_vec<VEC>(y + r * C + u * VEC, o);
        }
    }
}

// LayerNorm's dx: with xh = (x - mean) rs and g = dy w, dx = rs (g - mean_c(g) - xh mean_c(g xh));
// one row per lane group.
template <int VEC, int NV>
__global__ void __launch_bounds__(THREADS)
    layernorm_bwd_dx_kernel(bf16 *dx, const bf16 *dy, const bf16 *x, const bf16 *w,
                            const float *mean, const float *rstd, int64_t rows, int C, int W,
                            int accumulate) {
    int li = threadIdx.x & (W - 1), units = C / VEC;
    int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / W;
    bool active = r < rows;
    float mu = active ? mean[r] : 0.f, rs = active ? rstd[r] : 0.f, sg = 0.f, sgx = 0.f;
    Pack<bf16, VEC> xv[NV];
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        if (active && u < units) {
            xv[j] = ld_vec<VEC>(x + r * C + u * VEC);
            Pack<bf16, VEC> dv = ld_vec<VEC>(dy + r * C + u * VEC), wv = ld_vec<VEC>(w + u * VEC);
#pragma unroll
            for (int k = 0; k < VEC; k++) {
                float g = bf2f(dv.v[k]) * bf2f(wv.v[k]);
                sg += g;
                sgx += g * (bf2f(xv[j].v[k]) - mu) * rs;
            }
        }
    }
    sg = group_sum(sg, W) / (float)C;
    sgx = group_sum(sgx, W) / (float)C;
    if (!active) return;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        int u = li + j * W;
        if (u < units) {
            bf16 *dxp = dx + r * C + u * VEC;
            Pack<bf16, VEC> dv = ld_vec<VEC>(dy + r * C + u * VEC), wv = ld_vec<VEC>(w + u * VEC),
                            o, old;
            if (accumulate) old = ld_vec<VEC>(dxp);
#pragma unroll
            for (int k = 0; k < VEC; k++) {
                float xh = (bf2f(xv[j].v[k]) - mu) * rs;
                float v = rs * (bf2f(dv.v[k]) * bf2f(wv.v[k]) - sg - xh * sgx);
                o.v[k] = f2bf(accumulate ? bf2f(old.v[k]) + v : v);
            }
            st_vec<VEC>(dxp, o);
        }
    }
}

// LayerNorm's dw and db per chunk of rows: column c of chunk blockIdx.y sums dy xh into
// part[chunk][C] and dy into part[chunks + chunk][C] (dw_reduce_kernel adds the chunks).
__global__ void layernorm_bwd_param_kernel(float *part, const bf16 *dy, const bf16 *x,
                                           const float *mean, const float *rstd, int64_t N, int C,
                                           int64_t per_chunk) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    int64_t r0 = (int64_t)blockIdx.y * per_chunk, r1 = r0 + per_chunk < N ? r0 + per_chunk : N;
    float pw = 0.f, pb = 0.f;
    for (int64_t r = r0; r < r1; r++) {
        float d = bf2f(dy[r * C + c]);
        pw += d * (bf2f(x[r * C + c]) - mean[r]) * rstd[r];
        pb += d;
    }
    part[(int64_t)blockIdx.y * C + c] = pw;
    part[((int64_t)gridDim.y + blockIdx.y) * C + c] = pb;
}

// Lanes per row W, vector width and vectors per lane NV (powers of two) for rows of C.
struct Shape {
    int vec, units, W, nv;
};

Shape row_shape(const char *op, int C, std::initializer_list<const void *> ptrs) {
    if (C < 1 || C > MAX_C) rt_die("%s: rows of %d channels unsupported (1..%d)", op, C, MAX_C);
    bool vec = C % 8 == 0;
    for (const void *p : ptrs) vec = vec && (uintptr_t)p % 16 == 0;
    if (!vec && C > MAX_C / 2)
        rt_die("%s: rows of %d channels need C %% 8 == 0 and 16-byte aligned rows", op, C);
    Shape s;
    s.vec = vec ? 8 : 1;
    s.units = C / s.vec;
    s.W = 1;
    while (s.W < 32 && 2 * s.W <= s.units) s.W *= 2;
    int steps = (s.units + s.W - 1) / s.W;
    s.nv = 1;
    while (s.nv < steps) s.nv *= 2;
    return s;
}

template <int X> using IC = std::integral_constant<int, X>;

// Calls f(IC<VEC>, IC<NV>) for the shape (VEC 8: NV <= 8 covers MAX_C; VEC 1: NV <= 32).
template <class F> void dispatch(const Shape &s, F &&f) {
    if (s.vec == 8) {
        switch (s.nv) {
        case 1: return f(IC<8>(), IC<1>());
        case 2: return f(IC<8>(), IC<2>());
        case 4: return f(IC<8>(), IC<4>());
        case 8: return f(IC<8>(), IC<8>());
        }
    } else {
        switch (s.nv) {
        case 1: return f(IC<1>(), IC<1>());
        case 2: return f(IC<1>(), IC<2>());
        case 4: return f(IC<1>(), IC<4>());
        case 8: return f(IC<1>(), IC<8>());
        case 16: return f(IC<1>(), IC<16>());
        case 32: return f(IC<1>(), IC<32>());
        }
    }
    rt_die("norm: no kernel for %d vectors of %d per lane", s.nv, s.vec);
}

// Launches a kernel of W lanes per row over `rows` rows of C channels:
// launch(IC<VEC>, IC<NV>, blocks, W) for the rows' shape.
template <class F>
void launch_rows(const char *op, int64_t rows, int C, std::initializer_list<const void *> ptrs,
                 F &&launch) {
    if (rows <= 0) return;
    if (rows * 32 / THREADS >= INT32_MAX) rt_die("%s: %lld rows unsupported", op, (long long)rows);
    Shape s = row_shape(op, C, ptrs);
    dispatch(s, [&](auto V, auto NV) { launch(V, NV, (unsigned)cdiv(rows * s.W, THREADS), s.W); });
    CUDA_LAUNCHED();
}

// Blocks per weight group for one wave of `kernel` (threads, smem) split evenly over the Gw
// groups, no more than T rows need at `rows` rows per block and sweep.
template <class Kernel>
int64_t wave_blocks_per_group(Kernel *kernel, int threads, size_t smem, int Gw, int64_t T,
                              int64_t rows) {
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    int64_t want = cdiv((int64_t)cuda_sm_count() * (per_sm > 0 ? per_sm : 1), Gw);
    int64_t need = cdiv(T, rows);
    return want < need ? want : need;
}

// An RMSNorm backward: T rows of each of Gw weight groups (rows t * Gw + g) of C channels.
struct RmsnormBwd {
    bf16 *dx;
    float *dw;
    const bf16 *dy, *x, *w;
    const float *rstd;
    int64_t T;
    int Gw, C, accumulate;
};

// rmsnorm_bwd:v2 for rows of 16-byte vectors (s.vec == 8): a lane's rows one at a time from
// 2 vectors of each up (C >= 512 at 32 lanes a row), else 2 at a time.
void rmsnorm_bwd_v2(const Shape &s, const RmsnormBwd &a) {
    dispatch(s, [&](auto V, auto NV) {
        if constexpr (decltype(V)::value == 8) {
            constexpr int nv = decltype(NV)::value, R = nv >= 2 ? 1 : 2;
            auto kernel = rmsnorm_bwd_v2_kernel<nv, R>;
            size_t smem = 2 * sizeof(float) * (size_t)a.C;
            int64_t rows = (int64_t)(THREADS / 32) * (32 / s.W) * R;
            int nbg = (int)wave_blocks_per_group(kernel, THREADS, smem, a.Gw, a.T, rows);
            int cols = a.Gw * a.C; // part [nbg][Gw * C]: block bi * Gw + g in row bi
            float *part = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * (size_t)nbg * cols);
            kernel<<<(unsigned)(nbg * a.Gw), THREADS, smem, cuda_stream()>>>(
                a.dx, part, a.dy, a.x, a.w, a.rstd, a.T, a.Gw, a.C, s.W, a.accumulate);
            CUDA_LAUNCHED();
            cuda_colsum_add(a.dw, part, nbg, cols);
        }
    });
}

// Whether normgate:fused runs a forward of rows of shape s (normgate_shape): the variant chosen,
// rows of 16-byte vectors (C % 8 == 0, x, gp, r and w 16-byte aligned), at most NG_MAX_NV a lane.
bool normgate_fused(const Shape &s) {
    return kernel_variant(KV_NORMGATE) == 1 && s.vec == 8 && s.nv <= NG_MAX_NV;
}

Shape normgate_shape(const RmsnormGateArgs *a) {
    return row_shape("rmsnorm_gate", a->C, {a->x, a->gp, a->r, a->w});
}

void rmsnorm_gate_fwd_fused(const RmsnormGateArgs *a, const Shape &s) {
    int64_t rows = a->N * a->G;
    if (rows * 32 / THREADS >= INT32_MAX)
        rt_die("rmsnorm_gate_fwd: %lld rows unsupported", (long long)rows);
    dispatch(s, [&](auto V, auto NV) {
        if constexpr (decltype(V)::value == 8 && decltype(NV)::value <= NG_MAX_NV)
            rmsnorm_gate_fwd_kernel<decltype(NV)::value>
                <<<(unsigned)cdiv(rows * s.W, THREADS), THREADS, 0, cuda_stream()>>>(
                    (bf16 *)a->r, (float *)a->rstd, (const bf16 *)a->x, (const bf16 *)a->w,
                    (const bf16 *)a->gp, rows, a->G, a->C, s.W, a->w_per_group, a->act,
                    (float)a->eps);
    });
    CUDA_LAUNCHED();
}

// A lane's rows one at a time from 2 vectors of each up, else 2 at a time (rmsnorm_bwd_v2's).
void rmsnorm_gate_bwd_fused(const RmsnormGateGrads *g, const Shape &s) {
    const RmsnormGateArgs *a = &g->a;
    int Gw = a->w_per_group ? a->G : 1;
    NormGateBwd k = {.dx = (bf16 *)g->dx,
                     .dgp = (bf16 *)g->dgp,
                     .dr = (const bf16 *)g->dr,
                     .x = (const bf16 *)a->x,
                     .gp = (const bf16 *)a->gp,
                     .w = (const bf16 *)a->w,
                     .rstd = (const float *)a->rstd,
                     .T = a->N * a->G / Gw,
                     .Gw = Gw,
                     .C = a->C,
                     .W = s.W,
                     .act = a->act};
    dispatch(s, [&](auto V, auto NV) {
        if constexpr (decltype(V)::value == 8 && decltype(NV)::value <= NG_MAX_NV) {
            constexpr int nv = decltype(NV)::value, R = nv >= 2 ? 1 : 2;
            auto kernel = rmsnorm_gate_bwd_kernel<nv, R>;
            size_t smem = 2 * sizeof(float) * (size_t)k.C;
            int64_t rows = (int64_t)(THREADS / 32) * (32 / s.W) * R;
            int nbg = (int)wave_blocks_per_group(kernel, THREADS, smem, Gw, k.T, rows);
            int cols = Gw * k.C; // part [nbg][Gw * C]: block bi * Gw + g in row bi
            float *part = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * (size_t)nbg * cols);
            kernel<<<(unsigned)(nbg * Gw), THREADS, smem, cuda_stream()>>>(k, part);
            CUDA_LAUNCHED();
            cuda_colsum_add((float *)g->dw, part, nbg, cols);
        }
    });
}

} // namespace

void cuda_rmsnorm_fwd(void *y, void *rstd, const void *x, const void *w, int64_t N, int G, int C,
                      int w_per_group, double eps) {
    int64_t rows = N * G;
    launch_rows("rmsnorm_fwd", rows, C, {y, x, w}, [&](auto V, auto NV, unsigned nb, int W) {
        norm_fwd_kernel<decltype(V)::value, decltype(NV)::value, true>
            <<<nb, THREADS, 0, cuda_stream()>>>((bf16 *)y, (float *)rstd, (const bf16 *)x,
                                                (const bf16 *)w, rows, G, C, W, w_per_group,
                                                (float)eps);
    });
}

void cuda_add_rmsnorm_fwd(void *h, void *y, void *rstd, const void *a, const void *b, const void *w,
                          int64_t N, int C, double eps) {
    launch_rows("add_rmsnorm_fwd", N, C, {h, y, a, b, w}, [&](auto V, auto NV, unsigned nb, int W) {
        norm_fwd_kernel<decltype(V)::value, decltype(NV)::value, true, true>
            <<<nb, THREADS, 0, cuda_stream()>>>((bf16 *)y, (float *)rstd, (const bf16 *)a,
                                                (const bf16 *)w, N, 1, C, W, 0, (float)eps,
                                                (bf16 *)h, (const bf16 *)b);
    });
}

void cuda_rmsnorm_bwd(void *dx, void *dw, const void *dy, const void *x, const void *w,
                      const void *rstd, int64_t N, int G, int C, int w_per_group, int accumulate) {
    int64_t rows = N * G;
    if (rows <= 0) return;
    Shape s = row_shape("rmsnorm_bwd", C, {dx, dy, x, w});
    int Gw = w_per_group ? G : 1;
    int64_t T = rows / Gw;
    if (kernel_variant(KV_RMSNORM_BWD) == 1 && s.vec == 8) // v2 (16-byte rows only)
        return rmsnorm_bwd_v2(s, {.dx = (bf16 *)dx,
                                  .dw = (float *)dw,
                                  .dy = (const bf16 *)dy,
                                  .x = (const bf16 *)x,
                                  .w = (const bf16 *)w,
                                  .rstd = (const float *)rstd,
                                  .T = T,
                                  .Gw = Gw,
                                  .C = C,
                                  .accumulate = accumulate});
    int nwarps = C > 1024 ? 4 : 8, threads = 32 * nwarps; // shared [warps][C] <= 32 KB
    size_t smem = sizeof(float) * (size_t)nwarps * (size_t)C;
    int nbg = 0;
    float *part = nullptr;
    dispatch(s, [&](auto V, auto NV) {
        auto kernel = rmsnorm_bwd_kernel<decltype(V)::value, decltype(NV)::value>;
        // one wave of blocks, split evenly over the weight groups, no more than the rows need
        nbg =
            (int)wave_blocks_per_group(kernel, threads, smem, Gw, T, (int64_t)nwarps * (32 / s.W));
        part =
            (float *)cuda_scratch(SCRATCH_A, sizeof(float) * (size_t)nbg * (size_t)Gw * (size_t)C);
        kernel<<<(unsigned)(nbg * Gw), threads, smem, cuda_stream()>>>(
            (bf16 *)dx, part, (const bf16 *)dy, (const bf16 *)x, (const bf16 *)w,
            (const float *)rstd, T, Gw, C, s.W, accumulate);
    });
    CUDA_LAUNCHED();
    dw_reduce_kernel<<<(unsigned)cdiv((int64_t)Gw * C, THREADS), THREADS, 0, cuda_stream()>>>(
        (float *)dw, part, nbg, Gw, C);
    CUDA_LAUNCHED();
}

void cuda_layernorm_fwd(void *y, void *mean, void *rstd, const void *x, const void *w,
                        const void *b, int64_t N, int C, double eps) {
    launch_rows("layernorm_fwd", N, C, {y, x, w, b}, [&](auto V, auto NV, unsigned nb, int W) {
        layernorm_fwd_kernel<decltype(V)::value, decltype(NV)::value>
            <<<nb, THREADS, 0, cuda_stream()>>>((bf16 *)y, (float *)mean, (float *)rstd,
                                                (const bf16 *)x, (const bf16 *)w, (const bf16 *)b,
                                                N, C, W, (float)eps);
    });
}

void cuda_layernorm_bwd(void *dx, void *dw, void *db, const void *dy, const void *x, const void *w,
                        const void *mean, const void *rstd, int64_t N, int C, int accumulate) {
    if (N <= 0) return;
    launch_rows("layernorm_bwd", N, C, {dx, dy, x, w}, [&](auto V, auto NV, unsigned nb, int W) {
        layernorm_bwd_dx_kernel<decltype(V)::value, decltype(NV)::value>
            <<<nb, THREADS, 0, cuda_stream()>>>((bf16 *)dx, (const bf16 *)dy, (const bf16 *)x,
                                                (const bf16 *)w, (const float *)mean,
                                                (const float *)rstd, N, C, W, accumulate);
    });
    int64_t chunks = cdiv(N, (int64_t)64);
    if (chunks > 1024) chunks = 1024;
    int64_t per_chunk = cdiv(N, chunks);
    chunks = cdiv(N, per_chunk);
    float *part = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * 2 * (size_t)chunks * (size_t)C);
    dim3 grid((unsigned)cdiv((int64_t)C, THREADS), (unsigned)chunks);
    layernorm_bwd_param_kernel<<<grid, THREADS, 0, cuda_stream()>>>(
        part, (const bf16 *)dy, (const bf16 *)x, (const float *)mean, (const float *)rstd, N, C,
        per_chunk);
    CUDA_LAUNCHED();
    unsigned rb = (unsigned)cdiv((int64_t)C, THREADS);
    dw_reduce_kernel<<<rb, THREADS, 0, cuda_stream()>>>((float *)dw, part, (int)chunks, 1, C);
    CUDA_LAUNCHED();
    dw_reduce_kernel<<<rb, THREADS, 0, cuda_stream()>>>((float *)db, part + chunks * C, (int)chunks,
                                                        1, C);
    CUDA_LAUNCHED();
}

void cuda_l2norm_fwd(void *y, void *rnorm, const void *x, int64_t N, int G, int D, double eps) {
    int64_t rows = N * G;
    launch_rows("l2norm_fwd", rows, D, {y, x}, [&](auto V, auto NV, unsigned nb, int W) {
        norm_fwd_kernel<decltype(V)::value, decltype(NV)::value, false>
            <<<nb, THREADS, 0, cuda_stream()>>>((bf16 *)y, (float *)rnorm, (const bf16 *)x, nullptr,
                                                rows, G, D, W, 0, (float)eps);
    });
}

void cuda_l2norm_bwd(void *dx, const void *dy, const void *y, const void *rnorm, int64_t N, int G,
                     int D, int accumulate) {
    int64_t rows = N * G;
    launch_rows("l2norm_bwd", rows, D, {dx, dy, y}, [&](auto V, auto NV, unsigned nb, int W) {
        l2norm_bwd_kernel<decltype(V)::value, decltype(NV)::value>
            <<<nb, THREADS, 0, cuda_stream()>>>((bf16 *)dx, (const bf16 *)dy, (const bf16 *)y,
                                                (const float *)rnorm, rows, D, W, accumulate);
    });
}

// The readout's norm and gate (RmsnormGateArgs). Default (normgate:pair): the verified
// rmsnorm_fwd writing on, then gate_mul_fwd; normgate:fused: one kernel writing r and rstd only.
void cuda_rmsnorm_gate_fwd(const RmsnormGateArgs *a) {
    check_gate_act(a->act, "rmsnorm_gate_fwd");
    if (a->N * a->G <= 0) return;
    Shape s = normgate_shape(a);
    if (normgate_fused(s)) return rmsnorm_gate_fwd_fused(a, s);
    cuda_rmsnorm_fwd(a->on, a->rstd, a->x, a->w, a->N, a->G, a->C, a->w_per_group, a->eps);
    cuda_gate_mul_fwd(a->r, a->on, a->gp, a->N * a->G * a->C, a->act);
}

// Default: gate_mul_bwd into don, then rmsnorm_bwd of it. normgate:fused: one kernel where its
// forward ran fused and dr, dx, dgp are 16-byte aligned too; where only the forward could, on
// (which it did not write) is recomputed first by rmsnorm_fwd (its rstd into scratch), and the
// pair runs.
void cuda_rmsnorm_gate_bwd(const RmsnormGateGrads *g) {
    const RmsnormGateArgs *a = &g->a;
    check_gate_act(a->act, "rmsnorm_gate_bwd");
    int64_t rows = a->N * a->G, n = rows * a->C;
    if (rows <= 0) return;
    Shape s = normgate_shape(a);
    if (normgate_fused(s)) {
        bool aligned = true;
        for (const void *p : std::initializer_list<const void *>{g->dr, g->dx, g->dgp})
            aligned = aligned && (uintptr_t)p % 16 == 0;
        if (aligned) return rmsnorm_gate_bwd_fused(g, s);
        void *rstd = cuda_scratch(SCRATCH_B, sizeof(float) * (size_t)rows);
        cuda_rmsnorm_fwd(a->on, rstd, a->x, a->w, a->N, a->G, a->C, a->w_per_group, a->eps);
    }
    cuda_gate_mul_bwd(g->don, g->dgp, g->dr, a->on, a->gp, n, a->act);
    cuda_rmsnorm_bwd(g->dx, g->dw, g->don, a->x, a->w, a->rstd, a->N, a->G, a->C, a->w_per_group,
                     0);
}
