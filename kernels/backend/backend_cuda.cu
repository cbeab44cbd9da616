// The CUDA backend: device memory from a stream-ordered pool, one compute stream (the NCCL
// collectives have their own, comm_nccl.cu), the table of kernels. bf16 [act], fp32 [f32]
// (src/backend.h). Where the device has no memory pools (or ROTOR_CUDA_ALLOC=plain), cudaMalloc /
// cudaFree instead, the peak read from the device's free memory.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/comm_nccl.h"
#include "backend/cuda_ops.h"
#include "backend/op_costs.cuh"
#include "backend/profile.cuh"
#include "device/kernel_variants.h"
#include "lib/cuda_common.cuh"
#include "ops/gemm.h"
#include "util/error.h"

static cudaStream_t stream;
static cudaMemPool_t pool;
static bool plain_alloc;              // cudaMalloc / cudaFree instead of the pool
static size_t plain_base, plain_peak; // device memory in use at start, and the peak since
static void *scratch[SCRATCH_SLOTS];
static size_t scratch_bytes[SCRATCH_SLOTS];

cudaStream_t cuda_stream() { return stream; }

static int device_attribute(cudaDeviceAttr a) {
    int dev = 0, v = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&v, a, dev));
    return v;
}

void cuda_check_aligned(const void *p, size_t bytes, const char *op) {
    if ((uintptr_t)p % bytes) rt_die("%s: buffer %p is not %zu-byte aligned", op, p, bytes);
}

int cuda_unsupported(char *why, size_t why_size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (why_size) vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return 0;
}

void cuda_allow_smem_at(const void *kernel, size_t bytes, const char *op) {
    if (bytes > (size_t)cuda_max_smem_optin())
        rt_die("%s: needs %zu bytes of shared memory per block, the GPU allows %d", op, bytes,
               cuda_max_smem_optin());
    if (bytes > 48 * 1024)
        CUDA_CHECK(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

// Block (32, 16): 32 columns, 16 row groups summed in shared memory.
__global__ void __launch_bounds__(512)
    colsum_add_kernel(float *__restrict__ out, const float *__restrict__ part, int rows, int cols) {
    __shared__ float red[16][33];
    int e = blockIdx.x * 32 + threadIdx.x;
    float s = 0.f;
    if (e < cols) {
#pragma unroll 8
        for (int r = threadIdx.y; r < rows; r += 16) s += part[(int64_t)r * cols + e];
    }
    red[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && e < cols) {
        float t = 0.f;
        for (int g = 0; g < 16; g++) t += red[g][threadIdx.x];
        out[e] += t;
    }
}

void cuda_colsum_add(float *out, const float *part, int rows, int cols) {
    colsum_add_kernel<<<(unsigned)cdiv(cols, 32), dim3(32, 16), 0, cuda_stream()>>>(out, part, rows,
                                                                                    cols);
    CUDA_LAUNCHED();
}

int cuda_sm_count() {
    static int n;
    if (!n) n = device_attribute(cudaDevAttrMultiProcessorCount);
    return n;
}

int cuda_max_smem_optin() {
    static int n;
    if (!n) n = device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    return n;
}

void cuda_fail(cudaError_t e, const char *what, const char *file, int line) {
    rt_die("CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e), cudaGetErrorString(e), what,
           file, line);
}

static size_t device_used() {
    size_t free_b = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
    return total - free_b;
}

static size_t used_high() {
    if (plain_alloc) return plain_peak;
    uint64_t v = 0;
    CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &v));
    return (size_t)v;
}

void *cuda_alloc(size_t bytes) {
    void *p = NULL;
    cudaError_t e = plain_alloc ? cudaMalloc(&p, bytes ? bytes : 1)
                                : cudaMallocAsync(&p, bytes ? bytes : 1, stream);
    if (plain_alloc && e == cudaSuccess) {
        size_t used = device_used() - plain_base;
        if (used > plain_peak) plain_peak = used;
    }
    if (e == cudaErrorMemoryAllocation) {
        size_t free_b = 0, total = 0;
        cudaMemGetInfo(&free_b, &total);
        rt_die("GPU out of memory allocating %.1f MiB (peak so far %.1f MiB, device %.1f MiB "
               "free of %.1f MiB); lower train.micro_batch or the context length",
               bytes / 1048576.0, used_high() / 1048576.0, free_b / 1048576.0, total / 1048576.0);
    }
    CUDA_CHECK(e);
    return p;
}

// cudaFree waits for the device: nothing queued still reads the buffer.
void cuda_release(void *p) { CUDA_CHECK(plain_alloc ? cudaFree(p) : cudaFreeAsync(p, stream)); }
static void cu_zero(void *p, size_t bytes) { CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream)); }

static const char *memory_kind(const void *p) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return "unknown";
    }
    return a.type == cudaMemoryTypeDevice    ? "device"
           : a.type == cudaMemoryTypeHost    ? "pinned host"
           : a.type == cudaMemoryTypeManaged ? "managed"
                                             : "pageable host";
}

// A copy between host and device memory; a failure names both pointers, their kinds and
// the size.
static void copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, const char *op) {
    if (!bytes) return;
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, stream);
    if (e != cudaSuccess)
        rt_die("CUDA error %s (%s) in %s of %zu bytes from %p (%s memory) to %p (%s memory)",
               cudaGetErrorName(e), cudaGetErrorString(e), op, bytes, src, memory_kind(src), dst,
               memory_kind(dst));
}

// From pageable host memory the copy has read the source when it returns.
void cuda_upload(void *dst, const void *src, size_t bytes) {
    copy(dst, src, bytes, cudaMemcpyHostToDevice, "upload");
}

static void cu_download(void *dst, const void *src, size_t bytes) {
    copy(dst, src, bytes, cudaMemcpyDeviceToHost, "download");
    CUDA_CHECK(cudaStreamSynchronize(stream));
}

static void cu_copy(void *dst, const void *src, size_t bytes) {
    copy(dst, src, bytes, cudaMemcpyDeviceToDevice, "copy");
}

static void cu_synchronize() { CUDA_CHECK(cudaStreamSynchronize(stream)); }

// Page-locked host memory: device-to-host copies into it run at the full PCIe / NVLink rate.
// NULL when the system refuses (the caller falls back to pageable memory).
static void *cu_host_alloc(size_t bytes) {
    void *p = NULL;
    if (cudaMallocHost(&p, bytes ? bytes : 1) == cudaSuccess) return p;
    cudaGetLastError(); // else the next launch check (CUDA_LAUNCHED) would report this error
    return NULL;
}

static void cu_host_release(void *p) { CUDA_CHECK(cudaFreeHost(p)); }
static size_t cu_peak_memory() { return used_high(); }

void *cuda_scratch(int slot, size_t bytes) {
    if (bytes > scratch_bytes[slot]) {
        if (scratch[slot]) cuda_release(scratch[slot]);
        scratch[slot] = cuda_alloc(bytes);
        scratch_bytes[slot] = bytes;
    }
    return scratch[slot];
}

static void cu_profile(int on);

// Dense bf16 tensor-core peak (FLOP/s) for MFU; 0 where the device is not known.
static double peak_flops(const cudaDeviceProp *p) {
    if (p->major == 9 && p->minor == 0) {
        if (strstr(p->name, "PCIe")) return 756e12;
        return 989.4e12; // H100 SXM, H200, GH200
    }
    if (p->major == 8 && p->minor == 0) return 312e12; // A100
    return 0;
}

// Memory bandwidth of the datasheet (bytes/s) for the profile's GB/s; 0 where not known.
static double peak_bandwidth(const cudaDeviceProp *p) {
    double gib = (double)p->totalGlobalMem / (1 << 30);
    if (p->major == 9 && p->minor == 0) {
        if (strstr(p->name, "PCIe")) return 2.0e12;
        return gib > 100 ? 4.8e12 : 3.35e12; // H200 : H100 SXM
    }
    if (p->major == 8 && p->minor == 0) return gib > 60 ? 2.039e12 : 1.555e12; // A100 80 / 40 GB
    return 0;
}

static Backend cuda_backend; // filled by backend_cuda() on the first call

template <> struct Cost<cu_zero> {
    static OpCost of(void *, size_t bytes) { return OpCost{0, (double)bytes, ""}; }
};
template <> struct Cost<cuda_upload> {
    static OpCost of(void *, const void *, size_t bytes) { return OpCost{0, (double)bytes, ""}; }
};

// The fixed fields of the table: the device's own are set by backend_cuda(), the ops (with
// zero and upload) by cu_profile.
static void fill_table(Backend *b) {
    b->name = "cuda";
    b->act_size = CUDA_ACT_SIZE;
    b->f32_size = CUDA_F32_SIZE;
    b->alloc = cuda_alloc;
    b->release = cuda_release;
    b->download = cu_download;
    b->copy = cu_copy;
    b->synchronize = cu_synchronize;
    b->peak_memory = cu_peak_memory;
    b->host_alloc = cu_host_alloc;
    b->host_release = cu_host_release;
    b->supports = cuda_supports;
    b->seqs_prepare = cuda_seqs_prepare;
    b->seqs_release = cuda_seqs_release;
    b->comm_create_id = cuda_comm_create_id;
    b->comm_init = cuda_comm_init;
    b->reduce_start = cuda_reduce_start;
    b->allgather_start = cuda_allgather_start;
    b->comm_wait = cuda_comm_wait;
    b->profile = cu_profile;
    b->profile_read = cuda_profile_read;
}

// The ops of the table, plain or timed by the profiler (profile.cuh); the memset of the
// gradients and the uploads of a step are timed too.
static void cu_profile(int on) {
#define ROTOR_SET_OP(ret, op, params, args)                                                        \
    cuda_backend.op = on ? timed<cuda_##op>(#op) : cuda_##op;
    BACKEND_OPS(ROTOR_SET_OP)
#undef ROTOR_SET_OP
    cuda_backend.zero = on ? timed<cu_zero>("zero") : cu_zero;
    cuda_backend.upload = on ? timed<cuda_upload>("upload") : cuda_upload;
}

extern "C" const Backend *backend_cuda(int local_rank, char *why, size_t why_size) {
    static int state; // 0 untried, 1 ready, -1 failed
    static char reason[512];
    if (state == 0) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess || n == 0) {
            snprintf(reason, sizeof reason, "%s",
                     e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device visible");
            state = -1;
        } else {
            int dev = local_rank % n;
            cudaDeviceProp prop;
            CUDA_CHECK(cudaSetDevice(dev));
            CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
            if (prop.major < 8) {
                snprintf(reason, sizeof reason,
                         "%.200s has compute capability %d.%d; bf16 kernels need 8.0 or newer",
                         prop.name, prop.major, prop.minor);
                state = -1;
            } else {
                CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
                const char *alloc = getenv("ROTOR_CUDA_ALLOC");
                plain_alloc = (alloc && !strcmp(alloc, "plain")) ||
                              !device_attribute(cudaDevAttrMemoryPoolsSupported);
                if (plain_alloc) {
                    plain_base = device_used();
                } else {
                    CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
                    uint64_t keep = UINT64_MAX; // keep freed blocks for reuse
                    CUDA_CHECK(
                        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
                }
                char err[512], spec[256];
                if (kernel_variants_from_env(err, sizeof err)) rt_die("%s", err);
                kernel_variants_describe(spec, sizeof spec);
                if (spec[0])
                    fprintf(stderr,
                            "rotor: kernel variants %s (ROTOR_KERNEL_VARIANT), not the "
                            "verified defaults\n",
                            spec);
                gemm_init();
                fill_table(&cuda_backend);
                cuda_backend.peak_flops = peak_flops(&prop);
                cuda_backend.peak_bandwidth = peak_bandwidth(&prop);
                cu_profile(0);
                cuda_backend.comm_id_size = cuda_comm_id_size;
                static char device_name[sizeof prop.name];
                snprintf(device_name, sizeof device_name, "%s", prop.name);
                cuda_backend.device = device_name;
                snprintf(reason, sizeof reason, "%s", prop.name);
                state = 1;
            }
        }
    }
    if (why) snprintf(why, why_size, "%s", reason);
    return state == 1 ? &cuda_backend : NULL;
}
