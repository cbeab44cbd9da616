/* The CPU reference of every backend operation (see src/backend.h for the contracts).
 * These are plain C with OpenMP and BLAS; the CUDA kernels are tested against them. */
#ifndef ROTOR_CPU_OPS_H
#define ROTOR_CPU_OPS_H

#include "backend.h"
#include "cpu/real.h"

void cpu_matmul_fwd(void *out, const void *x, const void *w, const void *bias, int M, int N,
                    int K);
void cpu_matmul_bwd(void *dx, void *dw, void *dbias, const void *dout, const void *x,
                    const void *w, int M, int N, int K, int accumulate);
void cpu_add(void *out, const void *a, const void *b, int64_t n);
void cpu_embedding_fwd(void *out, const int32_t *tok, const void *E, int64_t n, int C);
void cpu_embedding_bwd(void *dE, const int32_t *tok, const void *dout, int64_t n, int C);
void cpu_scatter_rows(void *out, const int32_t *rows, const void *src, int64_t n, int C);

void cpu_rmsnorm_fwd(void *y, void *rstd, const void *x, const void *w, int64_t N, int G, int C,
                     int w_per_group, double eps);
void cpu_add_rmsnorm_fwd(void *h, void *y, void *rstd, const void *a, const void *b,
                         const void *w, int64_t N, int C, double eps);
void cpu_rmsnorm_bwd(void *dx, void *dw, const void *dy, const void *x, const void *w,
                     const void *rstd, int64_t N, int G, int C, int w_per_group, int accumulate);
void cpu_l2norm_fwd(void *y, void *rnorm, const void *x, int64_t N, int G, int D, double eps);
void cpu_l2norm_bwd(void *dx, const void *dy, const void *y, const void *rnorm, int64_t N, int G,
                    int D, int accumulate);

void cpu_gate_mul_fwd(void *out, const void *x, const void *g, int64_t n, Activation act);
void cpu_gate_mul_bwd(void *dx, void *dg, const void *dout, const void *x, const void *g,
                      int64_t n, Activation act);
void cpu_silu_fwd(void *y, const void *x, int64_t n);
void cpu_silu_bwd(void *dx, const void *dy, const void *x, int64_t n);
void cpu_logsigmoid_fwd(void *y, const void *x, int64_t n, double normalizer);
void cpu_logsigmoid_bwd(void *dx, const void *dy, const void *x, int64_t n, double normalizer);
void cpu_gdn_gates_fwd(void *beta, void *g, const void *b_raw, const void *a_raw,
                       const void *A_log, const void *dt_bias, int64_t N, int H);
void cpu_gdn_gates_bwd(void *db_raw, void *da_raw, void *dA_log, void *ddt_bias,
                       const void *dbeta, const void *dg, const void *b_raw, const void *a_raw,
                       const void *A_log, const void *dt_bias, int64_t N, int H);

void cpu_conv_fwd(void *y, const void *x, const void *w, const Seqs *s, int C, Activation act);
void cpu_conv_bwd(void *dx, void *dw, const void *dy, const void *x, const void *w,
                  const Seqs *s, int C, Activation act);
void cpu_shift_fwd(void *y, const void *x, const void *a_logit, const Seqs *s, int H, int D);
void cpu_shift_bwd(void *dx, void *da_logit, const void *dy, const void *x, const void *a_logit,
                   const Seqs *s, int H, int D);
void cpu_revcumsum(void *y, const void *x, const Seqs *s, int C);

void cpu_rope_angles(void *angle, const Seqs *s, int D, double theta);
void cpu_rotate_fwd(void *y, const void *x, const void *angle, int64_t N, int H, int D,
                    int per_head);
void cpu_rotate_bwd(void *dx, void *dangle, const void *dy, const void *x, const void *angle,
                    int64_t N, int H, int D, int per_head);
/* The Selective RoPE angle scan (SPEC §5 steps 4-7), a piece of cpu_selrope_fwd/bwd:
 * phi' = (phi + exp(bias)) * sigmoid(gate_logit), Phi [f32] = its cumsum over each segment,
 * angle = temp[j] * Phi. The backward consumes dangle [f32] as scratch and gives dphi
 * (overwrite), dbias (+=), dgate_logit (overwrite), dtemp (+=), each skipped when NULL. */
void cpu_selrope_angles_fwd(void *angle, void *Phi, const void *phi, const void *bias,
                            const void *gate_logit, const void *temp, const Seqs *s, int H,
                            int P);
void cpu_selrope_angles_bwd(void *dphi, void *dbias, void *dgate_logit, void *dtemp,
                            void *dangle, const void *phi, const void *bias,
                            const void *gate_logit, const void *temp, const void *Phi,
                            const Seqs *s, int H, int P);
void cpu_selrope_fwd(void *qo, void *ko, void *Phi, const void *q, const void *k,
                     const void *phi_raw, const void *conv_w, Activation conv_act,
                     const void *bias, const void *gate_logit, const void *temp, const Seqs *s,
                     int H, int P);
void cpu_selrope_bwd(void *dq, void *dk, void *dphi_raw, void *dconv_w, void *dbias,
                     void *dgate_logit, void *dtemp, const void *dqo, const void *dko,
                     const void *q, const void *k, const void *phi_raw, const void *conv_w,
                     Activation conv_act, const void *bias, const void *gate_logit,
                     const void *temp, const void *Phi, const Seqs *s, int H, int P);
void cpu_weightnorm_fwd(void *wn, const void *w, const void *scale, int H, int Din, int P);
void cpu_weightnorm_bwd(void *dw, void *dscale, const void *dwn, const void *w,
                        const void *scale, int H, int Din, int P);
void cpu_head_matmul_fwd(void *out, const void *x, const void *w, int64_t N, int H, int Din,
                         int P);
void cpu_head_matmul_bwd(void *dx, void *dw, const void *dout, const void *x, const void *w,
                         int64_t N, int H, int Din, int P, int accumulate);

void cpu_gla_fwd(void *o, void *states, const void *q, const void *k, const void *v,
                 const void *g, const Seqs *s, int H, int K, int V, double scale);
void cpu_gla_bwd(void *dq, void *dk, void *dv, void *dg, const void *dout, const void *q,
                 const void *k, const void *v, const void *g, const void *states, const Seqs *s,
                 int H, int K, int V, double scale);
void cpu_gdn_fwd(void *o, void *states, const void *q, const void *k, const void *v,
                 const void *beta, const void *g, const Seqs *s, int H, int K, int V,
                 double scale);
void cpu_gdn_bwd(void *dq, void *dk, void *dv, void *dbeta, void *dg, const void *dout,
                 const void *q, const void *k, const void *v, const void *beta, const void *g,
                 const void *states, const Seqs *s, int H, int K, int V, double scale);
void cpu_fox_fwd(void *o, void *lse, const void *q, const void *k, const void *v,
                 const void *logf, const Seqs *s, int H, int D, double scale);
void cpu_fox_bwd(void *dq, void *dk, void *dv, void *dlogf, const void *dout, const void *q,
                 const void *k, const void *v, const void *logf, const void *o, const void *lse,
                 const Seqs *s, int H, int D, double scale);

double cpu_cross_entropy(void *logits, const int32_t *labels, int64_t N, int V,
                         double grad_scale);
void cpu_token_logprobs(const void *logits, const int32_t *labels, int64_t N, int V, void *logp,
                        uint8_t *is_argmax);
double cpu_sumsq(const void *x, int64_t n);
void cpu_scale(void *x, int64_t n, double s);
void cpu_adamw(void *w, void *w_act, void *m, void *v, const void *g, int64_t n, double lr,
               double beta1, double beta2, double eps, double weight_decay, int64_t t);

/* Chunk numbering of the linear-attention kernels: chunks of all segments are numbered in
 * order, and the state block of (segment seg, its chunk c, head h) starts at
 * ((bases[seg] + c) * H + h) * K * V in `states`. Returns bases[0..nseg] (bases[nseg] =
 * total chunks), malloc'd. */
int64_t *chunk_bases(const Seqs *s);

#endif
