/* task.type = copy: copying strings (Selective RoPE's Fig. 6, docs/synthetic.md): BOS, a string
 * of task.min_string_len..task.max_string_len letters, a separator, then the string again as labels
 * (data/ synth_tasks.h). Tested per length of task.eval_lengths: the fraction of strings copied
 * without an error (plotted). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/synth_tasks.h"
#include "task/task.h"
#include "task/task_score.h"
#include "util/error.h"
#include "util/plot.h"

typedef struct {
    TaskRows base;
    int min_len, max_len, T;
} CopyRows;

static void copy_row(const TaskRows *t, int64_t i, Rng *r, int32_t *tokens, int32_t *labels) {
    const CopyRows *c = (const CopyRows *)t;
    copy_train_sequence(r, c->min_len, c->max_len, c->T, tokens, labels);
}

static int copy_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    const TaskConfig *task = &a->rc->task;
    if (task->min_len > task->max_len)
        return task_fail(err, errlen, "copy",
                         "task.min_string_len is larger than task.max_string_len");
    CopyRows *c = rt_calloc(1, sizeof(CopyRows));
    c->min_len = task->min_len;
    c->max_len = task->max_len;
    c->T = a->opt->seq_len;
    c->base = (TaskRows){.vocab = COPY_VOCAB, .row = copy_row};
    *out = &c->base;
    return 0;
}

/* The test strings of one length: 2 len + 3 tokens, a stream per length. */
typedef struct {
    TaskRows base;
    uint64_t seed;
    int len;
} CopyTestRows;

static void copy_test_row(const TaskRows *t, int64_t i, Rng *r, int32_t *tokens, int32_t *labels) {
    const CopyTestRows *c = (const CopyTestRows *)t;
    Rng own;
    test_example_rng(&own, c->seed, (int64_t)c->len * 1000000 + i);
    copy_eval_sequence(&own, c->len, 2 * c->len + 3, tokens, labels);
}

static json_t *copy_evaluate(const TaskEvalArgs *a) {
    const RunConfig *rc = a->rc;
    int N = rc->task.test_examples, B = TASK_EVAL_BATCH;
    char *list = rt_strdup(rc->task.eval_lengths);
    json_t *per = json_object();
    double xs[64], ys[64];
    int n = 0;
    for (char *save = NULL, *tokn = strtok_r(list, ", ", &save); tokn && n < 64;
         tokn = strtok_r(NULL, ", ", &save)) {
        int len = atoi(tokn);
        if (len < 1) rt_die("task.eval_lengths: '%s' is not a positive length", tokn);
        CopyTestRows *rows = rt_calloc(1, sizeof(CopyTestRows));
        *rows = (CopyTestRows){{.row = copy_test_row}, rc->train.seed, len};
        TestRows t;
        test_rows_init(&t, a->m, &rows->base, rc->train.seed, 2 * len + 3);
        int right = 0;
        for (int i = 0; i < N; i += B) {
            int count = N - i < B ? N - i : B;
            RT_ASSERT(test_rows_score(&t, i, count) == (int64_t)count * (len + 1));
            for (int b = 0; b < count; b++) {
                int ok = 1;
                for (int k = 0; k < len; k++)
                    ok &= t.greedy[b * (len + 1) + k]; /* the characters, not the '.' */
                right += ok;
            }
        }
        xs[n] = len;
        ys[n++] = (double)right / N;
        json_object_set_new(per, tokn, json_real((double)right / N));
        printf("copy: length %d, string accuracy %.4f\n", len, (double)right / N);
        test_rows_close(&t);
    }
    rt_free(list);
    char *path = rt_sprintf("%s/copy_accuracy.svg", rc->run.dir), title[128];
    snprintf(title, sizeof title, "Copying: string accuracy by length (trained on %d-%d)",
             rc->task.min_len, rc->task.max_len);
    PlotSeries s = {"string accuracy", xs, ys, n};
    plot_svg(path, title, "string length", "accuracy", &s, 1, (PlotAxes){0, 1, 1});
    rt_free(path);
    return json_pack("{s:o, s:i, s:i, s:i}", "string_accuracy", per, "examples_per_length", N,
                     "train_min_len", rc->task.min_len, "train_max_len", rc->task.max_len);
}

static const char *const copy_keys[] = {"min_string_len", "max_string_len", "eval_lengths",
                                        "train_examples", "test_examples",  NULL};

const TaskImpl task_copy = {
    .name = "copy",
    .keys = copy_keys,
    .open = copy_open,
    .evaluate = copy_evaluate,
};
