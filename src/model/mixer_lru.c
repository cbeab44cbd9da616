/* Linear Recurrent Unit mixer (docs/models.md §13; Orvieto et al. 2023, "Resurrecting
 * Recurrent Neural Networks for Long Sequences"): h_t = lambda (.) h_{t-1} + gamma (.) (B u_t)
 * over N complex channels, y_t = Re(C h_t) + D (.) u_t, with lambda = exp(-exp(nu_log) +
 * i exp(theta_log)) and gamma = exp(gamma_log). lru_weights turns the parameters into the
 * eigenvalues and two real matrices over interleaved (re, im) pairs, and the DiagRnn core
 * runs the matmuls, the scan and the skip. */
#include <math.h>
#include <stdio.h>

#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    int nu_log, theta_log, gamma_log, B_re, B_im, C_re, C_im; /* parameter ids */
    int C_re2, C_im2;                                          /* bidirectional, else -1 */
    DiagRnn core;
    LruWeights w; /* the weight op's arguments, set by the forward for the backward */
} LRU;

static void *lru_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm, const char *p) {
    LRU *l = rt_calloc(1, sizeof(LRU));
    char name[PARAM_NAME_MAX];
#define NAME(s) (snprintf(name, sizeof name, "%s%s", p, s), name)
    int d = cfg->hidden_size, N = dm->key_dim / 2;
    int64_t sn[1] = {N}, sb[2] = {N, d}, sc[2] = {d, N};
    l->nu_log = declare_recurrent(t, NAME("nu_log"), 1, sn, INIT_LRU_NU_LOG, 0);
    l->theta_log = declare_recurrent(t, NAME("theta_log"), 1, sn, INIT_LRU_THETA_LOG, 0);
    l->gamma_log = declare_recurrent(t, NAME("gamma_log"), 1, sn, INIT_LRU_GAMMA_LOG, l->nu_log);
    /* the paper's Glorot-style init: B ~ N(0, 1/(2d)) per part, C ~ N(0, 1/N) per part */
    l->B_re = params_add(t, NAME("B_re"), 2, sb, INIT_NORMAL, 1 / sqrt(2.0 * d), 1, 1);
    l->B_im = params_add(t, NAME("B_im"), 2, sb, INIT_NORMAL, 1 / sqrt(2.0 * d), 1, 1);
    l->C_re = params_add(t, NAME("C_re"), 2, sc, INIT_NORMAL, 1 / sqrt((double)N), 1, 1);
    l->C_im = params_add(t, NAME("C_im"), 2, sc, INIT_NORMAL, 1 / sqrt((double)N), 1, 1);
    l->C_re2 = l->C_im2 = -1;
    if (cfg->bidirectional) { /* the reverse scan's readout (docs/models.md §16), init as C */
        l->C_re2 = params_add(t, NAME("C_re2"), 2, sc, INIT_NORMAL, 1 / sqrt((double)N), 1, 1);
        l->C_im2 = params_add(t, NAME("C_im2"), 2, sc, INIT_NORMAL, 1 / sqrt((double)N), 1, 1);
    }
#undef NAME
    drnn_declare(&l->core, t, p, N, d, cfg->bidirectional);
    return l;
}

static void lru_destroy(void *layer, const Backend *be) {
    LRU *l = layer;
    growbuf_free(&l->core.states, be);
    rt_free(l);
}

static void lru_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                     int64_t N) {
    (void)dm;
    drnn_bind(&((LRU *)layer)->core, be, sv, sc, N);
}

static void lru_forward(void *layer, const Ctx *c, const void *x, void *y) {
    LRU *l = layer;
    DiagRnn *r = &l->core;
    l->w = (LruWeights){.N = r->C, .d = r->d, .nu_log = WM(c, l->nu_log), .theta_log = WM(c, l->theta_log),
                        .gamma_log = WM(c, l->gamma_log), .B_re = WM(c, l->B_re), .B_im = WM(c, l->B_im),
                        .C_re = WM(c, l->C_re), .C_im = WM(c, l->C_im), .loga = r->loga,
                        .angle = r->angle, .Bw = r->Bw, .Cw = r->Cw};
    if (r->bidir) l->w.C_re2 = WM(c, l->C_re2), l->w.C_im2 = WM(c, l->C_im2), l->w.Cw2 = r->Cw2;
    c->be->lru_weights_fwd(&l->w);
    drnn_forward(r, c, x, y);
}

static void lru_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    LRU *l = layer;
    DiagRnn *r = &l->core;
    drnn_backward(r, c, x, dy, dx);
    LruWeightGrads g = {
        .w = l->w, .dloga = r->dloga, .dangle = r->dangle, .dBw = r->dBw, .dCw = r->dCw,
        .dnu_log = G(c, l->nu_log), .dtheta_log = G(c, l->theta_log), .dgamma_log = G(c, l->gamma_log),
        .dB_re = G(c, l->B_re), .dB_im = G(c, l->B_im), .dC_re = G(c, l->C_re), .dC_im = G(c, l->C_im)};
    if (r->bidir) g.dCw2 = r->dCw2, g.dC_re2 = G(c, l->C_re2), g.dC_im2 = G(c, l->C_im2);
    c->be->lru_weights_bwd(&g);
}

static void lru_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                           int64_t rows, int max_len) {
    (void)dm, (void)max_len;
    drnn_bind_state(&((LRU *)layer)->core, be, state, rows);
}

const MixerImpl mixer_lru = {"cscan",     lru_create,   lru_destroy,   lru_bind,
                             lru_forward, lru_backward, lru_bind_state, NULL, NULL};
