/* Gated linear attention mixer (docs/models.md §gla, fla GatedLinearAttention). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/family.h"
#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    LinAttnLayer la;    /* q, k, v, the position embedding, the readout and the core op */
    int gk0, gk1, gk1b; /* parameter ids of the low-rank forget gate */
    int R;
    /* saved: the gate's rank-R projection, its logits, log alpha; scratch: their gradients */
    void *z1, *z, *lg, *dz1, *dz, *dlg;
} GLA;

enum { W_KEY, W_RANK }; /* widths */

static const BufDecl gla_bufs[] = {
    BUF(GLA, z1, BUF_SAVED, BUF_ACT, W_RANK),  BUF(GLA, z, BUF_SAVED, BUF_ACT, W_KEY),
    BUF(GLA, lg, BUF_SAVED, BUF_F32, W_KEY),   BUF(GLA, dlg, BUF_SCRATCH, BUF_F32, W_KEY),
    BUF(GLA, dz, BUF_SCRATCH, BUF_ACT, W_KEY), BUF(GLA, dz1, BUF_SCRATCH, BUF_ACT, W_RANK),
};

static void *gla_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm, const char *p) {
    GLA *l = rt_calloc(1, sizeof(GLA));
    int d = cfg->hidden_size, Kd = dm->key_dim, R = cfg->gate_low_rank_dim;
    double std = cfg->init_std;
    qkv_declare_proj(&l->la.in, t, p, d, Kd, dm->value_dim, std);
    readout_declare_gate(&l->la.out, t, p, ACT_SILU, d, dm->H, dm->dv, std);
    qkv_declare_conv(&l->la.in, t, p, cfg->short_conv, ACT_SILU, ACT_NONE, std);
    l->R = R;
    l->gk0 = declare_linear(t, pname(p, "gk_proj.0.weight").s, R, d, std);
    l->gk1 = declare_linear(t, pname(p, "gk_proj.1.weight").s, Kd, R, std);
    l->gk1b = declare_vector(t, pname(p, "gk_proj.1.bias").s, Kd, 0);
    readout_declare_out(&l->la.out, t, p, std);
    readout_declare_norm(&l->la.out, t, pname(p, "g_norm_swish_gate.weight").s,
                         READOUT_NORM_SHARED);
    pe_declare(&l->la.pe, t, p, cfg, dm->H, dm->dk);
    readout_inproj(&l->la.out, &l->la.in.proj);
    inproj_add(&l->la.in.proj, l->gk0, -1, R, &l->z1, &l->dz1);
    linattn_inproj(&l->la);
    return l;
}

static void gla_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                     int64_t N) {
    GLA *l = layer;
    int64_t widths[] = {[W_KEY] = dm->key_dim, [W_RANK] = l->R};
    linattn_bind(l, gla_bufs, BUF_COUNT(gla_bufs), widths, 0, be, dm, sv, sc, N);
}

static void gla_forward(void *layer, const Ctx *c, const void *x, void *y) {
    GLA *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, Kd = dm->key_dim, H = dm->H;
    linattn_qk_forward(&l->la, c, x);
    /* forget gate: log alpha = logsigmoid((x A) B + b) / normalizer, x A made by in.proj */
    be->matmul_fwd(l->z, l->z1, W(c, l->gk1), W(c, l->gk1b), N, Kd, l->R);
    be->logsigmoid_fwd(l->lg, l->z, (int64_t)N * Kd, c->cfg->gate_logit_normalizer);
    LinAttnLayer *la = &l->la;
    la->attn = (LinAttnArgs){.s = c->seqs,
                             .H = H,
                             .K = dm->dk,
                             .V = dm->dv,
                             .scale = 1.0 / sqrt((double)dm->dk),
                             .q = la->qr,
                             .k = la->kr,
                             .v = la->in.v1,
                             .g = l->lg,
                             .o = la->out.o_,
                             .state = c->mode == PASS_TRAIN ? NULL : la->S};
    linattn_run(c, &la->attn, &la->states, 0);
    readout_forward(&la->out, c, y);
}

static void gla_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    GLA *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, Kd = dm->key_dim;
    LinAttnLayer *la = &l->la;
    readout_backward(&la->out, c, dy);
    be->gla_bwd(&(LinAttnGrads){.a = la->attn,
                                .dout = la->out.do_,
                                .dq = la->dqr,
                                .dk = la->dkr,
                                .dv = la->dv1,
                                .dg = l->dlg});
    be->logsigmoid_bwd(l->dz, l->dlg, l->z, (int64_t)N * Kd, c->cfg->gate_logit_normalizer);
    be->matmul_bwd(l->dz1, G(c, l->gk1), G(c, l->gk1b), l->dz, l->z1, W(c, l->gk1), N, Kd, l->R, 0);
    linattn_qk_backward(la, c, x, dx);
}

static const MixerImpl mixer_gla = {
    .op = "gla",
    .create = gla_create,
    .destroy = linattn_destroy,
    .bind = gla_bind,
    .forward = gla_forward,
    .backward = gla_backward,
    .bind_state = linattn_bind_state,
};

/* ---- the family (docs/models.md §gla) ---- */

const char *expand_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n) {
    int d = c->hidden_size, H = c->num_heads;
    double kd = d * c->expand_k, vd = d * c->expand_v;
    if (kd > MAX_WIDTH || vd > MAX_WIDTH) {
        snprintf(msg, n, "model.expand_k = %g / expand_v = %g give a width beyond 2^24",
                 c->expand_k, c->expand_v);
        return msg;
    }
    if (!is_integer(kd) || kd <= 0) {
        snprintf(msg, n, "model.expand_k = %g gives a non-integer key width %g", c->expand_k, kd);
        return msg;
    }
    if (!is_integer(vd) || vd <= 0) {
        snprintf(msg, n, "model.expand_v = %g gives a non-integer value width %g", c->expand_v, vd);
        return msg;
    }
    o->H = H;
    o->key_dim = (int)round(kd);
    o->value_dim = (int)round(vd);
    if (o->key_dim % H || o->value_dim % H) {
        snprintf(msg, n, "model.num_heads = %d does not divide the key width %d and value width %d",
                 H, o->key_dim, o->value_dim);
        return msg;
    }
    o->dk = o->key_dim / H;
    o->dv = o->value_dim / H;
    return NULL;
}

void expand_head_keys(const ModelConfig *c, char *buf, size_t n) {
    snprintf(
        buf, n,
        "model.hidden_size = %d, model.num_heads = %d, model.expand_k = %g, model.expand_v = %g",
        c->hidden_size, c->num_heads, c->expand_k, c->expand_v);
}

double chunked_flops(const ModelConfig *c, const ModelDims *dm, int T) {
    double C = CHUNK_SIZE;
    return 2.0 * dm->H * (C * dm->dk + C * dm->dv + 2.0 * dm->dk * dm->dv);
}

static const char *const gla_keys[] = {"num_heads",  "expand_k",          "expand_v",
                                       "short_conv", "gate_low_rank_dim", "gate_logit_normalizer",
                                       NULL};
static const HfField gla_fields[] = {
    HF_FIELD("expand_k", HF_REAL, HF_POS, 1, expand_k),
    HF_FIELD("expand_v", HF_REAL, HF_POS, 1, expand_v),
    HF_FIELD("use_short_conv", HF_BOOL, HF_ANY, 1, short_conv),
    HF_FIELD("gate_logit_normalizer", HF_REAL, HF_POS, 0, gate_logit_normalizer),
    HF_FIELD("gate_low_rank_dim", HF_INT, HF_POS, 0, gate_low_rank_dim),
};
/* fuse_norm (config.json's common keys) must be true for fla's GLA to name its readout norm
 * g_norm_swish_gate, as rotor does */
static const HfFixed gla_fixed[] = {
    {"conv_size", "4", 1},      {"use_output_gate", "true", 1}, {"clamp_min", "null", 1},
    {"feature_map", "null", 1}, {"attn_mode", "\"chunk\"", 0},  {"num_kv_heads", "null", 1},
};

const Family family_gla = {
    .name = "gla",
    .section = "§gla",
    .mix = &mixer_gla,
    .pe = PE_ANY,
    .keys = gla_keys,
    .dims = expand_dims,
    .head_keys = expand_head_keys,
    .mixing_flops = chunked_flops,
    .hf = {"gla", "GLAForCausalLM", HF_TABLE(gla_fields), HF_TABLE(gla_fixed), PE_NOPE,
           .fla_computes = hf_fla_nope},
};
