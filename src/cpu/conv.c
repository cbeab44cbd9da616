/* Token mixing along time inside each segment: the depthwise short convolution (docs/models.md
 * §gla, §gated-deltanet, §position-embeddings), FoX's data-dependent shift (docs/models.md §fox)
 * and the reverse cumulative sum. */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/error.h"

#define KW                                                                                         \
    SHORT_CONV_TAPS /* the widest short conv: a conv of K < KW taps is one of KW whose oldest KW - \
                       K are 0 */

/* The K taps of w [C, K] transposed to [KW][C], zeros in front, so the inner loops run over
 * contiguous channels; a NULL weight gives the first difference (taps 0, 0, -1, 1). */
static real *taps_by_offset(const real *w, int C, int K) {
    RT_ASSERT(K >= 1 && K <= KW);
    real *wt = rt_alloc_aligned(sizeof(real) * (size_t)(KW * C));
    for (int c = 0; c < C; c++)
        for (int t = 0; t < KW; t++)
            wt[t * C + c] = w ? (t < KW - K ? 0 : w[c * K + t - (KW - K)])
                              : (t == KW - 1   ? 1
                                 : t == KW - 2 ? -1
                                               : 0);
    return wt;
}

/* pre[c] = sum over the taps that stay inside the segment of w[c, t] x[n - (KW-1-t), c] */
static void conv_row(real *pre, const real *x, const real *wt, const int32_t *pos, int64_t n,
                     int C) {
    memset(pre, 0, sizeof(real) * (size_t)C);
    for (int t = 0; t < KW; t++) {
        int back = KW - 1 - t;
        if (pos[n] < back) continue;
        const real *xr = x + (n - back) * C, *wr = wt + t * C;
#pragma omp simd
        for (int c = 0; c < C; c++) pre[c] += wr[c] * xr[c];
    }
}

/* pre += bias when there is one */
static void add_bias(real *pre, const real *b, int C) {
    if (!b) return;
#pragma omp simd
    for (int c = 0; c < C; c++) pre[c] += b[c];
}

void cpu_conv_fwd(void *y_, const void *x_, const void *w_, const void *b_, const Seqs *s, int C,
                  int K, Activation act) {
    real *y = y_;
    const real *x = x_, *b = b_;
    RT_ASSERT(act == ACT_NONE || act == ACT_SILU);
    real *wt = taps_by_offset(w_, C, K);
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < s->ntok; n++) {
        real *yr = y + n * C;
        conv_row(yr, x, wt, s->pos, n, C);
        add_bias(yr, b, C);
        if (act == ACT_SILU) {
#pragma omp simd
            for (int c = 0; c < C; c++) yr[c] *= sigmoidr(yr[c]);
        }
    }
    rt_free(wt);
}

void cpu_conv_bwd(void *dx_, void *dw_, void *db_, const void *dy_, const void *x_, const void *w_,
                  const void *b_, const Seqs *s, int C, int K, Activation act) {
    real *dx = dx_, *dw = dw_, *db = db_;
    const real *dy = dy_, *x = x_, *b = b_;
    const int32_t *pos = s->pos;
    int64_t N = s->ntok;
    real *wt = taps_by_offset(w_, C, K);
    /* d pre-activation */
    real *dpre = rt_alloc_aligned(sizeof(real) * (size_t)(N * C));
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        real *dr = dpre + n * C;
        const real *dyr = dy + n * C;
        if (act == ACT_SILU) {
            conv_row(dr, x, wt, pos, n, C);
            add_bias(dr, b, C);
#pragma omp simd
            for (int c = 0; c < C; c++) {
                real p = dr[c], sg = sigmoidr(p);
                dr[c] = dyr[c] * sg * ((real)1 + p * ((real)1 - sg));
            }
        } else {
            memcpy(dr, dyr, sizeof(real) * (size_t)C);
        }
    }
    /* One pass over the rows m: dx[m] = sum_t w[:, t] dpre[m + back] where token m + back is in
     * m's segment; dw[c, t] = sum_n dpre[n, c] x[n - back, c] and db[c] = sum_n dpre[n, c] as
     * per-thread partials, added in thread order */
    int want_dw = w_ && dw, want_db = b && db, nthr = par_max_threads(), width = C * (KW + 1);
    real *partial = rt_calloc((size_t)nthr * (size_t)width, sizeof(real));
#pragma omp parallel
    {
        real *acc = partial + (size_t)par_thread() * (size_t)width, *bacc = acc + KW * C;
#pragma omp for schedule(static)
        for (int64_t m = 0; m < N; m++) {
            real *dxr = dx + m * C;
            const real *dm = dpre + m * C;
            memset(dxr, 0, sizeof(real) * (size_t)C);
            for (int t = 0; t < KW; t++) {
                int back = KW - 1 - t;
                int64_t n = m + back;
                if (n < N && pos[n] >= back) {
                    const real *dr = dpre + n * C, *wr = wt + t * C;
#pragma omp simd
                    for (int c = 0; c < C; c++) dxr[c] += wr[c] * dr[c];
                }
                if (want_dw && pos[m] >= back) {
                    const real *xr = x + (m - back) * C;
                    real *ar = acc + t * C;
#pragma omp simd
                    for (int c = 0; c < C; c++) ar[c] += dm[c] * xr[c];
                }
            }
            if (want_db) {
#pragma omp simd
                for (int c = 0; c < C; c++) bacc[c] += dm[c];
            }
        }
    }
    for (int t = 0; t < nthr; t++) {
        const real *acc = partial + (size_t)t * (size_t)width;
        for (int k = KW - K; want_dw && k < KW; k++) /* the K real taps */
            for (int c = 0; c < C; c++) dw[c * K + k - (KW - K)] += acc[k * C + c];
        for (int c = 0; want_db && c < C; c++) db[c] += acc[KW * C + c];
    }
    rt_free(partial);
    rt_free(dpre);
    rt_free(wt);
}

void cpu_shift_fwd(void *y_, const void *x_, const void *a_logit_, const Seqs *s, int H, int D) {
    real *y = y_;
    const real *x = x_, *al = a_logit_;
    int C = H * D;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < s->ntok; n++)
        for (int h = 0; h < H; h++) {
            real a = sigmoidr(al[n * H + h]);
            const real *xc = x + n * C + h * D;
            const real *xp = s->pos[n] >= 1 ? xc - C : NULL;
            real *yc = y + n * C + h * D;
            for (int d = 0; d < D; d++) yc[d] = (xp ? a * xp[d] : 0) + ((real)1 - a) * xc[d];
        }
}

void cpu_shift_bwd(void *dx_, void *da_logit_, const void *dy_, const void *x_,
                   const void *a_logit_, const Seqs *s, int H, int D) {
    real *dx = dx_, *dal = da_logit_;
    const real *dy = dy_, *x = x_, *al = a_logit_;
    const int32_t *pos = s->pos;
    int64_t N = s->ntok;
    int C = H * D;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++)
        for (int h = 0; h < H; h++) {
            real a = sigmoidr(al[n * H + h]);
            int has_next = n + 1 < N && pos[n + 1] >= 1;
            real an = has_next ? sigmoidr(al[(n + 1) * H + h]) : 0;
            const real *dyc = dy + n * C + h * D, *xc = x + n * C + h * D;
            const real *xp = pos[n] >= 1 ? xc - C : NULL;
            real da = 0;
            for (int d = 0; d < D; d++) {
                dx[n * C + h * D + d] = ((real)1 - a) * dyc[d] + (has_next ? an * dyc[C + d] : 0);
                da += dyc[d] * ((xp ? xp[d] : 0) - xc[d]);
            }
            dal[n * H + h] = da * a * ((real)1 - a);
        }
}

void cpu_revcumsum(void *y_, const void *x_, const Seqs *s, int C) {
    real *y = y_;
    const real *x = x_;
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int seg = 0; seg < s->nseg; seg++)
        for (int c = 0; c < C; c++) {
            real acc = 0;
            for (int64_t n = s->cu[seg + 1] - 1; n >= s->cu[seg]; n--) {
                acc += x[n * C + c];
                y[n * C + c] = acc;
            }
        }
}
