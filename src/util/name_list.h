/* Names joined for messages: "a", "a and b", "a, b and c". */
#ifndef ROTOR_NAME_LIST_H
#define ROTOR_NAME_LIST_H

#include <stddef.h>

/* Writes the count names into buf (n bytes, truncated to fit). */
void name_list(char *buf, size_t n, const char *const *names, int count);

#endif
