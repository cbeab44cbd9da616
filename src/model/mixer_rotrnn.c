/* RotRNN mixer (docs/models.md §rotrnn; Biegun, Dolga, Cunningham, Barber 2024, "RotRNN: Modelling
 * Long Sequences with Rotations"): per head h of n state channels,
 * x_t = gamma_h P_h Theta_h P_h^T x_{t-1} + xi_h B_h u_t, y_t = C x_t + D (.) u_t, with
 * P_h = expm(M_h - M_h^T) orthogonal, Theta_h the 2x2 rotations by theta_h, gamma_h =
 * exp(-exp(gamma_log_h)) and xi_h = sqrt((1 - gamma_h^2) / ||B_h||_F^2). In the basis
 * z = P^T x the transition is the complex diagonal gamma e^{i theta} on the pairs (2i, 2i+1):
 * orth_expm makes P, rotrnn_weights the eigenvalues and the matrices xi P^T B and C P, and the
 * DiagRnn core runs the matmuls, the scan and the skip. */
#include <math.h>
#include <stdio.h>

#include "model/family.h"
#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    DiagRnn core;                  /* first: drnn_destroy, drnn_bind_state */
    int theta, gamma_log, M, B, C; /* parameter ids */
    int C2;                        /* bidirectional, else -1 */
    int H, n;                      /* heads, state channels per head */
    RotWeights w; /* the weight op's arguments, set by the forward for the backward */
    /* saved (per layer): the bases P [f32][H, n, n] and xi [f32][H]; scratch: their
     * gradients and the matrix exponential's work space */
    void *P, *xi, *dP, *dxi, *work;
} RotRNN;

enum { W_BASES, W_HEADS, W_WORK }; /* widths */

static const BufDecl rotrnn_bufs[] = {
    BUF_FIXED(RotRNN, P, BUF_SAVED, BUF_F32, W_BASES, 0),
    BUF_FIXED(RotRNN, xi, BUF_SAVED, BUF_F32, W_HEADS, 0),
    BUF_FIXED(RotRNN, dP, BUF_SCRATCH, BUF_F32, W_BASES, 0),
    BUF_FIXED(RotRNN, dxi, BUF_SCRATCH, BUF_F32, W_HEADS, 0),
    BUF_FIXED(RotRNN, work, BUF_SCRATCH, BUF_F32, W_WORK, 0),
};

/* gamma_log = log(-log gamma) ~ U(log(-log r_max), log(-log r_min)) (docs/models.md §rotrnn) */
static void rotrnn_init_gamma_log(const ParamInitArgs *a) {
    double lo = log(-log(a->cfg->r_max)), hi = log(-log(a->cfg->r_min));
    for (int64_t i = 0; i < a->p->numel; i++) a->out[i] = lo + rng_uniform(a->rng) * (hi - lo);
}

static void *rotrnn_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm,
                           const char *p) {
    RotRNN *l = rt_calloc(1, sizeof(RotRNN));
    int d = cfg->hidden_size, H = dm->H, n = dm->dk, Ns = dm->key_dim;
    l->H = H, l->n = n;
    int64_t sth[2] = {H, n / 2}, sg[1] = {H}, sm[3] = {H, n, n}, sb[3] = {H, n, d}, sc[2] = {d, Ns};
    l->theta = declare_recurrent(t, pname(p, "theta").s, 2, sth, init_phase, 0);
    l->gamma_log = declare_recurrent(t, pname(p, "gamma_log").s, 1, sg, rotrnn_init_gamma_log, 0);
    l->M = declare_recurrent(t, pname(p, "M").s, 3, sm, init_normal, 1.0);
    /* the authors' init: B and C ~ N(0, 1/(d + state_size)) */
    l->B = params_add(t, pname(p, "B").s, 3, sb, init_normal, 1 / sqrt((double)d + Ns), 1, 1);
    l->C = params_add(t, pname(p, "C").s, 2, sc, init_normal, 1 / sqrt((double)d + Ns), 1, 1);
    /* the reverse scan's readout (docs/models.md §block-dropout-bidirectional), init as C */
    l->C2 = cfg->bidirectional ? params_add(t, pname(p, "C2").s, 2, sc, init_normal,
                                            1 / sqrt((double)d + Ns), 1, 1)
                               : -1;
    drnn_declare(&l->core, t, p, Ns / 2, d, cfg->bidirectional);
    return l;
}

static void rotrnn_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                        int64_t N) {
    RotRNN *l = layer;
    (void)dm;
    int64_t widths[] = {[W_BASES] = (int64_t)l->H * l->n * l->n,
                        [W_HEADS] = l->H,
                        [W_WORK] = orth_expm_work_size(l->H, l->n)};
    acts_bind(l, rotrnn_bufs, BUF_COUNT(rotrnn_bufs), widths, 0, be, sv, sc, N);
    drnn_bind(&l->core, be, sv, sc, N);
}

static void rotrnn_forward(void *layer, const Ctx *c, const void *x, void *y) {
    RotRNN *l = layer;
    DiagRnn *r = &l->core;
    c->be->orth_expm_fwd(l->P, WM(c, l->M), l->work, l->H, l->n);
    l->w = (RotWeights){.H = l->H,
                        .n = l->n,
                        .d = r->d,
                        .P = l->P,
                        .gamma_log = WM(c, l->gamma_log),
                        .theta = WM(c, l->theta),
                        .B = WM(c, l->B),
                        .C = WM(c, l->C),
                        .xi = l->xi,
                        .loga = r->loga,
                        .angle = r->angle,
                        .Bw = r->Bw,
                        .Cw = r->Cw};
    if (r->bidir) l->w.C2 = WM(c, l->C2), l->w.Cw2 = r->Cw2;
    c->be->rotrnn_weights_fwd(&l->w);
    drnn_forward(r, c, x, y);
}

static void rotrnn_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    RotRNN *l = layer;
    DiagRnn *r = &l->core;
    drnn_backward(r, c, x, dy, dx);
    RotWeightGrads g = {.w = l->w,
                        .dloga = r->dloga,
                        .dangle = r->dangle,
                        .dBw = r->dBw,
                        .dCw = r->dCw,
                        .dP = l->dP,
                        .dxi = l->dxi,
                        .dgamma_log = G(c, l->gamma_log),
                        .dtheta = G(c, l->theta),
                        .dB = G(c, l->B),
                        .dC = G(c, l->C)};
    if (r->bidir) g.dCw2 = r->dCw2, g.dC2 = G(c, l->C2);
    c->be->rotrnn_weights_bwd(&g);
    c->be->orth_expm_bwd(G(c, l->M), l->dP, WM(c, l->M), l->work, l->H, l->n);
}

/* gamma_h (modulus_*), the angles and the state's norm, per head too (the paper's Fig. 3) */
static void rotrnn_stats(void *layer, const Ctx *c, json_t *o) {
    RotRNN *l = layer;
    drnn_stats(&l->core, c, o, l->H);
}

static const MixerImpl mixer_rotrnn = {
    .op = "cscan",
    .create = rotrnn_create,
    .destroy = drnn_destroy,
    .bind = rotrnn_bind,
    .forward = rotrnn_forward,
    .backward = rotrnn_backward,
    .bind_state = drnn_bind_state,
    .stats = rotrnn_stats,
};

/* ---- the family (docs/models.md §rotrnn): num_heads heads of an even real state width ---- */

static const char *rotrnn_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n) {
    if (c->state_size <= 0 || c->state_size > MAX_WIDTH / 2)
        return "model.real_state_size must be in [1, 2^23]";
    if (c->state_size % c->num_heads || (c->state_size / c->num_heads) % 2) {
        snprintf(msg, n,
                 "model.real_state_size = %d, model.num_heads = %d: model.type = rotrnn needs an "
                 "even state width per head",
                 c->state_size, c->num_heads);
        return msg;
    }
    const char *bad =
        drnn_check_init(c, &(DrnnInitKeys){"rotrnn", "gamma_min", "gamma_max", 1}, msg, n);
    if (bad) return bad;
    o->H = c->num_heads;
    o->key_dim = o->value_dim = c->state_size;
    o->dk = o->dv = o->key_dim / o->H;
    return NULL;
}

static void rotrnn_head_keys(const ModelConfig *c, char *buf, size_t n) {
    snprintf(buf, n, "model.real_state_size = %d, model.num_heads = %d", c->state_size,
             c->num_heads);
}

static const char *const rotrnn_keys[] = {"num_heads", "real_state_size", "gamma_min", "gamma_max",
                                          "max_phase", "bidirectional",   NULL};
static const HfField rotrnn_fields[] = {
    HF_FIELD("state_size", HF_INT, HF_POS, 1, state_size),
    HF_FIELD("gamma_min", HF_REAL, HF_POS, 0, r_min),
    HF_FIELD("gamma_max", HF_REAL, HF_POS, 0, r_max),
    HF_FIELD("max_phase", HF_REAL, HF_POS, 0, max_phase),
};

/* no fla counterpart: GLA's backbone names */
const Family family_rotrnn = {
    .name = "rotrnn",
    .section = "§rotrnn",
    .mix = &mixer_rotrnn,
    .pe = PE_BIT(PE_NOPE),
    .keys = rotrnn_keys,
    .dims = rotrnn_dims,
    .head_keys = rotrnn_head_keys,
    .mixing_flops = drnn_flops,
    .hf = {"rotrnn", "RotRNNForCausalLM", HF_TABLE(rotrnn_fields), NULL, 0, PE_NOPE},
};
