/* Forgetting Transformer mixer (SPEC §4; fla ForgettingAttention plus the FoX "Pro" options
 * of the forgetting-transformer repo: output gate, output norm, QK-norm, k/v shift). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "util/error.h"

#define QK_NORM_EPS 1e-5 /* SPEC §1: only the FoX QK-norm uses 1e-5 */

typedef struct {
    int q, k, v, f, fb, g, o, onorm, qnorm, knorm, kshift, vshift; /* parameter ids */
    const ModelConfig *cfg;
    PosEmb pe;
    /* saved activations; the q/k pipeline is q0,k1 -> [pe, qk-norm] in SPEC order -> qf,kf */
    void *q0, *k0, *v0, *k1, *v1, *ka, *va, *fr, *lf, *lse, *o_, *orstd, *on, *gp, *r;
    void *pe_qin, *pe_kin, *pe_qout, *pe_kout, *n_qin, *n_kin, *n_qout, *n_kout, *qrs, *krs;
    void *qf, *kf;
    /* scratch, mirroring the saved pipeline */
    void *dr, *don, *dgp, *do_, *dqf, *dkf, *dv1, *dlf, *dfr, *dka, *dva, *dk0, *dv0;
    void *pe_dqin, *pe_dkin, *pe_dqout, *pe_dkout, *n_dqin, *n_dkin, *n_dqout, *n_dkout;
    void *dq0, *dk1;
} FoX;

static void *fox_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm, int layer) {
    FoX *l = rt_calloc(1, sizeof(FoX));
    l->cfg = cfg;
    char p[64], name[PARAM_NAME_MAX];
    snprintf(p, sizeof p, "model.layers.%d.attn.", layer);
#define NAME(s) (snprintf(name, sizeof name, "%s%s", p, s), name)
    int d = cfg->hidden_size, H = dm->H;
    double std = cfg->init_std;
    l->q = declare_linear(t, NAME("q_proj.weight"), d, d, std);
    l->k = declare_linear(t, NAME("k_proj.weight"), d, d, std);
    l->v = declare_linear(t, NAME("v_proj.weight"), d, d, std);
    l->f = declare_linear(t, NAME("f_proj.weight"), H, d, std);
    l->fb = declare_vector(t, NAME("f_proj.bias"), H, 0);
    l->g = l->onorm = l->qnorm = l->knorm = l->kshift = l->vshift = -1;
    if (cfg->output_gate) l->g = declare_linear(t, NAME("g_proj.weight"), d, d, std);
    l->o = declare_linear(t, NAME("o_proj.weight"), d, d, std);
    if (cfg->output_norm) l->onorm = declare_vector(t, NAME("o_norm.weight"), d, 1);
    if (cfg->qk_norm) {
        l->qnorm = declare_vector(t, NAME("q_norm.weight"), d, 1);
        l->knorm = declare_vector(t, NAME("k_norm.weight"), d, 1);
    }
    if (cfg->k_shift) l->kshift = declare_linear(t, NAME("k_shift_proj.weight"), H, d, std);
    if (cfg->v_shift) l->vshift = declare_linear(t, NAME("v_shift_proj.weight"), H, d, std);
#undef NAME
    pe_declare(&l->pe, t, p, cfg, H, dm->dk);
    return l;
}

static void fox_destroy(void *layer, const Backend *be) {
    (void)be;
    rt_free(layer);
}

static void fox_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                     int64_t N) {
    FoX *l = layer;
    const ModelConfig *cfg = l->cfg;
    size_t A = be->act_size, F = be->f32_size;
    int64_t d = cfg->hidden_size, H = dm->H, nd = N * d;
    PEKind pk = cfg->pe.kind;
    l->q0 = carve(sv, A * nd);
    l->k0 = carve(sv, A * nd);
    l->v0 = carve(sv, A * nd);
    l->ka = cfg->k_shift ? carve(sv, A * N * H) : NULL;
    l->va = cfg->v_shift ? carve(sv, A * N * H) : NULL;
    l->k1 = cfg->k_shift ? carve(sv, A * nd) : l->k0;
    l->v1 = cfg->v_shift ? carve(sv, A * nd) : l->v0;
    l->fr = carve(sv, A * N * H);
    l->lf = carve(sv, F * N * H);
    /* forward order: Selective RoPE before QK-norm, RoPE after it (SPEC §4) */
    void *q = l->q0, *k = l->k1;
    if (pk == PE_SELECTIVE) {
        l->pe_qin = q, l->pe_kin = k;
        q = l->pe_qout = carve(sv, A * nd), k = l->pe_kout = carve(sv, A * nd);
    }
    if (cfg->qk_norm) {
        l->n_qin = q, l->n_kin = k;
        q = l->n_qout = carve(sv, A * nd), k = l->n_kout = carve(sv, A * nd);
        l->qrs = carve(sv, F * N * H), l->krs = carve(sv, F * N * H);
    }
    if (pk == PE_ROPE) {
        l->pe_qin = q, l->pe_kin = k;
        q = l->pe_qout = carve(sv, A * nd), k = l->pe_kout = carve(sv, A * nd);
    }
    l->qf = q, l->kf = k;
    l->o_ = carve(sv, A * nd);
    l->lse = carve(sv, F * N * H);
    l->on = cfg->output_norm ? carve(sv, A * nd) : l->o_;
    l->orstd = cfg->output_norm ? carve(sv, F * N * H) : NULL;
    l->gp = cfg->output_gate ? carve(sv, A * nd) : NULL;
    l->r = cfg->output_gate ? carve(sv, A * nd) : l->on;
    /* backward: the same stages in reverse */
    l->dr = carve(sc, A * nd);
    l->don = cfg->output_gate ? carve(sc, A * nd) : l->dr;
    l->dgp = cfg->output_gate ? carve(sc, A * nd) : NULL;
    l->do_ = cfg->output_norm ? carve(sc, A * nd) : l->don;
    void *dq = l->dqf = carve(sc, A * nd), *dk = l->dkf = carve(sc, A * nd);
    if (pk == PE_ROPE) {
        l->pe_dqout = dq, l->pe_dkout = dk;
        dq = l->pe_dqin = carve(sc, A * nd), dk = l->pe_dkin = carve(sc, A * nd);
    }
    if (cfg->qk_norm) {
        l->n_dqout = dq, l->n_dkout = dk;
        dq = l->n_dqin = carve(sc, A * nd), dk = l->n_dkin = carve(sc, A * nd);
    }
    if (pk == PE_SELECTIVE) {
        l->pe_dqout = dq, l->pe_dkout = dk;
        dq = l->pe_dqin = carve(sc, A * nd), dk = l->pe_dkin = carve(sc, A * nd);
    }
    l->dq0 = dq, l->dk1 = dk;
    l->dv1 = carve(sc, A * nd);
    l->dlf = carve(sc, F * N * H);
    l->dfr = carve(sc, A * N * H);
    l->dka = cfg->k_shift ? carve(sc, A * N * H) : NULL;
    l->dva = cfg->v_shift ? carve(sc, A * N * H) : NULL;
    l->dk0 = cfg->k_shift ? carve(sc, A * nd) : l->dk1;
    l->dv0 = cfg->v_shift ? carve(sc, A * nd) : l->dv1;
    pe_bind(&l->pe, be, sv, sc, N);
}

static void qk_norm_fwd(FoX *l, const Ctx *c) {
    const ModelDims *dm = c->dims;
    c->be->rmsnorm_fwd(l->n_qout, l->qrs, l->n_qin, W(c, l->qnorm), c->N, dm->H, dm->dk, 1, QK_NORM_EPS);
    c->be->rmsnorm_fwd(l->n_kout, l->krs, l->n_kin, W(c, l->knorm), c->N, dm->H, dm->dk, 1, QK_NORM_EPS);
}

static void qk_norm_bwd(FoX *l, const Ctx *c) {
    const ModelDims *dm = c->dims;
    c->be->rmsnorm_bwd(l->n_dqin, G(c, l->qnorm), l->n_dqout, l->n_qin, W(c, l->qnorm), l->qrs,
                       c->N, dm->H, dm->dk, 1, 0);
    c->be->rmsnorm_bwd(l->n_dkin, G(c, l->knorm), l->n_dkout, l->n_kin, W(c, l->knorm), l->krs,
                       c->N, dm->H, dm->dk, 1, 0);
}

static void fox_forward(void *layer, const Ctx *c, const void *x, void *y) {
    FoX *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, d = c->cfg->hidden_size, H = dm->H;
    PEKind pk = c->cfg->pe.kind;
    be->matmul_fwd(l->q0, x, W(c, l->q), NULL, N, d, d);
    be->matmul_fwd(l->k0, x, W(c, l->k), NULL, N, d, d);
    be->matmul_fwd(l->v0, x, W(c, l->v), NULL, N, d, d);
    if (l->kshift >= 0) {
        be->matmul_fwd(l->ka, x, W(c, l->kshift), NULL, N, H, d);
        be->shift_fwd(l->k1, l->k0, l->ka, c->seqs, H, dm->dk);
    }
    if (l->vshift >= 0) {
        be->matmul_fwd(l->va, x, W(c, l->vshift), NULL, N, H, d);
        be->shift_fwd(l->v1, l->v0, l->va, c->seqs, H, dm->dv);
    }
    be->matmul_fwd(l->fr, x, W(c, l->f), W(c, l->fb), N, H, d);
    be->logsigmoid_fwd(l->lf, l->fr, (int64_t)N * H, 1.0);
    if (pk == PE_SELECTIVE) pe_forward(&l->pe, c, x, l->pe_qin, l->pe_kin, l->pe_qout, l->pe_kout);
    if (l->qnorm >= 0) qk_norm_fwd(l, c);
    if (pk == PE_ROPE) pe_forward(&l->pe, c, x, l->pe_qin, l->pe_kin, l->pe_qout, l->pe_kout);
    be->fox_fwd(l->o_, l->lse, l->qf, l->kf, l->v1, l->lf, c->seqs, H, dm->dk,
                1.0 / sqrt((double)dm->dk));
    if (l->onorm >= 0)
        be->rmsnorm_fwd(l->on, l->orstd, l->o_, W(c, l->onorm), N, H, dm->dv, 1, c->cfg->norm_eps);
    if (l->g >= 0) {
        be->matmul_fwd(l->gp, x, W(c, l->g), NULL, N, d, d);
        be->gate_mul_fwd(l->r, l->on, l->gp, (int64_t)N * d, ACT_SIGMOID);
    }
    be->matmul_fwd(y, l->r, W(c, l->o), NULL, N, d, d);
}

static void fox_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    FoX *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, d = c->cfg->hidden_size, H = dm->H;
    PEKind pk = c->cfg->pe.kind;
    be->matmul_bwd(l->dr, G(c, l->o), NULL, dy, l->r, W(c, l->o), N, d, d, 0);
    int have_dx = 0;
    if (l->g >= 0) {
        be->gate_mul_bwd(l->don, l->dgp, l->dr, l->on, l->gp, (int64_t)N * d, ACT_SIGMOID);
        be->matmul_bwd(dx, G(c, l->g), NULL, l->dgp, x, W(c, l->g), N, d, d, 0);
        have_dx = 1;
    }
    if (l->onorm >= 0)
        be->rmsnorm_bwd(l->do_, G(c, l->onorm), l->don, l->o_, W(c, l->onorm), l->orstd, N, H, dm->dv, 1, 0);
    be->fox_bwd(l->dqf, l->dkf, l->dv1, l->dlf, l->do_, l->qf, l->kf, l->v1, l->lf, l->o_, l->lse,
                c->seqs, H, dm->dk, 1.0 / sqrt((double)dm->dk));
    be->logsigmoid_bwd(l->dfr, l->dlf, l->fr, (int64_t)N * H, 1.0);
    be->matmul_bwd(dx, G(c, l->f), G(c, l->fb), l->dfr, x, W(c, l->f), N, H, d, have_dx);
    if (pk == PE_ROPE)
        pe_backward(&l->pe, c, x, l->pe_qin, l->pe_kin, l->pe_dqout, l->pe_dkout, l->pe_dqin, l->pe_dkin, dx);
    if (l->qnorm >= 0) qk_norm_bwd(l, c);
    if (pk == PE_SELECTIVE)
        pe_backward(&l->pe, c, x, l->pe_qin, l->pe_kin, l->pe_dqout, l->pe_dkout, l->pe_dqin, l->pe_dkin, dx);
    if (l->kshift >= 0) {
        be->shift_bwd(l->dk0, l->dka, l->dk1, l->k0, l->ka, c->seqs, H, dm->dk);
        be->matmul_bwd(dx, G(c, l->kshift), NULL, l->dka, x, W(c, l->kshift), N, H, d, 1);
    }
    if (l->vshift >= 0) {
        be->shift_bwd(l->dv0, l->dva, l->dv1, l->v0, l->va, c->seqs, H, dm->dv);
        be->matmul_bwd(dx, G(c, l->vshift), NULL, l->dva, x, W(c, l->vshift), N, H, d, 1);
    }
    be->matmul_bwd(dx, G(c, l->q), NULL, l->dq0, x, W(c, l->q), N, d, d, 1);
    be->matmul_bwd(dx, G(c, l->k), NULL, l->dk0, x, W(c, l->k), N, d, d, 1);
    be->matmul_bwd(dx, G(c, l->v), NULL, l->dv0, x, W(c, l->v), N, d, d, 1);
}

const MixerImpl mixer_fox = {fox_create, fox_destroy, fox_bind, fox_forward, fox_backward};
