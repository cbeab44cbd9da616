#include "util/utf8.h"

/* The well-formed sequences of Unicode's Table 3-7: the lead byte fixes the length and the
 * range of the second byte (narrower after E0, ED, F0, F4); later bytes are 80..BF. */
size_t utf8_char_len(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned c = u[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates U+D800..U+DFFF */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else
        return 0; /* 80..C1 (continuation bytes, overlong two-byte leads) and F5..FF */
    if (n < len || u[1] < lo || u[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if (u[k] < 0x80 || u[k] > 0xBF) return 0;
    return len;
}

size_t utf8_valid_prefix(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if ((unsigned char)s[i] < 0x80) { /* ASCII: most text */
            i++;
            continue;
        }
        size_t len = utf8_char_len(s + i, n - i);
        if (!len) break;
        i += len;
    }
    return i;
}
