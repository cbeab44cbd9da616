/* Metrics, results.json and the Table 3 markdown row (docs/evaluation.md part A "Metrics";
 * docs/formats.md "Evaluation results"). Per-document scores follow lm-evaluation-harness
 * lm_eval/api/task.py process_results (commit 4e7e0d47): pred = np.argmax(lls), pred_norm =
 * np.argmax(lls / completion_len) with completion_len = len(choice) in code points; for
 * loglikelihood tasks (LAMBADA) acc = is_greedy and the perplexity item is ll. Aggregation follows
 * lm_eval/api/metrics.py: mean; perplexity = exp(-mean(ll)); mean_stderr = sample_stddev /
 * sqrt(n) with sample_stddev using n - 1. The harness bootstraps the perplexity stderr; we
 * use the delta method, ppl * sample_stddev(ll) / sqrt(n) (docs/evaluation.md says so). With fewer
 * than two documents a stderr is undefined (the harness writes "N/A"): NaN here, null in
 * results.json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "eval.h"
#include "util/error.h"

/* np.argmax: the first maximum; a NaN counts as the maximum (the first NaN wins). */
static int argmax(const double *x, int n) {
    int best = 0;
    for (int i = 0; i < n; i++) {
        if (isnan(x[i])) return i;
        if (x[i] > x[best]) best = i;
    }
    return best;
}

static double mean(const double *x, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    return n > 0 ? s / (double)n : NAN;
}

/* sample_stddev(x) / sqrt(n), NaN for n < 2. */
static double mean_stderr(const double *x, int64_t n) {
    if (n < 2) return NAN;
    double mu = mean(x, n), ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (x[i] - mu) * (x[i] - mu);
    return sqrt(ss / (double)(n - 1)) / sqrt((double)n);
}

EvalMetrics eval_task_metrics(const EvalTask *t) {
    EvalMetrics m = {0};
    int64_t n = t->n_docs;
    m.n = n;
    double *a = rt_malloc((size_t)(n ? n : 1) * sizeof(double));
    double *b = rt_malloc((size_t)(n ? n : 1) * sizeof(double));
    if (t->kind == TASK_LAMBADA) {
        /* a: is_greedy (acc), b: ll (perplexity) */
        for (int64_t i = 0; i < n; i++) {
            const EvalRequest *r = &t->requests[t->docs[i].first_request];
            a[i] = r->is_greedy ? 1.0 : 0.0;
            b[i] = r->ll;
        }
        m.has_acc = m.has_ppl = 1;
        m.ppl = exp(-mean(b, n));
        m.ppl_stderr = m.ppl * mean_stderr(b, n);
    } else {
        /* a: acc, b: acc_norm, per document */
        int cap = 0;
        double *ll = NULL, *norm = NULL;
        for (int64_t i = 0; i < n; i++) {
            const EvalDoc *d = &t->docs[i];
            if (d->n_choices > cap) {
                cap = d->n_choices;
                ll = rt_realloc(ll, (size_t)cap * sizeof(double));
                norm = rt_realloc(norm, (size_t)cap * sizeof(double));
            }
            for (int c = 0; c < d->n_choices; c++) {
                ll[c] = t->requests[d->first_request + c].ll;
                norm[c] = ll[c] / (double)d->choice_chars[c];
            }
            a[i] = argmax(ll, d->n_choices) == d->gold ? 1.0 : 0.0;
            b[i] = argmax(norm, d->n_choices) == d->gold ? 1.0 : 0.0;
        }
        free(ll);
        free(norm);
        /* the harness's metric_list: winogrande reports acc only */
        m.has_acc = 1;
        m.has_acc_norm = t->kind != TASK_WINOGRANDE;
        if (m.has_acc_norm) {
            m.acc_norm = mean(b, n);
            m.acc_norm_stderr = mean_stderr(b, n);
        }
    }
    m.acc = mean(a, n);
    m.acc_stderr = mean_stderr(a, n);
    free(a);
    free(b);
    return m;
}

/* A number, or null when it is not finite (JSON has no NaN or infinity). */
static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

json_t *eval_results_json(const EvalTask *tasks, const EvalMetrics *m, int n, const char *ckpt,
                          const json_t *config, int add_bos) {
    json_t *results = json_object(), *versions = json_object(), *nshot = json_object();
    json_t *hib = json_object(), *nsamples = json_object(), *hashes = json_object(),
           *files = json_object();
    for (int i = 0; i < n; i++) {
        const char *name = tasks[i].name;
        json_t *r = json_object(), *h = json_object();
        if (m[i].has_acc) {
            json_object_set_new(r, "acc", num(m[i].acc));
            json_object_set_new(r, "acc_stderr", num(m[i].acc_stderr));
            json_object_set_new(h, "acc", json_true());
        }
        if (m[i].has_acc_norm) {
            json_object_set_new(r, "acc_norm", num(m[i].acc_norm));
            json_object_set_new(r, "acc_norm_stderr", num(m[i].acc_norm_stderr));
            json_object_set_new(h, "acc_norm", json_true());
        }
        if (m[i].has_ppl) {
            json_object_set_new(r, "perplexity", num(m[i].ppl));
            json_object_set_new(r, "perplexity_stderr", num(m[i].ppl_stderr));
            json_object_set_new(h, "perplexity", json_false());
        }
        json_object_set_new(r, "alias", json_string(name));
        json_object_set_new(results, name, r);
        json_object_set_new(hib, name, h);
        /* every task's YAML has metadata version 1.0; rotor is zero-shot only */
        json_object_set_new(versions, name, json_real(1.0));
        json_object_set_new(nshot, name, json_integer(0));
        json_object_set_new(nsamples, name,
                            json_pack("{sIsI}", "original", (json_int_t)tasks[i].n_docs_in_file,
                                      "effective", (json_int_t)tasks[i].n_docs));
        json_object_set_new(hashes, name, json_string(tasks[i].sha256));
        json_object_set_new(files, name, json_string(tasks[i].path));
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    json_t *cfg = json_object();
    json_object_set_new(cfg, "checkpoint", ckpt ? json_string(ckpt) : json_null());
    json_object_set_new(cfg, "model_config", config ? json_deep_copy(config) : json_null());
    json_object_set_new(cfg, "bos", json_boolean(add_bos));
    json_object_set_new(cfg, "num_fewshot", json_integer(0));
    json_object_set_new(cfg, "perplexity_stderr", json_string("delta method"));

    json_t *out = json_object();
    json_object_set_new(out, "results", results);
    json_object_set_new(out, "versions", versions);
    json_object_set_new(out, "n-shot", nshot);
    json_object_set_new(out, "higher_is_better", hib);
    json_object_set_new(out, "n-samples", nsamples);
    json_object_set_new(out, "config", cfg);
    /* the harness hashes its prepared samples; rotor the task files' bytes (sha256) */
    json_object_set_new(out, "task_hashes", hashes);
    json_object_set_new(out, "task_files", files);
    /* the harness's start time: seconds since the epoch */
    json_object_set_new(out, "date", json_real((double)now.tv_sec + 1e-9 * (double)now.tv_nsec));
    return out;
}

/* Table 3 of the paper: the metric each column reports. */
static const struct {
    const char *header;
    TaskKind kind;
    enum { PPL, ACC, ACC_NORM } metric;
} COLUMNS[] = {
    {"LMB. ppl ↓", TASK_LAMBADA, PPL},
    {"LMB. acc ↑", TASK_LAMBADA, ACC},
    {"PIQA acc ↑", TASK_PIQA, ACC},
    {"Hella. acc_n ↑", TASK_HELLASWAG, ACC_NORM},
    {"Wino. acc ↑", TASK_WINOGRANDE, ACC},
    {"ARC-e acc ↑", TASK_ARC_EASY, ACC},
    {"ARC-c acc_n ↑", TASK_ARC_CHALLENGE, ACC_NORM},
};

/* One markdown row per call: accuracies in percent with one decimal, perplexity with two,
 * "–" for a task that was not run (or a value that is not finite). Avg. is the mean of the
 * evaluated accuracy columns, from the unrounded values. */
void eval_print_table(FILE *f, const EvalTask *tasks, const EvalMetrics *m, int n,
                      const char *model_name) {
    const int ncol = (int)(sizeof COLUMNS / sizeof COLUMNS[0]);
    fprintf(f, "| Model |");
    for (int c = 0; c < ncol; c++) fprintf(f, " %s |", COLUMNS[c].header);
    fprintf(f, " Avg. ↑ |\n|---|");
    for (int c = 0; c <= ncol; c++) fprintf(f, "---:|");
    fprintf(f, "\n| %s |", model_name ? model_name : "model");
    double sum = 0;
    int n_acc = 0;
    for (int c = 0; c < ncol; c++) {
        int i = 0;
        while (i < n && tasks[i].kind != COLUMNS[c].kind) i++;
        double v = NAN;
        if (i < n) {
            v = COLUMNS[c].metric == PPL   ? m[i].ppl
                : COLUMNS[c].metric == ACC ? 100 * m[i].acc
                                           : 100 * m[i].acc_norm;
        }
        if (!isfinite(v)) {
            fprintf(f, " – |");
        } else if (COLUMNS[c].metric == PPL) {
            fprintf(f, " %.2f |", v);
        } else {
            fprintf(f, " %.1f |", v);
            sum += v;
            n_acc++;
        }
    }
    if (n_acc)
        fprintf(f, " %.1f |\n", sum / n_acc);
    else
        fprintf(f, " – |\n");
}
