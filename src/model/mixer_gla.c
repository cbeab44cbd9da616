/* Gated linear attention mixer (SPEC §2, fla GatedLinearAttention). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    int q, k, v, g, gk0, gk1, gk1b, o, gnorm, qconv, kconv, vconv; /* parameter ids */
    int conv, R;
    PosEmb pe;
    GrowBuf states;
    /* saved activations */
    void *q0, *k0, *v0, *q1, *k1, *v1, *z1, *z, *lg, *qr, *kr, *o_, *rstd, *on, *gp, *r;
    /* scratch */
    void *dr, *don, *dgp, *do_, *dqr, *dkr, *dv1, *dlg, *dz, *dz1, *dq1, *dk1, *dq0, *dk0, *dv0;
} GLA;

static void *gla_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm, int layer) {
    GLA *l = rt_calloc(1, sizeof(GLA));
    char p[64], name[PARAM_NAME_MAX];
    snprintf(p, sizeof p, "model.layers.%d.attn.", layer);
#define NAME(s) (snprintf(name, sizeof name, "%s%s", p, s), name)
    int d = cfg->hidden_size, Kd = dm->key_dim, Vd = dm->value_dim, R = cfg->gate_low_rank_dim;
    double std = cfg->init_std;
    l->q = declare_linear(t, NAME("q_proj.weight"), Kd, d, std);
    l->k = declare_linear(t, NAME("k_proj.weight"), Kd, d, std);
    l->v = declare_linear(t, NAME("v_proj.weight"), Vd, d, std);
    l->g = declare_linear(t, NAME("g_proj.weight"), Vd, d, std);
    l->conv = cfg->short_conv;
    l->R = R;
    if (l->conv) {
        l->qconv = declare_conv(t, NAME("q_conv1d.weight"), Kd, std);
        l->kconv = declare_conv(t, NAME("k_conv1d.weight"), Kd, std);
        l->vconv = declare_conv(t, NAME("v_conv1d.weight"), Vd, std);
    }
    l->gk0 = declare_linear(t, NAME("gk_proj.0.weight"), R, d, std);
    l->gk1 = declare_linear(t, NAME("gk_proj.1.weight"), Kd, R, std);
    l->gk1b = declare_vector(t, NAME("gk_proj.1.bias"), Kd, 0);
    l->o = declare_linear(t, NAME("o_proj.weight"), d, Vd, std);
    l->gnorm = declare_vector(t, NAME("g_norm_swish_gate.weight"), dm->dv, 1);
#undef NAME
    pe_declare(&l->pe, t, p, cfg, dm->H, dm->dk);
    return l;
}

static void gla_destroy(void *layer, const Backend *be) {
    GLA *l = layer;
    growbuf_free(&l->states, be);
    rt_free(l);
}

static void gla_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                     int64_t N) {
    GLA *l = layer;
    size_t A = be->act_size, F = be->f32_size;
    int64_t Kd = dm->key_dim, Vd = dm->value_dim, R = l->R;
    int pe = l->pe.cfg.kind != PE_NOPE;
    l->q0 = carve(sv, A * N * Kd);
    l->k0 = carve(sv, A * N * Kd);
    l->v0 = carve(sv, A * N * Vd);
    l->q1 = l->conv ? carve(sv, A * N * Kd) : l->q0;
    l->k1 = l->conv ? carve(sv, A * N * Kd) : l->k0;
    l->v1 = l->conv ? carve(sv, A * N * Vd) : l->v0;
    l->z1 = carve(sv, A * N * R);
    l->z = carve(sv, A * N * Kd);
    l->lg = carve(sv, F * N * Kd);
    l->qr = pe ? carve(sv, A * N * Kd) : l->q1;
    l->kr = pe ? carve(sv, A * N * Kd) : l->k1;
    l->o_ = carve(sv, A * N * Vd);
    l->rstd = carve(sv, F * N * dm->H);
    l->on = carve(sv, A * N * Vd);
    l->gp = carve(sv, A * N * Vd);
    l->r = carve(sv, A * N * Vd);
    l->dr = carve(sc, A * N * Vd);
    l->don = carve(sc, A * N * Vd);
    l->dgp = carve(sc, A * N * Vd);
    l->do_ = carve(sc, A * N * Vd);
    l->dqr = carve(sc, A * N * Kd);
    l->dkr = carve(sc, A * N * Kd);
    l->dv1 = carve(sc, A * N * Vd);
    l->dlg = carve(sc, F * N * Kd);
    l->dz = carve(sc, A * N * Kd);
    l->dz1 = carve(sc, A * N * R);
    l->dq1 = pe ? carve(sc, A * N * Kd) : l->dqr;
    l->dk1 = pe ? carve(sc, A * N * Kd) : l->dkr;
    l->dq0 = l->conv ? carve(sc, A * N * Kd) : l->dq1;
    l->dk0 = l->conv ? carve(sc, A * N * Kd) : l->dk1;
    l->dv0 = l->conv ? carve(sc, A * N * Vd) : l->dv1;
    pe_bind(&l->pe, be, sv, sc, N);
}

static void gla_forward(void *layer, const Ctx *c, const void *x, void *y) {
    GLA *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, d = c->cfg->hidden_size, Kd = dm->key_dim, Vd = dm->value_dim, H = dm->H;
    be->matmul_fwd(l->q0, x, W(c, l->q), NULL, N, Kd, d);
    be->matmul_fwd(l->k0, x, W(c, l->k), NULL, N, Kd, d);
    be->matmul_fwd(l->v0, x, W(c, l->v), NULL, N, Vd, d);
    if (l->conv) {
        be->conv_fwd(l->q1, l->q0, W(c, l->qconv), c->seqs, Kd, ACT_SILU);
        be->conv_fwd(l->k1, l->k0, W(c, l->kconv), c->seqs, Kd, ACT_SILU);
        be->conv_fwd(l->v1, l->v0, W(c, l->vconv), c->seqs, Vd, ACT_SILU);
    }
    /* forget gate: log alpha = logsigmoid((x A) B + b) / 16 */
    be->matmul_fwd(l->z1, x, W(c, l->gk0), NULL, N, l->R, d);
    be->matmul_fwd(l->z, l->z1, W(c, l->gk1), W(c, l->gk1b), N, Kd, l->R);
    be->logsigmoid_fwd(l->lg, l->z, (int64_t)N * Kd, c->cfg->gate_logit_normalizer);
    if (l->pe.cfg.kind != PE_NOPE) pe_forward(&l->pe, c, x, l->q1, l->k1, l->qr, l->kr);
    void *states = growbuf_get(&l->states, be, F32(c, chunk_states_size(c->seqs, H, dm->dk, dm->dv)));
    be->gla_fwd(l->o_, states, l->qr, l->kr, l->v1, l->lg, c->seqs, H, dm->dk, dm->dv,
                1.0 / sqrt((double)dm->dk));
    /* readout: RMSNorm per head (shared weight) * swish(x W_g), then o_proj */
    be->matmul_fwd(l->gp, x, W(c, l->g), NULL, N, Vd, d);
    be->rmsnorm_fwd(l->on, l->rstd, l->o_, W(c, l->gnorm), N, H, dm->dv, 0, c->cfg->norm_eps);
    be->gate_mul_fwd(l->r, l->on, l->gp, (int64_t)N * Vd, ACT_SILU);
    be->matmul_fwd(y, l->r, W(c, l->o), NULL, N, d, Vd);
}

static void gla_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    GLA *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, d = c->cfg->hidden_size, Kd = dm->key_dim, Vd = dm->value_dim, H = dm->H;
    be->matmul_bwd(l->dr, G(c, l->o), NULL, dy, l->r, W(c, l->o), N, d, Vd, 0);
    be->gate_mul_bwd(l->don, l->dgp, l->dr, l->on, l->gp, (int64_t)N * Vd, ACT_SILU);
    be->rmsnorm_bwd(l->do_, G(c, l->gnorm), l->don, l->o_, W(c, l->gnorm), l->rstd, N, H, dm->dv, 0, 0);
    be->matmul_bwd(dx, G(c, l->g), NULL, l->dgp, x, W(c, l->g), N, Vd, d, 0);
    be->gla_bwd(l->dqr, l->dkr, l->dv1, l->dlg, l->do_, l->qr, l->kr, l->v1, l->lg, l->states.p,
                c->seqs, H, dm->dk, dm->dv, 1.0 / sqrt((double)dm->dk));
    be->logsigmoid_bwd(l->dz, l->dlg, l->z, (int64_t)N * Kd, c->cfg->gate_logit_normalizer);
    be->matmul_bwd(l->dz1, G(c, l->gk1), G(c, l->gk1b), l->dz, l->z1, W(c, l->gk1), N, Kd, l->R, 0);
    be->matmul_bwd(dx, G(c, l->gk0), NULL, l->dz1, x, W(c, l->gk0), N, l->R, d, 1);
    if (l->pe.cfg.kind != PE_NOPE)
        pe_backward(&l->pe, c, x, l->q1, l->k1, l->dqr, l->dkr, l->dq1, l->dk1, dx);
    if (l->conv) {
        be->conv_bwd(l->dq0, G(c, l->qconv), l->dq1, l->q0, W(c, l->qconv), c->seqs, Kd, ACT_SILU);
        be->conv_bwd(l->dk0, G(c, l->kconv), l->dk1, l->k0, W(c, l->kconv), c->seqs, Kd, ACT_SILU);
        be->conv_bwd(l->dv0, G(c, l->vconv), l->dv1, l->v0, W(c, l->vconv), c->seqs, Vd, ACT_SILU);
    }
    be->matmul_bwd(dx, G(c, l->q), NULL, l->dq0, x, W(c, l->q), N, Kd, d, 1);
    be->matmul_bwd(dx, G(c, l->k), NULL, l->dk0, x, W(c, l->k), N, Kd, d, 1);
    be->matmul_bwd(dx, G(c, l->v), NULL, l->dv0, x, W(c, l->v), N, Vd, d, 1);
}

const MixerImpl mixer_gla = {gla_create, gla_destroy, gla_bind, gla_forward, gla_backward};
