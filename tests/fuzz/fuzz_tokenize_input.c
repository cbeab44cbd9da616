/* Fuzz target: the input reader of `rotor data tokenize` and `train-tokenizer`
 * (data_tools/dt_input.c). The first byte chooses the kind of file the rest becomes (plain
 * text, JSONL; compressed by the target with gzip or zstd, or the bytes themselves read as a
 * gzip or zstd stream), the second the reader's options (--text-docs, --skip-bad-lines,
 * --skip-binary, --text-field). Promises checked:
 *   - dt_input_sniff (text or not, from the first MiB) answers 0, or 1 / -1 with a message
 *     naming the file; the reader agrees with it: an input that is not text or unreadable
 *     there fails (or with --skip-binary, when not text, gives no document) before any
 *     document;
 *   - the reader either reads documents to the end or fails with a message naming the file
 *     (and line), in a bounded number of steps;
 *   - every document is valid UTF-8 without NUL characters;
 *   - a plain input read to its end without an error was read whole. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "dt_input.h"
#include "fuzz_target.h"
#include "util/utf8.h"

typedef enum { PLAIN, GZIP_IT, ZSTD_IT, RAW_AS_COMPRESSED } Encoding;

static const struct {
    const char *suffix;
    Encoding enc;
} KINDS[] = {{".txt", PLAIN},
             {".jsonl", PLAIN},
             {".txt.gz", GZIP_IT},
             {".jsonl.zst", ZSTD_IT},
             {".jsonl.gz", RAW_AS_COMPRESSED},
             {".txt.zst", RAW_AS_COMPRESSED}};
enum { N_KINDS = sizeof KINDS / sizeof KINDS[0] };

static void write_plain(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f && fwrite(data, 1, size, f) == size && !fclose(f), "%s: cannot write", path);
}

static void write_gzip(const char *path, const uint8_t *data, size_t size) {
    gzFile g = gzopen(path, "wb");
    FUZZ_CHECK(g && (!size || gzwrite(g, data, (unsigned)size) == (int)size) && gzclose(g) == Z_OK,
               "%s: cannot write", path);
}

static void write_zstd(const char *path, const uint8_t *data, size_t size) {
    size_t cap = ZSTD_compressBound(size);
    void *buf = malloc(cap);
    size_t n = ZSTD_compress(buf, cap, data, size, 1);
    FUZZ_CHECK(!ZSTD_isError(n), "zstd: %s", ZSTD_getErrorName(n));
    write_plain(path, buf, n);
    free(buf);
}

/* The input file of kind k holding data (compressed as the kind says). */
static void write_input(const char *path, int k, const uint8_t *data, size_t size) {
    if (KINDS[k].enc == GZIP_IT)
        write_gzip(path, data, size);
    else if (KINDS[k].enc == ZSTD_IT)
        write_zstd(path, data, size);
    else
        write_plain(path, data, size);
}

static void check_document(const char *text, size_t len) {
    FUZZ_CHECK(utf8_valid_prefix(text, len) == len, "a document of %zu bytes is not valid UTF-8",
               len);
    FUZZ_CHECK(!memchr(text, '\0', len), "a document of %zu bytes holds a NUL", len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int kind = data[0] % N_KINDS, flags = data[1];
    char path[96];
    snprintf(path, sizeof path, "/tmp/rotor-fuzz-%d-input%s", (int)getpid(), KINDS[kind].suffix);
    write_input(path, kind, data + 2, size - 2);
    DtDocOptions opt = {.text_field = flags & 16 ? "body" : "text",
                        .text_docs = (DtTextDocs)(flags % 3),
                        .skip_bad_lines = (flags >> 2) & 1,
                        .skip_binary = (flags >> 3) & 1};

    char sniff_err[1024], err[1024];
    int sniff = dt_input_sniff(path, sniff_err, sizeof sniff_err);
    FUZZ_CHECK(sniff >= -1 && sniff <= 1, "dt_input_sniff returns %d", sniff);
    if (sniff)
        FUZZ_CHECK(strstr(sniff_err, path), "the message does not name the file: %s", sniff_err);

    char *paths[1] = {path};
    DtInputs in = {paths, 1};
    DtDocReader *r = dt_docs_open(&in, &opt);
    const char *text;
    size_t len;
    int64_t docs = 0;
    int rc;
    while ((rc = dt_docs_next(r, &text, &len, err, sizeof err)) > 0) {
        check_document(text, len);
        docs++;
        /* every document but the whole file ends at a line, so there are at most lines + 1 */
        FUZZ_CHECK(docs <= dt_docs_bytes(r) + 1, "%lld documents from %lld bytes", (long long)docs,
                   (long long)dt_docs_bytes(r));
    }
    if (rc < 0) FUZZ_CHECK(strstr(err, path), "the message does not name the file: %s", err);
    if (sniff < 0 || (sniff > 0 && !opt.skip_binary))
        FUZZ_CHECK(rc < 0 && docs == 0, "sniff says '%s', the reader gave %lld documents, then %d",
                   sniff_err, (long long)docs, rc);
    if (sniff > 0 && opt.skip_binary)
        FUZZ_CHECK(rc == 0 && docs == 0, "a skipped input gave %lld documents", (long long)docs);
    int n_skipped;
    dt_docs_skipped(r, &n_skipped);
    if (rc == 0 && !n_skipped && KINDS[kind].enc == PLAIN)
        FUZZ_CHECK(dt_docs_bytes(r) == (int64_t)(size - 2), "read %lld of %zu bytes",
                   (long long)dt_docs_bytes(r), size - 2);
    dt_docs_close(r);
    unlink(path);
    return 0;
}
