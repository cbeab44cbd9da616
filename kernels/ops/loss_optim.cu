// Cross-entropy with its fused gradient (docs/models.md §backbone loss), per-token
// log-probabilities for evaluation, and the optimizer primitives (docs/models.md §training-recipe):
// sum of squares, scaling, AdamW (per run, or over all of an optimizer's runs in one launch under
// adamw:fused), RMSprop. Softmax rows: one block per row, one pass keeping an online (max, sum of
// exp) pair per thread, merged over the block in a fixed tree. Flat f32 ops: grid-stride loops
// over 16-byte vectors with a scalar head and tail.
#include <climits>
#include <cmath>
#include <initializer_list>

#include "backend/cuda_ops.h"
#include "device/kernel_variants.h"
#include "lib/cuda_common.cuh"
#include "util/error.h"

namespace {

constexpr int THREADS = 256;
constexpr int ROW_THREADS = 512; // most threads of a softmax row block
constexpr int SUM_THREADS = 1024;

// Blocks for a grid-stride loop over `work` items: at most one full-occupancy wave.
unsigned grid_for(int64_t work) {
    int64_t b = cdiv(work, THREADS), cap = (int64_t)cuda_sm_count() * (2048 / THREADS);
    return (unsigned)(b < cap ? (b > 0 ? b : 1) : cap);
}

// First element from which every float pointer is 16-byte aligned, or -1 if they disagree.
int64_t aligned_head(std::initializer_list<const void *> ptrs) {
    int64_t head = -1;
    for (const void *p : ptrs) {
        uintptr_t a = (uintptr_t)p;
        if (a % 4) return -1;
        int64_t h = (int64_t)((16 - a % 16) % 16 / 4);
        if (head >= 0 && h != head) return -1;
        head = h;
    }
    return head;
}

// How n elements split: [0, head) and [head + 4 nvec, n) scalar, the rest float4 vectors.
struct Split {
    int64_t head, nvec, nscalar;
};
Split split(int64_t n, std::initializer_list<const void *> ptrs) {
    int64_t head = aligned_head(ptrs), nvec = 0;
    if (head < 0 || head > n)
        head = n;
    else
        nvec = (n - head) / 4;
    return {head, nvec, n - 4 * nvec};
}

__device__ __forceinline__ int64_t scalar_index(const Split &s, int64_t k) {
    return k < s.head ? k : s.head + 4 * s.nvec + (k - s.head);
}

template <class Op> __global__ void __launch_bounds__(THREADS) map_kernel(Op op, Split s) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int64_t v = t; v < s.nvec; v += stride) op.template run<4>(s.head + 4 * v);
    for (int64_t k = t; k < s.nscalar; k += stride) op.template run<1>(scalar_index(s, k));
}

template <class Op> void map_split(const Op &op, Split s) {
    map_kernel<<<grid_for(s.nvec > s.nscalar ? s.nvec : s.nscalar), THREADS, 0, cuda_stream()>>>(op,
                                                                                                 s);
    CUDA_LAUNCHED();
}

template <class Op> void map(const Op &op, int64_t n, std::initializer_list<const void *> ptrs) {
    if (n <= 0) return;
    map_split(op, split(n, ptrs));
}

// An optimizer's update of n weights: the bf16 copy's vectors are 8-byte stores, so where
// they would be misaligned every element goes alone.
template <class Op> void map_update(const Op &op, const void *w_act, int64_t n, Split s) {
    if (w_act && s.nvec && (uintptr_t)((const bf16 *)w_act + s.head) % 8) s = {n, 0, n};
    map_split(op, s);
}

// *out = sum of x[0..n) in fp64, one block, in a fixed order.
template <class T>
__global__ void __launch_bounds__(SUM_THREADS) sum_kernel(double *out, const T *x, int64_t n) {
    __shared__ double sh[32];
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += (double)x[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) *out = s;
}

double download_double(const double *dev) {
    double h = 0.0;
    CUDA_CHECK(cudaMemcpyAsync(&h, dev, sizeof h, cudaMemcpyDeviceToHost, cuda_stream()));
    CUDA_CHECK(cudaStreamSynchronize(cuda_stream()));
    return h;
}

// Online softmax over a set of logits: max m, s = sum exp(x - m), i = first index of the max.
struct Soft {
    float m, s;
    int i;
};
__device__ __forceinline__ Soft soft_empty() { return {-INFINITY, 0.f, INT_MAX}; }

// x at index j, pushed in increasing j: a tie keeps the earlier index.
__device__ __forceinline__ Soft soft_push(Soft a, float x, int j) {
    if (x > a.m) {
        a.s = a.s * __expf(a.m - x) + 1.f;
        a.m = x;
        a.i = j;
    } else {
        a.s += __expf(x - a.m);
    }
    return a;
}
// Symmetric in a and b, so every lane of an xor tree ends with the same value.
__device__ __forceinline__ Soft soft_merge(Soft a, Soft b) {
    Soft r;
    r.m = fmaxf(a.m, b.m);
    r.s =
        (a.m == r.m ? a.s : a.s * __expf(a.m - r.m)) + (b.m == r.m ? b.s : b.s * __expf(b.m - r.m));
    r.i = a.m > b.m ? a.i : b.m > a.m ? b.i : min(a.i, b.i);
    return r;
}
__device__ __forceinline__ Soft warp_soft(Soft a) {
    for (int o = 16; o > 0; o >>= 1) {
        Soft b = {__shfl_xor_sync(FULL_MASK, a.m, o), __shfl_xor_sync(FULL_MASK, a.s, o),
                  __shfl_xor_sync(FULL_MASK, a.i, o)};
        a = soft_merge(a, b);
    }
    return a;
}
// a reduced over the block (blockDim.x a multiple of 32) through its warp reduction Warp (an
// xor tree: every lane ends with the same value); every thread gets the result. A second
// reduction into the same sh needs a barrier between them (or another sh).
template <class T, T (*Warp)(T)> __device__ __forceinline__ T block_reduce(T a, T *sh, T empty) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    a = Warp(a);
    if (lane == 0) sh[warp] = a;
    __syncthreads();
    return Warp(lane < nw ? sh[lane] : empty);
}
__device__ __forceinline__ Soft block_soft(Soft a, Soft *sh) {
    return block_reduce<Soft, warp_soft>(a, sh, soft_empty());
}

template <int VEC> __device__ __forceinline__ Soft row_soft(const bf16 *x, int units) {
    Soft a = soft_empty();
    for (int u = threadIdx.x; u < units; u += blockDim.x) {
        Pack<bf16, VEC> p = ld_vec<VEC>(x + (int64_t)u * VEC);
#pragma unroll
        for (int k = 0; k < VEC; k++) a = soft_push(a, bf2f(p.v[k]), u * VEC + k);
    }
    return a;
}

// Row n: loss[n] = logsumexp(x) - x[y]; if gs != 0 the row becomes gs (softmax(x) - onehot(y)),
// or 0 when y = -100. A label outside [0, V) gives a NaN loss.
template <int VEC>
__global__ void __launch_bounds__(ROW_THREADS)
    cross_entropy_kernel(bf16 *logits, float *loss, const int32_t *labels, int V, float gs) {
    __shared__ Soft sh[32];
    int64_t n = blockIdx.x;
    bf16 *x = logits + n * V;
    int y = labels[n], units = V / VEC;
    if (y == -100) {
        if (gs != 0.f) {
            Pack<bf16, VEC> z;
#pragma unroll
            for (int k = 0; k < VEC; k++) z.v[k] = f2bf(0.f);
            for (int u = threadIdx.x; u < units; u += blockDim.x)
                st_vec<VEC>(x + (int64_t)u * VEC, z);
        }
        if (threadIdx.x == 0) loss[n] = 0.f;
        return;
    }
    if (y < 0 || y >= V) {
        if (threadIdx.x == 0) loss[n] = NAN;
        return;
    }
    float xy = bf2f(x[y]); // read before block_soft's barrier, after which the row is overwritten
    Soft a = block_soft(row_soft<VEC>(x, units), sh);
    if (threadIdx.x == 0) loss[n] = a.m + logf(a.s) - xy;
    if (gs == 0.f) return;
    float k1 = gs / a.s;
    for (int u = threadIdx.x; u < units; u += blockDim.x) {
        Pack<bf16, VEC> p = ld_vec<VEC>(x + (int64_t)u * VEC), o;
#pragma unroll
        for (int k = 0; k < VEC; k++) {
            float gk = __expf(bf2f(p.v[k]) - a.m) * k1;
            if (u * VEC + k == y) gk -= gs;
            o.v[k] = f2bf(gk);
        }
        st_vec<VEC>(x + (int64_t)u * VEC, o);
    }
}

// logp[n] = x[y] - logsumexp(x); amax[n] = y is the first argmax. y = -100: 0 and 1.
template <int VEC>
__global__ void __launch_bounds__(ROW_THREADS)
    token_logprobs_kernel(const bf16 *logits, const int32_t *labels, int V, float *logp,
                          uint8_t *amax) {
    __shared__ Soft sh[32];
    int64_t n = blockIdx.x;
    const bf16 *x = logits + n * V;
    int y = labels[n];
    if (y == -100 || y < 0 || y >= V) {
        if (threadIdx.x == 0) {
            logp[n] = y == -100 ? 0.f : NAN;
            amax[n] = y == -100;
        }
        return;
    }
    Soft a = block_soft(row_soft<VEC>(x, V / VEC), sh);
    if (threadIdx.x == 0) {
        logp[n] = bf2f(x[y]) - a.m - logf(a.s);
        amax[n] = a.i == y;
    }
}

// A logit and its id, ordered by value, then by the lower id (the first argmax first).
struct Ranked {
    float v;
    int i;
};
__device__ __forceinline__ bool ranked_before(Ranked a, Ranked b) {
    return a.v > b.v || (a.v == b.v && a.i < b.i);
}
__device__ __forceinline__ Ranked warp_first(Ranked a) {
    for (int o = 16; o > 0; o >>= 1) {
        Ranked b = {__shfl_xor_sync(FULL_MASK, a.v, o), __shfl_xor_sync(FULL_MASK, a.i, o)};
        if (ranked_before(b, a)) a = b;
    }
    return a;
}
// Row n (LogitScoresArgs): lse and the label's log p from one online softmax; the top k in k
// rounds, round r taking the first of the logits ranked after round r-1's pick (the rounds
// reduce into two shared buffers in turn: round r + 1's barrier frees round r's).
template <int VEC>
__global__ void __launch_bounds__(ROW_THREADS)
    logit_scores_kernel(const bf16 *logits, const int32_t *labels, int V, int vocab, int k,
                        float *lse, float *label_lp, int32_t *top_id, float *top_lp) {
    __shared__ Soft sh[32];
    __shared__ Ranked shr[2][32];
    int64_t n = blockIdx.x;
    const bf16 *x = logits + n * V;
    Soft a = block_soft(row_soft<VEC>(x, V / VEC), sh);
    float l = a.m + logf(a.s);
    int y = labels[n];
    if (threadIdx.x == 0) {
        lse[n] = l;
        label_lp[n] = y == -100 ? 0.f : y >= 0 && y < V ? bf2f(x[y]) - l : NAN;
    }
    Ranked prev = {INFINITY, -1};
    for (int r = 0; r < k; r++) {
        Ranked b = {-INFINITY, INT_MAX};
        for (int j = threadIdx.x; j < vocab; j += blockDim.x) {
            Ranked c = {bf2f(x[j]), j};
            if (ranked_before(prev, c) && ranked_before(c, b)) b = c;
        }
        prev = block_reduce<Ranked, warp_first>(b, shr[r & 1], Ranked{-INFINITY, INT_MAX});
        if (threadIdx.x == 0) {
            top_id[n * k + r] = prev.i;
            top_lp[n * k + r] = prev.v - l;
        }
    }
}

// Threads for one softmax row of `units` vectors.
int row_threads(int units) {
    int t = (int)cdiv(units, 32) * 32;
    return t < ROW_THREADS ? t : ROW_THREADS;
}

bool row_vec(const void *logits, int V) { return V % 8 == 0 && (uintptr_t)logits % 16 == 0; }

void check_rows(const char *op, int64_t N, int V) {
    if (N > INT32_MAX || V < 1) rt_die("%s: N=%lld V=%d unsupported", op, (long long)N, V);
}

// Per-block sums of squares in fp64 into part[blockIdx.x].
__global__ void __launch_bounds__(THREADS) sumsq_kernel(double *part, const float *x, Split s) {
    __shared__ double sh[32];
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0.0;
    for (int64_t v = t; v < s.nvec; v += stride) {
        Pack<float, 4> p = ld_vec<4>(x + s.head + 4 * v);
#pragma unroll
        for (int k = 0; k < 4; k++) acc += (double)p.v[k] * (double)p.v[k];
    }
    for (int64_t k = t; k < s.nscalar; k += stride) {
        double a = x[scalar_index(s, k)];
        acc += a * a;
    }
    acc = block_sum(acc, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = acc;
}

struct Scale {
    float *x;
    float s;
    template <int V> __device__ void run(int64_t i) const {
        Pack<float, V> p = ld_vec<V>(x + i);
#pragma unroll
        for (int k = 0; k < V; k++) p.v[k] *= s;
        st_vec<V>(x + i, p);
    }
};

// The updated weights to w + i and, where kept, their bf16 compute copy to w_act + i.
template <int V>
__device__ __forceinline__ void store_weights(float *w, bf16 *w_act, int64_t i,
                                              const Pack<float, V> &wv) {
    st_vec<V>(w + i, wv);
    if (w_act) {
        Pack<bf16, V> a;
#pragma unroll
        for (int k = 0; k < V; k++) a.v[k] = f2bf(wv.v[k]);
        st_vec<V>(w_act + i, a);
    }
}

// docs/models.md §training-recipe, as src/cpu/loss_optim.c: m = b1 m + (1-b1) g, v = b2 v + (1-b2)
// g^2, w -= lr wd w + (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps).
struct AdamW {
    float *w, *m, *v;
    bf16 *w_act; // the compute copy, or null
    const float *g;
    float b1, b2, step, rbc2, eps, decay;
    template <int V> __device__ void run(int64_t i) const {
        Pack<float, V> wv = ld_vec<V>(w + i), mv = ld_vec<V>(m + i), vv = ld_vec<V>(v + i),
                       gv = ld_vec<V>(g + i);
#pragma unroll
        for (int k = 0; k < V; k++) {
            float gi = gv.v[k];
            mv.v[k] = b1 * mv.v[k] + (1.f - b1) * gi;
            vv.v[k] = b2 * vv.v[k] + (1.f - b2) * gi * gi;
            wv.v[k] -= decay * wv.v[k] + step * mv.v[k] / (sqrtf(vv.v[k]) * rbc2 + eps);
        }
        store_weights(w, w_act, i, wv);
        st_vec<V>(m + i, mv);
        st_vec<V>(v + i, vv);
    }
};

// AdamW's scalars (its fields from b1 on) and the fused kernel's update of one element: AdamW's
// formula with every rounding spelled out as nvcc contracts AdamW's (its PTX, vector and scalar
// paths alike), so that both give the same bits.
struct AdamWStep {
    float b1, b2, step, rbc2, eps, decay;
    __device__ __forceinline__ void operator()(float &w, float &m, float &v, float g) const {
        m = __fmaf_rn(__fsub_rn(1.f, b1), g, __fmul_rn(b1, m));
        v = __fmaf_rn(g, __fmul_rn(__fsub_rn(1.f, b2), g), __fmul_rn(b2, v));
        float den = __fmaf_rn(__fsqrt_rn(v), rbc2, eps);
        w = __fsub_rn(w, __fmaf_rn(decay, w, __fdiv_rn(__fmul_rn(step, m), den)));
    }
};

// Elements of a run one block updates per iteration of adamw_runs_kernel: two float4 a thread.
constexpr int RUN_TILE = 2 * 4 * THREADS;

// A run of the fused update (device table): elements [lo, hi) from the range's start, its first
// tile among all runs' tiles, its learning-rate terms (AdamWStep's step and decay). The table
// ends with a sentinel whose tile0 is the tile count.
struct FusedRun {
    int64_t lo, hi, tile0;
    float step, decay;
};

struct AdamWFused {
    float *w, *m, *v;
    bf16 *w_act;
    const float *g;
    const FusedRun *runs;
    int64_t ntiles;
    float b1, b2, rbc2, eps, gs; // gs: the clip factor, as (float) scale() rounds it
    int head;                    // float4 vectors start at elements = head (mod 4); -1: none
    template <int V> __device__ __forceinline__ void run(const AdamWStep &s, int64_t i) const {
        Pack<float, V> wv = ld_vec<V>(w + i), mv = ld_vec<V>(m + i), vv = ld_vec<V>(v + i),
                       gv = ld_vec<V>(g + i);
#pragma unroll
        for (int k = 0; k < V; k++) // the gradient rounded as Scale's product rounds it
            s(wv.v[k], mv.v[k], vv.v[k], __fmul_rn(gv.v[k], gs));
        store_weights(w, w_act, i, wv);
        st_vec<V>(m + i, mv);
        st_vec<V>(v + i, vv);
    }
};

// Every run of an AdamWFused in one launch: each block strides over the runs' tiles in order,
// finding a tile's run by walking the table forward; a tile's elements from the first vector
// boundary to the last as float4 vectors, the at most 3 on either side alone.
__global__ void __launch_bounds__(THREADS) adamw_runs_kernel(AdamWFused a) {
    int r = 0;
    for (int64_t tile = blockIdx.x; tile < a.ntiles; tile += gridDim.x) {
        while (a.runs[r + 1].tile0 <= tile) r++;
        const FusedRun run = a.runs[r];
        const AdamWStep s{a.b1, a.b2, run.step, a.rbc2, a.eps, run.decay};
        int64_t lo = run.lo + (tile - run.tile0) * RUN_TILE;
        int64_t hi = lo + RUN_TILE < run.hi ? lo + RUN_TILE : run.hi, vlo = hi, vhi = hi;
        if (a.head >= 0) {
            vlo = a.head + ((lo - a.head + 3) & ~(int64_t)3);
            vhi = a.head + ((hi - a.head) & ~(int64_t)3);
            if (vlo > vhi) vlo = vhi = hi;
        }
        for (int64_t i = vlo + 4 * threadIdx.x; i < vhi; i += 4 * THREADS) a.run<4>(s, i);
        for (int64_t i = lo + threadIdx.x; i < vlo; i += THREADS) a.run<1>(s, i);
        for (int64_t i = vhi + threadIdx.x; i < hi; i += THREADS) a.run<1>(s, i);
    }
}

// torch.optim.RMSprop without momentum, not centered (the CPU's cpu_rmsprop_update).
struct RMSprop {
    float *w, *sq;
    bf16 *w_act; // the compute copy, or null
    const float *g;
    float alpha, alpha1, lr, eps, wd;
    template <int V> __device__ void run(int64_t i) const {
        Pack<float, V> wv = ld_vec<V>(w + i), sv = ld_vec<V>(sq + i), gv = ld_vec<V>(g + i);
#pragma unroll
        for (int k = 0; k < V; k++) {
            // rounded as the CPU reference, not fused: g + wd w cancels where the decay meets
            // the gradient, and one rounding more or less moves such a step by ~lr
            float gi = __fadd_rn(gv.v[k], __fmul_rn(wd, wv.v[k]));
            sv.v[k] = alpha * sv.v[k] + alpha1 * gi * gi;
            wv.v[k] -= lr * gi / (sqrtf(sv.v[k]) + eps);
        }
        store_weights(w, w_act, i, wv);
        st_vec<V>(sq + i, sv);
    }
};

} // namespace

double cuda_cross_entropy(void *logits, const int32_t *labels, int64_t N, int V,
                          double grad_scale) {
    if (N <= 0) return 0.0;
    check_rows("cross_entropy", N, V);
    float *loss = (float *)cuda_scratch(SCRATCH_A, sizeof(float) * (size_t)N);
    double *total = (double *)cuda_scratch(SCRATCH_B, sizeof(double));
    bool vec = row_vec(logits, V);
    int threads = row_threads(vec ? V / 8 : V);
    if (vec)
        cross_entropy_kernel<8><<<(unsigned)N, threads, 0, cuda_stream()>>>(
            (bf16 *)logits, loss, labels, V, (float)grad_scale);
    else
        cross_entropy_kernel<1><<<(unsigned)N, threads, 0, cuda_stream()>>>(
            (bf16 *)logits, loss, labels, V, (float)grad_scale);
    CUDA_LAUNCHED();
    sum_kernel<float><<<1, SUM_THREADS, 0, cuda_stream()>>>(total, loss, N);
    CUDA_LAUNCHED();
    return download_double(total);
}

void cuda_logit_scores(const LogitScoresArgs *a) {
    if (a->N <= 0) return;
    check_rows("logit_scores", a->N, a->V);
    if (a->k < 1 || a->k > a->vocab || a->vocab > a->V)
        rt_die("logit_scores: k=%d vocab=%d V=%d unsupported", a->k, a->vocab, a->V);
    bool vec = row_vec(a->logits, a->V);
    int threads = row_threads(vec ? a->V / 8 : a->V);
    if (vec)
        logit_scores_kernel<8><<<(unsigned)a->N, threads, 0, cuda_stream()>>>(
            (const bf16 *)a->logits, a->labels, a->V, a->vocab, a->k, (float *)a->lse,
            (float *)a->label_lp, a->top_id, (float *)a->top_lp);
    else
        logit_scores_kernel<1><<<(unsigned)a->N, threads, 0, cuda_stream()>>>(
            (const bf16 *)a->logits, a->labels, a->V, a->vocab, a->k, (float *)a->lse,
            (float *)a->label_lp, a->top_id, (float *)a->top_lp);
    CUDA_LAUNCHED();
}

void cuda_token_logprobs(const void *logits, const int32_t *labels, int64_t N, int V, void *logp,
                         uint8_t *is_argmax) {
    if (N <= 0) return;
    check_rows("token_logprobs", N, V);
    uint8_t *amax = (uint8_t *)cuda_scratch(SCRATCH_A, (size_t)N);
    bool vec = row_vec(logits, V);
    int threads = row_threads(vec ? V / 8 : V);
    if (vec)
        token_logprobs_kernel<8><<<(unsigned)N, threads, 0, cuda_stream()>>>(
            (const bf16 *)logits, labels, V, (float *)logp, amax);
    else
        token_logprobs_kernel<1><<<(unsigned)N, threads, 0, cuda_stream()>>>(
            (const bf16 *)logits, labels, V, (float *)logp, amax);
    CUDA_LAUNCHED();
    CUDA_CHECK(cudaMemcpyAsync(is_argmax, amax, (size_t)N, cudaMemcpyDeviceToHost, cuda_stream()));
    CUDA_CHECK(cudaStreamSynchronize(cuda_stream()));
}

double cuda_sumsq(const void *x, int64_t n) {
    if (n <= 0) return 0.0;
    Split s = split(n, {x});
    unsigned nb = grid_for(s.nvec > s.nscalar ? s.nvec : s.nscalar);
    double *part = (double *)cuda_scratch(SCRATCH_A, sizeof(double) * nb);
    double *total = (double *)cuda_scratch(SCRATCH_B, sizeof(double));
    sumsq_kernel<<<nb, THREADS, 0, cuda_stream()>>>(part, (const float *)x, s);
    CUDA_LAUNCHED();
    sum_kernel<double><<<1, SUM_THREADS, 0, cuda_stream()>>>(total, part, nb);
    CUDA_LAUNCHED();
    return download_double(total);
}

void cuda_scale(void *x, int64_t n, double s) { map(Scale{(float *)x, (float)s}, n, {x}); }

namespace {

// The scalars exactly as the CPU backend rounds them.
AdamWStep adamw_step(double lr, double beta1, double beta2, double eps, double weight_decay,
                     int64_t t) {
    double bc1 = 1.0 - pow(beta1, (double)t), bc2 = 1.0 - pow(beta2, (double)t);
    return {(float)beta1,      (float)beta2,
            (float)(lr / bc1), (float)(1.0 / sqrt(bc2)),
            (float)eps,        (float)lr * (float)weight_decay};
}

// The float4 phase of an AdamWRuns' buffers: aligned_head of w, m, v, g, or -1 where they
// disagree or the bf16 copy's vectors there would be misaligned for 8-byte stores.
int fused_head(const AdamWRuns *a) {
    int64_t h = aligned_head({a->w, a->m, a->v, a->g});
    if (h >= 0 && a->w_act && (uintptr_t)((const bf16 *)a->w_act + h) % 8) h = -1;
    return (int)h;
}

// Blocks for adamw_runs_kernel: one wave of those resident at once (its registers allow fewer
// than grid_for's full occupancy), no more than the tiles.
unsigned fused_grid(int64_t tiles) {
    static int per_sm = 0;
    if (!per_sm)
        CUDA_CHECK(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, adamw_runs_kernel, THREADS, 0));
    int64_t cap = (int64_t)cuda_sm_count() * (per_sm > 0 ? per_sm : 1);
    return (unsigned)(tiles < cap ? tiles : cap);
}

// adamw:fused: the run table to the device (SCRATCH_A), then one launch.
void adamw_runs_fused(const AdamWRuns *a) {
    FusedRun *h = (FusedRun *)rt_malloc(sizeof(FusedRun) * (size_t)(a->nruns + 1));
    int64_t tiles = 0;
    for (int k = 0; k < a->nruns; k++) {
        const UpdateRun *r = &a->runs[k];
        AdamWStep s = adamw_step(r->lr, a->beta1, a->beta2, a->eps, r->weight_decay, a->t);
        h[k] = {r->offset, r->offset + r->n, tiles, s.step, s.decay};
        tiles += cdiv(r->n > 0 ? r->n : 0, RUN_TILE);
    }
    h[a->nruns] = {0, 0, tiles, 0.f, 0.f};
    size_t bytes = sizeof(FusedRun) * (size_t)(a->nruns + 1);
    FusedRun *d = (FusedRun *)cuda_scratch(SCRATCH_A, bytes);
    cuda_upload(d, h, bytes); // has read h when it returns (pageable host memory)
    rt_free(h);
    if (tiles == 0) return;
    AdamWStep s = adamw_step(0, a->beta1, a->beta2, a->eps, 0, a->t);
    AdamWFused op{(float *)a->w,
                  (float *)a->m,
                  (float *)a->v,
                  (bf16 *)a->w_act,
                  (const float *)a->g,
                  d,
                  tiles,
                  s.b1,
                  s.b2,
                  s.rbc2,
                  s.eps,
                  (float)a->grad_scale,
                  fused_head(a)};
    adamw_runs_kernel<<<fused_grid(tiles), THREADS, 0, cuda_stream()>>>(op);
    CUDA_LAUNCHED();
}

// adamw:runs: the verified kernels in the trainer's former order, the clip factor's scale pass
// over the runs' span, then adamw per run.
void adamw_runs_loop(const AdamWRuns *a) {
    int64_t lo = a->runs[0].offset, hi = lo;
    for (int k = 0; k < a->nruns; k++) {
        const UpdateRun *r = &a->runs[k];
        if (r->offset < lo) lo = r->offset;
        if (r->offset + r->n > hi) hi = r->offset + r->n;
    }
    if (a->grad_scale != 1) cuda_scale((float *)a->g + lo, hi - lo, a->grad_scale);
    for (int k = 0; k < a->nruns; k++) {
        const UpdateRun *r = &a->runs[k];
        cuda_adamw((float *)a->w + r->offset, a->w_act ? (bf16 *)a->w_act + r->offset : nullptr,
                   (float *)a->m + r->offset, (float *)a->v + r->offset, (float *)a->g + r->offset,
                   r->n, r->lr, a->beta1, a->beta2, a->eps, r->weight_decay, a->t);
    }
}

} // namespace

void cuda_adamw(void *w, void *w_act, void *m, void *v, const void *g, int64_t n, double lr,
                double beta1, double beta2, double eps, double weight_decay, int64_t t) {
    if (n <= 0) return;
    cuda_check_aligned(w_act, 2, "adamw");
    AdamWStep s = adamw_step(lr, beta1, beta2, eps, weight_decay, t);
    AdamW op{(float *)w, (float *)m, (float *)v, (bf16 *)w_act, (const float *)g, s.b1,
             s.b2,       s.step,     s.rbc2,     s.eps,         s.decay};
    map_update(op, w_act, n, split(n, {w, m, v, g}));
}

void cuda_adamw_runs(const AdamWRuns *a) {
    if (a->nruns <= 0) return;
    cuda_check_aligned(a->w_act, 2, "adamw_runs");
    if (kernel_variant(KV_ADAMW) == 1)
        adamw_runs_fused(a);
    else
        adamw_runs_loop(a);
}

void cuda_rmsprop_update(void *w, void *w_act, void *sq, const void *g, int64_t n, double lr,
                         double alpha, double eps, double weight_decay) {
    if (n <= 0) return;
    cuda_check_aligned(w_act, 2, "rmsprop_update");
    RMSprop op{(float *)w,         (float *)sq, (bf16 *)w_act, (const float *)g,   (float)alpha,
               (float)(1 - alpha), (float)lr,   (float)eps,    (float)weight_decay};
    map_update(op, w_act, n, split(n, {w, sq, g}));
}
