#include "util/sha256.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"

int sha256_file(const char *path, char hex[65], char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return rt_error(err, errlen, path, "cannot open: %s", strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    unsigned char buf[1 << 16];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0) ok = EVP_DigestUpdate(ctx, buf, n);
    int read_error = ferror(f);
    fclose(f);
    unsigned char md[32];
    unsigned int len = 0;
    ok = ok && !read_error && EVP_DigestFinal_ex(ctx, md, &len) && len == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok) return rt_error(err, errlen, path, "cannot compute its sha256 (read error)");
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}
