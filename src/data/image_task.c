#include "data/image_task.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "data/cifar10.h"
#include "data/idx.h"
#include "data/pathfinder.h"
#include "util/error.h"
#include "util/rng.h"

struct ImageTask {
    ImageSet set;
    DataSplit split;
    uint64_t seed;
    int64_t first, count; /* the split: images first .. first + count - 1 of set */
    int32_t *order;       /* pixel order of every row */
};

static const char NO_IMAGES[] =
    "task.images is empty: give an IDX images file or a CIFAR-10 directory";

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* MNIST's test files are its training files' names with t10k- for train-: out receives
 * that name of path, or "" when its file name does not start with train-. */
static void test_name(const char *path, char *out, size_t n) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    out[0] = 0;
    if (strncmp(base, "train-", 6) || strlen(path) + 1 >= n) return;
    snprintf(out, n, "%.*st10k-%s", (int)(base - path), path, base + 6);
}

/* The split's images: the training or the test set of task's files. */
static int load_set(const TaskConfig *task, int test, ImageSet *set, char *err, size_t errlen) {
    if (!task->images[0]) return rt_error(err, errlen, NULL, "%s", NO_IMAGES);
    if (is_dir(task->images)) {
        const char *extra = task->labels[0]        ? "task.labels"
                            : task->test_images[0] ? "task.test_images"
                            : task->test_labels[0] ? "task.test_labels"
                                                   : NULL;
        if (extra)
            return rt_error(
                err, errlen, NULL,
                "%s is set but task.images = %s is a CIFAR-10 directory, which holds its own "
                "labels and test batch (leave it empty)",
                extra, task->images);
        return cifar10_load(task->images, test, set, err, errlen);
    }
    if (!task->labels[0])
        return rt_error(err, errlen, NULL,
                        "task.labels is empty: give the IDX labels file of task.images = %s",
                        task->images);
    if (!test) return idx_load_images(task->images, task->labels, set, err, errlen);
    char images[1024], labels[1024];
    snprintf(images, sizeof images, "%s", task->test_images);
    snprintf(labels, sizeof labels, "%s", task->test_labels);
    if (!images[0]) test_name(task->images, images, sizeof images);
    if (!labels[0]) test_name(task->labels, labels, sizeof labels);
    if (!images[0] || !labels[0])
        return rt_error(
            err, errlen, NULL,
            "task.test_%s is empty and task.%s = %s is not named train-* (MNIST's naming, "
            "whose test files are t10k-*): give task.test_images and task.test_labels",
            images[0] ? "labels" : "images", images[0] ? "labels" : "images",
            images[0] ? task->labels : task->images);
    return idx_load_images(images, labels, set, err, errlen);
}

int image_task_pixels(const TaskConfig *task, int pathfinder, int *pixels, char *err,
                      size_t errlen) {
    if (pathfinder) return pathfinder_pixels(task, pixels, err, errlen);
    if (!task->images[0]) return rt_error(err, errlen, NULL, "%s", NO_IMAGES);
    if (is_dir(task->images)) {
        *pixels = CIFAR10_PIXELS;
        return 0;
    }
    return idx_image_pixels(task->images, pixels, err, errlen);
}

ImageTask *image_task_open(const ImageTaskArgs *a, char *err, size_t errlen) {
    const TaskConfig *task = a->task;
    if (task->train_examples) {
        rt_error(err, errlen, NULL,
                 "task.train_examples = %" PRId64 ": seq_image trains on every image of its file "
                 "(leave it out; task.val_examples sets the part held out)",
                 task->train_examples);
        return NULL;
    }
    if (task->permute && task->permute_seed > UINT32_MAX) {
        rt_error(err, errlen, NULL,
                 "task.permute_seed = %" PRIu64
                 ": the permutation is NumPy's RandomState(seed).permutation, "
                 "whose seeds are below 2^32",
                 task->permute_seed);
        return NULL;
    }
    int pathfinder = a->pathfinder;
    if (pathfinder && task->val_examples) {
        rt_error(err, errlen, NULL,
                 "task.val_examples = %" PRId64
                 ": pathfinder's splits are LRA's, 80%% / 10%% / 10%% of "
                 "the metadata's images (leave it out)",
                 task->val_examples);
        return NULL;
    }
    ImageTask *t = rt_calloc(1, sizeof *t);
    t->split = a->split;
    t->seed = a->seed;
    int64_t empty; /* LRA's empty image files, left out */
    if (pathfinder ? pathfinder_load(task, a->split, &t->set, &empty, err, errlen)
                   : load_set(task, a->split == SPLIT_TEST, &t->set, err, errlen))
        goto fail;
    int T = t->set.height * t->set.width;
    if (a->seq_len != T) {
        rt_error(
            err, errlen, NULL,
            "train.seq_len = %d: the images of %s = %s have %d x %d = %d pixels, one token each "
            "(leave train.seq_len out)",
            a->seq_len, pathfinder ? "task.path" : "task.images",
            pathfinder ? task->path : task->images, t->set.height, t->set.width, T);
        goto fail;
    }
    /* pathfinder: the set is the split */
    int64_t n = t->set.n, val = pathfinder ? 0 : task->val_examples ? task->val_examples : n / 10;
    if (!pathfinder && a->split != SPLIT_TEST && val >= n) {
        rt_error(err, errlen, NULL,
                 "task.val_examples = %" PRId64 ": task.images = %s holds %" PRId64
                 " images, which leaves none for training",
                 val, task->images, n);
        goto fail;
    }
    t->first = !pathfinder && a->split == SPLIT_VAL ? n - val : 0;
    t->count = pathfinder || a->split == SPLIT_TEST ? n : a->split == SPLIT_TRAIN ? n - val : val;
    t->order = rt_malloc(sizeof(int32_t) * (size_t)T);
    image_pixel_order(T, task->permute, (uint32_t)task->permute_seed, t->order);
    return t;
fail:
    image_task_free(t);
    return NULL;
}

void image_task_free(ImageTask *t) {
    if (!t) return;
    image_set_free(&t->set);
    rt_free(t->order);
    rt_free(t);
}

int64_t image_task_examples(const ImageTask *t) { return t->count; }

void image_task_example(const ImageTask *t, int64_t i, int32_t *tokens, int32_t *labels) {
    int64_t pass = i / t->count, k = i % t->count;
    if (t->split == SPLIT_TRAIN)
        k = rng_permute(k, t->count, rng_mix64(t->seed ^ rng_mix64((uint64_t)pass + 0x1A6Eull)));
    image_row(&t->set, t->first + k, t->order, tokens, labels);
}
