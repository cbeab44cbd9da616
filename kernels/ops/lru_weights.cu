// The LRU's weights from its parameters (docs/models.md §lru; LruWeights in src/backend_ops.h;
// CPU reference src/cpu/lru_weights.c): elementwise kernels over the [f32] master parameters
// writing bf16 Bw, Cw (and Cw2 of the reverse scan, §block-dropout-bidirectional), and one block
// per state channel for the backward's sum over the model width (dgamma_log), in a fixed order.
#include <stdint.h>

#include "backend/cuda_ops.h"
#include "lib/cuda_common.cuh"

namespace {

constexpr int THREADS = GRID_THREADS;

__global__ void __launch_bounds__(THREADS)
    eig_kernel(float *loga, float *angle, const float *nu, const float *th, int N) {
    GRID_STRIDE(c, N) {
        loga[c] = -expf(nu[c]);
        angle[c] = expf(th[c]);
    }
}

// Bw [2N, d]: rows 2c, 2c+1 = exp(gamma_log_c) (B_re[c], B_im[c]).
__global__ void __launch_bounds__(THREADS)
    bw_kernel(bf16 *Bw, const float *gl, const float *Br, const float *Bi, int N, int d) {
    GRID_STRIDE(i, 2 * (int64_t)N * d) {
        int64_t r = i / d, e = i % d, c = r / 2;
        Bw[i] = f2bf(expf(gl[c]) * (r & 1 ? Bi : Br)[c * d + e]);
    }
}

// Cw [d, 2N]: columns 2c, 2c+1 = (C_re[:, c], -C_im[:, c]).
__global__ void __launch_bounds__(THREADS)
    cw_kernel(bf16 *Cw, const float *Cr, const float *Ci, int N, int d) {
    GRID_STRIDE(i, 2 * (int64_t)N * d) {
        int64_t e = i / (2 * N), j = i % (2 * N), c = j / 2;
        Cw[i] = f2bf(j & 1 ? -Ci[e * N + c] : Cr[e * N + c]);
    }
}

// Block c: dnu, dtheta, dB_re[c], dB_im[c] and dgamma_log[c].
__global__ void __launch_bounds__(THREADS)
    bwd_channel_kernel(float *dnu, float *dth, float *dgl, float *dBr, float *dBi,
                       const float *dloga, const float *dangle, const float *dBw, const float *loga,
                       const float *angle, const float *gl, const float *Br, const float *Bi,
                       int d) {
    __shared__ float red[32];
    int c = blockIdx.x;
    float gm = expf(gl[c]), acc = 0.f;
    const float *gr = dBw + (int64_t)2 * c * d, *gi = gr + d;
    for (int e = threadIdx.x; e < d; e += THREADS) {
        int64_t i = (int64_t)c * d + e;
        dBr[i] += gm * gr[e];
        dBi[i] += gm * gi[e];
        acc += gr[e] * Br[i] + gi[e] * Bi[i];
    }
    acc = block_sum(acc, red);
    if (threadIdx.x == 0) {
        dgl[c] += acc * gm;
        dnu[c] += dloga[c] * loga[c];
        dth[c] += dangle[c] * angle[c];
    }
}

__global__ void __launch_bounds__(THREADS)
    dc_kernel(float *dCr, float *dCi, const float *dCw, int N, int d) {
    GRID_STRIDE(i, (int64_t)N * d) {
        int64_t e = i / N, c = i % N;
        dCr[i] += dCw[e * 2 * N + 2 * c];
        dCi[i] -= dCw[e * 2 * N + 2 * c + 1];
    }
}

} // namespace

void cuda_lru_weights_fwd(const LruWeights *w) {
    int N = w->N, d = w->d;
    eig_kernel<<<blocks_for(N), THREADS, 0, cuda_stream()>>>((float *)w->loga, (float *)w->angle,
                                                             (const float *)w->nu_log,
                                                             (const float *)w->theta_log, N);
    CUDA_LAUNCHED();
    bw_kernel<<<blocks_for(2 * (int64_t)N * d), THREADS, 0, cuda_stream()>>>(
        (bf16 *)w->Bw, (const float *)w->gamma_log, (const float *)w->B_re, (const float *)w->B_im,
        N, d);
    CUDA_LAUNCHED();
    cw_kernel<<<blocks_for(2 * (int64_t)N * d), THREADS, 0, cuda_stream()>>>(
        (bf16 *)w->Cw, (const float *)w->C_re, (const float *)w->C_im, N, d);
    CUDA_LAUNCHED();
    if (!w->Cw2) return;
    cw_kernel<<<blocks_for(2 * (int64_t)N * d), THREADS, 0, cuda_stream()>>>(
        (bf16 *)w->Cw2, (const float *)w->C_re2, (const float *)w->C_im2, N, d);
    CUDA_LAUNCHED();
}

void cuda_lru_weights_bwd(const LruWeightGrads *g) {
    const LruWeights *w = &g->w;
    int N = w->N, d = w->d;
    bwd_channel_kernel<<<(unsigned)N, THREADS, 0, cuda_stream()>>>(
        (float *)g->dnu_log, (float *)g->dtheta_log, (float *)g->dgamma_log, (float *)g->dB_re,
        (float *)g->dB_im, (const float *)g->dloga, (const float *)g->dangle, (const float *)g->dBw,
        (const float *)w->loga, (const float *)w->angle, (const float *)w->gamma_log,
        (const float *)w->B_re, (const float *)w->B_im, d);
    CUDA_LAUNCHED();
    dc_kernel<<<blocks_for((int64_t)N * d), THREADS, 0, cuda_stream()>>>(
        (float *)g->dC_re, (float *)g->dC_im, (const float *)g->dCw, N, d);
    CUDA_LAUNCHED();
    if (!w->Cw2) return;
    dc_kernel<<<blocks_for((int64_t)N * d), THREADS, 0, cuda_stream()>>>(
        (float *)g->dC_re2, (float *)g->dC_im2, (const float *)g->dCw2, N, d);
    CUDA_LAUNCHED();
}
