/* Images as pixel sequences, one class per image (docs/classification.md): task.type =
 * seq_image (sequential and permuted MNIST, Fashion-MNIST, CIFAR-10: IDX or CIFAR-10 binary
 * files) and pathfinder (LRA's Pathfinder and Path-X); data/image_task.h reads them. Rows are
 * the pixels, train.seq_len follows their count and model.vocab_size defaults to the 256
 * intensities. Tested by the accuracy on the test split (task/classify_eval.h). */
#include <stdio.h>

#include "data/image_task.h"
#include "task/classify_eval.h"
#include "task/task.h"
#include "util/error.h"

static void image_row(void *image, int64_t i, int32_t *tokens, int32_t *labels) {
    image_task_example(image, i, tokens, labels);
}
static void image_free(void *image) { image_task_free(image); }

static int image_open(int pathfinder, const TaskOpenArgs *a, TaskRows **out, char *err,
                      size_t errlen) {
    ImageTaskArgs args = {&a->rc->task, a->opt->split, a->opt->seed, a->opt->seq_len, pathfinder};
    ImageTask *image = image_task_open(&args, err, errlen);
    if (!image) return -1;
    /* vocab: the pixel intensities; class ids are below it */
    *out = indexed_rows(image, image_row, image_free, image_task_examples(image), 256);
    return 0;
}

/* train.seq_len follows task.images or task.path (an image header is read; an explicit value
 * is checked when the data is opened) and model.vocab_size defaults to the 256 intensities. */
static const char *image_shape(int pathfinder, TaskShape *s, char *msg, size_t n) {
    const char *type = s->rc->task.type;
    char err[1200];
    if (!s->seq_len_given &&
        image_task_pixels(&s->rc->task, pathfinder, &s->rc->train.seq_len, err, sizeof err)) {
        snprintf(msg, n, "task.type = %s: %s", type, err);
        return msg;
    }
    if (!s->vocab_size_given) s->rc->model.vocab_size = 256;
    if (s->rc->model.vocab_size < 256) {
        snprintf(
            msg, n,
            "model.vocab_size = %d: task %s reads pixel intensities 0..255 as tokens, so it needs "
            "at least 256 (leave model.vocab_size out)",
            s->rc->model.vocab_size, type);
        return msg;
    }
    return NULL;
}

static json_t *image_evaluate(const TaskEvalArgs *a) {
    const TaskConfig *t = &a->rc->task; /* pathfinder's directory, or seq_image's images */
    return classify_eval(a, t->path[0] ? t->path : t->images);
}

static int seq_image_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    return image_open(0, a, out, err, errlen);
}
static const char *seq_image_shape(TaskShape *s, char *msg, size_t n) {
    return image_shape(0, s, msg, n);
}

static int pathfinder_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    return image_open(1, a, out, err, errlen);
}
static const char *pathfinder_shape(TaskShape *s, char *msg, size_t n) {
    return image_shape(1, s, msg, n);
}

static const char *const seq_image_keys[] = {"images",       "labels",         "test_images",
                                             "test_labels",  "permute",        "permute_seed",
                                             "val_examples", "train_examples", NULL};
static const char *const pathfinder_keys[] = {
    "path", "difficulty", "permute", "permute_seed", "val_examples", "train_examples", NULL};

const TaskImpl task_seq_image = {
    .name = "seq_image",
    .keys = seq_image_keys,
    .flags = TASK_CLASSIFIES,
    .shape = seq_image_shape,
    .open = seq_image_open,
    .evaluate = image_evaluate,
};

const TaskImpl task_pathfinder = {
    .name = "pathfinder",
    .keys = pathfinder_keys,
    .flags = TASK_CLASSIFIES,
    .shape = pathfinder_shape,
    .open = pathfinder_open,
    .evaluate = image_evaluate,
};
