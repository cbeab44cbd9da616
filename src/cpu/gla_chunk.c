/* Chunked gated linear attention (docs/models.md §gla), forward and backward.
 *
 * Per segment and head, with B_t = sum_{u<=t} log alpha_u (per key channel, accumulated
 * from the chunk start), the output is
 *     o_t = (q_t e^{B_t}) S_0 + sum_{s<=t in chunk} A_ts v_s,
 *     A_ts = sum_i q_t[i] k_s[i] e^{B_t[i] - B_s[i]},
 * and the state S_0 advances by S <- e^{B_last} S + sum_s (k_s e^{B_last - B_s})^T v_s.
 * Every exponent is kept <= 0: the intra-chunk scores are computed per 16-row sub-chunk I
 * against a reference row r_I (its first row): A[I, s<r_I] = (q e^{B_t - B_r}) (k e^{B_r - B_s})^T,
 * and the 16x16 diagonal blocks element by element (fla's secondary chunking). There the
 * factors e^{B_t - B_s} = alpha_t e^{B_{t-1} - B_s} of row t come from row t-1's times the
 * gate alpha_t = e^{g_t}: products of gates in (0, 1], with no exp per pair.
 *
 * Backward: dq, dk, dv from the same pieces; the gate gradient uses the identity
 * d B_t[i] = q_t[i] dq_t[i] - k_t[i] dk_t[i] (every term depends on B only through
 * e^{B_t - B_s} times q_t k_s), so d log alpha = reverse cumsum over the segment.
 * With g_per_head (Mamba2, docs/models.md §mamba2) one log decay per head serves every key
 * channel, its gradient the sum of the channels' gradients; the chunk's pieces are then
 * scalar per row and the chunk is computed whole (chunk_fwd_scalar below).
 */
#include <string.h>

#include "cpu/chunks.h"
#include "util/error.h"

#define SUB 16

typedef struct {
    real *Q, *K, *V, *B; /* chunk rows: scaled q, k, v, cumulative log gates */
    real *Al;            /* chunk rows: the gates alpha = e^g */
    real *A;             /* [C, C] intra-chunk scores, lower triangle incl. diagonal */
    real *Qs, *E, *Kf;   /* sub-chunk pieces */
    real *Kt, *P;        /* [K, SUB] a sub-chunk's K transposed; the diagonal block's factors
                          * e^{B_t - B_s}, [K, SUB] in intra_scores, [SUB, K] in chunk_bwd */
    real *T1, *T2;       /* scratch [C, max(K,V)] */
    real *dO, *D, *dQ, *dK, *dV, *G;
} Work;

static void *work_new(int K, int V) {
    Work *w = rt_malloc(sizeof *w);
    /* E also holds the per-head path's e^b and e^{b_last - b}: 2 chunk rows at least */
    int C = CHUNK_SIZE, M = K > V ? K : V, KE = K > 2 ? K : 2;
    w->Q = rt_alloc_aligned(sizeof(real) * C * K);
    w->K = rt_alloc_aligned(sizeof(real) * C * K);
    w->V = rt_alloc_aligned(sizeof(real) * C * V);
    w->B = rt_alloc_aligned(sizeof(real) * C * K);
    w->Al = rt_alloc_aligned(sizeof(real) * C * K);
    w->Kt = rt_alloc_aligned(sizeof(real) * K * SUB);
    w->P = rt_alloc_aligned(sizeof(real) * K * SUB);
    w->A = rt_alloc_aligned(sizeof(real) * C * C);
    w->Qs = rt_alloc_aligned(sizeof(real) * SUB * K);
    w->E = rt_alloc_aligned(sizeof(real) * C * KE);
    w->Kf = rt_alloc_aligned(sizeof(real) * C * K);
    w->T1 = rt_alloc_aligned(sizeof(real) * C * M);
    w->T2 = rt_alloc_aligned(sizeof(real) * C * M);
    w->dO = rt_alloc_aligned(sizeof(real) * C * V);
    w->D = rt_alloc_aligned(sizeof(real) * C * C);
    w->dQ = rt_alloc_aligned(sizeof(real) * C * K);
    w->dK = rt_alloc_aligned(sizeof(real) * C * K);
    w->dV = rt_alloc_aligned(sizeof(real) * C * V);
    w->G = rt_alloc_aligned(sizeof(real) * C * K);
    return w;
}

static void work_free(void *work) {
    Work *w = work;
    real *p[] = {w->Q,  w->K,  w->V,  w->B,  w->Al, w->Kt, w->P,  w->A,  w->Qs, w->E,
                 w->Kf, w->T1, w->T2, w->dO, w->D,  w->dQ, w->dK, w->dV, w->G};
    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) rt_free(p[i]);
    rt_free(w);
}

/* The chunk's rows of head h into the work buffers; B = in-chunk cumsum of g, Al = e^g. */
static void load_chunk(Work *w, const LinAttnArgs *a, const Chunk *c, int h) {
    int H = a->H, K = a->K;
    const real *g = a->g;
    linattn_load(a, c, h, w->Q, w->K, w->V);
    for (int t = 0; t < c->len; t++) {
        int64_t n = c->first + t;
        for (int i = 0; i < K; i++) {
            real gi = g[(n * H + h) * (int64_t)K + i];
            w->B[t * K + i] = gi + (t ? w->B[(t - 1) * K + i] : 0);
            w->Al[t * K + i] = exp(gi);
        }
    }
}

/* Sub-chunk I (rows r..r+n-1): Qs = Q e^{B_t - B_r} and, for the r earlier rows,
 * E = e^{B_r - B_s}, Kf = K E. */
static void subchunk_factors(Work *w, int r, int n, int K) {
    const real *Br = w->B + r * K;
    for (int t = 0; t < n; t++)
        for (int i = 0; i < K; i++)
            w->Qs[t * K + i] = w->Q[(r + t) * K + i] * exp(w->B[(r + t) * K + i] - Br[i]);
    for (int s = 0; s < r; s++)
        for (int i = 0; i < K; i++) {
            real e = exp(Br[i] - w->B[s * K + i]);
            w->E[s * K + i] = e;
            w->Kf[s * K + i] = w->K[s * K + i] * e;
        }
}

/* A[t][s] for s <= t < L (zeros above the diagonal). In a diagonal block the factors are
 * kept transposed, P[i][s] = e^{B_t[i] - B_s[i]} for the block's columns s (0 for s > t),
 * and row t's scores summed over i for all columns at once: a loop over s inside one over i,
 * with no sum across a vector's lanes. */
static void intra_scores(Work *w, int L, int K) {
    memset(w->A, 0, sizeof(real) * CHUNK_SIZE * CHUNK_SIZE);
    for (int r = 0; r < L; r += SUB) {
        int n = L - r < SUB ? L - r : SUB;
        subchunk_factors(w, r, n, K);
        if (r) gemm(0, 1, n, r, K, 1, w->Qs, K, w->Kf, K, 0, w->A + r * CHUNK_SIZE, CHUNK_SIZE);
        for (int i = 0; i < K; i++)
            for (int s = 0; s < SUB; s++) {
                w->Kt[i * SUB + s] = s < n ? w->K[(r + s) * K + i] : 0;
                w->P[i * SUB + s] = 0;
            }
        for (int t = 0; t < n; t++) {
            real acc[SUB] __attribute__((aligned(64))) = {0};
            const real *Qt = w->Q + (r + t) * K, *At = w->Al + (r + t) * K;
            for (int i = 0; i < K; i++) {
                real *p = w->P + i * SUB;
                const real *kt = w->Kt + i * SUB;
#pragma omp simd
                for (int s = 0; s < SUB; s++) {
                    real f =
                        p[s] * At[i]; /* then a select: a conditional load would not vectorise */
                    p[s] = f = s == t ? 1 : f;
                    acc[s] += Qt[i] * kt[s] * f;
                }
            }
            for (int s = 0; s <= t; s++) w->A[(r + t) * CHUNK_SIZE + r + s] = acc[s];
        }
    }
}

/* Rows of the chunk: the output (Q e^B) S + A V, then S <- e^{B_last} S + (K e^{B_last - B})^T V.
 */
static void chunk_fwd(void *work, const LinAttnArgs *a, const Chunk *c, int h, real *S) {
    Work *w = work;
    int K = a->K, V = a->V, L = c->len;
    load_chunk(w, a, c, h);
    /* inter-chunk: (Q e^B) S */
    for (int t = 0; t < L; t++)
        for (int i = 0; i < K; i++) w->T1[t * K + i] = w->Q[t * K + i] * exp(w->B[t * K + i]);
    gemm(0, 0, L, V, K, 1, w->T1, K, S, V, 0, w->T2, V);
    /* intra-chunk: A V */
    intra_scores(w, L, K);
    gemm(0, 0, L, V, L, 1, w->A, CHUNK_SIZE, w->V, V, 1, w->T2, V);
    chunk_rows_put(a->o, w->T2, c, h, a->H, V);
    /* state: S = e^{B_last} S + (K e^{B_last - B})^T V */
    const real *Bl = w->B + (L - 1) * K;
    for (int t = 0; t < L; t++)
        for (int i = 0; i < K; i++)
            w->T1[t * K + i] = w->K[t * K + i] * exp(Bl[i] - w->B[t * K + i]);
    for (int i = 0; i < K; i++) {
        real d = exp(Bl[i]);
        for (int j = 0; j < V; j++) S[i * V + j] *= d;
    }
    gemm(1, 0, K, V, L, 1, w->T1, K, w->V, V, 1, S, V);
}

/* One pair s <= t of a diagonal block in the backward: its factors p = e^{B_t - B_s} from
 * row t-1's (1 where s = t), then dq_t += d k_s p and dk_s += d q_t p with d = D[t][s].
 * (Distinct rows of distinct buffers: restrict spares the vector loop an aliasing check that
 * sent it to the scalar one.) */
static inline void diag_pair_bwd(real d, int first, const real *restrict alpha,
                                 const real *restrict q, const real *restrict k, real *restrict p,
                                 real *restrict dq, real *restrict dk, int K) {
    for (int i = 0; i < K; i++) {
        real f = p[i] * alpha[i];
        p[i] = f = first ? 1 : f;
        dq[i] += d * k[i] * f;
        dk[i] += d * q[i] * f;
    }
}

/* dq, dk, dv of the chunk's rows from S0 and dS (the gradient of the state after the chunk),
 * and dS <- the gradient of S0. */
static void chunk_bwd(void *work, const LinAttnGrads *gr, const Chunk *c, int h, const real *S0,
                      real *dS) {
    Work *w = work;
    const LinAttnArgs *a = &gr->a;
    int K = a->K, V = a->V, L = c->len;
    load_chunk(w, a, c, h);
    chunk_rows_get(w->dO, gr->dout, c, h, a->H, V);
    intra_scores(w, L, K);
    /* D = dO V^T (lower triangle incl. diagonal); dV = A^T dO */
    gemm(0, 1, L, L, V, 1, w->dO, V, w->V, V, 0, w->D, CHUNK_SIZE);
    for (int t = 0; t < L; t++)
        for (int s2 = t + 1; s2 < L; s2++) w->D[t * CHUNK_SIZE + s2] = 0;
    gemm(1, 0, L, V, L, 1, w->A, CHUNK_SIZE, w->dO, V, 0, w->dV, V);
    /* inter-chunk terms */
    const real *Bl = w->B + (L - 1) * K;
    gemm(0, 1, L, K, V, 1, w->dO, V, S0, V, 0, w->dQ, K);
    for (int t = 0; t < L; t++)
        for (int i = 0; i < K; i++) w->dQ[t * K + i] *= exp(w->B[t * K + i]);
    for (int t = 0; t < L; t++)
        for (int i = 0; i < K; i++) {
            real e = exp(Bl[i] - w->B[t * K + i]);
            w->E[t * K + i] = e;
            w->T1[t * K + i] = w->K[t * K + i] * e;
        }
    gemm(0, 0, L, V, K, 1, w->T1, K, dS, V, 1, w->dV, V);
    gemm(0, 1, L, K, V, 1, w->V, V, dS, V, 0, w->dK, K);
    for (int t = 0; t < L; t++)
        for (int i = 0; i < K; i++) w->dK[t * K + i] *= w->E[t * K + i];
    /* dS <- e^{B_last} dS + (Q e^B)^T dO  (gradient w.r.t. this chunk's S_0) */
    for (int i = 0; i < K; i++) {
        real d = exp(Bl[i]);
        for (int j = 0; j < V; j++) dS[i * V + j] *= d;
    }
    for (int t = 0; t < L; t++)
        for (int i = 0; i < K; i++) w->T1[t * K + i] = w->Q[t * K + i] * exp(w->B[t * K + i]);
    gemm(1, 0, K, V, L, 1, w->T1, K, w->dO, V, 1, dS, V);
    /* intra-chunk terms through A, sub-chunk by sub-chunk */
    for (int r = 0; r < L; r += SUB) {
        int n = L - r < SUB ? L - r : SUB;
        subchunk_factors(w, r, n, K);
        if (r) {
            /* dQ[I] += e^{B_t - B_r} (D[I,<r] Kf) */
            gemm(0, 0, n, K, r, 1, w->D + r * CHUNK_SIZE, CHUNK_SIZE, w->Kf, K, 0, w->T1, K);
            for (int t = 0; t < n; t++)
                for (int i = 0; i < K; i++) {
                    real e = exp(w->B[(r + t) * K + i] - w->B[r * K + i]);
                    w->dQ[(r + t) * K + i] += w->T1[t * K + i] * e;
                }
            /* dK[<r] += (D[I,<r]^T Qs) E */
            gemm(1, 0, r, K, n, 1, w->D + r * CHUNK_SIZE, CHUNK_SIZE, w->Qs, K, 0, w->G, K);
            for (int s2 = 0; s2 < r; s2++)
                for (int i = 0; i < K; i++)
                    w->dK[s2 * K + i] += w->G[s2 * K + i] * w->E[s2 * K + i];
        }
        /* the diagonal block, its factors P[s][i] = e^{B_t[i] - B_s[i]} row by row */
        for (int t = r; t < r + n; t++) {
            const real *At = w->Al + t * K;
            for (int s2 = r; s2 <= t; s2++)
                diag_pair_bwd(w->D[t * CHUNK_SIZE + s2], s2 == t, At, w->Q + t * K, w->K + s2 * K,
                              w->P + (s2 - r) * K, w->dQ + t * K, w->dK + s2 * K, K);
        }
    }
    linattn_store(gr, c, h, w->dQ, w->dK, w->dV);
}

/* d log alpha = reverse cumsum over the segment of q dq - k dk (per head: summed over the key
 * channels). */
static void segment_dg(const LinAttnGrads *gr, int seg, int h) {
    const LinAttnArgs *a = &gr->a;
    int H = a->H, K = a->K;
    int64_t first = a->s->cu[seg], end = a->s->cu[seg + 1];
    const real *q = a->q, *k = a->k, *dq = gr->dq, *dk = gr->dk;
    real *dg = gr->dg;
    if (a->g_per_head) {
        real acc = 0;
        for (int64_t n = end - 1; n >= first; n--) {
            for (int i = 0; i < K; i++) {
                int64_t idx = (n * H + h) * (int64_t)K + i;
                acc += q[idx] * dq[idx] - k[idx] * dk[idx];
            }
            dg[n * H + h] = acc;
        }
    } else {
        /* row by row (a row's channels are contiguous), one running sum per channel */
        real *acc = rt_calloc((size_t)K, sizeof(real));
        for (int64_t n = end - 1; n >= first; n--) {
            int64_t row = (n * H + h) * (int64_t)K;
            for (int i = 0; i < K; i++) {
                acc[i] += q[row + i] * dq[row + i] - k[row + i] * dk[row + i];
                dg[row + i] = acc[i];
            }
        }
        rt_free(acc);
    }
}

/* With one log decay per head (g_per_head: Mamba2's SSD, docs/models.md §mamba2) every factor is
 * a scalar of the row: A = (Q K^T) o M with M_ts = e^{b_t - b_s} for s <= t (exponents <= 0),
 * the whole chunk by GEMMs with no secondary chunking, reading q, k, v, dout and writing o,
 * dq, dk, dv in place (rows of head h: stride H K or H V), the scale in the GEMMs' alpha.
 * b = in-chunk cumsum of the head's g (in B's first len entries). */
typedef struct {
    const real *q, *k, *v, *b; /* the chunk's first row of head h; b */
    const real *eb, *ebl;      /* e^{b_t}, e^{b_last - b_t} */
    int lk, lv;                /* row strides: H K, H V */
    real scale, bl;            /* q's scale; b_last */
} ScalarChunk;

static ScalarChunk scalar_chunk(Work *w, const LinAttnArgs *a, const Chunk *c, int h) {
    const real *g = a->g;
    real acc = 0, *eb = w->E, *ebl = w->E + CHUNK_SIZE;
    int L = c->len;
    for (int t = 0; t < L; t++) w->B[t] = acc += g[(c->first + t) * a->H + h];
#pragma omp simd
    for (int t = 0; t < L; t++) {
        eb[t] = exp(w->B[t]);
        ebl[t] = exp(acc - w->B[t]);
    }
    int64_t row = c->first * a->H + h;
    return (ScalarChunk){.q = (const real *)a->q + row * a->K,
                         .k = (const real *)a->k + row * a->K,
                         .v = (const real *)a->v + row * a->V,
                         .b = w->B,
                         .eb = eb,
                         .ebl = ebl,
                         .lk = a->H * a->K,
                         .lv = a->H * a->V,
                         .scale = (real)a->scale,
                         .bl = acc};
}

/* out[t] = f e[t] x[t] (rows of stride lx, lo) */
static void rows_times(real *out, int lo, const real *x, int lx, const real *e, real f, int L,
                       int D) {
    for (int t = 0; t < L; t++) {
        real et = f * e[t];
#pragma omp simd
        for (int i = 0; i < D; i++) out[t * lo + i] = x[t * lx + i] * et;
    }
}

/* X[t][s] *= e^{b_t - b_s} for s <= t < L, 0 for s > t (rows of stride CHUNK_SIZE; whole
 * rows with a select, so that no exp runs outside the vector loop) */
static void decay_mask(real *X, const real *b, int L) {
    for (int t = 0; t < L; t++) {
        real *row = X + t * CHUNK_SIZE, bt = b[t];
#pragma omp simd
        for (int s = 0; s < L; s++) {
            real f = exp(s <= t ? bt - b[s] : 0);
            row[s] = s <= t ? row[s] * f : 0;
        }
    }
}

static void chunk_fwd_scalar(void *work, const LinAttnArgs *a, const Chunk *c, int h, real *S) {
    Work *w = work;
    int K = a->K, V = a->V, L = c->len;
    ScalarChunk x = scalar_chunk(w, a, c, h);
    real *o = (real *)a->o + (c->first * a->H + h) * V;
    /* o = (Q e^b) S + A V */
    rows_times(w->T1, K, x.q, x.lk, x.eb, x.scale, L, K);
    gemm(0, 0, L, V, K, 1, w->T1, K, S, V, 0, o, x.lv);
    gemm(0, 1, L, L, K, x.scale, x.q, x.lk, x.k, x.lk, 0, w->A, CHUNK_SIZE);
    decay_mask(w->A, x.b, L);
    gemm(0, 0, L, V, L, 1, w->A, CHUNK_SIZE, x.v, x.lv, 1, o, x.lv);
    /* S = e^{b_last} S + (K e^{b_last - b})^T V */
    real d = exp(x.bl);
    for (int i = 0; i < K * V; i++) S[i] *= d;
    rows_times(w->T1, K, x.k, x.lk, x.ebl, 1, L, K);
    gemm(1, 0, K, V, L, 1, w->T1, K, x.v, x.lv, 1, S, V);
}

/* With Dm = (dO V^T) o M: dQ = e^b (dO S0^T) + Dm K, dK = e^{b_last - b} (V dS^T) + Dm^T Q,
 * dV = A^T dO + (K e^{b_last - b}) dS, then dS <- e^{b_last} dS + (Q e^b)^T dO. */
static void chunk_bwd_scalar(void *work, const LinAttnGrads *gr, const Chunk *c, int h,
                             const real *S0, real *dS) {
    Work *w = work;
    const LinAttnArgs *a = &gr->a;
    int K = a->K, V = a->V, L = c->len;
    ScalarChunk x = scalar_chunk(w, a, c, h);
    int64_t row = c->first * a->H + h;
    const real *dO = (const real *)gr->dout + row * V;
    real *dq = (real *)gr->dq + row * K, *dk = (real *)gr->dk + row * K,
         *dv = (real *)gr->dv + row * V;
    gemm(0, 1, L, L, K, x.scale, x.q, x.lk, x.k, x.lk, 0, w->A, CHUNK_SIZE);
    decay_mask(w->A, x.b, L);
    gemm(0, 1, L, L, V, 1, dO, x.lv, x.v, x.lv, 0, w->D, CHUNK_SIZE);
    decay_mask(w->D, x.b, L);
    gemm(1, 0, L, V, L, 1, w->A, CHUNK_SIZE, dO, x.lv, 0, dv, x.lv);
    rows_times(w->T1, K, x.k, x.lk, x.ebl, 1, L, K);
    gemm(0, 0, L, V, K, 1, w->T1, K, dS, V, 1, dv, x.lv);
    /* dq = scale dQ */
    gemm(0, 1, L, K, V, 1, dO, x.lv, S0, V, 0, w->T1, K);
    rows_times(dq, x.lk, w->T1, K, x.eb, x.scale, L, K);
    gemm(0, 0, L, K, L, x.scale, w->D, CHUNK_SIZE, x.k, x.lk, 1, dq, x.lk);
    gemm(0, 1, L, K, V, 1, x.v, x.lv, dS, V, 0, w->T1, K);
    rows_times(dk, x.lk, w->T1, K, x.ebl, 1, L, K);
    gemm(1, 0, L, K, L, x.scale, w->D, CHUNK_SIZE, x.q, x.lk, 1, dk, x.lk);
    real d = exp(x.bl);
    for (int i = 0; i < K * V; i++) dS[i] *= d;
    rows_times(w->T1, K, x.q, x.lk, x.eb, x.scale, L, K);
    gemm(1, 0, K, V, L, 1, w->T1, K, dO, x.lv, 1, dS, V);
}

static const LinAttnChunks GLA = {work_new, work_free, chunk_fwd, chunk_bwd, segment_dg};
static const LinAttnChunks GLA_PER_HEAD = {work_new, work_free, chunk_fwd_scalar, chunk_bwd_scalar,
                                           segment_dg};

void cpu_gla_fwd(const LinAttnArgs *a) {
    linattn_chunks_fwd(a->g_per_head ? &GLA_PER_HEAD : &GLA, a);
}

void cpu_gla_bwd(const LinAttnGrads *g) {
    linattn_chunks_bwd(g->a.g_per_head ? &GLA_PER_HEAD : &GLA, g);
}
