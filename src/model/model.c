/* The backbone (docs/models.md §backbone): embedding -> L x [h += Mixer(RMSNorm(h)); h +=
 * MLP(RMSNorm(h))]
 * -> RMSNorm -> LM head, with an explicit backward; Mamba2's blocks have no MLP (§mamba2); a
 * layer's mixer is the family's or BaseConv, and the MLP SwiGLU, identity (h += RMSNorm(h)) or none
 * (model.mixers, model.mlp: §zoology-shape); the lra
 * block h += Drop(GLU(Drop(GELU(Mixer(RMSNorm(h)))))) and dropout (§block-dropout-bidirectional);
 * model.block = rnn: embedding -> L x [h = Mixer(h)] -> head (§nonlinear-rnns). Activations needed
 * by the backward are kept per layer; activation gradients use one scratch region shared by all
 * layers. */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "device/host_copy.h"
#include "model/family.h"
#include "model/model_internal.h"
#include "util/dropout_mask.h"
#include "util/error.h"
#include "util/rng.h"

typedef struct {
    int first;                                     /* its first parameter's id */
    int attn_norm, mlp_norm, w_gate, w_up, w_down; /* parameter ids (-1 without an MLP or norm) */
    int attn_norm_b, mlp_norm_b;                   /* the LayerNorms' biases (-1: RMSNorm) */
    int glu_w, glu_b;                              /* the lra block's GLU (-1 without) */
    const MixerImpl *mix; /* the family's layer, or BaseConv (model.mixers) */
    void *mixer;
    /* saved for the backward: the residual stream after the mixer (hm), the norms' rstd,
     * the MLP's gate and up projections; the block input is h[l]. The lra block: the mixer
     * output r, g = Drop(GELU(r)) and the GLU's gate logits z */
    void *rsa, *hm, *rsm, *gate, *up, *r, *g, *z;
    /* the normalised inputs of the mixer (xa) and the MLP (xm) and swish(gate) * up: saved
     * with RECOMPUTE_NONE, else the shared scratch xn, xn and act */
    void *xa, *xm, *act;
} Block;

struct Model {
    ModelConfig cfg;
    ModelDims dims;
    const Backend *be;
    ParamTable params;
    const Family *fam;
    const MixerImpl *mix; /* the family's layer */
    MlpKind mlp;          /* what follows the mixer in the blocks (model_mlp) */
    Block *blocks;
    int emb, final_norm, lm_head; /* lm_head -1 with another head, final_norm -1 in rnn blocks */
    int final_norm_b;             /* the final LayerNorm's bias, -1 with RMSNorm */
    int unembed;    /* the LM head's weight: lm_head, or emb when tied (§zoology-shape) */
    int tail_first; /* the first parameter after the blocks */
    int emb_b;      /* the linear input encoder's bias, else -1 */
    /* the linear input encoder: the token values [act][V] and the table of every token's
     * input [V, d] (saved), its gradient [f32] and that gradient as [act] (scratch) */
    void *values, *table, *dtable, *dtable_act;
    const HeadImpl *head; /* the auto-encoder or classifier head, or NULL: the LM head */
    void *hd;             /* its state */
    int outputs;          /* logits per scored position: V, or the classes */
    void *master, *grads;
    /* the compute copy [act] of the master weights (= master when the types agree), and
     * whether the master changed since it was made */
    void *weights;
    int weights_stale;

    /* activations, sized for cap_N tokens */
    int64_t cap_N;
    void *saved_mem, *scratch_mem;
    void **h; /* [L+1] residual stream: h[l] enters block l */
    void *xf, *rsf, *xsel, *logits, *rope_angle;
    void *dh, *dx, *dgate, *dup, *dact, *dmlp_in;
    /* recomputed in the backward rather than saved (cheap elementwise passes): a block's
     * normalised input of the mixer or the MLP, and swish(gate) * up; the mixer output */
    void *xn, *act, *ya;
    int32_t *tok_dev, *lab_dev, *rows_dev;
    int32_t *rows, *lab_sel; /* host: the labeled positions and their labels */

    /* the current batch */
    int64_t N, M; /* tokens, and labeled positions (rows of the LM head) */
    int T;        /* tokens per batch row */
    int64_t *cu;
    int32_t *pos;
    Seqs seqs;
    void *seqs_dev; /* the backend's copy of the segments (Backend.seqs_prepare) */
    int have_grad_logits;

    GradReadyFn grad_ready; /* model_set_grad_ready */
    void *grad_ready_ctx;

    /* dropout (docs/models.md §block-dropout-bidirectional): when forwards drop, the masks' seed
     * and stream, and of the current pass whether it drops and its key */
    DropoutUse drop_use;
    uint64_t drop_seed, drop_stream, drop_key;
    int drop_on, drop_embed; /* the blocks' dropout, the embedding's (model.embed_dropout) */

    /* carried states (model_set_carry): the bound block and its rows, or NULL */
    void *carry;
    int carry_rows;
    Recompute recompute; /* model_set_recompute */
};

const ModelConfig *model_config(const Model *m) { return &m->cfg; }
const ModelDims *model_dims_of(const Model *m) { return &m->dims; }
const ParamTable *model_params(const Model *m) { return &m->params; }
const Backend *model_backend(const Model *m) { return m->be; }
const void *model_weights(const Model *m) { return m->master; }
/* A writer of the master weights makes the compute copy stale: it is refreshed before the
 * next forward pass. */
void *model_weights_to_write(Model *m) {
    m->weights_stale = 1;
    return m->master;
}
void *model_grads(Model *m) { return m->grads; }
void *model_weights_and_copy(Model *m, void **copy) {
    *copy = m->weights_stale || m->weights == m->master ? NULL : m->weights;
    return m->master;
}

void model_set_grad_ready(Model *m, GradReadyFn fn, void *ctx) {
    m->grad_ready = fn;
    m->grad_ready_ctx = ctx;
}

void model_set_dropout_use(Model *m, DropoutUse u) { m->drop_use = u; }

void model_set_dropout_stream(Model *m, uint64_t seed, uint64_t stream) {
    m->drop_seed = seed;
    m->drop_stream = stream;
}

/* Declares a backbone norm <name>.weight (ones), and for a LayerNorm (model.norm, docs/models.md
 * §zoology-shape) <name>.bias (zeros) into *bias, else *bias = -1; returns the weight's id. */
static int declare_norm(ParamTable *t, const char *name, const ModelConfig *cfg, int *bias) {
    int w = declare_vector(t, pname(name, ".weight").s, cfg->hidden_size, 1);
    *bias = cfg->norm == NORM_LAYER ? declare_vector(t, pname(name, ".bias").s, cfg->hidden_size, 0)
                                    : -1;
    return w;
}

/* Declares every parameter (names, shapes, initialisers) without allocating buffers. */
static Model *model_declare(const ModelConfig *cfg) {
    Model *m = rt_calloc(1, sizeof(Model));
    m->cfg = *cfg;
    const char *err = model_dims(cfg, &m->dims);
    if (err) rt_die("%s", err);
    m->fam = family_of(cfg->mixer);
    m->mix = m->fam->mix;
    m->mlp = model_mlp(cfg);
    const BackboneNames *nm = family_backbone(m->fam);
    ParamTable *t = &m->params;
    int d = cfg->hidden_size, I = m->dims.mlp_width;
    double std = cfg->init_std;
    int64_t esh[2] = {cfg->vocab_size, d}, lsh[2] = {d, 1};
    char name[PARAM_NAME_MAX], prefix[PARAM_NAME_MAX];
    m->emb_b = -1;
    if (cfg->input ==
        INPUT_LINEAR) { /* docs/models.md §classification: a token's value times w, plus b */
        snprintf(name, sizeof name, "%s.encoder.weight", nm->root);
        m->emb = params_add(t, name, 2, lsh, init_normal, std, 1, 1);
        /* a zero bias would give pixel value 0 an all-zero input, where the first RMSNorm's
         * derivative is 1/sqrt(eps): N(0, init_std) as the weight */
        int64_t bsh[1] = {d};
        snprintf(name, sizeof name, "%s.encoder.bias", nm->root);
        m->emb_b = params_add(t, name, 1, bsh, init_normal, std, 0, 1);
    } else {
        snprintf(name, sizeof name, "%s.embeddings.weight", nm->root);
        m->emb = params_add(t, name, 2, esh, init_normal, std, 1, 1);
    }
    m->blocks = rt_calloc((size_t)cfg->num_layers, sizeof(Block));
    for (int l = 0; l < cfg->num_layers; l++) {
        Block *b = &m->blocks[l];
        b->first = t->n;
        b->attn_norm = b->mlp_norm = b->w_gate = b->w_up = b->w_down = -1;
        snprintf(name, sizeof name, "%s.layers.%d.%s", nm->root, l, nm->block_norm);
        if (cfg->block != BLOCK_RNN) b->attn_norm = declare_norm(t, name, cfg, &b->attn_norm_b);
        snprintf(prefix, sizeof prefix, "%s.layers.%d.%s.", nm->root, l, nm->module);
        b->mix = model_layer_mixer(cfg, l) == LAYER_BASE_CONV ? &mixer_base_conv : m->mix;
        b->mixer =
            b->mix->create(t, &m->cfg, &m->dims, prefix); /* the model's own copy: layers keep it */
        b->mlp_norm = b->w_gate = b->w_up = b->w_down = b->glu_w = b->glu_b = -1;
        if (cfg->block == BLOCK_LRA) { /* the GLU's gate, flax Dense's lecun-normal scale */
            snprintf(name, sizeof name, "%s.layers.%d.glu.gate_proj.weight", nm->root, l);
            b->glu_w = declare_linear(t, name, d, d, 1 / sqrt((double)d));
            snprintf(name, sizeof name, "%s.layers.%d.glu.gate_proj.bias", nm->root, l);
            b->glu_b = declare_vector(t, name, d, 0);
        }
        if (m->mlp == MLP_NONE) continue;
        snprintf(name, sizeof name, "%s.layers.%d.mlp_norm", nm->root, l);
        b->mlp_norm = declare_norm(t, name, cfg, &b->mlp_norm_b);
        if (m->mlp == MLP_IDENTITY) continue;
        snprintf(name, sizeof name, "%s.layers.%d.mlp.gate_proj.weight", nm->root, l);
        b->w_gate = declare_linear(t, name, I, d, std);
        snprintf(name, sizeof name, "%s.layers.%d.mlp.up_proj.weight", nm->root, l);
        b->w_up = declare_linear(t, name, I, d, std);
        snprintf(name, sizeof name, "%s.layers.%d.mlp.down_proj.weight", nm->root, l);
        b->w_down = declare_linear(t, name, d, I, std);
    }
    m->tail_first = t->n;
    snprintf(name, sizeof name, "%s.%s", nm->root, nm->final_norm);
    m->final_norm = m->final_norm_b = -1;
    if (cfg->block != BLOCK_RNN) m->final_norm = declare_norm(t, name, cfg, &m->final_norm_b);
    m->lm_head = -1;
    m->outputs = model_outputs(cfg);
    m->head = cfg->head == HEAD_AUTOENCODER  ? &head_autoencoder
              : cfg->head == HEAD_CLASSIFIER ? &head_classifier
                                             : NULL;
    if (m->head)
        m->hd = m->head->create(t, cfg);
    else if (!cfg->tie_embeddings)
        m->lm_head = declare_linear(t, "lm_head.weight", cfg->vocab_size, d, std);
    m->unembed = cfg->tie_embeddings ? m->emb : m->lm_head;
    return m;
}

/* Refuses a model whose mixer ops the backend's kernels cannot run, naming the config keys
 * that set their shapes, before anything is allocated. */
static void check_supported(const Model *m, const Backend *be) {
    if (!be->supports) return;
    const ModelDims *dm = &m->dims;
    OpShape shapes[2] = {{m->mix->op, dm->H, dm->dk, dm->dv}};
    int n = 1;
    if (m->cfg.pe.kind == PE_SELECTIVE)
        shapes[n++] = (OpShape){"selrope", dm->H, dm->dk / 2, dm->dk / 2};
    char why[256];
    for (int i = 0; i < n; i++)
        if (!be->supports(&shapes[i], why, sizeof why))
            rt_die("%s: the %s backend cannot run its %s op (H=%d K=%d V=%d): %s",
                   model_head_keys(&m->cfg), be->name, shapes[i].op, shapes[i].H, shapes[i].K,
                   shapes[i].V, why);
}

Model *model_create(const ModelConfig *cfg, const Backend *be) {
    Model *m = model_declare(cfg);
    check_supported(m, be);
    m->be = be;
    size_t bytes = (size_t)m->params.total * be->f32_size;
    m->master = be->alloc(bytes);
    m->grads = be->alloc(bytes);
    be->zero(m->master, bytes);
    be->zero(m->grads, bytes);
    if (m->emb_b >= 0) { /* token v's value (v - input_offset) / input_scale, as [act] */
        int V = cfg->vocab_size;
        double *v = rt_malloc(sizeof(double) * (size_t)V);
        for (int i = 0; i < V; i++) v[i] = (i - cfg->input_offset) / cfg->input_scale;
        void *f = be->alloc((size_t)V * be->f32_size);
        backend_upload_f64(be, f, v, V);
        m->values = be->alloc((size_t)V * be->act_size);
        be->to_act(m->values, f, V);
        be->release(f);
        rt_free(v);
    }
    if (be->act_size == be->f32_size) {
        m->weights = m->master;
    } else {
        m->weights = be->alloc((size_t)m->params.total * be->act_size);
        m->weights_stale = 1;
    }
    return m;
}

/* Frees a model that model_declare made and nothing allocated buffers for. */
static void model_undeclare(Model *m) {
    for (int l = 0; l < m->cfg.num_layers; l++) m->blocks[l].mix->destroy(m->blocks[l].mixer, NULL);
    if (m->head) m->head->destroy(m->hd, NULL);
    rt_free(m->blocks);
    params_free(&m->params);
    rt_free(m);
}

void model_declare_params(const ModelConfig *cfg, ParamTable *out) {
    Model *m = model_declare(cfg);
    *out = m->params;
    m->params = (ParamTable){0}; /* now out's */
    model_undeclare(m);
}

void model_count_params(const ModelConfig *cfg, int64_t *total, int64_t *non_embedding) {
    Model *m = model_declare(cfg);
    *total = model_num_params(m);
    *non_embedding = model_num_params_non_embedding(m);
    model_undeclare(m);
}

static void release_activations(Model *m) {
    const Backend *be = m->be;
    if (m->saved_mem) be->release(m->saved_mem);
    if (m->scratch_mem) be->release(m->scratch_mem);
    if (m->tok_dev) be->release(m->tok_dev);
    if (m->lab_dev) be->release(m->lab_dev);
    if (m->rows_dev) be->release(m->rows_dev);
    rt_free(m->h);
    m->saved_mem = m->scratch_mem = NULL;
    m->tok_dev = m->lab_dev = m->rows_dev = NULL;
    m->h = NULL;
    m->cap_N = 0;
}

void model_free(Model *m) {
    if (!m) return;
    release_activations(m);
    for (int l = 0; l < m->cfg.num_layers; l++)
        m->blocks[l].mix->destroy(m->blocks[l].mixer, m->be);
    if (m->head) m->head->destroy(m->hd, m->be);
    rt_free(m->blocks);
    if (m->weights != m->master) m->be->release(m->weights);
    if (m->values) m->be->release(m->values);
    m->be->release(m->master);
    m->be->release(m->grads);
    if (m->be->seqs_release) m->be->seqs_release(m->seqs_dev);
    params_free(&m->params);
    rt_free(m->cu);
    rt_free(m->pos);
    rt_free(m->rows);
    rt_free(m->lab_sel);
    rt_free(m);
}

/* A block's saved activations around its mixer: the lra block's r, g, z; the residual after
 * the mixer and its norm's statistics; the MLP's gate and up. */
static void block_bind(Model *m, Block *b, Carve *sv, int64_t N) {
    size_t A = m->be->act_size, F = m->be->f32_size;
    int64_t d = m->cfg.hidden_size, I = m->dims.mlp_width;
    int stats = m->cfg.norm == NORM_LAYER ? 2 : 1;
    if (b->glu_w >= 0) {
        b->r = carve(sv, A * N * d);
        b->g = carve(sv, A * N * d);
        b->z = carve(sv, A * N * d);
    }
    if (m->mlp == MLP_SWIGLU || m->mlp == MLP_IDENTITY) {
        b->hm = carve(sv, A * N * d);
        b->rsm = carve(sv, F * N * stats);
    }
    if (m->mlp == MLP_SWIGLU) {
        b->gate = carve(sv, A * N * I);
        b->up = carve(sv, A * N * I);
    }
}

/* Lays out (or, with NULL bases, measures) every activation buffer for N tokens. Buffers a
 * recompute mode rebuilds in the backward (model.h Recompute) are carved once, at the same
 * place for every layer. */
static void bind_activations(Model *m, Carve *sv, Carve *sc, int64_t N) {
    const Backend *be = m->be;
    size_t A = be->act_size, F = be->f32_size;
    int64_t d = m->cfg.hidden_size, I = m->dims.mlp_width, V = m->outputs;
    int L = m->cfg.num_layers;
    int stats =
        m->cfg.norm == NORM_LAYER ? 2 : 1; /* a norm's rstd per token, and a LayerNorm's mean */
    int keep = m->recompute == RECOMPUTE_NONE, rebuilt = m->recompute == RECOMPUTE_BLOCK;
    for (int l = 0; l <= L; l++) m->h[l] = carve(sv, A * N * d);
    for (int l = 0; l < L; l++) { /* what each layer keeps */
        Block *b = &m->blocks[l];
        b->rsa = carve(sv, F * N * stats);
        if (!rebuilt) block_bind(m, b, sv, N);
        b->xa = keep ? carve(sv, A * N * d) : NULL;
        b->xm = keep && m->mlp == MLP_SWIGLU ? carve(sv, A * N * d) : NULL;
        b->act = keep && m->mlp == MLP_SWIGLU ? carve(sv, A * N * I) : NULL;
    }
    /* what one layer's recompute rebuilds for every layer: the mixers' activations (MIXER,
     * BLOCK) and the blocks' (BLOCK), at one place after the rest */
    size_t shared_at = sv->used, shared = 0;
    for (int l = 0; l < L; l++) {
        Block *b = &m->blocks[l];
        Carve per_layer = {sv->base ? sv->base + shared_at : NULL, 0};
        if (rebuilt) block_bind(m, b, &per_layer, N);
        Carve layer_scratch = {sc->base, 0}; /* every layer reuses the same scratch */
        b->mix->bind(b->mixer, be, &m->dims, m->recompute >= RECOMPUTE_MIXER ? &per_layer : sv,
                     &layer_scratch, N);
        if (layer_scratch.used > sc->used) sc->used = layer_scratch.used;
        if (per_layer.used > shared) shared = per_layer.used;
    }
    if (m->recompute >= RECOMPUTE_MIXER) sv->used = shared_at + shared;
    m->xf =
        m->cfg.block == BLOCK_RNN ? m->h[L] : carve(sv, A * N * d); /* rnn blocks: no final norm */
    m->rsf = carve(sv, F * N * stats);
    m->xsel = carve(sv, A * N * d);
    m->logits = carve(sv, A * N * V);
    m->rope_angle = m->cfg.pe.kind == PE_ROPE ? carve(sv, F * N * (m->dims.dk / 2)) : NULL;
    int64_t Vin = m->cfg.vocab_size;
    m->table = m->emb_b >= 0 ? carve(sv, A * Vin * d) : NULL;
    /* backbone scratch lives after the largest mixer scratch */
    Carve bb = {sc->base, sc->used};
    m->dh = carve(&bb, A * N * d);
    m->dx = carve(&bb, A * N * d);
    m->dmlp_in = carve(&bb, A * N * d);
    m->dgate = carve(&bb, A * N * I);
    m->dup = carve(&bb, A * N * I);
    m->dact = carve(&bb, A * N * I);
    m->xn = carve(&bb, A * N * d);
    m->act = carve(&bb, A * N * I);
    m->ya = carve(&bb, A * N * d);
    if (m->head) m->head->bind(m->hd, be, sv, &bb, N);
    m->dtable = m->emb_b >= 0 ? carve(&bb, F * Vin * d) : NULL;
    m->dtable_act = m->emb_b >= 0 ? carve(&bb, A * Vin * d) : NULL;
    sc->used = bb.used;
    for (int l = 0; l < L; l++) { /* what is not kept lives in the shared scratch */
        Block *b = &m->blocks[l];
        if (!keep) b->xa = b->xm = m->xn, b->act = m->act;
    }
}

static void ensure_capacity(Model *m, int64_t N) {
    if (N <= m->cap_N) return;
    release_activations(m);
    m->h = rt_calloc((size_t)m->cfg.num_layers + 1, sizeof(void *));
    Carve sv = {NULL, 0}, sc = {NULL, 0};
    bind_activations(m, &sv, &sc, N);
    m->saved_mem = m->be->alloc(sv.used);
    m->scratch_mem = m->be->alloc(sc.used);
    Carve sv2 = {m->saved_mem, 0}, sc2 = {m->scratch_mem, 0};
    bind_activations(m, &sv2, &sc2, N);
    m->tok_dev = m->be->alloc(sizeof(int32_t) * (size_t)N);
    m->lab_dev = m->be->alloc(sizeof(int32_t) * (size_t)N);
    m->rows_dev = m->be->alloc(sizeof(int32_t) * (size_t)N);
    m->rows = rt_realloc(m->rows, sizeof(int32_t) * (size_t)N);
    m->lab_sel = rt_realloc(m->lab_sel, sizeof(int32_t) * (size_t)N);
    m->cap_N = N;
}

ModelMemory model_memory(const ModelConfig *cfg, int64_t N, size_t act_size, size_t f32_size,
                         int optimizer_buffers, Recompute recompute) {
    Model *m = model_declare(cfg);
    m->recompute = recompute;
    Backend sizes = {.act_size = act_size, .f32_size = f32_size}; /* all that binding reads */
    m->be = &sizes;
    m->h = rt_calloc((size_t)cfg->num_layers + 1, sizeof(void *));
    Carve sv = {NULL, 0}, sc = {NULL, 0};
    bind_activations(m, &sv, &sc, N);
    size_t P = (size_t)m->params.total;
    ModelMemory mm = {
        .weights = P * (2 * f32_size + (act_size == f32_size ? 0 : act_size)),
        .optimizer = P * (size_t)optimizer_buffers * f32_size,
        .saved = sv.used,
        .scratch = sc.used,
    };
    rt_free(m->h);
    model_undeclare(m);
    return mm;
}

/* The segments in m->cu and m->pos, for the ops (and the device). */
static void prepare_segments(Model *m, int64_t N, int nseg) {
    m->seqs.ntok = N;
    m->seqs.nseg = nseg;
    m->seqs.cu = m->cu;
    m->seqs.pos = m->pos;
    if (m->be->seqs_prepare) m->be->seqs_prepare(&m->seqs, &m->seqs_dev);
}

/* Segments of the batch: one per row, split at document starts when doc_mask is on
 * (docs/models.md §backbone); with bidirectional scans a labeled token (a sequence's last,
 * §classification) ends its segment, so that the reverse scan starts there and not in the pads
 * after it (§block-dropout-bidirectional). */
static void build_segments(Model *m, const Batch *b) {
    int64_t N = (int64_t)b->B * b->T;
    m->cu = rt_realloc(m->cu, sizeof(int64_t) * (size_t)(N + 1));
    m->pos = rt_realloc(m->pos, sizeof(int32_t) * (size_t)N);
    int nseg = 0;
    for (int64_t n = 0; n < N; n++) {
        int doc = b->doc_start ? b->doc_start[n] : b->tokens[n] == m->cfg.bos_id;
        int starts = n % b->T == 0 || (m->cfg.doc_mask && doc) ||
                     (m->cfg.bidirectional && b->labels[n - 1] != -100);
        if (starts) m->cu[nseg++] = n;
        m->pos[n] = starts ? 0 : m->pos[n - 1] + 1;
    }
    m->cu[nseg] = N;
    prepare_segments(m, N, nseg);
}

/* The norm that reads the residual stream h[l]: block l's attention norm, or after the last
 * block the final norm (its output, rstd and weight index). */
typedef struct {
    void *y, *rstd;
    int w, b;
} NormOut;

static NormOut norm_reading(Model *m, int l) {
    if (l < m->cfg.num_layers) {
        Block *b = &m->blocks[l];
        return (NormOut){b->xa, b->rsa, b->attn_norm, b->attn_norm_b};
    }
    return (NormOut){m->xf, m->rsf, m->final_norm, m->final_norm_b};
}

/* The backbone norms over the pass's N tokens (model.norm, docs/models.md §backbone,
 * §zoology-shape): RMSNorm (bias -1; stats = rstd [f32][N]) or LayerNorm (stats = rstd, then mean).
 */
static void *norm_mean(const Model *m, void *stats) { return (char *)stats + F32S(m->be, m->N); }

static void norm_fwd(Model *m, const Ctx *c, void *y, void *stats, const void *x, int w, int b) {
    int d = m->cfg.hidden_size;
    if (b < 0)
        m->be->rmsnorm_fwd(y, stats, x, W(c, w), m->N, 1, d, 0, m->cfg.norm_eps);
    else
        m->be->layernorm_fwd(y, norm_mean(m, stats), stats, x, W(c, w), W(c, b), m->N, d,
                             m->cfg.norm_eps);
}

/* h = a + s (the residual stream), then y = Norm(h). */
static void add_norm_fwd(Model *m, const Ctx *c, void *h, void *y, void *stats, const void *a,
                         const void *s, int w, int b) {
    if (b < 0) {
        m->be->add_rmsnorm_fwd(h, y, stats, a, s, W(c, w), m->N, m->cfg.hidden_size,
                               m->cfg.norm_eps);
        return;
    }
    m->be->add(h, a, s, m->N * m->cfg.hidden_size);
    norm_fwd(m, c, y, stats, h, w, b);
}

/* dx (=, or += with accumulate) from dy of y = Norm(x); the weight's (and bias') gradients
 * accumulate. */
static void norm_bwd(Model *m, const Ctx *c, void *dx, const void *dy, const void *x,
                     const void *stats, int w, int b, int accumulate) {
    int d = m->cfg.hidden_size;
    if (b < 0)
        m->be->rmsnorm_bwd(dx, G(c, w), dy, x, W(c, w), stats, m->N, 1, d, 0, accumulate);
    else
        m->be->layernorm_bwd(dx, G(c, w), G(c, b), dy, x, W(c, w), norm_mean(m, (void *)stats),
                             stats, m->N, d, accumulate);
}

static Ctx make_ctx(Model *m) {
    Ctx c;
    c.mode = PASS_TRAIN;
    c.max_len = 0;
    c.be = m->be;
    c.cfg = &m->cfg;
    c.dims = &m->dims;
    c.seqs = &m->seqs;
    c.N = m->N;
    c.weights = m->weights;
    c.master = m->master;
    c.grads = m->grads;
    c.params = &m->params;
    c.rope_angle = m->rope_angle;
    c.carry = 0;
    return c;
}

/* Before a pass over N tokens: activations for them, and a fresh compute copy of the weights. */
static void prepare_pass(Model *m, int64_t N) {
    ensure_capacity(m, N);
    if (m->weights_stale && m->weights != m->master)
        m->be->to_act(m->weights, m->master, m->params.total);
    m->weights_stale = 0;
    m->N = N;
}

/* y = dropout(x) [N, d] at site s (0, 1) of block l when the pass drops (docs/models.md
 * §block-dropout-bidirectional); nothing otherwise (then y must be x). Its own backward. The
 * embedding's dropout (§zoology-shape) is drop_embedding. */
static void drop(Model *m, void *y, const void *x, int l, int s) {
    const Backend *be = m->be;
    int d = m->cfg.hidden_size;
    RT_ASSERT(m->drop_on || y == x);
    if (!m->drop_on) return;
    uint64_t key = dropout_site_key(m->drop_key, 2 * (uint64_t)l + (uint64_t)s);
    be->dropout(y, x, m->N, d, m->cfg.dropout_mask == DROPOUT_CHANNEL ? m->T : 0, key,
                m->cfg.dropout);
}

/* x = dropout(x) [N, d] of the embedding's output, model.embed_dropout, when the pass drops
 * (Zoology's embed_dropout, docs/models.md §zoology-shape): the site after the blocks' 2 L. Its own
 * backward, on d/dh[0]. */
static void drop_embedding(Model *m, void *x) {
    if (!m->drop_embed) return;
    uint64_t key = dropout_site_key(m->drop_key, 2 * (uint64_t)m->cfg.num_layers);
    m->be->dropout(x, x, m->N, m->cfg.hidden_size,
                   m->cfg.dropout_mask == DROPOUT_CHANNEL ? m->T : 0, key, m->cfg.embed_dropout);
}

/* The lra block's forward after its mixer (docs/models.md §block-dropout-bidirectional): bl->r
 * holds the mixer output; o = g sigmoid(g W^T + b) with g = Drop(GELU(r)), then Drop(o) into ya. */
static void lra_forward(Model *m, const Ctx *c, Block *bl, int l) {
    const Backend *be = m->be;
    int64_t N = m->N;
    int d = m->cfg.hidden_size;
    be->gelu_fwd(bl->g, bl->r, N * d);
    drop(m, bl->g, bl->g, l, 0);
    be->matmul_fwd(bl->z, bl->g, W(c, bl->glu_w), W(c, bl->glu_b), (int)N, d, d);
    be->gate_mul_fwd(m->ya, bl->g, bl->z, N * d, ACT_SIGMOID);
    drop(m, m->ya, m->ya, l, 1);
}

/* Its backward from dh = d/dh[l+1]: d/dr into dmlp_in (dx, ya: scratch). */
static void lra_backward(Model *m, const Ctx *c, Block *bl, int l) {
    const Backend *be = m->be;
    int64_t N = m->N;
    int d = m->cfg.hidden_size;
    const void *dout = m->dh;
    if (m->drop_on) drop(m, m->ya, m->dh, l, 1), dout = m->ya;
    be->gate_mul_bwd(m->dx, m->dmlp_in, dout, bl->g, bl->z, N * d, ACT_SIGMOID);
    be->matmul_bwd(m->dx, G(c, bl->glu_w), G(c, bl->glu_b), m->dmlp_in, bl->g, W(c, bl->glu_w),
                   (int)N, d, d, 1);
    drop(m, m->dx, m->dx, l, 0);
    be->gelu_bwd(m->dmlp_in, m->dx, bl->r, N * d);
}

/* h[l+1] = base + delta, before the norm that follows */
typedef struct {
    const void *base, *delta;
} Residual;

/* Block l of prenorm or lra blocks from its normalised input bl->xa, up to the residual sum
 * that makes h[l+1] (the caller adds it, fused with the next norm). */
static Residual block_forward(Model *m, const Ctx *c, int l) {
    const Backend *be = m->be;
    Block *bl = &m->blocks[l];
    int64_t N = m->N;
    int d = m->cfg.hidden_size, I = m->dims.mlp_width;
    if (bl->glu_w >= 0) { /* h[l+1] = h[l] + Drop(GLU(Drop(GELU(Mixer)))) */
        bl->mix->forward(bl->mixer, c, bl->xa, bl->r);
        lra_forward(m, c, bl, l);
        return (Residual){m->h[l], m->ya};
    }
    bl->mix->forward(bl->mixer, c, bl->xa, m->ya);
    drop(m, m->ya, m->ya, l, 0);
    if (m->mlp == MLP_NONE) return (Residual){m->h[l], m->ya}; /* h[l+1] = h[l] + Mixer */
    if (m->mlp == MLP_IDENTITY) { /* h[l+1] = hm + RMSNorm(hm), hm = h[l] + Mixer
                                     (docs/models.md §zoology-shape) */
        add_norm_fwd(m, c, bl->hm, m->dx, bl->rsm, m->h[l], m->ya, bl->mlp_norm, bl->mlp_norm_b);
        return (Residual){bl->hm, m->dx};
    }
    add_norm_fwd(m, c, bl->hm, bl->xm, bl->rsm, m->h[l], m->ya, bl->mlp_norm, bl->mlp_norm_b);
    be->matmul_fwd(bl->gate, bl->xm, W(c, bl->w_gate), NULL, (int)N, I, d);
    be->matmul_gate_mul_fwd(&(MatmulGateMulArgs){.x = bl->xm,
                                                 .w = W(c, bl->w_up),
                                                 .g = bl->gate,
                                                 .y = bl->up,
                                                 .out = bl->act,
                                                 .M = (int)N,
                                                 .N = I,
                                                 .K = d,
                                                 .act = ACT_SILU});
    /* the MLP output goes to the scratch dx, then into the residual stream */
    be->matmul_fwd(m->dx, bl->act, W(c, bl->w_down), NULL, (int)N, d, I);
    drop(m, m->dx, m->dx, l, 1);
    return (Residual){bl->hm, m->dx};
}

/* The forward from the tokens (m->tok_dev, segments set) to the logits of the m->M rows in
 * m->rows_dev. */
static void forward_pass(Model *m, PassMode mode, int max_len) {
    const Backend *be = m->be;
    int64_t N = m->N, M = m->M;
    if (m->rope_angle) be->rope_angles(m->rope_angle, &m->seqs, m->dims.dk, m->cfg.pe.rope_theta);
    Ctx c = make_ctx(m);
    c.mode = mode;
    c.max_len = max_len;
    c.carry = mode == PASS_TRAIN && m->carry;
    int d = m->cfg.hidden_size, V = m->cfg.vocab_size;
    int L = m->cfg.num_layers;
    if (m->emb_b >= 0) { /* the linear encoder's table: value_v w + b for every token v */
        be->matmul_fwd(m->table, m->values, W(&c, m->emb), W(&c, m->emb_b), m->cfg.vocab_size, d,
                       1);
        be->embedding_fwd(m->h[0], m->tok_dev, m->table, N, d);
    } else {
        be->embedding_fwd(m->h[0], m->tok_dev, W(&c, m->emb), N, d);
    }
    drop_embedding(m, m->h[0]);
    if (m->cfg.block == BLOCK_RNN) /* h[l+1] = Mixer(h[l]); the head reads xf = h[L] */
        for (int l = 0; l < L; l++)
            m->blocks[l].mix->forward(m->blocks[l].mixer, &c, m->h[l], m->h[l + 1]);
    NormOut first = norm_reading(m, 0);
    if (m->cfg.block != BLOCK_RNN) norm_fwd(m, &c, first.y, first.rstd, m->h[0], first.w, first.b);
    for (int l = 0; l < L && m->cfg.block != BLOCK_RNN; l++) {
        NormOut next = norm_reading(m, l + 1);
        Residual r = block_forward(m, &c, l);
        add_norm_fwd(m, &c, m->h[l + 1], next.y, next.rstd, r.base, r.delta, next.w, next.b);
    }
    if (m->head) {
        m->head->forward(m->hd, &c, m->xf, m->rows, M, m->T, m->logits);
        return;
    }
    const void *x_head = m->xf;
    if (M < N) { /* gather the labeled rows (an embedding lookup into xf) */
        be->embedding_fwd(m->xsel, m->rows_dev, m->xf, M, d);
        x_head = m->xsel;
    }
    be->matmul_fwd(m->logits, x_head, W(&c, m->unembed), NULL, (int)M, V, d);
}

static void check_token(const Model *m, int32_t t, int64_t n) {
    if (t < 0 || t >= m->cfg.vocab_size)
        rt_die("token id %d at batch position %lld is outside the vocabulary [0, %d)", t,
               (long long)n, m->cfg.vocab_size);
}

/* The forward pass up to the LM head's logits at the labeled positions (m->M of them). */
static void forward_to_logits(Model *m, const Batch *b, double grad_scale) {
    const Backend *be = m->be;
    int64_t N = (int64_t)b->B * b->T;
    for (int64_t n = 0; n < N; n++) {
        check_token(m, b->tokens[n], n);
        if (b->labels[n] != -100 && (b->labels[n] < 0 || b->labels[n] >= m->outputs))
            rt_die("label %d at batch position %lld is outside [0, %d) (%s)", b->labels[n],
                   (long long)n, m->outputs,
                   m->cfg.head == HEAD_CLASSIFIER ? "model.num_classes" : "the vocabulary");
    }
    prepare_pass(m, N);
    m->T = b->T;
    build_segments(m, b);
    if (m->carry && (m->seqs.nseg != b->B || b->B > m->carry_rows))
        rt_die("carried states: a batch of %d rows makes %d segments for %d carried rows; every "
               "row must be one "
               "segment (no model.doc_mask, no model.bidirectional) and fit the rows of "
               "model_set_carry",
               b->B, m->seqs.nseg, m->carry_rows);
    be->upload(m->tok_dev, b->tokens, sizeof(int32_t) * (size_t)N);
    /* the LM head runs only on the positions that have a label */
    int64_t M = 0;
    for (int64_t n = 0; n < N; n++)
        if (b->labels[n] != -100) m->rows[M] = (int32_t)n, m->lab_sel[M++] = b->labels[n];
    m->M = M;
    be->upload(m->rows_dev, m->rows, sizeof(int32_t) * (size_t)M);
    be->upload(m->lab_dev, m->lab_sel, sizeof(int32_t) * (size_t)M);
    /* docs/models.md §block-dropout-bidirectional: the forwards that prepare a backward drop,
     * unless told otherwise */
    int drops = m->drop_use == DROPOUT_ALWAYS || (m->drop_use == DROPOUT_AUTO && grad_scale > 0);
    m->drop_on = drops && m->cfg.dropout > 0;
    m->drop_embed = drops && m->cfg.embed_dropout > 0;
    if (m->drop_on || m->drop_embed) m->drop_key = dropout_site_key(m->drop_seed, m->drop_stream++);
    forward_pass(m, PASS_TRAIN, 0);
}

double model_forward(Model *m, const Batch *b, double grad_scale, int64_t *n_valid) {
    forward_to_logits(m, b, grad_scale);
    if (n_valid) *n_valid = m->M;
    m->have_grad_logits = grad_scale > 0;
    return m->be->cross_entropy(m->logits, m->lab_dev, m->M, m->outputs,
                                m->have_grad_logits ? grad_scale : 0.0);
}

int64_t model_forward_logits(Model *m, const Batch *b) {
    forward_to_logits(m, b, 0.0);
    m->have_grad_logits = 0;
    return m->M;
}

/* ---- carried states (docs/models.md §carried-states) ---- */

int64_t model_carry_width(const Model *m) {
    int64_t w = 0;
    for (int l = 0; l < m->cfg.num_layers; l++) {
        const Block *b = &m->blocks[l];
        if (!b->mix->carry_width) return 0;
        w += b->mix->carry_width(b->mixer);
    }
    return w;
}

size_t model_carry_bytes(Model *m, int rows) {
    RT_ASSERT(model_carry_width(m) > 0);
    m->carry = NULL;
    return model_bind_decode_state(m, NULL, rows, 1);
}

void model_set_carry(Model *m, void *state, int rows) {
    if (state) {
        if (!model_carry_width(m)) {
            char names[128];
            family_names_carrying(names, sizeof names);
            rt_die("model.type = %s cannot carry its state across batches (train.carry_state needs "
                   "a recurrent "
                   "cell: %s)",
                   mixer_name(m->cfg.mixer), names);
        }
        model_bind_decode_state(m, state, rows, 1);
    }
    m->carry = state;
    m->carry_rows = rows;
}

/* Copies between a carried-state block of `rows` rows and host rows [rows, width]: every
 * layer's state is one [rows, w_l] [f32] buffer of the block (MixerImpl.carry_width), in
 * layer order, and a host row holds the layers' states in that order. */
static void carry_transfer(Model *m, void *block, int rows, float *host, int up) {
    const Backend *be = m->be;
    int64_t W = model_carry_width(m), col = 0;
    Carve st = {block, 0};
    for (int l = 0; l < m->cfg.num_layers; l++) {
        int64_t w = m->blocks[l].mix->carry_width(m->blocks[l].mixer);
        char *region = carve(&st, F32S(be, (int64_t)rows * w));
        float *tmp = rt_malloc(sizeof(float) * (size_t)(rows * w));
        if (!up) backend_download_f32(be, tmp, region, rows * w);
        for (int64_t r = 0; r < rows; r++) {
            float *hr = host + r * W + col, *tr = tmp + r * w;
            memcpy(up ? tr : hr, up ? hr : tr, sizeof(float) * (size_t)w);
        }
        if (up) backend_upload_f32(be, region, tmp, rows * w);
        rt_free(tmp);
        col += w;
    }
}

void model_carry_download(Model *m, const void *state, int rows, float *host) {
    carry_transfer(m, (void *)state, rows, host, 0);
}

void model_carry_upload(Model *m, void *state, int rows, const float *host) {
    carry_transfer(m, state, rows, (float *)host, 1);
}

/* ---- decoding (decode.c) ---- */

size_t model_bind_decode_state(Model *m, void *base, int rows, int max_len) {
    Carve st = {base, 0};
    for (int l = 0; l < m->cfg.num_layers; l++)
        m->blocks[l].mix->bind_state(m->blocks[l].mixer, m->be, &m->dims, &st, rows, max_len);
    return st.used;
}

void model_decode_pass(Model *m, const DecodePass *p, float *logits) {
    const Backend *be = m->be;
    int64_t N = p->cu[p->nseg];
    for (int64_t n = 0; n < N; n++) check_token(m, p->tokens[n], n);
    prepare_pass(m, N);
    m->cu = rt_realloc(m->cu, sizeof(int64_t) * (size_t)(p->nseg + 1));
    m->pos = rt_realloc(m->pos, sizeof(int32_t) * (size_t)N);
    memcpy(m->cu, p->cu, sizeof(int64_t) * (size_t)(p->nseg + 1));
    memcpy(m->pos, p->pos, sizeof(int32_t) * (size_t)N);
    prepare_segments(m, N, p->nseg);
    be->upload(m->tok_dev, p->tokens, sizeof(int32_t) * (size_t)N);
    /* the LM head reads each segment's last token */
    for (int i = 0; i < p->nseg; i++) m->rows[i] = (int32_t)(p->cu[i + 1] - 1);
    m->M = p->nseg;
    be->upload(m->rows_dev, m->rows, sizeof(int32_t) * (size_t)m->M);
    m->drop_on = m->drop_embed = 0;
    forward_pass(m, p->mode, p->max_len);
    int64_t n = m->M * m->cfg.vocab_size;
    void *raw = rt_malloc((size_t)n * be->act_size);
    be->download(raw, m->logits, (size_t)n * be->act_size);
    act_to_f32(be->act_size, logits, raw, n);
    rt_free(raw);
    m->have_grad_logits = 0;
}

static void grads_ready(Model *m, int64_t lo, int64_t hi) {
    if (m->grad_ready) m->grad_ready(m->grad_ready_ctx, lo, hi);
}

/* First element of block l's parameters (its attention norm, declared first); for l = L,
 * of the final norm, which the LM head follows. Every block owns [start(l), start(l+1)). */
static int64_t block_start(const Model *m, int l) {
    int idx = l < m->cfg.num_layers ? m->blocks[l].first : m->tail_first;
    return m->params.p[idx].offset;
}

/* The backward of rnn blocks (h[l+1] = Mixer(h[l])) from d/dh[L] in m->dx; returns the
 * buffer that holds d/dh[0]. */
static void *backward_rnn_blocks(Model *m, const Ctx *c) {
    void *dh = m->dx, *dx = m->dh;
    grads_ready(m, block_start(m, m->cfg.num_layers), m->params.total);
    for (int l = m->cfg.num_layers - 1; l >= 0; l--) {
        if (m->recompute >= RECOMPUTE_MIXER) /* the mixer's activations, for its backward */
            m->blocks[l].mix->forward(m->blocks[l].mixer, c, m->h[l], m->ya);
        m->blocks[l].mix->backward(m->blocks[l].mixer, c, m->h[l], dh, dx);
        void *t = dh;
        dh = dx, dx = t;
        grads_ready(m, block_start(m, l), block_start(m, l + 1));
    }
    return dh;
}

void model_backward(Model *m) {
    RT_ASSERT(m->have_grad_logits);
    const Backend *be = m->be;
    Ctx c = make_ctx(m);
    int64_t N = m->N;
    int d = m->cfg.hidden_size, I = m->dims.mlp_width, V = m->cfg.vocab_size, L = m->cfg.num_layers;
    /* the head (LM or auto-encoder, on the M labeled rows) and final norm: dh = d loss / d h[L] */
    int64_t M = m->M;
    if (m->head) {
        m->head->backward(m->hd, &c, m->logits, m->dx);
    } else if (M < N) { /* scatter the rows' gradient back (rows without a label get zero) */
        be->matmul_bwd(m->dmlp_in, G(&c, m->unembed), NULL, m->logits, m->xsel, W(&c, m->unembed),
                       (int)M, V, d, 0);
        be->zero(m->dx, (size_t)N * d * be->act_size);
        be->scatter_rows(m->dx, m->rows_dev, m->dmlp_in, M, d);
    } else {
        be->matmul_bwd(m->dx, G(&c, m->unembed), NULL, m->logits, m->xf, W(&c, m->unembed), (int)N,
                       V, d, 0);
    }
    void *dh0 = m->dh; /* d loss / d h[0] */
    if (m->cfg.block == BLOCK_RNN) {
        dh0 = backward_rnn_blocks(m, &c);
        L = 0; /* no prenorm blocks */
    } else {
        norm_bwd(m, &c, m->dh, m->dx, m->h[L], m->rsf, m->final_norm, m->final_norm_b, 0);
        grads_ready(m, block_start(m, L), m->params.total);
    }
    for (int l = L - 1; l >= 0; l--) {
        Block *bl = &m->blocks[l];
        int rebuild = m->recompute != RECOMPUTE_NONE; /* the normalised inputs and act */
        if (m->recompute == RECOMPUTE_BLOCK) {        /* the block's activations, from h[l] */
            norm_fwd(m, &c, bl->xa, bl->rsa, m->h[l], bl->attn_norm, bl->attn_norm_b);
            block_forward(m, &c, l);
        }
        /* the mixer's output gradient: d/dh[l+1] through the lra block's GLU, or (prenorm)
         * d/dhm through its dropout */
        const void *dmix = m->dh;
        if (bl->glu_w >= 0) {
            lra_backward(m, &c, bl, l);
            dmix = m->dmlp_in;
        }
        if (m->mlp == MLP_IDENTITY) { /* h[l+1] = hm + RMSNorm(hm): d/dhm = dh + RMSNorm'(dh) */
            be->copy(m->dmlp_in, m->dh, (size_t)N * d * be->act_size);
            norm_bwd(m, &c, m->dh, m->dmlp_in, bl->hm, bl->rsm, bl->mlp_norm, bl->mlp_norm_b, 1);
        } else if (m->mlp == MLP_SWIGLU) {
            /* MLP: h[l+1] = hm + Drop(down(swish(gate) * up)), dh holds d/dh[l+1] and becomes d/dhm
             */
            const void *dmlp = m->dh;
            if (m->drop_on) drop(m, m->ya, m->dh, l, 1), dmlp = m->ya;
            if (rebuild) { /* the product rebuilt in the gate's backward, then down's dw */
                be->gate_mul_matmul_dx(&(GateMulMatmulDx){.dout = dmlp,
                                                          .w = W(&c, bl->w_down),
                                                          .x = bl->up,
                                                          .g = bl->gate,
                                                          .dx = m->dup,
                                                          .dg = m->dgate,
                                                          .p = bl->act,
                                                          .dp = m->dact,
                                                          .M = (int)N,
                                                          .N = d,
                                                          .K = I,
                                                          .act = ACT_SILU});
                be->matmul_bwd(NULL, G(&c, bl->w_down), NULL, dmlp, bl->act, NULL, (int)N, d, I, 0);
            } else {
                be->matmul_bwd(m->dact, G(&c, bl->w_down), NULL, dmlp, bl->act, W(&c, bl->w_down),
                               (int)N, d, I, 0);
                be->gate_mul_bwd(m->dup, m->dgate, m->dact, bl->up, bl->gate, N * I, ACT_SILU);
            }
            if (rebuild) norm_fwd(m, &c, bl->xm, bl->rsm, bl->hm, bl->mlp_norm, bl->mlp_norm_b);
            be->matmul_bwd(m->dmlp_in, G(&c, bl->w_gate), NULL, m->dgate, bl->xm, W(&c, bl->w_gate),
                           (int)N, I, d, 0);
            be->matmul_bwd(m->dmlp_in, G(&c, bl->w_up), NULL, m->dup, bl->xm, W(&c, bl->w_up),
                           (int)N, I, d, 1);
            norm_bwd(m, &c, m->dh, m->dmlp_in, bl->hm, bl->rsm, bl->mlp_norm, bl->mlp_norm_b, 1);
        }
        /* mixer: hm (h[l+1] without an MLP) = h[l] + Drop(Mixer(xa)); dh becomes d/dh[l] */
        if (bl->glu_w < 0 && m->drop_on) drop(m, m->ya, m->dh, l, 0), dmix = m->ya;
        if (rebuild) norm_fwd(m, &c, bl->xa, bl->rsa, m->h[l], bl->attn_norm, bl->attn_norm_b);
        if (m->recompute == RECOMPUTE_MIXER) /* the mixer's activations, for its backward */
            bl->mix->forward(bl->mixer, &c, bl->xa, m->dx);
        bl->mix->backward(bl->mixer, &c, bl->xa, dmix, m->dx);
        norm_bwd(m, &c, m->dh, m->dx, m->h[l], bl->rsa, bl->attn_norm, bl->attn_norm_b, 1);
        grads_ready(m, block_start(m, l), block_start(m, l + 1));
    }
    drop_embedding(m, dh0);
    if (m->emb_b >= 0) {
        int V = m->cfg.vocab_size;
        be->zero(m->dtable, (size_t)V * d * be->f32_size);
        be->embedding_bwd(m->dtable, m->tok_dev, dh0, N, d);
        be->to_act(m->dtable_act, m->dtable, (int64_t)V * d);
        be->matmul_bwd(NULL, G(&c, m->emb), G(&c, m->emb_b), m->dtable_act, m->values,
                       W(&c, m->emb), V, d, 1, 0);
    } else {
        be->embedding_bwd(G(&c, m->emb), m->tok_dev, dh0, N, d);
    }
    grads_ready(m, 0, block_start(m, 0));
    m->have_grad_logits = 0;
}

void model_get_logits(Model *m, void *host) {
    RT_ASSERT(!m->have_grad_logits);
    m->be->download(host, m->logits, (size_t)m->M * m->outputs * m->be->act_size);
}

int64_t model_token_logprobs(Model *m, const Batch *b, double *logp, uint8_t *greedy) {
    const Backend *be = m->be;
    int64_t N = model_forward_logits(m, b);
    void *dev = be->alloc((size_t)(N ? N : 1) * be->f32_size);
    be->token_logprobs(m->logits, m->lab_dev, N, m->outputs, dev, greedy);
    backend_download_f64(be, logp, dev, N);
    be->release(dev);
    return N;
}

void model_logit_scores(Model *m, int vocab, int k, const LogitScores *out) {
    const Backend *be = m->be;
    int64_t N = m->M, Nk = N * k;
    RT_ASSERT(!m->have_grad_logits);
    if (N == 0) return;
    void *lse = be->alloc((size_t)N * be->f32_size),
         *label_lp = be->alloc((size_t)N * be->f32_size);
    void *top_lp = be->alloc((size_t)Nk * be->f32_size),
         *top_id = be->alloc((size_t)Nk * sizeof(int32_t));
    be->logit_scores(&(LogitScoresArgs){m->logits, m->lab_dev, N, m->outputs, vocab, k, lse,
                                        label_lp, top_id, top_lp});
    backend_download_f64(be, out->lse, lse, N);
    backend_download_f64(be, out->label_lp, label_lp, N);
    backend_download_f64(be, out->top_lp, top_lp, Nk);
    be->download(out->top_id, top_id, (size_t)Nk * sizeof(int32_t));
    be->release(lse);
    be->release(label_lp);
    be->release(top_lp);
    be->release(top_id);
}

void model_get_logit_row(Model *m, int64_t row, void *host) {
    RT_ASSERT(!m->have_grad_logits && row >= 0 && row < m->M);
    size_t bytes = (size_t)m->outputs * m->be->act_size;
    m->be->download(host, (const char *)m->logits + (size_t)row * bytes, bytes);
}

/* ---- parameters ---- */

/* The initial values of parameter idx, from its own random stream (seed, idx). */
typedef struct {
    const Model *m;
    uint64_t seed;
} InitCtx;

static void param_values(const void *ctx, int idx, double *out) {
    const InitCtx *x = ctx;
    const ParamInfo *p = &x->m->params.p[idx];
    Rng r;
    rng_init(&r, x->seed, (uint64_t)idx);
    ParamInitArgs a = {&x->m->cfg, p, &r, out, param_values, ctx};
    p->init(&a);
}

void model_init_weights(Model *m, uint64_t seed) {
    const Backend *be = m->be;
    model_set_dropout_stream(m, seed, 0);
    for (int i = 0; i < m->params.n; i++) {
        const ParamInfo *p = &m->params.p[i];
        double *vals = rt_malloc(sizeof(double) * (size_t)p->numel);
        param_values(&(InitCtx){m, seed}, i, vals);
        backend_upload_f64(be, (char *)m->master + (size_t)p->offset * be->f32_size, vals,
                           p->numel);
        m->weights_stale = 1;
        rt_free(vals);
    }
}

double model_penalty(Model *m, double delta, double t_decay, int grad) {
    if (!m->mix->penalty) return 0;
    Ctx c = make_ctx(m);
    double sum = 0;
    for (int l = 0; l < m->cfg.num_layers; l++) {
        Block *b = &m->blocks[l];
        if (b->mix->penalty) sum += b->mix->penalty(b->mixer, &c, delta, t_decay, grad);
    }
    return sum;
}

void model_set_recompute(Model *m, Recompute r) {
    if (r == m->recompute) return;
    m->recompute = r;
    m->cap_N = 0; /* the activations are laid out anew for the next pass */
}

json_t *model_recurrent_stats(Model *m) {
    /* under MIXER and BLOCK every layer's mixer activations share one place: the last one's */
    if (!m->mix->stats || m->N <= 0 || m->recompute >= RECOMPUTE_MIXER) return NULL;
    Ctx c = make_ctx(m);
    json_t *layers = json_array();
    for (int l = 0; l < m->cfg.num_layers; l++) {
        json_t *o = json_object();
        if (m->blocks[l].mix->stats) m->blocks[l].mix->stats(m->blocks[l].mixer, &c, o);
        json_array_append_new(layers, o);
    }
    return layers;
}

void model_zero_grads(Model *m) {
    m->be->zero(m->grads, (size_t)m->params.total * m->be->f32_size);
}

int64_t model_num_params(const Model *m) { return params_count(&m->params); }

int64_t model_num_params_non_embedding(const Model *m) {
    int head = m->head ? m->head->unembedding(m->hd) : m->unembed;
    int64_t unembed = head == m->emb ? 0 : m->params.p[head].numel; /* tied: counted once */
    return model_num_params(m) - m->params.p[m->emb].numel - unembed;
}

double model_flops_per_token(const Model *m, int T) {
    const ModelConfig *c = &m->cfg;
    const ModelDims *dm = &m->dims;
    /* 6 flops per weight used in a matmul (forward 2, backward 4): everything but the
     * embedding table and the norm/bias vectors */
    double matmul_params = (double)(model_num_params(m) - m->params.p[m->emb].numel);
    if (m->unembed == m->emb)
        matmul_params += (double)m->params.p[m->emb].numel; /* the tied LM head */
    double per_layer = m->fam->mixing_flops(c, dm, T);
    int family_layers = 0; /* BaseConv layers (model.mixers) mix only by their weights' products */
    for (int l = 0; l < c->num_layers; l++) family_layers += m->blocks[l].mix == m->mix;
    return 6.0 * matmul_params + 3.0 * per_layer * family_layers;
}
