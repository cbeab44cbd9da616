/* The nonlinear RNN mixers (docs/models.md §nonlinear-rnns): h_t = act(W h_{t-1} + U x_t (+ b))
 * over each segment, the mixer's output the states h. The four differ in W (act: tanh or modReLU,
 * model.nonlinearity; by default tanh for the first two, modReLU for the others):
 *   rnn       W a free matrix (Glorot init), U with a bias;
 *   rnn_orth  W a free matrix (random orthogonal init), U with a bias;
 *   exprnn    W = expm(M - M^T) (Lezcano-Casado and Martinez-Rubio 2019);
 *   nnrnn     W = P (Lambda + T) P^T, P = expm(M - M^T) (Kerg et al. 2019);
 *   eurnn     W = R_{L-1} ... R_0, L = model.capacity layers of 2 x 2 rotations of channel
 *             pairs (Jing et al. 2017's tunable-space EURNN, real-valued).
 * The input projection is one GEMM over all tokens, the recurrence the rnn ops; the nnRNN's
 * penalties delta ||1 - gamma||^2 and the L2 decay of T are rnn_penalty. With model.gamma_clamp the
 * nnRNN's gamma is a constant: not trained, its gradient zeroed, no penalty on it. */
#include <math.h>
#include <stdio.h>

#include "model/family.h"
#include "model/model_internal.h"
#include "util/error.h"

typedef struct RnnCell RnnCell;
typedef struct {
    CellState cs; /* decoding or carried state: each row's [f32] n state */
    const RnnCell *cell;
    int n, d, L; /* L: EURNN's layers of rotations */
    int U, Ub, V, M, T, gamma, theta,
        bmod;        /* parameter ids, -1 where absent (theta: nnRNN's or EURNN's angles) */
    int gamma_fixed; /* model.gamma_clamp > 0: the nnRNN's gamma is held */
    RnnArgs a;       /* the op's arguments, set by the forward for the backward */
    NnrnnWeights w;
    /* saved: the states h; the recurrent matrix W (expRNN, nnRNN, EURNN [f32][n, n]), the nnRNN's P
     * and K; scratch: z, its gradient, the gradients at W and P, and the work of the matrix
     * exponential, the Schur form and EURNN's backward */
    void *h, *W, *P, *K, *z, *dz, *dW, *dP, *work;
} RnnLayer;

enum { W_STATE, W_MATRIX, W_WORK }; /* widths: n per token; n^2; the work space */
enum { F_EXP = 1, F_NN = 2 };       /* features: W made from parameters; the nnRNN's Schur form */

static const BufDecl rnn_bufs[] = {
    BUF(RnnLayer, h, BUF_SAVED, BUF_ACT, W_STATE),
    BUF_FIXED(RnnLayer, W, BUF_SAVED, BUF_F32, W_MATRIX, F_EXP),
    BUF_FIXED(RnnLayer, P, BUF_SAVED, BUF_F32, W_MATRIX, F_NN),
    BUF_FIXED(RnnLayer, K, BUF_SAVED, BUF_F32, W_MATRIX, F_NN),
    BUF(RnnLayer, z, BUF_SCRATCH, BUF_ACT, W_STATE),
    BUF(RnnLayer, dz, BUF_SCRATCH, BUF_ACT, W_STATE),
    BUF_FIXED(RnnLayer, dW, BUF_SCRATCH, BUF_F32, W_MATRIX, F_EXP),
    BUF_FIXED(RnnLayer, dP, BUF_SCRATCH, BUF_F32, W_MATRIX, F_NN),
    BUF_FIXED(RnnLayer, work, BUF_SCRATCH, BUF_F32, W_WORK, F_EXP),
};

/* A Haar-random orthogonal matrix (rnn_orth's V): Gram-Schmidt on the rows of a Gaussian
 * n x n matrix, as the QR with the signs of R's diagonal fixed. */
static void rnn_init_orthogonal(const ParamInitArgs *a) {
    double *m = a->out;
    int n = (int)a->p->shape[0];
    for (int64_t i = 0; i < a->p->numel; i++) m[i] = rng_normal(a->rng);
    for (int i = 0; i < n; i++) {
        double *row = m + (size_t)i * n;
        for (int k = 0; k < i; k++) {
            const double *q = m + (size_t)k * n;
            double dot = 0;
            for (int j = 0; j < n; j++) dot += row[j] * q[j];
            for (int j = 0; j < n; j++) row[j] -= dot * q[j];
        }
        double norm = 0;
        for (int j = 0; j < n; j++) norm += row[j] * row[j];
        for (int j = 0; j < n; j++) row[j] /= sqrt(norm);
    }
}

/* The expRNN authors' skew initialisers: an [n, n] M with M - M^T the 2x2 blocks of +-s_i,
 * for each pair i < n/2 an angle s_i, Henaff's U(-pi, 0) or Cayley's -tan(u/2), u ~ U(0, pi/2)
 * (model.orth_init), written at (2i, 2i+1) when init_arg is 1 and at (2i+1, 2i) when -1. */
static void rnn_init_orth_log(const ParamInitArgs *a) {
    int n = (int)a->p->shape[0], upper = a->p->init_arg > 0;
    for (int64_t i = 0; i < a->p->numel; i++) a->out[i] = 0;
    for (int i = 0; i + 1 < n; i += 2) {
        double u = rng_uniform(a->rng);
        double s = a->cfg->orth_init == ORTH_INIT_HENAFF ? -M_PI * u : -tan(u * M_PI / 4);
        a->out[upper ? (size_t)i * n + i + 1 : (size_t)(i + 1) * n + i] = s;
    }
}

/* rnn: W is the free matrix V, normal with std 1/sqrt(n); rnn_orth: V random orthogonal */
static void free_declare(RnnLayer *l, ParamTable *t, const ModelConfig *cfg, const char *p) {
    (void)cfg;
    int64_t sw[2] = {l->n, l->n};
    l->V = params_add(t, pname(p, "V.weight").s, 2, sw, init_normal, sqrt(1.0 / l->n), 1, 1);
}

static void orth_declare(RnnLayer *l, ParamTable *t, const ModelConfig *cfg, const char *p) {
    (void)cfg;
    int64_t sw[2] = {l->n, l->n};
    l->V = params_add(t, pname(p, "V.weight").s, 2, sw, rnn_init_orthogonal, 0, 1, 1);
}

/* exprnn: W = expm(M - M^T); rotor's W is the transpose of the code's recurrent_kernel: M is
 * the lower triangle */
static void exp_declare(RnnLayer *l, ParamTable *t, const ModelConfig *cfg, const char *p) {
    (void)cfg;
    int64_t sw[2] = {l->n, l->n};
    l->M = declare_orthogonal(t, pname(p, "log_recurrent_kernel").s, 2, sw, rnn_init_orth_log, -1);
}

static void exp_weight_fwd(RnnLayer *l, const Ctx *c) {
    c->be->orth_expm_fwd(l->W, WM(c, l->M), l->work, 1, l->n);
}

static void exp_weight_bwd(RnnLayer *l, const Ctx *c) {
    c->be->orth_expm_bwd(G(c, l->M), l->dW, WM(c, l->M), l->work, 1, l->n);
}

/* nnrnn: W = P (Lambda + T) P^T, P = expm(M - M^T); with model.gamma_clamp gamma is held */
static void nn_declare(RnnLayer *l, ParamTable *t, const ModelConfig *cfg, const char *p) {
    int64_t sw[2] = {l->n, l->n}, sp[1] = {l->n / 2};
    l->M = declare_orthogonal(t, pname(p, "log_P").s, 2, sw, rnn_init_orth_log, 1);
    l->T = params_add(t, pname(p, "T").s, 2, sw, init_zeros, 0, 0, 1);
    l->gamma_fixed = cfg->gamma_clamp > 0;
    l->gamma = l->gamma_fixed
                   ? params_add(t, pname(p, "gamma").s, 1, sp, init_value, cfg->gamma_clamp, 0, 0)
                   : params_add(t, pname(p, "gamma").s, 1, sp, init_ones, 0, 0, 1);
    l->theta = params_add(t, pname(p, "theta").s, 1, sp, init_phase, 0, 0, 1);
}

static void nn_weight_fwd(RnnLayer *l, const Ctx *c) {
    c->be->orth_expm_fwd(l->P, WM(c, l->M), l->work, 1, l->n);
    l->w = (NnrnnWeights){.n = l->n,
                          .P = l->P,
                          .gamma = WM(c, l->gamma),
                          .theta = WM(c, l->theta),
                          .T = WM(c, l->T),
                          .K = l->K,
                          .V = l->W,
                          .work = l->work};
    c->be->nnrnn_weights_fwd(&l->w);
}

static void nn_weight_bwd(RnnLayer *l, const Ctx *c) {
    const Backend *be = c->be;
    be->nnrnn_weights_bwd(&(NnrnnWeightGrads){.w = l->w,
                                              .dV = l->dW,
                                              .dP = l->dP,
                                              .dgamma = G(c, l->gamma),
                                              .dtheta = G(c, l->theta),
                                              .dT = G(c, l->T)});
    if (l->gamma_fixed) be->zero(G(c, l->gamma), F32(c, l->n / 2)); /* a held parameter's slot */
    be->orth_expm_bwd(G(c, l->M), l->dP, WM(c, l->M), l->work, 1, l->n);
}

/* eurnn: W = R_{L-1} ... R_0, the angles U(-pi, pi) as the EUNN code initialises them */
static void eu_declare(RnnLayer *l, ParamTable *t, const ModelConfig *cfg, const char *p) {
    l->L = cfg->capacity;
    int64_t sa[1] = {eurnn_angles(l->n, l->L)};
    l->theta = declare_recurrent(t, pname(p, "theta").s, 1, sa, init_uniform, M_PI);
}

static void eu_weight_fwd(RnnLayer *l, const Ctx *c) {
    c->be->eurnn_weights_fwd(l->W, WM(c, l->theta), l->n, l->L);
}

static void eu_weight_bwd(RnnLayer *l, const Ctx *c) {
    c->be->eurnn_weights_bwd(G(c, l->theta), l->dW, l->W, WM(c, l->theta), l->work, l->n, l->L);
}

static double nn_penalty(RnnLayer *l, const Ctx *c, double delta, double t_decay, int grad);
static void nn_stats(RnnLayer *l, const Ctx *c, json_t *o);

/* A cell: its input projection, how its recurrent matrix W is made from its parameters (NULL:
 * W is the parameter V), and its penalty and statistics beyond the states' norm. */
struct RnnCell {
    const char *u_name; /* the input projection's weight */
    int u_bias;         /* with nn.Linear's bias */
    unsigned features;  /* the buffers it binds (rnn_bufs) */
    void (*declare)(RnnLayer *l, ParamTable *t, const ModelConfig *cfg, const char *p);
    void (*weight_fwd)(RnnLayer *l, const Ctx *c); /* W */
    void (*weight_bwd)(RnnLayer *l, const Ctx *c); /* the parameters' gradients from dW */
    double (*penalty)(RnnLayer *l, const Ctx *c, double delta, double t_decay, int grad);
    void (*stats)(RnnLayer *l, const Ctx *c, json_t *o);
};

static const RnnCell CELL_RNN = {.u_name = "U.weight", .u_bias = 1, .declare = free_declare};
static const RnnCell CELL_ORTH = {.u_name = "U.weight", .u_bias = 1, .declare = orth_declare};
static const RnnCell CELL_EXP = {.u_name = "input_kernel.weight",
                                 .features = F_EXP,
                                 .declare = exp_declare,
                                 .weight_fwd = exp_weight_fwd,
                                 .weight_bwd = exp_weight_bwd};
static const RnnCell CELL_NN = {.u_name = "U.weight",
                                .features = F_EXP | F_NN,
                                .declare = nn_declare,
                                .weight_fwd = nn_weight_fwd,
                                .weight_bwd = nn_weight_bwd,
                                .penalty = nn_penalty,
                                .stats = nn_stats};
static const RnnCell CELL_EU = {.u_name = "U.weight",
                                .features = F_EXP,
                                .declare = eu_declare,
                                .weight_fwd = eu_weight_fwd,
                                .weight_bwd = eu_weight_bwd};

static const RnnCell *const CELLS[N_MIXERS] = {
    [MIXER_RNN] = &CELL_RNN,  [MIXER_RNN_ORTH] = &CELL_ORTH, [MIXER_EXPRNN] = &CELL_EXP,
    [MIXER_NNRNN] = &CELL_NN, [MIXER_EURNN] = &CELL_EU,
};

static void *rnn_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm, const char *p) {
    RnnLayer *l = rt_calloc(1, sizeof(RnnLayer));
    int d = cfg->hidden_size, n = dm->key_dim;
    l->cell = CELLS[cfg->mixer], l->n = n, l->d = d;
    RT_ASSERT(l->cell);
    l->cs.width = n;
    l->Ub = l->V = l->M = l->T = l->gamma = l->theta = l->bmod = -1;
    int64_t su[2] = {n, d}, sb[1] = {n};
    /* the input weights: Glorot normal, as the papers' code (xavier_normal_) */
    l->U =
        params_add(t, pname(p, l->cell->u_name).s, 2, su, init_normal, sqrt(2.0 / (d + n)), 1, 1);
    if (l->cell->u_bias) /* nn.Linear's default bias init */
        l->Ub = params_add(t, pname(p, "U.bias").s, 1, sb, init_uniform, 1 / sqrt((double)d), 0, 1);
    l->cell->declare(l, t, cfg, p);
    if (rnn_modrelu(cfg))
        l->bmod = params_add(t, pname(p, "nonlinearity.b").s, 1, sb, init_uniform, 0.01, 0, 1);
    return l;
}

static void rnn_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                     int64_t N) {
    RnnLayer *l = layer;
    (void)dm;
    int64_t nn = (int64_t)l->n * l->n;
    int64_t widths[] = {[W_STATE] = l->n, [W_MATRIX] = nn, [W_WORK] = orth_expm_work_size(1, l->n)};
    acts_bind(l, rnn_bufs, BUF_COUNT(rnn_bufs), widths, l->cell->features, be, sv, sc, N);
}

static void rnn_forward(void *layer, const Ctx *c, const void *x, void *y) {
    RnnLayer *l = layer;
    const Backend *be = c->be;
    int N = (int)c->N, n = l->n;
    be->matmul_fwd(l->z, x, W(c, l->U), l->Ub >= 0 ? W(c, l->Ub) : NULL, N, n, l->d);
    if (l->cell->weight_fwd) l->cell->weight_fwd(l, c);
    l->a = (RnnArgs){.s = c->seqs,
                     .n = n,
                     .act = l->bmod >= 0 ? RNN_MODRELU : RNN_TANH,
                     .W = l->V >= 0 ? WM(c, l->V) : l->W,
                     .bias = l->bmod >= 0 ? WM(c, l->bmod) : NULL,
                     .z = l->z,
                     .h = l->h};
    l->a.state = cell_state(&l->cs, c, &l->a.h0);
    (c->mode == PASS_STEP ? be->rnn_step : be->rnn_fwd)(&l->a);
    be->copy(y, l->h, ACT(c, (int64_t)N * n));
}

static void rnn_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    RnnLayer *l = layer;
    const Backend *be = c->be;
    int N = (int)c->N, n = l->n;
    void *dW = l->V >= 0 ? G(c, l->V) : l->dW;
    if (l->V < 0) be->zero(l->dW, F32(c, (int64_t)n * n));
    be->rnn_bwd(&(RnnGrads){
        .a = l->a, .dh = dy, .dz = l->dz, .dW = dW, .dbias = l->bmod >= 0 ? G(c, l->bmod) : NULL});
    if (l->cell->weight_bwd) l->cell->weight_bwd(l, c);
    be->matmul_bwd(dx, G(c, l->U), l->Ub >= 0 ? G(c, l->Ub) : NULL, l->dz, x, W(c, l->U), N, n,
                   l->d, 0);
}

/* The nnRNN's penalties (docs/models.md §nonlinear-rnns): delta sum_i (1 - gamma_i)^2 and the L2
 * decay (t_decay / 2) ||T||^2, whose gradient t_decay T is the coupled weight decay of the authors'
 * optimizer group of T. */
static double nn_penalty(RnnLayer *l, const Ctx *c, double delta, double t_decay, int grad) {
    const Backend *be = c->be;
    int64_t n = l->n;
    double pg = l->gamma_fixed ? 0
                               : be->l2_penalty(grad ? G(c, l->gamma) : NULL, WM(c, l->gamma),
                                                n / 2, 1, delta);
    return pg + be->l2_penalty(grad ? G(c, l->T) : NULL, WM(c, l->T), n * n, 0, t_decay / 2);
}

/* The states' norm; the nnRNN's Schur form too: gamma_i, theta_i, the moduli of W's eigenvalues
 * (the 2x2 blocks of K = Lambda + T with T's in-block entry t_i: trace 2 gamma cos, determinant
 * gamma^2 + gamma t_i sin; docs/models.md §nonlinear-rnns) and |T|_F of its strictly lower
 * triangle. */
static void nn_stats(RnnLayer *l, const Ctx *c, json_t *o) {
    int n = l->n, m = n / 2;
    double *g = stats_param(c, l->gamma), *th = stats_param(c, l->theta), *T = stats_param(c, l->T);
    double *mod = rt_malloc((size_t)n * sizeof(double)), tf = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) tf += T[(size_t)i * n + j] * T[(size_t)i * n + j];
    for (int b = 0; b < m; b++) {
        double t = T[(size_t)(2 * b + 1) * n + 2 * b], half_tr = g[b] * cos(th[b]);
        double det = g[b] * g[b] + g[b] * t * sin(th[b]), disc = half_tr * half_tr - det;
        if (disc < 0)
            mod[2 * b] = mod[2 * b + 1] = sqrt(det); /* a complex pair */
        else
            mod[2 * b] = fabs(half_tr + sqrt(disc)), mod[2 * b + 1] = fabs(half_tr - sqrt(disc));
    }
    stats_summary(o, "gamma", g, m);
    stats_summary(o, "theta", th, m);
    stats_angle_hist(o, th, m);
    stats_summary(o, "modulus", mod, n);
    json_object_set_new(o, "T_norm", json_real(sqrt(tf)));
    rt_free(g), rt_free(th), rt_free(T), rt_free(mod);
}

static double rnn_penalty(void *layer, const Ctx *c, double delta, double t_decay, int grad) {
    RnnLayer *l = layer;
    return l->cell->penalty ? l->cell->penalty(l, c, delta, t_decay, grad) : 0;
}

static void rnn_stats(void *layer, const Ctx *c, json_t *o) {
    RnnLayer *l = layer;
    stats_state_norm(o, c, l->h, l->n, 1);
    if (l->cell->stats) l->cell->stats(l, c, o);
}

static const MixerImpl mixer_rnn = {
    .op = "rnn",
    .create = rnn_create,
    .destroy = cell_destroy,
    .bind = rnn_bind,
    .forward = rnn_forward,
    .backward = rnn_backward,
    .bind_state = cell_bind_state,
    .penalty = rnn_penalty,
    .carry_width = cell_carry_width,
    .stats = rnn_stats,
};

/* ---- the families (docs/models.md §nonlinear-rnns): one state of width d; no fla counterpart,
 * GLA's backbone names ---- */

const char *rnn_cell_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n) {
    o->H = 1;
    o->dk = o->dv = o->key_dim = o->value_dim = c->hidden_size;
    return NULL;
}

/* the nnRNN's Schur form pairs the state channels */
static const char *nnrnn_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n) {
    if (c->hidden_size % 2) {
        snprintf(msg, n, "model.hidden_size = %d: model.type = nnrnn needs an even state width",
                 c->hidden_size);
        return msg;
    }
    return rnn_cell_dims(c, o, msg, n);
}

/* EURNN rotates pairs of state channels */
static const char *eurnn_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n) {
    if (c->hidden_size < 2) {
        snprintf(msg, n,
                 "model.hidden_size = %d: model.type = eurnn rotates pairs of state channels (at "
                 "least 2)",
                 c->hidden_size);
        return msg;
    }
    return rnn_cell_dims(c, o, msg, n);
}

void rnn_cell_head_keys(const ModelConfig *c, char *buf, size_t n) {
    snprintf(buf, n, "model.hidden_size = %d", c->hidden_size);
}

/* every product is with a weight matrix, once per token */
double rnn_cell_flops(const ModelConfig *c, const ModelDims *dm, int T) { return 0; }

static const char *const rnn_keys[] = {"nonlinearity", NULL};
static const char *const exprnn_keys[] = {"nonlinearity", "orth_init", NULL};
static const char *const nnrnn_keys[] = {"nonlinearity", "orth_init", "max_phase", "gamma_clamp",
                                         NULL};
static const char *const eurnn_keys[] = {"nonlinearity", "capacity", NULL};
/* the nnRNN's angles at init */
static const HfField nnrnn_fields[] = {
    HF_FIELD("max_phase", HF_REAL, HF_POS, 0, max_phase),
    HF_FIELD("gamma_clamp", HF_REAL, HF_NONNEG, 0, gamma_clamp),
};
/* EURNN's layers of rotations */
static const HfField eurnn_fields[] = {
    HF_FIELD("capacity", HF_INT, HF_POS, 1, capacity),
};

/* fields: HF_TABLE(its config.json fields), or NULL, 0 */
#define RNN_FAMILY(nm, keyset, is_modrelu, dims_fn, model_type, arch, ...)                         \
    {                                                                                              \
        .name = nm, .section = "§nonlinear-rnns", .mix = &mixer_rnn, .pe = PE_BIT(PE_NOPE),        \
        .modrelu = is_modrelu, .keys = keyset, .dims = dims_fn, .head_keys = rnn_cell_head_keys,   \
        .mixing_flops = rnn_cell_flops, .hf = {model_type, arch, __VA_ARGS__, NULL, 0, PE_NOPE},   \
    }
const Family family_rnn =
    RNN_FAMILY("rnn", rnn_keys, 0, rnn_cell_dims, "rnn", "RNNForCausalLM", NULL, 0);
const Family family_rnn_orth =
    RNN_FAMILY("rnn_orth", rnn_keys, 0, rnn_cell_dims, "rnn_orth", "RNNOrthForCausalLM", NULL, 0);
const Family family_exprnn =
    RNN_FAMILY("exprnn", exprnn_keys, 1, rnn_cell_dims, "exprnn", "ExpRNNForCausalLM", NULL, 0);
const Family family_nnrnn = RNN_FAMILY("nnrnn", nnrnn_keys, 1, nnrnn_dims, "nnrnn",
                                       "NnRNNForCausalLM", HF_TABLE(nnrnn_fields));
const Family family_eurnn = RNN_FAMILY("eurnn", eurnn_keys, 1, eurnn_dims, "eurnn",
                                       "EURNNForCausalLM", HF_TABLE(eurnn_fields));
#undef RNN_FAMILY
