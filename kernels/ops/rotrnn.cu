// RotRNN's orthogonal bases and weights (docs/models.md §rotrnn; CPU references src/cpu/expm.c and
// src/cpu/rotrnn_weights.c).
//
// orth_expm: one block per head runs the CPU's algorithm in fp32 on n x n matrices kept in the
// op's global scratch (6 n^2 floats per head): S = M - M^T scaled by 2^-s with
// ||S||_1 / 2^s <= 1/2, the Taylor series of degree 12 by Horner's rule, s squarings. The
// backward carries the pair (A, L) of the block matrix [[A, L], [0, A]] through the same
// steps from X = S^T = -S and E = dP, giving L = L(S^T, dP), and adds L - L^T to dM. Each
// product is n^3 multiply-adds spread over the block's threads, read from L1/L2; the matrices
// are small (n = state channels per head) and made once per pass.
//
// rotrnn_weights: a block per head for its sums (||B_h||^2, xi, and in the backward
// <dBw_h, P^T B_h>), then one thread per output element with its inner product over n (or
// over d for dP), in a fixed order. Precision: parameters, P and every sum in fp32; Bw, Cw
// written as bf16.
#include <stdint.h>

#include <type_traits>

#include "backend/cuda_ops.h"
#include "lib/cuda_common.cuh"

namespace {

constexpr int THREADS = GRID_THREADS;
constexpr int TAYLOR = 12;

// C = A B (n x n, C distinct from A and B) by the block's threads, then a barrier.
__device__ void block_mm(float *C, const float *A, const float *B, int n) {
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
        int i = e / n, j = e % n;
        float acc = 0.f;
        for (int k = 0; k < n; k++) acc += A[i * n + k] * B[k * n + j];
        C[e] = acc;
    }
    __syncthreads();
}

// Squarings s with ||X||_1 / 2^s <= 1/2, the same on every thread.
__device__ int block_squarings(const float *X, int n) {
    __shared__ float red[32];
    float mx = 0.f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float col = 0.f;
        for (int i = 0; i < n; i++) col += fabsf(X[i * n + j]);
        mx = fmaxf(mx, col);
    }
    mx = warp_max(mx);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
    __syncthreads();
    mx = 0.f;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++) mx = fmaxf(mx, red[w]);
    int s = 0;
    while (mx > 0.5f && s < 60) mx *= 0.5f, s++;
    return s;
}

// A = e^X and, with E, L = L(X, E); X and E are scaled in place. T1, T2: scratch.
__device__ void block_expm(float *A, float *L, float *X, float *E, float *T1, float *T2, int n) {
    int s = block_squarings(X, n), nn = n * n;
    float scale = ldexpf(1.f, -s);
    for (int e = threadIdx.x; e < nn; e += blockDim.x) {
        X[e] *= scale;
        if (E) E[e] *= scale;
        A[e] = e / n == e % n ? 1.f : 0.f;
        if (E) L[e] = 0.f;
    }
    __syncthreads();
    for (int k = TAYLOR; k >= 1; k--) { // (A, L) <- (I, 0) + (X, E)(A, L) / k
        if (E) {
            block_mm(T1, X, L, n);
            block_mm(T2, E, A, n);
            for (int e = threadIdx.x; e < nn; e += blockDim.x) L[e] = (T1[e] + T2[e]) / k;
            __syncthreads();
        }
        block_mm(T1, X, A, n);
        for (int e = threadIdx.x; e < nn; e += blockDim.x)
            A[e] = T1[e] / k + (e / n == e % n ? 1.f : 0.f);
        __syncthreads();
    }
    for (int q = 0; q < s; q++) { // (A, L) <- (A, L)^2
        if (E) {
            block_mm(T1, A, L, n);
            block_mm(T2, L, A, n);
            for (int e = threadIdx.x; e < nn; e += blockDim.x) L[e] = T1[e] + T2[e];
            __syncthreads();
        }
        block_mm(T1, A, A, n);
        for (int e = threadIdx.x; e < nn; e += blockDim.x) A[e] = T1[e];
        __syncthreads();
    }
}

__global__ void __launch_bounds__(THREADS)
    expm_fwd_kernel(float *P, const float *M, float *work, int n) {
    int64_t nn = (int64_t)n * n;
    const float *m = M + blockIdx.x * nn;
    float *X = work + blockIdx.x * 6 * nn, *T1 = X + nn, *T2 = X + 2 * nn;
    for (int e = threadIdx.x; e < nn; e += blockDim.x) X[e] = m[e] - m[(e % n) * n + e / n];
    __syncthreads();
    block_expm(P + blockIdx.x * nn, nullptr, X, nullptr, T1, T2, n);
}

__global__ void __launch_bounds__(THREADS)
    expm_bwd_kernel(float *dM, const float *dP, const float *M, float *work, int n) {
    int64_t nn = (int64_t)n * n;
    const float *m = M + blockIdx.x * nn, *dp = dP + blockIdx.x * nn;
    float *X = work + blockIdx.x * 6 * nn, *E = X + nn, *A = X + 2 * nn, *L = X + 3 * nn;
    for (int e = threadIdx.x; e < nn; e += blockDim.x) {
        X[e] = m[(e % n) * n + e / n] - m[e]; // S^T = M^T - M
        E[e] = dp[e];
    }
    __syncthreads();
    block_expm(A, L, X, E, X + 4 * nn, X + 5 * nn, n);
    float *dm = dM + blockIdx.x * nn;
    for (int e = threadIdx.x; e < nn; e += blockDim.x) dm[e] += L[e] - L[(e % n) * n + e / n];
}

// ---- weights ----

__device__ __forceinline__ float one_minus_gamma2(float gl) { return -expm1f(-2.f * expf(gl)); }

// Block h: xi_h, and loga, angle of its n/2 channels.
__global__ void __launch_bounds__(THREADS)
    xi_kernel(float *xi, float *loga, float *angle, const float *gl, const float *th,
              const float *B, int n, int d) {
    __shared__ float red[32];
    int h = blockIdx.x;
    const float *Bh = B + (int64_t)h * n * d;
    float acc = 0.f;
    for (int64_t i = threadIdx.x; i < (int64_t)n * d; i += blockDim.x) acc += Bh[i] * Bh[i];
    acc = block_sum(acc, red);
    if (threadIdx.x == 0) xi[h] = sqrtf(one_minus_gamma2(gl[h]) / acc);
    for (int i = threadIdx.x; i < n / 2; i += blockDim.x) {
        loga[h * (n / 2) + i] = -expf(gl[h]);
        angle[h * (n / 2) + i] = th[h * (n / 2) + i];
    }
}

// Bw [H n, d]: row (h, j) = xi_h sum_i P_h[i, j] B_h[i, :].
__global__ void __launch_bounds__(THREADS)
    bw_kernel(bf16 *Bw, const float *P, const float *B, const float *xi, int H, int n, int d) {
    GRID_STRIDE(o, (int64_t)H * n * d) {
        int64_t r = o / d, e = o % d, h = r / n, j = r % n;
        const float *Ph = P + h * n * n, *Bh = B + h * n * d;
        float acc = 0.f;
        for (int i = 0; i < n; i++) acc += Ph[i * n + j] * Bh[(int64_t)i * d + e];
        Bw[o] = f2bf(xi[h] * acc);
    }
}

// Cw [d, H n]: column (h, j) = sum_i C[:, h n + i] P_h[i, j]; BWD: its backward,
// dC[:, h n + j] += sum_i dCw[:, h n + i] P_h[j, i].
template <bool BWD>
__global__ void __launch_bounds__(THREADS)
    cw_kernel(std::conditional_t<BWD, float, bf16> *out, const float *P, const float *C, int H,
              int n, int d) {
    int64_t Nn = (int64_t)H * n;
    GRID_STRIDE(o, Nn * d) {
        int64_t e = o / Nn, r = o % Nn, h = r / n, j = r % n;
        const float *Ph = P + h * n * n, *Ce = C + e * Nn + h * n;
        float acc = 0.f;
        for (int i = 0; i < n; i++) acc += Ce[i] * (BWD ? Ph[j * n + i] : Ph[i * n + j]);
        if constexpr (BWD)
            out[o] += acc;
        else
            out[o] = f2bf(acc);
    }
}

// Block h: dxi = <dBw_h, P^T B_h>, dgamma_log, dtheta; scale[h] = dxi xi / ||B_h||^2 for dB.
__global__ void __launch_bounds__(THREADS)
    dxi_kernel(float *scale, float *dgl, float *dth, const float *dloga, const float *dangle,
               const float *dBw, const float *P, const float *B, const float *xi, const float *gl,
               int n, int d) {
    __shared__ float red[32];
    int h = blockIdx.x;
    const float *Ph = P + (int64_t)h * n * n, *Bh = B + (int64_t)h * n * d,
                *dBh = dBw + (int64_t)h * n * d;
    float dx = 0.f, T = 0.f, dl = 0.f;
    for (int64_t o = threadIdx.x; o < (int64_t)n * d; o += blockDim.x) {
        int64_t j = o / d, e = o % d;
        float pb = 0.f;
        for (int i = 0; i < n; i++) pb += Ph[i * n + j] * Bh[(int64_t)i * d + e];
        dx += pb * dBh[o];
        T += Bh[o] * Bh[o];
    }
    for (int i = threadIdx.x; i < n / 2; i += blockDim.x) {
        dl += dloga[h * (n / 2) + i];
        dth[h * (n / 2) + i] += dangle[h * (n / 2) + i];
    }
    dx = block_sum(dx, red);
    T = block_sum(T, red);
    dl = block_sum(dl, red);
    if (threadIdx.x == 0) {
        float lg = -expf(gl[h]), om = one_minus_gamma2(gl[h]);
        dgl[h] += dl * lg - dx * xi[h] * (1.f - om) * lg / om;
        scale[h] = dx * xi[h] / T;
    }
}

// dP[h, i, j] = xi_h <B_h[i, :], dBw_h[j, :]> + <C[:, h n + i], dCw[:, h n + j]>
// (+ <C2[:, h n + i], dCw2[:, h n + j]> when C2 is not NULL) (overwrite).
__global__ void __launch_bounds__(THREADS)
    dp_kernel(float *dP, const float *B, const float *dBw, const float *C, const float *dCw,
              const float *C2, const float *dCw2, const float *xi, int H, int n, int d) {
    int64_t Nn = (int64_t)H * n;
    GRID_STRIDE(o, Nn * n) {
        int64_t h = o / (n * n), i = (o / n) % n, j = o % n;
        const float *Bi = B + (h * n + i) * d, *dBj = dBw + (h * n + j) * d;
        float accB = 0.f, accC = 0.f;
        for (int e = 0; e < d; e++) {
            accB += Bi[e] * dBj[e];
            accC += C[e * Nn + h * n + i] * dCw[e * Nn + h * n + j];
            if (C2) accC += C2[e * Nn + h * n + i] * dCw2[e * Nn + h * n + j];
        }
        dP[o] = xi[h] * accB + accC;
    }
}

// dB[h, i, :] += xi_h sum_j P_h[i, j] dBw_h[j, :] - scale_h B_h[i, :].
__global__ void __launch_bounds__(THREADS)
    db_kernel(float *dB, const float *P, const float *dBw, const float *B, const float *xi,
              const float *scale, int H, int n, int d) {
    GRID_STRIDE(o, (int64_t)H * n * d) {
        int64_t r = o / d, e = o % d, h = r / n, i = r % n;
        const float *Ph = P + h * n * n, *dBh = dBw + h * n * d;
        float acc = 0.f;
        for (int j = 0; j < n; j++) acc += Ph[i * n + j] * dBh[(int64_t)j * d + e];
        dB[o] += xi[h] * acc - scale[h] * B[o];
    }
}

} // namespace

void cuda_orth_expm_fwd(void *P, const void *M, void *work, int H, int n) {
    if (H == 0) return;
    expm_fwd_kernel<<<(unsigned)H, THREADS, 0, cuda_stream()>>>((float *)P, (const float *)M,
                                                                (float *)work, n);
    CUDA_LAUNCHED();
}

void cuda_orth_expm_bwd(void *dM, const void *dP, const void *M, void *work, int H, int n) {
    if (H == 0) return;
    expm_bwd_kernel<<<(unsigned)H, THREADS, 0, cuda_stream()>>>((float *)dM, (const float *)dP,
                                                                (const float *)M, (float *)work, n);
    CUDA_LAUNCHED();
}

void cuda_rotrnn_weights_fwd(const RotWeights *w) {
    int H = w->H, n = w->n, d = w->d;
    const float *P = (const float *)w->P;
    xi_kernel<<<(unsigned)H, THREADS, 0, cuda_stream()>>>(
        (float *)w->xi, (float *)w->loga, (float *)w->angle, (const float *)w->gamma_log,
        (const float *)w->theta, (const float *)w->B, n, d);
    CUDA_LAUNCHED();
    bw_kernel<<<blocks_for((int64_t)H * n * d), THREADS, 0, cuda_stream()>>>(
        (bf16 *)w->Bw, P, (const float *)w->B, (const float *)w->xi, H, n, d);
    CUDA_LAUNCHED();
    cw_kernel<false><<<blocks_for((int64_t)H * n * d), THREADS, 0, cuda_stream()>>>(
        (bf16 *)w->Cw, P, (const float *)w->C, H, n, d);
    CUDA_LAUNCHED();
    if (!w->Cw2) return;
    cw_kernel<false><<<blocks_for((int64_t)H * n * d), THREADS, 0, cuda_stream()>>>(
        (bf16 *)w->Cw2, P, (const float *)w->C2, H, n, d);
    CUDA_LAUNCHED();
}

void cuda_rotrnn_weights_bwd(const RotWeightGrads *g) {
    const RotWeights *w = &g->w;
    int H = w->H, n = w->n, d = w->d;
    const float *P = (const float *)w->P, *B = (const float *)w->B, *xi = (const float *)w->xi;
    const float *dBw = (const float *)g->dBw, *dCw = (const float *)g->dCw;
    dxi_kernel<<<(unsigned)H, THREADS, 0, cuda_stream()>>>(
        (float *)g->dxi, (float *)g->dgamma_log, (float *)g->dtheta, (const float *)g->dloga,
        (const float *)g->dangle, dBw, P, B, xi, (const float *)w->gamma_log, n, d);
    CUDA_LAUNCHED();
    const float *C2 = w->Cw2 ? (const float *)w->C2 : nullptr;
    dp_kernel<<<blocks_for((int64_t)H * n * n), THREADS, 0, cuda_stream()>>>(
        (float *)g->dP, B, dBw, (const float *)w->C, dCw, C2, (const float *)g->dCw2, xi, H, n, d);
    CUDA_LAUNCHED();
    db_kernel<<<blocks_for((int64_t)H * n * d), THREADS, 0, cuda_stream()>>>(
        (float *)g->dB, P, dBw, B, xi, (const float *)g->dxi, H, n, d);
    CUDA_LAUNCHED();
    cw_kernel<true><<<blocks_for((int64_t)H * n * d), THREADS, 0, cuda_stream()>>>((float *)g->dC,
                                                                                   P, dCw, H, n, d);
    CUDA_LAUNCHED();
    if (!w->Cw2) return;
    cw_kernel<true><<<blocks_for((int64_t)H * n * d), THREADS, 0, cuda_stream()>>>(
        (float *)g->dC2, P, (const float *)g->dCw2, H, n, d);
    CUDA_LAUNCHED();
}
