/* UTF-8 validation as RFC 3629 defines it (no overlong forms, no surrogates, nothing above
 * U+10FFFF): the rule SentencePiece applies too, which encodes every byte that does not start a
 * valid character as U+FFFD. */
#ifndef ROTOR_UTF8_H
#define ROTOR_UTF8_H

#include <stddef.h>

/* Bytes (1 to 4) of the valid character that s[0..n) starts with, or 0 when it starts none
 * (an invalid byte, or a sequence cut short by n). n must be at least 1. */
size_t utf8_char_len(const char *s, size_t n);
/* Bytes of the longest prefix of s[0..n) made of valid characters: n when all of it is. */
size_t utf8_valid_prefix(const char *s, size_t n);

#endif
