/* The tests' access to ../shared/data (ROTOR_SHARED_DATA, set by tests/CMakeLists.txt for the
 * executables that link shared_data.c): tests that need it skip without it. */
#ifndef ROTOR_TEST_SHARED_DATA_H
#define ROTOR_TEST_SHARED_DATA_H

#include <stddef.h>

#include "tokenizer.h"

/* ROTOR_SHARED_DATA/rel in buf, or NULL (after a "skipped" line) when the file is absent. */
const char *shared_file(const char *rel, char *buf, size_t len);
/* The Mistral model, or NULL when ../shared/data is absent; a load failure fails the test. */
Tokenizer *load_mistral(void);

#endif
