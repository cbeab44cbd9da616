// Tensor-core products of the chunked kernels, bf16 operands in shared memory, fp32
// accumulators: wmma 16x16x16 fragments (gla.cu, gdn.cu) and warp-level mma.sync m16n8k16 with
// ldmatrix (fox.cu).
//
// mma.sync fragments follow the PTX ISA layout of mma.m16n8k16: lane = 4 g + t holds C
// elements (g, 2t..2t+1) and (g+8, 2t..2t+1) of each 16x8 tile; ldmatrix.x4 loads four 8x8
// bf16 matrices, lane i giving the address of row i%8 of matrix i/8.
#pragma once

#include <mma.h>

#include <type_traits>

#include "lib/tile.cuh"

namespace {

namespace wmma = nvcuda::wmma;

// wmma fragments: A and B row-major, or read column-major (the transpose of a row-major tile).
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragAT = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBT = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// acc += op(A)[r0:r0+16, 0:n] op(B)[0:n, c0:c0+16] for row-major bf16 matrices A, B in shared
// memory with leading dimensions lda, ldb; op(X) = X^T where the flag is set; n % 16 == 0.
template <bool TA, bool TB>
__device__ __forceinline__ void mma_acc(FragC &acc, const bf16 *A, int lda, int r0, const bf16 *B,
                                        int ldb, int c0, int n) {
    std::conditional_t<TA, FragAT, FragA> fa;
    std::conditional_t<TB, FragBT, FragB> fb;
    for (int kk = 0; kk < n; kk += 16) {
        wmma::load_matrix_sync(fa, TA ? A + kk * lda + r0 : A + r0 * lda + kk, lda);
        wmma::load_matrix_sync(fb, TB ? B + c0 * ldb + kk : B + kk * ldb + c0, ldb);
        wmma::mma_sync(acc, fa, fb, acc);
    }
}

__device__ __forceinline__ void ldsm(uint32_t (&r)[4], const bf16 *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm_t(uint32_t (&r)[4], const bf16 *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

// c += a (16x16, row) * b (16x8, col), bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The A operand (16 x 16 at row m0, column k0) of a row-major [m][k] tile with row stride
// ld, as 4 registers; the matrices are (rows 0-7 | 8-15) x (cols 0-7 | 8-15), rows first.
__device__ __forceinline__ void load_a(uint32_t (&r)[4], const bf16 *s, int ld, int m0, int k0) {
    const int l = threadIdx.x & 31;
    ldsm(r, s + (m0 + (l & 7) + ((l >> 3) & 1) * 8) * ld + k0 + (l >> 4) * 8);
}
// The A operand from a [k][m] tile (A^T stored row-major).
__device__ __forceinline__ void load_a_t(uint32_t (&r)[4], const bf16 *s, int ld, int k0, int m0) {
    const int l = threadIdx.x & 31;
    ldsm_t(r, s + (k0 + (l & 7) + (l >> 4) * 8) * ld + m0 + ((l >> 3) & 1) * 8);
}
// B operands of two 16 x 8 tiles (columns n0..n0+7 in r[0..1], n0+8.. in r[2..3]) from an
// [n][k] tile (B^T row-major: keys for Q K^T).
__device__ __forceinline__ void load_b(uint32_t (&r)[4], const bf16 *s, int ld, int n0, int k0) {
    const int l = threadIdx.x & 31;
    ldsm(r, s + (n0 + (l & 7) + (l >> 4) * 8) * ld + k0 + ((l >> 3) & 1) * 8);
}
// The same from a [k][n] tile (B row-major: values for P V).
__device__ __forceinline__ void load_b_t(uint32_t (&r)[4], const bf16 *s, int ld, int k0, int n0) {
    const int l = threadIdx.x & 31;
    ldsm_t(r, s + (k0 + (l & 7) + ((l >> 3) & 1) * 8) * ld + n0 + (l >> 4) * 8);
}

// Accumulator tiles 2kk, 2kk+1 (16 x 16 of C) as the A operand of the next product.
__device__ __forceinline__ void acc_to_a(uint32_t (&a)[4], const float (&c0)[4],
                                         const float (&c1)[4]) {
    a[0] = pack_bf16(c0[0], c0[1]);
    a[1] = pack_bf16(c0[2], c0[3]);
    a[2] = pack_bf16(c1[0], c1[1]);
    a[3] = pack_bf16(c1[2], c1[3]);
}

} // namespace
