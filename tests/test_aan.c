/* Long Range Arena's AAN retrieval pairs (task.type = aan, data/class_task.h) on TSV files
 * written here: the exact byte tokens and labels of both documents of a pair, the pairs
 * shuffled with their two rows together (a new training order every pass, one fixed
 * validation and test order), truncation to the row and to LRA's 10000 bytes, data-parallel
 * ranks reading whole pairs, the named errors of bad lines and configs; then the pair
 * classifier on those rows: both rows of a pair get the pair's logits, and classify_eval
 * scores one prediction per pair. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "task/classify_eval.h"
#include "config/run_config.h"
#include "cpu/real.h"
#include "data/class_task.h"
#include "data/datasource.h"
#include "data/text_bytes.h"
#include "harness.h"
#include "task/task.h"
#include "model/model.h"
#include "util/error.h"
#include "util/fsutil.h"

enum { T = 24, PAIRS = 6 };

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    RT_ASSERT(f && fwrite(text, 1, strlen(text), f) == strlen(text) && fclose(f) == 0);
}

/* Pair i of a split: texts "d<i>a-<split>..." and "D<i>b-<split>...", label i % 2; text1 of
 * pair 2 is longer than the row. The label column is written as LRA's files may hold it
 * ("1.0" for pair 3). */
static char *pair_line(int i, const char *split) {
    const char *label = i == 3 ? "1.0" : i % 2 ? "1" : "0";
    const char *pad = i == 2 ? "0123456789012345678901234567890123456789" : "";
    return rt_sprintf("%s\tid%d\tid%d\td%da-%s%s\tD%db-%s \"q\"\n", label, 100 + i, 200 + i, i,
                      split, pad, i, split);
}

static char *write_dir(const char *name) {
    char *dir = rt_sprintf("%s/%s", th_tmp_dir(), name);
    fs_mkdirs(dir);
    static const char *const SPLITS[] = {"train", "eval", "test"};
    for (int s = 0; s < 3; s++) {
        char text[8192] = "";
        for (int i = 0; i < PAIRS; i++) {
            char *l = pair_line(i, SPLITS[s]);
            strcat(text, l);
            rt_free(l);
        }
        char *f = rt_sprintf("%s/new_aan_pairs.%s.tsv", dir, SPLITS[s]);
        write_text(f, text);
        rt_free(f);
    }
    return dir;
}

static RunConfig config(const char *path, const char *extra) {
    char *ini = rt_sprintf(
        "[model]\ntype = gla\nhidden_size = 16\nnum_heads = 2\nnum_layers = 1\nvocab_size = 257\n"
        "head = classifier\nnum_classes = 2\npair = nli\npair_mlp = 8\n"
        "[train]\nseq_len = %d\nmicro_batch = 4\n[data]\ntrain = task\n[task]\ntype = aan\npath = "
        "%s\n%s",
        T, path, extra);
    RunConfig rc;
    char err[2048];
    int r = run_config_load_string(&rc, ini, "aan.ini", NULL, 0, err, sizeof err);
    CHECK_MSG(r == 0, "%s", err);
    rt_free(ini);
    return rc;
}

/* The text of document `doc` (0, 1) of pair i of a split, as the row keeps it. */
static void expected(int i, int doc, const char *split, char *out) {
    char *l = pair_line(i, split), *f = l;
    for (int k = 0; k < 3 + doc; k++) f = strchr(f, '\t') + 1;
    size_t n = strcspn(f, "\t\n");
    if (n > T) n = T;
    memcpy(out, f, n);
    out[n] = 0;
    rt_free(l);
}

/* Reads row pairs from ds and checks each against the files: both rows of one pair, bytes + 1,
 * pads, labels at the last real byte. Returns the pair index of each, -1 when a check failed. */
static void read_pairs(DataSource *ds, int B, const char *split, int *pair) {
    int32_t tok[8 * T], lab[8 * T];
    char err[512];
    RT_ASSERT(B <= 8 && B % 2 == 0);
    CHECK_MSG(ds->next_labeled(ds, tok, lab, B, err, sizeof err) == 0, "%s", err);
    for (int r = 0; r < B; r += 2) {
        int i = tok[r * T + 1] - 1 - '0'; /* "d<i>a..." */
        pair[r / 2] = i;
        int bad = i < 0 || i >= PAIRS;
        for (int doc = 0; doc < 2 && !bad; doc++) {
            char want[T + 1];
            expected(i, doc, split, want);
            int n = (int)strlen(want);
            const int32_t *tk = tok + (r + doc) * T, *lb = lab + (r + doc) * T;
            for (int t = 0; t < T; t++) {
                bad |= tk[t] != (t < n ? (uint8_t)want[t] + 1 : 0);
                bad |= lb[t] != (t == n - 1 ? i % 2 : -100);
            }
        }
        CHECK_MSG(!bad,
                  "%s rows %d, %d: not pair %d's documents, bytes + 1, labeled at the last byte",
                  split, r, r + 1, i);
        if (bad) pair[r / 2] = -1;
    }
}

static DataSource *open_split(const RunConfig *rc, DataSplit split, int rank, int world) {
    DataOptions opt = {
        .seq_len = T, .seed = rc->train.seed, .split = split, .rank = rank, .world = world};
    char err[2048];
    DataSource *ds = task_source_open(rc, &opt, err, sizeof err);
    CHECK_MSG(ds, "%s", err);
    return ds;
}

static void test_rows_and_order(void) {
    char *dir = write_dir("rows");
    RunConfig rc = config(dir, "");
    DataSource *tr = open_split(&rc, SPLIT_TRAIN, 0, 1);
    CHECK(tr && tr->examples == 2 * PAIRS);
    int pass[2][PAIRS];
    for (int p = 0; tr && p < 2; p++) {
        int seen[PAIRS] = {0};
        for (int k = 0; k < PAIRS; k += 2) read_pairs(tr, 4, "train", pass[p] + k);
        for (int k = 0; k < PAIRS; k++)
            if (pass[p][k] >= 0) seen[pass[p][k]]++;
        for (int k = 0; k < PAIRS; k++)
            CHECK_MSG(seen[k] == 1, "pass %d reads pair %d %d times", p, k, seen[k]);
    }
    CHECK(memcmp(pass[0], pass[1], sizeof pass[0]));
    datasource_free(tr);
    /* validation (new_aan_pairs.eval.tsv) and test: one order, the same every time */
    static const struct {
        DataSplit split;
        const char *name;
    } FIXED[] = {{SPLIT_VAL, "eval"}, {SPLIT_TEST, "test"}};
    for (int s = 0; s < 2; s++) {
        int a[PAIRS], b[PAIRS];
        DataSource *x = open_split(&rc, FIXED[s].split, 0, 1),
                   *y = open_split(&rc, FIXED[s].split, 0, 1);
        for (int k = 0; x && y && k < PAIRS; k += 2) {
            read_pairs(x, 4, FIXED[s].name, a + k);
            read_pairs(y, 4, FIXED[s].name, b + k);
        }
        CHECK(!memcmp(a, b, sizeof a));
        datasource_free(x);
        datasource_free(y);
    }
    /* two ranks of 2 rows: rank r reads the pair of rows 2r, 2r + 1 of each global 4 */
    DataSource *one = open_split(&rc, SPLIT_TRAIN, 0, 1);
    int all[4];
    read_pairs(one, 4, "train", all);
    read_pairs(one, 4, "train", all + 2);
    for (int r = 0; r < 2; r++) {
        DataSource *part = open_split(&rc, SPLIT_TRAIN, r, 2);
        int got[2];
        read_pairs(part, 2, "train", got);
        read_pairs(part, 2, "train", got + 1);
        CHECK_MSG(got[0] == all[r] && got[1] == all[2 + r],
                  "rank %d reads pairs %d, %d of %d %d %d %d", r, got[0], got[1], all[0], all[1],
                  all[2], all[3]);
        datasource_free(part);
    }
    datasource_free(one);
    rt_free(dir);
}

/* A document longer than 10000 bytes keeps 10000 however long the row (LRA encodes
 * s[:10000]). */
static void test_long_document(void) {
    size_t n = 10050;
    char *text = rt_malloc(n + 64), *path = rt_sprintf("%s/long.tsv", th_tmp_dir());
    int at = snprintf(text, 64, "1\ta\tb\tx\t");
    memset(text + at, 'y', n);
    strcpy(text + at + n, "\n");
    write_text(path, text);
    ClassSet set = {0};
    char err[512];
    CHECK_MSG(text_bytes_read_aan(path, 2, 20000, &set, err, sizeof err) == 0, "%s", err);
    CHECK(set.n == 2 && set.start[1] - set.start[0] == 1 && set.start[2] - set.start[1] == 10000);
    CHECK(set.label[0] == 1 && set.label[1] == 1 && set.sym[0] == 'x' && set.sym[1] == 'y');
    class_set_free(&set);
    rt_free(text);
    rt_free(path);
}

static void test_errors(void) {
    char *dir = write_dir("errors"), *train = rt_sprintf("%s/new_aan_pairs.train.tsv", dir),
         err[2048];
    RunConfig rc = config(dir, "");
    DataOptions opt = {.seq_len = T, .seed = 1, .split = SPLIT_TRAIN, .world = 1};
    static const struct {
        const char *text, *what;
    } BAD[] = {
        {"1\tid1\tid2\tabc\n",
         "new_aan_pairs.train.tsv:1: 4 tab-separated fields where an AAN line has 5"},
        {"1\ta\tb\tc\td\n0\ta\tb\tc\td\te\n", "new_aan_pairs.train.tsv:2: 6 tab-separated fields"},
        {"2\ta\tb\tc\td\n", ":1: label '2' is not a class 0..1 (task.classes = 2)"},
        {"0.5\ta\tb\tc\td\n", ":1: label '0.5' is not a class"},
        {"x\ta\tb\tc\td\n", ":1: label 'x' is not a class"},
        {"1\ta\tb\t\td\n", ":1: text1 (field 4) is empty"},
        {"1\ta\tb\tc\t\n", ":1: text2 (field 5) is empty"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        write_text(train, BAD[i].text);
        CHECK(!task_source_open(&rc, &opt, err, sizeof err) && th_names(err, BAD[i].what, NULL));
    }
    unlink(train);
    CHECK(!task_source_open(&rc, &opt, err, sizeof err) &&
          th_names(err, "new_aan_pairs.train.tsv", "cannot open"));
    RunConfig missing = config("/nonexistent/tsv_data", "");
    CHECK(!task_source_open(&missing, &opt, err, sizeof err) &&
          th_names(err, "task.path = /nonexistent/tsv_data does not exist",
                   "docs/classification.md"));
    /* rows come in pairs: an odd batch, an odd micro-batch; the pair classifier is needed */
    rt_free(write_dir("errors"));
    DataSource *ds = task_source_open(&rc, &opt, err, sizeof err);
    int32_t tok[3 * T], lab[3 * T];
    CHECK(ds && ds->next_labeled(ds, tok, lab, 3, err, sizeof err) &&
          th_names(err, "a batch of 3 rows", "even"));
    datasource_free(ds);
    char *ini = rt_sprintf("[model]\ntype = gla\nhidden_size = 16\nnum_heads = 2\nvocab_size = "
                           "257\nhead = classifier\n"
                           "num_classes = 2\n[train]\nseq_len = %d\nmicro_batch = 4\n[data]\ntrain "
                           "= task\n[task]\ntype = "
                           "aan\npath = %s\n",
                           T, dir);
    const char *odd[] = {"model.pair=nli", "train.micro_batch=3"};
    CHECK(run_config_load_string(&rc, ini, "aan.ini", odd, 2, err, sizeof err) != 0 &&
          th_names(err, "train.micro_batch = 3", "pairs"));
    CHECK(run_config_load_string(&rc, ini, "aan.ini", NULL, 0, err, sizeof err) != 0 &&
          th_names(err, "task.type = aan", "model.pair = nli or concat"));
    const char *lm[] = {"model.pair=concat", "model.head=lm"};
    CHECK(run_config_load_string(&rc, ini, "aan.ini", lm, 2, err, sizeof err) != 0 &&
          th_names(err, "model.pair = concat", "model.head = classifier"));
    const char *other[] = {"model.pair=nli", "task.type=text_bytes"};
    CHECK(run_config_load_string(&rc, ini, "aan.ini", other, 2, err, sizeof err) != 0 &&
          th_names(err, "model.pair = nli", "only task.type = aan"));
    rt_free(ini);
    rt_free(train);
    rt_free(dir);
}

/* The pair classifier on the test split: rows 2i and 2i + 1 get the same logits, and
 * classify_eval's accuracy is that of one argmax per pair. */
static void test_pair_scoring(void) {
    char *dir = write_dir("scoring");
    RunConfig rc = config(dir, "");
    Model *m = model_create(&rc.model, backend_cpu());
    model_init_weights(m, 3);
    DataSource *ds = open_split(&rc, SPLIT_TEST, 0, 1);
    int32_t tok[2 * PAIRS * T], lab[2 * PAIRS * T];
    char err[512];
    CHECK(ds && ds->next_labeled(ds, tok, lab, 2 * PAIRS, err, sizeof err) == 0);
    Batch b = {2 * PAIRS, T, tok, lab, NULL};
    model_forward(m, &b, 0.0, NULL);
    real logits[2 * PAIRS * 2];
    model_get_logits(m, logits);
    int labels[2 * PAIRS], k = 0, right = 0, differ = 0;
    for (int n = 0; n < 2 * PAIRS * T; n++)
        if (lab[n] != -100) labels[k++] = lab[n];
    CHECK(k == 2 * PAIRS);
    for (int p = 0; p < PAIRS; p++) {
        const real *a = logits + 4 * p, *c = a + 2;
        CHECK(a[0] == c[0] && a[1] == c[1] && labels[2 * p] == labels[2 * p + 1]);
        right += (a[1] > a[0]) == labels[2 * p];
        differ |= p && (a[0] != logits[0] || a[1] != logits[1]);
    }
    CHECK(differ); /* the pairs are told apart */
    TaskEvalArgs ea = {.m = m, .rc = &rc, .which = ""};
    json_t *res = classify_eval(&ea, rc.task.path);
    CHECK(json_integer_value(json_object_get(res, "examples")) == PAIRS);
    CHECK_CLOSE(json_real_value(json_object_get(res, "accuracy")), (double)right / PAIRS, 1e-12);
    CHECK_CLOSE(json_real_value(json_object_get(res, "majority_share")), 0.5, 1e-12);
    json_decref(res);
    datasource_free(ds);
    model_free(m);
    rt_free(dir);
}

static const TestCase tests[] = {
    {"rows_and_order", test_rows_and_order},
    {"long_document", test_long_document},
    {"errors", test_errors},
    {"pair_scoring", test_pair_scoring},
};

TH_MAIN(tests)
