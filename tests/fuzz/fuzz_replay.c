/* Runs a fuzz target once on each file named on the command line (directories: each file in
 * them), as libFuzzer would, without libFuzzer: the corpus replay of the test suite. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"
#include "util/error.h"

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) rt_die("%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    uint8_t *data = rt_malloc((size_t)size);
    if (size < 0 || fread(data, 1, (size_t)size, f) != (size_t)size)
        rt_die("%s: cannot read", path);
    fclose(f);
    LLVMFuzzerTestOneInput(data, (size_t)size);
    rt_free(data);
    return 1;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay(const char *path) {
    struct stat sb;
    if (stat(path, &sb)) rt_die("%s: not found", path);
    if (!S_ISDIR(sb.st_mode)) return replay_file(path);
    DIR *d = opendir(path);
    if (!d) rt_die("%s: cannot read the directory", path);
    char **names = NULL;
    int n = 0, done = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        names = rt_realloc(names, sizeof(char *) * (size_t)(n + 1));
        names[n++] = rt_sprintf("%s/%s", path, e->d_name);
    }
    closedir(d);
    if (n) qsort(names, (size_t)n, sizeof(char *), compare_names);
    for (int i = 0; i < n; i++) {
        done += replay(names[i]);
        rt_free(names[i]);
    }
    rt_free(names);
    return done;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    int done = 0;
    for (int i = 1; i < argc; i++) done += replay(argv[i]);
    printf("%d inputs replayed without a failure\n", done);
    return done ? 0 : 1;
}
