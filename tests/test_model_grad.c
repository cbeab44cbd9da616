/* Whole-model finite-difference gradient checks in double precision: every parameter of
 * every mixer x position-embedding option of docs/models.md, with a sequence length that is not
 * a multiple of the chunk size, with and without document masking. */
#include <math.h>
#include <string.h>

#include "cpu/real.h"
#include "harness.h"
#include "model/model.h"
#include "testutil.h"
#include "util/error.h"
#include "util/rng.h"
#include "variants.h"

typedef struct {
    Model *m;
    Batch b;
    double inv_valid;
} Probe;

/* With dropout every forward drops with the same masks (a fixed stream): the loss is then a
 * smooth function of the weights (docs/models.md §block-dropout-bidirectional). */
static double probe_loss(void *ctx) {
    Probe *p = ctx;
    model_set_dropout_stream(p->m, 5, 0);
    return model_forward(p->m, &p->b, 0.0f, NULL) * p->inv_valid;
}

/* modReLU (expRNN, nnRNN, docs/models.md §nonlinear-rnns) jumps by 2b at 0 for a bias b > 0 and has
 * kinks at |a| = -b otherwise: the check moves its biases to [-0.1, -0.05], where it is continuous,
 * and takes a small step, so that a finite difference rarely crosses a kink among the
 * thousands of units. Returns whether the model has modReLU biases. */
static int modrelu_continuous(Model *m, Rng *r) {
    const ParamTable *t = model_params(m);
    real *w = model_weights_to_write(m);
    int any = 0;
    for (int i = 0; i < t->n; i++) {
        if (!strstr(t->p[i].name, "nonlinearity.b")) continue;
        for (int64_t j = 0; j < t->p[i].numel; j++)
            w[t->p[i].offset + j] = -0.05 - 0.05 * rng_uniform(r);
        any = 1;
    }
    return any;
}

/* Checks every trainable parameter on `samples` entries; returns the worst error. */
static double check_model(const ModelConfig *cfg, const char *label) {
    Model *m = model_create(cfg, backend_cpu());
    model_init_weights(m, 7);
    model_set_dropout_use(m, DROPOUT_ALWAYS);
    Rng r;
    rng_init(&r, 99, 0);
    /* modReLU's small step raises the difference's rounding floor, about 1e-16 |L| / step, to
     * ~1e-6 of a parameter whose gradients are small (the norms' weights at one thread: 1.2e-6),
     * so its tolerance is 1e-5; a gradient wrong anywhere is off by far more */
    int modrelu = modrelu_continuous(m, &r);
    double step = modrelu ? 1e-7 : 2e-5, tol = modrelu ? 1e-5 : 1e-6;
    int B = cfg->pair != PAIR_NONE ? 4 : 2, T = 70; /* pairs: two pairs of rows */
    int32_t *tok = rt_malloc(sizeof(int32_t) * B * T), *lab = rt_malloc(sizeof(int32_t) * B * T);
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)rng_below(&r, (uint64_t)cfg->vocab_size);
        lab[i] = rng_uniform(&r) < 0.1 ? -100 : (int32_t)rng_below(&r, (uint64_t)cfg->vocab_size);
    }
    tok[5] = tok[40] = tok[T + 3] = cfg->bos_id; /* document starts inside the rows */
    if (cfg->head ==
        HEAD_CLASSIFIER) /* one sequence per row, labeled at its last token: 70, 45, 70, 45
                          * tokens, then pads; a pair's two rows share their class */
        for (int i = 0; i < B * T; i++) {
            int row = i / T, len = row % 2 ? 45 : T, t = i % T;
            if (t == len - 1)
                lab[i] = cfg->pair != PAIR_NONE && row % 2
                             ? lab[row * T - 1]
                             : (int32_t)rng_below(&r, (uint64_t)cfg->num_classes);
            else
                lab[i] = -100;
            if (t >= len) tok[i] = 0;
        }
    Probe p = {m, {B, T, tok, lab, NULL}, 0};
    int64_t valid;
    model_zero_grads(m);
    model_forward(m, &p.b, 1.0f, &valid);
    p.inv_valid = 1.0 / (double)valid;
    model_zero_grads(m);
    model_set_dropout_stream(m, 5, 0);
    model_forward(m, &p.b, p.inv_valid, NULL);
    model_backward(m);
    const ParamTable *t = model_params(m);
    real *w = model_weights_to_write(m), *g = model_grads(m);
    double worst = 0;
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *pi = &t->p[i];
        if (!pi->trainable) continue;
        double e =
            tu_gradcheck(probe_loss, &p, w + pi->offset, g + pi->offset, pi->numel, 6, step, &r);
        CHECK_MSG(e < tol, "%s: %s gradient error %.3g", label, pi->name, e);
        if (e > worst) worst = e;
    }
    rt_free(tok);
    rt_free(lab);
    model_free(m);
    return worst;
}

static void test_gla_plain(void) { run_pe_variants(MIXER_GLA, 0, check_model); }
static void test_gla_conv(void) { run_pe_variants(MIXER_GLA, 1, check_model); }
static void test_gdn_plain(void) { run_pe_variants(MIXER_GDN, 0, check_model); }
static void test_gdn_conv(void) { run_pe_variants(MIXER_GDN, 1, check_model); }
static void test_fox_plain(void) { run_pe_variants(MIXER_FOX, 0, check_model); }
static void test_fox_pro(void) { run_pe_variants(MIXER_FOX, 1, check_model); }
static void test_transformer(void) { run_pe_variants(MIXER_TRANSFORMER, 0, check_model); }
static void test_transformer_qk_norm(void) { run_pe_variants(MIXER_TRANSFORMER, 1, check_model); }
static void test_deltanet_plain(void) { run_pe_variants(MIXER_DELTANET, 0, check_model); }
static void test_deltanet_conv(void) { run_pe_variants(MIXER_DELTANET, 1, check_model); }
static void test_mamba2_plain(void) { run_pe_variants(MIXER_MAMBA2, 0, check_model); }
static void test_mamba2_groups(void) { run_pe_variants(MIXER_MAMBA2, 1, check_model); }
/* the LRU, RotRNN and the nonlinear RNNs, both options in one test each: run_variant_tests */

/* The nnRNN's penalties through model_penalty (docs/models.md §nonlinear-rnns), as the trainer adds
 * them: the gradient it adds equals the finite differences of the value it returns, in every
 * parameter (zero outside gamma and T), with gamma and T moved away from their init (ones,
 * zeros) so that both terms are non-zero. */
static void test_penalty(void) {
    ModelConfig x = tu_tiny_model(MIXER_NNRNN, 2);
    x.block = BLOCK_RNN;
    Model *m = model_create(&x, backend_cpu());
    model_init_weights(m, 5);
    const ParamTable *t = model_params(m);
    real *w = model_weights_to_write(m);
    Rng r;
    rng_init(&r, 41, 0);
    for (int64_t i = 0; i < t->total; i++) w[i] += (real)(0.3 * (rng_uniform(&r) - 0.5));
    const double delta = 0.7, t_decay = 0.05, h = 1e-6;
    model_zero_grads(m);
    double p0 = model_penalty(m, delta, t_decay, 1);
    CHECK_MSG(p0 > 0, "penalty %g", p0);
    const real *g = model_grads(m);
    double worst = 0;
    for (int64_t i = 0; i < t->total; i++) {
        real keep = w[i];
        w[i] = keep + h;
        double up = model_penalty(m, delta, t_decay, 0);
        w[i] = keep - h;
        double down = model_penalty(m, delta, t_decay, 0);
        w[i] = keep;
        double fd = (up - down) / (2 * h), err = fabs(fd - g[i]) / (1 + fabs(fd));
        if (err > worst) worst = err;
    }
    printf("    nnrnn penalties: %g, worst gradient error %.2e\n", p0, worst);
    CHECK_MSG(worst < 1e-7, "worst %.3e", worst);
    model_free(m);
}

/* The auto-encoder head (docs/models.md §autoencoder-head) on two mixers and position embeddings.
 */
static void test_autoencoder(void) {
    static const MixerKind kinds[] = {MIXER_GLA, MIXER_FOX};
    for (int i = 0; i < 2; i++) {
        ModelConfig x = tu_tiny_model(kinds[i], 2);
        x.head = HEAD_AUTOENCODER;
        apply_pe_variant(&x, i ? 3 : 0);
        char label[96];
        snprintf(label, sizeof label, "%s %s autoencoder", mixer_name(kinds[i]),
                 pe_variant_name(&x, i ? 3 : 0));
        double e = check_model(&x, label);
        printf("    %-45s worst %.2e\n", label, e);
    }
}

/* The classifier head (docs/models.md §classification), mean and last pooling, with the linear
 * input encoder on the mean-pooled one. */
static void test_classifier(void) {
    for (int last = 0; last < 2; last++) {
        ModelConfig x = tu_tiny_model(last ? MIXER_GDN : MIXER_GLA, 2);
        x.head = HEAD_CLASSIFIER;
        x.num_classes = 5;
        x.pool = last ? POOL_LAST : POOL_MEAN;
        x.input = last ? INPUT_EMBEDDING : INPUT_LINEAR;
        x.input_scale = 6;
        apply_pe_variant(&x, last ? 2 : 0);
        char label[96];
        snprintf(label, sizeof label, "%s classifier %s pool, %s input", mixer_name(x.mixer),
                 last ? "last" : "mean", last ? "embedding" : "linear");
        double e = check_model(&x, label);
        printf("    %-45s worst %.2e\n", label, e);
    }
}

/* The block of docs/models.md §block-dropout-bidirectional: the lra block and dropout (element and
 * channel masks, fixed by the stream; also the embedding's dropout of §zoology-shape) on the LRU,
 * RotRNN, GLA and Mamba2, and the bidirectional LRU and RotRNN under the classifier (rows of 70 and
 * 45 tokens, so that the reverse scan starts at each sequence's last token, not in its pads), with
 * and without documents. */
static void test_block(void) {
    static const struct {
        MixerKind mixer;
        BlockKind block;
        double dropout, embed_dropout;
        DropoutMask mask;
        int bidir, doc_mask;
    } cases[] = {
        {MIXER_LRU, BLOCK_LRA, 0, 0, DROPOUT_ELEMENT, 0, 0},
        {MIXER_ROTRNN, BLOCK_LRA, 0.25, 0, DROPOUT_CHANNEL, 0, 1},
        {MIXER_GLA, BLOCK_PRENORM, 0.25, 0, DROPOUT_ELEMENT, 0, 0},
        {MIXER_GLA, BLOCK_PRENORM, 0, 0.25, DROPOUT_ELEMENT, 0,
         0}, /* the embedding's alone (§zoology-shape) */
        {MIXER_MAMBA2, BLOCK_PRENORM, 0.25, 0.25, DROPOUT_CHANNEL, 0, 0},
        {MIXER_LRU, BLOCK_LRA, 0.25, 0, DROPOUT_ELEMENT, 1, 0},
        {MIXER_ROTRNN, BLOCK_LRA, 0.25, 0, DROPOUT_CHANNEL, 1, 1},
        {MIXER_LRU, BLOCK_PRENORM, 0, 0, DROPOUT_ELEMENT, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ModelConfig x = tu_tiny_model(cases[i].mixer, 2);
        apply_mixer_option(&x, 1);
        x.block = cases[i].block;
        x.dropout = cases[i].dropout;
        x.embed_dropout = cases[i].embed_dropout;
        x.dropout_mask = cases[i].mask;
        x.bidirectional = cases[i].bidir;
        x.doc_mask = cases[i].doc_mask;
        if (x.bidirectional) x.head = HEAD_CLASSIFIER, x.num_classes = 5;
        char label[128];
        snprintf(label, sizeof label, "%s %s dropout %.2f embed %.2f %s%s%s", mixer_name(x.mixer),
                 BLOCK_NAMES.names[x.block], x.dropout, x.embed_dropout,
                 x.dropout_mask == DROPOUT_CHANNEL ? "channel" : "element",
                 x.bidirectional ? " bidirectional" : "", x.doc_mask ? " docmask" : "");
        double e = check_model(&x, label);
        printf("    %-45s worst %.2e\n", label, e);
    }
}

/* The pair classifier (docs/models.md §classification, LRA's dual encoder): both interactions, mean
 * and last pooling. */
static void test_pair_classifier(void) {
    for (int nli = 0; nli < 2; nli++) {
        ModelConfig x = tu_tiny_model(nli ? MIXER_GLA : MIXER_FOX, 2);
        x.head = HEAD_CLASSIFIER;
        x.num_classes = 3;
        x.pair = nli ? PAIR_NLI : PAIR_CONCAT;
        x.pair_mlp = 10;
        x.pool = nli ? POOL_MEAN : POOL_LAST;
        x.init_std = 0.3; /* the ReLUs' inputs well away from their kink at the step of the check */
        apply_pe_variant(&x, nli ? 2 : 0);
        char label[96];
        snprintf(label, sizeof label, "%s pair classifier %s, %s pool", mixer_name(x.mixer),
                 nli ? "nli" : "concat", nli ? "mean" : "last");
        double e = check_model(&x, label);
        printf("    %-45s worst %.2e\n", label, e);
    }
}

/* Dropout acts only where it should (docs/models.md §block-dropout-bidirectional): a scoring
 * forward (grad_scale 0) of a model with dropout gives the loss of the same model without it, a
 * training forward another; a bidirectional classifier does not see the pads after a sequence's
 * labeled last token. */
static void test_block_passes(void) {
    ModelConfig x = tu_tiny_model(MIXER_LRU, 2);
    x.block = BLOCK_LRA;
    x.dropout = 0.5;
    x.bidirectional = 1;
    x.head = HEAD_CLASSIFIER;
    x.num_classes = 3;
    Model *m = model_create(&x, backend_cpu());
    model_init_weights(m, 3);
    int B = 2, T = 20;
    int32_t tok[40], lab[40];
    for (int i = 0; i < B * T; i++) tok[i] = 3 + i % 7, lab[i] = -100; /* vocabulary 13 */
    lab[11] = 1, lab[T + 19] = 2; /* sequences of 12 and 20 tokens */
    Batch b = {B, T, tok, lab, NULL};
    double scored = model_forward(m, &b, 0.0, NULL);
    double trained = model_forward(m, &b, 1.0, NULL);
    model_set_dropout_use(m, DROPOUT_NEVER);
    double plain = model_forward(m, &b, 0.0, NULL);
    for (int t = 12; t < T; t++) tok[t] = 12; /* other pads after the first sequence */
    double repadded = model_forward(m, &b, 0.0, NULL);
    tok[5] = 11; /* a token inside it */
    double changed = model_forward(m, &b, 0.0, NULL);
    printf("    scored %.12f trained %.12f plain %.12f repadded %.12f changed %.12f\n", scored,
           trained, plain, repadded, changed);
    CHECK(scored == plain && trained != plain);
    CHECK(fabs(repadded - plain) < 1e-12 && changed != plain);
    model_free(m);
}

/* Carried states (docs/models.md §carried-states): a window run from the state the previous window
 * left gives the log-probabilities of the two windows run whole, and the gradient of a carried
 * window (its initial states fixed: truncated BPTT) matches finite differences, for the nnRNN
 * in the papers' shape and a two-layer LSTM in pre-norm blocks. */
typedef struct {
    Model *m;
    Batch b;
    void *block;
    const float *init; /* the window's initial states, restored before every forward */
    int rows;
} CarryProbe;

static double carry_loss(void *ctx) {
    CarryProbe *p = ctx;
    model_carry_upload(p->m, p->block, p->rows, p->init);
    return model_forward(p->m, &p->b, 0.0, NULL);
}

static void test_carry(void) {
    for (int k = 0; k < 2; k++) {
        ModelConfig x = tu_tiny_model(k ? MIXER_LSTM : MIXER_NNRNN, 2);
        x.block = k ? BLOCK_PRENORM : BLOCK_RNN;
        x.doc_mask = 0;
        Model *m = model_create(&x, backend_cpu());
        model_init_weights(m, 11);
        Rng r;
        rng_init(&r, 12, 0);
        double step = modrelu_continuous(m, &r) ? 1e-7 : 2e-5;
        enum { B = 2, T = 25 };
        int32_t tok[B * 2 * T], lab[B * 2 * T], tw[2][B * T], lw[2][B * T];
        for (int i = 0; i < B * 2 * T; i++) {
            tok[i] = (int32_t)rng_below(&r, (uint64_t)x.vocab_size);
            lab[i] = (int32_t)rng_below(&r, (uint64_t)x.vocab_size);
        }
        for (int w = 0; w < 2; w++)
            for (int b = 0; b < B; b++)
                for (int t = 0; t < T; t++)
                    tw[w][b * T + t] = tok[b * 2 * T + w * T + t],
                                  lw[w][b * T + t] = lab[b * 2 * T + w * T + t];
        double whole[B * 2 * T], part[2][B * T];
        uint8_t greedy[B * 2 * T];
        CHECK(model_token_logprobs(m, &(Batch){B, 2 * T, tok, lab, NULL}, whole, greedy) ==
              B * 2 * T);
        size_t bytes = model_carry_bytes(m, B);
        void *block = backend_cpu()->alloc(bytes);
        backend_cpu()->zero(block, bytes);
        model_set_carry(m, block, B);
        for (int w = 0; w < 2; w++)
            model_token_logprobs(m, &(Batch){B, T, tw[w], lw[w], NULL}, part[w], greedy);
        double worst = 0;
        for (int b = 0; b < B; b++)
            for (int w = 0; w < 2; w++)
                for (int t = 0; t < T; t++)
                    worst = fmax(worst, fabs(part[w][b * T + t] - whole[b * 2 * T + w * T + t]));
        printf("    %s carried windows vs whole rows: max |d logp| %.2e\n", mixer_name(x.mixer),
               worst);
        CHECK_MSG(worst < 1e-12, "%s: %.3e", mixer_name(x.mixer), worst);
        /* the second window's gradient from the state the first left (nonzero) */
        int64_t W = model_carry_width(m);
        float *init = rt_malloc(sizeof(float) * (size_t)(B * W));
        backend_cpu()->zero(block, bytes);
        model_forward(m, &(Batch){B, T, tw[0], lw[0], NULL}, 0.0, NULL);
        model_carry_download(m, block, B, init);
        CarryProbe p = {m, {B, T, tw[1], lw[1], NULL}, block, init, B};
        model_zero_grads(m);
        model_carry_upload(m, block, B, init);
        model_forward(m, &p.b, 1.0, NULL);
        model_backward(m);
        const ParamTable *pt = model_params(m);
        real *wts = model_weights_to_write(m), *g = model_grads(m);
        worst = 0;
        for (int i = 0; i < pt->n; i++) {
            const ParamInfo *pi = &pt->p[i];
            if (!pi->trainable) continue;
            double e = tu_gradcheck(carry_loss, &p, wts + pi->offset, g + pi->offset, pi->numel, 6,
                                    step, &r);
            CHECK_MSG(e < 1e-6, "%s carried: %s gradient error %.3g", mixer_name(x.mixer), pi->name,
                      e);
            worst = fmax(worst, e);
        }
        printf("    %s carried window gradient: worst %.2e\n", mixer_name(x.mixer), worst);
        rt_free(init);
        model_set_carry(m, NULL, 0);
        backend_cpu()->release(block);
        model_free(m);
    }
}

static const TestCase tests[] = {
    {"model_grad_gla_plain", test_gla_plain},
    {"model_grad_gla_conv", test_gla_conv},
    {"model_grad_gdn_plain", test_gdn_plain},
    {"model_grad_gdn_conv", test_gdn_conv},
    {"model_grad_fox_plain", test_fox_plain},
    {"model_grad_fox_pro", test_fox_pro},
    {"model_grad_transformer", test_transformer},
    {"model_grad_transformer_qk_norm", test_transformer_qk_norm},
    {"model_grad_deltanet_plain", test_deltanet_plain},
    {"model_grad_deltanet_conv", test_deltanet_conv},
    {"model_grad_mamba2_plain", test_mamba2_plain},
    {"model_grad_mamba2_groups", test_mamba2_groups},
    {"model_penalty", test_penalty},
    {"model_grad_autoencoder", test_autoencoder},
    {"model_grad_classifier", test_classifier},
    {"model_grad_block", test_block},
    {"model_block_passes", test_block_passes},
    {"model_grad_pair_classifier", test_pair_classifier},
    {"model_grad_carry", test_carry},
};

int main(int argc, char **argv) {
    return run_variant_tests(tests, TH_COUNT(tests), "model_grad", check_model, argc, argv);
}
