#include "dt_input.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "util/error.h"
#include "util/json_kind.h"
#include "util/utf8.h"

/* ---- input kinds ---- */

typedef enum { COMP_NONE, COMP_GZIP, COMP_ZSTD } Compression;

static int has_suffix(const char *s, size_t len, const char *suffix) {
    size_t n = strlen(suffix);
    return len >= n && !strncmp(s + len - n, suffix, n);
}

/* Compression from the last extension; *is_jsonl from the one before it (or the last). */
static Compression classify(const char *path, int *is_jsonl) {
    size_t len = strlen(path);
    Compression c = COMP_NONE;
    if (has_suffix(path, len, ".gz"))
        c = COMP_GZIP, len -= 3;
    else if (has_suffix(path, len, ".zst"))
        c = COMP_ZSTD, len -= 4;
    else if (has_suffix(path, len, ".zstd"))
        c = COMP_ZSTD, len -= 5;
    *is_jsonl = has_suffix(path, len, ".jsonl") || has_suffix(path, len, ".json") ||
                has_suffix(path, len, ".ndjson");
    return c;
}

/* Kinds of file that would otherwise be read as text, with what to do instead. */
static const char *unsupported_kind(const char *path) {
    static const struct {
        const char *suffix, *hint;
    } kinds[] = {
        {".parquet", "Parquet is not read directly: convert it to JSONL first (see README, "
                     "\"Preparing data\"), e.g. with duckdb or pyarrow"},
        {".arrow", "Arrow files are not read directly: convert them to JSONL first"},
        {".bz2", "bzip2 is not supported: decompress it, or recompress with zstd or gzip"},
        {".xz", "xz is not supported: decompress it, or recompress with zstd or gzip"},
        {".zip", "zip archives are not supported: extract them first"},
        {".tar", "tar archives are not supported: extract them first"},
        {".h5", "this is an HDF5 file (a token shard?), not text"},
        {".h5.tmp", "this is an unfinished token shard, not text"},
    };
    size_t len = strlen(path);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (has_suffix(path, len, kinds[k].suffix)) return kinds[k].hint;
    return NULL;
}

int dt_parse_text_docs(const char *name, DtTextDocs *out) {
    if (!strcmp(name, "file"))
        *out = DT_DOCS_FILE;
    else if (!strcmp(name, "paragraph"))
        *out = DT_DOCS_PARAGRAPH;
    else if (!strcmp(name, "line"))
        *out = DT_DOCS_LINE;
    else
        return -1;
    return 0;
}

const char *dt_text_docs_name(DtTextDocs d) {
    return d == DT_DOCS_FILE ? "file" : d == DT_DOCS_PARAGRAPH ? "paragraph" : "line";
}

int dt_is_blank(const char *text, size_t len) {
    for (size_t k = 0; k < len; k++) {
        char c = text[k];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f') return 0;
    }
    return 1;
}

/* ---- expanding the inputs ---- */

static void add_path(DtInputs *in, const char *path) {
    in->paths = rt_realloc(in->paths, sizeof(char *) * (size_t)(in->n + 1));
    in->paths[in->n++] = rt_strdup(path);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds an input file after checking that it can be read. */
static void add_file(DtInputs *in, const char *path) {
    const char *hint = unsupported_kind(path);
    if (hint) rt_die("%s: %s", path, hint);
    if (access(path, R_OK)) rt_die("%s: cannot read the input: %s", path, strerror(errno));
    add_path(in, path);
}

/* Adds the files under dir (recursively, sorted by name at every level). */
static void add_directory(DtInputs *in, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) rt_die("%s: cannot read the directory: %s", dir, strerror(errno));
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue; /* ".", "..", hidden files */
        names = rt_realloc(names, sizeof(char *) * (size_t)(n + 1));
        names[n++] = rt_strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, (size_t)n, sizeof(char *), compare_names);
    for (int k = 0; k < n; k++) {
        char *path = rt_sprintf("%s/%s", dir, names[k]);
        struct stat sb;
        if (stat(path, &sb)) rt_die("%s: %s", path, strerror(errno));
        if (S_ISDIR(sb.st_mode))
            add_directory(in, path);
        else if (S_ISREG(sb.st_mode))
            add_file(in, path);
        rt_free(path);
        rt_free(names[k]);
    }
    rt_free(names);
}

void dt_inputs_expand(DtInputs *in, char *const *args, int nargs) {
    in->paths = NULL;
    in->n = 0;
    for (int k = 0; k < nargs; k++) {
        struct stat sb;
        if (stat(args[k], &sb)) rt_die("input %s: %s", args[k], strerror(errno));
        if (S_ISDIR(sb.st_mode)) {
            /* Trailing slashes would double up in the joined paths. */
            char *dir = rt_strdup(args[k]);
            for (size_t len = strlen(dir); len > 1 && dir[len - 1] == '/';) dir[--len] = '\0';
            int before = in->n;
            add_directory(in, dir);
            if (in->n == before) rt_die("input %s: the directory holds no files", args[k]);
            rt_free(dir);
        } else {
            add_file(in, args[k]);
        }
    }
}

void dt_inputs_free(DtInputs *in) {
    for (int k = 0; k < in->n; k++) rt_free(in->paths[k]);
    rt_free(in->paths);
    in->paths = NULL;
    in->n = 0;
}

/* ---- byte streams: plain, gzip, zstd ---- */

typedef struct {
    const char *path;
    Compression comp;
    FILE *f;         /* plain and zstd */
    gzFile gz;       /* gzip */
    ZSTD_DCtx *zctx; /* zstd */
    unsigned char *zbuf;
    size_t zbuf_size;
    ZSTD_inBuffer zin;
    size_t zlast; /* last ZSTD_decompressStream result: 0 at the end of a frame */
} Stream;

/* 0, or -1 with a message in err; stream_close releases what was opened either way. */
static int stream_open(Stream *s, const char *path, Compression comp, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    s->path = path;
    s->comp = comp;
    if (comp == COMP_GZIP) {
        s->gz = gzopen(path, "rb");
        if (!s->gz)
            return rt_error(err, errlen, path, "cannot open: %s",
                            errno ? strerror(errno) : "out of memory");
        gzbuffer(s->gz, 1 << 18);
        return 0;
    }
    s->f = fopen(path, "rb");
    if (!s->f) return rt_error(err, errlen, path, "cannot open: %s", strerror(errno));
    if (comp == COMP_ZSTD) {
        s->zctx = ZSTD_createDCtx();
        if (!s->zctx) return rt_error(err, errlen, path, "out of memory for the zstd decoder");
        s->zbuf_size = ZSTD_DStreamInSize();
        s->zbuf = rt_malloc(s->zbuf_size);
    }
    return 0;
}

/* Reads up to cap bytes: their number, 0 at the end of the stream, -1 with a message in err. */
static int64_t stream_read(Stream *s, char *buf, size_t cap, char *err, size_t errlen) {
    if (s->comp == COMP_NONE) {
        size_t got = fread(buf, 1, cap, s->f);
        if (!got && ferror(s->f))
            return rt_error(err, errlen, s->path, "read error: %s", strerror(errno));
        return (int64_t)got;
    }
    if (s->comp == COMP_GZIP) {
        int got = gzread(s->gz, buf, (unsigned)(cap < INT_MAX ? cap : INT_MAX));
        if (got <= 0) {
            /* A truncated stream returns its data first, then 0 with Z_BUF_ERROR set. */
            int code;
            const char *msg = gzerror(s->gz, &code);
            if (got < 0 || code != Z_OK) {
                size_t n = strlen(s->path); /* zlib's message starts with "PATH: " */
                if (!strncmp(msg, s->path, n) && !strncmp(msg + n, ": ", 2)) msg += n + 2;
                return rt_error(err, errlen, s->path, "gzip error: %s",
                                code == Z_ERRNO ? strerror(errno) : msg);
            }
        }
        return got;
    }
    ZSTD_outBuffer out = {buf, cap, 0};
    while (out.pos == 0) {
        if (s->zin.pos == s->zin.size) {
            size_t got = fread(s->zbuf, 1, s->zbuf_size, s->f);
            if (!got) {
                if (ferror(s->f))
                    return rt_error(err, errlen, s->path, "read error: %s", strerror(errno));
                if (s->zlast != 0)
                    return rt_error(err, errlen, s->path,
                                    "zstd error: the file ends inside a frame (truncated?)");
                return 0;
            }
            s->zin = (ZSTD_inBuffer){s->zbuf, got, 0};
        }
        size_t ret = ZSTD_decompressStream(s->zctx, &out, &s->zin);
        if (ZSTD_isError(ret))
            return rt_error(err, errlen, s->path, "zstd error: %s", ZSTD_getErrorName(ret));
        s->zlast = ret;
    }
    return (int64_t)out.pos;
}

static void stream_close(Stream *s) {
    if (s->gz) gzclose(s->gz);
    if (s->f) fclose(s->f);
    ZSTD_freeDCtx(s->zctx);
    rt_free(s->zbuf);
    memset(s, 0, sizeof *s);
}

/* ---- the document reader ---- */

/* Appended to the message of an input that is not text where that is fatal. */
#define SKIP_BINARY_HINT " (--skip-binary skips such inputs)"

struct DtDocReader {
    const DtInputs *in;
    DtDocOptions opt;
    int file; /* index of the open input, in->n when done */
    int open; /* a stream is open for in->paths[file] */
    int is_jsonl;
    Stream stream;
    int eof;            /* the stream has no more bytes */
    int64_t line_no;    /* lines returned so far from this file */
    int64_t file_bytes; /* bytes of this file read so far: its offset of buf[end] */
    int64_t file_docs;  /* documents returned from this file */
    char *buf;          /* buf[start, end): bytes read but not yet returned as lines */
    size_t cap, start, end;
    char *doc; /* paragraph mode: the document being built */
    size_t doc_len, doc_cap;
    char *clean; /* plain text: a document with its invalid bytes replaced */
    size_t clean_cap;
    json_t *json; /* JSONL: the parsed line the returned text points into */
    int nul;      /* buf[nul_pos] is the file's first NUL byte: nothing is read after it */
    size_t nul_pos;
    int64_t nul_offset, nul_line; /* its offset in the file and its line, for the message */
    int nul_utf16;                /* the file starts with a UTF-16 byte order mark */
    int not_text;                 /* the failure in err is an input that is not text */
    char err[1024];
    int64_t bytes, bad_lines;
    const char **skipped; /* inputs skipped as not text */
    int n_skipped;
};

DtDocReader *dt_docs_open(const DtInputs *in, const DtDocOptions *opt) {
    DtDocReader *r = rt_calloc(1, sizeof *r);
    r->in = in;
    r->opt = *opt;
    r->cap = DT_SNIFF_BYTES;
    r->buf = rt_malloc(r->cap);
    return r;
}

static const char *current_path(const DtDocReader *r) { return r->in->paths[r->file]; }

/* Up to four bytes as "0xc3 0x28" for messages; buf holds 20 characters. */
static const char *hex_bytes(const char *s, size_t n, char buf[20]) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < n && k < 4; k++)
        used +=
            (size_t)snprintf(buf + used, 20 - used, "%s0x%02x", k ? " " : "", (unsigned char)s[k]);
    return buf;
}

static int64_t count_newlines(const char *s, size_t n) {
    int64_t lines = 0;
    for (const char *p = s, *end = s + n; (p = memchr(p, '\n', (size_t)(end - p))); p++) lines++;
    return lines;
}

static const char *decompressed(const DtDocReader *r) {
    return r->stream.comp == COMP_NONE ? "" : " of the decompressed data";
}

/* Records the NUL byte at buf[pos], just read (the lines before it are still to be returned). */
static void mark_nul(DtDocReader *r, size_t pos) {
    r->nul = 1;
    r->nul_pos = pos;
    r->nul_offset = r->file_bytes - (int64_t)(r->end - pos);
    r->nul_line = r->line_no + 1 + count_newlines(r->buf + r->start, pos - r->start);
    /* buf[0] is the file's first byte when nothing was discarded yet */
    r->nul_utf16 = r->file_bytes == (int64_t)r->end && r->end >= 2 &&
                   (!memcmp(r->buf, "\xff\xfe", 2) || !memcmp(r->buf, "\xfe\xff", 2));
}

/* A document would hold the NUL byte: the input is not text. */
static int nul_error(DtDocReader *r) {
    r->not_text = 1;
    return rt_error(
        r->err, sizeof r->err, current_path(r), "not text: a NUL byte at byte %lld%s (line %lld)%s",
        (long long)r->nul_offset, decompressed(r), (long long)r->nul_line,
        r->nul_utf16 ? "; it starts with a UTF-16 byte order mark: convert it to UTF-8 (iconv -f "
                       "UTF-16 -t UTF-8)"
                     : "");
}

/* Fills buf after compacting it; grows it when it is full. 1, 0 at the end of the stream or
 * after a NUL byte, -1 on a read error. */
static int fill(DtDocReader *r) {
    if (r->eof || r->nul) return 0; /* so buf[nul_pos] stays where it is */
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end == r->cap) {
        r->cap *= 2;
        r->buf = rt_realloc(r->buf, r->cap);
    }
    int64_t got = stream_read(&r->stream, r->buf + r->end, r->cap - r->end, r->err, sizeof r->err);
    if (got <= 0) {
        r->eof = got == 0;
        return (int)got;
    }
    const char *nul = memchr(r->buf + r->end, '\0', (size_t)got);
    r->end += (size_t)got;
    r->bytes += got;
    r->file_bytes += got;
    if (nul) mark_nul(r, (size_t)(nul - r->buf));
    return 1;
}

/* The UTF-8 part of "not text" on the first DT_SNIFF_BYTES of the open file, in buf[0, end):
 * 0, or -1 with the message. */
static int check_utf8_start(DtDocReader *r) {
    size_t n = r->end < DT_SNIFF_BYTES ? r->end : DT_SNIFF_BYTES;
    int whole = r->eof && n == r->end; /* else a character may be cut at n */
    size_t invalid = 0, first = 0;
    for (size_t i = utf8_valid_prefix(r->buf, n); i < n;
         i += utf8_valid_prefix(r->buf + i, n - i)) {
        if (!whole && n - i < 4) break;
        if (!invalid++) first = i;
        i++; /* past the invalid byte */
    }
    size_t allowed = n / 1000 > DT_SNIFF_INVALID ? n / 1000 : DT_SNIFF_INVALID;
    if (invalid <= allowed) return 0;
    char hex[20];
    r->not_text = 1;
    return rt_error(
        r->err, sizeof r->err, current_path(r),
        "not UTF-8 text: %zu of its %s%zu bytes%s start no valid UTF-8 character (at most %zu "
        "may), the first at byte %zu (line %lld): %s",
        invalid, whole ? "" : "first ", n, decompressed(r), allowed, first,
        (long long)(1 + count_newlines(r->buf, first)), hex_bytes(r->buf + first, n - first, hex));
}

/* Opens in->paths[file] and checks its first DT_SNIFF_BYTES: 0, or -1 with the message. */
static int open_input(DtDocReader *r) {
    const char *path = current_path(r);
    Compression c = classify(path, &r->is_jsonl);
    r->open = 1; /* stream_close releases a half-opened stream too */
    r->eof = r->not_text = r->nul = 0;
    r->start = r->end = 0;
    r->line_no = r->file_bytes = r->file_docs = 0;
    if (stream_open(&r->stream, path, c, r->err, sizeof r->err)) return -1;
    int got = 1;
    while (r->end < DT_SNIFF_BYTES && (got = fill(r)) > 0) {
    }
    if (got < 0) return -1;
    return r->nul ? nul_error(r) : check_utf8_start(r);
}

static void close_input(DtDocReader *r) {
    stream_close(&r->stream);
    r->open = 0;
    r->file++;
}

static void doc_append(DtDocReader *r, const char *s, size_t n) {
    if (r->doc_len + n + 1 > r->doc_cap) {
        r->doc_cap = 2 * (r->doc_len + n + 1);
        r->doc = rt_realloc(r->doc, r->doc_cap);
    }
    memcpy(r->doc + r->doc_len, s, n);
    r->doc_len += n;
}

/* Returns the len bytes at start as the next line, `used` bytes with its "\n"; -1 when they
 * hold the NUL byte. */
static int take_line(DtDocReader *r, size_t len, size_t used, char **line, size_t *out_len) {
    if (r->nul && r->nul_pos < r->start + used) return nul_error(r);
    *line = r->buf + r->start;
    *out_len = len;
    r->start += used;
    r->line_no++;
    return 1;
}

/* The next line of the open file, without its "\n": 1 with *line / *len, 0 at the end, -1 on
 * an error. */
static int next_line(DtDocReader *r, char **line, size_t *len) {
    size_t scanned = 0; /* bytes after start known to hold no "\n" (fill() moves start) */
    for (;;) {
        char *nl = memchr(r->buf + r->start + scanned, '\n', r->end - r->start - scanned);
        if (nl) {
            size_t n = (size_t)(nl - (r->buf + r->start));
            return take_line(r, n, n + 1, line, len);
        }
        scanned = r->end - r->start;
        int got = fill(r);
        if (got < 0) return -1;
        if (!got) break;
    }
    if (r->start == r->end) return 0;
    return take_line(r, r->end - r->start, r->end - r->start, line,
                     len); /* a last line without "\n" */
}

static void strip_cr(const char *line, size_t *len) {
    if (*len && line[*len - 1] == '\r') (*len)--;
}

/* A line that cannot give a document: -1 with the message, or with skip_bad_lines 0 after a
 * warning (the first few times) and counting it. */
static int bad_line(DtDocReader *r, const char *fmt, ...) RT_PRINTF(2, 3);
static int bad_line(DtDocReader *r, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *path = current_path(r);
    if (!r->opt.skip_bad_lines)
        return rt_error(r->err, sizeof r->err, NULL,
                        "%s:%lld: %s (--skip-bad-lines skips such lines)", path,
                        (long long)r->line_no, msg);
    enum { SHOWN = 10 };
    if (r->bad_lines < SHOWN)
        rt_warn("%s:%lld: %s; line skipped%s", path, (long long)r->line_no, msg,
                r->bad_lines == SHOWN - 1 ? " (further bad lines are counted, not shown)" : "");
    r->bad_lines++;
    return 0;
}

/* A line jansson refused: names the first invalid UTF-8 byte if there is one, else jansson's
 * reason. */
static int bad_json(DtDocReader *r, const char *line, size_t n, const json_error_t *jerr) {
    size_t valid = utf8_valid_prefix(line, n);
    char hex[20];
    if (valid < n)
        return bad_line(r, "not UTF-8: column %zu starts no valid UTF-8 character (%s)", valid + 1,
                        hex_bytes(line + valid, n - valid, hex));
    return bad_line(r, "invalid JSON: %s (column %d)", jerr->text, jerr->column);
}

/* The fields of object j as "'a', 'b'" into buf (as many as fit), for choosing --text-field. */
static const char *field_names(json_t *j, char *buf, size_t cap) {
    size_t used = 0;
    const char *key;
    json_t *val;
    buf[0] = '\0';
    json_object_foreach(j, key, val) {
        int w = snprintf(buf + used, cap - used, "%s'%s'", used ? ", " : "", key);
        if (w < 0 || (size_t)w >= cap - used) break;
        used += (size_t)w;
    }
    return used ? buf : "none";
}

/* The document of a parsed JSONL line: 1 with *text / *len (pointing into j), else what
 * bad_line returns. */
static int jsonl_text(DtDocReader *r, json_t *j, const char **text, size_t *len) {
    const char *field = r->opt.text_field;
    if (!json_is_object(j))
        return bad_line(r, "expected a JSON object with a '%s' field, found %s", field,
                        json_kind(j));
    json_t *v = json_object_get(j, field);
    char fields[512];
    if (!v)
        return bad_line(r, "no field '%s' in the object (its fields: %s; --text-field chooses one)",
                        field, field_names(j, fields, sizeof fields));
    if (!json_is_string(v))
        return bad_line(r, "field '%s' is %s, not a string", field, json_kind(v));
    *text = json_string_value(v);
    *len = json_string_length(v);
    const char *nul = memchr(*text, '\0', *len);
    if (nul)
        return bad_line(r, "field '%s' holds a NUL character (\\u0000) at byte %zu of its text",
                        field, (size_t)(nul - *text));
    return 1;
}

/* JSONL: the text field of the next usable line. */
static int next_jsonl(DtDocReader *r, const char **text, size_t *len) {
    char *line;
    size_t n;
    int rc;
    while ((rc = next_line(r, &line, &n)) > 0) {
        if (dt_is_blank(line, n)) continue;
        json_error_t jerr;
        json_t *j = json_loadb(line, n, JSON_ALLOW_NUL, &jerr);
        rc = j ? jsonl_text(r, j, text, len) : bad_json(r, line, n, &jerr);
        if (rc > 0) {
            r->json = j; /* *text points into it until the next call */
            return 1;
        }
        json_decref(j);
        if (rc < 0) return -1;
    }
    return rc;
}

/* Plain text: *text / *len with every byte that starts no valid UTF-8 character replaced by
 * U+FFFD (into r->clean), unless there is none. */
static void clean_text(DtDocReader *r, const char **text, size_t *len) {
    const char *s = *text;
    size_t n = *len, i = utf8_valid_prefix(s, n);
    if (i == n) return;
    if (3 * n > r->clean_cap) {
        r->clean_cap = 3 * n;
        r->clean = rt_realloc(r->clean, r->clean_cap);
    }
    memcpy(r->clean, s, i);
    size_t out = i;
    while (i < n) {
        size_t k = utf8_char_len(s + i, n - i);
        if (k)
            memcpy(r->clean + out, s + i, k);
        else
            memcpy(r->clean + out, "\xef\xbf\xbd", 3); /* U+FFFD */
        out += k ? k : 3;
        i += k ? k : 1;
    }
    *text = r->clean;
    *len = out;
}

/* Plain text: the next document of the open file in the configured mode, before clean_text. */
static int next_raw_text(DtDocReader *r, const char **text, size_t *len) {
    char *line;
    size_t n;
    int rc;
    switch (r->opt.text_docs) {
    case DT_DOCS_FILE:
        /* The whole file; line_no marks it as returned. */
        if (r->line_no) return 0;
        while ((rc = fill(r)) > 0) {
        }
        if (rc < 0) return -1;
        if (r->nul) return nul_error(r);
        *text = r->buf + r->start;
        *len = r->end - r->start;
        r->start = r->end;
        r->line_no = 1;
        return 1;
    case DT_DOCS_LINE:
        if ((rc = next_line(r, &line, &n)) <= 0) return rc;
        strip_cr(line, &n);
        *text = line;
        *len = n;
        return 1;
    case DT_DOCS_PARAGRAPH:
        r->doc_len = 0;
        while ((rc = next_line(r, &line, &n)) > 0) {
            strip_cr(line, &n);
            if (dt_is_blank(line, n)) {
                if (r->doc_len) break;
                continue;
            }
            if (r->doc_len) doc_append(r, "\n", 1);
            doc_append(r, line, n);
        }
        if (rc < 0) return -1;
        *text = r->doc;
        *len = r->doc_len;
        return r->doc_len > 0;
    }
    return 0;
}

static int next_text(DtDocReader *r, const char **text, size_t *len) {
    int rc = next_raw_text(r, text, len);
    if (rc > 0) clean_text(r, text, len);
    return rc;
}

/* skip_binary: the open input is not text; warns naming it. */
static void skip_input(DtDocReader *r) {
    if (r->file_docs)
        rt_warn("%s; the rest of the input skipped (its first %lld documents were read)", r->err,
                (long long)r->file_docs);
    else
        rt_warn("%s; input skipped", r->err);
    r->skipped = rt_realloc(r->skipped, sizeof *r->skipped * (size_t)(r->n_skipped + 1));
    r->skipped[r->n_skipped++] = current_path(r);
}

int dt_docs_next(DtDocReader *r, const char **text, size_t *len, char *err, size_t errlen) {
    if (r->json) {
        json_decref(r->json);
        r->json = NULL;
    }
    while (r->file < r->in->n) {
        int rc = r->open ? 0 : open_input(r);
        if (rc == 0) rc = r->is_jsonl ? next_jsonl(r, text, len) : next_text(r, text, len);
        if (rc > 0) {
            r->file_docs++;
            return 1;
        }
        if (rc < 0 && !(r->not_text && r->opt.skip_binary)) {
            snprintf(err, errlen, "%s%s", r->err, r->not_text ? SKIP_BINARY_HINT : "");
            return -1;
        }
        if (rc < 0) skip_input(r);
        close_input(r);
    }
    return 0;
}

int64_t dt_docs_bytes(const DtDocReader *r) { return r->bytes; }
int64_t dt_docs_bad_lines(const DtDocReader *r) { return r->bad_lines; }
const char *const *dt_docs_skipped(const DtDocReader *r, int *n) {
    *n = r->n_skipped;
    return r->skipped;
}

void dt_docs_close(DtDocReader *r) {
    if (!r) return;
    if (r->json) json_decref(r->json);
    if (r->open) stream_close(&r->stream);
    rt_free(r->buf);
    rt_free(r->doc);
    rt_free(r->clean);
    rt_free(r->skipped);
    rt_free(r);
}

/* ---- text or not, before reading ---- */

int dt_input_sniff(const char *path, char *err, size_t errlen) {
    char *copy = rt_strdup(path);
    DtInputs one = {&copy, 1};
    DtDocOptions opt = {.text_field = "text"};
    DtDocReader *r = dt_docs_open(&one, &opt);
    int rc = open_input(r);
    if (rc) {
        snprintf(err, errlen, "%s", r->err);
        rc = r->not_text ? 1 : -1;
    }
    dt_docs_close(r);
    rt_free(copy);
    return rc;
}

void dt_inputs_keep_text(DtInputs *in, int skip_binary, DtInputs *skipped) {
    char err[1024];
    int kept = 0;
    *skipped = (DtInputs){0};
    for (int k = 0; k < in->n; k++) {
        int rc = dt_input_sniff(in->paths[k], err, sizeof err);
        if (rc < 0 || (rc > 0 && !skip_binary)) rt_die("%s%s", err, rc > 0 ? SKIP_BINARY_HINT : "");
        if (rc == 0) {
            in->paths[kept++] = in->paths[k];
            continue;
        }
        rt_warn("%s; input skipped", err);
        skipped->paths = rt_realloc(skipped->paths, sizeof(char *) * (size_t)(skipped->n + 1));
        skipped->paths[skipped->n++] = in->paths[k];
    }
    in->n = kept;
    if (!kept)
        rt_die("no input left: the %d input(s) are not text and were skipped (--skip-binary)",
               skipped->n);
}
