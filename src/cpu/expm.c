/* RotRNN's orthogonal bases (docs/models.md §rotrnn): P_h = expm(S_h), S_h = M_h - M_h^T, and the
 * gradient at M through the Frechet derivative of expm. Computed in fp64 whatever `real` is
 * (the matrices are made once per pass); the work argument is for the CUDA kernels. The
 * products are BLAS's: n = 256 for an exprnn / nnrnn layer of that width. The heads run in
 * parallel when there are several (RotRNN), a single matrix on BLAS's threads.
 *
 * expm by scaling and squaring: s squarings with ||S||_1 / 2^s <= 1/2, then the Taylor series
 * of degree 12 by Horner's rule (remainder below 1e-14 relative).
 *
 * Backward: the adjoint of the Frechet derivative L(S, .) in the Frobenius inner product is
 * L(S^T, .), so dS = L(S^T, dP) = L(-S, dP), and dM = dS - dS^T. L(X, E) is the upper right
 * block of expm([[X, E], [0, X]]); block matrices [[A, L], [0, A]] are kept as pairs (A, L),
 * multiplied as (A, L)(B, K) = (AB, AK + LB), through the same Horner steps and squarings. */
#include <cblas.h>
#include <string.h>

#include "cpu/cpu_ops.h"
#include "util/error.h"

#define TAYLOR 12

/* C = A B, n x n. */
static void mm(double *C, const double *A, const double *B, int n) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, A, n, B, n, 0, C, n);
}

/* Squarings s with ||X||_1 / 2^s <= 1/2 (||.||_1 the largest column sum of |X|). */
static int squarings(const double *X, int n) {
    double norm = 0;
    for (int j = 0; j < n; j++) {
        double col = 0;
        for (int i = 0; i < n; i++) col += fabs(X[(size_t)i * n + j]);
        if (col > norm) norm = col;
    }
    int s = 0;
    while (norm > 0.5 && s < 60) norm /= 2, s++;
    return s;
}

/* A = e^X and, when E is not NULL, L = L(X, E); X is overwritten. w: 4 n^2 doubles. */
static void expm_pair(double *A, double *L, double *X, double *E, int n, double *w) {
    size_t nn = (size_t)n * n;
    double *T1 = w, *T2 = w + nn, *T3 = w + 2 * nn, *T4 = w + 3 * nn;
    int s = squarings(X, n);
    double scale = ldexp(1.0, -s);
    for (size_t i = 0; i < nn; i++) X[i] *= scale;
    if (E)
        for (size_t i = 0; i < nn; i++) E[i] *= scale;
    memset(A, 0, sizeof(double) * nn);
    for (int i = 0; i < n; i++) A[(size_t)i * n + i] = 1;
    if (E) memset(L, 0, sizeof(double) * nn);
    for (int k = TAYLOR; k >= 1; k--) { /* (A, L) <- (I, 0) + (X, E)(A, L) / k */
        mm(T1, X, A, n);
        if (E) {
            mm(T2, X, L, n);
            mm(T3, E, A, n);
            for (size_t i = 0; i < nn; i++) L[i] = (T2[i] + T3[i]) / k;
        }
        for (size_t i = 0; i < nn; i++) A[i] = T1[i] / k;
        for (int i = 0; i < n; i++) A[(size_t)i * n + i] += 1;
    }
    for (int q = 0; q < s; q++) { /* (A, L) <- (A, L)^2 */
        if (E) {
            mm(T2, A, L, n);
            mm(T3, L, A, n);
            for (size_t i = 0; i < nn; i++) L[i] = T2[i] + T3[i];
        }
        mm(T4, A, A, n);
        memcpy(A, T4, sizeof(double) * nn);
    }
}

void cpu_orth_expm_fwd(void *P_, const void *M_, void *work, int H, int n) {
    (void)work;
    real *P = P_;
    const real *M = M_;
    size_t nn = (size_t)n * n;
#pragma omp parallel for schedule(static) if (H > 1)
    for (int h = 0; h < H; h++) {
        double *buf = rt_malloc(sizeof(double) * 6 * nn), *X = buf, *A = buf + nn;
        const real *m = M + h * nn;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                X[(size_t)i * n + j] = (double)m[(size_t)i * n + j] - (double)m[(size_t)j * n + i];
        expm_pair(A, NULL, X, NULL, n, buf + 2 * nn);
        for (size_t i = 0; i < nn; i++) P[h * nn + i] = (real)A[i];
        rt_free(buf);
    }
}

void cpu_orth_expm_bwd(void *dM_, const void *dP_, const void *M_, void *work, int H, int n) {
    (void)work;
    real *dM = dM_;
    const real *dP = dP_, *M = M_;
    size_t nn = (size_t)n * n;
#pragma omp parallel for schedule(static) if (H > 1)
    for (int h = 0; h < H; h++) {
        double *buf = rt_malloc(sizeof(double) * 8 * nn), *X = buf, *E = buf + nn;
        double *A = buf + 2 * nn, *L = buf + 3 * nn;
        const real *m = M + h * nn;
        /* X = S^T = M^T - M */
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                X[(size_t)i * n + j] = (double)m[(size_t)j * n + i] - (double)m[(size_t)i * n + j];
        for (size_t i = 0; i < nn; i++) E[i] = (double)dP[h * nn + i];
        expm_pair(A, L, X, E, n, buf + 4 * nn);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                dM[h * nn + (size_t)i * n + j] +=
                    (real)(L[(size_t)i * n + j] - L[(size_t)j * n + i]);
        rt_free(buf);
    }
}
