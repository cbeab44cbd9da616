#include "task/task_score.h"

#include <stdio.h>

#include "data/synth_tasks.h"
#include "util/error.h"

void test_rows_init(TestRows *t, Model *m, TaskRows *rows, uint64_t seed, int T) {
    size_t cells = (size_t)TASK_EVAL_BATCH * T;
    *t = (TestRows){m,
                    rows,
                    seed,
                    T,
                    rt_malloc(sizeof(int32_t) * cells),
                    rt_malloc(sizeof(int32_t) * cells),
                    rt_malloc(cells),
                    rt_malloc(sizeof(double) * cells)};
}

void test_rows_open(TestRows *t, Model *m, const RunConfig *rc, DataSplit split, int T) {
    const TaskImpl *task = task_of(&rc->task);
    RT_ASSERT(task);
    DataOptions opt = {.seq_len = T, .seed = rc->train.seed, .split = split, .world = 1};
    TaskOpenArgs a = {rc, &opt};
    TaskRows *rows;
    char err[2048];
    if (task->open(&a, &rows, err, sizeof err)) rt_die("%s", err);
    test_rows_init(t, m, rows, rc->train.seed, T);
}

int64_t test_rows_score(TestRows *t, int64_t first, int n) {
    RT_ASSERT(n <= TASK_EVAL_BATCH);
    for (int b = 0; b < n; b++) {
        Rng r;
        test_example_rng(&r, t->seed, first + b);
        t->rows->row(t->rows, first + b, &r, t->tok + (size_t)b * t->T, t->lab + (size_t)b * t->T);
    }
    Batch bt = {n, t->T, t->tok, t->lab, NULL};
    return model_token_logprobs(t->m, &bt, t->logp, t->greedy);
}

void test_rows_close(TestRows *t) {
    task_rows_free(t->rows);
    rt_free(t->tok);
    rt_free(t->lab);
    rt_free(t->greedy);
    rt_free(t->logp);
}

void test_example_rng(Rng *r, uint64_t seed, int64_t i) {
    task_example_rng(r, seed, STREAM_TEST, i);
}

int task_fail(char *err, size_t errlen, const char *type, const char *problem) {
    return rt_error(err, errlen, NULL, "[task] %s: %s", type, problem);
}
