/* Linear Recurrent Unit mixer (docs/models.md §lru; Orvieto et al. 2023, "Resurrecting
 * Recurrent Neural Networks for Long Sequences"): h_t = lambda (.) h_{t-1} + gamma (.) (B u_t)
 * over N complex channels, y_t = Re(C h_t) + D (.) u_t, with lambda = exp(-exp(nu_log) +
 * i exp(theta_log)) and gamma = exp(gamma_log). lru_weights turns the parameters into the
 * eigenvalues and two real matrices over interleaved (re, im) pairs, and the DiagRnn core
 * runs the matmuls, the scan and the skip. */
#include <math.h>
#include <stdio.h>

#include "model/family.h"
#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    DiagRnn core; /* first: drnn_destroy, drnn_bind_state */
    int nu_log, theta_log, gamma_log, B_re, B_im, C_re, C_im; /* parameter ids */
    int C_re2, C_im2;                                         /* bidirectional, else -1 */
    LruWeights w; /* the weight op's arguments, set by the forward for the backward */
} LRU;

/* nu_log = log(-1/2 log(u (r_max^2 - r_min^2) + r_min^2)), u ~ U(0, 1): |lambda| uniform on the
 * ring r_min <= |lambda| <= r_max */
static void lru_init_nu_log(const ParamInitArgs *a) {
    double rmin2 = a->cfg->r_min * a->cfg->r_min, rmax2 = a->cfg->r_max * a->cfg->r_max;
    for (int64_t i = 0; i < a->p->numel; i++)
        a->out[i] = log(-0.5 * log(rng_uniform(a->rng) * (rmax2 - rmin2) + rmin2));
}

/* theta_log = log(max_phase u) */
static void lru_init_theta_log(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++)
        a->out[i] = log(a->cfg->max_phase * rng_uniform(a->rng));
}

/* gamma_log = log sqrt(1 - |lambda|^2), |lambda| = exp(-exp(nu_log)) of the nu_log whose index
 * is init_arg */
static void lru_init_gamma_log(const ParamInitArgs *a) {
    a->values_of(a->ctx, (int)a->p->init_arg, a->out);
    for (int64_t i = 0; i < a->p->numel; i++) a->out[i] = 0.5 * log(-expm1(-2 * exp(a->out[i])));
}

static void *lru_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm, const char *p) {
    LRU *l = rt_calloc(1, sizeof(LRU));
    int d = cfg->hidden_size, N = dm->key_dim / 2;
    int64_t sn[1] = {N}, sb[2] = {N, d}, sc[2] = {d, N};
    l->nu_log = declare_recurrent(t, pname(p, "nu_log").s, 1, sn, lru_init_nu_log, 0);
    l->theta_log = declare_recurrent(t, pname(p, "theta_log").s, 1, sn, lru_init_theta_log, 0);
    l->gamma_log =
        declare_recurrent(t, pname(p, "gamma_log").s, 1, sn, lru_init_gamma_log, l->nu_log);
    /* the paper's Glorot-style init: B ~ N(0, 1/(2d)) per part, C ~ N(0, 1/N) per part */
    l->B_re = params_add(t, pname(p, "B_re").s, 2, sb, init_normal, 1 / sqrt(2.0 * d), 1, 1);
    l->B_im = params_add(t, pname(p, "B_im").s, 2, sb, init_normal, 1 / sqrt(2.0 * d), 1, 1);
    l->C_re = params_add(t, pname(p, "C_re").s, 2, sc, init_normal, 1 / sqrt((double)N), 1, 1);
    l->C_im = params_add(t, pname(p, "C_im").s, 2, sc, init_normal, 1 / sqrt((double)N), 1, 1);
    l->C_re2 = l->C_im2 = -1;
    if (cfg->bidirectional) { /* the reverse scan's readout (docs/models.md
                                 §block-dropout-bidirectional), init as C */
        l->C_re2 =
            params_add(t, pname(p, "C_re2").s, 2, sc, init_normal, 1 / sqrt((double)N), 1, 1);
        l->C_im2 =
            params_add(t, pname(p, "C_im2").s, 2, sc, init_normal, 1 / sqrt((double)N), 1, 1);
    }
    drnn_declare(&l->core, t, p, N, d, cfg->bidirectional);
    return l;
}

static void lru_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                     int64_t N) {
    (void)dm;
    drnn_bind(&((LRU *)layer)->core, be, sv, sc, N);
}

static void lru_forward(void *layer, const Ctx *c, const void *x, void *y) {
    LRU *l = layer;
    DiagRnn *r = &l->core;
    l->w = (LruWeights){.N = r->C,
                        .d = r->d,
                        .nu_log = WM(c, l->nu_log),
                        .theta_log = WM(c, l->theta_log),
                        .gamma_log = WM(c, l->gamma_log),
                        .B_re = WM(c, l->B_re),
                        .B_im = WM(c, l->B_im),
                        .C_re = WM(c, l->C_re),
                        .C_im = WM(c, l->C_im),
                        .loga = r->loga,
                        .angle = r->angle,
                        .Bw = r->Bw,
                        .Cw = r->Cw};
    if (r->bidir) l->w.C_re2 = WM(c, l->C_re2), l->w.C_im2 = WM(c, l->C_im2), l->w.Cw2 = r->Cw2;
    c->be->lru_weights_fwd(&l->w);
    drnn_forward(r, c, x, y);
}

static void lru_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    LRU *l = layer;
    DiagRnn *r = &l->core;
    drnn_backward(r, c, x, dy, dx);
    LruWeightGrads g = {.w = l->w,
                        .dloga = r->dloga,
                        .dangle = r->dangle,
                        .dBw = r->dBw,
                        .dCw = r->dCw,
                        .dnu_log = G(c, l->nu_log),
                        .dtheta_log = G(c, l->theta_log),
                        .dgamma_log = G(c, l->gamma_log),
                        .dB_re = G(c, l->B_re),
                        .dB_im = G(c, l->B_im),
                        .dC_re = G(c, l->C_re),
                        .dC_im = G(c, l->C_im)};
    if (r->bidir) g.dCw2 = r->dCw2, g.dC_re2 = G(c, l->C_re2), g.dC_im2 = G(c, l->C_im2);
    c->be->lru_weights_bwd(&g);
}

static void lru_stats(void *layer, const Ctx *c, json_t *o) {
    drnn_stats(&((LRU *)layer)->core, c, o, 1);
}

static const MixerImpl mixer_lru = {
    .op = "cscan",
    .create = lru_create,
    .destroy = drnn_destroy,
    .bind = lru_bind,
    .forward = lru_forward,
    .backward = lru_backward,
    .bind_state = drnn_bind_state,
    .stats = lru_stats,
};

/* ---- the family (docs/models.md §lru): one head of 2 state_size reals ---- */

static const char *lru_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n) {
    if (c->state_size <= 0 || c->state_size > MAX_WIDTH / 2)
        return "model.complex_state_size must be in [1, 2^23]";
    const char *bad = drnn_check_init(c, &(DrnnInitKeys){"lru", "r_min", "r_max", 0}, msg, n);
    if (bad) return bad;
    o->H = 1;
    o->key_dim = o->value_dim = 2 * c->state_size;
    o->dk = o->dv = o->key_dim;
    return NULL;
}

static void lru_head_keys(const ModelConfig *c, char *buf, size_t n) {
    snprintf(buf, n, "model.complex_state_size = %d", c->state_size);
}

static const char *const lru_keys[] = {"complex_state_size", "r_min",         "r_max",
                                       "max_phase",          "bidirectional", NULL};
/* rotor's own (no fla counterpart); the init ranges are kept so that a checkpoint's
 * config.json restates its run config */
static const HfField lru_fields[] = {
    HF_FIELD("state_size", HF_INT, HF_POS, 1, state_size),
    HF_FIELD("r_min", HF_REAL, HF_NONNEG, 0, r_min),
    HF_FIELD("r_max", HF_REAL, HF_POS, 0, r_max),
    HF_FIELD("max_phase", HF_REAL, HF_POS, 0, max_phase),
};

/* no fla counterpart: GLA's backbone names */
const Family family_lru = {
    .name = "lru",
    .section = "§lru",
    .mix = &mixer_lru,
    .pe = PE_BIT(PE_NOPE),
    .keys = lru_keys,
    .dims = lru_dims,
    .head_keys = lru_head_keys,
    .mixing_flops = drnn_flops,
    .hf = {"lru", "LRUForCausalLM", HF_TABLE(lru_fields), NULL, 0, PE_NOPE},
};
