/* Long Range Arena's Pathfinder files (task.type = pathfinder, data/pathfinder.h) on a tree
 * written here: PNGs written with libpng (8-bit and 4-bit grayscale), metadata lines as LRA's
 * release has them. Checks the decoded pixels, the labels, LRA's splits (the examples in the
 * order of the MD5 of the difficulty's name and the example key, cut 80 / 10 / 10 with
 * Python's rounding: the expected ids were computed with Python's hashlib), the empty image
 * files left out, train.seq_len following the images, the training order covering the
 * training split every epoch, data-parallel slicing, and every named error. */
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/run_config.h"
#include "data/datasource.h"
#include "data/pathfinder.h"
#include "data/png_gray.h"
#include "harness.h"
#include "task/task.h"
#include "util/error.h"
#include "util/fsutil.h"

enum { SIDE = 4, PIX = SIDE * SIDE, N_IMAGES = 25, FILE0_LINES = 13 };

/* Image id's pixel p; pixel 0 is the id, so a row names its image. */
static uint8_t pixel(int id, int p) { return (uint8_t)(p == 0 ? id : (id * 7 + p * 3) % 256); }
static int label_of(int id) { return id % 3 == 1; }

/* Writes a PNG of h x w pixels px (8-bit values; for bit depths below 8 the values must fit),
 * grayscale or, with rgb, each value in the three channels. */
static void write_png(const char *path, const uint8_t *px, int h, int w, int depth, int rgb) {
    FILE *f = fopen(path, "wb");
    RT_ASSERT(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    RT_ASSERT(png && info && !setjmp(png_jmpbuf(png)));
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth,
                 rgb ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    if (depth < 8) png_set_packing(png);
    uint8_t *row = rt_malloc((size_t)w * 3);
    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++)
            for (int c = 0; c < (rgb ? 3 : 1); c++) row[x * (rgb ? 3 : 1) + c] = px[y * w + x];
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    rt_free(row);
    RT_ASSERT(fclose(f) == 0);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    RT_ASSERT(f && fwrite(text, 1, strlen(text), f) == strlen(text) && fclose(f) == 0);
}

/* th_tmp_dir()/NAME/<sub>: metadata/0.npy (images 0..12 in imgs/0) and 1.npy (13..24 in imgs/1),
 * LRA's eleven fields per line; image 3 is an empty file, as LRA's release has some. */
static char *write_tree(const char *name, const char *sub) {
    char *root = rt_sprintf("%s/%s", th_tmp_dir(), name), *dir = rt_sprintf("%s/%s", root, sub);
    for (int f = 0; f < 2; f++) {
        char *imgs = rt_sprintf("%s/imgs/%d", dir, f), *meta = rt_sprintf("%s/metadata", dir);
        fs_mkdirs(imgs);
        fs_mkdirs(meta);
        char text[4096] = "";
        int lines = f ? N_IMAGES - FILE0_LINES : FILE0_LINES;
        for (int k = 0; k < lines; k++) {
            int id = f * FILE0_LINES + k;
            char *png = rt_sprintf("%s/sample_%d.png", imgs, k);
            uint8_t px[PIX];
            for (int p = 0; p < PIX; p++) px[p] = pixel(id, p);
            if (id == 3)
                write_text(png, "");
            else
                write_png(png, px, SIDE, SIDE, 8, 0);
            rt_free(png);
            snprintf(text + strlen(text), sizeof text - strlen(text),
                     "imgs/%d sample_%d.png %d %d 1.0 14 4 2 0.5 1 1\n", f, k, k, label_of(id));
        }
        char *mf = rt_sprintf("%s/%d.npy", meta, f);
        write_text(mf, text);
        rt_free(mf);
        rt_free(imgs);
        rt_free(meta);
    }
    rt_free(dir);
    return root;
}

static TaskConfig task_at(const char *path, const char *difficulty) {
    RunConfig rc;
    run_config_defaults(&rc);
    TaskConfig t = rc.task;
    strcpy(t.type, "pathfinder");
    snprintf(t.path, sizeof t.path, "%s", path);
    snprintf(t.difficulty, sizeof t.difficulty, "%s", difficulty);
    return t;
}

/* The ids (pixel 0) of a loaded split, in order, each image's pixels and label checked. */
static int split_ids(const TaskConfig *t, DataSplit split, int *ids, int64_t *empty) {
    ImageSet set;
    char err[2048];
    if (pathfinder_load(t, split, &set, empty, err, sizeof err)) {
        CHECK_MSG(0, "%s", err);
        return -1;
    }
    CHECK(set.height == SIDE && set.width == SIDE);
    for (int64_t i = 0; i < set.n; i++) {
        const uint8_t *px = set.pixels + i * PIX;
        ids[i] = px[0];
        int bad = set.labels[i] != label_of(ids[i]);
        for (int p = 0; p < PIX; p++) bad |= px[p] != pixel(ids[i], p);
        CHECK_MSG(!bad, "split %d image %d: pixels or label differ from what was written",
                  (int)split, ids[i]);
    }
    int n = (int)set.n;
    image_set_free(&set);
    return n;
}

static int same(const int *a, const int *b, int n) {
    return !memcmp(a, b, sizeof(int) * (size_t)n);
}

static void test_splits(void) {
    char *root = write_tree("splits", "curv_contour_length_14");
    TaskConfig t = task_at(root, "hard");
    int ids[N_IMAGES];
    int64_t empty;
    /* hashlib.md5(b"hard" + key) order: train 20 (round(20.0)), val 2, test 3 (round(22.5) = 22) */
    static const int TRAIN[] = {10, 20, 18, 15, 24, 23, 8,  21, 7,  6,
                                9,  22, 14, 0,  17, 1,  16, 5,  12, 13},
                     VAL[] = {4, 11}, TEST[] = {2, 19}; /* the test split's 3 is empty */
    CHECK(split_ids(&t, SPLIT_TRAIN, ids, &empty) == 20 && same(ids, TRAIN, 20) && empty == 0);
    CHECK(split_ids(&t, SPLIT_VAL, ids, &empty) == 2 && same(ids, VAL, 2) && empty == 0);
    CHECK(split_ids(&t, SPLIT_TEST, ids, &empty) == 2 && same(ids, TEST, 2) && empty == 1);
    /* the salt is the difficulty's name: easy orders the same keys otherwise */
    char *easy = write_tree("splits", "curv_baseline");
    t = task_at(root, "easy");
    static const int EASY_TEST[] = {18, 24, 11};
    CHECK(split_ids(&t, SPLIT_TEST, ids, &empty) == 3 && same(ids, EASY_TEST, 3) && empty == 0);
    int pixels = 0;
    char err[2048];
    CHECK(pathfinder_pixels(&t, &pixels, err, sizeof err) == 0 && pixels == PIX);
    rt_free(easy);
    rt_free(root);
}

/* 1-, 2- and 4-bit grayscale expand to 0..255 as libpng and TensorFlow's decode_png scale
 * them (v * 255 / (2^depth - 1)). */
static void test_png_depths(void) {
    for (int depth = 1; depth <= 8; depth *= 2) {
        int maxv = (1 << depth) - 1;
        uint8_t px[3 * 5], *out = NULL;
        for (int i = 0; i < 15; i++) px[i] = (uint8_t)((i * 7) % (maxv + 1));
        char *path = rt_sprintf("%s/depth%d.png", th_tmp_dir(), depth);
        write_png(path, px, 3, 5, depth, 0);
        size_t n;
        uint8_t *bytes = (uint8_t *)fs_read_file(path, &n);
        int h = 0, w = 0;
        char err[512];
        CHECK_MSG(png_gray_decode(path, bytes, n, &out, &h, &w, err, sizeof err) == 0, "%s", err);
        CHECK(h == 3 && w == 5);
        for (int i = 0; out && i < 15; i++) CHECK(out[i] == px[i] * 255 / maxv);
        CHECK(png_gray_size(path, bytes, n, &h, &w, err, sizeof err) == 0 && h == 3 && w == 5);
        rt_free(out);
        rt_free(bytes);
        rt_free(path);
    }
}

/* Loads the three splits; returns the first error, or "" when they all open. */
static const char *open_all(const TaskConfig *t) {
    static char err[2048];
    for (int s = 0; s < 3; s++) {
        ImageSet set;
        int64_t empty;
        if (pathfinder_load(t, (DataSplit)s, &set, &empty, err, sizeof err)) return err;
        image_set_free(&set);
    }
    return "";
}

static void test_errors(void) {
    char err[2048];
    TaskConfig t = task_at("/nonexistent/pathfinder32", "hard");
    CHECK(th_names(open_all(&t), "task.path = /nonexistent/pathfinder32 does not exist",
                   "docs/classification.md"));
    int pixels;
    CHECK(pathfinder_pixels(&t, &pixels, err, sizeof err) && th_names(err, "does not exist", NULL));
    char *root = write_tree("errors", "curv_contour_length_14");
    t = task_at(root, "intermediate");
    CHECK(th_names(open_all(&t), "curv_contour_length_9", "task.difficulty = intermediate"));
    t = task_at(root, "medium");
    CHECK(th_names(open_all(&t), "task.difficulty = medium", "easy, intermediate, hard"));
    t = task_at(root, "hard");
    CHECK(th_names(open_all(&t), "", NULL) && !open_all(&t)[0]);
    char *dir = rt_sprintf("%s/curv_contour_length_14", root),
         *meta1 = rt_sprintf("%s/metadata/1.npy", dir);
    size_t n;
    char *good = fs_read_file(meta1, &n);
    /* metadata lines: too few fields, a bad label, an empty line */
    static const struct {
        const char *text, *what;
    } BAD_META[] = {
        {"imgs/1 sample_0.png 0 1 1.0\nimgs/1 sample_1.png 1\n",
         "1.npy:2: 3 space-separated fields"},
        {"imgs/1 sample_0.png 0 2 1.0\n", "1.npy:1: label (field 4) \"2\" is not 0 or 1"},
        {"imgs/1 sample_0.png 0 1 1.0\n\nimgs/1 sample_1.png 1 0\n", "1.npy:2: empty line"},
    };
    for (size_t i = 0; i < sizeof BAD_META / sizeof BAD_META[0]; i++) {
        write_text(meta1, BAD_META[i].text);
        CHECK(th_names(open_all(&t), BAD_META[i].what, NULL));
    }
    write_text(meta1, "imgs/1 sample_99.png 99 1 1.0\n");
    CHECK(th_names(open_all(&t), "missing image", "imgs/1/sample_99.png (listed in"));
    write_text(meta1, good);
    /* image 19 (imgs/1/sample_6.png, in the test split): not a PNG, truncated, RGB, 16-bit
     * would be refused alike; another size */
    char *png = rt_sprintf("%s/imgs/1/sample_6.png", dir);
    uint8_t px[PIX * 2];
    for (int p = 0; p < PIX * 2; p++) px[p] = (uint8_t)p;
    write_text(png, "GIF89a not a png at all, 32 bytes");
    CHECK(th_names(open_all(&t), "sample_6.png", "not a PNG file"));
    write_png(png, px, SIDE, SIDE, 8, 0);
    char *bytes = fs_read_file(png, &n);
    FILE *f = fopen(png, "wb");
    RT_ASSERT(f && fwrite(bytes, 1, n - 20, f) == n - 20 && fclose(f) == 0);
    CHECK(th_names(open_all(&t), "sample_6.png: bad PNG", NULL));
    rt_free(bytes);
    write_png(png, px, SIDE, SIDE, 8, 1);
    CHECK(th_names(open_all(&t), "sample_6.png", "a RGB PNG"));
    write_png(png, px, SIDE + 1, SIDE, 8, 0);
    CHECK(th_names(open_all(&t), "sample_6.png", "5 x 4 pixels where the other images"));
    /* train.seq_len follows the images; another value is refused naming both */
    write_png(png, px, SIDE, SIDE, 8, 0);
    char *ini = rt_sprintf(
        "[model]\ntype = gla\nhidden_size = 16\nnum_heads = 2\nhead = classifier\nnum_classes = 2\n"
        "[data]\ntrain = task\n[task]\ntype = pathfinder\npath = %s\n",
        root);
    RunConfig rc;
    CHECK_MSG(run_config_load_string(&rc, ini, "pf.ini", NULL, 0, err, sizeof err) == 0, "%s", err);
    CHECK(rc.train.seq_len == PIX && rc.model.vocab_size == 256 &&
          !strcmp(rc.task.difficulty, "hard"));
    const char *sets[] = {"train.seq_len=20"};
    CHECK(run_config_load_string(&rc, ini, "pf.ini", sets, 1, err, sizeof err) == 0);
    DataOptions opt = {.seq_len = 20, .seed = 1, .split = SPLIT_VAL, .world = 1};
    CHECK(!task_source_open(&rc, &opt, err, sizeof err) &&
          th_names(err, "train.seq_len = 20", "4 x 4 = 16 pixels"));
    const char *val[] = {"task.val_examples=3"};
    CHECK(run_config_load_string(&rc, ini, "pf.ini", val, 1, err, sizeof err) == 0);
    opt.seq_len = PIX;
    CHECK(!task_source_open(&rc, &opt, err, sizeof err) &&
          th_names(err, "task.val_examples = 3", "80%"));
    const char *missing[] = {"task.path=/nonexistent/lra_release/pathfinder32"};
    CHECK(run_config_load_string(&rc, ini, "pf.ini", missing, 1, err, sizeof err) != 0 &&
          th_names(err,
                   "task.type = pathfinder: task.path = /nonexistent/lra_release/pathfinder32 does "
                   "not exist",
                   "docs/classification.md"));
    rt_free(ini);
    rt_free(png);
    rt_free(good);
    rt_free(meta1);
    rt_free(dir);
    rt_free(root);
}

/* Through datasource_open: the rows follow the row convention, each training epoch is a new
 * order of the whole training split, and ranks read disjoint rows of every global batch. */
static void test_task_source(void) {
    char *root = write_tree("source", "curv_contour_length_14");
    char *ini = rt_sprintf(
        "[model]\ntype = gla\nhidden_size = 16\nnum_heads = 2\nhead = classifier\nnum_classes = 2\n"
        "[data]\ntrain = task\n[task]\ntype = pathfinder\npath = %s\n",
        root);
    RunConfig rc;
    char err[2048];
    CHECK_MSG(run_config_load_string(&rc, ini, "pf.ini", NULL, 0, err, sizeof err) == 0, "%s", err);
    DataOptions opt = {.seq_len = PIX, .seed = 5, .split = SPLIT_TRAIN, .world = 1};
    DataSource *ds = task_source_open(&rc, &opt, err, sizeof err);
    CHECK_MSG(ds && ds->examples == 20, "%s", err);
    int32_t tok[40 * PIX], lab[40 * PIX];
    int epoch[2][20];
    for (int e = 0; ds && e < 2; e++) {
        CHECK(ds->next_labeled(ds, tok, lab, 20, err, sizeof err) == 0);
        int seen[N_IMAGES] = {0};
        for (int b = 0; b < 20; b++) {
            int id = tok[b * PIX], bad = lab[b * PIX + PIX - 1] != label_of(id);
            for (int p = 0; p < PIX - 1; p++)
                bad |= lab[b * PIX + p] != -100 || tok[b * PIX + p] != pixel(id, p);
            CHECK_MSG(!bad, "row %d (image %d) breaks the row convention", b, id);
            epoch[e][b] = id;
            seen[id]++;
        }
        static const int TRAIN[] = {10, 20, 18, 15, 24, 23, 8,  21, 7,  6,
                                    9,  22, 14, 0,  17, 1,  16, 5,  12, 13};
        for (int k = 0; k < 20; k++) CHECK(seen[TRAIN[k]] == 1);
    }
    CHECK(!same(epoch[0], epoch[1], 20));
    datasource_free(ds);
    /* validation and test: their split's images in LRA's order, cycled */
    static const int VAL[] = {4, 11, 4}, TEST[] = {2, 19, 2};
    for (int s = 0; s < 2; s++) {
        opt.split = s ? SPLIT_TEST : SPLIT_VAL;
        ds = task_source_open(&rc, &opt, err, sizeof err);
        CHECK_MSG(ds && ds->examples == 2, "%s", err);
        CHECK(ds && ds->next_labeled(ds, tok, lab, 3, err, sizeof err) == 0);
        for (int b = 0; ds && b < 3; b++)
            CHECK(tok[b * PIX] == (s ? TEST : VAL)[b] &&
                  lab[b * PIX + PIX - 1] == label_of(tok[b * PIX]));
        datasource_free(ds);
    }
    /* two ranks of 2 rows: rank r reads rows 2r, 2r + 1 of each global 4 */
    opt.split = SPLIT_TRAIN;
    DataSource *one = task_source_open(&rc, &opt, err, sizeof err);
    int32_t all[4 * PIX], l4[4 * PIX];
    CHECK(one && one->next_labeled(one, all, l4, 4, err, sizeof err) == 0);
    for (int r = 0; r < 2; r++) {
        DataOptions o = opt;
        o.rank = r, o.world = 2;
        DataSource *part = task_source_open(&rc, &o, err, sizeof err);
        CHECK(part && part->next_labeled(part, tok, lab, 2, err, sizeof err) == 0);
        CHECK(tok[0] == all[(2 * r) * PIX] && tok[PIX] == all[(2 * r + 1) * PIX]);
        datasource_free(part);
    }
    datasource_free(one);
    rt_free(ini);
    rt_free(root);
}

static const TestCase tests[] = {
    {"png_depths", test_png_depths},
    {"splits", test_splits},
    {"errors", test_errors},
    {"task_source", test_task_source},
};

TH_MAIN(tests)
