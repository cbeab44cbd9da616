/* Position embeddings applied to a mixer's q and k (docs/models.md §position-embeddings): RoPE from
 * the shared angle table, or Selective RoPE with its input-dependent angles. NoPE never reaches
 * here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "util/error.h"

/* The temperatures (docs/models.md §position-embeddings step 7) of D = init_arg key channels: rope:
 * temp_max theta^(-2j/D); tan: theta_j = linspace(0, theta pi, D/2), tau = tan(theta_j / 2) scaled
 * to temp_max. */
static void init_temperature(const ParamInitArgs *a) {
    const PEConfig *pc = &a->cfg->pe;
    int D = (int)a->p->init_arg, P = D / 2;
    for (int64_t i = 0; i < a->p->numel; i++) {
        if (pc->temp_type == TEMP_ROPE) {
            a->out[i] = pc->temp_max * pow(pc->temp_theta, -2.0 * (double)i / D);
        } else {
            double top = tan(pc->temp_theta * M_PI / 2);
            double th = P > 1 ? (double)i * pc->temp_theta * M_PI / (P - 1) : 0;
            a->out[i] = P > 1 ? pc->temp_max * tan(th / 2) / top : 0;
        }
    }
}

void pe_declare(PosEmb *pe, ParamTable *t, const char *prefix, const ModelConfig *cfg, int H,
                int D) {
    memset(pe, 0, sizeof(*pe));
    pe->cfg = cfg->pe;
    pe->H = H;
    pe->D = D;
    pe->P = D / 2;
    pe->d_model = cfg->hidden_size;
    pe->phi_w = pe->phi_scale = pe->phi_w1 = pe->phi_w2 = pe->conv_w = pe->bias = pe->gate_w =
        pe->gate_b = pe->temp = -1;
    if (cfg->pe.kind != PE_SELECTIVE) return;
    const PEConfig *pc = &cfg->pe;
    int d = cfg->hidden_size, Din = d / H, P = pe->P;
    double std = cfg->init_std;
    if (pc->phi_proj == PHI_WEIGHT_NORM) {
        /* W_h [d/H, P], columns normalised: its scale is irrelevant, uniform init. */
        int64_t shape[3] = {H, Din, P};
        pe->phi_w = params_add(t, pname(prefix, "rotary.phi_proj.weight").s, 3, shape, init_uniform,
                               sqrt(6.0 / P), 1, 1);
        int64_t sh[1] = {H};
        pe->phi_scale =
            params_add(t, pname(prefix, "rotary.phi_proj.scalar").s, 1, sh, init_ones, 0, 0, 1);
    } else {
        pe->phi_w1 =
            declare_linear(t, pname(prefix, "rotary.phi_proj.0.weight").s, pc->phi_rank, d, std);
        pe->phi_w2 = declare_linear(t, pname(prefix, "rotary.phi_proj.1.weight").s, (int64_t)H * P,
                                    pc->phi_rank, std);
    }
    if (!pc->skip_conv)
        pe->conv_w =
            declare_conv(t, pname(prefix, "rotary.phi_conv1d.weight").s, (int64_t)H * P, std);
    if (pc->bias) {
        int64_t shape[4] = {1, 1, H, P};
        pe->bias = params_add(t, pname(prefix, "rotary.phi_bias").s, 4, shape, init_zeros, 0, 0, 1);
    }
    if (pc->phase_gate) {
        pe->gate_w = declare_linear(t, pname(prefix, "rotary.phase_gate_proj.weight").s, H, d, std);
        pe->gate_b = declare_vector(t, pname(prefix, "rotary.phase_gate_proj.bias").s, H, 0);
    }
    int64_t tshape[4] = {1, 1, 1, P};
    pe->temp = params_add(t, pname(prefix, "rotary.temperature").s, 4, tshape, init_temperature, D,
                          0, pc->temp_grad);
}

enum { PE_LOW_RANK = 1, PE_WEIGHT_NORM = 2, PE_GATE = 4 }; /* features */
enum { W_D, W_H, W_RANK, W_HP, W_DP };                     /* widths */

static const BufDecl selective_bufs[] = {
    BUF(PosEmb, xh, BUF_SAVED, BUF_ACT, W_D),
    BUF(PosEmb, xh_rnorm, BUF_SAVED, BUF_F32, W_H),
    BUF_OPT(PosEmb, phi_lr, BUF_SAVED, BUF_ACT, W_RANK, PE_LOW_RANK),
    BUF(PosEmb, phi_raw, BUF_SAVED, BUF_ACT, W_HP),
    BUF_OPT(PosEmb, gate_logit, BUF_SAVED, BUF_ACT, W_H, PE_GATE),
    BUF(PosEmb, Phi, BUF_SAVED, BUF_F32, W_HP),
    BUF_FIXED(PosEmb, wn, BUF_SCRATCH, BUF_ACT, W_DP, PE_WEIGHT_NORM),
    BUF_FIXED(PosEmb, dwn, BUF_SCRATCH, BUF_F32, W_DP, PE_WEIGHT_NORM),
    BUF(PosEmb, dphi_raw, BUF_SCRATCH, BUF_ACT, W_HP),
    BUF_OPT(PosEmb, dgate, BUF_SCRATCH, BUF_ACT, W_H, PE_GATE),
    BUF(PosEmb, dxh, BUF_SCRATCH, BUF_ACT, W_D),
    BUF_OPT(PosEmb, dphi_lr, BUF_SCRATCH, BUF_ACT, W_RANK, PE_LOW_RANK),
};

void pe_bind(PosEmb *pe, const Backend *be, Carve *saved, Carve *scratch, int64_t N) {
    if (pe->cfg.kind != PE_SELECTIVE) return;
    int low_rank = pe->cfg.phi_proj == PHI_LOW_RANK;
    int64_t widths[] = {[W_D] = pe->d_model,
                        [W_H] = pe->H,
                        [W_RANK] = pe->cfg.phi_rank,
                        [W_HP] = (int64_t)pe->H * pe->P,
                        [W_DP] = (int64_t)pe->d_model * pe->P};
    unsigned f = (low_rank ? PE_LOW_RANK : PE_WEIGHT_NORM) | (pe->cfg.phase_gate ? PE_GATE : 0);
    acts_bind(pe, selective_bufs, BUF_COUNT(selective_bufs), widths, f, be, saved, scratch, N);
}

enum { W_SP, W_STAIL }; /* state widths */

static const BufDecl selective_state[] = {
    BUF(PosEmb, Phi_s, BUF_SAVED, BUF_F32, W_SP),
    BUF(PosEmb, tail_s, BUF_SAVED, BUF_ACT, W_STAIL),
};

void pe_bind_state(PosEmb *pe, const Backend *be, Carve *state, int64_t rows) {
    if (pe->cfg.kind != PE_SELECTIVE) return; /* RoPE: the positions are the rows' lengths */
    int64_t HP = (int64_t)pe->H * pe->P;
    int64_t widths[] = {[W_SP] = HP, [W_STAIL] = 3 * HP};
    acts_bind(pe, selective_state, BUF_COUNT(selective_state), widths, 0, be, state, state, rows);
}

static const void *opt_w(const Ctx *c, int idx) { return idx >= 0 ? W(c, idx) : NULL; }
static void *opt_g(const Ctx *c, int idx) {
    return idx >= 0 && c->params->p[idx].trainable ? G(c, idx) : NULL;
}
/* skip_conv's first difference has no activation */
static Activation conv_act(const PosEmb *pe) {
    return pe->cfg.skip_conv ? ACT_NONE : pe->cfg.conv_act;
}

/* The fused Selective RoPE op's arguments (docs/models.md §position-embeddings steps 3-8) but its
 * outputs: the segments, sizes, q and k, phi_raw and the parameters, and Phi. */
static SelRopeArgs selrope_args(const PosEmb *pe, const Ctx *c, const void *q, const void *k) {
    return (SelRopeArgs){.s = c->seqs,
                         .H = pe->H,
                         .P = pe->P,
                         .q = q,
                         .k = k,
                         .phi_raw = pe->phi_raw,
                         .conv_w = opt_w(c, pe->conv_w),
                         .conv_act = conv_act(pe),
                         .bias = opt_w(c, pe->bias),
                         .gate_logit = pe->gate_logit,
                         .temp = WM(c, pe->temp),
                         .Phi = pe->Phi};
}
void pe_forward(PosEmb *pe, const Ctx *c, const void *x, const void *q, const void *k, void *qo,
                void *ko) {
    const Backend *be = c->be;
    int64_t N = c->N;
    int H = pe->H, D = pe->D, P = pe->P, d = pe->d_model;
    if (pe->cfg.kind == PE_ROPE) {
        be->rotate_fwd(qo, q, c->rope_angle, N, H, D, 0);
        be->rotate_fwd(ko, k, c->rope_angle, N, H, D, 0);
        return;
    }
    RT_ASSERT(pe->cfg.kind == PE_SELECTIVE);
    /* 1. x^ = per-head L2-normalised slices of the mixer input */
    be->l2norm_fwd(pe->xh, pe->xh_rnorm, x, N, H, d / H, 1e-6);
    /* 2. angle increments phi */
    if (pe->cfg.phi_proj == PHI_WEIGHT_NORM) {
        be->weightnorm_fwd(pe->wn, W(c, pe->phi_w), W(c, pe->phi_scale), H, d / H, P);
        be->head_matmul_fwd(pe->phi_raw, pe->xh, pe->wn, N, H, d / H, P);
    } else {
        be->matmul_fwd(pe->phi_lr, pe->xh, W(c, pe->phi_w1), NULL, (int)N, pe->cfg.phi_rank, d);
        be->matmul_fwd(pe->phi_raw, pe->phi_lr, W(c, pe->phi_w2), NULL, (int)N, H * P,
                       pe->cfg.phi_rank);
    }
    /* 5. phase gate logits */
    if (pe->cfg.phase_gate)
        be->matmul_fwd(pe->gate_logit, pe->xh, W(c, pe->gate_w), W(c, pe->gate_b), (int)N, H, d);
    /* 3-8. short conv (or first difference with skip_conv), bias, gate, cumsum, rotation;
     * a decoding step from each row's angle sum and phi_raw tail instead */
    SelRopeArgs a = selrope_args(pe, c, q, k);
    a.qo = qo, a.ko = ko;
    if (c->mode == PASS_STEP) {
        a.Phi = pe->Phi_s;
        a.tail = pe->tail_s;
        be->selrope_step(&a);
        return;
    }
    be->selrope_fwd(&a);
    if (c->mode == PASS_PREFILL) {
        be->segment_tail(pe->Phi_s, pe->Phi, c->seqs, H * P, 1, 1);
        be->segment_tail(pe->tail_s, pe->phi_raw, c->seqs, H * P, 3, 0);
    }
}

int pe_backward(PosEmb *pe, const Ctx *c, const void *x, const void *q, const void *k,
                const void *dqo, const void *dko, void *dq, void *dk, void *dx, int accumulate) {
    const Backend *be = c->be;
    int64_t N = c->N;
    int H = pe->H, D = pe->D, P = pe->P, d = pe->d_model;
    if (pe->cfg.kind == PE_ROPE) {
        be->rotate_bwd(dq, NULL, dqo, q, c->rope_angle, N, H, D, 0);
        be->rotate_bwd(dk, NULL, dko, k, c->rope_angle, N, H, D, 0);
        return accumulate;
    }
    be->selrope_bwd(&(SelRopeGrads){.a = selrope_args(pe, c, q, k),
                                    .dqo = dqo,
                                    .dko = dko,
                                    .dq = dq,
                                    .dk = dk,
                                    .dphi_raw = pe->dphi_raw,
                                    .dconv_w = opt_g(c, pe->conv_w),
                                    .dbias = opt_g(c, pe->bias),
                                    .dgate_logit = pe->dgate,
                                    .dtemp = opt_g(c, pe->temp)});
    int have_dxh = 0;
    if (pe->cfg.phase_gate) {
        be->matmul_bwd(pe->dxh, G(c, pe->gate_w), G(c, pe->gate_b), pe->dgate, pe->xh,
                       W(c, pe->gate_w), (int)N, H, d, 0);
        have_dxh = 1;
    }
    if (pe->cfg.phi_proj == PHI_WEIGHT_NORM) {
        be->weightnorm_fwd(pe->wn, W(c, pe->phi_w), W(c, pe->phi_scale), H, d / H, P);
        be->zero(pe->dwn, (size_t)d * P * be->f32_size);
        be->head_matmul_bwd(pe->dxh, pe->dwn, pe->dphi_raw, pe->xh, pe->wn, N, H, d / H, P,
                            have_dxh);
        be->weightnorm_bwd(G(c, pe->phi_w), G(c, pe->phi_scale), pe->dwn, W(c, pe->phi_w),
                           W(c, pe->phi_scale), H, d / H, P);
    } else {
        int r = pe->cfg.phi_rank;
        be->matmul_bwd(pe->dphi_lr, G(c, pe->phi_w2), NULL, pe->dphi_raw, pe->phi_lr,
                       W(c, pe->phi_w2), (int)N, H * P, r, 0);
        be->matmul_bwd(pe->dxh, G(c, pe->phi_w1), NULL, pe->dphi_lr, pe->xh, W(c, pe->phi_w1),
                       (int)N, r, d, have_dxh);
    }
    be->l2norm_bwd(dx, pe->dxh, pe->xh, pe->xh_rnorm, N, H, d / H, accumulate);
    return 1;
}
