/* sha256 of a file's bytes (OpenSSL), as 64 lower-case hex characters. */
#ifndef ROTOR_SHA256_H
#define ROTOR_SHA256_H

#include <stddef.h>

/* Fills hex[65]; returns 0, or -1 with a message naming the file. */
int sha256_file(const char *path, char hex[65], char *err, size_t errlen);

#endif
