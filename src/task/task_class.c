/* Sequence classification on LRA's text tasks (docs/classification.md; data/class_task.h):
 * task.type = listops (generated, or LRA's files), text_bytes (byte-level IMDB or TSV files)
 * and aan (document pairs, two rows per example, for the pair classifier). Tested by the
 * accuracy on the test split (task/classify_eval.h). */
#include <stdio.h>

#include "data/class_task.h"
#include "task/classify_eval.h"
#include "task/task.h"
#include "util/error.h"

static void class_row(void *cls, int64_t i, int32_t *tokens, int32_t *labels) {
    class_task_row(cls, i, tokens, labels);
}
static void class_free(void *cls) { class_task_free(cls); }

static int class_open(ClassKind kind, const TaskOpenArgs *a, TaskRows **out, char *err,
                      size_t errlen) {
    ClassTask *cls = class_task_open(&a->rc->task, kind, a->opt, err, errlen);
    if (!cls) return -1;
    *out = indexed_rows(cls, class_row, class_free, class_task_size(cls), class_task_vocab(cls));
    return 0;
}

static json_t *class_evaluate(const TaskEvalArgs *a) { return classify_eval(a, a->rc->task.path); }

static int listops_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    return class_open(CLASS_LISTOPS, a, out, err, errlen);
}
static int text_bytes_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    return class_open(CLASS_TEXT_BYTES, a, out, err, errlen);
}
static int aan_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    return class_open(CLASS_AAN, a, out, err, errlen);
}

static const char *const listops_keys[] = {"path",          "max_depth",  "max_args",
                                           "min_length",    "max_length", "train_examples",
                                           "test_examples", NULL};
static const char *const text_keys[] = {"path", "classes", "train_examples", NULL};

const TaskImpl task_listops = {
    .name = "listops",
    .keys = listops_keys,
    .flags = TASK_CLASSIFIES,
    .open = listops_open,
    .evaluate = class_evaluate,
};

const TaskImpl task_text_bytes = {
    .name = "text_bytes",
    .keys = text_keys,
    .flags = TASK_CLASSIFIES,
    .open = text_bytes_open,
    .evaluate = class_evaluate,
};

const TaskImpl task_aan = {
    .name = "aan",
    .keys = text_keys,
    .flags = TASK_CLASSIFIES | TASK_PAIRS,
    .open = aan_open,
    .evaluate = class_evaluate,
};
