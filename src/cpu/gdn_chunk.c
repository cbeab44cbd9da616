/* Chunked Gated DeltaNet (docs/models.md §gated-deltanet), WY/UT form, forward and backward.
 *
 * Inside a chunk of L rows starting from state S_0 (K x V), with gam = in-chunk cumsum of
 * the log decays g and Gam_ts = e^{gam_t - gam_s} (s <= t):
 *   A    = strictly_lower(diag(beta) (K K^T) o Gam)
 *   T    = (I + A)^{-1} diag(beta)                       (UT transform)
 *   W    = T (e^{gam} o K),  U~ = T V,  U = U~ - W S_0     (WY representation: the
 *          "new values" u_t = beta_t (v_t - e^{g_t} S_{t-1}^T k_t))
 *   O    = (e^{gam} o Q) S_0 + (Q K^T o Gam o lower) U
 *   S_L  = e^{gam_L} S_0 + (e^{gam_L - gam} o K)^T U
 * where Q is q scaled by dk^{-1/2}. All exponents are <= 0. The backward differentiates
 * these expressions in reverse order; d g is the in-chunk reverse cumsum of d gam.
 * Without decay (g == NULL: DeltaNet, docs/models.md §deltanet) gam = 0, Gam = 1 and no d g.
 */
#include <string.h>

#include "cpu/chunks.h"
#include "util/error.h"

#define C_ CHUNK_SIZE

typedef struct {
    real *Q, *K, *V, *beta, *gam;
    real *Gam, *KK, *A, *Li, *T, *Kg, *W, *U, *P, *Qg, *Kd;
    real *dO, *dKd, *dU, *dQg, *dP, *dW, *dT, *dKg, *dLi, *tmp, *dA, *dQ, *dK, *dV;
    real *dS0, *dgam, *dbeta;
} Work;

static void *work_new(int K, int V) {
    Work *w = rt_malloc(sizeof *w);
    size_t cc = C_ * C_, ck = (size_t)C_ * K, cv = (size_t)C_ * V, kv = (size_t)K * V;
    real **mats[] = {&w->Gam, &w->KK, &w->A,   &w->Li,  &w->T, &w->P,
                     &w->dP,  &w->dT, &w->dLi, &w->tmp, &w->dA};
    for (size_t i = 0; i < sizeof(mats) / sizeof(mats[0]); i++)
        *mats[i] = rt_alloc_aligned(sizeof(real) * cc);
    real **cks[] = {&w->Q,   &w->K,   &w->Kg, &w->W,   &w->Qg, &w->Kd,
                    &w->dKd, &w->dQg, &w->dW, &w->dKg, &w->dQ, &w->dK};
    for (size_t i = 0; i < sizeof(cks) / sizeof(cks[0]); i++)
        *cks[i] = rt_alloc_aligned(sizeof(real) * ck);
    real **cvs[] = {&w->V, &w->U, &w->dO, &w->dU, &w->dV};
    for (size_t i = 0; i < sizeof(cvs) / sizeof(cvs[0]); i++)
        *cvs[i] = rt_alloc_aligned(sizeof(real) * cv);
    w->dS0 = rt_alloc_aligned(sizeof(real) * kv);
    w->beta = rt_alloc_aligned(sizeof(real) * C_);
    w->gam = rt_alloc_aligned(sizeof(real) * C_);
    w->dgam = rt_alloc_aligned(sizeof(real) * C_);
    w->dbeta = rt_alloc_aligned(sizeof(real) * C_);
    return w;
}

static void work_free(void *work) {
    Work *w = work;
    real *p[] = {w->Q,  w->K,   w->V,  w->beta, w->gam,  w->Gam,  w->KK,  w->A,   w->Li,
                 w->T,  w->Kg,  w->W,  w->U,    w->P,    w->Qg,   w->Kd,  w->dO,  w->dKd,
                 w->dU, w->dQg, w->dP, w->dW,   w->dT,   w->dKg,  w->dLi, w->tmp, w->dA,
                 w->dQ, w->dK,  w->dV, w->dS0,  w->dgam, w->dbeta};
    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) rt_free(p[i]);
    rt_free(w);
}

/* y += a x over n entries (distinct rows: restrict spares the vector loop GCC's aliasing
 * check, which sent it to the scalar one). */
static inline void row_axpy(real a, const real *restrict x, real *restrict y, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

/* Loads a chunk and computes every forward intermediate from its start state S0. */
static void chunk_forward(Work *w, const LinAttnArgs *a, const Chunk *c, int h, const real *S0) {
    int H = a->H, K = a->K, V = a->V, L = c->len;
    int64_t n0 = c->first;
    const real *beta = a->beta, *g = a->g;
    linattn_load(a, c, h, w->Q, w->K, w->V);
    for (int t = 0; t < L; t++) {
        w->beta[t] = beta[(n0 + t) * H + h];
        w->gam[t] = g ? g[(n0 + t) * H + h] + (t ? w->gam[t - 1] : 0) : 0;
    }
    memset(w->Gam, 0, sizeof(real) * C_ * C_);
    for (int t = 0; t < L; t++)
        for (int s = 0; s <= t; s++) w->Gam[t * C_ + s] = exp(w->gam[t] - w->gam[s]);
    gemm(0, 1, L, L, K, 1, w->K, K, w->K, K, 0, w->KK, C_);
    memset(w->A, 0, sizeof(real) * C_ * C_);
    for (int t = 0; t < L; t++)
        for (int s = 0; s < t; s++)
            w->A[t * C_ + s] = w->beta[t] * w->KK[t * C_ + s] * w->Gam[t * C_ + s];
    /* Li = (I + A)^{-1} by forward substitution (A strictly lower triangular), row by row:
     * Li_t = e_t - sum_{u<t} A_tu Li_u, where row u is zero past column u */
    memset(w->Li, 0, sizeof(real) * C_ * C_);
    for (int t = 0; t < L; t++) {
        for (int u = 0; u < t; u++)
            row_axpy(-w->A[t * C_ + u], w->Li + u * C_, w->Li + t * C_, u + 1);
        w->Li[t * C_ + t] = 1;
    }
    memset(w->T, 0, sizeof(real) * C_ * C_);
    for (int t = 0; t < L; t++)
        for (int s = 0; s <= t; s++) w->T[t * C_ + s] = w->Li[t * C_ + s] * w->beta[s];
    for (int t = 0; t < L; t++) {
        real eg = exp(w->gam[t]), ed = exp(w->gam[L - 1] - w->gam[t]);
        for (int i = 0; i < K; i++) {
            w->Kg[t * K + i] = eg * w->K[t * K + i];
            w->Qg[t * K + i] = eg * w->Q[t * K + i];
            w->Kd[t * K + i] = ed * w->K[t * K + i];
        }
    }
    gemm(0, 0, L, K, L, 1, w->T, C_, w->Kg, K, 0, w->W, K);
    gemm(0, 0, L, V, L, 1, w->T, C_, w->V, V, 0, w->U, V);
    gemm(0, 0, L, V, K, -1, w->W, K, S0, V, 1, w->U, V);
    gemm(0, 1, L, L, K, 1, w->Q, K, w->K, K, 0, w->P, C_);
    for (int t = 0; t < L; t++)
        for (int s = 0; s < C_; s++)
            w->P[t * C_ + s] = s <= t ? w->P[t * C_ + s] * w->Gam[t * C_ + s] : 0;
}

/* The chunk's output O = Qg S + P U, then S <- e^{gam_L} S + Kd^T U. */
static void chunk_fwd(void *work, const LinAttnArgs *a, const Chunk *c, int h, real *S) {
    Work *w = work;
    int K = a->K, V = a->V, L = c->len;
    chunk_forward(w, a, c, h, S);
    gemm(0, 0, L, V, K, 1, w->Qg, K, S, V, 0, w->dO, V);
    gemm(0, 0, L, V, L, 1, w->P, C_, w->U, V, 1, w->dO, V);
    chunk_rows_put(a->o, w->dO, c, h, a->H, V);
    real eL = exp(w->gam[L - 1]);
    for (int i = 0; i < K * V; i++) S[i] *= eL;
    gemm(1, 0, K, V, L, 1, w->Kd, K, w->U, V, 1, S, V);
}

/* dgam_t += sum_s X_ts, dgam_s -= sum_t X_ts for X = D o M over the first L rows/cols
 * (the column sums across a row as one vector, the row's sum after it). */
static void gam_pair_grad(real *restrict dgam, const real *restrict D, const real *restrict M,
                          int L) {
    for (int t = 0; t < L; t++) {
        real row = 0;
        for (int s = 0; s < L; s++) {
            real x = D[t * C_ + s] * M[t * C_ + s];
            row += x;
            dgam[s] -= x;
        }
        dgam[t] += row;
    }
}

/* The backward of T = Li diag(beta) over the lower triangle: dbeta_s += sum_t dT_ts Li_ts,
 * dLi = dT diag(beta). */
static void scale_cols_grad(real *restrict dbeta, real *restrict dLi, const real *restrict dT,
                            const real *restrict Li, const real *restrict beta, int L) {
    for (int t = 0; t < L; t++)
        for (int s = 0; s <= t; s++) {
            dbeta[s] += dT[t * C_ + s] * Li[t * C_ + s];
            dLi[t * C_ + s] = dT[t * C_ + s] * beta[s];
        }
}

/* The backward of Xg = e^{gam_t} X row by row (Qg, Kg): dX += e^{gam_t} dXg,
 * dgam_t += <Xg_t, dXg_t>. */
static void gated_rows_grad(real *dX, real *dgam, const real *Xg, const real *dXg, const real *gam,
                            int L, int K) {
    for (int t = 0; t < L; t++) {
        real eg = exp(gam[t]), x = 0;
        for (int i = 0; i < K; i++) {
            dX[t * K + i] += eg * dXg[t * K + i];
            x += Xg[t * K + i] * dXg[t * K + i];
        }
        dgam[t] += x;
    }
}

/* dq, dk, dv, dbeta and dg of the chunk's rows from S0 and dS (the gradient of the state
 * after the chunk), and dS <- the gradient of S0. */
static void chunk_bwd(void *work, const LinAttnGrads *gr, const Chunk *c, int h, const real *S0,
                      real *dS) {
    Work *w = work;
    const LinAttnArgs *a = &gr->a;
    int H = a->H, K = a->K, V = a->V, L = c->len;
    int64_t n0 = c->first;
    real *dbeta = gr->dbeta, *dg = gr->dg;
    const real *g = a->g;
    chunk_forward(w, a, c, h, S0);
    chunk_rows_get(w->dO, gr->dout, c, h, H, V);
    memset(w->dgam, 0, sizeof(real) * C_);
    memset(w->dbeta, 0, sizeof(real) * C_);
    memset(w->dQ, 0, sizeof(real) * C_ * K);
    memset(w->dK, 0, sizeof(real) * C_ * K);

    /* S_L = e^{gam_L} S0 + Kd^T U */
    real eL = exp(w->gam[L - 1]), sdot = 0;
    for (int i = 0; i < K * V; i++) {
        w->dS0[i] = eL * dS[i];
        sdot += S0[i] * dS[i];
    }
    w->dgam[L - 1] += eL * sdot;
    gemm(0, 1, L, K, V, 1, w->U, V, dS, V, 0, w->dKd, K);
    gemm(0, 0, L, V, K, 1, w->Kd, K, dS, V, 0, w->dU, V);
    for (int t = 0; t < L; t++) {
        real ed = exp(w->gam[L - 1] - w->gam[t]), x = 0;
        for (int i = 0; i < K; i++) {
            w->dK[t * K + i] += ed * w->dKd[t * K + i];
            x += w->Kd[t * K + i] * w->dKd[t * K + i];
        }
        w->dgam[L - 1] += x;
        w->dgam[t] -= x;
    }
    /* O = Qg S0 + P U */
    gemm(0, 1, L, K, V, 1, w->dO, V, S0, V, 0, w->dQg, K);
    gemm(1, 0, K, V, L, 1, w->Qg, K, w->dO, V, 1, w->dS0, V);
    gemm(0, 1, L, L, V, 1, w->dO, V, w->U, V, 0, w->dP, C_);
    for (int t = 0; t < L; t++)
        for (int s2 = t + 1; s2 < L; s2++) w->dP[t * C_ + s2] = 0;
    gemm(1, 0, L, V, L, 1, w->P, C_, w->dO, V, 1, w->dU, V);
    gated_rows_grad(w->dQ, w->dgam, w->Qg, w->dQg, w->gam, L, K);
    /* P = (Q K^T) o Gam: dQK = dP o Gam */
    if (g) gam_pair_grad(w->dgam, w->dP, w->P, L);
    for (int t = 0; t < L; t++)
        for (int s2 = 0; s2 < L; s2++)
            w->tmp[t * C_ + s2] = w->dP[t * C_ + s2] * w->Gam[t * C_ + s2];
    gemm(0, 0, L, K, L, 1, w->tmp, C_, w->K, K, 1, w->dQ, K);
    gemm(1, 0, L, K, L, 1, w->tmp, C_, w->Q, K, 1, w->dK, K);
    /* U = U~ - W S0 (dU~ = dU) */
    gemm(0, 1, L, K, V, -1, w->dU, V, S0, V, 0, w->dW, K);
    gemm(1, 0, K, V, L, -1, w->W, K, w->dU, V, 1, w->dS0, V);
    /* W = T Kg, U~ = T V */
    gemm(0, 1, L, L, K, 1, w->dW, K, w->Kg, K, 0, w->dT, C_);
    gemm(0, 1, L, L, V, 1, w->dU, V, w->V, V, 1, w->dT, C_);
    gemm(1, 0, L, K, L, 1, w->T, C_, w->dW, K, 0, w->dKg, K);
    gemm(1, 0, L, V, L, 1, w->T, C_, w->dU, V, 0, w->dV, V);
    gated_rows_grad(w->dK, w->dgam, w->Kg, w->dKg, w->gam, L, K);
    /* T = Li diag(beta) */
    memset(w->dLi, 0, sizeof(real) * C_ * C_);
    scale_cols_grad(w->dbeta, w->dLi, w->dT, w->Li, w->beta, L);
    /* Li = (I + A)^{-1}: dA = -Li^T dLi Li^T, strictly lower part */
    gemm(1, 0, L, L, L, 1, w->Li, C_, w->dLi, C_, 0, w->tmp, C_);
    gemm(0, 1, L, L, L, -1, w->tmp, C_, w->Li, C_, 0, w->dA, C_);
    for (int t = 0; t < L; t++)
        for (int s2 = t; s2 < L; s2++) w->dA[t * C_ + s2] = 0;
    /* A = diag(beta) (K K^T) o Gam, strictly lower */
    if (g) gam_pair_grad(w->dgam, w->dA, w->A, L);
    for (int t = 0; t < L; t++)
        for (int s2 = 0; s2 < t; s2++) {
            w->dbeta[t] += w->dA[t * C_ + s2] * w->KK[t * C_ + s2] * w->Gam[t * C_ + s2];
            w->tmp[t * C_ + s2] = w->dA[t * C_ + s2] * w->beta[t] * w->Gam[t * C_ + s2];
        }
    for (int t = 0; t < L; t++)
        for (int s2 = t; s2 < L; s2++) w->tmp[t * C_ + s2] = 0;
    gemm(0, 0, L, K, L, 1, w->tmp, C_, w->K, K, 1, w->dK, K);
    gemm(1, 0, L, K, L, 1, w->tmp, C_, w->K, K, 1, w->dK, K);

    linattn_store(gr, c, h, w->dQ, w->dK, w->dV);
    for (int t = 0; t < L; t++) dbeta[(n0 + t) * H + h] = w->dbeta[t];
    real acc = 0;
    for (int t = L - 1; g && t >= 0; t--) {
        acc += w->dgam[t];
        dg[(n0 + t) * H + h] = acc;
    }
    memcpy(dS, w->dS0, sizeof(real) * K * V);
}

static const LinAttnChunks GDN = {work_new, work_free, chunk_fwd, chunk_bwd, NULL};

void cpu_gdn_fwd(const LinAttnArgs *a) { linattn_chunks_fwd(&GDN, a); }

void cpu_gdn_bwd(const LinAttnGrads *g) { linattn_chunks_bwd(&GDN, g); }
