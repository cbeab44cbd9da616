// The MLP's gated products (MatmulGateMulArgs, GateMulMatmulDx). Variant swiglu_gemm:pair
// (src/device/kernel_variants.c, the verified default) runs the ops they stand for in turn:
// matmul_fwd then gate_mul_fwd; matmul_bwd's dx into the scratch dp then
// gate_mul_bwd_rebuild. swiglu_gemm:cutlass (and cutlass_n256, with wider tiles) runs each as
// one CUTLASS product with the gate in its epilogue (kernels/cutlass_ops/swiglu_gemm.cu), where the
// build has CUTLASS and the call is one it takes (swish gates, widths of multiples of 8, aligned
// buffers, an sm_90 device); other calls take the pair.
#include <stdio.h>

#include "backend/cuda_ops.h"
#include "device/kernel_variants.h"
#include "lib/cuda_common.cuh"
#include "util/error.h"
#include "cutlass_ops/swiglu_gemm.h"
#ifndef ROTOR_WITH_CUTLASS
// This build has no CUTLASS kernels (CMakeLists.txt, ROTOR_CUTLASS): choosing them is an error.
static int no_cutlass(SwigluTile) {
    rt_die("swiglu_gemm:cutlass: this build has no CUTLASS kernels (configure with "
           "-DROTOR_CUTLASS=ON, docs/gpu.md \"Kernel variants\")");
}
#define cutlass_matmul_gate_mul_fwd(a, tile, why) no_cutlass(tile)
#define cutlass_gate_mul_matmul_dx(a, tile, why) no_cutlass(tile)
#endif

// A call swiglu_gemm:cutlass does not take goes to the pair, said once a process on stderr.
static void took_pair(const char *op, int M, int N, int K, const char *why) {
    static bool said = false;
    if (!said)
        fprintf(stderr, "rotor: swiglu_gemm:cutlass: %s %dx%dx%d runs the pair: %s\n", op, M, N, K,
                why);
    said = true;
}

// The tile of the CUTLASS variant chosen (1: cutlass, 2: cutlass_n256).
static SwigluTile tile() { return kernel_variant(KV_SWIGLU_GEMM) == 2 ? SWIGLU_N256 : SWIGLU_N128; }

void cuda_matmul_gate_mul_fwd(const MatmulGateMulArgs *a) {
    const char *why = "";
    if (kernel_variant(KV_SWIGLU_GEMM)) {
        if (cutlass_matmul_gate_mul_fwd(a, tile(), &why)) return;
        took_pair("matmul_gate_mul_fwd", a->M, a->N, a->K, why);
    }
    cuda_matmul_fwd(a->y, a->x, a->w, NULL, a->M, a->N, a->K);
    cuda_gate_mul_fwd(a->out, a->y, a->g, (int64_t)a->M * a->N, a->act);
}

void cuda_gate_mul_matmul_dx(const GateMulMatmulDx *a) {
    const char *why = "";
    if (kernel_variant(KV_SWIGLU_GEMM)) {
        if (cutlass_gate_mul_matmul_dx(a, tile(), &why)) return;
        took_pair("gate_mul_matmul_dx", a->M, a->N, a->K, why);
    }
    cuda_matmul_bwd(a->dp, NULL, NULL, a->dout, NULL, a->w, a->M, a->N, a->K, 0);
    cuda_gate_mul_bwd_rebuild(a->p, a->dx, a->dg, a->dp, a->x, a->g, (int64_t)a->M * a->K, a->act);
}
