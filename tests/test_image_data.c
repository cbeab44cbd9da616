/* The image-classification data (task.type = seq_image): the IDX reader on generated files
 * (valid, plain and gzip; each malformation reported with its file and offset), the CIFAR-10
 * batch reader and its grayscale conversion, the pixel permutation (NumPy's), the row convention
 * (the class only at the last position), the splits (disjoint, reproducible, a new
 * training order each epoch), data-parallel slicing and the saved position through
 * datasource_open; then the Fashion-MNIST files of Debian's dataset-fashion-mnist when
 * installed (skipped otherwise). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "config/run_config.h"
#include "data/cifar10.h"
#include "data/datasource.h"
#include "data/idx.h"
#include "data/image_set.h"
#include "harness.h"
#include "task/task.h"
#include "util/error.h"
#include "util/fsutil.h"

static char *tmp_path(const char *name) { return rt_sprintf("%s/%s", th_tmp_dir(), name); }

static void write_bytes(const char *path, const void *data, size_t n, int gz) {
    if (gz) {
        gzFile f = gzopen(path, "wb");
        RT_ASSERT(f && gzwrite(f, data, (unsigned)n) == (int)n && gzclose(f) == Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        RT_ASSERT(f && fwrite(data, 1, n, f) == n && fclose(f) == 0);
    }
}

/* An unsigned-byte IDX file's bytes: header for dims, then data (NULL: zeros). *n gets the size. */
static uint8_t *idx_bytes(const int *dims, int ndims, const uint8_t *data, size_t *n) {
    size_t count = 1;
    for (int k = 0; k < ndims; k++) count *= (size_t)dims[k];
    *n = 4 + 4 * (size_t)ndims + count;
    uint8_t *b = rt_calloc(*n, 1);
    b[2] = 0x08;
    b[3] = (uint8_t)ndims;
    for (int k = 0; k < ndims; k++)
        for (int j = 0; j < 4; j++) b[4 + 4 * k + j] = (uint8_t)((unsigned)dims[k] >> (24 - 8 * j));
    if (data) memcpy(b + 4 + 4 * ndims, data, count);
    return b;
}

static void write_idx(const char *path, const int *dims, int ndims, const uint8_t *data, int gz) {
    size_t n;
    uint8_t *b = idx_bytes(dims, ndims, data, &n);
    write_bytes(path, b, n, gz);
    rt_free(b);
}

/* n images of h x w: pixel p of image i is (first + i + 7 p) mod 256, so pixel 0 names the
 * image; its label (first + i) % classes. */
static void write_image_pair(const char *images, const char *labels, int n, int h, int w, int first,
                             int classes, int gz) {
    uint8_t *px = rt_malloc((size_t)n * h * w), *lb = rt_malloc((size_t)n);
    for (int i = 0; i < n; i++) {
        for (int p = 0; p < h * w; p++)
            px[(size_t)i * h * w + p] = (uint8_t)((first + i + 7 * p) % 256);
        lb[i] = (uint8_t)((first + i) % classes);
    }
    int di[3] = {n, h, w}, dl[1] = {n};
    write_idx(images, di, 3, px, gz);
    write_idx(labels, dl, 1, lb, gz);
    rt_free(px);
    rt_free(lb);
}

static void test_idx_valid(void) {
    for (int gz = 0; gz <= 1; gz++) {
        char *im = tmp_path(gz ? "v-images.gz" : "v-images"),
             *lb = tmp_path(gz ? "v-labels.gz" : "v-labels");
        write_image_pair(im, lb, 5, 3, 4, 10, 3, gz);
        ImageSet s;
        char err[2048];
        int pixels = 0;
        CHECK_MSG(idx_image_pixels(im, &pixels, err, sizeof err) == 0 && pixels == 12, "gz=%d: %s",
                  gz, err);
        CHECK_MSG(idx_load_images(im, lb, &s, err, sizeof err) == 0, "gz=%d: %s", gz, err);
        CHECK(s.n == 5 && s.height == 3 && s.width == 4);
        int bad = 0;
        for (int i = 0; i < s.n; i++) {
            bad |= s.labels[i] != (10 + i) % 3;
            for (int p = 0; p < 12; p++) bad |= s.pixels[i * 12 + p] != (10 + i + 7 * p) % 256;
        }
        CHECK_MSG(!bad, "gz=%d: pixels or labels differ from the file's", gz);
        image_set_free(&s);
        rt_free(im);
        rt_free(lb);
    }
}

/* Reading path (its images with labels, or alone) fails with a message holding each of the
 * NULL-terminated fragments. */
static void expect_error(const char *what, const char *images, const char *labels,
                         const char *const *frags) {
    ImageSet s;
    IdxArray a;
    char err[2048] = "";
    int rc = labels ? idx_load_images(images, labels, &s, err, sizeof err)
                    : idx_read(images, 0, &a, err, sizeof err);
    CHECK_MSG(rc == -1, "%s: read without an error", what);
    for (; *frags; frags++)
        CHECK_MSG(strstr(err, *frags), "%s: the message lacks '%s': %s", what, *frags, err);
}

static void test_idx_errors(void) {
    int dims[3] = {4, 2, 3};
    size_t n;
    uint8_t *good = idx_bytes(dims, 3, NULL, &n); /* 16 header bytes + 24 */
    char *p = tmp_path("bad-images"), *lb = tmp_path("bad-labels");
    int dl[1] = {4};
    write_idx(lb, dl, 1, NULL, 0);

    good[0] = 1;
    write_bytes(p, good, n, 0);
    expect_error("wrong magic", p, NULL, (const char *[]){p, "offset 0", "magic", NULL});
    good[0] = 0;

    good[2] = 0x0D;
    write_bytes(p, good, n, 0);
    expect_error("float type", p, NULL, (const char *[]){p, "offset 2", "0x0d", NULL});
    good[2] = 0x08;

    good[3] = 0;
    write_bytes(p, good, n, 0);
    expect_error("no dimensions", p, NULL, (const char *[]){p, "offset 3", NULL});
    good[3] = 3;

    write_bytes(p, good, n - 3, 0);
    expect_error("truncated data", p, NULL,
                 (const char *[]){p, "truncated", "from offset 16", "ends at offset 37", NULL});
    write_bytes(p, good, n - 3, 1);
    expect_error("truncated data (gz)", p, NULL,
                 (const char *[]){p, "truncated", "ends at offset 37", NULL});
    write_bytes(p, good, 10, 0);
    expect_error("truncated header", p, NULL, (const char *[]){p, "offset 10", "header", NULL});

    uint8_t *longer = rt_calloc(n + 1, 1);
    memcpy(longer, good, n);
    write_bytes(p, longer, n + 1, 0);
    expect_error("trailing data", p, NULL, (const char *[]){p, "offset 40", "continues", NULL});
    rt_free(longer);

    /* a gzip stream cut in half */
    size_t big_n;
    int big_dims[3] = {200, 28, 28};
    uint8_t *big = idx_bytes(big_dims, 3, NULL, &big_n);
    for (size_t i = 16; i < big_n; i++) big[i] = (uint8_t)(i * 2654435761u >> 13);
    char *gz = tmp_path("cut.gz");
    write_bytes(gz, big, big_n, 1);
    FILE *f = fopen(gz, "rb");
    uint8_t *comp = rt_malloc(big_n + 1024);
    size_t comp_n = fread(comp, 1, big_n + 1024, f);
    fclose(f);
    write_bytes(gz, comp, comp_n / 2, 0);
    expect_error("cut gzip stream", gz, NULL, (const char *[]){gz, "truncated", NULL});
    rt_free(comp);
    rt_free(big);
    rt_free(gz);

    write_bytes(p, good, n, 0);
    int d5[1] = {5};
    write_idx(lb, d5, 1, NULL, 0);
    expect_error("count mismatch", p, lb, (const char *[]){p, lb, "4 images", "5 labels", NULL});
    int d2[2] = {4, 1};
    write_idx(lb, d2, 2, NULL, 0);
    expect_error("2-D labels", p, lb, (const char *[]){lb, "dimensions", NULL});
    int d1[1] = {4};
    write_idx(lb, d1, 1, NULL, 0);
    write_idx(p, d1, 1, NULL, 0);
    expect_error("1-D images", p, lb, (const char *[]){p, "3 (images x rows x columns)", NULL});
    char *missing = tmp_path("no-such-file");
    expect_error("missing file", missing, NULL, (const char *[]){missing, "cannot open", NULL});
    rt_free(missing);
    rt_free(good);
    rt_free(p);
    rt_free(lb);
}

/* ---- CIFAR-10 ---- */

static void cifar_record(uint8_t *rec, int label, int seed) {
    rec[0] = (uint8_t)label;
    for (int k = 0; k < 3 * CIFAR10_PIXELS; k++) rec[1 + k] = (uint8_t)((seed * 31 + k * 17) % 256);
}

static void test_cifar10(void) {
    /* tf.image.rgb_to_grayscale of uint8: floor((0.2989 r + 0.587 g + 0.114 b) / 255 * 255.5) */
    CHECK(cifar10_gray(0, 0, 0) == 0 && cifar10_gray(255, 255, 255) == 255);
    CHECK(cifar10_gray(255, 0, 0) == 76 && cifar10_gray(0, 255, 0) == 149 &&
          cifar10_gray(0, 0, 255) == 29);
    CHECK(cifar10_gray(100, 150, 200) ==
          141); /* 29.89 + 88.05 + 22.8 = 140.74, x 255.5/255 = 141.02 */

    char *dir = tmp_path("cifar");
    fs_mkdirs(dir);
    uint8_t recs[3][CIFAR10_RECORD];
    for (int r = 0; r < 3; r++) cifar_record(recs[r], (r * 4) % 10, r);
    for (int k = 1; k <= 5; k++) {
        char *path = rt_sprintf("%s/data_batch_%d.bin", dir, k);
        write_bytes(path, recs, k == 5 ? 3 * CIFAR10_RECORD : 2 * CIFAR10_RECORD, 0);
        rt_free(path);
    }
    char *test = rt_sprintf("%s/test_batch.bin", dir);
    write_bytes(test, recs[2], CIFAR10_RECORD, 0);
    ImageSet s;
    char err[2048];
    CHECK_MSG(cifar10_load(dir, 0, &s, err, sizeof err) == 0, "%s", err);
    CHECK(s.n == 11 && s.height == 32 && s.width == 32);
    if (s.n == 11) {
        const uint8_t *r = recs[1] + 1;
        int bad = s.labels[1] != 4 || s.labels[10] != 8;
        for (int p = 0; p < CIFAR10_PIXELS; p++)
            bad |= s.pixels[CIFAR10_PIXELS + p] !=
                   cifar10_gray(r[p], r[CIFAR10_PIXELS + p], r[2 * CIFAR10_PIXELS + p]);
        CHECK_MSG(!bad, "record 1 of data_batch_1.bin read wrongly");
    }
    image_set_free(&s);
    CHECK_MSG(cifar10_load(dir, 1, &s, err, sizeof err) == 0 && s.n == 1 && s.labels[0] == 8, "%s",
              err);
    image_set_free(&s);

    recs[1][0] = 10;
    write_bytes(test, recs, 3 * CIFAR10_RECORD, 0);
    CHECK(cifar10_load(dir, 1, &s, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, test) && strstr(err, "record 1 ") && strstr(err, "label 10"), "%s", err);
    write_bytes(test, recs, 2 * CIFAR10_RECORD + 100, 0);
    CHECK(cifar10_load(dir, 1, &s, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, test) && strstr(err, "record 2 ") &&
                  strstr(err, "truncated: 100 of 3073"),
              "%s", err);
    char *b3 = rt_sprintf("%s/data_batch_3.bin", dir);
    unlink(b3);
    CHECK(cifar10_load(dir, 0, &s, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, b3) && strstr(err, "cannot open"), "%s", err);
    rt_free(b3);
    rt_free(test);
    rt_free(dir);
}

/* A CIFAR-10 directory as task.images: rows of 1024 gray pixels, the test batch as TEST. */
static void test_cifar10_task(void) {
    char *dir = tmp_path("cifar-task");
    fs_mkdirs(dir);
    uint8_t recs[2][CIFAR10_RECORD];
    for (int k = 0; k <= 5; k++) {
        for (int r = 0; r < 2; r++) { /* training image i: label i % 10; the test images 10, 11 */
            int i = k ? 2 * (k - 1) + r : 10 + r;
            cifar_record(recs[r], i % 10, i);
        }
        char *path =
            k ? rt_sprintf("%s/data_batch_%d.bin", dir, k) : rt_sprintf("%s/test_batch.bin", dir);
        write_bytes(path, recs, 2 * CIFAR10_RECORD, 0);
        rt_free(path);
    }
    char *ini =
        rt_sprintf("[model]\ntype = gla\nhidden_size = 16\nnum_heads = 2\n[data]\ntrain = task\n"
                   "[task]\ntype = seq_image\nimages = %s\nval_examples = 3\n",
                   dir);
    RunConfig rc;
    char err[2048];
    if (run_config_load_string(&rc, ini, "cifar.ini", NULL, 0, err, sizeof err)) {
        CHECK_MSG(0, "%s", err);
    } else {
        CHECK(rc.train.seq_len == CIFAR10_PIXELS);
        const int64_t n[3] = {7, 3, 2};
        for (int split = 0; split < 3; split++) {
            DataOptions opt = {.seq_len = rc.train.seq_len,
                               .seed = rc.train.seed,
                               .split = (DataSplit)split,
                               .world = 1};
            DataSource *ds = task_source_open(&rc, &opt, err, sizeof err);
            CHECK_MSG(ds && ds->examples == n[split], "split %d: %s", split,
                      ds ? "wrong size" : err);
            if (ds &&
                split == SPLIT_VAL) { /* images 7, 8, 9: record 1 of batch 4, both of batch 5 */
                int32_t tok[CIFAR10_PIXELS], lab[CIFAR10_PIXELS];
                uint8_t rec[CIFAR10_RECORD];
                cifar_record(rec, 7, 7);
                CHECK(ds->next_labeled(ds, tok, lab, 1, err, sizeof err) == 0);
                const uint8_t *r = rec + 1;
                int bad = lab[CIFAR10_PIXELS - 1] != 7;
                for (int p = 0; p < CIFAR10_PIXELS; p++)
                    bad |= tok[p] !=
                           cifar10_gray(r[p], r[CIFAR10_PIXELS + p], r[2 * CIFAR10_PIXELS + p]);
                CHECK_MSG(!bad, "the first validation row is not the gray image 7 with its label");
            }
            datasource_free(ds);
        }
    }
    rt_free(ini);
    char *set = rt_sprintf("task.labels=%s/x", dir);
    const char *sets[1] = {set};
    ini = rt_sprintf("[data]\ntrain = task\n[task]\ntype = seq_image\nimages = %s\n", dir);
    if (!run_config_load_string(&rc, ini, "cifar.ini", sets, 1, err, sizeof err)) {
        DataOptions opt = {
            .seq_len = rc.train.seq_len, .seed = rc.train.seed, .split = SPLIT_TRAIN, .world = 1};
        DataSource *ds = task_source_open(&rc, &opt, err, sizeof err);
        CHECK(ds == NULL);
        CHECK_MSG(strstr(err, "task.labels is set") && strstr(err, "CIFAR-10 directory"), "%s",
                  err);
        datasource_free(ds);
    }
    rt_free(set);
    rt_free(ini);
    rt_free(dir);
}

/* ---- the sequence view ---- */

/* np.random.RandomState(seed).permutation(784) (NumPy 2.4): its first and last entries and
 * sum over t of t * p[t]. */
static const struct {
    uint32_t seed;
    int32_t head[8], tail[4];
    int64_t moment;
} NUMPY_784[] = {
    {1234, {529, 511, 328, 133, 532, 378, 156, 305}, {204, 53, 294, 723}, 121578700}, /* nnRNN's */
    {92916,
     {319, 576, 323, 107, 355, 716, 197, 20},
     {264, 102, 39, 346},
     118652722}, /* expRNN's, scoRNN's */
};

static void test_permutation(void) {
    enum { P = 784 };
    int32_t a[P], b[P], c[P], id[P];
    for (size_t k = 0; k < sizeof NUMPY_784 / sizeof NUMPY_784[0]; k++) {
        image_pixel_order(P, 1, NUMPY_784[k].seed, a);
        int64_t moment = 0;
        int seen[P] = {0}, bijective = 1;
        for (int t = 0; t < P; t++) {
            bijective &= a[t] >= 0 && a[t] < P && !seen[a[t]]++;
            moment += (int64_t)t * a[t];
        }
        CHECK_MSG(bijective, "the pixel order of seed %u is not a permutation", NUMPY_784[k].seed);
        CHECK_MSG(!memcmp(a, NUMPY_784[k].head, sizeof NUMPY_784[k].head) &&
                      !memcmp(a + P - 4, NUMPY_784[k].tail, sizeof NUMPY_784[k].tail) &&
                      moment == NUMPY_784[k].moment,
                  "seed %u: not NumPy's RandomState(seed).permutation(784)", NUMPY_784[k].seed);
    }
    image_pixel_order(P, 1, 7, a);
    image_pixel_order(P, 1, 7, b);
    image_pixel_order(P, 1, 8, c);
    image_pixel_order(P, 0, 7, id);
    CHECK(!memcmp(a, b, sizeof a));
    CHECK(memcmp(a, c, sizeof a) != 0);
    int identity = 1;
    for (int t = 0; t < P; t++) identity &= id[t] == t;
    CHECK(identity);
}

static void test_row_convention(void) {
    enum { H = 3, W = 5, T = H * W };
    uint8_t px[2 * T], lb[2] = {4, 9};
    for (int k = 0; k < 2 * T; k++) px[k] = (uint8_t)(k * 13 + 1);
    ImageSet s = {2, H, W, px, lb};
    int32_t order[T], tok[T], lab[T];
    image_pixel_order(T, 1, 3, order);
    image_row(&s, 1, order, tok, lab);
    int bad = 0;
    for (int t = 0; t < T; t++) {
        bad |= tok[t] != px[T + order[t]];
        bad |= t < T - 1 ? lab[t] != -100 : lab[t] != 9;
    }
    CHECK_MSG(!bad,
              "row 1: tokens must be its pixels in order[], labels -100 but the class at T-1");
}

/* ---- the task through datasource_open ---- */

enum { TRAIN_N = 40, TEST_N = 7, VAL_N = 8, SIDE = 2, TPIX = SIDE * SIDE };

/* The task over the files of write_task_files, with extra INI text after its [task] keys
 * and up to one --set override (NULL: none). */
static int load_task_config(RunConfig *rc, const char *extra, const char *set, char *err,
                            size_t errlen) {
    char *ini = rt_sprintf(
        "[model]\ntype = gla\nhidden_size = 16\nnum_heads = 2\n[data]\ntrain = task\n[task]\n"
        "type = seq_image\nimages = %s/train-images-idx3-ubyte\nlabels = "
        "%s/train-labels-idx1-ubyte\n"
        "val_examples = %d\n%s",
        th_tmp_dir(), th_tmp_dir(), VAL_N, extra);
    const char *sets[1] = {set};
    int r = run_config_load_string(rc, ini, "test.ini", sets, set ? 1 : 0, err, errlen);
    rt_free(ini);
    return r;
}

static void write_task_files(void) {
    char *a = tmp_path("train-images-idx3-ubyte"), *b = tmp_path("train-labels-idx1-ubyte");
    char *c = tmp_path("t10k-images-idx3-ubyte"), *d = tmp_path("t10k-labels-idx1-ubyte");
    write_image_pair(a, b, TRAIN_N, SIDE, SIDE, 0, 3, 0);
    write_image_pair(c, d, TEST_N, SIDE, SIDE, 100, 3, 0);
    rt_free(a);
    rt_free(b);
    rt_free(c);
    rt_free(d);
}

static DataSource *open_split(const RunConfig *rc, DataSplit split, int rank, int world) {
    DataOptions opt = {.seq_len = rc->train.seq_len,
                       .seed = rc->train.seed,
                       .split = split,
                       .rank = rank,
                       .world = world};
    char err[2048];
    DataSource *ds = task_source_open(rc, &opt, err, sizeof err);
    CHECK_MSG(ds != NULL, "%s", err);
    return ds;
}

/* The image ids (pixel 0) of the next B rows of ds, their labels checked against the row
 * convention and the files' labels. */
static void next_ids(DataSource *ds, int B, int *ids) {
    int32_t tok[64 * TPIX], lab[64 * TPIX];
    char err[512];
    RT_ASSERT(B <= 64);
    CHECK_MSG(ds->next_labeled(ds, tok, lab, B, err, sizeof err) == 0, "%s", err);
    for (int b = 0; b < B; b++) {
        ids[b] = tok[b * TPIX];
        int bad = lab[b * TPIX + TPIX - 1] != ids[b] % 3;
        for (int t = 0; t < TPIX - 1; t++) bad |= lab[b * TPIX + t] != -100;
        CHECK_MSG(!bad, "row %d (image %d): labels break the row convention", b, ids[b]);
    }
}

/* The task's files written and its config loaded with `extra` [task] lines; 0 after failing
 * the test when the config is refused. */
static int task_config(RunConfig *rc, const char *extra) {
    char err[2048];
    write_task_files();
    if (load_task_config(rc, extra, NULL, err, sizeof err) == 0) return 1;
    CHECK_MSG(0, "%s", err);
    return 0;
}

static void test_splits(void) {
    RunConfig rc;
    if (!task_config(&rc, "")) return;
    char err[2048];
    CHECK_MSG(rc.train.seq_len == TPIX && rc.model.vocab_size == 256,
              "seq_len %d, vocab %d: should follow the task", rc.train.seq_len,
              rc.model.vocab_size);
    enum { NT = TRAIN_N - VAL_N };
    DataSource *tr = open_split(&rc, SPLIT_TRAIN, 0, 1), *va = open_split(&rc, SPLIT_VAL, 0, 1),
               *te = open_split(&rc, SPLIT_TEST, 0, 1), *tr2 = open_split(&rc, SPLIT_TRAIN, 0, 1);
    if (!tr || !va || !te || !tr2) return;
    CHECK(tr->examples == NT && va->examples == VAL_N && te->examples == TEST_N);
    int e1[NT], e2[NT], again[NT], seen[256] = {0};
    next_ids(tr, NT, e1);
    next_ids(tr, NT, e2);
    next_ids(tr2, NT, again);
    int ok = 1;
    for (int i = 0; i < NT; i++) ok &= e1[i] < NT && !seen[e1[i]]++;
    CHECK_MSG(ok, "an epoch of train must be each of images 0..%d once", NT - 1);
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < NT; i++) ok &= e2[i] < NT && !seen[e2[i]]++;
    CHECK_MSG(ok, "the second epoch must be each of images 0..%d once", NT - 1);
    CHECK_MSG(memcmp(e1, e2, sizeof e1) != 0, "the second epoch repeats the first's order");
    CHECK_MSG(!memcmp(e1, again, sizeof e1), "the same seed must give the same order");
    int in_order = 1;
    for (int i = 0; i < NT; i++) in_order &= e1[i] == i;
    CHECK_MSG(!in_order, "the training order is not shuffled");

    int v[VAL_N + 1], t[TEST_N + 1];
    next_ids(va, VAL_N + 1, v);
    for (int i = 0; i < VAL_N; i++) CHECK(v[i] == NT + i);
    CHECK(v[VAL_N] == NT); /* cycled */
    next_ids(te, TEST_N + 1, t);
    for (int i = 0; i < TEST_N; i++) CHECK(t[i] == 100 + i);
    CHECK(t[TEST_N] == 100);
    datasource_free(tr);
    datasource_free(tr2);
    datasource_free(va);
    datasource_free(te);

    RunConfig other;
    CHECK(load_task_config(&other, "", "train.seed=99", err, sizeof err) == 0);
    DataSource *o = open_split(&other, SPLIT_TRAIN, 0, 1);
    if (!o) return;
    next_ids(o, NT, again);
    CHECK_MSG(memcmp(e1, again, sizeof e1) != 0, "another run seed must give another order");
    datasource_free(o);
}

static void test_permuted_task(void) {
    RunConfig plain, perm;
    if (!task_config(&plain, "") || !task_config(&perm, "permute = true\npermute_seed = 5\n"))
        return;
    char err[2048];
    int32_t order[TPIX], a[TPIX * 2], b[TPIX * 2], la[TPIX * 2], lb[TPIX * 2];
    image_pixel_order(TPIX, 1, 5, order);
    for (int split = SPLIT_VAL; split <= SPLIT_TEST; split++) {
        DataSource *x = open_split(&plain, (DataSplit)split, 0, 1),
                   *y = open_split(&perm, (DataSplit)split, 0, 1);
        if (!x || !y) return;
        CHECK(x->next_labeled(x, a, la, 2, err, sizeof err) == 0 &&
              y->next_labeled(y, b, lb, 2, err, sizeof err) == 0);
        int bad = memcmp(la, lb, sizeof la) != 0;
        for (int r = 0; r < 2; r++)
            for (int t = 0; t < TPIX; t++) bad |= b[r * TPIX + t] != a[r * TPIX + order[t]];
        CHECK_MSG(!bad,
                  "split %d: the permuted rows must be the plain rows in the seed's pixel order",
                  split);
        datasource_free(x);
        datasource_free(y);
    }
}

static void test_data_parallel_and_state(void) {
    RunConfig rc;
    if (!task_config(&rc, "")) return;
    char err[2048];
    enum { B = 4, STEPS = 12 }; /* 12 steps of 8 rows: past two epochs of 32 */
    DataSource *one = open_split(&rc, SPLIT_TRAIN, 0, 1), *r0 = open_split(&rc, SPLIT_TRAIN, 0, 2),
               *r1 = open_split(&rc, SPLIT_TRAIN, 1, 2);
    if (!one || !r0 || !r1) return;
    json_t *saved = NULL;
    int whole[STEPS][2 * B];
    for (int s = 0; s < STEPS; s++) {
        int g[2 * B], a[B], b[B];
        next_ids(one, 2 * B, g);
        next_ids(r0, B, a);
        next_ids(r1, B, b);
        memcpy(whole[s], g, sizeof g);
        CHECK_MSG(!memcmp(a, g, sizeof a) && !memcmp(b, g + B, sizeof b),
                  "step %d: rank r of 2 must read rows r B .. r B + B - 1 of the single rank's 2 B",
                  s);
        if (s == 4) saved = r0->get_state(r0);
    }
    /* resuming at step 5 replays the same rows, on a new source */
    DataSource *re = open_split(&rc, SPLIT_TRAIN, 0, 2);
    if (re && saved) {
        CHECK_MSG(re->set_state(re, saved, err, sizeof err) == 0, "%s", err);
        for (int s = 5; s < STEPS; s++) {
            int a[B];
            next_ids(re, B, a);
            CHECK_MSG(!memcmp(a, whole[s], sizeof a), "step %d after set_state differs", s);
        }
        json_t *foreign = json_pack("{s:s, s:s, s:I}", "kind", "task", "task", "task mqar", "index",
                                    (json_int_t)3);
        CHECK(re->set_state(re, foreign, err, sizeof err) == -1);
        json_decref(foreign);
    }
    json_decref(saved);
    datasource_free(re);
    datasource_free(one);
    datasource_free(r0);
    datasource_free(r1);
}

/* A config or open error holding each fragment. */
static void expect_task_error(const char *extra, const char *set, DataSplit split,
                              const char *const *frags) {
    RunConfig rc;
    char err[2048] = "";
    int failed = load_task_config(&rc, extra, set, err, sizeof err) != 0;
    if (!failed) {
        DataOptions opt = {
            .seq_len = rc.train.seq_len, .seed = rc.train.seed, .split = split, .world = 1};
        DataSource *ds = task_source_open(&rc, &opt, err, sizeof err);
        failed = ds == NULL;
        datasource_free(ds);
    }
    CHECK_MSG(failed, "'%s' %s was accepted", extra, set ? set : "");
    for (; *frags; frags++)
        CHECK_MSG(strstr(err, *frags), "'%s': the message lacks '%s': %s", extra, *frags, err);
}

static void test_task_errors(void) {
    write_task_files();
    char *im = tmp_path("x-images"), *lb = tmp_path("x-labels"), *lb5 = tmp_path("x5-labels");
    write_image_pair(im, lb, 3, SIDE, SIDE, 0, 3, 0);
    int d5[1] = {5};
    write_idx(lb5, d5, 1, NULL, 0);
    expect_task_error("[train]\nseq_len = 5\n", NULL, SPLIT_TRAIN,
                      (const char *[]){"train.seq_len = 5", "2 x 2 = 4 pixels", NULL});
    expect_task_error("[model]\nvocab_size = 100\n", NULL, SPLIT_TRAIN,
                      (const char *[]){"model.vocab_size = 100", "256", NULL});
    expect_task_error("", "task.val_examples=40", SPLIT_VAL,
                      (const char *[]){"task.val_examples = 40", "40 images", NULL});
    expect_task_error("train_examples = 10\n", NULL, SPLIT_TRAIN,
                      (const char *[]){"task.train_examples = 10", NULL});
    expect_task_error("permute = true\npermute_seed = 4294967296\n", NULL, SPLIT_TRAIN,
                      (const char *[]){"task.permute_seed = 4294967296", "2^32", NULL});
    char *wrong = rt_sprintf("task.labels=%s", lb5);
    expect_task_error("", wrong, SPLIT_TRAIN, (const char *[]){"40 images", "5 labels", lb5, NULL});
    rt_free(wrong);
    char *renamed = rt_sprintf("task.images=%s", im);
    expect_task_error("", renamed, SPLIT_TEST, (const char *[]){"task.test_images", "t10k-", NULL});
    rt_free(renamed);
    char *missing = rt_sprintf("task.images=%s/none-images", th_tmp_dir());
    expect_task_error("", missing, SPLIT_TRAIN,
                      (const char *[]){"none-images", "cannot open", NULL});
    rt_free(missing);
    rt_free(im);
    rt_free(lb);
    rt_free(lb5);
}

/* ---- the real files ---- */

static void test_fashion_mnist(void) {
    const char *dir = ROTOR_FASHION_MNIST;
    char *tri = rt_sprintf("%s/train-images-idx3-ubyte.gz", dir),
         *trl = rt_sprintf("%s/train-labels-idx1-ubyte.gz", dir);
    char *tei = rt_sprintf("%s/t10k-images-idx3-ubyte.gz", dir),
         *tel = rt_sprintf("%s/t10k-labels-idx1-ubyte.gz", dir);
    if (!fs_exists(tri) || !fs_exists(trl) || !fs_exists(tei) || !fs_exists(tel)) {
        TH_SKIP("Fashion-MNIST is not in %s (Debian's dataset-fashion-mnist, scripts/setup.sh "
                "installs it)",
                dir);
    } else {
        static const char *const names[2] = {"train", "t10k"};
        const int64_t expect[2] = {60000, 10000};
        for (int k = 0; k < 2; k++) {
            ImageSet s;
            char err[2048];
            if (idx_load_images(k ? tei : tri, k ? tel : trl, &s, err, sizeof err)) {
                CHECK_MSG(0, "%s", err);
                continue;
            }
            CHECK(s.n == expect[k] && s.height == 28 && s.width == 28);
            int64_t per_class[256] = {0}, hist[256] = {0};
            for (int64_t i = 0; i < s.n; i++) per_class[s.labels[i]]++;
            for (int64_t p = 0; p < s.n * 784; p++) hist[s.pixels[p]]++;
            int balanced = 1;
            for (int c = 0; c < 256; c++) balanced &= per_class[c] == (c < 10 ? expect[k] / 10 : 0);
            CHECK_MSG(balanced, "%s: Fashion-MNIST has %" PRId64 " images of each of 10 classes",
                      names[k], expect[k] / 10);
            double sum = 0, total = (double)s.n * 784;
            for (int v = 0; v < 256; v++) sum += (double)v * (double)hist[v];
            double mean = sum / total, zeros = (double)hist[0] / total;
            printf("    %s: %" PRId64 " images, mean intensity %.2f, %.1f%% zero pixels, %" PRId64
                   " at 255\n",
                   names[k], s.n, mean, 100 * zeros, hist[255]);
            /* the dataset's published mean is 0.2860 x 255 = 72.9; about half the pixels are
             * background */
            CHECK_MSG(mean > 68 && mean < 78, "%s: mean intensity %.2f", names[k], mean);
            CHECK_MSG(zeros > 0.3 && zeros < 0.7, "%s: %.3f of the pixels are 0", names[k], zeros);
            CHECK(hist[255] > 0);
            image_set_free(&s);
        }
        /* the shipped configs read them: rows of 784, 54000 / 6000 / 10000 examples */
        static const char *const configs[] = {"fmnist-seq.ini", "fmnist-pseq.ini"};
        for (int c = 0; c < 2; c++) {
            char *path = rt_sprintf("%s/configs/classify/%s", ROTOR_SOURCE_DIR, configs[c]),
                 err[2048];
            RunConfig rc;
            if (run_config_load(&rc, path, NULL, 0, err, sizeof err)) {
                CHECK_MSG(0, "%s", err);
            } else {
                CHECK(rc.train.seq_len == 784 && rc.model.vocab_size == 256 &&
                      rc.task.permute == c);
                const int64_t n[3] = {54000, 6000, 10000};
                for (int split = 0; split < 3; split++) {
                    DataSource *ds = open_split(&rc, (DataSplit)split, 0, 1);
                    CHECK(ds && ds->examples == n[split]);
                    datasource_free(ds);
                }
            }
            rt_free(path);
        }
    }
    rt_free(tri);
    rt_free(trl);
    rt_free(tei);
    rt_free(tel);
}

static const TestCase tests[] = {
    {"idx_valid", test_idx_valid},
    {"idx_errors", test_idx_errors},
    {"cifar10", test_cifar10},
    {"cifar10_task", test_cifar10_task},
    {"permutation", test_permutation},
    {"row_convention", test_row_convention},
    {"splits", test_splits},
    {"permuted_task", test_permuted_task},
    {"data_parallel_and_state", test_data_parallel_and_state},
    {"task_errors", test_task_errors},
    {"fashion_mnist", test_fashion_mnist},
};

TH_MAIN(tests)
