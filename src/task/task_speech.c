/* Speech Commands as raw waveforms, one class per clip (task.type = speech_commands;
 * docs/classification.md "Speech Commands"; data/speech_commands.h reads the files). A row is
 * a clip's 16-bit samples s as tokens s + 32768, every task.sample_stride-th one, with the class
 * at the last position (rows are always full: short clips are padded with silence, as S4 pads
 * them). The linear input encoder reads them as values with model.input_offset = 32768 and
 * model.input_scale = 32768. Tested by the accuracy on the test split (task/classify_eval.h). */
#include <stdio.h>

#include "data/speech_commands.h"
#include "task/classify_eval.h"
#include "task/task.h"
#include "util/error.h"
#include "util/rng.h"

#define SPEECH_VOCAB 65536 /* every 16-bit sample */

typedef struct {
    TaskRows base;
    SpeechSet set;
    DataSplit split;
    uint64_t seed; /* the run's: the training order */
    int stride, T;
} SpeechRows;

static int row_length(const TaskConfig *task) {
    return (SPEECH_SAMPLES + task->sample_stride - 1) / task->sample_stride; /* S4's X[:, ::sr] */
}

/* Clip k of the set: the training split in a new order every pass (a function of the run seed
 * and the pass), validation and test in the set's fixed order. */
static void speech_row(const TaskRows *t, int64_t i, Rng *r, int32_t *tokens, int32_t *labels) {
    const SpeechRows *s = (const SpeechRows *)t;
    int64_t n = s->set.n, pass = i / n, k = i % n;
    if (s->split == SPLIT_TRAIN)
        k = rng_permute(k, n, rng_mix64(s->seed ^ rng_mix64((uint64_t)pass + 0x5EEC4ull)));
    const int16_t *x = s->set.samples + (size_t)k * SPEECH_SAMPLES;
    for (int p = 0; p < s->T; p++) {
        tokens[p] = x[(size_t)p * (size_t)s->stride] + 32768;
        labels[p] = -100;
    }
    labels[s->T - 1] = s->set.labels[k];
}

static void speech_release(TaskRows *t) { speech_set_free(&((SpeechRows *)t)->set); }

static int speech_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    const TaskConfig *task = &a->rc->task;
    int T = row_length(task);
    if (a->opt->seq_len != T)
        return rt_error(
            err, errlen, NULL,
            "train.seq_len = %d: task speech_commands with task.sample_stride = %d has rows "
            "of %d samples (leave train.seq_len out)",
            a->opt->seq_len, task->sample_stride, T);
    SpeechRows *s = rt_calloc(1, sizeof(SpeechRows));
    if (speech_load(task->path, task->words, a->opt->split, task->max_examples, &s->set, err,
                    errlen)) {
        rt_free(s);
        return -1;
    }
    s->split = a->opt->split;
    s->seed = a->opt->seed;
    s->stride = task->sample_stride;
    s->T = T;
    s->base = (TaskRows){
        .examples = s->set.n, .vocab = SPEECH_VOCAB, .row = speech_row, .release = speech_release};
    *out = &s->base;
    return 0;
}

/* train.seq_len follows task.sample_stride, model.vocab_size defaults to the 65536 sample
 * values, and the classifier has one class per word. */
static const char *speech_shape(TaskShape *s, char *msg, size_t n) {
    RunConfig *rc = s->rc;
    int T = row_length(&rc->task);
    if (s->seq_len_given && rc->train.seq_len != T) {
        snprintf(
            msg, n,
            "train.seq_len = %d: task speech_commands with task.sample_stride = %d has rows of "
            "%d samples (leave train.seq_len out)",
            rc->train.seq_len, rc->task.sample_stride, T);
        return msg;
    }
    rc->train.seq_len = T;
    if (!s->vocab_size_given) rc->model.vocab_size = SPEECH_VOCAB;
    if (rc->model.vocab_size < SPEECH_VOCAB) {
        snprintf(msg, n,
                 "model.vocab_size = %d: task speech_commands reads 16-bit samples as tokens "
                 "0..65535, so it needs at least 65536 (leave model.vocab_size out)",
                 rc->model.vocab_size);
        return msg;
    }
    const char *const *words;
    int classes = speech_words(rc->task.words, &words);
    if (rc->model.head == HEAD_CLASSIFIER && rc->model.num_classes != classes) {
        snprintf(msg, n, "model.num_classes = %d: task.words = %s has %d classes",
                 rc->model.num_classes, rc->task.words, classes);
        return msg;
    }
    return NULL;
}

static json_t *speech_evaluate(const TaskEvalArgs *a) { return classify_eval(a, a->rc->task.path); }

static const char *const speech_keys[] = {"path", "words", "sample_stride", "max_examples", NULL};

const TaskImpl task_speech_commands = {
    .name = "speech_commands",
    .keys = speech_keys,
    .flags = TASK_CLASSIFIES,
    .shape = speech_shape,
    .open = speech_open,
    .evaluate = speech_evaluate,
};
