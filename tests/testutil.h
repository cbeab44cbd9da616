/* Shared helpers for the C tests: random buffers, segment layouts, gradient checks,
 * error norms. Works for the fp32 and the fp64 build (`real`). */
#ifndef ROTOR_TESTUTIL_H
#define ROTOR_TESTUTIL_H

#include <stdint.h>

#include "backend.h"
#include "config/run_config.h"
#include "cpu/real.h"
#include "model/model_config.h"
#include "util/rng.h"

real *tu_rand(Rng *r, int64_t n, double lo, double hi);
real *tu_randn(Rng *r, int64_t n, double std);
real *tu_zeros(int64_t n);
real *tu_copy(const real *x, int64_t n);
/* max |a-b| / max(max|b|, floor) */
double tu_rel_err(const real *a, const real *b, int64_t n, double floor);

/* A new directory under the test program's temporary directory (th_tmp_dir, removed with
 * it); rt_free the returned name. */
char *tu_temp_dir(void);

/* Writes a shard set into dir (created): shard i holds sizes[i] tokens in documents of 1..40
 * tokens (a document starts at stream position p with length 1 + 7p mod 40); the token at
 * stream position p is (first_token + p) mod 65000, so a window is known by its first token. */
void tu_write_shards(const char *dir, const char *tokenizer_sha, int64_t vocab,
                     const int64_t *sizes, int n, int64_t first_token);

/* Segments from a list of lengths (sum = ntok); owns its arrays. */
typedef struct {
    Seqs s;
    int64_t *cu;
    int32_t *pos;
} TestSeqs;
TestSeqs tu_seqs(const int *lens, int nseg);
void tu_seqs_free(TestSeqs *t);

/* Finite-difference check: for up to `samples` random entries of x (always including the
 * first and last), compares the fourth-order central difference of f with grad. Returns the max
 * relative error max|fd - g| / max(|g| scale, 1e-6) where scale = max |grad|. */
typedef double (*tu_loss_fn)(void *ctx);
double tu_gradcheck(tu_loss_fn f, void *ctx, real *x, const real *grad, int64_t n, int samples,
                    double h, Rng *r);

/* The sizes of a test model. */
typedef struct {
    int vocab, hidden, layers, heads;
} TuModelSize;

/* model_config_defaults with `mixer` and the sizes z. */
ModelConfig tu_model(MixerKind mixer, TuModelSize z);

/* The tests' tiny model of `mixer`: vocabulary 13, hidden 16, 2 heads, MLP 24, GDN head 8,
 * state 6 (RotRNN 8), gate rank 4, phi rank 3, init_std 0.3 (larger than 0.02 so that every path
 * carries signal). */
ModelConfig tu_tiny_model(MixerKind mixer, int num_layers);

/* c written as INI into a heap string (free()). */
char *tu_ini_text(const RunConfig *c);

/* sum_i w[i] * y[i] in double (the probe loss of op-level gradient checks). */
double tu_dot(const real *w, const real *y, int64_t n);

#endif
