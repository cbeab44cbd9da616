/* The CPU backend's scalar type. The CPU path is fp32; the test suite also compiles the
 * whole core with ROTOR_REAL_DOUBLE so that finite-difference gradient checks run in
 * double precision. <tgmath.h> makes exp/log/sqrt/... follow the type of `real`. */
#ifndef ROTOR_REAL_H
#define ROTOR_REAL_H

#include <tgmath.h>

/* glibc's libmvec has SIMD versions of expf/logf/...; glibc declares them only under
 * -ffast-math, which would also drop NaN/Inf semantics the trainer relies on. Declaring
 * them here lets GCC vectorise the fp32 loops that call exp (sigmoid, softmax, gates);
 * clang (the fuzz build) has no such attribute. */
#if !defined(ROTOR_REAL_DOUBLE) && defined(__x86_64__) && defined(__GLIBC__) &&                    \
    defined(__GNUC__) && !defined(__clang__)
__attribute__((__simd__("notinbranch"))) float expf(float);
__attribute__((__simd__("notinbranch"))) float logf(float);
__attribute__((__simd__("notinbranch"))) float log1pf(float);
__attribute__((__simd__("notinbranch"))) float sinf(float);
__attribute__((__simd__("notinbranch"))) float cosf(float);
#endif

#ifdef ROTOR_REAL_DOUBLE
typedef double real;
#define REAL_NAME "f64"
#else
typedef float real;
#define REAL_NAME "f32"
#endif

static inline real sigmoidr(real x) { return (real)1 / ((real)1 + exp(-x)); }
/* max without a libm call (the inputs are never NaN where it is used) */
static inline real maxr(real a, real b) { return a > b ? a : b; }
/* log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), without overflow and branch-free. */
static inline real logsigmoidr(real x) { return (x < 0 ? x : 0) - log1p(exp(-fabs(x))); }
static inline real softplusr(real x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

/* C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major, through BLAS. */
void gemm(int trans_a, int trans_b, int M, int N, int K, real alpha, const real *A, int lda,
          const real *B, int ldb, real beta, real *C, int ldc);

#endif
