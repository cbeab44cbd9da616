/* The checkpoint writer: the trainer's checkpoints, written while training goes on
 * (train.async_checkpoint = true) or with the trainer waiting (false).
 *
 * A save takes a host copy of the step (train/checkpoint_snapshot.h: the step stalls only for
 * that copy), then a thread of the writer writes the files, their sha256s and renames the
 * directory into place (train/checkpoint.h: the same phases as a synchronous save, so a
 * step_* directory is complete or absent, and `latest`, pruning and checkpoints/best follow
 * only complete checkpoints). One checkpoint is in flight at most: the caller waits for the
 * previous one before the next save. A failed write is reported by the call that completes it
 * (a poll or the wait), naming the file and the error.
 *
 * Under data parallelism every rank calls every function at the same step, in the same order
 * (they agree through collectives, which only the calling thread makes: MPI runs with
 * MPI_THREAD_FUNNELED). Rank 0 writes the shared files, every rank its optimizer slice with
 * ZeRO-1; a checkpoint is renamed into place once every rank's files are written: the polls
 * of the steps after the save find out when. */
#ifndef ROTOR_CHECKPOINT_WRITER_H
#define ROTOR_CHECKPOINT_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "train/checkpoint_snapshot.h"

typedef struct CheckpointWriter CheckpointWriter;

typedef struct {
    const char *run_dir;
    const RunConfig *rc; /* its rotor.ini and data.tokenizer go into every checkpoint */
    int keep;            /* the newest complete checkpoints kept, <= 0: all */
    int async;           /* write on the writer's thread while training goes on */
} CheckpointWriterConfig;

/* A checkpoint that a call completed, for the log. */
typedef struct {
    int64_t step;    /* -1: the call completed none */
    int async;       /* it was written on the writer's thread */
    double stall_s;  /* the save's stall of the step: the host copy (written synchronously: all of
                        it) */
    double write_s;  /* files, sha256s and rename */
    double waited_s; /* how long the completing call waited for the write */
} CheckpointDone;

CheckpointWriter *checkpoint_writer_create(const CheckpointWriterConfig *c);
/* Saves the checkpoint of from->state->step, checkpoints/best becoming it with keep_best; none
 * may be in flight (checkpoint_writer_wait first). Takes the host copy and returns while the
 * writer's thread writes it (*done: step -1) or, synchronous (or without a thread), writes it
 * (*done: this one). Returns 0, or -1 with the message of its failure. */
int checkpoint_writer_save(CheckpointWriter *w, const CheckpointFrom *from, int keep_best,
                           CheckpointDone *done, char *err, size_t errlen);
/* Once per step: completes the checkpoint in flight if every rank's write has finished, never
 * waiting (*done: it, or step -1). Returns 0, or -1 with the message of its failure. */
int checkpoint_writer_poll(CheckpointWriter *w, CheckpointDone *done, char *err, size_t errlen);
/* Waits for the checkpoint in flight and completes it (*done: it, or step -1 when there was
 * none). Returns 0, or -1 with the message of its failure. */
int checkpoint_writer_wait(CheckpointWriter *w, CheckpointDone *done, char *err, size_t errlen);
/* Frees the writer and its staging; nothing may be in flight (checkpoint_writer_wait). */
void checkpoint_writer_free(CheckpointWriter *w);

/* Saves weights, optimizer state (opt is required), configs and trainer state as the checkpoint
 * of st->step (train/checkpoint.h), synchronously: a writer of one save. An existing checkpoint
 * of the same step is replaced. Then deletes all but the newest `keep` complete checkpoints
 * (keep <= 0: keeps all; the one just written is always kept) and leftover .tmp-* directories
 * of interrupted saves. Returns 0, or -1 with a message naming the file and the problem. */
int checkpoint_save(const char *run_dir, const TrainerState *st, Model *m, const Optimizer *opt,
                    const RunConfig *rc, int keep, char *err, size_t errlen);

#endif
