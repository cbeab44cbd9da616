// Position embeddings (docs/models.md §position-embeddings): RoPE angle tables, the half-split
// rotation of pairs (j, j + D/2) in fp32 and the weight-normalised Selective RoPE projection weight
// (the fused Selective RoPE op is in selrope.cu).
#include <stdint.h>

#include "backend/cuda_ops.h"
#include "lib/cuda_common.cuh"
#include "util/error.h"

namespace {

// ---- RoPE ----
// angle[n, j] = pos_n theta^(-2j/D), in fp64 like the CPU reference, rounded once.
__global__ void rope_angles_kernel(float *__restrict__ angle, const int32_t *__restrict__ pos,
                                   int64_t count, int D, double theta) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int P = D / 2;
    int j = (int)(i % P);
    angle[i] = (float)((double)pos[i / P] * pow(theta, -2.0 * j / D));
}

// One thread per two pairs (j, j+P), (j+1, j+1+P) of a row (n, h); x, y [N, H, 2P].
// y_j = x_j cos a - x_{j+P} sin a, y_{j+P} = x_j sin a + x_{j+P} cos a.
__global__ void rotate_fwd_kernel(bf16 *__restrict__ y, const bf16 *__restrict__ x,
                                  const float *__restrict__ angle, int64_t count, int H, int P,
                                  int per_head) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int64_t row = i / (P / 2); // n * H + h
    int j = 2 * (int)(i % (P / 2));
    float2 a = ldf2(angle + (per_head ? row : row / H) * P + j), c, s;
    sincosf(a.x, &s.x, &c.x);
    sincosf(a.y, &s.y, &c.y);
    int64_t xi = row * 2 * P + j;
    float2 x0 = ld2(x + xi), x1 = ld2(x + xi + P);
    st2(y + xi, x0 * c - x1 * s);
    st2(y + xi + P, x0 * s + x1 * c);
}

// dx = rotate(dy, -a); with y = rotate(x, a): dL/da = dy_{j+P} y_j - dy_j y_{j+P}.
__global__ void rotate_bwd_kernel(bf16 *__restrict__ dx, float *__restrict__ dangle,
                                  const bf16 *__restrict__ dy, const bf16 *__restrict__ x,
                                  const float *__restrict__ angle, int64_t count, int H, int P,
                                  int per_head) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    int64_t row = i / (P / 2);
    int j = 2 * (int)(i % (P / 2));
    int64_t ai = (per_head ? row : row / H) * P + j;
    float2 a = ldf2(angle + ai), c, s;
    sincosf(a.x, &s.x, &c.x);
    sincosf(a.y, &s.y, &c.y);
    int64_t xi = row * 2 * P + j;
    float2 d0 = ld2(dy + xi), d1 = ld2(dy + xi + P);
    st2(dx + xi, d0 * c + d1 * s);
    st2(dx + xi + P, d1 * c - d0 * s);
    if (dangle) {
        float2 x0 = ld2(x + xi), x1 = ld2(x + xi + P);
        float2 y0 = x0 * c - x1 * s, y1 = x0 * s + x1 * c;
        stf2(dangle + ai, ldf2(dangle + ai) + (d1 * y0 - d0 * y1));
    }
}

// ---- weight norm ----
// One block per head h, WN_THREADS / P * P threads: thread k takes column j = k % P and rows
// k / P, k / P + WN_THREADS / P, ...; column sums over the row groups in shared memory. The
// weights are small (H blocks): the widest block keeps each thread's chain of dependent
// loads short, which is what bounds the time.
constexpr int WN_THREADS = 1024;

__global__ void __launch_bounds__(WN_THREADS)
    weightnorm_fwd_kernel(bf16 *__restrict__ wn, const bf16 *__restrict__ w,
                          const bf16 *__restrict__ scale, int Din, int P) {
    __shared__ float red[WN_THREADS], nrm[WN_THREADS];
    int k = threadIdx.x, j = k % P, r0 = k / P, nr = blockDim.x / P;
    int64_t base = (int64_t)blockIdx.x * Din * P;
    float ss = 0.f;
#pragma unroll 4
    for (int i = r0; i < Din; i += nr) {
        float v = bf2f(w[base + (int64_t)i * P + j]);
        ss += v * v;
    }
    red[k] = ss;
    __syncthreads();
    if (k < P) {
        float t = 0.f;
        for (int r = 0; r < nr; r++) t += red[r * P + k];
        nrm[k] = fmaxf(sqrtf(t), 1e-12f);
    }
    __syncthreads();
    float s = bf2f(scale[blockIdx.x]);
#pragma unroll 4
    for (int i = r0; i < Din; i += nr) {
        int64_t idx = base + (int64_t)i * P + j;
        wn[idx] = f2bf(s * bf2f(w[idx]) / nrm[j]);
    }
}

// u = w / |w| per column: dscale_h += sum_j u.dwn, dw += s (dwn - u (u.dwn)) / |w|.
__global__ void __launch_bounds__(WN_THREADS)
    weightnorm_bwd_kernel(float *__restrict__ dw, float *__restrict__ dscale,
                          const float *__restrict__ dwn, const bf16 *__restrict__ w,
                          const bf16 *__restrict__ scale, int Din, int P) {
    __shared__ float red[2][WN_THREADS], nrm[WN_THREADS], udot[WN_THREADS];
    int k = threadIdx.x, j = k % P, r0 = k / P, nr = blockDim.x / P;
    int64_t base = (int64_t)blockIdx.x * Din * P;
    float ss = 0.f, dot = 0.f;
#pragma unroll 4
    for (int i = r0; i < Din; i += nr) {
        int64_t idx = base + (int64_t)i * P + j;
        float v = bf2f(w[idx]);
        ss += v * v;
        dot += v * dwn[idx];
    }
    red[0][k] = ss;
    red[1][k] = dot;
    __syncthreads();
    if (k < P) {
        float t = 0.f, d = 0.f;
        for (int r = 0; r < nr; r++) {
            t += red[0][r * P + k];
            d += red[1][r * P + k];
        }
        nrm[k] = fmaxf(sqrtf(t), 1e-12f);
        udot[k] = d / nrm[k];
    }
    __syncthreads();
    if (k == 0) {
        float t = 0.f;
        for (int q = 0; q < P; q++) t += udot[q];
        dscale[blockIdx.x] += t;
    }
    float s = bf2f(scale[blockIdx.x]);
#pragma unroll 4
    for (int i = r0; i < Din; i += nr) {
        int64_t idx = base + (int64_t)i * P + j;
        dw[idx] += s * (dwn[idx] - bf2f(w[idx]) / nrm[j] * udot[j]) / nrm[j];
    }
}

void weightnorm_check(const char *op, int P) {
    if (P < 1 || P > WN_THREADS)
        rt_die("%s: P=%d columns per head unsupported (1..%d)", op, P, WN_THREADS);
}

void rotate_check(const char *op, int D, const void *a, const void *b, const void *angle) {
    if (D % 4) rt_die("%s: head size D=%d must be a multiple of 4", op, D);
    cuda_check_aligned(a, 4, op);
    cuda_check_aligned(b, 4, op);
    cuda_check_aligned(angle, 8, op);
}

} // namespace

void cuda_rope_angles(void *angle, const Seqs *s, int D, double theta) {
    if (D % 2) rt_die("rope_angles: head size D=%d must be even", D);
    int64_t count = s->ntok * (D / 2);
    if (count == 0) return;
    rope_angles_kernel<<<(unsigned)cdiv(count, 256), 256, 0, cuda_stream()>>>(
        (float *)angle, s->dev_pos, count, D, theta);
    CUDA_LAUNCHED();
}

void cuda_rotate_fwd(void *y, const void *x, const void *angle, int64_t N, int H, int D,
                     int per_head) {
    rotate_check("rotate_fwd", D, y, x, angle);
    int64_t count = N * H * (D / 4);
    if (count == 0) return;
    rotate_fwd_kernel<<<(unsigned)cdiv(count, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)y, (const bf16 *)x, (const float *)angle, count, H, D / 2, per_head);
    CUDA_LAUNCHED();
}

void cuda_rotate_bwd(void *dx, void *dangle, const void *dy, const void *x, const void *angle,
                     int64_t N, int H, int D, int per_head) {
    rotate_check("rotate_bwd", D, dx, dy, angle);
    cuda_check_aligned(x, 4, "rotate_bwd");
    cuda_check_aligned(dangle, 8, "rotate_bwd");
    if (dangle && !per_head) rt_die("rotate_bwd: dangle needs per-head angles");
    int64_t count = N * H * (D / 4);
    if (count == 0) return;
    rotate_bwd_kernel<<<(unsigned)cdiv(count, 256), 256, 0, cuda_stream()>>>(
        (bf16 *)dx, (float *)dangle, (const bf16 *)dy, (const bf16 *)x, (const float *)angle, count,
        H, D / 2, per_head);
    CUDA_LAUNCHED();
}

void cuda_weightnorm_fwd(void *wn, const void *w, const void *scale, int H, int Din, int P) {
    weightnorm_check("weightnorm_fwd", P);
    if (H == 0) return;
    weightnorm_fwd_kernel<<<H, WN_THREADS / P * P, 0, cuda_stream()>>>((bf16 *)wn, (const bf16 *)w,
                                                                       (const bf16 *)scale, Din, P);
    CUDA_LAUNCHED();
}

void cuda_weightnorm_bwd(void *dw, void *dscale, const void *dwn, const void *w, const void *scale,
                         int H, int Din, int P) {
    weightnorm_check("weightnorm_bwd", P);
    if (H == 0) return;
    weightnorm_bwd_kernel<<<H, WN_THREADS / P * P, 0, cuda_stream()>>>(
        (float *)dw, (float *)dscale, (const float *)dwn, (const bf16 *)w, (const bf16 *)scale, Din,
        P);
    CUDA_LAUNCHED();
}
