/* The data source of data.train = task: a task's rows (TaskImpl.open) read as batches. Example i
 * of a split of a generated task comes from its own random stream, a function of (seed, split,
 * i): the train split cycles through task.train_examples examples (or never repeats when it is
 * 0), the validation and test splits read the test stream from its start; tasks with files
 * have splits of their own. The position is the next global example index; rank r of N takes
 * examples r B .. r B + B - 1 of each N B. A pair task's example is two rows, so B must be
 * even: every rank's rows start at an even index and hold whole pairs. */
#include <stdio.h>
#include <string.h>

#include "data/synth_tasks.h"
#include "task/task.h"
#include "util/error.h"

typedef struct {
    DataSource base;
    TaskRows *rows;
    int T, rank, world;
    int pairs;
    uint64_t seed;
    DataSplit split;
    int64_t cycle; /* train: distinct examples (0 = unlimited) */
    int64_t index; /* global position */
    int streams;   /* carried-state streams (DataOptions.carry_streams), 0 = off */
} TaskSource;

static int ts_next_labeled(DataSource *ds, int32_t *tokens, int32_t *labels, int B, char *err,
                           size_t errlen) {
    TaskSource *s = (TaskSource *)ds;
    if (s->pairs && B % 2)
        return rt_error(err, errlen, NULL,
                        "%s: a batch of %d rows (train.micro_batch, or an evaluation batch): its "
                        "rows come in pairs, "
                        "two documents per example, so it must be even",
                        ds->desc, B);
    for (int b = 0; b < B; b++) {
        int64_t i = s->index + (int64_t)s->rank * B + b;
        if (s->cycle > 0) i %= s->cycle;
        Rng r;
        task_example_rng(&r, s->seed, s->split == SPLIT_TRAIN ? STREAM_TRAIN : STREAM_TEST, i);
        s->rows->row(s->rows, i, &r, tokens + (size_t)b * s->T, labels + (size_t)b * s->T);
    }
    if (s->streams) /* the rows are one window of their streams: the first of a pass starts them
                       afresh */
        ds->continues = (s->index / s->streams) % s->rows->windows != 0;
    s->index += (int64_t)s->world * B;
    return 0;
}

/* The position, and what the task's token ids mean, so that a checkpoint refuses to resume on
 * data whose vocabulary differs. */
static json_t *ts_get_state(const DataSource *ds) {
    const TaskSource *s = (const TaskSource *)ds;
    json_t *j = json_pack("{s:s, s:s, s:I}", "kind", "task", "task", ds->desc, "index",
                          (json_int_t)s->index);
    if (s->rows->vocab_json) json_object_set_new(j, "vocab", s->rows->vocab_json(s->rows));
    if (s->streams) json_object_set_new(j, "carry_streams", json_integer(s->streams));
    return j;
}

static int ts_set_state(DataSource *ds, const json_t *st, char *err, size_t errlen) {
    TaskSource *s = (TaskSource *)ds;
    const char *kind, *task;
    json_int_t index;
    if (json_unpack((json_t *)st, "{s:s, s:s, s:I}", "kind", &kind, "task", &task, "index",
                    &index) ||
        strcmp(kind, "task") || strcmp(task, ds->desc) || index < 0)
        return rt_error(err, errlen, ds->desc,
                        "the saved data position belongs to another data source");
    if (s->rows->vocab_json) {
        json_t *vocab = s->rows->vocab_json(s->rows);
        int same = json_equal(vocab, json_object_get(st, "vocab"));
        json_decref(vocab);
        if (!same) return rt_error(err, errlen, ds->desc, "%s", s->rows->vocab_changed);
    }
    json_int_t saved = json_integer_value(json_object_get(st, "carry_streams"));
    if (saved != s->streams)
        return rt_error(
            err, errlen, ds->desc,
            "the checkpoint's data position is one of %lld carried-state streams; this run "
            "reads %d (train.carry_state, or ranks x micro_batch x grad_accum, changed)",
            (long long)saved, s->streams);
    s->index = index;
    return 0;
}

static void ts_destroy(DataSource *ds) {
    TaskSource *s = (TaskSource *)ds;
    task_rows_free(s->rows);
    rt_free(s);
}

DataSource *task_source_open(const RunConfig *rc, const DataOptions *opt, char *err,
                             size_t errlen) {
    const TaskConfig *task = &rc->task;
    const TaskImpl *impl = task_of(task);
    if (!impl) {
        char names[512];
        task_names(names, sizeof names);
        rt_error(err, errlen, NULL, "[task] %s: task.type must be one of %s", task->type, names);
        return NULL;
    }
    TaskSource *s = rt_calloc(1, sizeof(TaskSource));
    s->T = opt->seq_len;
    s->rank = opt->rank;
    s->world = opt->world;
    s->seed = opt->seed;
    s->split = opt->split;
    s->cycle = opt->split == SPLIT_TRAIN ? task->train_examples : 0;
    s->pairs = (impl->flags & TASK_PAIRS) != 0;
    s->streams = opt->carry_streams;
    TaskOpenArgs a = {rc, opt};
    if (impl->open(&a, &s->rows, err, errlen)) {
        ts_destroy(&s->base);
        return NULL;
    }
    if (rc->model.vocab_size < s->rows->vocab) {
        rt_error(err, errlen, NULL, "task %s needs model.vocab_size >= %d, got %d", task->type,
                 s->rows->vocab, rc->model.vocab_size);
        ts_destroy(&s->base);
        return NULL;
    }
    s->base.examples = s->rows->examples;
    snprintf(s->base.desc, sizeof s->base.desc, "task %s", task->type);
    s->base.next_labeled = ts_next_labeled;
    s->base.get_state = ts_get_state;
    s->base.set_state = ts_set_state;
    s->base.destroy = ts_destroy;
    return &s->base;
}
