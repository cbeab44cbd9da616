/* Classification accuracy of a model on the test split of a task whose rows each carry a
 * class id as the label of one position (seq_image, pathfinder, data/image_task.h; listops,
 * text_bytes, aan, data/class_task.h): `rotor synth`'s metric for those tasks, counted by
 * task/class_score.h as the trainer's validation accuracy is. */
#ifndef ROTOR_CLASSIFY_EVAL_H
#define ROTOR_CLASSIFY_EVAL_H

#include <jansson.h>

#include "task/task.h"

/* Every row of the test split of data.train = task, scored in one teacher-forced pass per
 * batch: a row is right when the argmax of the model's distribution at its labeled
 * position is its class. With the LM head the argmax runs over the whole vocabulary, so a
 * prediction outside the classes counts as wrong. With model.pair an example is two rows
 * (task aan) and is scored once. Prints one line, starting with `which` (the checkpoint
 * scored; may be empty). Returns the metrics object of synth_results.json: "accuracy",
 * "examples", "per_class_accuracy" (indexed by class id) and "source": source, the file or
 * directory the task read its test split from, or "generated" where source is empty. */
json_t *classify_eval(const TaskEvalArgs *a, const char *source);

#endif
