/* Where training windows come from. A window is T+1 consecutive tokens: the model reads
 * tokens 0..T-1 and predicts 1..T (SPEC §1). A source is deterministic given its seed and
 * its state, and its state (the exact position) is saved in checkpoints. */
#ifndef ROTOR_DATASOURCE_H
#define ROTOR_DATASOURCE_H

#include <jansson.h>
#include <stdint.h>

#include "train/train_config.h"

typedef struct DataSource DataSource;
struct DataSource {
    char desc[256];   /* for messages: the file or task */
    int vocab_size;   /* every token is < vocab_size */
    /* Fills out[B*(T+1)] with the next B windows. */
    void (*next)(DataSource *ds, int32_t *out, int B);
    /* Position as JSON (new reference) and its restoration; set_state returns -1 with a
     * message if the state does not belong to this source. */
    json_t *(*get_state)(const DataSource *ds);
    int (*set_state)(DataSource *ds, const json_t *st, char *err, size_t errlen);
    void (*destroy)(DataSource *ds);
};

typedef enum { SPLIT_TRAIN, SPLIT_VAL } DataSplit;

/* Opens `spec`: a token file (little-endian unsigned, dc->token_bytes each) or
 * "synthetic:<task>". For token files without a separate validation file, the last
 * `holdout_windows` windows of the train file are the validation split and are never
 * trained on. Returns NULL with a message naming the file or task on error. */
DataSource *datasource_open(const char *spec, const DataConfig *dc, const ModelConfig *mc, int T,
                            uint64_t seed, DataSplit split, int64_t holdout_windows, char *err,
                            size_t errlen);
void datasource_free(DataSource *ds);

/* Splits B windows of T+1 tokens into inputs and labels [B*T]. */
void windows_to_batch(const int32_t *win, int B, int T, int32_t *tokens, int32_t *labels);

/* Synthetic tasks, listed for --help and errors. */
extern const char *const SYNTHETIC_TASKS;

#endif
