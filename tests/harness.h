/* Minimal test harness: TEST(name) functions registered in a table, CHECK macros that
 * record failures, and a summary line "N passed, N failed". */
#ifndef ROTOR_TEST_HARNESS_H
#define ROTOR_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int th_failures; /* failures in the current test */
extern int th_skips;    /* tests that could not run what they check (missing data) */

/* Marks the current test as skipped: the program then exits with ctest's skip code 77
 * unless a test failed. */
#define TH_SKIP(...)                                                                               \
    do {                                                                                           \
        th_skips++;                                                                                \
        printf("    skipped: ");                                                                   \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
    } while (0)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            th_failures++;                                                                         \
            fprintf(stderr, "    CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            th_failures++;                                                                         \
            fprintf(stderr, "    CHECK failed at %s:%d: ", __FILE__, __LINE__);                    \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* |a - b| <= tol * max(1, |b|) */
#define CHECK_CLOSE(a, b, tol)                                                                     \
    do {                                                                                           \
        double _a = (double)(a), _b = (double)(b);                                                 \
        if (!(fabs(_a - _b) <= (tol)*fmax(1.0, fabs(_b)))) {                                       \
            th_failures++;                                                                         \
            fprintf(stderr, "    CHECK_CLOSE failed at %s:%d: %s = %.10g vs %s = %.10g\n",         \
                    __FILE__, __LINE__, #a, _a, #b, _b);                                           \
        }                                                                                          \
    } while (0)

/* 1 when the error message err holds a (and b, unless NULL); else 0, saying on stderr what it
 * should have named: CHECK(th_names(err, "file.tsv", "line 3")). */
int th_names(const char *err, const char *a, const char *b);

typedef struct {
    const char *name;
    void (*fn)(void);
} TestCase;

/* A temporary directory of the test program, made on first use and removed when the tests
 * have run. */
const char *th_tmp_dir(void);

/* A row of a table-driven test: run(arg). */
typedef struct {
    const char *name;
    void (*run)(const void *arg);
    const void *arg;
} TestRow;

/* The row that runs test t (which must outlive it). */
TestRow th_row(const TestCase *t);

/* Runs the tests whose name contains the filter argv[1] (all if absent); returns 1 if a
 * test failed, else 77 if one was skipped, else 0. */
int th_run(const TestCase *tests, int n, int argc, char **argv);
int th_run_rows(const TestRow *rows, int n, int argc, char **argv);

/* The number of entries of a test table (an array). */
#define TH_COUNT(tests) ((int)(sizeof(tests) / sizeof((tests)[0])))

/* main() of a test program that runs the table `tests`. */
#define TH_MAIN(tests)                                                                             \
    int main(int argc, char **argv) { return th_run(tests, TH_COUNT(tests), argc, argv); }

#endif
