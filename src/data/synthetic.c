/* Generated training data for tests and CPU runs: every window is a pure function of
 * (task, seed, split, window index), so the position is just the next index. Train and
 * validation draw from disjoint streams.
 *   markov: an order-1 chain where each token has 4 successors with probabilities
 *           0.55/0.25/0.15/0.05 (the same chain for every seed); learnable by bigrams.
 *   copy:   documents "BOS s SEP s" with s a random string of 2-12 letters; the second
 *           copy is predictable only by recalling the first (needs sequence mixing).
 */
#include <stdio.h>
#include <string.h>

#include "data/datasource.h"
#include "util/error.h"
#include "util/rng.h"

const char *const SYNTHETIC_TASKS = "markov, copy";

typedef enum { TASK_MARKOV, TASK_COPY } Task;

typedef struct {
    DataSource base;
    Task task;
    int T, bos, vocab;
    uint64_t seed;
    DataSplit split;
    int rank, world;
    int64_t index; /* global position: windows consumed by all ranks */
} Synthetic;

#define COPY_SEP 3
#define COPY_FIRST_LETTER 4
#define COPY_LETTERS 26

static int32_t markov_step(int V, int32_t a, Rng *r) {
    static const double cdf[4] = {0.55, 0.80, 0.95, 1.0};
    double u = rng_uniform(r);
    int k = 0;
    while (u >= cdf[k]) k++;
    Rng chain;
    rng_init(&chain, 0xC4A1Dull, (uint64_t)a); /* successors of a: fixed for all seeds */
    int32_t next = 0;
    for (int i = 0; i <= k; i++) next = (int32_t)rng_below(&chain, (uint64_t)V);
    return next;
}

static void fill_window(const Synthetic *s, int64_t index, int32_t *w) {
    Rng r;
    rng_init(&r, s->seed, ((uint64_t)s->split << 56) ^ (uint64_t)index);
    int V = s->vocab, n = s->T + 1;
    if (s->task == TASK_MARKOV) {
        w[0] = (int32_t)rng_below(&r, (uint64_t)V);
        for (int t = 1; t < n; t++) w[t] = markov_step(V, w[t - 1], &r);
        return;
    }
    int letters = V - COPY_FIRST_LETTER < COPY_LETTERS ? V - COPY_FIRST_LETTER : COPY_LETTERS;
    int t = 0;
    while (t < n) {
        int len = 2 + (int)rng_below(&r, 11);
        int32_t str[12];
        for (int i = 0; i < len; i++)
            str[i] = COPY_FIRST_LETTER + (int32_t)rng_below(&r, (uint64_t)letters);
        if (t < n) w[t++] = s->bos;
        for (int i = 0; i < len && t < n; i++) w[t++] = str[i];
        if (t < n) w[t++] = COPY_SEP;
        for (int i = 0; i < len && t < n; i++) w[t++] = str[i];
    }
}

static int syn_next(DataSource *ds, int32_t *out, uint8_t *doc_start, int B, char *err,
                    size_t errlen) {
    (void)err, (void)errlen;
    Synthetic *s = (Synthetic *)ds;
    size_t n = (size_t)(s->T + 1);
    for (int b = 0; b < B; b++) {
        int32_t *w = out + (size_t)b * n;
        fill_window(s, s->index + (int64_t)s->rank * B + b, w);
        if (doc_start)
            for (size_t t = 0; t < n; t++)
                doc_start[(size_t)b * n + t] = s->task == TASK_COPY && w[t] == s->bos;
    }
    s->index += (int64_t)s->world * B;
    return 0;
}

static json_t *syn_get_state(const DataSource *ds) {
    const Synthetic *s = (const Synthetic *)ds;
    return json_pack("{s:s, s:s, s:I}", "kind", "synthetic", "task", ds->desc, "index",
                     (json_int_t)s->index);
}

static int syn_set_state(DataSource *ds, const json_t *st, char *err, size_t errlen) {
    Synthetic *s = (Synthetic *)ds;
    const char *kind, *task;
    json_int_t index;
    if (json_unpack((json_t *)st, "{s:s, s:s, s:I}", "kind", &kind, "task", &task, "index",
                    &index) ||
        strcmp(kind, "synthetic") || strcmp(task, ds->desc) || index < 0) {
        return rt_error(err, errlen, ds->desc,
                        "the saved data position belongs to another data source");
    }
    s->index = index;
    return 0;
}

static void syn_destroy(DataSource *ds) { rt_free(ds); }

DataSource *synthetic_open(const char *task, const ModelConfig *mc, const DataOptions *opt,
                           char *err, size_t errlen) {
    Task k;
    if (!strcmp(task, "markov")) {
        k = TASK_MARKOV;
    } else if (!strcmp(task, "copy")) {
        k = TASK_COPY;
        if (mc->vocab_size < COPY_FIRST_LETTER + 2) {
            rt_error(err, errlen, NULL, "synthetic:copy needs model.vocab_size >= %d, got %d",
                     COPY_FIRST_LETTER + 2, mc->vocab_size);
            return NULL;
        }
    } else {
        rt_error(err, errlen, NULL, "unknown synthetic task '%s' (available: %s)", task,
                 SYNTHETIC_TASKS);
        return NULL;
    }
    Synthetic *s = rt_calloc(1, sizeof(Synthetic));
    snprintf(s->base.desc, sizeof s->base.desc, "%s", task);
    s->task = k;
    s->T = opt->seq_len;
    s->bos = mc->bos_id;
    s->vocab = mc->vocab_size;
    s->seed = opt->seed;
    s->split = opt->split;
    s->rank = opt->rank;
    s->world = opt->world;
    s->base.next = syn_next;
    s->base.get_state = syn_get_state;
    s->base.set_state = syn_set_state;
    s->base.destroy = syn_destroy;
    return &s->base;
}
