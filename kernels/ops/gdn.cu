// Chunked Gated DeltaNet (docs/models.md §gated-deltanet): the WY/UT form of src/cpu/gdn_chunk.c on
// the GPU, as per-chunk kernels that run fully in parallel and one sequential scan over the chunks
// of every segment (fla ops/gated_delta_rule style). Within a chunk of L <= 64 rows starting from
// state S_c, gam = in-chunk cumsum of g, Gam_ts = e^{gam_t - gam_s} (s <= t):
//   A = strictly_lower(diag(beta) (K K^T) o Gam),  T = (I + A)^{-1} diag(beta),
//   W = T (e^gam o K),  U = T V - W S_c,  P = (Q K^T) o Gam o lower  (Q = scale q),
//   O = (e^gam o Q) S_c + P U,  S_{c+1} = e^{gam_L} S_c + (e^{gam_L - gam} o K)^T U.
// Forward:  gdn_prep (W, U~ = T V, P) -> gdn_fwd_scan (states, U; with a->state each segment's
// state after its last token, docs/models.md §decoding) -> gdn_fwd_out (O).
// Backward: gdn_prep with the saved states (W, U, P) -> gdn_bwd_scan (dS_{c+1}, dU, last chunk
// first) -> gdn_bwd_dqk (dq, the dk terms of Kd and P, dW, d gam terms) -> gdn_bwd_wy (dT,
// dv, dbeta, dA, the dk terms of Kg and A, dg = in-chunk reverse cumsum of d gam).
// Matrix products run on tensor cores (wmma bf16 16x16x16, fp32 accumulate); gates, states,
// the triangular inverse and its gradient stay in fp32. Every kernel that reads the gates is
// a template on DECAY: without it (g == NULL, DeltaNet, docs/models.md §deltanet) gam = 0 and
// Gam = 1, so no g is loaded, no exponential or cumsum is taken and no d gam is formed.
#include <stdio.h>

#include "backend/cuda_ops.h"
#include "device/kernel_variants.h"
#include "lib/chunks.cuh"
#include "lib/cuda_common.cuh"
#include "lib/gdn_chunk.cuh"
#include "lib/mma.cuh"
#include "ops/gdn_scan_reg.h"
#include "util/error.h"

namespace {

constexpr int NT = 256; // threads of the per-chunk kernels (8 warps)
constexpr int CT = 64;  // columns per V (or K) tile in the per-chunk kernels

// ---- shared-memory layouts (gdn_chunk.cuh's Carve) ----

struct PrepLayout {
    size_t qs, ks, kk, qk, vt, sb, li, tb, stg, gates, total;
    __host__ __device__ PrepLayout(int K, bool with_states) {
        Carve cv;
        qs = cv.take(bf_tile(CHUNK, K + 8));
        ks = cv.take(bf_tile(CHUNK, K + 8));
        // K K^T and Q K^T until T is known, then the V and state tiles
        size_t a = 2 * f_tile(CHUNK, LDM),
               b = bf_tile(CHUNK, LDM) + (with_states ? bf_tile(K, LDM) : 0);
        kk = vt = cv.take(a > b ? a : b);
        qk = kk + f_tile(CHUNK, LDM);
        sb = vt + bf_tile(CHUNK, LDM);
        li = cv.take(f_tile(CHUNK, LDM));
        tb = cv.take(bf_tile(CHUNK, LDM));
        stg = cv.take(f_tile(NT / 32, 256));
        gates = cv.take(sizeof(Gates));
        total = cv.n;
    }
};

struct OutLayout {
    size_t qs, pb, sb, ut, stg, gates, total;
    __host__ __device__ OutLayout(int K) {
        Carve cv;
        qs = cv.take(bf_tile(CHUNK, K + 8));
        pb = cv.take(bf_tile(CHUNK, LDM));
        sb = cv.take(bf_tile(K, LDM));
        ut = cv.take(bf_tile(CHUNK, LDM));
        stg = cv.take(f_tile(NT / 32, 256));
        gates = cv.take(sizeof(Gates));
        total = cv.n;
    }
};

struct DqkLayout {
    size_t qt, kt, pb, tp, tps, dp, dot, ut, dut, s0t, dst, xq, xk, xw, gates, rows, red, total;
    __host__ __device__ DqkLayout(int BK) {
        Carve cv;
        qt = cv.take(bf_tile(CHUNK, BK + 8));
        kt = cv.take(bf_tile(CHUNK, BK + 8));
        pb = cv.take(bf_tile(CHUNK, LDM));
        tp = cv.take(bf_tile(CHUNK, LDM));
        tps = cv.take(bf_tile(CHUNK, LDM));
        dp = cv.take(f_tile(CHUNK, LDM));
        // the V-loop tiles, then the three 64 x BK accumulators staged in fp32
        size_t a = 5 * bf_tile(CHUNK, LDM), b = 3 * f_tile(CHUNK, BK + 4);
        dot = xq = cv.take(a > b ? a : b);
        ut = dot + bf_tile(CHUNK, LDM);
        dut = ut + bf_tile(CHUNK, LDM);
        s0t = dut + bf_tile(CHUNK, LDM);
        dst = s0t + bf_tile(CHUNK, LDM);
        xk = xq + f_tile(CHUNK, BK + 4);
        xw = xk + f_tile(CHUNK, BK + 4);
        gates = cv.take(sizeof(Gates));
        rows = cv.take(2 * CHUNK * sizeof(float));
        red = cv.take(32 * sizeof(float));
        total = cv.n;
    }
};

struct WyLayout {
    size_t ks, am, li, dt, xf, tb, ta, t1, t2, stg, gates, vec, total;
    __host__ __device__ WyLayout(int K) {
        Carve cv;
        ks = cv.take(bf_tile(CHUNK, K + 8));
        cv.take_each(f_tile(CHUNK, LDM), am, li, dt, xf);
        cv.take_each(bf_tile(CHUNK, LDM), tb, ta, t1, t2);
        stg = cv.take(f_tile(NT / 32, 256));
        gates = cv.take(sizeof(Gates));
        vec = cv.take(3 * CHUNK * sizeof(float));
        total = cv.n;
    }
};

// ---- device helpers ----

// Stores a 16 x 16 accumulator tile into the warp's staging buffer (256 floats) and hands
// each lane one row r (0..15) and the 8 columns c..c+7 of it: f(r, c, values).
template <class F> __device__ __forceinline__ void tile_out(const FragC &acc, float *stg, F &&f) {
    wmma::store_matrix_sync(stg, acc, 16, wmma::mem_row_major);
    __syncwarp();
    int lane = threadIdx.x & 31, r = lane >> 1, c = (lane & 1) * 8;
    f(r, c, stg + r * 16 + c);
    __syncwarp();
}

// Gam_ts = e^{gam_t - gam_s} (callers mask s <= t, t < L); 1 without decay.
template <bool DECAY> __device__ __forceinline__ float gam_ts(const Gates *G, int t, int s) {
    if constexpr (DECAY) return expf(G->gam[t] - G->gam[s]);
    return 1.f;
}

// Li = (I + A)^{-1} for A = diag(rs) Am with Am strictly lower triangular (fp32, 64 x 64,
// leading dimension LDM, rows >= L zero); Li holds the identity on entry. Forward
// substitution Li[t][s] = -sum_{s<=u<t} A[t][u] Li[u][s], column s by the 4 lanes 4s..4s+3,
// lane r taking u = s+r (mod 4) and writing the rows it reads later. Needs 256 threads.
__device__ void invert_unit_lower(float *Li, const float *Am, const float *rs, int L) {
    int s = threadIdx.x >> 2, r = threadIdx.x & 3;
    unsigned mask = 0xfu << (threadIdx.x & 28);
    for (int t = s + 1; t < L; t++) {
        float acc = 0.f;
        for (int u = s + r; u < t; u += 4) acc += Am[t * LDM + u] * Li[u * LDM + s];
        acc += __shfl_xor_sync(mask, acc, 1);
        acc += __shfl_xor_sync(mask, acc, 2);
        if (((t - s) & 3) == r) Li[t * LDM + s] = -rs[t] * acc;
    }
}

// T = (I + diag(beta) Am)^{-1} diag(beta) as the bf16 operand Tb, from Am (fp32, strictly
// lower, rows >= L zero) with Li = I on entry (Li ends as the inverse), between barriers.
__device__ __forceinline__ void wy_T(bf16 *Tb, float *Li, const float *Am, const Gates *G, int L) {
    __syncthreads();
    invert_unit_lower(Li, Am, G->beta, L);
    __syncthreads();
    for (int e = threadIdx.x; e < CHUNK * CHUNK; e += NT) {
        int t = e >> 6, s = e & 63;
        Tb[t * LDM + s] = f2bf(Li[t * LDM + s] * G->beta[s]);
    }
    __syncthreads();
}

// Cm = alpha op(A) op(B) for fp32 64 x 64 matrices (leading dimension LDM), 256 threads, each
// a 4 x 4 block of outputs (rows ty + 16i, columns tx + 16j).
template <bool TA, bool TB>
__device__ void mm64(float *Cm, const float *A, const float *B, float alpha) {
    int ty = threadIdx.x >> 4, tx = threadIdx.x & 15;
    float acc[4][4] = {};
    for (int k = 0; k < CHUNK; k++) {
        float a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            a[i] = TA ? A[k * LDM + ty + 16 * i] : A[(ty + 16 * i) * LDM + k];
            b[i] = TB ? B[(tx + 16 * i) * LDM + k] : B[k * LDM + tx + 16 * i];
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) Cm[(ty + 16 * i) * LDM + tx + 16 * j] = alpha * acc[i][j];
}

// Lower-triangular 16 x 16 tile number idx (0..9) of a 64 x 64 matrix: row block i, column j.
__device__ __forceinline__ void lower_tile(int idx, int &i, int &j) {
    i = (idx >= 1) + (idx >= 3) + (idx >= 6);
    j = idx - i * (i + 1) / 2;
}

// ---- the scans ----

// The carried state Sf (fp32, K x BV, leading dimension ldf) to dst (row stride V) and, as
// this chunk's tensor-core operand, to Sb (bf16, leading dimension ldv).
__device__ __forceinline__ void save_state(float *dst, int V, bf16 *Sb, int ldv, const float *Sf,
                                           int ldf, int K, int BV) {
    for (int e = threadIdx.x; e < K * (BV / 4); e += NT_SCAN) {
        int i = e / (BV / 4), j = (e - i * (BV / 4)) * 4;
        float4 x = *reinterpret_cast<const float4 *>(Sf + i * ldf + j);
        *reinterpret_cast<float4 *>(dst + (int64_t)i * V + j) = x;
        store4(Sb + i * ldv + j, x);
    }
}

// ---- forward ----

// Per (chunk, head): gates, Am = K K^T o Gam (strictly lower), T = (I + diag(beta) Am)^{-1}
// diag(beta), W = T (e^gam o K), P = scale (q K^T) o Gam (lower, bf16), and U = T V, minus
// W S_c when the chunk states are given. W and U are bf16 [N, H, K|V]: W is a tensor-core
// operand of the scans and U~ only ever meets W S_c at fp32 there (fla keeps both in bf16).
template <bool DECAY>
__global__ void __launch_bounds__(NT)
    gdn_prep(bf16 *W, bf16 *U, bf16 *P, const bf16 *q, const bf16 *k, const bf16 *v,
             const float *beta, const float *g, const float *states, const int32_t *chunks, int H,
             int K, int V, float scale) {
    extern __shared__ __align__(128) unsigned char smem[];
    const PrepLayout lay(K, states != nullptr);
    bf16 *Qs = at<bf16>(smem, lay.qs), *Ks = at<bf16>(smem, lay.ks), *Tb = at<bf16>(smem, lay.tb);
    bf16 *Vt = at<bf16>(smem, lay.vt), *Sb = at<bf16>(smem, lay.sb);
    float *KK = at<float>(smem, lay.kk), *QK = at<float>(smem, lay.qk),
          *Li = at<float>(smem, lay.li);
    Gates *G = at<Gates>(smem, lay.gates);
    const int c = blockIdx.x, h = blockIdx.y, warp = threadIdx.x >> 5, ldk = K + 8;
    float *stg = at<float>(smem, lay.stg) + warp * 256;
    const int64_t n0 = chunks[3 * c];
    const int L = chunks[3 * c + 1];
    const int64_t rk = (n0 * H + h) * K, rv = (n0 * H + h) * V, sk = (int64_t)H * K,
                  sv = (int64_t)H * V;

    cp_async_tile<CHUNK>(Qs, ldk, q + rk, sk, L, K, blockDim.x);
    cp_async_tile<CHUNK>(Ks, ldk, k + rk, sk, L, K, blockDim.x);
    cp_async_commit();
    if (warp == 0) chunk_gates<DECAY>(G, g, beta, n0, L, h, H);
    cp_async_wait();
    __syncthreads();

    for (int x = warp; x < 20; x += NT / 32) {
        int i, j;
        lower_tile(x % 10, i, j);
        FragC acc;
        wmma::fill_fragment(acc, 0.f);
        mma_acc<false, true>(acc, x < 10 ? Ks : Qs, ldk, 16 * i, Ks, ldk, 16 * j, K);
        wmma::store_matrix_sync((x < 10 ? KK : QK) + 16 * i * LDM + 16 * j, acc, LDM,
                                wmma::mem_row_major);
    }
    __syncthreads();

    bf16 *Pc = P + ((int64_t)c * H + h) * CHUNK * CHUNK;
    for (int e = threadIdx.x; e < CHUNK * CHUNK; e += NT) {
        int t = e >> 6, s = e & 63;
        float gm = s <= t && t < L ? gam_ts<DECAY>(G, t, s) : 0.f;
        float a = s < t ? KK[t * LDM + s] * gm : 0.f;
        float p = s <= t ? scale * QK[t * LDM + s] * gm : 0.f;
        KK[t * LDM + s] = a;
        Pc[e] = f2bf(p);
        Li[t * LDM + s] = t == s ? 1.f : 0.f;
    }
    for (int e = threadIdx.x; e < CHUNK * K; e += NT) { // Ks becomes Kg = e^gam o K
        int t = e / K, i = e - t * K;
        Ks[t * ldk + i] = f2bf(G->eg[t] * bf2f(Ks[t * ldk + i]));
    }
    wy_T(Tb, Li, KK, G, L);

    // W = T Kg; with states also kept in Qs (bf16) for U = T V - W S_c
    for (int x = warp; x < 4 * (K / 16); x += NT / 32) {
        int i = x & 3, j = x >> 2;
        FragC acc;
        wmma::fill_fragment(acc, 0.f);
        mma_acc<false, false>(acc, Tb, LDM, 16 * i, Ks, ldk, 16 * j, CHUNK);
        tile_out(acc, stg, [&](int r, int cc, const float *x8) {
            int t = 16 * i + r, col = 16 * j + cc;
            if (t < L) store8(W + rk + t * sk + col, x8);
            if (states) store8(Qs + t * ldk + col, x8);
        });
    }
    __syncthreads();

    for (int v0 = 0; v0 < V; v0 += CT) {
        int bw = min(CT, V - v0);
        cp_async_tile<CHUNK>(Vt, LDM, v + rv + v0, sv, L, bw, blockDim.x);
        cp_async_commit();
        if (states)
            load_tile_bf16(Sb, LDM, states + ((int64_t)c * H + h) * K * V + v0, V, K, bw, K, bw,
                           blockDim.x);
        cp_async_wait();
        __syncthreads();
        for (int x = warp; x < 4 * (bw / 16); x += NT / 32) {
            int i = x & 3, j = x >> 2;
            FragC acc;
            wmma::fill_fragment(acc, 0.f);
            mma_acc<false, false>(acc, Tb, LDM, 16 * i, Vt, LDM, 16 * j, CHUNK);
            if (states) {
                FragC ws;
                wmma::fill_fragment(ws, 0.f);
                mma_acc<false, false>(ws, Qs, ldk, 16 * i, Sb, LDM, 16 * j, K);
                for (int e = 0; e < acc.num_elements; e++) acc.x[e] -= ws.x[e];
            }
            tile_out(acc, stg, [&](int r, int cc, const float *x8) {
                int t = 16 * i + r;
                if (t < L) store8(U + rv + t * sv + v0 + 16 * j + cc, x8);
            });
        }
        __syncthreads();
    }
}

// Per (segment, head, BV columns of V), chunk after chunk: S_c -> states, U = U~ - W S_c
// (overwrites U~), S_{c+1} = e^{gam_L} S_c + K^T (e^{gam_L - gam} o U), S in fp32 in shared
// memory. With stages == 2 the next chunk's W, K, U~ and gates load while this one computes.
// With fin, the state after the last chunk goes to the segment's slot of fin [nseg, H, K, V].
// (GLA's state pass is an elementwise scan over precomputed increments; the delta rule's
// K^T (U - W S) needs S itself.)
template <bool DECAY>
__global__ void __launch_bounds__(NT_SCAN)
    gdn_fwd_scan(float *states, float *fin, bf16 *U, const bf16 *W, const bf16 *k,
                 const float *beta, const float *g, const int32_t *cu, const int32_t *chunks,
                 int nchunk, int H, int K, int V, int BV, int stages) {
    extern __shared__ __align__(128) unsigned char smem[];
    const FwdScanLayout lay(K, BV, stages);
    const int seg = blockIdx.x, h = blockIdx.y, v0 = blockIdx.z * BV, warp = threadIdx.x >> 5;
    const SegChunks w = seg_chunks(chunks, cu, nchunk, seg);
    if (w.n == 0) return;
    const int ldk = K + 8, ldv = BV + 8, ldf = BV + 4;
    const int64_t sk = (int64_t)H * K, sv = (int64_t)H * V;
    float *Sf = at<float>(smem, lay.sf), *Xf = at<float>(smem, lay.xf);
    bf16 *Sb = at<bf16>(smem, lay.sb), *Ud = at<bf16>(smem, lay.ud);

    for (int e = threadIdx.x; e < K * ldf; e += NT_SCAN) Sf[e] = 0.f;
    auto issue = [&](int, int64_t n0, int L, unsigned char *st) {
        cp_async_tile<CHUNK>(at<bf16>(st, lay.w), ldk, W + (n0 * H + h) * K, sk, L, K, blockDim.x);
        cp_async_tile<CHUNK>(at<bf16>(st, lay.k), ldk, k + (n0 * H + h) * K, sk, L, K, blockDim.x);
        cp_async_tile<CHUNK>(at<bf16>(st, lay.u), ldv, U + (n0 * H + h) * V + v0, sv, L, BV,
                             blockDim.x);
        cp_async_commit();
        if (warp == 0) chunk_gates<DECAY>(at<Gates>(st, lay.gates), g, beta, n0, L, h, H);
    };
    scan_chunks<false>(
        w, lay, smem, stages, issue, [&](int64_t c, int64_t n0, int L, unsigned char *sg) {
            const bf16 *Wb = at<bf16>(sg, lay.w), *Kb = at<bf16>(sg, lay.k),
                       *Ut = at<bf16>(sg, lay.u);
            const Gates *G = at<Gates>(sg, lay.gates);

            save_state(states + (c * H + h) * K * V + v0, V, Sb, ldv, Sf, ldf, K, BV);
            __syncthreads();
            for (int x = warp; x < 4 * (BV / 16); x += NT_SCAN / 32) { // X = W S_c
                int i = x & 3, j = x >> 2;
                FragC acc;
                wmma::fill_fragment(acc, 0.f);
                mma_acc<false, false>(acc, Wb, ldk, 16 * i, Sb, ldv, 16 * j, K);
                wmma::store_matrix_sync(Xf + 16 * i * ldf + 16 * j, acc, ldf, wmma::mem_row_major);
            }
            __syncthreads();
            for (int e = threadIdx.x; e < CHUNK * BV; e += NT_SCAN) {
                int t = e / BV, j = e - t * BV;
                float u = bf2f(Ut[t * ldv + j]) - Xf[t * ldf + j];
                if (t < L) U[((n0 + t) * H + h) * V + v0 + j] = f2bf(u);
                Ud[t * ldv + j] = f2bf(G->ed[t] * u);
            }
            __syncthreads();
            [[maybe_unused]] const float eL = G->eg[L - 1];
            for (int x = warp; x < (K / 16) * (BV / 16); x += NT_SCAN / 32) {
                int i = x % (K / 16), j = x / (K / 16);
                FragC acc;
                wmma::load_matrix_sync(acc, Sf + 16 * i * ldf + 16 * j, ldf, wmma::mem_row_major);
                if constexpr (DECAY)
                    for (int e = 0; e < acc.num_elements; e++) acc.x[e] *= eL;
                mma_acc<true, false>(acc, Kb, ldk, 16 * i, Ud, ldv, 16 * j, CHUNK);
                wmma::store_matrix_sync(Sf + 16 * i * ldf + 16 * j, acc, ldf, wmma::mem_row_major);
            }
            __syncthreads();
        });
    // the state after the last chunk (the bf16 copy into Sb is not read again)
    if (fin) save_state(fin + ((int64_t)seg * H + h) * K * V + v0, V, Sb, ldv, Sf, ldf, K, BV);
}

// Per (chunk, head): O = (scale e^gam o q) S_c + P U, V in tiles of 64 columns. GLA's output
// pass (gla.cu) has this form, but its gates are per key channel, so it scales Q per K tile.
template <bool DECAY>
__global__ void __launch_bounds__(NT)
    gdn_fwd_out(bf16 *o, const bf16 *q, const bf16 *U, const bf16 *P, const float *states,
                const float *beta, const float *g, const int32_t *chunks, int H, int K, int V,
                float scale) {
    extern __shared__ __align__(128) unsigned char smem[];
    const OutLayout lay(K);
    bf16 *Qs = at<bf16>(smem, lay.qs), *Pb = at<bf16>(smem, lay.pb), *Sb = at<bf16>(smem, lay.sb);
    bf16 *Ut = at<bf16>(smem, lay.ut);
    Gates *G = at<Gates>(smem, lay.gates);
    const int c = blockIdx.x, h = blockIdx.y, warp = threadIdx.x >> 5, ldk = K + 8;
    float *stg = at<float>(smem, lay.stg) + warp * 256;
    const int64_t n0 = chunks[3 * c];
    const int L = chunks[3 * c + 1];
    const int64_t rv = (n0 * H + h) * V, sv = (int64_t)H * V;

    cp_async_tile<CHUNK>(Qs, ldk, q + (n0 * H + h) * K, (int64_t)H * K, L, K, blockDim.x);
    cp_async_tile<CHUNK>(Pb, LDM, P + ((int64_t)c * H + h) * CHUNK * CHUNK, CHUNK, CHUNK, CHUNK,
                         blockDim.x);
    cp_async_commit();
    if (warp == 0) chunk_gates<DECAY>(G, g, beta, n0, L, h, H);
    cp_async_wait();
    __syncthreads();
    for (int e = threadIdx.x; e < CHUNK * K; e += NT) {
        int t = e / K, i = e - t * K;
        Qs[t * ldk + i] = f2bf(scale * G->eg[t] * bf2f(Qs[t * ldk + i]));
    }
    for (int v0 = 0; v0 < V; v0 += CT) {
        int bw = min(CT, V - v0);
        cp_async_tile<CHUNK>(Ut, LDM, U + rv + v0, sv, L, bw, blockDim.x);
        cp_async_commit();
        load_tile_bf16(Sb, LDM, states + ((int64_t)c * H + h) * K * V + v0, V, K, bw, K, bw,
                       blockDim.x);
        cp_async_wait();
        __syncthreads();
        for (int x = warp; x < 4 * (bw / 16); x += NT / 32) {
            int i = x & 3, j = x >> 2;
            FragC acc;
            wmma::fill_fragment(acc, 0.f);
            mma_acc<false, false>(acc, Qs, ldk, 16 * i, Sb, LDM, 16 * j, K);
            mma_acc<false, false>(acc, Pb, LDM, 16 * i, Ut, LDM, 16 * j, CHUNK);
            tile_out(acc, stg, [&](int r, int cc, const float *x8) {
                int t = 16 * i + r;
                if (t < L) store8(o + rv + t * sv + v0 + 16 * j + cc, x8);
            });
        }
        __syncthreads();
    }
}

// ---- backward ----

// Per (segment, head, BV columns), last chunk first, carrying dS = dL/dS_{c+1} in fp32:
// dS -> dSs[c] (fp32, the layout of states), dU = (e^{gam_L - gam} o K) dS + P^T dO -> dU
// (bf16 [N, H, V]), dS_c = e^{gam_L} dS + q^T (scale e^gam o dO) - W^T dU. (GLA's state
// gradient is again increments and an elementwise scan; -W^T dU needs dS itself.)
template <bool DECAY>
__global__ void __launch_bounds__(NT_SCAN)
    gdn_bwd_scan(float *dSs, bf16 *dU, const bf16 *q, const bf16 *k, const bf16 *W, const bf16 *P,
                 const bf16 *dout, const float *beta, const float *g, const int32_t *cu,
                 const int32_t *chunks, int nchunk, int H, int K, int V, int BV, int stages,
                 float scale) {
    extern __shared__ __align__(128) unsigned char smem[];
    const BwdScanLayout lay(K, BV, stages);
    const int seg = blockIdx.x, h = blockIdx.y, v0 = blockIdx.z * BV, warp = threadIdx.x >> 5;
    const SegChunks w = seg_chunks(chunks, cu, nchunk, seg);
    if (w.n == 0) return;
    const int ldk = K + 8, ldv = BV + 8, ldf = BV + 4;
    const int64_t sk = (int64_t)H * K, sv = (int64_t)H * V;
    float *Sf = at<float>(smem, lay.sf), *X1 = at<float>(smem, lay.x1),
          *X2 = at<float>(smem, lay.x2);
    bf16 *Sb = at<bf16>(smem, lay.sb), *dUn = at<bf16>(smem, lay.dun);

    for (int e = threadIdx.x; e < K * ldf; e += NT_SCAN) Sf[e] = 0.f;
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
    scan_chunks<true>(
        w, lay, smem, stages, issue, [&](int64_t c, int64_t n0, int L, unsigned char *sg) {
            const bf16 *Qb = at<bf16>(sg, lay.q), *Kb = at<bf16>(sg, lay.k),
                       *Wb = at<bf16>(sg, lay.w);
            const bf16 *Pb = at<bf16>(sg, lay.p);
            bf16 *dOt = at<bf16>(sg, lay.d);
            const Gates *G = at<Gates>(sg, lay.gates);

            save_state(dSs + (c * H + h) * K * V + v0, V, Sb, ldv, Sf, ldf, K, BV);
            __syncthreads();
            for (int x = warp; x < 4 * (BV / 16); x += NT_SCAN / 32) { // X1 = K dS, X2 = P^T dO
                int i = x & 3, j = x >> 2;
                FragC a1, a2;
                wmma::fill_fragment(a1, 0.f);
                wmma::fill_fragment(a2, 0.f);
                mma_acc<false, false>(a1, Kb, ldk, 16 * i, Sb, ldv, 16 * j, K);
                mma_acc<true, false>(a2, Pb, LDM, 16 * i, dOt, ldv, 16 * j, CHUNK);
                wmma::store_matrix_sync(X1 + 16 * i * ldf + 16 * j, a1, ldf, wmma::mem_row_major);
                wmma::store_matrix_sync(X2 + 16 * i * ldf + 16 * j, a2, ldf, wmma::mem_row_major);
            }
            __syncthreads();
            for (int e = threadIdx.x; e < CHUNK * BV; e += NT_SCAN) {
                int t = e / BV, j = e - t * BV;
                bf16 d = f2bf(G->ed[t] * X1[t * ldf + j] + X2[t * ldf + j]);
                if (t < L) dU[((n0 + t) * H + h) * V + v0 + j] = d;
                dUn[t * ldv + j] = __hneg(d);
                dOt[t * ldv + j] = f2bf(scale * G->eg[t] * bf2f(dOt[t * ldv + j]));
            }
            __syncthreads();
            [[maybe_unused]] const float eL = G->eg[L - 1];
            for (int x = warp; x < (K / 16) * (BV / 16); x += NT_SCAN / 32) {
                int i = x % (K / 16), j = x / (K / 16);
                FragC acc;
                wmma::load_matrix_sync(acc, Sf + 16 * i * ldf + 16 * j, ldf, wmma::mem_row_major);
                if constexpr (DECAY)
                    for (int e = 0; e < acc.num_elements; e++) acc.x[e] *= eL;
                mma_acc<true, false>(acc, Qb, ldk, 16 * i, dOt, ldv, 16 * j, CHUNK);
                mma_acc<true, false>(acc, Wb, ldk, 16 * i, dUn, ldv, 16 * j, CHUNK);
                wmma::store_matrix_sync(Sf + 16 * i * ldf + 16 * j, acc, ldf, wmma::mem_row_major);
            }
            __syncthreads();
        });
}

// Per (chunk, head, BK columns of K): over V in tiles of 64, dQg = dO S_c^T, dKd = U dS^T,
// dWn = dU S_c^T (64 x BK) and dP = dO U^T (64 x 64). Then dq = scale (e^gam o dQg +
// (dP o Gam) K) (final), dKp = e^{gam_L - gam} o dKd + scale (dP o Gam)^T q (fp32, completed
// by gdn_bwd_wy), dW = -dWn (bf16), and this tile's part of d gam: <Qg_t, dQg_t> -
// <Kd_t, dKd_t>, their sum and e^{gam_L} <S_c, dS> on the last row, and (first K tile only)
// the row minus column sums of dP o P.
template <bool DECAY>
__global__ void __launch_bounds__(NT, 1)
    gdn_bwd_dqk(bf16 *dq, float *dKp, bf16 *dW, float *dgp, const bf16 *q, const bf16 *k,
                const bf16 *dout, const bf16 *U, const bf16 *dU, const bf16 *P, const float *states,
                const float *dSs, const float *beta, const float *g, const int32_t *chunks, int H,
                int K, int V, int BK, float scale) {
    extern __shared__ __align__(128) unsigned char smem[];
    const DqkLayout lay(BK);
    bf16 *Qt = at<bf16>(smem, lay.qt), *Kt = at<bf16>(smem, lay.kt), *Pb = at<bf16>(smem, lay.pb);
    bf16 *Tp = at<bf16>(smem, lay.tp), *Tps = at<bf16>(smem, lay.tps);
    bf16 *dOt = at<bf16>(smem, lay.dot), *Ut = at<bf16>(smem, lay.ut),
         *dUt = at<bf16>(smem, lay.dut);
    bf16 *S0t = at<bf16>(smem, lay.s0t), *dSt = at<bf16>(smem, lay.dst);
    float *dPf = at<float>(smem, lay.dp), *Xq = at<float>(smem, lay.xq),
          *Xk = at<float>(smem, lay.xk);
    float *Xw = at<float>(smem, lay.xw), *rowq = at<float>(smem, lay.rows), *rowk = rowq + CHUNK;
    Gates *G = at<Gates>(smem, lay.gates);
    const int c = blockIdx.x, h = blockIdx.y, kt = blockIdx.z, nkt = gridDim.z, k0 = kt * BK;
    const int warp = threadIdx.x >> 5, ldb = BK + 8, ldx = BK + 4, nb = BK / 16;
    const int64_t n0 = chunks[3 * c];
    const int L = chunks[3 * c + 1];
    const int64_t rk = (n0 * H + h) * K + k0, rv = (n0 * H + h) * V, sk = (int64_t)H * K,
                  sv = (int64_t)H * V;
    const float *S0 = states + (((int64_t)c * H + h) * K + k0) * V;
    const float *dS1 = dSs + (((int64_t)c * H + h) * K + k0) * V;

    cp_async_tile<CHUNK>(Qt, ldb, q + rk, sk, L, BK, blockDim.x);
    cp_async_tile<CHUNK>(Kt, ldb, k + rk, sk, L, BK, blockDim.x);
    cp_async_tile<CHUNK>(Pb, LDM, P + ((int64_t)c * H + h) * CHUNK * CHUNK, CHUNK, CHUNK, CHUNK,
                         blockDim.x);
    cp_async_commit();
    if (warp == 0) chunk_gates<DECAY>(G, g, beta, n0, L, h, H);

    // warp w owns row block w & 3 and column blocks 2 (w >> 2) + {0, 1}
    const int rb = warp & 3, cb0 = (warp >> 2) * 2;
    FragC aq[2], ak[2], aw[2], ap[2];
#pragma unroll
    for (int jj = 0; jj < 2; jj++) {
        wmma::fill_fragment(aq[jj], 0.f);
        wmma::fill_fragment(ak[jj], 0.f);
        wmma::fill_fragment(aw[jj], 0.f);
        wmma::fill_fragment(ap[jj], 0.f);
    }
    float sdot = 0.f;
    for (int v0 = 0; v0 < V; v0 += CT) {
        int bw = min(CT, V - v0), per = bw / 4;
        cp_async_tile<CHUNK>(dOt, LDM, dout + rv + v0, sv, L, bw, blockDim.x);
        cp_async_tile<CHUNK>(Ut, LDM, U + rv + v0, sv, L, bw, blockDim.x);
        cp_async_tile<CHUNK>(dUt, LDM, dU + rv + v0, sv, L, bw, blockDim.x);
        cp_async_commit();
        for (int e = threadIdx.x; e < BK * per; e += NT) {
            int i = e / per, j = (e - i * per) * 4;
            float4 s = *reinterpret_cast<const float4 *>(S0 + (int64_t)i * V + v0 + j);
            float4 d = *reinterpret_cast<const float4 *>(dS1 + (int64_t)i * V + v0 + j);
            if constexpr (DECAY) sdot += s.x * d.x + s.y * d.y + s.z * d.z + s.w * d.w;
            store4(S0t + i * LDM + j, s);
            store4(dSt + i * LDM + j, d);
        }
        cp_async_wait();
        __syncthreads();
#pragma unroll
        for (int jj = 0; jj < 2; jj++) {
            int cb = cb0 + jj;
            if (cb < nb) {
                mma_acc<false, true>(aq[jj], dOt, LDM, 16 * rb, S0t, LDM, 16 * cb, bw);
                mma_acc<false, true>(ak[jj], Ut, LDM, 16 * rb, dSt, LDM, 16 * cb, bw);
                mma_acc<false, true>(aw[jj], dUt, LDM, 16 * rb, S0t, LDM, 16 * cb, bw);
            }
            mma_acc<false, true>(ap[jj], dOt, LDM, 16 * rb, Ut, LDM, 16 * cb, bw);
        }
        __syncthreads();
    }
#pragma unroll
    for (int jj = 0; jj < 2; jj++) {
        int cb = cb0 + jj;
        if (cb < nb) {
            int off = 16 * rb * ldx + 16 * cb;
            wmma::store_matrix_sync(Xq + off, aq[jj], ldx, wmma::mem_row_major);
            wmma::store_matrix_sync(Xk + off, ak[jj], ldx, wmma::mem_row_major);
            wmma::store_matrix_sync(Xw + off, aw[jj], ldx, wmma::mem_row_major);
        }
        wmma::store_matrix_sync(dPf + 16 * rb * LDM + 16 * cb, ap[jj], LDM, wmma::mem_row_major);
    }
    if constexpr (DECAY) sdot = block_sum(sdot, at<float>(smem, lay.red));
    __syncthreads();

    { // row t = tid / 4, columns tid % 4 + 4m
        const int t = threadIdx.x >> 2;
        float rq = 0.f, rkd = 0.f;
        for (int i = threadIdx.x & 3; i < BK; i += 4) {
            float dqg = Xq[t * ldx + i], dkd = Xk[t * ldx + i], dwn = Xw[t * ldx + i];
            if constexpr (DECAY) {
                rq += bf2f(Qt[t * ldb + i]) * dqg;
                rkd += bf2f(Kt[t * ldb + i]) * dkd;
            }
            Xq[t * ldx + i] = G->eg[t] * dqg;
            Xk[t * ldx + i] = G->ed[t] * dkd;
            if (t < L) dW[rk + t * sk + i] = f2bf(-dwn);
        }
        if constexpr (DECAY) {
            rq = quad_sum(rq);
            rkd = quad_sum(rkd);
            if ((threadIdx.x & 3) == 0) {
                rowq[t] = scale * G->eg[t] * rq; // <Qg_t, dQg_t>
                rowk[t] = G->ed[t] * rkd;        // <Kd_t, dKd_t>
            }
        }
    }
    for (int e = threadIdx.x; e < CHUNK * CHUNK; e += NT) { // dP o Gam, and dP o P in place
        int t = e >> 6, s = e & 63;
        bool m = s <= t && t < L;
        float dp = m ? dPf[t * LDM + s] : 0.f, gm = m ? gam_ts<DECAY>(G, t, s) : 0.f;
        Tp[t * LDM + s] = f2bf(dp * gm);
        Tps[t * LDM + s] = f2bf(scale * dp * gm);
        if constexpr (DECAY) dPf[t * LDM + s] = dp * bf2f(Pb[t * LDM + s]);
    }
    __syncthreads();

    if (DECAY && threadIdx.x < CHUNK) {
        int t = threadIdx.x;
        float x = rowq[t] - rowk[t];
        if (kt == 0)
            for (int s = 0; s < CHUNK; s++) x += dPf[t * LDM + s] - dPf[s * LDM + t];
        if (t == L - 1) {
            float rsum = 0.f;
            for (int u = 0; u < CHUNK; u++) rsum += rowk[u];
            x += rsum + G->eg[L - 1] * sdot;
        }
        dgp[(((int64_t)c * H + h) * nkt + kt) * CHUNK + t] = t < L ? x : 0.f;
    }
#pragma unroll
    for (int jj = 0; jj < 2; jj++) {
        int cb = cb0 + jj;
        if (cb < nb) {
            int off = 16 * rb * ldx + 16 * cb;
            FragC a;
            wmma::load_matrix_sync(a, Xq + off, ldx, wmma::mem_row_major);
            mma_acc<false, false>(a, Tp, LDM, 16 * rb, Kt, ldb, 16 * cb, CHUNK);
            wmma::store_matrix_sync(Xq + off, a, ldx, wmma::mem_row_major);
            wmma::load_matrix_sync(a, Xk + off, ldx, wmma::mem_row_major);
            mma_acc<true, false>(a, Tps, LDM, 16 * rb, Qt, ldb, 16 * cb, CHUNK);
            wmma::store_matrix_sync(Xk + off, a, ldx, wmma::mem_row_major);
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < L * BK; e += NT) {
        int t = e / BK, i = e - t * BK;
        dq[rk + t * sk + i] = f2bf(scale * Xq[t * ldx + i]);
        dKp[rk + t * sk + i] = Xk[t * ldx + i];
    }
}

// Per (chunk, head): recomputes Am, Li, T; dT = (dW K^T) o e^{gam_s} + dU V^T, dv = T^T dU,
// dKp += e^gam o (T^T dW); dbeta_s = sum_t dT_ts Li_ts + sum_u dA_su Am_su with dLi = dT
// diag(beta), dA = -Li^T dLi Li^T (strictly lower, fp32); dk = dKp + tA K + tA^T K with
// tA = dA o beta_t o Gam; d gam = the dqk partials + <Kg_t, dKg_t> + row minus column sums
// of dA o A, and dg its in-chunk reverse cumsum.
template <bool DECAY>
__global__ void __launch_bounds__(NT)
    gdn_bwd_wy(bf16 *dk, bf16 *dv, float *dbeta, float *dg, float *dKp, const bf16 *k,
               const bf16 *v, const bf16 *dU, const bf16 *dW, const float *dgp, const float *beta,
               const float *g, const int32_t *chunks, int H, int K, int V, int nkt) {
    extern __shared__ __align__(128) unsigned char smem[];
    const WyLayout lay(K);
    bf16 *Ks = at<bf16>(smem, lay.ks), *Tb = at<bf16>(smem, lay.tb), *Ta = at<bf16>(smem, lay.ta);
    bf16 *T1 = at<bf16>(smem, lay.t1), *T2 = at<bf16>(smem, lay.t2);
    float *Am = at<float>(smem, lay.am), *Li = at<float>(smem, lay.li),
          *Dt = at<float>(smem, lay.dt);
    float *Xf = at<float>(smem, lay.xf), *rowkg = at<float>(smem, lay.vec), *dbe = rowkg + CHUNK,
          *dgam = rowkg + 2 * CHUNK;
    Gates *G = at<Gates>(smem, lay.gates);
    const int c = blockIdx.x, h = blockIdx.y, warp = threadIdx.x >> 5, ldk = K + 8;
    float *stg = at<float>(smem, lay.stg) + warp * 256;
    const int64_t n0 = chunks[3 * c];
    const int L = chunks[3 * c + 1];
    const int64_t rk = (n0 * H + h) * K, rv = (n0 * H + h) * V, sk = (int64_t)H * K,
                  sv = (int64_t)H * V;

    cp_async_tile<CHUNK>(Ks, ldk, k + rk, sk, L, K, blockDim.x);
    cp_async_commit();
    if (warp == 0) chunk_gates<DECAY>(G, g, beta, n0, L, h, H);
    cp_async_wait();
    __syncthreads();
    for (int x = warp; x < 10; x += NT / 32) {
        int i, j;
        lower_tile(x, i, j);
        FragC acc;
        wmma::fill_fragment(acc, 0.f);
        mma_acc<false, true>(acc, Ks, ldk, 16 * i, Ks, ldk, 16 * j, K);
        wmma::store_matrix_sync(Am + 16 * i * LDM + 16 * j, acc, LDM, wmma::mem_row_major);
    }
    __syncthreads();
    for (int e = threadIdx.x; e < CHUNK * CHUNK; e += NT) {
        int t = e >> 6, s = e & 63;
        Am[t * LDM + s] = s < t && t < L ? Am[t * LDM + s] * gam_ts<DECAY>(G, t, s) : 0.f;
        Li[t * LDM + s] = t == s ? 1.f : 0.f;
    }
    wy_T(Tb, Li, Am, G, L);

    const int rb = warp & 3, cb0 = (warp >> 2) * 2, tr = threadIdx.x >> 2;
    FragC a1[2], a2[2];
#pragma unroll
    for (int jj = 0; jj < 2; jj++) {
        wmma::fill_fragment(a1[jj], 0.f);
        wmma::fill_fragment(a2[jj], 0.f);
    }
    // over K tiles: a1 = dW K^T; dKg = T^T dW -> dKp += e^gam o dKg, <Kg_t, dKg_t>
    float rkg = 0.f;
    for (int k0 = 0; k0 < K; k0 += CT) {
        int bk = min(CT, K - k0);
        cp_async_tile<CHUNK>(T1, LDM, dW + rk + k0, sk, L, bk, blockDim.x);
        cp_async_commit();
        cp_async_wait();
        __syncthreads();
#pragma unroll
        for (int jj = 0; jj < 2; jj++) {
            int cb = cb0 + jj;
            mma_acc<false, true>(a1[jj], T1, LDM, 16 * rb, Ks + k0, ldk, 16 * cb, bk);
            if (cb < bk / 16) {
                FragC a;
                wmma::fill_fragment(a, 0.f);
                mma_acc<true, false>(a, Tb, LDM, 16 * rb, T1, LDM, 16 * cb, CHUNK);
                wmma::store_matrix_sync(Xf + 16 * rb * LDM + 16 * cb, a, LDM, wmma::mem_row_major);
            }
        }
        __syncthreads();
        for (int i = threadIdx.x & 3; i < bk; i += 4) {
            float y = G->eg[tr] * Xf[tr * LDM + i];
            if constexpr (DECAY) rkg += bf2f(Ks[tr * ldk + k0 + i]) * y;
            if (tr < L) dKp[rk + tr * sk + k0 + i] += y;
        }
        __syncthreads();
    }
    if constexpr (DECAY) {
        rkg = quad_sum(rkg);
        if ((threadIdx.x & 3) == 0) rowkg[tr] = rkg;
    }
    // over V tiles: a2 = dU V^T; dv = T^T dU
    for (int v0 = 0; v0 < V; v0 += CT) {
        int bw = min(CT, V - v0);
        cp_async_tile<CHUNK>(T1, LDM, dU + rv + v0, sv, L, bw, blockDim.x);
        cp_async_tile<CHUNK>(T2, LDM, v + rv + v0, sv, L, bw, blockDim.x);
        cp_async_commit();
        cp_async_wait();
        __syncthreads();
#pragma unroll
        for (int jj = 0; jj < 2; jj++)
            mma_acc<false, true>(a2[jj], T1, LDM, 16 * rb, T2, LDM, 16 * (cb0 + jj), bw);
        for (int x = warp; x < 4 * (bw / 16); x += NT / 32) {
            int i = x & 3, j = x >> 2;
            FragC acc;
            wmma::fill_fragment(acc, 0.f);
            mma_acc<true, false>(acc, Tb, LDM, 16 * i, T1, LDM, 16 * j, CHUNK);
            tile_out(acc, stg, [&](int r, int cc, const float *x8) {
                int t = 16 * i + r;
                if (t < L) store8(dv + rv + t * sv + v0 + 16 * j + cc, x8);
            });
        }
        __syncthreads();
    }
#pragma unroll
    for (int jj = 0; jj < 2; jj++) {
        int off = 16 * rb * LDM + 16 * (cb0 + jj);
        wmma::store_matrix_sync(Xf + off, a1[jj], LDM, wmma::mem_row_major);
        wmma::store_matrix_sync(Dt + off, a2[jj], LDM, wmma::mem_row_major);
    }
    __syncthreads();
    // dT (lower, rows < L): Dt <- dLi = dT diag(beta), Xf <- dT o Li
    for (int e = threadIdx.x; e < CHUNK * CHUNK; e += NT) {
        int t = e >> 6, s = e & 63;
        float x = s <= t && t < L ? Dt[t * LDM + s] + Xf[t * LDM + s] * G->eg[s] : 0.f;
        Dt[t * LDM + s] = x * G->beta[s];
        Xf[t * LDM + s] = x * Li[t * LDM + s];
    }
    __syncthreads();
    if (threadIdx.x < CHUNK) {
        float x = 0.f;
        for (int t = 0; t < CHUNK; t++) x += Xf[t * LDM + threadIdx.x];
        dbe[threadIdx.x] = x;
    }
    __syncthreads();
    mm64<true, false>(Xf, Li, Dt, 1.f); // Li^T dLi
    __syncthreads();
    mm64<false, true>(Dt, Xf, Li, -1.f); // dA = -(Li^T dLi) Li^T
    __syncthreads();
    // Xf <- dA o A (pair terms of d gam), Li <- dA o Am (dbeta), Ta <- dA o beta_t o Gam
    for (int e = threadIdx.x; e < CHUNK * CHUNK; e += NT) {
        int t = e >> 6, s = e & 63;
        bool m = s < t && t < L;
        float da = m ? Dt[t * LDM + s] : 0.f, a = Am[t * LDM + s];
        float gm = m ? gam_ts<DECAY>(G, t, s) : 0.f;
        if constexpr (DECAY) Xf[t * LDM + s] = da * G->beta[t] * a;
        Li[t * LDM + s] = da * a;
        Ta[t * LDM + s] = f2bf(da * G->beta[t] * gm);
    }
    __syncthreads();
    if (threadIdx.x < CHUNK) {
        int t = threadIdx.x;
        float bsum = dbe[t];
        for (int s = 0; s < CHUNK; s++) bsum += Li[t * LDM + s];
        if (t < L) dbeta[(n0 + t) * H + h] = bsum;
        if constexpr (DECAY) {
            float x = rowkg[t];
            for (int s = 0; s < CHUNK; s++) x += Xf[t * LDM + s] - Xf[s * LDM + t];
            for (int j = 0; j < nkt; j++) x += dgp[(((int64_t)c * H + h) * nkt + j) * CHUNK + t];
            dgam[t] = t < L ? x : 0.f;
        }
    }
    __syncthreads();
    if (DECAY && threadIdx.x == 0) {
        float acc = 0.f;
        for (int t = L - 1; t >= 0; t--) {
            acc += dgam[t];
            dg[(n0 + t) * H + h] = acc;
        }
    }
    for (int k0 = 0; k0 < K; k0 += CT) {
        int bk = min(CT, K - k0);
        for (int x = warp; x < 4 * (bk / 16); x += NT / 32) {
            int i = x & 3, j = x >> 2;
            FragC acc;
            wmma::fill_fragment(acc, 0.f);
            mma_acc<false, false>(acc, Ta, LDM, 16 * i, Ks + k0, ldk, 16 * j, CHUNK);
            mma_acc<true, false>(acc, Ta, LDM, 16 * i, Ks + k0, ldk, 16 * j, CHUNK);
            tile_out(acc, stg, [&](int r, int cc, const float *x8) {
                int t = 16 * i + r;
                if (t < L) {
                    int64_t o = rk + t * sk + k0 + 16 * j + cc;
                    float y[8];
                    for (int e = 0; e < 8; e++) y[e] = x8[e] + dKp[o + e];
                    store8(dk + o, y);
                }
            });
        }
    }
}

// ---- host side ----

// K tiles of the dq/dk kernel: the widest of 64, 48, 32, 16 that divides K.
int dqk_tile(int K) { return K % 64 == 0 ? 64 : K % 48 == 0 ? 48 : K % 32 == 0 ? 32 : 16; }

// The most shared memory a GDN kernel needs per block at head size K (the scans at their
// narrowest, 16 columns and one stage; pick_scan takes wider ones where they fit).
size_t smem_needed(int K) {
    const size_t bytes[] = {
        PrepLayout(K, false).total, PrepLayout(K, true).total,     FwdScanLayout(K, 16, 1).total,
        OutLayout(K).total,         BwdScanLayout(K, 16, 1).total, DqkLayout(dqk_tile(K)).total,
        WyLayout(K).total};
    size_t most = 0;
    for (size_t b : bytes) most = b > most ? b : most;
    return most;
}

// Columns per scan block and pipeline depth: the widest tile and double buffering that fit,
// unless the (segment, head, 32-column) blocks would not fill the GPU once (few, long
// segments: the scan is sequential over a segment's chunks, its parallelism is the blocks):
// then 16 columns first, for twice the blocks.
// A variant of gdn_scan named c<columns>s<stages> (src/device/kernel_variants.c: c16s1 ...
// c32s2) fixes the layout; reg has its own kernels and choice (gdn_scan_reg.cu).
template <class Layout>
void pick_scan(int K, int V, int64_t seg_heads, const char *op, int *bv, int *stages,
               size_t *bytes) {
    const int wide[4][2] = {{32, 2}, {32, 1}, {16, 2}, {16, 1}};
    const int narrow[4][2] = {{16, 2}, {16, 1}, {32, 2}, {32, 1}};
    const char *name = kernel_variant_ops[KV_GDN_SCAN].variants[kernel_variant(KV_GDN_SCAN)];
    int w, st;
    if (sscanf(name, "c%ds%d", &w, &st) == 2) {
        const size_t b = Layout(K, w, st).total;
        if (V % w) rt_die("%s: gdn_scan:%s needs V a multiple of %d, not %d", op, name, w, V);
        if (b > (size_t)cuda_max_smem_optin())
            rt_die("%s: gdn_scan:%s needs %zu bytes of shared memory per block at K=%d, the GPU "
                   "allows %d",
                   op, name, b, K, cuda_max_smem_optin());
        *bv = w, *stages = st, *bytes = b;
        return;
    }
    const bool few = seg_heads * (V / 32) < cuda_sm_count();
    for (const auto &o : few ? narrow : wide) {
        if (V % o[0]) continue;
        size_t b = Layout(K, o[0], o[1]).total;
        if (b <= (size_t)cuda_max_smem_optin()) {
            *bv = o[0], *stages = o[1], *bytes = b;
            return;
        }
    }
    rt_die("%s: K=%d V=%d does not fit the GPU's shared memory", op, K, V);
}

void check_args(const char *op, int H, int K, int V, const void *const *ptrs, int n) {
    char why[160];
    if (!cuda_gdn_supports(H, K, V, why, sizeof why)) rt_die("%s: %s", op, why);
    for (int i = 0; i < n; i++) cuda_check_aligned(ptrs[i], 16, op);
}

size_t al256(size_t b) { return (b + 255) & ~(size_t)255; }

template <bool DECAY>
void launch_prep(bf16 *W, bf16 *U, bf16 *P, const void *q, const void *k, const void *v,
                 const void *beta, const void *g, const float *states, const Seqs *s, int H, int K,
                 int V, double scale, const char *op) {
    size_t bytes = PrepLayout(K, states != nullptr).total;
    cuda_allow_smem(gdn_prep<DECAY>, bytes, op);
    gdn_prep<DECAY><<<dim3((unsigned)s->nchunk, H), NT, bytes, cuda_stream()>>>(
        W, U, P, (const bf16 *)q, (const bf16 *)k, (const bf16 *)v, (const float *)beta,
        (const float *)g, states, s->dev_chunk, H, K, V, (float)scale);
    CUDA_LAUNCHED();
}

} // namespace

int cuda_gdn_supports(int H, int K, int V, char *why, size_t why_size) {
    if (!cuda_linear_attn_sizes(why, why_size, "GDN", H, K, 256, V, 256)) return 0;
    if (smem_needed(K) > (size_t)cuda_max_smem_optin())
        return cuda_unsupported(why, why_size,
                                "the GDN kernels need %zu bytes of shared memory per block at "
                                "K=%d, the GPU allows %d",
                                smem_needed(K), K, cuda_max_smem_optin());
    return 1;
}

namespace {

template <bool DECAY> void gdn_fwd(const LinAttnArgs *a) {
    void *o = a->o, *states = a->states;
    const void *q = a->q, *k = a->k, *v = a->v, *beta = a->beta, *g = a->g;
    const Seqs *s = a->s;
    const int H = a->H, K = a->K, V = a->V;
    const double scale = a->scale;
    const void *ptrs[] = {o, states, q, k, v, a->state};
    check_args("gdn_fwd", H, K, V, ptrs, 6);
    const int64_t N = s->ntok, nchunk = s->nchunk;
    if (N == 0 || nchunk == 0) return;
    bf16 *W = (bf16 *)cuda_scratch(SCRATCH_A, sizeof(bf16) * N * H * K);
    bf16 *U = (bf16 *)cuda_scratch(SCRATCH_B, sizeof(bf16) * N * H * V);
    bf16 *P = (bf16 *)cuda_scratch(SCRATCH_C, sizeof(bf16) * nchunk * H * CHUNK * CHUNK);
    launch_prep<DECAY>(W, U, P, q, k, v, beta, g, nullptr, s, H, K, V, scale, "gdn_fwd");

    if (gdn_scan_reg_chosen()) {
        gdn_fwd_scan_reg((float *)states, (float *)a->state, U, W, (const bf16 *)k,
                         (const float *)beta, (const float *)g, s, H, K, V, "gdn_fwd");
    } else {
        int bv, stages;
        size_t bytes;
        pick_scan<FwdScanLayout>(K, V, (int64_t)s->nseg * H, "gdn_fwd", &bv, &stages, &bytes);
        cuda_allow_smem(gdn_fwd_scan<DECAY>, bytes, "gdn_fwd");
        gdn_fwd_scan<DECAY><<<dim3(s->nseg, H, V / bv), NT_SCAN, bytes, cuda_stream()>>>(
            (float *)states, (float *)a->state, U, W, (const bf16 *)k, (const float *)beta,
            (const float *)g, s->dev_cu, s->dev_chunk, (int)nchunk, H, K, V, bv, stages);
        CUDA_LAUNCHED();
    }

    const size_t bytes = OutLayout(K).total;
    cuda_allow_smem(gdn_fwd_out<DECAY>, bytes, "gdn_fwd");
    gdn_fwd_out<DECAY><<<dim3((unsigned)nchunk, H), NT, bytes, cuda_stream()>>>(
        (bf16 *)o, (const bf16 *)q, U, P, (const float *)states, (const float *)beta,
        (const float *)g, s->dev_chunk, H, K, V, (float)scale);
    CUDA_LAUNCHED();
}

template <bool DECAY> void gdn_bwd(const LinAttnGrads *gr) {
    const LinAttnArgs *a = &gr->a;
    void *dq = gr->dq, *dk = gr->dk, *dv = gr->dv, *dbeta = gr->dbeta, *dg = gr->dg;
    const void *dout = gr->dout, *q = a->q, *k = a->k, *v = a->v, *beta = a->beta, *g = a->g,
               *states = a->states;
    const Seqs *s = a->s;
    const int H = a->H, K = a->K, V = a->V;
    const double scale = a->scale;
    const void *ptrs[] = {dq, dk, dv, dout, q, k, v, states};
    check_args("gdn_bwd", H, K, V, ptrs, 8);
    const int64_t N = s->ntok, nchunk = s->nchunk;
    if (N == 0 || nchunk == 0) return;
    const int BK = dqk_tile(K), nkt = K / BK;
    const size_t nk = (size_t)N * H * K, nv = (size_t)N * H * V, ns = (size_t)nchunk * H * K * V;
    // A: W, then dW; B: U; C: P and the d gam partials; D: dU, dS, dKp
    bf16 *W = (bf16 *)cuda_scratch(SCRATCH_A, sizeof(bf16) * nk);
    bf16 *U = (bf16 *)cuda_scratch(SCRATCH_B, sizeof(bf16) * nv);
    size_t p_bytes = al256(sizeof(bf16) * nchunk * H * CHUNK * CHUNK);
    unsigned char *sc = (unsigned char *)cuda_scratch(
        SCRATCH_C, p_bytes + (DECAY ? sizeof(float) * nchunk * H * nkt * CHUNK : 0));
    bf16 *P = (bf16 *)sc;
    float *dgp = (float *)(sc + p_bytes);
    size_t du_bytes = al256(sizeof(bf16) * nv), ds_bytes = al256(sizeof(float) * ns);
    unsigned char *sd =
        (unsigned char *)cuda_scratch(SCRATCH_D, du_bytes + ds_bytes + sizeof(float) * nk);
    bf16 *dU = (bf16 *)sd;
    float *dS = (float *)(sd + du_bytes), *dKp = (float *)(sd + du_bytes + ds_bytes);

    launch_prep<DECAY>(W, U, P, q, k, v, beta, g, (const float *)states, s, H, K, V, scale,
                       "gdn_bwd");

    if (gdn_scan_reg_chosen()) {
        gdn_bwd_scan_reg(dS, dU, (const bf16 *)q, (const bf16 *)k, W, P, (const bf16 *)dout,
                         (const float *)beta, (const float *)g, s, H, K, V, (float)scale,
                         "gdn_bwd");
    } else {
        int bv, stages;
        size_t bytes;
        pick_scan<BwdScanLayout>(K, V, (int64_t)s->nseg * H, "gdn_bwd", &bv, &stages, &bytes);
        cuda_allow_smem(gdn_bwd_scan<DECAY>, bytes, "gdn_bwd");
        gdn_bwd_scan<DECAY><<<dim3(s->nseg, H, V / bv), NT_SCAN, bytes, cuda_stream()>>>(
            dS, dU, (const bf16 *)q, (const bf16 *)k, W, P, (const bf16 *)dout, (const float *)beta,
            (const float *)g, s->dev_cu, s->dev_chunk, (int)nchunk, H, K, V, bv, stages,
            (float)scale);
        CUDA_LAUNCHED();
    }

    bf16 *dW = W; // W is not read after the scan
    size_t bytes = DqkLayout(BK).total;
    cuda_allow_smem(gdn_bwd_dqk<DECAY>, bytes, "gdn_bwd");
    gdn_bwd_dqk<DECAY><<<dim3((unsigned)nchunk, H, nkt), NT, bytes, cuda_stream()>>>(
        (bf16 *)dq, dKp, dW, dgp, (const bf16 *)q, (const bf16 *)k, (const bf16 *)dout, U, dU, P,
        (const float *)states, dS, (const float *)beta, (const float *)g, s->dev_chunk, H, K, V, BK,
        (float)scale);
    CUDA_LAUNCHED();

    bytes = WyLayout(K).total;
    cuda_allow_smem(gdn_bwd_wy<DECAY>, bytes, "gdn_bwd");
    gdn_bwd_wy<DECAY><<<dim3((unsigned)nchunk, H), NT, bytes, cuda_stream()>>>(
        (bf16 *)dk, (bf16 *)dv, (float *)dbeta, (float *)dg, dKp, (const bf16 *)k, (const bf16 *)v,
        dU, dW, dgp, (const float *)beta, (const float *)g, s->dev_chunk, H, K, V, nkt);
    CUDA_LAUNCHED();
}

} // namespace

void cuda_gdn_fwd(const LinAttnArgs *a) { a->g ? gdn_fwd<true>(a) : gdn_fwd<false>(a); }

void cuda_gdn_bwd(const LinAttnGrads *g) { g->a.g ? gdn_bwd<true>(g) : gdn_bwd<false>(g); }
