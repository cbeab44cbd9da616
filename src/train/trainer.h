#ifndef ROTOR_TRAINER_H
#define ROTOR_TRAINER_H

#include "model/model.h"
#include "config/config.h"

/* How a run starts (rotor train's options). */
typedef struct {
    const char *resume; /* NULL: a fresh start; "auto": the newest intact checkpoint of run.dir,
                           if it has any; or a checkpoint directory */
    int overwrite;      /* a fresh start moves an earlier run in run.dir aside (else refuses) */
    int no_verify;      /* resume without checking the checkpoint's sha256s */
} TrainStart;

/* Trains per the config, holding run.dir's lock (train/run_dir.h) throughout. Returns 0 when
 * the run reached train.steps, 1 when a signal (SIGTERM, SIGINT, SIGUSR1) stopped it before,
 * after writing the checkpoint of the step it stopped after; dies on errors, among them a
 * fresh start into a run.dir that holds a run, a run.dir another trainer holds, and a resume
 * that finds no intact checkpoint where there are some. */
int train_run(const RunConfig *rc, const TrainStart *start);

#endif
