/* Forgetting attention (docs/models.md §fox), blockwise on the CPU.
 *
 * o_i = sum_{j<=i} softmax_j(s_ij) v_j with s_ij = scale q_i.k_j + c_i - c_j, c the
 * cumulative log forget gate of the segment. Blocks of 64 queries against all the keys
 * they see (one score block of 64 x i per block: on a CPU the whole row fits in cache and
 * the matrix products stay large); the forward saves lse_i = log sum_j exp(s_ij). The
 * backward recomputes P = exp(s - lse), uses dS = P o (dP - rowsum(dO o O)), and d log f is
 * the reverse cumulative sum of dc, where dc_i = sum_j dS_ij - sum_j dS_ji.
 *
 * Without a forget gate (logf NULL: the Transformer, docs/models.md §transformer) c is absent: no
 * bias, no dc and no d log f.
 */
#include <math.h>
#include <string.h>

#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/error.h"

#define QB 64 /* query rows per block */

static int64_t max_segment(const Seqs *s) {
    int64_t m = 0;
    for (int i = 0; i < s->nseg; i++)
        if (s->cu[i + 1] - s->cu[i] > m) m = s->cu[i + 1] - s->cu[i];
    return m;
}

/* S[t][u] = scale q_(i0+t).k_u + c_(i0+t) - c_u for the bq query rows of the block and the
 * keys u <= i0 + t each sees (no c term when c is NULL); the columns past a row's causal
 * diagonal, up to nk = i0 + bq, hold the bare product, for the caller to overwrite. Rows/cols
 * are relative to the segment; ld is the row stride of q/k (H*D) and of S (lds). With rmax,
 * rmax[t] = the largest score row t sees, found in the same pass. */
static void block_scores(real *S, int64_t lds, const real *Qp, const real *Kp, const real *c,
                         int64_t i0, int bq, int D, int ld, real scale, real *rmax) {
    int64_t nk = i0 + bq;
    gemm(0, 1, bq, (int)nk, D, scale, Qp + i0 * ld, ld, Kp, ld, 0, S, (int)lds);
    for (int t = 0; (c || rmax) && t < bq; t++) {
        real *row = S + t * lds, mx = -INFINITY;
        if (c) {
            real ci = c[i0 + t];
#pragma omp simd reduction(max : mx)
            for (int64_t u = 0; u <= i0 + t; u++) {
                row[u] += ci - c[u];
                mx = maxr(mx, row[u]);
            }
        } else {
#pragma omp simd reduction(max : mx)
            for (int64_t u = 0; u <= i0 + t; u++) mx = maxr(mx, row[u]);
        }
        if (rmax) rmax[t] = mx;
    }
}

/* P = exp(row - m) over the keys u < nv a row sees, 0 for the rest up to nk; returns the sum
 * of the P. glibc's SIMD exp takes a slow scalar path for every lane of a vector that holds
 * an argument below about -87.3 (a result outside fp32's normal range), which strongly
 * decayed keys at long context supply in bulk: the arguments are floored at -87 first, in a
 * loop of their own (in one loop GCC would move the floor past the exp), so that a far key
 * weighs e^-87 = 1.6e-38 instead of a subnormal or 0, far below a row's rounding (its sum is
 * >= 1). Not exp(-inf) for the keys past the diagonal, for the same reason. */
static real row_exp(real *row, real m, int64_t nv, int64_t nk) {
    real sum = 0;
#pragma omp simd
    for (int64_t u = 0; u < nv; u++) row[u] = maxr(row[u] - m, (real)-87);
#pragma omp simd reduction(+ : sum)
    for (int64_t u = 0; u < nv; u++) {
        row[u] = exp(row[u]);
        sum += row[u];
    }
    for (int64_t u = nv; u < nk; u++) row[u] = 0;
    return sum;
}

/* c[t] = cumulative sum of log f over the segment starting at token `first`, head h. */
static void cum_logf(real *c, const real *lf, int64_t first, int64_t len, int H, int h) {
    real run = 0;
    for (int64_t t = 0; t < len; t++) c[t] = run += lf[(first + t) * H + h];
}

void cpu_fox_fwd(const AttnArgs *a) {
    const Seqs *s = a->s;
    int H = a->H, D = a->D;
    double scale = a->scale;
    real *o = a->o, *lse = a->lse;
    const real *q = a->q, *k = a->k, *v = a->v, *lf = a->logf;
    int64_t maxlen = max_segment(s), lds = maxlen ? maxlen : 1;
    int ld = H * D;
#pragma omp parallel
    {
        real *S = rt_alloc_aligned(sizeof(real) * (size_t)(QB * lds));
        real *c = lf ? rt_alloc_aligned(sizeof(real) * (size_t)lds) : NULL;
#pragma omp for collapse(2) schedule(dynamic)
        for (int seg = 0; seg < s->nseg; seg++)
            for (int h = 0; h < H; h++) {
                int64_t first = s->cu[seg], len = s->cu[seg + 1] - first;
                const real *Qp = q + first * ld + h * D, *Kp = k + first * ld + h * D,
                           *Vp = v + first * ld + h * D;
                if (c) cum_logf(c, lf, first, len, H, h);
                for (int64_t i0 = 0; i0 < len; i0 += QB) {
                    int bq = (int)(len - i0 < QB ? len - i0 : QB);
                    int64_t nk = i0 + bq;
                    /* each row's largest score, and 1 / the sum of its exp: o = (P V) inv */
                    real mx[QB], inv[QB];
                    block_scores(S, lds, Qp, Kp, c, i0, bq, D, ld, (real)scale, mx);
                    for (int t = 0; t < bq; t++) {
                        real sum = row_exp(S + t * lds, mx[t], i0 + t + 1, nk);
                        inv[t] = (real)1 / sum;
                        lse[(first + i0 + t) * H + h] = mx[t] + log(sum);
                    }
                    real *Ob = o + (first + i0) * ld + h * D;
                    gemm(0, 0, bq, D, (int)nk, 1, S, (int)lds, Vp, ld, 0, Ob, ld);
                    for (int t = 0; t < bq; t++)
                        for (int d = 0; d < D; d++) Ob[t * ld + d] *= inv[t];
                }
            }
        rt_free(S);
        rt_free(c);
    }
}

void cpu_fox_bwd(const AttnGrads *gr) {
    const AttnArgs *a = &gr->a;
    const Seqs *s = a->s;
    int H = a->H, D = a->D;
    double scale = a->scale;
    real *dq = gr->dq, *dk = gr->dk, *dv = gr->dv, *dlogf = gr->dlogf;
    const real *dout = gr->dout, *q = a->q, *k = a->k, *v = a->v, *lf = a->logf, *o = a->o,
               *lse = a->lse;
    int64_t maxlen = max_segment(s), lds = maxlen ? maxlen : 1;
    int ld = H * D;
#pragma omp parallel
    {
        real *S = rt_alloc_aligned(sizeof(real) * (size_t)(QB * lds));
        real *dP = rt_alloc_aligned(sizeof(real) * (size_t)(QB * lds));
        real *c = lf ? rt_alloc_aligned(sizeof(real) * (size_t)lds) : NULL;
        real *dc = lf ? rt_alloc_aligned(sizeof(real) * (size_t)lds) : NULL;
        real *Dt = rt_alloc_aligned(sizeof(real) * (size_t)lds);
#pragma omp for collapse(2) schedule(dynamic)
        for (int seg = 0; seg < s->nseg; seg++)
            for (int h = 0; h < H; h++) {
                int64_t first = s->cu[seg], len = s->cu[seg + 1] - first;
                int64_t off = first * ld + h * D;
                const real *Qp = q + off, *Kp = k + off, *Vp = v + off, *dOp = dout + off;
                real *dQp = dq + off, *dKp = dk + off, *dVp = dv + off;
                if (c) {
                    cum_logf(c, lf, first, len, H, h);
                    memset(dc, 0, sizeof(real) * (size_t)len);
                }
                for (int64_t t = 0; t < len; t++) {
                    real dot = 0;
                    for (int d = 0; d < D; d++) dot += dOp[t * ld + d] * o[off + t * ld + d];
                    Dt[t] = dot;
                    memset(dKp + t * ld, 0, sizeof(real) * D);
                    memset(dVp + t * ld, 0, sizeof(real) * D);
                }
                for (int64_t i0 = 0; i0 < len; i0 += QB) {
                    int bq = (int)(len - i0 < QB ? len - i0 : QB);
                    int64_t nk = i0 + bq;
                    block_scores(S, lds, Qp, Kp, c, i0, bq, D, ld, (real)scale, NULL);
                    for (int t = 0; t < bq; t++)
                        row_exp(S + t * lds, lse[(first + i0 + t) * H + h], i0 + t + 1, nk);
                    /* dV += P^T dO_i ; dP = dO_i V^T */
                    gemm(1, 0, (int)nk, D, bq, 1, S, (int)lds, dOp + i0 * ld, ld, 1, dVp, ld);
                    gemm(0, 1, bq, (int)nk, D, 1, dOp + i0 * ld, ld, Vp, ld, 0, dP, (int)lds);
                    for (int t = 0; t < bq; t++) {
                        real *pr = S + t * lds, *dr = dP + t * lds, d0 = Dt[i0 + t], rs = 0;
#pragma omp simd reduction(+ : rs)
                        for (int64_t u = 0; u < nk; u++) {
                            real ds = pr[u] * (dr[u] - d0);
                            dr[u] = ds;
                            rs += ds;
                        }
                        if (dc) dc[i0 + t] += rs;
                    }
                    for (int t = 0; dc && t < bq; t++) {
                        const real *dr = dP + t * lds;
                        for (int64_t u = 0; u < nk; u++) dc[u] -= dr[u];
                    }
                    gemm(0, 0, bq, D, (int)nk, (real)scale, dP, (int)lds, Kp, ld, 0, dQp + i0 * ld,
                         ld);
                    gemm(1, 0, (int)nk, D, bq, (real)scale, dP, (int)lds, Qp + i0 * ld, ld, 1, dKp,
                         ld);
                }
                real acc = 0;
                for (int64_t t = len - 1; dc && t >= 0; t--) {
                    acc += dc[t];
                    dlogf[(first + t) * H + h] = acc;
                }
            }
        rt_free(S);
        rt_free(dP);
        rt_free(c);
        rt_free(dc);
        rt_free(Dt);
    }
}
