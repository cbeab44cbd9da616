/* `rotor synth CONFIG.ini`: trains a model on a synthetic task ([task] section, docs/evaluation.md part
 * B) with the ordinary trainer, then evaluates the final checkpoint on the task's test
 * stream (classification tasks: also the best validation's, train.keep_best) and writes
 * RUN_DIR/synth_results.json and accuracy plots:
 *   mqar   per-example query accuracy at the training length,
 *   state  token accuracy and the prefix accuracy curve (fraction of test sequences whose
 *          first t predictions are all right) up to task.test_len,
 *   copy   string accuracy (all characters of the copy right) per length of task.eval_lengths,
 *   copy_memory  test loss against nnRNN's baseline (eval_copy_memory),
 *   chars  bits per character and next-character accuracy on the valid and test texts
 *          (eval_chars),
 *   mad_*  mad-lab's test accuracy over the scored positions (eval/mad_eval.c),
 *   seq_image, listops, text_bytes  classification accuracy on the test split
 *          (eval/classify_eval.c).
 * Predictions are argmaxes (teacher forcing: one forward pass per test batch). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classify_eval.h"
#include "config/run_config.h"
#include "data/char_text.h"
#include "data/class_task.h"
#include "data/synth_tasks.h"
#include "device/device.h"
#include "dist/dist.h"
#include "eval_run.h"
#include "mad_eval.h"
#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/text_score.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/options.h"

#define EVAL_BATCH 32

/* Generates test examples first .. first + rows - 1 at length T into tok/lab (rows x T) with
 * gen(ctx, i, tokens, labels) and scores them in one teacher-forced pass: greedy/logp get the
 * argmax flag and log-probability of every labeled position, in order. Returns their count. */
typedef void (*Generate)(const void *ctx, int64_t i, int32_t *tokens, int32_t *labels);

static int64_t score_rows(Model *m, Generate gen, const void *ctx, int64_t first, int rows, int T, int32_t *tok,
                          int32_t *lab, uint8_t *greedy, double *logp) {
    for (int b = 0; b < rows; b++) gen(ctx, first + b, tok + (size_t)b * T, lab + (size_t)b * T);
    Batch bt = {rows, T, tok, lab, NULL};
    return model_token_logprobs(m, &bt, logp, greedy);
}

typedef struct {
    const RunConfig *rc;
    MqarSpec mqar;
    CopyMemSpec copymem;
    const CharText *text;
    DataSplit split; /* chars: the text scored */
    Group group;
    int len; /* copy: string length */
} TaskCtx;

static void gen_mqar(const void *c_, int64_t i, int32_t *tok, int32_t *lab) {
    const TaskCtx *c = c_;
    Rng r;
    task_example_rng(&r, c->rc->train.seed, 1, i);
    mqar_example(&c->mqar, &r, tok, lab);
}

static void gen_state(const void *c_, int64_t i, int32_t *tok, int32_t *lab) {
    const TaskCtx *c = c_;
    Rng r;
    task_example_rng(&r, c->rc->train.seed, 1, i);
    state_example(&c->group, &r, c->rc->task.test_len, tok, lab);
}

static void gen_copy(const void *c_, int64_t i, int32_t *tok, int32_t *lab) {
    const TaskCtx *c = c_;
    Rng r;
    task_example_rng(&r, c->rc->train.seed, 1, (int64_t)c->len * 1000000 + i); /* a stream per length */
    copy_eval_sequence(&r, c->len, 2 * c->len + 3, tok, lab);
}

static void gen_copy_memory(const void *c_, int64_t i, int32_t *tok, int32_t *lab) {
    const TaskCtx *c = c_;
    Rng r;
    task_example_rng(&r, c->rc->train.seed, 1, i);
    copy_memory_example(&c->copymem, &r, tok, lab);
}

/* nnRNN's copy task: the test loss (mean cross-entropy over every position, as nnRNN's
 * training loss), the memoryless baseline it is compared with, and the accuracy on the
 * copied symbols (the last copy_length positions, as nnRNN's accuracy). */
static json_t *eval_copy_memory(Model *m, TaskCtx *c) {
    const RunConfig *rc = c->rc;
    int T = copy_memory_row(&c->copymem), L = c->copymem.length, N = rc->task.test_examples;
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T), *lab = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T);
    uint8_t *g = rt_malloc((size_t)EVAL_BATCH * T);
    double *lp = rt_malloc(sizeof(double) * (size_t)EVAL_BATCH * T), nll = 0;
    int64_t right = 0;
    for (int i = 0; i < N; i += EVAL_BATCH) {
        int rows = N - i < EVAL_BATCH ? N - i : EVAL_BATCH;
        RT_ASSERT(score_rows(m, gen_copy_memory, c, i, rows, T, tok, lab, g, lp) == (int64_t)rows * T);
        for (int b = 0; b < rows; b++)
            for (int p = 0; p < T; p++) {
                nll -= lp[b * T + p];
                if (p >= T - L) right += g[b * T + p];
            }
    }
    double loss = nll / ((double)N * T), base = copy_memory_baseline(&c->copymem), acc = (double)right / ((double)N * L);
    printf("copy_memory: test loss %.6f (baseline %.6f), accuracy on the copied symbols %.4f (delay %d, copy length %d, alphabet %d, %d test rows)\n",
           loss, base, acc, c->copymem.delay, L, c->copymem.symbols, N);
    rt_free(tok);
    rt_free(lab);
    rt_free(g);
    rt_free(lp);
    return json_pack("{s:f, s:f, s:f, s:i, s:i, s:i, s:i}", "test_loss", loss, "baseline_loss", base, "accuracy", acc,
                     "delay", c->copymem.delay, "copy_length", L, "symbols", c->copymem.symbols, "examples", N);
}

static void gen_chars(const void *c_, int64_t i, int32_t *tok, int32_t *lab) {
    const TaskCtx *c = c_;
    char_text_row(c->text, c->split, c->rc->train.seq_len, c->rc->train.seed, i, tok, lab);
}

/* Every symbol of the split after its first scored once: in windows of train.seq_len that each
 * start from the zero state, or with train.carry_state as task.eval_streams streams whose
 * windows carry the state (train/text_score.h). Mean loss, bits per character (loss / ln 2),
 * accuracy. */
static json_t *score_text(Model *m, TaskCtx *c, DataSplit split, const char *name) {
    const RunConfig *rc = c->rc;
    int T = rc->train.seq_len;
    c->split = split;
    TextScore sc = {0, 0, 0};
    if (rc->train.carry_state) {
        if (!char_text_stream_windows(c->text, split, rc->task.eval_streams, T))
            rt_die("task.eval_streams = %d: the %s text holds fewer symbols than its streams + 1", rc->task.eval_streams, name);
        text_score_streams(m, c->text, split, T, rc->task.eval_streams, 0, rc->task.eval_streams, &sc);
    } else {
        int64_t rows = char_text_rows(c->text, split, T);
        int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T), *lab = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T);
        uint8_t *g = rt_malloc((size_t)EVAL_BATCH * T);
        double *lp = rt_malloc(sizeof(double) * (size_t)EVAL_BATCH * T);
        for (int64_t i = 0; i < rows; i += EVAL_BATCH) {
            int b = rows - i < EVAL_BATCH ? (int)(rows - i) : EVAL_BATCH;
            int64_t k = score_rows(m, gen_chars, c, i, b, T, tok, lab, g, lp);
            for (int64_t j = 0; j < k; j++) sc.nll -= lp[j], sc.right += g[j];
            sc.labels += k;
        }
        rt_free(tok);
        rt_free(lab);
        rt_free(g);
        rt_free(lp);
    }
    int64_t n = sc.labels;
    double loss = sc.nll / (double)n, bpc = loss / M_LN2, acc = (double)sc.right / (double)n;
    printf("chars %s: loss %.5f, %.4f bits per character, accuracy %.4f over %lld characters%s\n", name, loss, bpc, acc,
           (long long)n, rc->train.carry_state ? " (carried states)" : "");
    json_t *res = json_pack("{s:f, s:f, s:f, s:I}", "loss", loss, "bpc", bpc, "accuracy", acc, "characters", (json_int_t)n);
    if (rc->train.carry_state) json_object_set_new(res, "streams", json_integer(rc->task.eval_streams));
    return res;
}

/* Character-level language modelling: the valid and test texts scored, and the vocabulary. */
static json_t *eval_chars(Model *m, TaskCtx *c) {
    char err[2048];
    CharText *t = char_text_open(&c->rc->task, err, sizeof err);
    if (!t) rt_die("%s", err);
    c->text = t;
    json_t *valid = score_text(m, c, SPLIT_VAL, "valid"), *test = score_text(m, c, SPLIT_TEST, "test");
    json_t *res = json_pack("{s:o, s:o, s:s, s:i, s:o}", "valid", valid, "test", test, "text_format",
                            c->rc->task.text_format, "vocab_size", char_text_vocab_size(t), "vocab", char_text_vocab_json(t));
    char_text_free(t);
    return res;
}

#define MQAR_BINS 16

/* Per-example accuracy over its D queries, averaged; and the accuracy of single queries by
 * their distance from the key they ask for (plotted). */
static json_t *eval_mqar(Model *m, TaskCtx *c, const char *run_dir) {
    const RunConfig *rc = c->rc;
    int T = rc->train.seq_len, D = rc->task.num_kv_pairs, N = rc->task.test_examples;
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T), *lab = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T);
    uint8_t *g = rt_malloc((size_t)EVAL_BATCH * D);
    double *lp = rt_malloc(sizeof(double) * (size_t)EVAL_BATCH * D), sum = 0;
    int64_t bin_right[MQAR_BINS] = {0}, bin_n[MQAR_BINS] = {0};
    for (int i = 0; i < N; i += EVAL_BATCH) {
        int rows = N - i < EVAL_BATCH ? N - i : EVAL_BATCH;
        RT_ASSERT(score_rows(m, gen_mqar, c, i, rows, T, tok, lab, g, lp) == (int64_t)rows * D);
        for (int b = 0; b < rows; b++) {
            const int32_t *x = tok + (size_t)b * T, *y = lab + (size_t)b * T;
            int right = 0, q = 0;
            for (int p = 0; p < T; p++) {
                if (y[p] == -100) continue;
                int key_pos = 0;
                while (x[key_pos] != x[p]) key_pos += 2; /* the context holds k1 v1 ... kD vD */
                int bin = (int)((int64_t)(p - key_pos) * MQAR_BINS / T);
                bin_right[bin] += g[b * D + q];
                bin_n[bin]++;
                right += g[b * D + q++];
            }
            sum += (double)right / D;
        }
    }
    double xs[MQAR_BINS], ys[MQAR_BINS];
    int nb = 0;
    json_t *jd = json_array();
    for (int k = 0; k < MQAR_BINS; k++) {
        if (!bin_n[k]) continue;
        xs[nb] = (k + 0.5) * T / MQAR_BINS;
        ys[nb] = (double)bin_right[k] / (double)bin_n[k];
        json_array_append_new(jd, json_pack("{s:f, s:f, s:f, s:I}", "from", (double)k * T / MQAR_BINS, "to",
                                            (double)(k + 1) * T / MQAR_BINS, "accuracy", ys[nb], "queries",
                                            (json_int_t)bin_n[k]));
        nb++;
    }
    char *path = rt_sprintf("%s/mqar_accuracy.svg", run_dir), title[128];
    snprintf(title, sizeof title, "MQAR (L = %d, D = %d): query accuracy by distance from its key", T, D);
    PlotSeries s = {"query accuracy", xs, ys, nb};
    plot_svg(path, title, "query position - key position", "accuracy", &s, 1, PLOT_FRACTION);
    rt_free(path);
    rt_free(tok);
    rt_free(lab);
    rt_free(g);
    rt_free(lp);
    printf("mqar: accuracy %.4f over %d test examples (L = %d, D = %d, V = %d)\n", sum / N, N, T, D, rc->task.vocab);
    return json_pack("{s:f, s:i, s:i, s:i, s:i, s:o}", "accuracy", sum / N, "examples", N, "seq_len", T,
                     "num_kv_pairs", D, "vocab", rc->task.vocab, "accuracy_by_distance", jd);
}

/* Sequences are BOS + group elements: element t (1-based) sits at token t. */
static json_t *eval_state(Model *m, TaskCtx *c, const char *run_dir) {
    const RunConfig *rc = c->rc;
    int T = rc->task.test_len, E = T - 1, N = rc->task.test_examples, train_E = rc->train.seq_len - 1;
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T), *lab = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T);
    uint8_t *g = rt_malloc((size_t)EVAL_BATCH * E);
    double *lp = rt_malloc(sizeof(double) * (size_t)EVAL_BATCH * E);
    int64_t *first_wrong = rt_calloc((size_t)E + 1, sizeof(int64_t)); /* histogram of the first wrong element */
    int64_t right = 0;
    for (int i = 0; i < N; i += EVAL_BATCH) {
        int rows = N - i < EVAL_BATCH ? N - i : EVAL_BATCH;
        RT_ASSERT(score_rows(m, gen_state, c, i, rows, T, tok, lab, g, lp) == (int64_t)rows * E);
        for (int b = 0; b < rows; b++) {
            int fw = E;
            for (int t = 0; t < E; t++) {
                right += g[b * E + t];
                if (!g[b * E + t] && fw == E) fw = t;
            }
            first_wrong[fw]++;
        }
    }
    /* prefix accuracy at t: the sequences whose first t elements are all predicted right */
    double *curve = rt_malloc(sizeof(double) * (size_t)E), *xs = rt_malloc(sizeof(double) * (size_t)E);
    int64_t still = N;
    json_t *jc = json_array();
    for (int t = 1; t <= E; t++) {
        still -= first_wrong[t - 1];
        curve[t - 1] = (double)still / N;
        xs[t - 1] = t;
        json_array_append_new(jc, json_real(curve[t - 1]));
    }
    double tok_acc = (double)right / ((double)N * E), at_train = curve[(train_E < E ? train_E : E) - 1], at_test = curve[E - 1];
    printf("state %s: token accuracy %.4f; sequences right up to t = %d: %.4f, up to t = %d: %.4f (%d test sequences)\n",
           rc->task.group, tok_acc, train_E, at_train, E, at_test, N);
    char *path = rt_sprintf("%s/prefix_accuracy.svg", run_dir), title[128];
    snprintf(title, sizeof title, "%s word problems: test sequences right up to t (trained at %d)", rc->task.group, train_E);
    PlotSeries s = {"prefix accuracy", xs, curve, E};
    plot_svg(path, title, "t (group elements)", "fraction of sequences", &s, 1, PLOT_FRACTION);
    rt_free(path);
    json_t *res = json_pack("{s:s, s:f, s:i, s:f, s:i, s:f, s:i, s:o}", "group", rc->task.group, "token_accuracy", tok_acc,
                            "train_len", train_E, "prefix_accuracy_train_len", at_train, "test_len", E,
                            "prefix_accuracy_test_len", at_test, "examples", N, "prefix_accuracy", jc);
    rt_free(tok);
    rt_free(lab);
    rt_free(g);
    rt_free(lp);
    rt_free(first_wrong);
    rt_free(curve);
    rt_free(xs);
    return res;
}

static json_t *eval_copy(Model *m, TaskCtx *c, const char *run_dir) {
    const RunConfig *rc = c->rc;
    int N = rc->task.test_examples;
    char *list = rt_strdup(rc->task.eval_lengths);
    json_t *per = json_object();
    double xs[64], ys[64];
    int n = 0;
    for (char *save = NULL, *tokn = strtok_r(list, ", ", &save); tokn && n < 64; tokn = strtok_r(NULL, ", ", &save)) {
        int len = atoi(tokn);
        if (len < 1) rt_die("task.eval_lengths: '%s' is not a positive length", tokn);
        c->len = len;
        int T = 2 * len + 3;
        int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T), *lab = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T);
        uint8_t *g = rt_malloc((size_t)EVAL_BATCH * (len + 1));
        double *lp = rt_malloc(sizeof(double) * (size_t)EVAL_BATCH * (len + 1));
        int right = 0;
        for (int i = 0; i < N; i += EVAL_BATCH) {
            int rows = N - i < EVAL_BATCH ? N - i : EVAL_BATCH;
            RT_ASSERT(score_rows(m, gen_copy, c, i, rows, T, tok, lab, g, lp) == (int64_t)rows * (len + 1));
            for (int b = 0; b < rows; b++) {
                int ok = 1;
                for (int k = 0; k < len; k++) ok &= g[b * (len + 1) + k]; /* the characters, not the '.' */
                right += ok;
            }
        }
        xs[n] = len;
        ys[n++] = (double)right / N;
        json_object_set_new(per, tokn, json_real((double)right / N));
        printf("copy: length %d, string accuracy %.4f\n", len, (double)right / N);
        rt_free(tok);
        rt_free(lab);
        rt_free(g);
        rt_free(lp);
    }
    rt_free(list);
    char *path = rt_sprintf("%s/copy_accuracy.svg", run_dir), title[128];
    snprintf(title, sizeof title, "Copying: string accuracy by length (trained on %d-%d)", rc->task.min_len, rc->task.max_len);
    PlotSeries s = {"string accuracy", xs, ys, n};
    plot_svg(path, title, "string length", "accuracy", &s, 1, (PlotAxes){0, 1, 1});
    rt_free(path);
    return json_pack("{s:o, s:i, s:i, s:i}", "string_accuracy", per, "examples_per_length", N, "train_min_len",
                     rc->task.min_len, "train_max_len", rc->task.max_len);
}

/* The validation metrics.jsonl logged at `step`: {"val_loss", "val_accuracy"}, null where
 * absent. */
static json_t *logged_validation(const char *run_dir, int64_t step) {
    json_t *res = json_pack("{s:n, s:n}", "val_loss", "val_accuracy");
    char *path = rt_sprintf("%s/metrics.jsonl", run_dir);
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    while (f && getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        if (j && json_integer_value(json_object_get(j, "step")) == step) {
            const char *key;
            json_t *v;
            json_object_foreach(res, key, v) {
                json_t *x = json_object_get(j, key);
                if (json_is_number(x)) json_object_set(res, key, x);
            }
        }
        json_decref(j);
    }
    free(line);
    if (f) fclose(f);
    rt_free(path);
    return res;
}

/* A classification checkpoint scored on the test split, printed as one line starting with
 * `what`: {"checkpoint", "step", "val_loss", "val_accuracy" (as logged at its step),
 * "test_accuracy"}, and in *metrics classify_eval's metrics. */
static json_t *classify_checkpoint(const RunConfig *rc, const Backend *be, const char *ckpt, const char *what,
                                   json_t **metrics) {
    char err[2048], which[256];
    TrainerState st;
    if (checkpoint_read_state(ckpt, &st, err, sizeof err)) rt_die("%s", err);
    json_decref(st.data_state);
    Model *m = checkpoint_load_model(ckpt, be, err, sizeof err);
    if (!m) rt_die("%s", err);
    if (st.best.metric != KEEP_BEST_NONE && st.best.step == st.step)
        snprintf(which, sizeof which, "%s checkpoint (step %lld, %s %.4f)", what, (long long)st.step,
                 run_config_keep_best_name(st.best.metric), st.best.value);
    else
        snprintf(which, sizeof which, "%s checkpoint (step %lld)", what, (long long)st.step);
    *metrics = classify_eval(m, rc, which);
    model_free(m);
    json_t *res = json_pack("{s:s, s:I}", "checkpoint", ckpt, "step", (json_int_t)st.step);
    json_t *val = logged_validation(rc->run.dir, st.step);
    json_object_update(res, val);
    json_decref(val);
    json_object_set(res, "test_accuracy", json_object_get(*metrics, "accuracy"));
    return res;
}

/* The metrics of a synthetic task's test stream for the checkpoint ckpt. */
static json_t *eval_synthetic(const RunConfig *rc, const Backend *be, const char *ckpt) {
    char err[2048];
    Model *m = checkpoint_load_model(ckpt, be, err, sizeof err);
    if (!m) rt_die("%s", err);
    TaskCtx c;
    memset(&c, 0, sizeof c);
    c.rc = rc;
    json_t *metrics;
    MadTask mt;
    if (mad_task_of(rc->task.type, &mt)) {
        MadSpec spec;
        const char *bad = mad_spec_make(&spec, mt, &rc->task, rc->train.seed);
        if (bad) rt_die("[task] %s: %s", rc->task.type, bad);
        metrics = mad_eval(m, be->act_size, &spec, &rc->task, rc->train.seed, rc->train.seq_len, rc->model.vocab_size,
                           rc->task.test_examples);
        mad_spec_free(&spec);
    } else if (!strcmp(rc->task.type, "mqar")) {
        c.mqar = (MqarSpec){rc->task.vocab, rc->train.seq_len, rc->task.num_kv_pairs, rc->task.power_a, rc->task.random_non_queries};
        metrics = eval_mqar(m, &c, rc->run.dir);
    } else if (!strcmp(rc->task.type, "chars")) {
        metrics = eval_chars(m, &c);
    } else if (!strcmp(rc->task.type, "copy_memory")) {
        c.copymem = (CopyMemSpec){rc->task.delay, rc->task.copy_length, rc->task.symbols};
        metrics = eval_copy_memory(m, &c);
    } else if (!strcmp(rc->task.type, "state")) {
        const char *bad = group_make(&c.group, rc->task.group);
        if (bad) rt_die("task.group = %s: %s", rc->task.group, bad);
        metrics = eval_state(m, &c, rc->run.dir);
        group_free(&c.group);
    } else {
        metrics = eval_copy(m, &c, rc->run.dir);
    }
    model_free(m);
    return metrics;
}

/* A run with train.keep_best and a best checkpoint: its metrics as eval_synthetic's, with the
 * step and value that chose it (nnRNN tests the model of the best validation loss); else NULL. */
static json_t *best_synthetic(const RunConfig *rc, const Backend *be) {
    char err[2048];
    char *dir = rt_sprintf("%s/checkpoints/" CHECKPOINT_BEST, rc->run.dir);
    json_t *best = NULL;
    if (rc->train.keep_best != KEEP_BEST_NONE && fs_exists(dir)) {
        TrainerState st;
        if (checkpoint_verify(dir, err, sizeof err) || checkpoint_read_state(dir, &st, err, sizeof err)) rt_die("%s", err);
        json_decref(st.data_state);
        printf("best checkpoint (step %lld, %s %.4f):\n", (long long)st.step, run_config_keep_best_name(st.best.metric),
               st.best.value);
        best = json_pack("{s:s, s:I, s:s, s:f}", "checkpoint", dir, "step", (json_int_t)st.step, "selected_by",
                         run_config_keep_best_name(rc->train.keep_best), "value", st.best.value);
        json_object_set_new(best, "metrics", eval_synthetic(rc, be, dir));
    }
    rt_free(dir);
    return best;
}

static void usage(FILE *f) {
    fprintf(f, "usage: rotor synth CONFIG.ini [--set section.key=value]...\n\n"
               "Trains on the task of the [task] section (mqar, state, copy, copy_memory, mad_*,\n"
               "seq_image, listops, text_bytes, chars; see `rotor train --help` for the keys) and\n"
               "evaluates the final model on the task's test split: RUN_DIR/synth_results.json and\n"
               "accuracy plots. With train.keep_best it also evaluates the checkpoint of the best\n"
               "validation (RUN_DIR/checkpoints/best) when there is one (\"best\" in the results).\n");
}

int synth_main(int argc, char **argv) {
    const char *config = NULL;
    const char *sets[258] = {"data.train=task", "data.val=task"};
    int nsets = 2;
    static const char *const known[] = {"--set", "--help", NULL};
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (opt_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if ((v = opt_value("synth", argc, argv, &i, "--set"))) {
            if (nsets == 258) rt_die("too many --set options (at most 256)");
            sets[nsets++] = v;
        } else if (argv[i][0] == '-') {
            opt_die_unknown("synth", argv[i], known);
        } else if (!config) {
            config = argv[i];
        } else {
            rt_die("unexpected argument '%s': give one CONFIG.ini", argv[i]);
        }
    }
    if (!config) {
        usage(stderr);
        rt_die("missing CONFIG.ini");
    }
    RunConfig rc;
    char err[2048];
    if (run_config_load(&rc, config, sets, nsets, err, sizeof err)) rt_die("%s", err);
    if (!strcmp(rc.task.type, "none")) rt_die("%s: rotor synth needs a [task] section (task.type = mqar, state, copy, copy_memory, mad_*, seq_image, listops, text_bytes or chars)", config);
    train_run(&rc, NULL);
    if (dist_rank() != 0) return 0;
    char *ckpt = checkpoint_find_latest(rc.run.dir);
    if (!ckpt) rt_die("%s: no checkpoint after training", rc.run.dir);
    const Backend *be = backend_select(rc.run.device, "run.device");
    json_t *metrics, *last = NULL, *best = NULL;
    if (!strcmp(rc.task.type, "seq_image") || !strcmp(rc.task.type, "pathfinder") || class_task_is(rc.task.type)) {
        last = classify_checkpoint(&rc, be, ckpt, "last", &metrics);
        char *best_dir = rt_sprintf("%s/checkpoints/" CHECKPOINT_BEST, rc.run.dir);
        if (rc.train.keep_best != KEEP_BEST_NONE && fs_exists(best_dir)) {
            if (checkpoint_verify(best_dir, err, sizeof err)) rt_die("%s", err);
            json_t *best_metrics;
            best = classify_checkpoint(&rc, be, best_dir, "best", &best_metrics);
            json_object_set_new(best, "selected_by", json_string(run_config_keep_best_name(rc.train.keep_best)));
            json_object_set_new(best, "metrics", best_metrics);
        }
        rt_free(best_dir);
    } else {
        metrics = eval_synthetic(&rc, be, ckpt);
        best = best_synthetic(&rc, be);
    }
    json_t *res = json_pack("{s:s, s:s, s:s, s:s, s:o}", "task", rc.task.type, "checkpoint", ckpt, "mixer",
                            mixer_name(rc.model.mixer), "pe", pe_name(rc.model.pe.kind), "metrics", metrics);
    json_object_set_new(res, "lr", json_real(rc.train.lr));
    json_object_set_new(res, "steps", json_integer(rc.train.steps));
    json_object_set_new(res, "seed", json_integer((json_int_t)rc.train.seed));
    if (last) json_object_set_new(res, "last", last);
    if (best) json_object_set_new(res, "best", best);
    char *path = rt_sprintf("%s/synth_results.json", rc.run.dir);
    char *text = json_dumps(res, JSON_INDENT(2) | JSON_REAL_PRECISION(8));
    fs_write_atomic(path, text, strlen(text));
    printf("results: %s\n", path);
    free(text);
    rt_free(path);
    json_decref(res);
    rt_free(ckpt);
    return 0;
}
