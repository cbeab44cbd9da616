/* task.type = copy_memory: nnRNN's copy task (docs/nnrnn.md): task.copy_length symbols of an
 * alphabet of task.symbols, task.delay blanks, a marker, then the symbols to recall (data/
 * synth_tasks.h). Rows hold delay + 2 copy_length tokens: train.seq_len follows. Tested by the
 * loss against the memoryless baseline and the accuracy on the copied symbols. */
#include <stdio.h>
#include <string.h>

#include "data/synth_tasks.h"
#include "task/task.h"
#include "task/task_score.h"
#include "util/error.h"

static CopyMemSpec copy_memory_spec(const TaskConfig *t) {
    return (CopyMemSpec){t->delay, t->copy_length, t->symbols};
}

typedef struct {
    TaskRows base;
    CopyMemSpec spec;
} CopyMemRows;

static void copy_memory_row_of(const TaskRows *t, int64_t i, Rng *r, int32_t *tokens,
                               int32_t *labels) {
    copy_memory_example(&((const CopyMemRows *)t)->spec, r, tokens, labels);
}

static int copy_memory_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    CopyMemSpec spec = copy_memory_spec(&a->rc->task);
    const char *bad = copy_memory_check(&spec);
    if (!bad && a->opt->seq_len != copy_memory_row(&spec))
        bad = "train.seq_len differs from task.delay + 2 task.copy_length";
    if (bad) return task_fail(err, errlen, "copy_memory", bad);
    CopyMemRows *c = rt_calloc(1, sizeof(CopyMemRows));
    c->spec = spec;
    /* the marker is an input token, embedded or read as its value: the vocabulary holds it,
     * and the output of its id is never a target */
    c->base = (TaskRows){.vocab = COPYMEM_INPUTS, .row = copy_memory_row_of};
    *out = &c->base;
    return 0;
}

/* Rows hold delay + 2 copy_length tokens: train.seq_len follows (an explicit other value is an
 * error), and model.vocab_size defaults to the 10 input tokens, or to nnRNN's 9 outputs when
 * the tokens enter as values (model.input = linear). */
static const char *copy_memory_shape(TaskShape *s, char *msg, size_t n) {
    const TaskConfig *task = &s->rc->task;
    CopyMemSpec spec = copy_memory_spec(task);
    int T = copy_memory_row(&spec);
    if (s->seq_len_given && s->rc->train.seq_len != T) {
        snprintf(msg, n,
                 "train.seq_len = %d: task copy_memory with task.delay = %d and task.copy_length = "
                 "%d has rows of %d tokens (leave train.seq_len out)",
                 s->rc->train.seq_len, task->delay, task->copy_length, T);
        return msg;
    }
    s->rc->train.seq_len = T;
    if (!s->vocab_size_given) s->rc->model.vocab_size = COPYMEM_INPUTS;
    return NULL;
}

/* The test loss (mean cross-entropy over every position, as nnRNN's training loss), the
 * memoryless baseline it is compared with, and the accuracy on the copied symbols (the last
 * copy_length positions, as nnRNN's accuracy). */
static json_t *copy_memory_evaluate(const TaskEvalArgs *a) {
    const RunConfig *rc = a->rc;
    CopyMemSpec spec = copy_memory_spec(&rc->task);
    int T = copy_memory_row(&spec), L = spec.length, N = rc->task.test_examples,
        B = TASK_EVAL_BATCH;
    TestRows t;
    test_rows_open(&t, a->m, rc, SPLIT_TEST, T);
    const uint8_t *g = t.greedy;
    const double *lp = t.logp;
    double nll = 0;
    int64_t right = 0;
    for (int i = 0; i < N; i += B) {
        int rows = N - i < B ? N - i : B;
        RT_ASSERT(test_rows_score(&t, i, rows) == (int64_t)rows * T);
        for (int b = 0; b < rows; b++)
            for (int p = 0; p < T; p++) {
                nll -= lp[b * T + p];
                if (p >= T - L) right += g[b * T + p];
            }
    }
    double loss = nll / ((double)N * T), base = copy_memory_baseline(&spec),
           acc = (double)right / ((double)N * L);
    printf("copy_memory: test loss %.6f (baseline %.6f), accuracy on the copied symbols %.4f "
           "(delay %d, copy length %d, alphabet %d, %d test rows)\n",
           loss, base, acc, spec.delay, L, spec.symbols, N);
    test_rows_close(&t);
    return json_pack("{s:f, s:f, s:f, s:i, s:i, s:i, s:i}", "test_loss", loss, "baseline_loss",
                     base, "accuracy", acc, "delay", spec.delay, "copy_length", L, "symbols",
                     spec.symbols, "examples", N);
}

static const char *const copy_memory_keys[] = {"delay",          "copy_length",   "symbols",
                                               "train_examples", "test_examples", NULL};

const TaskImpl task_copy_memory = {
    .name = "copy_memory",
    .keys = copy_memory_keys,
    .shape = copy_memory_shape,
    .open = copy_memory_open,
    .evaluate = copy_memory_evaluate,
};
