/* Gated DeltaNet mixer (SPEC §3, fla GatedDeltaNet with use_gate). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    int q, k, v, a, b, A_log, dt_bias, g, o, onorm, qconv, kconv, vconv; /* parameter ids */
    int conv;
    PosEmb pe;
    GrowBuf states;
    /* saved activations */
    void *q0, *k0, *v0, *q1, *k1, *v1, *qr, *kr, *qn, *kn, *qrn, *krn, *braw, *araw, *beta, *gd;
    void *o_, *rstd, *on, *gp, *r;
    /* scratch */
    void *dr, *don, *dgp, *do_, *dqn, *dkn, *dv1, *dbeta, *dgd, *dbraw, *daraw, *dqr, *dkr;
    void *dq1, *dk1, *dq0, *dk0, *dv0;
} GDN;

static void *gdn_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm, int layer) {
    GDN *l = rt_calloc(1, sizeof(GDN));
    char p[64], name[PARAM_NAME_MAX];
    snprintf(p, sizeof p, "model.layers.%d.attn.", layer);
#define NAME(s) (snprintf(name, sizeof name, "%s%s", p, s), name)
    int d = cfg->hidden_size, Kd = dm->key_dim, Vd = dm->value_dim, H = dm->H;
    double std = cfg->init_std;
    l->q = declare_linear(t, NAME("q_proj.weight"), Kd, d, std);
    l->k = declare_linear(t, NAME("k_proj.weight"), Kd, d, std);
    l->v = declare_linear(t, NAME("v_proj.weight"), Vd, d, std);
    l->a = declare_linear(t, NAME("a_proj.weight"), H, d, std);
    l->b = declare_linear(t, NAME("b_proj.weight"), H, d, std);
    int64_t sh[1] = {H};
    l->A_log = params_add(t, NAME("A_log"), 1, sh, INIT_GDN_A_LOG, 0, 0, 1);
    l->dt_bias = params_add(t, NAME("dt_bias"), 1, sh, INIT_GDN_DT_BIAS, 0, 0, 1);
    l->conv = cfg->short_conv;
    if (l->conv) {
        l->qconv = declare_conv(t, NAME("q_conv1d.weight"), Kd, std);
        l->kconv = declare_conv(t, NAME("k_conv1d.weight"), Kd, std);
        l->vconv = declare_conv(t, NAME("v_conv1d.weight"), Vd, std);
    }
    l->g = declare_linear(t, NAME("g_proj.weight"), Vd, d, std);
    l->onorm = declare_vector(t, NAME("o_norm.weight"), dm->dv, 1);
    l->o = declare_linear(t, NAME("o_proj.weight"), d, Vd, std);
#undef NAME
    pe_declare(&l->pe, t, p, cfg, H, dm->dk);
    return l;
}

static void gdn_destroy(void *layer, const Backend *be) {
    GDN *l = layer;
    growbuf_free(&l->states, be);
    rt_free(l);
}

static void gdn_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                     int64_t N) {
    GDN *l = layer;
    size_t A = be->act_size, F = be->f32_size;
    int64_t Kd = dm->key_dim, Vd = dm->value_dim, H = dm->H;
    int pe = l->pe.cfg.kind != PE_NOPE;
    l->q0 = carve(sv, A * N * Kd);
    l->k0 = carve(sv, A * N * Kd);
    l->v0 = carve(sv, A * N * Vd);
    l->q1 = carve(sv, A * N * Kd);
    l->k1 = carve(sv, A * N * Kd);
    l->v1 = carve(sv, A * N * Vd);
    l->qr = pe ? carve(sv, A * N * Kd) : l->q1;
    l->kr = pe ? carve(sv, A * N * Kd) : l->k1;
    l->qn = carve(sv, A * N * Kd);
    l->kn = carve(sv, A * N * Kd);
    l->qrn = carve(sv, F * N * H);
    l->krn = carve(sv, F * N * H);
    l->braw = carve(sv, A * N * H);
    l->araw = carve(sv, A * N * H);
    l->beta = carve(sv, F * N * H);
    l->gd = carve(sv, F * N * H);
    l->o_ = carve(sv, A * N * Vd);
    l->rstd = carve(sv, F * N * H);
    l->on = carve(sv, A * N * Vd);
    l->gp = carve(sv, A * N * Vd);
    l->r = carve(sv, A * N * Vd);
    l->dr = carve(sc, A * N * Vd);
    l->don = carve(sc, A * N * Vd);
    l->dgp = carve(sc, A * N * Vd);
    l->do_ = carve(sc, A * N * Vd);
    l->dqn = carve(sc, A * N * Kd);
    l->dkn = carve(sc, A * N * Kd);
    l->dv1 = carve(sc, A * N * Vd);
    l->dbeta = carve(sc, F * N * H);
    l->dgd = carve(sc, F * N * H);
    l->dbraw = carve(sc, A * N * H);
    l->daraw = carve(sc, A * N * H);
    l->dqr = carve(sc, A * N * Kd);
    l->dkr = carve(sc, A * N * Kd);
    l->dq1 = pe ? carve(sc, A * N * Kd) : l->dqr;
    l->dk1 = pe ? carve(sc, A * N * Kd) : l->dkr;
    l->dq0 = carve(sc, A * N * Kd);
    l->dk0 = carve(sc, A * N * Kd);
    l->dv0 = carve(sc, A * N * Vd);
    pe_bind(&l->pe, be, sv, sc, N);
}

static void gdn_forward(void *layer, const Ctx *c, const void *x, void *y) {
    GDN *l = layer;
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
    } else {
        be->silu_fwd(l->q1, l->q0, (int64_t)N * Kd);
        be->silu_fwd(l->k1, l->k0, (int64_t)N * Kd);
        be->silu_fwd(l->v1, l->v0, (int64_t)N * Vd);
    }
    if (l->pe.cfg.kind != PE_NOPE) pe_forward(&l->pe, c, x, l->q1, l->k1, l->qr, l->kr);
    be->l2norm_fwd(l->qn, l->qrn, l->qr, N, H, dm->dk, 1e-6);
    be->l2norm_fwd(l->kn, l->krn, l->kr, N, H, dm->dk, 1e-6);
    be->matmul_fwd(l->braw, x, W(c, l->b), NULL, N, H, d);
    be->matmul_fwd(l->araw, x, W(c, l->a), NULL, N, H, d);
    be->gdn_gates_fwd(l->beta, l->gd, l->braw, l->araw, WM(c, l->A_log), WM(c, l->dt_bias), N, H);
    void *states = growbuf_get(&l->states, be, F32(c, chunk_states_size(c->seqs, H, dm->dk, dm->dv)));
    be->gdn_fwd(l->o_, states, l->qn, l->kn, l->v1, l->beta, l->gd, c->seqs, H, dm->dk, dm->dv,
                1.0 / sqrt((double)dm->dk));
    be->matmul_fwd(l->gp, x, W(c, l->g), NULL, N, Vd, d);
    be->rmsnorm_fwd(l->on, l->rstd, l->o_, W(c, l->onorm), N, H, dm->dv, 0, c->cfg->norm_eps);
    be->gate_mul_fwd(l->r, l->on, l->gp, (int64_t)N * Vd, ACT_SILU);
    be->matmul_fwd(y, l->r, W(c, l->o), NULL, N, d, Vd);
}

static void gdn_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    GDN *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, d = c->cfg->hidden_size, Kd = dm->key_dim, Vd = dm->value_dim, H = dm->H;
    be->matmul_bwd(l->dr, G(c, l->o), NULL, dy, l->r, W(c, l->o), N, d, Vd, 0);
    be->gate_mul_bwd(l->don, l->dgp, l->dr, l->on, l->gp, (int64_t)N * Vd, ACT_SILU);
    be->rmsnorm_bwd(l->do_, G(c, l->onorm), l->don, l->o_, W(c, l->onorm), l->rstd, N, H, dm->dv, 0, 0);
    be->matmul_bwd(dx, G(c, l->g), NULL, l->dgp, x, W(c, l->g), N, Vd, d, 0);
    be->gdn_bwd(l->dqn, l->dkn, l->dv1, l->dbeta, l->dgd, l->do_, l->qn, l->kn, l->v1, l->beta,
                l->gd, l->states.p, c->seqs, H, dm->dk, dm->dv, 1.0 / sqrt((double)dm->dk));
    be->gdn_gates_bwd(l->dbraw, l->daraw, G(c, l->A_log), G(c, l->dt_bias), l->dbeta, l->dgd,
                      l->braw, l->araw, WM(c, l->A_log), WM(c, l->dt_bias), N, H);
    be->matmul_bwd(dx, G(c, l->b), NULL, l->dbraw, x, W(c, l->b), N, H, d, 1);
    be->matmul_bwd(dx, G(c, l->a), NULL, l->daraw, x, W(c, l->a), N, H, d, 1);
    be->l2norm_bwd(l->dqr, l->dqn, l->qn, l->qrn, N, H, dm->dk, 0);
    be->l2norm_bwd(l->dkr, l->dkn, l->kn, l->krn, N, H, dm->dk, 0);
    if (l->pe.cfg.kind != PE_NOPE)
        pe_backward(&l->pe, c, x, l->q1, l->k1, l->dqr, l->dkr, l->dq1, l->dk1, dx);
    if (l->conv) {
        be->conv_bwd(l->dq0, G(c, l->qconv), l->dq1, l->q0, W(c, l->qconv), c->seqs, Kd, ACT_SILU);
        be->conv_bwd(l->dk0, G(c, l->kconv), l->dk1, l->k0, W(c, l->kconv), c->seqs, Kd, ACT_SILU);
        be->conv_bwd(l->dv0, G(c, l->vconv), l->dv1, l->v0, W(c, l->vconv), c->seqs, Vd, ACT_SILU);
    } else {
        be->silu_bwd(l->dq0, l->dq1, l->q0, (int64_t)N * Kd);
        be->silu_bwd(l->dk0, l->dk1, l->k0, (int64_t)N * Kd);
        be->silu_bwd(l->dv0, l->dv1, l->v0, (int64_t)N * Vd);
    }
    be->matmul_bwd(dx, G(c, l->q), NULL, l->dq0, x, W(c, l->q), N, Kd, d, 1);
    be->matmul_bwd(dx, G(c, l->k), NULL, l->dk0, x, W(c, l->k), N, Kd, d, 1);
    be->matmul_bwd(dx, G(c, l->v), NULL, l->dv0, x, W(c, l->v), N, Vd, d, 1);
}

const MixerImpl mixer_gdn = {gdn_create, gdn_destroy, gdn_bind, gdn_forward, gdn_backward};
