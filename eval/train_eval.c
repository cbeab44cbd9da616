/* Zero-shot scores during training (train_eval.h). */
#include "train_eval.h"

#include <stdio.h>
#include <string.h>

#include "eval.h"
#include "eval_run.h"
#include "tokenizer.h"
#include "util/error.h"

#define MAX_TASKS 8
#define BATCH 8 /* requests per forward pass, as rotor eval's default */

typedef struct {
    Tokenizer *tok;
    EvalTask tasks[MAX_TASKS];
    int n;
    int max_len; /* model.max_seq_len: requests are cut as rotor eval cuts them */
} Scorer;

static void scorer_close(void *ctx) {
    Scorer *s = ctx;
    for (int t = 0; t < s->n; t++) eval_task_free(&s->tasks[t]);
    tok_free(s->tok);
    rt_free(s);
}

static void *scorer_open(const RunConfig *rc, char *err, size_t errlen) {
    const TrainConfig *tc = &rc->train;
    const ModelConfig *mc = &rc->model;
    char why[2048];
    Scorer *s = rt_calloc(1, sizeof *s);
    s->max_len = mc->max_seq_len;
    if (!(s->tok = tok_load(rc->data.tokenizer, why, sizeof why))) {
        rt_free(s);
        rt_error(err, errlen, NULL, "train.eval_tasks needs data.tokenizer: %s", why);
        return NULL;
    }
    const char *bad = tok_vocab_size(s->tok) > mc->vocab_size ? "more pieces than model.vocab_size"
                      : tok_bos_id(s->tok) != mc->bos_id      ? "another BOS id than model.bos_id"
                                                              : NULL;
    if (bad) {
        rt_error(err, errlen, NULL, "train.eval_tasks: data.tokenizer = %s has %s",
                 rc->data.tokenizer, bad);
        scorer_close(s);
        return NULL;
    }
    char list[sizeof tc->eval_tasks];
    snprintf(list, sizeof list, "%s", tc->eval_tasks);
    for (char *save = NULL, *name = strtok_r(list, ", ", &save); name;
         name = strtok_r(NULL, ", ", &save)) {
        int dup = 0;
        for (int k = 0; k < s->n; k++) dup |= !strcmp(s->tasks[k].name, name);
        const char *problem = s->n == MAX_TASKS ? "more than 8 tasks"
                              : dup             ? "a task listed twice"
                                                : NULL;
        if (!problem && eval_task_load(&s->tasks[s->n], name, tc->eval_data_dir, tc->eval_limit,
                                       s->tok, 1, why, sizeof why))
            problem = why;
        if (problem) {
            rt_error(err, errlen, NULL, "train.eval_tasks = %s (train.eval_data_dir = %s): %s",
                     tc->eval_tasks, tc->eval_data_dir, problem);
            scorer_close(s);
            return NULL;
        }
        s->n++;
    }
    return s;
}

static json_t *scorer_score(void *ctx, Model *m) {
    Scorer *s = ctx;
    int64_t nonfinite = eval_score_requests(m, s->tasks, s->n, BATCH, s->max_len);
    json_t *o = json_object();
    if (nonfinite) { /* their accuracies would rank NaN first: none is reported */
        rt_warn("train.eval_tasks: the log-likelihoods of %lld requests are not finite (NaN or "
                "inf); no task metrics at this step",
                (long long)nonfinite);
        return o;
    }
    for (int t = 0; t < s->n; t++) {
        EvalMetrics mt = eval_task_metrics(&s->tasks[t]);
        char key[96];
        const struct {
            int has;
            const char *name;
            double value;
        } cols[] = {{mt.has_acc, "acc", mt.acc},
                    {mt.has_acc_norm, "acc_norm", mt.acc_norm},
                    {mt.has_ppl, "perplexity", mt.ppl}};
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
            if (!cols[c].has) continue;
            snprintf(key, sizeof key, "%s_%s", s->tasks[t].name, cols[c].name);
            json_object_set_new(o, key, json_real(cols[c].value));
        }
    }
    return o;
}

const TrainEval TRAIN_EVAL = {.open = scorer_open, .score = scorer_score, .close = scorer_close};
