/* The sequence classifier head (docs/models.md §classification): each sequence's final-normed
 * states pooled — the mean over its positions up to its labeled last token, or that token's state
 * alone — then class logits p W^T + b. A batch row holds one sequence, labeled at its last
 * real token; the pad tokens after it are not pooled.
 *
 * With pairs (model.pair, LRA's dual encoder), rows 2i and 2i + 1 are one example's two
 * documents, both labeled with its class: their pooled u, v become the features [u, v, u v,
 * u - v] (nli) or [u, v] (concat), then relu(. W1^T + b1), relu(. W2^T + b2), . W^T + b give
 * the pair's logits, written to both rows, so the loss (the mean over the rows) is the mean
 * over the pairs. */
#include <stdio.h>
#include <string.h>

#include "device/host_copy.h"
#include "model/model_internal.h"
#include "util/error.h"

typedef struct {
    int w, b; /* parameter ids */
    int d, classes;
    PoolKind pool;
    int64_t N; /* tokens the buffers are bound for */
    int64_t M; /* sequences of the current batch */
    /* each token's sequence (M: pooled by none, it reads a zero row), host and device; and
     * the sequences' last tokens on the device */
    int32_t *seq_host, *seq_dev, *last_dev;
    /* saved: the pooled states [M, d] and 1 / each sequence's length [f32]; scratch: the
     * [f32] sums and their [act] copy, the pooled states' gradient and its scaled copy,
     * each with a zero row after the M sequences */
    void *pooled, *inv_len, *sum, *sum_act, *dpooled, *dscaled;
    /* pairs: the MLP's parameter ids, widths (features F, hidden H1, H2), each row's pair
     * index 0, 0, 1, 1, ... on the device; its buffers for P pairs, carved from `mlp` in
     * each forward: saved the features, the layers' inputs to and outputs of the ReLUs, the
     * pair logits; scratch their gradients */
    PairKind pair;
    int w1, b1, w2, b2, F, H1, H2;
    int32_t *pair_dev;
    GrowBuf mlp;
    void *feat, *z1, *a1, *z2, *a2, *lp, *dsum_lp, *dlp, *da2, *da1, *dfeat;
} Classifier;

enum { W_D, W_ONE, W_D1 };

static const BufDecl cls_bufs[] = {
    BUF(Classifier, pooled, BUF_SAVED, BUF_ACT, W_D),
    BUF(Classifier, inv_len, BUF_SAVED, BUF_F32, W_ONE),
    BUF_FIXED(Classifier, sum, BUF_SCRATCH, BUF_F32, W_D1, 0),
    BUF_FIXED(Classifier, sum_act, BUF_SCRATCH, BUF_ACT, W_D1, 0),
    BUF(Classifier, dpooled, BUF_SCRATCH, BUF_ACT, W_D),
    BUF_FIXED(Classifier, dscaled, BUF_SCRATCH, BUF_ACT, W_D1, 0),
};

static void *cls_create(ParamTable *t, const ModelConfig *cfg) {
    Classifier *h = rt_calloc(1, sizeof(Classifier));
    h->d = cfg->hidden_size;
    h->classes = cfg->num_classes;
    h->pool = cfg->pool;
    h->pair = cfg->pair;
    int in = h->d;
    if (h->pair != PAIR_NONE) { /* LRA's classifier_head_dual: mlp, mlp2, logits */
        h->F = (h->pair == PAIR_NLI ? 4 : 2) * h->d;
        h->H1 = cfg->pair_mlp;
        h->H2 = cfg->pair_mlp / 2;
        h->w1 = declare_linear(t, "classifier.mlp.weight", h->H1, h->F, cfg->init_std);
        h->b1 = declare_vector(t, "classifier.mlp.bias", h->H1, 0);
        h->w2 = declare_linear(t, "classifier.mlp2.weight", h->H2, h->H1, cfg->init_std);
        h->b2 = declare_vector(t, "classifier.mlp2.bias", h->H2, 0);
        in = h->H2;
    }
    int64_t sh[2] = {h->classes, in};
    h->w = params_add(t, "classifier.weight", 2, sh, init_normal, cfg->init_std, 1, 1);
    h->b = declare_vector(t, "classifier.bias", h->classes, 0);
    return h;
}

static void cls_destroy(void *head, const Backend *be) {
    Classifier *h = head;
    if (be && h->seq_dev) be->release(h->seq_dev);
    if (be && h->last_dev) be->release(h->last_dev);
    if (be && h->pair_dev) be->release(h->pair_dev);
    if (be) growbuf_free(&h->mlp, be);
    rt_free(h->seq_host);
    rt_free(h);
}

static void cls_bind(void *head, const Backend *be, Carve *saved, Carve *scratch, int64_t N) {
    Classifier *h = head;
    int64_t widths[] = {[W_D] = h->d, [W_ONE] = 1, [W_D1] = (N + 1) * h->d};
    acts_bind(h, cls_bufs, BUF_COUNT(cls_bufs), widths, 0, be, saved, scratch, N);
    if (!saved->base) return; /* planning */
    if (h->seq_dev) be->release(h->seq_dev);
    if (h->last_dev) be->release(h->last_dev);
    h->seq_dev = be->alloc(sizeof(int32_t) * (size_t)N);
    h->last_dev = be->alloc(sizeof(int32_t) * (size_t)N);
    h->seq_host = rt_realloc(h->seq_host, sizeof(int32_t) * (size_t)N);
    h->N = N;
    if (h->pair == PAIR_NONE) return;
    if (h->pair_dev) be->release(h->pair_dev);
    h->pair_dev = be->alloc(sizeof(int32_t) * (size_t)N);
    for (int64_t n = 0; n < N; n++) h->seq_host[n] = (int32_t)(n / 2);
    be->upload(h->pair_dev, h->seq_host, sizeof(int32_t) * (size_t)N);
}

static int cls_unembedding(const void *head) { return ((const Classifier *)head)->w; }

/* The sequences of the batch: sequence i is batch row rows[i] / T, from the row's start to
 * its labeled token rows[i]. */
static void prepare_sequences(Classifier *h, const Backend *be, const int32_t *rows, int64_t M,
                              int T) {
    int64_t N = h->N;
    double *inv = rt_malloc(sizeof(double) * (size_t)(M ? M : 1));
    for (int64_t n = 0; n < N; n++) h->seq_host[n] = (int32_t)M;
    for (int64_t i = 0; i < M; i++) {
        int32_t start = rows[i] / T * T;
        if (i && rows[i] / T == rows[i - 1] / T)
            rt_die("classifier: batch row %d has two labeled tokens (positions %d and %d); a "
                   "row holds one sequence, labeled at its last token",
                   rows[i] / T, rows[i - 1] % T, rows[i] % T);
        for (int32_t n = start; n <= rows[i]; n++) h->seq_host[n] = (int32_t)i;
        inv[i] = 1.0 / (rows[i] - start + 1);
    }
    be->upload(h->seq_dev, h->seq_host, sizeof(int32_t) * (size_t)N);
    be->upload(h->last_dev, rows, sizeof(int32_t) * (size_t)M);
    backend_upload_f64(be, h->inv_len, inv, M);
    rt_free(inv);
}

/* Pairs: the labeled rows must come as batch rows 2i, 2i + 1. */
static void check_pairs(const int32_t *rows, int64_t M, int T) {
    if (M % 2)
        rt_die("classifier with model.pair: %lld labeled rows, an odd count; rows come in pairs",
               (long long)M);
    for (int64_t i = 0; i < M; i += 2)
        if (rows[i] / T % 2 || rows[i + 1] / T != rows[i] / T + 1)
            rt_die("classifier with model.pair: the labeled rows %d and %d do not form a pair "
                   "(batch rows 2i and "
                   "2i + 1, each labeled once)",
                   rows[i] / T, rows[i + 1] / T);
}

/* Carves the MLP's buffers for P pairs (measuring first, then on the grown buffer). */
static void carve_mlp(Classifier *h, const Backend *be, int64_t P) {
    size_t A = be->act_size, F32 = be->f32_size;
    void **act[] = {&h->feat, &h->z1,  &h->a1,  &h->z2,  &h->a2,
                    &h->lp,   &h->dlp, &h->da2, &h->da1, &h->dfeat};
    int64_t act_w[] = {h->pair == PAIR_NLI ? h->F : 0,
                       h->H1,
                       h->H1,
                       h->H2,
                       h->H2,
                       h->classes,
                       h->classes,
                       h->H2,
                       h->H1,
                       h->F};
    Carve cv = {NULL, 0};
    for (int pass = 0; pass < 2; pass++) {
        if (pass) cv = (Carve){growbuf_get(&h->mlp, be, cv.used), 0};
        for (size_t k = 0; k < sizeof act / sizeof act[0]; k++)
            *act[k] = carve(&cv, A * (size_t)(P * act_w[k]));
        h->dsum_lp = carve(&cv, F32 * (size_t)(P * h->classes));
    }
}

/* The pair logits [P, C] from the pooled [2P, d], then written to both rows of each pair. */
static void pair_forward(Classifier *h, const Ctx *c, int64_t M, void *logits) {
    const Backend *be = c->be;
    int64_t P = M / 2;
    carve_mlp(h, be, P);
    if (h->pair == PAIR_NLI) be->pair_nli_fwd(h->feat, h->pooled, P, h->d);
    const void *feat = h->pair == PAIR_NLI ? h->feat : h->pooled; /* concat: [2P, d] is [P, 2d] */
    be->matmul_fwd(h->z1, feat, W(c, h->w1), W(c, h->b1), (int)P, h->H1, h->F);
    be->relu_fwd(h->a1, h->z1, P * h->H1);
    be->matmul_fwd(h->z2, h->a1, W(c, h->w2), W(c, h->b2), (int)P, h->H2, h->H1);
    be->relu_fwd(h->a2, h->z2, P * h->H2);
    be->matmul_fwd(h->lp, h->a2, W(c, h->w), W(c, h->b), (int)P, h->classes, h->H2);
    be->embedding_fwd(logits, h->pair_dev, h->lp, M, h->classes);
}

/* dpooled [2P, d] from the rows' logit gradients: each pair's two rows summed, back through
 * the MLP and the features. */
static void pair_backward(Classifier *h, const Ctx *c, const void *dlogits) {
    const Backend *be = c->be;
    int64_t M = h->M, P = M / 2;
    be->zero(h->dsum_lp, (size_t)P * h->classes * be->f32_size);
    be->embedding_bwd(h->dsum_lp, h->pair_dev, dlogits, M, h->classes);
    be->to_act(h->dlp, h->dsum_lp, P * h->classes);
    be->matmul_bwd(h->da2, G(c, h->w), G(c, h->b), h->dlp, h->a2, W(c, h->w), (int)P, h->classes,
                   h->H2, 0);
    be->relu_bwd(h->da2, h->da2, h->z2, P * h->H2);
    be->matmul_bwd(h->da1, G(c, h->w2), G(c, h->b2), h->da2, h->a1, W(c, h->w2), (int)P, h->H2,
                   h->H1, 0);
    be->relu_bwd(h->da1, h->da1, h->z1, P * h->H1);
    const void *feat = h->pair == PAIR_NLI ? h->feat : h->pooled;
    void *dfeat = h->pair == PAIR_NLI ? h->dfeat : h->dpooled;
    be->matmul_bwd(dfeat, G(c, h->w1), G(c, h->b1), h->da1, feat, W(c, h->w1), (int)P, h->H1, h->F,
                   0);
    if (h->pair == PAIR_NLI) be->pair_nli_bwd(h->dpooled, h->dfeat, h->pooled, P, h->d);
}

static void cls_forward(void *head, const Ctx *c, const void *xf, const int32_t *rows, int64_t M,
                        int T, void *logits) {
    Classifier *h = head;
    const Backend *be = c->be;
    int d = h->d;
    RT_ASSERT(c->N <= h->N);
    h->M = M;
    if (h->pair != PAIR_NONE) check_pairs(rows, M, T);
    prepare_sequences(h, be, rows, M, T);
    if (h->pool == POOL_LAST) {
        be->embedding_fwd(h->pooled, h->last_dev, xf, M, d);
    } else { /* the sums over each sequence in fp32, then times 1 / length */
        be->zero(h->sum, (size_t)(M + 1) * d * be->f32_size);
        be->embedding_bwd(h->sum, h->seq_dev, xf, c->N, d);
        be->to_act(h->sum_act, h->sum, M * d);
        be->head_scale_fwd(h->pooled, h->sum_act, h->inv_len, M, 1, d);
    }
    if (h->pair != PAIR_NONE)
        pair_forward(h, c, M, logits);
    else
        be->matmul_fwd(logits, h->pooled, W(c, h->w), W(c, h->b), (int)M, h->classes, d);
}

static void cls_backward(void *head, const Ctx *c, const void *dlogits, void *dxf) {
    Classifier *h = head;
    const Backend *be = c->be;
    int64_t M = h->M, N = c->N;
    int d = h->d;
    if (h->pair != PAIR_NONE)
        pair_backward(h, c, dlogits);
    else
        be->matmul_bwd(h->dpooled, G(c, h->w), G(c, h->b), dlogits, h->pooled, W(c, h->w), (int)M,
                       h->classes, d, 0);
    if (h->pool == POOL_LAST) {
        be->zero(dxf, (size_t)N * d * be->act_size);
        be->scatter_rows(dxf, h->last_dev, h->dpooled, M, d);
        return;
    }
    /* every pooled token gets its sequence's gradient / length; the others the zero row */
    be->head_scale_fwd(h->dscaled, h->dpooled, h->inv_len, M, 1, d);
    be->zero((char *)h->dscaled + (size_t)M * d * be->act_size, (size_t)d * be->act_size);
    be->embedding_fwd(dxf, h->seq_dev, h->dscaled, N, d);
}

const HeadImpl head_classifier = {cls_create,  cls_destroy,  cls_bind,
                                  cls_forward, cls_backward, cls_unembedding};
