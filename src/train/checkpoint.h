/* Training checkpoints (docs/formats.md "Checkpoints"):
 *
 *   RUN_DIR/checkpoints/step_NNNNNNNN/   (step zero-padded to 8 digits, more when larger)
 *     model.safetensors      every parameter (trainable or not) as F32 under its fla name
 *                            and shape; metadata {"format": "pt"}
 *     config.json            the Hugging Face config (model/hf_config.h)
 *     rotor.ini              the effective run config (run_config_write_ini)
 *     optimizer.safetensors  "<state>.<name>" (F32) of every trainable parameter and every
 *                            state buffer of the optimizer under torch's names: AdamW
 *                            "exp_avg", "exp_avg_sq"; RMSprop "square_avg"; metadata
 *                            {"step": "<optimizer t>", "optimizer": "adamw" | "rmsprop"}
 *                            (a file without "optimizer" is AdamW's) -- or, when the
 *                            optimizer state is sharded (ZeRO-1), one file per rank:
 *     optimizer.rankRRRRR-of-NNNNN.safetensors  "<state>" of each state buffer: the rank's
 *                            slice of the flat state; metadata step, optimizer, start, end,
 *                            total
 *     carry_state.safetensors  train.carry_state runs (docs/models.md §19): "state" (F32)
 *                            [streams, width], every stream's carried recurrent state (the
 *                            layers' states in order, model_carry_download); metadata
 *                            {"format": "rotor-carried-state", "streams"}
 *     trainer_state.json     {"format": "rotor-trainer-state", "format_version": 1, "step",
 *                            "tokens", "seed" (decimal string: a u64 does not fit jansson's
 *                            integers), "world_size", "optimizer_step", "code_version",
 *                            "data": loader cursor or null, "optimizer_sharded",
 *                            "best": the best validation so far, {"metric", "value",
 *                            "step"}, or null (train.keep_best),
 *                            "plateau": {"lr_scale", "best_val_loss" (null: none yet)}
 *                            (train.plateau_factor; absent: {1, null}),
 *                            "files": {name: sha256} of every other file}
 *   RUN_DIR/checkpoints/latest           one line naming the newest directory, "step_00000100\n"
 *   RUN_DIR/checkpoints/best/            the checkpoint of the best validation's step (its
 *                            files hard-linked, or copied, from that step's directory)
 *
 * Files always hold fp32, whatever the backend's [f32] type. A checkpoint is written into
 * RUN_DIR/checkpoints/.tmp-step_NNNNNNNN, every file fsynced, then renamed into place, so a
 * step_* directory is either complete or absent; `latest` is replaced atomically after it.
 * The checksums in trainer_state.json detect files damaged afterwards.
 *
 * Under data parallelism every rank calls these functions: rank 0 writes the shared files,
 * every rank its optimizer slice when sharded, and they agree on success. */
#ifndef ROTOR_CHECKPOINT_H
#define ROTOR_CHECKPOINT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "train/optimizer.h"
#include "config/config.h"

/* The best validation so far of a run with train.keep_best: its metric (KEEP_BEST_NONE:
 * none yet), value and step. */
typedef struct {
    KeepBest metric;
    double value;
    int64_t step;
} BestValidation;

/* train.plateau_factor: the factor every learning rate carries now, and the best validation
 * loss so far (NAN: none yet). */
typedef struct {
    double lr_scale, best_val_loss;
} Plateau;

#define CHECKPOINT_BEST "best"

typedef struct {
    int64_t step;      /* optimizer steps done */
    int64_t tokens;    /* training tokens seen */
    uint64_t seed;     /* data order / permutation seed */
    int world_size;    /* ranks that wrote it */
    json_t *data_state; /* data-loader cursor (any JSON), may be NULL: borrowed by
                           checkpoint_save, a new reference (or NULL) from checkpoint_load */
    BestValidation best;
    Plateau plateau;   /* {1, NAN} in checkpoints without one */
    /* checkpoint_save: the carried states [carry_rows, carry_width] of every stream (rank 0's
     * copy is written), or NULL; checkpoint_load leaves them NULL (checkpoint_load_carry) */
    const float *carry;
    int64_t carry_rows, carry_width;
} TrainerState;

/* Saves weights, optimizer state (opt is required), configs and trainer state as the checkpoint
 * of step st->step (see above). An existing checkpoint of the same step is replaced. Then
 * deletes all but the newest `keep` complete checkpoints (keep <= 0: keeps all; the one just
 * written is always kept) and leftover .tmp-* directories of interrupted saves. Returns 0, or
 * -1 with a message naming the file and the problem. */
int checkpoint_save(const char *run_dir, const TrainerState *st, Model *m, const Optimizer *opt,
                    const RunConfig *rc, int keep, char *err, size_t errlen);

/* Makes RUN_DIR/checkpoints/best the checkpoint of `step` (which must be complete): a
 * directory of links to (or copies of) its files, moved into place like a step_* directory
 * and replacing the previous best, so it outlives the pruning of step_*. Rank 0 only.
 * Returns 0, or -1 with a message naming the file. */
int checkpoint_keep_best(const char *run_dir, int64_t step, char *err, size_t errlen);

/* Path of the newest intact checkpoint: the directory `latest` names, else the step_*
 * directories from the highest step down (.tmp-* directories are ignored), taking the first
 * whose files are all present with the checksums recorded in its trainer state (a damaged
 * one is reported with a warning and skipped); NULL when there is none. malloc'd. */
char *checkpoint_find_latest(const char *run_dir);

/* Checks every file of a checkpoint against the sha256 recorded in its trainer state. */
int checkpoint_verify(const char *dir, char *err, size_t errlen);

/* Loads the weights into m (the file must hold exactly the model's parameters, names and
 * shapes); if opt != NULL the state of its range [lo, hi), from an unsharded or a sharded
 * checkpoint of any number of ranks (parameters without a gradient get zero state), and
 * step, refusing the state of another optimizer; if st != NULL the trainer state. Everything is read and checked before anything
 * is changed: on error m, opt and st are untouched. Errors name the file and the first
 * missing / unexpected / mis-shaped tensor. Returns 0 or -1. */
int checkpoint_load(const char *ckpt_dir, Model *m, Optimizer *opt, TrainerState *st, char *err,
                    size_t errlen);

/* The carried states of a train.carry_state checkpoint into out [rows, width]. Returns 0, or
 * -1 with a message naming the file when it is missing or holds another shape. */
int checkpoint_load_carry(const char *ckpt_dir, int64_t rows, int64_t width, float *out, char *err, size_t errlen);

/* The trainer state of a checkpoint directory, without its weights (data_state: a new
 * reference or NULL). Returns 0, or -1 with a message naming the file. */
int checkpoint_read_state(const char *ckpt_dir, TrainerState *st, char *err, size_t errlen);

/* The run config saved in the checkpoint (its rotor.ini), parsed and validated. */
int checkpoint_read_config(const char *ckpt_dir, RunConfig *rc, char *err, size_t errlen);

/* A model built from the checkpoint's config.json with its weights (for evaluation).
 * NULL with a message naming the file on error. */
Model *checkpoint_load_model(const char *ckpt_dir, const Backend *be, char *err, size_t errlen);

#endif
