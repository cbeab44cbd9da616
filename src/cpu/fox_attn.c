/* Forgetting attention (SPEC §4), blockwise (FlashAttention style) on the CPU.
 *
 * o_i = sum_{j<=i} softmax_j(s_ij) v_j with s_ij = scale q_i.k_j + c_i - c_j, c the
 * cumulative log forget gate of the segment. Tiles of 64 queries x 64 keys, online
 * softmax; the forward saves lse_i = log sum_j exp(s_ij). The backward recomputes
 * P = exp(s - lse), uses dS = P o (dP - rowsum(dO o O)), and d log f is the reverse
 * cumulative sum of dc, where dc_i = sum_j dS_ij - sum_j dS_ji.
 */
#include <math.h>
#include <string.h>

#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/error.h"

#define TILE 64

static int64_t max_segment(const Seqs *s) {
    int64_t m = 0;
    for (int i = 0; i < s->nseg; i++)
        if (s->cu[i + 1] - s->cu[i] > m) m = s->cu[i + 1] - s->cu[i];
    return m;
}

/* S = scale Q_i K_j^T + c_i - c_j over a bq x bk tile (rows i0.., cols j0.., relative to
 * the segment), -INFINITY where j > i. ld is the row stride of q/k (H*D). */
static void tile_scores(real *S, const real *Qp, const real *Kp, const real *c, int64_t i0,
                        int bq, int64_t j0, int bk, int D, int ld, real scale) {
    gemm(0, 1, bq, bk, D, scale, Qp + i0 * ld, ld, Kp + j0 * ld, ld, 0, S, TILE);
    for (int t = 0; t < bq; t++)
        for (int u = 0; u < bk; u++) {
            if (j0 + u > i0 + t)
                S[t * TILE + u] = -INFINITY;
            else
                S[t * TILE + u] += c[i0 + t] - c[j0 + u];
        }
}

void cpu_fox_fwd(void *o_, void *lse_, const void *q_, const void *k_, const void *v_,
                 const void *logf_, const Seqs *s, int H, int D, float scale) {
    real *o = o_, *lse = lse_;
    const real *q = q_, *k = k_, *v = v_, *lf = logf_;
    int64_t maxlen = max_segment(s);
    int ld = H * D;
#pragma omp parallel
    {
        real *S = rt_alloc_aligned(sizeof(real) * TILE * TILE);
        real *acc = rt_alloc_aligned(sizeof(real) * TILE * D);
        real m[TILE], l[TILE];
        real *c = rt_alloc_aligned(sizeof(real) * (size_t)(maxlen ? maxlen : 1));
#pragma omp for collapse(2) schedule(dynamic)
        for (int seg = 0; seg < s->nseg; seg++)
            for (int h = 0; h < H; h++) {
                int64_t first = s->cu[seg], len = s->cu[seg + 1] - first;
                const real *Qp = q + first * ld + h * D, *Kp = k + first * ld + h * D,
                           *Vp = v + first * ld + h * D;
                real run = 0;
                for (int64_t t = 0; t < len; t++) c[t] = run += lf[(first + t) * H + h];
                for (int64_t i0 = 0; i0 < len; i0 += TILE) {
                    int bq = (int)(len - i0 < TILE ? len - i0 : TILE);
                    for (int t = 0; t < bq; t++) m[t] = -INFINITY, l[t] = 0;
                    memset(acc, 0, sizeof(real) * TILE * D);
                    for (int64_t j0 = 0; j0 < i0 + bq; j0 += TILE) {
                        int bk = (int)(len - j0 < TILE ? len - j0 : TILE);
                        tile_scores(S, Qp, Kp, c, i0, bq, j0, bk, D, ld, (real)scale);
                        for (int t = 0; t < bq; t++) {
                            real mx = m[t];
                            for (int u = 0; u < bk; u++) mx = maxr(mx, S[t * TILE + u]);
                            real corr = exp(m[t] - mx), sum = 0;
                            for (int u = 0; u < bk; u++) {
                                real p = exp(S[t * TILE + u] - mx);
                                S[t * TILE + u] = p;
                                sum += p;
                            }
                            l[t] = l[t] * corr + sum;
                            m[t] = mx;
                            for (int d = 0; d < D; d++) acc[t * D + d] *= corr;
                        }
                        gemm(0, 0, bq, D, bk, 1, S, TILE, Vp + j0 * ld, ld, 1, acc, D);
                    }
                    for (int t = 0; t < bq; t++) {
                        real *orow = o + (first + i0 + t) * ld + h * D;
                        for (int d = 0; d < D; d++) orow[d] = acc[t * D + d] / l[t];
                        lse[(first + i0 + t) * H + h] = m[t] + log(l[t]);
                    }
                }
            }
        rt_free(S);
        rt_free(acc);
        rt_free(c);
    }
}

void cpu_fox_bwd(void *dq_, void *dk_, void *dv_, void *dlogf_, const void *dout_,
                 const void *q_, const void *k_, const void *v_, const void *logf_,
                 const void *o_, const void *lse_, const Seqs *s, int H, int D, float scale) {
    real *dq = dq_, *dk = dk_, *dv = dv_, *dlogf = dlogf_;
    const real *dout = dout_, *q = q_, *k = k_, *v = v_, *lf = logf_, *o = o_, *lse = lse_;
    int64_t maxlen = max_segment(s);
    int ld = H * D;
#pragma omp parallel
    {
        real *S = rt_alloc_aligned(sizeof(real) * TILE * TILE);
        real *dP = rt_alloc_aligned(sizeof(real) * TILE * TILE);
        size_t ml = (size_t)(maxlen ? maxlen : 1);
        real *c = rt_alloc_aligned(sizeof(real) * ml);
        real *dc = rt_alloc_aligned(sizeof(real) * ml);
        real *Dt = rt_alloc_aligned(sizeof(real) * ml);
#pragma omp for collapse(2) schedule(dynamic)
        for (int seg = 0; seg < s->nseg; seg++)
            for (int h = 0; h < H; h++) {
                int64_t first = s->cu[seg], len = s->cu[seg + 1] - first;
                int64_t off = first * ld + h * D;
                const real *Qp = q + off, *Kp = k + off, *Vp = v + off, *dOp = dout + off;
                real *dQp = dq + off, *dKp = dk + off, *dVp = dv + off;
                real run = 0;
                for (int64_t t = 0; t < len; t++) {
                    c[t] = run += lf[(first + t) * H + h];
                    dc[t] = 0;
                    real dot = 0;
                    for (int d = 0; d < D; d++) dot += dOp[t * ld + d] * o[off + t * ld + d];
                    Dt[t] = dot;
                    memset(dQp + t * ld, 0, sizeof(real) * D);
                    memset(dKp + t * ld, 0, sizeof(real) * D);
                    memset(dVp + t * ld, 0, sizeof(real) * D);
                }
                for (int64_t i0 = 0; i0 < len; i0 += TILE) {
                    int bq = (int)(len - i0 < TILE ? len - i0 : TILE);
                    for (int64_t j0 = 0; j0 < i0 + bq; j0 += TILE) {
                        int bk = (int)(len - j0 < TILE ? len - j0 : TILE);
                        tile_scores(S, Qp, Kp, c, i0, bq, j0, bk, D, ld, (real)scale);
                        for (int t = 0; t < bq; t++) {
                            real l = lse[(first + i0 + t) * H + h];
                            for (int u = 0; u < bk; u++) S[t * TILE + u] = exp(S[t * TILE + u] - l);
                        }
                        /* dV_j += P^T dO_i ; dP = dO_i V_j^T */
                        gemm(1, 0, bk, D, bq, 1, S, TILE, dOp + i0 * ld, ld, 1, dVp + j0 * ld, ld);
                        gemm(0, 1, bq, bk, D, 1, dOp + i0 * ld, ld, Vp + j0 * ld, ld, 0, dP, TILE);
                        for (int t = 0; t < bq; t++)
                            for (int u = 0; u < bk; u++) {
                                real ds = S[t * TILE + u] * (dP[t * TILE + u] - Dt[i0 + t]);
                                dP[t * TILE + u] = ds;
                                dc[i0 + t] += ds;
                                dc[j0 + u] -= ds;
                            }
                        gemm(0, 0, bq, D, bk, (real)scale, dP, TILE, Kp + j0 * ld, ld, 1, dQp + i0 * ld, ld);
                        gemm(1, 0, bk, D, bq, (real)scale, dP, TILE, Qp + i0 * ld, ld, 1, dKp + j0 * ld, ld);
                    }
                }
                real acc = 0;
                for (int64_t t = len - 1; t >= 0; t--) {
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
