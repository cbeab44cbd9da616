#ifndef ROTOR_TRAINER_H
#define ROTOR_TRAINER_H

#include <jansson.h>
#include <stddef.h>

#include "config/config.h"
#include "model/model.h"

/* Zero-shot scores during training (train.eval_tasks): the scorer of `rotor eval` lives in
 * eval/, outside the core, and is handed to the trainer by the command (eval/train_eval.h).
 * open loads the tasks once, or returns NULL with a message naming the key; score scores the
 * model's current weights, a collective call on every rank (each scores its share of the
 * documents), and returns a JSON object of numbers for the step's record; close frees. */
typedef struct {
    void *(*open)(const RunConfig *rc, char *err, size_t errlen);
    json_t *(*score)(void *ctx, Model *m);
    void (*close)(void *ctx);
} TrainEval;

/* How a run starts (rotor train's options). */
typedef struct {
    const char *resume;    /* NULL: a fresh start; "auto": the newest intact checkpoint of run.dir,
                              if it has any; or a checkpoint directory */
    int overwrite;         /* a fresh start moves an earlier run in run.dir aside (else refuses) */
    int no_verify;         /* resume without checking the checkpoint's sha256s */
    const TrainEval *eval; /* NULL: train.eval_tasks is refused */
} TrainStart;

/* Trains per the config, holding run.dir's lock (train/run_dir.h) throughout. Returns 0 when
 * the run reached train.steps, 1 when a signal (SIGTERM, SIGINT, SIGUSR1) stopped it before,
 * after writing the checkpoint of the step it stopped after; dies on errors, among them a
 * fresh start into a run.dir that holds a run, a run.dir another trainer holds, and a resume
 * that finds no intact checkpoint where there are some. */
int train_run(const RunConfig *rc, const TrainStart *start);

#endif
