// The MLP's gated products with the gate in the product's epilogue (swiglu_gemm:cutlass,
// src/device/kernel_variants.c): CUTLASS warp-specialised Hopper GEMMs (wgmma, TMA) whose
// epilogue visitor trees read the gate and write what gate_mul would. Built only with
// -DROTOR_CUTLASS=ON (CMakeLists.txt); called by kernels/ops/gemm.cu.
#pragma once

#include "backend.h"

// A block's tile of the product's output: 128 x 128 (swiglu_gemm:cutlass) or 128 x 256
// (swiglu_gemm:cutlass_n256), 64 deep.
enum SwigluTile { SWIGLU_N128, SWIGLU_N256 };

// Each returns 1 when it ran, or 0 without launching anything when the shape, the alignment
// or the device is not one it supports (why: the reason, for the caller's fallback message).
int cutlass_matmul_gate_mul_fwd(const MatmulGateMulArgs *a, SwigluTile tile, const char **why);
int cutlass_gate_mul_matmul_dx(const GateMulMatmulDx *a, SwigluTile tile, const char **why);
