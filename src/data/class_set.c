#include "data/class_set.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

void class_row(int32_t *tokens, int32_t *labels, int n, int T, int label) {
    RT_ASSERT(n >= 1 && n <= T && label >= 0);
    for (int t = 0; t < T; t++) labels[t] = -100;
    for (int t = n; t < T; t++) tokens[t] = 0;
    labels[n - 1] = label;
}

void class_set_add(ClassSet *s, const uint8_t *sym, int64_t len, int keep, int label) {
    RT_ASSERT(len >= 1 && keep >= 1 && label >= 0 && label <= UINT8_MAX);
    int64_t m = len < keep ? len : keep, at = s->n ? s->start[s->n] : 0;
    if (s->n + 1 >= s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->start = rt_realloc(s->start, sizeof(int64_t) * (size_t)(s->cap + 1));
        s->label = rt_realloc(s->label, (size_t)s->cap);
    }
    if (at + m > s->sym_cap) {
        while (at + m > s->sym_cap) s->sym_cap = s->sym_cap ? 2 * s->sym_cap : 1 << 20;
        s->sym = rt_realloc(s->sym, (size_t)s->sym_cap);
    }
    memcpy(s->sym + at, sym, (size_t)m);
    s->start[s->n] = at;
    s->label[s->n++] = (uint8_t)label;
    s->start[s->n] = at + m;
}

void class_set_free(ClassSet *s) {
    rt_free(s->start);
    rt_free(s->sym);
    rt_free(s->label);
    memset(s, 0, sizeof *s);
}

int tsv_read(const char *path, TsvLineFn fn, void *ctx, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return rt_error(err, errlen, path, "cannot open: %s", strerror(errno));
    char *buf = NULL, msg[1024];
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    for (long line = 1; rc == 0 && (len = getline(&buf, &cap, f)) >= 0; line++) {
        if (len > 0 && buf[len - 1] == '\n') buf[--len] = 0;
        if (len > 0 && buf[len - 1] == '\r') buf[--len] = 0;
        if (len == 0) continue;
        TsvLine l = {line, buf, NULL, (size_t)len, 0};
        char *tab = memchr(buf, '\t', (size_t)len);
        if (tab) {
            *tab = 0;
            l.rest = tab + 1;
            l.first_len = (size_t)(tab - buf);
            l.rest_len = (size_t)len - l.first_len - 1;
        }
        if (fn(ctx, &l, msg, sizeof msg))
            rc = rt_error(err, errlen, NULL, "%s:%ld: %s", path, line, msg);
    }
    if (rc == 0 && ferror(f)) rc = rt_error(err, errlen, path, "read error: %s", strerror(errno));
    free(buf);
    fclose(f);
    return rc;
}
