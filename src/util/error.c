#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rt_vprint(const char *level, const char *fmt, va_list ap) {
    fflush(stdout);
    fprintf(stderr, "rotor: %s: ", level);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
}

void rt_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rt_vprint("error", fmt, ap);
    va_end(ap);
    exit(1);
}

void rt_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rt_vprint("warning", fmt, ap);
    va_end(ap);
}

void *rt_malloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) rt_die("out of memory allocating %zu bytes", bytes);
    return p;
}

void *rt_calloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) rt_die("out of memory allocating %zu x %zu bytes", n, size);
    return p;
}

void *rt_realloc(void *p, size_t bytes) {
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) rt_die("out of memory reallocating %zu bytes", bytes);
    return q;
}

void *rt_alloc_aligned(size_t bytes) {
    void *p = NULL;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (posix_memalign(&p, 64, rounded ? rounded : 64) != 0)
        rt_die("out of memory allocating %zu bytes", bytes);
    return p;
}

void rt_free(void *p) { free(p); }

char *rt_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = rt_malloc(n);
    memcpy(d, s, n);
    return d;
}

char *rt_sprintf(const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) rt_die("formatting failed");
    char *s = rt_malloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

int rt_error(char *err, size_t errlen, const char *prefix, const char *fmt, ...) {
    if (!err || !errlen) return -1;
    int n = prefix ? snprintf(err, errlen, "%s: ", prefix) : 0;
    if (n >= 0 && (size_t)n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int rt_edit_distance(const char *a, const char *b) {
    enum { MAXLEN = 63 };
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > MAXLEN || lb > MAXLEN) return 1 << 20;
    int prev[MAXLEN + 1], cur[MAXLEN + 1];
    for (int j = 0; j <= lb; j++) prev[j] = j;
    for (int i = 1; i <= la; i++) {
        cur[0] = i;
        for (int j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (size_t)(lb + 1));
    }
    return prev[lb];
}
