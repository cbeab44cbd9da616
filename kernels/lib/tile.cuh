// Shared-memory tiles of the chunked kernels (gla.cu, gdn.cu, fox.cu): cp.async copies, bf16
// packing, and the loaders and storers between a row-major global matrix (row r at
// src + r * stride) and a shared-memory tile (rows ld elements apart). Global accesses move 16
// bytes: pointers, strides, ld and column counts keep 16-byte alignment. ROWS x COLS (or rows x
// cols) is the tile's extent, nt the threads sharing the copy (a constant where the launch
// fixes it, so that the loops unroll).
#pragma once

#include <string.h>

#include "lib/cuda_common.cuh"

namespace {

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared, zero-filled when !valid (src is then not read).
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
}
// 4 bytes global -> shared, zero-filled when !valid (single fp32 values of a strided column).
__device__ __forceinline__ void cp_async4(void *dst, const void *src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
                 "r"(valid ? 4 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most N committed groups are still in flight.
template <int N = 0> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    uint32_t r;
    memcpy(&r, &v, 4);
    return r;
}

// Four (eight) floats as bf16 at dst.
__device__ __forceinline__ void store4(bf16 *dst, float4 x) {
    reinterpret_cast<__nv_bfloat162 *>(dst)[0] = __floats2bfloat162_rn(x.x, x.y);
    reinterpret_cast<__nv_bfloat162 *>(dst)[1] = __floats2bfloat162_rn(x.z, x.w);
}
__device__ __forceinline__ void store8(bf16 *dst, const float *x) {
    uint4 u;
    __nv_bfloat162 *p = reinterpret_cast<__nv_bfloat162 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) p[i] = __floats2bfloat162_rn(x[2 * i], x[2 * i + 1]);
    *reinterpret_cast<uint4 *>(dst) = u;
}

// log2 of a power of two: the vectors per row of a tile (COLS a power-of-two multiple of them).
constexpr int log2i(int x) { return x > 1 ? 1 + log2i(x / 2) : 0; }

// Starts copying rows 0..ROWS-1, columns 0..width-1 (width % 8 == 0) of a bf16 matrix into
// shared memory; rows >= nvalid become zero and are not read. The caller commits and waits.
template <int ROWS>
__device__ __forceinline__ void cp_async_tile(bf16 *dst, int ld, const bf16 *src, int64_t stride,
                                              int nvalid, int width, int nt) {
    const int per = width >> 3;
    for (int i = threadIdx.x; i < ROWS * per; i += nt) {
        const int r = i / per, c = (i - r * per) << 3;
        const bool ok = r < nvalid;
        cp_async16(dst + r * ld + c, ok ? src + r * stride + c : src, ok);
    }
}

// Starts copying src[i * stride], i < N, into dst[i]: a column of fp32 values (per-token terms
// of one head, stride H) next to the tiles; entries i >= nvalid become zero and are not read.
template <int N>
__device__ __forceinline__ void cp_async_column(float *dst, const float *src, int64_t stride,
                                                int nvalid, int nt) {
    for (int i = threadIdx.x; i < N; i += nt) {
        const bool ok = i < nvalid;
        cp_async4(dst + i, ok ? src + i * stride : src, ok);
    }
}

// Calls f(r, c, in) for each 16-byte vector of VEC elements of a ROWS x COLS tile (row r, first
// column c; in: r < nrows and c < ncols), thread threadIdx.x taking every nt-th: the storers'
// loop.
template <int ROWS, int COLS, int VEC, class F>
__device__ __forceinline__ void for_each_vector(int nrows, int ncols, int nt, F &&f) {
    constexpr int PER = COLS / VEC, SH = log2i(PER);
    for (int idx = threadIdx.x; idx < ROWS * PER; idx += nt) {
        const int r = idx >> SH, c = (idx & (PER - 1)) * VEC;
        f(r, c, r < nrows && c < ncols);
    }
}

// Fills all ROWS x COLS entries of a shared tile of T (bf16 or float) at once: entries at rows
// >= nrows or columns >= ncols are zero (ncols a multiple of 16 bytes' worth of T). Its own loop:
// through for_each_vector the bounds test moves before the zero fill in the PTX.
template <int ROWS, int COLS, class T>
__device__ __forceinline__ void load_tile(T *dst, int ld, const T *src, int64_t stride, int nrows,
                                          int ncols, int nt) {
    constexpr int VEC = 16 / sizeof(T), PER = COLS / VEC, SH = log2i(PER);
    for (int idx = threadIdx.x; idx < ROWS * PER; idx += nt) {
        const int r = idx >> SH, c = (idx & (PER - 1)) * VEC;
        uint4 x = make_uint4(0, 0, 0, 0);
        if (r < nrows && c < ncols) x = *reinterpret_cast<const uint4 *>(src + r * stride + c);
        *reinterpret_cast<uint4 *>(dst + r * ld + c) = x;
    }
}

// load_tile by cp.async: starts the copy of the same tile (the out-of-range entries zero-filled,
// not read); the caller commits and waits.
template <int ROWS, int COLS, class T>
__device__ __forceinline__ void cp_async_load_tile(T *dst, int ld, const T *src, int64_t stride,
                                                   int nrows, int ncols, int nt) {
    for_each_vector<ROWS, COLS, 16 / sizeof(T)>(nrows, ncols, nt, [&](int r, int c, bool in) {
        cp_async16(dst + r * ld + c, in ? src + r * stride + c : src, in);
    });
}

// The rows x cols entries (cols % 4 == 0) of a bf16 shared tile from an fp32 matrix (states and
// their gradients as tensor-core operands): zero at rows >= nrows or columns >= ncols.
__device__ __forceinline__ void load_tile_bf16(bf16 *dst, int ld, const float *src, int64_t stride,
                                               int rows, int cols, int nrows, int ncols, int nt) {
    const int per = cols >> 2;
    for (int e = threadIdx.x; e < rows * per; e += nt) {
        const int r = e / per, c = (e - r * per) << 2;
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r < nrows && c < ncols) x = *reinterpret_cast<const float4 *>(src + r * stride + c);
        store4(dst + r * ld + c, x);
    }
}

// The same from a bf16 matrix (states kept in bf16, kernel_variants gla_state:bf16), so that a
// kernel templated on its states' element type loads either with one call (cols % 8 == 0).
__device__ __forceinline__ void load_tile_bf16(bf16 *dst, int ld, const bf16 *src, int64_t stride,
                                               int rows, int cols, int nrows, int ncols, int nt) {
    const int per = cols >> 3;
    for (int e = threadIdx.x; e < rows * per; e += nt) {
        const int r = e / per, c = (e - r * per) << 3;
        uint4 x = make_uint4(0, 0, 0, 0);
        if (r < nrows && c < ncols) x = *reinterpret_cast<const uint4 *>(src + r * stride + c);
        *reinterpret_cast<uint4 *>(dst + r * ld + c) = x;
    }
}

// Writes rows < nrows, columns < ncols of a ROWS x COLS shared tile of T to a global matrix.
template <int ROWS, int COLS, class T>
__device__ __forceinline__ void store_tile(T *dst, int64_t stride, const T *src, int ld, int nrows,
                                           int ncols, int nt) {
    for_each_vector<ROWS, COLS, 16 / sizeof(T)>(nrows, ncols, nt, [&](int r, int c, bool in) {
        if (in)
            *reinterpret_cast<uint4 *>(dst + r * stride + c) =
                *reinterpret_cast<const uint4 *>(src + r * ld + c);
    });
}

// The same from an fp32 shared tile to a bf16 matrix.
template <int ROWS, int COLS>
__device__ __forceinline__ void store_tile_bf16(bf16 *dst, int64_t stride, const float *src, int ld,
                                                int nrows, int ncols, int nt) {
    for_each_vector<ROWS, COLS, 8>(nrows, ncols, nt, [&](int r, int c, bool in) {
        if (in) store8(dst + r * stride + c, src + r * ld + c);
    });
}

} // namespace
