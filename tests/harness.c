#include "harness.h"

#include <string.h>
#include <time.h>

#include "util/error.h"
#include "util/fsutil.h"

int th_failures;
int th_skips;

static char tmp_dir[64];

const char *th_tmp_dir(void) {
    if (!tmp_dir[0]) {
        snprintf(tmp_dir, sizeof tmp_dir, "/tmp/rotor_test_XXXXXX");
        RT_ASSERT(mkdtemp(tmp_dir));
    }
    return tmp_dir;
}

static void run_test(const void *t) { ((const TestCase *)t)->fn(); }

TestRow th_row(const TestCase *t) { return (TestRow){t->name, run_test, t}; }

int th_names(const char *err, const char *a, const char *b) {
    int ok = strstr(err, a) && (!b || strstr(err, b));
    if (!ok)
        fprintf(stderr, "    the error \"%s\" should name \"%s\"%s%s\n", err, a, b ? " and " : "",
                b ? b : "");
    return ok;
}

int th_run_rows(const TestRow *tests, int n, int argc, char **argv) {
    int passed = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        if (argc > 1 && !strstr(tests[i].name, argv[1])) continue;
        th_failures = 0;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        tests[i].run(tests[i].arg);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        if (th_failures) {
            failed++;
            printf("FAIL %s (%d checks failed, %.2fs)\n", tests[i].name, th_failures, dt);
        } else {
            passed++;
            printf("ok   %s (%.2fs)\n", tests[i].name, dt);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed%s\n", passed, failed, th_skips ? ", some parts skipped" : "");
    if (tmp_dir[0]) fs_remove_tree(tmp_dir);
    return failed ? 1 : th_skips ? 77 : 0;
}

int th_run(const TestCase *tests, int n, int argc, char **argv) {
    TestRow *rows = malloc(sizeof(TestRow) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) rows[i] = th_row(&tests[i]);
    int rc = th_run_rows(rows, n, argc, argv);
    free(rows);
    return rc;
}
