/* The nonlinear RNN mixers (docs/models.md §17): h_t = act(W h_{t-1} + U x_t (+ b)) over each
 * segment, the mixer's output the states h. The four differ in W (act: tanh or modReLU,
 * model.nonlinearity; by default tanh for the first two, modReLU for the others):
 *   rnn       W a free matrix (Glorot init), U with a bias;
 *   rnn_orth  W a free matrix (random orthogonal init), U with a bias;
 *   exprnn    W = expm(M - M^T) (Lezcano-Casado and Martinez-Rubio 2019);
 *   nnrnn     W = P (Lambda + T) P^T, P = expm(M - M^T) (Kerg et al. 2019).
 * The input projection is one GEMM over all tokens, the recurrence the rnn ops; the nnRNN's
 * penalties delta ||1 - gamma||^2 and the L2 decay of T are rnn_penalty. */
#include <math.h>
#include <stdio.h>

#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    MixerKind kind;
    int n, d;
    int U, Ub, V, M, T, gamma, theta, bmod; /* parameter ids, -1 where absent */
    RnnArgs a; /* the op's arguments, set by the forward for the backward */
    NnrnnWeights w;
    /* saved: the states h; the recurrent matrix W (expRNN, nnRNN [f32][n, n]), the nnRNN's P
     * and K; scratch: z, its gradient, the gradients at W and P, and the work of the matrix
     * exponential and the Schur form */
    void *h, *W, *P, *K, *z, *dz, *dW, *dP, *work;
    void *S; /* decoding or carried state: each row's [f32] n state */
    GrowBuf h0; /* a carrying pass: the segments' initial states [f32][nseg, n], for the backward */
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

static unsigned features(const RnnLayer *l) {
    return l->kind == MIXER_NNRNN ? F_EXP | F_NN : l->kind == MIXER_EXPRNN ? F_EXP : 0;
}

static void *rnn_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm, const char *p) {
    RnnLayer *l = rt_calloc(1, sizeof(RnnLayer));
    char name[PARAM_NAME_MAX];
#define NAME(s) (snprintf(name, sizeof name, "%s%s", p, s), name)
    int d = cfg->hidden_size, n = dm->key_dim;
    MixerKind k = cfg->mixer;
    l->kind = k, l->n = n, l->d = d;
    l->Ub = l->V = l->M = l->T = l->gamma = l->theta = l->bmod = -1;
    int64_t su[2] = {n, d}, sw[2] = {n, n}, sb[1] = {n}, sp[1] = {n / 2};
    /* the input weights: Glorot normal, as the papers' code (xavier_normal_) */
    double glorot = sqrt(2.0 / (d + n));
    if (k == MIXER_EXPRNN) {
        l->U = params_add(t, NAME("input_kernel.weight"), 2, su, INIT_NORMAL, glorot, 1, 1);
        /* rotor's W is the transpose of the code's recurrent_kernel: the lower triangle */
        l->M = declare_orthogonal(t, NAME("log_recurrent_kernel"), 2, sw, INIT_ORTH_LOG, -1);
    } else {
        l->U = params_add(t, NAME("U.weight"), 2, su, INIT_NORMAL, glorot, 1, 1);
    }
    if (k == MIXER_RNN || k == MIXER_RNN_ORTH) { /* nn.Linear's default bias init */
        l->Ub = params_add(t, NAME("U.bias"), 1, sb, INIT_UNIFORM, 1 / sqrt((double)d), 0, 1);
        l->V = k == MIXER_RNN ? params_add(t, NAME("V.weight"), 2, sw, INIT_NORMAL, sqrt(1.0 / n), 1, 1)
                              : params_add(t, NAME("V.weight"), 2, sw, INIT_ORTHOGONAL, 0, 1, 1);
    }
    if (k == MIXER_NNRNN) {
        l->M = declare_orthogonal(t, NAME("log_P"), 2, sw, INIT_ORTH_LOG, 1);
        l->T = params_add(t, NAME("T"), 2, sw, INIT_ZEROS, 0, 0, 1);
        l->gamma = params_add(t, NAME("gamma"), 1, sp, INIT_ONES, 0, 0, 1);
        l->theta = params_add(t, NAME("theta"), 1, sp, INIT_ROTRNN_THETA, 0, 0, 1);
    }
    if (rnn_modrelu(cfg))
        l->bmod = params_add(t, NAME("nonlinearity.b"), 1, sb, INIT_UNIFORM, 0.01, 0, 1);
#undef NAME
    return l;
}

static void rnn_destroy(void *layer, const Backend *be) {
    RnnLayer *l = layer;
    if (be) growbuf_free(&l->h0, be);
    rt_free(l);
}

static void rnn_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                     int64_t N) {
    RnnLayer *l = layer;
    (void)dm;
    int64_t nn = (int64_t)l->n * l->n;
    int64_t widths[] = {[W_STATE] = l->n, [W_MATRIX] = nn, [W_WORK] = orth_expm_work_size(1, l->n)};
    acts_bind(l, rnn_bufs, BUF_COUNT(rnn_bufs), widths, features(l), be, sv, sc, N);
}

static void rnn_forward(void *layer, const Ctx *c, const void *x, void *y) {
    RnnLayer *l = layer;
    const Backend *be = c->be;
    int N = (int)c->N, n = l->n;
    be->matmul_fwd(l->z, x, W(c, l->U), l->Ub >= 0 ? W(c, l->Ub) : NULL, N, n, l->d);
    const void *Wr = l->V >= 0 ? WM(c, l->V) : l->W;
    if (l->kind == MIXER_EXPRNN) be->orth_expm_fwd(l->W, WM(c, l->M), l->work, 1, n);
    if (l->kind == MIXER_NNRNN) {
        be->orth_expm_fwd(l->P, WM(c, l->M), l->work, 1, n);
        l->w = (NnrnnWeights){.n = n, .P = l->P, .gamma = WM(c, l->gamma), .theta = WM(c, l->theta),
                              .T = WM(c, l->T), .K = l->K, .V = l->W, .work = l->work};
        be->nnrnn_weights_fwd(&l->w);
    }
    l->a = (RnnArgs){.s = c->seqs, .n = n, .act = l->bmod >= 0 ? RNN_MODRELU : RNN_TANH, .W = Wr,
                     .bias = l->bmod >= 0 ? WM(c, l->bmod) : NULL, .z = l->z, .h = l->h,
                     .state = c->mode == PASS_TRAIN && !c->carry ? NULL : l->S};
    if (c->carry) { /* start from the carried states, kept for the backward (docs/models.md §19) */
        size_t bytes = F32(c, (int64_t)c->seqs->nseg * n);
        l->a.h0 = growbuf_get(&l->h0, be, bytes);
        be->copy((void *)l->a.h0, l->S, bytes);
    }
    if (c->mode == PASS_STEP)
        be->rnn_step(&l->a);
    else
        be->rnn_fwd(&l->a);
    be->copy(y, l->h, ACT(c, (int64_t)N * n));
}

static void rnn_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    RnnLayer *l = layer;
    const Backend *be = c->be;
    int N = (int)c->N, n = l->n;
    void *dW = l->V >= 0 ? G(c, l->V) : l->dW;
    if (l->V < 0) be->zero(l->dW, F32(c, (int64_t)n * n));
    be->rnn_bwd(&(RnnGrads){.a = l->a, .dh = dy, .dz = l->dz, .dW = dW,
                            .dbias = l->bmod >= 0 ? G(c, l->bmod) : NULL});
    if (l->kind == MIXER_EXPRNN) be->orth_expm_bwd(G(c, l->M), l->dW, WM(c, l->M), l->work, 1, n);
    if (l->kind == MIXER_NNRNN) {
        be->nnrnn_weights_bwd(&(NnrnnWeightGrads){.w = l->w, .dV = l->dW, .dP = l->dP, .dgamma = G(c, l->gamma),
                                                  .dtheta = G(c, l->theta), .dT = G(c, l->T)});
        be->orth_expm_bwd(G(c, l->M), l->dP, WM(c, l->M), l->work, 1, n);
    }
    be->matmul_bwd(dx, G(c, l->U), l->Ub >= 0 ? G(c, l->Ub) : NULL, l->dz, x, W(c, l->U), N, n, l->d, 0);
}

static void rnn_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                           int64_t rows, int max_len) {
    RnnLayer *l = layer;
    (void)dm, (void)max_len;
    l->S = carve(state, F32S(be, rows * l->n));
}

/* The nnRNN's penalties (docs/models.md §17): delta sum_i (1 - gamma_i)^2 and the L2 decay
 * (t_decay / 2) ||T||^2, whose gradient t_decay T is the coupled weight decay of the
 * authors' optimizer group of T. */
static double rnn_penalty(void *layer, const Ctx *c, double delta, double t_decay, int grad) {
    RnnLayer *l = layer;
    if (l->kind != MIXER_NNRNN) return 0;
    const Backend *be = c->be;
    int64_t n = l->n;
    return be->l2_penalty(grad ? G(c, l->gamma) : NULL, WM(c, l->gamma), n / 2, 1, delta) +
           be->l2_penalty(grad ? G(c, l->T) : NULL, WM(c, l->T), n * n, 0, t_decay / 2);
}

static int64_t rnn_carry_width(const void *layer) { return ((const RnnLayer *)layer)->n; }

const MixerImpl mixer_rnn = {"rnn",        rnn_create,   rnn_destroy,    rnn_bind,      rnn_forward,
                             rnn_backward, rnn_bind_state, rnn_penalty, rnn_carry_width};
