/* Scoring a model on a MAD task's test stream as mad-lab scores it (eval/mad_eval.c). */
#ifndef ROTOR_MAD_EVAL_H
#define ROTOR_MAD_EVAL_H

#include <jansson.h>
#include <stddef.h>

#include "data/mad_tasks.h"
#include "model/model.h"

/* Test examples 0 .. N-1 of the run `seed` (rows of T tokens, a V-token vocabulary; the
 * backend's [act] elements take act_size bytes). Returns the metrics object of
 * synth_results.json: "accuracy" (mad-lab's test accuracy), "token_accuracy", counts and the
 * task setting. */
json_t *mad_eval(Model *m, size_t act_size, const MadSpec *s, const TaskConfig *task, uint64_t seed, int T, int V,
                 int N);

#endif
