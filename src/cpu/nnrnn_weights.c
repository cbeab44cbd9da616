/* The nnRNN's recurrent matrix from its Schur form (docs/models.md §nonlinear-rnns; NnrnnWeights in
 * src/backend_ops.h): K = Lambda + strictly_lower(T), V = P K P^T.
 *
 * Backward: dK = P^T dV P, dP = dV P K^T + dV^T P K, dT += strictly_lower(dK), and per block
 * i (rows and columns 2i, 2i+1) with R = [[cos, -sin], [sin, cos]] of theta_i:
 * dgamma_i += <dK_i, R>, dtheta_i += gamma_i <dK_i, dR/dtheta>. */
#include "cpu/cpu_ops.h"

void cpu_nnrnn_weights_fwd(const NnrnnWeights *w) {
    int n = w->n;
    const real *T = w->T, *gm = w->gamma, *th = w->theta;
    real *K = w->K, *X = w->work;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) K[i * n + j] = j < i ? T[i * n + j] : 0;
    for (int b = 0; b < n / 2; b++) {
        real c = gm[b] * cos(th[b]), s = gm[b] * sin(th[b]);
        int i = 2 * b;
        K[i * n + i] = c, K[i * n + i + 1] = -s;
        K[(i + 1) * n + i] += s, K[(i + 1) * n + i + 1] = c;
    }
    gemm(0, 0, n, n, n, 1, w->P, n, K, n, 0, X, n);    /* X = P K */
    gemm(0, 1, n, n, n, 1, X, n, w->P, n, 0, w->V, n); /* V = X P^T */
}

void cpu_nnrnn_weights_bwd(const NnrnnWeightGrads *g) {
    const NnrnnWeights *w = &g->w;
    int n = w->n;
    const real *P = w->P, *K = w->K, *dV = g->dV, *gm = w->gamma, *th = w->theta;
    real *X = w->work, *dP = g->dP, *dT = g->dT, *dgm = g->dgamma, *dth = g->dtheta;
    /* dP = dV (P K^T) + dV^T (P K) */
    gemm(0, 1, n, n, n, 1, P, n, K, n, 0, X, n);
    gemm(0, 0, n, n, n, 1, dV, n, X, n, 0, dP, n);
    gemm(0, 0, n, n, n, 1, P, n, K, n, 0, X, n);
    gemm(1, 0, n, n, n, 1, dV, n, X, n, 1, dP, n);
    real *Y = X + (size_t)n * n; /* dK = P^T (dV P), in X */
    gemm(0, 0, n, n, n, 1, dV, n, P, n, 0, Y, n);
    gemm(1, 0, n, n, n, 1, P, n, Y, n, 0, X, n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) dT[i * n + j] += X[i * n + j];
    for (int b = 0; b < n / 2; b++) {
        int i = 2 * b;
        real c = cos(th[b]), s = sin(th[b]);
        real k00 = X[i * n + i], k01 = X[i * n + i + 1], k10 = X[(i + 1) * n + i],
             k11 = X[(i + 1) * n + i + 1];
        dgm[b] += c * (k00 + k11) + s * (k10 - k01);
        dth[b] += gm[b] * (-s * (k00 + k11) + c * (k10 - k01));
    }
}
