/* Running the zero-shot evaluation with a model (eval/run.c), and the commands of eval/:
 * `rotor eval` (eval/eval_cmd.c), `rotor generate` and `rotor serve`. */
#ifndef ROTOR_EVAL_RUN_H
#define ROTOR_EVAL_RUN_H

#include "eval.h"
#include "model/model.h"

/* Fills ll and is_greedy of every request of the tasks (documents split across the ranks
 * under mpirun; every rank ends with all results). batch: rows per forward pass; max_len:
 * the model's context (inputs are left-truncated to it). Returns how many requests' ll is not
 * finite (logits that are NaN or inf: damaged weights, or activations that overflow). */
int64_t eval_score_requests(Model *m, EvalTask *tasks, int ntasks, int batch, int max_len);
/* The first request of the tasks whose ll is not finite, NULL when none; *task its task. */
const EvalRequest *eval_first_nonfinite(const EvalTask *tasks, int ntasks, const EvalTask **task);

/* One JSON line per request: task, doc, choice, context, continuation, tokens,
 * n_continuation, ll, is_greedy. */
int eval_write_samples(const char *path, const EvalTask *tasks, int ntasks, char *err,
                       size_t errlen);

/* `rotor eval ...`; argv[0] is the first option. Returns the exit status. */
int eval_main(int argc, char **argv);
/* `rotor generate --ckpt DIR (--prompt TEXT | --prompts FILE.jsonl) ...` (eval/generate_cmd.c). */
int generate_main(int argc, char **argv);
/* `rotor serve --ckpt DIR ...`: the completions server (eval/serve_cmd.c). */
int serve_main(int argc, char **argv);

#endif
