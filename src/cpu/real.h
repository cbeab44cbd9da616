/* The CPU backend's scalar type. The CPU path is fp32; the test suite also compiles the
 * whole core with ROTOR_REAL_DOUBLE so that finite-difference gradient checks run in
 * double precision. <tgmath.h> makes exp/log/sqrt/... follow the type of `real`. */
#ifndef ROTOR_REAL_H
#define ROTOR_REAL_H

#include <tgmath.h>

#ifdef ROTOR_REAL_DOUBLE
typedef double real;
#define REAL_NAME "f64"
#else
typedef float real;
#define REAL_NAME "f32"
#endif

static inline real sigmoidr(real x) { return (real)1 / ((real)1 + exp(-x)); }
/* log(sigmoid(x)) = -softplus(-x), computed without overflow. */
static inline real logsigmoidr(real x) { return x < 0 ? x - log1p(exp(x)) : -log1p(exp(-x)); }
static inline real softplusr(real x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major, through BLAS. */
void gemm(int trans_a, int trans_b, int M, int N, int K, real alpha, const real *A, int lda,
          const real *B, int ldb, real beta, real *C, int ldc);

#endif
