// FoX forgetting attention (docs/models.md §fox), FlashAttention-2 style on bf16 tensor cores.
//
// s_ij = scale q_i.k_j + c_i - c_j for j <= i in the same segment, c the cumulative sum of
// log f over the segment. Only differences of c enter, so each CTA sums log f itself,
// relative to a point of its own (the start of its query block in the forward, of its key
// block in the backward) while it walks over the blocks: no separate cumsum pass.
//
// Forward: one CTA per (64-query block, head) = one chunk of Seqs; it visits the key blocks
// from the diagonal down to the segment start (so the running sum of log f goes backwards
// with it), Q K^T and P V with mma.sync m16n8k16 (bf16 in, fp32 accumulate), bias and
// causal mask in fp32, online softmax in base 2; writes o and lse_i = log sum_j exp(s_ij).
// Backward: delta_i = dO_i . o_i in a pre-pass; one CTA per (64-key block, head) walks the
// query tiles from the diagonal to the segment end, recomputes P = exp(s - lse) and
// accumulates dK, dV in registers; dQ goes to an fp32 buffer with atomics. dc_i (rows of
// dS) minus dc_j (columns) is summed into dlogf, whose segment-wise reverse cumulative sum
// (cuda_revcumsum, in place) is d log f.
//
// Without a forget gate (logf NULL: the Transformer, docs/models.md §transformer) the kernels are
// instantiated with GATE = false: no log f loads, no c sums, no dc and no revcumsum; the
// scores are scale q_i.k_j alone.
//
// Warp fragments follow the PTX ISA layout of mma.m16n8k16 (mma.cuh): lane = 4 g + t holds C
// elements (g, 2t..2t+1) and (g+8, 2t..2t+1) of each 16x8 tile.
#include "backend/cuda_ops.h"
#include "device/kernel_variants.h"
#include "lib/chunks.cuh"
#include "lib/cuda_common.cuh"
#include "lib/mma.cuh"
#include "ops/fox_v2.h"
#include "ops/revcumsum.h"
#include "util/error.h"

namespace {

constexpr int THREADS = 128; // four warps of 16 rows each

template <int D> constexpr size_t fwd_smem() {
    return (size_t)5 * CHUNK * (D + 8) * sizeof(bf16) + 2 * CHUNK * sizeof(float);
}

// Grid: nchunk * H CTAs, the last chunks (the longest rows) first. Shared: Q, two K and two
// V buffers (the next key block loads while this one is used), the c values of the query
// rows and of the current keys (log2 units, relative to c at q0 - 1; unused without GATE).
template <int D, bool GATE>
__global__ void __launch_bounds__(THREADS, D > 64 ? 2 : 4)
    fox_fwd_kernel(bf16 *__restrict__ o, float *__restrict__ lse, const bf16 *__restrict__ q,
                   const bf16 *__restrict__ k, const bf16 *__restrict__ v,
                   const float *__restrict__ lf, const int32_t *__restrict__ chunks,
                   const int32_t *__restrict__ cu, int nchunk, int H, float sl2) {
    constexpr int LD = D + 8, KT = D / 16;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *sQ = reinterpret_cast<bf16 *>(smem);
    bf16 *sK = sQ + CHUNK * LD;
    bf16 *sV = sK + 2 * CHUNK * LD;
    float *sQc = reinterpret_cast<float *>(sV + 2 * CHUNK * LD);
    float *sKc = sQc + CHUNK;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int h = blockIdx.x % H, c = nchunk - 1 - blockIdx.x / H;
    const Chunk ch = chunk_at(chunks, cu, c);
    const int q0 = ch.first, qlen = ch.len;
    const int nkb = (q0 - cu[ch.seg]) / CHUNK + 1; // key blocks from the segment start to q0
    const int64_t stride = (int64_t)H * D, head = (int64_t)h * D;

    cp_async_tile<CHUNK>(sQ, LD, q + q0 * stride + head, stride, qlen, D, THREADS);
    cp_async_tile<CHUNK>(sK, LD, k + q0 * stride + head, stride, qlen, D, THREADS);
    cp_async_tile<CHUNK>(sV, LD, v + q0 * stride + head, stride, qlen, D, THREADS);
    cp_async_commit();

    // c relative to c_(q0-1): prefix sums inside the diagonal block; warp 0 keeps in `run`
    // the sum of log f from the start of the last key block visited to q0 - 1.
    float run = 0.f;
    if (GATE && warp == 0) {
        float x[2];
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int j = 2 * lane + e;
            x[e] = j < qlen ? lf[(int64_t)(q0 + j) * H + h] : 0.f;
        }
        warp_prefix(x);
#pragma unroll
        for (int e = 0; e < 2; e++) sQc[2 * lane + e] = sKc[2 * lane + e] = x[e] * L2E;
    }

    const int r0 = warp * 16 + g, r1 = r0 + 8; // this thread's two query rows in the block
    float m0 = -INFINITY, m1 = -INFINITY;      // running max (log2 units)
    float l0 = 0.f, l1 = 0.f;                  // partial row sums of this thread's columns
    float acc[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;

    for (int it = 0; it < nkb; it++) {
        const int buf = it & 1;
        const bf16 *cK = sK + buf * CHUNK * LD, *cV = sV + buf * CHUNK * LD;
        if (it + 1 < nkb) { // the block below: entirely inside the segment
            const int64_t kn = q0 - (it + 1) * CHUNK;
            cp_async_tile<CHUNK>(sK + (buf ^ 1) * CHUNK * LD, LD, k + kn * stride + head, stride,
                                 CHUNK, D, THREADS);
            cp_async_tile<CHUNK>(sV + (buf ^ 1) * CHUNK * LD, LD, v + kn * stride + head, stride,
                                 CHUNK, D, THREADS);
        }
        cp_async_commit();
        if (GATE && it > 0 && warp == 0) {
            // keys j < q0: c_j - c_(q0-1) = -(sum of log f over j+1 .. q0-1)
            const int k0 = q0 - it * CHUNK;
            float x[2];
#pragma unroll
            for (int e = 0; e < 2; e++) x[e] = lf[(int64_t)(k0 + 2 * lane + e) * H + h];
            const float tot = warp_prefix(x);
#pragma unroll
            for (int e = 0; e < 2; e++) sKc[2 * lane + e] = (x[e] - tot - run) * L2E;
            run += tot;
        }
        cp_async_wait<1>();
        __syncthreads();

        // S = Q K^T for this warp's 16 rows and the 64 keys
        float sc[8][4];
#pragma unroll
        for (int i = 0; i < 8; i++) sc[i][0] = sc[i][1] = sc[i][2] = sc[i][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
            uint32_t a[4];
            load_a(a, sQ, LD, warp * 16, kk * 16);
#pragma unroll
            for (int np = 0; np < 4; np++) {
                uint32_t b[4];
                load_b(b, cK, LD, np * 16, kk * 16);
                mma(sc[2 * np], a, b[0], b[1]);
                mma(sc[2 * np + 1], a, b[2], b[3]);
            }
        }

        // log2-scaled scores with the forget bias; the diagonal block (it == 0) is causal,
        // which also masks keys past the segment end for every valid row.
        const float qc0 = GATE ? sQc[r0] : 0.f, qc1 = GATE ? sQc[r1] : 0.f;
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int j = nt * 8 + 2 * t + e;
                float s0, s1;
                if constexpr (GATE) {
                    const float kc = sKc[j];
                    s0 = sc[nt][e] * sl2 + (qc0 - kc);
                    s1 = sc[nt][2 + e] * sl2 + (qc1 - kc);
                } else {
                    s0 = sc[nt][e] * sl2;
                    s1 = sc[nt][2 + e] * sl2;
                }
                if (it == 0) {
                    if (j > r0) s0 = -INFINITY;
                    if (j > r1) s1 = -INFINITY;
                }
                sc[nt][e] = s0;
                sc[nt][2 + e] = s1;
                mx0 = fmaxf(mx0, s0);
                mx1 = fmaxf(mx1, s1);
            }
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(FULL_MASK, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(FULL_MASK, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(FULL_MASK, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(FULL_MASK, mx1, 2));
        // Finite: the diagonal block comes first and key 0 of it is visible to every row.
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        const float al0 = exp2f(m0 - mn0), al1 = exp2f(m1 - mn1);
        m0 = mn0;
        m1 = mn1;
        float ls0 = 0.f, ls1 = 0.f;
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
#pragma unroll
            for (int e = 0; e < 2; e++) {
                sc[nt][e] = exp2f(sc[nt][e] - mn0);
                sc[nt][2 + e] = exp2f(sc[nt][2 + e] - mn1);
                ls0 += sc[nt][e];
                ls1 += sc[nt][2 + e];
            }
        }
        l0 = l0 * al0 + ls0;
        l1 = l1 * al1 + ls1;
#pragma unroll
        for (int i = 0; i < D / 8; i++) {
            acc[i][0] *= al0;
            acc[i][1] *= al0;
            acc[i][2] *= al1;
            acc[i][3] *= al1;
        }

        // O += P V
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            uint32_t pa[4];
            acc_to_a(pa, sc[2 * kk], sc[2 * kk + 1]);
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) {
                uint32_t b[4];
                load_b_t(b, cV, LD, kk * 16, dp * 16);
                mma(acc[2 * dp], pa, b[0], b[1]);
                mma(acc[2 * dp + 1], pa, b[2], b[3]);
            }
        }
        __syncthreads();
    }

    l0 = quad_sum(l0);
    l1 = quad_sum(l1);
    const float inv0 = 1.f / l0, inv1 = 1.f / l1;
    if (t == 0) {
        if (r0 < qlen) lse[(int64_t)(q0 + r0) * H + h] = (m0 + log2f(l0)) * LN2;
        if (r1 < qlen) lse[(int64_t)(q0 + r1) * H + h] = (m1 + log2f(l1)) * LN2;
    }
    // o through shared memory (this warp's rows of sQ) for 16-byte stores
#pragma unroll
    for (int i = 0; i < D / 8; i++) {
        const int col = i * 8 + 2 * t;
        *reinterpret_cast<__nv_bfloat162 *>(sQ + r0 * LD + col) =
            __floats2bfloat162_rn(acc[i][0] * inv0, acc[i][1] * inv0);
        *reinterpret_cast<__nv_bfloat162 *>(sQ + r1 * LD + col) =
            __floats2bfloat162_rn(acc[i][2] * inv1, acc[i][3] * inv1);
    }
    __syncthreads();
    store_tile<CHUNK, D>(o + q0 * stride + head, stride, sQ, LD, qlen, D, THREADS);
}

// delta_i = dO_i . o_i for every (token, head) row, one warp each; also zeroes the dQ
// accumulator row and the dc entry (kept in dlogf; NULL without a gate) that the backward
// kernel adds into.
__global__ void fox_bwd_prep(float *__restrict__ delta, float *__restrict__ dqacc,
                             float *__restrict__ dc, const bf16 *__restrict__ dout,
                             const bf16 *__restrict__ o, int64_t rows, int D) {
    const int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= rows) return;
    const int lane = threadIdx.x & 31;
    const bf16 *a = dout + row * D, *b = o + row * D;
    float s = 0.f;
    for (int d = 2 * lane; d < D; d += 64) {
        const float2 x = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(a + d));
        const float2 y = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(b + d));
        s += x.x * y.x + x.y * y.y;
        *reinterpret_cast<float2 *>(dqacc + row * D + d) = make_float2(0.f, 0.f);
    }
    s = warp_sum(s);
    if (lane == 0) {
        delta[row] = s;
        if (dc) dc[row] = 0.f;
    }
}

// dq = scale * dQ accumulator, four elements per thread.
__global__ void fox_dq_out(bf16 *__restrict__ dq, const float *__restrict__ acc, int64_t n4,
                           float scale) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    const float4 x = reinterpret_cast<const float4 *>(acc)[i];
    uint2 r;
    r.x = pack_bf16(x.x * scale, x.y * scale);
    r.y = pack_bf16(x.z * scale, x.w * scale);
    reinterpret_cast<uint2 *>(dq)[i] = r;
}

template <int D, int QT> constexpr size_t bwd_smem() {
    return (size_t)(2 * CHUNK + 4 * QT) * (D + 8) * sizeof(bf16) +
           (size_t)CHUNK * (QT + 8) * sizeof(bf16) + (size_t)(CHUNK + 6 * QT) * sizeof(float);
}

// Grid: nchunk * H CTAs, each a block of 64 keys (the first chunks, with the most queries,
// first), walking query tiles of QT rows. Warp w owns keys 16w..16w+15: S^T = K Q^T and
// dP^T = V dO^T are 16 x QT per warp, dK and dV 16 x D stay in registers. dS^T goes to
// shared memory for dQ = dS K, which the four warps split as (QT/16 row groups) x (column
// groups of DW). Shared: K, V, two Q and two dO buffers, dS^T, and per tile the key c
// values, the query terms (c_i - lse_i) and delta_i, and per-warp column sums of dS^T (the
// c values and the column sums unused without GATE).
template <int D, int QT, bool GATE>
__global__ void __launch_bounds__(THREADS)
    fox_bwd_kernel(bf16 *__restrict__ dk, bf16 *__restrict__ dv, float *__restrict__ dqacc,
                   float *__restrict__ dc, const bf16 *__restrict__ q, const bf16 *__restrict__ k,
                   const bf16 *__restrict__ v, const bf16 *__restrict__ dout,
                   const float *__restrict__ lf, const float *__restrict__ lse,
                   const float *__restrict__ delta, const int32_t *__restrict__ chunks,
                   const int32_t *__restrict__ cu, int H, float sl2, float scale) {
    constexpr int LD = D + 8, LDS = QT + 8, KT = D / 16, NT = QT / 8, E = QT >= 32 ? QT / 32 : 1;
    constexpr int RG = QT / 16, DW = D * RG / 4; // dQ split: row groups x columns per warp
    static_assert((QT == 16 || QT % 32 == 0) && 4 % RG == 0 && DW % 16 == 0, "fox_bwd tile shape");
    extern __shared__ __align__(16) unsigned char smem[];
    bf16 *sK = reinterpret_cast<bf16 *>(smem);
    bf16 *sV = sK + CHUNK * LD;
    bf16 *sQ = sV + CHUNK * LD; // [2][QT][LD]
    bf16 *sdO = sQ + 2 * QT * LD;
    bf16 *sdS = sdO + 2 * QT * LD; // [CHUNK][LDS]: dS^T, keys x queries
    float *sKc = reinterpret_cast<float *>(sdS + CHUNK * LDS);
    float *sQa = sKc + CHUNK;
    float *sDel = sQa + QT;
    float *sDc = sDel + QT; // [4][QT]

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int h = blockIdx.x % H, c = blockIdx.x / H;
    const Chunk ch = chunk_at(chunks, cu, c);
    const int k0 = ch.first, klen = ch.len, send = cu[ch.seg + 1];
    const int nqt = (send - k0 + QT - 1) / QT;
    const int64_t stride = (int64_t)H * D, head = (int64_t)h * D;

    cp_async_tile<CHUNK>(sK, LD, k + k0 * stride + head, stride, klen, D, THREADS);
    cp_async_tile<CHUNK>(sV, LD, v + k0 * stride + head, stride, klen, D, THREADS);
    cp_async_tile<QT>(sQ, LD, q + k0 * stride + head, stride, min(QT, send - k0), D, THREADS);
    cp_async_tile<QT>(sdO, LD, dout + k0 * stride + head, stride, min(QT, send - k0), D, THREADS);
    cp_async_commit();

    // c relative to c_(k0-1); warp 0 keeps in `run` the sum of log f from k0 to the tile.
    float run = 0.f;
    if (GATE && warp == 0) {
        float x[2];
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int j = 2 * lane + e;
            x[e] = j < klen ? lf[(int64_t)(k0 + j) * H + h] : 0.f;
        }
        warp_prefix(x);
#pragma unroll
        for (int e = 0; e < 2; e++) sKc[2 * lane + e] = x[e] * L2E;
    }

    const int kr0 = warp * 16 + g, kr1 = kr0 + 8; // this thread's two key rows
    const int kt0 = k0 + kr0, kt1 = k0 + kr1;
    float dva[D / 8][4], dka[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) dva[i][e] = dka[i][e] = 0.f;
    float dcs0 = 0.f, dcs1 = 0.f; // sum over queries of dS_ij for the two key rows

    for (int it = 0; it < nqt; it++) {
        const int qs = k0 + it * QT, buf = it & 1;
        const bf16 *cQ = sQ + buf * QT * LD, *cdO = sdO + buf * QT * LD;
        if (it + 1 < nqt) {
            const int qn = qs + QT, nv = min(QT, send - qn);
            cp_async_tile<QT>(sQ + (buf ^ 1) * QT * LD, LD, q + qn * stride + head, stride, nv, D,
                              THREADS);
            cp_async_tile<QT>(sdO + (buf ^ 1) * QT * LD, LD, dout + qn * stride + head, stride, nv,
                              D, THREADS);
        }
        cp_async_commit();
        if (warp == 0) {
            float x[E], ls[E], dl[E];
#pragma unroll
            for (int e = 0; e < E; e++) {
                const int tok = qs + E * lane + e;
                const int64_t idx = (int64_t)tok * H + h;
                const bool ok = E * lane < QT && tok < send;
                x[e] = GATE && ok ? lf[idx] : 0.f;
                ls[e] = ok ? lse[idx] : 0.f;
                dl[e] = ok ? delta[idx] : 0.f;
            }
            const float tot = GATE ? warp_prefix(x) : 0.f; // without GATE, x = run = 0
#pragma unroll
            for (int e = 0; e < E; e++)
                if (E * lane < QT) {
                    sQa[E * lane + e] = (run + x[e] - ls[e]) * L2E;
                    sDel[E * lane + e] = dl[e];
                }
            run += tot;
        }
        cp_async_wait<1>();
        __syncthreads();

        // S^T = K Q^T and dP^T = V dO^T (16 keys x QT queries per warp)
        float sc[NT][4], dp[NT][4];
#pragma unroll
        for (int i = 0; i < NT; i++)
#pragma unroll
            for (int e = 0; e < 4; e++) sc[i][e] = dp[i][e] = 0.f;
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
            uint32_t a[4];
            load_a(a, sK, LD, warp * 16, kk * 16);
#pragma unroll
            for (int np = 0; np < QT / 16; np++) {
                uint32_t b[4];
                load_b(b, cQ, LD, np * 16, kk * 16);
                mma(sc[2 * np], a, b[0], b[1]);
                mma(sc[2 * np + 1], a, b[2], b[3]);
            }
            load_a(a, sV, LD, warp * 16, kk * 16);
#pragma unroll
            for (int np = 0; np < QT / 16; np++) {
                uint32_t b[4];
                load_b(b, cdO, LD, np * 16, kk * 16);
                mma(dp[2 * np], a, b[0], b[1]);
                mma(dp[2 * np + 1], a, b[2], b[3]);
            }
        }

        // P = exp(s - lse) where j <= i < segment end (this also drops keys past the end),
        // dS = P o (dP - delta_i); sc <- P^T, dp <- dS^T
        const float kc0 = GATE ? sKc[kr0] : 0.f, kc1 = GATE ? sKc[kr1] : 0.f;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int j = nt * 8 + 2 * t + e, qi = qs + j;
                const float qa = sQa[j], de = sDel[j];
                const bool ok = qi < send;
                const float p0 = ok && qi >= kt0 ? exp2f(sc[nt][e] * sl2 + qa - kc0) : 0.f;
                const float p1 = ok && qi >= kt1 ? exp2f(sc[nt][2 + e] * sl2 + qa - kc1) : 0.f;
                const float ds0 = p0 * (dp[nt][e] - de), ds1 = p1 * (dp[nt][2 + e] - de);
                sc[nt][e] = p0;
                sc[nt][2 + e] = p1;
                dp[nt][e] = ds0;
                dp[nt][2 + e] = ds1;
                if constexpr (GATE) {
                    dcs0 += ds0;
                    dcs1 += ds1;
                }
            }
        }

        // dV += P^T dO, dK += dS^T Q (scale applied at the end)
#pragma unroll
        for (int kk = 0; kk < QT / 16; kk++) {
            uint32_t pa[4], da[4];
            acc_to_a(pa, sc[2 * kk], sc[2 * kk + 1]);
            acc_to_a(da, dp[2 * kk], dp[2 * kk + 1]);
#pragma unroll
            for (int dd = 0; dd < D / 16; dd++) {
                uint32_t b[4];
                load_b_t(b, cdO, LD, kk * 16, dd * 16);
                mma(dva[2 * dd], pa, b[0], b[1]);
                mma(dva[2 * dd + 1], pa, b[2], b[3]);
                load_b_t(b, cQ, LD, kk * 16, dd * 16);
                mma(dka[2 * dd], da, b[0], b[1]);
                mma(dka[2 * dd + 1], da, b[2], b[3]);
            }
        }

        // dS^T to shared memory; column sums (sum over this warp's keys, per query)
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const int col = nt * 8 + 2 * t;
            *reinterpret_cast<uint32_t *>(sdS + kr0 * LDS + col) = pack_bf16(dp[nt][0], dp[nt][1]);
            *reinterpret_cast<uint32_t *>(sdS + kr1 * LDS + col) = pack_bf16(dp[nt][2], dp[nt][3]);
#pragma unroll
            for (int e = 0; GATE && e < 2; e++) {
                float cs = dp[nt][e] + dp[nt][2 + e];
                cs += __shfl_xor_sync(FULL_MASK, cs, 4);
                cs += __shfl_xor_sync(FULL_MASK, cs, 8);
                cs += __shfl_xor_sync(FULL_MASK, cs, 16);
                if (g == 0) sDc[warp * QT + col + e] = cs;
            }
        }
        __syncthreads();

        // dQ (unscaled) += dS K for the tile, added into the fp32 accumulator
        {
            const int qr = (warp % RG) * 16, dc0 = (warp / RG) * DW;
            float dqa[DW / 8][4];
#pragma unroll
            for (int i = 0; i < DW / 8; i++) dqa[i][0] = dqa[i][1] = dqa[i][2] = dqa[i][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < CHUNK / 16; kk++) {
                uint32_t a[4];
                load_a_t(a, sdS, LDS, kk * 16, qr);
#pragma unroll
                for (int dd = 0; dd < DW / 16; dd++) {
                    uint32_t b[4];
                    load_b_t(b, sK, LD, kk * 16, dc0 + dd * 16);
                    mma(dqa[2 * dd], a, b[0], b[1]);
                    mma(dqa[2 * dd + 1], a, b[2], b[3]);
                }
            }
            const int qa0 = qs + qr + g, qa1 = qa0 + 8;
#pragma unroll
            for (int i = 0; i < DW / 8; i++) {
                const int col = dc0 + i * 8 + 2 * t;
                if (qa0 < send) {
                    float *p = dqacc + ((int64_t)qa0 * H + h) * D + col;
                    atomicAdd(p, dqa[i][0]);
                    atomicAdd(p + 1, dqa[i][1]);
                }
                if (qa1 < send) {
                    float *p = dqacc + ((int64_t)qa1 * H + h) * D + col;
                    atomicAdd(p, dqa[i][2]);
                    atomicAdd(p + 1, dqa[i][3]);
                }
            }
        }
        // dc_i += sum over this block's keys of dS_ij
        if (GATE && tid < QT && qs + tid < send)
            atomicAdd(dc + (int64_t)(qs + tid) * H + h,
                      sDc[tid] + sDc[QT + tid] + sDc[2 * QT + tid] + sDc[3 * QT + tid]);
        __syncthreads();
    }

    // dc_j -= sum over queries of dS_ij
    if constexpr (GATE) {
        dcs0 = quad_sum(dcs0);
        dcs1 = quad_sum(dcs1);
        if (t == 0) {
            if (kr0 < klen) atomicAdd(dc + (int64_t)kt0 * H + h, -dcs0);
            if (kr1 < klen) atomicAdd(dc + (int64_t)kt1 * H + h, -dcs1);
        }
    }
    // dK (scaled) and dV through shared memory (K and V are no longer read)
    bf16 *oK = sK, *oV = sV;
#pragma unroll
    for (int i = 0; i < D / 8; i++) {
        const int col = i * 8 + 2 * t;
        *reinterpret_cast<uint32_t *>(oK + kr0 * LD + col) =
            pack_bf16(dka[i][0] * scale, dka[i][1] * scale);
        *reinterpret_cast<uint32_t *>(oK + kr1 * LD + col) =
            pack_bf16(dka[i][2] * scale, dka[i][3] * scale);
        *reinterpret_cast<uint32_t *>(oV + kr0 * LD + col) = pack_bf16(dva[i][0], dva[i][1]);
        *reinterpret_cast<uint32_t *>(oV + kr1 * LD + col) = pack_bf16(dva[i][2], dva[i][3]);
    }
    __syncthreads();
    store_tile<CHUNK, D>(dk + k0 * stride + head, stride, oK, LD, klen, D, THREADS);
    store_tile<CHUNK, D>(dv + k0 * stride + head, stride, oV, LD, klen, D, THREADS);
}

void check_args(const char *op, const Seqs *s, int H, int D, const void *const *ptrs, int nptr) {
    char why[160];
    if (!cuda_fox_supports(H, D, why, sizeof why)) rt_die("%s: %s", op, why);
    if ((int64_t)H * s->nchunk > INT32_MAX)
        rt_die("%s: H=%d heads with %lld chunks unsupported", op, H, (long long)s->nchunk);
    if (s->ntok > 0 && (!s->dev_cu || !s->dev_chunk))
        rt_die("%s: segments have no device copy (Backend.seqs_prepare)", op);
    for (int i = 0; i < nptr; i++) cuda_check_aligned(ptrs[i], 16, op);
}

template <int D, bool GATE>
void launch_fwd(void *o, void *lse, const void *q, const void *k, const void *v, const void *lf,
                const Seqs *s, int H, float sl2) {
    constexpr size_t smem = fwd_smem<D>();
    // the shared-memory opt-in, at the first launch
    static const bool ready = (cuda_allow_smem(fox_fwd_kernel<D, GATE>, smem, "fox_fwd"), true);
    (void)ready;
    const int nchunk = (int)s->nchunk;
    fox_fwd_kernel<D, GATE><<<nchunk * H, THREADS, smem, cuda_stream()>>>(
        (bf16 *)o, (float *)lse, (const bf16 *)q, (const bf16 *)k, (const bf16 *)v,
        (const float *)lf, s->dev_chunk, s->dev_cu, nchunk, H, sl2);
    CUDA_LAUNCHED();
}

template <int D, int QT, bool GATE>
void launch_bwd(void *dk, void *dv, float *dqacc, void *dc, const void *q, const void *k,
                const void *v, const void *dout, const void *lf, const void *lse,
                const float *delta, const Seqs *s, int H, float sl2, float scale) {
    constexpr size_t smem = bwd_smem<D, QT>();
    // the shared-memory opt-in, at the first launch
    static const bool ready = (cuda_allow_smem(fox_bwd_kernel<D, QT, GATE>, smem, "fox_bwd"), true);
    (void)ready;
    fox_bwd_kernel<D, QT, GATE><<<(int)s->nchunk * H, THREADS, smem, cuda_stream()>>>(
        (bf16 *)dk, (bf16 *)dv, dqacc, (float *)dc, (const bf16 *)q, (const bf16 *)k,
        (const bf16 *)v, (const bf16 *)dout, (const float *)lf, (const float *)lse, delta,
        s->dev_chunk, s->dev_cu, H, sl2, scale);
    CUDA_LAUNCHED();
}

template <bool GATE>
void fwd_for_d(int D, void *o, void *lse, const void *q, const void *k, const void *v,
               const void *lf, const Seqs *s, int H, float sl2) {
    switch (D) {
    case 32: launch_fwd<32, GATE>(o, lse, q, k, v, lf, s, H, sl2); break;
    case 64: launch_fwd<64, GATE>(o, lse, q, k, v, lf, s, H, sl2); break;
    default: launch_fwd<128, GATE>(o, lse, q, k, v, lf, s, H, sl2); break;
    }
}

// query tiles of 64 rows; 16 at D = 128, where dK and dV alone hold 128 registers
template <bool GATE>
void bwd_for_d(int D, void *dk, void *dv, float *dqacc, void *dc, const void *q, const void *k,
               const void *v, const void *dout, const void *lf, const void *lse, const float *delta,
               const Seqs *s, int H, float sl2, float sc) {
    switch (D) {
    case 32:
        launch_bwd<32, 64, GATE>(dk, dv, dqacc, dc, q, k, v, dout, lf, lse, delta, s, H, sl2, sc);
        break;
    case 64:
        launch_bwd<64, 64, GATE>(dk, dv, dqacc, dc, q, k, v, dout, lf, lse, delta, s, H, sl2, sc);
        break;
    default:
        launch_bwd<128, 16, GATE>(dk, dv, dqacc, dc, q, k, v, dout, lf, lse, delta, s, H, sl2, sc);
        break;
    }
}

} // namespace

int cuda_fox_supports(int H, int D, char *why, size_t why_size) {
    if (H < 1)
        return cuda_unsupported(why, why_size, "the FoX kernels take H >= 1 heads, got H=%d", H);
    if (D != 32 && D != 64 && D != 128)
        return cuda_unsupported(why, why_size,
                                "the FoX kernels take D (head size) 32, 64 or 128, got D=%d", D);
    return 1;
}

void cuda_fox_fwd(const AttnArgs *a) {
    void *o = a->o, *lse = a->lse;
    const void *q = a->q, *k = a->k, *v = a->v, *logf = a->logf;
    const Seqs *s = a->s;
    const int H = a->H, D = a->D;
    const double scale = a->scale;
    const void *ptrs[] = {o, q, k, v};
    check_args("fox_fwd", s, H, D, ptrs, 4);
    if (s->ntok == 0) return;
    if (const int variant = kernel_variant(KV_FOX_FWD)) { // fox_v2.cu
        fox_fwd_v2(a, variant);
        return;
    }
    const float sl2 = (float)(scale * 1.4426950408889634);
    if (logf)
        fwd_for_d<true>(D, o, lse, q, k, v, logf, s, H, sl2);
    else
        fwd_for_d<false>(D, o, lse, q, k, v, logf, s, H, sl2);
}

void cuda_fox_bwd(const AttnGrads *gr) {
    const AttnArgs *a = &gr->a;
    void *dq = gr->dq, *dk = gr->dk, *dv = gr->dv, *dlogf = gr->dlogf;
    const void *dout = gr->dout, *q = a->q, *k = a->k, *v = a->v, *logf = a->logf, *o = a->o,
               *lse = a->lse;
    const Seqs *s = a->s;
    const int H = a->H, D = a->D;
    const double scale = a->scale;
    const void *ptrs[] = {dq, dk, dv, dout, q, k, v, o};
    check_args("fox_bwd", s, H, D, ptrs, 8);
    if (s->ntok == 0) return;
    if (const int variant = kernel_variant(KV_FOX_BWD)) { // fox_v2.cu
        fox_bwd_v2(gr, variant);
        return;
    }
    const int64_t rows = s->ntok * H;
    float *delta = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * (size_t)rows);
    float *dqacc = (float *)cuda_scratch(SCRATCH_B, sizeof(float) * (size_t)(rows * D));
    fox_bwd_prep<<<(unsigned)cdiv(rows, 8), 256, 0, cuda_stream()>>>(
        delta, dqacc, logf ? (float *)dlogf : NULL, (const bf16 *)dout, (const bf16 *)o, rows, D);
    CUDA_LAUNCHED();
    const float sl2 = (float)(scale * 1.4426950408889634), sc = (float)scale;
    if (logf)
        bwd_for_d<true>(D, dk, dv, dqacc, dlogf, q, k, v, dout, logf, lse, delta, s, H, sl2, sc);
    else
        bwd_for_d<false>(D, dk, dv, dqacc, NULL, q, k, v, dout, logf, lse, delta, s, H, sl2, sc);
    const int64_t n4 = rows * D / 4;
    fox_dq_out<<<(unsigned)cdiv(n4, 256), 256, 0, cuda_stream()>>>((bf16 *)dq, dqacc, n4, sc);
    CUDA_LAUNCHED();
    // d log f_t = sum over i >= t of dc_i within the segment (docs/models.md §fox)
    if (logf) cuda_revcumsum(dlogf, dlogf, s, H);
}
