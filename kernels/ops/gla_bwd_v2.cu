// gla_bwd:v2 (src/device/kernel_variants.c): GLA's backward dq/dk pass and d log alpha's carry,
// beside the verified gla_bwd_dqdk_kernel and gla_dg_*_kernel of gla.cu, with the same math
// (their comments; docs/models.md §gla, §chunked-forms: secondary chunking, every exponent <= 0).
// Changes:
//   - the V loop's dO and V tiles (and S_start, G when they are bf16) double-buffered with
//     cp.async: tile j + 1 loads while tile j's products run. fp32 S_start and G are fetched
//     into registers with vector loads before tile j's products and rounded to bf16 into the
//     next stage after them: staging them in fp32 would take 2 x 17 KB more per stage, and
//     two blocks per SM leave 5 KB;
//   - B (the in-chunk cumsum of g) by a 256-thread scan that runs while the first tiles load,
//     and d log alpha's in-chunk reverse cumsum by the same scan, instead of 64-step loops run
//     by 64 threads (a pre-pass writing B once per chunk would cost a launch and 68 MB of
//     traffic at the 370M shape, against about 20 dependent steps here);
//   - two blocks per SM: at most 128 registers, 108 KB of shared memory, the fp32 tiles dQ, dK
//     and D living only after the V loop, in the space of its tile buffers;
//   - the blocks of a chunk's k-tiles next to each other in the grid, so the second reads dO
//     and V from L2;
//   - the carry of d log alpha from later chunks by direct sums of their totals in the kernel
//     that adds it, instead of a scan over chunks (one block per segment and 256 columns, 64
//     dependent steps at 4096 tokens) and an add.
#include "backend/cuda_ops.h"
#include "lib/chunks.cuh"
#include "lib/cuda_common.cuh"
#include "lib/gla_tiles.cuh"
#include "lib/mma.cuh"
#include "ops/gla_bwd_v2.h"
#include "util/error.h"

namespace {

constexpr int NT = 256; // threads of the dq/dk pass: 8 warps, 2 blocks per SM
static_assert(NT == 4 * TILE, "the scans give each thread 16 rows of one column");

// Shared memory of the dq/dk pass, byte offsets. The whole kernel: Bf (fp32 B), Qh, Kh (bf16
// q, k of the k-tile), part (the scans' row-group totals). Region U: during the V loop two
// stages of bf16 dO, V, S_start, G tiles; after it fp32 dQ, dK, bf16 Dh (D for the tensor-core
// blocks) and the factor tables Kf, Qr (96 rows each), which first hold D in fp32 and then
// stage the off-diagonal products.
constexpr size_t F_BYTES = sizeof(float) * FTILE, H_BYTES = sizeof(bf16) * HTILE;
constexpr size_t TABLE_BYTES = sizeof(bf16) * 96 * LDH;
constexpr size_t OFF_Q = F_BYTES, OFF_K = OFF_Q + H_BYTES, OFF_PART = OFF_K + H_BYTES;
constexpr size_t OFF_U = OFF_PART + sizeof(float) * 4 * TILE;
constexpr size_t U_LOOP = 2 * 4 * H_BYTES, U_AFTER = 2 * F_BYTES + H_BYTES + 2 * TABLE_BYTES;
constexpr size_t DQK_V2_SMEM = OFF_U + (U_LOOP > U_AFTER ? U_LOOP : U_AFTER);
static_assert(2 * (DQK_V2_SMEM + 1024) <= 228 * 1024, "two blocks per SM (1 KB reserved each)");
static_assert(F_BYTES <= 2 * TABLE_BYTES, "D in fp32 fits in Kf + Qr");
static_assert(sizeof(float) * 48 * LDF <= TABLE_BYTES, "48 rows of products fit in Kf or Qr");

// Inclusive scan down the 64 rows of a 64 x 64 fp32 tile (row stride LDF): forward
// X_t = sum_{u<=t} x_u, or REV X_t = sum_{u>=t} x_u. Thread (q, i) = (tid / 64, tid % 64) sums
// rows 16 q .. 16 q + 15 of column i, then adds the totals of the row groups before it (REV:
// after it), exchanged in part[4][64], nearest last. The caller syncs before and after.
template <bool REV> __device__ __forceinline__ void scan_rows(float *X, float *part) {
    const int i = threadIdx.x % TILE, grp = threadIdx.x / TILE;
    float *col = X + 16 * grp * LDF + i;
    float x[16], acc = 0.f;
#pragma unroll
    for (int r = 0; r < 16; r++) {
        const int rr = REV ? 15 - r : r;
        acc += col[rr * LDF];
        x[rr] = acc;
    }
    part[grp * TILE + i] = acc;
    __syncthreads();
    float off = 0.f;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const int uu = REV ? 3 - u : u;
        if (REV ? uu > grp : uu < grp) off += part[uu * TILE + i];
    }
#pragma unroll
    for (int r = 0; r < 16; r++) col[r * LDF] = x[r] + off;
}

// An fp32 64 x 64 tile of S_start or G in registers, 4 float4 per thread: vector u of thread
// tid is row (tid + 256 u) / 16, columns 4 ((tid + 256 u) % 16) + 0..3.
constexpr int F32_VECS = CHUNK * TILE / 4 / NT;

__device__ __forceinline__ void fetch_f32(float4 (&x)[F32_VECS], const float *src, int64_t stride,
                                          int nrows, int ncols) {
#pragma unroll
    for (int u = 0; u < F32_VECS; u++) {
        const int e = threadIdx.x + NT * u, r = e >> 4, c = (e & 15) * 4;
        x[u] = r < nrows && c < ncols ? *reinterpret_cast<const float4 *>(src + r * stride + c)
                                      : make_float4(0.f, 0.f, 0.f, 0.f);
    }
}

__device__ __forceinline__ void put_bf16(bf16 *dst, const float4 (&x)[F32_VECS]) {
#pragma unroll
    for (int u = 0; u < F32_VECS; u++) {
        const int e = threadIdx.x + NT * u;
        store4(dst + (e >> 4) * LDH + (e & 15) * 4, x[u]);
    }
}

// dq, dk for chunk blockIdx.x / nkt, key channels of k-tile blockIdx.x % nkt, head blockIdx.y;
// the products and factors of gla_bwd_dqdk_kernel (gla.cu), which says what each one is. Also
// d log alpha's in-chunk reverse cumsum of q dq - k dk to dg and its chunk total to tot
// [nchunk, H, K]; gla_dg_carry_kernel adds the carry from later chunks. ST: the element type
// of states and G.
template <class ST>
__global__ void __launch_bounds__(NT, 2)
    gla_bwd_dqdk_v2_kernel(bf16 *dq, bf16 *dk, float *dg, float *tot, const bf16 *q, const bf16 *k,
                           const bf16 *v, const bf16 *dout, const float *g, const ST *states,
                           const ST *G, const int *chunks, const int *cu, int H, int K, int V,
                           float scale) {
    constexpr bool ST_BF16 = std::is_same_v<ST, bf16>;
    extern __shared__ __align__(128) unsigned char smem[];
    float *Bf = reinterpret_cast<float *>(smem);
    bf16 *Qh = reinterpret_cast<bf16 *>(smem + OFF_Q), *Kh = reinterpret_cast<bf16 *>(smem + OFF_K);
    float *part = reinterpret_cast<float *>(smem + OFF_PART);
    bf16 *stages = reinterpret_cast<bf16 *>(smem + OFF_U); // stage s: dO, V, S, G from 4 s HTILE
    float *dQ = reinterpret_cast<float *>(smem + OFF_U), *dK = dQ + FTILE;
    bf16 *Dh = reinterpret_cast<bf16 *>(dK + FTILE), *Kf = Dh + HTILE, *Qr = Kf + 96 * LDH;
    float *T = reinterpret_cast<float *>(Kf); // D in fp32 until Kf and Qr are built

    const int nkt = (K + TILE - 1) / TILE;
    const int64_t c = blockIdx.x / nkt;
    const int h = blockIdx.y, k0 = (int)(blockIdx.x % nkt) * TILE, warp = threadIdx.x >> 5;
    const Chunk ch = chunk_at(chunks, cu, c);
    const int nk = min(TILE, K - k0), nvt = (V + TILE - 1) / TILE;
    const bool has_prev = !ch.seg_first, has_next = !ch.seg_last;
    const int64_t krow0 = ((int64_t)ch.first * H + h) * K + k0;
    const int64_t vrow0 = ((int64_t)ch.first * H + h) * V;
    // The chunk's slot of states, G and tot, in 32 bits (one register less; the launch checks).
    const int slot = (int)c * H + h;
    const ST *Sg = states + ((int64_t)slot * K + k0) * V, *Gg = G + ((int64_t)slot * K + k0) * V;

    // V tile j into stage j % 2: dO, V (and S, G in bf16) by cp.async, the caller commits;
    // fp32 S, G into sreg, greg, rounded into the stage by put_states(j).
    float4 sreg[F32_VECS], greg[F32_VECS];
    auto start_tile = [&](int j) {
        const int v0 = j * TILE, nv = min(TILE, V - v0);
        bf16 *st = stages + (j & 1) * 4 * HTILE;
        cp_async_load_tile<CHUNK, TILE>(st, LDH, dout + vrow0 + v0, (int64_t)H * V, ch.len, nv, NT);
        cp_async_load_tile<CHUNK, TILE>(st + HTILE, LDH, v + vrow0 + v0, (int64_t)H * V, ch.len, nv,
                                        NT);
        if constexpr (ST_BF16) {
            if (has_prev)
                cp_async_load_tile<CHUNK, TILE>(st + 2 * HTILE, LDH, Sg + v0, V, nk, nv, NT);
            if (has_next)
                cp_async_load_tile<CHUNK, TILE>(st + 3 * HTILE, LDH, Gg + v0, V, nk, nv, NT);
        } else {
            if (has_prev) fetch_f32(sreg, Sg + v0, V, nk, nv);
            if (has_next) fetch_f32(greg, Gg + v0, V, nk, nv);
        }
    };
    auto put_states = [&](int j) {
        if constexpr (!ST_BF16) {
            bf16 *st = stages + (j & 1) * 4 * HTILE;
            if (has_prev) put_bf16(st + 2 * HTILE, sreg);
            if (has_next) put_bf16(st + 3 * HTILE, greg);
        }
    };

    // g first (the scan needs only it), then q, k and the first V tile.
    cp_async_load_tile<CHUNK, TILE>(Bf, LDF, g + krow0, (int64_t)H * K, ch.len, nk, NT);
    cp_async_commit();
    cp_async_load_tile<CHUNK, TILE>(Qh, LDH, q + krow0, (int64_t)H * K, ch.len, nk, NT);
    cp_async_load_tile<CHUNK, TILE>(Kh, LDH, k + krow0, (int64_t)H * K, ch.len, nk, NT);
    start_tile(0);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    scan_rows<false>(Bf, part); // padded rows hold g = 0: B[63] = B_last
    put_states(0);

    // Warp w owns output tiles p = w and w + 8 of each 64 x 64 product: rows 16 (p / 4),
    // columns 16 (p % 4). D needs only the tiles on and below the diagonal.
    FragC aQ[2], aK[2], aD[2];
    for (int f = 0; f < 2; f++) {
        wmma::fill_fragment(aQ[f], 0.f);
        wmma::fill_fragment(aK[f], 0.f);
        wmma::fill_fragment(aD[f], 0.f);
    }
    for (int j = 0; j < nvt; j++) {
        cp_async_wait<0>();
        __syncthreads(); // stage j % 2 is complete and every warp is done with the other one
        if (j + 1 < nvt) {
            start_tile(j + 1);
            cp_async_commit();
        }
        const bf16 *dOh = stages + (j & 1) * 4 * HTILE, *Vh = dOh + HTILE, *Sh = Vh + HTILE,
                   *Gh = Sh + HTILE;
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
        if (j + 1 < nvt) put_states(j + 1); // that stage was last read before this barrier
    }
    __syncthreads(); // the stages are read: dQ, dK and T take their place
    for (int f = 0; f < 2; f++) {
        const int p = warp + 8 * f, m = p >> 2, n = p & 3;
        wmma::store_matrix_sync(dQ + 16 * m * LDF + 16 * n, aQ[f], LDF, wmma::mem_row_major);
        wmma::store_matrix_sync(dK + 16 * m * LDF + 16 * n, aK[f], LDF, wmma::mem_row_major);
        if (m >= n)
            wmma::store_matrix_sync(T + 16 * m * LDF + 16 * n, aD[f], LDF, wmma::mem_row_major);
    }
    __syncthreads();

    // Inter-chunk decay factors and the diagonal sub-chunk blocks in fp32, D to bf16.
    for (int idx = threadIdx.x; idx < CHUNK * TILE; idx += NT) {
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
    __syncthreads(); // T is read: Kf and Qr take its place
    for (int idx = threadIdx.x; idx < 96 * TILE; idx += NT) {
        const int row = idx / TILE, i = idx % TILE;
        const int I = row < 16 ? 1 : row < 48 ? 2 : 3, s = row - kf_row(I);
        Kf[row * LDH + i] =
            f2bf(bf2f(Kh[s * LDH + i]) * __expf(Bf[16 * I * LDF + i] - Bf[s * LDF + i]));
        const int J = row < 48 ? 0 : row < 80 ? 1 : 2, t = row - qr_row(J) + 16 * (J + 1);
        Qr[row * LDH + i] = f2bf(scale * bf2f(Qh[t * LDH + i]) *
                                 __expf(Bf[t * LDF + i] - Bf[(16 * J + 15) * LDF + i]));
    }
    __syncthreads();

    // dQ[I] += e^{B_t - B_{16I}} (D[I, <16I] Kf_I), I = 1..3: tiles p = (I - 1) * 4 + n, staged
    // in Kf (rows t - 16) once every warp has read it.
    FragC acc[2];
    for (int f = 0; f < 2; f++) {
        const int p = warp + 8 * f, I = 1 + p / 4, n = p % 4;
        wmma::fill_fragment(acc[f], 0.f);
        if (p < 12)
            mma_acc<false, false>(acc[f], Dh, LDH, 16 * I, Kf + kf_row(I) * LDH, LDH, 16 * n,
                                  16 * I);
    }
    __syncthreads();
    float *P = reinterpret_cast<float *>(Kf);
    for (int f = 0; f < 2; f++) {
        const int p = warp + 8 * f, I = 1 + p / 4, n = p % 4;
        if (p < 12)
            wmma::store_matrix_sync(P + 16 * (I - 1) * LDF + 16 * n, acc[f], LDF,
                                    wmma::mem_row_major);
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < 48 * TILE; idx += NT) {
        const int t = 16 + (idx >> 6), i = idx & 63;
        dQ[t * LDF + i] +=
            P[(t - 16) * LDF + i] * __expf(Bf[t * LDF + i] - Bf[(t & ~15) * LDF + i]);
    }

    // dK[J] += e^{B_{16J+15} - B_s} (D[>J, J]^T Qr_J), J = 0..2: tiles p = J * 4 + n, staged in
    // Qr (rows s) once every warp has read it. Dh and Qr are not written above.
    for (int f = 0; f < 2; f++) {
        const int p = warp + 8 * f, J = p / 4, n = p % 4;
        wmma::fill_fragment(acc[f], 0.f);
        // blocks (I, J), I > J, of D read column-major = their transposes
        if (p < 12)
            mma_acc<true, false>(acc[f], Dh + 16 * (J + 1) * LDH, LDH, 16 * J, Qr + qr_row(J) * LDH,
                                 LDH, 16 * n, 16 * (3 - J));
    }
    __syncthreads();
    P = reinterpret_cast<float *>(Qr);
    for (int f = 0; f < 2; f++) {
        const int p = warp + 8 * f, J = p / 4, n = p % 4;
        if (p < 12)
            wmma::store_matrix_sync(P + 16 * J * LDF + 16 * n, acc[f], LDF, wmma::mem_row_major);
    }
    __syncthreads();
    add_decayed_dk<NT>(dK, P, Bf);
    __syncthreads();

    // Outputs; dQ <- q dq - k dk in place (fp32 dq, dk), then its reverse cumsum down the chunk.
    // (the loop of gla.cu's v1, inline there so that its code stays the verified one's)
    bf16 *dqo = dq + krow0, *dko = dk + krow0;
    for (int idx = threadIdx.x; idx < CHUNK * TILE / 8; idx += NT) {
        const int t = idx >> 3, i0 = (idx & 7) * 8;
        unsigned xq[4], xk[4];
        for (int u = 0; u < 8; u += 2) {
            const int i = i0 + u;
            const float q0 = dQ[t * LDF + i] * scale, q1 = dQ[t * LDF + i + 1] * scale;
            const float k0v = dK[t * LDF + i], k1v = dK[t * LDF + i + 1];
            dQ[t * LDF + i] = bf2f(Qh[t * LDH + i]) * q0 - bf2f(Kh[t * LDH + i]) * k0v;
            dQ[t * LDF + i + 1] = bf2f(Qh[t * LDH + i + 1]) * q1 - bf2f(Kh[t * LDH + i + 1]) * k1v;
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
    scan_rows<true>(dQ, part);
    __syncthreads();
    if ((int)threadIdx.x < nk) tot[(int64_t)slot * K + k0 + threadIdx.x] = dQ[threadIdx.x];
    store_tile<CHUNK, TILE>(dg + krow0, (int64_t)H * K, dQ, LDF, ch.len, nk, NT);
}

constexpr int CARRY_THREADS = 256;
constexpr int CARRY_ROWS = 32; // rows of a chunk per block

// dg of rows CARRY_ROWS blockIdx.y .. of chunk blockIdx.x += its carry, the sum of the totals
// tot [nchunk, H K] of the later chunks of its segment, summed directly (last chunk first, the
// order of gla.cu's gla_dg_scan_kernel): at most segment length / 64 reads per element, from L2.
__global__ void __launch_bounds__(CARRY_THREADS)
    gla_dg_carry_kernel(float *dg, const float *tot, const int *chunks, const int *cu, int HK) {
    const int64_t c = blockIdx.x;
    const Chunk ch = chunk_at(chunks, cu, c);
    const int t0 = blockIdx.y * CARRY_ROWS, rows = min(CARRY_ROWS, ch.len - t0);
    if (ch.seg_last || rows <= 0) return;
    const int later = (cu[ch.seg + 1] - (ch.first + ch.len) + CHUNK - 1) / CHUNK;
    float *row0 = dg + ((int64_t)ch.first + t0) * HK;
    for (int e = threadIdx.x; e < HK; e += CARRY_THREADS) {
        float carry = 0.f;
#pragma unroll 8
        for (int j = later; j >= 1; j--) carry += tot[(c + j) * HK + e];
#pragma unroll 4
        for (int t = 0; t < rows; t++) row0[(int64_t)t * HK + e] += carry;
    }
}

// The shared-memory opt-in of the dq/dk pass, and the carveout that gives two blocks their
// 2 x (108 + 1) KB of the SM's 228 (the driver may otherwise pick one that fits one block).
template <class ST> bool opt_in_smem() {
    cuda_allow_smem(gla_bwd_dqdk_v2_kernel<ST>, DQK_V2_SMEM, "gla_bwd");
    CUDA_CHECK(cudaFuncSetAttribute(gla_bwd_dqdk_v2_kernel<ST>,
                                    cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared));
    return true;
}

// The dq/dk pass with states and G of type ST.
template <class ST>
void launch_dqdk(bf16 *dq, bf16 *dk, float *dg, float *tot, const bf16 *q, const bf16 *k,
                 const bf16 *v, const bf16 *dout, const float *g, const void *states, const void *G,
                 const Seqs *s, int H, int K, int V, float scale) {
    static const bool ready = opt_in_smem<ST>(); // at the first launch
    (void)ready;
    const int64_t blocks = s->nchunk * cdiv(K, TILE);
    if (blocks > INT32_MAX || s->nchunk * H > INT32_MAX) // the grid; the kernel's slot index
        rt_die("gla_bwd: %lld chunks x %d heads exceed the v2 kernel's grid", (long long)s->nchunk,
               H);
    gla_bwd_dqdk_v2_kernel<ST><<<dim3((unsigned)blocks, H), NT, DQK_V2_SMEM, cuda_stream()>>>(
        dq, dk, dg, tot, q, k, v, dout, g, (const ST *)states, (const ST *)G,
        (const int *)s->dev_chunk, (const int *)s->dev_cu, H, K, V, scale);
    CUDA_LAUNCHED();
}

} // namespace

void gla_bwd_dqdk_v2(bf16 *dq, bf16 *dk, float *dg, float *tot, const bf16 *q, const bf16 *k,
                     const bf16 *v, const bf16 *dout, const float *g, const void *states,
                     const void *G, bool state_bf16, const Seqs *s, int H, int K, int V,
                     float scale) {
    if (state_bf16)
        launch_dqdk<bf16>(dq, dk, dg, tot, q, k, v, dout, g, states, G, s, H, K, V, scale);
    else
        launch_dqdk<float>(dq, dk, dg, tot, q, k, v, dout, g, states, G, s, H, K, V, scale);
    gla_dg_carry_kernel<<<dim3((unsigned)s->nchunk, CHUNK / CARRY_ROWS), CARRY_THREADS, 0,
                          cuda_stream()>>>(dg, tot, (const int *)s->dev_chunk,
                                           (const int *)s->dev_cu, H * K);
    CUDA_LAUNCHED();
}
