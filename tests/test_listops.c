/* Long Range Arena's ListOps and byte-level text data (data/listops.h, data/text_bytes.h,
 * data/class_task.h): rows in the classification convention, the generator's values against
 * a brute-force solver that rewrites innermost applications, its limits and distributions,
 * reproducibility and disjoint splits, and the readers of LRA's ListOps TSV files, the
 * aclImdb directory and label/text TSV files on small generated files, errors included. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/run_config.h"
#include "data/class_task.h"
#include "data/listops.h"
#include "data/synth_tasks.h"
#include "data/text_bytes.h"
#include "harness.h"
#include "task/task.h"
#include "util/error.h"
#include "util/fsutil.h"

static const ListopsSpec LRA = {10, 10, 500, 2000};
static const ListopsSpec SHORT = {10, 10, 10, 64};

static int digit(int x) { return x >= LISTOPS_DIGIT0 && x <= LISTOPS_DIGIT0 + 9; }
static int op(int x) { return x >= LISTOPS_MIN && x <= LISTOPS_SM; }

static int by_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* ---- the brute-force solver ---- */

/* Rewrites the first "]" and the operator before it (its arguments all digits by then) into
 * their value until one token is left; -1 when the tokens are not one expression. */
static int brute_force(const uint8_t *tok, int n) {
    int *t = malloc(sizeof(int) * (size_t)(n + 1)), *v = malloc(sizeof(int) * (size_t)(n + 1)),
        m = n, value = -1;
    for (int i = 0; i < n; i++) t[i] = tok[i];
    while (m > 1) {
        int e = 0, s;
        while (e < m && t[e] != LISTOPS_END) e++;
        for (s = e - 1; s >= 0 && digit(t[s]); s--) {
        }
        int k = e - s - 1;
        if (e == m || s < 0 || !op(t[s]) || k < 1) break;
        for (int j = 0; j < k; j++) v[j] = t[s + 1 + j] - LISTOPS_DIGIT0;
        qsort(v, (size_t)k, sizeof(int), by_int);
        int r, sum = 0;
        for (int j = 0; j < k; j++) sum += v[j];
        switch (t[s]) {
        case LISTOPS_MIN: r = v[0]; break;
        case LISTOPS_MAX: r = v[k - 1]; break;
        case LISTOPS_MED:
            r = (int)(k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2.0);
            break; /* int(np.median) */
        default: r = sum % 10;
        }
        t[s] = LISTOPS_DIGIT0 + r;
        memmove(t + s + 1, t + e + 1, sizeof(int) * (size_t)(m - e - 1));
        m -= e - s;
    }
    if (m == 1 && digit(t[0])) value = t[0] - LISTOPS_DIGIT0;
    free(t);
    free(v);
    return value;
}

/* Checks the tree's limits: operators only above max_depth, 2..max_args arguments each. */
static int within_limits(const ListopsSpec *s, const uint8_t *tok, int n) {
    int *args = malloc(sizeof(int) * (size_t)(n + 1)), depth = 0,
        ok = n > s->min_length && n < s->max_length;
    for (int i = 0; i < n && ok; i++) {
        if (depth > 0 && tok[i] != LISTOPS_END) args[depth - 1]++;
        if (op(tok[i])) {
            ok &= depth + 1 < s->max_depth; /* this node's depth is depth + 1 */
            args[depth++] = 0;
        } else if (tok[i] == LISTOPS_END) {
            ok &= depth > 0 && args[depth - 1] >= 2 && args[depth - 1] <= s->max_args;
            depth--;
        } else {
            ok &= digit(tok[i]) && depth + 1 <= s->max_depth;
        }
    }
    free(args);
    return ok && depth == 0;
}

static int listops_tokens(const char *text, uint8_t *tok, int cap) {
    char err[256];
    return listops_tokenize(text, tok, cap, err, sizeof err);
}

static void test_known_values(void) {
    static const struct {
        const char *text;
        int value;
    } cases[] = {
        {"[MAX 4 3 [MIN 2 3 ] 1 0 [MED 1 5 8 9 2 ] ]", 5}, /* the example of the LRA paper */
        {"( ( ( [MAX 2 ) 9 ) ] )", 9},                     /* LRA's TSV form */
        {"[MED 1 2 ]", 1},                                 /* int(1.5) */
        {"[MED 3 8 ]", 5},
        {"[MED 9 0 4 7 ]", 5}, /* int((4 + 7) / 2) */
        {"[SM 9 9 9 ]", 7},
        {"[MIN 7 [SM 5 5 ] ]", 0},
        {"7", 7},
        {"[MAX ]", -1},
        {"[MAX 1 2", -1},
        {"1 2", -1},
        {"]", -1},
        {"[MAX 1 ] 2", -1},
        {"", -1},
    };
    uint8_t tok[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n = listops_tokens(cases[i].text, tok, 64);
        CHECK_MSG(n >= 0, "'%s' does not tokenize", cases[i].text);
        CHECK_MSG(listops_eval(tok, n) == cases[i].value, "'%s': listops_eval %d, expected %d",
                  cases[i].text, listops_eval(tok, n), cases[i].value);
        CHECK_MSG(brute_force(tok, n) == cases[i].value, "'%s': brute force %d, expected %d",
                  cases[i].text, brute_force(tok, n), cases[i].value);
    }
    CHECK(listops_tokens("( ( ( [MAX 2 ) 9 ) ] )", tok, 64) == 4 && tok[0] == LISTOPS_MAX &&
          tok[1] == LISTOPS_DIGIT0 + 2 && tok[2] == LISTOPS_DIGIT0 + 9 && tok[3] == LISTOPS_END);
    char err[256];
    CHECK(listops_tokenize("[MAX 1 [MAXX 2 ] ]", tok, 64, err, sizeof err) < 0 &&
          strstr(err, "'[MAXX'"));
    CHECK(listops_tokenize("[SM 10 ]", tok, 64, err, sizeof err) < 0 && strstr(err, "'10'"));
    CHECK(listops_tokenize("[SM 1 2 ]", tok, 3, err, sizeof err) < 0 && strstr(err, "more than 3"));
}

/* The generator's value, listops_eval and the brute-force solver agree, and every expression
 * keeps the limits, on thousands of expressions of each setting. */
static void test_values_and_limits(void) {
    static const ListopsSpec specs[] = {
        {10, 10, 10, 64}, {3, 4, 5, 40}, {2, 5, 1, 100}, {10, 10, 500, 2000}};
    static const int counts[] = {5000, 5000, 3000, 500};
    uint8_t *tok = malloc(2000);
    for (int k = 0; k < 4; k++) {
        const ListopsSpec *s = &specs[k];
        CHECK(listops_check(s) == NULL);
        int bad_value = 0, bad_limits = 0;
        for (int i = 0; i < counts[k]; i++) {
            int value, n = listops_example(s, 3, STREAM_TRAIN, i, tok, &value);
            bad_value += value < 0 || value > 9 || listops_eval(tok, n) != value ||
                         brute_force(tok, n) != value;
            bad_limits += !within_limits(s, tok, n);
        }
        CHECK_MSG(!bad_value && !bad_limits,
                  "depth %d, args %d, lengths (%d, %d): %d wrong values, %d outside the limits",
                  s->max_depth, s->max_args, s->min_length, s->max_length, bad_value, bad_limits);
    }
    free(tok);
}

/* At LRA's settings: lengths over all of (500, 2000) with LRA's generator's mean and median
 * (1037 and 962 over 2000 of its expressions), its values skewed to 0 and 9 (MIN and MAX of
 * many arguments: about 0.17 each, the others about 0.08). */
static void test_lra_distribution(void) {
    enum { N = 2000 };
    uint8_t tok[2000];
    int len[N], classes[10] = {0}, quarter[4] = {0};
    double mean = 0;
    for (int i = 0; i < N; i++) {
        int value;
        len[i] = listops_example(&LRA, 11, STREAM_TRAIN, i, tok, &value);
        mean += len[i] / (double)N;
        classes[value]++;
        quarter[(len[i] - 501) * 4 / 1499]++;
    }
    qsort(len, N, sizeof(int), by_int);
    CHECK_MSG(mean > 950 && mean < 1120 && len[N / 2] > 880 && len[N / 2] < 1040,
              "mean length %.1f, median %d", mean, len[N / 2]);
    CHECK(len[0] > 500 && len[N - 1] < 2000);
    for (int q = 0; q < 4; q++)
        CHECK_MSG(quarter[q] > N / 20, "%d expressions in quarter %d of (500, 2000)", quarter[q],
                  q);
    for (int v = 0; v < 10; v++) {
        double p = (double)classes[v] / N;
        CHECK_MSG(v == 0 || v == 9 ? p > 0.13 && p < 0.22 : p > 0.05 && p < 0.12,
                  "value %d: share %.3f", v, p);
    }
}

/* The generator's draws: with max_depth 2 an expression of more than 4 tokens is one operator
 * over k = 3..max_args digits, k, the operator and the digits uniform; below the root an
 * argument is an operator with probability 1/4 (LRA's VALUE_P). Counts within 5 sigma. */
static void test_draws(void) {
    enum { N = 20000 };
    ListopsSpec flat = {2, 6, 4, 100}, deep = {3, 10, 1, 200};
    uint8_t tok[200];
    int64_t k[7] = {0}, ops[4] = {0}, digits[10] = {0}, args = 0, inner = 0;
    for (int i = 0; i < N; i++) {
        int value, n = listops_example(&flat, 5, STREAM_TRAIN, i, tok, &value);
        k[n - 2]++;
        ops[tok[0] - LISTOPS_MIN]++;
        for (int j = 1; j < n - 1; j++) digits[tok[j] - LISTOPS_DIGIT0]++;
    }
    for (int j = 3; j <= 6; j++)
        CHECK_MSG(llabs(k[j] - N / 4) < 5 * 61, "%lld expressions of %d arguments in %d",
                  (long long)k[j], j, N);
    for (int j = 0; j < 4; j++)
        CHECK_MSG(llabs(ops[j] - N / 4) < 5 * 61, "operator %d drawn %lld times in %d", j,
                  (long long)ops[j], N);
    int64_t nd = 0;
    for (int j = 0; j < 10; j++) nd += digits[j];
    for (int j = 0; j < 10; j++)
        CHECK_MSG(fabs(digits[j] - nd / 10.0) < 5 * sqrt(nd * 0.09),
                  "digit %d drawn %lld times in %lld", j, (long long)digits[j], (long long)nd);
    for (int i = 0; i < N / 4; i++) {
        int value, n = listops_example(&deep, 5, STREAM_TRAIN, i, tok, &value), depth = 0;
        for (int j = 0; j < n; j++) {
            if (depth == 1 && tok[j] != LISTOPS_END) args++, inner += op(tok[j]);
            depth += op(tok[j]) - (tok[j] == LISTOPS_END);
        }
    }
    double p = (double)inner / (double)args;
    CHECK_MSG(fabs(p - 0.25) < 5 * sqrt(0.25 * 0.75 / (double)args),
              "arguments of the root: %.4f operators", p);
}

static void test_reproducible(void) {
    uint8_t a[64], b[64];
    int same_seed = 1, other_seed = 0, next = 0;
    for (int i = 0; i < 200; i++) {
        int va, vb, na = listops_example(&SHORT, 1, STREAM_TRAIN, i, a, &va);
        int nb = listops_example(&SHORT, 1, STREAM_TRAIN, i, b, &vb);
        same_seed &= na == nb && va == vb && !memcmp(a, b, (size_t)na);
        nb = listops_example(&SHORT, 2, STREAM_TRAIN, i, b, &vb);
        other_seed += na != nb || memcmp(a, b, (size_t)na);
        nb = listops_example(&SHORT, 1, STREAM_TRAIN, i + 1, b, &vb);
        next += na != nb || memcmp(a, b, (size_t)na);
    }
    CHECK(same_seed);
    CHECK_MSG(other_seed > 190 && next > 190,
              "%d of 200 differ with another seed, %d from the next example", other_seed, next);
}

typedef struct {
    char text[16];
    int split;
} Expr;

static int by_text(const void *a, const void *b) {
    return strcmp(((const Expr *)a)->text, ((const Expr *)b)->text);
}

/* Short expressions repeat often (this test sees repeats within the training split), yet no
 * expression appears in two splits. */
static void test_splits_disjoint(void) {
    enum { PER = 6000 };
    ListopsSpec tiny = {4, 3, 3, 12};
    static const int streams[3] = {STREAM_TRAIN, STREAM_VAL, STREAM_TEST};
    Expr *e = calloc(3 * PER, sizeof(Expr));
    uint8_t tok[16];
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < PER; i++) {
            int value, n = listops_example(&tiny, 9, streams[s], i, tok, &value);
            for (int j = 0; j < n; j++) e[s * PER + i].text[j] = (char)('A' + tok[j]);
            e[s * PER + i].split = s;
        }
    qsort(e, 3 * PER, sizeof(Expr), by_text);
    int repeats = 0, shared = 0;
    for (int i = 1; i < 3 * PER; i++)
        if (!strcmp(e[i].text, e[i - 1].text)) {
            repeats += e[i].split == e[i - 1].split;
            shared += e[i].split != e[i - 1].split;
        }
    CHECK_MSG(repeats > 100 && shared == 0,
              "%d repeats within a split, %d expressions shared by two", repeats, shared);
    free(e);
}

/* ---- rows of the task machinery ---- */

static RunConfig config(const char *ini) {
    RunConfig rc;
    char err[2048];
    if (run_config_load_string(&rc, ini, "test", NULL, 0, err, sizeof err)) rt_die("%s", err);
    return rc;
}

/* The convention: tokens in [1, vocab) up to the labeled position, 0 after it, one label. */
static int row_ok(const int32_t *tok, const int32_t *lab, int T, int vocab, int classes, int *n) {
    int at = -1, ok = 1;
    for (int t = 0; t < T; t++)
        if (lab[t] != -100) ok &= at < 0 && lab[t] >= 0 && lab[t] < classes, at = t;
    for (int t = 0; t < T; t++) ok &= t <= at ? tok[t] >= 1 && tok[t] < vocab : tok[t] == 0;
    *n = at + 1;
    return ok && at >= 0;
}

static void test_generated_rows(void) {
    RunConfig rc = config(
        "[model]\nvocab_size = 16\n[train]\nseq_len = 64\n[task]\ntype = listops\nmin_length = 10\n"
        "max_length = 64\n[data]\ntrain = task\n");
    CHECK(rc.task.max_depth == 10 && rc.task.max_args == 10 && !rc.task.path[0]);
    enum { T = 64 };
    int32_t tok[T], lab[T];
    uint8_t expr[T];
    for (DataSplit sp = SPLIT_TRAIN; sp <= SPLIT_TEST; sp++) {
        DataOptions opt = {.seq_len = T, .seed = 5, .split = sp, .world = 1};
        char err[512];
        ClassTask *c = class_task_open(&rc.task, CLASS_LISTOPS, &opt, err, sizeof err);
        CHECK_MSG(c, "%s", err);
        if (!c) continue;
        CHECK(class_task_size(c) == 0 && class_task_vocab(c) == LISTOPS_VOCAB &&
              class_task_classes(c) == 10);
        int bad = 0, n;
        for (int i = 0; i < 2000; i++) {
            class_task_row(c, i, tok, lab);
            if (!row_ok(tok, lab, T, LISTOPS_VOCAB, 10, &n) || n <= 10 ||
                tok[n - 1] != LISTOPS_END) {
                bad++;
                continue;
            }
            for (int t = 0; t < n; t++) expr[t] = (uint8_t)tok[t];
            bad += brute_force(expr, n) != lab[n - 1];
        }
        CHECK_MSG(!bad, "split %d: %d of 2000 rows break the convention or carry a wrong value", sp,
                  bad);
        class_task_free(c);
    }
    /* the limits are checked when the split opens */
    char err[512];
    DataOptions opt = {.seq_len = 62, .seed = 5, .split = SPLIT_TRAIN, .world = 1};
    CHECK(!class_task_open(&rc.task, CLASS_LISTOPS, &opt, err, sizeof err) &&
          strstr(err, "train.seq_len = 62"));
    rc.task.max_depth = 3;
    rc.task.max_args = 2;
    rc.task.min_length = 20; /* depth 3 and 2 arguments: 14 tokens at most */
    opt.seq_len = 64;
    CHECK(!class_task_open(&rc.task, CLASS_LISTOPS, &opt, err, sizeof err) &&
          strstr(err, "task.min_length = 20"));
    rc.task.max_depth = 0;
    CHECK(!class_task_open(&rc.task, CLASS_LISTOPS, &opt, err, sizeof err) &&
          strstr(err, "task.max_depth = 0"));
    rc.task.max_depth = 1; /* ten expressions, the digits: too few for three splits */
    rc.task.min_length = 0;
    rc.task.max_length = 2;
    CHECK(!class_task_open(&rc.task, CLASS_LISTOPS, &opt, err, sizeof err) &&
          strstr(err, "too few distinct expressions"));
}

/* data.train = task: the source's rows are the task's, rank by rank. */
static void test_task_source(void) {
    RunConfig rc = config(
        "[model]\nvocab_size = 16\n[train]\nseq_len = 40\n[task]\ntype = listops\nmin_length = 5\n"
        "max_length = 41\n[data]\ntrain = task\n");
    enum { T = 40, B = 3 };
    int32_t tok[2 * B * T], lab[2 * B * T], want_tok[T], want_lab[T];
    char err[512];
    DataOptions one = {.seq_len = T, .seed = 8, .split = SPLIT_VAL, .world = 1};
    ClassTask *c = class_task_open(&rc.task, CLASS_LISTOPS, &one, err, sizeof err);
    RT_ASSERT(c);
    for (int r = 0; r < 2; r++) {
        DataOptions opt = {.seq_len = T, .seed = 8, .split = SPLIT_VAL, .rank = r, .world = 2};
        DataSource *ds = task_source_open(&rc, &opt, err, sizeof err);
        CHECK_MSG(ds, "%s", err);
        if (!ds) continue;
        CHECK(ds->next_labeled(ds, tok, lab, B, err, sizeof err) == 0);
        for (int b = 0; b < B; b++) {
            class_task_row(c, r * B + b, want_tok, want_lab);
            CHECK_MSG(!memcmp(tok + b * T, want_tok, sizeof want_tok) &&
                          !memcmp(lab + b * T, want_lab, sizeof want_lab),
                      "rank %d row %d is not validation example %d", r, b, r * B + b);
        }
        datasource_free(ds);
    }
    class_task_free(c);
    rc.model.vocab_size = 12;
    CHECK(!task_source_open(&rc, &one, err, sizeof err) && strstr(err, "model.vocab_size >= 16"));
}

/* ---- files ---- */

static char *tmpdir(void) {
    char *d = rt_strdup("/tmp/rotor_test_listops_XXXXXX");
    RT_ASSERT(mkdtemp(d));
    return d;
}

static void write_text(const char *path, const char *text, size_t len) {
    FILE *f = fopen(path, "wb");
    RT_ASSERT(f && fwrite(text, 1, len, f) == len && fclose(f) == 0);
}

static void write_str(const char *path, const char *text) { write_text(path, text, strlen(text)); }

/* The expression tok[*at..] in LRA's to_string form: an operator over k arguments is k + 1
 * "( ", the operator, then " A )" for each argument and " ] )". Returns a heap string. */
static char *lra_text(const uint8_t *tok, int *at) {
    static const char *const NAME[] = {"[MIN", "[MAX", "[MED", "[SM"};
    uint8_t x = tok[(*at)++];
    if (digit(x)) return rt_sprintf("%d", x - LISTOPS_DIGIT0);
    char *arg[64];
    int k = 0;
    while (tok[*at] != LISTOPS_END) arg[k++] = lra_text(tok, at);
    (*at)++;
    char *s = rt_sprintf("%s", "");
    for (int j = 0; j <= k; j++) {
        char *t = rt_sprintf("( %s", s);
        rt_free(s);
        s = t;
    }
    char *t = rt_sprintf("%s%s %s )", s, NAME[x - LISTOPS_MIN], arg[0]);
    rt_free(s);
    s = t;
    for (int j = 1; j < k; j++) {
        t = rt_sprintf("%s %s )", s, arg[j]);
        rt_free(s);
        s = t;
    }
    t = rt_sprintf("%s ] )", s);
    rt_free(s);
    for (int j = 0; j < k; j++) rt_free(arg[j]);
    return t;
}

/* A file in LRA's form (csv.writer: "\r\n" line ends) of `count` generated expressions of
 * stream `stream`; tok/len/val receive them. */
static void write_listops_tsv(const char *path, int stream, int count, uint8_t (*tok)[64], int *len,
                              int *val) {
    FILE *f = fopen(path, "wb");
    RT_ASSERT(f);
    fprintf(f, "Source\tTarget\r\n");
    for (int i = 0; i < count; i++) {
        len[i] = listops_example(&SHORT, 17, stream, i, tok[i], &val[i]);
        int at = 0;
        char *s = lra_text(tok[i], &at);
        RT_ASSERT(at == len[i]);
        fprintf(f, "%s\t%d\r\n", s, val[i]);
        rt_free(s);
    }
    RT_ASSERT(fclose(f) == 0);
}

/* "file:line: ..." with `what` in it. */
static int names(const char *err, const char *file, int line, const char *what) {
    char at[1100];
    snprintf(at, sizeof at, "%s:%d: ", file, line);
    return strstr(err, at) && strstr(err, what);
}

static void test_listops_tsv(void) {
    enum { N = 300 };
    char *dir = tmpdir();
    static uint8_t tok[N][64];
    int len[N], val[N];
    char *train = rt_sprintf("%s/basic_train.tsv", dir),
         *val_f = rt_sprintf("%s/basic_val.tsv", dir), *test = rt_sprintf("%s/basic_test.tsv", dir);
    write_listops_tsv(val_f, STREAM_VAL, 20, tok, len, val);
    write_listops_tsv(test, STREAM_TEST, 20, tok, len, val);
    write_listops_tsv(train, STREAM_TRAIN, N, tok, len, val);
    char err[2048];
    ClassSet set = {0};
    CHECK_MSG(listops_read_tsv(train, 64, &set, err, sizeof err) == 0, "%s", err);
    int same = set.n == N;
    for (int i = 0; i < N && same; i++)
        same = set.start[i + 1] - set.start[i] == len[i] &&
               !memcmp(set.sym + set.start[i], tok[i], (size_t)len[i]) && set.label[i] == val[i];
    CHECK_MSG(same, "the examples read back differ from those written");
    class_set_free(&set);

    /* the task's rows: a shuffled pass over every example, cut to train.seq_len = 20 */
    enum { T = 20 };
    RunConfig rc = config("[model]\nvocab_size = 16\n[train]\nseq_len = 20\n[task]\ntype = "
                          "listops\n[data]\ntrain = task\n");
    snprintf(rc.task.path, sizeof rc.task.path, "%s", dir);
    DataOptions opt = {.seq_len = T, .seed = 3, .split = SPLIT_TRAIN, .world = 1};
    ClassTask *c = class_task_open(&rc.task, CLASS_LISTOPS, &opt, err, sizeof err);
    CHECK_MSG(c, "%s", err);
    if (c) {
        CHECK(class_task_size(c) == N);
        int32_t rt[T], rl[T];
        int seen[N] = {0}, bad = 0, moved = 0, n;
        for (int i = 0; i < N; i++) {
            class_task_row(c, N + i, rt, rl); /* the second pass */
            bad += !row_ok(rt, rl, T, LISTOPS_VOCAB, 10, &n);
            int match = -1;
            for (int j = 0; j < N && match < 0; j++) {
                int keep = len[j] < T ? len[j] : T, same_tokens = keep == n;
                for (int t = 0; t < keep && same_tokens; t++) same_tokens = rt[t] == tok[j][t];
                if (same_tokens && rl[n - 1] == val[j] && !seen[j]) match = j;
            }
            bad += match < 0;
            if (match >= 0) seen[match] = 1, moved += match != i;
        }
        CHECK_MSG(!bad && moved > N / 2,
                  "second pass: %d rows not a distinct example of the file, %d of %d moved", bad,
                  moved, N);
        class_task_free(c);
    }
    opt.split = SPLIT_TEST;
    c = class_task_open(&rc.task, CLASS_LISTOPS, &opt, err, sizeof err);
    CHECK(c && class_task_size(c) == 20);
    class_task_free(c);

    /* malformed files, each error at its file and line */
    static const struct {
        const char *text, *what;
        int line;
    } bad_files[] = {
        {"Src\tTarget\n[MAX 1 2 ]\t2\n", "header", 1},
        {"Source\tTarget\n( [MAX 1 2 ] )\t2\n[MIN 3 [MAXX 4 5 ] ]\t3\n", "unknown token '[MAXX'",
         3},
        {"Source\tTarget\r\n[MAX 1 2 ]\t1\r\n", "Target 1, but the expression's value is 2", 2},
        {"Source\tTarget\n[MAX 1 2\t2\n", "well-formed", 2},
        {"Source\tTarget\n[MAX 1 2 ]\n", "two tab-separated columns", 2},
        {"Source\tTarget\n[MAX 1 2 ]\t12\n", "Target '12'", 2},
    };
    for (size_t k = 0; k < sizeof bad_files / sizeof bad_files[0]; k++) {
        write_str(train, bad_files[k].text);
        CHECK_MSG(listops_read_tsv(train, 64, &set, err, sizeof err) < 0 &&
                      names(err, train, bad_files[k].line, bad_files[k].what),
                  "case %zu: %s", k, err);
        class_set_free(&set);
    }
    write_str(train, "Source\tTarget\n");
    CHECK(listops_read_tsv(train, 64, &set, err, sizeof err) < 0 && strstr(err, "no examples"));
    remove(train);
    CHECK(listops_read_tsv(train, 64, &set, err, sizeof err) < 0 && strstr(err, train) &&
          strstr(err, "cannot open"));
    class_set_free(&set);
    CHECK(fs_remove_tree(dir) == 0);
    rt_free(train);
    rt_free(val_f);
    rt_free(test);
    rt_free(dir);
}

/* ---- text ---- */

static void mkdirs(const char *dir, const char *sub) {
    char *p = rt_sprintf("%s/%s", dir, sub);
    fs_mkdirs(p);
    rt_free(p);
}

static void put(const char *dir, const char *name, const char *text, size_t len) {
    char *p = rt_sprintf("%s/%s", dir, name);
    write_text(p, text, len);
    rt_free(p);
}

#define PUT(dir, name, literal) put(dir, name, literal, sizeof literal - 1)

static ClassTask *open_text(const char *path, int T, DataSplit split, int classes, char *err,
                            size_t errlen) {
    RunConfig rc =
        config("[model]\nvocab_size = 257\n[task]\ntype = text_bytes\n[data]\ntrain = task\n");
    snprintf(rc.task.path, sizeof rc.task.path, "%s", path);
    rc.task.classes = classes;
    DataOptions opt = {.seq_len = T, .seed = 1, .split = split, .world = 1};
    return class_task_open(&rc.task, CLASS_TEXT_BYTES, &opt, err, errlen);
}

/* Row i of c as bytes (token - 1) and its label; returns the length. */
static int text_row(ClassTask *c, int64_t i, int T, char *bytes, int *label) {
    int32_t tok[64], lab[64];
    int n;
    RT_ASSERT(T <= 64);
    class_task_row(c, i, tok, lab);
    if (!row_ok(tok, lab, T, TEXT_BYTES_VOCAB, class_task_classes(c), &n)) return -1;
    for (int t = 0; t < n; t++) bytes[t] = (char)(tok[t] - 1);
    *label = lab[n - 1];
    return n;
}

static void test_imdb(void) {
    char *dir = tmpdir();
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 2; k++) {
            char sub[32];
            snprintf(sub, sizeof sub, "%s/%s", s ? "test" : "train", k ? "pos" : "neg");
            mkdirs(dir, sub);
        }
    char *train_neg = rt_sprintf("%s/train/neg", dir), *train_pos = rt_sprintf("%s/train/pos", dir),
         *test_neg = rt_sprintf("%s/test/neg", dir), *test_pos = rt_sprintf("%s/test/pos", dir);
    PUT(train_neg, "1_2.txt", " Dull.\n");
    PUT(train_neg, "0_1.txt", "Bad\0film \xff"); /* bytes 0 and 255 are tokens 1 and 256 */
    PUT(train_pos, "0_9.txt", "\t\tCaf\xc3\xa9 great \r\n");
    PUT(train_pos, "notes.md", "not a review");
    PUT(test_neg, "0_2.txt", "Meh");
    PUT(test_pos, "0_8.txt", "A long review that row truncation cuts to its first bytes");

    char err[2048];
    ClassSet set = {0};
    CHECK_MSG(text_bytes_read_imdb(dir, "train", 100, &set, err, sizeof err) == 0, "%s", err);
    static const char *const want[] = {"Bad\0film \xff", "Dull.", "Caf\xc3\xa9 great"};
    static const int want_len[] = {10, 5, 11}, want_label[] = {0, 0, 1};
    CHECK(set.n == 3);
    for (int i = 0; i < 3 && set.n == 3; i++)
        CHECK_MSG(set.start[i + 1] - set.start[i] == want_len[i] &&
                      !memcmp(set.sym + set.start[i], want[i], (size_t)want_len[i]) &&
                      set.label[i] == want_label[i],
                  "review %d: '%.*s' label %d", i, (int)(set.start[i + 1] - set.start[i]),
                  set.sym + set.start[i], set.label[i]);
    class_set_free(&set);

    /* rows: byte + 1, pad 0, truncation to the first T bytes, validation = test = test/ */
    ClassTask *c = open_text(dir, 16, SPLIT_TRAIN, 2, err, sizeof err);
    CHECK_MSG(c, "%s", err);
    if (c) {
        char bytes[64];
        int label, found = 0;
        for (int i = 0; i < 3; i++) {
            int n = text_row(c, i, 16, bytes, &label);
            found += n == 10 && !memcmp(bytes, want[0], 10) && label == 0;
        }
        CHECK_MSG(found == 1, "the review with bytes 0 and 255 is not one row of the first pass");
        class_task_free(c);
    }
    for (DataSplit sp = SPLIT_VAL; sp <= SPLIT_TEST; sp++) {
        c = open_text(dir, 16, sp, 2, err, sizeof err);
        CHECK_MSG(c && class_task_size(c) == 2, "%s", err);
        if (!c) continue;
        char bytes[64];
        int label, ok = 0;
        for (int i = 0; i < 2; i++) {
            int n = text_row(c, i, 16, bytes, &label);
            ok += (n == 3 && !memcmp(bytes, "Meh", 3) && label == 0) ||
                  (n == 16 && !memcmp(bytes, "A long review th", 16) && label == 1);
        }
        CHECK_MSG(ok == 2, "split %d: rows of test/ wrong", sp);
        class_task_free(c);
    }

    /* errors name the file or directory */
    PUT(train_pos, "1_7.txt", " \n\t ");
    CHECK(text_bytes_read_imdb(dir, "train", 100, &set, err, sizeof err) < 0 &&
          strstr(err, "1_7.txt") && strstr(err, "empty review"));
    class_set_free(&set);
    char *p = rt_sprintf("%s/1_7.txt", train_pos);
    remove(p);
    rt_free(p);
    CHECK(text_bytes_read_imdb(dir, "unsup", 100, &set, err, sizeof err) < 0 &&
          strstr(err, "/unsup/neg") && strstr(err, "cannot open"));
    class_set_free(&set);
    CHECK(fs_remove_tree(dir) == 0);
    CHECK(!open_text(dir, 16, SPLIT_TRAIN, 2, err, sizeof err) &&
          strstr(err, "neither the aclImdb layout"));
    CHECK(!open_text("", 16, SPLIT_TRAIN, 2, err, sizeof err) && strstr(err, "needs task.path"));
    rt_free(train_neg);
    rt_free(train_pos);
    rt_free(test_neg);
    rt_free(test_pos);
    rt_free(dir);
}

static void test_text_tsv(void) {
    char *dir = tmpdir();
    char *train = rt_sprintf("%s/train.tsv", dir), *test = rt_sprintf("%s/test.tsv", dir);
    write_str(train, "label\ttext\r\n2\tthird class, a\ttab inside\r\n\r\n0\tzero\n1\t one \n");
    write_str(test, "1\tsome test text longer than the row\n");
    char err[2048];
    ClassSet set = {0};
    CHECK_MSG(text_bytes_read_tsv(train, 3, 8, &set, err, sizeof err) == 0, "%s", err);
    CHECK(set.n == 3 && set.label[0] == 2 && set.label[1] == 0 && set.label[2] == 1);
    if (set.n == 3) {
        CHECK(set.start[1] == 8 && !memcmp(set.sym, "third cl", 8)); /* cut to keep = 8 */
        CHECK(set.start[3] - set.start[2] == 5 &&
              !memcmp(set.sym + set.start[2], " one ", 5)); /* verbatim */
    }
    class_set_free(&set);
    /* without val.tsv the validation split reads test.tsv (LRA validates IMDB on its test set) */
    ClassTask *c = open_text(dir, 10, SPLIT_VAL, 3, err, sizeof err);
    CHECK_MSG(c && class_task_size(c) == 1, "%s", err);
    if (c) {
        char bytes[64];
        int label, n = text_row(c, 0, 10, bytes, &label);
        CHECK(n == 10 && !memcmp(bytes, "some test ", 10) && label == 1);
        class_task_free(c);
    }
    static const struct {
        const char *text, *what;
        int line;
    } bad_files[] = {
        {"0\tfine\n3\tthree\n", "label '3' is not a class 0..2", 2},
        {"0\tfine\nx\ttext\n", "label 'x'", 2},
        {"0\tfine\n-1\ttext\n", "label '-1'", 2},
        {"1\n", "expected label<TAB>text", 1},
        {"0\tfine\n\n1\t\n", "an empty text", 3},
    };
    for (size_t k = 0; k < sizeof bad_files / sizeof bad_files[0]; k++) {
        write_str(train, bad_files[k].text);
        CHECK_MSG(text_bytes_read_tsv(train, 3, 8, &set, err, sizeof err) < 0 &&
                      names(err, train, bad_files[k].line, bad_files[k].what),
                  "case %zu: %s", k, err);
        class_set_free(&set);
    }
    CHECK(!open_text(dir, 10, SPLIT_TRAIN, 300, err, sizeof err) &&
          strstr(err, "task.classes = 300"));
    CHECK(fs_remove_tree(dir) == 0);
    rt_free(train);
    rt_free(test);
    rt_free(dir);
}

static const TestCase tests[] = {
    {"known_values", test_known_values},
    {"values_and_limits", test_values_and_limits},
    {"lra_distribution", test_lra_distribution},
    {"draws", test_draws},
    {"reproducible", test_reproducible},
    {"splits_disjoint", test_splits_disjoint},
    {"generated_rows", test_generated_rows},
    {"task_source", test_task_source},
    {"listops_tsv", test_listops_tsv},
    {"imdb", test_imdb},
    {"text_tsv", test_text_tsv},
};

TH_MAIN(tests)
