/* task.type = chars (data/char_text.h): exact symbols, vocabularies and splits of nnRNN's
 * reading of PTB's character files and of raw UTF-8 text, the rows of each split, the errors,
 * and the task source's saved vocabulary; the shipped tiny Shakespeare when ../shared/data is
 * there. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/run_config.h"
#include "data/char_text.h"
#include "data/datasource.h"
#include "harness.h"
#include "task/task.h"
#include "shared_data.h"
#include "util/error.h"
#include "util/fsutil.h"

static char err[2048];

static char *tmpdir(void) {
    char *d = rt_strdup("/tmp/rotor_chars_XXXXXX");
    RT_ASSERT(mkdtemp(d));
    return d;
}

static void write_file(const char *dir, const char *name, const char *text, size_t len) {
    char *p = rt_sprintf("%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    RT_ASSERT(f && fwrite(text, 1, len, f) == len && fclose(f) == 0);
    rt_free(p);
}

static TaskConfig chars_task(const char *path, const char *format) {
    RunConfig rc;
    run_config_defaults(&rc);
    snprintf(rc.task.type, sizeof rc.task.type, "chars");
    snprintf(rc.task.path, sizeof rc.task.path, "%s", path);
    snprintf(rc.task.text_format, sizeof rc.task.text_format, "%s", format);
    return rc.task;
}

/* The split's symbols as their strings joined by '|'. */
static char *spelled(const CharText *t, DataSplit split) {
    int64_t n;
    const int32_t *tok = char_text_tokens(t, split, &n);
    json_t *v = char_text_vocab_json(t);
    size_t cap = 16 * (size_t)n + 1, len = 0;
    char *s = rt_calloc(cap, 1);
    for (int64_t i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%s", i ? "|" : "",
                                json_string_value(json_array_get(v, (size_t)tok[i])));
    json_decref(v);
    return s;
}

static void check_vocab(const CharText *t, const char *const *want, int n) {
    json_t *v = char_text_vocab_json(t);
    int ok = char_text_vocab_size(t) == n && (int)json_array_size(v) == n;
    for (int i = 0; ok && i < n; i++)
        ok = !strcmp(json_string_value(json_array_get(v, (size_t)i)), want[i]);
    char *got = json_dumps(v, 0);
    CHECK_MSG(ok, "vocabulary %s", got);
    free(got);
    json_decref(v);
}

/* nnRNN's Corpus: line.split() + ['<eos>'] per line (Python's universal newlines), ids in
 * order of first appearance over train, valid, test. */
static void test_ptb_format(void) {
    char *d = tmpdir();
    static const char train[] = " a e r _ b a n k n o t e \n t h e _ c a t \n";
    static const char valid[] = " t h e _ d o g\n\n";
    static const char test[] = "\ta _\tz \r\n q\r x"; /* CRLF, a lone CR, no final newline */
    write_file(d, "train.txt", train, sizeof train - 1);
    write_file(d, "valid.txt", valid, sizeof valid - 1);
    write_file(d, "test.txt", test, sizeof test - 1);
    TaskConfig task = chars_task(d, "ptb");
    CharText *t = char_text_open(&task, err, sizeof err);
    CHECK_MSG(t, "%s", err);
    if (t) {
        static const char *const vocab[] = {"a",     "e", "r", "_", "b", "n", "k", "o", "t",
                                            "<eos>", "h", "c", "d", "g", "z", "q", "x"};
        check_vocab(t, vocab, 17);
        char *s0 = spelled(t, SPLIT_TRAIN), *s1 = spelled(t, SPLIT_VAL),
             *s2 = spelled(t, SPLIT_TEST);
        CHECK_MSG(!strcmp(s0, "a|e|r|_|b|a|n|k|n|o|t|e|<eos>|t|h|e|_|c|a|t|<eos>"), "train %s", s0);
        CHECK_MSG(!strcmp(s1, "t|h|e|_|d|o|g|<eos>|<eos>"), "valid %s", s1);
        CHECK_MSG(!strcmp(s2, "a|_|z|<eos>|q|<eos>|x|<eos>"), "test %s", s2);
        int64_t n;
        const int32_t *tok = char_text_tokens(t, SPLIT_TRAIN, &n);
        CHECK(n == 21 && tok[0] == 0 && tok[3] == 3 && tok[12] == 9);
        rt_free(s0);
        rt_free(s1);
        rt_free(s2);
    }
    char_text_free(t);
    /* PTB's own file names */
    char *d2 = tmpdir();
    write_file(d2, "ptb.char.train.txt", train, sizeof train - 1);
    write_file(d2, "ptb.char.valid.txt", valid, sizeof valid - 1);
    write_file(d2, "ptb.char.test.txt", test, sizeof test - 1);
    task = chars_task(d2, "ptb");
    t = char_text_open(&task, err, sizeof err);
    CHECK_MSG(t && char_text_vocab_size(t) == 17, "%s", t ? "vocabulary size" : err);
    char_text_free(t);
    /* the same files read raw: every character, spaces and newlines included */
    task = chars_task(d, "raw");
    t = char_text_open(&task, err, sizeof err);
    CHECK_MSG(t, "%s", err);
    if (t) {
        static const char *const vocab[] = {" ",  "a", "e", "r", "_", "b",  "n", "k",  "o", "t",
                                            "\n", "h", "c", "d", "g", "\t", "z", "\r", "q", "x"};
        check_vocab(t, vocab, 20);
        int64_t n;
        char_text_tokens(t, SPLIT_TRAIN, &n);
        CHECK(n == (int64_t)sizeof train - 1);
        char_text_tokens(t, SPLIT_TEST, &n);
        CHECK(n == (int64_t)sizeof test - 1);
    }
    char_text_free(t);
    fs_remove_tree(d);
    fs_remove_tree(d2);
    rt_free(d);
    rt_free(d2);
}

/* One UTF-8 file cut into train, valid and test by symbol counts. */
static void test_raw_cut(void) {
    char *d = tmpdir();
    /* 40 characters: 10 x "hé€\n" (1 + 2 + 3 + 1 bytes each) */
    char text[80] = "";
    for (int i = 0; i < 10; i++) strcat(text, "h\xc3\xa9\xe2\x82\xac\n");
    write_file(d, "t.txt", text, strlen(text));
    char *path = rt_sprintf("%s/t.txt", d);
    TaskConfig task = chars_task(path, "raw");
    task.valid_fraction = 0.1;
    task.test_fraction = 0.25;
    CharText *t = char_text_open(&task, err, sizeof err);
    CHECK_MSG(t, "%s", err);
    if (t) {
        static const char *const vocab[] = {"h", "\xc3\xa9", "\xe2\x82\xac", "\n"};
        check_vocab(t, vocab, 4);
        int64_t n0, n1, n2;
        const int32_t *a = char_text_tokens(t, SPLIT_TRAIN, &n0),
                      *b = char_text_tokens(t, SPLIT_VAL, &n1),
                      *c = char_text_tokens(t, SPLIT_TEST, &n2);
        CHECK(n0 == 26 && n1 == 4 &&
              n2 == 10); /* test floor(40 x 0.25), valid floor(40 x 0.1), train the rest */
        int ok = 1;
        for (int i = 0; i < 40; i++) {
            int32_t x = i < 26 ? a[i] : i < 30 ? b[i - 26] : c[i - 30];
            ok &= x == i % 4;
        }
        CHECK_MSG(ok, "the cut splits are not the file's symbols in order");
    }
    char_text_free(t);
    /* fractions that leave a split of fewer than 2 symbols */
    task.test_fraction = 0.01;
    CHECK(!char_text_open(&task, err, sizeof err) && strstr(err, "task.test_fraction = 0.01") &&
          strstr(err, path));
    /* invalid UTF-8, a missing file, a directory without the three files */
    write_file(d, "bad.txt", "ab\xff\n", 4);
    char *bad = rt_sprintf("%s/bad.txt", d);
    task = chars_task(bad, "raw");
    CHECK(!char_text_open(&task, err, sizeof err) && strstr(err, bad) && strstr(err, "UTF-8"));
    task = chars_task(d, "raw");
    CHECK(!char_text_open(&task, err, sizeof err) && strstr(err, "valid.txt") && strstr(err, d));
    task = chars_task("", "raw");
    CHECK(!char_text_open(&task, err, sizeof err) && strstr(err, "task.path"));
    fs_remove_tree(d);
    rt_free(path);
    rt_free(bad);
    rt_free(d);
}

/* Training rows: every complete window once per pass, consecutive symbols labeled with the
 * next, a new order in the next pass; valid and test rows in text order with every symbol
 * after the first labeled exactly once, the tail padded. */
static void test_rows(void) {
    char *d = tmpdir();
    char text[1001];
    uint32_t x = 1; /* letters from an LCG: no two windows alike */
    for (int i = 0; i < 1000; i++)
        text[i] = (char)('a' + ((x = x * 1103515245u + 12345u) >> 16) % 26);
    text[1000] = 0;
    write_file(d, "train.txt", text, 1000);
    write_file(d, "valid.txt", text, 103);
    write_file(d, "test.txt", text + 500, 2);
    TaskConfig task = chars_task(d, "raw");
    CharText *t = char_text_open(&task, err, sizeof err);
    CHECK_MSG(t, "%s", err);
    if (!t) return;
    int T = 16;
    int64_t W = char_text_rows(t, SPLIT_TRAIN, T), n;
    const int32_t *s = char_text_tokens(t, SPLIT_TRAIN, &n);
    CHECK(W == 999 / 16 && char_text_rows(t, SPLIT_VAL, T) == 7 &&
          char_text_rows(t, SPLIT_TEST, T) == 1);
    int32_t tok[16], lab[16];
    int *seen = rt_calloc((size_t)W, sizeof(int)), bad = 0, moved = 0;
    int64_t first[2] = {0, 0};
    for (int64_t i = 0; i < 2 * W; i++) {
        char_text_row(t, SPLIT_TRAIN, T, 42, i, tok, lab);
        int64_t start = -1;
        for (int64_t w = 0; w < W && start < 0; w++)
            if (!memcmp(tok, s + w * T, sizeof tok)) start = w;
        bad += start < 0;
        if (start < 0) continue;
        for (int p = 0; p < T; p++) bad += lab[p] != s[start * T + p + 1];
        seen[start] += i < W ? 1 : 10;
        if (i % W == 0) first[i / W] = start;
        moved += i < W && start != i;
    }
    for (int64_t w = 0; w < W; w++) bad += seen[w] != 11; /* once in each pass */
    CHECK_MSG(!bad && moved > W / 2 && first[0] != first[1], "training rows: %d bad, %d moved", bad,
              moved);
    /* valid: 103 symbols -> 102 labels in 7 rows, the last holding 6 */
    const int32_t *v = char_text_tokens(t, SPLIT_VAL, &n);
    int labels = 0;
    bad = 0;
    for (int64_t i = 0; i < 7; i++) {
        char_text_row(t, SPLIT_VAL, T, 42, i + 7, tok, lab); /* the second pass: the same rows */
        for (int p = 0; p < T; p++) {
            int64_t q = i * T + p;
            bad += tok[p] != (q < n ? v[q] : 0) || lab[p] != (q + 1 < n ? v[q + 1] : -100);
            labels += lab[p] != -100;
        }
    }
    CHECK_MSG(!bad && labels == 102, "valid rows: %d bad, %d labels", bad, labels);
    rt_free(seen);
    char_text_free(t);
    fs_remove_tree(d);
    rt_free(d);
}

/* Through data.train = task: the rows of rank 1 of 2, the vocabulary in the saved position,
 * and a position saved on another vocabulary refused. */
static void test_task_source(void) {
    char *d = tmpdir();
    write_file(d, "train.txt", "abcabcabcabcabcabcabcabc", 24);
    write_file(d, "valid.txt", "abcabc", 6);
    write_file(d, "test.txt", "cba", 3);
    RunConfig rc;
    const char *sets[] = {"data.train=task", "task.type=chars", "train.seq_len=4", NULL};
    char *pathset = rt_sprintf("task.path=%s", d);
    sets[3] = pathset;
    CHECK_MSG(run_config_load_string(&rc, NULL, NULL, sets, 4, err, sizeof err) == 0, "%s", err);
    CHECK(rc.model.vocab_size == 3); /* the texts' vocabulary */
    DataOptions opt = {.seq_len = 4,
                       .seed = rc.train.seed,
                       .split = SPLIT_VAL,
                       .rank = 1,
                       .world = 2,
                       .prefetch = 1};
    DataSource *ds = task_source_open(&rc, &opt, err, sizeof err);
    CHECK_MSG(ds, "%s", err);
    if (ds) {
        int32_t tok[4], lab[4];
        CHECK(ds->next_labeled(ds, tok, lab, 1, err, sizeof err) == 0);
        /* valid "abcabc": rows "abca" and "bc" (padded); rank 1 of 2 reads the second */
        CHECK(tok[0] == 1 && lab[0] == 2 && tok[1] == 2 && lab[1] == -100 && tok[2] == 0 &&
              lab[3] == -100);
        json_t *st = ds->get_state(ds);
        json_t *v = json_object_get(st, "vocab");
        CHECK(json_array_size(v) == 3 && !strcmp(json_string_value(json_array_get(v, 2)), "c"));
        CHECK(ds->set_state(ds, st, err, sizeof err) == 0);
        json_array_set_new(v, 2, json_string("d"));
        CHECK(ds->set_state(ds, st, err, sizeof err) != 0 && strstr(err, "vocabulary differs"));
        json_decref(st);
        datasource_free(ds);
    }
    /* a training text shorter than one row */
    const char *longer[] = {"data.train=task", "task.type=chars", "train.seq_len=30", pathset};
    CHECK(run_config_load_string(&rc, NULL, NULL, longer, 4, err, sizeof err) == 0);
    opt.split = SPLIT_TRAIN;
    opt.seq_len = 30;
    CHECK(!task_source_open(&rc, &opt, err, sizeof err) && strstr(err, "train.seq_len + 1"));
    fs_remove_tree(d);
    rt_free(pathset);
    rt_free(d);
}

/* Carried-state streams (docs/models.md §carried-states): over a pass, every symbol after the first
 * is a label exactly once; each window of a stream continues its previous window (its first input
 * is that window's last label); through data.train = task with 2 ranks, each rank reads its
 * streams' windows, `continues` is 0 exactly on a pass's first window, and the stream count is
 * in the saved position. */
static void test_streams(void) {
    char *d = tmpdir();
    char text[1001];
    for (int i = 0; i < 1000; i++) text[i] = (char)('a' + (i * 7 + i / 13) % 26);
    write_file(d, "t.txt", text, 1000);
    char *path = rt_sprintf("%s/t.txt", d);
    TaskConfig task = chars_task(path, "raw");
    CharText *t = char_text_open(&task, err, sizeof err);
    CHECK_MSG(t, "%s", err);
    enum { S = 6, T = 16 };
    int64_t n, W = char_text_stream_windows(t, SPLIT_TRAIN, S, T);
    const int32_t *sym = char_text_tokens(t, SPLIT_TRAIN, &n);
    CHECK(W == ((n - 1 + S - 1) / S + T - 1) / T);
    int *seen = rt_calloc((size_t)n, sizeof(int));
    int32_t tok[T], lab[T], last[S];
    int broken = 0;
    for (int64_t i = 0; i < S * W; i++) {
        int j = (int)(i % S);
        char_text_stream_row(t, SPLIT_TRAIN, S, T, i, tok, lab);
        if (i >= S && last[j] != -100 && tok[0] != last[j]) broken++;
        for (int p = 0; p < T; p++) {
            if (lab[p] == -100) continue;
            int64_t q = -1; /* the position of this label: tok[p] is the symbol before it */
            for (int64_t x = 1; x < n && q < 0; x++)
                if (!seen[x] && sym[x] == lab[p] && sym[x - 1] == tok[p]) q = x;
            if (q > 0) seen[q]++;
        }
        last[j] = lab[T - 1];
    }
    int64_t once = 0;
    for (int64_t x = 1; x < n; x++) once += seen[x] == 1;
    CHECK_MSG(once == n - 1 && broken == 0, "%lld of %lld labels once, %d windows not continuing",
              (long long)once, (long long)(n - 1), broken);
    CHECK(char_text_stream_windows(t, SPLIT_VAL, 60, T) ==
          0); /* 50 valid symbols: fewer than 60 + 1 */
    RunConfig rc;
    char *pathset = rt_sprintf("task.path=%s", path);
    const char *sets[] = {"data.train=task", "task.type=chars", "train.seq_len=16", pathset};
    CHECK_MSG(run_config_load_string(&rc, NULL, NULL, sets, 4, err, sizeof err) == 0, "%s", err);
    for (int r = 0; r < 2; r++) {
        DataOptions opt = {.seq_len = T,
                           .seed = rc.train.seed,
                           .split = SPLIT_TRAIN,
                           .rank = r,
                           .world = 2,
                           .carry_streams = S};
        DataSource *ds = task_source_open(&rc, &opt, err, sizeof err);
        CHECK_MSG(ds, "%s", err);
        if (!ds) continue;
        int32_t bt[3 * T], bl[3 * T], want[T], wl[T];
        for (int64_t step = 0; step < W + 2; step++) {
            CHECK(ds->next_labeled(ds, bt, bl, 3, err, sizeof err) == 0);
            CHECK(ds->continues == (step % W != 0));
            for (int b = 0; b < 3; b++) { /* rank r reads streams 3r .. 3r + 2 */
                char_text_stream_row(t, SPLIT_TRAIN, S, T, step * S + 3 * r + b, want, wl);
                CHECK(!memcmp(want, bt + b * T, sizeof want) && !memcmp(wl, bl + b * T, sizeof wl));
            }
        }
        json_t *st = ds->get_state(ds);
        CHECK(json_integer_value(json_object_get(st, "carry_streams")) == S);
        CHECK(ds->set_state(ds, st, err, sizeof err) == 0);
        json_object_set_new(st, "carry_streams", json_integer(4));
        CHECK(ds->set_state(ds, st, err, sizeof err) != 0 && strstr(err, "carried-state streams"));
        json_decref(st);
        datasource_free(ds);
    }
    char_text_free(t);
    fs_remove_tree(d);
    rt_free(seen);
    rt_free(pathset);
    rt_free(path);
    rt_free(d);
}

/* The shipped tiny Shakespeare, raw: 1115394 ASCII characters over 65 symbols, cut 90/5/5. */
static void test_tinyshakespeare(void) {
    char buf[1024];
    const char *path = shared_file("text/tinyshakespeare.txt", buf, sizeof buf);
    if (!path) return;
    TaskConfig task = chars_task(path, "raw");
    CharText *t = char_text_open(&task, err, sizeof err);
    CHECK_MSG(t, "%s", err);
    if (!t) return;
    int64_t n0, n1, n2;
    char_text_tokens(t, SPLIT_TRAIN, &n0);
    char_text_tokens(t, SPLIT_VAL, &n1);
    char_text_tokens(t, SPLIT_TEST, &n2);
    CHECK(char_text_vocab_size(t) == 65);
    CHECK(n1 == 55769 && n2 == 55769 && n0 + n1 + n2 == 1115394);
    char_text_free(t);
}

static const TestCase tests[] = {
    {"ptb_format", test_ptb_format},
    {"raw_cut", test_raw_cut},
    {"rows", test_rows},
    {"task_source", test_task_source},
    {"streams", test_streams},
    {"tinyshakespeare", test_tinyshakespeare},
};

TH_MAIN(tests)
