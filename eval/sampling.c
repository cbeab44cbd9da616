#include "sampling.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/error.h"
#include "util/rng.h"

typedef struct {
    double z; /* scaled logit, then its unnormalised probability */
    int id;
} Cand;

struct Sampler {
    SamplingArgs *a; /* [rows]: row r's settings */
    int vocab;
    Rng *rng;  /* [rows]: row r's stream */
    Cand *c;   /* [vocab]: the candidates */
    double *w; /* [vocab]: scratch of the top-k selection */
};

const char *sampling_check(const SamplingArgs *a, const SamplingNames *names, char *msg,
                           int msglen) {
    if (!(a->temperature >= 0) || isinf(a->temperature)) {
        snprintf(msg, (size_t)msglen, "%s = %g: must be a number >= 0 (0 is greedy)",
                 names->temperature, a->temperature);
        return names->temperature;
    }
    if (a->top_k < 0) {
        snprintf(msg, (size_t)msglen, "%s = %d: must be >= 0 (0 keeps every token)", names->top_k,
                 a->top_k);
        return names->top_k;
    }
    if (!(a->top_p > 0 && a->top_p <= 1)) {
        snprintf(msg, (size_t)msglen, "%s = %g: must be in (0, 1] (1 keeps every token)",
                 names->top_p, a->top_p);
        return names->top_p;
    }
    return NULL;
}

Sampler *sampler_create_rows(const SamplingArgs *args, const uint64_t *stream, int vocab,
                             int rows) {
    char msg[256];
    RT_ASSERT(vocab > 0 && rows > 0);
    Sampler *s = rt_calloc(1, sizeof *s);
    s->a = rt_malloc(sizeof(SamplingArgs) * (size_t)rows);
    s->vocab = vocab;
    s->rng = rt_malloc(sizeof(Rng) * (size_t)rows);
    for (int r = 0; r < rows; r++) {
        RT_ASSERT(!sampling_check(&args[r], &(SamplingNames){"temperature", "top_k", "top_p"}, msg,
                                  sizeof msg));
        s->a[r] = args[r];
        rng_init(&s->rng[r], args[r].seed, stream[r]);
    }
    s->c = rt_malloc(sizeof(Cand) * (size_t)vocab);
    s->w = rt_malloc(sizeof(double) * (size_t)vocab);
    return s;
}

Sampler *sampler_create(const SamplingArgs *a, int vocab, int rows) {
    SamplingArgs *args = rt_malloc(sizeof(SamplingArgs) * (size_t)rows);
    uint64_t *stream = rt_malloc(sizeof(uint64_t) * (size_t)rows);
    for (int r = 0; r < rows; r++) {
        args[r] = *a;
        stream[r] = (uint64_t)r;
    }
    Sampler *s = sampler_create_rows(args, stream, vocab, rows);
    rt_free(stream);
    rt_free(args);
    return s;
}

void sampler_free(Sampler *s) {
    if (!s) return;
    rt_free(s->a);
    rt_free(s->rng);
    rt_free(s->c);
    rt_free(s->w);
    rt_free(s);
}

static int argmax_first(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* The k-th largest of w[0, n), 1 <= k <= n (quickselect; reorders w). */
static double kth_largest(double *w, int n, int k) {
    int lo = 0, hi = n - 1, want = k - 1; /* index of the k-th in decreasing order */
    while (lo < hi) {
        double pivot = w[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (w[i] > pivot) i++;
            while (w[j] < pivot) j--;
            if (i <= j) {
                double t = w[i];
                w[i++] = w[j];
                w[j--] = t;
            }
        }
        if (want <= j)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            break;
    }
    return w[want];
}

/* Decreasing scaled logit, then increasing id. */
static int cand_cmp(const void *pa, const void *pb) {
    const Cand *a = pa, *b = pb;
    if (a->z != b->z) return a->z > b->z ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

int sampler_next(Sampler *s, int row, const float *logits) {
    const SamplingArgs *a = &s->a[row];
    int V = s->vocab;
    for (int i = 0; i < V; i++)
        if (!isfinite(logits[i])) return SAMPLER_NONFINITE;
    if (a->temperature == 0) return argmax_first(logits, V);
    double inv_t = 1.0 / a->temperature, thr = -INFINITY;
    if (a->top_k > 0 && a->top_k < V) {
        for (int i = 0; i < V; i++) s->w[i] = logits[i] * inv_t;
        thr = kth_largest(s->w, V, a->top_k);
    }
    Cand *c = s->c;
    int n = 0;
    double mx = -INFINITY;
    for (int i = 0; i < V; i++) {
        double z = logits[i] * inv_t;
        if (z >= thr) {
            c[n++] = (Cand){z, i};
            if (z > mx) mx = z;
        }
    }
    RT_ASSERT(n > 0); /* the k-th largest is among them */
    if (a->top_p < 1) qsort(c, (size_t)n, sizeof *c, cand_cmp);
    double sum = 0;
    for (int j = 0; j < n; j++) sum += c[j].z = exp(c[j].z - mx);
    if (a->top_p < 1) { /* keep while the mass before the token is below top_p */
        double before = c[0].z, limit = a->top_p * sum;
        int keep = 1;
        while (keep < n && before < limit) before += c[keep++].z;
        n = keep;
        sum = 0;
        for (int j = 0; j < n; j++) sum += c[j].z;
    }
    double u = rng_uniform(&s->rng[row]) * sum, cum = 0;
    for (int j = 0; j < n - 1; j++)
        if (u < (cum += c[j].z)) return c[j].id;
    return c[n - 1].id;
}
