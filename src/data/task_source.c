/* Training and test batches of a task (data.train = task; docs/evaluation.md part B). Example i of a
 * split of a synthetic task is generated from its own random stream, a function of (seed,
 * split, i): the train split cycles through task.train_examples examples (or never repeats
 * when it is 0), the validation and test splits read the test stream from its start. The
 * classification tasks take their rows from data/image_task.h (seq_image) and
 * data/class_task.h (listops, text_bytes, aan), and chars its windows of text from
 * data/char_text.h, which have validation splits of their own. The position is the next
 * global example index; rank r of N takes examples r B .. r B + B - 1 of each N B. An aan
 * pair is two rows, so B must be even: every rank's rows start at an even index and hold
 * whole pairs. */
#include <stdio.h>
#include <string.h>

#include "data/char_text.h"
#include "data/class_task.h"
#include "data/datasource.h"
#include "data/image_task.h"
#include "data/mad_tasks.h"
#include "data/synth_tasks.h"
#include "util/error.h"

typedef enum { KIND_MQAR, KIND_STATE, KIND_COPY, KIND_MAD, KIND_IMAGE, KIND_CLASS, KIND_COPY_MEMORY, KIND_CHARS } Kind;

typedef struct {
    DataSource base;
    Kind kind;
    MqarSpec mqar;
    CopyMemSpec copymem;
    Group group;
    MadSpec mad;
    ImageTask *image;
    ClassTask *cls;
    CharText *chars;
    int min_len, max_len;
    int T, rank, world;
    int pairs; /* aan: rows 2i, 2i + 1 are one example */
    uint64_t seed;
    DataSplit split;
    int64_t cycle; /* train: distinct examples (0 = unlimited) */
    int64_t index; /* global position */
    int streams;   /* chars: carried-state streams (DataOptions.carry_streams), 0 = off */
    int64_t windows; /* and the windows of a pass over them */
} TaskSource;

static int ts_next_labeled(DataSource *ds, int32_t *tokens, int32_t *labels, int B, char *err, size_t errlen) {
    TaskSource *s = (TaskSource *)ds;
    if (s->pairs && B % 2)
        return rt_error(err, errlen, NULL,
                        "%s: a batch of %d rows (train.micro_batch, or an evaluation batch): its rows come in pairs, "
                        "two documents per example, so it must be even",
                        ds->desc, B);
    for (int b = 0; b < B; b++) {
        int64_t i = s->index + (int64_t)s->rank * B + b;
        if (s->cycle > 0) i %= s->cycle;
        Rng r;
        task_example_rng(&r, s->seed, s->split == SPLIT_TRAIN ? STREAM_TRAIN : STREAM_TEST, i);
        int32_t *tk = tokens + (size_t)b * s->T, *lb = labels + (size_t)b * s->T;
        switch (s->kind) {
        case KIND_MQAR: mqar_example(&s->mqar, &r, tk, lb); break;
        case KIND_STATE: state_example(&s->group, &r, s->T, tk, lb); break;
        case KIND_COPY: copy_train_sequence(&r, s->min_len, s->max_len, s->T, tk, lb); break;
        case KIND_MAD: mad_example(&s->mad, &r, s->split != SPLIT_TRAIN, tk, lb); break;
        case KIND_IMAGE: image_task_example(s->image, i, tk, lb); break;
        case KIND_CLASS: class_task_row(s->cls, i, tk, lb); break;
        case KIND_COPY_MEMORY: copy_memory_example(&s->copymem, &r, tk, lb); break;
        case KIND_CHARS:
            if (s->streams)
                char_text_stream_row(s->chars, s->split, s->streams, s->T, i, tk, lb);
            else
                char_text_row(s->chars, s->split, s->T, s->seed, i, tk, lb);
            break;
        }
    }
    if (s->streams) /* the rows are one window of their streams: the first of a pass starts them afresh */
        ds->continues = (s->index / s->streams) % s->windows != 0;
    s->index += (int64_t)s->world * B;
    return 0;
}

/* The position; chars also saves its vocabulary, so that a checkpoint knows what its token ids
 * mean and refuses to resume on a text whose vocabulary differs. */
static json_t *ts_get_state(const DataSource *ds) {
    const TaskSource *s = (const TaskSource *)ds;
    json_t *j = json_pack("{s:s, s:s, s:I}", "kind", "task", "task", ds->desc, "index", (json_int_t)s->index);
    if (s->kind == KIND_CHARS) json_object_set_new(j, "vocab", char_text_vocab_json(s->chars));
    if (s->streams) json_object_set_new(j, "carry_streams", json_integer(s->streams));
    return j;
}

static int ts_set_state(DataSource *ds, const json_t *st, char *err, size_t errlen) {
    TaskSource *s = (TaskSource *)ds;
    const char *kind, *task;
    json_int_t index;
    if (json_unpack((json_t *)st, "{s:s, s:s, s:I}", "kind", &kind, "task", &task, "index", &index) ||
        strcmp(kind, "task") || strcmp(task, ds->desc) || index < 0)
        return rt_error(err, errlen, ds->desc, "the saved data position belongs to another data source");
    if (s->kind == KIND_CHARS) {
        json_t *vocab = char_text_vocab_json(s->chars);
        int same = json_equal(vocab, json_object_get(st, "vocab"));
        json_decref(vocab);
        if (!same)
            return rt_error(err, errlen, ds->desc, "the text's vocabulary differs from the one saved with the checkpoint "
                            "(task.path or task.text_format changed)");
        json_int_t saved = json_integer_value(json_object_get(st, "carry_streams"));
        if (saved != s->streams)
            return rt_error(err, errlen, ds->desc, "the checkpoint's data position is one of %lld carried-state streams; this run "
                            "reads %d (train.carry_state, or ranks x micro_batch x grad_accum, changed)",
                            (long long)saved, s->streams);
    }
    s->index = index;
    return 0;
}

static void ts_destroy(DataSource *ds) {
    TaskSource *s = (TaskSource *)ds;
    group_free(&s->group);
    mad_spec_free(&s->mad);
    image_task_free(s->image);
    class_task_free(s->cls);
    char_text_free(s->chars);
    rt_free(s);
}

DataSource *task_source_open(const TaskConfig *task, const ModelConfig *mc, const DataOptions *opt,
                             char *err, size_t errlen) {
    TaskSource *s = rt_calloc(1, sizeof(TaskSource));
    s->T = opt->seq_len;
    s->rank = opt->rank;
    s->world = opt->world;
    s->seed = opt->seed;
    s->split = opt->split;
    s->cycle = opt->split == SPLIT_TRAIN ? task->train_examples : 0;
    const char *bad = NULL;
    int vocab = 0;
    MadTask t;
    if (!strcmp(task->type, "mqar")) {
        s->kind = KIND_MQAR;
        s->mqar = (MqarSpec){task->vocab, s->T, task->num_kv_pairs, task->power_a, task->random_non_queries};
        bad = mqar_check(&s->mqar);
        vocab = task->vocab;
    } else if (!strcmp(task->type, "state")) {
        s->kind = KIND_STATE;
        bad = group_make(&s->group, task->group);
        vocab = s->group.order + 1; /* elements and BOS */
    } else if (!strcmp(task->type, "copy")) {
        s->kind = KIND_COPY;
        s->min_len = task->min_len;
        s->max_len = task->max_len;
        if (task->min_len > task->max_len) bad = "task.min_len is larger than task.max_len";
        vocab = COPY_VOCAB;
    } else if (!strcmp(task->type, "copy_memory")) {
        s->kind = KIND_COPY_MEMORY;
        s->copymem = (CopyMemSpec){task->delay, task->copy_length, task->symbols};
        bad = copy_memory_check(&s->copymem);
        if (!bad && s->T != copy_memory_row(&s->copymem)) bad = "train.seq_len differs from task.delay + 2 task.copy_length";
        /* the marker is an input token, embedded or read as its value: the vocabulary holds it,
         * and the output of its id is never a target */
        vocab = COPYMEM_INPUTS;
    } else if (!strcmp(task->type, "chars")) {
        s->kind = KIND_CHARS;
        if (!(s->chars = char_text_open(task, err, errlen))) {
            ts_destroy(&s->base);
            return NULL;
        }
        s->streams = opt->carry_streams;
        if (s->streams) {
            s->windows = char_text_stream_windows(s->chars, opt->split, s->streams, s->T);
            s->base.examples = s->windows * s->streams;
            if (!s->windows) bad = "the text holds fewer symbols than the carried-state streams (ranks x train.micro_batch x train.grad_accum) + 1";
        } else {
            s->base.examples = char_text_rows(s->chars, opt->split, s->T);
            if (!s->base.examples) bad = "the training text holds fewer than train.seq_len + 1 symbols";
        }
        vocab = char_text_vocab_size(s->chars);
    } else if (mad_task_of(task->type, &t)) {
        s->kind = KIND_MAD;
        bad = mad_spec_make(&s->mad, t, task, s->seed);
        vocab = task->vocab;
        if (!bad && s->T != task->seq_len) bad = "train.seq_len differs from task.seq_len";
        if (!bad && mad_autoencoder(t) != (mc->head == HEAD_AUTOENCODER))
            bad = mad_autoencoder(t) ? "the task needs model.head = autoencoder" : "the task needs model.head = lm";
    } else if (!strcmp(task->type, "seq_image") || !strcmp(task->type, "pathfinder")) {
        s->kind = KIND_IMAGE;
        ImageTaskArgs a = {task, opt->split, opt->seed, s->T};
        if (!(s->image = image_task_open(&a, err, errlen))) {
            ts_destroy(&s->base);
            return NULL;
        }
        s->base.examples = image_task_examples(s->image);
        vocab = 256; /* the pixel intensities; class ids are below it */
    } else if (class_task_is(task->type)) {
        s->kind = KIND_CLASS;
        s->pairs = !strcmp(task->type, "aan");
        s->cls = class_task_open(task, opt, err, errlen);
        if (!s->cls) {
            ts_destroy(&s->base);
            return NULL;
        }
        s->base.examples = class_task_size(s->cls);
        vocab = class_task_vocab(s->cls);
    } else {
        bad = "task.type must be mqar, state, copy, copy_memory, mad_*, seq_image, pathfinder, listops, text_bytes, aan or chars";
    }
    if (!bad && mc->vocab_size < vocab) {
        rt_error(err, errlen, NULL, "task %s needs model.vocab_size >= %d, got %d", task->type, vocab, mc->vocab_size);
        ts_destroy(&s->base);
        return NULL;
    }
    if (bad) {
        rt_error(err, errlen, NULL, "[task] %s: %s", task->type, bad);
        ts_destroy(&s->base);
        return NULL;
    }
    snprintf(s->base.desc, sizeof s->base.desc, "task %s", task->type);
    s->base.next_labeled = ts_next_labeled;
    s->base.get_state = ts_get_state;
    s->base.set_state = ts_set_state;
    s->base.destroy = ts_destroy;
    return &s->base;
}
