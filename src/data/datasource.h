/* Where training windows come from. A window is T+1 consecutive tokens: the model reads
 * tokens 0..T-1 and predicts 1..T (docs/models.md §backbone). A source is deterministic given its
 * seed and its state, and its state (the exact position) is saved in checkpoints.
 *
 * Data parallelism: a source opened as rank r of N serves, of every global micro-batch of
 * N*B windows, the B windows r*B .. r*B+B-1, so the ranks read disjoint windows and the
 * global order does not depend on N. The position is global (the same on every rank). */
#ifndef ROTOR_DATASOURCE_H
#define ROTOR_DATASOURCE_H

#include <jansson.h>
#include <stdint.h>

#include "config/config.h"

typedef struct DataSource DataSource;
struct DataSource {
    char desc[1100]; /* for messages: the shard set or task */
    /* Fills tokens[B*(T+1)] with this rank's next B windows and, if doc_start is not NULL,
     * doc_start[B*(T+1)] with 1 where a document starts. Returns 0; -1 with a message naming
     * the file and position of bad data; or 1 at the start of a step that would need more data
     * than there is (data.on_exhausted = stop), with the reason in err and the position kept. */
    int (*next)(DataSource *ds, int32_t *tokens, uint8_t *doc_start, int B, char *err,
                size_t errlen);
    /* Sources whose labels are not the next tokens (the synthetic tasks of data.train =
     * task) have this instead: B rows of T tokens and their labels (-100 where unscored). */
    int (*next_labeled)(DataSource *ds, int32_t *tokens, int32_t *labels, int B, char *err,
                        size_t errlen);
    /* Position as JSON (new reference) and its restoration; set_state returns -1 with a
     * message if the state does not belong to this source. */
    json_t *(*get_state)(const DataSource *ds);
    int (*set_state)(DataSource *ds, const json_t *st, char *err, size_t errlen);
    void (*destroy)(DataSource *ds);
    /* Mixtures of shard sets: fills the sources' names and the windows drawn from each so far
     * (all ranks together), returns their number; 0 (or NULL) for other sources. */
    int (*drawn)(const DataSource *ds, const char **names, int64_t *windows, int max);
    /* Lines for the run's log that next and set_state leave (a source finishing an epoch, a
     * stage of data.stages beginning); the reader clears it. */
    char notice[1024];
    /* Rows in one pass over a finite split (the files of task.type = seq_image), after
     * which it repeats; 0 for endless streams. */
    int64_t examples;
    /* Sources of carried-state streams (DataOptions.carry_streams): 1 when the rows the last
     * next_labeled read continue the rows read one step before in the same position, 0 when
     * they start their streams afresh (a new pass). Always 0 for other sources. */
    int continues;
};

/* TEST: a task's test set (the tasks with files: their test split; generated tasks: the test
 * stream, as VAL). */
typedef enum { SPLIT_TRAIN, SPLIT_VAL, SPLIT_TEST } DataSplit;

typedef struct {
    int seq_len;   /* T: windows hold T+1 tokens */
    uint64_t seed; /* window order (train) */
    DataSplit split;
    int rank, world;         /* data-parallel position */
    int64_t holdout_windows; /* shards without a separate validation set: the last
                                windows of the train stream form the validation split */
    int prefetch;            /* micro-batches read ahead by a background thread */
    /* chars with train.carry_state (docs/models.md §carried-states): the text as this many streams
     * (ranks x micro_batch x grad_accum), a step's rows one window of every stream, in the
     * order of the global micro-batches; 0: independent windows */
    int carry_streams;
    /* windows of the global stream per step (ranks x micro_batch x grad_accum): data.stages
     * and data.on_exhausted = stop act at steps; 0: at every global micro-batch */
    int64_t windows_per_step;
} DataOptions;

/* Opens `spec`: a directory or glob of shards (*.h5), a weighted mixture of them
 * (data/mixture_spec.h), or "synthetic:<task>" (data.train = task
 * is task/task.h's task_source_open). Shards must carry ids below model.vocab_size, one
 * tokenizer, and data.tokenizer's sha256 when given. Returns NULL with a message naming the
 * file on error. */
DataSource *datasource_open(const char *spec, const RunConfig *rc, const DataOptions *opt,
                            char *err, size_t errlen);
/* The two kinds datasource_open picks from (shard_source.c, synthetic.c). */
DataSource *shard_source_open(const char *spec, const DataConfig *dc, const ModelConfig *mc,
                              const DataOptions *opt, char *err, size_t errlen);
DataSource *synthetic_open(const char *task, const ModelConfig *mc, const DataOptions *opt,
                           char *err, size_t errlen);
void datasource_free(DataSource *ds);

/* Splits B windows of T+1 tokens into inputs and labels [B*T] (and the inputs' document
 * starts when both pointers are given). */
void windows_to_batch(const int32_t *win, const uint8_t *win_doc, int B, int T, int32_t *tokens,
                      int32_t *labels, uint8_t *doc_start);

/* Synthetic tasks, listed for --help and errors. */
extern const char *const SYNTHETIC_TASKS;

#endif
