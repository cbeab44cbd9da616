/* RMSNorm over groups of channels (docs/models.md §backbone; also the per-head readout and QK
 * norms; the readout's norm with its output gate), LayerNorm (§zoology-shape: Zoology's block
 * norms) and L2 normalisation (GDN q/k, Selective RoPE input slices). */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/error.h"

void cpu_rmsnorm_fwd(void *y_, void *rstd_, const void *x_, const void *w_, int64_t N, int G, int C,
                     int w_per_group, double eps) {
    real *y = y_, *rstd = rstd_;
    const real *x = x_, *w = w_;
    int64_t rows = N * G;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const real *xr = x + r * C;
        real *yr = y + r * C;
        const real *wr = w + (w_per_group ? (r % G) * C : 0);
        real ss = 0;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; c++) ss += xr[c] * xr[c];
        real rs = (real)1 / sqrt(ss / (real)C + (real)eps);
        rstd[r] = rs;
#pragma omp simd
        for (int c = 0; c < C; c++) yr[c] = xr[c] * rs * wr[c];
    }
}

void cpu_add_rmsnorm_fwd(void *h, void *y, void *rstd, const void *a, const void *b, const void *w,
                         int64_t N, int C, double eps) {
    cpu_add(h, a, b, N * C);
    cpu_rmsnorm_fwd(y, rstd, h, w, N, 1, C, 0, eps);
}

void cpu_rmsnorm_bwd(void *dx_, void *dw_, const void *dy_, const void *x_, const void *w_,
                     const void *rstd_, int64_t N, int G, int C, int w_per_group, int accumulate) {
    real *dx = dx_, *dw = dw_;
    const real *dy = dy_, *x = x_, *w = w_, *rstd = rstd_;
    int64_t rows = N * G;
    int wn = w_per_group ? G * C : C;
    int nthr = par_max_threads();
    real *partial = rt_calloc((size_t)nthr * (size_t)wn, sizeof(real));
#pragma omp parallel
    {
        real *acc = partial + (size_t)par_thread() * (size_t)wn;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            const real *xr = x + r * C, *dyr = dy + r * C;
            int woff = w_per_group ? (int)(r % G) * C : 0;
            const real *wr = w + woff;
            real *accr = acc + woff;
            real rs = rstd[r], dot = 0;
#pragma omp simd reduction(+ : dot)
            for (int c = 0; c < C; c++) dot += dyr[c] * wr[c] * xr[c];
            real k = dot * rs * rs / (real)C;
            real *dxr = dx + r * C;
            if (accumulate) {
#pragma omp simd
                for (int c = 0; c < C; c++) dxr[c] += rs * (dyr[c] * wr[c] - xr[c] * k);
            } else {
#pragma omp simd
                for (int c = 0; c < C; c++) dxr[c] = rs * (dyr[c] * wr[c] - xr[c] * k);
            }
#pragma omp simd
            for (int c = 0; c < C; c++) accr[c] += dyr[c] * xr[c] * rs;
        }
    }
    for (int t = 0; t < nthr; t++)
        for (int c = 0; c < wn; c++) dw[c] += partial[(size_t)t * (size_t)wn + (size_t)c];
    rt_free(partial);
}

/* The readout's norm and output gate (RmsnormGateArgs): rmsnorm_fwd into a->on, then
 * gate_mul_fwd of it, and the backward as gate_mul_bwd into g->don, then rmsnorm_bwd of it:
 * the two ops' own code, so the same values to the last bit. */
void cpu_rmsnorm_gate_fwd(const RmsnormGateArgs *a) {
    cpu_rmsnorm_fwd(a->on, a->rstd, a->x, a->w, a->N, a->G, a->C, a->w_per_group, a->eps);
    cpu_gate_mul_fwd(a->r, a->on, a->gp, a->N * a->G * a->C, a->act);
}

void cpu_rmsnorm_gate_bwd(const RmsnormGateGrads *g) {
    const RmsnormGateArgs *a = &g->a;
    cpu_gate_mul_bwd(g->don, g->dgp, g->dr, a->on, a->gp, a->N * a->G * a->C, a->act);
    cpu_rmsnorm_bwd(g->dx, g->dw, g->don, a->x, a->w, a->rstd, a->N, a->G, a->C, a->w_per_group, 0);
}

void cpu_layernorm_fwd(void *y_, void *mean_, void *rstd_, const void *x_, const void *w_,
                       const void *b_, int64_t N, int C, double eps) {
    real *y = y_, *mean = mean_, *rstd = rstd_;
    const real *x = x_, *w = w_, *b = b_;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < N; r++) {
        const real *xr = x + r * C;
        real *yr = y + r * C;
        real s = 0, ss = 0;
#pragma omp simd reduction(+ : s)
        for (int c = 0; c < C; c++) s += xr[c];
        real mu = s / (real)C;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; c++) ss += (xr[c] - mu) * (xr[c] - mu);
        real rs = (real)1 / sqrt(ss / (real)C + (real)eps);
        mean[r] = mu, rstd[r] = rs;
#pragma omp simd
        for (int c = 0; c < C; c++) yr[c] = (xr[c] - mu) * rs * w[c] + b[c];
    }
}

/* With xh = (x - mean) rstd and g = dy w: dx = rstd (g - mean_c(g) - xh mean_c(g xh)),
 * dw += dy xh, db += dy. */
void cpu_layernorm_bwd(void *dx_, void *dw_, void *db_, const void *dy_, const void *x_,
                       const void *w_, const void *mean_, const void *rstd_, int64_t N, int C,
                       int accumulate) {
    real *dx = dx_, *dw = dw_, *db = db_;
    const real *dy = dy_, *x = x_, *w = w_, *mean = mean_, *rstd = rstd_;
    int nthr = par_max_threads();
    real *partial = rt_calloc((size_t)nthr * 2 * (size_t)C, sizeof(real));
#pragma omp parallel
    {
        real *accw = partial + (size_t)par_thread() * 2 * (size_t)C, *accb = accw + C;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < N; r++) {
            const real *xr = x + r * C, *dyr = dy + r * C;
            real mu = mean[r], rs = rstd[r], sg = 0, sgx = 0;
#pragma omp simd reduction(+ : sg, sgx)
            for (int c = 0; c < C; c++) {
                real g = dyr[c] * w[c];
                sg += g;
                sgx += g * (xr[c] - mu) * rs;
            }
            sg /= (real)C, sgx /= (real)C;
            real *dxr = dx + r * C;
#pragma omp simd
            for (int c = 0; c < C; c++) {
                real xh = (xr[c] - mu) * rs, v = rs * (dyr[c] * w[c] - sg - xh * sgx);
                dxr[c] = accumulate ? dxr[c] + v : v;
                accw[c] += dyr[c] * xh;
                accb[c] += dyr[c];
            }
        }
    }
    for (int t = 0; t < nthr; t++)
        for (int c = 0; c < C; c++) {
            dw[c] += partial[(size_t)t * 2 * (size_t)C + (size_t)c];
            db[c] += partial[(size_t)t * 2 * (size_t)C + (size_t)C + (size_t)c];
        }
    rt_free(partial);
}

void cpu_l2norm_fwd(void *y_, void *rnorm_, const void *x_, int64_t N, int G, int D, double eps) {
    real *y = y_, *rnorm = rnorm_;
    const real *x = x_;
    int64_t rows = N * G;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const real *xr = x + r * D;
        real ss = 0;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < D; c++) ss += xr[c] * xr[c];
        real rn = (real)1 / sqrt(ss + (real)eps);
        rnorm[r] = rn;
        for (int c = 0; c < D; c++) y[r * D + c] = xr[c] * rn;
    }
}

/* y = x * rn  =>  dx = rn * (dy - y (y . dy)) */
void cpu_l2norm_bwd(void *dx_, const void *dy_, const void *y_, const void *rnorm_, int64_t N,
                    int G, int D, int accumulate) {
    real *dx = dx_;
    const real *dy = dy_, *y = y_, *rnorm = rnorm_;
    int64_t rows = N * G;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const real *yr = y + r * D, *dyr = dy + r * D;
        real dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int c = 0; c < D; c++) dot += yr[c] * dyr[c];
        real rn = rnorm[r];
        real *dxr = dx + r * D;
        if (accumulate)
            for (int c = 0; c < D; c++) dxr[c] += rn * (dyr[c] - yr[c] * dot);
        else
            for (int c = 0; c < D; c++) dxr[c] = rn * (dyr[c] - yr[c] * dot);
    }
}
