/* Dense layers: matmul with optional bias, residual add, token embedding. */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"

void cpu_matmul_fwd(void *out_, const void *x_, const void *w_, const void *bias_, int M, int N,
                    int K) {
    real *out = out_;
    const real *x = x_, *w = w_, *bias = bias_;
    gemm(0, 1, M, N, K, 1, x, K, w, K, 0, out, N);
    if (bias) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) out[(int64_t)i * N + j] += bias[j];
    }
}

void cpu_matmul_bwd(void *dx_, void *dw_, void *dbias_, const void *dout_, const void *x_,
                    const void *w_, int M, int N, int K, int accumulate) {
    real *dx = dx_, *dw = dw_, *dbias = dbias_;
    const real *dout = dout_, *x = x_, *w = w_;
    if (dx) gemm(0, 0, M, K, N, 1, dout, N, w, K, accumulate ? 1 : 0, dx, K);
    if (dw) gemm(1, 0, N, K, M, 1, dout, N, x, K, 1, dw, K);
    if (dbias) {
#pragma omp parallel for schedule(static)
        for (int j = 0; j < N; j++) {
            real acc = 0;
            for (int i = 0; i < M; i++) acc += dout[(int64_t)i * N + j];
            dbias[j] += acc;
        }
    }
}

void cpu_add(void *out_, const void *a_, const void *b_, int64_t n) {
    real *out = out_;
    const real *a = a_, *b = b_;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void cpu_embedding_fwd(void *out_, const int32_t *tok, const void *E_, int64_t n, int C) {
    real *out = out_;
    const real *E = E_;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        memcpy(out + i * C, E + (int64_t)tok[i] * C, sizeof(real) * (size_t)C);
}

void cpu_scatter_rows(void *out_, const int32_t *rows, const void *src_, int64_t n, int C) {
    real *out = out_;
    const real *src = src_;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        memcpy(out + (int64_t)rows[i] * C, src + i * C, sizeof(real) * (size_t)C);
}

void cpu_embedding_bwd(void *dE_, const int32_t *tok, const void *dout_, int64_t n, int C) {
    real *dE = dE_;
    const real *dout = dout_;
    /* Rows may repeat, so parallelise over channels: each thread owns a column range. */
#pragma omp parallel
    {
        int nt = par_nthreads(), id = par_thread();
        int c0 = (int)((int64_t)C * id / nt), c1 = (int)((int64_t)C * (id + 1) / nt);
        for (int64_t i = 0; i < n; i++) {
            real *row = dE + (int64_t)tok[i] * C;
            const real *d = dout + i * C;
            for (int c = c0; c < c1; c++) row[c] += d[c];
        }
    }
}

void cpu_matmul_group_fwd(const MatmulGroup *g) {
    for (int i = 0; i < g->n; i++)
        cpu_matmul_fwd(g->p[i].y, g->x, g->p[i].w, g->p[i].bias, g->M, g->p[i].N, g->K);
}

void cpu_matmul_group_bwd(const MatmulGroupGrads *a) {
    const MatmulGroup *g = &a->g;
    for (int i = 0; i < g->n; i++)
        cpu_matmul_bwd(a->dx, a->dw[i], a->dbias[i], a->dy[i], g->x, g->p[i].w, g->M, g->p[i].N,
                       g->K, a->accumulate || i > 0);
}

/* The MLP's gated products: the ops they stand for, in turn. */
void cpu_matmul_gate_mul_fwd(const MatmulGateMulArgs *a) {
    cpu_matmul_fwd(a->y, a->x, a->w, NULL, a->M, a->N, a->K);
    cpu_gate_mul_fwd(a->out, a->y, a->g, (int64_t)a->M * a->N, a->act);
}

void cpu_gate_mul_matmul_dx(const GateMulMatmulDx *a) {
    cpu_matmul_bwd(a->dp, NULL, NULL, a->dout, NULL, a->w, a->M, a->N, a->K, 0);
    cpu_gate_mul_bwd_rebuild(a->p, a->dx, a->dg, a->dp, a->x, a->g, (int64_t)a->M * a->K, a->act);
}
