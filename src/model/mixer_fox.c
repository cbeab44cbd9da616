/* Forgetting Transformer mixer (docs/models.md §fox; fla ForgettingAttention plus the FoX "Pro"
 * options of the forgetting-transformer repo: output gate, output norm, QK-norm, k/v shift),
 * and the Transformer (§transformer; fla Attention): the same layer without the forget gate and the
 * Pro options but QK-norm, whose weights the Transformer shares across heads. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/family.h"
#include "model/model_internal.h"
#include "util/error.h"

#define QK_NORM_EPS 1e-5 /* docs/models.md §backbone: only the QK-norm uses 1e-5 */

typedef struct {
    int f, fb, qnorm, knorm, kshift, vshift; /* parameter ids, -1 where absent */
    int qk_per_head; /* QK-norm weights per head and channel (FoX) or per channel */
    QKVPrologue in;  /* the q, k, v projections (no conv) */
    PosEmb pe;
    Readout out;
    AttnArgs attn; /* the core op's arguments, set by the forward for the backward */
    /* saved: the shift gates and shifted k, v (aliases of in.k0, in.v0 without shift); the
     * forget gate's logits and log f (without a gate: absent); then the q/k pipeline in
     * docs/models.md §fox order: Selective RoPE -> q_sel, QK-norm -> q_norm (rstd qrs), RoPE ->
     * q_rope, each an alias of the stage before when absent; q_rope, k_rope enter the attention */
    void *ka, *va, *k1, *v1, *fr, *lf, *lse;
    void *q_sel, *k_sel, *q_norm, *k_norm, *qrs, *krs, *q_rope, *k_rope;
    /* scratch: the gradients of the same stages in reverse */
    void *dq_rope, *dk_rope, *dq_norm, *dk_norm, *dq_sel, *dk_sel, *dq0, *dk1, *dv1;
    void *dlf, *dfr, *dka, *dva, *dk0, *dv0;
    /* decoding state: each row's last k0, v0 (the shifts' inputs), KV cache and cumulative
     * log forget gate (AttnStepArgs) */
    void *kprev, *vprev, *kc, *vc, *fc;
} FoX;

enum { F_SELECTIVE = 1, F_ROPE = 2, F_QK_NORM = 4, F_K_SHIFT = 8, F_V_SHIFT = 16, F_GATE = 32 };
enum { W_MODEL, W_HEADS };

static const BufDecl fox_bufs[] = {
    BUF_OPT(FoX, ka, BUF_SAVED, BUF_ACT, W_HEADS, F_K_SHIFT),
    BUF_OPT(FoX, va, BUF_SAVED, BUF_ACT, W_HEADS, F_V_SHIFT),
    BUF_IF(FoX, k1, BUF_SAVED, BUF_ACT, W_MODEL, F_K_SHIFT, in.k0),
    BUF_IF(FoX, v1, BUF_SAVED, BUF_ACT, W_MODEL, F_V_SHIFT, in.v0),
    BUF_OPT(FoX, fr, BUF_SAVED, BUF_ACT, W_HEADS, F_GATE),
    BUF_OPT(FoX, lf, BUF_SAVED, BUF_F32, W_HEADS, F_GATE),
    BUF_IF(FoX, q_sel, BUF_SAVED, BUF_ACT, W_MODEL, F_SELECTIVE, in.q0),
    BUF_IF(FoX, k_sel, BUF_SAVED, BUF_ACT, W_MODEL, F_SELECTIVE, k1),
    BUF_IF(FoX, q_norm, BUF_SAVED, BUF_ACT, W_MODEL, F_QK_NORM, q_sel),
    BUF_IF(FoX, k_norm, BUF_SAVED, BUF_ACT, W_MODEL, F_QK_NORM, k_sel),
    BUF_OPT(FoX, qrs, BUF_SAVED, BUF_F32, W_HEADS, F_QK_NORM),
    BUF_OPT(FoX, krs, BUF_SAVED, BUF_F32, W_HEADS, F_QK_NORM),
    BUF_IF(FoX, q_rope, BUF_SAVED, BUF_ACT, W_MODEL, F_ROPE, q_norm),
    BUF_IF(FoX, k_rope, BUF_SAVED, BUF_ACT, W_MODEL, F_ROPE, k_norm),
    BUF(FoX, lse, BUF_SAVED, BUF_F32, W_HEADS),
    BUF(FoX, dq_rope, BUF_SCRATCH, BUF_ACT, W_MODEL),
    BUF(FoX, dk_rope, BUF_SCRATCH, BUF_ACT, W_MODEL),
    BUF_IF(FoX, dq_norm, BUF_SCRATCH, BUF_ACT, W_MODEL, F_ROPE, dq_rope),
    BUF_IF(FoX, dk_norm, BUF_SCRATCH, BUF_ACT, W_MODEL, F_ROPE, dk_rope),
    BUF_IF(FoX, dq_sel, BUF_SCRATCH, BUF_ACT, W_MODEL, F_QK_NORM, dq_norm),
    BUF_IF(FoX, dk_sel, BUF_SCRATCH, BUF_ACT, W_MODEL, F_QK_NORM, dk_norm),
    BUF_IF(FoX, dq0, BUF_SCRATCH, BUF_ACT, W_MODEL, F_SELECTIVE, dq_sel),
    BUF_IF(FoX, dk1, BUF_SCRATCH, BUF_ACT, W_MODEL, F_SELECTIVE, dk_sel),
    BUF(FoX, dv1, BUF_SCRATCH, BUF_ACT, W_MODEL),
    BUF_OPT(FoX, dlf, BUF_SCRATCH, BUF_F32, W_HEADS, F_GATE),
    BUF_OPT(FoX, dfr, BUF_SCRATCH, BUF_ACT, W_HEADS, F_GATE),
    BUF_OPT(FoX, dka, BUF_SCRATCH, BUF_ACT, W_HEADS, F_K_SHIFT),
    BUF_OPT(FoX, dva, BUF_SCRATCH, BUF_ACT, W_HEADS, F_V_SHIFT),
    BUF_IF(FoX, dk0, BUF_SCRATCH, BUF_ACT, W_MODEL, F_K_SHIFT, dk1),
    BUF_IF(FoX, dv0, BUF_SCRATCH, BUF_ACT, W_MODEL, F_V_SHIFT, dv1),
};

static void *fox_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm, const char *p) {
    FoX *l = rt_calloc(1, sizeof(FoX));
    int d = cfg->hidden_size, H = dm->H, fox = cfg->mixer == MIXER_FOX;
    double std = cfg->init_std;
    qkv_declare_proj(&l->in, t, p, d, d, d, std);
    qkv_declare_conv(&l->in, t, p, 0, ACT_NONE, ACT_NONE, std);
    l->f = l->fb = l->qnorm = l->knorm = l->kshift = l->vshift = -1;
    if (fox) {
        l->f = declare_linear(t, pname(p, "f_proj.weight").s, H, d, std);
        l->fb = declare_vector(t, pname(p, "f_proj.bias").s, H, 0);
    }
    readout_declare_gate(&l->out, t, p, fox && cfg->output_gate ? ACT_SIGMOID : ACT_NONE, d, H,
                         dm->dv, std);
    readout_declare_out(&l->out, t, p, std);
    readout_declare_norm(&l->out, t, pname(p, "o_norm.weight").s,
                         fox && cfg->output_norm ? READOUT_NORM_PER_HEAD : READOUT_NO_NORM);
    l->qk_per_head = fox;
    if (cfg->qk_norm) { /* fla: FoX [d] (read as [H, dh]); Transformer RMSNorm(head_dim) */
        l->qnorm = declare_vector(t, pname(p, "q_norm.weight").s, fox ? d : dm->dk, 1);
        l->knorm = declare_vector(t, pname(p, "k_norm.weight").s, fox ? d : dm->dk, 1);
    }
    if (fox && cfg->k_shift)
        l->kshift = declare_linear(t, pname(p, "k_shift_proj.weight").s, H, d, std);
    if (fox && cfg->v_shift)
        l->vshift = declare_linear(t, pname(p, "v_shift_proj.weight").s, H, d, std);
    pe_declare(&l->pe, t, p, cfg, H, dm->dk);
    InProj *ip = &l->in.proj;
    readout_inproj(&l->out, ip);
    if (l->f >= 0) inproj_add(ip, l->f, l->fb, H, &l->fr, &l->dfr);
    if (l->kshift >= 0) inproj_add(ip, l->kshift, -1, H, &l->ka, &l->dka);
    if (l->vshift >= 0) inproj_add(ip, l->vshift, -1, H, &l->va, &l->dva);
    qkv_inproj(&l->in, &l->dq0, &l->dk0, &l->dv0);
    return l;
}

static void fox_destroy(void *layer, const Backend *be) {
    (void)be;
    rt_free(layer);
}

static unsigned features(const FoX *l) {
    return (l->pe.cfg.kind == PE_SELECTIVE ? F_SELECTIVE : 0) |
           (l->pe.cfg.kind == PE_ROPE ? F_ROPE : 0) | (l->qnorm >= 0 ? F_QK_NORM : 0) |
           (l->kshift >= 0 ? F_K_SHIFT : 0) | (l->vshift >= 0 ? F_V_SHIFT : 0) |
           (l->f >= 0 ? F_GATE : 0);
}

static void fox_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                     int64_t N) {
    FoX *l = layer;
    int64_t widths[] = {[W_MODEL] = (int64_t)dm->H * dm->dk, [W_HEADS] = dm->H};
    qkv_bind(&l->in, be, sv, sc, N);
    acts_bind(l, fox_bufs, BUF_COUNT(fox_bufs), widths, features(l), be, sv, sc, N);
    readout_bind(&l->out, be, sv, sc, N);
    pe_bind(&l->pe, be, sv, sc, N);
}

/* The data-dependent shift; a decoding pass keeps each row's last input. */
static void shift(const Ctx *c, void *y, const void *x, const void *a_logit, void *prev, int H,
                  int D) {
    if (c->mode == PASS_STEP) {
        c->be->shift_step(y, x, a_logit, prev, c->seqs, H, D);
        return;
    }
    c->be->shift_fwd(y, x, a_logit, c->seqs, H, D);
    if (c->mode == PASS_PREFILL) c->be->segment_tail(prev, x, c->seqs, H * D, 1, 0);
}

/* After a prefill's attention: every prompt's keys, values and cumulative log forget gate
 * into its row's cache (the gate's sum in the scratch dlf). */
static void fill_cache(FoX *l, const Ctx *c) {
    const Backend *be = c->be;
    int H = c->dims->H, HD = H * c->dims->dk;
    be->cache_write(l->kc, l->k_rope, c->seqs, c->max_len, HD, 0);
    be->cache_write(l->vc, l->v1, c->seqs, c->max_len, HD, 0);
    if (!l->lf) return;
    be->segment_cumsum(l->dlf, l->lf, c->seqs, H);
    be->cache_write(l->fc, l->dlf, c->seqs, c->max_len, H, 1);
}

static void fox_forward(void *layer, const Ctx *c, const void *x, void *y) {
    FoX *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, H = dm->H;
    PEKind pk = l->pe.cfg.kind;
    qkv_forward(&l->in, c, x); /* with ka, va, fr and the gate's projection */
    if (l->kshift >= 0) shift(c, l->k1, l->in.k0, l->ka, l->kprev, H, dm->dk);
    if (l->vshift >= 0) shift(c, l->v1, l->in.v0, l->va, l->vprev, H, dm->dv);
    if (l->f >= 0) be->logsigmoid_fwd(l->lf, l->fr, (int64_t)N * H, 1.0);
    if (pk == PE_SELECTIVE) pe_forward(&l->pe, c, x, l->in.q0, l->k1, l->q_sel, l->k_sel);
    if (l->qnorm >= 0) {
        be->rmsnorm_fwd(l->q_norm, l->qrs, l->q_sel, W(c, l->qnorm), N, H, dm->dk, l->qk_per_head,
                        QK_NORM_EPS);
        be->rmsnorm_fwd(l->k_norm, l->krs, l->k_sel, W(c, l->knorm), N, H, dm->dk, l->qk_per_head,
                        QK_NORM_EPS);
    }
    if (pk == PE_ROPE) pe_forward(&l->pe, c, x, l->q_norm, l->k_norm, l->q_rope, l->k_rope);
    l->attn = (AttnArgs){.s = c->seqs,
                         .H = H,
                         .D = dm->dk,
                         .scale = 1.0 / sqrt((double)dm->dk),
                         .q = l->q_rope,
                         .k = l->k_rope,
                         .v = l->v1,
                         .logf = l->lf, /* or NULL */
                         .o = l->out.o_,
                         .lse = l->lse};
    if (c->mode == PASS_STEP)
        be->attn_step(&(AttnStepArgs){.s = c->seqs,
                                      .H = H,
                                      .D = dm->dk,
                                      .cap = c->max_len,
                                      .scale = l->attn.scale,
                                      .q = l->q_rope,
                                      .k = l->k_rope,
                                      .v = l->v1,
                                      .logf = l->lf,
                                      .kc = l->kc,
                                      .vc = l->vc,
                                      .fc = l->fc,
                                      .o = l->out.o_});
    else
        be->fox_fwd(&l->attn);
    if (c->mode == PASS_PREFILL) fill_cache(l, c);
    readout_forward(&l->out, c, y);
}

static void fox_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    FoX *l = layer;
    const Backend *be = c->be;
    const ModelDims *dm = c->dims;
    int N = (int)c->N, H = dm->H;
    PEKind pk = l->pe.cfg.kind;
    readout_backward(&l->out, c, dy);
    be->fox_bwd(&(AttnGrads){.a = l->attn,
                             .dout = l->out.do_,
                             .dq = l->dq_rope,
                             .dk = l->dk_rope,
                             .dv = l->dv1,
                             .dlogf = l->dlf});
    if (l->f >= 0) be->logsigmoid_bwd(l->dfr, l->dlf, l->fr, (int64_t)N * H, 1.0);
    int have_dx = 0;
    if (pk == PE_ROPE)
        pe_backward(&l->pe, c, x, l->q_norm, l->k_norm, l->dq_rope, l->dk_rope, l->dq_norm,
                    l->dk_norm, NULL, 0);
    if (l->qnorm >= 0) {
        be->rmsnorm_bwd(l->dq_sel, G(c, l->qnorm), l->dq_norm, l->q_sel, W(c, l->qnorm), l->qrs, N,
                        H, dm->dk, l->qk_per_head, 0);
        be->rmsnorm_bwd(l->dk_sel, G(c, l->knorm), l->dk_norm, l->k_sel, W(c, l->knorm), l->krs, N,
                        H, dm->dk, l->qk_per_head, 0);
    }
    if (pk == PE_SELECTIVE)
        have_dx =
            pe_backward(&l->pe, c, x, l->in.q0, l->k1, l->dq_sel, l->dk_sel, l->dq0, l->dk1, dx, 0);
    if (l->kshift >= 0) be->shift_bwd(l->dk0, l->dka, l->dk1, l->in.k0, l->ka, c->seqs, H, dm->dk);
    if (l->vshift >= 0) be->shift_bwd(l->dv0, l->dva, l->dv1, l->in.v0, l->va, c->seqs, H, dm->dv);
    qkv_backward(&l->in, c, x, l->dq0, l->dk0, l->dv0, dx, have_dx);
}

enum { W_ROW, W_CACHE, W_FCACHE }; /* state widths */

static const BufDecl fox_state[] = {
    BUF_OPT(FoX, kprev, BUF_SAVED, BUF_ACT, W_ROW, F_K_SHIFT),
    BUF_OPT(FoX, vprev, BUF_SAVED, BUF_ACT, W_ROW, F_V_SHIFT),
    BUF(FoX, kc, BUF_SAVED, BUF_ACT, W_CACHE),
    BUF(FoX, vc, BUF_SAVED, BUF_ACT, W_CACHE),
    BUF_OPT(FoX, fc, BUF_SAVED, BUF_F32, W_FCACHE, F_GATE),
};

static void fox_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                           int64_t rows, int max_len) {
    FoX *l = layer;
    int64_t HD = (int64_t)dm->H * dm->dk;
    int64_t widths[] = {
        [W_ROW] = HD, [W_CACHE] = max_len * HD, [W_FCACHE] = (int64_t)max_len * dm->H};
    acts_bind(l, fox_state, BUF_COUNT(fox_state), widths, features(l), be, state, state, rows);
    pe_bind_state(&l->pe, be, state, rows);
}

static const MixerImpl mixer_fox = {
    .op = "fox",
    .create = fox_create,
    .destroy = fox_destroy,
    .bind = fox_bind,
    .forward = fox_forward,
    .backward = fox_backward,
    .bind_state = fox_bind_state,
};

/* ---- the families: FoX (docs/models.md §fox) and the Transformer (§transformer) ---- */

static const char *attention_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n) {
    int d = c->hidden_size, H = c->num_heads;
    if (d % H) {
        snprintf(msg, n, "model.num_heads = %d does not divide model.hidden_size = %d", H, d);
        return msg;
    }
    o->H = H;
    o->dk = o->dv = d / H;
    o->key_dim = o->value_dim = d;
    return NULL;
}

static void attention_head_keys(const ModelConfig *c, char *buf, size_t n) {
    snprintf(buf, n, "model.hidden_size = %d, model.num_heads = %d", c->hidden_size, c->num_heads);
}

/* QK^T and PV over T/2 keys on average */
static double attention_flops(const ModelConfig *c, const ModelDims *dm, int T) {
    return 2.0 * T * c->hidden_size;
}

static const HfFixed attention_fixed[] = {
    {"qkv_bias", "false", 1},
    {"window_size", "null", 1},
    {"num_kv_heads", "null", 1},
};

static const char *const fox_keys[] = {"num_heads", "qk_norm", "output_gate", "output_norm",
                                       "k_shift",   "v_shift", NULL};
static const HfField fox_fields[] = {
    HF_FIELD("qk_norm", HF_BOOL, HF_ANY, 1, qk_norm),
    HF_FIELD("use_output_gate", HF_BOOL, HF_ANY, 1, output_gate),
    HF_FIELD("use_output_norm", HF_BOOL, HF_ANY, 0, output_norm),
    HF_FIELD("use_k_shift", HF_BOOL, HF_ANY, 0, k_shift),
    HF_FIELD("use_v_shift", HF_BOOL, HF_ANY, 0, v_shift),
};

/* fla's ForgettingAttention: no position embedding, output gate and QK-norm but not FoX-Pro's
 * output norm and shifts */
static int fox_fla_computes(const ModelConfig *c) {
    return c->pe.kind == PE_NOPE && !c->output_norm && !c->k_shift && !c->v_shift;
}

const Family family_fox = {
    .name = "fox",
    .section = "§fox",
    .mix = &mixer_fox,
    .pe = PE_ANY,
    .keys = fox_keys,
    .dims = attention_dims,
    .head_keys = attention_head_keys,
    .mixing_flops = attention_flops,
    .hf = {"forgetting_transformer", "ForgettingTransformerForCausalLM", HF_TABLE(fox_fields),
           HF_TABLE(attention_fixed), PE_NOPE, .fla_computes = fox_fla_computes},
};

static const char *const transformer_keys[] = {"num_heads", "qk_norm", NULL};
/* fla's Attention always rotates q and k by RoPE with base rope_theta: its config.json without
 * a position_embedding is RoPE */
static const HfField transformer_fields[] = {
    HF_FIELD("qk_norm", HF_BOOL, HF_ANY, 1, qk_norm),
    HF_FIELD("rope_theta", HF_REAL, HF_POS, 0, pe.rope_theta),
};

/* fla's Attention always applies RoPE */
static int transformer_fla_computes(const ModelConfig *c) { return c->pe.kind == PE_ROPE; }

const Family family_transformer = {
    .name = "transformer",
    .section = "§transformer",
    .mix = &mixer_fox,
    .pe = PE_ANY,
    .keys = transformer_keys,
    .dims = attention_dims,
    .head_keys = attention_head_keys,
    .mixing_flops = attention_flops,
    .hf = {"transformer", "TransformerForCausalLM", HF_TABLE(transformer_fields),
           HF_TABLE(attention_fixed), PE_ROPE, .fla_computes = transformer_fla_computes},
};
