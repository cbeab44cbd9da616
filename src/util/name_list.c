#include "util/name_list.h"

#include <stdio.h>

void name_list(char *buf, size_t n, const char *const *names, int count) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < count && used < n; i++) {
        const char *sep = !i ? "" : i == count - 1 ? " and " : ", ";
        used += (size_t)snprintf(buf + used, n - used, "%s%s", sep, names[i]);
    }
}
