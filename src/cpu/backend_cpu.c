/* The CPU backend: host memory and the reference implementations in src/cpu/. */
#include <stdio.h>
#include <string.h>

#include "cpu/blas_setup.h"
#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

static void *cpu_alloc(size_t bytes) { return rt_alloc_aligned(bytes); }
static void cpu_release(void *p) { rt_free(p); }
static void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
static void cpu_copy(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
static void cpu_synchronize(void) {}
static size_t cpu_peak_memory(void) { return 0; }
static void cpu_to_act(void *dst, const void *src, int64_t n) {
    if (dst != src) memcpy(dst, src, sizeof(real) * (size_t)n);
}

static Backend cpu_backend = {
    .name = "cpu",
    .device = "host CPU",
    .act_size = sizeof(real),
    .f32_size = sizeof(real),
    .alloc = cpu_alloc,
    .release = cpu_release,
    .zero = cpu_zero,
    .upload = cpu_copy,
    .download = cpu_copy,
    .synchronize = cpu_synchronize,
    .peak_memory = cpu_peak_memory,
    .to_act = cpu_to_act,
    .matmul_fwd = cpu_matmul_fwd,
    .matmul_bwd = cpu_matmul_bwd,
    .embedding_fwd = cpu_embedding_fwd,
    .embedding_bwd = cpu_embedding_bwd,
    .scatter_rows = cpu_scatter_rows,
    .rmsnorm_fwd = cpu_rmsnorm_fwd,
    .add_rmsnorm_fwd = cpu_add_rmsnorm_fwd,
    .rmsnorm_bwd = cpu_rmsnorm_bwd,
    .l2norm_fwd = cpu_l2norm_fwd,
    .l2norm_bwd = cpu_l2norm_bwd,
    .gate_mul_fwd = cpu_gate_mul_fwd,
    .gate_mul_bwd = cpu_gate_mul_bwd,
    .silu_fwd = cpu_silu_fwd,
    .silu_bwd = cpu_silu_bwd,
    .conv_fwd = cpu_conv_fwd,
    .conv_bwd = cpu_conv_bwd,
    .shift_fwd = cpu_shift_fwd,
    .shift_bwd = cpu_shift_bwd,
    .revcumsum = cpu_revcumsum,
    .rope_angles = cpu_rope_angles,
    .rotate_fwd = cpu_rotate_fwd,
    .rotate_bwd = cpu_rotate_bwd,
    .selrope_fwd = cpu_selrope_fwd,
    .selrope_bwd = cpu_selrope_bwd,
    .weightnorm_fwd = cpu_weightnorm_fwd,
    .weightnorm_bwd = cpu_weightnorm_bwd,
    .head_matmul_fwd = cpu_head_matmul_fwd,
    .head_matmul_bwd = cpu_head_matmul_bwd,
    .logsigmoid_fwd = cpu_logsigmoid_fwd,
    .logsigmoid_bwd = cpu_logsigmoid_bwd,
    .gdn_gates_fwd = cpu_gdn_gates_fwd,
    .gdn_gates_bwd = cpu_gdn_gates_bwd,
    .gla_fwd = cpu_gla_fwd,
    .gla_bwd = cpu_gla_bwd,
    .gdn_fwd = cpu_gdn_fwd,
    .gdn_bwd = cpu_gdn_bwd,
    .fox_fwd = cpu_fox_fwd,
    .fox_bwd = cpu_fox_bwd,
    .cross_entropy = cpu_cross_entropy,
    .token_logprobs = cpu_token_logprobs,
    .sumsq = cpu_sumsq,
    .scale = cpu_scale,
    .adamw = cpu_adamw,
};

/* Decayed gates and softmax tails produce subnormal floats, on which x86 arithmetic (exp,
 * GEMM) runs tens of times slower; their contribution is below fp32 resolution anyway.
 * Flush-to-zero and denormals-are-zero are per-thread control bits: set them on every
 * OpenMP thread (BLAS runs on the same threads). */
static void flush_denormals(void) {
#if defined(__x86_64__) || defined(__i386__)
#pragma omp parallel
    {
        _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
        _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
    }
#endif
}

/* The device line names the threads of this process as they are now (a trainer sets them
 * from run.threads before it selects the backend) and the BLAS kernels. */
const Backend *backend_cpu(void) {
    static int ready;
    static char device[160];
    if (!ready) {
        flush_denormals();
        ready = 1;
    }
    snprintf(device, sizeof device, "host CPU, %d threads per rank, BLAS kernels %s",
             par_max_threads(), blas_kernel_name());
    cpu_backend.device = device;
    return &cpu_backend;
}
