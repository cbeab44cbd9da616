#include "data/synth_tasks.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"

void task_example_rng(Rng *r, uint64_t seed, int stream, int64_t i) {
    static const uint64_t key[] = {[STREAM_TRAIN] = 0x7A14000000000000ull,
                                   [STREAM_TEST] = 0x7E57000000000000ull,
                                   [STREAM_VAL] = 0x7A1D000000000000ull};
    RT_ASSERT(stream >= STREAM_TRAIN && stream <= STREAM_VAL);
    rng_init(r, seed ^ key[stream], (uint64_t)i);
}

/* ---- MQAR ---- */

const char *mqar_check(const MqarSpec *s) {
    static char msg[256];
    if (s->seq_len < 4 || s->seq_len % 2)
        snprintf(msg, sizeof msg, "train.seq_len = %d must be even and at least 4", s->seq_len);
    else if (s->num_kv_pairs < 1 || 4 * s->num_kv_pairs > s->seq_len)
        snprintf(msg, sizeof msg,
                 "task.num_kv_pairs = %d: the %d key-value pairs and their queries do not fit in "
                 "train.seq_len = %d",
                 s->num_kv_pairs, s->num_kv_pairs, s->seq_len);
    else if (s->vocab <= s->seq_len)
        snprintf(msg, sizeof msg, "task.vocab = %d must exceed train.seq_len = %d (as in Zoology)",
                 s->vocab, s->seq_len);
    else if (s->vocab / 2 - 1 < s->num_kv_pairs || s->vocab - s->vocab / 2 < s->num_kv_pairs)
        snprintf(msg, sizeof msg,
                 "task.vocab = %d has too few keys or values for %d distinct pairs", s->vocab,
                 s->num_kv_pairs);
    else if (!(s->power_a > 0))
        snprintf(msg, sizeof msg, "task.power_a = %g must be positive", s->power_a);
    else
        return NULL;
    return msg;
}

/* k distinct integers from [lo, hi), in draw order (partial Fisher-Yates). */
static void distinct(Rng *r, int lo, int hi, int k, int32_t *out, int32_t *pool) {
    int n = hi - lo;
    for (int i = 0; i < n; i++) pool[i] = lo + i;
    for (int i = 0; i < k; i++) {
        int j = i + (int)rng_below(r, (uint64_t)(n - i));
        int32_t t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
        out[i] = pool[i];
    }
}

void mqar_example(const MqarSpec *s, Rng *r, int32_t *tokens, int32_t *labels) {
    int V = s->vocab, L = s->seq_len, D = s->num_kv_pairs, ctx = 2 * D, space = (L - ctx) / 2;
    int32_t *pool = rt_malloc(sizeof(int32_t) * (size_t)(V > space ? V : space));
    int32_t *keys = rt_malloc(sizeof(int32_t) * (size_t)D),
            *vals = rt_malloc(sizeof(int32_t) * (size_t)D);
    distinct(r, 1, V / 2, D, keys, pool);
    distinct(r, V / 2, V, D, vals, pool);
    for (int i = 0; i < L; i++) tokens[i] = 0, labels[i] = -100;
    for (int j = 0; j < D; j++) tokens[2 * j] = keys[j], tokens[2 * j + 1] = vals[j];
    /* gaps without replacement, P(g) ~ (g+1)^(a-1): successive draws renormalised over the
     * gaps not yet taken (as numpy.random.choice(replace=False, p=...)) */
    double *w = rt_malloc(sizeof(double) * (size_t)space), total = 0;
    for (int g = 0; g < space; g++) total += w[g] = pow(g + 1.0, s->power_a - 1.0);
    for (int j = 0; j < D; j++) {
        double u = rng_uniform(r) * total, acc = 0;
        int g = 0;
        for (; g < space - 1; g++) {
            if (w[g] == 0) continue;
            if ((acc += w[g]) > u) break;
        }
        while (w[g] == 0) g--; /* rounding at the top end: the last gap still available */
        total -= w[g];
        w[g] = 0;
        tokens[ctx + 2 * g] = keys[j];
        labels[ctx + 2 * g] = vals[j];
    }
    if (s->random_non_queries)
        for (int i = ctx; i < L; i++)
            if (labels[i] == -100) tokens[i] = (int32_t)rng_below(r, (uint64_t)V);
    rt_free(w);
    rt_free(pool);
    rt_free(keys);
    rt_free(vals);
}

/* ---- groups ---- */

static int factorial(int n) { return n <= 1 ? 1 : n * factorial(n - 1); }

/* Permutation number k of n points in lexicographic order. */
static void nth_permutation(int n, int k, int *p) {
    int used[8] = {0};
    for (int i = 0; i < n; i++) {
        int f = factorial(n - 1 - i), idx = k / f;
        k %= f;
        for (int v = 0; v < n; v++)
            if (!used[v] && idx-- == 0) {
                p[i] = v;
                used[v] = 1;
                break;
            }
    }
}

static int is_even(const int *p, int n) {
    int inversions = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) inversions += p[i] > p[j];
    return inversions % 2 == 0;
}

const char *group_make(Group *g, const char *name) {
    memset(g, 0, sizeof(*g));
    if (strlen(name) != 2 || (name[0] != 'S' && name[0] != 'A') || name[1] < '2' || name[1] > '5')
        return "unknown group (available: S2, A3, S3, A5, S5, and S4, A4)";
    if (name[0] == 'A' && name[1] == '2') return "A2 is the trivial group";
    snprintf(g->name, sizeof g->name, "%s", name);
    g->n = name[1] - '0';
    int all = factorial(g->n), alternating = name[0] == 'A';
    int(*perm)[8] = rt_calloc((size_t)all, sizeof(*perm));
    for (int k = 0; k < all; k++) {
        int p[8];
        nth_permutation(g->n, k, p);
        if (alternating && !is_even(p, g->n)) continue;
        memcpy(perm[g->order++], p, sizeof p);
    }
    g->mul = rt_malloc(sizeof(int) * (size_t)(g->order * g->order));
    for (int a = 0; a < g->order; a++)
        for (int b = 0; b < g->order; b++) {
            int c[8];
            for (int i = 0; i < g->n; i++) c[i] = perm[a][perm[b][i]]; /* (a.b)(i) = a(b(i)) */
            int found = -1;
            for (int e = 0; e < g->order && found < 0; e++)
                if (!memcmp(perm[e], c, sizeof(int) * (size_t)g->n)) found = e;
            RT_ASSERT(found >= 0);
            g->mul[a * g->order + b] = found;
        }
    rt_free(perm);
    return NULL;
}

void group_free(Group *g) {
    rt_free(g->mul);
    memset(g, 0, sizeof(*g));
}

void state_example(const Group *g, Rng *r, int len, int32_t *tokens, int32_t *labels) {
    int acc = 0;          /* the identity: permutation 0 in lexicographic order */
    tokens[0] = g->order; /* BOS */
    labels[0] = -100;
    for (int t = 1; t < len; t++) {
        int x = (int)rng_below(r, (uint64_t)g->order);
        acc = g->mul[acc * g->order + x];
        tokens[t] = x;
        labels[t] = acc;
    }
}

/* ---- copying ---- */

/* Appends "$ s | s ." (|s| = len) to str at *n (up to cap tokens) with its mask. */
static void copy_example(Rng *r, int len, int32_t *str, uint8_t *mask, int *n, int cap) {
    int32_t s[4096];
    RT_ASSERT(len <= 4096);
    for (int i = 0; i < len; i++) s[i] = (int32_t)rng_below(r, COPY_LETTERS);
    int total = 2 * len + 3;
    for (int i = 0; i < total && *n < cap; i++, (*n)++) {
        int32_t t = i == 0             ? COPY_BOS
                    : i <= len         ? s[i - 1]
                    : i == len + 1     ? COPY_SEP
                    : i <= 2 * len + 1 ? s[i - len - 2]
                                       : COPY_EOS;
        str[*n] = t;
        mask[*n] = i >= len + 2; /* the copy and the '.' */
    }
}

/* tokens = str[0..T-1]; label p = str[p+1] where the next token is a scored one. */
static void shift_labels(const int32_t *str, const uint8_t *mask, int T, int32_t *tokens,
                         int32_t *labels) {
    for (int p = 0; p < T; p++) {
        tokens[p] = str[p];
        labels[p] = mask[p + 1] ? str[p + 1] : -100;
    }
}

void copy_train_sequence(Rng *r, int min_len, int max_len, int seq_len, int32_t *tokens,
                         int32_t *labels) {
    int cap = seq_len + 1, n = 0;
    int32_t *str = rt_malloc(sizeof(int32_t) * (size_t)cap);
    uint8_t *mask = rt_malloc((size_t)cap);
    while (n < cap) {
        int start = n, len = min_len + (int)rng_below(r, (uint64_t)(max_len - min_len + 1));
        copy_example(r, len, str, mask, &n, cap);
        if (n - start < 2 * len + 3)
            memset(mask + start, 0, (size_t)(n - start)); /* cut off: unlabeled */
    }
    shift_labels(str, mask, seq_len, tokens, labels);
    rt_free(str);
    rt_free(mask);
}

void copy_eval_sequence(Rng *r, int len, int seq_len, int32_t *tokens, int32_t *labels) {
    RT_ASSERT(seq_len >= 2 * len + 3);
    int cap = seq_len + 1, n = 0;
    int32_t *str = rt_malloc(sizeof(int32_t) * (size_t)cap);
    uint8_t *mask = rt_calloc((size_t)cap, 1);
    copy_example(r, len, str, mask, &n, cap);
    for (; n < cap; n++) str[n] = COPY_PAD, mask[n] = 0;
    shift_labels(str, mask, seq_len, tokens, labels);
    rt_free(str);
    rt_free(mask);
}

/* ---- copy memory ---- */

const char *copy_memory_check(const CopyMemSpec *s) {
    static char msg[160];
    if (s->delay < 1)
        snprintf(msg, sizeof msg, "task.delay = %d must be at least 1 (the marker ends the delay)",
                 s->delay);
    else if (s->length < 1)
        snprintf(msg, sizeof msg, "task.copy_length = %d must be at least 1", s->length);
    else if (s->symbols < 1 || s->symbols > COPYMEM_MAX_SYMBOLS)
        snprintf(msg, sizeof msg,
                 "task.symbols = %d must be in 1..%d (nnRNN's inputs: blank 0, symbols, marker 9)",
                 s->symbols, COPYMEM_MAX_SYMBOLS);
    else
        return NULL;
    return msg;
}

int copy_memory_row(const CopyMemSpec *s) { return s->delay + 2 * s->length; }

void copy_memory_example(const CopyMemSpec *s, Rng *r, int32_t *tokens, int32_t *labels) {
    int T = s->delay, c = s->length, n = copy_memory_row(s);
    for (int p = 0; p < n; p++) tokens[p] = labels[p] = COPYMEM_BLANK;
    for (int i = 0; i < c; i++) {
        int32_t x = 1 + (int32_t)rng_below(r, (uint64_t)s->symbols);
        tokens[i] = x;
        labels[T + c + i] = x;
    }
    tokens[c + T - 1] = COPYMEM_MARKER;
}

double copy_memory_baseline(const CopyMemSpec *s) {
    return s->length * log((double)s->symbols) / copy_memory_row(s);
}
