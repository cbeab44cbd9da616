#include "data/mad_tasks.h"

#include <stdio.h>
#include <string.h>

#include "util/error.h"

#define IGNORE (-100)
#define MAX_MOTIF 8

int mad_autoencoder(MadTask t) { return t == MAD_COMPRESSION; }

static int below(Rng *r, int n) { return (int)rng_below(r, (uint64_t)n); }

/* Whether this slot is noise: a draw only when frac_noise > 0 (as mad-lab). */
static int noisy(const MadSpec *s, Rng *r) {
    return s->frac_noise > 0 && rng_uniform(r) < s->frac_noise;
}

/* ---- checks and the memorization table ---- */

/* Non-special tokens of each task: the vocabulary minus its special tokens and the noise. */
static int plain_vocab(const MadSpec *s) {
    switch (s->task) {
    case MAD_RECALL:
    case MAD_NOISY_RECALL: return (s->multi_query ? s->vocab : s->vocab - 1) - s->noise_vocab;
    case MAD_FUZZY_RECALL: return s->vocab - (s->multi_query ? 1 : 2) - s->noise_vocab;
    case MAD_SELECTIVE_COPY: return s->vocab - 2;
    default: return s->vocab - 1 - s->noise_vocab;
    }
}

static const char *check(const MadSpec *s) {
    static char msg[256];
    int V = s->vocab, L = s->seq_len, ns = plain_vocab(s), K = s->k_motif, M = s->v_motif;
    msg[0] = 0;
    if (s->frac_noise > 0 && s->noise_vocab < 1)
        snprintf(msg, sizeof msg, "task.frac_noise = %g needs task.noise_vocab_size > 0",
                 s->frac_noise);
    else if (s->task == MAD_SELECTIVE_COPY && s->noise_vocab)
        snprintf(msg, sizeof msg,
                 "task.noise_vocab_size: selective copying has no noise vocabulary (its noise is "
                 "the blank token)");
    else if ((s->task <= MAD_NOISY_RECALL || s->task == MAD_MEMORIZATION) && (L < 4 || L % 2))
        snprintf(msg, sizeof msg, "task.seq_len = %d must be even and at least 4", L);
    else if (s->task == MAD_MEMORIZATION ? V < 3 || ns < 0
                                         : ns < (s->task <= MAD_FUZZY_RECALL ? 2 : 1))
        snprintf(msg, sizeof msg,
                 "task.vocab = %d leaves no room for keys and values (task.noise_vocab_size = %d)",
                 V, s->noise_vocab);
    else if (s->task == MAD_FUZZY_RECALL && (K < 1 || K > MAX_MOTIF || M < 1 || M > MAX_MOTIF))
        snprintf(msg, sizeof msg,
                 "task.k_motif_size = %d, task.v_motif_size = %d must be in [1, %d]", K, M,
                 MAX_MOTIF);
    else if (s->task == MAD_FUZZY_RECALL && (ns / 2 < K || ns - ns / 2 < M))
        snprintf(msg, sizeof msg,
                 "task.vocab = %d has %d key and %d value tokens: too few for motifs of %d and %d "
                 "distinct tokens",
                 V, ns / 2, ns - ns / 2, K, M);
    else if (s->task == MAD_FUZZY_RECALL && L <= 2 * (K + M))
        snprintf(msg, sizeof msg,
                 "task.seq_len = %d must exceed 2 (k_motif_size + v_motif_size) = %d", L,
                 2 * (K + M));
    else if (s->task == MAD_SELECTIVE_COPY &&
             (s->num_tokens_to_copy < 1 || L <= 2 * s->num_tokens_to_copy + 1))
        snprintf(msg, sizeof msg,
                 "task.seq_len = %d must exceed 2 task.num_tokens_to_copy + 1 = %d", L,
                 2 * s->num_tokens_to_copy + 1);
    else if (s->task == MAD_COMPRESSION && L < 2)
        snprintf(msg, sizeof msg, "task.seq_len = %d must be at least 2", L);
    return msg[0] ? msg : NULL;
}

/* Keys [0, (V-1)/2) to distinct values in [(V-1)/2, V-1): mad-lab zips its shuffled keys
 * with its shuffled values, a uniformly random injection. */
static void make_table(MadSpec *s, uint64_t seed) {
    int nk = (s->vocab - 1) / 2, nv = s->vocab - 1 - nk;
    int32_t *vals = rt_malloc(sizeof(int32_t) * (size_t)nv);
    Rng r;
    rng_init(&r, seed ^ 0x3E30000000000000ull, 0); /* a stream of its own, for both splits */
    for (int i = 0; i < nv; i++) vals[i] = nk + i;
    for (int i = nv - 1; i > 0; i--) {
        int j = below(&r, i + 1);
        int32_t t = vals[i];
        vals[i] = vals[j];
        vals[j] = t;
    }
    s->table = rt_malloc(sizeof(int32_t) * (size_t)nk);
    memcpy(s->table, vals, sizeof(int32_t) * (size_t)nk);
    rt_free(vals);
}

const char *mad_spec_make(MadSpec *s, MadTask t, const TaskConfig *c, uint64_t seed) {
    *s = (MadSpec){t,
                   c->vocab,
                   c->seq_len,
                   c->noise_vocab_size,
                   c->frac_noise,
                   c->k_motif_size,
                   c->v_motif_size,
                   c->multi_query,
                   c->num_tokens_to_copy,
                   NULL};
    const char *bad = check(s);
    if (!bad && t == MAD_MEMORIZATION) make_table(s, seed);
    return bad;
}

void mad_spec_free(MadSpec *s) {
    rt_free(s->table);
    s->table = NULL;
}

/* ---- in-context recall (and its noisy version) ---- */

/* The recall tasks' row from mad-lab's sequence in/tg of n >= T tokens: position p reads
 * in[p] and predicts in[p+1] when training, tg[p+1] (or nothing) when testing. */
static void lm_row(const int32_t *in, const int32_t *tg, int n, int test, int T, int32_t *tokens,
                   int32_t *labels) {
    for (int p = 0; p < T; p++) {
        tokens[p] = in[p];
        labels[p] = p + 1 < n ? (test ? tg[p + 1] : in[p + 1]) : IGNORE;
    }
}

/* L/2 - 1 slots of two tokens, each noise (probability frac_noise, except one slot drawn
 * to be a pair) or a pair k v: k uniform over the keys [0, ns/2), v the key's value in
 * this sequence (drawn uniformly from [ns/2, ns) at its first appearance); with
 * multi_query a repeated key is a query (its value the target). Then the probe: a key
 * shown before and its value (the target), after a copy token V-1 without multi_query.
 * mad-lab fails when every slot came out noise (the kept pair can be the probe's slot);
 * here that sequence is drawn again from the same stream. */
static void recall_example(const MadSpec *s, Rng *r, int test, int32_t *tokens, int32_t *labels) {
    int L = s->seq_len, ns = plain_vocab(s), nk = ns / 2, pairs = L / 2;
    int32_t *in = rt_malloc(sizeof(int32_t) * (size_t)(L + 1)),
            *tg = rt_malloc(sizeof(int32_t) * (size_t)(L + 1));
    int32_t *val = rt_malloc(sizeof(int32_t) * (size_t)nk),
            *shown = rt_malloc(sizeof(int32_t) * (size_t)nk);
    int n, nshown;
    do {
        n = nshown = 0;
        for (int k = 0; k < nk; k++) val[k] = -1;
        int keep = below(r, pairs);
        for (int i = 0; i < pairs - 1; i++) {
            if (i != keep && noisy(s, r)) {
                for (int j = 0; j < 2; j++) in[n] = ns + below(r, s->noise_vocab), tg[n++] = IGNORE;
                continue;
            }
            int k = below(r, nk), fresh = val[k] < 0;
            if (fresh) val[k] = nk + below(r, ns - nk), shown[nshown++] = k;
            in[n] = k, tg[n++] = IGNORE;
            in[n] = val[k], tg[n++] = !fresh && s->multi_query ? val[k] : IGNORE;
        }
    } while (nshown == 0);
    int kp = shown[below(r, nshown)];
    if (!s->multi_query) in[n] = s->vocab - 1, tg[n++] = IGNORE;
    in[n] = kp, tg[n++] = IGNORE;
    in[n] = val[kp], tg[n++] = val[kp];
    lm_row(in, tg, n, test, L, tokens, labels);
    rt_free(in);
    rt_free(tg);
    rt_free(val);
    rt_free(shown);
}

/* ---- fuzzy in-context recall ---- */

typedef struct {
    int n;
    int32_t t[MAX_MOTIF];
} Motif;

/* n distinct tokens of [lo, lo + range) in order: uniform over mad-lab's permutations. */
static Motif draw_motif(Rng *r, int lo, int range, int n) {
    Motif m = {n, {0}};
    for (int i = 0; i < n; i++) {
        int dup;
        do {
            m.t[i] = lo + below(r, range);
            dup = 0;
            for (int j = 0; j < i; j++) dup |= m.t[j] == m.t[i];
        } while (dup);
    }
    return m;
}

static int motif_eq(const Motif *a, const Motif *b) {
    return a->n == b->n && !memcmp(a->t, b->t, sizeof(int32_t) * (size_t)a->n);
}

static void put_motif(const Motif *m, int scored, int32_t *in, int32_t *tg, int *n) {
    for (int i = 0; i < m->n; i++, (*n)++) in[*n] = m->t[i], tg[*n] = scored ? m->t[i] : IGNORE;
}

/* Keys are motifs of 1..k_motif_size distinct key tokens when training, of k_motif_size
 * when testing; values motifs of 1..v_motif_size value tokens. A probe pair (kp, vp) is put
 * where the sequence first reaches a uniform index below L - 2 |kp vp| (if it does before
 * the sequence is full), then pairs or noise (frac_noise, as many tokens as the pair's
 * sizes) until the length reaches L - |kp vp| - k_motif_size - v_motif_size; a key drawn
 * equal to kp takes vp. Then the probe again (after a copy token V-1 without
 * multi_query), the sequence left-padded with V-1 (V-2 without multi_query) to L + 1. */
static void fuzzy_example(const MadSpec *s, Rng *r, int test, int32_t *tokens, int32_t *labels) {
    int L = s->seq_len, K = s->k_motif, M = s->v_motif, ns = plain_vocab(s), nk = ns / 2;
    int pad = s->multi_query ? s->vocab - 1 : s->vocab - 2;
    int32_t *in = rt_malloc(sizeof(int32_t) * (size_t)(L + 1)),
            *tg = rt_malloc(sizeof(int32_t) * (size_t)(L + 1));
    Motif *keys = rt_malloc(sizeof(Motif) * (size_t)L),
          *vals = rt_malloc(sizeof(Motif) * (size_t)L);
    Motif kp = draw_motif(r, 0, nk, test ? K : 1 + below(r, K));
    Motif vp = draw_motif(r, nk, ns - nk, 1 + below(r, M));
    int kvp = kp.n + vp.n, probe_idx = below(r, L - 2 * kvp), probe_added = 0, probe_shown = 0,
        n = 0, ne = 0;
    while (n < L - kvp - (K + M)) {
        int ks = test ? K : 1 + below(r, K), vs = 1 + below(r, M);
        if (n >= probe_idx && !probe_added) {
            put_motif(&kp, 0, in, tg, &n);
            put_motif(&vp, 0, in, tg, &n);
            probe_added = probe_shown = 1;
            continue;
        }
        if (noisy(s, r)) {
            for (int j = 0; j < ks + vs; j++)
                in[n] = ns + below(r, s->noise_vocab), tg[n++] = IGNORE;
            continue;
        }
        Motif k = draw_motif(r, 0, nk, ks), v;
        int shown = 1, e = 0;
        if (motif_eq(&k, &kp)) {
            v = vp;
            shown = probe_shown;
            probe_added = probe_shown = 1;
        } else {
            while (e < ne && !motif_eq(&keys[e], &k)) e++;
            if (e == ne) {
                v = draw_motif(r, nk, ns - nk, vs);
                keys[ne] = k, vals[ne++] = v, shown = 0;
            } else {
                v = vals[e];
            }
        }
        put_motif(&k, 0, in, tg, &n);
        put_motif(&v, shown && s->multi_query, in, tg, &n);
    }
    if (!s->multi_query) in[n] = s->vocab - 1, tg[n++] = IGNORE;
    put_motif(&kp, 0, in, tg, &n);
    put_motif(&vp, 1, in, tg, &n);
    int np = L + 1 - n; /* >= 1: the loop stops below L - |kp vp| */
    memmove(in + np, in, sizeof(int32_t) * (size_t)n);
    memmove(tg + np, tg, sizeof(int32_t) * (size_t)n);
    for (int i = 0; i < np; i++) in[i] = pad, tg[i] = IGNORE;
    lm_row(in, tg, L + 1, test, L, tokens, labels);
    rt_free(in);
    rt_free(tg);
    rt_free(keys);
    rt_free(vals);
}

/* ---- selective copying ---- */

/* num_tokens_to_copy tokens of [0, V-2) with the L - 2 n - 1 blanks (V-2) spread over the
 * n places before each of them (uniformly and independently, as mad-lab's np.insert at
 * indices below n: never after the last), then the copy token V-1 and n blanks, at which
 * the tokens are the targets in order (no shift: the j-th blank predicts the j-th token). */
static void selective_copy_example(const MadSpec *s, Rng *r, int32_t *tokens, int32_t *labels) {
    int V = s->vocab, L = s->seq_len, nc = s->num_tokens_to_copy, blank = V - 2, n = 0;
    int32_t *x = rt_malloc(sizeof(int32_t) * (size_t)nc);
    int *before = rt_calloc((size_t)nc, sizeof(int));
    for (int j = 0; j < nc; j++) x[j] = below(r, V - 2);
    for (int b = 0; b < L - 2 * nc - 1; b++) before[below(r, nc)]++;
    for (int j = 0; j < nc; j++) {
        for (int b = 0; b < before[j]; b++) tokens[n] = blank, labels[n++] = IGNORE;
        tokens[n] = x[j], labels[n++] = IGNORE;
    }
    tokens[n] = V - 1, labels[n++] = IGNORE;
    for (int j = 0; j < nc; j++) tokens[n] = blank, labels[n++] = x[j];
    RT_ASSERT(n == L);
    rt_free(x);
    rt_free(before);
}

/* ---- compression ---- */

/* mad-lab: L - 1 tokens of [0, ns) (each replaced by a noise token with probability
 * frac_noise), then the compression token V-1, every one its own target (noise tokens
 * included, as mad-lab's generator returns the inputs as the targets). The auto-encoder
 * head (model.head) decodes all L positions from the last one's state. */
static void compression_example(const MadSpec *s, Rng *r, int32_t *tokens, int32_t *labels) {
    int V = s->vocab, L = s->seq_len, ns = plain_vocab(s);
    for (int i = 0; i < L - 1; i++) tokens[i] = below(r, ns);
    tokens[L - 1] = V - 1;
    for (int i = 0; i < L - 1; i++)
        if (noisy(s, r)) tokens[i] = ns + below(r, s->noise_vocab);
    for (int i = 0; i < L; i++) labels[i] = tokens[i];
}

/* ---- memorization ---- */

/* L/2 slots, each noise (two noise tokens, unlabeled; frac_noise, except one slot) or a
 * key k uniform over [0, (V-1)/2) followed by the insert token V-1, labeled with the key's
 * value in the fixed table: predicted at the insert token. */
static void memorization_example(const MadSpec *s, Rng *r, int32_t *tokens, int32_t *labels) {
    int V = s->vocab, pairs = s->seq_len / 2, ns = plain_vocab(s), nk = (V - 1) / 2,
        keep = below(r, pairs);
    for (int i = 0, n = 0; i < pairs; i++, n += 2) {
        if (i != keep && noisy(s, r)) {
            for (int j = 0; j < 2; j++)
                tokens[n + j] = ns + below(r, s->noise_vocab), labels[n + j] = IGNORE;
            continue;
        }
        int k = below(r, nk);
        tokens[n] = k, labels[n] = IGNORE;
        tokens[n + 1] = V - 1, labels[n + 1] = s->table[k];
    }
}

void mad_example(const MadSpec *s, Rng *r, int test, int32_t *tokens, int32_t *labels) {
    switch (s->task) {
    case MAD_RECALL:
    case MAD_NOISY_RECALL: recall_example(s, r, test, tokens, labels); break;
    case MAD_FUZZY_RECALL: fuzzy_example(s, r, test, tokens, labels); break;
    case MAD_SELECTIVE_COPY: selective_copy_example(s, r, tokens, labels); break;
    case MAD_COMPRESSION: compression_example(s, r, tokens, labels); break;
    case MAD_MEMORIZATION: memorization_example(s, r, tokens, labels); break;
    }
}
