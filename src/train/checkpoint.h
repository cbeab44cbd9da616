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
 *     carry_state.safetensors  train.carry_state runs (docs/models.md §carried-states): "state"
 * (F32) [streams, width], every stream's carried recurrent state (the layers' states in order,
 * model_carry_download); metadata
 *                            {"format": "rotor-carried-state", "streams"}
 *     trainer_state.json     {"format": "rotor-trainer-state", "format_version": 1, "step",
 *                            "tokens", "seed" (decimal string: a u64 does not fit jansson's
 *                            integers), "world_size", "optimizer_step", "code_version",
 *                            "data": loader cursor or null, "optimizer_sharded",
 *                            "best": the best validation so far, {"metric", "value",
 *                            "step"}, or null (train.keep_best),
 *                            "plateau": {"lr_scale", "best_val_loss" (null: none yet)}
 *                            (train.plateau_factor; absent: {1, null}),
 *                            "tokenizer": data.tokenizer as {"path": absolute, "sha256",
 *                            "copy": "tokenizer.model" or null}, or null (none),
 *                            "files": {name: sha256} and "file_sizes": {name: bytes} of
 *                            every other file}
 *     tokenizer.model        a copy of data.tokenizer when it is at most 64 MiB
 *   RUN_DIR/checkpoints/latest           one line naming the newest directory, "step_00000100\n"
 *   RUN_DIR/checkpoints/best/            the checkpoint of the best validation's step (its
 *                            files hard-linked, or copied, from that step's directory)
 *
 * Files always hold fp32, whatever the backend's [f32] type. A checkpoint is written into
 * RUN_DIR/checkpoints/.tmp-step_NNNNNNNN, every file fsynced, then renamed into place, so a
 * step_* directory is either complete or absent; `latest` is replaced atomically after it.
 * The sizes and checksums in trainer_state.json detect files damaged afterwards: every
 * reader of a checkpoint checks them (checkpoint_verify) unless told not to (--no-verify).
 *
 * Under data parallelism the checkpoint writer (train/checkpoint_writer.h) runs the phases
 * below on every rank: rank 0 writes the shared files, every rank its optimizer slice when
 * sharded, and they agree on success. */
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
    int64_t step;       /* optimizer steps done */
    int64_t tokens;     /* training tokens seen */
    uint64_t seed;      /* data order / permutation seed */
    int world_size;     /* ranks that wrote it */
    json_t *data_state; /* data-loader cursor (any JSON), may be NULL: copied by a save,
                           a new reference (or NULL) from checkpoint_load */
    BestValidation best;
    Plateau plateau; /* {1, NAN} in checkpoints without one */
    /* a save: the carried states [carry_rows, carry_width] of every stream (rank 0's copy is
     * written), or NULL; checkpoint_load leaves them NULL (checkpoint_load_carry) */
    const float *carry;
    int64_t carry_rows, carry_width;
} TrainerState;

/* The writing of one checkpoint, in the phases train/checkpoint_writer.c runs on every rank
 * (its checkpoint_save writes one): rank 0 begins; once it has, each rank writes its files
 * from its snapshot of the step (train/checkpoint_snapshot.h); once every rank has, rank 0
 * finishes, or discards the temporary directory when a rank failed. The phases make no
 * collective calls (the writer agrees between them, on the trainer's thread), and
 * checkpoint_write_files and checkpoint_finish read nothing but the job and the files, so
 * they may run on a thread of their own while training goes on. */
typedef struct CheckpointSnapshot CheckpointSnapshot;
typedef struct {
    const char *run_dir;
    const char *ini;                /* rotor.ini's text (run_config_write_ini) */
    const char *tokenizer;          /* data.tokenizer, "" for none */
    const CheckpointSnapshot *snap; /* what the other files hold, of step snap->st.step */
    int keep;                       /* the newest complete checkpoints kept, <= 0: all */
    int keep_best;         /* then makes checkpoints/best this step's (checkpoint_keep_best) */
    json_t *tokenizer_rec; /* rank 0: data.tokenizer's record, from checkpoint_write_files
                              to checkpoint_finish (NULL before) */
} CheckpointJob;

/* Rank 0: creates RUN_DIR/checkpoints/.tmp-step_N for the checkpoint of `step` (a leftover
 * of that name is removed first). Returns 0, or -1 with a message naming the directory. */
int checkpoint_begin(const char *run_dir, int64_t step, char *err, size_t errlen);
/* This rank's files into the temporary directory: rank 0 the weights, configs, optimizer state
 * (unsharded), carried states and the tokenizer's copy; with ZeRO-1 every rank its slice of
 * the optimizer state. Returns 0, or -1 with a message naming the file and the error. */
int checkpoint_write_files(CheckpointJob *j, char *err, size_t errlen);
/* Rank 0, once every rank's files are written: the sizes and sha256s of the files into
 * trainer_state.json, the directory renamed into place as step_N (an existing one replaced),
 * `latest` replaced to name it, then all but the newest j->keep complete checkpoints deleted
 * (never this one) with the leftovers of interrupted saves, and checkpoints/best made this
 * step's with j->keep_best. On error the temporary directory is removed. Returns 0, or -1 with
 * a message naming the file. */
int checkpoint_finish(CheckpointJob *j, char *err, size_t errlen);
/* Rank 0, when some rank could not write its files: removes the temporary directory. */
void checkpoint_discard(CheckpointJob *j);

/* Makes RUN_DIR/checkpoints/best the checkpoint of `step` (which must be complete): a
 * directory of links to (or copies of) its files, moved into place like a step_* directory
 * and replacing the previous best, so it outlives the pruning of step_*. Rank 0 only.
 * Returns 0, or -1 with a message naming the file. */
int checkpoint_keep_best(const char *run_dir, int64_t step, char *err, size_t errlen);

/* The checkpoint --resume auto continues from, in *found (malloc'd): the directory `latest`
 * names, else the step_* directories from the highest step down (.tmp-* directories are
 * ignored), taking the first that checkpoint_verify passes; each one skipped, and a `latest`
 * that names none, gets a warning saying why. Returns 0 with *found NULL when run_dir has no
 * checkpoint, and -1 with a message when it has some but none is intact. */
int checkpoint_find_latest(const char *run_dir, int hashes, char **found, char *err, size_t errlen);

/* Checks a checkpoint's files against its trainer state: trainer_state.json parses and lists
 * the files, each is present with the size recorded when it was written and, with `hashes`,
 * the recorded sha256. Returns 0, or -1 with a message naming the file and its fault. */
int checkpoint_verify(const char *dir, int hashes, char *err, size_t errlen);

/* What checkpoint_load reads into. */
typedef struct {
    Model *model;        /* the weights (required) */
    Optimizer *opt;      /* NULL, or the state of its range [lo, hi) and its step */
    TrainerState *state; /* NULL, or the trainer state */
    int verify; /* checkpoint_verify with hashes first (0: --no-verify, or checked already) */
} CheckpointLoad;

/* Loads a checkpoint: the weights (the file must hold exactly the model's parameters, names
 * and shapes); the optimizer state from an unsharded or a sharded checkpoint of any number of
 * ranks (parameters without a gradient get zero state), refusing the state of another
 * optimizer; the trainer state. Everything is read and checked before anything is changed: on
 * error the targets are untouched. Errors name the file and the first missing / unexpected /
 * mis-shaped tensor, or the file that fails its checksum. Returns 0 or -1. */
int checkpoint_load(const char *ckpt_dir, const CheckpointLoad *to, char *err, size_t errlen);

/* The tokenizer model a checkpoint's run trained with, in *path (malloc'd): its copy in the
 * checkpoint, else the absolute path recorded when it was written (its sha256 checked), else,
 * for checkpoints written before that record, data.tokenizer of its rotor.ini. Returns 0, or
 * -1 with a message naming what is missing or differs (the caller names its --tokenizer). */
int checkpoint_find_tokenizer(const char *ckpt_dir, char **path, char *err, size_t errlen);

/* The carried states of a train.carry_state checkpoint into out [rows, width]. Returns 0, or
 * -1 with a message naming the file when it is missing or holds another shape. */
int checkpoint_load_carry(const char *ckpt_dir, int64_t rows, int64_t width, float *out, char *err,
                          size_t errlen);

/* The trainer state of a checkpoint directory, without its weights (data_state: a new
 * reference or NULL). Returns 0, or -1 with a message naming the file. */
int checkpoint_read_state(const char *ckpt_dir, TrainerState *st, char *err, size_t errlen);

/* The run config saved in the checkpoint (its rotor.ini), parsed and validated. */
int checkpoint_read_config(const char *ckpt_dir, RunConfig *rc, char *err, size_t errlen);

/* A model built from the checkpoint's config.json with its weights (for evaluation), the
 * files first checked against their recorded checksums when `verify`. NULL with a message
 * naming the file on error. */
Model *checkpoint_load_model(const char *ckpt_dir, const Backend *be, int verify, char *err,
                             size_t errlen);

#endif
