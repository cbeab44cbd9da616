/* The MAD generators (src/data/mad_tasks.c) against mad-lab's semantics: tokens in their
 * ranges, the scored positions exactly where mad-lab scores, the noise and motif-size rates
 * as configured, memorization's table fixed for the run, streams reproducible with train
 * and test disjoint, and brute-force solvers that read only the tokens up to the scored
 * position (memorization: and the table) reaching 100 % of the test set (fuzzy recall: every
 * position whose key was shown; mad-lab's generator can leave the final probe's key out). */
#include <stdint.h>
#include <string.h>

#include "data/mad_tasks.h"
#include "data/synth_tasks.h"
#include "harness.h"
#include "task/task.h"
#include "util/error.h"

#define IGNORE (-100)

/* mad-lab's baseline setting of each task (the baselines of its configs/tasks, MADConfig defaults).
 */
static TaskConfig baseline(MadTask t) {
    TaskConfig c;
    memset(&c, 0, sizeof c);
    c.vocab = 16;
    c.seq_len = 128;
    c.k_motif_size = c.v_motif_size = 1;
    c.multi_query = 1;
    c.num_tokens_to_copy = 16;
    switch (t) {
    case MAD_NOISY_RECALL: c.vocab = 32, c.noise_vocab_size = 16, c.frac_noise = 0.2; break;
    case MAD_FUZZY_RECALL: c.k_motif_size = c.v_motif_size = 3; break;
    case MAD_SELECTIVE_COPY: c.seq_len = 256; break;
    case MAD_COMPRESSION: c.seq_len = 32; break;
    case MAD_MEMORIZATION: c.vocab = 256, c.seq_len = 32; break;
    default: break;
    }
    return c;
}

typedef struct {
    MadSpec s;
    int T, V;
    int32_t *tok, *lab;
} Gen;

static Gen gen_open(MadTask t, const TaskConfig *c, uint64_t seed) {
    Gen g;
    const char *bad = mad_spec_make(&g.s, t, c, seed);
    RT_ASSERT(!bad);
    g.T = c->seq_len;
    g.V = c->vocab;
    g.tok = rt_malloc(sizeof(int32_t) * (size_t)g.T);
    g.lab = rt_malloc(sizeof(int32_t) * (size_t)g.T);
    return g;
}

static void gen_row(Gen *g, uint64_t seed, int test, int64_t i) {
    Rng r;
    task_example_rng(&r, seed, test, i);
    mad_example(&g->s, &r, test, g->tok, g->lab);
}

static void gen_close(Gen *g) {
    mad_spec_free(&g->s);
    rt_free(g->tok);
    rt_free(g->lab);
}

/* ---- brute-force solvers: the label of position p from tok[0..p] ---- */

/* Recall: the value after the key's previous occurrence (keys sit at even positions). */
static int solve_recall(const Gen *g, int p) {
    for (int j = p - 2; j >= 0; j -= 2)
        if (g->tok[j] == g->tok[p]) return g->tok[j + 1];
    return -1;
}

/* Fuzzy recall: keys and values are runs of key tokens [0, nk) and value tokens [nk, ns).
 * At the last token of a key run, or inside a value run, predict the next value token from
 * an earlier occurrence of the same key run; -1 when the key was not shown. */
static int solve_fuzzy(const Gen *g, int p) {
    const MadSpec *s = &g->s;
    int ns = s->vocab - 1 - s->noise_vocab, nk = ns / 2;
#define IS_KEY(t) ((t) >= 0 && (t) < nk)
#define IS_VAL(t) ((t) >= nk && (t) < ns)
    int ke = p, off = 0; /* key run ends at ke; off value tokens already seen */
    while (IS_VAL(g->tok[ke])) ke--, off++;
    if (!IS_KEY(g->tok[ke])) return -1;
    int kb = ke;
    while (kb > 0 && IS_KEY(g->tok[kb - 1])) kb--;
    int klen = ke - kb + 1;
    for (int e = kb - 1; e >= klen - 1; e--) { /* an earlier key run ending at e */
        int b = e - klen + 1;
        if (!IS_KEY(g->tok[e]) || IS_KEY(g->tok[e + 1]) || (b > 0 && IS_KEY(g->tok[b - 1])))
            continue;
        if (memcmp(g->tok + b, g->tok + kb, sizeof(int32_t) * (size_t)klen)) continue;
        for (int v = e + 1; v < kb && IS_VAL(g->tok[v]); v++)
            if (v == e + 1 + off) return g->tok[v];
        return -1;
    }
    return -1;
#undef IS_KEY
#undef IS_VAL
}

/* Selective copying: the j-th blank after the copy token is the j-th non-blank before it. */
static int solve_copy(const Gen *g, int p) {
    int V = g->s.vocab, c = 0, j = 0;
    while (g->tok[c] != V - 1) c++;
    int want = p - c - 1;
    for (int i = 0; i < c; i++)
        if (g->tok[i] != V - 2 && j++ == want) return g->tok[i];
    return -1;
}

static int solve(const Gen *g, int p) {
    switch (g->s.task) {
    case MAD_RECALL:
    case MAD_NOISY_RECALL: return solve_recall(g, p);
    case MAD_FUZZY_RECALL: return solve_fuzzy(g, p);
    case MAD_SELECTIVE_COPY: return solve_copy(g, p);
    case MAD_COMPRESSION: return g->tok[p]; /* the auto-encoder reads the whole row */
    case MAD_MEMORIZATION: return g->s.table[g->tok[p - 1]];
    }
    return -1;
}

/* ---- layout: ranges and the scored positions ---- */

/* The positions mad-lab scores, from the tokens alone (test split). */
static int scored_here(const Gen *g, int p) {
    const MadSpec *s = &g->s;
    int L = s->seq_len, V = s->vocab;
    switch (s->task) {
    case MAD_RECALL:
    case MAD_NOISY_RECALL: { /* a key (even position, key token) seen in an earlier pair */
        int nk = (V - s->noise_vocab) / 2;
        if (p % 2 || g->tok[p] >= nk || p == L - 1) return 0;
        for (int j = p - 2; j >= 0; j -= 2)
            if (g->tok[j] == g->tok[p]) return 1;
        return 0;
    }
    case MAD_FUZZY_RECALL: return -1; /* checked by the solver */
    case MAD_SELECTIVE_COPY: return p >= L - s->num_tokens_to_copy;
    case MAD_COMPRESSION: return 1; /* every position, noise included */
    case MAD_MEMORIZATION: return p % 2 == 1 && g->tok[p] == V - 1;
    }
    return 0;
}

static void check_layout(MadTask t, const TaskConfig *c) {
    Gen g = gen_open(t, c, 5);
    int bad_range = 0, bad_scored = 0, bad_train = 0, labeled_test = 0;
    for (int test = 0; test < 2; test++)
        for (int i = 0; i < 300; i++) {
            gen_row(&g, 5, test, i);
            for (int p = 0; p < g.T; p++) {
                bad_range += g.tok[p] < 0 || g.tok[p] >= g.V ||
                             (g.lab[p] != IGNORE && (g.lab[p] < 0 || g.lab[p] >= c->vocab));
                int recall = t <= MAD_FUZZY_RECALL;
                if (recall && !test) { /* trained on every next token */
                    bad_train += g.lab[p] != (p + 1 < g.T ? g.tok[p + 1] : IGNORE) &&
                                 !(t == MAD_FUZZY_RECALL && p == g.T - 1);
                    continue;
                }
                int sc = scored_here(&g, p);
                if (sc >= 0) bad_scored += sc != (g.lab[p] != IGNORE);
                if (recall && g.lab[p] != IGNORE && p + 1 < g.T)
                    bad_scored += g.lab[p] != g.tok[p + 1];
                labeled_test += test && g.lab[p] != IGNORE;
            }
        }
    CHECK_MSG(!bad_range && !bad_scored && !bad_train && labeled_test > 0,
              "task %d: %d tokens out of range, %d scored positions wrong, %d training labels "
              "wrong, %d test labels",
              t, bad_range, bad_scored, bad_train, labeled_test);
    gen_close(&g);
}

static void test_layout(void) {
    for (int t = MAD_RECALL; t <= MAD_MEMORIZATION; t++) {
        TaskConfig c = baseline((MadTask)t);
        check_layout((MadTask)t, &c);
    }
    TaskConfig c = baseline(MAD_RECALL); /* single query: the copy token, then the probe */
    c.multi_query = 0;
    Gen g = gen_open(MAD_RECALL, &c, 5);
    int ok = 1;
    for (int i = 0; i < 100; i++) {
        gen_row(&g, 5, 1, i);
        for (int p = 0; p < g.T; p++) ok &= (g.lab[p] != IGNORE) == (p == g.T - 1);
        int j = g.T - 4; /* the pairs end before the copy token; the probe key follows it */
        while (j >= 0 && g.tok[j] != g.tok[g.T - 1]) j -= 2;
        ok &= g.tok[g.T - 2] == c.vocab - 1 && j >= 0 && g.tok[j + 1] == g.lab[g.T - 1];
    }
    CHECK_MSG(ok, "single-query recall: only the last position is scored, after the copy token");
    gen_close(&g);
    /* selective copying: the copy token and the blank counts */
    c = baseline(MAD_SELECTIVE_COPY);
    g = gen_open(MAD_SELECTIVE_COPY, &c, 5);
    ok = 1;
    for (int i = 0; i < 100; i++) {
        gen_row(&g, 5, 1, i);
        int L = c.seq_len, n = c.num_tokens_to_copy, plain = 0;
        ok &= g.tok[L - n - 1] == c.vocab - 1 &&
              g.tok[L - n - 2] != c.vocab - 2; /* never a blank before the copy token */
        for (int p = 0; p < L - n - 1; p++) plain += g.tok[p] < c.vocab - 2;
        ok &= plain == n;
    }
    CHECK_MSG(ok,
              "selective copying: n tokens, blanks only before each of them, then the copy token");
    gen_close(&g);
}

/* ---- rates ---- */

static void test_noise_rates(void) {
    /* noisy recall: a slot (two tokens) is noise with probability frac, except one slot
     * drawn uniformly over L/2 (it may be the probe's) */
    TaskConfig c = baseline(MAD_NOISY_RECALL);
    c.frac_noise = 0.4;
    Gen g = gen_open(MAD_NOISY_RECALL, &c, 3);
    int pairs = c.seq_len / 2, ns = c.vocab - c.noise_vocab_size, rows = 3000;
    double noise = 0;
    for (int i = 0; i < rows; i++) {
        gen_row(&g, 3, 1, i);
        for (int j = 0; j < pairs - 1; j++) {
            int a = g.tok[2 * j] >= ns, b = g.tok[2 * j + 1] >= ns;
            CHECK(a == b);
            noise += a;
        }
    }
    double expect = c.frac_noise * (pairs - 1 - (double)(pairs - 1) / pairs);
    CHECK_MSG(fabs(noise / rows - expect) < 0.2,
              "noisy recall: %.2f noise slots per row, expected %.2f", noise / rows, expect);
    gen_close(&g);

    c = baseline(MAD_COMPRESSION); /* each input token noise with probability frac */
    c.noise_vocab_size = 4;
    c.frac_noise = 0.3;
    g = gen_open(MAD_COMPRESSION, &c, 3);
    noise = 0;
    for (int i = 0; i < rows; i++) {
        gen_row(&g, 3, 0, i);
        for (int p = 0; p < c.seq_len - 1; p++)
            noise += g.tok[p] >= c.vocab - 1 - c.noise_vocab_size;
    }
    noise /= (double)rows * (c.seq_len - 1);
    CHECK_MSG(fabs(noise - 0.3) < 0.01, "compression: noise fraction %.3f, expected 0.3", noise);
    gen_close(&g);
}

/* Fuzzy recall: key runs of 1..k_motif_size tokens in training (uniform), exactly
 * k_motif_size in testing; value runs of 1..v_motif_size. */
static void test_fuzzy_motifs(void) {
    TaskConfig c = baseline(MAD_FUZZY_RECALL);
    Gen g = gen_open(MAD_FUZZY_RECALL, &c, 3);
    int ns = c.vocab - 1, nk = ns / 2;
    for (int test = 0; test < 2; test++) {
        double kruns[4] = {0}, vruns[4] = {0}, nkr = 0, nvr = 0;
        int too_long = 0;
        for (int i = 0; i < 2000; i++) {
            gen_row(&g, 3, test, i);
            for (int p = 0; p < g.T;) {
                int kind = g.tok[p] < nk ? 0 : g.tok[p] < ns ? 1 : 2, q = p;
                while (q < g.T && (g.tok[q] < nk ? 0 : g.tok[q] < ns ? 1 : 2) == kind) q++;
                if (kind < 2 && p > 0 && q < g.T) { /* whole runs only */
                    if (q - p > 3)
                        too_long++;
                    else if (kind == 0)
                        kruns[q - p]++, nkr++;
                    else
                        vruns[q - p]++, nvr++;
                }
                p = q;
            }
        }
        CHECK(!too_long);
        for (int k = 1; k <= 3; k++) {
            double want_k = test ? (k == 3) : 1.0 / 3;
            CHECK_MSG(fabs(kruns[k] / nkr - want_k) < 0.02,
                      "fuzzy %s: key motifs of %d: %.3f, expected %.3f", test ? "test" : "train", k,
                      kruns[k] / nkr, want_k);
            CHECK_MSG(fabs(vruns[k] / nvr - 1.0 / 3) < 0.03, "fuzzy %s: value motifs of %d: %.3f",
                      test ? "test" : "train", k, vruns[k] / nvr);
        }
    }
    gen_close(&g);
}

/* ---- memorization's table ---- */

static void test_memorization_table(void) {
    TaskConfig c = baseline(MAD_MEMORIZATION);
    Gen g = gen_open(MAD_MEMORIZATION, &c, 11), h = gen_open(MAD_MEMORIZATION, &c, 12);
    int nk = (c.vocab - 1) / 2, seen_val[256] = {0}, conflicts = 0, keys_seen = 0;
    int32_t map[128];
    for (int k = 0; k < nk; k++) map[k] = -1;
    for (int test = 0; test < 2; test++)
        for (int i = 0; i < 500; i++) {
            gen_row(&g, 11, test, i);
            for (int p = 0; p < c.seq_len; p += 2) {
                int k = g.tok[p], v = g.lab[p + 1];
                CHECK(k >= 0 && k < nk && v >= nk && v < c.vocab - 1);
                if (map[k] < 0) map[k] = v, keys_seen++;
                conflicts += map[k] != v;
            }
        }
    for (int k = 0; k < nk; k++)
        if (map[k] >= 0) conflicts += seen_val[map[k]]++ > 0; /* an injection */
    CHECK_MSG(!conflicts && keys_seen == nk, "memorization: %d conflicts, %d of %d keys seen",
              conflicts, keys_seen, nk);
    CHECK(memcmp(g.s.table, h.s.table, sizeof(int32_t) * (size_t)nk) !=
          0); /* another seed, another table */
    gen_close(&g);
    gen_close(&h);
}

/* ---- streams ---- */

static void test_streams(void) {
    for (int t = MAD_RECALL; t <= MAD_MEMORIZATION; t++) {
        TaskConfig c = baseline((MadTask)t);
        Gen g = gen_open((MadTask)t, &c, 9);
        size_t row = sizeof(int32_t) * (size_t)g.T;
        int rows = 500, same = 0, again = 1;
        int32_t *train = rt_malloc(row * (size_t)rows);
        for (int i = 0; i < rows; i++) {
            gen_row(&g, 9, 0, i);
            memcpy(train + (size_t)i * g.T, g.tok, row);
        }
        for (int i = 0; i < rows; i++) {
            gen_row(&g, 9, 0, i);
            again &= !memcmp(train + (size_t)i * g.T, g.tok, row);
        }
        for (int i = 0; i < rows; i++) {
            gen_row(&g, 9, 1, i);
            for (int j = 0; j < rows; j++) same += !memcmp(train + (size_t)j * g.T, g.tok, row);
        }
        CHECK_MSG(again && !same, "task %d: reproducible %d, %d test rows equal to training rows",
                  t, again, same);
        rt_free(train);
        gen_close(&g);
    }
}

/* ---- solvers ---- */

static void test_solvers(void) {
    for (int t = MAD_RECALL; t <= MAD_MEMORIZATION; t++) {
        TaskConfig c = baseline((MadTask)t);
        Gen g = gen_open((MadTask)t, &c, 21);
        int64_t scored = 0, right = 0, unsolved = 0, unsolved_last = 0;
        for (int i = 0; i < 1280; i++) {
            gen_row(&g, 21, 1, i);
            int last = g.T - 1;
            while (g.lab[last] == IGNORE) last--;
            for (int p = 0; p < g.T; p++) {
                if (g.lab[p] == IGNORE) continue;
                int y = solve(&g, p);
                scored++;
                right += y == g.lab[p];
                if (y < 0)
                    unsolved++, unsolved_last += t == MAD_FUZZY_RECALL && p > last - c.v_motif_size;
            }
        }
        printf("    task %d: solver %lld / %lld scored positions (%lld with the key never shown)\n",
               t, (long long)right, (long long)scored, (long long)unsolved);
        if (t == MAD_FUZZY_RECALL) /* right wherever the key was shown; the rest are final probes */
            CHECK(right + unsolved == scored && unsolved == unsolved_last &&
                  unsolved < scored / 50);
        else
            CHECK(right == scored && scored > 0);
        gen_close(&g);
    }
}

static void test_checks(void) {
    MadSpec s;
    TaskConfig c = baseline(MAD_SELECTIVE_COPY);
    c.seq_len = 33;
    CHECK(mad_spec_make(&s, MAD_SELECTIVE_COPY, &c, 1) != NULL); /* 2 n + 1 = 33 */
    c = baseline(MAD_RECALL);
    c.frac_noise = 0.5;
    CHECK(mad_spec_make(&s, MAD_RECALL, &c, 1) != NULL); /* noise without a noise vocabulary */
    c = baseline(MAD_FUZZY_RECALL);
    c.vocab = 8; /* 3 key tokens: motifs of 3 fit, 3 value tokens too */
    CHECK(mad_spec_make(&s, MAD_FUZZY_RECALL, &c, 1) == NULL);
    c.k_motif_size = 4;
    CHECK(mad_spec_make(&s, MAD_FUZZY_RECALL, &c, 1) != NULL);
    TaskConfig named = {.type = "mad_compression"}, unknown = {.type = "mad_copy"};
    const TaskImpl *task = task_of(&named);
    CHECK(task && task->variant == MAD_COMPRESSION && (task->flags & TASK_AUTOENCODER) &&
          !task_of(&unknown));
    CHECK(mad_autoencoder(MAD_COMPRESSION) && !mad_autoencoder(MAD_RECALL) &&
          !mad_autoencoder(MAD_MEMORIZATION));
}

static const TestCase tests[] = {
    {"layout", test_layout},
    {"noise_rates", test_noise_rates},
    {"fuzzy_motifs", test_fuzzy_motifs},
    {"memorization_table", test_memorization_table},
    {"streams", test_streams},
    {"solvers", test_solvers},
    {"checks", test_checks},
};

TH_MAIN(tests)
