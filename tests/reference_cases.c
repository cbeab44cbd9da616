/* Writes one comparison case per mixer x option x position embedding for the independent
 * PyTorch reference (tests/reference/rotor_ref.py check): config.json, model.safetensors,
 * batch.safetensors and this implementation's logits, loss and every parameter gradient
 * in expected.safetensors. Built twice: fp32 (the product) and fp64, whose tensors are F64
 * so that the comparison is exact up to double rounding.
 *   reference_cases OUTDIR   -> OUTDIR/<case>/... and the case names on stdout
 *   reference_cases OUTDIR CONFIG.ini...   -> the model of each config as it sets it (an
 *       experiment's widths, vocabulary and Selective RoPE options), with NoPE, RoPE and
 *       Selective RoPE with and without its phase gate and bias: the gradients at the
 *       settings of the papers' runs */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "config/run_config.h"
#include "io/safetensors.h"
#include "model/family.h"
#include "model/hf_config.h"
#include "cpu/real.h"
#include "model/model.h"
#include "testutil.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/rng.h"
#include "variants.h"

static void die_if(int rc, const char *err) {
    if (rc) rt_die("%s", err);
}

/* Columns [w Tw, (w + 1) Tw) of the B rows of T of src into dst [B, Tw]. */
static void window_of(const int32_t *src, int B, int T, int Tw, int w, int32_t *dst) {
    for (int b = 0; b < B; b++)
        memcpy(dst + b * Tw, src + b * T + w * Tw, sizeof(int32_t) * (size_t)Tw);
}

/* The batch as `windows` windows of T / windows tokens per row, each from the states the previous
 * left (docs/models.md §carried-states; one window: the rows whole): the logits of every position
 * (not for a classifier, whose logits the forward of b leaves), and with grad_scale > 0 the
 * gradients. Returns the summed loss over the labels. */
static double run_windows(Model *m, const Batch *b, int windows, double grad_scale, real *logits) {
    int B = b->B, Tw = b->T / windows, V = model_config(m)->vocab_size;
    const Backend *be = model_backend(m);
    void *block = NULL;
    size_t bytes = 0;
    if (windows > 1) {
        bytes = model_carry_bytes(m, B);
        block = be->alloc(bytes);
        be->zero(block, bytes);
        model_set_carry(m, block, B);
    }
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)(B * Tw)),
            *lab = rt_malloc(sizeof(int32_t) * (size_t)(B * Tw));
    real *part = rt_malloc(sizeof(real) * (size_t)(B * Tw * V));
    double loss = 0;
    for (int w = 0; w < windows; w++) {
        window_of(b->tokens, B, b->T, Tw, w, tok);
        window_of(b->labels, B, b->T, Tw, w, lab);
        if (logits) { /* a pass in which every position has a label */
            for (int i = 0; i < B * Tw; i++) lab[i] = 0;
            model_forward(m, &(Batch){B, Tw, tok, lab, NULL}, 0.0, NULL);
            model_get_logits(m, part);
            for (int r = 0; r < B; r++)
                memcpy(logits + ((size_t)r * b->T + (size_t)w * Tw) * V, part + (size_t)r * Tw * V,
                       sizeof(real) * (size_t)(Tw * V));
            continue;
        }
        loss += model_forward(m, &(Batch){B, Tw, tok, lab, NULL}, grad_scale, NULL);
        if (grad_scale > 0) model_backward(m);
    }
    if (block) model_set_carry(m, NULL, 0), be->release(block);
    rt_free(tok);
    rt_free(lab);
    rt_free(part);
    return loss;
}

/* windows > 1: the rows run as that many windows with carried states (the recurrent cells,
 * train.carry_state), batch.safetensors marking the window boundaries as "truncate". */
static void write_case(const char *dir, const ModelConfig *cfg, uint64_t seed, int windows) {
    fs_mkdirs(dir);
    char path[1200], err[1024];
    json_t *cj = hf_config_to_json(cfg);
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (json_dump_file(cj, path, HF_CONFIG_JSON_FLAGS)) rt_die("cannot write %s", path);
    json_decref(cj);

    Model *m = model_create(cfg, backend_cpu());
    model_init_weights(m, seed);
    const ParamTable *t = model_params(m);
    const real *w = model_weights(m);

    int B = 2, T = 70, V = cfg->vocab_size;
    Rng r;
    rng_init(&r, seed, 1000);
    int32_t tok[2 * 70], lab[2 * 70];
    int64_t ids64[2 * 70], lab64[2 * 70];
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)rng_below(&r, (uint64_t)V);
        if (tok[i] == cfg->bos_id) tok[i] = (tok[i] + 1) % V;
        lab[i] = rng_uniform(&r) < 0.1 ? -100 : (int32_t)rng_below(&r, (uint64_t)V);
    }
    if (cfg->bos_id >= 0)
        tok[0] = tok[9] = tok[47] = tok[T] = tok[T + 66] = cfg->bos_id; /* documents inside rows */
    int classify = cfg->head == HEAD_CLASSIFIER;
    if (classify) /* one sequence per row labeled at its last token (70 and 51 tokens), then pads;
                   * with model.pair the two rows are one pair, labeled with its class */
        for (int i = 0; i < B * T; i++) {
            int len = i < T ? T : 51, t = i % T;
            lab[i] = t == len - 1 ? (i >= T && cfg->pair != PAIR_NONE
                                         ? lab[T - 1]
                                         : (int32_t)rng_below(&r, (uint64_t)cfg->num_classes))
                                  : -100;
            if (t >= len) tok[i] = 0;
        }
    for (int i = 0; i < B * T; i++) ids64[i] = tok[i], lab64[i] = lab[i];
    Batch b = {B, T, tok, lab, NULL};

    real *logits = rt_malloc(sizeof(real) * (size_t)(B * T * V));
    int64_t valid = 0;
    for (int i = 0; i < B * T; i++) valid += lab[i] != -100;
    double loss_sum = run_windows(m, &b, windows, 0.0, NULL);
    if (classify)
        model_get_logits(m, logits);
    else
        run_windows(m, &b, windows, 0.0, logits);
    model_zero_grads(m);
    run_windows(m, &b, windows, 1.0 / (double)valid, NULL);
    const real *g = model_grads(m);
    real loss = (real)(loss_sum / (double)valid);
    const char *dt = sizeof(real) == 8 ? "F64" : "F32";

    StTensor *wt = rt_calloc((size_t)t->n, sizeof(StTensor));
    StTensor *ex = rt_calloc((size_t)t->n + 2, sizeof(StTensor));
    int ne = 0;
    if (classify) /* one row of class logits per sequence */
        ex[ne] = (StTensor){"logits", "",
                            2,        {B, cfg->num_classes},
                            logits,   sizeof(real) * (size_t)(B * cfg->num_classes)};
    else
        ex[ne] = (StTensor){"logits", "", 3, {B, T, V}, logits, sizeof(real) * (size_t)(B * T * V)};
    snprintf(ex[ne++].dtype, 8, "%s", dt);
    ex[ne] = (StTensor){"loss", "", 1, {1}, &loss, sizeof(real)};
    snprintf(ex[ne++].dtype, 8, "%s", dt);
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        StTensor x = {{0}, "", p->ndim, {0}, w + p->offset, sizeof(real) * (size_t)p->numel};
        snprintf(x.dtype, sizeof x.dtype, "%s", dt);
        snprintf(x.name, sizeof x.name, "%s", p->name);
        for (int d = 0; d < p->ndim; d++) x.shape[d] = p->shape[d];
        wt[i] = x;
        if (!p->trainable) continue;
        snprintf(x.name, sizeof x.name, "grad.%s", p->name);
        x.data = g + p->offset;
        ex[ne++] = x;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    die_if(st_write(path, wt, t->n, NULL, err, sizeof err), err);
    snprintf(path, sizeof path, "%s/expected.safetensors", dir);
    die_if(st_write(path, ex, ne, NULL, err, sizeof err), err);
    int64_t cut[2 * 70];
    for (int i = 0; i < B * T; i++) cut[i] = i % T > 0 && (i % T) % (T / windows) == 0;
    StTensor bt[3] = {{"input_ids", "I64", 2, {B, T}, ids64, sizeof ids64},
                      {"labels", "I64", 2, {B, T}, lab64, sizeof lab64},
                      {"truncate", "I64", 2, {B, T}, cut, sizeof cut}};
    snprintf(path, sizeof path, "%s/batch.safetensors", dir);
    die_if(st_write(path, bt, windows > 1 ? 3 : 2, NULL, err, sizeof err), err);
    rt_free(wt);
    rt_free(ex);
    rt_free(logits);
    model_free(m);
}

/* The model of each config under NoPE, RoPE and, where the config's own position embedding is
 * Selective RoPE, each of its (phase gate, bias) combinations at the config's other Selective
 * RoPE settings: Table 2's four Selective rows (docs/models.md §position-embeddings). A config may
 * carry keys after commas, CONFIG.ini,section.key=value,...: the model of a sweep's setting (a case
 * named CONFIG+value+value-PE). */
static void write_config_cases(const char *outdir, char **configs, int n) {
    static const char *const suffix[] = {"nope",         "rope",           "selective",
                                         "selective-pg", "selective-bias", "selective-pg-bias"};
    for (int i = 0; i < n; i++) {
        RunConfig rc;
        char err[2048], dir[1200], path[1024], name[512];
        const char *sets[16];
        int nsets = 0;
        snprintf(path, sizeof path, "%s", configs[i]);
        for (char *c = strchr(path, ','); c; c = strchr(c + 1, ',')) {
            if (nsets == 16) rt_die("%s: more than 16 keys", configs[i]);
            *c = 0;
            sets[nsets++] = c + 1;
        }
        die_if(run_config_load(&rc, path, sets, nsets, err, sizeof err), err);
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        int len = snprintf(name, sizeof name, "%.*s", (int)(strlen(base) - 4), base);
        for (int j = 0; j < nsets && len < (int)sizeof name; j++)
            len += snprintf(name + len, sizeof name - (size_t)len, "+%s", strchr(sets[j], '=') + 1);
        int cases = rc.model.pe.kind == PE_SELECTIVE ? 6 : 2;
        for (int k = 0; k < cases; k++) {
            ModelConfig c = rc.model;
            if (c.max_seq_len < 70) c.max_seq_len = 70; /* write_case's rows */
            if (k < 2)
                c.pe.kind = k ? PE_ROPE : PE_NOPE;
            else
                c.pe.phase_gate = (k - 2) & 1, c.pe.bias = (k - 2) >> 1;
            snprintf(dir, sizeof dir, "%s/%s-%s", outdir, name, suffix[k]);
            write_case(dir, &c, 500 + (uint64_t)(6 * i + k), 1);
            printf("%s\n", dir);
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 2) rt_die("usage: reference_cases OUTDIR [CONFIG.ini...]");
    if (argc > 2) {
        write_config_cases(argv[1], argv + 2, argc - 2);
        return 0;
    }
    int n = 0, extra = 0;
    for (int mixer = 0; mixer < N_MIXERS; mixer++)
        for (int option = 0; option < 2; option++)
            for (int k = 0; k < N_PE_VARIANTS; k++) {
                ModelConfig c =
                    tu_model((MixerKind)mixer,
                             (TuModelSize){.vocab = 37, .hidden = 32, .layers = 2, .heads = 2});
                c.head_dim = 16;
                c.state_size = 8; /* Mamba2: 32 x 2 / 16 = 4 heads */
                c.gate_low_rank_dim = 8;
                c.init_std = 0.2; /* larger than 0.02 so that every path carries signal */
                c.max_seq_len = 70;
                c.pe.phi_rank = 5;
                apply_mixer_option(&c, option);
                if (!pe_variant_applies(&c, k)) continue;
                apply_pe_variant(&c, k);
                char dir[1024];
                snprintf(dir, sizeof dir, "%s/%s-%s", argv[1], mixer_option_name(&c, option),
                         pe_variant_name(&c, k));
                write_case(dir, &c, 100 + (uint64_t)n++, 1);
                printf("%s\n", dir);
                /* the lra block and bidirectional scans (docs/models.md
                 * §block-dropout-bidirectional) on the LRU and RotRNN, both options: the lra block
                 * under the LM head, and bidirectional classifiers with the lra block (mean
                 * pooling) and the prenorm block (last pooling) */
                if (c.mixer == MIXER_LRU || c.mixer == MIXER_ROTRNN) {
                    static const char *const blocks[] = {"lra", "lra-bidirectional",
                                                         "bidirectional-last"};
                    for (int bl = 0; bl < 3; bl++) {
                        ModelConfig h = c;
                        h.block = bl < 2 ? BLOCK_LRA : BLOCK_PRENORM;
                        h.bidirectional = bl > 0;
                        if (h.bidirectional) h.head = HEAD_CLASSIFIER, h.num_classes = 7;
                        h.pool = bl == 2 ? POOL_LAST : POOL_MEAN;
                        snprintf(dir, sizeof dir, "%s/%s-%s-%s", argv[1],
                                 mixer_option_name(&c, option), pe_variant_name(&c, k), blocks[bl]);
                        write_case(dir, &h, 2000 + (uint64_t)extra++, 1);
                        printf("%s\n", dir);
                    }
                }
                /* the recurrent cells run as two windows of 35 with carried states (docs/models.md
                 * §carried-states: truncated BPTT), in the option's block (documents are not
                 * masked) */
                if (!c.doc_mask && family_carries(family_of(c.mixer))) {
                    ModelConfig h = c;
                    snprintf(dir, sizeof dir, "%s/%s-%s-carry", argv[1],
                             mixer_option_name(&c, option), pe_variant_name(&c, k));
                    write_case(dir, &h, 3000 + (uint64_t)n, 2);
                    printf("%s\n", dir);
                }
                /* the other heads (docs/models.md §autoencoder-head, §classification) on the first
                 * option of GLA and FoX: the auto-encoder; the classifier with mean pooling and the
                 * linear input encoder, and with last pooling; the pair classifier (LRA's dual
                 * encoder) with each interaction */
                if (option || (c.mixer != MIXER_GLA && c.mixer != MIXER_FOX) || (k != 0 && k != 2))
                    continue;
                static const char *const shapes[] = {"autoencoder", "classifier-mean-linear",
                                                     "classifier-last", "classifier-pair-nli",
                                                     "classifier-pair-concat-last"};
                for (int sh = 0; sh < 5; sh++) {
                    ModelConfig h = c;
                    h.head = sh ? HEAD_CLASSIFIER : HEAD_AUTOENCODER;
                    h.num_classes = 7;
                    h.pool = sh == 2 || sh == 4 ? POOL_LAST : POOL_MEAN;
                    h.input = sh == 1 ? INPUT_LINEAR : INPUT_EMBEDDING;
                    h.input_scale = 36;
                    h.input_offset = 12; /* values of both signs */
                    h.pair = sh == 3 ? PAIR_NLI : sh == 4 ? PAIR_CONCAT : PAIR_NONE;
                    h.pair_mlp = 32;
                    snprintf(dir, sizeof dir, "%s/%s-%s-%s", argv[1], mixer_option_name(&c, option),
                             pe_variant_name(&c, k), shapes[sh]);
                    write_case(dir, &h, 1000 + (uint64_t)extra++,
                               1); /* the variants keep their seeds */
                    printf("%s\n", dir);
                }
            }
    /* the hybrids of model.mixers and model.mlp (docs/models.md §zoology-shape) on three GLA layers
     */
    for (int hy = 0; hy < N_HYBRIDS; hy++)
        for (int k = 0; k < N_PE_VARIANTS; k++) {
            if (hy && k != 0 && k != 3) continue;
            ModelConfig c = tu_model(
                MIXER_GLA, (TuModelSize){.vocab = 37, .hidden = 32, .layers = 3, .heads = 2});
            c.gate_low_rank_dim = 8;
            c.init_std = 0.2;
            c.max_seq_len = 70;
            c.pe.phi_rank = 5;
            apply_hybrid(&c, hy);
            apply_pe_variant(&c, k);
            char dir[1024];
            snprintf(dir, sizeof dir, "%s/%s-%s", argv[1], hybrid_name(hy), pe_variant_name(&c, k));
            write_case(dir, &c, 4000 + (uint64_t)extra++, 1);
            printf("%s\n", dir);
        }
    return 0;
}
