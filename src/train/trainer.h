#ifndef ROTOR_TRAINER_H
#define ROTOR_TRAINER_H

#include "model/model.h"
#include "config/config.h"

/* Trains per the config; resume is NULL (fresh start), "auto" (the newest complete
 * checkpoint of run.dir if any) or a checkpoint directory. Returns 0 when the run reached
 * train.steps, 1 when a signal (SIGTERM, SIGINT, SIGUSR1) stopped it before, after writing
 * the checkpoint of the step it stopped after; dies on errors. */
int train_run(const RunConfig *rc, const char *resume);

#endif
