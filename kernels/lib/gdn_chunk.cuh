// The pieces of the chunked Gated DeltaNet kernels (docs/models.md §gated-deltanet) that
// kernels/ops/gdn.cu shares with its scan variant gdn_scan_reg.cu: shared-memory carving, the
// per-chunk gates, and the sequential scans' layouts and chunk walk.
#pragma once

#include "lib/chunks.cuh"
#include "lib/cuda_common.cuh"
#include "lib/tile.cuh"

namespace {

constexpr int LDM = CHUNK + 8; // leading dimension of 64-column tiles in shared memory
constexpr int NT_SCAN = 256;   // threads of the sequential scans (8 warps)

// ---- shared-memory layouts: byte offsets, computed identically on host and device ----

struct Carve {
    size_t n = 0;
    __host__ __device__ size_t take(size_t bytes) {
        size_t o = n;
        n += (bytes + 127) & ~(size_t)127;
        return o;
    }
    // the same size for each of offs, in order
    template <class... Off> __host__ __device__ void take_each(size_t bytes, Off &...offs) {
        ((offs = take(bytes)), ...);
    }
};
__host__ __device__ constexpr size_t bf_tile(int rows, int ld) { return (size_t)rows * ld * 2; }
__host__ __device__ constexpr size_t f_tile(int rows, int ld) { return (size_t)rows * ld * 4; }

// Per-chunk gates: gam = in-chunk inclusive cumsum of g, eg = e^gam, ed = e^{gam_{L-1} - gam};
// eg, ed and beta are 0 on rows >= L.
struct Gates {
    float gam[CHUNK], eg[CHUNK], ed[CHUNK], beta[CHUNK];
};

// The scans keep `stages` copies of the per-chunk inputs: copy b starts at stage + b * stride.
// Both scans: the per-chunk inputs (carved from `in` by the layout, then the gates), their
// stage copies, and the carried state in fp32 (sf) and as a bf16 operand (sb); the layout
// carves its own tiles from `cv` after them. With `reg` (gdn_scan:reg, gdn_scan_reg.cu) the
// state lives in registers: no sf, and no fp32 tiles staging the products (xf, x1, x2).
struct ScanLayout {
    size_t stage, stride, gates, sf = 0, sb, total;
    Carve in, cv;
    __host__ __device__ void stages_and_state(int K, int BV, int stages, bool reg) {
        gates = in.take(sizeof(Gates));
        stride = stages == 2 ? in.n : 0;
        stage = cv.take(stages * in.n);
        if (!reg) sf = cv.take(f_tile(K, BV + 4));
        sb = cv.take(bf_tile(K, BV + 8));
    }
};

struct FwdScanLayout : ScanLayout {
    size_t w, k, u, xf = 0, ud;
    __host__ __device__ FwdScanLayout(int K, int BV, int stages, bool reg = false) {
        w = in.take(bf_tile(CHUNK, K + 8));
        k = in.take(bf_tile(CHUNK, K + 8));
        u = in.take(bf_tile(CHUNK, BV + 8));
        stages_and_state(K, BV, stages, reg);
        if (!reg) xf = cv.take(f_tile(CHUNK, BV + 4));
        ud = cv.take(bf_tile(CHUNK, BV + 8));
        total = cv.n;
    }
};

// dos (reg only): the chunk's scale e^gam o dO, which gdn.cu scales in place in d.
struct BwdScanLayout : ScanLayout {
    size_t q, k, w, p, d, x1 = 0, x2 = 0, dun, dos = 0;
    __host__ __device__ BwdScanLayout(int K, int BV, int stages, bool reg = false) {
        q = in.take(bf_tile(CHUNK, K + 8));
        k = in.take(bf_tile(CHUNK, K + 8));
        w = in.take(bf_tile(CHUNK, K + 8));
        p = in.take(bf_tile(CHUNK, LDM));
        d = in.take(bf_tile(CHUNK, BV + 8));
        stages_and_state(K, BV, stages, reg);
        if (!reg) {
            x1 = cv.take(f_tile(CHUNK, BV + 4));
            x2 = cv.take(f_tile(CHUNK, BV + 4));
        }
        dun = cv.take(bf_tile(CHUNK, BV + 8));
        if (reg) dos = cv.take(bf_tile(CHUNK, BV + 8));
        total = cv.n;
    }
};

template <class T> __device__ __forceinline__ T *at(unsigned char *base, size_t off) {
    return reinterpret_cast<T *>(base + off);
}

// Gates of the chunk of rows n0..n0+L-1 of head h, by one warp (each lane two rows).
template <bool DECAY>
__device__ void chunk_gates(Gates *G, const float *g, const float *beta, int64_t n0, int L, int h,
                            int H) {
    int lane = threadIdx.x & 31, t0 = 2 * lane, t1 = t0 + 1;
    G->beta[t0] = t0 < L ? beta[(n0 + t0) * H + h] : 0.f;
    G->beta[t1] = t1 < L ? beta[(n0 + t1) * H + h] : 0.f;
    if constexpr (!DECAY) {
        G->gam[t0] = G->gam[t1] = 0.f;
        G->eg[t0] = G->ed[t0] = t0 < L ? 1.f : 0.f;
        G->eg[t1] = G->ed[t1] = t1 < L ? 1.f : 0.f;
        return;
    }
    float a = t0 < L ? g[(n0 + t0) * H + h] : 0.f;
    float b = t1 < L ? g[(n0 + t1) * H + h] : 0.f;
    float excl;
    warp_scan(a + b, &excl);
    float g0 = excl + a, g1 = g0 + b;
    float gl = __shfl_sync(FULL_MASK, ((L - 1) & 1) ? g1 : g0, (L - 1) >> 1);
    G->gam[t0] = g0;
    G->gam[t1] = g1;
    G->eg[t0] = t0 < L ? expf(g0) : 0.f;
    G->eg[t1] = t1 < L ? expf(g1) : 0.f;
    G->ed[t0] = t0 < L ? expf(gl - g0) : 0.f;
    G->ed[t1] = t1 < L ? expf(gl - g1) : 0.f;
}

// The chunk loop of a scan over the segment walk w, first chunk first or (REV) last chunk
// first: issue(ci, n0, L, st) starts loading the inputs of the walk's chunk ci (first token
// n0, length L) into the stage buffer st, step(c, n0, L, st) uses them (c = w.c0 + ci) and
// ends with a barrier. With stages == 2 the next chunk's inputs load while this one computes.
template <bool REV, class Layout, class Issue, class Step>
__device__ __forceinline__ void scan_chunks(const SegChunks &w, const Layout &lay,
                                            unsigned char *smem, int stages, Issue &&issue,
                                            Step &&step) {
    const int n = w.n;
    auto issue_at = [&](int it, int b) {
        const int ci = REV ? n - 1 - it : it;
        const int64_t n0 = w.first + (int64_t)ci * CHUNK;
        issue(ci, n0, min(CHUNK, w.end - (int)n0), smem + lay.stage + b * lay.stride);
    };
    issue_at(0, 0);
    for (int it = 0; it < n; it++) {
        const int b = stages == 2 ? it & 1 : 0;
        cp_async_wait();
        __syncthreads();
        if (stages == 2 && it + 1 < n) issue_at(it + 1, b ^ 1);
        const int ci = REV ? n - 1 - it : it;
        const int64_t c = w.c0 + ci, n0 = w.first + (int64_t)ci * CHUNK;
        step(c, n0, min(CHUNK, w.end - (int)n0), smem + lay.stage + b * lay.stride);
        if (stages == 1 && it + 1 < n) issue_at(it + 1, 0);
    }
}

} // namespace
