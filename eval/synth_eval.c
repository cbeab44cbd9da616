/* The test-split evaluation of `rotor synth` (src/cli/synth_cmd.c): a checkpoint trained on the
 * task of the [task] section scored by the task's TaskImpl.evaluate (task/task.h), with the
 * step and validation that chose it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth_eval.h"

#include "config/run_config.h"
#include "task/task.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fsutil.h"

/* The validation metrics.jsonl logged at `step`: {"val_loss", "val_accuracy"}, null where
 * absent. */
static json_t *logged_validation(const char *run_dir, int64_t step) {
    json_t *res = json_pack("{s:n, s:n}", "val_loss", "val_accuracy");
    char *path = rt_sprintf("%s/metrics.jsonl", run_dir);
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    while (f && getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        if (j && json_integer_value(json_object_get(j, "step")) == step) {
            const char *key;
            json_t *v;
            json_object_foreach(res, key, v) {
                json_t *x = json_object_get(j, key);
                if (json_is_number(x)) json_object_set(res, key, x);
            }
        }
        json_decref(j);
    }
    free(line);
    if (f) fclose(f);
    rt_free(path);
    return res;
}

/* A classification checkpoint scored on the test split, printed as one line starting with
 * `what`: {"checkpoint", "step", "val_loss", "val_accuracy" (as logged at its step),
 * "test_accuracy"}, and in *metrics classify_eval's metrics. */
json_t *synth_eval_classify(const RunConfig *rc, const Backend *be, const char *ckpt,
                            const char *what, json_t **metrics) {
    char err[2048], which[256];
    TrainerState st;
    if (checkpoint_read_state(ckpt, &st, err, sizeof err)) rt_die("%s", err);
    json_decref(st.data_state);
    Model *m = checkpoint_load_model(ckpt, be, 1, err, sizeof err);
    if (!m) rt_die("%s", err);
    if (st.best.metric != KEEP_BEST_NONE && st.best.step == st.step)
        snprintf(which, sizeof which, "%s checkpoint (step %lld, %s %.4f)", what,
                 (long long)st.step, run_config_keep_best_name(st.best.metric), st.best.value);
    else
        snprintf(which, sizeof which, "%s checkpoint (step %lld)", what, (long long)st.step);
    const TaskImpl *task = task_of(&rc->task);
    TaskEvalArgs a = {m, rc, be->act_size, which};
    *metrics = task->evaluate(&a);
    model_free(m);
    json_t *res = json_pack("{s:s, s:I}", "checkpoint", ckpt, "step", (json_int_t)st.step);
    json_t *val = logged_validation(rc->run.dir, st.step);
    json_object_update(res, val);
    json_decref(val);
    json_object_set(res, "test_accuracy", json_object_get(*metrics, "accuracy"));
    return res;
}

/* The metrics of a synthetic task's test stream for the checkpoint ckpt. */
json_t *synth_eval_task(const RunConfig *rc, const Backend *be, const char *ckpt) {
    char err[2048];
    Model *m = checkpoint_load_model(ckpt, be, 1, err, sizeof err);
    if (!m) rt_die("%s", err);
    const TaskImpl *task = task_of(&rc->task);
    RT_ASSERT(task);
    TaskEvalArgs a = {m, rc, be->act_size, ""};
    json_t *metrics = task->evaluate(&a);
    model_free(m);
    return metrics;
}

/* A run with train.keep_best and a best checkpoint: its metrics as eval_synthetic's, with the
 * step and value that chose it (nnRNN tests the model of the best validation loss); else NULL. */
json_t *synth_eval_best(const RunConfig *rc, const Backend *be) {
    char err[2048];
    char *dir = rt_sprintf("%s/checkpoints/" CHECKPOINT_BEST, rc->run.dir);
    json_t *best = NULL;
    if (rc->train.keep_best != KEEP_BEST_NONE && fs_exists(dir)) {
        TrainerState st;
        if (checkpoint_verify(dir, 1, err, sizeof err) ||
            checkpoint_read_state(dir, &st, err, sizeof err))
            rt_die("%s", err);
        json_decref(st.data_state);
        printf("best checkpoint (step %lld, %s %.4f):\n", (long long)st.step,
               run_config_keep_best_name(st.best.metric), st.best.value);
        best = json_pack("{s:s, s:I, s:s, s:f}", "checkpoint", dir, "step", (json_int_t)st.step,
                         "selected_by", run_config_keep_best_name(rc->train.keep_best), "value",
                         st.best.value);
        json_object_set_new(best, "metrics", synth_eval_task(rc, be, dir));
    }
    rt_free(dir);
    return best;
}
