#include "data/class_task.h"

#include <string.h>

#include "data/listops.h"
#include "data/synth_tasks.h"
#include "data/text_bytes.h"
#include "util/error.h"
#include "util/fsutil.h"

struct ClassTask {
    int listops;   /* else text_bytes or aan */
    int pairs;     /* aan: set examples 2k, 2k + 1 are pair k's documents, rows 2i, 2i + 1 a pair */
    int generated; /* ListOps without task.path */
    ListopsSpec spec;
    int stream;    /* generated: the split's task_example_rng stream */
    uint8_t *expr; /* generated: [max_length] */
    ClassSet set;  /* read */
    int offset;    /* read: token = symbol + offset */
    int classes, T;
    DataSplit split;
    uint64_t seed;
    int64_t *order; /* read: the current pass's order of the examples */
    int64_t pass;   /* its pass over the set (-1: none yet) */
};

/* path/name, or when `fallback` is given and path/name does not exist, path/fallback. */
static char *split_file(const char *path, const char *name, const char *fallback) {
    char *f = rt_sprintf("%s/%s", path, name);
    if (fallback && !fs_exists(f)) {
        rt_free(f);
        f = rt_sprintf("%s/%s", path, fallback);
    }
    return f;
}

static int read_listops(ClassTask *c, const char *path, char *err, size_t errlen) {
    static const char *const FILES[] = {[SPLIT_TRAIN] = "basic_train.tsv",
                                        [SPLIT_VAL] = "basic_val.tsv",
                                        [SPLIT_TEST] = "basic_test.tsv"};
    char *f = split_file(path, FILES[c->split], NULL);
    int rc = listops_read_tsv(f, c->T, &c->set, err, errlen);
    rt_free(f);
    return rc;
}

static int read_text(ClassTask *c, const char *path, char *err, size_t errlen) {
    char *probe = rt_sprintf("%s/train/neg", path);
    int imdb = fs_exists(probe);
    rt_free(probe);
    if (imdb)
        return text_bytes_read_imdb(path, c->split == SPLIT_TRAIN ? "train" : "test", c->T, &c->set,
                                    err, errlen);
    char *train = split_file(path, "train.tsv", NULL);
    int tsv = fs_exists(train);
    rt_free(train);
    if (!tsv)
        return rt_error(err, errlen, NULL,
                        "task.path = %s: neither the aclImdb layout (%s/train/neg, %s/train/pos, "
                        "%s/test/...) nor "
                        "%s/train.tsv",
                        path, path, path, path, path);
    char *f = c->split == SPLIT_TRAIN ? split_file(path, "train.tsv", NULL)
              : c->split == SPLIT_VAL ? split_file(path, "val.tsv", "test.tsv")
                                      : split_file(path, "test.tsv", NULL);
    int rc = text_bytes_read_tsv(f, c->classes, c->T, &c->set, err, errlen);
    rt_free(f);
    return rc;
}

static int read_aan(ClassTask *c, const char *path, char *err, size_t errlen) {
    static const char *const FILES[] = {[SPLIT_TRAIN] = "new_aan_pairs.train.tsv",
                                        [SPLIT_VAL] = "new_aan_pairs.eval.tsv",
                                        [SPLIT_TEST] = "new_aan_pairs.test.tsv"};
    if (!fs_exists(path))
        return rt_error(
            err, errlen, NULL,
            "task.path = %s does not exist: it is the directory of LRA's AAN retrieval files "
            "new_aan_pairs.train.tsv, new_aan_pairs.eval.tsv and new_aan_pairs.test.tsv "
            "(lra_release/tsv_data; docs/classification.md, \"AAN retrieval\")",
            path);
    char *f = split_file(path, FILES[c->split], NULL);
    int rc = text_bytes_read_aan(f, c->classes, c->T, &c->set, err, errlen);
    rt_free(f);
    return rc;
}

ClassTask *class_task_open(const TaskConfig *task, ClassKind kind, const DataOptions *opt,
                           char *err, size_t errlen) {
    ClassTask *c = rt_calloc(1, sizeof(ClassTask));
    c->listops = kind == CLASS_LISTOPS;
    c->pairs = kind == CLASS_AAN;
    c->generated = c->listops && !task->path[0];
    c->classes = c->listops ? LISTOPS_CLASSES : task->classes;
    c->offset = c->listops ? 0 : 1; /* text: byte b is token b + 1 */
    c->T = opt->seq_len;
    c->split = opt->split;
    c->seed = opt->seed;
    c->pass = -1;
    int rc = 0;
    if (c->generated) {
        c->spec =
            (ListopsSpec){task->max_depth, task->max_args, task->min_length, task->max_length};
        const char *bad = NULL;
        if (c->T < task->max_length - 1)
            rc = rt_error(err, errlen, NULL,
                          "[task] listops: train.seq_len = %d is shorter than the longest "
                          "expression, task.max_length - 1 "
                          "= %d tokens: its end, and the operands of its answer, would be cut off",
                          c->T, task->max_length - 1);
        else if ((bad = listops_check(&c->spec)))
            rc = rt_error(err, errlen, NULL, "[task] listops: %s", bad);
        c->stream = c->split == SPLIT_TRAIN ? STREAM_TRAIN
                    : c->split == SPLIT_VAL ? STREAM_VAL
                                            : STREAM_TEST;
        c->expr = rt_malloc((size_t)task->max_length);
    } else if (!task->path[0]) {
        rc =
            c->pairs
                ? rt_error(err, errlen, NULL,
                           "[task] aan needs task.path: the directory of LRA's "
                           "new_aan_pairs.{train,eval,test}.tsv "
                           "(docs/classification.md, \"AAN retrieval\")")
                : rt_error(
                      err, errlen, NULL,
                      "[task] text_bytes needs task.path: the aclImdb directory, or a directory of "
                      "train.tsv, val.tsv and test.tsv (label<TAB>text)");
    } else if (task->train_examples) {
        rc = rt_error(err, errlen, NULL,
                      "[task] %s: task.train_examples = %lld: task.path = %s gives the training "
                      "set (leave it out)",
                      task->type, (long long)task->train_examples, task->path);
    } else if (!c->listops && task->classes > 256) {
        rc = rt_error(err, errlen, NULL, "[task] %s: task.classes = %d: at most 256", task->type,
                      task->classes);
    } else {
        rc = c->listops ? read_listops(c, task->path, err, errlen)
             : c->pairs ? read_aan(c, task->path, err, errlen)
                        : read_text(c, task->path, err, errlen);
    }
    if (rc) {
        class_task_free(c);
        return NULL;
    }
    return c;
}

void class_task_free(ClassTask *c) {
    if (!c) return;
    rt_free(c->expr);
    class_set_free(&c->set);
    rt_free(c->order);
    rt_free(c);
}

int64_t class_task_size(const ClassTask *c) { return c->generated ? 0 : c->set.n; }
int class_task_vocab(const ClassTask *c) { return c->listops ? LISTOPS_VOCAB : TEXT_BYTES_VOCAB; }
int class_task_classes(const ClassTask *c) { return c->classes; }

/* Examples (aan: pairs) of a read set. */
static int64_t units(const ClassTask *c) { return c->pairs ? c->set.n / 2 : c->set.n; }

/* The order of a read set's examples (aan: pairs) on pass `pass` (Fisher-Yates): training
 * passes each their own from the seed, validation and test one fixed order. */
static const int64_t *order(ClassTask *c, int64_t pass) {
    if (c->split != SPLIT_TRAIN) pass = 0;
    if (c->order && c->pass == pass) return c->order;
    int64_t n = units(c);
    if (!c->order) c->order = rt_malloc(sizeof(int64_t) * (size_t)n);
    Rng r;
    if (c->split == SPLIT_TRAIN)
        rng_init(&r, c->seed ^ 0xC1A5500000000000ull, (uint64_t)pass);
    else
        rng_init(&r, 0xC1A55E7A1ull, (uint64_t)c->split);
    for (int64_t k = 0; k < n; k++) c->order[k] = k;
    for (int64_t k = n - 1; k > 0; k--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)k + 1), t = c->order[k];
        c->order[k] = c->order[j];
        c->order[j] = t;
    }
    c->pass = pass;
    return c->order;
}

void class_task_row(ClassTask *c, int64_t i, int32_t *tokens, int32_t *labels) {
    int n, label;
    const uint8_t *sym;
    if (c->generated) {
        n = listops_example(&c->spec, c->seed, c->stream, i, c->expr, &label);
        sym = c->expr;
    } else {
        int64_t u = c->pairs ? i / 2 : i, n_u = units(c), k = order(c, u / n_u)[u % n_u];
        if (c->pairs) k = 2 * k + i % 2; /* the pair's first or second document */
        n = (int)(c->set.start[k + 1] - c->set.start[k]);
        sym = c->set.sym + c->set.start[k];
        label = c->set.label[k];
    }
    for (int t = 0; t < n; t++) tokens[t] = sym[t] + c->offset;
    class_row(tokens, labels, n, c->T, label);
}
