// The complex diagonal scan of the LRU and RotRNN (docs/models.md §lru, §rotrnn; CScanArgs in
// src/backend_ops.h; CPU reference src/cpu/cscan.c), in the same three passes over the chunk
// table (Seqs.dev_chunk: first token, length, segment of every chunk):
//   1. one thread per (chunk, channel) runs h_t = lambda h_{t-1} + x_t from zero over its
//      chunk and keeps the last state in a->states;
//   2. one thread per channel walks the chunks in order and replaces each kept state by the
//      state entering the chunk (h_in(k+1) = lambda^len(k) h_in(k) + last(k), zero at a
//      segment's first chunk); with a->state it also writes each segment's final state;
//   3. one thread per (chunk, channel) runs the chunk again from its entering state.
// The backward runs the same passes in reverse on G_t = dh_t + conj(lambda) G_{t+1}; pass 3
// also sums w = G_t conj(lambda h_{t-1}) over its chunk into a->states, and a fourth pass adds
// the chunks' sums in order per channel (dloga = Re w, dangle = Im w): deterministic.
// cscan_step is one step per (row, channel) from and into a->state (docs/models.md §decoding).
// segment_reverse (the bidirectional scan, §block-dropout-bidirectional) runs one block per
// segment.
//
// Threads of a warp take adjacent channels, so the (re, im) pairs of a token are read and
// written as coalesced bf16x2. Precision: x, h, dh, dx [act] bf16; eigenvalues, states and
// every sum in fp32.
#include <stdint.h>

#include "backend/cuda_ops.h"
#include "lib/cuda_common.cuh"
#include "util/error.h"

namespace {

constexpr int THREADS = 256;
constexpr int MAX_GRID_Y = 65535;

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
    return f2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ float2 conjf2(float2 a) { return f2(a.x, -a.y); }

// lambda_c^p = exp(p (loga_c + i angle_c)).
__device__ __forceinline__ float2 eig_pow(const float *loga, const float *angle, int c, float p) {
    float m = expf(p * loga[c]), s, co;
    sincosf(p * angle[c], &s, &co);
    return f2(m * co, m * s);
}

// Chunks k = blockIdx.y, blockIdx.y + gridDim.y, ...; channel c = blockIdx.x * THREADS + tid.
#define FOR_CHUNKS(k, nchunk) for (int64_t k = blockIdx.y; k < (nchunk); k += gridDim.y)

dim3 chunk_grid(int64_t nchunk, int C) {
    return dim3((unsigned)cdiv(C, THREADS), (unsigned)(nchunk < MAX_GRID_Y ? nchunk : MAX_GRID_Y));
}

// ---- forward ----

__global__ void __launch_bounds__(THREADS)
    scan_local_kernel(float *st, const bf16 *x, const float *loga, const float *angle,
                      const int *chunks, int64_t nchunk, int C) {
    int c = blockIdx.x * THREADS + threadIdx.x;
    if (c >= C) return;
    float2 lam = eig_pow(loga, angle, c, 1.f);
    FOR_CHUNKS(k, nchunk) {
        int64_t first = chunks[3 * k], len = chunks[3 * k + 1];
        float2 z = f2(0.f, 0.f);
        for (int64_t t = first; t < first + len; t++) z = cmul(lam, z) + ld2(x + t * 2 * C + 2 * c);
        stf2(st + k * 2 * C + 2 * c, z);
    }
}

// In place: st[k] (chunk k's last state from zero) becomes the state entering chunk k.
__global__ void __launch_bounds__(THREADS)
    scan_carry_kernel(float *st, float *final, const float *loga, const float *angle,
                      const int *chunks, int64_t nchunk, int C) {
    int c = blockIdx.x * THREADS + threadIdx.x;
    if (c >= C) return;
    float2 z = f2(0.f, 0.f);
    for (int64_t k = 0; k < nchunk; k++) {
        int seg = chunks[3 * k + 2];
        if (k > 0 && chunks[3 * (k - 1) + 2] != seg) z = f2(0.f, 0.f);
        float2 last = ldf2(st + k * 2 * C + 2 * c);
        stf2(st + k * 2 * C + 2 * c, z);
        z = cmul(eig_pow(loga, angle, c, (float)chunks[3 * k + 1]), z) + last;
        if (final && (k == nchunk - 1 || chunks[3 * (k + 1) + 2] != seg))
            stf2(final + (int64_t)seg * 2 * C + 2 * c, z);
    }
}

__global__ void __launch_bounds__(THREADS)
    scan_apply_kernel(bf16 *h, const float *st, const bf16 *x, const float *loga,
                      const float *angle, const int *chunks, int64_t nchunk, int C) {
    int c = blockIdx.x * THREADS + threadIdx.x;
    if (c >= C) return;
    float2 lam = eig_pow(loga, angle, c, 1.f);
    FOR_CHUNKS(k, nchunk) {
        int64_t first = chunks[3 * k], len = chunks[3 * k + 1];
        float2 z = ldf2(st + k * 2 * C + 2 * c);
        for (int64_t t = first; t < first + len; t++) {
            z = cmul(lam, z) + ld2(x + t * 2 * C + 2 * c);
            st2(h + t * 2 * C + 2 * c, z);
        }
    }
}

// ---- backward ----

__global__ void __launch_bounds__(THREADS)
    rscan_local_kernel(float *st, const bf16 *dh, const float *loga, const float *angle,
                       const int *chunks, int64_t nchunk, int C) {
    int c = blockIdx.x * THREADS + threadIdx.x;
    if (c >= C) return;
    float2 lamc = conjf2(eig_pow(loga, angle, c, 1.f));
    FOR_CHUNKS(k, nchunk) {
        int64_t first = chunks[3 * k], len = chunks[3 * k + 1];
        float2 z = f2(0.f, 0.f);
        for (int64_t t = first + len - 1; t >= first; t--)
            z = cmul(lamc, z) + ld2(dh + t * 2 * C + 2 * c);
        stf2(st + k * 2 * C + 2 * c, z);
    }
}

// In place: st[k] (G at chunk k's first token from zero after it) becomes the G entering
// chunk k from the right (G_{t+1} of its last token; zero after a segment's last chunk).
__global__ void __launch_bounds__(THREADS)
    rscan_carry_kernel(float *st, const float *loga, const float *angle, const int *chunks,
                       int64_t nchunk, int C) {
    int c = blockIdx.x * THREADS + threadIdx.x;
    if (c >= C) return;
    float2 z = f2(0.f, 0.f);
    for (int64_t k = nchunk - 1; k >= 0; k--) {
        if (k < nchunk - 1 && chunks[3 * (k + 1) + 2] != chunks[3 * k + 2]) z = f2(0.f, 0.f);
        float2 first = ldf2(st + k * 2 * C + 2 * c);
        stf2(st + k * 2 * C + 2 * c, z);
        z = cmul(conjf2(eig_pow(loga, angle, c, (float)chunks[3 * k + 1])), z) + first;
    }
}

// dx = G, and each chunk's sum of G_t conj(lambda h_{t-1}) into st[k].
__global__ void __launch_bounds__(THREADS)
    rscan_apply_kernel(bf16 *dx, float *st, const bf16 *dh, const bf16 *h, const float *loga,
                       const float *angle, const int *chunks, const int *cu, int64_t nchunk,
                       int C) {
    int c = blockIdx.x * THREADS + threadIdx.x;
    if (c >= C) return;
    float2 lam = eig_pow(loga, angle, c, 1.f), lamc = conjf2(lam);
    FOR_CHUNKS(k, nchunk) {
        int64_t first = chunks[3 * k], len = chunks[3 * k + 1], start = cu[chunks[3 * k + 2]];
        float2 z = ldf2(st + k * 2 * C + 2 * c), w = f2(0.f, 0.f);
        for (int64_t t = first + len - 1; t >= first; t--) {
            z = cmul(lamc, z) + ld2(dh + t * 2 * C + 2 * c);
            st2(dx + t * 2 * C + 2 * c, z);
            if (t > start) w = w + cmul(z, conjf2(cmul(lam, ld2(h + (t - 1) * 2 * C + 2 * c))));
        }
        stf2(st + k * 2 * C + 2 * c, w);
    }
}

__global__ void __launch_bounds__(THREADS)
    rscan_sum_kernel(float *dloga, float *dangle, const float *st, int64_t nchunk, int C,
                     int accumulate) {
    int c = blockIdx.x * THREADS + threadIdx.x;
    if (c >= C) return;
    float2 w = accumulate ? f2(dloga[c], dangle[c]) : f2(0.f, 0.f);
    for (int64_t k = 0; k < nchunk; k++) w = w + ldf2(st + k * 2 * C + 2 * c);
    dloga[c] = w.x;
    dangle[c] = w.y;
}

// ---- decoding ----

__global__ void __launch_bounds__(THREADS)
    scan_step_kernel(bf16 *h, float *state, const bf16 *x, const float *loga, const float *angle,
                     const int32_t *pos, int64_t rows, int C) {
    int c = blockIdx.x * THREADS + threadIdx.x;
    int64_t r = blockIdx.y;
    if (c >= C || r >= rows) return;
    float *s = state + r * 2 * C + 2 * c;
    float2 z = pos[r] == 0 ? f2(0.f, 0.f) : ldf2(s);
    z = cmul(eig_pow(loga, angle, c, 1.f), z) + ld2(x + r * 2 * C + 2 * c);
    stf2(s, z);
    st2(h + r * 2 * C + 2 * c, z);
}

// Block seg: y[cu[seg] + t, :] (=, or +=) x[cu[seg+1] - 1 - t, :].
__global__ void __launch_bounds__(THREADS)
    reverse_kernel(bf16 *y, const bf16 *x, const int *cu, int C, int accumulate) {
    int64_t a = cu[blockIdx.x], b = cu[blockIdx.x + 1], n = (b - a) * C;
    for (int64_t i = threadIdx.x; i < n; i += THREADS) {
        int64_t t = i / C, c = i % C, o = (a + t) * C + c;
        float v = bf2f(x[(b - 1 - t) * C + c]);
        y[o] = f2bf(accumulate ? bf2f(y[o]) + v : v);
    }
}

void check_chunks(const Seqs *s, const char *op) {
    if (s->nchunk > INT32_MAX)
        rt_die("%s: %lld chunks exceed the chunk table", op, (long long)s->nchunk);
}

// One kernel of THREADS threads a block on the stream, checked.
template <class... P, class... A> void launch(void (*kernel)(P...), dim3 grid, A... args) {
    kernel<<<grid, THREADS, 0, cuda_stream()>>>(args...);
    CUDA_LAUNCHED();
}

} // namespace

void cuda_cscan_fwd(const CScanArgs *a) {
    const Seqs *s = a->s;
    check_chunks(s, "cscan_fwd");
    if (s->nchunk == 0) return;
    int C = a->C;
    const int *chunks = (const int *)s->dev_chunk;
    const float *loga = (const float *)a->loga, *angle = (const float *)a->angle;
    float *st = (float *)a->states;
    launch(scan_local_kernel, chunk_grid(s->nchunk, C), st, (const bf16 *)a->x, loga, angle, chunks,
           s->nchunk, C);
    launch(scan_carry_kernel, (unsigned)cdiv(C, THREADS), st, (float *)a->state, loga, angle,
           chunks, s->nchunk, C);
    launch(scan_apply_kernel, chunk_grid(s->nchunk, C), (bf16 *)a->h, st, (const bf16 *)a->x, loga,
           angle, chunks, s->nchunk, C);
}

void cuda_cscan_bwd(const CScanGrads *g) {
    const CScanArgs *a = &g->a;
    const Seqs *s = a->s;
    check_chunks(s, "cscan_bwd");
    int C = a->C;
    if (s->nchunk == 0) {
        if (g->accumulate) return;
        CUDA_CHECK(cudaMemsetAsync(g->dloga, 0, sizeof(float) * (size_t)C, cuda_stream()));
        CUDA_CHECK(cudaMemsetAsync(g->dangle, 0, sizeof(float) * (size_t)C, cuda_stream()));
        return;
    }
    const int *chunks = (const int *)s->dev_chunk;
    const float *loga = (const float *)a->loga, *angle = (const float *)a->angle;
    float *st = (float *)a->states;
    launch(rscan_local_kernel, chunk_grid(s->nchunk, C), st, (const bf16 *)g->dh, loga, angle,
           chunks, s->nchunk, C);
    launch(rscan_carry_kernel, (unsigned)cdiv(C, THREADS), st, loga, angle, chunks, s->nchunk, C);
    launch(rscan_apply_kernel, chunk_grid(s->nchunk, C), (bf16 *)g->dx, st, (const bf16 *)g->dh,
           (const bf16 *)a->h, loga, angle, chunks, (const int *)s->dev_cu, s->nchunk, C);
    launch(rscan_sum_kernel, (unsigned)cdiv(C, THREADS), (float *)g->dloga, (float *)g->dangle, st,
           s->nchunk, C, g->accumulate);
}

void cuda_cscan_step(const CScanArgs *a) {
    int64_t B = a->s->ntok;
    if (B == 0) return;
    if (B > MAX_GRID_Y)
        rt_die("cscan_step: %lld rows exceed the grid's %d", (long long)B, MAX_GRID_Y);
    launch(scan_step_kernel, dim3((unsigned)cdiv(a->C, THREADS), (unsigned)B), (bf16 *)a->h,
           (float *)a->state, (const bf16 *)a->x, (const float *)a->loga, (const float *)a->angle,
           a->s->dev_pos, B, a->C);
}

void cuda_segment_reverse(void *y, const void *x, const Seqs *s, int C, int accumulate) {
    if (s->nseg == 0) return;
    launch(reverse_kernel, (unsigned)s->nseg, (bf16 *)y, (const bf16 *)x, (const int *)s->dev_cu, C,
           accumulate);
}
