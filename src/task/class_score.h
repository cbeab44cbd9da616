/* Scoring rows that carry one class each (classification runs: model.head = classifier, or
 * the tasks that classify, TASK_CLASSIFIES; docs/classification.md): the labeled
 * position's log-probability and whether its class is the first argmax of the model's
 * outputs (model_token_logprobs), tallied per class. The trainer's validation accuracy and
 * `rotor synth`'s test accuracy (task/classify_eval.c) both count with it. */
#ifndef ROTOR_CLASS_SCORE_H
#define ROTOR_CLASS_SCORE_H

#include <stdint.h>

#include "model/model.h"

typedef struct {
    int outputs;                       /* class ids are below this: model_outputs() */
    int64_t rows, right;               /* rows scored, rows whose class is the argmax */
    double nll;                        /* summed -log p(class) */
    int64_t *class_rows, *class_right; /* [outputs]: the same per class id */
    double *logp;                      /* scratch of one batch */
    uint8_t *greedy;
    int cap;
} ClassScore;

void class_score_init(ClassScore *s, int outputs);
/* Scores the rows of b in one teacher-forced pass and adds them to the tallies; dies when a
 * row does not hold exactly one label, or a label is not a class id. */
void class_score_batch(ClassScore *s, Model *m, const Batch *b);
void class_score_free(ClassScore *s);

#endif
