#include "classify_eval.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "data/datasource.h"
#include "util/error.h"

#define EVAL_BATCH 32

json_t *classify_eval(Model *m, const RunConfig *rc) {
    int T = rc->train.seq_len, V = model_outputs(&rc->model); /* classes, or the vocabulary */
    DataOptions opt = {T, rc->train.seed, SPLIT_TEST, 0, 1, 0, 0};
    char err[2048];
    DataSource *ds = datasource_open("task", rc, &opt, err, sizeof err);
    if (!ds) rt_die("task test split: %s", err);
    /* a read test set once; a generated one (ListOps without task.path) for task.test_examples */
    int64_t N = ds->examples ? ds->examples : rc->task.test_examples, right = 0;
    /* pairs (task aan): rows 2i, 2i + 1 are one example, both labeled with its class and both
     * given its logits (docs/models.md §15): one prediction per pair, its first row's */
    int pairs = rc->model.pair != PAIR_NONE;
    int64_t examples = pairs ? N / 2 : N;
    RT_ASSERT(N > 0 && ds->next_labeled);
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T),
            *lab = rt_malloc(sizeof(int32_t) * (size_t)EVAL_BATCH * T);
    uint8_t *greedy = rt_malloc((size_t)EVAL_BATCH * T);
    double *logp = rt_malloc(sizeof(double) * (size_t)EVAL_BATCH * T);
    int64_t *class_n = rt_calloc((size_t)V, sizeof(int64_t)),
            *class_right = rt_calloc((size_t)V, sizeof(int64_t));
    for (int64_t i = 0; i < N; i += EVAL_BATCH) {
        int rows = N - i < EVAL_BATCH ? (int)(N - i) : EVAL_BATCH;
        if (ds->next_labeled(ds, tok, lab, rows, err, sizeof err)) rt_die("%s", err);
        Batch b = {rows, T, tok, lab, NULL};
        int64_t q = 0, M = model_token_logprobs(m, &b, logp, greedy);
        for (int64_t p = 0; p < (int64_t)rows * T; p++) {
            if (lab[p] == -100) continue;
            int64_t k = q++;
            RT_ASSERT(lab[p] >= 0 && lab[p] < V);
            if (pairs && k % 2) continue;
            class_n[lab[p]]++;
            class_right[lab[p]] += greedy[k];
            right += greedy[k];
        }
        RT_ASSERT(q == M && M == rows); /* one labeled position per row */
    }
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
    double acc = (double)right / (double)examples, prior = (double)class_n[top] / (double)examples;
    printf("%s: test accuracy %.4f over %lld examples (%d classes; always class %d: %.4f)\n",
           ds->desc, acc, (long long)examples, classes, top, prior);
    rt_free(tok);
    rt_free(lab);
    rt_free(greedy);
    rt_free(logp);
    rt_free(class_n);
    rt_free(class_right);
    datasource_free(ds);
    const TaskConfig *t = &rc->task;
    const char *source = t->path[0] ? t->path : !strcmp(t->type, "seq_image") ? t->images : "generated";
    return json_pack("{s:f, s:I, s:i, s:i, s:f, s:o, s:s}", "accuracy", acc, "examples", (json_int_t)examples,
                     "classes", classes, "majority_class", top, "majority_share", prior,
                     "per_class_accuracy", per, "source", source);
}
