/* Naive recurrent references of the mixers (FoX also without its gate; the LRU/RotRNN scan) (fla's
 * naive_recurrent_* style): token by token over the explicit state, forward and backpropagation
 * through time, computed in double whatever `real` is. Layouts as in src/backend.h. */
#ifndef ROTOR_NAIVE_H
#define ROTOR_NAIVE_H

#include "backend.h"
#include "cpu/real.h"

void naive_gla_fwd(real *o, const real *q, const real *k, const real *v, const real *g,
                   const Seqs *s, int H, int K, int V, double scale);
void naive_gla_bwd(real *dq, real *dk, real *dv, real *dg, const real *dout, const real *q,
                   const real *k, const real *v, const real *g, const Seqs *s, int H, int K, int V,
                   double scale);
void naive_gdn_fwd(real *o, const real *q, const real *k, const real *v, const real *beta,
                   const real *g, const Seqs *s, int H, int K, int V, double scale);
void naive_gdn_bwd(real *dq, real *dk, real *dv, real *dbeta, real *dg, const real *dout,
                   const real *q, const real *k, const real *v, const real *beta, const real *g,
                   const Seqs *s, int H, int K, int V, double scale);
/* FoX attention by its definition (docs/models.md §fox); logf NULL: no forget gate (the
 * Transformer), and naive_fox_bwd then leaves dlogf alone. */
void naive_fox_fwd(real *o, const real *q, const real *k, const real *v, const real *logf,
                   const Seqs *s, int H, int D, double scale);
void naive_fox_bwd(real *dq, real *dk, real *dv, real *dlogf, const real *dout, const real *q,
                   const real *k, const real *v, const real *logf, const Seqs *s, int H, int D,
                   double scale);

/* The complex diagonal recurrence of the LRU and RotRNN (docs/models.md §lru, §rotrnn):
 * h_t = exp(loga + i angle) h_{t-1} + x_t per complex channel, pairs (re, im) interleaved in
 * x, h [N, 2C], token by token; and its backpropagation through time (dx, dloga, dangle
 * overwrite). */
void naive_cscan_fwd(real *h, const real *x, const real *loga, const real *angle, const Seqs *s,
                     int C);
void naive_cscan_bwd(real *dx, real *dloga, real *dangle, const real *dh, const real *x,
                     const real *loga, const real *angle, const Seqs *s, int C);

#endif
