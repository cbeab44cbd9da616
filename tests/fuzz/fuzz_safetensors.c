/* Fuzz target: st_open on arbitrary bytes. A file it accepts must hold tensors whose sizes
 * match their shapes and whose bytes can all be read; a file it rejects gets a message that
 * names the file. Accepted tensors written back by st_write must read back identically. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "io/safetensors.h"
#include "util/error.h"

static void write_file(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f)) rt_die("%s: cannot write", path);
}

static uint64_t tensor_sum(const StTensor *t) {
    uint64_t s = 0;
    for (size_t i = 0; i < t->nbytes; i++) s += ((const uint8_t *)t->data)[i];
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64], copy[64];
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/rotor-fuzz-%d.safetensors", (int)getpid());
        snprintf(copy, sizeof copy, "/tmp/rotor-fuzz-%d-copy.safetensors", (int)getpid());
    }
    write_file(path, data, size);
    char err[1024];
    StFile *f = st_open(path, err, sizeof err);
    if (!f) {
        FUZZ_CHECK(strstr(err, path) != NULL, "error does not name the file: %s", err);
        unlink(path);
        return 0;
    }
    int n = st_count(f);
    StTensor *t = rt_calloc((size_t)(n ? n : 1), sizeof(StTensor));
    for (int i = 0; i < n; i++) {
        t[i] = *st_at(f, i);
        size_t elems = 1;
        for (int d = 0; d < t[i].ndim; d++) elems *= (size_t)t[i].shape[d];
        FUZZ_CHECK(elems * st_dtype_size(t[i].dtype) == t[i].nbytes, "tensor %s: size mismatch",
                   t[i].name);
        FUZZ_CHECK(st_find(f, t[i].name) == st_at(f, i), "st_find(%s) finds another tensor",
                   t[i].name);
        tensor_sum(&t[i]);
    }
    if (st_write(copy, t, n, NULL, err, sizeof err) == 0) {
        StFile *g = st_open(copy, err, sizeof err);
        FUZZ_CHECK(g != NULL, "a written copy does not read back: %s", err);
        FUZZ_CHECK(st_count(g) == n, "the copy has %d tensors, not %d", st_count(g), n);
        for (int i = 0; i < n; i++) {
            const StTensor *u = st_find(g, t[i].name);
            FUZZ_CHECK(u && u->nbytes == t[i].nbytes && !strcmp(u->dtype, t[i].dtype) &&
                           u->ndim == t[i].ndim &&
                           !memcmp(u->shape, t[i].shape, sizeof(int64_t) * (size_t)u->ndim) &&
                           (!u->nbytes || !memcmp(u->data, t[i].data, u->nbytes)),
                       "tensor %s differs in the copy", t[i].name);
        }
        st_close(g);
        unlink(copy);
    }
    rt_free(t);
    st_close(f);
    unlink(path);
    return 0;
}
