// Mamba2's small ops around the SSD (docs/models.md §mamba2; CPU reference src/cpu/mamba2.c): the
// per-head scale v = dt x, the D skip, and the broadcast of B and C from groups to heads (the
// time step and log decay are decay_gates, elementwise.cu). Plain grid-stride kernels; the per-head
// sums go through block partials reduced in block order (cuda_colsum_add), so they are
// deterministic.
#include <stdint.h>

#include "backend/cuda_ops.h"
#include "lib/cuda_common.cuh"
#include "util/error.h"

namespace {

constexpr int THREADS = GRID_THREADS;

// Row blocks of the per-head reductions: at most 64 per head.
int row_blocks(int64_t N) { return (int)(cdiv(N, 4 * THREADS) < 64 ? cdiv(N, 4 * THREADS) : 64); }

__global__ void __launch_bounds__(THREADS)
    head_scale_fwd_kernel(bf16 *y, const bf16 *x, const float *s, int64_t n, int D) {
    GRID_STRIDE(i, n) y[i] = f2bf(s[i / D] * bf2f(x[i]));
}

// One warp per (token, head) row: dx = s dy, ds = sum dy x.
__global__ void __launch_bounds__(THREADS)
    head_scale_bwd_kernel(bf16 *dx, float *ds, const bf16 *dy, const bf16 *x, const float *s,
                          int64_t rows, int D) {
    int lane = threadIdx.x % 32;
    for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        float sr = s[r], acc = 0.f;
        for (int d = lane; d < D; d += 32) {
            float g = bf2f(dy[r * D + d]);
            dx[r * D + d] = f2bf(sr * g);
            acc += g * bf2f(x[r * D + d]);
        }
        acc = warp_sum(acc);
        if (lane == 0) ds[r] = acc;
    }
}

__global__ void __launch_bounds__(THREADS)
    head_skip_fwd_kernel(bf16 *y, const bf16 *x, const float *Dp, int64_t n, int H, int D) {
    GRID_STRIDE(i, n) y[i] = f2bf(bf2f(y[i]) + Dp[(i / D) % H] * bf2f(x[i]));
}

// Block (b, h): rows b, b + nb, ... of head h; dx += Dp dy there, and its sum of dy x goes to
// part[b * H + h].
__global__ void __launch_bounds__(THREADS)
    head_skip_bwd_kernel(bf16 *dx, float *part, const bf16 *dy, const bf16 *x, const float *Dp,
                         int64_t N, int H, int D) {
    __shared__ float red[32];
    int h = blockIdx.y, nb = gridDim.x;
    float dh = Dp[h], acc = 0.f;
    int64_t n_el = N * D; // (token, channel) pairs of head h
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n_el;
         e += (int64_t)nb * blockDim.x) {
        int64_t i = ((e / D) * H + h) * D + e % D;
        float g = bf2f(dy[i]);
        dx[i] = f2bf(bf2f(dx[i]) + dh * g);
        acc += g * bf2f(x[i]);
    }
    acc = block_sum(acc, red);
    if (threadIdx.x == 0) part[(int64_t)blockIdx.x * H + h] = acc;
}

__global__ void __launch_bounds__(THREADS)
    bcast_fwd_kernel(bf16 *out, const bf16 *src, int64_t n, int H, int G, int K) {
    int per = H / G;
    GRID_STRIDE(i, n) {
        int64_t row = i / K;
        int h = (int)(row % H);
        out[i] = src[((row / H) * G + h / per) * K + i % K];
    }
}

__global__ void __launch_bounds__(THREADS)
    bcast_bwd_kernel(bf16 *dsrc, const bf16 *dout, int64_t n, int H, int G, int K) {
    int per = H / G;
    GRID_STRIDE(i, n) { // i over [N, G, K]
        int64_t row = i / K;
        int g = (int)(row % G);
        const bf16 *p = dout + ((row / G) * H + (int64_t)g * per) * K + i % K;
        float acc = 0.f;
        for (int j = 0; j < per; j++) acc += bf2f(p[(int64_t)j * K]);
        dsrc[i] = f2bf(acc);
    }
}

} // namespace

void cuda_head_scale_fwd(void *y, const void *x, const void *s, int64_t N, int H, int D) {
    int64_t n = N * H * D;
    if (n <= 0) return;
    head_scale_fwd_kernel<<<blocks_for(n), THREADS, 0, cuda_stream()>>>((bf16 *)y, (const bf16 *)x,
                                                                        (const float *)s, n, D);
    CUDA_LAUNCHED();
}

void cuda_head_scale_bwd(void *dx, void *ds, const void *dy, const void *x, const void *s,
                         int64_t N, int H, int D) {
    int64_t rows = N * H;
    if (rows <= 0) return;
    head_scale_bwd_kernel<<<blocks_for(rows * 32), THREADS, 0, cuda_stream()>>>(
        (bf16 *)dx, (float *)ds, (const bf16 *)dy, (const bf16 *)x, (const float *)s, rows, D);
    CUDA_LAUNCHED();
}

void cuda_head_skip_fwd(void *y, const void *x, const void *Dp, int64_t N, int H, int D) {
    int64_t n = N * H * D;
    if (n <= 0) return;
    head_skip_fwd_kernel<<<blocks_for(n), THREADS, 0, cuda_stream()>>>((bf16 *)y, (const bf16 *)x,
                                                                       (const float *)Dp, n, H, D);
    CUDA_LAUNCHED();
}

void cuda_head_skip_bwd(void *dx, void *dDp, const void *dy, const void *x, const void *Dp,
                        int64_t N, int H, int D) {
    if (N <= 0 || H <= 0) return;
    if (H > 65535) rt_die("head_skip_bwd: H=%d unsupported (at most 65535)", H);
    int nb = row_blocks(N * D);
    float *part = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * (size_t)nb * (size_t)H);
    head_skip_bwd_kernel<<<dim3((unsigned)nb, (unsigned)H), THREADS, 0, cuda_stream()>>>(
        (bf16 *)dx, part, (const bf16 *)dy, (const bf16 *)x, (const float *)Dp, N, H, D);
    CUDA_LAUNCHED();
    cuda_colsum_add((float *)dDp, part, nb, H);
}

void cuda_group_bcast_fwd(void *out, const void *src, int64_t N, int H, int G, int K) {
    int64_t n = N * H * K;
    if (n <= 0) return;
    bcast_fwd_kernel<<<blocks_for(n), THREADS, 0, cuda_stream()>>>((bf16 *)out, (const bf16 *)src,
                                                                   n, H, G, K);
    CUDA_LAUNCHED();
}

void cuda_group_bcast_bwd(void *dsrc, const void *dout, int64_t N, int H, int G, int K) {
    int64_t n = N * G * K;
    if (n <= 0) return;
    bcast_bwd_kernel<<<blocks_for(n), THREADS, 0, cuda_stream()>>>((bf16 *)dsrc, (const bf16 *)dout,
                                                                   n, H, G, K);
    CUDA_LAUNCHED();
}
