/* Selective RoPE steps 3-8 (docs/models.md §position-embeddings) as one operation: the plain
 * reference of the fused CUDA kernels, composed of the short conv, the angle scan and the per-head
 * rotation. The convolved increments and the angles are temporaries, recomputed by the backward. */
#include "cpu/cpu_ops.h"
#include "util/error.h"

void cpu_selrope_fwd(const SelRopeArgs *a) {
    const Seqs *s = a->s;
    int H = a->H, P = a->P;
    int64_t N = s->ntok, n = N * H * P;
    real *phi = rt_alloc_aligned(sizeof(real) * (size_t)n);
    real *angle = rt_alloc_aligned(sizeof(real) * (size_t)n);
    cpu_conv_fwd(phi, a->phi_raw, a->conv_w, NULL, s, H * P, SHORT_CONV_TAPS, a->conv_act);
    cpu_selrope_angles_fwd(angle, a->Phi, phi, a->bias, a->gate_logit, a->temp, s, H, P);
    cpu_rotate_fwd(a->qo, a->q, angle, N, H, 2 * P, 1);
    cpu_rotate_fwd(a->ko, a->k, angle, N, H, 2 * P, 1);
    rt_free(phi);
    rt_free(angle);
}

void cpu_selrope_bwd(const SelRopeGrads *g) {
    const SelRopeArgs *a = &g->a;
    const Seqs *s = a->s;
    int H = a->H, P = a->P;
    int64_t N = s->ntok, n = N * H * P;
    const real *Phi = a->Phi, *tp = a->temp;
    real *angle = rt_alloc_aligned(sizeof(real) * (size_t)n);
    real *dangle = rt_calloc((size_t)n, sizeof(real));
    real *phi = rt_alloc_aligned(sizeof(real) * (size_t)n);
    real *dphi = rt_alloc_aligned(sizeof(real) * (size_t)n);
    /* the forward's angles: the same products temp[j] * Phi */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) angle[i] = tp[i % P] * Phi[i];
    cpu_rotate_bwd(g->dq, dangle, g->dqo, a->q, angle, N, H, 2 * P, 1);
    cpu_rotate_bwd(g->dk, dangle, g->dko, a->k, angle, N, H, 2 * P, 1);
    cpu_conv_fwd(phi, a->phi_raw, a->conv_w, NULL, s, H * P, SHORT_CONV_TAPS, a->conv_act);
    cpu_selrope_angles_bwd(dphi, a->bias ? g->dbias : NULL, a->gate_logit ? g->dgate_logit : NULL,
                           g->dtemp, dangle, phi, a->bias, a->gate_logit, a->temp, Phi, s, H, P);
    cpu_conv_bwd(g->dphi_raw, g->dconv_w, NULL, dphi, a->phi_raw, a->conv_w, NULL, s, H * P,
                 SHORT_CONV_TAPS, a->conv_act);
    rt_free(angle);
    rt_free(dangle);
    rt_free(phi);
    rt_free(dphi);
}
