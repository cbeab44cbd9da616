// Every operation of the CUDA backend, with the signatures of the Backend table
// (src/backend.h documents each). One file per family of kernels implements them.
#pragma once

#include "backend.h"

// The compute ops of the Backend table, each implemented by cuda_<op> below (the memory,
// collective and profiling fields are the backend's own, backend_cuda.cu).
#define CUDA_BACKEND_OPS(X)                                                                 \
    X(to_act) X(matmul_fwd) X(matmul_bwd) X(embedding_fwd) X(embedding_bwd) X(scatter_rows) \
    X(rmsnorm_fwd) X(add_rmsnorm_fwd) X(rmsnorm_bwd) X(l2norm_fwd) X(l2norm_bwd)            \
    X(gate_mul_fwd) X(gate_mul_bwd) X(silu_fwd) X(silu_bwd) X(conv_fwd) X(conv_bwd)         \
    X(shift_fwd) X(shift_bwd) X(revcumsum) X(rope_angles) X(rotate_fwd) X(rotate_bwd)       \
    X(selrope_fwd) X(selrope_bwd) X(weightnorm_fwd) X(weightnorm_bwd) X(head_matmul_fwd)    \
    X(head_matmul_bwd) X(logsigmoid_fwd) X(logsigmoid_bwd) X(gdn_gates_fwd)                 \
    X(gdn_gates_bwd) X(gla_fwd) X(gla_bwd) X(gdn_fwd) X(gdn_bwd) X(fox_fwd) X(fox_bwd)      \
    X(cross_entropy) X(token_logprobs) X(sumsq) X(scale) X(adamw)

// gemm.cu: cuBLASLt, bf16 in, fp32 accumulate
void cuda_matmul_fwd(void *out, const void *x, const void *w, const void *bias, int M, int N, int K);
void cuda_matmul_bwd(void *dx, void *dw, void *dbias, const void *dout, const void *x,
                     const void *w, int M, int N, int K, int accumulate);
void cuda_head_matmul_fwd(void *out, const void *x, const void *w, int64_t N, int H, int Din, int P);
void cuda_head_matmul_bwd(void *dx, void *dw, const void *dout, const void *x, const void *w,
                          int64_t N, int H, int Din, int P, int accumulate);

// elementwise.cu
void cuda_to_act(void *dst, const void *src, int64_t n);
void cuda_embedding_fwd(void *out, const int32_t *tok, const void *E, int64_t n, int C);
void cuda_embedding_bwd(void *dE, const int32_t *tok, const void *dout, int64_t n, int C);
void cuda_scatter_rows(void *out, const int32_t *rows, const void *src, int64_t n, int C);
void cuda_gate_mul_fwd(void *out, const void *x, const void *g, int64_t n, Activation act);
void cuda_gate_mul_bwd(void *dx, void *dg, const void *dout, const void *x, const void *g,
                       int64_t n, Activation act);
void cuda_silu_fwd(void *y, const void *x, int64_t n);
void cuda_silu_bwd(void *dx, const void *dy, const void *x, int64_t n);
void cuda_logsigmoid_fwd(void *y, const void *x, int64_t n, double normalizer);
void cuda_logsigmoid_bwd(void *dx, const void *dy, const void *x, int64_t n, double normalizer);
void cuda_gdn_gates_fwd(void *beta, void *g, const void *b_raw, const void *a_raw,
                        const void *A_log, const void *dt_bias, int64_t N, int H);
void cuda_gdn_gates_bwd(void *db_raw, void *da_raw, void *dA_log, void *ddt_bias,
                        const void *dbeta, const void *dg, const void *b_raw, const void *a_raw,
                        const void *A_log, const void *dt_bias, int64_t N, int H);

// norm.cu
void cuda_rmsnorm_fwd(void *y, void *rstd, const void *x, const void *w, int64_t N, int G, int C,
                      int w_per_group, double eps);
void cuda_add_rmsnorm_fwd(void *h, void *y, void *rstd, const void *a, const void *b,
                          const void *w, int64_t N, int C, double eps);
void cuda_rmsnorm_bwd(void *dx, void *dw, const void *dy, const void *x, const void *w,
                      const void *rstd, int64_t N, int G, int C, int w_per_group, int accumulate);
void cuda_l2norm_fwd(void *y, void *rnorm, const void *x, int64_t N, int G, int D, double eps);
void cuda_l2norm_bwd(void *dx, const void *dy, const void *y, const void *rnorm, int64_t N, int G,
                     int D, int accumulate);

// timemix.cu: short conv, FoX shift, reverse cumulative sum
void cuda_conv_fwd(void *y, const void *x, const void *w, const Seqs *s, int C, Activation act);
void cuda_conv_bwd(void *dx, void *dw, const void *dy, const void *x, const void *w,
                   const Seqs *s, int C, Activation act);
void cuda_shift_fwd(void *y, const void *x, const void *a_logit, const Seqs *s, int H, int D);
void cuda_shift_bwd(void *dx, void *da_logit, const void *dy, const void *x, const void *a_logit,
                    const Seqs *s, int H, int D);
void cuda_revcumsum(void *y, const void *x, const Seqs *s, int C);

// rotary.cu: RoPE, the rotation, the Selective RoPE weight norm
void cuda_rope_angles(void *angle, const Seqs *s, int D, double theta);
void cuda_rotate_fwd(void *y, const void *x, const void *angle, int64_t N, int H, int D,
                     int per_head);
void cuda_rotate_bwd(void *dx, void *dangle, const void *dy, const void *x, const void *angle,
                     int64_t N, int H, int D, int per_head);
void cuda_weightnorm_fwd(void *wn, const void *w, const void *scale, int H, int Din, int P);
void cuda_weightnorm_bwd(void *dw, void *dscale, const void *dwn, const void *w,
                         const void *scale, int H, int Din, int P);

// selrope.cu: Selective RoPE steps 3-8 fused
// Shape limits of the kernels: 1 if the shape is supported, else 0 with the reason in why.
int cuda_selrope_supports(int H, int P, char *why, size_t why_size);
void cuda_selrope_fwd(void *qo, void *ko, void *Phi, const void *q, const void *k,
                      const void *phi_raw, const void *conv_w, Activation conv_act,
                      const void *bias, const void *gate_logit, const void *temp, const Seqs *s,
                      int H, int P);
void cuda_selrope_bwd(void *dq, void *dk, void *dphi_raw, void *dconv_w, void *dbias,
                      void *dgate_logit, void *dtemp, const void *dqo, const void *dko,
                      const void *q, const void *k, const void *phi_raw, const void *conv_w,
                      Activation conv_act, const void *bias, const void *gate_logit,
                      const void *temp, const void *Phi, const Seqs *s, int H, int P);

// gla.cu, gdn.cu, fox.cu: the mixers
// Shape limits of the kernels: 1 if the shape is supported, else 0 with the reason in why.
int cuda_gla_supports(int H, int K, int V, char *why, size_t why_size);
int cuda_gdn_supports(int H, int K, int V, char *why, size_t why_size);
int cuda_fox_supports(int H, int D, char *why, size_t why_size);
void cuda_gla_fwd(void *o, void *states, const void *q, const void *k, const void *v,
                  const void *g, const Seqs *s, int H, int K, int V, double scale);
void cuda_gla_bwd(void *dq, void *dk, void *dv, void *dg, const void *dout, const void *q,
                  const void *k, const void *v, const void *g, const void *states, const Seqs *s,
                  int H, int K, int V, double scale);
void cuda_gdn_fwd(void *o, void *states, const void *q, const void *k, const void *v,
                  const void *beta, const void *g, const Seqs *s, int H, int K, int V,
                  double scale);
void cuda_gdn_bwd(void *dq, void *dk, void *dv, void *dbeta, void *dg, const void *dout,
                  const void *q, const void *k, const void *v, const void *beta, const void *g,
                  const void *states, const Seqs *s, int H, int K, int V, double scale);
void cuda_fox_fwd(void *o, void *lse, const void *q, const void *k, const void *v,
                  const void *logf, const Seqs *s, int H, int D, double scale);
void cuda_fox_bwd(void *dq, void *dk, void *dv, void *dlogf, const void *dout, const void *q,
                  const void *k, const void *v, const void *logf, const void *o, const void *lse,
                  const Seqs *s, int H, int D, double scale);

// loss_optim.cu
double cuda_cross_entropy(void *logits, const int32_t *labels, int64_t N, int V, double grad_scale);
void cuda_token_logprobs(const void *logits, const int32_t *labels, int64_t N, int V, void *logp,
                         uint8_t *is_argmax);
double cuda_sumsq(const void *x, int64_t n);
void cuda_scale(void *x, int64_t n, double s);
void cuda_adamw(void *w, void *w_act, void *m, void *v, const void *g, int64_t n, double lr,
                double beta1, double beta2, double eps, double weight_decay, int64_t t);
