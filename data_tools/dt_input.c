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

static void stream_open(Stream *s, const char *path, Compression comp) {
    memset(s, 0, sizeof *s);
    s->path = path;
    s->comp = comp;
    if (comp == COMP_GZIP) {
        s->gz = gzopen(path, "rb");
        if (!s->gz) rt_die("%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
        gzbuffer(s->gz, 1 << 18);
        return;
    }
    s->f = fopen(path, "rb");
    if (!s->f) rt_die("%s: cannot open: %s", path, strerror(errno));
    if (comp == COMP_ZSTD) {
        s->zctx = ZSTD_createDCtx();
        if (!s->zctx) rt_die("%s: out of memory for the zstd decoder", path);
        s->zbuf_size = ZSTD_DStreamInSize();
        s->zbuf = rt_malloc(s->zbuf_size);
    }
}

/* Reads up to cap bytes; returns 0 at the end of the stream. Dies on errors. */
static size_t stream_read(Stream *s, char *buf, size_t cap) {
    if (s->comp == COMP_NONE) {
        size_t got = fread(buf, 1, cap, s->f);
        if (!got && ferror(s->f)) rt_die("%s: read error: %s", s->path, strerror(errno));
        return got;
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
                rt_die("%s: gzip error: %s", s->path, code == Z_ERRNO ? strerror(errno) : msg);
            }
        }
        return (size_t)got;
    }
    ZSTD_outBuffer out = {buf, cap, 0};
    while (out.pos == 0) {
        if (s->zin.pos == s->zin.size) {
            size_t got = fread(s->zbuf, 1, s->zbuf_size, s->f);
            if (!got) {
                if (ferror(s->f)) rt_die("%s: read error: %s", s->path, strerror(errno));
                if (s->zlast != 0)
                    rt_die("%s: zstd error: the file ends inside a frame (truncated?)", s->path);
                return 0;
            }
            s->zin = (ZSTD_inBuffer){s->zbuf, got, 0};
        }
        size_t ret = ZSTD_decompressStream(s->zctx, &out, &s->zin);
        if (ZSTD_isError(ret)) rt_die("%s: zstd error: %s", s->path, ZSTD_getErrorName(ret));
        s->zlast = ret;
    }
    return out.pos;
}

static void stream_close(Stream *s) {
    if (s->gz) gzclose(s->gz);
    if (s->f) fclose(s->f);
    ZSTD_freeDCtx(s->zctx);
    rt_free(s->zbuf);
    memset(s, 0, sizeof *s);
}

/* ---- the document reader ---- */

struct DtDocReader {
    const DtInputs *in;
    DtDocOptions opt;
    int file; /* index of the open input, in->n when done */
    int open; /* a stream is open for in->paths[file] */
    int is_jsonl;
    Stream stream;
    int eof;         /* the stream has no more bytes */
    int64_t line_no; /* lines returned so far from this file */
    char *buf;       /* buf[start, end): bytes read but not yet returned as lines */
    size_t cap, start, end;
    char *doc; /* paragraph mode: the document being built */
    size_t doc_len, doc_cap;
    json_t *json; /* JSONL: the parsed line the returned text points into */
    int64_t bytes, bad_lines;
};

DtDocReader *dt_docs_open(const DtInputs *in, const DtDocOptions *opt) {
    DtDocReader *r = rt_calloc(1, sizeof *r);
    r->in = in;
    r->opt = *opt;
    r->cap = 1 << 20;
    r->buf = rt_malloc(r->cap);
    return r;
}

static void doc_append(DtDocReader *r, const char *s, size_t n) {
    if (r->doc_len + n + 1 > r->doc_cap) {
        r->doc_cap = 2 * (r->doc_len + n + 1);
        r->doc = rt_realloc(r->doc, r->doc_cap);
    }
    memcpy(r->doc + r->doc_len, s, n);
    r->doc_len += n;
}

/* Fills buf after compacting it; grows it when it is full. 0 at the end of the stream. */
static int fill(DtDocReader *r) {
    if (r->eof) return 0;
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end == r->cap) {
        r->cap *= 2;
        r->buf = rt_realloc(r->buf, r->cap);
    }
    size_t got = stream_read(&r->stream, r->buf + r->end, r->cap - r->end);
    if (!got) {
        r->eof = 1;
        return 0;
    }
    r->end += got;
    r->bytes += (int64_t)got;
    return 1;
}

/* The next line of the open file, without its "\n": 1 with *line / *len, 0 at the end. */
static int next_line(DtDocReader *r, char **line, size_t *len) {
    size_t scanned = 0; /* bytes after start known to hold no "\n" (fill() moves start) */
    for (;;) {
        char *nl = memchr(r->buf + r->start + scanned, '\n', r->end - r->start - scanned);
        if (nl) {
            *line = r->buf + r->start;
            *len = (size_t)(nl - *line);
            r->start += *len + 1;
            r->line_no++;
            return 1;
        }
        scanned = r->end - r->start;
        if (!fill(r)) break;
    }
    if (r->start == r->end) return 0;
    *line = r->buf + r->start; /* a last line without "\n" */
    *len = r->end - r->start;
    r->start = r->end;
    r->line_no++;
    return 1;
}

static void strip_cr(const char *line, size_t *len) {
    if (*len && line[*len - 1] == '\r') (*len)--;
}

static const char *json_kind(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* A line that cannot give a document: dies, or with skip_bad_lines warns (the first few
 * times) and counts it. */
static void bad_line(DtDocReader *r, const char *fmt, ...) RT_PRINTF(2, 3);
static void bad_line(DtDocReader *r, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *path = r->in->paths[r->file];
    if (!r->opt.skip_bad_lines)
        rt_die("%s:%lld: %s (--skip-bad-lines skips such lines)", path, (long long)r->line_no, msg);
    enum { SHOWN = 10 };
    if (r->bad_lines < SHOWN)
        rt_warn("%s:%lld: %s; line skipped%s", path, (long long)r->line_no, msg,
                r->bad_lines == SHOWN - 1 ? " (further bad lines are counted, not shown)" : "");
    r->bad_lines++;
}

/* JSONL: the text field of the next usable line. */
static int next_jsonl(DtDocReader *r, const char **text, size_t *len) {
    char *line;
    size_t n;
    while (next_line(r, &line, &n)) {
        if (dt_is_blank(line, n)) continue;
        json_error_t jerr;
        json_t *j = json_loadb(line, n, JSON_ALLOW_NUL, &jerr);
        if (!j) {
            bad_line(r, "invalid JSON: %s (column %d)", jerr.text, jerr.column);
            continue;
        }
        if (!json_is_object(j)) {
            bad_line(r, "expected a JSON object with a '%s' field, found %s", r->opt.text_field,
                     json_kind(j));
            json_decref(j);
            continue;
        }
        json_t *v = json_object_get(j, r->opt.text_field);
        if (!v) {
            /* Name the fields there are, to help choose --text-field. */
            char fields[512] = "";
            size_t used = 0;
            const char *key;
            json_t *val;
            json_object_foreach(j, key, val) {
                int w =
                    snprintf(fields + used, sizeof fields - used, "%s'%s'", used ? ", " : "", key);
                if (w < 0 || (size_t)w >= sizeof fields - used) break;
                used += (size_t)w;
            }
            bad_line(r, "no field '%s' in the object (its fields: %s; --text-field chooses one)",
                     r->opt.text_field, used ? fields : "none");
            json_decref(j);
            continue;
        }
        if (!json_is_string(v)) {
            bad_line(r, "field '%s' is %s, not a string", r->opt.text_field, json_kind(v));
            json_decref(j);
            continue;
        }
        r->json = j; /* *text points into it until the next call */
        *text = json_string_value(v);
        *len = json_string_length(v);
        return 1;
    }
    return 0;
}

/* Plain text: the next document of the open file in the configured mode. */
static int next_text(DtDocReader *r, const char **text, size_t *len) {
    char *line;
    size_t n;
    switch (r->opt.text_docs) {
    case DT_DOCS_FILE:
        /* The whole file; line_no marks it as returned. */
        if (r->line_no) return 0;
        while (fill(r)) {
        }
        *text = r->buf + r->start;
        *len = r->end - r->start;
        r->start = r->end;
        r->line_no = 1;
        return 1;
    case DT_DOCS_LINE:
        if (!next_line(r, &line, &n)) return 0;
        strip_cr(line, &n);
        *text = line;
        *len = n;
        return 1;
    case DT_DOCS_PARAGRAPH:
        r->doc_len = 0;
        while (next_line(r, &line, &n)) {
            strip_cr(line, &n);
            if (dt_is_blank(line, n)) {
                if (r->doc_len) break;
                continue;
            }
            if (r->doc_len) doc_append(r, "\n", 1);
            doc_append(r, line, n);
        }
        *text = r->doc;
        *len = r->doc_len;
        return r->doc_len > 0;
    }
    return 0;
}

int dt_docs_next(DtDocReader *r, const char **text, size_t *len) {
    if (r->json) {
        json_decref(r->json);
        r->json = NULL;
    }
    while (r->file < r->in->n) {
        if (!r->open) {
            const char *path = r->in->paths[r->file];
            Compression c = classify(path, &r->is_jsonl);
            stream_open(&r->stream, path, c);
            r->open = 1;
            r->eof = 0;
            r->start = r->end = 0;
            r->line_no = 0;
        }
        if (r->is_jsonl ? next_jsonl(r, text, len) : next_text(r, text, len)) return 1;
        stream_close(&r->stream);
        r->open = 0;
        r->file++;
    }
    return 0;
}

int64_t dt_docs_bytes(const DtDocReader *r) { return r->bytes; }
int64_t dt_docs_bad_lines(const DtDocReader *r) { return r->bad_lines; }

void dt_docs_close(DtDocReader *r) {
    if (!r) return;
    if (r->json) json_decref(r->json);
    if (r->open) stream_close(&r->stream);
    rt_free(r->buf);
    rt_free(r->doc);
    rt_free(r);
}
