/* Scoring the requests with a model (docs/evaluation.md part A, "Scoring a request" step 3): each
 * request's input is its tokens without the last, left-truncated to the model's context; the
 * log-probabilities of the continuation tokens are summed (ll) and is_greedy says whether each was
 * the argmax. Requests are batched longest first (little padding; the harness orders them the same
 * way) and right-padded: causal models never look at the padding. Under mpirun every rank scores
 * the documents whose global number is its rank modulo the world size, and the results are
 * summed over the ranks. */
#include "eval_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist/dist.h"
#include "util/error.h"
#include "util/timer.h"

/* The scored window of a request: input tokens start..start+len-1, their next tokens are
 * the labels, and the last n_scored labels are continuation tokens. */
typedef struct {
    EvalRequest *r;
    int start, len, n_scored;
} Item;

static int by_length_desc(const void *a, const void *b) {
    const Item *x = a, *y = b;
    return x->len != y->len ? (x->len < y->len ? 1 : -1) : (x->r < y->r ? -1 : x->r > y->r);
}

int64_t eval_score_requests(Model *m, EvalTask *tasks, int ntasks, int batch, int max_len) {
    int rank = dist_rank(), world = dist_world();
    int64_t total = 0, gdoc = 0;
    for (int t = 0; t < ntasks; t++) total += tasks[t].n_requests;
    Item *items = rt_calloc((size_t)(total ? total : 1), sizeof(Item));
    int64_t n = 0;
    for (int t = 0; t < ntasks; t++)
        for (int64_t d = 0; d < tasks[t].n_docs; d++, gdoc++) {
            const EvalDoc *doc = &tasks[t].docs[d];
            for (int c = 0; c < doc->n_choices; c++) {
                EvalRequest *r = &tasks[t].requests[doc->first_request + c];
                r->ll = 0;
                r->is_greedy = 0;
                if (gdoc % world != rank) continue;
                /* (ctx + cont)[-(max_len + 1):][:-1], as the harness truncates */
                int keep = r->n_tokens < max_len + 1 ? r->n_tokens : max_len + 1;
                Item *it = &items[n++];
                it->r = r;
                it->start = r->n_tokens - keep;
                it->len = keep - 1;
                it->n_scored = r->n_cont < it->len ? r->n_cont : it->len;
            }
        }
    qsort(items, (size_t)n, sizeof(Item), by_length_desc);

    int T = n ? items[0].len : 1;
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)batch * (size_t)T);
    int32_t *lab = rt_malloc(sizeof(int32_t) * (size_t)batch * (size_t)T);
    double *logp = rt_malloc(sizeof(double) * (size_t)batch * (size_t)T);
    uint8_t *greedy = rt_malloc((size_t)batch * (size_t)T);
    double t0 = rt_now(), shown = 0;
    int tty = isatty(STDERR_FILENO);
    for (int64_t i = 0; i < n; i += batch) {
        int B = (int)(n - i < batch ? n - i : batch), L = items[i].len;
        for (int b = 0; b < B; b++) {
            const Item *it = &items[i + b];
            const int32_t *seq = it->r->tokens + it->start;
            for (int p = 0; p < L; p++) {
                int inside = p < it->len;
                tok[b * L + p] = inside ? seq[p] : 0;
                lab[b * L + p] = inside && p >= it->len - it->n_scored ? seq[p + 1] : -100;
            }
        }
        Batch bt = {B, L, tok, lab, NULL};
        int64_t k = 0, scored = model_token_logprobs(m, &bt, logp,
                                                     greedy); /* labeled positions in order */
        for (int b = 0; b < B; b++) {
            const Item *it = &items[i + b];
            double ll = 0;
            int all = 1;
            for (int p = 0; p < it->n_scored; p++, k++) {
                ll += logp[k];
                all &= greedy[k];
            }
            it->r->ll = ll;
            it->r->is_greedy = all;
        }
        RT_ASSERT(k == scored);
        double now = rt_now();
        if (rank == 0 && (now - shown > 2 || i + B == n)) {
            double rate = (double)(i + B) / (now - t0 + 1e-9);
            fprintf(stderr, "%seval: %lld/%lld requests on rank 0, %.1f requests/s, ETA %.0fs%s",
                    tty ? "\r\033[K" : "", (long long)(i + B), (long long)n, rate,
                    (double)(n - i - B) / (rate + 1e-9), tty ? "" : "\n");
            shown = now;
        }
    }
    if (rank == 0 && tty && n) fprintf(stderr, "\n");
    /* results of every rank to every rank: each request was scored by exactly one rank */
    double *all = rt_calloc((size_t)(2 * total + 1), sizeof(double));
    int64_t k = 0;
    for (int t = 0; t < ntasks; t++)
        for (int64_t j = 0; j < tasks[t].n_requests; j++, k++) {
            all[2 * k] = tasks[t].requests[j].ll;
            all[2 * k + 1] = tasks[t].requests[j].is_greedy;
        }
    for (int64_t off = 0; off < 2 * total; off += 1 << 28) {
        int cnt = (int)(2 * total - off < (1 << 28) ? 2 * total - off : (1 << 28));
        dist_allreduce_sum_f64(all + off, cnt);
    }
    k = 0;
    int64_t nonfinite = 0;
    for (int t = 0; t < ntasks; t++)
        for (int64_t j = 0; j < tasks[t].n_requests; j++, k++) {
            tasks[t].requests[j].ll = all[2 * k];
            tasks[t].requests[j].is_greedy = all[2 * k + 1] != 0;
            nonfinite += !isfinite(all[2 * k]);
        }
    rt_free(all);
    rt_free(items);
    rt_free(tok);
    rt_free(lab);
    rt_free(logp);
    rt_free(greedy);
    return nonfinite;
}

const EvalRequest *eval_first_nonfinite(const EvalTask *tasks, int ntasks, const EvalTask **task) {
    for (int t = 0; t < ntasks; t++)
        for (int64_t j = 0; j < tasks[t].n_requests; j++)
            if (!isfinite(tasks[t].requests[j].ll)) {
                *task = &tasks[t];
                return &tasks[t].requests[j];
            }
    return NULL;
}

int eval_write_samples(const char *path, const EvalTask *tasks, int ntasks, char *err,
                       size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) return rt_error(err, errlen, path, "cannot write the samples file");
    for (int t = 0; t < ntasks; t++)
        for (int64_t j = 0; j < tasks[t].n_requests; j++) {
            const EvalRequest *r = &tasks[t].requests[j];
            json_t *ids = json_array();
            for (int i = 0; i < r->n_tokens; i++)
                json_array_append_new(ids, json_integer(r->tokens[i]));
            json_t *o =
                json_pack("{s:s, s:I, s:i, s:s, s:s, s:o, s:i, s:f, s:b}", "task", tasks[t].name,
                          "doc", (json_int_t)r->doc, "choice", r->choice, "context", r->context,
                          "continuation", r->continuation, "tokens", ids, "n_continuation",
                          r->n_cont, "ll", r->ll, "is_greedy", r->is_greedy);
            char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_ENSURE_ASCII);
            fprintf(f, "%s\n", line);
            free(line);
            json_decref(o);
        }
    if (fclose(f)) return rt_error(err, errlen, path, "write failed");
    return 0;
}
