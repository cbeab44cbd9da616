/* task.type = chars: character-level language modelling on text files (nnRNN's Penn Treebank
 * characters, or any UTF-8 text; data/char_text.h, docs/nnrnn.md). Rows predict the next
 * symbol at every position; with train.carry_state the text is read as streams whose windows
 * carry the recurrent state (docs/models.md §carried-states). model.vocab_size defaults to the
 * texts' vocabulary. Tested by the loss, bits per character and accuracy on the valid and test
 * texts. */
#include <math.h>
#include <stdio.h>

#include "data/char_text.h"
#include "task/task.h"
#include "task/task_score.h"
#include "task/text_score.h"
#include "util/error.h"

typedef struct {
    TaskRows base;
    CharText *text;
    DataSplit split;
    int T, streams; /* streams: carried-state streams (DataOptions.carry_streams), 0 = windows */
    uint64_t seed;
} CharRows;

static void chars_row(const TaskRows *t, int64_t i, Rng *r, int32_t *tokens, int32_t *labels) {
    const CharRows *c = (const CharRows *)t;
    if (c->streams)
        char_text_stream_row(c->text, c->split, c->streams, c->T, i, tokens, labels);
    else
        char_text_row(c->text, c->split, c->T, c->seed, i, tokens, labels);
}

/* A checkpoint knows what its token ids mean, and refuses to resume on another vocabulary. */
static json_t *chars_vocab_json(const TaskRows *t) {
    return char_text_vocab_json(((const CharRows *)t)->text);
}

static void chars_release(TaskRows *t) { char_text_free(((CharRows *)t)->text); }

static int chars_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    CharRows *c = rt_calloc(1, sizeof(CharRows));
    c->base.row = chars_row;
    c->base.vocab_json = chars_vocab_json;
    c->base.vocab_changed =
        "the text's vocabulary differs from the one saved with the checkpoint (task.path or "
        "task.text_format changed)";
    c->base.release = chars_release;
    if (!(c->text = char_text_open(&a->rc->task, err, errlen))) {
        rt_free(c);
        return -1;
    }
    c->split = a->opt->split;
    c->T = a->opt->seq_len;
    c->seed = a->opt->seed;
    c->streams = a->opt->carry_streams;
    const char *bad = NULL;
    if (c->streams) {
        c->base.windows = char_text_stream_windows(c->text, c->split, c->streams, c->T);
        c->base.examples = c->base.windows * c->streams;
        if (!c->base.windows)
            bad = "the text holds fewer symbols than the carried-state streams (ranks x "
                  "train.micro_batch x train.grad_accum) + 1";
    } else {
        c->base.examples = char_text_rows(c->text, c->split, c->T);
        if (!c->base.examples) bad = "the training text holds fewer than train.seq_len + 1 symbols";
    }
    c->base.vocab = char_text_vocab_size(c->text);
    if (bad) {
        task_rows_free(&c->base);
        return task_fail(err, errlen, "chars", bad);
    }
    *out = &c->base;
    return 0;
}

/* model.vocab_size defaults to the texts' vocabulary (the files are read). */
static const char *chars_shape(TaskShape *s, char *msg, size_t n) {
    if (s->vocab_size_given) return NULL;
    char err[1200];
    CharText *t = char_text_open(&s->rc->task, err, sizeof err);
    if (!t) {
        snprintf(msg, n, "task.type = chars: %s", err);
        return msg;
    }
    s->rc->model.vocab_size = char_text_vocab_size(t) < 2 ? 2 : char_text_vocab_size(t);
    char_text_free(t);
    return NULL;
}

/* Every symbol of the split after its first scored once: in windows of train.seq_len that each
 * start from the zero state, or with train.carry_state as task.eval_streams streams whose
 * windows carry the state (task/text_score.h). Mean loss, bits per character (loss / ln 2),
 * accuracy. */
static json_t *score_text(Model *m, const RunConfig *rc, const CharText *text, DataSplit split,
                          const char *name) {
    int T = rc->train.seq_len, B = TASK_EVAL_BATCH;
    TextScore sc = {0, 0, 0};
    if (rc->train.carry_state) {
        if (!char_text_stream_windows(text, split, rc->task.eval_streams, T))
            rt_die("task.eval_streams = %d: the %s text holds fewer symbols than its streams + 1",
                   rc->task.eval_streams, name);
        text_score_streams(m, text, split, T, rc->task.eval_streams, 0, rc->task.eval_streams, &sc);
    } else {
        TestRows t;
        test_rows_open(&t, m, rc, split, T);
        int64_t rows = t.rows->examples;
        for (int64_t i = 0; i < rows; i += B) {
            int b = rows - i < B ? (int)(rows - i) : B;
            int64_t k = test_rows_score(&t, i, b);
            for (int64_t j = 0; j < k; j++) sc.nll -= t.logp[j], sc.right += t.greedy[j];
            sc.labels += k;
        }
        test_rows_close(&t);
    }
    int64_t n = sc.labels;
    double loss = sc.nll / (double)n, bpc = loss / M_LN2, acc = (double)sc.right / (double)n;
    printf("chars %s: loss %.5f, %.4f bits per character, accuracy %.4f over %lld characters%s\n",
           name, loss, bpc, acc, (long long)n, rc->train.carry_state ? " (carried states)" : "");
    json_t *res = json_pack("{s:f, s:f, s:f, s:I}", "loss", loss, "bpc", bpc, "accuracy", acc,
                            "characters", (json_int_t)n);
    if (rc->train.carry_state)
        json_object_set_new(res, "streams", json_integer(rc->task.eval_streams));
    return res;
}

/* The valid and test texts scored, and the vocabulary. */
static json_t *chars_evaluate(const TaskEvalArgs *a) {
    char err[2048];
    CharText *t = char_text_open(&a->rc->task, err, sizeof err);
    if (!t) rt_die("%s", err);
    json_t *valid = score_text(a->m, a->rc, t, SPLIT_VAL, "valid"),
           *test = score_text(a->m, a->rc, t, SPLIT_TEST, "test");
    json_t *res = json_pack("{s:o, s:o, s:s, s:i, s:o}", "valid", valid, "test", test,
                            "text_format", a->rc->task.text_format, "vocab_size",
                            char_text_vocab_size(t), "vocab", char_text_vocab_json(t));
    char_text_free(t);
    return res;
}

static const char *const chars_keys[] = {
    "path",           "text_format", "valid_fraction", "test_fraction", "eval_streams",
    "train_examples", NULL};

const TaskImpl task_chars = {
    .name = "chars",
    .keys = chars_keys,
    .flags = TASK_TEXT,
    .shape = chars_shape,
    .open = chars_open,
    .evaluate = chars_evaluate,
};
