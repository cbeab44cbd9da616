/* The synthetic task generators (docs/evaluation.md part B): MQAR layout and its power-law query
 * gaps, group word problems against a brute-force running product over independently built
 * permutations, copy sequences well formed, nnRNN's copy-memory rows position by position, and
 * the train/test streams disjoint. */
#include <stdint.h>
#include <string.h>

#include "data/synth_tasks.h"
#include "harness.h"
#include "util/error.h"

/* ---- MQAR ---- */

static void check_mqar_layout(const MqarSpec *s, int examples) {
    int V = s->vocab, L = s->seq_len, D = s->num_kv_pairs, ctx = 2 * D;
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)L),
            *lab = rt_malloc(sizeof(int32_t) * (size_t)L);
    int bad = 0;
    for (int e = 0; e < examples && !bad; e++) {
        Rng r;
        task_example_rng(&r, 7, 0, e);
        mqar_example(s, &r, tok, lab);
        for (int j = 0; j < D; j++) {
            int k = tok[2 * j], v = tok[2 * j + 1];
            bad |= !(k >= 1 && k < V / 2) || !(v >= V / 2 && v < V) || lab[2 * j] != -100 ||
                   lab[2 * j + 1] != -100;
            for (int i = 0; i < j; i++)
                bad |= tok[2 * i] == k || tok[2 * i + 1] == v; /* distinct */
        }
        int queries = 0, seen[1024] = {0};
        for (int p = ctx; p < L; p++) {
            if (lab[p] == -100) {
                /* not a query: 0, or any token with random_non_queries */
                bad |= s->random_non_queries ? !(tok[p] >= 0 && tok[p] < V) : tok[p] != 0;
                continue;
            }
            queries++;
            bad |= (p - ctx) % 2 != 0; /* queries sit at even offsets 2g */
            int j = 0;
            while (j < D && tok[2 * j] != tok[p]) j++;
            bad |= j == D || lab[p] != tok[2 * j + 1] ||
                   seen[j]++; /* each key asked once, labeled with its value */
        }
        bad |= queries != D;
        CHECK_MSG(!bad, "MQAR V=%d L=%d D=%d random=%d: example %d is malformed", V, L, D,
                  s->random_non_queries, e);
    }
    rt_free(tok);
    rt_free(lab);
}

static void test_mqar_layout(void) {
    static const int LD[][2] = {{64, 4}, {128, 8}, {256, 16}, {512, 64}};
    for (int i = 0; i < 4; i++)
        for (int rnd = 0; rnd <= 1; rnd++) {
            MqarSpec s = {8192, LD[i][0], LD[i][1], 0.01, rnd};
            CHECK(mqar_check(&s) == NULL);
            check_mqar_layout(&s, 300);
        }
    MqarSpec dense = {300, 256, 64, 0.01, 0}; /* every query slot taken: no replacement */
    check_mqar_layout(&dense, 300);
}

/* Upper 1e-4 quantile of chi-square with df degrees of freedom (Wilson-Hilferty). */
static double chi2_critical(int df) {
    double z = 3.719, a = 2.0 / (9.0 * df), c = 1 - a + z * sqrt(a);
    return df * c * c * c;
}

/* Chi-square statistic of counts against probabilities p, tail bins merged until each expected
 * count is at least 20; *df receives the degrees of freedom. */
static double chi2(const int64_t *counts, const double *p, int bins, int64_t n, int *df) {
    double stat = 0, o = 0, e = 0;
    int k = 0;
    for (int g = 0; g < bins; g++) {
        o += (double)counts[g];
        e += p[g] * (double)n;
        if (e >= 20 || g == bins - 1) {
            stat += (o - e) * (o - e) / e;
            k++;
            o = e = 0;
        }
    }
    *df = k - 1;
    return stat;
}

/* The gap of the first key (drawn first) follows P(g) proportional to (g+1)^(a-1) exactly:
 * the later draws renormalise over the gaps left, as numpy's choice(replace=False) does. */
static void test_mqar_power_law(void) {
    for (int D = 1; D <= 4; D += 3) {
        MqarSpec s = {300, 256, D, 0.01, 0};
        int space = (s.seq_len - 2 * D) / 2;
        int64_t n = 60000, *counts = rt_calloc((size_t)space, sizeof(int64_t));
        int32_t tok[256], lab[256];
        for (int64_t e = 0; e < n; e++) {
            Rng r;
            task_example_rng(&r, 11, 1, e);
            mqar_example(&s, &r, tok, lab);
            for (int p = 2 * D; p < s.seq_len; p++)
                if (lab[p] != -100 && tok[p] == tok[0]) counts[(p - 2 * D) / 2]++;
        }
        double *power = rt_malloc(sizeof(double) * (size_t)space),
               *uniform = rt_malloc(sizeof(double) * (size_t)space), z = 0;
        for (int g = 0; g < space; g++) z += power[g] = pow(g + 1.0, s.power_a - 1);
        for (int g = 0; g < space; g++) power[g] /= z, uniform[g] = 1.0 / space;
        int df, df_u;
        double stat = chi2(counts, power, space, n, &df),
               stat_u = chi2(counts, uniform, space, n, &df_u);
        CHECK_MSG(stat < chi2_critical(df),
                  "D=%d: first-key gaps vs the power law: chi2 %.1f > %.1f (df %d)", D, stat,
                  chi2_critical(df), df);
        /* the same statistic does tell the power law from a uniform placement */
        CHECK_MSG(stat_u > 100 * chi2_critical(df_u), "D=%d: chi2 against uniform only %.1f", D,
                  stat_u);
        rt_free(counts);
        rt_free(power);
        rt_free(uniform);
    }
}

static void test_mqar_check(void) {
    MqarSpec odd = {8192, 63, 4, 0.01, 0}, crowded = {8192, 64, 17, 0.01, 0},
             small_vocab = {64, 64, 4, 0.01, 0};
    const char *m;
    CHECK((m = mqar_check(&odd)) && strstr(m, "train.seq_len = 63"));
    CHECK((m = mqar_check(&crowded)) && strstr(m, "task.num_kv_pairs = 17"));
    CHECK((m = mqar_check(&small_vocab)) && strstr(m, "task.vocab = 64"));
}

/* ---- groups ---- */

/* Next permutation in lexicographic order; 0 after the last. */
static int next_perm(int *p, int n) {
    int i = n - 2;
    while (i >= 0 && p[i] >= p[i + 1]) i--;
    if (i < 0) return 0;
    int j = n - 1;
    while (p[j] <= p[i]) j--;
    int t = p[i];
    p[i] = p[j];
    p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) t = p[a], p[a] = p[b], p[b] = t;
    return 1;
}

static int parity(const int *p, int n) {
    int c = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) c += p[i] > p[j];
    return c & 1;
}

static void test_group_word_problems(void) {
    static const struct {
        const char *name;
        int n, alternating, order;
    } G[] = {
        {"S2", 2, 0, 2}, {"A3", 3, 1, 3}, {"S3", 3, 0, 6}, {"A5", 5, 1, 60}, {"S5", 5, 0, 120}};
    for (int gi = 0; gi < 5; gi++) {
        int n = G[gi].n, elems[120][5], count = 0, p[5];
        for (int i = 0; i < n; i++) p[i] = i;
        do
            if (!G[gi].alternating || !parity(p, n)) memcpy(elems[count++], p, sizeof p);
        while (next_perm(p, n));
        Group g;
        CHECK(group_make(&g, G[gi].name) == NULL);
        CHECK(g.order == G[gi].order && count == G[gi].order);
        int len = 300, bad = 0, commute = 1;
        int32_t tok[300], lab[300];
        for (int e = 0; e < 20; e++) {
            Rng r;
            task_example_rng(&r, 3, 0, e);
            state_example(&g, &r, len, tok, lab);
            bad |= tok[0] != g.order || lab[0] != -100; /* BOS, unlabeled */
            int acc[5];
            for (int i = 0; i < n; i++) acc[i] = i;
            for (int t = 1; t < len; t++) {
                bad |= tok[t] < 0 || tok[t] >= g.order;
                int next[5];
                for (int i = 0; i < n; i++)
                    next[i] = acc[elems[tok[t]][i]]; /* (acc.x)(i) = acc(x(i)) */
                memcpy(acc, next, sizeof acc);
                bad |= memcmp(elems[lab[t]], acc, sizeof(int) * (size_t)n) != 0;
            }
        }
        for (int a = 0; a < g.order; a++)
            for (int b = 0; b < g.order; b++)
                commute &= g.mul[a * g.order + b] == g.mul[b * g.order + a];
        CHECK_MSG(!bad, "%s: labels differ from the brute-force running product", G[gi].name);
        CHECK_MSG(commute == (g.order <= 3), "%s: commutativity %d", G[gi].name,
                  commute); /* S2, A3 abelian */
        group_free(&g);
    }
    Group g;
    CHECK(group_make(&g, "Q8") != NULL);
    CHECK(group_make(&g, "A2") != NULL);
}

/* ---- copying ---- */

/* Checks "$ s | s ." examples packed from tokens[0] and builds the labels they must have:
 * the positions predicting the copied s and the '.' are labeled with the next token, the rest
 * -100; the example cut off by the end of the context is wholly unlabeled. */
#define ANY_LABEL -2 /* the last position predicts a token past the context */
static int check_copy_train(const int32_t *tok, const int32_t *lab, int T, int min_len,
                            int max_len) {
    int32_t want[512];
    int p = 0, complete = 0;
    for (int q = 0; q < T; q++) want[q] = -100;
    while (p < T) {
        if (tok[p] != COPY_BOS) return 0;
        int len = 0;
        while (p + 1 + len < T && tok[p + 1 + len] < COPY_LETTERS) len++;
        int end = p + 2 * len + 3;                  /* one past the '.' */
        if (p + 1 + len >= T || end > T + 1) break; /* cut off */
        if (len < min_len || len > max_len || tok[p + len + 1] != COPY_SEP) return 0;
        for (int i = 0; i < len; i++)
            if (p + len + 2 + i < T && tok[p + len + 2 + i] != tok[p + 1 + i]) return 0;
        if (end - 1 < T && tok[end - 1] != COPY_EOS) return 0;
        for (int q = p + len + 1; q <= end - 2; q++) want[q] = q + 1 < T ? tok[q + 1] : ANY_LABEL;
        complete++;
        p = end;
    }
    for (int q = 0; q < T; q++)
        if (want[q] == ANY_LABEL ? !(lab[q] >= 0 && lab[q] <= COPY_EOS) : lab[q] != want[q])
            return 0;
    return complete > 0;
}

static void test_copy(void) {
    int T = 256, bad = 0;
    int32_t tok[256], lab[256];
    for (int e = 0; e < 200; e++) {
        Rng r;
        task_example_rng(&r, 5, 0, e);
        copy_train_sequence(&r, 2, 64, T, tok, lab);
        bad |= !check_copy_train(tok, lab, T, 2, 64);
    }
    CHECK_MSG(!bad, "copy training sequences malformed");
    for (int len = 1; len <= 100; len += 33) {
        int n = 2 * len + 3 + 7;
        Rng r;
        task_example_rng(&r, 5, 1, len);
        copy_eval_sequence(&r, len, n, tok, lab);
        int ok = tok[0] == COPY_BOS && tok[len + 1] == COPY_SEP && tok[2 * len + 2] == COPY_EOS,
            labeled = 0;
        for (int i = 0; i < len; i++)
            ok &= tok[1 + i] < COPY_LETTERS && tok[len + 2 + i] == tok[1 + i];
        for (int q = 2 * len + 3; q < n; q++) ok &= tok[q] == COPY_PAD;
        for (int q = 0; q < n; q++) {
            int scored = q >= len + 1 && q <= 2 * len + 1;
            labeled += lab[q] != -100;
            ok &= scored ? lab[q] == tok[q + 1] : lab[q] == -100;
        }
        CHECK_MSG(ok && labeled == len + 1, "copy eval sequence of length %d malformed", len);
    }
}

/* ---- copy memory ---- */

/* nnRNN's copytask.py rows, position by position: inputs x = c symbols, T-1 blanks (0), the
 * marker (9), c blanks; outputs y = T + c blanks, then the c symbols; every position scored. */
static void test_copy_memory_layout(void) {
    static const CopyMemSpec specs[] = {{200, 10, 8}, {1, 1, 1}, {5, 3, 2}, {37, 10, 8}};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        const CopyMemSpec *s = &specs[k];
        int T = s->delay, c = s->length, n = copy_memory_row(s), bad = 0;
        CHECK(copy_memory_check(s) == NULL && n == T + 2 * c);
        int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)n),
                *lab = rt_malloc(sizeof(int32_t) * (size_t)n);
        for (int e = 0; e < 300; e++) {
            Rng r;
            task_example_rng(&r, 3, 0, e);
            copy_memory_example(s, &r, tok, lab);
            for (int p = 0; p < n; p++) {
                int32_t x = p < c ? tok[p] : p == c + T - 1 ? COPYMEM_MARKER : COPYMEM_BLANK;
                int32_t y = p < T + c ? COPYMEM_BLANK : tok[p - T - c];
                bad += tok[p] != x || lab[p] != y;
            }
            for (int i = 0; i < c; i++) bad += !(tok[i] >= 1 && tok[i] <= s->symbols);
        }
        CHECK_MSG(!bad, "copy memory T=%d c=%d K=%d: %d positions differ from nnRNN's layout", T, c,
                  s->symbols, bad);
        rt_free(tok);
        rt_free(lab);
    }
    /* the symbols are uniform over 1..8 (chi-square over 10000 rows of 10) */
    CopyMemSpec s = {3, 10, 8};
    int32_t tok[23], lab[23];
    int64_t counts[8] = {0};
    double p[8];
    for (int e = 0; e < 10000; e++) {
        Rng r;
        task_example_rng(&r, 11, 0, e);
        copy_memory_example(&s, &r, tok, lab);
        for (int i = 0; i < 10; i++) counts[tok[i] - 1]++;
    }
    for (int k = 0; k < 8; k++) p[k] = 1.0 / 8;
    int df;
    double stat = chi2(counts, p, 8, 100000, &df);
    CHECK_MSG(stat < chi2_critical(df), "copy memory symbols: chi-square %.1f with %d df", stat,
              df);
    /* nnRNN's baseline 10 log 8 / (T + 20) */
    CopyMemSpec paper = {200, 10, 8};
    CHECK_CLOSE(copy_memory_baseline(&paper), 10 * log(8.0) / 220, 1e-15);
    CopyMemSpec bad_specs[] = {{0, 10, 8}, {10, 0, 8}, {10, 10, 9}, {10, 10, 0}};
    static const char *const key[] = {"task.delay", "task.copy_length", "task.symbols",
                                      "task.symbols"};
    for (int k = 0; k < 4; k++) {
        const char *msg = copy_memory_check(&bad_specs[k]);
        CHECK_MSG(msg && strstr(msg, key[k]), "spec %d: %s", k, msg ? msg : "accepted");
    }
}

/* ---- streams ---- */

static void test_streams(void) {
    MqarSpec s = {8192, 64, 4, 0.01, 1};
    int32_t a[64], b[64], c[64], la[64], lb[64], lc[64];
    Rng r;
    task_example_rng(&r, 9, 0, 42);
    mqar_example(&s, &r, a, la);
    task_example_rng(&r, 9, 0, 42);
    mqar_example(&s, &r, b, lb);
    task_example_rng(&r, 9, 1, 42);
    mqar_example(&s, &r, c, lc);
    CHECK(!memcmp(a, b, sizeof a) &&
          !memcmp(la, lb, sizeof la));  /* a pure function of (seed, split, i) */
    CHECK(memcmp(a, c, sizeof a) != 0); /* train and test differ */
    int same = 0;
    for (int i = 0; i < 1000; i++) {
        Rng tr, te;
        task_example_rng(&tr, 9, 0, i);
        task_example_rng(&te, 9, 1, i);
        mqar_example(&s, &tr, a, la);
        mqar_example(&s, &te, c, lc);
        same += !memcmp(a, c, sizeof a);
    }
    CHECK(same == 0);
}

static const TestCase tests[] = {
    {"mqar_layout", test_mqar_layout},
    {"mqar_power_law", test_mqar_power_law},
    {"mqar_check", test_mqar_check},
    {"group_word_problems", test_group_word_problems},
    {"copy", test_copy},
    {"copy_memory_layout", test_copy_memory_layout},
    {"streams", test_streams},
};

TH_MAIN(tests)
