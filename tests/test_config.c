/* Run config (src/config/run_config.c): defaults, INI files, --set overrides, error
 * messages (location, key, value, expectation, "did you mean"), shape validation, the
 * temp_theta default, and the write_ini -> load round trip. */
#include "config/run_config.h"
#include "harness.h"
#include "testutil.h"

#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>

static char err[1024];

/* Writes text to a fresh temporary file; returns its path (static storage, one at a time). */
static const char *temp_ini(const char *text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/rotor_test_config_XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* Loads text from a temporary file with the given overrides; removes the file. */
static int load_file(RunConfig *c, const char *text, const char *const *sets, int nsets,
                     const char **path) {
    const char *p = temp_ini(text);
    memset(err, 0, sizeof err);
    int rc = run_config_load(c, p, sets, nsets, err, sizeof err);
    unlink(p);
    if (path) *path = p;
    return rc;
}

/* Loads text (origin "test.ini"), expecting failure with a message containing every
 * NULL-terminated fragment. */
static void expect_error(const char *text, const char *set, ...) {
    RunConfig c;
    const char *sets[] = {set};
    int rc = run_config_load_string(&c, text, "test.ini", sets, set ? 1 : 0, err, sizeof err);
    CHECK_MSG(rc == -1, "expected an error for:\n%s--set %s", text ? text : "", set ? set : "");
    va_list ap;
    va_start(ap, set);
    for (const char *frag; (frag = va_arg(ap, const char *));)
        CHECK_MSG(rc == -1 && strstr(err, frag), "message '%s' lacks '%s'", err, frag);
    va_end(ap);
}

static const char *const TRAIN_SET[] = {"data.train=synthetic:copy"};

static void test_defaults(void) {
    RunConfig d, c;
    run_config_defaults(&d);
    CHECK(d.model.mixer == MIXER_GLA && d.model.pe.kind == PE_NOPE);
    CHECK(d.model.vocab_size == 32000 && d.model.hidden_size == 1024 && d.model.num_layers == 24);
    CHECK(d.model.num_heads == 4 && d.model.head_dim == 128 && d.model.short_conv == 1);
    CHECK(d.model.norm_eps == 1e-6 && d.model.expand_k == 0.5 && d.model.bos_id == 1 &&
          d.model.eos_id == 2);
    CHECK(d.model.pe.conv_act == ACT_SILU && d.model.pe.temp_theta == 500000 &&
          d.model.pe.phi_rank == 32);
    CHECK(d.train.seq_len == 2048 && d.train.steps == 1000 && d.train.lr == 1e-3);
    CHECK(d.train.lr_start == 1e-5 && d.train.lr_min == 1e-4 && d.train.warmup_frac == 0.1);
    CHECK(d.train.schedule == SCHEDULE_COSINE);
    CHECK(d.train.beta2 == 0.95 && d.train.adam_eps == 1e-8 && d.train.seed == 1234);
    CHECK(d.train.keep_checkpoints == 3 && d.train.max_bad_steps == 5 &&
          d.train.async_checkpoint == 1);
    CHECK(d.data.prefetch == 4 && !strcmp(d.run.dir, "runs/default") &&
          !strcmp(d.run.device, "auto"));
    CHECK(d.run.collective_timeout == 600 && d.run.bucket_mb == 25);
    CHECK(d.model.max_seq_len == d.train.seq_len);

    /* Defaults only: data.train is required. */
    CHECK(run_config_load(&c, NULL, NULL, 0, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "data.train is required"), "%s", err);
    /* With it, everything else is the defaults. */
    CHECK(run_config_load(&c, NULL, TRAIN_SET, 1, err, sizeof err) == 0);
    strcpy(d.data.train, "synthetic:copy");
    CHECK(memcmp(&c, &d, sizeof c) == 0);
}

static const char FULL_INI[] =
    "; a complete FoX-Pro config\n"
    "# hash comments too\n"
    "[model]\n"
    "type = fox\n"
    "vocab_size = 512\n"
    "hidden_size = 64\n"
    "num_layers = 2\n"
    "num_heads = 4          ; inline comment\n"
    "hidden_ratio = 3.5     # inline hash comment\n"
    "norm_eps = 1e-5\n"
    "output_gate = yes\n"
    "output_norm = on\n"
    "qk_norm = TRUE\n"
    "k_shift = 1\n"
    "  v_shift = true\n" /* indented: a key of its own, not a continuation */
    "doc_mask = true\n"
    "[pe]\n"
    "type = selective\n"
    "phase_gate = true\n"
    "bias = true\n"
    "conv_act = none\n"
    "phi_proj = low_rank\n"
    "phi_rank = 8\n"
    "temp_type = tan\n"
    "[train]\n"
    "seq_len = 128\n"
    "micro_batch = 2\n"
    "steps = 5000000000\n"
    "lr = 2e-3\n"
    "warmup_frac = 0\n"
    "schedule = linear\n"
    "seed = 18446744073709551615\n"
    "val_every = 0\n"
    "val_batches = 0\n"
    "[data]\n"
    "train = data/train.bin\n"
    "val = synthetic:copy\n"
    "prefetch = 2\n"
    "[run]\n"
    "dir = runs/fox pro\n"
    "device = cuda\n"
    "threads = 4\n";

static void test_full_file(void) {
    RunConfig c;
    int rc = load_file(&c, FULL_INI, NULL, 0, NULL);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc) return;
    const ModelConfig *m = &c.model;
    CHECK(m->mixer == MIXER_FOX && m->vocab_size == 512 && m->hidden_size == 64 &&
          m->num_layers == 2);
    CHECK(m->num_heads == 4 && m->hidden_ratio == 3.5 && m->norm_eps == 1e-5);
    CHECK(m->output_gate && m->output_norm && m->qk_norm && m->k_shift && m->v_shift &&
          m->doc_mask);
    CHECK(m->pe.kind == PE_SELECTIVE && m->pe.phase_gate && m->pe.bias &&
          m->pe.conv_act == ACT_NONE);
    CHECK(m->pe.phi_proj == PHI_LOW_RANK && m->pe.phi_rank == 8 && m->pe.temp_type == TEMP_TAN);
    CHECK(m->pe.temp_theta == 0.995);
    CHECK(c.train.seq_len == 128 && m->max_seq_len == 128 && c.train.micro_batch == 2);
    CHECK(c.train.steps == 5000000000LL && c.train.lr == 2e-3 && c.train.warmup_frac == 0);
    CHECK(c.train.schedule == SCHEDULE_LINEAR);
    CHECK(c.train.seed == UINT64_MAX && c.train.val_every == 0 && c.train.val_batches == 0);
    CHECK(!strcmp(c.data.train, "data/train.bin") && !strcmp(c.data.val, "synthetic:copy"));
    CHECK(c.data.prefetch == 2 && !strcmp(c.run.dir, "runs/fox pro") &&
          !strcmp(c.run.device, "cuda"));
    CHECK(c.run.threads == 4);
    /* Untouched keys keep their defaults. */
    CHECK(c.train.beta1 == 0.9 && c.train.grad_clip == 1.0 && m->head_dim == 128);

    /* A value longer than libinih's default 200-character line, and line counting after it. */
    char text[2048], path[701];
    memset(path, 'p', 700);
    path[700] = '\0';
    snprintf(text, sizeof text, "[data]\ntrain = %s\n\n[train]\nlrr = 1\n", path);
    const char *file;
    CHECK(load_file(&c, text, NULL, 0, &file) == -1);
    CHECK_MSG(strstr(err, ":5: unknown key 'train.lrr'"), "%s", err);
    snprintf(text, sizeof text, "[data]\ntrain = %s\n", path);
    CHECK(load_file(&c, text, NULL, 0, NULL) == 0 && !strcmp(c.data.train, path));

    /* A file that does not exist. */
    CHECK(run_config_load(&c, "/nonexistent/rotor.ini", NULL, 0, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "/nonexistent/rotor.ini") && strstr(err, "No such file"), "%s", err);
}

static void test_set_overrides(void) {
    RunConfig c;
    const char *sets[] = {"train.lr = 5e-4",       "model.type=gated_deltanet",
                          "data.train=tokens.bin", "train.steps=7",
                          "train.steps=9",         "run.dir=x y"};
    CHECK(load_file(&c, "[train]\nlr = 2e-3\nsteps = 3\n", sets, 6, NULL) == 0);
    CHECK(c.train.lr == 5e-4 && c.model.mixer == MIXER_GDN && c.train.steps == 9);
    CHECK(!strcmp(c.data.train, "tokens.bin") && !strcmp(c.run.dir, "x y"));

    expect_error(NULL, "train.lrr=1e-3", "--set 'train.lrr=1e-3'", "unknown key 'train.lrr'",
                 "did you mean 'train.lr'?", NULL);
    expect_error(NULL, "lr=1e-3", "--set 'lr=1e-3'", "names no section", "did you mean 'train.lr'?",
                 NULL);
    expect_error(NULL, "train.lr", "--set 'train.lr'", "expected section.key=value", NULL);
    expect_error(NULL, "train.lr=fast", "--set", "train.lr = 'fast'", "expected a number > 0",
                 NULL);
    /* A string the written INI could not give back (an inline comment). */
    expect_error(NULL, "data.train=a ;b", "data.train = 'a ;b'", NULL);
    /* ... or one that starts a comment where "key = " is written before it (found by fuzzing;
     * inih reads "dir =;x" as ";x" but "dir = ;x" as empty). */
    expect_error(NULL, "run.dir=;x", "run.dir = ';x'", NULL);
    expect_error("[run]\ndir =#x\n", NULL, "run.dir = '#x'", NULL);
    CHECK(load_file(&c, "[run]\ndir = a;b#c\n", TRAIN_SET, 1, NULL) == 0 &&
          !strcmp(c.run.dir, "a;b#c"));
}

static void test_unknown_key(void) {
    RunConfig c;
    const char *path;
    CHECK(load_file(&c, "[train]\nsteps = 10\n\nlrr = 3e-4\n", TRAIN_SET, 1, &path) == -1);
    char where[128];
    snprintf(where, sizeof where, "%s:4:", path);
    CHECK_MSG(strstr(err, where), "message '%s' lacks '%s'", err, where);
    CHECK_MSG(strstr(err, "lrr") && strstr(err, "did you mean 'train.lr'?"), "%s", err);

    /* Right name, wrong section; max_seq_len is not a key but seq_len is. */
    expect_error("[model]\nseq_len = 64\n", NULL, "test.ini:2:", "did you mean 'train.seq_len'?",
                 NULL);
    expect_error("[model]\nmax_seq_len = 64\n", NULL, "did you mean 'train.seq_len'?", NULL);
    expect_error("[train]\nwarmup = 0.1\n", NULL, "did you mean 'train.warmup_frac'?", NULL);
    expect_error("[train]\nLR = 0.1\n", NULL, "did you mean 'train.lr'?", NULL);
    expect_error("[train]\nfrobnicate = 1\n", NULL, "unknown key 'train.frobnicate'", "--help",
                 NULL);
    expect_error("lr = 1\n[train]\n", NULL, "test.ini:1:", "before any [section]", "'train.lr'",
                 NULL);
}

static void test_unknown_section(void) {
    expect_error("[trian]\nlr = 1e-3\n", NULL, "test.ini:2:", "unknown section [trian]",
                 "did you mean [train]?", NULL);
    expect_error("[model]\n[optimizer]\nlr = 1\n", NULL, "unknown section [optimizer]",
                 "[model] [pe] [train] [data] [run]", NULL);
}

static void test_wrong_types(void) {
    expect_error("[train]\nsteps = abc\n", NULL, "test.ini:2:", "train.steps = 'abc'", "integer",
                 NULL);
    expect_error("[train]\nseq_len = 12abc\n", NULL, "train.seq_len = '12abc'", "integer from 1",
                 NULL);
    expect_error("[train]\nseq_len = -5\n", NULL, "train.seq_len = '-5'", NULL);
    expect_error("[train]\nseq_len = 0\n", NULL, "train.seq_len = '0'", NULL);
    expect_error("[model]\nhidden_size = 99999999999\n", NULL, "model.hidden_size", "2147483647",
                 NULL);
    expect_error("[train]\nseed = -1\n", NULL, "train.seed = '-1'", NULL);
    expect_error("[run]\nthreads = -1\n", NULL, "run.threads = '-1'", "from 0", NULL);
    expect_error("[run]\nbucket_mb = 0\n", NULL, "run.bucket_mb = '0'", "> 0", NULL);
    expect_error("[train]\nlr = 1e999\n", NULL, "train.lr = '1e999'", NULL);
    expect_error("[train]\nlr = nan\n", NULL, "train.lr = 'nan'", NULL);
    expect_error("[train]\nlr = 0\n", NULL, "train.lr = '0'", "> 0", NULL);
    expect_error("[train]\nlr_min = -1e-4\n", NULL, "train.lr_min", ">= 0", NULL);
    expect_error("[train]\nwarmup_frac = 1\n", NULL, "train.warmup_frac = '1'", "[0, 1)", NULL);
    expect_error("[train]\nbeta2 = 1.0\n", NULL, "train.beta2", "[0, 1)", NULL);
    expect_error("[train]\ngrad_clip = -1\n", NULL, "train.grad_clip", NULL);
    expect_error("[train]\nmax_bad_steps = 0\n", NULL, "train.max_bad_steps", NULL);
    expect_error("[pe]\nphi_rank = 0\n", NULL, "pe.phi_rank", NULL);
    expect_error("[model]\nshort_conv = maybe\n", NULL, "model.short_conv = 'maybe'", "boolean",
                 NULL);
    expect_error("[model]\ntype = mamba\n", NULL, "model.type = 'mamba'",
                 "one of gla, gated_deltanet, fox", NULL);
    expect_error("[run]\ndevice = tpu\n", NULL, "run.device = 'tpu'", "one of cpu, cuda", NULL);
    expect_error("[train]\nschedule = step\n", NULL, "test.ini:2:", "train.schedule = 'step'",
                 "one of cosine, linear, constant", NULL);
    expect_error("[model\ntype = gla\n", NULL, "test.ini:1:", "cannot parse", NULL);
    /* Accepted spellings. */
    RunConfig c;
    const char *sets[] = {"data.train=x", "train.lr=.5e-2", "model.type=FOX", "train.steps=+12"};
    CHECK(run_config_load_string(&c, NULL, NULL, sets, 4, err, sizeof err) == 0);
    CHECK(c.train.lr == 5e-3 && c.model.mixer == MIXER_FOX && c.train.steps == 12);
}

static void test_cross_key_validation(void) {
    expect_error("[train]\nval_every = 10\nval_batches = 0\n", "data.train=x", "train.val_batches",
                 "train.val_every", NULL);
    expect_error("[data]\nprefetch = 0\n", "data.train=x", "data.prefetch", "0", NULL);
    expect_error("[model]\nvocab_size = 100\nbos_id = 100\n", "data.train=x", "model.bos_id",
                 "model.vocab_size", NULL);
    expect_error("[model]\nvocab_size = 100\neos_id = 200\n", "data.train=x", "model.eos_id", NULL);
    expect_error("[data]\nval = x\n", NULL, "test.ini", "data.train is required", NULL);
}

static void test_duplicate_key(void) {
    expect_error("[train]\nlr = 1e-3\n[model]\ntype = gla\n[train]\nlr = 2e-3\n", "data.train=x",
                 "test.ini:6:", "train.lr is set twice", "line 2", NULL);
}

static void test_impossible_shapes(void) {
    const char *set = "data.train=x";
    expect_error("[model]\ntype = fox\nhidden_size = 100\nnum_heads = 3\n", set,
                 "test.ini with --set overrides", "model.num_heads", "model.hidden_size", NULL);
    expect_error("[model]\ntype = gla\nhidden_size = 10\nexpand_k = 0.33\n", set, "model.expand_k",
                 NULL);
    expect_error("[model]\ntype = gla\nhidden_size = 64\nnum_heads = 3\n", set, "model.num_heads",
                 NULL);
    expect_error("[model]\ntype = fox\nhidden_size = 96\nnum_heads = 32\n[pe]\ntype = rope\n", set,
                 "pe.type", "even", NULL);
    /* Widths that would overflow an int (found by fuzzing: a huge hidden_ratio). */
    expect_error("[model]\nhidden_ratio = 1e40\n", set, "model.hidden_ratio", "2^24", NULL);
    expect_error("[model]\ntype = gla\nexpand_k = 1e30\n", set, "model.expand_k", "2^24", NULL);
    expect_error("[model]\ntype = gated_deltanet\nkey_head_dim = 2000000000\n", set,
                 "model.num_heads", "2^24", NULL);
    expect_error("[model]\nintermediate_size = 2000000000\n", set, "model.intermediate_size", NULL);
    /* The block keys (docs/models.md §block-dropout-bidirectional): a probability, a reverse scan
     * only where there is one and the head reads whole sequences. */
    expect_error("[model]\ndropout = 1\n", set, "model.dropout", NULL);
    expect_error("[model]\ntype = gla\nbidirectional = true\nhead = classifier\n", set,
                 "model.bidirectional", "model.type = gla does not read it", "lru and rotrnn",
                 NULL);
    expect_error("[model]\ntype = lru\nbidirectional = true\n", set, "model.bidirectional",
                 "model.head = classifier", NULL);
    expect_error("[model]\nblock = postnorm\n", set, "model.block = 'postnorm'", "prenorm, lra",
                 NULL);
    expect_error("[model]\ntype = gla\nmixers = base_conv gla\nbase_conv_kernel = 5\n", set,
                 "model.base_conv_kernel = 5", "1 to 4 taps", NULL);
    expect_error("[model]\ntype = gla\nbase_conv_kernel = 0\n", set, "model.base_conv_kernel",
                 NULL);
    expect_error("[model]\ntype = gla\nmixers = base_conv\n", set,
                 "model.mixers = \"base_conv\" has no gla layer", NULL);
    expect_error("[model]\ntype = gla\nmixers = conv gla\n", set,
                 "\"conv\" is neither base_conv nor model.type", NULL);
    /* The same shapes are fine without a rotary embedding. */
    RunConfig c;
    const char *ok = "[model]\ntype = fox\nhidden_size = 96\nnum_heads = 32\n[data]\ntrain = x\n";
    CHECK_MSG(run_config_load_string(&c, ok, "ok.ini", NULL, 0, err, sizeof err) == 0, "%s", err);
    CHECK(c.model.num_heads == 32);
}

static void test_temp_theta_default(void) {
    RunConfig c;
    const char *tan[] = {"data.train=x", "pe.type=selective", "pe.temp_type=tan"};
    CHECK(run_config_load_string(&c, NULL, NULL, tan, 3, err, sizeof err) == 0);
    CHECK(c.model.pe.temp_theta == 0.995);
    CHECK(run_config_load_string(&c, NULL, NULL, tan, 2, err, sizeof err) == 0);
    CHECK(c.model.pe.temp_theta == 500000);
    /* Given explicitly (before temp_type in the file) it is kept. */
    CHECK(run_config_load_string(&c, "[pe]\ntemp_theta = 0.9\ntemp_type = tan\n", "t.ini", tan, 1,
                                 err, sizeof err) == 0);
    CHECK(c.model.pe.temp_theta == 0.9);
    CHECK(run_config_load_string(&c, "[pe]\ntemp_theta = 10000\n", "t.ini", tan, 1, err,
                                 sizeof err) == 0);
    CHECK(c.model.pe.temp_theta == 10000);
    /* Explicit values must suit the temp_type. */
    expect_error("[pe]\ntemp_type = tan\n", "pe.temp_theta=2", "pe.temp_theta = 2", "(0, 1)", "tan",
                 NULL);
    expect_error("[pe]\ntemp_theta = 0.5\n[data]\ntrain = x\n", NULL, "pe.temp_theta = 0.5", ">= 1",
                 NULL);
}

static void round_trip(const RunConfig *c);

/* train.keep_best: val_accuracy by default for classification runs with validations, none
 * otherwise; explicit values are kept, the resolved one round trips through rotor.ini. */
static void test_keep_best_default(void) {
    RunConfig c;
    const char *listops[] = {"data.train=task", "task.type=listops", "train.val_every=0"};
    CHECK_MSG(run_config_load_string(&c, NULL, NULL, listops, 2, err, sizeof err) == 0, "%s", err);
    CHECK(c.train.keep_best == KEEP_BEST_VAL_ACCURACY && run_config_classifies(&c));
    round_trip(&c);
    CHECK(run_config_load_string(&c, NULL, NULL, listops, 3, err, sizeof err) == 0 &&
          c.train.keep_best == KEEP_BEST_NONE);
    const char *classifier[] = {"data.train=x", "model.head=classifier"};
    CHECK_MSG(run_config_load_string(&c, NULL, NULL, classifier, 2, err, sizeof err) == 0, "%s",
              err);
    CHECK(c.train.keep_best == KEEP_BEST_VAL_ACCURACY);
    CHECK(run_config_load_string(&c, NULL, NULL, classifier, 1, err, sizeof err) == 0);
    CHECK(c.train.keep_best == KEEP_BEST_NONE && !run_config_classifies(&c));
    /* a task section does not make a run on shards a classification run */
    const char *shards[] = {"data.train=x", "task.type=listops", "train.keep_best=val_loss"};
    CHECK(run_config_load_string(&c, NULL, NULL, shards, 2, err, sizeof err) == 0 &&
          c.train.keep_best == KEEP_BEST_NONE);
    CHECK(run_config_load_string(&c, NULL, NULL, shards, 3, err, sizeof err) == 0 &&
          c.train.keep_best == KEEP_BEST_VAL_LOSS);
    CHECK(run_config_load_string(&c, "[train]\nkeep_best = none\n", "t.ini", listops, 2, err,
                                 sizeof err) == 0);
    CHECK(c.train.keep_best == KEEP_BEST_NONE);
    round_trip(&c);
    expect_error("[data]\ntrain = x\n", "train.keep_best=val_accuracy",
                 "train.keep_best = val_accuracy", "classification runs only", NULL);
    expect_error("[train]\nval_every = 0\n[data]\ntrain = x\n", "train.keep_best=val_loss",
                 "train.keep_best = val_loss needs validations: train.val_every = 0", NULL);
    expect_error("[data]\ntrain = x\n", "train.keep_best=accuracy", "train.keep_best = 'accuracy'",
                 NULL);
}

static void round_trip(const RunConfig *c) {
    char *text = tu_ini_text(c);
    RunConfig back;
    memset(&back, 0xAB, sizeof back); /* load must not depend on the destination's contents */
    int rc = run_config_load_string(&back, text, "rotor.ini", NULL, 0, err, sizeof err);
    CHECK_MSG(rc == 0, "%s\n%s", err, text);
    CHECK_MSG(rc == 0 && memcmp(&back, c, sizeof back) == 0, "round trip differs:\n%s", text);
    free(text);
}

static void test_round_trip(void) {
    RunConfig c;
    const char *sets[] = {
        "data.train=synthetic:copy",
        "train.lr=0.1",
        "train.lr_min=3.3e-7",
        "train.schedule=constant",
        "train.weight_decay=0.30000000000000004",
        "train.seed=18446744073709551615",
        "train.steps=123456789012",
        "pe.type=selective",
        "pe.temp_type=tan",
        "pe.phi_proj=low_rank",
        "pe.conv_act=none",
        "model.type=gated_deltanet",
        "model.expand_v=2",
        "model.key_head_dim=32",
        "model.init_std=0.0123456789",
        "run.device=cuda",
        "run.dir=runs/a b",
        "data.val=",
        "data.train=x",
        "data.train=tokens"}; /* shorter strings over longer ones: no stale bytes */
    int n = (int)(sizeof sets / sizeof sets[0]);
    int rc = run_config_load_string(&c, NULL, NULL, sets, n, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc) return;
    CHECK(c.train.weight_decay == 0.30000000000000004);
    round_trip(&c);
    run_config_defaults(&c);
    strcpy(c.data.train, "t.bin");
    round_trip(&c);

    /* Every key the family and task read, canonical spelling; no other family's or task's. */
    char *text = tu_ini_text(&c);
    const char *expect[] = {"[model]\ntype = gla\n",
                            "[pe]\ntype = nope\n",
                            "[train]\nseq_len = 2048\n",
                            "[data]\ntrain = t.bin\nval =\ntokenizer =\nprefetch = 4\n",
                            "[run]\ndir = runs/default\n",
                            "\nlr = 0.001\n",
                            "\ntemp_theta = 500000\n",
                            "\nshort_conv = true\n",
                            "\nconv_act = silu\n",
                            "\nadam_eps = 1e-08\n",
                            "\nthreads = 0\n"};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        CHECK_MSG(strstr(text, expect[i]), "written INI lacks '%s':\n%s", expect[i], text);
    const char *absent[] = {"\nkey_head_dim", "\nstate_size", "\nr_min",
                            "\ngamma_min",    "\nk_shift",    "\n[task]\ntype = none\nvocab"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        CHECK_MSG(!strstr(text, absent[i]), "written INI has '%s':\n%s", absent[i], text);
    free(text);
}

/* Keys of some families or tasks only (Family.keys, TaskImpl.keys): another family's or task's
 * key is an error naming what reads it; renamed keys name their replacements; a base config
 * swept over families by --set model.type has the keys the new family does not read ignored
 * (to their defaults) with a warning; a checkpoint's saved config reads the old names. */
static void test_key_scopes(void) {
    const char *set = "data.train=x";
    expect_error("[model]\ntype = fox\nexpand_k = 0.3\n", set, "test.ini:3: model.expand_k = 0.3",
                 "model.type = fox does not read it", "gla and deltanet", NULL);
    expect_error("[model]\ntype = lru\n", "model.state_size=8", "--set 'model.state_size=8'",
                 "a key of mamba2", "model.complex_state_size", NULL);
    expect_error("[model]\ntype = rotrnn\nr_min = 0.5\n", set, "model.r_min", "model.gamma_min",
                 NULL);
    expect_error("[model]\nhead_dim = 8\n", set, "model.head_dim was renamed", "model.key_head_dim",
                 "model.value_head_dim", NULL);
    expect_error("[task]\ntype = copy\nmin_len = 3\n", set, "task.min_len was renamed",
                 "task.min_string_len", NULL);
    expect_error("[task]\ntype = mqar\nmax_depth = 3\n", set, "task.max_depth = 3",
                 "task.type = mqar", "a key of listops", NULL);
    expect_error("[model]\ntype = gla\n", "task.vocab=8", "task.vocab = 8", "task.type = none",
                 NULL);
    RunConfig c, d;
    const char *lru = "[model]\ntype = lru\ncomplex_state_size = 8\nr_min = 0.5\nmax_phase = "
                      "1\n[data]\ntrain = x\n";
    const char *to_rotrnn[] = {"model.type=rotrnn", "model.gamma_max=0.95"};
    CHECK_MSG(run_config_load_string(&c, lru, "lru.ini", to_rotrnn, 2, err, sizeof err) == 0, "%s",
              err);
    run_config_defaults(&d);
    CHECK(c.model.mixer == MIXER_ROTRNN && c.model.state_size == d.model.state_size &&
          c.model.r_min == d.model.r_min);
    CHECK(c.model.r_max == 0.95 && c.model.max_phase == 1); /* rotrnn's own keys kept */
    /* a saved config of then: every key, old names */
    const char *saved =
        "[model]\ntype = mamba2\nhead_dim = 16\nstate_size = 8\nnum_heads = 4\nexpand_k = 0.5\n"
        "[task]\ntype = none\nmin_len = 2\n[data]\ntrain = x\n";
    CHECK_MSG(run_config_load_saved(&c, saved, "rotor.ini", err, sizeof err) == 0, "%s", err);
    CHECK(c.model.head_dim == 16 && c.model.state_size == 8 && c.task.min_len == 2);
    CHECK(run_config_load_string(&c, saved, "rotor.ini", NULL, 0, err, sizeof err) != 0);
}

/* The optimizer keys, and task.type = copy_memory: train.seq_len follows delay + 2 copy_length
 * and model.vocab_size the input tokens (10) or, read as values, nnRNN's 9 outputs. */
static void test_optimizer_and_copy_memory_keys(void) {
    RunConfig c;
    const char *opt[] = {"data.train=x", "train.optimizer=rmsprop", "train.rmsprop_alpha=0.9",
                         "train.lr_orthogonal=2e-5"};
    CHECK_MSG(run_config_load_string(&c, NULL, NULL, opt, 4, err, sizeof err) == 0, "%s", err);
    CHECK(c.train.optimizer == OPTIMIZER_RMSPROP && c.train.rmsprop_alpha == 0.9 &&
          c.train.rmsprop_eps == 1e-8 && c.train.lr_orthogonal == 2e-5 &&
          c.train.weight_decay_orthogonal == 0);
    CHECK(run_config_load_string(&c, NULL, NULL, opt, 1, err, sizeof err) == 0 &&
          c.train.optimizer == OPTIMIZER_ADAMW && c.train.rmsprop_alpha == 0.99);
    expect_error(NULL, "train.optimizer=sgd", "train.optimizer = 'sgd'", "adamw, rmsprop", NULL);
    expect_error(NULL, "train.rmsprop_alpha=1", "train.rmsprop_alpha = '1'", "[0, 1)", NULL);
    const char *cm[] = {"data.train=task", "task.type=copy_memory", "task.delay=30",
                        "model.input=linear"};
    CHECK_MSG(run_config_load_string(&c, NULL, NULL, cm, 3, err, sizeof err) == 0, "%s", err);
    CHECK(c.train.seq_len == 50 && c.model.max_seq_len == 50 && c.model.vocab_size == 10 &&
          c.task.copy_length == 10 && c.task.symbols == 8);
    CHECK_MSG(run_config_load_string(&c, NULL, NULL, cm, 4, err, sizeof err) == 0, "%s", err);
    CHECK(c.train.seq_len == 50 &&
          c.model.vocab_size == 10); /* the marker's value is an input too */
    round_trip(&c);
    expect_error("[task]\ntype = copy_memory\ndelay = 30\n[data]\ntrain = task\n",
                 "train.seq_len=40", "train.seq_len = 40", "rows of 50 tokens", NULL);
    expect_error(NULL, "model.nonlinearity=modrelu", "model.nonlinearity = modrelu",
                 "model.type = gla", NULL);
    expect_error("[train]\nval_every = 0\n", "train.plateau_factor=0.5",
                 "train.plateau_factor = 0.5", "train.val_every = 0", NULL);
    expect_error("[model]\ntype = gla\nvocab_size = 50\n[data]\ntrain = task\n[task]\ntype = "
                 "chars\npath = /x\n",
                 "train.carry_state=true", "train.carry_state = true", "model.type = rnn, rnn_orth",
                 NULL);
}

static void test_help(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    run_config_print_help(f);
    fclose(f);
    const char *expect[] = {"[model]",   "model.type", "gla|gated_deltanet|fox",
                            "train.lr ", "0.001",      "pe.temp_theta",
                            "0.995",     "data.train", "run.threads",
                            "bool",      "float",      "string"};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        CHECK_MSG(strstr(buf, expect[i]), "help lacks '%s'", expect[i]);
    free(buf);
}

/* The help's default column is the key table's; each key the defaults' INI writes (the default
 * family's and task's) must hold the same value there. */
static void test_help_defaults(void) {
    char *help = NULL, *ini = NULL;
    size_t hlen = 0, ilen = 0;
    FILE *f = open_memstream(&help, &hlen);
    run_config_print_help(f);
    fclose(f);
    RunConfig d;
    run_config_defaults(&d);
    f = open_memstream(&ini, &ilen);
    run_config_write_ini(&d, f);
    fclose(f);
    int compared = 0;
    char section[32] = "";
    for (char *line = strtok(ini, "\n"); line; line = strtok(NULL, "\n")) {
        char key[64], value[256] = "";
        if (line[0] == ';' || sscanf(line, "[%31[^]]]", section) == 1 ||
            sscanf(line, "%63s = %255[^\n]", key, value) < 1)
            continue;
        char name[100], want[300];
        snprintf(name, sizeof name, "\n  %s.%s ", section, key);
        const char *h = strstr(help, name);
        CHECK_MSG(h, "help lacks %s", name + 3);
        if (!h || sscanf(h + strlen(name), "%*s %299s", want) != 1) continue;
        if (!strcmp(want, "\"\"")) want[0] = '\0';
        char *end1, *end2;
        double a = strtod(value, &end1), b = strtod(want, &end2);
        int same = (*value && !*end1 && *want && !*end2) ? a == b : !strcmp(value, want);
        CHECK_MSG(same, "%s.%s: help says %s, the defaults hold %s", section, key, want, value);
        compared++;
    }
    CHECK_MSG(compared > 60, "only %d keys compared", compared);
    free(help);
    free(ini);
}

static const TestCase tests[] = {
    {"defaults", test_defaults},
    {"full_file", test_full_file},
    {"set_overrides", test_set_overrides},
    {"unknown_key", test_unknown_key},
    {"unknown_section", test_unknown_section},
    {"wrong_types", test_wrong_types},
    {"cross_key_validation", test_cross_key_validation},
    {"duplicate_key", test_duplicate_key},
    {"impossible_shapes", test_impossible_shapes},
    {"temp_theta_default", test_temp_theta_default},
    {"keep_best_default", test_keep_best_default},
    {"round_trip", test_round_trip},
    {"key_scopes", test_key_scopes},
    {"optimizer_and_copy_memory_keys", test_optimizer_and_copy_memory_keys},
    {"help", test_help},
    {"help_defaults", test_help_defaults},
};

TH_MAIN(tests)
