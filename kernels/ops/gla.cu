// Chunked gated linear attention (docs/models.md §gla) on the GPU, forward and backward: the
// algorithm of src/cpu/gla_chunk.c, split into kernels over the 64-token chunks of every segment.
//
// Per chunk and head, B_t = sum_{u<=t in chunk} log alpha_u (fp32, per key channel). Forward:
//   1. state_inc: (K e^{B_last - B})^T V for every chunk but a segment's last, into the
//      state slot of the next chunk, and B_last; with a->state (decoding) also each segment's
//      last chunk, into the segment's slot of a->state;
//   2. scan: S_{c+1} = e^{B_last,c} S_c + increment_c over each segment's chunks, in place, so
//      `states` holds the fp32 state at the start of every chunk (0 at a segment start); with
//      a->state also the state after the segment's last token, e^{B_last} S_last + increment
//      (docs/models.md §decoding);
//   3. scores: the intra-chunk scores A_ts = scale sum_i q_t k_s e^{B_t - B_s} (s <= t), with
//      fla's secondary chunking: 16-row sub-chunks I against a reference row r_I so that no
//      exponent is ever positive, the off-diagonal 16x16 blocks on tensor cores and the
//      diagonal blocks element by element in fp32;
//   4. output: o = (scale Q e^B) S_start + A V.
// Backward, the mirror image: the state gradient G_c (gradient at the end of chunk c) by the
// same increment kernel and a reverse scan, A again, dv = A^T dO + (K e^{B_last - B}) G, dq
// and dk (inter-chunk through S_start and G, intra-chunk through D = dO V^T with the same
// sub-chunking), and d log alpha = reverse cumsum over the segment of q dq - k dk (every term
// depends on B only through e^{B_t - B_s} q_t k_s).
//
// K and V are processed in tiles of 64 channels (zero-padded; K, V multiples of 16), so
// shared memory does not grow with the head size. Products on tensor cores (bf16 wmma,
// fp32 accumulation); states, gradients of states and gate sums stay fp32 (the states and
// their gradients in bf16 under gla_state:bf16, below).
#include "backend/cuda_ops.h"
#include "device/kernel_variants.h"
#include "lib/chunks.cuh"
#include "lib/gla_tiles.cuh"
#include "lib/cuda_common.cuh"
#include "lib/mma.cuh"
#include "ops/gla_bwd_v2.h"
#include "util/error.h"

namespace {

// The kernels that read or write chunk states are templates on the states' element type ST:
// float (the verified kernels) or bf16 (gla_state:bf16, src/device/kernel_variants.c), where
// every consumer rounds them to bf16 anyway. The bf16 kernels also copy their bf16 operand
// tiles (q, k, v, dO, states, G) by cp.async, issued before the plain load of the fp32 gate
// tile so that they arrive during it and the in-chunk cumsum, waited at the barrier after it.
template <class ST> constexpr bool async_tiles = std::is_same_v<ST, bf16>;

// ---- intra-chunk scores ----

constexpr int SCORES_THREADS = 128;
constexpr size_t SCORES_SMEM =
    sizeof(float) * FTILE + sizeof(bf16) * (2 * HTILE + 48 * LDH + 96 * LDH);

// A[c][h] (64 x 64, fp32, zero above the diagonal) = scale sum_i q_t k_s e^{B_t - B_s}.
// Off-diagonal block (I, J), J < I, with r = 16 I:  (q e^{B_t - B_r}) (k e^{B_r - B_s})^T.
// ASYNC: q, k by cp.async (async_tiles).
template <bool ASYNC>
__global__ void __launch_bounds__(SCORES_THREADS)
    gla_scores_kernel(float *A, const bf16 *q, const bf16 *k, const float *g, const int *chunks,
                      const int *cu, int H, int K, float scale) {
    extern __shared__ __align__(128) unsigned char smem[];
    float *Bf = reinterpret_cast<float *>(smem); // B, then the staging of A
    bf16 *Qh = reinterpret_cast<bf16 *>(Bf + FTILE);
    bf16 *Kh = Qh + HTILE;
    bf16 *Qs = Kh + HTILE; // rows t = 16..63: q_t e^{B_t - B_{r(t)}}
    bf16 *Kf = Qs + 48 * LDH;
    const int64_t c = blockIdx.x;
    const int h = blockIdx.y, warp = threadIdx.x >> 5;
    const Chunk ch = chunk_at(chunks, cu, c);
    const int64_t stride = (int64_t)H * K, row0 = ((int64_t)ch.first * H + h) * K;

    // Off-diagonal blocks p = 0..5: (I, J) = (1,0) (2,0) (2,1) (3,0) (3,1) (3,2); warp w
    // owns p = w and p = w + 4.
    FragC off[2];
    for (int f = 0; f < 2; f++) wmma::fill_fragment(off[f], 0.f);
    // Diagonal-block entries of this thread: e = tid + 128 m -> block e>>8, row, column.
    float diag[8];
    for (int m = 0; m < 8; m++) diag[m] = 0.f;

    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int nk = min(TILE, K - k0);
        __syncthreads();
        if constexpr (ASYNC) {
            cp_async_load_tile<CHUNK, TILE>(Qh, LDH, q + row0 + k0, stride, ch.len, nk,
                                            SCORES_THREADS);
            cp_async_load_tile<CHUNK, TILE>(Kh, LDH, k + row0 + k0, stride, ch.len, nk,
                                            SCORES_THREADS);
            cp_async_commit();
        }
        load_tile<CHUNK, TILE>(Bf, LDF, g + row0 + k0, stride, ch.len, nk, SCORES_THREADS);
        if constexpr (!ASYNC) {
            load_tile<CHUNK, TILE>(Qh, LDH, q + row0 + k0, stride, ch.len, nk, SCORES_THREADS);
            load_tile<CHUNK, TILE>(Kh, LDH, k + row0 + k0, stride, ch.len, nk, SCORES_THREADS);
        }
        __syncthreads();
        cumsum_rows(Bf);
        if constexpr (ASYNC) cp_async_wait<0>();
        __syncthreads();
        for (int idx = threadIdx.x; idx < 48 * TILE; idx += SCORES_THREADS) {
            int t = 16 + idx / TILE, i = idx % TILE, r = t & ~15;
            Qs[(t - 16) * LDH + i] =
                f2bf(bf2f(Qh[t * LDH + i]) * __expf(Bf[t * LDF + i] - Bf[r * LDF + i]));
        }
        for (int idx = threadIdx.x; idx < 96 * TILE; idx += SCORES_THREADS) {
            int row = idx / TILE, i = idx % TILE;
            int I = row < 16 ? 1 : row < 48 ? 2 : 3, s = row - kf_row(I);
            Kf[row * LDH + i] =
                f2bf(bf2f(Kh[s * LDH + i]) * __expf(Bf[16 * I * LDF + i] - Bf[s * LDF + i]));
        }
        for (int m = 0; m < 8; m++) {
            int e = threadIdx.x + SCORES_THREADS * m;
            int b = e >> 8, tt = (e >> 4) & 15, ss = e & 15;
            if (ss > tt) continue;
            int t = 16 * b + tt, s = 16 * b + ss;
            float acc = 0.f;
            for (int i = 0; i < TILE; i++)
                acc += bf2f(Qh[t * LDH + i]) * bf2f(Kh[s * LDH + i]) *
                       __expf(Bf[t * LDF + i] - Bf[s * LDF + i]);
            diag[m] += acc;
        }
        __syncthreads();
        for (int f = 0; f < 2; f++) {
            int p = warp + 4 * f;
            if (p >= 6) break;
            int I = p < 1 ? 1 : p < 3 ? 2 : 3, J = p - kf_row(I) / 16;
            mma_acc<false, true>(off[f], Qs, LDH, 16 * (I - 1), Kf + kf_row(I) * LDH, LDH, 16 * J,
                                 TILE);
        }
    }
    __syncthreads();
    float *St = Bf;
    for (int f = 0; f < 2; f++) {
        int p = warp + 4 * f;
        if (p >= 6) break;
        int I = p < 1 ? 1 : p < 3 ? 2 : 3, J = p - kf_row(I) / 16;
        wmma::store_matrix_sync(St + 16 * I * LDF + 16 * J, off[f], LDF, wmma::mem_row_major);
    }
    for (int m = 0; m < 8; m++) {
        int e = threadIdx.x + SCORES_THREADS * m;
        int b = e >> 8, tt = (e >> 4) & 15, ss = e & 15;
        St[(16 * b + tt) * LDF + 16 * b + ss] = ss <= tt ? diag[m] : 0.f;
    }
    __syncthreads();
    float *Ac = A + (c * H + h) * (CHUNK * CHUNK);
    for (int idx = threadIdx.x; idx < CHUNK * CHUNK; idx += SCORES_THREADS) {
        int t = idx >> 6, s = idx & 63;
        Ac[idx] = (s >> 4) > (t >> 4) ? 0.f : scale * St[t * LDF + s];
    }
}

// ---- state increments and scans ----

// The warp's 64 x 16 strip (columns 16 warp) of a 64 x 64 product of bf16 tiles (row stride
// LDH), in acc[m] (rows 16 m): acc += op(X) Y with op(X) = X^T where TX is set.
template <bool TX>
__device__ __forceinline__ void strip_mma(FragC (&acc)[4], const bf16 *Xh, const bf16 *Yh,
                                          int warp) {
    for (int kk = 0; kk < CHUNK / 16; kk++) {
        FragB b;
        wmma::load_matrix_sync(b, Yh + 16 * kk * LDH + 16 * warp, LDH);
        for (int m = 0; m < 4; m++) {
            std::conditional_t<TX, FragAT, FragA> a;
            wmma::load_matrix_sync(
                a, TX ? Xh + 16 * kk * LDH + 16 * m : Xh + 16 * m * LDH + 16 * kk, LDH);
            wmma::mma_sync(acc[m], a, b, acc[m]);
        }
    }
}

// The strip to the fp32 tile Bf (row stride LDF).
__device__ __forceinline__ void strip_store(float *Bf, const FragC (&acc)[4], int warp) {
    for (int m = 0; m < 4; m++)
        wmma::store_matrix_sync(Bf + 16 * m * LDF + 16 * warp, acc[m], LDF, wmma::mem_row_major);
}

constexpr int TILE_THREADS = 128; // 4 warps, each owns one 16-column strip of a 64 x 64 output
constexpr size_t TILE_SMEM = sizeof(float) * FTILE + sizeof(bf16) * 2 * HTILE;

// Forward (x = k, y = v): chunk c's state increment (K e^{B_last - B})^T V into slot c + 1,
// for every chunk but a segment's last, whose increment goes to the segment's final state
// fin [nseg, H, K, V] when fin is set. Backward (x = q, y = dout, fin NULL): the increment of
// the state gradient (scale Q e^B)^T dO into slot c - 1, for every chunk but a segment's
// first. Both write B_last [f32][nchunk, H, K] for the scan. The slots hold ST (bf16: each
// increment rounded once; the scan sums in fp32), fin fp32.
template <bool BWD, class ST>
__global__ void __launch_bounds__(TILE_THREADS)
    gla_state_inc_kernel(ST *hs, float *fin, float *blast, const bf16 *x, const bf16 *y,
                         const float *g, const int *chunks, const int *cu, int H, int K, int V,
                         float scale) {
    constexpr bool ASYNC = async_tiles<ST>;
    extern __shared__ __align__(128) unsigned char smem[];
    float *Bf = reinterpret_cast<float *>(smem); // B, then the staging of the output
    bf16 *Xh = reinterpret_cast<bf16 *>(Bf + FTILE);
    bf16 *Yh = Xh + HTILE;
    const int64_t c = blockIdx.x;
    const int h = blockIdx.y, v0 = blockIdx.z * TILE, warp = threadIdx.x >> 5;
    const Chunk ch = chunk_at(chunks, cu, c);
    if (BWD ? ch.seg_first : ch.seg_last && !fin) return;
    // The next (backward: previous) chunk's slot of ST elements, or the segment's fp32 final
    // state.
    const bool to_fin = !BWD && ch.seg_last;
    float *dst = to_fin ? fin + ((int64_t)ch.seg * H + h) * K * V
                        : (float *)(hs + ((BWD ? c - 1 : c + 1) * H + h) * K * V);
    // (bf16: the slot's offset, with which the store's pointer is formed late: a pointer
    // kept across the loop cost a register spill)
    const int64_t dst0 = (to_fin ? (int64_t)ch.seg * H + h : (BWD ? c - 1 : c + 1) * H + h) * K * V;
    const int nv = min(TILE, V - v0);
    const int64_t krow0 = ((int64_t)ch.first * H + h) * K;
    // ASYNC: Y and the first X tile in flight during the first gate tile's load and cumsum,
    // each later X tile during the previous tile's store.
    if constexpr (ASYNC) {
        cp_async_load_tile<CHUNK, TILE>(Yh, LDH, y + ((int64_t)ch.first * H + h) * V + v0,
                                        (int64_t)H * V, ch.len, nv, TILE_THREADS);
        cp_async_load_tile<CHUNK, TILE>(Xh, LDH, x + krow0, (int64_t)H * K, ch.len, min(TILE, K),
                                        TILE_THREADS);
        cp_async_commit();
    } else {
        load_tile<CHUNK, TILE>(Yh, LDH, y + ((int64_t)ch.first * H + h) * V + v0, (int64_t)H * V,
                               ch.len, nv, TILE_THREADS);
    }
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int nk = min(TILE, K - k0);
        __syncthreads();
        load_tile<CHUNK, TILE>(Bf, LDF, g + krow0 + k0, (int64_t)H * K, ch.len, nk, TILE_THREADS);
        if constexpr (!ASYNC)
            load_tile<CHUNK, TILE>(Xh, LDH, x + krow0 + k0, (int64_t)H * K, ch.len, nk,
                                   TILE_THREADS);
        __syncthreads();
        cumsum_rows(Bf);
        if constexpr (ASYNC) cp_async_wait<0>();
        __syncthreads();
        for (int idx = threadIdx.x; idx < CHUNK * TILE; idx += TILE_THREADS) {
            int t = idx >> 6, i = idx & 63;
            float b = Bf[t * LDF + i];
            float f = BWD ? scale * __expf(b) : __expf(Bf[(CHUNK - 1) * LDF + i] - b);
            Xh[t * LDH + i] = f2bf(bf2f(Xh[t * LDH + i]) * f);
        }
        if (blockIdx.z == 0 && (int)threadIdx.x < nk)
            blast[(c * H + h) * K + k0 + threadIdx.x] = Bf[(CHUNK - 1) * LDF + threadIdx.x];
        __syncthreads();
        // out[i][j] = sum_t X[t][i] Y[t][j]: X^T is X read column-major.
        FragC acc[4];
        for (int m = 0; m < 4; m++) wmma::fill_fragment(acc[m], 0.f);
        strip_mma<true>(acc, Xh, Yh, warp);
        // Bf was last read before the previous barrier: reuse it as the staging tile.
        strip_store(Bf, acc, warp);
        __syncthreads();
        if constexpr (ASYNC) // Xh was last read before the barrier
            if (k0 + TILE < K) {
                cp_async_load_tile<CHUNK, TILE>(Xh, LDH, x + krow0 + k0 + TILE, (int64_t)H * K,
                                                ch.len, min(TILE, K - k0 - TILE), TILE_THREADS);
                cp_async_commit();
            }
        if constexpr (std::is_same_v<ST, float>)
            store_tile<CHUNK, TILE>(dst + (int64_t)k0 * V + v0, V, Bf, LDF, nk, nv, TILE_THREADS);
        else if (to_fin)
            store_tile<CHUNK, TILE>(fin + dst0 + (int64_t)k0 * V + v0, V, Bf, LDF, nk, nv,
                                    TILE_THREADS);
        else
            store_tile_bf16<CHUNK, TILE>(hs + dst0 + (int64_t)k0 * V + v0, V, Bf, LDF, nk, nv,
                                         TILE_THREADS);
    }
}

constexpr int SCAN_THREADS = 256;

// The scan's elements of one thread, moved by one 4-byte access: one fp32 state element, or two
// adjacent bf16 ones (one row i of the state, V being even, so one decay) summed as a float2.
__device__ __forceinline__ float scan_load(const float *p) { return *p; }
__device__ __forceinline__ float2 scan_load(const __nv_bfloat162 *p) {
    return __bfloat1622float2(*p);
}
__device__ __forceinline__ void scan_store(float *p, float x) { *p = x; }
__device__ __forceinline__ void scan_store(__nv_bfloat162 *p, float2 x) {
    *p = __float22bfloat162_rn(x);
}
__device__ __forceinline__ float decay_add(float a, float S, float x) { return a * S + x; }
__device__ __forceinline__ float2 decay_add(float a, float2 S, float2 x) {
    return make_float2(a * S.x + x.x, a * S.y + x.y);
}
// The per-thread elements of a scan over states of ST: SV in memory, R in registers.
template <class ST> struct ScanElems {
    using SV = float;
    using R = float;
    static constexpr int N = 1;
};
template <> struct ScanElems<bf16> {
    using SV = __nv_bfloat162;
    using R = float2;
    static constexpr int N = 2;
};

// One thread per state element (ST = bf16: per pair of elements, ScanElems; head blockIdx.z,
// element e of the K x V state) and segment blockIdx.x, sequential over the segment's chunks,
// summing in fp32 (bf16 slots: rounded once when stored). Forward: slot c holds chunk c-1's
// increment and becomes S_c = e^{B_last,c-1} S_{c-1} + increment (S = 0 in the first slot).
// Backward (REV): slot c holds chunk c+1's increment and becomes
// G_c = e^{B_last,c+1} G_{c+1} + increment, from G = 0 after the last chunk (whose slot is
// neither read nor written). With fin (forward), fin holds the increment of each segment's
// last chunk and becomes the state after it, e^{B_last} S_last + increment. GDN's scans
// (gdn.cu) walk the segments the same way but are matrix passes: its delta-rule update
// S <- e^g S + K^T (U - W S) needs S itself, so it has no increments to precompute and no
// elementwise scan.
template <bool REV, class ST>
__global__ void __launch_bounds__(SCAN_THREADS)
    gla_scan_kernel(ST *hs, float *fin, const float *blast, const int *chunks, const int *cu,
                    int64_t nchunk, int H, int K, int V) {
    using SV = typename ScanElems<ST>::SV;
    using R = typename ScanElems<ST>::R;
    constexpr int N = ScanElems<ST>::N;
    const int seg = blockIdx.x, h = blockIdx.z;
    const int64_t e = ((int64_t)blockIdx.y * SCAN_THREADS + threadIdx.x) * N;
    if (e >= (int64_t)K * V) return;
    const int i = (int)(e / V);
    const SegChunks w = seg_chunks(chunks, cu, nchunk, seg);
    const int n = w.n;
    const int64_t step = (int64_t)H * K * V / N, dstep = (int64_t)H * K;
    SV *p = reinterpret_cast<SV *>(hs + (w.c0 * H + h) * K * V + e);
    const float *d = blast + (w.c0 * H + h) * K + i;
    R S = {};
    if (!REV) {
        scan_store(p, R{});
        if (n < 2) return; // one chunk: fin holds its increment, the final state
        R x = scan_load(p + step);
        float a = d[0];
        for (int j = 1; j < n; j++) {
            R xn = {};
            float an = 0.f;
            if (j + 1 < n) { // prefetch the next chunk's increment and decay
                xn = scan_load(p + (j + 1) * step);
                an = d[j * dstep];
            }
            S = decay_add(__expf(a), S, x);
            scan_store(p + j * step, S);
            x = xn;
            a = an;
        }
        if (fin) {
            R *f = reinterpret_cast<R *>(fin + ((int64_t)seg * H + h) * K * V + e);
            *f = decay_add(__expf(d[(n - 1) * dstep]), S, *f);
        }
    } else {
        if (n < 2) return;
        R x = scan_load(p + (n - 2) * step);
        float a = d[(n - 1) * dstep];
        for (int j = n - 2; j >= 0; j--) {
            R xn = {};
            float an = 0.f;
            if (j > 0) {
                xn = scan_load(p + (j - 1) * step);
                an = d[j * dstep];
            }
            S = decay_add(__expf(a), S, x);
            scan_store(p + j * step, S);
            x = xn;
            a = an;
        }
    }
}

// ---- forward output and dv ----

// The block of gla_fwd_o_kernel and gla_bwd_dv_kernel: shared memory (the fp32 tile Bf: B, then
// the staging of the output; two bf16 tiles), chunk blockIdx.x, head blockIdx.y, the nv value
// columns from v0 of v-tile blockIdx.z, and the row offset krow0 of the chunk's first token in
// the [N, H, K] arrays.
struct VTileBlock {
    float *Bf;
    bf16 *Xh, *Yh;
    int64_t c;
    int h, v0, warp;
    Chunk ch;
    int nv;
    int64_t krow0;
    __device__ VTileBlock(unsigned char *smem, const int *chunks, const int *cu, int H, int K,
                          int V)
        : Bf(reinterpret_cast<float *>(smem)), Xh(reinterpret_cast<bf16 *>(Bf + FTILE)),
          Yh(Xh + HTILE), c(blockIdx.x), h(blockIdx.y), v0(blockIdx.z * TILE),
          warp(threadIdx.x >> 5), ch(chunk_at(chunks, cu, c)), nv(min(TILE, V - v0)),
          krow0(((int64_t)ch.first * H + h) * K) {}
};

// acc += (X o F) S over K in 64-channel tiles: X the block's chunk rows of x, S the block's
// columns of the chunk's [K, V] slot of `states` (ST), F = scale e^B (the forward's q) or
// e^{B_last - B} (the backward's k, BWD).
template <bool BWD, class ST>
__device__ __forceinline__ void decayed_state_mma(FragC (&acc)[4], const VTileBlock &b,
                                                  const float *g, const bf16 *x, const ST *states,
                                                  int H, int K, int V, float scale) {
    for (int k0 = 0; k0 < K; k0 += TILE) {
        const int nk = min(TILE, K - k0);
        __syncthreads();
        if constexpr (async_tiles<ST>) {
            cp_async_load_tile<CHUNK, TILE>(b.Xh, LDH, x + b.krow0 + k0, (int64_t)H * K, b.ch.len,
                                            nk, TILE_THREADS);
            cp_async_load_tile<CHUNK, TILE>(b.Yh, LDH,
                                            states + ((b.c * H + b.h) * K + k0) * V + b.v0, V, nk,
                                            b.nv, TILE_THREADS);
            cp_async_commit();
        }
        load_tile<CHUNK, TILE>(b.Bf, LDF, g + b.krow0 + k0, (int64_t)H * K, b.ch.len, nk,
                               TILE_THREADS);
        if constexpr (!async_tiles<ST>) {
            load_tile<CHUNK, TILE>(b.Xh, LDH, x + b.krow0 + k0, (int64_t)H * K, b.ch.len, nk,
                                   TILE_THREADS);
            load_tile_bf16(b.Yh, LDH, states + ((b.c * H + b.h) * K + k0) * V + b.v0, V, CHUNK,
                           TILE, nk, b.nv, TILE_THREADS);
        }
        __syncthreads();
        cumsum_rows(b.Bf);
        if constexpr (async_tiles<ST>) cp_async_wait<0>();
        __syncthreads();
        for (int idx = threadIdx.x; idx < CHUNK * TILE; idx += TILE_THREADS) {
            int t = idx >> 6, i = idx & 63;
            const float xt = bf2f(b.Xh[t * LDH + i]);
            b.Xh[t * LDH + i] =
                f2bf(BWD ? xt * __expf(b.Bf[(CHUNK - 1) * LDF + i] - b.Bf[t * LDF + i])
                         : xt * scale * __expf(b.Bf[t * LDF + i]));
        }
        __syncthreads();
        strip_mma<false>(acc, b.Xh, b.Yh, b.warp);
    }
}

// o[:, v-tile] = (scale Q e^B) S_start + A V for chunk blockIdx.x, head blockIdx.y. GDN's
// output pass (gdn.cu) has this form with one gate per row, which scales Q once for all of K.
template <class ST>
__global__ void __launch_bounds__(TILE_THREADS)
    gla_fwd_o_kernel(bf16 *o, const bf16 *q, const bf16 *v, const float *g, const ST *states,
                     const float *A, const int *chunks, const int *cu, int H, int K, int V,
                     float scale) {
    extern __shared__ __align__(128) unsigned char smem[];
    const VTileBlock b(smem, chunks, cu, H, K, V);
    FragC acc[4]; // rows 16 m, columns 16 warp
    for (int m = 0; m < 4; m++) wmma::fill_fragment(acc[m], 0.f);
    if (!b.ch.seg_first) // S_start = 0 at a segment start
        decayed_state_mma<false>(acc, b, g, q, states, H, K, V, scale);
    __syncthreads();
    if constexpr (async_tiles<ST>) { // arrives during A's load
        cp_async_load_tile<CHUNK, TILE>(b.Yh, LDH, v + ((int64_t)b.ch.first * H + b.h) * V + b.v0,
                                        (int64_t)H * V, b.ch.len, b.nv, TILE_THREADS);
        cp_async_commit();
    }
    load_tile_bf16(b.Xh, LDH, A + (b.c * H + b.h) * (CHUNK * CHUNK), CHUNK, CHUNK, TILE, CHUNK,
                   CHUNK, TILE_THREADS);
    if constexpr (async_tiles<ST>)
        cp_async_wait<0>();
    else
        load_tile<CHUNK, TILE>(b.Yh, LDH, v + ((int64_t)b.ch.first * H + b.h) * V + b.v0,
                               (int64_t)H * V, b.ch.len, b.nv, TILE_THREADS);
    __syncthreads();
    for (int m = 0; m < 4; m++) // A is zero above the diagonal blocks
        mma_acc<false, false>(acc[m], b.Xh, LDH, 16 * m, b.Yh, LDH, 16 * b.warp, 16 * (m + 1));
    strip_store(b.Bf, acc, b.warp);
    __syncthreads();
    store_tile_bf16<CHUNK, TILE>(o + ((int64_t)b.ch.first * H + b.h) * V + b.v0, (int64_t)H * V,
                                 b.Bf, LDF, b.ch.len, b.nv, TILE_THREADS);
}

// ---- backward ----

// dv[:, v-tile] = A^T dO + (K e^{B_last - B}) G_c (G = 0 after a segment's last chunk).
template <class ST>
__global__ void __launch_bounds__(TILE_THREADS)
    gla_bwd_dv_kernel(bf16 *dv, const bf16 *k, const bf16 *dout, const float *g, const ST *G,
                      const float *A, const int *chunks, const int *cu, int H, int K, int V) {
    extern __shared__ __align__(128) unsigned char smem[];
    const VTileBlock b(smem, chunks, cu, H, K, V);
    FragC acc[4]; // rows 16 m, columns 16 warp
    for (int m = 0; m < 4; m++) wmma::fill_fragment(acc[m], 0.f);
    if constexpr (async_tiles<ST>) { // arrives during A's load
        cp_async_load_tile<CHUNK, TILE>(b.Yh, LDH,
                                        dout + ((int64_t)b.ch.first * H + b.h) * V + b.v0,
                                        (int64_t)H * V, b.ch.len, b.nv, TILE_THREADS);
        cp_async_commit();
    }
    load_tile_bf16(b.Xh, LDH, A + (b.c * H + b.h) * (CHUNK * CHUNK), CHUNK, CHUNK, TILE, CHUNK,
                   CHUNK, TILE_THREADS);
    if constexpr (async_tiles<ST>)
        cp_async_wait<0>();
    else
        load_tile<CHUNK, TILE>(b.Yh, LDH, dout + ((int64_t)b.ch.first * H + b.h) * V + b.v0,
                               (int64_t)H * V, b.ch.len, b.nv, TILE_THREADS);
    __syncthreads();
    // A^T is A read column-major; block (m, kk) of A^T is zero for kk < m.
    for (int m = 0; m < 4; m++)
        mma_acc<true, false>(acc[m], b.Xh + 16 * m * LDH, LDH, 16 * m, b.Yh + 16 * m * LDH, LDH,
                             16 * b.warp, 16 * (4 - m));
    if (!b.ch.seg_last) decayed_state_mma<true>(acc, b, g, k, G, H, K, V, 1.f);
    // Bf is not read after the last barrier: reuse it as the staging tile.
    strip_store(b.Bf, acc, b.warp);
    __syncthreads();
    store_tile_bf16<CHUNK, TILE>(dv + ((int64_t)b.ch.first * H + b.h) * V + b.v0, (int64_t)H * V,
                                 b.Bf, LDF, b.ch.len, b.nv, TILE_THREADS);
}

constexpr int DQK_THREADS = 256; // 8 warps
constexpr size_t DQK_SMEM = sizeof(float) * 4 * FTILE + sizeof(bf16) * 6 * HTILE;

// dq, dk for chunk blockIdx.x, head blockIdx.y, key channels k-tile blockIdx.z:
//   dQ = (dO S_start^T) e^B + intra,  dK = (V G^T) e^{B_last - B} + intra,
//   intra through D = dO V^T (s <= t): dQ_t += sum_s D_ts k_s e^{B_t - B_s},
//   dK_s += sum_t D_ts Q_t e^{B_t - B_s} (Q = scale q), dq = scale dQ.
// Off-diagonal sub-chunk blocks on tensor cores: for dQ of sub-chunk I against the reference
// row 16 I (the forward's Kf); for dK of sub-chunk J against its last row 16 J + 15, so that
// every later row t contributes through one product (Q_t e^{B_t - B_ref}), all exponents <= 0.
// Also writes d log alpha's in-chunk reverse cumsum of q dq - k dk to dg and the chunk total
// to tot [nchunk, H, K]; the carry from later chunks is added by gla_dg_*_kernel. States and G
// of ST, rounded to bf16 tiles either way.
template <class ST>
__global__ void __launch_bounds__(DQK_THREADS, 1)
    gla_bwd_dqdk_kernel(bf16 *dq, bf16 *dk, float *dg, float *tot, const bf16 *q, const bf16 *k,
                        const bf16 *v, const bf16 *dout, const float *g, const ST *states,
                        const ST *G, const int *chunks, const int *cu, int H, int K, int V,
                        float scale) {
    extern __shared__ __align__(128) unsigned char smem[];
    float *Bf = reinterpret_cast<float *>(smem);
    float *dQ = Bf + FTILE;
    float *dK = dQ + FTILE;
    float *T = dK + FTILE; // D in fp32, then staging of the intra products, then q dq - k dk
    bf16 *Qh = reinterpret_cast<bf16 *>(T + FTILE); // raw q, k of the k-tile
    bf16 *Kh = Qh + HTILE;
    bf16 *R = Kh + HTILE; // 256 rows: dO, V, S_start, G tiles; then Dh, Kf, Qr
    const int64_t c = blockIdx.x;
    const int h = blockIdx.y, k0 = blockIdx.z * TILE, warp = threadIdx.x >> 5;
    const Chunk ch = chunk_at(chunks, cu, c);
    const int nk = min(TILE, K - k0);
    const bool has_prev = !ch.seg_first, has_next = !ch.seg_last;
    const int64_t krow0 = ((int64_t)ch.first * H + h) * K + k0;
    const int64_t vrow0 = ((int64_t)ch.first * H + h) * V;
    load_tile<CHUNK, TILE>(Bf, LDF, g + krow0, (int64_t)H * K, ch.len, nk, DQK_THREADS);
    load_tile<CHUNK, TILE>(Qh, LDH, q + krow0, (int64_t)H * K, ch.len, nk, DQK_THREADS);
    load_tile<CHUNK, TILE>(Kh, LDH, k + krow0, (int64_t)H * K, ch.len, nk, DQK_THREADS);
    __syncthreads();
    cumsum_rows(Bf);

    // Warp w owns output tiles p = w and w + 8 of each 64 x 64 product: rows 16 (p / 4),
    // columns 16 (p % 4). D needs only the tiles on and below the diagonal.
    FragC aQ[2], aK[2], aD[2];
    for (int f = 0; f < 2; f++) {
        wmma::fill_fragment(aQ[f], 0.f);
        wmma::fill_fragment(aK[f], 0.f);
        wmma::fill_fragment(aD[f], 0.f);
    }
    bf16 *dOh = R, *Vh = R + HTILE, *Sh = R + 2 * HTILE, *Gh = R + 3 * HTILE;
    for (int v0 = 0; v0 < V; v0 += TILE) {
        const int nv = min(TILE, V - v0);
        __syncthreads();
        load_tile<CHUNK, TILE>(dOh, LDH, dout + vrow0 + v0, (int64_t)H * V, ch.len, nv,
                               DQK_THREADS);
        load_tile<CHUNK, TILE>(Vh, LDH, v + vrow0 + v0, (int64_t)H * V, ch.len, nv, DQK_THREADS);
        if (has_prev)
            load_tile_bf16(Sh, LDH, states + ((c * H + h) * K + k0) * V + v0, V, CHUNK, TILE, nk,
                           nv, DQK_THREADS);
        if (has_next)
            load_tile_bf16(Gh, LDH, G + ((c * H + h) * K + k0) * V + v0, V, CHUNK, TILE, nk, nv,
                           DQK_THREADS);
        __syncthreads();
        for (int f = 0; f < 2; f++) {
            const int p = warp + 8 * f, m = p >> 2, n = p & 3;
            for (int kk = 0; kk < TILE / 16; kk++) {
                FragA a;
                FragBT b;
                wmma::load_matrix_sync(a, dOh + 16 * m * LDH + 16 * kk, LDH);
                if (has_prev) { // dO S^T: S^T is S read column-major
                    wmma::load_matrix_sync(b, Sh + 16 * n * LDH + 16 * kk, LDH);
                    wmma::mma_sync(aQ[f], a, b, aQ[f]);
                }
                if (m >= n) { // dO V^T
                    wmma::load_matrix_sync(b, Vh + 16 * n * LDH + 16 * kk, LDH);
                    wmma::mma_sync(aD[f], a, b, aD[f]);
                }
                if (has_next) { // V G^T
                    wmma::load_matrix_sync(a, Vh + 16 * m * LDH + 16 * kk, LDH);
                    wmma::load_matrix_sync(b, Gh + 16 * n * LDH + 16 * kk, LDH);
                    wmma::mma_sync(aK[f], a, b, aK[f]);
                }
            }
        }
    }
    for (int f = 0; f < 2; f++) {
        const int p = warp + 8 * f, m = p >> 2, n = p & 3;
        wmma::store_matrix_sync(dQ + 16 * m * LDF + 16 * n, aQ[f], LDF, wmma::mem_row_major);
        wmma::store_matrix_sync(dK + 16 * m * LDF + 16 * n, aK[f], LDF, wmma::mem_row_major);
        if (m >= n)
            wmma::store_matrix_sync(T + 16 * m * LDF + 16 * n, aD[f], LDF, wmma::mem_row_major);
    }
    __syncthreads();

    // Inter-chunk decay factors and the diagonal sub-chunk blocks in fp32; the factor tables
    // of the off-diagonal blocks (R is free now).
    bf16 *Dh = R, *Kf = R + CHUNK * LDH, *Qr = R + (CHUNK + 96) * LDH;
    for (int idx = threadIdx.x; idx < CHUNK * TILE; idx += DQK_THREADS) {
        const int t = idx >> 6, i = idx & 63, r = t & ~15;
        const float bt = Bf[t * LDF + i];
        float vq = dQ[t * LDF + i] * __expf(bt);
        for (int s = r; s <= t; s++)
            vq += T[t * LDF + s] * bf2f(Kh[s * LDH + i]) * __expf(bt - Bf[s * LDF + i]);
        float vk = dK[t * LDF + i] * __expf(Bf[(CHUNK - 1) * LDF + i] - bt), sk = 0.f;
        for (int u = t; u < r + 16; u++)
            sk += T[u * LDF + t] * bf2f(Qh[u * LDH + i]) * __expf(Bf[u * LDF + i] - bt);
        dQ[t * LDF + i] = vq;
        dK[t * LDF + i] = vk + scale * sk;
        Dh[t * LDH + i] = f2bf(i <= t ? T[t * LDF + i] : 0.f); // here i indexes the column s
    }
    for (int idx = threadIdx.x; idx < 96 * TILE; idx += DQK_THREADS) {
        const int row = idx / TILE, i = idx % TILE;
        const int I = row < 16 ? 1 : row < 48 ? 2 : 3, s = row - kf_row(I);
        Kf[row * LDH + i] =
            f2bf(bf2f(Kh[s * LDH + i]) * __expf(Bf[16 * I * LDF + i] - Bf[s * LDF + i]));
        const int J = row < 48 ? 0 : row < 80 ? 1 : 2, t = row - qr_row(J) + 16 * (J + 1);
        Qr[row * LDH + i] = f2bf(scale * bf2f(Qh[t * LDH + i]) *
                                 __expf(Bf[t * LDF + i] - Bf[(16 * J + 15) * LDF + i]));
    }
    __syncthreads();

    // dQ[I] += e^{B_t - B_{16I}} (D[I, <16I] Kf_I), I = 1..3: tiles p = (I - 1) * 4 + n.
    for (int f = 0; f < 2; f++) {
        const int p = warp + 8 * f;
        if (p >= 12) break;
        const int I = 1 + p / 4, n = p % 4;
        FragC acc;
        wmma::fill_fragment(acc, 0.f);
        mma_acc<false, false>(acc, Dh, LDH, 16 * I, Kf + kf_row(I) * LDH, LDH, 16 * n, 16 * I);
        wmma::store_matrix_sync(T + 16 * I * LDF + 16 * n, acc, LDF, wmma::mem_row_major);
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < 48 * TILE; idx += DQK_THREADS) {
        const int t = 16 + (idx >> 6), i = idx & 63;
        dQ[t * LDF + i] += T[t * LDF + i] * __expf(Bf[t * LDF + i] - Bf[(t & ~15) * LDF + i]);
    }
    __syncthreads();

    // dK[J] += e^{B_{16J+15} - B_s} (D[>J, J]^T Qr_J), J = 0..2: tiles p = J * 4 + n.
    for (int f = 0; f < 2; f++) {
        const int p = warp + 8 * f;
        if (p >= 12) break;
        const int J = p / 4, n = p % 4;
        FragC acc;
        wmma::fill_fragment(acc, 0.f);
        // blocks (I, J), I > J, of D read column-major = their transposes
        mma_acc<true, false>(acc, Dh + 16 * (J + 1) * LDH, LDH, 16 * J, Qr + qr_row(J) * LDH, LDH,
                             16 * n, 16 * (3 - J));
        wmma::store_matrix_sync(T + 16 * J * LDF + 16 * n, acc, LDF, wmma::mem_row_major);
    }
    __syncthreads();
    add_decayed_dk<DQK_THREADS>(dK, T, Bf);
    __syncthreads();

    // Outputs; T = q dq - k dk (fp32 dq, dk), then its reverse cumsum down the chunk.
    bf16 *dqo = dq + krow0, *dko = dk + krow0;
    for (int idx = threadIdx.x; idx < CHUNK * TILE / 8; idx += DQK_THREADS) {
        const int t = idx >> 3, i0 = (idx & 7) * 8;
        unsigned xq[4], xk[4];
        for (int u = 0; u < 8; u += 2) {
            const int i = i0 + u;
            const float q0 = dQ[t * LDF + i] * scale, q1 = dQ[t * LDF + i + 1] * scale;
            const float k0v = dK[t * LDF + i], k1v = dK[t * LDF + i + 1];
            T[t * LDF + i] = bf2f(Qh[t * LDH + i]) * q0 - bf2f(Kh[t * LDH + i]) * k0v;
            T[t * LDF + i + 1] = bf2f(Qh[t * LDH + i + 1]) * q1 - bf2f(Kh[t * LDH + i + 1]) * k1v;
            xq[u / 2] = pack_bf16(q0, q1);
            xk[u / 2] = pack_bf16(k0v, k1v);
        }
        if (t < ch.len && i0 < nk) {
            *reinterpret_cast<uint4 *>(dqo + t * (int64_t)H * K + i0) =
                make_uint4(xq[0], xq[1], xq[2], xq[3]);
            *reinterpret_cast<uint4 *>(dko + t * (int64_t)H * K + i0) =
                make_uint4(xk[0], xk[1], xk[2], xk[3]);
        }
    }
    __syncthreads();
    if (threadIdx.x < TILE) {
        float acc = 0.f;
        for (int t = CHUNK - 1; t >= 0; t--) {
            acc += T[t * LDF + threadIdx.x];
            T[t * LDF + threadIdx.x] = acc;
        }
        if ((int)threadIdx.x < nk) tot[(c * H + h) * K + k0 + threadIdx.x] = acc;
    }
    __syncthreads();
    store_tile<CHUNK, TILE>(dg + krow0, (int64_t)H * K, T, LDF, ch.len, nk, DQK_THREADS);
}

// tot[c] (per head and channel) <- sum of tot over the chunks after c in its segment.
__global__ void __launch_bounds__(SCAN_THREADS)
    gla_dg_scan_kernel(float *tot, const int *chunks, const int *cu, int64_t nchunk, int HK) {
    const int seg = blockIdx.x;
    const int e = blockIdx.y * SCAN_THREADS + threadIdx.x;
    if (e >= HK) return;
    const SegChunks w = seg_chunks(chunks, cu, nchunk, seg);
    const int n = w.n;
    float *p = tot + w.c0 * HK + e;
    float carry = 0.f, x = p[(int64_t)(n - 1) * HK];
    for (int j = n - 1; j >= 0; j--) {
        const float xn = j > 0 ? p[(int64_t)(j - 1) * HK] : 0.f;
        p[(int64_t)j * HK] = carry;
        carry += x;
        x = xn;
    }
}

// dg of row blockIdx.y of chunk blockIdx.x += the carry of the later chunks of its segment.
__global__ void __launch_bounds__(SCAN_THREADS)
    gla_dg_add_kernel(float *dg, const float *tot, const int *chunks, const int *cu, int HK) {
    const int64_t c = blockIdx.x;
    const int t = blockIdx.y;
    const Chunk ch = chunk_at(chunks, cu, c);
    if (ch.seg_last || t >= ch.len) return;
    float *row = dg + ((int64_t)ch.first + t) * HK;
    const float *carry = tot + c * HK;
    for (int e = threadIdx.x; e < HK; e += SCAN_THREADS) row[e] += carry[e];
}

// The launchers' start: dies on sizes the kernels do not support, more chunks than the grid
// takes or a misaligned buffer among ptrs (n of them); false when there is no chunk to run.
// Kernels above 48 KB of dynamic shared memory must opt in, once per process.
bool prepare_launch(const char *op, const Seqs *s, int H, int K, int V, const void *const *ptrs,
                    int n) {
    char why[160];
    if (!cuda_gla_supports(H, K, V, why, sizeof why)) rt_die("%s: %s", op, why);
    if (s->nchunk > INT32_MAX) rt_die("%s: %lld chunks exceed the grid", op, (long long)s->nchunk);
    for (int i = 0; i < n; i++) cuda_check_aligned(ptrs[i], 16, op);
    if (s->nchunk == 0) return false;
    static bool opted_in;
    if (!opted_in) {
        cuda_allow_smem(gla_scores_kernel<false>, SCORES_SMEM, op);
        cuda_allow_smem(gla_scores_kernel<true>, SCORES_SMEM, op);
        cuda_allow_smem(gla_bwd_dqdk_kernel<float>, DQK_SMEM, op);
        cuda_allow_smem(gla_bwd_dqdk_kernel<bf16>, DQK_SMEM, op);
        opted_in = true;
    }
    return true;
}

template <class ST>
void launch_scores(float *A, const bf16 *q, const bf16 *k, const float *g, const Seqs *s, int H,
                   int K, float scale) {
    gla_scores_kernel<async_tiles<ST>>
        <<<dim3((unsigned)s->nchunk, H), SCORES_THREADS, SCORES_SMEM, cuda_stream()>>>(
            A, q, k, g, (const int *)s->dev_chunk, (const int *)s->dev_cu, H, K, scale);
    CUDA_LAUNCHED();
}

// The scan's grid: segments, blocks over the K x V state (ScanElems<ST>::N elements a thread),
// heads.
template <class ST> dim3 scan_grid(const Seqs *s, int H, int K, int V) {
    return dim3(s->nseg, (unsigned)cdiv((int64_t)K * V / ScanElems<ST>::N, SCAN_THREADS), H);
}

} // namespace

int cuda_gla_supports(int H, int K, int V, char *why, size_t why_size) {
    return cuda_linear_attn_sizes(why, why_size, "GLA", H, K, 256, V, 512);
}

namespace {

// Mamba2's per-head log decay (docs/models.md §mamba2) runs through the per-channel kernels:
// g [N,H] expanded to [N,H,K] (scratch E), and back dg[n,h] = sum over k of dg[n,h,k].
__global__ void expand_head_kernel(float *gk, const float *g, int64_t n, int K) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        gk[i] = g[i / K];
}

__global__ void sum_head_kernel(float *dg, const float *dgk, int64_t rows, int K) {
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x) {
        float acc = 0.f;
        for (int i = 0; i < K; i++) acc += dgk[r * K + i];
        dg[r] = acc;
    }
}

const void *per_channel_g(const LinAttnArgs *a) {
    if (!a->g_per_head) return a->g;
    int64_t n = a->s->ntok * a->H * (int64_t)a->K;
    float *gk = (float *)cuda_scratch(SCRATCH_E, sizeof(float) * (size_t)(n ? n : 1));
    if (n)
        expand_head_kernel<<<(unsigned)(cdiv(n, 256) < 65535 ? cdiv(n, 256) : 65535), 256, 0,
                             cuda_stream()>>>(gk, (const float *)a->g, n, a->K);
    CUDA_LAUNCHED();
    return gk;
}

// The passes of gla_fwd and gla_bwd on states of ST (gla_state: f32 or bf16; the buffer
// `states` is fp32-sized by chunk_states_size, bf16 states use its first half).
//
// gla_state:bf16a: the forward's intra-chunk scores A (fp32, CHUNK x CHUNK a chunk and head)
// kept in the second half of a bf16 `states` for the backward, which then skips its scores
// pass; where they do not fit there (K V < 2 CHUNK^2), NULL: both passes compute them.
float *saved_scores(bool save, void *states, int64_t nch, int H, int K, int V) {
    if (!save || (int64_t)K * V < 2 * CHUNK * CHUNK) return nullptr;
    return (float *)((char *)states + sizeof(bf16) * nch * H * K * V);
}

template <class ST> void gla_fwd(const LinAttnArgs *a, bool save_scores) {
    void *o = a->o, *states = a->states;
    const void *q = a->q, *k = a->k, *v = a->v, *g = per_channel_g(a);
    const Seqs *s = a->s;
    const int H = a->H, K = a->K, V = a->V;
    const double scale = a->scale;
    const void *ptrs[] = {o, states, q, k, v, g, a->state};
    if (!prepare_launch("gla_fwd", s, H, K, V, ptrs, 7)) return;
    cudaStream_t st = cuda_stream();
    const int64_t nch = s->nchunk;
    const int *chunks = (const int *)s->dev_chunk, *cu = (const int *)s->dev_cu;
    const float sc = (float)scale;
    float *blast = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * nch * H * K);
    float *A = saved_scores(save_scores, states, nch, H, K, V);
    if (!A) A = (float *)cuda_scratch(SCRATCH_B, sizeof(float) * nch * H * CHUNK * CHUNK);
    const unsigned nvt = (unsigned)cdiv(V, TILE);
    gla_state_inc_kernel<false, ST><<<dim3((unsigned)nch, H, nvt), TILE_THREADS, TILE_SMEM, st>>>(
        (ST *)states, (float *)a->state, blast, (const bf16 *)k, (const bf16 *)v, (const float *)g,
        chunks, cu, H, K, V, sc);
    CUDA_LAUNCHED();
    gla_scan_kernel<false, ST><<<scan_grid<ST>(s, H, K, V), SCAN_THREADS, 0, st>>>(
        (ST *)states, (float *)a->state, blast, chunks, cu, nch, H, K, V);
    CUDA_LAUNCHED();
    launch_scores<ST>(A, (const bf16 *)q, (const bf16 *)k, (const float *)g, s, H, K, sc);
    gla_fwd_o_kernel<ST><<<dim3((unsigned)nch, H, nvt), TILE_THREADS, TILE_SMEM, st>>>(
        (bf16 *)o, (const bf16 *)q, (const bf16 *)v, (const float *)g, (const ST *)states, A,
        chunks, cu, H, K, V, sc);
    CUDA_LAUNCHED();
}

template <class ST> void gla_bwd(const LinAttnGrads *gr, bool saved) {
    const LinAttnArgs *a = &gr->a;
    const int64_t nhk = a->s->ntok * a->H * (int64_t)a->K;
    void *dq = gr->dq, *dk = gr->dk, *dv = gr->dv;
    void *dg =
        a->g_per_head ? cuda_scratch(SCRATCH_F, sizeof(float) * (size_t)(nhk ? nhk : 1)) : gr->dg;
    const void *dout = gr->dout, *q = a->q, *k = a->k, *v = a->v, *g = per_channel_g(a),
               *states = a->states;
    const Seqs *s = a->s;
    const int H = a->H, K = a->K, V = a->V;
    const double scale = a->scale;
    const void *ptrs[] = {dq, dk, dv, dg, dout, q, k, v, g, states};
    if (!prepare_launch("gla_bwd", s, H, K, V, ptrs, 10)) return;
    cudaStream_t st = cuda_stream();
    const int64_t nch = s->nchunk;
    const int *chunks = (const int *)s->dev_chunk, *cu = (const int *)s->dev_cu;
    const float sc = (float)scale;
    ST *G = (ST *)cuda_scratch(SCRATCH_A, sizeof(ST) * nch * H * K * V);
    float *blast = (float *)cuda_scratch(SCRATCH_B, sizeof(float) * nch * H * K);
    float *A = saved_scores(saved, (void *)states, nch, H, K, V);
    const bool have_scores = A != nullptr;
    if (!A) A = (float *)cuda_scratch(SCRATCH_C, sizeof(float) * nch * H * CHUNK * CHUNK);
    float *tot = (float *)cuda_scratch(SCRATCH_D, sizeof(float) * nch * H * K);
    const unsigned nvt = (unsigned)cdiv(V, TILE), nkt = (unsigned)cdiv(K, TILE);
    gla_state_inc_kernel<true, ST><<<dim3((unsigned)nch, H, nvt), TILE_THREADS, TILE_SMEM, st>>>(
        G, nullptr, blast, (const bf16 *)q, (const bf16 *)dout, (const float *)g, chunks, cu, H, K,
        V, sc);
    CUDA_LAUNCHED();
    gla_scan_kernel<true, ST><<<scan_grid<ST>(s, H, K, V), SCAN_THREADS, 0, st>>>(
        G, nullptr, blast, chunks, cu, nch, H, K, V);
    CUDA_LAUNCHED();
    if (!have_scores)
        launch_scores<ST>(A, (const bf16 *)q, (const bf16 *)k, (const float *)g, s, H, K, sc);
    gla_bwd_dv_kernel<ST><<<dim3((unsigned)nch, H, nvt), TILE_THREADS, TILE_SMEM, st>>>(
        (bf16 *)dv, (const bf16 *)k, (const bf16 *)dout, (const float *)g, G, A, chunks, cu, H, K,
        V);
    CUDA_LAUNCHED();
    // dq, dk and d log alpha, from the states and G (both ST)
    if (kernel_variant(KV_GLA_BWD) == 1) { // gla_bwd:v2 (gla_bwd_v2.cu)
        gla_bwd_dqdk_v2((bf16 *)dq, (bf16 *)dk, (float *)dg, tot, (const bf16 *)q, (const bf16 *)k,
                        (const bf16 *)v, (const bf16 *)dout, (const float *)g, states, G,
                        std::is_same<ST, bf16>::value, s, H, K, V, sc);
    } else {
        gla_bwd_dqdk_kernel<ST><<<dim3((unsigned)nch, H, nkt), DQK_THREADS, DQK_SMEM, st>>>(
            (bf16 *)dq, (bf16 *)dk, (float *)dg, tot, (const bf16 *)q, (const bf16 *)k,
            (const bf16 *)v, (const bf16 *)dout, (const float *)g, (const ST *)states, G, chunks,
            cu, H, K, V, sc);
        CUDA_LAUNCHED();
        const int HK = H * K;
        gla_dg_scan_kernel<<<dim3(s->nseg, (unsigned)cdiv(HK, SCAN_THREADS)), SCAN_THREADS, 0,
                             st>>>(tot, chunks, cu, nch, HK);
        CUDA_LAUNCHED();
        gla_dg_add_kernel<<<dim3((unsigned)nch, CHUNK), SCAN_THREADS, 0, st>>>((float *)dg, tot,
                                                                               chunks, cu, HK);
        CUDA_LAUNCHED();
    }
    if (a->g_per_head) {
        int64_t rows = s->ntok * H;
        sum_head_kernel<<<(unsigned)(cdiv(rows, 256) < 65535 ? cdiv(rows, 256) : 65535), 256, 0,
                          st>>>((float *)gr->dg, (const float *)dg, rows, K);
        CUDA_LAUNCHED();
    }
}

} // namespace

// gla_state: 0 f32, 1 bf16, 2 bf16a (bf16 with the scores saved)
void cuda_gla_fwd(const LinAttnArgs *a) {
    int v = kernel_variant(KV_GLA_STATE);
    if (v)
        gla_fwd<bf16>(a, v == 2);
    else
        gla_fwd<float>(a, false);
}

void cuda_gla_bwd(const LinAttnGrads *gr) {
    int v = kernel_variant(KV_GLA_STATE);
    if (v)
        gla_bwd<bf16>(gr, v == 2);
    else
        gla_bwd<float>(gr, false);
}
