/* GPU kernel tests: every case runs one Backend op on the CPU backend (fp32, the
 * reference) and on the CUDA backend with the same inputs, and compares the outputs.
 *
 * Inputs are drawn in fp32 and rounded to bf16 first, so both backends see exactly the
 * same numbers; the CPU then computes in fp32 and the GPU in its mixed precision. Errors
 * are relative to the largest reference value: max|gpu - cpu| / max(max|cpu|, 1e-6).
 * Tolerances are stated per case: bf16 outputs carry up to 2^-8 relative rounding, longer
 * chains of bf16 products more. Without a GPU the program prints "skipped: no GPU" and
 * exits 77 (ctest's skip code). */
#ifndef ROTOR_GPU_TEST_H
#define ROTOR_GPU_TEST_H

#include <stdint.h>

#include "../harness.h"
#include "backend.h"

extern const Backend *gt_cpu, *gt_gpu;

/* Host fp32 arrays whose values are exactly representable in bf16. Freed by gt_reset. */
float *gt_rand(int64_t n, double lo, double hi);
float *gt_randn(int64_t n, double std);
float *gt_copy(const float *x, int64_t n);
/* Each row of D values L2-normalised (as the model does before the delta rule), then rounded
 * to bf16. */
void gt_l2norm_rows(float *x, int64_t rows, int D);
float *gt_zeros(int64_t n);
/* Start values of a += output, uniform in +-2^k with 2^k >= max|grad| (the CPU increment
 * from zero), so that an op that overwrites instead of adding fails the comparison. */
float *gt_prefill(const float *grad, int64_t n);
/* Expected += result: a + b elementwise. */
float *gt_plus(const float *a, const float *b, int64_t n);
/* Device copies: [act] (bf16) and [f32]; int32 indices. Freed by gt_reset. */
void *gt_act(const float *host, int64_t n);
void *gt_f32(const float *host, int64_t n);
int32_t *gt_i32(const int32_t *host, int64_t n);
/* Device outputs that the op must overwrite: values in +-1000. */
void *gt_garbage_act(int64_t n);
void *gt_garbage_f32(int64_t n);
/* Host fp32 copies of device buffers. Freed by gt_reset. */
float *gt_get_act(const void *dev, int64_t n);
float *gt_get_f32(const void *dev, int64_t n);
/* CPU-backend buffers are plain host arrays: gt_cpu ops take the float* directly. */

/* Segments from lengths, with host arrays (for the CPU op) and device mirrors (for the
 * GPU op) in the same Seqs. Freed by gt_reset. */
Seqs *gt_seqs(const int *lens, int nseg);
/* A decoding step's segments: B rows of one token each at positions pos[0, B). */
Seqs *gt_step_seqs(const int32_t *pos, int B);

/* A segment layout of a case: its name and segment lengths. */
typedef struct {
    const char *name;
    int nseg;
    int lens[8];
} GtLayout;

/* A case name formatted into a buffer that the next call reuses. */
const char *gt_name(const char *fmt, ...);

/* Records a failure (CHECK semantics) when the relative error exceeds tol, and prints
 * one line "  what: err=... tol=... ok|FAIL" either way (scripts/gpu_check.sh collects
 * them into its table). Returns the error. */
double gt_compare(const char *what, const float *gpu, const float *cpu, int64_t n, double tol);
/* Same for a host double (losses, norms): |gpu - cpu| / max(|cpu|, floor); floor is the
 * magnitude below which the error counts as absolute. */
double gt_compare_scalar(const char *what, double gpu, double cpu, double floor, double tol);

/* Small mode (ROTOR_GPU_TEST_SMALL=1, which scripts/gpu_check.sh sets under racecheck, where
 * every shared-memory access is checked and kernels run ~100x slower): the cases run only
 * the first two segment layouts of their table, a short one and the one with ragged chunk
 * tails, and skip their long-context cases; test_gpu_rnncells' recurrences take 6 steps,
 * test_gpu_train's models 2 training steps (their loss is not checked to fall) and
 * test_gpu_decode's models 3 decoding steps. Every kernel configuration (head sizes, tiles)
 * still runs. gt_layout_count(n) is n, or at most 2 in small mode. */
int gt_small(void);
int gt_layout_count(int n);

/* Frees everything the gt_* functions allocated; every test calls it at the end. */
void gt_reset(void);

/* main() of a GPU test program: picks the CUDA backend (or exits 77), runs the tests. */
int gt_main(const TestCase *tests, int n, int argc, char **argv);
#define GT_MAIN(tests)                                                                             \
    int main(int argc, char **argv) { return gt_main(tests, TH_COUNT(tests), argc, argv); }

#endif
