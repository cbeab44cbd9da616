// The nonlinear recurrences of docs/models.md §nonlinear-rnns, §lstm (rnn_*, lstm_*) and the
// nnRNN's Schur form (nnrnn_weights_*), l2_penalty. CPU references: src/cpu/rnn.c, lstm.c,
// nnrnn_weights.c, loss_optim.c.
//
// The recurrences are sequential in time: one thread block per segment (one per row in the
// step ops), the state in shared memory in fp32, each thread owning units i = tid, tid +
// blockDim, ... and summing its row of the recurrent product over the state each step. The
// forward reads a transposed copy of W so that the threads of a warp read consecutive
// addresses; the backward reads W itself (the product with W^T). W stays in L2 across steps.
// This keeps one kernel launch per op instead of one cuBLAS matrix-vector product per token
// (T launches of a few microseconds each, for products too small to fill the GPU); the
// batch's segments run as parallel blocks. Not tuned: a step is n^2 fused multiply-adds by
// at most 1024 threads. The parameter gradients dW = sum_t da_t^T h_{t-1} are one cuBLASLt GEMM
// over all tokens (matmul_bwd) with h shifted by one token within each segment.
#include <stdio.h>

#include "backend/cuda_ops.h"
#include "lib/cuda_common.cuh"
#include "util/error.h"

namespace {

constexpr int THREADS = 256;
constexpr int RNN_MAX_N = 4096; // the forward's shared state: 2n floats (LSTM: 2n more for c)

__device__ __forceinline__ float b2f(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float sigm(float x) { return 1.f / (1.f + __expf(-x)); }

__device__ __forceinline__ float rnn_act(int mod, float a, float b) {
    if (!mod) return tanhf(a);
    float m = fabsf(a) + b;
    return m > 0.f ? (a > 0.f ? m : a < 0.f ? -m : 0.f) : 0.f;
}

// out [C, R] = in [R, C]^T
__global__ void transpose_kernel(float *out, const float *in, int R, int C) {
    GRID_STRIDE(idx, (int64_t)R * C) {
        int64_t r = idx / C, c = idx % C;
        out[c * R + r] = in[idx];
    }
}

// One step for the units of this thread: next[i] = act(z[i] + sum_j Wt[j, i] prev[j]) (prev
// NULL: a zero state); writes h.
__device__ void rnn_cell(float *next, const float *prev, const bf16 *z, bf16 *h, const float *Wt,
                         const float *bias, int n, int mod) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float a = b2f(z[i]);
        if (prev)
            for (int j = 0; j < n; j++) a += Wt[(int64_t)j * n + i] * prev[j];
        float v = rnn_act(mod, a, bias ? bias[i] : 0.f);
        next[i] = v;
        h[i] = __float2bfloat16(v);
    }
}

// From each segment's h0 (NULL: zeros); its final state into state when given.
__global__ void rnn_fwd_kernel(bf16 *h, float *state, const float *h0, const bf16 *z,
                               const float *Wt, const float *bias, const int32_t *cu, int n,
                               int mod) {
    extern __shared__ float sh[];
    float *prev = sh, *next = sh + n;
    int seg = blockIdx.x;
    int64_t t0 = cu[seg], t1 = cu[seg + 1];
    for (int i = threadIdx.x; i < n; i += blockDim.x) prev[i] = h0 ? h0[(int64_t)seg * n + i] : 0.f;
    __syncthreads();
    for (int64_t t = t0; t < t1; t++) {
        rnn_cell(next, t > t0 || h0 ? prev : nullptr, z + t * n, h + t * n, Wt, bias, n, mod);
        __syncthreads();
        for (int i = threadIdx.x; i < n; i += blockDim.x) prev[i] = next[i];
        __syncthreads();
    }
    if (state)
        for (int i = threadIdx.x; i < n; i += blockDim.x) state[(int64_t)seg * n + i] = prev[i];
}

__global__ void rnn_step_kernel(bf16 *h, float *state, const bf16 *z, const float *Wt,
                                const float *bias, const int32_t *pos, int n, int mod) {
    extern __shared__ float sh[];
    float *prev = sh, *next = sh + n;
    int64_t r = blockIdx.x;
    for (int i = threadIdx.x; i < n; i += blockDim.x) prev[i] = state[r * n + i];
    __syncthreads();
    rnn_cell(next, pos[r] == 0 ? nullptr : prev, z + r * n, h + r * n, Wt, bias, n, mod);
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) state[r * n + i] = next[i];
}

// Backpropagation through time per segment: g = dh_t + da_{t+1} W, da_t = g act'(a_t).
__global__ void rnn_bwd_kernel(bf16 *dz, const bf16 *dh, const bf16 *h, const float *W,
                               const int32_t *cu, int n, int mod) {
    extern __shared__ float sh[];
    float *da = sh, *nd = sh + n;
    int seg = blockIdx.x;
    int64_t t0 = cu[seg], t1 = cu[seg + 1];
    for (int64_t t = t1 - 1; t >= t0; t--) {
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            float g = b2f(dh[t * n + i]);
            if (t + 1 < t1)
                for (int j = 0; j < n; j++) g += W[(int64_t)j * n + i] * da[j];
            float hv = b2f(h[t * n + i]);
            float d = mod ? (hv != 0.f ? g : 0.f) : g * (1.f - hv * hv);
            nd[i] = d;
            dz[t * n + i] = __float2bfloat16(d);
        }
        __syncthreads();
        for (int i = threadIdx.x; i < n; i += blockDim.x) da[i] = nd[i];
        __syncthreads();
    }
}

// hp[t] = h[t - 1] within a segment, 0 at its first token (pos 0); width C.
__global__ void shift_kernel(bf16 *hp, const bf16 *h, const int32_t *pos, int64_t N, int C) {
    GRID_STRIDE(idx, N * C) {
        int64_t t = idx / C;
        hp[idx] = pos[t] == 0 ? __float2bfloat16(0.f) : h[idx - C];
    }
}

// hp at each segment's first token = its carried state h0 [f32][nseg, stride] (the first n).
__global__ void seed_starts_kernel(bf16 *hp, const float *h0, const int32_t *cu, int n,
                                   int stride) {
    int seg = blockIdx.x;
    if (cu[seg] == cu[seg + 1]) return;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        hp[(int64_t)cu[seg] * n + i] = __float2bfloat16(h0[(int64_t)seg * stride + i]);
}

// ds = dz sign(h) (the modReLU bias's share of every token)
__global__ void sign_mul_kernel(bf16 *ds, const bf16 *dz, const bf16 *h, int64_t n) {
    GRID_STRIDE(i, n) {
        float v = b2f(h[i]);
        ds[i] = v > 0.f ? dz[i] : v < 0.f ? __float2bfloat16(-b2f(dz[i])) : __float2bfloat16(0.f);
    }
}

// One LSTM step for the units of this thread from (hp, cp) (NULL: zero state).
__device__ void lstm_cell(float *hn, float *cn, const float *hp, const float *cp, const bf16 *z,
                          bf16 *q, float *c, bf16 *h, const float *Wt, int n) {
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float a[4];
        for (int k = 0; k < 4; k++) {
            int row = k * n + j;
            float s = b2f(z[row]);
            if (hp)
                for (int m = 0; m < n; m++) s += Wt[(int64_t)m * 4 * n + row] * hp[m];
            a[k] = s;
        }
        float i = sigm(a[0]), f = sigm(a[1]), g = tanhf(a[2]), o = sigm(a[3]);
        q[j] = __float2bfloat16(i), q[n + j] = __float2bfloat16(f);
        q[2 * n + j] = __float2bfloat16(g), q[3 * n + j] = __float2bfloat16(o);
        float cv = f * (cp ? cp[j] : 0.f) + i * g, hv = o * tanhf(cv);
        cn[j] = cv, hn[j] = hv;
        c[j] = cv;
        h[j] = __float2bfloat16(hv);
    }
}

__global__ void lstm_fwd_kernel(bf16 *h, float *c, bf16 *q, float *state, const float *h0,
                                const bf16 *z, const float *Wt, const int32_t *cu, int n) {
    extern __shared__ float sh[];
    float *hp = sh, *cp = sh + n, *hn = sh + 2 * n, *cn = sh + 3 * n;
    int seg = blockIdx.x;
    int64_t t0 = cu[seg], t1 = cu[seg + 1];
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        hp[i] = h0 ? h0[(int64_t)seg * 2 * n + i] : 0.f;
        cp[i] = h0 ? h0[(int64_t)seg * 2 * n + n + i] : 0.f;
    }
    __syncthreads();
    for (int64_t t = t0; t < t1; t++) {
        int first = t == t0 && !h0;
        lstm_cell(hn, cn, first ? nullptr : hp, first ? nullptr : cp, z + t * 4 * n, q + t * 4 * n,
                  c + t * n, h + t * n, Wt, n);
        __syncthreads();
        for (int i = threadIdx.x; i < n; i += blockDim.x) hp[i] = hn[i], cp[i] = cn[i];
        __syncthreads();
    }
    if (state)
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            state[(int64_t)seg * 2 * n + i] = hp[i];
            state[(int64_t)seg * 2 * n + n + i] = cp[i];
        }
}

__global__ void lstm_step_kernel(bf16 *h, float *c, bf16 *q, float *state, const bf16 *z,
                                 const float *Wt, const int32_t *pos, int n) {
    extern __shared__ float sh[];
    float *hp = sh, *cp = sh + n, *hn = sh + 2 * n, *cn = sh + 3 * n;
    int64_t r = blockIdx.x;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        hp[i] = state[r * 2 * n + i], cp[i] = state[r * 2 * n + n + i];
    __syncthreads();
    int first = pos[r] == 0;
    lstm_cell(hn, cn, first ? nullptr : hp, first ? nullptr : cp, z + r * 4 * n, q + r * 4 * n,
              c + r * n, h + r * n, Wt, n);
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        state[r * 2 * n + i] = hn[i], state[r * 2 * n + n + i] = cn[i];
}

// dz_t from gh = dh_t + da_{t+1} W and the cell gradient carried back (src/cpu/lstm.c).
__global__ void lstm_bwd_kernel(bf16 *dz, const bf16 *dh, const bf16 *q, const float *c,
                                const float *h0, const float *W, const int32_t *cu, int n) {
    extern __shared__ float sh[];
    float *da = sh, *nda = sh + 4 * n, *dc = sh + 8 * n;
    int seg = blockIdx.x;
    int64_t t0 = cu[seg], t1 = cu[seg + 1];
    for (int j = threadIdx.x; j < n; j += blockDim.x) dc[j] = 0.f;
    __syncthreads();
    for (int64_t t = t1 - 1; t >= t0; t--) {
        for (int j = threadIdx.x; j < n; j += blockDim.x) {
            float gh = b2f(dh[t * n + j]);
            if (t + 1 < t1)
                for (int k = 0; k < 4 * n; k++) gh += W[(int64_t)k * n + j] * da[k];
            const bf16 *qt = q + t * 4 * n;
            float i = b2f(qt[j]), f = b2f(qt[n + j]), g = b2f(qt[2 * n + j]),
                  o = b2f(qt[3 * n + j]);
            float th = tanhf(c[t * n + j]);
            float cp = t > t0 ? c[(t - 1) * n + j] : h0 ? h0[(int64_t)seg * 2 * n + n + j] : 0.f;
            float dct = dc[j] + gh * o * (1.f - th * th);
            float d[4] = {dct * g * i * (1.f - i), dct * cp * f * (1.f - f),
                          dct * i * (1.f - g * g), gh * th * o * (1.f - o)};
            for (int k = 0; k < 4; k++) {
                nda[k * n + j] = d[k];
                dz[t * 4 * n + k * n + j] = __float2bfloat16(d[k]);
            }
            dc[j] = dct * f;
        }
        __syncthreads();
        for (int k = threadIdx.x; k < 4 * n; k += blockDim.x) da[k] = nda[k];
        __syncthreads();
    }
}

// ---- the nnRNN's Schur form: small fp32 products, one thread per output element ----

// C = op(A) op(B) (+ C when acc), n x n, op = transpose when ta / tb.
__global__ void mm_kernel(float *C, const float *A, const float *B, int n, int ta, int tb,
                          int acc) {
    GRID_STRIDE(idx, (int64_t)n * n) {
        int i = (int)(idx / n), j = (int)(idx % n);
        float s = 0.f;
        for (int k = 0; k < n; k++)
            s += (ta ? A[(int64_t)k * n + i] : A[(int64_t)i * n + k]) *
                 (tb ? B[(int64_t)j * n + k] : B[(int64_t)k * n + j]);
        C[idx] = acc ? C[idx] + s : s;
    }
}

__global__ void schur_kernel(float *K, const float *T, const float *gm, const float *th, int n) {
    GRID_STRIDE(idx, (int64_t)n * n) {
        int i = (int)(idx / n), j = (int)(idx % n);
        float v = j < i ? T[idx] : 0.f;
        if (i / 2 == j / 2) {
            int b = i / 2;
            float c = gm[b] * cosf(th[b]), s = gm[b] * sinf(th[b]);
            v += i == j ? c : i < j ? -s : s;
        }
        K[idx] = v;
    }
}

// dT += strictly_lower(dK); per block dgamma, dtheta.
__global__ void schur_bwd_kernel(float *dT, float *dgm, float *dth, const float *dK,
                                 const float *gm, const float *th, int n) {
    GRID_STRIDE(idx, (int64_t)n * n) {
        int i = (int)(idx / n), j = (int)(idx % n);
        if (j < i) dT[idx] += dK[idx];
        if (i == j && i % 2 == 0) {
            int b = i / 2;
            float c = cosf(th[b]), s = sinf(th[b]);
            float k00 = dK[idx], k01 = dK[idx + 1], k10 = dK[idx + n], k11 = dK[idx + n + 1];
            dgm[b] += c * (k00 + k11) + s * (k10 - k01);
            dth[b] += gm[b] * (-s * (k00 + k11) + c * (k10 - k01));
        }
    }
}

// out = coef sum (w - target)^2 in fp64 (one block, a fixed order); g += 2 coef (w - target).
__global__ void l2_penalty_kernel(double *out, float *g, const float *w, int64_t n, float target,
                                  double coef) {
    __shared__ double part[THREADS];
    double s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        double e = (double)w[i] - target;
        s += e * e;
        if (g) g[i] += (float)(2 * coef * e);
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int k = THREADS / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = coef * part[0];
}

unsigned block_threads(int n) { return (unsigned)(n < 1024 ? (n + 31) / 32 * 32 : 1024); }

void check_width(int n, const char *op) {
    if (n > RNN_MAX_N) rt_die("%s: state width %d exceeds the kernels' %d", op, n, RNN_MAX_N);
}

// W^T [n_in, rows] of W [rows, n_in], in scratch slot A, for op's kernels of state width n.
float *transposed(const void *W, int rows, int n, const char *op) {
    check_width(n, op);
    float *Wt = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * (size_t)rows * n);
    transpose_kernel<<<blocks_for((int64_t)rows * n), GRID_THREADS, 0, cuda_stream()>>>(
        Wt, (const float *)W, rows, n);
    CUDA_LAUNCHED();
    return Wt;
}

// dW [f32][rows, n] += dz^T hp over the tokens, hp = h shifted within each segment, at its
// first token the carried state h0 ([f32][nseg, stride]) or 0.
void recurrent_grad(void *dW, const void *dz, const void *h, const void *h0, int stride,
                    const Seqs *s, int rows, int n) {
    int64_t N = s->ntok;
    bf16 *hp = (bf16 *)cuda_scratch(SCRATCH_B, sizeof(bf16) * (size_t)(N * n));
    shift_kernel<<<blocks_for(N * n), GRID_THREADS, 0, cuda_stream()>>>(hp, (const bf16 *)h,
                                                                        s->dev_pos, N, n);
    CUDA_LAUNCHED();
    if (h0) {
        seed_starts_kernel<<<(unsigned)s->nseg, block_threads(n), 0, cuda_stream()>>>(
            hp, (const float *)h0, s->dev_cu, n, stride);
        CUDA_LAUNCHED();
    }
    cuda_matmul_bwd(NULL, dW, NULL, dz, hp, NULL, (int)N, rows, n, 0);
}

// A recurrence kernel: one block per row (a segment or a token), `floats` floats of shared
// memory per state element.
template <class... P, class... A>
void launch_recurrence(void (*kernel)(P...), const char *op, int64_t rows, int n, int floats,
                       A... args) {
    size_t smem = floats * (size_t)n * sizeof(float);
    cuda_allow_smem(kernel, smem, op);
    kernel<<<(unsigned)rows, block_threads(n), smem, cuda_stream()>>>(args...);
    CUDA_LAUNCHED();
}

} // namespace

int cuda_rnn_supports(int n, char *why, size_t why_size) {
    if (n < 1 || n > RNN_MAX_N)
        return cuda_unsupported(
            why, why_size, "the RNN kernels take a state width in 1..%d, got %d", RNN_MAX_N, n);
    return 1;
}

void cuda_rnn_fwd(const RnnArgs *a) {
    const Seqs *s = a->s;
    if (s->nseg == 0) return;
    float *Wt = transposed(a->W, a->n, a->n, "rnn_fwd");
    launch_recurrence(rnn_fwd_kernel, "rnn_fwd", s->nseg, a->n, 2, (bf16 *)a->h, (float *)a->state,
                      (const float *)a->h0, (const bf16 *)a->z, Wt, (const float *)a->bias,
                      s->dev_cu, a->n, a->act == RNN_MODRELU);
}

void cuda_rnn_step(const RnnArgs *a) {
    const Seqs *s = a->s;
    if (s->ntok == 0) return;
    float *Wt = transposed(a->W, a->n, a->n, "rnn_step");
    launch_recurrence(rnn_step_kernel, "rnn_step", s->ntok, a->n, 2, (bf16 *)a->h,
                      (float *)a->state, (const bf16 *)a->z, Wt, (const float *)a->bias, s->dev_pos,
                      a->n, a->act == RNN_MODRELU);
}

void cuda_rnn_bwd(const RnnGrads *g) {
    const RnnArgs *a = &g->a;
    const Seqs *s = a->s;
    if (s->nseg == 0) return;
    int n = a->n, mod = a->act == RNN_MODRELU;
    int64_t N = s->ntok;
    check_width(n, "rnn_bwd");
    launch_recurrence(rnn_bwd_kernel, "rnn_bwd", s->nseg, n, 2, (bf16 *)g->dz, (const bf16 *)g->dh,
                      (const bf16 *)a->h, (const float *)a->W, s->dev_cu, n, mod);
    recurrent_grad(g->dW, g->dz, a->h, a->h0, n, s, n, n);
    if (mod && g->dbias) {
        bf16 *ds = (bf16 *)cuda_scratch(SCRATCH_C, sizeof(bf16) * (size_t)(N * n));
        sign_mul_kernel<<<blocks_for(N * n), GRID_THREADS, 0, cuda_stream()>>>(
            ds, (const bf16 *)g->dz, (const bf16 *)a->h, N * n);
        CUDA_LAUNCHED();
        cuda_matmul_bwd(NULL, NULL, g->dbias, ds, NULL, NULL, (int)N, n, n, 0);
    }
}

void cuda_lstm_fwd(const LstmArgs *a) {
    const Seqs *s = a->s;
    if (s->nseg == 0) return;
    float *Wt = transposed(a->W, 4 * a->n, a->n, "lstm_fwd");
    launch_recurrence(lstm_fwd_kernel, "lstm_fwd", s->nseg, a->n, 4, (bf16 *)a->h, (float *)a->c,
                      (bf16 *)a->gates, (float *)a->state, (const float *)a->h0, (const bf16 *)a->z,
                      Wt, s->dev_cu, a->n);
}

void cuda_lstm_step(const LstmArgs *a) {
    const Seqs *s = a->s;
    if (s->ntok == 0) return;
    float *Wt = transposed(a->W, 4 * a->n, a->n, "lstm_step");
    launch_recurrence(lstm_step_kernel, "lstm_step", s->ntok, a->n, 4, (bf16 *)a->h, (float *)a->c,
                      (bf16 *)a->gates, (float *)a->state, (const bf16 *)a->z, Wt, s->dev_pos,
                      a->n);
}

void cuda_lstm_bwd(const LstmGrads *g) {
    const LstmArgs *a = &g->a;
    const Seqs *s = a->s;
    if (s->nseg == 0) return;
    int n = a->n;
    check_width(n, "lstm_bwd");
    launch_recurrence(lstm_bwd_kernel, "lstm_bwd", s->nseg, n, 9, (bf16 *)g->dz,
                      (const bf16 *)g->dh, (const bf16 *)a->gates, (const float *)a->c,
                      (const float *)a->h0, (const float *)a->W, s->dev_cu, n);
    recurrent_grad(g->dW, g->dz, a->h, a->h0, 2 * n, s, 4 * n, n);
}

void cuda_nnrnn_weights_fwd(const NnrnnWeights *w) {
    int n = w->n;
    unsigned nb = blocks_for((int64_t)n * n);
    float *K = (float *)w->K, *X = (float *)w->work;
    const float *P = (const float *)w->P;
    schur_kernel<<<nb, GRID_THREADS, 0, cuda_stream()>>>(
        K, (const float *)w->T, (const float *)w->gamma, (const float *)w->theta, n);
    CUDA_LAUNCHED();
    mm_kernel<<<nb, GRID_THREADS, 0, cuda_stream()>>>(X, P, K, n, 0, 0, 0);
    CUDA_LAUNCHED();
    mm_kernel<<<nb, GRID_THREADS, 0, cuda_stream()>>>((float *)w->V, X, P, n, 0, 1, 0);
    CUDA_LAUNCHED();
}

void cuda_nnrnn_weights_bwd(const NnrnnWeightGrads *g) {
    const NnrnnWeights *w = &g->w;
    int n = w->n;
    unsigned nb = blocks_for((int64_t)n * n);
    const float *P = (const float *)w->P, *K = (const float *)w->K, *dV = (const float *)g->dV;
    float *X = (float *)w->work, *Y = X + (size_t)n * n, *dP = (float *)g->dP;
    auto mm = [&](float *C, const float *A, const float *B, int ta, int tb, int acc) {
        mm_kernel<<<nb, GRID_THREADS, 0, cuda_stream()>>>(C, A, B, n, ta, tb, acc);
        CUDA_LAUNCHED();
    };
    mm(X, P, K, 0, 1, 0); // P K^T
    mm(dP, dV, X, 0, 0, 0);
    mm(X, P, K, 0, 0, 0); // P K
    mm(dP, dV, X, 1, 0, 1);
    mm(Y, dV, P, 0, 0, 0); // dK = P^T (dV P)
    mm(X, P, Y, 1, 0, 0);
    schur_bwd_kernel<<<nb, GRID_THREADS, 0, cuda_stream()>>>(
        (float *)g->dT, (float *)g->dgamma, (float *)g->dtheta, X, (const float *)w->gamma,
        (const float *)w->theta, n);
    CUDA_LAUNCHED();
}

double cuda_l2_penalty(void *g, const void *w, int64_t n, double target, double coef) {
    if (n <= 0) return 0.0;
    double *out = (double *)cuda_scratch(SCRATCH_A, sizeof(double));
    l2_penalty_kernel<<<1, THREADS, 0, cuda_stream()>>>(out, (float *)g, (const float *)w, n,
                                                        (float)target, coef);
    CUDA_LAUNCHED();
    double v;
    CUDA_CHECK(cudaMemcpyAsync(&v, out, sizeof v, cudaMemcpyDeviceToHost, cuda_stream()));
    CUDA_CHECK(cudaStreamSynchronize(cuda_stream()));
    return v;
}
