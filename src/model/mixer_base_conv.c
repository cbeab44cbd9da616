/* Zoology's BaseConv layer (docs/models.md §zoology-shape; Arora et al. 2023, "Zoology", and its
 * mixers/base_conv.py): y = conv(x) (.) (x W^T + b) + x, conv a depthwise causal short conv
 * of model.base_conv_kernel taps with bias. It is a layer of model.mixers, not a family: it takes
 * the family's place in some layers of a hybrid (Zoology's Hybrid), and reads only the model width.
 */
#include <math.h>

#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    int conv_w, conv_b, proj_w, proj_b; /* parameter ids */
    int d, K;                           /* width, conv taps */
    void *cv, *pj;                      /* saved: the conv's and the projection's outputs [N, d] */
    void *dcv, *dpj;                    /* scratch: their gradients */
    void *tail; /* decoding state: each row's last three inputs (conv_step's, for any K) */
} BaseConv;

enum { W_D };

static const BufDecl base_conv_bufs[] = {
    BUF(BaseConv, cv, BUF_SAVED, BUF_ACT, W_D),
    BUF(BaseConv, pj, BUF_SAVED, BUF_ACT, W_D),
    BUF(BaseConv, dcv, BUF_SCRATCH, BUF_ACT, W_D),
    BUF(BaseConv, dpj, BUF_SCRATCH, BUF_ACT, W_D),
};

/* PyTorch's default init of nn.Conv1d, which Zoology keeps (its _init_weights reaches only
 * the linears and embeddings): U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight and the bias,
 * fan_in = the kernel width K of a depthwise conv. */
static int declare_torch_conv(ParamTable *t, const char *name, int ndim, const int64_t *shape,
                              int K) {
    return params_add(t, name, ndim, shape, init_uniform, 1 / sqrt((double)K), ndim > 1, 1);
}

static void *base_conv_create(ParamTable *t, const ModelConfig *cfg, const ModelDims *dm,
                              const char *p) {
    (void)dm;
    BaseConv *b = rt_calloc(1, sizeof(BaseConv));
    int d = b->d = cfg->hidden_size, K = b->K = cfg->base_conv_kernel;
    int64_t wsh[3] = {d, 1, K}, bsh[1] = {d};
    b->conv_w = declare_torch_conv(t, pname(p, "conv.weight").s, 3, wsh, K);
    b->conv_b = declare_torch_conv(t, pname(p, "conv.bias").s, 1, bsh, K);
    b->proj_w = declare_linear(t, pname(p, "projection.weight").s, d, d, cfg->init_std);
    b->proj_b = declare_vector(t, pname(p, "projection.bias").s, d, 0);
    return b;
}

static void base_conv_destroy(void *layer, const Backend *be) {
    (void)be;
    rt_free(layer);
}

static void base_conv_bind(void *layer, const Backend *be, const ModelDims *dm, Carve *sv,
                           Carve *sc, int64_t N) {
    (void)dm;
    BaseConv *b = layer;
    int64_t widths[] = {[W_D] = b->d};
    acts_bind(b, base_conv_bufs, BUF_COUNT(base_conv_bufs), widths, 0, be, sv, sc, N);
}

static void base_conv_forward(void *layer, const Ctx *c, const void *x, void *y) {
    BaseConv *b = layer;
    const Backend *be = c->be;
    int d = b->d;
    if (c->mode == PASS_STEP) {
        be->conv_step(b->cv, x, W(c, b->conv_w), W(c, b->conv_b), b->tail, c->seqs, d, b->K,
                      ACT_NONE);
    } else {
        be->conv_fwd(b->cv, x, W(c, b->conv_w), W(c, b->conv_b), c->seqs, d, b->K, ACT_NONE);
        if (c->mode == PASS_PREFILL) be->segment_tail(b->tail, x, c->seqs, d, 3, 0);
    }
    be->matmul_fwd(b->pj, x, W(c, b->proj_w), W(c, b->proj_b), (int)c->N, d, d);
    be->gate_mul_fwd(y, b->cv, b->pj, c->N * d, ACT_NONE);
    be->add(y, y, x, c->N * d);
}

static void base_conv_backward(void *layer, const Ctx *c, const void *x, const void *dy, void *dx) {
    BaseConv *b = layer;
    const Backend *be = c->be;
    int d = b->d;
    be->gate_mul_bwd(b->dcv, b->dpj, dy, b->cv, b->pj, c->N * d, ACT_NONE);
    be->conv_bwd(dx, G(c, b->conv_w), G(c, b->conv_b), b->dcv, x, W(c, b->conv_w), W(c, b->conv_b),
                 c->seqs, d, b->K, ACT_NONE);
    be->matmul_bwd(dx, G(c, b->proj_w), G(c, b->proj_b), b->dpj, x, W(c, b->proj_w), (int)c->N, d,
                   d, 1);
    be->add(dx, dx, dy, c->N * d); /* the skip + x */
}

static void base_conv_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                                 int64_t rows, int max_len) {
    (void)dm, (void)max_len;
    BaseConv *b = layer;
    b->tail = carve(state, ACTS(be, rows * 3 * b->d));
}

const MixerImpl mixer_base_conv = {
    .op = NULL,
    .create = base_conv_create,
    .destroy = base_conv_destroy,
    .bind = base_conv_bind,
    .forward = base_conv_forward,
    .backward = base_conv_backward,
    .bind_state = base_conv_bind_state,
};
