#include "data/pathfinder.h"

#include <errno.h>
#include <glob.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "data/png_gray.h"
#include "util/error.h"
#include "util/fsutil.h"

static const char *const NAMES[][2] = {{"easy", "curv_baseline"},
                                       {"intermediate", "curv_contour_length_9"},
                                       {"hard", "curv_contour_length_14"}};

const char *pathfinder_dir(const char *difficulty) {
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (!strcmp(difficulty, NAMES[i][0])) return NAMES[i][1];
    return NULL;
}

/* One metadata line: its image and label, and the key tfds orders it by. */
typedef struct {
    uint8_t hkey[16];
    int32_t file, line; /* metadata file index, 1-based line */
    int64_t image;      /* offset of "<field 0>/<field 1>" in the name pool */
    uint8_t label;
} Entry;

typedef struct {
    char *dir;    /* task.path/<difficulty directory> */
    glob_t files; /* its metadata files, in name order */
    Entry *e;
    int64_t n, cap;
    char *pool;
    int64_t pool_n, pool_cap;
} Meta;

static void meta_free(Meta *m) {
    rt_free(m->dir);
    if (m->files.gl_pathv) globfree(&m->files);
    rt_free(m->e);
    rt_free(m->pool);
    memset(m, 0, sizeof *m);
}

static const char DOCS[] = "docs/classification.md, \"Pathfinder\"";

/* The difficulty directory and its metadata files. */
static int meta_open(const TaskConfig *task, Meta *m, char *err, size_t errlen) {
    const char *sub = pathfinder_dir(task->difficulty);
    if (!sub)
        return rt_error(err, errlen, NULL,
                        "task.difficulty = %s: one of easy, intermediate, hard (LRA's names)",
                        task->difficulty);
    if (!task->path[0])
        return rt_error(
            err, errlen, NULL,
            "[task] pathfinder needs task.path: a resolution directory of LRA's Pathfinder release "
            "(lra_release/pathfinder32, ...; %s)",
            DOCS);
    if (!fs_exists(task->path))
        return rt_error(
            err, errlen, NULL,
            "task.path = %s does not exist: it is a resolution directory of LRA's Pathfinder "
            "release "
            "(lra_release/pathfinder32, ...), which holds curv_baseline, curv_contour_length_9 and "
            "curv_contour_length_14; where to get it: %s",
            task->path, DOCS);
    m->dir = rt_sprintf("%s/%s", task->path, sub);
    if (!fs_exists(m->dir))
        return rt_error(err, errlen, NULL,
                        "task.path = %s has no %s directory (task.difficulty = %s; %s)", task->path,
                        sub, task->difficulty, DOCS);
    char *pattern = rt_sprintf("%s/metadata/*.npy", m->dir);
    int g = glob(pattern, 0, NULL, &m->files);
    rt_free(pattern);
    if (g == GLOB_NOMATCH || (g == 0 && m->files.gl_pathc == 0))
        return rt_error(err, errlen, NULL, "%s/metadata holds no *.npy metadata files (%s)", m->dir,
                        DOCS);
    if (g) return rt_error(err, errlen, NULL, "%s/metadata: cannot list its *.npy files", m->dir);
    return 0;
}

/* The MD5 of salt followed by key, the order tfds gives a split (its hashing.Hasher). */
static void hash_key(const char *salt, const char *key, size_t key_len, uint8_t out[16]) {
    size_t ls = strlen(salt);
    char *buf = rt_malloc(ls + key_len);
    memcpy(buf, salt, ls);
    memcpy(buf + ls, key, key_len);
    unsigned int len = 0;
    RT_ASSERT(EVP_Digest(buf, ls + key_len, out, &len, EVP_md5(), NULL) && len == 16);
    rt_free(buf);
}

static int64_t pool_add(Meta *m, const char *a, size_t la, const char *b, size_t lb) {
    int64_t need = m->pool_n + (int64_t)(la + lb + 2);
    if (need > m->pool_cap) {
        while (need > m->pool_cap) m->pool_cap = m->pool_cap ? 2 * m->pool_cap : 1 << 16;
        m->pool = rt_realloc(m->pool, (size_t)m->pool_cap);
    }
    int64_t at = m->pool_n;
    memcpy(m->pool + at, a, la);
    m->pool[at + (int64_t)la] = '/';
    memcpy(m->pool + at + (int64_t)la + 1, b, lb);
    m->pool[at + (int64_t)(la + lb) + 1] = 0;
    m->pool_n = need;
    return at;
}

/* Parses line `line` (1-based) of metadata file `fi`, s[0, len). */
static int parse_line(Meta *m, const char *salt, int fi, int line, const char *s, size_t len,
                      char *msg, size_t msglen) {
    const char *field[4];
    size_t flen[4];
    int nf = 0;
    for (size_t at = 0; nf < 4;) { /* LRA: line.split(' ') */
        const char *sp = memchr(s + at, ' ', len - at);
        size_t end = sp ? (size_t)(sp - s) : len;
        field[nf] = s + at;
        flen[nf++] = end - at;
        if (!sp) break;
        at = end + 1;
    }
    if (nf < 4)
        return rt_error(msg, msglen, NULL,
                        "%d space-separated fields where a metadata line has at least 4 "
                        "(directory, file name, index, "
                        "label)",
                        nf);
    if (!flen[0] || !flen[1])
        return rt_error(msg, msglen, NULL, "empty image %s (field %d)",
                        flen[0] ? "file name" : "directory", flen[0] ? 2 : 1);
    if (flen[3] != 1 || (field[3][0] != '0' && field[3][0] != '1'))
        return rt_error(msg, msglen, NULL, "label (field 4) \"%.*s\" is not 0 or 1",
                        (int)(flen[3] < 40 ? flen[3] : 40), field[3]);
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 4096;
        m->e = rt_realloc(m->e, sizeof(Entry) * (size_t)m->cap);
    }
    Entry *e = &m->e[m->n++];
    e->file = fi;
    e->line = line;
    e->label = (uint8_t)(field[3][0] - '0');
    e->image = pool_add(m, field[0], flen[0], field[1], flen[1]);
    /* the key: "<field 0>_<field 1>_<line>" */
    char *key = rt_sprintf("%.*s_%.*s_%d", (int)flen[0], field[0], (int)flen[1], field[1], line);
    hash_key(salt, key, strlen(key), e->hkey);
    rt_free(key);
    return 0;
}

/* Reads metadata file fi. */
static int read_metadata(Meta *m, const char *salt, int fi, char *err, size_t errlen) {
    const char *path = m->files.gl_pathv[fi];
    size_t n;
    char *text = fs_read_file(path, &n);
    if (!text) return rt_error(err, errlen, path, "cannot read: %s", strerror(errno));
    int rc = 0, line = 1;
    char msg[512];
    for (size_t at = 0; at < n && rc == 0; line++) {
        const char *nl = memchr(text + at, '\n', n - at);
        size_t end = nl ? (size_t)(nl - text) : n;
        if (end == at)
            rc = rt_error(err, errlen, NULL, "%s:%d: empty line", path, line);
        else if (parse_line(m, salt, fi, line, text + at, end - at, msg, sizeof msg))
            rc = rt_error(err, errlen, NULL, "%s:%d: %s", path, line, msg);
        at = end + 1;
    }
    rt_free(text);
    return rc;
}

static int by_hkey(const void *a, const void *b) {
    const Entry *x = a, *y = b;
    int c = memcmp(x->hkey, y->hkey, 16);
    if (c) return c;
    return x->file != y->file ? (x->file < y->file ? -1 : 1)
                              : (x->line > y->line) - (x->line < y->line);
}

/* tfds's percent boundary of a split slice: round(pct * n / 100), half to even (Python's round). */
static int64_t pct_boundary(int pct, int64_t n) {
    return (int64_t)nearbyint((double)pct * (double)n / 100.0);
}

static char *image_path(const Meta *m, const Entry *e) {
    return rt_sprintf("%s/%s", m->dir, m->pool + e->image);
}

int pathfinder_load(const TaskConfig *task, DataSplit split, ImageSet *set, int64_t *empty,
                    char *err, size_t errlen) {
    memset(set, 0, sizeof *set);
    *empty = 0;
    Meta m = {0};
    int rc = meta_open(task, &m, err, errlen);
    for (size_t fi = 0; rc == 0 && fi < m.files.gl_pathc; fi++)
        rc = read_metadata(&m, task->difficulty, (int)fi, err, errlen);
    if (rc == 0 && m.n == 0)
        rc = rt_error(err, errlen, NULL, "%s/metadata: the metadata files list no images", m.dir);
    if (rc) {
        meta_free(&m);
        return rc;
    }
    qsort(m.e, (size_t)m.n, sizeof(Entry), by_hkey);
    for (int64_t i = 1; i < m.n && rc == 0; i++)
        if (!memcmp(m.e[i - 1].hkey, m.e[i].hkey, 16))
            rc = rt_error(err, errlen, NULL,
                          "%s:%d and %s:%d: the same example key (image %s, line number %d)",
                          m.files.gl_pathv[m.e[i - 1].file], m.e[i - 1].line,
                          m.files.gl_pathv[m.e[i].file], m.e[i].line, m.pool + m.e[i].image,
                          m.e[i].line);
    int64_t a = pct_boundary(80, m.n), b = pct_boundary(90, m.n);
    int64_t lo = split == SPLIT_TRAIN ? 0
                 : split == SPLIT_VAL ? a
                                      : b,
            hi = split == SPLIT_TRAIN ? a
                 : split == SPLIT_VAL ? b
                                      : m.n;
    if (rc == 0 && lo == hi)
        rc = rt_error(err, errlen, NULL,
                      "%s: its %lld images leave the %s split empty (80%% / 10%% / 10%%)", m.dir,
                      (long long)m.n,
                      split == SPLIT_TRAIN ? "training"
                      : split == SPLIT_VAL ? "validation"
                                           : "test");
    size_t T = 0;
    for (int64_t i = lo; i < hi && rc == 0; i++) {
        const Entry *e = &m.e[i];
        char *path = image_path(&m, e);
        size_t n;
        uint8_t *bytes = (uint8_t *)fs_read_file(path, &n), *px = NULL;
        int h, w;
        if (!bytes) {
            rc = rt_error(err, errlen, NULL, "missing image %s (listed in %s:%d): %s", path,
                          m.files.gl_pathv[e->file], e->line, strerror(errno));
        } else if (n == 0) {
            (*empty)++; /* LRA filters out empty image files */
        } else if (png_gray_decode(path, bytes, n, &px, &h, &w, err, errlen)) {
            rc = -1;
        } else if (!set->pixels) {
            set->height = h, set->width = w;
            T = (size_t)h * (size_t)w;
            set->pixels = rt_malloc(T * (size_t)(hi - lo));
            set->labels = rt_malloc((size_t)(hi - lo));
        } else if (h != set->height || w != set->width) {
            rc = rt_error(err, errlen, path,
                          "%d x %d pixels where the other images of %s are %d x %d", h, w, m.dir,
                          set->height, set->width);
        }
        if (rc == 0 && px) {
            memcpy(set->pixels + (size_t)set->n * T, px, T);
            set->labels[set->n++] = e->label;
        }
        rt_free(px);
        rt_free(bytes);
        rt_free(path);
    }
    if (rc == 0 && set->n == 0)
        rc = rt_error(err, errlen, NULL, "%s: every image file of the %s split is empty", m.dir,
                      split == SPLIT_TRAIN ? "training"
                      : split == SPLIT_VAL ? "validation"
                                           : "test");
    if (rc) image_set_free(set);
    meta_free(&m);
    return rc;
}

int pathfinder_pixels(const TaskConfig *task, int *pixels, char *err, size_t errlen) {
    Meta m = {0};
    int rc = meta_open(task, &m, err, errlen);
    if (rc == 0) rc = read_metadata(&m, task->difficulty, 0, err, errlen);
    *pixels = 0;
    for (int64_t i = 0; rc == 0 && i < m.n && !*pixels; i++) { /* the first non-empty image */
        char *path = image_path(&m, &m.e[i]);
        size_t n;
        uint8_t *bytes = (uint8_t *)fs_read_file(path, &n);
        int h, w;
        if (!bytes)
            rc = rt_error(err, errlen, NULL, "missing image %s (listed in %s:%d): %s", path,
                          m.files.gl_pathv[0], m.e[i].line, strerror(errno));
        else if (n > 0 && png_gray_size(path, bytes, n, &h, &w, err, errlen))
            rc = -1;
        else if (n > 0)
            *pixels = h * w;
        rt_free(bytes);
        rt_free(path);
    }
    if (rc == 0 && !*pixels)
        rc = rt_error(err, errlen, m.files.gl_pathv[0],
                      "lists no non-empty image (the row length follows the first)");
    meta_free(&m);
    return rc;
}
