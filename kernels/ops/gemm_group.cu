// A group of products of one input (MatmulGroup: a mixer's input projections). Variant
// inproj:loop (src/device/kernel_variants.c, the verified default) runs each part as
// matmul_fwd / matmul_bwd in order. inproj:packed runs all parts as one product of width
// sum N_i into a packed [M, sum N_i] buffer, whose column blocks are then copied to the y_i;
// its backward gathers the dy_i into one such buffer and runs one product for dx and one for
// the weights' gradients. inproj:narrow packs only the parts of width <= NARROW_WIDTH (gates
// and low-rank projections, which run far from peak alone) and runs the others alone.
// Weights, and weight gradients, that lie one after another in memory as the parts do are used
// in place; otherwise they are packed into scratch.
#include <string.h>

#include "backend/cuda_ops.h"
#include "device/kernel_variants.h"
#include "lib/cuda_common.cuh"

enum { NARROW_WIDTH = 64 };

// Column block b of a packed [M, total] buffer and its part's own [M, n] buffer.
struct PackedParts {
    bf16 *part[MATMUL_GROUP_MAX];
    int off[MATMUL_GROUP_MAX + 1]; // column offsets, off[n] = total
    int n;
};

// to_parts: the packed buffer's blocks copied to the parts; else the parts into it. V
// elements a thread, V dividing every width. total = pp.off[pp.n], passed on its own: a
// computed index into the parameter struct would copy it to local memory.
template <int V>
__global__ void pack_kernel(bf16 *packed, PackedParts pp, int total, int64_t M, int to_parts) {
    const int per_row = total / V;
    GRID_STRIDE(i, M * per_row) {
        const int64_t r = i / per_row;
        const int c = (int)(i % per_row) * V;
        // the column's part, by constant indices only
        bf16 *part = pp.part[0];
        int lo = 0, hi = pp.off[1];
#pragma unroll
        for (int j = 1; j < MATMUL_GROUP_MAX; j++)
            if (j < pp.n && c >= pp.off[j]) part = pp.part[j], lo = pp.off[j], hi = pp.off[j + 1];
        bf16 *p = part + r * (hi - lo) + (c - lo), *q = packed + r * total + c;
        if (to_parts)
            st_vec<V>(p, ld_vec<V>(q));
        else
            st_vec<V>(q, ld_vec<V>(p));
    }
}

// dw_i [N_i, K] += rows off_i .. off_{i+1} of the packed fp32 gradient [total, K].
struct PackedGrads {
    float *dw[MATMUL_GROUP_MAX];
    int off[MATMUL_GROUP_MAX + 1];
    int n;
};

// count = pg.off[pg.n] * K, passed on its own as pack_kernel's total is.
__global__ void add_grads_kernel(PackedGrads pg, const float *packed, int64_t count, int K) {
    GRID_STRIDE(i, count) {
        const int row = (int)(i / K);
        float *dw = pg.dw[0];
        int lo = 0;
#pragma unroll
        for (int j = 1; j < MATMUL_GROUP_MAX; j++)
            if (j < pg.n && row >= pg.off[j]) dw = pg.dw[j], lo = pg.off[j];
        dw[i - (int64_t)lo * K] += packed[i];
    }
}

// The widest vector (of 8, 4, 2, 1 bf16) that divides every part's width and keeps every
// part's buffer aligned to it.
static int vector_width(const PackedParts &pp) {
    for (int v = 8; v > 1; v /= 2) {
        bool ok = true;
        for (int b = 0; b < pp.n; b++)
            ok = ok && (pp.off[b + 1] - pp.off[b]) % v == 0 &&
                 (uintptr_t)pp.part[b] % (v * sizeof(bf16)) == 0;
        if (ok) return v;
    }
    return 1;
}

static void pack(bf16 *packed, const PackedParts &pp, int64_t M, int to_parts) {
    if (M == 0) return;
    const int v = vector_width(pp), total = pp.off[pp.n];
    const int64_t n = M * (total / v);
    cudaStream_t st = cuda_stream();
    if (v == 8)
        pack_kernel<8><<<blocks_for(n), 256, 0, st>>>(packed, pp, total, M, to_parts);
    else if (v == 4)
        pack_kernel<4><<<blocks_for(n), 256, 0, st>>>(packed, pp, total, M, to_parts);
    else if (v == 2)
        pack_kernel<2><<<blocks_for(n), 256, 0, st>>>(packed, pp, total, M, to_parts);
    else
        pack_kernel<1><<<blocks_for(n), 256, 0, st>>>(packed, pp, total, M, to_parts);
    CUDA_LAUNCHED();
}

// The chosen parts of a group, idx[0..n).
struct Subset {
    int idx[MATMUL_GROUP_MAX];
    int n;
};

// Whether buffers p_i of rows_i * row_bytes bytes lie one after another.
static bool adjacent(const void *const *p, const int *rows, const Subset &s, size_t row_bytes) {
    for (int j = 1; j < s.n; j++)
        if ((const char *)p[s.idx[j - 1]] + (size_t)rows[s.idx[j - 1]] * row_bytes !=
            (const char *)p[s.idx[j]])
            return false;
    return true;
}

// The packed weights [total, K] (in place when adjacent) and packed bias [total] (NULL if no
// part has one) of a subset.
struct PackedWeights {
    const bf16 *w, *bias;
    int total;
};

static PackedWeights pack_weights(const MatmulGroup *g, const Subset &s, int *off) {
    const void *w[MATMUL_GROUP_MAX];
    int rows[MATMUL_GROUP_MAX];
    bool any_bias = false;
    off[0] = 0;
    for (int j = 0; j < s.n; j++) {
        const MatmulPart &p = g->p[s.idx[j]];
        w[s.idx[j]] = p.w, rows[s.idx[j]] = p.N;
        off[j + 1] = off[j] + p.N;
        any_bias = any_bias || p.bias;
    }
    PackedWeights pw = {(const bf16 *)g->p[s.idx[0]].w, nullptr, off[s.n]};
    cudaStream_t st = cuda_stream();
    const size_t row = (size_t)g->K * sizeof(bf16);
    if (!adjacent(w, rows, s, row)) {
        bf16 *packed = (bf16 *)cuda_scratch(SCRATCH_B, row * (size_t)pw.total);
        for (int j = 0; j < s.n; j++)
            CUDA_CHECK(cudaMemcpyAsync(packed + (size_t)off[j] * g->K, g->p[s.idx[j]].w,
                                       row * (size_t)g->p[s.idx[j]].N, cudaMemcpyDeviceToDevice,
                                       st));
        pw.w = packed;
    }
    if (any_bias) {
        bf16 *bias = (bf16 *)cuda_scratch(SCRATCH_C, sizeof(bf16) * (size_t)pw.total);
        CUDA_CHECK(cudaMemsetAsync(bias, 0, sizeof(bf16) * (size_t)pw.total, st));
        for (int j = 0; j < s.n; j++)
            if (g->p[s.idx[j]].bias)
                CUDA_CHECK(cudaMemcpyAsync(bias + off[j], g->p[s.idx[j]].bias,
                                           sizeof(bf16) * (size_t)g->p[s.idx[j]].N,
                                           cudaMemcpyDeviceToDevice, st));
        pw.bias = bias;
    }
    return pw;
}

static PackedParts parts_of(void *const *bufs, const int *off, const Subset &s) {
    PackedParts pp = {};
    pp.n = s.n;
    for (int j = 0; j <= s.n; j++) pp.off[j] = off[j];
    for (int j = 0; j < s.n; j++) pp.part[j] = (bf16 *)bufs[s.idx[j]];
    return pp;
}

static void packed_fwd(const MatmulGroup *g, const Subset &s) {
    int off[MATMUL_GROUP_MAX + 1];
    const PackedWeights pw = pack_weights(g, s, off);
    bf16 *y = (bf16 *)cuda_scratch(SCRATCH_A, sizeof(bf16) * (size_t)g->M * pw.total);
    cuda_matmul_fwd(y, g->x, pw.w, pw.bias, g->M, pw.total, g->K);
    void *outs[MATMUL_GROUP_MAX];
    for (int i = 0; i < g->n; i++) outs[i] = g->p[i].y;
    pack(y, parts_of(outs, off, s), g->M, 1);
}

static void packed_bwd(const MatmulGroupGrads *a, const Subset &s, int accumulate) {
    const MatmulGroup *g = &a->g;
    int off[MATMUL_GROUP_MAX + 1];
    const PackedWeights pw = pack_weights(g, s, off);
    bf16 *dy = (bf16 *)cuda_scratch(SCRATCH_A, sizeof(bf16) * (size_t)g->M * pw.total);
    pack(dy, parts_of((void *const *)a->dy, off, s), g->M, 0);
    const void *dw[MATMUL_GROUP_MAX];
    int rows[MATMUL_GROUP_MAX];
    for (int i = 0; i < g->n; i++) dw[i] = a->dw[i], rows[i] = g->p[i].N;
    const size_t row = (size_t)g->K * sizeof(float);
    float *dwp = (float *)a->dw[s.idx[0]];
    if (!adjacent(dw, rows, s, row)) {
        dwp = (float *)cuda_scratch(SCRATCH_D, row * (size_t)pw.total);
        CUDA_CHECK(cudaMemsetAsync(dwp, 0, row * (size_t)pw.total, cuda_stream()));
    }
    cuda_matmul_bwd(a->dx, dwp, nullptr, dy, g->x, pw.w, g->M, pw.total, g->K, accumulate);
    if (dwp != a->dw[s.idx[0]]) {
        PackedGrads pg = {};
        pg.n = s.n;
        for (int j = 0; j <= s.n; j++) pg.off[j] = off[j];
        for (int j = 0; j < s.n; j++) pg.dw[j] = (float *)a->dw[s.idx[j]];
        const int64_t count = (int64_t)pw.total * g->K;
        add_grads_kernel<<<blocks_for(count), 256, 0, cuda_stream()>>>(pg, dwp, count, g->K);
        CUDA_LAUNCHED();
    }
    // the biases' gradients from each part's own dy (the parts with a bias are narrow)
    for (int j = 0; j < s.n; j++) {
        const int i = s.idx[j];
        if (a->dbias[i])
            cuda_matmul_bwd(nullptr, nullptr, a->dbias[i], a->dy[i], g->x, g->p[i].w, g->M,
                            g->p[i].N, g->K, 0);
    }
}

// The parts the chosen variant packs (at least two, else none) and those it runs alone.
static void split_parts(const MatmulGroup *g, Subset *packed, Subset *alone) {
    const char *v = kernel_variant_ops[KV_INPROJ].variants[kernel_variant(KV_INPROJ)];
    const bool all = !strcmp(v, "packed"), narrow = !strcmp(v, "narrow");
    packed->n = alone->n = 0;
    for (int i = 0; i < g->n; i++) {
        if (all || (narrow && g->p[i].N <= NARROW_WIDTH))
            packed->idx[packed->n++] = i;
        else
            alone->idx[alone->n++] = i;
    }
    if (packed->n == 1) {
        alone->idx[alone->n++] = packed->idx[0];
        packed->n = 0;
    }
}

void cuda_matmul_group_fwd(const MatmulGroup *g) {
    Subset packed, alone;
    split_parts(g, &packed, &alone);
    if (packed.n) packed_fwd(g, packed);
    for (int j = 0; j < alone.n; j++) {
        const MatmulPart &p = g->p[alone.idx[j]];
        cuda_matmul_fwd(p.y, g->x, p.w, p.bias, g->M, p.N, g->K);
    }
}

void cuda_matmul_group_bwd(const MatmulGroupGrads *a) {
    const MatmulGroup *g = &a->g;
    Subset packed, alone;
    split_parts(g, &packed, &alone);
    int accumulate = a->accumulate;
    if (packed.n) packed_bwd(a, packed, accumulate), accumulate = 1;
    for (int j = 0; j < alone.n; j++) {
        const int i = alone.idx[j];
        cuda_matmul_bwd(a->dx, a->dw[i], a->dbias[i], a->dy[i], g->x, g->p[i].w, g->M, g->p[i].N,
                        g->K, accumulate);
        accumulate = 1;
    }
}
