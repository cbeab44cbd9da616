/* The zero-shot scorer of `rotor train` (train.eval_tasks, src/train/trainer.h TrainEval):
 * the tasks of `rotor eval`, tokenised once with data.tokenizer, scored on the training model's
 * current weights by the same code as `rotor eval --limit train.eval_limit`. */
#ifndef ROTOR_TRAIN_EVAL_H
#define ROTOR_TRAIN_EVAL_H

#include "train/trainer.h"

extern const TrainEval TRAIN_EVAL;

#endif
