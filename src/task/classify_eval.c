#include "task/classify_eval.h"

#include <stdint.h>
#include <stdio.h>

#include "task/task.h"
#include "task/class_score.h"
#include "util/error.h"

#define EVAL_BATCH 32

json_t *classify_eval(const TaskEvalArgs *a, const char *source) {
    Model *m = a->m;
    const RunConfig *rc = a->rc;
    const char *which = a->which;
    int T = rc->train.seq_len, V = model_outputs(&rc->model); /* classes, or the vocabulary */
    DataOptions opt = {.seq_len = T, .seed = rc->train.seed, .split = SPLIT_TEST, .world = 1};
    char err[2048];
    DataSource *ds = task_source_open(rc, &opt, err, sizeof err);
    if (!ds) rt_die("task test split: %s", err);
    /* a read test set once; a generated one (ListOps without task.path) for task.test_examples */
    int64_t N = ds->examples ? ds->examples : rc->task.test_examples;
    /* pairs (task aan): rows 2i, 2i + 1 are one example, both labeled with its class and both
     * given its logits (docs/models.md §classification), so counting both rows gives the pairs'
     * accuracy, per class and overall; the examples are the pairs */
    int64_t examples = rc->model.pair != PAIR_NONE ? N / 2 : N;
    RT_ASSERT(N > 0 && ds->next_labeled);
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T),
            *lab = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T);
    ClassScore sc;
    class_score_init(&sc, V);
    for (int64_t i = 0; i < N; i += EVAL_BATCH) {
        int rows = N - i < EVAL_BATCH ? (int)(N - i) : EVAL_BATCH;
        if (ds->next_labeled(ds, tok, lab, rows, err, sizeof err)) rt_die("%s", err);
        Batch b = {rows, T, tok, lab, NULL};
        class_score_batch(&sc, m, &b);
    }
    const int64_t *class_n = sc.class_rows, *class_right = sc.class_right;
    json_t *per = json_array();
    int classes = 0;
    for (int c = 0; c < V; c++)
        if (class_n[c]) classes = c + 1;
    for (int c = 0; c < classes; c++)
        json_array_append_new(
            per, class_n[c] ? json_real((double)class_right[c] / (double)class_n[c]) : json_null());
    int top = 0; /* the majority class: the accuracy of always answering it */
    for (int c = 1; c < classes; c++)
        if (class_n[c] > class_n[top]) top = c;
    double acc = (double)sc.right / (double)N, prior = (double)class_n[top] / (double)N;
    printf("%s%s%s: test accuracy %.4f over %lld examples (%d classes; always class %d: %.4f)\n",
           which, *which ? ", " : "", ds->desc, acc, (long long)examples, classes, top, prior);
    rt_free(tok);
    rt_free(lab);
    class_score_free(&sc);
    datasource_free(ds);
    if (!source[0]) source = "generated";
    return json_pack("{s:f, s:I, s:i, s:i, s:f, s:o, s:s}", "accuracy", acc, "examples",
                     (json_int_t)examples, "classes", classes, "majority_class", top,
                     "majority_share", prior, "per_class_accuracy", per, "source", source);
}
