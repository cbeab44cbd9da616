// Shared by every CUDA kernel file: element types, the stream, error checks, small device
// helpers. [act] buffers are bf16, [f32] buffers are float (see src/backend.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "backend.h"

typedef __nv_bfloat16 bf16;

// The one stream every kernel, cuBLASLt call and copy of the backend runs on (the NCCL
// collectives run on a stream of their own ordered by events, comm_nccl.cu).
cudaStream_t cuda_stream();

// Dies with the CUDA error string, the failing expression and its place.
void cuda_fail(cudaError_t e, const char *what, const char *file, int line);
#define CUDA_CHECK(x)                                                                              \
    do {                                                                                           \
        cudaError_t _e = (x);                                                                      \
        if (_e != cudaSuccess) cuda_fail(_e, #x, __FILE__, __LINE__);                              \
    } while (0)
// After every kernel launch: catches bad launch configurations at once.
#define CUDA_LAUNCHED() CUDA_CHECK(cudaGetLastError())

// Device memory from the backend's pool (Backend.alloc, release) and a copy from host memory
// (Backend.upload), on the stream.
void *cuda_alloc(size_t bytes);
void cuda_release(void *p);
void cuda_upload(void *dst, const void *src, size_t bytes);

// Scratch device memory owned by the backend (grown on demand, never shrunk); valid until
// the next call with the same slot. Slots let one op hold several scratch buffers.
enum { SCRATCH_A = 0, SCRATCH_B, SCRATCH_C, SCRATCH_D, SCRATCH_E, SCRATCH_F, SCRATCH_SLOTS };
void *cuda_scratch(int slot, size_t bytes);

static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// V consecutive elements moved with one load/store (V * sizeof(T) bytes, aligned to that).
template <class T, int V> struct alignas(sizeof(T) * V) Pack { T v[V]; };
template <int V, class T> __device__ __forceinline__ Pack<T, V> ld_vec(const T *p) {
    return *reinterpret_cast<const Pack<T, V> *>(p);
}
template <int V, class T> __device__ __forceinline__ void st_vec(T *p, const Pack<T, V> &x) {
    *reinterpret_cast<Pack<T, V> *>(p) = x;
}

// Dies naming the op when p is not aligned to `bytes` (vectorised kernels need it).
void cuda_check_aligned(const void *p, size_t bytes, const char *op);

// For the shape queries of cuda_ops.h: writes the reason (printf format) to why and returns 0.
int cuda_unsupported(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// The head sizes of a chunked linear-attention kernel family ("GLA", "GDN", supports.cu): H >= 1, K
// and V multiples of 16 in 16..k_max and 16..v_max. 1, or 0 with the reason naming the limit.
int cuda_linear_attn_sizes(char *why, size_t why_size, const char *family, int H, int K, int k_max,
                           int V, int v_max);

// Lets a kernel launch with `bytes` of dynamic shared memory (an opt-in above 48 KB); dies
// naming the op and both sizes when the device allows less.
void cuda_allow_smem_at(const void *kernel, size_t bytes, const char *op);
template <class Kernel> void cuda_allow_smem(Kernel *kernel, size_t bytes, const char *op) {
    cuda_allow_smem_at((const void *)kernel, bytes, op);
}

// out[e] += sum over rows of part[r * cols + e], in a fixed order (deterministic parameter
// gradients from per-block partial sums); out and part [f32].
void cuda_colsum_add(float *out, const float *part, int rows, int cols);

__device__ __forceinline__ float2 f2(float a, float b) { return make_float2(a, b); }
__device__ __forceinline__ float2 operator+(float2 a, float2 b) { return f2(a.x + b.x, a.y + b.y); }
__device__ __forceinline__ float2 operator-(float2 a, float2 b) { return f2(a.x - b.x, a.y - b.y); }
__device__ __forceinline__ float2 operator*(float2 a, float2 b) { return f2(a.x * b.x, a.y * b.y); }
__device__ __forceinline__ float2 operator*(float s, float2 a) { return f2(s * a.x, s * a.y); }

// Grid-stride loops of the elementwise kernels (mamba2.cu, lru_weights.cu, rotrnn.cu): blocks of
// GRID_THREADS threads, enough for n elements but at most 4096 blocks.
constexpr int GRID_THREADS = 256;
static inline unsigned blocks_for(int64_t n) {
    int64_t b = cdiv(n, GRID_THREADS);
    return (unsigned)(b < 4096 ? b : 4096);
}
#define GRID_STRIDE(i, n)                                                                          \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

// Properties of the backend's device, read once.
int cuda_sm_count();
int cuda_max_smem_optin(); // shared memory a block may opt in to (bytes)

__device__ __forceinline__ float bf2f(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ bf16 f2bf(float x) { return __float2bfloat16_rn(x); }
// Two adjacent elements (4-byte aligned bf16, 8-byte aligned fp32) as a float2.
__device__ __forceinline__ float2 ld2(const bf16 *p) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(p));
}
__device__ __forceinline__ void st2(bf16 *p, float2 v) {
    *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(v.x, v.y);
}
__device__ __forceinline__ float2 ldf2(const float *p) {
    return *reinterpret_cast<const float2 *>(p);
}
__device__ __forceinline__ void stf2(float *p, float2 v) { *reinterpret_cast<float2 *>(p) = v; }

// Gates feeding fp32 recurrences (GDN, Mamba2): accurate expf / log1pf, the CPU's softplus
// branches.
__device__ __forceinline__ float sigmoid_acc(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ float softplus_acc(float x) {
    return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}
__device__ __forceinline__ float sigmoidf_(float x) { return 1.f / (1.f + __expf(-x)); }
// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))
__device__ __forceinline__ float logsigmoidf_(float x) {
    return fminf(x, 0.f) - log1pf(__expf(-fabsf(x)));
}
__device__ __forceinline__ float softplusf_(float x) { return x > 20.f ? x : log1pf(__expf(x)); }

constexpr unsigned FULL_MASK = 0xffffffffu; // all 32 lanes of a warp
constexpr float L2E = 1.4426950408889634f;  // log2(e): softmax in base 2 (fox.cu, decode.cu)
constexpr float LN2 = 0.6931471805599453f;  // log(2): log-sum-exp back from base 2

// Sum over a warp (all 32 lanes active), in float or double.
template <class T> __device__ __forceinline__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}
// Sum over the 4 lanes 4g..4g+3 of a quad (all 32 lanes active).
__device__ __forceinline__ float quad_sum(float v) {
    v += __shfl_xor_sync(FULL_MASK, v, 1);
    return v + __shfl_xor_sync(FULL_MASK, v, 2);
}
// Inclusive prefix sum of x over the lanes of a warp (all 32 active); *excl gets the exclusive
// one (0 on lane 0).
__device__ __forceinline__ float warp_scan(float x, float *excl) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const float y = __shfl_up_sync(FULL_MASK, x, o);
        if (lane >= o) x += y;
    }
    *excl = __shfl_up_sync(FULL_MASK, x, 1);
    if (lane == 0) *excl = 0.f;
    return x;
}
// Inclusive prefix sums over a warp's 32 E values, E consecutive ones per lane (element
// E * lane + e in x[e]); returns the total on every lane.
template <int E> __device__ __forceinline__ float warp_prefix(float (&x)[E]) {
#pragma unroll
    for (int e = 1; e < E; e++) x[e] += x[e - 1];
    float excl;
    const float incl = warp_scan(x[E - 1], &excl);
#pragma unroll
    for (int e = 0; e < E; e++) x[e] += excl;
    return __shfl_sync(FULL_MASK, incl, 31);
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
// `shared` needs 32 elements; the call synchronises the block.
template <class T> __device__ __forceinline__ T block_sum(T v, T *shared) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < nw ? shared[lane] : T(0);
    return warp_sum(v);
}
