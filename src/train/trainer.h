#ifndef ROTOR_TRAINER_H
#define ROTOR_TRAINER_H

#include "model/model.h"
#include "config/config.h"

/* Trains per the config; resume is NULL (fresh start), "auto" (the newest complete
 * checkpoint of run.dir if any) or a checkpoint directory. Returns 0; dies on errors. */
int train_run(const RunConfig *rc, const char *resume);

#endif
