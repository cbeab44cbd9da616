/* The test-split evaluation of `rotor synth` (synth_eval.c): the metrics of a checkpoint
 * trained on the [task] section's task. */
#ifndef ROTOR_SYNTH_EVAL_H
#define ROTOR_SYNTH_EVAL_H

#include <jansson.h>

#include "backend.h"
#include "config/config.h"

/* The metrics of a synthetic task's test stream for the checkpoint ckpt (new reference). */
json_t *synth_eval_task(const RunConfig *rc, const Backend *be, const char *ckpt);
/* A run with train.keep_best and a best checkpoint: its metrics as synth_eval_task's, with the
 * step and value that chose it; else NULL. */
json_t *synth_eval_best(const RunConfig *rc, const Backend *be);
/* A classification checkpoint scored on the test split, printed as one line starting with
 * `what`: {"checkpoint", "step", "val_loss", "val_accuracy" (as logged at its step),
 * "test_accuracy"}, and in *metrics classify_eval's metrics. */
json_t *synth_eval_classify(const RunConfig *rc, const Backend *be, const char *ckpt,
                            const char *what, json_t **metrics);

#endif
