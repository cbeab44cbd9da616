/* `rotor eval`: zero-shot evaluation of a checkpoint on the paper's Table 3 tasks. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_common.h"
#include "cpu/parallel.h"
#include "dist/dist.h"
#include "eval_run.h"
#include "util/fsutil.h"
#include "util/timer.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: rotor eval --ckpt DIR --tasks TASK[,TASK...] --data-dir DIR [options]\n\n"
        "Zero-shot evaluation exactly as lm-evaluation-harness scores it (docs/evaluation.md).\n"
        "Runs under mpirun too: documents are split across the ranks.\n\n"
        "  --ckpt DIR          checkpoint directory (config.json, model.safetensors), or a run\n"
        "                      directory: its latest intact checkpoint\n"
        "  --tasks LIST        comma-separated, from: %s (or 'all')\n"
        "  --data-dir DIR      folder of the task files TASK.jsonl\n"
        "  --tokenizer MODEL   SentencePiece model (default: the one its run trained with)\n"
        "  --limit N           first N documents of each task (default: all)\n"
        "  --batch N           requests per forward pass (default 8)\n"
        "  --no-bos            do not prepend BOS to the requests (default: prepend)\n"
        "  --no-verify         load the checkpoint without checking its files' recorded sha256s\n"
        "  --out FILE          results JSON, shaped like lm-evaluation-harness's (default "
        "results.json)\n"
        "  --log-samples FILE  one JSON line per request: task, doc, choice, context, "
        "continuation,\n"
        "                      tokens, ll, is_greedy\n"
        "  --device D          cpu, cuda, or auto (default: cuda when a GPU is visible)\n"
        "  --threads N         CPU threads per rank (default: all cores)\n",
        EVAL_TASK_NAMES);
}

int eval_main(int argc, char **argv) {
    const char *ckpt = NULL, *tasks_arg = NULL, *data_dir = NULL, *tok_path = NULL,
               *out = "results.json", *samples = NULL, *device = "auto", *v;
    int64_t limit = 0, batch = 8, threads = 0;
    int add_bos = 1, verify = 1;
    static const char *const opts[] = {
        "--ckpt",   "--tasks",   "--data-dir",  "--tokenizer", "--limit",
        "--batch",  "--no-bos",  "--no-verify", "--out",       "--log-samples",
        "--device", "--threads", "--help",      NULL};
    for (int i = 0; i < argc; i++) {
        if (opt_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if ((v = opt_value("eval", argc, argv, &i, "--ckpt")))
            ckpt = v;
        else if ((v = opt_value("eval", argc, argv, &i, "--tasks")))
            tasks_arg = v;
        else if ((v = opt_value("eval", argc, argv, &i, "--data-dir")))
            data_dir = v;
        else if ((v = opt_value("eval", argc, argv, &i, "--tokenizer")))
            tok_path = v;
        else if ((v = opt_value("eval", argc, argv, &i, "--limit")))
            limit = opt_parse_int("--limit", v, 1, INT64_MAX);
        else if ((v = opt_value("eval", argc, argv, &i, "--batch")))
            batch = opt_parse_int("--batch", v, 1, INT_MAX);
        else if ((v = opt_value("eval", argc, argv, &i, "--out")))
            out = v;
        else if ((v = opt_value("eval", argc, argv, &i, "--log-samples")))
            samples = v;
        else if ((v = opt_value("eval", argc, argv, &i, "--device")))
            device = v;
        else if ((v = opt_value("eval", argc, argv, &i, "--threads")))
            threads = opt_parse_int("--threads", v, 1, INT_MAX);
        else if (!strcmp(argv[i], "--no-bos"))
            add_bos = 0;
        else if (!strcmp(argv[i], "--no-verify"))
            verify = 0;
        else
            opt_die_unknown("eval", argv[i], opts);
    }
    if (!ckpt || !tasks_arg || !data_dir) {
        usage(stderr);
        rt_die("--ckpt, --tasks and --data-dir are required");
    }
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads((int)threads);
#endif
    char *ckpt_dir;
    Model *m = cmd_load_model(ckpt, device, verify, &ckpt_dir);
    ckpt = ckpt_dir;
    const ModelConfig *mc = model_config(m);
    if (mc->head != HEAD_LM)
        rt_die("%s has the auto-encoder head (config.json rotor_head): zero-shot scoring needs a "
               "language model's next-token head",
               ckpt);
    Tokenizer *tok = cmd_load_tokenizer(ckpt, tok_path, mc, add_bos);
    char err[2048];

    /* the tasks */
    char *list = rt_strdup(!strcmp(tasks_arg, "all") ? EVAL_TASK_NAMES : tasks_arg);
    EvalTask tasks[8];
    int ntasks = 0;
    for (char *save = NULL, *name = strtok_r(list, ", ", &save); name;
         name = strtok_r(NULL, ", ", &save)) {
        if (ntasks == 8) rt_die("--tasks: at most 8 tasks");
        for (int k = 0; k < ntasks; k++)
            if (!strcmp(tasks[k].name, name)) rt_die("--tasks: %s is listed twice", name);
        if (eval_task_load(&tasks[ntasks], name, data_dir, limit, tok, add_bos, err, sizeof err))
            rt_die("%s", err);
        ntasks++;
    }
    rt_free(list);
    int lead = dist_rank() == 0;
    if (lead) {
        int64_t reqs = 0;
        for (int t = 0; t < ntasks; t++) reqs += tasks[t].n_requests;
        printf("eval: %s (%s + %s), %d task%s, %lld requests, BOS %s, context %d, %d rank%s x %d "
               "threads\n",
               ckpt, mixer_name(mc->mixer), pe_name(mc->pe.kind), ntasks, ntasks > 1 ? "s" : "",
               (long long)reqs, add_bos ? "prepended" : "not prepended", mc->max_seq_len,
               dist_world(), dist_world() > 1 ? "s" : "", par_max_threads());
        fflush(stdout);
    }
    double t0 = rt_now();
    int64_t nonfinite = eval_score_requests(m, tasks, ntasks, (int)batch, mc->max_seq_len);
    double secs = rt_now() - t0;
    if (nonfinite) { /* no results: their accuracies would rank NaN first */
        const EvalTask *bad;
        const EvalRequest *r = eval_first_nonfinite(tasks, ntasks, &bad);
        rt_die("%s: the log-likelihoods of %lld requests are not finite (NaN or inf), the first "
               "of %s document %lld choice %d: the weights are damaged or the activations "
               "overflow; %s not written",
               ckpt, (long long)nonfinite, bad->name, (long long)r->doc, r->choice, out);
    }
    if (lead) {
        EvalMetrics metrics[8];
        for (int t = 0; t < ntasks; t++) metrics[t] = eval_task_metrics(&tasks[t]);
        char *cfg_path = rt_sprintf("%s/config.json", ckpt);
        json_t *cfg = json_load_file(cfg_path, 0, NULL);
        json_t *res = eval_results_json(tasks, metrics, ntasks, ckpt, cfg, add_bos);
        json_object_set_new(res, "total_evaluation_time_seconds", json_real(secs));
        char *text = json_dumps(res, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fs_write_atomic(out, text, strlen(text));
        free(text);
        json_decref(res);
        json_decref(cfg);
        rt_free(cfg_path);
        if (samples && eval_write_samples(samples, tasks, ntasks, err, sizeof err))
            rt_die("%s", err);
        eval_print_table(stdout, tasks, metrics, ntasks, ckpt);
        printf("results: %s (%.1f s)%s%s\n", out, secs, samples ? ", samples: " : "",
               samples ? samples : "");
    }
    for (int t = 0; t < ntasks; t++) eval_task_free(&tasks[t]);
    model_free(m);
    rt_free(ckpt_dir);
    tok_free(tok);
    return 0;
}
