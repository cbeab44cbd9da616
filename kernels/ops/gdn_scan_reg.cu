// gdn_scan:reg: gdn.cu's sequential scans over chunks (docs/models.md §gated-deltanet, the WY/UT
// form of gdn.cu's header) with the carried state in registers, as fla's chunk_delta_h keeps it:
// each block owns the K x BV slice of the state at value columns v0.., its warps hold 16 x 16 tiles
// of it as fp32 mma.sync accumulators (mma.cuh's m16n8k16 layout) instead of gdn.cu's fp32
// shared tile Sf. Per chunk the state goes once to global memory (fp32) and once to shared
// memory as the bf16 operand Sb of the product that reads it (W S_c, K dS); those products'
// epilogues (U, dU) run on their accumulators, without gdn.cu's fp32 staging tiles; the update
// S = e^{gam_L} S + (...)^T (...) accumulates into the registers. Same operands, roundings and
// order of accumulation as gdn.cu's scans.
#include <string.h>

#include "device/kernel_variants.h"
#include "lib/gdn_chunk.cuh"
#include "lib/mma.cuh"
#include "ops/gdn_scan_reg.h"
#include "util/error.h"

namespace {

// Calls f(row, col, nn, e) for the pairs of consecutive columns (col, col + 1) that this lane
// holds of a 16 x 16 accumulator tile at (r0, c0) kept as two m16n8 tiles x[nn][.]: elements
// x[nn][e], x[nn][e + 1].
template <class F> __device__ __forceinline__ void tile_pairs(int r0, int c0, F &&f) {
    const int l = threadIdx.x & 31, row = r0 + (l >> 2), col = c0 + 2 * (l & 3);
#pragma unroll
    for (int nn = 0; nn < 2; nn++)
#pragma unroll
        for (int e = 0; e < 4; e += 2) f(row + 4 * e, col + 8 * nn, nn, e);
}

// x += op(A)[r0:r0+16, 0:n] B[0:n, c0:c0+16] for bf16 tiles in shared memory (A row-major
// [r][k], or with TA its transpose stored [k][r]; B row-major [k][c]), n % 16 == 0.
template <bool TA>
__device__ __forceinline__ void mma_tile(float (&x)[2][4], const bf16 *A, int lda, int r0,
                                         const bf16 *B, int ldb, int c0, int n) {
    for (int kk = 0; kk < n; kk += 16) {
        uint32_t a[4], b[4];
        if constexpr (TA)
            load_a_t(a, A, lda, kk, r0);
        else
            load_a(a, A, lda, r0, kk);
        load_b_t(b, B, ldb, kk, c0);
        mma(x[0], a, b[0], b[1]);
        mma(x[1], a, b[2], b[3]);
    }
}

// The block's K x BV state: 16 x 16 tiles x = warp, warp + 8, ... of (K / 16) (BV / 16), tile x
// at key rows 16 (x % (K / 16)) and value columns 16 (x / (K / 16)), at most BV / 8 a warp
// (K <= 256). The loops over a warp's tiles unroll, so the accumulators stay in registers.
template <int BV> struct StateTiles {
    static_assert(BV == 16 || BV == 32, "the scans' 64 x BV products take a warp per 16 x 16 tile");
    static constexpr int MAXT = BV / 8;
    float x[MAXT][2][4];
    int nk, warp;

    __device__ __forceinline__ explicit StateTiles(int K) : nk(K / 16), warp(threadIdx.x >> 5) {
#pragma unroll
        for (int u = 0; u < MAXT; u++)
#pragma unroll
            for (int e = 0; e < 8; e++) x[u][e >> 2][e & 3] = 0.f;
    }
    __device__ __forceinline__ bool has(int u) const { return warp + 8 * u < nk * (BV / 16); }
    __device__ __forceinline__ int row0(int u) const { return 16 * ((warp + 8 * u) % nk); }
    __device__ __forceinline__ int col0(int u) const { return 16 * ((warp + 8 * u) / nk); }

    // To dst (fp32, row stride V) and, with Sb, as the bf16 operand Sb (leading dimension ldv).
    __device__ __forceinline__ void store(float *dst, int V, bf16 *Sb, int ldv) const {
#pragma unroll
        for (int u = 0; u < MAXT; u++) {
            if (!has(u)) continue;
            tile_pairs(row0(u), col0(u), [&](int r, int c, int nn, int e) {
                const float a = x[u][nn][e], b = x[u][nn][e + 1];
                *reinterpret_cast<float2 *>(dst + (int64_t)r * V + c) = make_float2(a, b);
                if (Sb) *reinterpret_cast<uint32_t *>(Sb + r * ldv + c) = pack_bf16(a, b);
            });
        }
    }
    __device__ __forceinline__ void scale(float s) {
#pragma unroll
        for (int u = 0; u < MAXT; u++)
#pragma unroll
            for (int e = 0; e < 8; e++) x[u][e >> 2][e & 3] *= s;
    }
    // S += A^T B over the chunk's 64 rows: A [64][K] (ld lda), B [64][BV] (ld ldb).
    __device__ __forceinline__ void add_t(const bf16 *A, int lda, const bf16 *B, int ldb) {
#pragma unroll
        for (int u = 0; u < MAXT; u++)
            if (has(u)) mma_tile<true>(x[u], A, lda, row0(u), B, ldb, col0(u), CHUNK);
    }
};

// The bf16 pair at p (4-byte aligned) and its store.
__device__ __forceinline__ __nv_bfloat162 ld_pair(const bf16 *p) {
    return *reinterpret_cast<const __nv_bfloat162 *>(p);
}
__device__ __forceinline__ void st_pair(bf16 *p, __nv_bfloat162 x) {
    *reinterpret_cast<__nv_bfloat162 *>(p) = x;
}

// gdn_fwd_scan with the state in registers: per (segment, head, BV columns), chunk after chunk,
// S_c -> states, U = U~ - W S_c (overwrites U~), S_{c+1} = e^{gam_L} S_c + K^T (e^{gam_L -
// gam} o U); with fin the state after the last chunk to the segment's slot.
template <bool DECAY, int BV>
__global__ void __launch_bounds__(NT_SCAN, 2)
    gdn_fwd_scan_reg(float *states, float *fin, bf16 *U, const bf16 *W, const bf16 *k,
                     const float *beta, const float *g, const int32_t *cu, const int32_t *chunks,
                     int nchunk, int H, int K, int V, int stages) {
    extern __shared__ __align__(128) unsigned char smem[];
    const FwdScanLayout lay(K, BV, stages, true);
    const int seg = blockIdx.x, h = blockIdx.y, v0 = blockIdx.z * BV, warp = threadIdx.x >> 5;
    const SegChunks w = seg_chunks(chunks, cu, nchunk, seg);
    if (w.n == 0) return;
    const int ldk = K + 8, ldv = BV + 8;
    const int64_t sk = (int64_t)H * K, sv = (int64_t)H * V;
    bf16 *Sb = at<bf16>(smem, lay.sb), *Ud = at<bf16>(smem, lay.ud);
    StateTiles<BV> S(K);

    auto issue = [&](int, int64_t n0, int L, unsigned char *st) {
        cp_async_tile<CHUNK>(at<bf16>(st, lay.w), ldk, W + (n0 * H + h) * K, sk, L, K, blockDim.x);
        cp_async_tile<CHUNK>(at<bf16>(st, lay.k), ldk, k + (n0 * H + h) * K, sk, L, K, blockDim.x);
        cp_async_tile<CHUNK>(at<bf16>(st, lay.u), ldv, U + (n0 * H + h) * V + v0, sv, L, BV,
                             blockDim.x);
        cp_async_commit();
        if (warp == 0) chunk_gates<DECAY>(at<Gates>(st, lay.gates), g, beta, n0, L, h, H);
    };
    auto step = [&](int64_t c, int64_t n0, int L, unsigned char *sg) {
        const bf16 *Wb = at<bf16>(sg, lay.w), *Kb = at<bf16>(sg, lay.k), *Ut = at<bf16>(sg, lay.u);
        const Gates *G = at<Gates>(sg, lay.gates);

        S.store(states + (c * H + h) * K * V + v0, V, Sb, ldv);
        __syncthreads();
        if (warp < 4 * (BV / 16)) { // X = W S_c on rows 16 r.., columns 16 j..
            const int r = warp & 3, j = warp >> 2;
            float x[2][4] = {};
            mma_tile<false>(x, Wb, ldk, 16 * r, Sb, ldv, 16 * j, K);
            tile_pairs(16 * r, 16 * j, [&](int t, int col, int nn, int e) {
                const __nv_bfloat162 ut = ld_pair(Ut + t * ldv + col);
                const float u0 = __low2float(ut) - x[nn][e], u1 = __high2float(ut) - x[nn][e + 1];
                if (t < L)
                    st_pair(U + ((n0 + t) * H + h) * V + v0 + col, __floats2bfloat162_rn(u0, u1));
                st_pair(Ud + t * ldv + col, __floats2bfloat162_rn(G->ed[t] * u0, G->ed[t] * u1));
            });
        }
        __syncthreads();
        if constexpr (DECAY) S.scale(G->eg[L - 1]);
        S.add_t(Kb, ldk, Ud, ldv);
        __syncthreads();
    };
    scan_chunks<false>(w, lay, smem, stages, issue, step);
    if (fin) S.store(fin + ((int64_t)seg * H + h) * K * V + v0, V, nullptr, 0);
}

// gdn_bwd_scan with the carried dS in registers: per (segment, head, BV columns), last chunk
// first, dS -> dSs[c], dU = (e^{gam_L - gam} o K) dS + P^T dO -> dU, dS_c = e^{gam_L} dS +
// q^T (scale e^gam o dO) - W^T dU. The scaled dO goes to its own tile dos (gdn.cu scales it in
// place after a barrier; here the warps that read dO for P^T dO write it as they go).
template <bool DECAY, int BV>
__global__ void __launch_bounds__(NT_SCAN, 2)
    gdn_bwd_scan_reg(float *dSs, bf16 *dU, const bf16 *q, const bf16 *k, const bf16 *W,
                     const bf16 *P, const bf16 *dout, const float *beta, const float *g,
                     const int32_t *cu, const int32_t *chunks, int nchunk, int H, int K, int V,
                     int stages, float scale) {
    extern __shared__ __align__(128) unsigned char smem[];
    const BwdScanLayout lay(K, BV, stages, true);
    const int seg = blockIdx.x, h = blockIdx.y, v0 = blockIdx.z * BV, warp = threadIdx.x >> 5;
    const SegChunks w = seg_chunks(chunks, cu, nchunk, seg);
    if (w.n == 0) return;
    const int ldk = K + 8, ldv = BV + 8;
    const int64_t sk = (int64_t)H * K, sv = (int64_t)H * V;
    bf16 *Sb = at<bf16>(smem, lay.sb), *dUn = at<bf16>(smem, lay.dun),
         *dOs = at<bf16>(smem, lay.dos);
    StateTiles<BV> S(K);

    auto issue = [&](int ci, int64_t n0, int L, unsigned char *st) {
        cp_async_tile<CHUNK>(at<bf16>(st, lay.q), ldk, q + (n0 * H + h) * K, sk, L, K, blockDim.x);
        cp_async_tile<CHUNK>(at<bf16>(st, lay.k), ldk, k + (n0 * H + h) * K, sk, L, K, blockDim.x);
        cp_async_tile<CHUNK>(at<bf16>(st, lay.w), ldk, W + (n0 * H + h) * K, sk, L, K, blockDim.x);
        cp_async_tile<CHUNK>(at<bf16>(st, lay.p), LDM, P + ((w.c0 + ci) * H + h) * CHUNK * CHUNK,
                             CHUNK, CHUNK, CHUNK, blockDim.x);
        cp_async_tile<CHUNK>(at<bf16>(st, lay.d), ldv, dout + (n0 * H + h) * V + v0, sv, L, BV,
                             blockDim.x);
        cp_async_commit();
        if (warp == 0) chunk_gates<DECAY>(at<Gates>(st, lay.gates), g, beta, n0, L, h, H);
    };
    auto step = [&](int64_t c, int64_t n0, int L, unsigned char *sg) {
        const bf16 *Qb = at<bf16>(sg, lay.q), *Kb = at<bf16>(sg, lay.k), *Wb = at<bf16>(sg, lay.w);
        const bf16 *Pb = at<bf16>(sg, lay.p), *dOt = at<bf16>(sg, lay.d);
        const Gates *G = at<Gates>(sg, lay.gates);

        S.store(dSs + (c * H + h) * K * V + v0, V, Sb, ldv);
        __syncthreads();
        if (warp < 4 * (BV / 16)) { // X1 = K dS, X2 = P^T dO on rows 16 r.., columns 16 j..
            const int r = warp & 3, j = warp >> 2;
            float x1[2][4] = {}, x2[2][4] = {};
            mma_tile<false>(x1, Kb, ldk, 16 * r, Sb, ldv, 16 * j, K);
            mma_tile<true>(x2, Pb, LDM, 16 * r, dOt, ldv, 16 * j, CHUNK);
            tile_pairs(16 * r, 16 * j, [&](int t, int col, int nn, int e) {
                const bf16 d0 = f2bf(G->ed[t] * x1[nn][e] + x2[nn][e]),
                           d1 = f2bf(G->ed[t] * x1[nn][e + 1] + x2[nn][e + 1]);
                if (t < L)
                    st_pair(dU + ((n0 + t) * H + h) * V + v0 + col, __halves2bfloat162(d0, d1));
                st_pair(dUn + t * ldv + col, __halves2bfloat162(__hneg(d0), __hneg(d1)));
                const __nv_bfloat162 o = ld_pair(dOt + t * ldv + col);
                const float f = scale * G->eg[t];
                st_pair(dOs + t * ldv + col,
                        __floats2bfloat162_rn(f * __low2float(o), f * __high2float(o)));
            });
        }
        __syncthreads();
        if constexpr (DECAY) S.scale(G->eg[L - 1]);
        S.add_t(Qb, ldk, dOs, ldv);
        S.add_t(Wb, ldk, dUn, ldv);
        __syncthreads();
    };
    scan_chunks<true>(w, lay, smem, stages, issue, step);
}

struct RegScan {
    int bv, stages;
    size_t bytes;
};

// Columns per block and stages: of 16 and 32 columns, double-buffered or not, the layout whose
// blocks take the fewest waves over the SMs (blocks per SM from the kernel's registers and
// shared memory; kern[0], kern[1]: the kernel at 16, 32 columns), the first of 16 and 32
// double-buffered, then 16 and 32 single-buffered among equals (16 columns: twice the blocks,
// each with half the work of 32).
template <class Layout>
RegScan pick_reg(const void *const kern[2], int K, int V, int64_t seg_heads, const char *op) {
    const int order[4][2] = {{16, 2}, {32, 2}, {16, 1}, {32, 1}};
    RegScan best = {0, 0, 0};
    int64_t best_waves = 0;
    for (const auto &o : order) {
        const size_t b = Layout(K, o[0], o[1], true).total;
        if (V % o[0] || b > (size_t)cuda_max_smem_optin()) continue;
        const void *f = kern[o[0] == 32];
        cuda_allow_smem_at(f, b, op);
        int per_sm = 0;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, NT_SCAN, b));
        if (per_sm < 1) continue;
        const int64_t waves = cdiv(seg_heads * (V / o[0]), (int64_t)cuda_sm_count() * per_sm);
        if (!best.bv || waves < best_waves) best = {o[0], o[1], b}, best_waves = waves;
    }
    if (!best.bv) rt_die("%s: gdn_scan:reg: K=%d V=%d does not fit the GPU", op, K, V);
    cuda_allow_smem_at(kern[best.bv == 32], best.bytes, op);
    return best;
}

template <bool DECAY>
void fwd_reg(float *states, float *fin, bf16 *U, const bf16 *W, const bf16 *k, const float *beta,
             const float *g, const Seqs *s, int H, int K, int V, const char *op) {
    const void *kern[2] = {(const void *)gdn_fwd_scan_reg<DECAY, 16>,
                           (const void *)gdn_fwd_scan_reg<DECAY, 32>};
    const RegScan p = pick_reg<FwdScanLayout>(kern, K, V, (int64_t)s->nseg * H, op);
    const dim3 grid(s->nseg, H, V / p.bv);
    if (p.bv == 16)
        gdn_fwd_scan_reg<DECAY, 16><<<grid, NT_SCAN, p.bytes, cuda_stream()>>>(
            states, fin, U, W, k, beta, g, s->dev_cu, s->dev_chunk, (int)s->nchunk, H, K, V,
            p.stages);
    else
        gdn_fwd_scan_reg<DECAY, 32><<<grid, NT_SCAN, p.bytes, cuda_stream()>>>(
            states, fin, U, W, k, beta, g, s->dev_cu, s->dev_chunk, (int)s->nchunk, H, K, V,
            p.stages);
    CUDA_LAUNCHED();
}

template <bool DECAY>
void bwd_reg(float *dSs, bf16 *dU, const bf16 *q, const bf16 *k, const bf16 *W, const bf16 *P,
             const bf16 *dout, const float *beta, const float *g, const Seqs *s, int H, int K,
             int V, float scale, const char *op) {
    const void *kern[2] = {(const void *)gdn_bwd_scan_reg<DECAY, 16>,
                           (const void *)gdn_bwd_scan_reg<DECAY, 32>};
    const RegScan p = pick_reg<BwdScanLayout>(kern, K, V, (int64_t)s->nseg * H, op);
    const dim3 grid(s->nseg, H, V / p.bv);
    if (p.bv == 16)
        gdn_bwd_scan_reg<DECAY, 16><<<grid, NT_SCAN, p.bytes, cuda_stream()>>>(
            dSs, dU, q, k, W, P, dout, beta, g, s->dev_cu, s->dev_chunk, (int)s->nchunk, H, K, V,
            p.stages, scale);
    else
        gdn_bwd_scan_reg<DECAY, 32><<<grid, NT_SCAN, p.bytes, cuda_stream()>>>(
            dSs, dU, q, k, W, P, dout, beta, g, s->dev_cu, s->dev_chunk, (int)s->nchunk, H, K, V,
            p.stages, scale);
    CUDA_LAUNCHED();
}

} // namespace

bool gdn_scan_reg_chosen() {
    return !strcmp(kernel_variant_ops[KV_GDN_SCAN].variants[kernel_variant(KV_GDN_SCAN)], "reg");
}

void gdn_fwd_scan_reg(float *states, float *fin, bf16 *U, const bf16 *W, const bf16 *k,
                      const float *beta, const float *g, const Seqs *s, int H, int K, int V,
                      const char *op) {
    (g ? fwd_reg<true> : fwd_reg<false>)(states, fin, U, W, k, beta, g, s, H, K, V, op);
}

void gdn_bwd_scan_reg(float *dSs, bf16 *dU, const bf16 *q, const bf16 *k, const bf16 *W,
                      const bf16 *P, const bf16 *dout, const float *beta, const float *g,
                      const Seqs *s, int H, int K, int V, float scale, const char *op) {
    (g ? bwd_reg<true> : bwd_reg<false>)(dSs, dU, q, k, W, P, dout, beta, g, s, H, K, V, scale, op);
}
