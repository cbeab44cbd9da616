// FoX forgetting attention (docs/models.md §fox) at FlashAttention-2 scale: the fox_fwd and
// fox_bwd variants after v1 (src/device/kernel_variants.c). Against fox.cu's verified kernels:
// - c, the cumulative sum of log f over each segment in log2 units, is summed once per call
//   (fox_logf_cumsum, head-major [H][N] so that one head's values are contiguous) and copied
//   into shared memory beside each K/V or Q/dO tile by cp.async; in fox.cu every block sums
//   log f itself, warp 0 with plain loads before a barrier. The scores take differences
//   c_i - c_j of segment-wide sums, formed before anything else is added: their fp32 rounding
//   (2^-24 |c|, 2e-4 at |c| = 3000, a thousand tokens of log f = -2) stays below the bf16
//   rounding of P.
// - The forward takes 128 queries a block (two chunks, aligned to the segment start) with WM
//   rows a warp: at 32, each K and V fragment read from shared memory serves two 16-row tiles.
//   Key tiles of BN = 64 or 128 go from the segment start up to the diagonal: the first holds
//   the segment's first key, which every row sees, so each row's running max is finite after
//   it and a warp may skip the tiles past its last row.
// - The backward is two passes without atomics: dQ (a block per 128 queries walking the key
//   tiles as the forward does; it also forms delta_i = dO_i . o_i and the row sums of dS), then
//   dK, dV (a block per BK keys, a warp per 16 keys, walking the query tiles from the diagonal
//   to the segment end) with the column sums of dS. Each pass writes only the tokens it owns:
//   fox.cu's fp32 dQ accumulator, its zeroing and its conversion pass are gone.
// A block of B tokens (B a multiple of CHUNK) starts at every (B / CHUNK)-th chunk of a
// segment; the grid has a block per chunk, and those at the other chunks return at once.
//
// Warp fragments follow the PTX ISA layout of mma.m16n8k16 (mma.cuh): lane = 4 g + t holds C
// elements (g, 2t..2t+1) and (g+8, 2t..2t+1) of each 16x8 tile.
#include "lib/chunks.cuh"
#include "lib/cuda_common.cuh"
#include "lib/mma.cuh"
#include "ops/fox_v2.h"
#include "ops/revcumsum.h"

namespace {

constexpr int BM = 2 * CHUNK; // queries a block in the forward and in the dQ pass

// The block of B tokens that starts at chunk c (len 0 where none starts there) and the bounds
// of its segment.
struct Block {
    int first, len, seg_first, seg_end;
};

template <int B>
__device__ __forceinline__ Block block_at(const int32_t *chunks, const int32_t *cu, int64_t c) {
    const Chunk ch = chunk_at(chunks, cu, c);
    const int sf = cu[ch.seg], se = cu[ch.seg + 1];
    const bool starts = (ch.first - sf) / CHUNK % (B / CHUNK) == 0;
    return {ch.first, starts ? min(B, se - ch.first) : 0, sf, se};
}

constexpr int CS_THREADS = 256, CS_E = 4;

// c[h N + t] = log2(e) * (sum of lf[u][h] over u from the start of t's segment to t): a block
// per (segment, head), CS_E consecutive tokens a thread, CS_THREADS * CS_E tokens a round.
__global__ void __launch_bounds__(CS_THREADS)
    fox_logf_cumsum(float *__restrict__ c, const float *__restrict__ lf,
                    const int32_t *__restrict__ cu, int N, int H) {
    __shared__ float wtot[CS_THREADS / 32];
    const int seg = blockIdx.x / H, h = blockIdx.x % H, lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5, end = cu[seg + 1];
    float run = 0.f; // the sum over the rounds before
    for (int t0 = cu[seg]; t0 < end; t0 += CS_THREADS * CS_E) {
        const int tt = t0 + CS_E * threadIdx.x;
        float x[CS_E];
#pragma unroll
        for (int e = 0; e < CS_E; e++) x[e] = tt + e < end ? lf[(int64_t)(tt + e) * H + h] : 0.f;
        const float tot = warp_prefix(x);
        if (lane == 0) wtot[warp] = tot;
        __syncthreads();
        float before = run;
#pragma unroll
        for (int w = 0; w < CS_THREADS / 32; w++) {
            if (w < warp) before += wtot[w];
            run += wtot[w];
        }
        __syncthreads(); // wtot is rewritten in the next round
#pragma unroll
        for (int e = 0; e < CS_E; e++)
            if (tt + e < end) c[(int64_t)h * N + tt + e] = (before + x[e]) * L2E;
    }
}

// c of a->logf in scratch slot C ([H][N] floats).
const float *logf_cumsum(const AttnArgs *a) {
    const Seqs *s = a->s;
    float *c = (float *)cuda_scratch(SCRATCH_C, sizeof(float) * (size_t)(s->ntok * a->H));
    fox_logf_cumsum<<<(unsigned)(s->nseg * a->H), CS_THREADS, 0, cuda_stream()>>>(
        c, (const float *)a->logf, s->dev_cu, (int)s->ntok, a->H);
    CUDA_LAUNCHED();
    return c;
}

// Zeroes a warp's MT x N accumulator tiles.
template <int MT, int N> __device__ __forceinline__ void zero_tiles(float (&x)[MT][N][4]) {
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int i = 0; i < N; i++) x[mt][i][0] = x[mt][i][1] = x[mt][i][2] = x[mt][i][3] = 0.f;
}

// Starts copying key tile i of block b (keys seg_first + i BN ..: K, V and, with GATE, their c
// from ch) into buffer buf of sK, sV, sKc: the forward's and the dQ pass's walk over the keys.
template <int D, int BN, bool GATE>
__device__ __forceinline__ void load_key_tile(bf16 *sK, bf16 *sV, float *sKc, const bf16 *k,
                                              const bf16 *v, const float *ch, const Block &b, int i,
                                              int buf, int64_t stride, int64_t head, int nt) {
    constexpr int LD = D + 8;
    const int k0 = b.seg_first + i * BN, n = min(BN, b.seg_end - k0);
    cp_async_tile<BN>(sK + buf * BN * LD, LD, k + k0 * stride + head, stride, n, D, nt);
    cp_async_tile<BN>(sV + buf * BN * LD, LD, v + k0 * stride + head, stride, n, D, nt);
    if (GATE) cp_async_column<BN>(sKc + buf * BN, ch + k0, 1, n, nt);
}

// S (+)= A B^T for a warp's MT 16-row tiles of A (rows r0.., a row-major [m][D] tile) and the N
// rows of B (a row-major [n][D] tile): each B fragment is loaded once for the MT tiles.
template <int D, int MT, int N>
__device__ __forceinline__ void qk_tiles(float (&sc)[MT][N / 8][4], const bf16 *A, int r0,
                                         const bf16 *B) {
    constexpr int LD = D + 8;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        uint32_t a[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) load_a(a[mt], A, LD, r0 + mt * 16, kk * 16);
#pragma unroll
        for (int np = 0; np < N / 16; np++) {
            uint32_t b[4];
            load_b(b, B, LD, np * 16, kk * 16);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                mma(sc[mt][2 * np], a[mt], b[0], b[1]);
                mma(sc[mt][2 * np + 1], a[mt], b[2], b[3]);
            }
        }
    }
}

// acc += X B for a warp's MT 16-row tiles of X held as accumulators x (16 x N each) and B a
// row-major [N][D] tile in shared memory: P V in the forward, dS K in the dQ pass.
template <int D, int MT, int N>
__device__ __forceinline__ void xv_tiles(float (&acc)[MT][D / 8][4], const float (&x)[MT][N / 8][4],
                                         const bf16 *B) {
    constexpr int LD = D + 8;
#pragma unroll
    for (int kk = 0; kk < N / 16; kk++) {
        uint32_t xa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) acc_to_a(xa[mt], x[mt][2 * kk], x[mt][2 * kk + 1]);
#pragma unroll
        for (int dp = 0; dp < D / 16; dp++) {
            uint32_t b[4];
            load_b_t(b, B, LD, kk * 16, dp * 16);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                mma(acc[mt][2 * dp], xa[mt], b[0], b[1]);
                mma(acc[mt][2 * dp + 1], xa[mt], b[2], b[3]);
            }
        }
    }
}

// A warp's MT x 16 rows of accumulators (scaled by mul) as bf16 rows of a shared tile.
template <int D, int MT>
__device__ __forceinline__ void rows_to_shared(bf16 *dst, int r0, const float (&acc)[MT][D / 8][4],
                                               float mul) {
    constexpr int LD = D + 8;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        const int ra = r0 + mt * 16 + g, rb = ra + 8;
#pragma unroll
        for (int i = 0; i < D / 8; i++) {
            const int col = i * 8 + 2 * t;
            *reinterpret_cast<uint32_t *>(dst + ra * LD + col) =
                pack_bf16(acc[mt][i][0] * mul, acc[mt][i][1] * mul);
            *reinterpret_cast<uint32_t *>(dst + rb * LD + col) =
                pack_bf16(acc[mt][i][2] * mul, acc[mt][i][3] * mul);
        }
    }
}

template <int D, int BN> constexpr size_t fwd_smem() {
    return (size_t)(BM + 4 * BN) * (D + 8) * sizeof(bf16) + (size_t)(BM + 2 * BN) * sizeof(float);
}

// Grid: nchunk * H, the last chunks (the longest rows) first. Shared: Q, two K and two V
// buffers (the next key tile loads while this one is used), the c of the queries and of each
// key buffer (unused without GATE).
template <int D, int BN, int WM, bool GATE>
__global__ void __launch_bounds__(BM / WM * 32)
    fox_fwd2_kernel(bf16 *__restrict__ o, float *__restrict__ lse, const bf16 *__restrict__ q,
                    const bf16 *__restrict__ k, const bf16 *__restrict__ v,
                    const float *__restrict__ c2, const int32_t *__restrict__ chunks,
                    const int32_t *__restrict__ cu, int nchunk, int N, int H, float sl2) {
    constexpr int NTH = BM / WM * 32, LD = D + 8, MT = WM / 16, NT = BN / 8;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem);
    bf16 *sK = sQ + BM * LD; // [2][BN][LD]
    bf16 *sV = sK + 2 * BN * LD;
    float *sQc = reinterpret_cast<float *>(sV + 2 * BN * LD);
    float *sKc = sQc + BM; // [2][BN]

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int h = blockIdx.x % H;
    const Block b = block_at<BM>(chunks, cu, nchunk - 1 - blockIdx.x / H);
    if (b.len == 0) return;
    const int q0 = b.first, ntile = (q0 + b.len - b.seg_first + BN - 1) / BN;
    const int64_t stride = (int64_t)H * D, head = (int64_t)h * D;
    const float *ch = GATE ? c2 + (int64_t)h * N : nullptr;
    cp_async_tile<BM>(sQ, LD, q + q0 * stride + head, stride, b.len, D, NTH);
    if (GATE) cp_async_column<BM>(sQc, ch + q0, 1, b.len, NTH);
    load_key_tile<D, BN, GATE>(sK, sV, sKc, k, v, ch, b, 0, 0, stride, head, NTH);
    cp_async_commit();

    const int w0 = warp * WM; // this warp's first row in the block
    float m[MT][2], l[MT][2]; // running max (log2 units), partial row sums of this thread
    float acc[MT][D / 8][4];
    zero_tiles(acc);
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.f;
    }

    for (int it = 0; it < ntile; it++) {
        const int buf = it & 1;
        if (it + 1 < ntile)
            load_key_tile<D, BN, GATE>(sK, sV, sKc, k, v, ch, b, it + 1, buf ^ 1, stride, head,
                                       NTH);
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();
        // the tile's first key relative to the block's first query: the warp works on the tile
        // if some key of it is at or before the warp's last row
        const int kq = b.seg_first + it * BN - q0;
        if (kq <= w0 + WM - 1) {
            const bf16 *cK = sK + buf * BN * LD, *cV = sV + buf * BN * LD;
            const float *cKc = sKc + buf * BN;
            float sc[MT][NT][4];
            zero_tiles(sc);
            qk_tiles<D, MT, BN>(sc, sQ, w0, cK);

            // log2-scaled scores with the forget bias, causal where a key follows a row (this
            // also masks keys past the segment end for every valid row); online softmax
            const bool masked = kq + BN - 1 > w0;
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                const int r0 = w0 + mt * 16 + g, r1 = r0 + 8;
                const float qc0 = GATE ? sQc[r0] : 0.f, qc1 = GATE ? sQc[r1] : 0.f;
                float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int j = nt * 8 + 2 * t + e;
                        float s0 = sc[mt][nt][e] * sl2, s1 = sc[mt][nt][2 + e] * sl2;
                        if constexpr (GATE) {
                            const float kc = cKc[j];
                            s0 += qc0 - kc;
                            s1 += qc1 - kc;
                        }
                        if (masked) {
                            if (kq + j > r0) s0 = -INFINITY;
                            if (kq + j > r1) s1 = -INFINITY;
                        }
                        sc[mt][nt][e] = s0;
                        sc[mt][nt][2 + e] = s1;
                        mx0 = fmaxf(mx0, s0);
                        mx1 = fmaxf(mx1, s1);
                    }
                }
                mx0 = fmaxf(mx0, __shfl_xor_sync(FULL_MASK, mx0, 1));
                mx0 = fmaxf(mx0, __shfl_xor_sync(FULL_MASK, mx0, 2));
                mx1 = fmaxf(mx1, __shfl_xor_sync(FULL_MASK, mx1, 1));
                mx1 = fmaxf(mx1, __shfl_xor_sync(FULL_MASK, mx1, 2));
                // finite: tile 0 holds the segment's first key, which every row sees
                const float mn0 = fmaxf(m[mt][0], mx0), mn1 = fmaxf(m[mt][1], mx1);
                const float al0 = exp2f(m[mt][0] - mn0), al1 = exp2f(m[mt][1] - mn1);
                m[mt][0] = mn0;
                m[mt][1] = mn1;
                float ls0 = 0.f, ls1 = 0.f;
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        sc[mt][nt][e] = exp2f(sc[mt][nt][e] - mn0);
                        sc[mt][nt][2 + e] = exp2f(sc[mt][nt][2 + e] - mn1);
                        ls0 += sc[mt][nt][e];
                        ls1 += sc[mt][nt][2 + e];
                    }
                }
                l[mt][0] = l[mt][0] * al0 + ls0;
                l[mt][1] = l[mt][1] * al1 + ls1;
#pragma unroll
                for (int i = 0; i < D / 8; i++) {
                    acc[mt][i][0] *= al0;
                    acc[mt][i][1] *= al0;
                    acc[mt][i][2] *= al1;
                    acc[mt][i][3] *= al1;
                }
            }
            xv_tiles<D, MT, BN>(acc, sc, cV); // O += P V
        }
        __syncthreads();
    }

    // lse, and o through this warp's rows of sQ (no longer read) for 16-byte stores
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        const int r0 = w0 + mt * 16 + g, r1 = r0 + 8;
        const float l0 = quad_sum(l[mt][0]), l1 = quad_sum(l[mt][1]);
        if (t == 0) {
            if (r0 < b.len) lse[(int64_t)(q0 + r0) * H + h] = (m[mt][0] + log2f(l0)) * LN2;
            if (r1 < b.len) lse[(int64_t)(q0 + r1) * H + h] = (m[mt][1] + log2f(l1)) * LN2;
        }
        const float inv0 = 1.f / l0, inv1 = 1.f / l1;
#pragma unroll
        for (int i = 0; i < D / 8; i++) {
            acc[mt][i][0] *= inv0;
            acc[mt][i][1] *= inv0;
            acc[mt][i][2] *= inv1;
            acc[mt][i][3] *= inv1;
        }
    }
    rows_to_shared<D, MT>(sQ, w0, acc, 1.f);
    __syncthreads();
    store_tile<BM, D>(o + q0 * stride + head, stride, sQ, LD, b.len, D, NTH);
}

template <int D, int BN> constexpr size_t dq_smem() {
    return (size_t)(2 * BM + 4 * BN) * (D + 8) * sizeof(bf16) +
           (size_t)(3 * BM + 2 * BN) * sizeof(float);
}

// The dQ pass. Grid: nchunk * H, the last chunks first; a block per 128 queries walks the key
// tiles as the forward does, recomputing P = exp(s - lse) and dP = dO V^T: dS = P o (dP -
// delta_i), dQ = scale dS K in registers, and the row sums of dS into dc (stored: the dK/dV
// pass subtracts the column sums after). delta_i = dO_i . o_i of its rows is formed here and
// written for the dK/dV pass. Shared: Q, dO, two K and two V buffers, per query c, lse and
// delta, per key buffer c.
template <int D, int BN, int WM, bool GATE>
__global__ void __launch_bounds__(BM / WM * 32, D > 64 ? 1 : 2)
    fox_dq_kernel(bf16 *__restrict__ dq, float *__restrict__ delta, float *__restrict__ dc,
                  const bf16 *__restrict__ q, const bf16 *__restrict__ k,
                  const bf16 *__restrict__ v, const bf16 *__restrict__ dout,
                  const bf16 *__restrict__ o, const float *__restrict__ c2,
                  const float *__restrict__ lse, const int32_t *__restrict__ chunks,
                  const int32_t *__restrict__ cu, int nchunk, int N, int H, float sl2,
                  float scale) {
    constexpr int NTH = BM / WM * 32, LD = D + 8, MT = WM / 16, NT = BN / 8;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem);
    bf16 *sdO = sQ + BM * LD;
    bf16 *sK = sdO + BM * LD; // [2][BN][LD]
    bf16 *sV = sK + 2 * BN * LD;
    float *sQc = reinterpret_cast<float *>(sV + 2 * BN * LD);
    float *sLse = sQc + BM, *sDel = sLse + BM;
    float *sKc = sDel + BM; // [2][BN]

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int h = blockIdx.x % H;
    const Block b = block_at<BM>(chunks, cu, nchunk - 1 - blockIdx.x / H);
    if (b.len == 0) return;
    const int q0 = b.first, ntile = (q0 + b.len - b.seg_first + BN - 1) / BN;
    const int64_t stride = (int64_t)H * D, head = (int64_t)h * D;
    const float *ch = GATE ? c2 + (int64_t)h * N : nullptr;
    cp_async_tile<BM>(sQ, LD, q + q0 * stride + head, stride, b.len, D, NTH);
    cp_async_tile<BM>(sdO, LD, dout + q0 * stride + head, stride, b.len, D, NTH);
    if (GATE) cp_async_column<BM>(sQc, ch + q0, 1, b.len, NTH);
    cp_async_column<BM>(sLse, lse + (int64_t)q0 * H + h, H, b.len, NTH);
    load_key_tile<D, BN, GATE>(sK, sV, sKc, k, v, ch, b, 0, 0, stride, head, NTH);
    cp_async_commit();

    const int w0 = warp * WM;
    // delta_i = dO_i . o_i of this warp's rows from global memory (while the tiles load)
#pragma unroll
    for (int i = 0; i < WM; i++) {
        const int r = w0 + i;
        float s = 0.f;
        if (r < b.len) {
            const int64_t at = (q0 + r) * stride + head;
            for (int d = 2 * lane; d < D; d += 64) {
                const float2 x =
                    __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(dout + at + d));
                const float2 y =
                    __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(o + at + d));
                s += x.x * y.x + x.y * y.y;
            }
        }
        s = warp_sum(s);
        if (lane == 0) {
            sDel[r] = s;
            if (r < b.len) delta[(int64_t)(q0 + r) * H + h] = s;
        }
    }

    float dqa[MT][D / 8][4],
        dcs[MT][2] = {}; // dQ (unscaled), row sums of dS of this thread's columns
    zero_tiles(dqa);

    for (int it = 0; it < ntile; it++) {
        const int buf = it & 1;
        if (it + 1 < ntile)
            load_key_tile<D, BN, GATE>(sK, sV, sKc, k, v, ch, b, it + 1, buf ^ 1, stride, head,
                                       NTH);
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();
        const int kq = b.seg_first + it * BN - q0;
        if (kq <= w0 + WM - 1) {
            const bf16 *cK = sK + buf * BN * LD, *cV = sV + buf * BN * LD;
            const float *cKc = sKc + buf * BN;
            float sc[MT][NT][4], dp[MT][NT][4];
            zero_tiles(sc);
            zero_tiles(dp);
            qk_tiles<D, MT, BN>(sc, sQ, w0, cK);
            qk_tiles<D, MT, BN>(dp, sdO, w0, cV);

            // P = exp(s - lse) where the key is at or before the row and the row is in the
            // segment; dS = P o (dP - delta_i), kept in dp
            const bool masked = kq + BN - 1 > w0 || w0 + WM > b.len;
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                const int r0 = w0 + mt * 16 + g, r1 = r0 + 8;
                const float qc0 = GATE ? sQc[r0] : 0.f, qc1 = GATE ? sQc[r1] : 0.f;
                const float ls0 = sLse[r0] * L2E, ls1 = sLse[r1] * L2E;
                const float de0 = sDel[r0], de1 = sDel[r1];
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int j = nt * 8 + 2 * t + e;
                        float s0 = sc[mt][nt][e] * sl2, s1 = sc[mt][nt][2 + e] * sl2;
                        if constexpr (GATE) {
                            const float kc = cKc[j];
                            s0 += qc0 - kc;
                            s1 += qc1 - kc;
                        }
                        const bool v0 = !masked || (kq + j <= r0 && r0 < b.len);
                        const bool v1 = !masked || (kq + j <= r1 && r1 < b.len);
                        const float p0 = v0 ? exp2f(s0 - ls0) : 0.f;
                        const float p1 = v1 ? exp2f(s1 - ls1) : 0.f;
                        const float ds0 = p0 * (dp[mt][nt][e] - de0);
                        const float ds1 = p1 * (dp[mt][nt][2 + e] - de1);
                        dp[mt][nt][e] = ds0;
                        dp[mt][nt][2 + e] = ds1;
                        if constexpr (GATE) {
                            dcs[mt][0] += ds0;
                            dcs[mt][1] += ds1;
                        }
                    }
                }
            }
            xv_tiles<D, MT, BN>(dqa, dp, cK); // dQ += dS K
        }
        __syncthreads();
    }

    if constexpr (GATE) {
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            const int r0 = w0 + mt * 16 + g, r1 = r0 + 8;
            const float s0 = quad_sum(dcs[mt][0]), s1 = quad_sum(dcs[mt][1]);
            if (t == 0) {
                if (r0 < b.len) dc[(int64_t)(q0 + r0) * H + h] = s0;
                if (r1 < b.len) dc[(int64_t)(q0 + r1) * H + h] = s1;
            }
        }
    }
    rows_to_shared<D, MT>(sQ, w0, dqa, scale);
    __syncthreads();
    store_tile<BM, D>(dq + q0 * stride + head, stride, sQ, LD, b.len, D, NTH);
}

template <int D, int BK, int QT> constexpr size_t dkv_smem() {
    return (size_t)(2 * BK + 4 * QT) * (D + 8) * sizeof(bf16) +
           (size_t)(BK + 6 * QT) * sizeof(float);
}

// The dK/dV pass. Grid: nchunk * H, the first chunks (the most queries) first; a block per BK
// keys, warp w owning keys 16w..16w+15, walks the query tiles of QT rows from its first key to
// the segment end: S^T = K Q^T and dP^T = V dO^T (16 x QT a warp), P^T, dS^T, and dV += P^T
// dO, dK += dS^T Q in registers; the column sums of dS are subtracted from dc. Shared: K, V, the
// keys' c, two Q and two dO buffers with their queries' c, lse and delta.
template <int D, int BK, int QT, bool GATE>
__global__ void __launch_bounds__(BK / 16 * 32)
    fox_dkv_kernel(bf16 *__restrict__ dk, bf16 *__restrict__ dv, float *__restrict__ dc,
                   const bf16 *__restrict__ q, const bf16 *__restrict__ k,
                   const bf16 *__restrict__ v, const bf16 *__restrict__ dout,
                   const float *__restrict__ c2, const float *__restrict__ lse,
                   const float *__restrict__ delta, const int32_t *__restrict__ chunks,
                   const int32_t *__restrict__ cu, int N, int H, float sl2, float scale) {
    constexpr int NTH = BK / 16 * 32, LD = D + 8, NT = QT / 8;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *sK = reinterpret_cast<bf16 *>(smem);
    bf16 *sV = sK + BK * LD;
    bf16 *sQ = sV + BK * LD; // [2][QT][LD]
    bf16 *sdO = sQ + 2 * QT * LD;
    float *sKc = reinterpret_cast<float *>(sdO + 2 * QT * LD);
    float *sQc = sKc + BK; // [2][QT] each
    float *sLse = sQc + 2 * QT, *sDel = sLse + 2 * QT;

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int h = blockIdx.x % H;
    const Block b = block_at<BK>(chunks, cu, blockIdx.x / H);
    if (b.len == 0) return;
    const int k0 = b.first, nqt = (b.seg_end - k0 + QT - 1) / QT;
    const int64_t stride = (int64_t)H * D, head = (int64_t)h * D;
    const float *ch = GATE ? c2 + (int64_t)h * N : nullptr;
    auto load_queries = [&](int i, int buf) { // query tile i (queries k0 + i QT ..) into buf
        const int qs = k0 + i * QT, n = min(QT, b.seg_end - qs);
        cp_async_tile<QT>(sQ + buf * QT * LD, LD, q + qs * stride + head, stride, n, D, NTH);
        cp_async_tile<QT>(sdO + buf * QT * LD, LD, dout + qs * stride + head, stride, n, D, NTH);
        if (GATE) cp_async_column<QT>(sQc + buf * QT, ch + qs, 1, n, NTH);
        cp_async_column<QT>(sLse + buf * QT, lse + (int64_t)qs * H + h, H, n, NTH);
        cp_async_column<QT>(sDel + buf * QT, delta + (int64_t)qs * H + h, H, n, NTH);
    };
    cp_async_tile<BK>(sK, LD, k + k0 * stride + head, stride, b.len, D, NTH);
    cp_async_tile<BK>(sV, LD, v + k0 * stride + head, stride, b.len, D, NTH);
    if (GATE) cp_async_column<BK>(sKc, ch + k0, 1, b.len, NTH);
    load_queries(0, 0);
    cp_async_commit();

    const int kr0 = warp * 16 + g, kr1 = kr0 + 8; // this thread's two keys in the block
    float dva[1][D / 8][4], dka[1][D / 8][4];
    zero_tiles(dva);
    zero_tiles(dka);
    float dcs0 = 0.f, dcs1 = 0.f; // sums over queries of dS for the two keys

    for (int it = 0; it < nqt; it++) {
        const int buf = it & 1;
        if (it + 1 < nqt) load_queries(it + 1, buf ^ 1);
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();
        // the warp works on the tile if some query of it is at or after the warp's first key
        const int qk = it * QT; // the tile's first query relative to the block's first key
        if (qk + QT - 1 >= warp * 16) {
            const bf16 *cQ = sQ + buf * QT * LD, *cdO = sdO + buf * QT * LD;
            const float *cQc = sQc + buf * QT, *cLse = sLse + buf * QT, *cDel = sDel + buf * QT;
            float sc[1][NT][4], dp[1][NT][4];
            zero_tiles(sc);
            zero_tiles(dp);
            qk_tiles<D, 1, QT>(sc, sK, warp * 16, cQ);
            qk_tiles<D, 1, QT>(dp, sV, warp * 16, cdO);

            // P^T where the query is at or after the key and in the segment (this also drops
            // keys past the end), dS^T = P^T o (dP^T - delta_i)
            const float kc0 = GATE ? sKc[kr0] : 0.f, kc1 = GATE ? sKc[kr1] : 0.f;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int j = nt * 8 + 2 * t + e, qi = qk + j;
                    const bool ok = k0 + qi < b.seg_end;
                    const float qc = GATE ? cQc[j] : 0.f, ls = cLse[j] * L2E, de = cDel[j];
                    const float p0 =
                        ok && qi >= kr0 ? exp2f(sc[0][nt][e] * sl2 + (qc - kc0) - ls) : 0.f;
                    const float p1 =
                        ok && qi >= kr1 ? exp2f(sc[0][nt][2 + e] * sl2 + (qc - kc1) - ls) : 0.f;
                    const float ds0 = p0 * (dp[0][nt][e] - de), ds1 = p1 * (dp[0][nt][2 + e] - de);
                    sc[0][nt][e] = p0;
                    sc[0][nt][2 + e] = p1;
                    dp[0][nt][e] = ds0;
                    dp[0][nt][2 + e] = ds1;
                    if constexpr (GATE) {
                        dcs0 += ds0;
                        dcs1 += ds1;
                    }
                }
            }
            xv_tiles<D, 1, QT>(dva, sc, cdO); // dV += P^T dO
            xv_tiles<D, 1, QT>(dka, dp, cQ);  // dK += dS^T Q (scaled at the end)
        }
        __syncthreads();
    }

    if constexpr (GATE) {
        dcs0 = quad_sum(dcs0);
        dcs1 = quad_sum(dcs1);
        if (t == 0) { // this block owns its keys: the dQ pass has stored their row sums
            if (kr0 < b.len) dc[(int64_t)(k0 + kr0) * H + h] -= dcs0;
            if (kr1 < b.len) dc[(int64_t)(k0 + kr1) * H + h] -= dcs1;
        }
    }
    // dK (scaled) and dV through sK, sV (no longer read)
    rows_to_shared<D, 1>(sK, warp * 16, dka, scale);
    rows_to_shared<D, 1>(sV, warp * 16, dva, 1.f);
    __syncthreads();
    store_tile<BK, D>(dk + k0 * stride + head, stride, sK, LD, b.len, D, NTH);
    store_tile<BK, D>(dv + k0 * stride + head, stride, sV, LD, b.len, D, NTH);
}

// fox_fwd variant 1 (m128n64): 64-key tiles, 32 rows a warp (4 warps; 16 rows, 8 warps, at D =
// 128, where O alone would take 128 registers); 2 (m128n128): 128-key tiles, 16 rows a warp
// (with 32, the scores and O spill at D = 64); 3 (m128w8): 64-key tiles, 16 rows a warp.
template <int D, int BN, int WM, bool GATE>
void launch_fwd(const AttnArgs *a, const float *c2, float sl2) {
    constexpr size_t smem = fwd_smem<D, BN>();
    // the shared-memory opt-in, at the first launch
    static const bool ready =
        (cuda_allow_smem(fox_fwd2_kernel<D, BN, WM, GATE>, smem, "fox_fwd"), true);
    (void)ready;
    const Seqs *s = a->s;
    fox_fwd2_kernel<D, BN, WM, GATE><<<(int)s->nchunk * a->H, BM / WM * 32, smem, cuda_stream()>>>(
        (bf16 *)a->o, (float *)a->lse, (const bf16 *)a->q, (const bf16 *)a->k, (const bf16 *)a->v,
        c2, s->dev_chunk, s->dev_cu, (int)s->nchunk, (int)s->ntok, a->H, sl2);
    CUDA_LAUNCHED();
}

template <int D, bool GATE>
void fwd_variant(int variant, const AttnArgs *a, const float *c2, float sl2) {
    constexpr int WM = D == 128 ? 16 : 32;
    switch (variant) {
    case 1: launch_fwd<D, 64, WM, GATE>(a, c2, sl2); break;
    case 2: launch_fwd<D, 128, 16, GATE>(a, c2, sl2); break;
    default: launch_fwd<D, 64, 16, GATE>(a, c2, sl2); break;
    }
}

template <bool GATE> void fwd_for_d(int variant, const AttnArgs *a, const float *c2, float sl2) {
    switch (a->D) {
    case 32: fwd_variant<32, GATE>(variant, a, c2, sl2); break;
    case 64: fwd_variant<64, GATE>(variant, a, c2, sl2); break;
    default: fwd_variant<128, GATE>(variant, a, c2, sl2); break;
    }
}

// The two backward passes: dQ with 64-key tiles and 16 rows a warp (8 warps), then dK/dV with
// BK keys a block (fox_bwd variant 1, split: 128, 8 warps; 2, split64: 64, 4 warps) and query
// tiles of 64, or 16 at D = 128 (where dK and dV alone hold 128 registers).
template <int D, int BK, bool GATE>
void launch_bwd(const AttnGrads *gr, const float *c2, float *delta, float sl2, float scale) {
    constexpr int QT = D == 128 ? 16 : 64, WM = 16, BN = 64;
    constexpr size_t smem_q = dq_smem<D, BN>(), smem_kv = dkv_smem<D, BK, QT>();
    static const bool ready =
        (cuda_allow_smem(fox_dq_kernel<D, BN, WM, GATE>, smem_q, "fox_bwd"),
         cuda_allow_smem(fox_dkv_kernel<D, BK, QT, GATE>, smem_kv, "fox_bwd"), true);
    (void)ready;
    const AttnArgs *a = &gr->a;
    const Seqs *s = a->s;
    const int grid = (int)s->nchunk * a->H, N = (int)s->ntok;
    fox_dq_kernel<D, BN, WM, GATE><<<grid, BM / WM * 32, smem_q, cuda_stream()>>>(
        (bf16 *)gr->dq, delta, (float *)gr->dlogf, (const bf16 *)a->q, (const bf16 *)a->k,
        (const bf16 *)a->v, (const bf16 *)gr->dout, (const bf16 *)a->o, c2, (const float *)a->lse,
        s->dev_chunk, s->dev_cu, (int)s->nchunk, N, a->H, sl2, scale);
    CUDA_LAUNCHED();
    fox_dkv_kernel<D, BK, QT, GATE><<<grid, BK / 16 * 32, smem_kv, cuda_stream()>>>(
        (bf16 *)gr->dk, (bf16 *)gr->dv, (float *)gr->dlogf, (const bf16 *)a->q, (const bf16 *)a->k,
        (const bf16 *)a->v, (const bf16 *)gr->dout, c2, (const float *)a->lse, delta, s->dev_chunk,
        s->dev_cu, N, a->H, sl2, scale);
    CUDA_LAUNCHED();
}

template <int D, bool GATE>
void bwd_variant(int variant, const AttnGrads *gr, const float *c2, float *delta, float sl2,
                 float scale) {
    if (variant == 1)
        launch_bwd<D, 128, GATE>(gr, c2, delta, sl2, scale);
    else
        launch_bwd<D, 64, GATE>(gr, c2, delta, sl2, scale);
}

template <bool GATE>
void bwd_for_d(int variant, const AttnGrads *gr, const float *c2, float *delta, float sl2,
               float scale) {
    switch (gr->a.D) {
    case 32: bwd_variant<32, GATE>(variant, gr, c2, delta, sl2, scale); break;
    case 64: bwd_variant<64, GATE>(variant, gr, c2, delta, sl2, scale); break;
    default: bwd_variant<128, GATE>(variant, gr, c2, delta, sl2, scale); break;
    }
}

} // namespace

void fox_fwd_v2(const AttnArgs *a, int variant) {
    const float sl2 = (float)(a->scale * 1.4426950408889634);
    if (a->logf)
        fwd_for_d<true>(variant, a, logf_cumsum(a), sl2);
    else
        fwd_for_d<false>(variant, a, nullptr, sl2);
}

void fox_bwd_v2(const AttnGrads *gr, int variant) {
    const AttnArgs *a = &gr->a;
    const Seqs *s = a->s;
    float *delta = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * (size_t)(s->ntok * a->H));
    const float sl2 = (float)(a->scale * 1.4426950408889634), sc = (float)a->scale;
    if (a->logf) {
        bwd_for_d<true>(variant, gr, logf_cumsum(a), delta, sl2, sc);
        // d log f_t = sum over i >= t of dc_i within the segment (docs/models.md §fox)
        cuda_revcumsum(gr->dlogf, gr->dlogf, s, a->H);
    } else {
        bwd_for_d<false>(variant, gr, nullptr, delta, sl2, sc);
    }
}
