/* task.type = mqar: multi-query associative recall (Zoology; docs/synthetic.md). Rows of
 * train.seq_len tokens: D key-value pairs, then queries of their keys at gaps drawn as
 * (g+1)^(a-1); the values are the labels (data/synth_tasks.h). Scored by per-example accuracy
 * over the D queries and by accuracy against the query's distance from its key (plotted). */
#include <stdio.h>

#include "data/synth_tasks.h"
#include "task/task.h"
#include "task/task_score.h"
#include "util/error.h"
#include "util/plot.h"

typedef struct {
    TaskRows base;
    MqarSpec spec;
} MqarRows;

static MqarSpec mqar_spec(const RunConfig *rc, int T) {
    const TaskConfig *t = &rc->task;
    return (MqarSpec){t->vocab, T, t->num_kv_pairs, t->power_a, t->random_non_queries};
}

static void mqar_row(const TaskRows *t, int64_t i, Rng *r, int32_t *tokens, int32_t *labels) {
    mqar_example(&((const MqarRows *)t)->spec, r, tokens, labels);
}

static int mqar_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    MqarRows *m = rt_calloc(1, sizeof(MqarRows));
    m->spec = mqar_spec(a->rc, a->opt->seq_len);
    const char *bad = mqar_check(&m->spec);
    if (bad) {
        rt_free(m);
        return task_fail(err, errlen, "mqar", bad);
    }
    m->base = (TaskRows){.vocab = a->rc->task.vocab, .row = mqar_row};
    *out = &m->base;
    return 0;
}

#define MQAR_BINS 16

/* Per-example accuracy over its D queries, averaged; and the accuracy of single queries by
 * their distance from the key they ask for (plotted). */
static json_t *mqar_evaluate(const TaskEvalArgs *a) {
    const RunConfig *rc = a->rc;
    int T = rc->train.seq_len, D = rc->task.num_kv_pairs, N = rc->task.test_examples,
        B = TASK_EVAL_BATCH;
    TestRows t;
    test_rows_open(&t, a->m, rc, SPLIT_TEST, T);
    const uint8_t *g = t.greedy;
    double sum = 0;
    int64_t bin_right[MQAR_BINS] = {0}, bin_n[MQAR_BINS] = {0};
    for (int i = 0; i < N; i += B) {
        int rows = N - i < B ? N - i : B;
        RT_ASSERT(test_rows_score(&t, i, rows) == (int64_t)rows * D);
        for (int b = 0; b < rows; b++) {
            const int32_t *x = t.tok + (size_t)b * T, *y = t.lab + (size_t)b * T;
            int right = 0, q = 0;
            for (int p = 0; p < T; p++) {
                if (y[p] == -100) continue;
                int key_pos = 0;
                while (x[key_pos] != x[p]) key_pos += 2; /* the context holds k1 v1 ... kD vD */
                int bin = (int)((int64_t)(p - key_pos) * MQAR_BINS / T);
                bin_right[bin] += g[b * D + q];
                bin_n[bin]++;
                right += g[b * D + q++];
            }
            sum += (double)right / D;
        }
    }
    double xs[MQAR_BINS], ys[MQAR_BINS];
    int nb = 0;
    json_t *jd = json_array();
    for (int k = 0; k < MQAR_BINS; k++) {
        if (!bin_n[k]) continue;
        xs[nb] = (k + 0.5) * T / MQAR_BINS;
        ys[nb] = (double)bin_right[k] / (double)bin_n[k];
        json_array_append_new(jd,
                              json_pack("{s:f, s:f, s:f, s:I}", "from", (double)k * T / MQAR_BINS,
                                        "to", (double)(k + 1) * T / MQAR_BINS, "accuracy", ys[nb],
                                        "queries", (json_int_t)bin_n[k]));
        nb++;
    }
    char *path = rt_sprintf("%s/mqar_accuracy.svg", rc->run.dir), title[128];
    snprintf(title, sizeof title, "MQAR (L = %d, D = %d): query accuracy by distance from its key",
             T, D);
    PlotSeries s = {"query accuracy", xs, ys, nb};
    plot_svg(path, title, "query position - key position", "accuracy", &s, 1, PLOT_FRACTION);
    rt_free(path);
    test_rows_close(&t);
    printf("mqar: accuracy %.4f over %d test examples (L = %d, D = %d, V = %d)\n", sum / N, N, T, D,
           rc->task.vocab);
    return json_pack("{s:f, s:i, s:i, s:i, s:i, s:o}", "accuracy", sum / N, "examples", N,
                     "seq_len", T, "num_kv_pairs", D, "vocab", rc->task.vocab,
                     "accuracy_by_distance", jd);
}

static const char *const mqar_keys[] = {
    "vocab",          "num_kv_pairs",  "power_a", "random_non_queries",
    "train_examples", "test_examples", NULL};

const TaskImpl task_mqar = {
    .name = "mqar",
    .keys = mqar_keys,
    .open = mqar_open,
    .evaluate = mqar_evaluate,
};
