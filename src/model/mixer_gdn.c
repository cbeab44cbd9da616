/* Gated DeltaNet mixer (docs/models.md §gated-deltanet, fla GatedDeltaNet with use_gate) and
 * DeltaNet (§deltanet, fla DeltaNet): the same layer without the decay (no a_proj, A_log, dt_bias;
 * the core op runs with g == NULL) and with an optional output gate. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/family.h"
#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    LinAttnLayer la;          /* q, k, v, the position embedding, the readout and the core op */
    int decay;                /* Gated DeltaNet; else DeltaNet */
    int a, b, A_log, dt_bias; /* parameter ids of the gates (a, A_log, dt_bias: with decay) */
    /* saved: q, k L2-normalised and their norms, the gate projections, beta and the log decay
     * (araw, gd: with decay) */
    void *qn, *kn, *qrn, *krn, *braw, *araw, *beta, *gd;
    /* scratch: gradients of the above */
    void *dqn, *dkn, *dbeta, *dgd, *dbraw, *daraw;
} GDN;

enum { F_DECAY = 1 };    /* feature: decay */
enum { W_KEY, W_HEADS }; /* widths */

static const BufDecl gdn_bufs[] = {
    BUF(GDN, qn, BUF_SAVED, BUF_ACT, W_KEY),
    BUF(GDN, kn, BUF_SAVED, BUF_ACT, W_KEY),
    BUF(GDN, qrn, BUF_SAVED, BUF_F32, W_HEADS),
    BUF(GDN, krn, BUF_SAVED, BUF_F32, W_HEADS),
    BUF(GDN, braw, BUF_SAVED, BUF_ACT, W_HEADS),
    BUF_OPT(GDN, araw, BUF_SAVED, BUF_ACT, W_HEADS, F_DECAY),
    BUF(GDN, beta, BUF_SAVED, BUF_F32, W_HEADS),
    BUF_OPT(GDN, gd, BUF_SAVED, BUF_F32, W_HEADS, F_DECAY),
    BUF(GDN, dqn, BUF_SCRATCH, BUF_ACT, W_KEY),
    BUF(GDN, dkn, BUF_SCRATCH, BUF_ACT, W_KEY),
    BUF(GDN, dbeta, BUF_SCRATCH, BUF_F32, W_HEADS),
    BUF_OPT(GDN, dgd, BUF_SCRATCH, BUF_F32, W_HEADS, F_DECAY),
    BUF(GDN, dbraw, BUF_SCRATCH, BUF_ACT, W_HEADS),
    BUF_OPT(GDN, daraw, BUF_SCRATCH, BUF_ACT, W_HEADS, F_DECAY),
};

/* A_log = log U(0, 16) (docs/models.md §gated-deltanet) */
static void gdn_init_a_log(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++)
        a->out[i] = log(fmax(16 * rng_uniform(a->rng), 1e-30));
}

/* dt_bias: the inverse softplus of a log-uniform dt in [1e-3, 1e-1] (docs/models.md
 * §gated-deltanet; Mamba2's alike, §mamba2) */
void init_dt_bias(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++) {
        double dt = exp(rng_uniform(a->rng) * (log(0.1) - log(0.001)) + log(0.001));
        dt = fmax(dt, 1e-4);
        a->out[i] = dt + log(-expm1(-dt));
    }
}

static void *gdn_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm, const char *p) {
    GDN *l = rt_calloc(1, sizeof(GDN));
    int d = cfg->hidden_size, H = dm->H;
    double std = cfg->init_std;
    l->decay = cfg->mixer == MIXER_GDN;
    l->a = l->A_log = l->dt_bias = -1;
    qkv_declare_proj(&l->la.in, t, p, d, dm->key_dim, dm->value_dim, std);
    if (l->decay) l->a = declare_linear(t, pname(p, "a_proj.weight").s, H, d, std);
    l->b = declare_linear(t, pname(p, "b_proj.weight").s, H, d, std);
    int64_t sh[1] = {H};
    if (l->decay) {
        l->A_log = params_add(t, pname(p, "A_log").s, 1, sh, gdn_init_a_log, 0, 0, 1);
        l->dt_bias = params_add(t, pname(p, "dt_bias").s, 1, sh, init_dt_bias, 0, 0, 1);
    }
    qkv_declare_conv(&l->la.in, t, p, cfg->short_conv, ACT_SILU, ACT_SILU, std);
    readout_declare_gate(&l->la.out, t, p, l->decay || cfg->use_gate ? ACT_SILU : ACT_NONE, d, H,
                         dm->dv, std);
    readout_declare_norm(&l->la.out, t, pname(p, "o_norm.weight").s, READOUT_NORM_SHARED);
    readout_declare_out(&l->la.out, t, p, std);
    pe_declare(&l->la.pe, t, p, cfg, H, dm->dk);
    readout_inproj(&l->la.out, &l->la.in.proj);
    inproj_add(&l->la.in.proj, l->b, -1, H, &l->braw, &l->dbraw);
    if (l->decay) inproj_add(&l->la.in.proj, l->a, -1, H, &l->araw, &l->daraw);
    linattn_inproj(&l->la);
    return l;
}

static void gdn_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                     int64_t N) {
    GDN *l = layer;
    int64_t widths[] = {[W_KEY] = dm->key_dim, [W_HEADS] = dm->H};
    linattn_bind(l, gdn_bufs, BUF_COUNT(gdn_bufs), widths, l->decay ? F_DECAY : 0, be, dm, sv, sc,
                 N);
}

static void gdn_forward(void *layer, const Ctx *c, const void *x, void *y) {
    GDN *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, H = dm->H;
    LinAttnLayer *la = &l->la;
    linattn_qk_forward(la, c, x);
    be->l2norm_fwd(l->qn, l->qrn, la->qr, N, H, dm->dk, 1e-6);
    be->l2norm_fwd(l->kn, l->krn, la->kr, N, H, dm->dk, 1e-6);
    be->sigmoid_fwd(l->beta, l->braw, (int64_t)N * H); /* braw, araw: made by in.proj */
    if (l->decay)                                      /* without it gd stays NULL */
        be->decay_gates_fwd(NULL, l->gd, l->araw, WM(c, l->A_log), WM(c, l->dt_bias), N, H);
    la->attn = (LinAttnArgs){.s = c->seqs,
                             .H = H,
                             .K = dm->dk,
                             .V = dm->dv,
                             .scale = 1.0 / sqrt((double)dm->dk),
                             .q = l->qn,
                             .k = l->kn,
                             .v = la->in.v1,
                             .g = l->gd,
                             .beta = l->beta,
                             .o = la->out.o_,
                             .state = c->mode == PASS_TRAIN ? NULL : la->S};
    linattn_run(c, &la->attn, &la->states, 1);
    readout_forward(&la->out, c, y);
}

static void gdn_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    GDN *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, H = dm->H;
    LinAttnLayer *la = &l->la;
    readout_backward(&la->out, c, dy);
    be->gdn_bwd(&(LinAttnGrads){.a = la->attn,
                                .dout = la->out.do_,
                                .dq = l->dqn,
                                .dk = l->dkn,
                                .dv = la->dv1,
                                .dg = l->dgd,
                                .dbeta = l->dbeta});
    be->sigmoid_bwd(l->dbraw, l->dbeta, l->braw, (int64_t)N * H);
    if (l->decay)
        be->decay_gates_bwd(l->daraw, G(c, l->A_log), G(c, l->dt_bias), NULL, l->dgd, l->araw,
                            WM(c, l->A_log), WM(c, l->dt_bias), N, H);
    be->l2norm_bwd(la->dqr, l->dqn, l->qn, l->qrn, N, H, dm->dk, 0);
    be->l2norm_bwd(la->dkr, l->dkn, l->kn, l->krn, N, H, dm->dk, 0);
    linattn_qk_backward(la, c, x, dx);
}

static const MixerImpl mixer_gdn = {
    .op = "gdn",
    .create = gdn_create,
    .destroy = linattn_destroy,
    .bind = gdn_bind,
    .forward = gdn_forward,
    .backward = gdn_backward,
    .bind_state = linattn_bind_state,
};

/* ---- the families: Gated DeltaNet (docs/models.md §gated-deltanet) and DeltaNet (§deltanet) ----
 */

static const char *gdn_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n) {
    int H = c->num_heads;
    if (c->head_dim <= 0) return "model.key_head_dim must be positive";
    double dv = c->head_dim * c->expand_v;
    if ((double)H * c->head_dim > MAX_WIDTH || (double)H * dv > MAX_WIDTH) {
        snprintf(msg, n,
                 "model.num_heads = %d x key_head_dim = %d (x expand_v = %g) is beyond 2^24", H,
                 c->head_dim, c->expand_v);
        return msg;
    }
    if (!is_integer(dv) || dv <= 0) {
        snprintf(msg, n, "model.expand_v = %g times model.key_head_dim %d is not an integer",
                 c->expand_v, c->head_dim);
        return msg;
    }
    o->H = H;
    o->dk = c->head_dim;
    o->dv = (int)round(dv);
    o->key_dim = H * o->dk;
    o->value_dim = H * o->dv;
    return NULL;
}

static void gdn_head_keys(const ModelConfig *c, char *buf, size_t n) {
    snprintf(buf, n, "model.num_heads = %d, model.key_head_dim = %d, model.expand_v = %g",
             c->num_heads, c->head_dim, c->expand_v);
}

static const char *const gdn_keys[] = {"num_heads", "key_head_dim", "expand_v", "short_conv", NULL};
static const HfField gdn_fields[] = {
    HF_FIELD("head_dim", HF_INT, HF_POS, 1, head_dim),
    HF_FIELD("expand_v", HF_REAL, HF_POS, 1, expand_v),
    HF_FIELD("use_short_conv", HF_BOOL, HF_ANY, 1, short_conv),
};
static const HfFixed gdn_fixed[] = {
    {"use_gate", "true", 1},    {"conv_size", "4", 1},         {"allow_neg_eigval", "false", 1},
    {"num_v_heads", "null", 1}, {"attn_mode", "\"chunk\"", 0},
};

const Family family_gated_deltanet = {
    .name = "gated_deltanet",
    .section = "§gated-deltanet",
    .mix = &mixer_gdn,
    .pe = PE_ANY,
    .keys = gdn_keys,
    .dims = gdn_dims,
    .head_keys = gdn_head_keys,
    .mixing_flops = chunked_flops,
    .hf = {"gated_deltanet", "GatedDeltaNetForCausalLM", HF_TABLE(gdn_fields), HF_TABLE(gdn_fixed),
           PE_NOPE, .fla_computes = hf_fla_nope},
};

/* fla's DeltaNetConfig: key_dim = d expand_k, as GLA */
static const char *const deltanet_keys[] = {"num_heads",  "expand_k", "expand_v",
                                            "short_conv", "use_gate", NULL};
static const HfField deltanet_fields[] = {
    HF_FIELD("expand_k", HF_REAL, HF_POS, 1, expand_k),
    HF_FIELD("expand_v", HF_REAL, HF_POS, 1, expand_v),
    HF_FIELD("use_short_conv", HF_BOOL, HF_ANY, 1, short_conv),
    HF_FIELD("use_gate", HF_BOOL, HF_ANY, 1, use_gate),
};
static const HfFixed deltanet_fixed[] = {
    {"conv_size", "4", 1},    {"use_beta", "true", 1},          {"use_output_norm", "true", 1},
    {"qk_norm", "\"l2\"", 1}, {"qk_activation", "\"silu\"", 1}, {"attn_mode", "\"chunk\"", 0},
};

const Family family_deltanet = {
    .name = "deltanet",
    .section = "§deltanet",
    .mix = &mixer_gdn,
    .pe = PE_ANY,
    .keys = deltanet_keys,
    .dims = expand_dims,
    .head_keys = expand_head_keys,
    .mixing_flops = chunked_flops,
    .hf = {"delta_net", "DeltaNetForCausalLM", HF_TABLE(deltanet_fields), HF_TABLE(deltanet_fixed),
           PE_NOPE, .fla_computes = hf_fla_nope},
};
