#include "shared_data.h"

#include <stdio.h>
#include <sys/stat.h>

#include "harness.h"

const char *shared_file(const char *rel, char *buf, size_t len) {
    snprintf(buf, len, "%s/%s", ROTOR_SHARED_DATA, rel);
    struct stat sb;
    if (stat(buf, &sb) == 0) return buf;
    TH_SKIP("../shared/data not found (%s)", buf);
    return NULL;
}

Tokenizer *load_mistral(void) {
    char path[1024], err[1024];
    if (!shared_file("tokenizer/mistral-7b-v0.1.model", path, sizeof path)) return NULL;
    Tokenizer *t = tok_load(path, err, sizeof err);
    CHECK_MSG(t, "tok_load: %s", err);
    return t;
}
