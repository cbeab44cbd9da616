/* `rotor synth CONFIG.ini`: trains a model on the task of the [task] section with the
 * ordinary trainer, then evaluates the final checkpoint on the task's test split
 * (eval/synth_eval.c; classification tasks and train.keep_best: also the best validation's)
 * and writes RUN_DIR/synth_results.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "config/run_config.h"
#include "device/device.h"
#include "dist/dist.h"
#include "synth_eval.h"
#include "task/task.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/options.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: rotor synth CONFIG.ini [--set section.key=value]... [--overwrite]\n\n"
        "Trains on the task of the [task] section (mqar, state, copy, copy_memory, mad_*,\n"
        "seq_image, listops, text_bytes, chars; see `rotor train --help` for the keys) and\n"
        "evaluates the final model on the task's test split: RUN_DIR/synth_results.json and\n"
        "accuracy plots. With train.keep_best it also evaluates the checkpoint of the best\n"
        "validation (RUN_DIR/checkpoints/best) when there is one (\"best\" in the results).\n"
        "  --overwrite  train afresh even if run.dir holds a run: the old run is moved aside to\n"
        "               RUN_DIR.old-YYYYMMDD-HHMMSS, never deleted\n");
}

int synth_main(int argc, char **argv) {
    const char *config = NULL;
    const char *sets[258] = {"data.train=task", "data.val=task"};
    int nsets = 2;
    static const char *const known[] = {"--set", "--overwrite", "--help", NULL};
    TrainStart start = {0};
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (opt_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if ((v = opt_value("synth", argc, argv, &i, "--set"))) {
            if (nsets == 258) rt_die("too many --set options (at most 256)");
            sets[nsets++] = v;
        } else if (!strcmp(argv[i], "--overwrite")) {
            start.overwrite = 1;
        } else if (argv[i][0] == '-') {
            opt_die_unknown("synth", argv[i], known);
        } else if (!config) {
            config = argv[i];
        } else {
            rt_die("unexpected argument '%s': give one CONFIG.ini", argv[i]);
        }
    }
    if (!config) {
        usage(stderr);
        rt_die("missing CONFIG.ini");
    }
    RunConfig rc;
    char err[2048];
    if (run_config_load(&rc, config, sets, nsets, err, sizeof err)) rt_die("%s", err);
    const TaskImpl *task = task_of(&rc.task);
    if (!task) {
        char names[512];
        task_names(names, sizeof names);
        rt_die("%s: rotor synth needs a [task] section (task.type = %s)", config, names);
    }
    if (train_run(&rc,
                  &start)) { /* stopped by a signal: a model trained part way is not evaluated */
        if (dist_rank() == 0)
            fprintf(stderr,
                    "rotor synth: stopped before train.steps = %lld; %s is not evaluated (rotor "
                    "synth starts "
                    "afresh: run it again with --overwrite)\n",
                    (long long)rc.train.steps, rc.run.dir);
        return 1;
    }
    if (dist_rank() != 0) return 0;
    char *ckpt;
    if (checkpoint_find_latest(rc.run.dir, 1, &ckpt, err, sizeof err)) rt_die("%s", err);
    if (!ckpt) rt_die("%s: no checkpoint after training", rc.run.dir);
    const Backend *be = backend_select(rc.run.device, "run.device");
    json_t *metrics, *last = NULL, *best = NULL;
    if (task->flags & TASK_CLASSIFIES) {
        last = synth_eval_classify(&rc, be, ckpt, "last", &metrics);
        char *best_dir = rt_sprintf("%s/checkpoints/" CHECKPOINT_BEST, rc.run.dir);
        if (rc.train.keep_best != KEEP_BEST_NONE && fs_exists(best_dir)) {
            if (checkpoint_verify(best_dir, 1, err, sizeof err)) rt_die("%s", err);
            json_t *best_metrics;
            best = synth_eval_classify(&rc, be, best_dir, "best", &best_metrics);
            json_object_set_new(best, "selected_by",
                                json_string(run_config_keep_best_name(rc.train.keep_best)));
            json_object_set_new(best, "metrics", best_metrics);
        }
        rt_free(best_dir);
    } else {
        metrics = synth_eval_task(&rc, be, ckpt);
        best = synth_eval_best(&rc, be);
    }
    json_t *res =
        json_pack("{s:s, s:s, s:s, s:s, s:o}", "task", rc.task.type, "checkpoint", ckpt, "mixer",
                  mixer_name(rc.model.mixer), "pe", pe_name(rc.model.pe.kind), "metrics", metrics);
    json_object_set_new(res, "lr", json_real(rc.train.lr));
    json_object_set_new(res, "steps", json_integer(rc.train.steps));
    json_object_set_new(res, "seed", json_integer((json_int_t)rc.train.seed));
    if (last) json_object_set_new(res, "last", last);
    if (best) json_object_set_new(res, "best", best);
    char *path = rt_sprintf("%s/synth_results.json", rc.run.dir);
    char *text = json_dumps(res, JSON_INDENT(2) | JSON_REAL_PRECISION(8));
    fs_write_atomic(path, text, strlen(text));
    printf("results: %s\n", path);
    free(text);
    rt_free(path);
    json_decref(res);
    rt_free(ckpt);
    return 0;
}
