/* mad-lab's auto-encoder head (docs/models.md §autoencoder-head): the final-normed state of each
 * row's last position, plus a fixed sinusoidal embedding of position i, decodes position i through
 * a two-layer MLP (RMSNorm, linear + bias, GELU, twice) and the unembedding (RMSNorm, linear +
 * bias). It runs on the M labeled positions only, like the LM head. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "device/host_copy.h"
#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    int n0, w0, b0, n1, w1, b1, nu, wu, bu; /* parameter ids */
    int d, V;
    int64_t N; /* tokens the buffers are bound for */
    /* the decoded positions the fixed tables were made for: M rows of batch rows of T */
    int32_t *rows;
    int64_t M;
    int T;
    /* saved: the gathered encodings e, x = e + pos (normed: y0), the layers' pre-activations
     * z and activations a, their norms y, and the norms' rstd */
    void *e, *x, *y0, *z0, *a0, *y1, *z1, *a1, *y2, *r0, *r1, *r2;
    /* fixed per set of decoded positions: their embeddings and their rows' end [i32] */
    void *pos, *pos_f32, *last_dev;
    /* scratch: gradients, and the [f32] sum of d x over each row */
    void *dy, *da, *dz, *dx, *dsum;
} AutoEncoder;

enum { W_D, W_ONE };

static const BufDecl ae_bufs[] = {
    BUF(AutoEncoder, e, BUF_SAVED, BUF_ACT, W_D),
    BUF(AutoEncoder, x, BUF_SAVED, BUF_ACT, W_D),
    BUF(AutoEncoder, y0, BUF_SAVED, BUF_ACT, W_D),
    BUF(AutoEncoder, z0, BUF_SAVED, BUF_ACT, W_D),
    BUF(AutoEncoder, a0, BUF_SAVED, BUF_ACT, W_D),
    BUF(AutoEncoder, y1, BUF_SAVED, BUF_ACT, W_D),
    BUF(AutoEncoder, z1, BUF_SAVED, BUF_ACT, W_D),
    BUF(AutoEncoder, a1, BUF_SAVED, BUF_ACT, W_D),
    BUF(AutoEncoder, y2, BUF_SAVED, BUF_ACT, W_D),
    BUF(AutoEncoder, r0, BUF_SAVED, BUF_F32, W_ONE),
    BUF(AutoEncoder, r1, BUF_SAVED, BUF_F32, W_ONE),
    BUF(AutoEncoder, r2, BUF_SAVED, BUF_F32, W_ONE),
    BUF(AutoEncoder, pos, BUF_SAVED, BUF_ACT, W_D),
    BUF(AutoEncoder, pos_f32, BUF_SAVED, BUF_F32, W_D),
    BUF(AutoEncoder, dy, BUF_SCRATCH, BUF_ACT, W_D),
    BUF(AutoEncoder, da, BUF_SCRATCH, BUF_ACT, W_D),
    BUF(AutoEncoder, dz, BUF_SCRATCH, BUF_ACT, W_D),
    BUF(AutoEncoder, dx, BUF_SCRATCH, BUF_ACT, W_D),
    BUF(AutoEncoder, dsum, BUF_SCRATCH, BUF_F32, W_D),
};

static void *ae_create(ParamTable *t, const ModelConfig *cfg) {
    AutoEncoder *a = rt_calloc(1, sizeof(AutoEncoder));
    int d = cfg->hidden_size, V = cfg->vocab_size;
    double std = cfg->init_std;
    int64_t dsh[2] = {d, d}, vsh[2] = {V, d};
    a->d = d, a->V = V;
    /* mad-lab's nn.Sequential indices: decoder.{0 norm, 1 linear, 3 norm, 4 linear}, unembed.{0
     * norm, 1 linear} */
    a->n0 = declare_vector(t, "decoder.0.weight", d, 1);
    a->w0 = params_add(t, "decoder.1.weight", 2, dsh, init_normal, std, 1, 1);
    a->b0 = declare_vector(t, "decoder.1.bias", d, 0);
    a->n1 = declare_vector(t, "decoder.3.weight", d, 1);
    a->w1 = params_add(t, "decoder.4.weight", 2, dsh, init_normal, std, 1, 1);
    a->b1 = declare_vector(t, "decoder.4.bias", d, 0);
    a->nu = declare_vector(t, "unembed.0.weight", d, 1);
    a->wu = params_add(t, "unembed.1.weight", 2, vsh, init_normal, std, 1, 1);
    a->bu = declare_vector(t, "unembed.1.bias", V, 0);
    return a;
}

static void ae_destroy(void *head, const Backend *be) {
    AutoEncoder *a = head;
    if (be && a->last_dev) be->release(a->last_dev);
    rt_free(a->rows);
    rt_free(a);
}

static int ae_unembedding(const void *head) { return ((const AutoEncoder *)head)->wu; }

static void ae_bind(void *head, const Backend *be, Carve *saved, Carve *scratch, int64_t N) {
    AutoEncoder *a = head;
    int64_t widths[] = {[W_D] = a->d, [W_ONE] = 1};
    acts_bind(a, ae_bufs, BUF_COUNT(ae_bufs), widths, 0, be, saved, scratch, N);
    if (be && saved->base) { /* a real binding: the fixed tables follow the rows' length */
        if (a->last_dev) be->release(a->last_dev);
        a->last_dev = be->alloc(sizeof(int32_t) * (size_t)N);
        a->rows = rt_realloc(a->rows, sizeof(int32_t) * (size_t)N);
        a->N = N;
        a->M = -1;
    }
}

/* mad-lab's posemb_sincos_1d: for position p, sin(p f_j) then cos(p f_j), j < d/2, with
 * f_j = 10000^(-j/(d/2 - 1)); a zero last channel when d is odd. */
static void position_embedding(double *row, int p, int d) {
    int half = d / 2;
    for (int j = 0; j < half; j++) {
        double f = exp(-(double)j * log(10000.0) / (half > 1 ? half - 1 : 1));
        row[j] = sin(p * f);
        row[half + j] = cos(p * f);
    }
    if (d % 2) row[d - 1] = 0;
}

/* The position embeddings and row-end indices of the decoded positions rows[0, M) (token
 * indices of the batch, rows of T tokens), unless they are those of the last call. */
static void prepare_rows(AutoEncoder *a, const Backend *be, const int32_t *rows, int64_t M, int T) {
    if (a->M == M && a->T == T && !memcmp(a->rows, rows, sizeof(int32_t) * (size_t)M)) return;
    double *pos = rt_malloc(sizeof(double) * (size_t)(M ? M : 1) * a->d);
    int32_t *last = rt_malloc(sizeof(int32_t) * (size_t)(M ? M : 1));
    for (int64_t i = 0; i < M; i++) {
        position_embedding(pos + i * a->d, rows[i] % T, a->d);
        last[i] = rows[i] / T * T + T - 1;
    }
    backend_upload_f64(be, a->pos_f32, pos, M * a->d);
    be->to_act(a->pos, a->pos_f32, M * a->d);
    be->upload(a->last_dev, last, sizeof(int32_t) * (size_t)M);
    memcpy(a->rows, rows, sizeof(int32_t) * (size_t)M);
    a->M = M;
    a->T = T;
    rt_free(pos);
    rt_free(last);
}

static void ae_forward(void *head, const Ctx *c, const void *xf, const int32_t *rows, int64_t M,
                       int T, void *logits) {
    AutoEncoder *a = head;
    const Backend *be = c->be;
    int d = a->d;
    double eps = c->cfg->norm_eps;
    RT_ASSERT(M <= a->N);
    prepare_rows(a, be, rows, M, T);
    be->embedding_fwd(a->e, a->last_dev, xf, M, d); /* each position reads its row's last state */
    be->add_rmsnorm_fwd(a->x, a->y0, a->r0, a->e, a->pos, W(c, a->n0), M, d, eps);
    be->matmul_fwd(a->z0, a->y0, W(c, a->w0), W(c, a->b0), (int)M, d, d);
    be->gelu_fwd(a->a0, a->z0, M * d);
    be->rmsnorm_fwd(a->y1, a->r1, a->a0, W(c, a->n1), M, 1, d, 0, eps);
    be->matmul_fwd(a->z1, a->y1, W(c, a->w1), W(c, a->b1), (int)M, d, d);
    be->gelu_fwd(a->a1, a->z1, M * d);
    be->rmsnorm_fwd(a->y2, a->r2, a->a1, W(c, a->nu), M, 1, d, 0, eps);
    be->matmul_fwd(logits, a->y2, W(c, a->wu), W(c, a->bu), (int)M, a->V, d);
}

static void ae_backward(void *head, const Ctx *c, const void *dlogits, void *dxf) {
    AutoEncoder *a = head;
    const Backend *be = c->be;
    int64_t M = a->M, N = c->N;
    int d = a->d;
    be->matmul_bwd(a->dy, G(c, a->wu), G(c, a->bu), dlogits, a->y2, W(c, a->wu), (int)M, a->V, d,
                   0);
    be->rmsnorm_bwd(a->da, G(c, a->nu), a->dy, a->a1, W(c, a->nu), a->r2, M, 1, d, 0, 0);
    be->gelu_bwd(a->dz, a->da, a->z1, M * d);
    be->matmul_bwd(a->dy, G(c, a->w1), G(c, a->b1), a->dz, a->y1, W(c, a->w1), (int)M, d, d, 0);
    be->rmsnorm_bwd(a->da, G(c, a->n1), a->dy, a->a0, W(c, a->n1), a->r1, M, 1, d, 0, 0);
    be->gelu_bwd(a->dz, a->da, a->z0, M * d);
    be->matmul_bwd(a->dy, G(c, a->w0), G(c, a->b0), a->dz, a->y0, W(c, a->w0), (int)M, d, d, 0);
    be->rmsnorm_bwd(a->dx, G(c, a->n0), a->dy, a->x, W(c, a->n0), a->r0, M, 1, d, 0, 0);
    /* d e flows to each row's last position: the sum over the row's decoded positions, in
     * fp32; every other position of xf gets zero */
    be->zero(a->dsum, (size_t)N * d * be->f32_size);
    be->embedding_bwd(a->dsum, a->last_dev, a->dx, M, d);
    be->to_act(dxf, a->dsum, N * d);
}

const HeadImpl head_autoencoder = {ae_create,  ae_destroy,  ae_bind,
                                   ae_forward, ae_backward, ae_unembedding};
