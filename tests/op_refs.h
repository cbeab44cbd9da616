/* The fp64 results of the op table (tests/op_table.h) that test_ops_grad --refs writes and
 * test_ops_backends reads: a binary file in the machine's byte order,
 *   "ROTOROPS" (8 bytes), u32 version (2), u32 number of cases, then per case in CASES order:
 *   u32 name length, the name's bytes, f64 the forward's returned scalar, u32 tensors, and per
 *   tensor in the build's order: i64 n, u8 has_v, u8 has_d, then n f32 each of
 *   v_in (if has_v), d_in (if has_d), v_out (if has_v), d_out (if has_d) (the fp64 results
 *   rounded to f32, far below the fp32 and bf16 backends' tolerances; read back as double).
 * v_in, d_in: the values and the gradient buffer (an output's probe, the pre-filled or garbage
 * gradient) before the forward; v_out, d_out: after the backward, d_out net of d_in for
 * accumulated gradients and divided by Spec.dscale. [i32] values are stored as f32 (exact below
 * 2^24). */
#ifndef ROTOR_OP_REFS_H
#define ROTOR_OP_REFS_H

#include <stdint.h>
#include <stdio.h>

#include "op_table.h"

typedef struct {
    int64_t n;
    int has_v, has_d;
    double *v_in, *d_in, *v_out, *d_out;
} RefTensor;

typedef struct {
    char name[64];
    double scalar;
    int nt;
    RefTensor t[MAX_TENSORS];
} RefCase;

void refs_write_header(FILE *f, int ncases);
void refs_write_case(FILE *f, const RefCase *rc);
/* The number of cases; dies on a file that is not a refs file. */
int refs_read_header(FILE *f, const char *path);
void refs_read_case(FILE *f, const char *path, RefCase *rc);
void refs_free_case(RefCase *rc);
/* Case c run forward and backward on the CPU backend in this build's precision (fp64 in
 * test_ops_grad, fp32 in test_ops_backends), its inputs and results kept in rc. */
void refs_from_cpu_run(const OpCase *c, RefCase *rc);

#endif
