/* Mamba2's small ops around the SSD (docs/models.md §mamba2): the per-head scale v = dt x, the D
 * skip, and the broadcast of B and C from groups to heads (the time step and log decay are
 * decay_gates, src/cpu/elementwise.c). */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/error.h"

void cpu_head_scale_fwd(void *y_, const void *x_, const void *s_, int64_t N, int H, int D) {
    real *y = y_;
    const real *x = x_, *s = s_;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < N * H; r++)
        for (int d = 0; d < D; d++) y[r * D + d] = s[r] * x[r * D + d];
}

void cpu_head_scale_bwd(void *dx_, void *ds_, const void *dy_, const void *x_, const void *s_,
                        int64_t N, int H, int D) {
    real *dx = dx_, *ds = ds_;
    const real *dy = dy_, *x = x_, *s = s_;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < N * H; r++) {
        real acc = 0;
        for (int d = 0; d < D; d++) {
            dx[r * D + d] = s[r] * dy[r * D + d];
            acc += dy[r * D + d] * x[r * D + d];
        }
        ds[r] = acc;
    }
}

void cpu_head_skip_fwd(void *y_, const void *x_, const void *Dp_, int64_t N, int H, int D) {
    real *y = y_;
    const real *x = x_, *Dp = Dp_;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++)
        for (int h = 0; h < H; h++) {
            int64_t r = (n * H + h) * (int64_t)D;
            for (int d = 0; d < D; d++) y[r + d] += Dp[h] * x[r + d];
        }
}

/* One pass over the rows (not one a head: the LRU has d heads of one channel). Each thread
 * sums every head's d Dp over its rows into its own row of partials, added in thread order
 * as par_sum does. */
void cpu_head_skip_bwd(void *dx_, void *dDp_, const void *dy_, const void *x_, const void *Dp_,
                       int64_t N, int H, int D) {
    real *dx = dx_, *dDp = dDp_;
    const real *dy = dy_, *x = x_, *Dp = Dp_;
    int T = par_max_threads();
    double *part = rt_calloc((size_t)T * H, sizeof(double));
#pragma omp parallel
    {
        double *acc = part + (size_t)par_thread() * H;
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++)
            for (int h = 0; h < H; h++) {
                int64_t r = (n * H + h) * (int64_t)D;
                for (int d = 0; d < D; d++) {
                    dx[r + d] += Dp[h] * dy[r + d];
                    acc[h] += (double)(dy[r + d] * x[r + d]);
                }
            }
    }
    for (int h = 0; h < H; h++) {
        double total = 0;
        for (int t = 0; t < T; t++) total += part[(size_t)t * H + h];
        dDp[h] += (real)total;
    }
    rt_free(part);
}

/* row (n, h) of out is row (n, h / (H / G)) of src */
void cpu_group_bcast_fwd(void *out, const void *src, int64_t N, int H, int G, int K) {
    int per = H / G;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++)
        for (int h = 0; h < H; h++)
            memcpy((real *)out + (n * H + h) * K, (const real *)src + (n * G + h / per) * K,
                   sizeof(real) * (size_t)K);
}

void cpu_group_bcast_bwd(void *dsrc_, const void *dout_, int64_t N, int H, int G, int K) {
    real *dsrc = dsrc_;
    const real *dout = dout_;
    int per = H / G;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++)
        for (int g = 0; g < G; g++)
            for (int i = 0; i < K; i++) {
                real acc = 0;
                for (int h = g * per; h < (g + 1) * per; h++) acc += dout[(n * H + h) * K + i];
                dsrc[(n * G + g) * K + i] = acc;
            }
}
