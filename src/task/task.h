/* A task (task.type, with data.train = task or `rotor synth`): all that rotor knows of it in one
 * TaskImpl beside its code (src/task/task_*.c), registered by one line of task.c. The config,
 * the data source of tasks, the trainer and `rotor synth` read the TaskImpl; none of them
 * compares task.type. docs/architecture.md "Adding a task". */
#ifndef ROTOR_TASK_H
#define ROTOR_TASK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "data/datasource.h"
#include "model/model.h"
#include "util/rng.h"

/* TaskImpl.flags */
enum {
    TASK_CLASSIFIES =
        1, /* each row carries one class: validation measures accuracy (docs/classification.md) */
    TASK_PAIRS = 2,      /* rows 2i, 2i + 1 are one example's two documents (the pair classifier) */
    TASK_TEXT = 4,       /* character-level text: bits per character, streams with carried states */
    TASK_AUTOENCODER = 8 /* trains the auto-encoder head (docs/models.md §autoencoder-head) */
};

/* The run's shape as a task derives it while a config loads (TaskImpl.shape): train.seq_len,
 * model.vocab_size and model.head may follow the task; *_given: the config set them. */
typedef struct {
    RunConfig *rc;
    int seq_len_given, vocab_size_given, head_given;
} TaskShape;

/* What a task's split is opened with (TaskImpl.open). */
typedef struct {
    const RunConfig *rc;
    const DataOptions *opt;
} TaskOpenArgs;

/* The rows of one split of a task: row i (i < examples for finite splits) from its own random
 * stream r (seed, split, i), as tokens and labels (-100 where unscored) of T positions. */
typedef struct TaskRows TaskRows;
struct TaskRows {
    int64_t examples; /* rows in a pass over a finite split, after which it repeats; 0: endless */
    int vocab;        /* its token ids are below this */
    /* carried-state streams (DataOptions.carry_streams): windows of a pass over them */
    int64_t windows;
    void (*row)(const TaskRows *t, int64_t i, Rng *r, int32_t *tokens, int32_t *labels);
    /* NULL, or what its token ids mean (new reference): saved with a checkpoint's data position
     * as "vocab", which a resume must match; vocab_changed says what changed when it does not */
    json_t *(*vocab_json)(const TaskRows *t);
    const char *vocab_changed;
    /* NULL, or frees what the rows own besides their struct (task_rows_free frees that) */
    void (*release)(TaskRows *t);
};

/* Frees rows (and what they own); NULL is a no-op. */
void task_rows_free(TaskRows *t);

/* Rows of a data set read by index (the classification tasks): row i is set_row(set, i, ...),
 * whatever the random stream (set may keep state, such as its order for the pass);
 * set_free(set) when the rows are freed. */
TaskRows *indexed_rows(void *set,
                       void (*set_row)(void *set, int64_t i, int32_t *tokens, int32_t *labels),
                       void (*set_free)(void *set), int64_t examples, int vocab);

/* What a task's test split is scored with (TaskImpl.evaluate). */
typedef struct {
    Model *m;
    const RunConfig *rc;
    size_t act_size;   /* bytes of the backend's [act] elements */
    const char *which; /* the checkpoint scored, printed first (classification) */
} TaskEvalArgs;

typedef struct TaskImpl {
    const char *name;           /* task.type */
    const char *const *aliases; /* other task.type values it takes, NULL-terminated (or NULL) */
    const char *const *keys;    /* the [task] keys it reads, NULL-terminated */
    unsigned flags;             /* TASK_* */
    int variant; /* which of the tasks of one file it is (the MAD tasks' MadTask, ...) */
    /* Called for an alias: rewrites task.type to name and sets what the alias means. */
    void (*resolve_alias)(TaskConfig *t, const char *alias);
    /* NULL, or derives the run's shape from the task (TaskShape); returns NULL or a message in msg.
     */
    const char *(*shape)(TaskShape *s, char *msg, size_t n);
    /* Opens a split's rows; returns 0, or -1 with a message naming the key, file or value. */
    int (*open)(const TaskOpenArgs *a, TaskRows **rows, char *err, size_t errlen);
    /* The test split's metrics of a trained model (synth_results.json's "metrics"; new
     * reference), with its plots in run.dir. */
    json_t *(*evaluate)(const TaskEvalArgs *a);
} TaskImpl;

/* The task of task.type, or NULL ("none", or an unknown name). */
const TaskImpl *task_of(const TaskConfig *t);
/* An alias of task.type resolved in place (parity -> state with group S2); no-op otherwise. */
void task_resolve_alias(TaskConfig *t);
/* Every task.type value, "none" first and then each task's name and aliases: *n of them, in
 * static storage. */
const char *const *task_type_names(int *n);
/* "mqar, state, ..., chars": the task names, for messages. */
void task_names(char *buf, size_t n);
/* The tasks that read [task] key (a name without "task."), for messages (buf may be NULL); returns
 * their count. */
int task_names_with_key(const char *key, char *buf, size_t n);
/* The tasks with every bit of flags (TASK_*), for messages. */
void task_names_with_flags(unsigned flags, char *buf, size_t n);
/* Whether task reads the [task] key. */
int task_reads_key(const TaskImpl *task, const char *key);

/* The data source of data.train = task (task_source.c): split TRAIN the training stream, VAL and
 * TEST the test stream, or the task's own splits where it has them. NULL with a message. */
DataSource *task_source_open(const RunConfig *rc, const DataOptions *opt, char *err, size_t errlen);

#endif
