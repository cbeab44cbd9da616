/* The CPU backend: host memory and the reference implementations in src/cpu/. */
#include <stdio.h>
#include <string.h>

#include "cpu/blas_setup.h"
#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "cpu/profile.h"
#include "util/error.h"
#include "util/timer.h"

#if defined(__x86_64__) || defined(__i386__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

static void *cpu_alloc(size_t bytes) { return rt_alloc_aligned(bytes); }
static void cpu_release(void *p) { rt_free(p); }
static void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
/* The profiler also times the zeroing of the gradients (the memset of a step). */
static void timed_zero(void *p, size_t bytes) {
    OpCost cost = {.bytes = (double)bytes};
    double t0 = rt_now();
    cpu_zero(p, bytes);
    cpu_profile_record("zero", &cost, rt_now() - t0);
}
static void cpu_copy(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
static void cpu_synchronize(void) {}
static size_t cpu_peak_memory(void) { return 0; }
void cpu_to_act(void *dst, const void *src, int64_t n) {
    if (dst != src) memcpy(dst, src, sizeof(real) * (size_t)n);
}

static void cpu_profile(int on);

static Backend cpu_backend = {.name = "cpu",
                              .device = "host CPU",
                              .act_size = sizeof(real),
                              .f32_size = sizeof(real),
                              .alloc = cpu_alloc,
                              .release = cpu_release,
                              .zero = cpu_zero,
                              .upload = cpu_copy,
                              .download = cpu_copy,
                              .copy = cpu_copy,
                              .synchronize = cpu_synchronize,
                              .peak_memory = cpu_peak_memory,
                              .profile = cpu_profile,
                              .profile_read = cpu_profile_read,
#define ROTOR_CPU_OP(ret, name, params, args) .name = cpu_##name,
                              BACKEND_OPS(ROTOR_CPU_OP)
#undef ROTOR_CPU_OP
};

static void cpu_profile(int on) {
    cpu_profile_ops(&cpu_backend, on);
    cpu_backend.zero = on ? timed_zero : cpu_zero;
}

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
