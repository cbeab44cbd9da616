/* Fuzz target: a run config (INI text, docs/formats.md "Configs") is either accepted or rejected
 * with a message naming its origin; an accepted one, written back as INI, loads again and writes
 * the same INI. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/run_config.h"
#include "fuzz_target.h"
#include "util/error.h"

static char *config_ini(const RunConfig *c) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    FUZZ_CHECK(f != NULL, "open_memstream failed");
    run_config_write_ini(c, f);
    fclose(f);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = rt_malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    RunConfig c, again;
    char err[2048];
    if (run_config_load_string(&c, text, "fuzz.ini", NULL, 0, err, sizeof err)) {
        FUZZ_CHECK(strstr(err, "fuzz.ini") != NULL, "error does not name the file: %s", err);
        rt_free(text);
        return 0;
    }
    char *ini = config_ini(&c);
    FUZZ_CHECK(run_config_load_string(&again, ini, "rewritten.ini", NULL, 0, err, sizeof err) == 0,
               "the accepted config, written back, is rejected: %s\n%s", err, ini);
    char *ini2 = config_ini(&again);
    FUZZ_CHECK(!strcmp(ini, ini2), "writing the config back is not idempotent:\n%s\n---\n%s", ini,
               ini2);
    free(ini);
    free(ini2);
    rt_free(text);
    return 0;
}
