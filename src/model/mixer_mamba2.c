/* Mamba2 mixer (docs/models.md §mamba2, fla Mamba2): in_proj to z, x, B, C, dt; the short conv
 * with bias and SiLU over x, B, C; the SSD as chunked GLA with one log decay per head
 * (q = C, k = B, v = dt x, scale 1); the D skip; the gated RMSNorm norm(y silu(z)) w and
 * out_proj. The in_proj and conv1d tensors hold fla's concatenations; the mixer runs each
 * piece on its slice of rows (channels are independent in the depthwise conv). */
#include <math.h>
#include <stdio.h>

#include "model/family.h"
#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    int in_proj, conv_w, conv_b, dt_bias, A_log, D, norm, out_proj; /* parameter ids */
    int I, GN, H, G, Ns, P; /* intermediate, n_groups x state, heads, groups, state, head_dim */
    GrowBuf states;
    LinAttnArgs attn;
    /* saved: the projections z, x, B, C, dt_raw; the conv outputs; dt and the log decay; the
     * SSD output plus skip y; the gated u = y silu(z), its norm's rstd and result r */
    void *z, *xr, *Br, *Cr, *dtr, *xc, *Bc, *Cc, *dt, *g, *y, *u, *rstd, *r;
    /* scratch: q, k, v of the SSD (recomputed in the backward) and the gradients */
    void *q, *k, *v, *dr, *du, *dy, *dz, *dq, *dk, *dv, *dxc, *dBc, *dCc, *dxr, *dBr, *dCr, *ddt,
        *dg, *ddtr;
    /* decoding state: each row's last three conv inputs of x, B, C and [f32] SSD state */
    void *xt, *Bt, *Ct, *S;
} Mamba2;

enum { W_I, W_GN, W_H, W_HN, W_G }; /* widths */

static const BufDecl mamba2_bufs[] = {
    BUF(Mamba2, z, BUF_SAVED, BUF_ACT, W_I),      BUF(Mamba2, xr, BUF_SAVED, BUF_ACT, W_I),
    BUF(Mamba2, Br, BUF_SAVED, BUF_ACT, W_GN),    BUF(Mamba2, Cr, BUF_SAVED, BUF_ACT, W_GN),
    BUF(Mamba2, dtr, BUF_SAVED, BUF_ACT, W_H),    BUF(Mamba2, xc, BUF_SAVED, BUF_ACT, W_I),
    BUF(Mamba2, Bc, BUF_SAVED, BUF_ACT, W_GN),    BUF(Mamba2, Cc, BUF_SAVED, BUF_ACT, W_GN),
    BUF(Mamba2, dt, BUF_SAVED, BUF_F32, W_H),     BUF(Mamba2, g, BUF_SAVED, BUF_F32, W_H),
    BUF(Mamba2, y, BUF_SAVED, BUF_ACT, W_I),      BUF(Mamba2, u, BUF_SAVED, BUF_ACT, W_I),
    BUF(Mamba2, rstd, BUF_SAVED, BUF_F32, W_G),   BUF(Mamba2, r, BUF_SAVED, BUF_ACT, W_I),
    BUF(Mamba2, q, BUF_SCRATCH, BUF_ACT, W_HN),   BUF(Mamba2, k, BUF_SCRATCH, BUF_ACT, W_HN),
    BUF(Mamba2, v, BUF_SCRATCH, BUF_ACT, W_I),    BUF(Mamba2, dr, BUF_SCRATCH, BUF_ACT, W_I),
    BUF(Mamba2, du, BUF_SCRATCH, BUF_ACT, W_I),   BUF(Mamba2, dy, BUF_SCRATCH, BUF_ACT, W_I),
    BUF(Mamba2, dz, BUF_SCRATCH, BUF_ACT, W_I),   BUF(Mamba2, dq, BUF_SCRATCH, BUF_ACT, W_HN),
    BUF(Mamba2, dk, BUF_SCRATCH, BUF_ACT, W_HN),  BUF(Mamba2, dv, BUF_SCRATCH, BUF_ACT, W_I),
    BUF(Mamba2, dxc, BUF_SCRATCH, BUF_ACT, W_I),  BUF(Mamba2, dBc, BUF_SCRATCH, BUF_ACT, W_GN),
    BUF(Mamba2, dCc, BUF_SCRATCH, BUF_ACT, W_GN), BUF(Mamba2, dxr, BUF_SCRATCH, BUF_ACT, W_I),
    BUF(Mamba2, dBr, BUF_SCRATCH, BUF_ACT, W_GN), BUF(Mamba2, dCr, BUF_SCRATCH, BUF_ACT, W_GN),
    BUF(Mamba2, ddt, BUF_SCRATCH, BUF_F32, W_H),  BUF(Mamba2, dg, BUF_SCRATCH, BUF_F32, W_H),
    BUF(Mamba2, ddtr, BUF_SCRATCH, BUF_ACT, W_H),
};

/* A_log = log U(1, 16) (docs/models.md §mamba2) */
static void mamba2_init_a_log(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++) a->out[i] = log(1 + 15 * rng_uniform(a->rng));
}

static void *mamba2_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm,
                           const char *p) {
    Mamba2 *l = rt_calloc(1, sizeof(Mamba2));
    int d = cfg->hidden_size;
    double std = cfg->init_std;
    l->I = dm->value_dim, l->H = dm->H, l->G = cfg->n_groups, l->Ns = dm->dk, l->P = dm->dv;
    l->GN = l->G * l->Ns;
    int conv_dim = l->I + 2 * l->GN;
    l->in_proj = declare_linear(t, pname(p, "in_proj.weight").s, l->I + conv_dim + l->H, d, std);
    l->conv_w = declare_conv(t, pname(p, "conv1d.weight").s, conv_dim, std);
    l->conv_b = cfg->use_conv_bias ? declare_vector(t, pname(p, "conv1d.bias").s, conv_dim, 0) : -1;
    int64_t sh[1] = {l->H};
    l->dt_bias = params_add(t, pname(p, "dt_bias").s, 1, sh, init_dt_bias, 0, 0, 1);
    l->A_log = params_add(t, pname(p, "A_log").s, 1, sh, mamba2_init_a_log, 0, 0, 1);
    l->D = declare_vector(t, pname(p, "D").s, l->H, 1);
    l->norm = declare_vector(t, pname(p, "norm.weight").s, l->I, 1);
    /* fla's rescale_prenorm_residual: kaiming_uniform(a=sqrt 5) / sqrt(L) = U(+-1/sqrt(I L)) */
    int64_t osh[2] = {d, l->I};
    l->out_proj = params_add(t, pname(p, "out_proj.weight").s, 2, osh, init_uniform,
                             1.0 / sqrt((double)l->I * cfg->num_layers), 1, 1);
    return l;
}

static void mamba2_destroy(void *layer, const Backend *be) {
    Mamba2 *l = layer;
    growbuf_free(&l->states, be);
    rt_free(l);
}

static void mamba2_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                        int64_t N) {
    Mamba2 *l = layer;
    (void)dm;
    int64_t widths[] = {
        [W_I] = l->I, [W_GN] = l->GN, [W_H] = l->H, [W_HN] = (int64_t)l->H * l->Ns, [W_G] = l->G};
    acts_bind(l, mamba2_bufs, BUF_COUNT(mamba2_bufs), widths, 0, be, sv, sc, N);
}

/* Rows [row0, row0 + rows) of in_proj: its weight, or its gradient. */
static void *in_w(const Ctx *c, const Mamba2 *l, int row0) {
    return (char *)W(c, l->in_proj) + ACT(c, (int64_t)row0 * c->cfg->hidden_size);
}
static void *in_g(const Ctx *c, const Mamba2 *l, int row0) {
    return (char *)G(c, l->in_proj) + F32(c, (int64_t)row0 * c->cfg->hidden_size);
}

/* The conv over channels [c0, c0 + C) of xBC: forward (a decoding pass keeps the slice's
 * tail), or backward with the parameter gradients of those channels. */
static void conv_slice(const Ctx *c, const Mamba2 *l, int c0, int C, void *y, const void *x,
                       void *tail) {
    const void *b = l->conv_b >= 0 ? (char *)W(c, l->conv_b) + ACT(c, c0) : NULL;
    const void *w = (char *)W(c, l->conv_w) + ACT(c, SHORT_CONV_TAPS * (int64_t)c0);
    if (c->mode == PASS_STEP) {
        c->be->conv_step(y, x, w, b, tail, c->seqs, C, SHORT_CONV_TAPS, ACT_SILU);
        return;
    }
    c->be->conv_fwd(y, x, w, b, c->seqs, C, SHORT_CONV_TAPS, ACT_SILU);
    if (c->mode == PASS_PREFILL) c->be->segment_tail(tail, x, c->seqs, C, 3, 0);
}
static void conv_slice_bwd(const Ctx *c, const Mamba2 *l, int c0, int C, void *dx, const void *dy,
                           const void *x) {
    const void *b = l->conv_b >= 0 ? (char *)W(c, l->conv_b) + ACT(c, c0) : NULL;
    void *db = l->conv_b >= 0 ? (char *)G(c, l->conv_b) + F32(c, c0) : NULL;
    int64_t w0 = SHORT_CONV_TAPS * (int64_t)c0;
    c->be->conv_bwd(dx, (char *)G(c, l->conv_w) + F32(c, w0), db, dy, x,
                    (char *)W(c, l->conv_w) + ACT(c, w0), b, c->seqs, C, SHORT_CONV_TAPS, ACT_SILU);
}

/* q = C and k = B broadcast from the groups to the heads, v = dt x. */
static void ssd_inputs(const Ctx *c, const Mamba2 *l) {
    int N = (int)c->N;
    c->be->group_bcast_fwd(l->q, l->Cc, N, l->H, l->G, l->Ns);
    c->be->group_bcast_fwd(l->k, l->Bc, N, l->H, l->G, l->Ns);
    c->be->head_scale_fwd(l->v, l->xc, l->dt, N, l->H, l->P);
}

static void mamba2_forward(void *layer, const Ctx *c, const void *x, void *out) {
    Mamba2 *l = layer;
    const Backend *be = c->be;
    int N = (int)c->N, d = c->cfg->hidden_size, I = l->I, GN = l->GN, H = l->H;
    be->matmul_fwd(l->z, x, in_w(c, l, 0), NULL, N, I, d);
    be->matmul_fwd(l->xr, x, in_w(c, l, I), NULL, N, I, d);
    be->matmul_fwd(l->Br, x, in_w(c, l, 2 * I), NULL, N, GN, d);
    be->matmul_fwd(l->Cr, x, in_w(c, l, 2 * I + GN), NULL, N, GN, d);
    be->matmul_fwd(l->dtr, x, in_w(c, l, 2 * I + 2 * GN), NULL, N, H, d);
    conv_slice(c, l, 0, I, l->xc, l->xr, l->xt);
    conv_slice(c, l, I, GN, l->Bc, l->Br, l->Bt);
    conv_slice(c, l, I + GN, GN, l->Cc, l->Cr, l->Ct);
    be->decay_gates_fwd(l->dt, l->g, l->dtr, WM(c, l->A_log), WM(c, l->dt_bias), N, H);
    ssd_inputs(c, l);
    l->attn = (LinAttnArgs){.s = c->seqs,
                            .H = H,
                            .K = l->Ns,
                            .V = l->P,
                            .scale = 1.0,
                            .q = l->q,
                            .k = l->k,
                            .v = l->v,
                            .g = l->g,
                            .g_per_head = 1,
                            .o = l->y,
                            .state = c->mode == PASS_TRAIN ? NULL : l->S};
    linattn_run(c, &l->attn, &l->states, 0);
    be->head_skip_fwd(l->y, l->xc, WM(c, l->D), N, H, l->P);
    be->gate_mul_fwd(l->u, l->y, l->z, (int64_t)N * I, ACT_SILU);
    be->rmsnorm_fwd(l->r, l->rstd, l->u, W(c, l->norm), N, l->G, I / l->G, 1, c->cfg->norm_eps);
    be->matmul_fwd(out, l->r, W(c, l->out_proj), NULL, N, d, I);
}

static void mamba2_backward(void *layer, const Ctx *c, const void *x, const void *dout, void *dx) {
    Mamba2 *l = layer;
    const Backend *be = c->be;
    int N = (int)c->N, d = c->cfg->hidden_size, I = l->I, GN = l->GN, H = l->H;
    be->matmul_bwd(l->dr, G(c, l->out_proj), NULL, dout, l->r, W(c, l->out_proj), N, d, I, 0);
    be->rmsnorm_bwd(l->du, G(c, l->norm), l->dr, l->u, W(c, l->norm), l->rstd, N, l->G, I / l->G, 1,
                    0);
    be->gate_mul_bwd(l->dy, l->dz, l->du, l->y, l->z, (int64_t)N * I, ACT_SILU);
    ssd_inputs(c, l);
    be->gla_bwd(&(LinAttnGrads){
        .a = l->attn, .dout = l->dy, .dq = l->dq, .dk = l->dk, .dv = l->dv, .dg = l->dg});
    be->head_scale_bwd(l->dxc, l->ddt, l->dv, l->xc, l->dt, N, H, l->P);
    be->head_skip_bwd(l->dxc, G(c, l->D), l->dy, l->xc, WM(c, l->D), N, H, l->P);
    be->group_bcast_bwd(l->dCc, l->dq, N, H, l->G, l->Ns);
    be->group_bcast_bwd(l->dBc, l->dk, N, H, l->G, l->Ns);
    be->decay_gates_bwd(l->ddtr, G(c, l->A_log), G(c, l->dt_bias), l->ddt, l->dg, l->dtr,
                        WM(c, l->A_log), WM(c, l->dt_bias), N, H);
    conv_slice_bwd(c, l, 0, I, l->dxr, l->dxc, l->xr);
    conv_slice_bwd(c, l, I, GN, l->dBr, l->dBc, l->Br);
    conv_slice_bwd(c, l, I + GN, GN, l->dCr, l->dCc, l->Cr);
    be->matmul_bwd(dx, in_g(c, l, 0), NULL, l->dz, x, in_w(c, l, 0), N, I, d, 0);
    be->matmul_bwd(dx, in_g(c, l, I), NULL, l->dxr, x, in_w(c, l, I), N, I, d, 1);
    be->matmul_bwd(dx, in_g(c, l, 2 * I), NULL, l->dBr, x, in_w(c, l, 2 * I), N, GN, d, 1);
    be->matmul_bwd(dx, in_g(c, l, 2 * I + GN), NULL, l->dCr, x, in_w(c, l, 2 * I + GN), N, GN, d,
                   1);
    be->matmul_bwd(dx, in_g(c, l, 2 * I + 2 * GN), NULL, l->ddtr, x, in_w(c, l, 2 * I + 2 * GN), N,
                   H, d, 1);
}

enum { W_XT, W_GT, W_S }; /* state widths */

static const BufDecl mamba2_state[] = {
    BUF(Mamba2, xt, BUF_SAVED, BUF_ACT, W_XT),
    BUF(Mamba2, Bt, BUF_SAVED, BUF_ACT, W_GT),
    BUF(Mamba2, Ct, BUF_SAVED, BUF_ACT, W_GT),
    BUF(Mamba2, S, BUF_SAVED, BUF_F32, W_S),
};

static void mamba2_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                              int64_t rows, int max_len) {
    Mamba2 *l = layer;
    (void)dm, (void)max_len;
    int64_t widths[] = {[W_XT] = 3 * (int64_t)l->I,
                        [W_GT] = 3 * (int64_t)l->GN,
                        [W_S] = (int64_t)l->H * l->Ns * l->P};
    acts_bind(l, mamba2_state, BUF_COUNT(mamba2_state), widths, 0, be, state, state, rows);
}

static const MixerImpl mixer_mamba2 = {
    .op = "gla",
    .create = mamba2_create,
    .destroy = mamba2_destroy,
    .bind = mamba2_bind,
    .forward = mamba2_forward,
    .backward = mamba2_backward,
    .bind_state = mamba2_bind_state,
};

/* ---- the family (docs/models.md §mamba2): intermediate = expand d, H = intermediate / head_dim,
 * dk = state_size, dv = head_dim; blocks without an MLP ---- */

static const char *mamba2_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n) {
    double I = (double)c->hidden_size * c->expand;
    if (c->expand <= 0 || I > MAX_WIDTH)
        return "model.expand must be positive, with expand x hidden_size at most 2^24";
    if (c->head_dim <= 0 || (int)I % c->head_dim) {
        snprintf(msg, n,
                 "model.value_head_dim = %d must divide model.expand x model.hidden_size = %d",
                 c->head_dim, (int)I);
        return msg;
    }
    if (c->state_size <= 0 || c->state_size > 4096) return "model.state_size must be in [1, 4096]";
    o->H = (int)I / c->head_dim;
    if (c->n_groups <= 0 || o->H % c->n_groups) {
        snprintf(
            msg, n,
            "model.n_groups = %d must divide the %d heads (expand x hidden_size / value_head_dim)",
            c->n_groups, o->H);
        return msg;
    }
    o->dk = c->state_size;
    o->dv = c->head_dim;
    o->key_dim = o->H * o->dk;
    o->value_dim = (int)I;
    return NULL;
}

static void mamba2_head_keys(const ModelConfig *c, char *buf, size_t n) {
    snprintf(buf, n,
             "model.hidden_size = %d, model.expand = %d, model.value_head_dim = %d, "
             "model.state_size = %d",
             c->hidden_size, c->expand, c->head_dim, c->state_size);
}

static const char *const mamba2_keys[] = {"expand",   "value_head_dim", "state_size",
                                          "n_groups", "use_conv_bias",  NULL};
static const HfField mamba2_fields[] = {
    HF_FIELD("head_dim", HF_INT, HF_POS, 1, head_dim),
    HF_FIELD("state_size", HF_INT, HF_POS, 1, state_size),
    HF_FIELD("expand", HF_INT, HF_POS, 1, expand),
    HF_FIELD("n_groups", HF_INT, HF_POS, 1, n_groups),
    HF_FIELD("use_conv_bias", HF_BOOL, HF_ANY, 0, use_conv_bias),
};
/* fla's defaults; the init ranges (A_init_range, dt_min/max/init_floor) and dt_limit (0, inf),
 * which JSON cannot write, are not written */
static const HfFixed mamba2_fixed[] = {
    {"conv_kernel", "4", 1},
    {"use_bias", "false", 1},
    {"rmsnorm", "true", 1},
    {"norm_before_gate", "false", 1},
    {"D_has_hdim", "false", 1},
    {"residual_in_fp32", "true", 0},
    {"rescale_prenorm_residual", "true", 0},
    {"chunk_size", "256", 0},
};

/* fla's Mamba2: backbone.*, norm, mixer, norm_f */
static const BackboneNames MAMBA2_BACKBONE = {"backbone", "norm", "mixer", "norm_f"};

/* fla's torch fallback (its path without mamba_ssm's kernels) gives head h the B/C group
 * h mod n_groups, its kernels group h / (H / n_groups) as rotor (docs/models.md §mamba2): one group
 * is the same function on both paths */
static int mamba2_fla_computes(const ModelConfig *c) { return c->n_groups == 1; }

const Family family_mamba2 = {
    .name = "mamba2",
    .section = "§mamba2",
    .mix = &mixer_mamba2,
    .pe = PE_BIT(PE_NOPE),
    .keys = mamba2_keys,
    .names = &MAMBA2_BACKBONE,
    .no_mlp = 1,
    .dims = mamba2_dims,
    .head_keys = mamba2_head_keys,
    .mixing_flops = chunked_flops,
    .hf = {"mamba2", "Mamba2ForCausalLM", HF_TABLE(mamba2_fields), HF_TABLE(mamba2_fixed), PE_NOPE,
           .derived_heads = 1, .fla_computes = mamba2_fla_computes},
};
