/* Fuzz targets (libFuzzer's entry point). Built with clang and -DROTOR_FUZZ=ON they link
 * libFuzzer (scripts/fuzz.sh); otherwise they link fuzz_replay.c, which runs the target once
 * on each file of a corpus: the test suite replays tests/fuzz/corpus/ that way. */
#ifndef ROTOR_FUZZ_TARGET_H
#define ROTOR_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise: print it and abort, so that libFuzzer keeps the input as a crash. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__);                          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
