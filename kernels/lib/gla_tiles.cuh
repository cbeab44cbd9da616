// The 64 x 64 tiles of the chunked GLA kernels (kernels/ops/gla.cu and its variants): tile
// extents and strides, the in-chunk cumulative sum of the log gates, and the row offsets of the
// secondary chunking's factor tables (docs/models.md §gla).
#pragma once

#include "lib/chunks.cuh"
#include "lib/cuda_common.cuh"

namespace {

constexpr int TILE = 64;           // channels per K or V tile
constexpr int LDH = TILE + 8;      // row stride of bf16 tiles in shared memory (elements)
constexpr int LDF = TILE + 4;      // row stride of fp32 tiles in shared memory (elements)
constexpr int HTILE = CHUNK * LDH; // elements of a 64-row bf16 tile
constexpr int FTILE = CHUNK * LDF; // elements of a 64-row fp32 tile
static_assert(TILE == 64, "the tile loops assume 64-channel tiles");

// In-chunk cumulative sum down the rows of a 64 x 64 fp32 tile of log gates (one thread per
// channel). Padded rows hold g = 0, so they repeat B of the last real row: B[63] = B_last.
__device__ void cumsum_rows(float *B) {
    if (threadIdx.x < TILE) {
        float acc = 0.f;
        for (int t = 0; t < CHUNK; t++) {
            acc += B[t * LDF + threadIdx.x];
            B[t * LDF + threadIdx.x] = acc;
        }
    }
}

// Row offsets of the per-sub-chunk factor tables (secondary chunking, 16-row sub-chunks):
// Kf of sub-chunk I = 1..3 holds the rows s < 16 I at rows kf_row(I) + s (96 rows);
// Qr of sub-chunk J = 0..2 holds the rows t >= 16 (J + 1) at rows qr_row(J) + t - 16 (J + 1).
__device__ __forceinline__ int kf_row(int I) { return 8 * I * (I - 1); }
__device__ __forceinline__ int qr_row(int J) { return J == 0 ? 0 : J == 1 ? 48 : 80; }

// The dq/dk passes' (gla.cu v1, gla_bwd_v2.cu) dK[J] += e^{B_{16J+15} - B_s} P_s for the rows s
// < 48 of sub-chunks J = 0..2, P their products with the later sub-chunks (staged fp32).
template <int NT>
__device__ __forceinline__ void add_decayed_dk(float *dK, const float *P, const float *Bf) {
    for (int idx = threadIdx.x; idx < 48 * TILE; idx += NT) {
        const int s = idx >> 6, i = idx & 63;
        dK[s * LDF + i] += P[s * LDF + i] * __expf(Bf[(s | 15) * LDF + i] - Bf[s * LDF + i]);
    }
}

} // namespace
