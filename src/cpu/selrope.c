/* Selective RoPE steps 3-8 (SPEC §5) as one operation: the plain reference of the fused CUDA
 * kernels, composed of the short conv, the angle scan and the per-head rotation. The
 * convolved increments and the angles are temporaries, recomputed by the backward. */
#include "cpu/cpu_ops.h"
#include "util/error.h"

void cpu_selrope_fwd(void *qo, void *ko, void *Phi, const void *q, const void *k,
                     const void *phi_raw, const void *conv_w, Activation conv_act,
                     const void *bias, const void *gate_logit, const void *temp, const Seqs *s,
                     int H, int P) {
    int64_t N = s->ntok, n = N * H * P;
    real *phi = rt_alloc_aligned(sizeof(real) * (size_t)n);
    real *angle = rt_alloc_aligned(sizeof(real) * (size_t)n);
    cpu_conv_fwd(phi, phi_raw, conv_w, s, H * P, conv_act);
    cpu_selrope_angles_fwd(angle, Phi, phi, bias, gate_logit, temp, s, H, P);
    cpu_rotate_fwd(qo, q, angle, N, H, 2 * P, 1);
    cpu_rotate_fwd(ko, k, angle, N, H, 2 * P, 1);
    rt_free(phi);
    rt_free(angle);
}

void cpu_selrope_bwd(void *dq, void *dk, void *dphi_raw, void *dconv_w, void *dbias,
                     void *dgate_logit, void *dtemp, const void *dqo, const void *dko,
                     const void *q, const void *k, const void *phi_raw, const void *conv_w,
                     Activation conv_act, const void *bias, const void *gate_logit,
                     const void *temp, const void *Phi_, const Seqs *s, int H, int P) {
    int64_t N = s->ntok, n = N * H * P;
    const real *Phi = Phi_, *tp = temp;
    real *angle = rt_alloc_aligned(sizeof(real) * (size_t)n);
    real *dangle = rt_calloc((size_t)n, sizeof(real));
    real *phi = rt_alloc_aligned(sizeof(real) * (size_t)n);
    real *dphi = rt_alloc_aligned(sizeof(real) * (size_t)n);
    /* the forward's angles: the same products temp[j] * Phi */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) angle[i] = tp[i % P] * Phi[i];
    cpu_rotate_bwd(dq, dangle, dqo, q, angle, N, H, 2 * P, 1);
    cpu_rotate_bwd(dk, dangle, dko, k, angle, N, H, 2 * P, 1);
    cpu_conv_fwd(phi, phi_raw, conv_w, s, H * P, conv_act);
    cpu_selrope_angles_bwd(dphi, bias ? dbias : NULL, gate_logit ? dgate_logit : NULL, dtemp,
                           dangle, phi, bias, gate_logit, temp, Phi, s, H, P);
    cpu_conv_bwd(dphi_raw, dconv_w, dphi, phi_raw, conv_w, s, H * P, conv_act);
    rt_free(angle);
    rt_free(dangle);
    rt_free(phi);
    rt_free(dphi);
}
