#include "data/text_bytes.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fsutil.h"

/* Python's bytes.strip() set. */
static int is_space(char c) { return c && strchr(" \t\n\r\v\f", c); }

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_review(const char *name) {
    size_t n = strlen(name);
    return n > 4 && !strcmp(name + n - 4, ".txt");
}

/* The reviews of one class directory, in file-name order. */
static int read_class(const char *dir, int label, int keep, ClassSet *set, char *err,
                      size_t errlen) {
    DIR *d = opendir(dir);
    if (!d) return rt_error(err, errlen, dir, "cannot open the directory: %s", strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_review(e->d_name)) continue;
        if (n == cap) names = rt_realloc(names, sizeof(char *) * (cap = cap ? 2 * cap : 1024));
        names[n++] = rt_strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(char *), by_name);
    int rc = n ? 0 : rt_error(err, errlen, dir, "no reviews (*.txt files)");
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *path = rt_sprintf("%s/%s", dir, names[i]);
        size_t len;
        char *text = fs_read_file(path, &len);
        if (!text) {
            rc = rt_error(err, errlen, path, "cannot read: %s", strerror(errno));
        } else {
            const char *b = text, *end = text + len;
            while (b < end && is_space(*b)) b++;
            while (end > b && is_space(end[-1])) end--;
            if (b == end)
                rc = rt_error(err, errlen, path, "an empty review (nothing but whitespace)");
            else
                class_set_add(set, (const uint8_t *)b, end - b, keep, label);
        }
        rt_free(text);
        rt_free(path);
    }
    for (size_t i = 0; i < n; i++) rt_free(names[i]);
    rt_free(names);
    return rc;
}

int text_bytes_read_imdb(const char *dir, const char *split, int keep, ClassSet *set, char *err,
                         size_t errlen) {
    static const char *const CLASSES[2] = {"neg",
                                           "pos"}; /* tfds's ClassLabel names, in label order */
    int rc = 0;
    for (int label = 0; label < 2 && rc == 0; label++) {
        char *sub = rt_sprintf("%s/%s/%s", dir, split, CLASSES[label]);
        rc = read_class(sub, label, keep, set, err, errlen);
        rt_free(sub);
    }
    return rc;
}

typedef struct {
    int classes, keep;
    ClassSet *set;
    long lines; /* lines read */
} TsvText;

static int text_line(void *ctx, const TsvLine *l, char *msg, size_t msglen) {
    TsvText *t = ctx;
    if (t->lines++ == 0 && l->rest && !strcmp(l->first, "label") && !strcmp(l->rest, "text"))
        return 0; /* header */
    if (!l->rest) return rt_error(msg, msglen, NULL, "expected label<TAB>text");
    char *end;
    errno = 0;
    long label = strtol(l->first, &end, 10);
    if (!l->first_len || *end || errno || l->first[0] < '0' || l->first[0] > '9' ||
        label >= t->classes)
        return rt_error(msg, msglen, NULL, "label '%.20s' is not a class 0..%d (task.classes = %d)",
                        l->first, t->classes - 1, t->classes);
    if (!l->rest_len) return rt_error(msg, msglen, NULL, "an empty text");
    class_set_add(t->set, (const uint8_t *)l->rest, (int64_t)l->rest_len, t->keep, (int)label);
    return 0;
}

/* AAN: the line's label (LRA: tf.float32, then cast to int32) must be a class. */
static int aan_line(void *ctx, const TsvLine *l, char *msg, size_t msglen) {
    TsvText *t = ctx;
    const char *field[4];
    size_t len[4];
    int nf = 0; /* fields after the label */
    for (size_t at = 0; l->rest;) {
        const char *tab = memchr(l->rest + at, '\t', l->rest_len - at);
        size_t end = tab ? (size_t)(tab - l->rest) : l->rest_len;
        if (nf < 4) field[nf] = l->rest + at, len[nf] = end - at;
        nf++;
        if (!tab) break;
        at = end + 1;
    }
    if (nf != 4)
        return rt_error(
            msg, msglen, NULL,
            "%d tab-separated fields where an AAN line has 5 (label, id1, id2, text1, text2)",
            nf + 1);
    char *end;
    errno = 0;
    double v = strtod(l->first, &end);
    if (!l->first_len || *end || errno || !(v >= 0 && v < t->classes) || v != (int)v)
        return rt_error(msg, msglen, NULL, "label '%.20s' is not a class 0..%d (task.classes = %d)",
                        l->first, t->classes - 1, t->classes);
    for (int k = 2; k < 4; k++)
        if (!len[k]) return rt_error(msg, msglen, NULL, "text%d (field %d) is empty", k - 1, k + 2);
    int keep = t->keep < 10000 ? t->keep : 10000;
    for (int k = 2; k < 4; k++)
        class_set_add(t->set, (const uint8_t *)field[k], (int64_t)len[k], keep, (int)v);
    return 0;
}

int text_bytes_read_aan(const char *path, int classes, int keep, ClassSet *set, char *err,
                        size_t errlen) {
    TsvText t = {classes, keep, set, 0};
    int64_t before = set->n;
    if (tsv_read(path, aan_line, &t, err, errlen)) return -1;
    return set->n > before ? 0 : rt_error(err, errlen, path, "no examples");
}

int text_bytes_read_tsv(const char *path, int classes, int keep, ClassSet *set, char *err,
                        size_t errlen) {
    TsvText t = {classes, keep, set, 0};
    int64_t before = set->n;
    if (tsv_read(path, text_line, &t, err, errlen)) return -1;
    return set->n > before ? 0 : rt_error(err, errlen, path, "no examples");
}
