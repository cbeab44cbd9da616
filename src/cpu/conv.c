/* Token mixing along time inside each segment: the depthwise short convolution (SPEC §2,
 * §3, §5), FoX's data-dependent shift (SPEC §4) and the reverse cumulative sum. */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/error.h"

#define KW 4 /* kernel width of every short conv */

static inline real conv_pre(const real *x, const real *w, const int32_t *pos, int64_t n, int c,
                            int C) {
    if (!w) return x[n * C + c] - (pos[n] >= 1 ? x[(n - 1) * C + c] : 0);
    real acc = 0;
    for (int t = 0; t < KW; t++) {
        int back = KW - 1 - t;
        if (pos[n] >= back) acc += w[c * KW + t] * x[(n - back) * C + c];
    }
    return acc;
}

void cpu_conv_fwd(void *y_, const void *x_, const void *w_, const Seqs *s, int C,
                  Activation act) {
    real *y = y_;
    const real *x = x_, *w = w_;
    RT_ASSERT(act == ACT_NONE || act == ACT_SILU);
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < s->ntok; n++)
        for (int c = 0; c < C; c++) {
            real p = conv_pre(x, w, s->pos, n, c, C);
            y[n * C + c] = act == ACT_SILU ? p * sigmoidr(p) : p;
        }
}

void cpu_conv_bwd(void *dx_, void *dw_, const void *dy_, const void *x_, const void *w_,
                  const Seqs *s, int C, Activation act) {
    real *dx = dx_, *dw = dw_;
    const real *dy = dy_, *x = x_, *w = w_;
    const int32_t *pos = s->pos;
    int64_t N = s->ntok;
    real *dpre = rt_alloc_aligned(sizeof(real) * (size_t)(N * C));
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            real d = dy[n * C + c];
            if (act == ACT_SILU) {
                real p = conv_pre(x, w, pos, n, c, C), sg = sigmoidr(p);
                d *= sg * ((real)1 + p * ((real)1 - sg));
            }
            dpre[n * C + c] = d;
        }
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < N; m++)
        for (int c = 0; c < C; c++) {
            real acc = 0;
            if (!w) {
                acc = dpre[m * C + c];
                if (m + 1 < N && pos[m + 1] >= 1) acc -= dpre[(m + 1) * C + c];
            } else {
                for (int t = 0; t < KW; t++) {
                    int back = KW - 1 - t;
                    int64_t n = m + back;
                    if (n < N && pos[n] >= back) acc += w[c * KW + t] * dpre[n * C + c];
                }
            }
            dx[m * C + c] = acc;
        }
    if (w && dw) {
        int nthr = par_max_threads();
        real *partial = rt_calloc((size_t)nthr * (size_t)(C * KW), sizeof(real));
#pragma omp parallel
        {
            real *acc = partial + (size_t)par_thread() * (size_t)(C * KW);
#pragma omp for schedule(static)
            for (int64_t n = 0; n < N; n++)
                for (int t = 0; t < KW; t++) {
                    int back = KW - 1 - t;
                    if (pos[n] < back) continue;
                    const real *xr = x + (n - back) * C, *dr = dpre + n * C;
                    for (int c = 0; c < C; c++) acc[c * KW + t] += dr[c] * xr[c];
                }
        }
        for (int t = 0; t < nthr; t++)
            for (int i = 0; i < C * KW; i++) dw[i] += partial[(size_t)t * (size_t)(C * KW) + i];
        rt_free(partial);
    }
    rt_free(dpre);
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
