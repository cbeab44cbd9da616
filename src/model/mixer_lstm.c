/* The LSTM mixer (docs/models.md §lstm), the nnRNN paper's baseline: the gates' input share
 * x W_ih^T + b is one GEMM over all tokens, the recurrence (h_{t-1} W_hh^T, the gates, the
 * cell) the lstm ops; the mixer's output is h. */
#include <math.h>
#include <stdio.h>

#include "model/family.h"
#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    CellState cs; /* decoding or carried state: each row's [f32] (h, c) */
    int n, d;
    int wih, whh, b; /* parameter ids */
    LstmArgs a;      /* the op's arguments, set by the forward for the backward */
    /* saved: the gates [N, 4n], the cells [f32][N, n], the states h; scratch: the input
     * projections and their gradient */
    void *gates, *c, *h, *z, *dz;
} LstmLayer;

enum { W_STATE, W_GATES };

static const BufDecl lstm_bufs[] = {
    BUF(LstmLayer, gates, BUF_SAVED, BUF_ACT, W_GATES),
    BUF(LstmLayer, c, BUF_SAVED, BUF_F32, W_STATE),
    BUF(LstmLayer, h, BUF_SAVED, BUF_ACT, W_STATE),
    BUF(LstmLayer, z, BUF_SCRATCH, BUF_ACT, W_GATES),
    BUF(LstmLayer, dz, BUF_SCRATCH, BUF_ACT, W_GATES),
};

static void *lstm_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm,
                         const char *p) {
    LstmLayer *l = rt_calloc(1, sizeof(LstmLayer));
    int d = cfg->hidden_size, n = dm->key_dim;
    l->n = n, l->d = d;
    l->cs.width = 2 * (int64_t)n;
    int64_t si[2] = {4 * n, d}, sh[2] = {4 * n, n}, sb[1] = {4 * n};
    /* the nnRNN authors' LSTM: per gate a Linear(n + d, n), Glorot normal weights and
     * nn.Linear's default bias */
    double glorot = sqrt(2.0 / (2 * n + d));
    l->wih = params_add(t, pname(p, "weight_ih").s, 2, si, init_normal, glorot, 1, 1);
    l->whh = params_add(t, pname(p, "weight_hh").s, 2, sh, init_normal, glorot, 1, 1);
    l->b = params_add(t, pname(p, "bias").s, 1, sb, init_uniform, 1 / sqrt((double)n + d), 0, 1);
    return l;
}

static void lstm_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv, Carve *sc,
                      int64_t N) {
    LstmLayer *l = layer;
    (void)dm;
    int64_t widths[] = {[W_STATE] = l->n, [W_GATES] = 4 * (int64_t)l->n};
    acts_bind(l, lstm_bufs, BUF_COUNT(lstm_bufs), widths, 0, be, sv, sc, N);
}

static void lstm_forward(void *layer, const Ctx *c, const void *x, void *y) {
    LstmLayer *l = layer;
    const Backend *be = c->be;
    int N = (int)c->N, n = l->n;
    be->matmul_fwd(l->z, x, W(c, l->wih), W(c, l->b), N, 4 * n, l->d);
    l->a = (LstmArgs){.s = c->seqs,
                      .n = n,
                      .W = WM(c, l->whh),
                      .z = l->z,
                      .gates = l->gates,
                      .c = l->c,
                      .h = l->h};
    l->a.state = cell_state(&l->cs, c, &l->a.h0);
    (c->mode == PASS_STEP ? be->lstm_step : be->lstm_fwd)(&l->a);
    be->copy(y, l->h, ACT(c, (int64_t)N * n));
}

static void lstm_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    LstmLayer *l = layer;
    const Backend *be = c->be;
    int N = (int)c->N, n = l->n;
    be->lstm_bwd(&(LstmGrads){.a = l->a, .dh = dy, .dz = l->dz, .dW = G(c, l->whh)});
    be->matmul_bwd(dx, G(c, l->wih), G(c, l->b), l->dz, x, W(c, l->wih), N, 4 * n, l->d, 0);
}

static const MixerImpl mixer_lstm = {
    .op = "lstm",
    .create = lstm_create,
    .destroy = cell_destroy,
    .bind = lstm_bind,
    .forward = lstm_forward,
    .backward = lstm_backward,
    .bind_state = cell_bind_state,
    .carry_width = cell_carry_width,
};

/* ---- the family (docs/models.md §lstm): one state of width d; no fla counterpart, GLA's
 * backbone names ---- */
const Family family_lstm = {
    .name = "lstm",
    .section = "§lstm",
    .mix = &mixer_lstm,
    .pe = PE_BIT(PE_NOPE),
    .dims = rnn_cell_dims,
    .head_keys = rnn_cell_head_keys,
    .mixing_flops = rnn_cell_flops,
    .hf = {"lstm", "LSTMForCausalLM", NULL, 0, NULL, 0, PE_NOPE},
};
