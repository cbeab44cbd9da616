/* Fatal errors and checked allocation. Every user-facing failure goes through rt_die()
 * with a message naming the file/key/value at fault; the process exits with status 1. */
#ifndef ROTOR_ERROR_H
#define ROTOR_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RT_NORETURN __attribute__((noreturn))
#define RT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define RT_NORETURN
#define RT_PRINTF(a, b)
#endif

/* Prints "rotor: error: <message>" to stderr and exits with status 1. */
void rt_die(const char *fmt, ...) RT_NORETURN RT_PRINTF(1, 2);
/* Prints "rotor: warning: <message>" to stderr. */
void rt_warn(const char *fmt, ...) RT_PRINTF(1, 2);
/* Prints "rotor: <level>: <message>" to stderr after flushing stdout (rt_die, rt_warn, and
 * errors that are counted before the process gives up). */
void rt_vprint(const char *level, const char *fmt, va_list ap) RT_PRINTF(2, 0);

/* Internal invariant: a failure is a bug in rotor, not a user error. */
#define RT_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) rt_die("internal error at %s:%d: %s", __FILE__, __LINE__, #cond);             \
    } while (0)

void *rt_malloc(size_t bytes);
void *rt_calloc(size_t n, size_t size);
void *rt_realloc(void *p, size_t bytes);
/* 64-byte aligned allocation (SIMD- and cache-friendly); release with rt_free. */
void *rt_alloc_aligned(size_t bytes);
void rt_free(void *p);
char *rt_strdup(const char *s);
/* Writes "<prefix>: <message>" (just the message when prefix is NULL) into err[errlen] and
 * returns -1, for functions that report failures to their caller: return rt_error(...). */
int rt_error(char *err, size_t errlen, const char *prefix, const char *fmt, ...) RT_PRINTF(4, 5);
/* Levenshtein distance for "did you mean" hints; strings over 63 bytes count as far apart. */
int rt_edit_distance(const char *a, const char *b);
/* printf into a freshly allocated string. */
char *rt_sprintf(const char *fmt, ...) RT_PRINTF(1, 2);

#ifdef __cplusplus
}
#endif

#endif
