/* Scoring a task's rows in teacher-forced passes (the tasks' TaskImpl.evaluate): a split of the
 * run's task opened at a length, its rows generated in batches from their test streams and
 * scored by the model. */
#ifndef ROTOR_TASK_SCORE_H
#define ROTOR_TASK_SCORE_H

#include <stdint.h>

#include "model/model.h"
#include "task/task.h"

#define TASK_EVAL_BATCH 32

typedef struct {
    Model *m;
    TaskRows *rows;
    uint64_t seed; /* row i comes from the test stream (seed, i) */
    int T;
    /* one batch: its rows, and the argmax flag and log-probability of every labeled position in
     * order */
    int32_t *tok, *lab;
    uint8_t *greedy;
    double *logp;
} TestRows;

/* Split VAL or TEST of the run's task at length T, scored by m; dies on errors. */
void test_rows_open(TestRows *t, Model *m, const RunConfig *rc, DataSplit split, int T);
/* The same for rows the caller made (owned by t from now). */
void test_rows_init(TestRows *t, Model *m, TaskRows *rows, uint64_t seed, int T);
/* Rows first .. first + n - 1 (n <= TASK_EVAL_BATCH) scored in one pass; returns the number of
 * labeled positions. */
int64_t test_rows_score(TestRows *t, int64_t first, int n);
void test_rows_close(TestRows *t);

/* The random stream of test example i of the run `seed` (the test split's rows). */
void test_example_rng(Rng *r, uint64_t seed, int64_t i);

/* "[task] <type>: <problem>" into err; returns -1. */
int task_fail(char *err, size_t errlen, const char *type, const char *problem);

#endif
