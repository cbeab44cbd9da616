// EURNN's recurrent matrix from its layers of rotations (eurnn_weights_*, docs/models.md
// §nonlinear-rnns). CPU reference: src/cpu/eurnn_weights.c.
//
// A layer rotates pairs of rows, which acts on every column alone: thread k owns column k of
// W (forward) or of Y = W and D = dW (backward, in the work space) and applies the layers in
// turn, so the kernels need no synchronisation. The warps read consecutive columns of a row
// (coalesced). The backward's angle gradient sum_k (d_qk y_pk - d_pk y_qk) is summed over each
// warp's 32 columns, then added with one atomic per warp. Not tuned: a thread does L n / 2
// rotations, the backward L n / 2 atomics per warp.
#include "backend/cuda_ops.h"
#include "lib/cuda_common.cuh"

namespace {

__global__ void eurnn_fwd_kernel(float *W, const float *theta, int n, int L) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    for (int i = 0; i < n; i++) W[(int64_t)i * n + k] = i == k ? 1.f : 0.f;
    const float *th = theta;
    for (int l = 0; l < L; l++) {
        const int pairs = eurnn_layer_pairs(n, l);
        for (int m = 0; m < pairs; m++) {
            const int p = l % 2 + 2 * m;
            float s, c;
            sincosf(th[m], &s, &c);
            float *wp = W + (int64_t)p * n + k, *wq = wp + n;
            const float a = *wp, b = *wq;
            *wp = c * a - s * b;
            *wq = s * a + c * b;
        }
        th += pairs;
    }
}

// Every thread of a warp runs every pair (those past n with zeros), for the warp sums.
__global__ void eurnn_bwd_kernel(float *dtheta, const float *dW, const float *W, const float *theta,
                                 float *Y, float *D, int n, int L, int64_t angles) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    const bool mine = k < n;
    if (mine)
        for (int i = 0; i < n; i++) {
            Y[(int64_t)i * n + k] = W[(int64_t)i * n + k];
            D[(int64_t)i * n + k] = dW[(int64_t)i * n + k];
        }
    int64_t off = angles;
    for (int l = L - 1; l >= 0; l--) {
        const int pairs = eurnn_layer_pairs(n, l);
        off -= pairs;
        for (int m = 0; m < pairs; m++) {
            const int p = l % 2 + 2 * m;
            float g = 0.f;
            if (mine) {
                float *yp = Y + (int64_t)p * n + k, *yq = yp + n, *dp = D + (int64_t)p * n + k,
                      *dq = dp + n;
                const float a = *yp, b = *yq, da = *dp, db = *dq;
                g = db * a - da * b;
                float s, c;
                sincosf(theta[off + m], &s, &c);
                *yp = c * a + s * b; // R^T: the layer's input
                *yq = c * b - s * a;
                *dp = c * da + s * db;
                *dq = c * db - s * da;
            }
            g = warp_sum(g);
            if (lane == 0) atomicAdd(dtheta + off + m, g);
        }
    }
}

} // namespace

void cuda_eurnn_weights_fwd(void *W, const void *theta, int n, int L) {
    eurnn_fwd_kernel<<<cdiv(n, GRID_THREADS), GRID_THREADS, 0, cuda_stream()>>>(
        (float *)W, (const float *)theta, n, L);
    CUDA_LAUNCHED();
}

void cuda_eurnn_weights_bwd(void *dtheta, const void *dW, const void *W, const void *theta,
                            void *work, int n, int L) {
    float *Y = (float *)work, *D = Y + (int64_t)n * n;
    eurnn_bwd_kernel<<<cdiv(n, GRID_THREADS), GRID_THREADS, 0, cuda_stream()>>>(
        (float *)dtheta, (const float *)dW, (const float *)W, (const float *)theta, Y, D, n, L,
        eurnn_angles(n, L));
    CUDA_LAUNCHED();
}
