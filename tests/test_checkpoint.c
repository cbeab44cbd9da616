/* Checkpoints (src/train/checkpoint.c), the safetensors format (src/io/safetensors.c) and the
 * Hugging Face config.json (src/model/hf_config.c): bit-identical save/load round trips of
 * GLA, Gated DeltaNet and FoX-Pro models, `latest` handling and fallbacks, pruning, rejection
 * of corrupted files with messages naming the file and tensor, config.json round trips of
 * every mixer x position embedding, and safetensors round trips and validation. */
#include "config/run_config.h"
#include "cpu/real.h"
#include "harness.h"
#include "io/safetensors.h"
#include "io/tb_events.h"
#include "model/hf_config.h"
#include "model/hf_remote.h"
#include "model/model.h"
#include "testutil.h"
#include "train/checkpoint.h"
#include "train/checkpoint_writer.h"
#include "util/error.h"
#include "variants.h"
#include "util/fsutil.h"

#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char err[1024];

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                              */
/* ------------------------------------------------------------------------------------ */

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    RT_ASSERT(f);
    RT_ASSERT(fwrite(data, 1, n, f) == n);
    fclose(f);
}

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    RT_ASSERT(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = rt_malloc(*n + 1);
    RT_ASSERT(fread(b, 1, *n, f) == *n);
    b[*n] = '\0';
    fclose(f);
    return b;
}

/* Host copy of n [f32] backend elements (raw bytes, compared with memcmp). */
static char *download(const Backend *be, const void *src, int64_t n) {
    char *h = rt_malloc(be->f32_size * (size_t)n);
    be->download(h, src, be->f32_size * (size_t)n);
    return h;
}

/* What config.json's absent keys fall back to: the key table's defaults. */
static const ModelConfig *hf_defaults(void) {
    static ModelConfig d;
    static int filled;
    if (!filled) model_config_defaults(&d), filled = 1;
    return &d;
}

static ModelConfig tiny_gla(void) {
    ModelConfig c = tu_tiny_model(MIXER_GLA, 2);
    c.pe.kind = PE_ROPE;
    return c;
}

/* GDN with trainable temperatures (full-rank Selective RoPE). */
static ModelConfig tiny_gdn(void) {
    ModelConfig c = tu_tiny_model(MIXER_GDN, 2);
    c.pe.kind = PE_SELECTIVE;
    c.pe.temp_grad = 1;
    return c;
}

/* FoX-Pro, low-rank Selective RoPE with bias and phase gate, frozen temperatures. */
static ModelConfig tiny_fox_pro(void) {
    ModelConfig c = tu_tiny_model(MIXER_FOX, 2);
    c.output_gate = c.output_norm = c.qk_norm = c.k_shift = c.v_shift = 1;
    c.pe.kind = PE_SELECTIVE;
    c.pe.phi_proj = PHI_LOW_RANK;
    c.pe.bias = c.pe.phase_gate = 1;
    return c;
}

/* The Transformer with QK-norm (weights shared by the heads) and Selective RoPE with a phase
 * gate. */
static ModelConfig tiny_transformer(void) {
    ModelConfig c = tu_tiny_model(MIXER_TRANSFORMER, 2);
    c.qk_norm = 1;
    c.pe.kind = PE_SELECTIVE;
    c.pe.phase_gate = 1;
    return c;
}

static RunConfig run_config_for(const ModelConfig *mc, const char *dir) {
    RunConfig rc;
    run_config_defaults(&rc);
    rc.model = *mc;
    rc.model.max_seq_len = rc.train.seq_len;
    snprintf(rc.data.train, sizeof rc.data.train, "synthetic:copy");
    if (mc->head == HEAD_AUTOENCODER) { /* the task that trains it, at the model's shape */
        snprintf(rc.task.type, sizeof rc.task.type, "mad_compression");
        rc.task.seq_len = rc.train.seq_len;
        rc.task.vocab = mc->vocab_size;
    }
    snprintf(rc.run.dir, sizeof rc.run.dir, "%s", dir);
    RT_ASSERT(run_config_validate(&rc, "test", err, sizeof err) == 0);
    return rc;
}

/* A model with weights from `seed` and an optimizer of `kind` with random state at step t. */
typedef struct {
    Model *m;
    Optimizer *opt;
} Trainee;

static Trainee trainee_of(const ModelConfig *c, uint64_t seed, int64_t t, OptimizerKind kind) {
    const Backend *be = backend_cpu();
    Trainee x = {model_create(c, be), NULL};
    model_init_weights(x.m, seed);
    int64_t n = model_params(x.m)->total;
    x.opt = optimizer_create(be, kind, 0, n);
    Rng r;
    rng_init(&r, seed, 1);
    for (int k = 0; k < x.opt->spec->nstate; k++) {
        real *s =
            k == 0 && kind == OPTIMIZER_ADAMW ? tu_randn(&r, n, 1e-3) : tu_rand(&r, n, 0, 1e-6);
        be->upload(x.opt->state[k], s, sizeof(real) * (size_t)n);
        rt_free(s);
    }
    x.opt->t = t;
    return x;
}

static Trainee trainee(const ModelConfig *c, uint64_t seed, int64_t t) {
    return trainee_of(c, seed, t, OPTIMIZER_ADAMW);
}

static void trainee_free(Trainee *x) {
    optimizer_free(x->opt);
    model_free(x->m);
}

/* Saves a checkpoint of step `step` (tokens and seed derived from it). */
static int save_step(const char *dir, Trainee *x, const RunConfig *rc, int64_t step, int keep) {
    TrainerState st = {step,     step * 1000, 77, 1, NULL, {KEEP_BEST_NONE, 0, 0},
                       {1, NAN}, NULL,        0,  0};
    return checkpoint_save(dir, &st, x->m, x->opt, rc, keep, err, sizeof err);
}

#define CHECK_ERR(sub) CHECK_MSG(strstr(err, sub) != NULL, "error '%s' lacks '%s'", err, sub)

/* Field-by-field comparison of two model configs; names the first difference. */
static int config_equal(const ModelConfig *a, const ModelConfig *b, const char *label) {
#define EQ(f)                                                                                      \
    do {                                                                                           \
        if (a->f != b->f) {                                                                        \
            fprintf(stderr, "    %s: field %s differs: %.17g vs %.17g\n", label, #f, (double)a->f, \
                    (double)b->f);                                                                 \
            return 0;                                                                              \
        }                                                                                          \
    } while (0)
    EQ(mixer);
    EQ(head);
    EQ(num_classes);
    EQ(pool);
    EQ(pair);
    EQ(pair_mlp);
    EQ(input);
    EQ(input_scale);
    EQ(input_offset);
    EQ(vocab_size);
    EQ(hidden_size);
    EQ(num_layers);
    EQ(num_heads);
    EQ(hidden_ratio);
    EQ(intermediate_size);
    EQ(norm_eps);
    EQ(init_std);
    EQ(expand_k);
    EQ(expand_v);
    EQ(short_conv);
    EQ(gate_low_rank_dim);
    EQ(gate_logit_normalizer);
    EQ(head_dim);
    EQ(use_gate);
    EQ(output_gate);
    EQ(output_norm);
    EQ(qk_norm);
    EQ(k_shift);
    EQ(v_shift);
    EQ(doc_mask);
    EQ(bos_id);
    EQ(eos_id);
    EQ(max_seq_len);
    EQ(pe.kind);
    EQ(pe.rope_theta);
    EQ(pe.phi_proj);
    EQ(pe.phi_rank);
    EQ(pe.conv_act);
    EQ(pe.skip_conv);
    EQ(pe.bias);
    EQ(pe.phase_gate);
    EQ(pe.temp_type);
    EQ(pe.temp_theta);
    EQ(pe.temp_max);
    EQ(pe.temp_grad);
    EQ(state_size);
    EQ(r_min);
    EQ(r_max);
    EQ(max_phase);
    EQ(block);
    EQ(dropout);
    EQ(dropout_mask);
    EQ(bidirectional);
    EQ(orth_init);
    EQ(mlp);
    EQ(norm);
    EQ(tie_embeddings);
    EQ(embed_dropout);
    EQ(base_conv_kernel);
    if (strcmp(a->mixers, b->mixers)) {
        printf("    model.mixers: \"%s\" != \"%s\"\n", a->mixers, b->mixers);
        return 0;
    }
#undef EQ
    /* Both start from model_config_defaults (zeroed padding): a field the list above misses
     * still shows up here. */
    return memcmp(a, b, sizeof(*a)) == 0;
}

/* ------------------------------------------------------------------------------------ */
/* Save / load round trips                                                              */
/* ------------------------------------------------------------------------------------ */

static void roundtrip(const ModelConfig *cfg, const char *label) {
    char *dir = tu_temp_dir();
    RunConfig rc = run_config_for(cfg, dir);
    Trainee a = trainee(cfg, 7, 42);
    json_t *data = json_pack("{s:I, s:[i,i,i], s:f, s:s}", "cursor", (json_int_t)987654321012LL,
                             "perm", 3, 1, 2, "frac", 0.1, "file", "shard_003.h5");
    /* a best validation whose value needs all 17 digits; the learning rates halved twice */
    TrainerState st = {1234,
                       5678901234LL,
                       0xFFFFFFFFFFFFFFF1ULL,
                       2,
                       data,
                       {KEEP_BEST_VAL_ACCURACY, 0.1 + 0.2, 1000},
                       {0.25, 1.0 / 3.0},
                       NULL,
                       0,
                       0};
    CHECK_MSG(checkpoint_save(dir, &st, a.m, a.opt, &rc, 0, err, sizeof err) == 0, "%s: %s", label,
              err);

    char *path;
    CHECK_MSG(checkpoint_find_latest(dir, 1, &path, err, sizeof err) == 0, "%s: %s", label, err);
    char *want = rt_sprintf("%s/checkpoints/step_00001234", dir);
    CHECK_MSG(path && !strcmp(path, want), "%s: latest %s", label, path ? path : "(null)");

    Trainee b = trainee(cfg, 99, 0);
    TrainerState got = {0};
    CHECK_MSG(path && checkpoint_load(path,
                                      &(CheckpointLoad){.model = b.m, .opt = b.opt, .state = &got},
                                      err, sizeof err) == 0,
              "%s: %s", label, err);

    const ParamTable *t = model_params(a.m);
    const Backend *be = backend_cpu();
    size_t F = be->f32_size;
    char *wa = download(be, model_weights(a.m), t->total),
         *wb = download(be, model_weights(b.m), t->total);
    CHECK_MSG(!memcmp(wa, wb, F * (size_t)t->total), "%s: weights differ after load", label);
    char *ma = download(be, a.opt->state[0], t->total),
         *mb = download(be, b.opt->state[0], t->total);
    char *va = download(be, a.opt->state[1], t->total),
         *vb = download(be, b.opt->state[1], t->total);
    int frozen = 0;
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        size_t off = F * (size_t)p->offset, nb = F * (size_t)p->numel;
        if (p->trainable) {
            CHECK_MSG(!memcmp(ma + off, mb + off, nb) && !memcmp(va + off, vb + off, nb),
                      "%s: moments of %s differ", label, p->name);
        } else {
            frozen++;
            int zero = 1;
            for (size_t k = 0; k < nb; k++) zero &= mb[off + k] == 0 && vb[off + k] == 0;
            CHECK_MSG(zero, "%s: frozen %s has non-zero moments", label, p->name);
        }
    }
    CHECK(b.opt->t == 42);
    CHECK(got.step == st.step && got.tokens == st.tokens && got.seed == st.seed &&
          got.world_size == 2);
    CHECK(got.data_state && json_equal(got.data_state, data));
    json_decref(got.data_state);
    CHECK_MSG(got.best.metric == KEEP_BEST_VAL_ACCURACY && got.best.value == 0.1 + 0.2 &&
                  got.best.step == 1000,
              "%s: best %d %.17g %lld", label, (int)got.best.metric, got.best.value,
              (long long)got.best.step);
    CHECK_MSG(got.plateau.lr_scale == 0.25 && got.plateau.best_val_loss == 1.0 / 3.0,
              "%s: plateau %g %.17g", label, got.plateau.lr_scale, got.plateau.best_val_loss);

    /* The file contents: names, trainable-only moments, metadata. */
    char *mpath = rt_sprintf("%s/model.safetensors", path),
         *opath = rt_sprintf("%s/optimizer.safetensors", path);
    StFile *mf = st_open(mpath, err, sizeof err), *of = st_open(opath, err, sizeof err);
    CHECK(mf && of);
    if (mf && of) {
        CHECK(st_count(mf) == t->n);
        CHECK(st_meta(mf, "format") && !strcmp(st_meta(mf, "format"), "pt"));
        CHECK(st_meta(of, "step") && !strcmp(st_meta(of, "step"), "42"));
        for (int i = 0; i < t->n; i++) {
            char name[ST_NAME_MAX];
            snprintf(name, sizeof name, "exp_avg_sq.%s", t->p[i].name);
            CHECK_MSG(!!st_find(of, name) == t->p[i].trainable, "%s: %s in the optimizer file: %d",
                      label, name, !!st_find(of, name));
            const StTensor *x = st_find(mf, t->p[i].name);
            CHECK_MSG(x && !strcmp(x->dtype, "F32") && x->ndim == t->p[i].ndim, "%s: %s", label,
                      t->p[i].name);
        }
        CHECK(st_count(of) == 2 * (t->n - frozen));
    }
    st_close(mf);
    st_close(of);
    if (cfg->pe.kind == PE_SELECTIVE)
        CHECK_MSG(frozen == (cfg->pe.temp_grad ? 0 : cfg->num_layers), "%s: %d frozen", label,
                  frozen);

    /* The run config and config.json. */
    RunConfig rc2;
    CHECK_MSG(checkpoint_read_config(path, &rc2, err, sizeof err) == 0, "%s: %s", label, err);
    char *ia = tu_ini_text(&rc), *ib = tu_ini_text(&rc2);
    CHECK_MSG(!strcmp(ia, ib), "%s: rotor.ini does not round trip", label);
    char *cpath = rt_sprintf("%s/config.json", path);
    json_t *cj = json_load_file(cpath, 0, NULL);
    ModelConfig mc;
    CHECK_MSG(cj && hf_config_from_json(cj, hf_defaults(), &mc, err, sizeof err) == 0, "%s: %s",
              label, err);
    /* config.json describes the same model: it writes back identically, and a model built
     * from it has the same parameters. */
    json_t *again = hf_config_to_json(&mc);
    CHECK_MSG(json_equal(cj, again), "%s: config.json does not round trip", label);
    json_decref(again);
    json_decref(cj);
    /* rotor's Hugging Face model ships its Python files, checksummed; fla's needs none */
    char *state_path = rt_sprintf("%s/trainer_state.json", path);
    json_t *state = json_load_file(state_path, 0, NULL);
    rt_free(state_path);
    for (int i = 0; i < HF_REMOTE_NFILES; i++) {
        char *fpath = rt_sprintf("%s/%s", path, HF_REMOTE_FILES[i].name);
        char *text = fs_read_file(fpath, NULL);
        int listed =
            state && json_object_get(json_object_get(state, "files"), HF_REMOTE_FILES[i].name);
        CHECK_MSG(hf_config_is_fla(cfg) ? !text && !listed
                                        : text && listed && !strcmp(text, HF_REMOTE_FILES[i].text),
                  "%s: %s", label, HF_REMOTE_FILES[i].name);
        rt_free(text);
        rt_free(fpath);
    }
    json_decref(state);
    Model *mm = model_create(&mc, be);
    const ParamTable *t2 = model_params(mm);
    int same = t2->n == t->n;
    for (int i = 0; same && i < t->n; i++)
        same = !strcmp(t2->p[i].name, t->p[i].name) && t2->p[i].ndim == t->p[i].ndim &&
               !memcmp(t2->p[i].shape, t->p[i].shape, sizeof(int64_t) * (size_t)t->p[i].ndim) &&
               t2->p[i].trainable == t->p[i].trainable;
    CHECK_MSG(same, "%s: the model of config.json has other parameters", label);
    model_free(mm);
    char *spath = rt_sprintf("%s/trainer_state.json", path);
    json_t *sj = json_load_file(spath, 0, NULL);
    CHECK(sj && !strcmp(json_string_value(json_object_get(sj, "code_version")), ROTOR_VERSION));
    CHECK(sj && !strcmp(json_string_value(json_object_get(sj, "seed")), "18446744073709551601"));
    json_decref(sj);

    free(ia);
    free(ib);
    rt_free(cpath);
    rt_free(spath);
    rt_free(mpath);
    rt_free(opath);
    rt_free(wa);
    rt_free(wb);
    rt_free(ma);
    rt_free(mb);
    rt_free(va);
    rt_free(vb);
    rt_free(want);
    rt_free(path);
    json_decref(data);
    trainee_free(&a);
    trainee_free(&b);
    fs_remove_tree(dir);
    rt_free(dir);
}

static void test_roundtrip_gla(void) {
    ModelConfig c = tiny_gla();
    roundtrip(&c, "gla rope");
    c.pe.kind = PE_NOPE; /* fla's own model */
    roundtrip(&c, "gla nope");
}

static void test_roundtrip_gdn(void) {
    ModelConfig c = tiny_gdn();
    roundtrip(&c, "gdn selective temp_grad");
}

static void test_roundtrip_fox_pro(void) {
    ModelConfig c = tiny_fox_pro();
    roundtrip(&c, "fox-pro selective low_rank");
}

static void test_roundtrip_transformer(void) {
    ModelConfig c = tiny_transformer();
    roundtrip(&c, "transformer qk_norm selective phase gate");
}

static void test_roundtrip_deltanet(void) {
    ModelConfig c = tu_tiny_model(MIXER_DELTANET, 2);
    c.pe.kind = PE_ROPE;
    roundtrip(&c, "deltanet rope");
}

/* Mamba2: backbone.* names, blocks without an MLP, two groups; num_heads as config.json
 * derives it (16 x 2 / 8). */
static void test_roundtrip_mamba2(void) {
    ModelConfig c = tu_tiny_model(MIXER_MAMBA2, 2);
    c.n_groups = 2;
    c.num_heads = 4;
    roundtrip(&c, "mamba2 two groups");
}

/* The other model shapes (docs/models.md §autoencoder-head, §classification): their parameters and
 * config.json keys. */
static void test_roundtrip_heads(void) {
    ModelConfig c = tu_tiny_model(MIXER_GLA, 2);
    c.head = HEAD_CLASSIFIER;
    c.num_classes = 7;
    c.pool = POOL_LAST;
    c.input = INPUT_LINEAR;
    c.input_scale = 36;
    c.input_offset = 5;
    roundtrip(&c, "gla classifier last pool, linear input");
    c.pair = PAIR_NLI; /* LRA's dual encoder: the MLP's parameters and rotor_pair round trip */
    c.pair_mlp = 12;
    roundtrip(&c, "gla pair classifier nli");
    c.pair = PAIR_CONCAT;
    roundtrip(&c, "gla pair classifier concat");
    c = tu_tiny_model(MIXER_FOX, 2);
    c.head = HEAD_AUTOENCODER;
    roundtrip(&c, "fox autoencoder");
    /* the lra block with dropout, bidirectional (docs/models.md §block-dropout-bidirectional): the
     * GLU and reverse readouts */
    static const MixerKind lin[] = {MIXER_LRU, MIXER_ROTRNN};
    for (int i = 0; i < 2; i++) {
        c = tu_tiny_model(lin[i], 2);
        c.head = HEAD_CLASSIFIER;
        c.num_classes = 4;
        c.block = BLOCK_LRA;
        c.dropout = 0.1;
        c.dropout_mask = DROPOUT_CHANNEL;
        c.bidirectional = 1;
        roundtrip(&c, i ? "rotrnn lra block, bidirectional classifier"
                        : "lru lra block, bidirectional classifier");
    }
    /* the hybrids (docs/models.md §zoology-shape): Zoology's GLA with its embedding dropout, and
     * the others */
    for (int k = 0; k < N_HYBRIDS; k++) {
        c = tu_tiny_model(MIXER_GLA, 3);
        apply_hybrid(&c, k);
        c.embed_dropout = k == 0 ? 0.1 : 0;
        roundtrip(&c, hybrid_name(k));
    }
}

/* ------------------------------------------------------------------------------------ */
/* latest, fallbacks, replacement, pruning                                              */
/* ------------------------------------------------------------------------------------ */

static void set_latest(const char *dir, const char *text) {
    char *p = rt_sprintf("%s/checkpoints/latest", dir);
    write_file(p, text, strlen(text));
    rt_free(p);
}

/* checkpoint_find_latest is dir/checkpoints/<name> (NULL: no checkpoint). */
static void check_latest(const char *dir, const char *name) {
    char *got;
    CHECK_MSG(checkpoint_find_latest(dir, 1, &got, err, sizeof err) == 0, "%s", err);
    char *want = name ? rt_sprintf("%s/checkpoints/%s", dir, name) : NULL;
    CHECK_MSG(got == want || (got && want && !strcmp(got, want)), "latest is %s, expected %s",
              got ? got : "(null)", want ? want : "(null)");
    rt_free(got);
    rt_free(want);
}

static void test_latest(void) {
    char *dir = tu_temp_dir();
    ModelConfig c = tiny_gla();
    RunConfig rc = run_config_for(&c, dir);
    Trainee a = trainee(&c, 1, 3);
    check_latest(dir, NULL);
    for (int s = 10; s <= 30; s += 10) CHECK_MSG(save_step(dir, &a, &rc, s, 0) == 0, "%s", err);
    check_latest(dir, "step_00000030");

    /* A stale temporary directory (an interrupted save) is ignored, even when complete. */
    char *stale = rt_sprintf("%s/checkpoints/.tmp-step_00000040", dir);
    mkdir(stale, 0755);
    static const char *const files[] = {"model.safetensors", "config.json", "rotor.ini",
                                        "optimizer.safetensors", "trainer_state.json"};
    for (int i = 0; i < 5; i++) {
        char *p = rt_sprintf("%s/%s", stale, files[i]);
        write_file(p, "x", 1);
        rt_free(p);
    }
    check_latest(dir, "step_00000030");

    set_latest(dir, "step_00000020\n"); /* `latest` wins over the highest step */
    check_latest(dir, "step_00000020");
    set_latest(dir, "step_00000099\n"); /* names a deleted directory: highest complete */
    check_latest(dir, "step_00000030");
    set_latest(dir, "../../etc\n"); /* not a checkpoint name */
    check_latest(dir, "step_00000030");

    /* An incomplete checkpoint is skipped, whether `latest` names it or not. */
    set_latest(dir, "step_00000030\n");
    char *p = rt_sprintf("%s/checkpoints/step_00000030/optimizer.safetensors", dir);
    unlink(p);
    rt_free(p);
    check_latest(dir, "step_00000020");
    p = rt_sprintf("%s/checkpoints/step_00000020", dir);
    fs_remove_tree(p);
    rt_free(p);
    check_latest(dir, "step_00000010");

    /* Saving the same step again replaces it; the save removes the stale .tmp-* directory. */
    Trainee b = trainee(&c, 2, 5);
    CHECK_MSG(save_step(dir, &b, &rc, 10, 0) == 0, "%s", err);
    check_latest(dir, "step_00000010");
    CHECK(!fs_exists(stale));
    p = rt_sprintf("%s/checkpoints/.tmp-old-step_00000010", dir);
    CHECK(!fs_exists(p));
    rt_free(p);
    Trainee x = trainee(&c, 3, 0);
    p = rt_sprintf("%s/checkpoints/step_00000010", dir);
    CHECK_MSG(checkpoint_load(p, &(CheckpointLoad){.model = x.m, .opt = x.opt}, err, sizeof err) ==
                  0,
              "%s", err);
    rt_free(p);
    const Backend *be = backend_cpu();
    int64_t n = model_params(x.m)->total;
    char *wb = download(be, model_weights(b.m), n), *wx = download(be, model_weights(x.m), n);
    CHECK(!memcmp(wb, wx, be->f32_size * (size_t)n) && x.opt->t == 5);
    rt_free(wb);
    rt_free(wx);

    rt_free(stale);
    trainee_free(&a);
    trainee_free(&b);
    trainee_free(&x);
    fs_remove_tree(dir);
    rt_free(dir);
}

/* A checkpoint whose file changed after it was written (bit rot, a copy cut short) fails its
 * checksum: the newest intact one is used instead. */
static void test_checksum_fallback(void) {
    char *dir = tu_temp_dir();
    ModelConfig c = tiny_gla();
    RunConfig rc = run_config_for(&c, dir);
    Trainee a = trainee(&c, 1, 3);
    for (int s = 10; s <= 30; s += 10) CHECK_MSG(save_step(dir, &a, &rc, s, 0) == 0, "%s", err);
    char *ck30 = rt_sprintf("%s/checkpoints/step_00000030", dir);
    CHECK_MSG(checkpoint_verify(ck30, 1, err, sizeof err) == 0, "%s", err);
    /* flip one byte of the weights: same size, every file present */
    char *p = rt_sprintf("%s/model.safetensors", ck30);
    size_t n;
    char *data = read_file(p, &n);
    data[n - 3] ^= 0x40;
    write_file(p, data, n);
    CHECK(checkpoint_verify(ck30, 1, err, sizeof err) != 0 && strstr(err, "model.safetensors") &&
          strstr(err, "sha256"));
    CHECK_MSG(checkpoint_verify(ck30, 0, err, sizeof err) == 0, "without hashes: %s",
              err); /* sizes still match */
    check_latest(dir, "step_00000020");
    /* the loader checks too: the damaged weights are refused by name, the targets untouched */
    Trainee x = trainee(&c, 9, 0);
    const Backend *be = backend_cpu();
    int64_t total = model_params(x.m)->total;
    char *before = download(be, model_weights(x.m), total);
    CHECK(checkpoint_load(ck30, &(CheckpointLoad){.model = x.m, .verify = 1}, err, sizeof err) !=
              0 &&
          strstr(err, "model.safetensors") && strstr(err, "sha256"));
    char *after = download(be, model_weights(x.m), total);
    CHECK(!memcmp(before, after, be->f32_size * (size_t)total));
    CHECK(checkpoint_load_model(ck30, be, 1, err, sizeof err) == NULL &&
          strstr(err, "model.safetensors"));
    rt_free(before);
    rt_free(after);
    trainee_free(&x);
    /* a file cut short is named with both sizes, without hashing */
    char *ck20 = rt_sprintf("%s/checkpoints/step_00000020", dir),
         *opt20 = rt_sprintf("%s/optimizer.safetensors", ck20);
    CHECK(truncate(opt20, 100) == 0);
    CHECK(checkpoint_verify(ck20, 0, err, sizeof err) != 0 &&
          strstr(err, "optimizer.safetensors") && strstr(err, "100 bytes"));
    check_latest(dir, "step_00000010");
    /* a trainer state cut short */
    char *ck10 = rt_sprintf("%s/checkpoints/step_00000010", dir),
         *st10 = rt_sprintf("%s/trainer_state.json", ck10);
    CHECK(truncate(st10, 40) == 0);
    CHECK(checkpoint_verify(ck10, 0, err, sizeof err) != 0 && strstr(err, "trainer_state.json") &&
          strstr(err, "cut short"));
    /* none intact: an error naming the directory, no path */
    char *got = (char *)1;
    CHECK(checkpoint_find_latest(dir, 1, &got, err, sizeof err) != 0 && got == NULL &&
          strstr(err, "none of its 3") && strstr(err, "--no-verify"));
    rt_free(st10);
    rt_free(ck10);
    rt_free(ck20);
    rt_free(opt20);
    rt_free(data);
    rt_free(p);
    rt_free(ck30);
    trainee_free(&a);
    fs_remove_tree(dir);
    rt_free(dir);
}

/* ZeRO-1 checkpoints: every "rank" writes its slice of the moments; loading cuts any other
 * slicing out of them (and the unsharded layout out of a sharded one, and back). The ranks
 * are simulated by saving one slice per call into the same temporary directory. */
static void test_sharded_moments(void) {
    char *dir = tu_temp_dir();
    ModelConfig c = tiny_fox_pro();
    Trainee a = trainee(&c, 4, 7); /* full moments, random */
    const Backend *be = backend_cpu();
    int64_t P = model_params(a.m)->total;
    real *m_full = (real *)download(be, a.opt->state[0], P),
         *v_full = (real *)download(be, a.opt->state[1], P);
    /* write a two-slice sharded checkpoint by hand: slices of an unsharded save renamed */
    RunConfig rc = run_config_for(&c, dir);
    CHECK_MSG(save_step(dir, &a, &rc, 5, 0) == 0, "%s", err);
    char *ck = rt_sprintf("%s/checkpoints/step_00000005", dir);
    int64_t cut = P / 3;
    for (int r = 0; r < 2; r++) {
        int64_t lo = r ? cut : 0, hi = r ? P : cut;
        float *mm = rt_malloc(sizeof(float) * (size_t)(hi - lo)),
              *vv = rt_malloc(sizeof(float) * (size_t)(hi - lo));
        for (int64_t i = lo; i < hi; i++)
            mm[i - lo] = (float)m_full[i], vv[i - lo] = (float)v_full[i];
        StTensor t2[2] = {
            {"exp_avg", "F32", 1, {hi - lo}, mm, sizeof(float) * (size_t)(hi - lo)},
            {"exp_avg_sq", "F32", 1, {hi - lo}, vv, sizeof(float) * (size_t)(hi - lo)}};
        char a0[32], a1[32], a2[32];
        snprintf(a0, sizeof a0, "%lld", (long long)lo);
        snprintf(a1, sizeof a1, "%lld", (long long)hi);
        snprintf(a2, sizeof a2, "%lld", (long long)P);
        const char *const meta[] = {"step", "7", "start", a0, "end", a1, "total", a2, NULL};
        char *path = rt_sprintf("%s/optimizer.rank%05d-of-00002.safetensors", ck, r);
        CHECK_MSG(st_write(path, t2, 2, meta, err, sizeof err) == 0, "%s", err);
        rt_free(path);
        rt_free(mm);
        rt_free(vv);
    }
    char *full = rt_sprintf("%s/optimizer.safetensors", ck);
    unlink(full);
    /* load into three other slicings and into the whole range */
    int64_t cuts[][2] = {{0, P}, {0, P / 2}, {P / 2, P}, {5, 17}, {cut - 3, cut + 3}};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        Trainee x = trainee(&c, 9, 0);
        optimizer_free(x.opt);
        x.opt = optimizer_create(be, OPTIMIZER_ADAMW, cuts[k][0], cuts[k][1]);
        CHECK_MSG(checkpoint_load(ck, &(CheckpointLoad){.model = x.m, .opt = x.opt}, err,
                                  sizeof err) == 0,
                  "%s", err);
        int64_t len = cuts[k][1] - cuts[k][0];
        real *mx = (real *)download(be, x.opt->state[0], len),
             *vx = (real *)download(be, x.opt->state[1], len);
        int bad = 0;
        for (int64_t i = 0; i < len; i++)
            bad += (float)mx[i] != (float)m_full[cuts[k][0] + i] ||
                   (float)vx[i] != (float)v_full[cuts[k][0] + i];
        CHECK_MSG(!bad && x.opt->t == 7, "slice [%lld, %lld): %d moments differ",
                  (long long)cuts[k][0], (long long)cuts[k][1], bad);
        rt_free(mx);
        rt_free(vx);
        trainee_free(&x);
    }
    /* a missing slice is reported */
    char *r1 = rt_sprintf("%s/optimizer.rank00001-of-00002.safetensors", ck);
    unlink(r1);
    Trainee y = trainee(&c, 9, 0);
    CHECK(checkpoint_load(ck, &(CheckpointLoad){.model = y.m, .opt = y.opt}, err, sizeof err) !=
              0 &&
          strstr(err, "incomplete"));
    trainee_free(&y);
    rt_free(r1);
    rt_free(full);
    rt_free(ck);
    rt_free(m_full);
    rt_free(v_full);
    trainee_free(&a);
    fs_remove_tree(dir);
    rt_free(dir);
}

/* Names in dir/checkpoints, sorted and joined by spaces. */
static void list_checkpoints(const char *dir, char *out, size_t n) {
    char *ck = rt_sprintf("%s/checkpoints", dir);
    struct dirent **names;
    int k = scandir(ck, &names, NULL, alphasort);
    out[0] = '\0';
    for (int i = 0; i < k; i++) {
        if (names[i]->d_name[0] != '.' || names[i]->d_name[1] == 't')
            snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? " " : "",
                     names[i]->d_name);
        free(names[i]);
    }
    free(names);
    rt_free(ck);
}

static void test_keep(void) {
    char *dir = tu_temp_dir();
    ModelConfig c = tiny_gla();
    RunConfig rc = run_config_for(&c, dir);
    Trainee a = trainee(&c, 1, 3);
    for (int s = 10; s <= 40; s += 10) CHECK_MSG(save_step(dir, &a, &rc, s, 2) == 0, "%s", err);
    char names[512];
    list_checkpoints(dir, names, sizeof names);
    CHECK_MSG(!strcmp(names, "latest step_00000030 step_00000040"), "after keep=2: %s", names);
    /* The checkpoint just written is kept even when it is not among the newest steps. */
    CHECK_MSG(save_step(dir, &a, &rc, 5, 2) == 0, "%s", err);
    list_checkpoints(dir, names, sizeof names);
    CHECK_MSG(!strcmp(names, "latest step_00000005 step_00000030 step_00000040"),
              "after step 5: %s", names);
    check_latest(dir, "step_00000005");

    /* checkpoints/best: the files of its step, verified, outliving that step's pruning,
     * replaced by the next best; a step that is gone cannot become the best */
    CHECK_MSG(checkpoint_keep_best(dir, 30, err, sizeof err) == 0, "%s", err);
    CHECK(checkpoint_keep_best(dir, 20, err, sizeof err) != 0 &&
          strstr(err, "step_00000020: no such checkpoint directory"));
    for (int s = 50; s <= 60; s += 10) CHECK_MSG(save_step(dir, &a, &rc, s, 2) == 0, "%s", err);
    list_checkpoints(dir, names, sizeof names);
    CHECK_MSG(!strcmp(names, "best latest step_00000050 step_00000060"),
              "after the best's step was pruned: %s", names);
    char *best = rt_sprintf("%s/checkpoints/best", dir);
    TrainerState got;
    CHECK_MSG(checkpoint_verify(best, 1, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(checkpoint_read_state(best, &got, err, sizeof err) == 0 && got.step == 30, "%s", err);
    char *latest;
    CHECK_MSG(checkpoint_find_latest(dir, 1, &latest, err, sizeof err) == 0, "%s", err);
    CHECK(latest && strstr(latest, "step_00000060"));
    CHECK_MSG(checkpoint_keep_best(dir, 60, err, sizeof err) == 0, "%s", err);
    CHECK(checkpoint_read_state(best, &got, err, sizeof err) == 0 && got.step == 60);
    char *ma = rt_sprintf("%s/model.safetensors", best),
         *mb = rt_sprintf("%s/model.safetensors", latest);
    size_t na, nb;
    char *fa = read_file(ma, &na), *fb = read_file(mb, &nb);
    CHECK(fa && fb && na == nb && !memcmp(fa, fb, na));
    list_checkpoints(dir, names, sizeof names);
    CHECK_MSG(!strcmp(names, "best latest step_00000050 step_00000060"), "after a new best: %s",
              names);
    rt_free(fa);
    rt_free(fb);
    rt_free(ma);
    rt_free(mb);
    rt_free(latest);
    rt_free(best);
    trainee_free(&a);
    fs_remove_tree(dir);
    rt_free(dir);
}

/* ------------------------------------------------------------------------------------ */
/* Corrupted checkpoints                                                                */
/* ------------------------------------------------------------------------------------ */

/* Rewrites `path` with metadata `meta` and the tensors of `src`, with one tensor changed or
 * dropped (`drop`), or an extra one appended (`extra`). */
static void rewrite(const char *path, const StFile *src, const char *const *meta,
                    const char *target, const int64_t *shape, int ndim, const char *dtype, int drop,
                    const StTensor *extra) {
    int n = st_count(src);
    StTensor *ts = rt_calloc((size_t)n + 1, sizeof(StTensor));
    int k = 0;
    for (int i = 0; i < n; i++) {
        const StTensor *x = st_at(src, i);
        if (target && !strcmp(x->name, target)) {
            if (drop) continue;
            ts[k] = *x;
            if (shape) {
                ts[k].ndim = ndim;
                memcpy(ts[k].shape, shape, sizeof(int64_t) * (size_t)ndim);
            }
            if (dtype) snprintf(ts[k].dtype, sizeof ts[k].dtype, "%s", dtype);
            k++;
        } else {
            ts[k++] = *x;
        }
    }
    if (extra) ts[k++] = *extra;
    RT_ASSERT(st_write(path, ts, k, meta, err, sizeof err) == 0);
    rt_free(ts);
}

/* Expects checkpoint_load of ckpt into x to fail with both substrings in the message. */
static void expect_load_error(const char *ckpt, Trainee *x, int with_opt, const char *s1,
                              const char *s2) {
    TrainerState st = {0};
    err[0] = '\0';
    int r = checkpoint_load(ckpt,
                            &(CheckpointLoad){.model = x->m,
                                              .opt = with_opt ? x->opt : NULL,
                                              .state = with_opt ? &st : NULL},
                            err, sizeof err);
    CHECK_MSG(r == -1, "load succeeded, expected an error with '%s'", s1);
    CHECK_ERR(s1);
    CHECK_ERR(s2);
}

static void test_corrupt(void) {
    char *dir = tu_temp_dir();
    ModelConfig c = tiny_gla(); /* q_proj [8, 16]: key_dim = 16 * 0.5 */
    RunConfig rc = run_config_for(&c, dir);
    Trainee a = trainee(&c, 1, 3), x = trainee(&c, 2, 9);
    CHECK_MSG(save_step(dir, &a, &rc, 1, 0) == 0, "%s", err);
    char *ck = rt_sprintf("%s/checkpoints/step_00000001", dir);
    char *mpath = rt_sprintf("%s/model.safetensors", ck),
         *opath = rt_sprintf("%s/optimizer.safetensors", ck);
    char *spath = rt_sprintf("%s/trainer_state.json", ck);
    const Backend *be = backend_cpu();
    int64_t n = model_params(x.m)->total;
    char *before = download(be, model_weights(x.m), n);
    size_t len;
    char *orig = read_file(mpath, &len);

    /* Raw damage. */
    write_file(mpath, orig, len - 10);
    expect_load_error(ck, &x, 0, "model.safetensors", "truncated");
    char *bad = rt_malloc(len);
    memcpy(bad, orig, len);
    uint64_t huge = (uint64_t)len;
    for (int i = 0; i < 8; i++) bad[i] = (char)(huge >> (8 * i));
    write_file(mpath, bad, len);
    expect_load_error(ck, &x, 0, "model.safetensors", "header size");
    memcpy(bad, orig, len);
    bad[9] = '#'; /* the first name's opening quote */
    write_file(mpath, bad, len);
    expect_load_error(ck, &x, 0, "model.safetensors", "invalid JSON header");
    write_file(mpath, orig, len);

    /* Well-formed files that do not match the model. */
    char *copy = rt_sprintf("%s/orig.safetensors", dir);
    write_file(copy, orig, len);
    StFile *src = st_open(copy, err, sizeof err);
    RT_ASSERT(src);
    static const char *const mmeta[] = {"format", "pt", NULL}, *const ometa[] = {"step", "3", NULL};
    const char *q = "model.layers.0.attn.q_proj.weight";
    int64_t swapped[2] = {16, 8};
    rewrite(mpath, src, mmeta, q, swapped, 2, NULL, 0, NULL);
    expect_load_error(
        ck, &x, 0, "model.safetensors: tensor model.layers.0.attn.q_proj.weight has shape [16, 8]",
        "the model expects [8, 16]");
    rewrite(mpath, src, mmeta, q, NULL, 0, "I32", 0, NULL);
    expect_load_error(ck, &x, 0, q, "dtype I32");
    rewrite(mpath, src, mmeta, "model.norm.weight", NULL, 0, NULL, 1, NULL);
    expect_load_error(ck, &x, 0, "model.safetensors: tensor model.norm.weight is missing",
                      "1 of the");
    float junk[2] = {1, 2};
    StTensor extra = {"model.layers.0.attn.bogus.weight", "F32", 1, {2}, junk, sizeof junk};
    rewrite(mpath, src, mmeta, NULL, NULL, 0, NULL, 0, &extra);
    expect_load_error(ck, &x, 0, "unexpected tensor model.layers.0.attn.bogus.weight",
                      "model.safetensors");
    st_close(src);
    write_file(mpath, orig, len);

    /* Optimizer and trainer state. */
    rt_free(orig);
    orig = read_file(opath, &len);
    write_file(copy, orig, len);
    src = st_open(copy, err, sizeof err);
    RT_ASSERT(src);
    rewrite(opath, src, ometa, "exp_avg_sq.model.norm.weight", NULL, 0, NULL, 1, NULL);
    expect_load_error(ck, &x, 1, "optimizer.safetensors",
                      "exp_avg_sq.model.norm.weight is missing");
    st_close(src);
    write_file(opath, orig, len);
    rt_free(orig);
    orig = read_file(spath, &len);
    json_t *sj = json_loads(orig, 0, NULL);
    json_object_set_new(sj, "optimizer_step", json_integer(4));
    RT_ASSERT(json_dump_file(sj, spath, 0) == 0);
    json_decref(sj);
    expect_load_error(ck, &x, 1, "trainer_state.json", "optimizer_step 4");
    write_file(spath, orig, len);

    /* Failed loads left the model untouched; the repaired checkpoint loads. */
    char *after = download(be, model_weights(x.m), n);
    CHECK(!memcmp(before, after, be->f32_size * (size_t)n));
    CHECK(x.opt->t == 9);
    TrainerState st = {0};
    CHECK_MSG(checkpoint_load(ck, &(CheckpointLoad){.model = x.m, .opt = x.opt, .state = &st}, err,
                              sizeof err) == 0,
              "%s", err);
    CHECK(st.step == 1 && x.opt->t == 3 && st.data_state == NULL);

    rt_free(after);
    rt_free(before);
    rt_free(bad);
    rt_free(orig);
    rt_free(copy);
    rt_free(ck);
    rt_free(mpath);
    rt_free(opath);
    rt_free(spath);
    trainee_free(&a);
    trainee_free(&x);
    fs_remove_tree(dir);
    rt_free(dir);
}

/* ------------------------------------------------------------------------------------ */
/* config.json                                                                          */
/* ------------------------------------------------------------------------------------ */

/* A config with non-default values in every field config.json carries for `mixer`. */
static ModelConfig hf_case(MixerKind mixer, int pe_variant) {
    ModelConfig c =
        tu_model(mixer, (TuModelSize){.vocab = 100, .hidden = 64, .layers = 3, .heads = 4});
    c.hidden_ratio = 3.5;
    c.intermediate_size = pe_variant == 1 ? 96 : 0; /* explicit once, derived otherwise */
    c.norm_eps = 1e-5;
    c.init_std = 0.01;
    c.bos_id = 5;
    c.eos_id = 6;
    c.max_seq_len = 512;
    c.doc_mask = 1;
    switch (mixer) {
    case MIXER_GLA:
        c.expand_k = 0.25;
        c.expand_v = 0.5;
        c.short_conv = 0;
        c.gate_low_rank_dim = 8;
        c.gate_logit_normalizer = 8;
        break;
    case MIXER_GDN:
        c.head_dim = 16;
        c.expand_v = 2;
        c.short_conv = 0;
        break;
    case MIXER_FOX: c.output_gate = c.output_norm = c.qk_norm = c.k_shift = c.v_shift = 1; break;
    case MIXER_TRANSFORMER: c.qk_norm = 1; break;
    case MIXER_DELTANET: /* fla's defaults flipped: no conv, the output gate */
        c.expand_k = 0.25;
        c.expand_v = 0.5;
        c.short_conv = 0;
        c.use_gate = 1;
        break;
    case MIXER_MAMBA2:
        c.head_dim = 16;
        c.state_size = 8;
        c.n_groups = 2;
        c.num_heads = 8; /* config.json holds the derived 64 x 2 / 16 */
        break;
    case MIXER_LRU:
    case MIXER_ROTRNN:
        c.state_size = 24; /* RotRNN: 4 heads of 6 */
        c.r_min = 0.5;
        c.r_max = 0.75;
        c.max_phase = 3.0;
        break;
    case MIXER_RNN:
    case MIXER_RNN_ORTH:
    case MIXER_EXPRNN:
    case MIXER_NNRNN:
    case MIXER_EURNN:
    case MIXER_LSTM: /* the papers' shape: the RNN layers alone */
        c.block = BLOCK_RNN;
        if (mixer == MIXER_EXPRNN || mixer == MIXER_NNRNN) c.orth_init = ORTH_INIT_HENAFF;
        if (mixer == MIXER_NNRNN) c.max_phase = 3.0;
        if (mixer == MIXER_EURNN) c.capacity = 3;
        break;
    }
    PEConfig *pe = &c.pe;
    switch (pe_variant) {
    case 0: pe->kind = PE_NOPE; break;
    case 1:
        pe->kind = PE_ROPE;
        pe->rope_theta = 10000;
        break;
    case 2: /* low rank with every flag flipped */
        pe->kind = PE_SELECTIVE;
        pe->phi_proj = PHI_LOW_RANK;
        pe->phi_rank = 5;
        pe->conv_act = ACT_NONE;
        pe->skip_conv = pe->bias = pe->phase_gate = pe->temp_grad = 1;
        pe->temp_type = TEMP_TAN;
        pe->temp_theta = 0.9;
        pe->temp_max = 2.5;
        break;
    case 3: /* the paper's setting: full rank, silu, rope temperatures */
        pe->kind = PE_SELECTIVE;
        pe->phase_gate = 1;
        pe->temp_max = 1.0 / 3.0;
        break;
    }
    return c;
}

/* RMSprop's state: its square averages under torch's name "square_avg", metadata optimizer =
 * rmsprop, restored exactly, cut from ZeRO-1 slices; a checkpoint of one optimizer is refused
 * by the other, naming both. */
static void test_rmsprop_state(void) {
    ModelConfig c = tiny_fox_pro(); /* frozen temperatures: no state saved, zero state loaded */
    const Backend *be = backend_cpu();
    char *dir = tu_temp_dir();
    RunConfig rc = run_config_for(&c, dir);
    rc.train.optimizer = OPTIMIZER_RMSPROP;
    Trainee a = trainee_of(&c, 3, 13, OPTIMIZER_RMSPROP);
    CHECK_MSG(save_step(dir, &a, &rc, 13, 0) == 0, "%s", err);
    char *ck = rt_sprintf("%s/checkpoints/step_00000013", dir),
         *opath = rt_sprintf("%s/optimizer.safetensors", ck);
    const ParamTable *t = model_params(a.m);
    int64_t P = t->total;
    StFile *of = st_open(opath, err, sizeof err);
    CHECK_MSG(of, "%s", err);
    if (of) {
        CHECK(st_meta(of, "optimizer") && !strcmp(st_meta(of, "optimizer"), "rmsprop"));
        CHECK(st_meta(of, "step") && !strcmp(st_meta(of, "step"), "13"));
        int trainable = 0;
        for (int i = 0; i < t->n; i++) {
            char name[ST_NAME_MAX];
            snprintf(name, sizeof name, "square_avg.%s", t->p[i].name);
            CHECK_MSG(!!st_find(of, name) == t->p[i].trainable, "%s in the optimizer file: %d",
                      name, !!st_find(of, name));
            trainable += t->p[i].trainable;
        }
        CHECK(st_count(of) == trainable);
    }
    st_close(of);
    real *sa = (real *)download(be, a.opt->state[0], P);
    Trainee b = trainee_of(&c, 8, 0, OPTIMIZER_RMSPROP);
    CHECK_MSG(checkpoint_load(ck, &(CheckpointLoad){.model = b.m, .opt = b.opt}, err, sizeof err) ==
                  0,
              "%s", err);
    real *sb = (real *)download(be, b.opt->state[0], P);
    int bad = 0;
    for (int i = 0; i < t->n; i++)
        for (int64_t k = t->p[i].offset; k < t->p[i].offset + t->p[i].numel; k++)
            bad += t->p[i].trainable ? (float)sa[k] != (float)sb[k] : sb[k] != 0;
    CHECK_MSG(!bad && b.opt->t == 13, "%d square averages differ after loading", bad);
    rt_free(sb);
    /* the other optimizer's state is refused both ways */
    Trainee w = trainee(&c, 8, 0);
    CHECK(checkpoint_load(ck, &(CheckpointLoad){.model = w.m, .opt = w.opt}, err, sizeof err) != 0);
    CHECK_ERR("optimizer.safetensors");
    CHECK_ERR("holds the state of optimizer rmsprop, but train.optimizer = adamw");
    char *dir2 = tu_temp_dir();
    CHECK_MSG(save_step(dir2, &w, &rc, 4, 0) == 0, "%s", err);
    char *ck2 = rt_sprintf("%s/checkpoints/step_00000004", dir2);
    CHECK(checkpoint_load(ck2, &(CheckpointLoad){.model = b.m, .opt = b.opt}, err, sizeof err) !=
          0);
    CHECK_ERR("holds the state of optimizer adamw, but train.optimizer = rmsprop");
    /* ZeRO-1 slices of two ranks, loaded into other slicings */
    unlink(opath);
    int64_t cut = P / 3;
    for (int r = 0; r < 2; r++) {
        int64_t lo = r ? cut : 0, hi = r ? P : cut;
        float *x = rt_malloc(sizeof(float) * (size_t)(hi - lo));
        for (int64_t i = lo; i < hi; i++) x[i - lo] = (float)sa[i];
        StTensor t1[1] = {
            {"square_avg", "F32", 1, {hi - lo}, x, sizeof(float) * (size_t)(hi - lo)}};
        char a0[32], a1[32], a2[32];
        snprintf(a0, sizeof a0, "%lld", (long long)lo);
        snprintf(a1, sizeof a1, "%lld", (long long)hi);
        snprintf(a2, sizeof a2, "%lld", (long long)P);
        const char *const meta[] = {"step", "13", "optimizer", "rmsprop", "start", a0,
                                    "end",  a1,   "total",     a2,        NULL};
        char *path = rt_sprintf("%s/optimizer.rank%05d-of-00002.safetensors", ck, r);
        CHECK_MSG(st_write(path, t1, 1, meta, err, sizeof err) == 0, "%s", err);
        rt_free(path);
        rt_free(x);
    }
    int64_t cuts[][2] = {{0, P}, {P / 2, P}, {cut - 3, cut + 3}};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        Optimizer *o = optimizer_create(be, OPTIMIZER_RMSPROP, cuts[k][0], cuts[k][1]);
        CHECK_MSG(checkpoint_load(ck, &(CheckpointLoad){.model = b.m, .opt = o}, err, sizeof err) ==
                      0,
                  "%s", err);
        int64_t len = cuts[k][1] - cuts[k][0];
        real *sx = (real *)download(be, o->state[0], len);
        int diff = 0;
        for (int64_t i = 0; i < len; i++) diff += (float)sx[i] != (float)sa[cuts[k][0] + i];
        CHECK_MSG(!diff && o->t == 13, "slice [%lld, %lld): %d square averages differ",
                  (long long)cuts[k][0], (long long)cuts[k][1], diff);
        rt_free(sx);
        optimizer_free(o);
    }
    Optimizer *o = optimizer_create(be, OPTIMIZER_ADAMW, 0, P);
    CHECK(checkpoint_load(ck, &(CheckpointLoad){.model = b.m, .opt = o}, err, sizeof err) != 0);
    CHECK_ERR("optimizer.rank0000");
    CHECK_ERR("holds the state of optimizer rmsprop, but train.optimizer = adamw");
    optimizer_free(o);
    rt_free(sa);
    trainee_free(&a);
    trainee_free(&b);
    trainee_free(&w);
    fs_remove_tree(dir);
    fs_remove_tree(dir2);
    rt_free(ck);
    rt_free(ck2);
    rt_free(opath);
    rt_free(dir);
    rt_free(dir2);
}

static void test_hf_roundtrip(void) {
    static const char *const pes[] = {"nope", "rope", "selective low-rank all flags",
                                      "selective full-rank"};
    /* the mixers that take every position embedding (all but Mamba2, below) */
    static const char *const types[] = {"gla", "gated_deltanet", "forgetting_transformer",
                                        "transformer", "delta_net"};
    static const char *const archs[] = {"GLAForCausalLM", "GatedDeltaNetForCausalLM",
                                        "ForgettingTransformerForCausalLM",
                                        "TransformerForCausalLM", "DeltaNetForCausalLM"};
    static const char *const pe_types[] = {"nope", "rope", "selective_rope", "selective_rope"};
    /* fla's own model computes NoPE GLA, Gated DeltaNet, DeltaNet and the RoPE Transformer (the
     * FoX case has the Pro options fla lacks); every other case names rotor's model */
    static const int fla_pe[] = {0, 0, -1, 1, 0};
    for (int mx = 0; mx < (int)(sizeof types / sizeof types[0]); mx++) {
        for (int v = 0; v < 4; v++) {
            char label[96];
            snprintf(label, sizeof label, "%s %s", types[mx], pes[v]);
            ModelConfig c = hf_case((MixerKind)mx, v), back;
            ModelDims dims;
            RT_ASSERT(model_dims(&c, &dims) == NULL);
            json_t *j = hf_config_to_json(&c);
            char *text = json_dumps(j, HF_CONFIG_JSON_FLAGS);
            json_decref(j);
            json_t *parsed = json_loads(text, 0, NULL);
            CHECK_MSG(hf_config_from_json(parsed, hf_defaults(), &back, err, sizeof err) == 0,
                      "%s: %s", label, err);
            CHECK_MSG(config_equal(&c, &back, label), "%s: round trip differs", label);
            /* What the PyTorch reference and transformers read. */
            int fla = v == fla_pe[mx];
            CHECK_MSG(hf_config_is_fla(&c) == fla, "%s", label);
            char type[64], arch[64], auto_config[96];
            snprintf(type, sizeof type, "%s%s", fla ? "" : "rotor_", types[mx]);
            snprintf(arch, sizeof arch, "%s%s", fla ? "" : "Rotor", archs[mx]);
            snprintf(auto_config, sizeof auto_config, "configuration_rotor.Rotor%.*sConfig",
                     (int)(strlen(archs[mx]) - strlen("ForCausalLM")), archs[mx]);
            CHECK_MSG(!strcmp(json_string_value(json_object_get(parsed, "model_type")), type), "%s",
                      label);
            CHECK(!strcmp(
                json_string_value(json_array_get(json_object_get(parsed, "architectures"), 0)),
                arch));
            const json_t *am = json_object_get(parsed, "auto_map");
            CHECK_MSG(fla ? !am
                          : am && !strcmp(json_string_value(json_object_get(am, "AutoConfig")),
                                          auto_config),
                      "%s: auto_map", label);
            if (am) {
                char model[96];
                snprintf(model, sizeof model, "modeling_rotor.%s", arch);
                CHECK(
                    !strcmp(json_string_value(json_object_get(am, "AutoModelForCausalLM")), model));
            }
            /* the same file with fla's model_type (as written before rotor's models) reads the same
             */
            json_object_set_new(parsed, "model_type", json_string(types[mx]));
            CHECK_MSG(hf_config_from_json(parsed, hf_defaults(), &back, err, sizeof err) == 0 &&
                          config_equal(&c, &back, label),
                      "%s: fla's model_type: %s", label, err);
            CHECK(json_integer_value(json_object_get(parsed, "intermediate_size")) ==
                  dims.mlp_width);
            CHECK(json_is_false(json_object_get(parsed, "tie_word_embeddings")));
            CHECK(json_is_true(json_object_get(parsed, "doc_mask")));
            const json_t *pe = json_object_get(parsed, "position_embedding");
            CHECK(!strcmp(json_string_value(json_object_get(pe, "type")), pe_types[v]));
            if (v == 2) {
                CHECK(!strcmp(json_string_value(json_object_get(pe, "phi_parametrization")),
                              "low-rank"));
                CHECK(!strcmp(json_string_value(json_object_get(pe, "temp_type")), "rfa"));
                CHECK(json_is_null(json_object_get(pe, "conv_act")));
                CHECK(json_integer_value(json_object_get(pe, "phi_proj_rank")) == 5);
            }
            if (v == 3) CHECK(!strcmp(json_string_value(json_object_get(pe, "conv_act")), "silu"));
            if (mx == MIXER_TRANSFORMER) /* fla's Attention reads its RoPE base here */
                CHECK(json_real_value(json_object_get(parsed, "rope_theta")) == c.pe.rope_theta);
            json_decref(parsed);
            free(text);
        }
    }
    /* plain FoX (no Pro options) is fla's ForgettingTransformer with NoPE only */
    ModelConfig c = hf_case(MIXER_FOX, 0), back;
    c.output_norm = c.k_shift = c.v_shift = 0;
    CHECK(hf_config_is_fla(&c));
    c.pe.kind = PE_ROPE;
    CHECK(!hf_config_is_fla(&c));
    /* Mamba2 (NoPE only): fla's Mamba2Config keys, no MLP width, the derived num_heads; two groups
     * name rotor's model (fla's torch fallback orders the groups otherwise), one fla's */
    c = hf_case(MIXER_MAMBA2, 0);
    json_t *j = hf_config_to_json(&c);
    CHECK_MSG(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) == 0, "mamba2: %s",
              err);
    CHECK_MSG(config_equal(&c, &back, "mamba2"), "mamba2: round trip differs");
    CHECK(!strcmp(json_string_value(json_object_get(j, "model_type")), "rotor_mamba2"));
    CHECK(!strcmp(json_string_value(json_array_get(json_object_get(j, "architectures"), 0)),
                  "RotorMamba2ForCausalLM"));
    c.n_groups = 1;
    CHECK(hf_config_is_fla(&c));
    c.n_groups = 2;
    CHECK(!json_object_get(j, "intermediate_size"));
    CHECK(json_integer_value(json_object_get(j, "num_heads")) == 8);
    CHECK(json_integer_value(json_object_get(j, "n_groups")) == 2);
    CHECK(!strcmp(json_string_value(json_object_get(j, "hidden_act")), "silu"));
    json_object_set_new(j, "num_heads", json_integer(4));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'num_heads' = 4"));
    json_object_set_new(j, "use_bias", json_true());
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'use_bias'"));
    json_decref(j);
    /* rotor's shapes: the classifier with the linear input, then broken keys */
    c = hf_case(MIXER_GLA, 0);
    c.head = HEAD_CLASSIFIER, c.num_classes = 3, c.pool = POOL_LAST, c.input = INPUT_LINEAR,
    c.input_scale = 9;
    j = hf_config_to_json(&c);
    CHECK_MSG(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) == 0, "classifier: %s",
              err);
    CHECK_MSG(config_equal(&c, &back, "classifier"), "classifier: round trip differs");
    CHECK(!strcmp(json_string_value(json_object_get(j, "rotor_head")), "classifier"));
    CHECK(!strcmp(json_string_value(json_object_get(j, "model_type")),
                  "rotor_gla")); /* NoPE, but not fla's LM */
    CHECK(json_integer_value(json_object_get(j, "num_labels")) == 3);
    json_object_set_new(j, "num_labels", json_integer(1));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'num_labels'"));
    json_object_set_new(j, "num_labels", json_integer(3));
    json_object_set_new(j, "rotor_input_offset", json_string("half"));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'rotor_input_offset'"));
    json_object_del(j, "rotor_input_offset");
    json_object_set_new(j, "rotor_input_scale", json_real(-1));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'rotor_input_scale'"));
    json_object_set_new(j, "rotor_head", json_string("regressor"));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'rotor_head'"));
    json_decref(j);
    /* the pair classifier's keys; an absent rotor_pair is none, a bad one or width is named */
    c.pair = PAIR_NLI, c.pair_mlp = 6, c.input_scale = 9;
    j = hf_config_to_json(&c);
    CHECK(!strcmp(json_string_value(json_object_get(j, "rotor_pair")), "nli") &&
          json_integer_value(json_object_get(j, "rotor_pair_mlp")) == 6);
    CHECK_MSG(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) == 0 &&
                  config_equal(&c, &back, "pair"),
              "pair: %s", err);
    json_object_set_new(j, "rotor_pair_mlp", json_integer(1));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'rotor_pair_mlp'"));
    json_object_set_new(j, "rotor_pair", json_string("dual"));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'rotor_pair'"));
    json_object_del(j, "rotor_pair");
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) == 0 &&
          back.pair == PAIR_NONE);
    json_decref(j);
    /* the block keys (docs/models.md §block-dropout-bidirectional), then broken ones */
    c = hf_case(MIXER_LRU, 0);
    c.head = HEAD_CLASSIFIER, c.num_classes = 3, c.block = BLOCK_LRA, c.dropout = 0.2,
    c.bidirectional = 1;
    j = hf_config_to_json(&c);
    CHECK_MSG(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) == 0, "lra block: %s",
              err);
    CHECK_MSG(config_equal(&c, &back, "lra block"), "lra block: round trip differs");
    CHECK(!strcmp(json_string_value(json_object_get(j, "rotor_block")), "lra"));
    CHECK(!strcmp(json_string_value(json_object_get(j, "hidden_act")), "gelu"));
    CHECK(!json_object_get(j, "intermediate_size") && !json_object_get(j, "rotor_dropout_mask"));
    json_object_set_new(j, "rotor_dropout", json_real(1.0));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'rotor_dropout'"));
    json_object_set_new(j, "rotor_dropout", json_real(0.2));
    json_object_set_new(j, "rotor_bidirectional", json_string("yes"));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'rotor_bidirectional'"));
    json_object_set_new(j, "rotor_bidirectional", json_true());
    json_object_del(j, "rotor_head");
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "model.bidirectional"));
    json_decref(j);
    /* Zoology's shape (docs/models.md §zoology-shape): the hybrid's keys round trip, BaseConv's
     * taps among them; a broken count is refused, an absent one is Zoology's 3 */
    c = hf_case(MIXER_GLA, 0);
    apply_hybrid(&c, 2);
    j = hf_config_to_json(&c);
    CHECK_MSG(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) == 0, "hybrid: %s",
              err);
    CHECK_MSG(config_equal(&c, &back, "hybrid"), "hybrid: round trip differs");
    CHECK(json_integer_value(json_object_get(j, "rotor_base_conv_kernel")) == 4);
    json_object_set_new(j, "rotor_base_conv_kernel", json_integer(5));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'rotor_base_conv_kernel'"));
    json_object_set_new(j, "rotor_base_conv_kernel", json_string("3"));
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
          strstr(err, "'rotor_base_conv_kernel'"));
    json_object_del(j, "rotor_base_conv_kernel");
    CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) == 0 &&
          back.base_conv_kernel == 3);
    json_decref(j);
    /* the LRU and RotRNN (NoPE only; rotor's own keys, docs/models.md §lru, §rotrnn) */
    static const char *const lin_types[] = {"lru", "rotrnn"}, *const lin_archs[] = {
                                                                  "LRUForCausalLM",
                                                                  "RotRNNForCausalLM"};
    for (int i = 0; i < 2; i++) {
        c = hf_case(i ? MIXER_ROTRNN : MIXER_LRU, 0);
        j = hf_config_to_json(&c);
        CHECK_MSG(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) == 0, "%s: %s",
                  lin_types[i], err);
        CHECK_MSG(config_equal(&c, &back, lin_types[i]), "%s: round trip differs", lin_types[i]);
        CHECK(!strncmp(json_string_value(json_object_get(j, "model_type")), "rotor_", 6) &&
              !strcmp(json_string_value(json_object_get(j, "model_type")) + 6, lin_types[i]));
        CHECK(!strncmp(json_string_value(json_array_get(json_object_get(j, "architectures"), 0)),
                       "Rotor", 5) &&
              !strcmp(json_string_value(json_array_get(json_object_get(j, "architectures"), 0)) + 5,
                      lin_archs[i]));
        CHECK(json_integer_value(json_object_get(j, "state_size")) == 24);
        CHECK(json_real_value(json_object_get(j, i ? "gamma_min" : "r_min")) == 0.5);
        json_object_set_new(j, i ? "gamma_max" : "r_max", json_real(1.0));
        CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
              strstr(err, i ? "gamma_max < 1" : "r_max < 1"));
        json_decref(j);
    }
    /* the nonlinear RNNs as rnn blocks (NoPE only; rotor's own keys, docs/models.md
     * §nonlinear-rnns, §lstm) */
    for (int k = MIXER_RNN; k <= MIXER_EURNN; k++) {
        const char *name = mixer_name((MixerKind)k);
        c = hf_case((MixerKind)k, 0);
        j = hf_config_to_json(&c);
        CHECK_MSG(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) == 0, "%s: %s",
                  name, err);
        CHECK_MSG(config_equal(&c, &back, name), "%s: round trip differs", name);
        CHECK(!strncmp(json_string_value(json_object_get(j, "model_type")), "rotor_", 6) &&
              !strcmp(json_string_value(json_object_get(j, "model_type")) + 6, name));
        CHECK(!strcmp(json_string_value(json_object_get(j, "rotor_block")), "rnn"));
        CHECK(!json_object_get(j, "intermediate_size"));
        if (k == MIXER_NNRNN)
            CHECK(!strcmp(json_string_value(json_object_get(j, "rotor_orth_init")), "henaff"));
        json_object_set_new(j, "rotor_block", json_string("postnorm"));
        CHECK(hf_config_from_json(j, hf_defaults(), &back, err, sizeof err) != 0 &&
              strstr(err, "'rotor_block'"));
        json_decref(j);
    }
}

/* Parses `text`, applies hf_config_from_json; returns its result. */
static int from_text(const char *text, ModelConfig *c) {
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    RT_ASSERT(j);
    err[0] = '\0';
    int r = hf_config_from_json(j, hf_defaults(), c, err, sizeof err);
    json_decref(j);
    return r;
}

static void test_hf_errors(void) {
    ModelConfig c = hf_case(MIXER_GLA, 2);
    json_t *good = hf_config_to_json(&c);
    ModelConfig out;
    struct {
        const char *key;    /* top-level key, or "pe.<key>" */
        const char *value;  /* JSON text, NULL: delete */
        const char *expect; /* in the message */
    } cases[] = {
        {"model_type", "\"mamba\"", "'model_type' = \"mamba\" is not supported"},
        {"hidden_size", NULL, "'hidden_size' is missing"},
        {"num_heads", "\"4\"", "'num_heads' must be a positive integer, got a string"},
        {"num_heads", "0", "'num_heads' must be a positive integer, got 0"},
        {"num_hidden_layers", "2.0", "'num_hidden_layers' must be a positive integer, got a float"},
        {"use_short_conv", "1", "'use_short_conv' must be true or false"},
        {"expand_k", NULL, "'expand_k' is missing"},
        {"conv_size", "3", "'conv_size' = 3 is not supported"},
        {"hidden_act", "\"gelu\"", "'hidden_act'"},
        {"expand_k", "0.3", "inconsistent config"},
        {"position_embedding", "[]", "'position_embedding' must be an object"},
        {"pe.temp_max", "\"big\"",
         "'position_embedding.temp_max' must be a positive number, got a string"},
        {"pe.type", "\"alibi\"", "'position_embedding.type' = \"alibi\" is not supported"},
        {"pe.conv_act", "\"relu\"", "'position_embedding.conv_act'"},
        {"pe.temp_grad", NULL, "'position_embedding.temp_grad' is missing"},
        {"pe.temp_theta", "1.5", "'position_embedding.temp_theta'"},
        {"pe.d_conv", "3", "'position_embedding.d_conv' = 3 is not supported"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = json_deep_copy(good);
        json_t *obj = j;
        const char *key = cases[i].key;
        if (!strncmp(key, "pe.", 3)) {
            obj = json_object_get(j, "position_embedding");
            key += 3;
        }
        if (cases[i].value)
            json_object_set_new(obj, key, json_loads(cases[i].value, JSON_DECODE_ANY, NULL));
        else
            json_object_del(obj, key);
        err[0] = '\0';
        CHECK_MSG(hf_config_from_json(j, hf_defaults(), &out, err, sizeof err) == -1, "%s accepted",
                  cases[i].key);
        CHECK_ERR(cases[i].expect);
        json_decref(j);
    }
    json_decref(good);

    /* An fla-style config: ints for floats, null intermediate_size, no rotor keys. */
    CHECK_MSG(
        from_text(
            "{\"model_type\": \"gated_deltanet\", \"vocab_size\": 32000, \"hidden_size\": 1024,"
            " \"num_hidden_layers\": 24, \"num_heads\": 8, \"hidden_ratio\": 4, "
            "\"intermediate_size\": null,"
            " \"norm_eps\": 1e-06, \"head_dim\": 128, \"expand_v\": 1, \"use_short_conv\": true,"
            " \"use_gate\": true, \"conv_size\": 4, \"fuse_norm\": true, \"transformers_version\": "
            "\"4.4\"}",
            &out) == 0,
        "%s", err);
    ModelConfig want;
    model_config_defaults(&want);
    want.mixer = MIXER_GDN;
    want.num_heads = 8;
    CHECK(config_equal(&out, &want, "fla-style gdn"));
    /* fla's own DeltaNet 340M config (flame configs/delta_net_340M.json, which leaves
     * vocab_size to the tokenizer). */
    CHECK_MSG(
        from_text(
            "{\"attn_mode\": \"chunk\", \"bos_token_id\": 1, \"conv_size\": 4, \"eos_token_id\": 2,"
            " \"expand_k\": 1, \"expand_v\": 1, \"fuse_cross_entropy\": true, \"hidden_act\": "
            "\"swish\","
            " \"hidden_ratio\": 4, \"hidden_size\": 1024, \"initializer_range\": 0.02,"
            " \"intermediate_size\": null, \"model_type\": \"delta_net\", \"norm_eps\": 1e-06,"
            " \"num_heads\": 8, \"num_hidden_layers\": 24, \"qk_activation\": \"silu\", "
            "\"qk_norm\": \"l2\","
            " \"tie_word_embeddings\": false, \"use_beta\": true, \"use_cache\": true, "
            "\"use_gate\": false,"
            " \"use_output_norm\": true, \"use_short_conv\": true, \"vocab_size\": 32000}",
            &out) == 0,
        "%s", err);
    want.mixer = MIXER_DELTANET;
    want.expand_k = 1;
    CHECK(config_equal(&out, &want, "fla delta_net_340M"));
    /* An explicit width equal to the derived one is stored as derived (0). */
    CHECK(from_text("{\"model_type\": \"forgetting_transformer\", \"vocab_size\": 32000, "
                    "\"hidden_size\": 1024,"
                    " \"num_hidden_layers\": 24, \"num_heads\": 16, \"hidden_ratio\": 3.5, "
                    "\"intermediate_size\": 2560,"
                    " \"norm_eps\": 1e-06, \"qk_norm\": false, \"use_output_gate\": false}",
                    &out) == 0 &&
          out.intermediate_size == 0 && out.hidden_ratio == 3.5);
    CHECK(from_text("{\"model_type\": \"forgetting_transformer\", \"vocab_size\": 32000, "
                    "\"hidden_size\": 1024,"
                    " \"num_hidden_layers\": 24, \"num_heads\": 16, \"norm_eps\": 1e-06, "
                    "\"qk_norm\": false,"
                    " \"use_output_gate\": false}",
                    &out) == -1);
    CHECK_ERR("'intermediate_size' and 'hidden_ratio'");
    /* fla's own Transformer config: no position_embedding, so fla's RoPE with rope_theta. */
    CHECK_MSG(
        from_text("{\"model_type\": \"transformer\", \"vocab_size\": 32000, \"hidden_size\": 1024,"
                  " \"num_hidden_layers\": 24, \"num_heads\": 16, \"hidden_ratio\": 4,"
                  " \"intermediate_size\": null, \"norm_eps\": 1e-06, \"qk_norm\": true,"
                  " \"rope_theta\": 10000.0, \"num_kv_heads\": null, \"window_size\": null}",
                  &out) == 0,
        "%s", err);
    model_config_defaults(&want);
    want.mixer = MIXER_TRANSFORMER;
    want.num_heads = 16;
    want.qk_norm = 1;
    want.pe.kind = PE_ROPE;
    want.pe.rope_theta = 10000;
    CHECK(config_equal(&out, &want, "fla-style transformer"));
    CHECK(
        from_text("{\"model_type\": \"transformer\", \"vocab_size\": 32000, \"hidden_size\": 1024,"
                  " \"num_hidden_layers\": 24, \"num_heads\": 16, \"hidden_ratio\": 4, "
                  "\"norm_eps\": 1e-06,"
                  " \"qk_norm\": false, \"num_kv_heads\": 4}",
                  &out) == -1);
    CHECK_ERR("'num_kv_heads' = 4 is not supported");
}

/* ------------------------------------------------------------------------------------ */
/* safetensors                                                                          */
/* ------------------------------------------------------------------------------------ */

static void test_st_roundtrip(void) {
    char *dir = tu_temp_dir();
    char *path = rt_sprintf("%s/t.safetensors", dir);
    float f32[6] = {1.5f, -2, 3.25f, 0, -0.0f, 1e-30f};
    double f64[4] = {1e300, -1.0 / 3.0, 0, 2};
    int32_t i32[4] = {-1, 0, 1, INT32_MAX};
    int64_t i64[3] = {INT64_MIN, 0, INT64_MAX};
    uint8_t u8[5] = {0, 1, 127, 128, 255};
    uint16_t bf16[3] = {0x3f80, 0xbf80, 0x7f80};
    float scalar = 42;
    StTensor ts[] = {
        {"f32", "F32", 2, {2, 3}, f32, sizeof f32},
        {"f64", "F64", 1, {4}, f64, sizeof f64},
        {"u8 odd size", "U8", 1, {5}, u8, sizeof u8},
        {"i32", "I32", 2, {2, 2}, i32, sizeof i32},
        {"i64", "I64", 1, {3}, i64, sizeof i64},
        {"bf16", "BF16", 3, {1, 3, 1}, bf16, sizeof bf16},
        {"scalar", "F32", 0, {0}, &scalar, sizeof scalar},
        {"empty", "F32", 2, {0, 4}, NULL, 0},
    };
    int n = (int)(sizeof ts / sizeof ts[0]);
    static const char *const meta[] = {"format", "pt", "note", "a \"quoted\" value", NULL};
    CHECK_MSG(st_write(path, ts, n, meta, err, sizeof err) == 0, "%s", err);
    char *tmp = rt_sprintf("%s.tmp", path);
    CHECK(!fs_exists(tmp));
    rt_free(tmp);

    size_t len;
    char *raw = read_file(path, &len);
    uint64_t hsize = 0;
    for (int i = 0; i < 8; i++) hsize |= (uint64_t)(unsigned char)raw[i] << (8 * i);
    size_t data = 0;
    for (int i = 0; i < n; i++) data += ts[i].nbytes;
    CHECK(hsize % 8 == 0 && len == 8 + hsize + data);
    rt_free(raw);

    StFile *f = st_open(path, err, sizeof err);
    CHECK_MSG(f, "%s", err);
    if (f) {
        CHECK(st_count(f) == n);
        for (int i = 0; i < n && i < st_count(f); i++) {
            const StTensor *x = st_at(f, i);
            int same = !strcmp(x->name, ts[i].name) && !strcmp(x->dtype, ts[i].dtype) &&
                       x->ndim == ts[i].ndim && x->nbytes == ts[i].nbytes &&
                       (!x->nbytes || !memcmp(x->data, ts[i].data, x->nbytes));
            for (int d = 0; d < x->ndim; d++) same &= x->shape[d] == ts[i].shape[d];
            CHECK_MSG(same, "tensor %d (%s) differs", i, ts[i].name);
        }
        CHECK(st_find(f, "i64") == st_at(f, 4) && st_find(f, "nope") == NULL);
        CHECK(!strcmp(st_meta(f, "note"), "a \"quoted\" value") && st_meta(f, "missing") == NULL);
        st_close(f);
    }

    /* Writer checks. */
    StTensor bad = {"x", "F32", 1, {3}, f32, 8};
    CHECK(st_write(path, &bad, 1, NULL, err, sizeof err) == -1);
    CHECK_ERR("nbytes does not match");
    StTensor dup[2] = {{"x", "F32", 1, {1}, f32, 4}, {"x", "F32", 1, {1}, f32, 4}};
    CHECK(st_write(path, dup, 2, NULL, err, sizeof err) == -1);
    CHECK_ERR("name used twice");
    StTensor unk = {"x", "F12", 1, {1}, f32, 4};
    CHECK(st_write(path, &unk, 1, NULL, err, sizeof err) == -1);
    CHECK_ERR("unknown dtype");

    rt_free(path);
    fs_remove_tree(dir);
    rt_free(dir);
}

/* Writes u64 size | header | `data` zero bytes and opens it; returns st_open's result. */
static StFile *open_raw(const char *path, const char *header, size_t data) {
    size_t h = strlen(header), len = 8 + h + data;
    char *b = rt_calloc(len, 1);
    for (int i = 0; i < 8; i++) b[i] = (char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    write_file(path, b, len);
    rt_free(b);
    err[0] = '\0';
    return st_open(path, err, sizeof err);
}

static void test_st_invalid(void) {
    char *dir = tu_temp_dir();
    char *path = rt_sprintf("%s/bad.safetensors", dir);
    struct {
        const char *header;
        size_t data;
        const char *expect;
    } cases[] = {
        {"{\"a\":{\"dtype\":\"F17\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
         "unknown dtype 'F17'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "need 2 x 4"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "truncated"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
         12, "overlaps"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
         12, "4 unused bytes before tensor 'b'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8,
         "the data section holds 8 bytes"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
         8, "duplicate"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4, "data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4,
         "unknown header field 'x'"},
        {"{\"__metadata__\":{\"k\":1}}", 0, "metadata 'k' is not a string"},
        {"[]", 0, "not an object"},
        {"{\"a\":", 0, "invalid JSON header"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        StFile *f = open_raw(path, cases[i].header, cases[i].data);
        CHECK_MSG(!f, "case %zu accepted", i);
        st_close(f);
        CHECK_ERR(cases[i].expect);
        CHECK_ERR("bad.safetensors");
    }
    write_file(path, "abc", 3);
    CHECK(!st_open(path, err, sizeof err));
    CHECK_ERR("too short");
    unsigned char big[16] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '{', '}'};
    write_file(path, big, sizeof big);
    CHECK(!st_open(path, err, sizeof err));
    CHECK_ERR("header size 4294967295 exceeds");
    CHECK(!st_open("/nonexistent/x.safetensors", err, sizeof err));
    CHECK_ERR("/nonexistent/x.safetensors: cannot open");

    /* Valid: header order differs from data order (as writers that sort names produce),
     * zero padding spaces, metadata, an empty tensor. */
    StFile *f = open_raw(path,
                         "{\"__metadata__\":{\"step\":\"3\"},\"z\":{\"dtype\":\"I64\",\"shape\":[1]"
                         ",\"data_offsets\":[0,8]},"
                         "\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[8,11]},"
                         "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[11,11]}}    ",
                         11);
    CHECK_MSG(f, "%s", err);
    if (f) {
        CHECK(st_count(f) == 3 && !strcmp(st_at(f, 0)->name, "z") &&
              !strcmp(st_at(f, 1)->name, "a"));
        CHECK(!strcmp(st_meta(f, "step"), "3"));
        st_close(f);
    }
    rt_free(path);
    fs_remove_tree(dir);
    rt_free(dir);
}

/* st_read_f32 of every floating-point dtype (train.init_from reads BF16 / F16 models): exact
 * values, F16's subnormals, infinities and signed zeros, and unaligned data. */
static void test_st_read_f32(void) {
    /* F16 bit patterns: 1, -2, 0.5 + 2^-11, the smallest subnormal 2^-24, the largest
     * subnormal, -0, +inf, 65504 (the largest finite) */
    static const uint16_t h[] = {0x3c00, 0xc000, 0x3801, 0x0001, 0x03ff, 0x8000, 0x7c00, 0x7bff};
    static const float hw[] = {1.f,  -2.f,     0.5f + 0x1p-11f, 0x1p-24f, 1023 * 0x1p-24f,
                               -0.f, INFINITY, 65504.f};
    /* BF16: the high halves of 1, -3.5, 2^-130 (a float subnormal), 3e38 rounded down */
    static const uint16_t b[] = {0x3f80, 0xc060, 0x0008, 0x7f61};
    static const double d[] = {0.1, -1e30, 3.0};
    unsigned char buf[1 + sizeof h]; /* data one byte off its alignment */
    memcpy(buf + 1, h, sizeof h);
    float out[8];
    st_read_f32(&(StTensor){"h", "F16", 1, {8}, buf + 1, sizeof h}, out);
    for (int i = 0; i < 8; i++)
        CHECK_MSG(out[i] == hw[i] && signbit(out[i]) == signbit(hw[i]), "F16 %04x: %g, expected %g",
                  h[i], out[i], hw[i]);
    st_read_f32(&(StTensor){"b", "BF16", 1, {4}, b, sizeof b}, out);
    const float bw[] = {1.f, -3.5f, 0x1p-130f, 0x1.c2p+127f};
    for (int i = 0; i < 4; i++)
        CHECK_MSG(out[i] == bw[i], "BF16 %04x: %g, expected %g", b[i], out[i], bw[i]);
    st_read_f32(&(StTensor){"d", "F64", 1, {3}, d, sizeof d}, out);
    CHECK(out[0] == 0.1f && out[1] == -1e30f && out[2] == 3.f);
    CHECK(st_is_float("F32") && st_is_float("BF16") && !st_is_float("I32") && !st_is_float("U8"));
    char shape[64];
    st_format_shape(shape, sizeof shape, (const int64_t[]){3, 64}, 2);
    CHECK(!strcmp(shape, "[3, 64]"));
}

/* The checksum of TensorBoard's record framing: CRC-32C's check value and RFC 3720's vectors. */
static void test_tb_crc32c(void) {
    unsigned char zeros[32] = {0}, ones[32], inc[32];
    memset(ones, 0xff, sizeof ones);
    for (int i = 0; i < 32; i++) inc[i] = (unsigned char)i;
    CHECK(tb_crc32c("123456789", 9) == 0xe3069283u);
    CHECK(tb_crc32c(zeros, 32) == 0x8a9136aau);
    CHECK(tb_crc32c(ones, 32) == 0x62a8ab43u);
    CHECK(tb_crc32c(inc, 32) == 0x46dd794eu);
    CHECK(tb_crc32c("", 0) == 0);
}

static const TestCase tests[] = {
    {"checkpoint_roundtrip_gla", test_roundtrip_gla},
    {"checkpoint_roundtrip_gdn", test_roundtrip_gdn},
    {"checkpoint_roundtrip_fox_pro", test_roundtrip_fox_pro},
    {"checkpoint_roundtrip_transformer", test_roundtrip_transformer},
    {"checkpoint_roundtrip_deltanet", test_roundtrip_deltanet},
    {"checkpoint_roundtrip_mamba2", test_roundtrip_mamba2},
    {"checkpoint_roundtrip_heads", test_roundtrip_heads},
    {"checkpoint_latest", test_latest},
    {"checkpoint_keep", test_keep},
    {"checkpoint_corrupt", test_corrupt},
    {"checkpoint_checksum_fallback", test_checksum_fallback},
    {"checkpoint_sharded_moments", test_sharded_moments},
    {"checkpoint_rmsprop_state", test_rmsprop_state},
    {"hf_config_roundtrip", test_hf_roundtrip},
    {"hf_config_errors", test_hf_errors},
    {"safetensors_roundtrip", test_st_roundtrip},
    {"safetensors_invalid", test_st_invalid},
    {"safetensors_read_f32", test_st_read_f32},
    {"tb_crc32c", test_tb_crc32c},
};

TH_MAIN(tests)
