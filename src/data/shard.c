/* Token shards (shard.h; docs/formats.md "Token shards").
 *
 * Writing: documents are buffered in memory (a shard is at most a few GB by design) and
 * written at close as two contiguous, uncompressed datasets plus root attributes into
 * PATH.tmp, which is fsynced and renamed to PATH; the directory is fsynced too.
 *
 * Reading: shard_open validates the file with HDF5, reads /doc_offsets into memory, finds
 * the file address of /tokens, closes every HDF5 handle and memory-maps the token bytes.
 * shard_read and shard_scan then only touch the mapping, so they are thread-safe (the
 * Debian HDF5 build is not), and cost no more than a memory copy.
 *
 * HDF5 calls (shard_open, the writer) must not run on two threads at once. HDF5's own
 * error printing is replaced by a handler that records the innermost error: every failure
 * comes back as "<path>: <problem>", with HDF5's description appended where that helps. */
#include "data/shard.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fsutil.h"

#define SHARD_FORMAT "rotor-tokens"
#define SHARD_FORMAT_VERSION 1
/* Token ids travel as int32 (shard_writer_add, shard_read): at most 2^31 of them. */
#define SHARD_MAX_VOCAB ((int64_t)1 << 31)
/* Largest vocabulary stored with 16-bit tokens. */
#define SHARD_U16_VOCAB 65536

/* Bytes per stored token for a vocabulary size. */
static size_t token_width(int64_t vocab_size) { return vocab_size <= SHARD_U16_VOCAB ? 2 : 4; }

/* ------------------------------------------------------------------------------------ */
/* HDF5 helpers                                                                         */
/* ------------------------------------------------------------------------------------ */

/* The innermost description of the last failed HDF5 call (e.g. "truncated file: eof =
 * ..."), for messages. Recorded as the call fails: any later HDF5 call, even a successful
 * H5Sclose, clears HDF5's error stack. */
static char h5_error[256];

static herr_t innermost_error(unsigned n, const H5E_error2_t *e, void *data) {
    if (n == 0 && e->desc) snprintf(h5_error, sizeof h5_error, "%s", e->desc);
    return 0;
}

/* HDF5's automatic error handler, called as a failing API call returns: records instead
 * of printing. */
static herr_t record_error(hid_t stack, void *data) {
    snprintf(h5_error, sizeof h5_error, "unknown HDF5 error");
    H5Ewalk2(stack, H5E_WALK_UPWARD, innermost_error, NULL);
    return 0;
}

/* Installs record_error in place of HDF5's error printing (callers produce their own
 * messages). Called on entry to every function here that calls HDF5, as other code may
 * change the process-wide handler in between. */
static void h5_quiet(void) {
    H5Eset_auto2(H5E_DEFAULT, record_error, NULL);
    snprintf(h5_error, sizeof h5_error, "unknown HDF5 error");
}

/* File access: the default (sec2) driver without file locking. Readers only read, and the
 * writer is the only user of its PATH.tmp, so locks protect nothing here, and they fail on
 * file systems without lock support. (HDF5_USE_FILE_LOCKING still overrides this.) */
static hid_t h5_fapl(void) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && H5Pset_file_locking(fapl, 0, 1) < 0) {
        H5Pclose(fapl);
        return H5I_INVALID_HID;
    }
    return fapl;
}

/* Opens path read-only without locking. HDF5 refuses to open a file this process already
 * has open with other locking flags; as such a second open shares the first one's handle
 * and takes no lock, it is retried with the library's default flags. */
static hid_t h5_open_rdonly(const char *path) {
    hid_t fapl = h5_fapl();
    hid_t file = fapl < 0 ? H5I_INVALID_HID : H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (file < 0 && strstr(h5_error, "file locking"))
        file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    return file;
}

/* Human-readable HDF5 datatype for messages: "uint16", "float32 big-endian", "string". */
static const char *type_name(hid_t t, char buf[64]) {
    size_t bits = 8 * H5Tget_size(t);
    const char *be = H5Tget_order(t) == H5T_ORDER_BE ? " big-endian" : "";
    switch (H5Tget_class(t)) {
    case H5T_INTEGER:
        snprintf(buf, 64, "%sint%zu%s", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", bits, be);
        break;
    case H5T_FLOAT: snprintf(buf, 64, "float%zu%s", bits, be); break;
    case H5T_STRING: snprintf(buf, 64, "string"); break;
    default: snprintf(buf, 64, "non-numeric HDF5 type (class %d)", (int)H5Tget_class(t)); break;
    }
    return buf;
}

/* bos_id / eos_id: -1 (the tokenizer has none) or an id below vocab_size. */
static int check_ids(const char *path, int64_t vocab, int64_t bos, int64_t eos, char *err,
                     size_t errlen) {
    if (vocab < 1 || vocab > SHARD_MAX_VOCAB)
        return rt_error(err, errlen, path, "vocab_size = %" PRId64 ", must be in [1, %" PRId64 "]",
                        vocab, SHARD_MAX_VOCAB);
    if (bos < -1 || bos >= vocab)
        return rt_error(err, errlen, path,
                        "bos_id = %" PRId64 ", must be -1 or below vocab_size %" PRId64, bos,
                        vocab);
    if (eos < -1 || eos >= vocab)
        return rt_error(err, errlen, path,
                        "eos_id = %" PRId64 ", must be -1 or below vocab_size %" PRId64, eos,
                        vocab);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Writing                                                                              */
/* ------------------------------------------------------------------------------------ */

struct ShardWriter {
    char *path, *tmp;  /* final name, and PATH.tmp being written */
    hid_t file;        /* PATH.tmp, created at open so that an unwritable place fails early */
    ShardInfo info;    /* n_tokens / n_docs count what was added */
    size_t width;      /* bytes per token: 2 or 4 */
    void *tokens;      /* info.n_tokens ids of `width` bytes, host order */
    uint64_t *offsets; /* info.n_docs + 1 document starts */
    int64_t tokens_cap, offsets_cap;
};

/* Grows *p (elements of `size` bytes) to hold at least `need`, doubling. */
static void grow(void **p, int64_t *cap, int64_t need, size_t size) {
    if (need <= *cap) return;
    int64_t c = *cap < 4096 ? 4096 : *cap;
    while (c < need) c *= 2;
    *p = rt_realloc(*p, (size_t)c * size);
    *cap = c;
}

ShardWriter *shard_writer_open(const char *path, const ShardInfo *info, char *err, size_t errlen) {
    h5_quiet();
    if (check_ids(path, info->vocab_size, info->bos_id, info->eos_id, err, errlen)) return NULL;
    if (strnlen(info->tokenizer_sha256, sizeof info->tokenizer_sha256) ==
            sizeof info->tokenizer_sha256 ||
        strnlen(info->source, sizeof info->source) == sizeof info->source) {
        rt_error(err, errlen, path, "tokenizer_sha256 or source is not NUL-terminated");
        return NULL;
    }
    char *tmp = rt_sprintf("%s.tmp", path);
    hid_t fapl = h5_fapl();
    hid_t file = fapl < 0 ? H5I_INVALID_HID : H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (file < 0) {
        rt_error(err, errlen, tmp, "cannot create: %s", h5_error);
        rt_free(tmp);
        return NULL;
    }
    ShardWriter *w = rt_calloc(1, sizeof *w);
    w->path = rt_strdup(path);
    w->tmp = tmp;
    w->file = file;
    w->info = *info;
    w->info.n_tokens = w->info.n_docs = 0;
    w->width = token_width(info->vocab_size);
    grow((void **)&w->offsets, &w->offsets_cap, 1, sizeof *w->offsets);
    w->offsets[0] = 0;
    return w;
}

/* A rejected document is not added; the writer stays usable. */
int shard_writer_add(ShardWriter *w, const int32_t *tokens, size_t n, char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= w->info.vocab_size)
            return rt_error(err, errlen, w->path,
                            "document %" PRId64 ": token %zu is %" PRId32
                            ", outside [0, vocab_size %" PRId64 ")",
                            w->info.n_docs, i, tokens[i], w->info.vocab_size);
    int64_t at = w->info.n_tokens, end = at + (int64_t)n;
    grow(&w->tokens, &w->tokens_cap, end, w->width);
    grow((void **)&w->offsets, &w->offsets_cap, w->info.n_docs + 2, sizeof *w->offsets);
    if (w->width == 2) {
        uint16_t *t = (uint16_t *)w->tokens + at;
        for (size_t i = 0; i < n; i++) t[i] = (uint16_t)tokens[i];
    } else {
        uint32_t *t = (uint32_t *)w->tokens + at;
        for (size_t i = 0; i < n; i++) t[i] = (uint32_t)tokens[i];
    }
    w->info.n_tokens = end;
    w->offsets[++w->info.n_docs] = (uint64_t)end;
    return 0;
}

int64_t shard_writer_tokens(const ShardWriter *w) { return w->info.n_tokens; }

/* A 1-D contiguous dataset of n elements (file type ftype) from host data of type mtype. */
static herr_t put_dataset(hid_t file, const char *name, hid_t ftype, hid_t mtype, const void *data,
                          int64_t n) {
    hsize_t dims[1] = {(hsize_t)n};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    herr_t rc = -1;
    if (space >= 0 && dcpl >= 0 && H5Pset_layout(dcpl, H5D_CONTIGUOUS) >= 0 &&
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0) { /* every element gets written */
        hid_t d = H5Dcreate2(file, name, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        if (d >= 0) {
            rc = n ? H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : 0;
            if (H5Dclose(d) < 0) rc = -1;
        }
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return rc;
}

/* Scalar root attributes: int64, and variable-length UTF-8 strings (as h5py writes str). */
static herr_t put_int_attr(hid_t file, const char *name, int64_t v) {
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t a = space < 0 ? H5I_INVALID_HID
                        : H5Acreate2(file, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_INT64, &v);
    if (a >= 0 && H5Aclose(a) < 0) rc = -1;
    if (space >= 0) H5Sclose(space);
    return rc;
}

static herr_t put_str_attr(hid_t file, const char *name, const char *s) {
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t t = H5Tcopy(H5T_C_S1);
    herr_t rc = -1;
    if (space >= 0 && t >= 0 && H5Tset_size(t, H5T_VARIABLE) >= 0 &&
        H5Tset_cset(t, H5T_CSET_UTF8) >= 0) {
        hid_t a = H5Acreate2(file, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
        if (a >= 0) {
            rc = H5Awrite(a, t, &s);
            if (H5Aclose(a) < 0) rc = -1;
        }
    }
    if (t >= 0) H5Tclose(t);
    if (space >= 0) H5Sclose(space);
    return rc;
}

/* Datasets and attributes into the open PATH.tmp. */
static int write_contents(ShardWriter *w, char *err, size_t errlen) {
    const ShardInfo *in = &w->info;
    if (put_dataset(w->file, "tokens", w->width == 2 ? H5T_STD_U16LE : H5T_STD_U32LE,
                    w->width == 2 ? H5T_NATIVE_UINT16 : H5T_NATIVE_UINT32, w->tokens,
                    in->n_tokens) < 0)
        return rt_error(err, errlen, w->tmp, "cannot write /tokens (%" PRId64 " tokens): %s",
                        in->n_tokens, h5_error);
    if (put_dataset(w->file, "doc_offsets", H5T_STD_U64LE, H5T_NATIVE_UINT64, w->offsets,
                    in->n_docs + 1) < 0)
        return rt_error(err, errlen, w->tmp, "cannot write /doc_offsets: %s", h5_error);
    const struct {
        const char *name;
        int64_t v;
    } ints[] = {{"format_version", SHARD_FORMAT_VERSION},
                {"vocab_size", in->vocab_size},
                {"bos_id", in->bos_id},
                {"eos_id", in->eos_id},
                {"n_tokens", in->n_tokens},
                {"n_docs", in->n_docs}};
    const struct {
        const char *name, *v;
    } strs[] = {{"format", SHARD_FORMAT},
                {"tokenizer_sha256", in->tokenizer_sha256},
                {"source", in->source}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (put_str_attr(w->file, strs[i].name, strs[i].v) < 0)
            return rt_error(err, errlen, w->tmp, "cannot write attribute %s: %s", strs[i].name,
                            h5_error);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (put_int_attr(w->file, ints[i].name, ints[i].v) < 0)
            return rt_error(err, errlen, w->tmp, "cannot write attribute %s: %s", ints[i].name,
                            h5_error);
    return 0;
}

/* fsync(PATH.tmp) after HDF5 closed it (closing may still write and truncate). */
static int sync_file(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY);
    if (fd < 0 || fsync(fd)) {
        int e = errno;
        if (fd >= 0) close(fd);
        return rt_error(err, errlen, path, "cannot fsync: %s", strerror(e));
    }
    close(fd);
    return 0;
}

static void writer_free(ShardWriter *w) {
    rt_free(w->tokens);
    rt_free(w->offsets);
    rt_free(w->path);
    rt_free(w->tmp);
    rt_free(w);
}

int shard_writer_close(ShardWriter *w, char *err, size_t errlen) {
    h5_quiet();
    int rc = write_contents(w, err, errlen);
    if (H5Fclose(w->file) < 0 && rc == 0)
        rc = rt_error(err, errlen, w->tmp, "cannot close: %s", h5_error);
    if (rc == 0) rc = sync_file(w->tmp, err, errlen);
    if (rc == 0 && rename(w->tmp, w->path))
        rc = rt_error(err, errlen, w->tmp, "cannot rename to %s: %s", w->path, strerror(errno));
    if (rc == 0)
        fs_sync_parent(
            w->path); /* makes the rename durable; a file system that refuses leaves it as it is */
    else
        unlink(w->tmp);
    writer_free(w);
    return rc;
}

void shard_writer_abort(ShardWriter *w) {
    h5_quiet();
    H5Fclose(w->file);
    unlink(w->tmp);
    writer_free(w);
}

/* ------------------------------------------------------------------------------------ */
/* Reading                                                                              */
/* ------------------------------------------------------------------------------------ */

struct Shard {
    char *path;
    ShardInfo info;
    uint64_t *offsets; /* n_docs + 1 entries */
    size_t width;      /* bytes per token: 2 or 4 */
    void *map;         /* mapping of the file pages holding /tokens (NULL if empty) */
    size_t map_len;
    const unsigned char *tokens; /* little-endian /tokens inside the mapping; any alignment */
};

/* The attribute `name` of the root group, checked to exist and hold a single value of class
 * cls (`what` in messages: "an integer"); its datatype goes to *type. Returns the attribute or
 * -1 with a message. */
static hid_t open_attr(hid_t file, const char *path, const char *name, H5T_class_t cls,
                       const char *what, hid_t *type, char *err, size_t errlen) {
    if (H5Aexists(file, name) <= 0)
        return rt_error(err, errlen, path, "missing root attribute %s", name);
    hid_t a = H5Aopen(file, name, H5P_DEFAULT);
    hid_t space = a < 0 ? H5I_INVALID_HID : H5Aget_space(a);
    hssize_t npoints = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
    if (space >= 0) H5Sclose(space);
    *type = npoints == 1 ? H5Aget_type(a) : H5I_INVALID_HID;
    if (*type < 0) {
        if (a >= 0) H5Aclose(a);
        return npoints < 0 || npoints == 1
                   ? rt_error(err, errlen, path, "cannot read attribute %s: %s", name, h5_error)
                   : rt_error(err, errlen, path, "attribute %s has %lld values, expected one", name,
                              (long long)npoints);
    }
    if (H5Tget_class(*type) != cls) {
        char tn[64];
        rt_error(err, errlen, path, "attribute %s is a %s, expected %s", name, type_name(*type, tn),
                 what);
        H5Tclose(*type);
        H5Aclose(a);
        return -1;
    }
    return a;
}

/* An integer attribute of any width and signedness, as int64. */
static int get_int_attr(hid_t file, const char *path, const char *name, int64_t *v, char *err,
                        size_t errlen) {
    hid_t t;
    hid_t a = open_attr(file, path, name, H5T_INTEGER, "an integer", &t, err, errlen);
    if (a < 0) return -1;
    int rc = 0;
    if (H5Tget_sign(t) == H5T_SGN_NONE) {
        uint64_t u;
        if (H5Aread(a, H5T_NATIVE_UINT64, &u) < 0)
            rc = rt_error(err, errlen, path, "cannot read attribute %s: %s", name, h5_error);
        else if (u > (uint64_t)INT64_MAX)
            rc = rt_error(err, errlen, path, "attribute %s = %" PRIu64 " is too large", name, u);
        else
            *v = (int64_t)u;
    } else if (H5Aread(a, H5T_NATIVE_INT64, v) < 0) {
        rc = rt_error(err, errlen, path, "cannot read attribute %s: %s", name, h5_error);
    }
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* A fixed- or variable-length string attribute into buf[cap] (longer is an error). */
static int get_str_attr(hid_t file, const char *path, const char *name, char *buf, size_t cap,
                        char *err, size_t errlen) {
    hid_t t;
    hid_t a = open_attr(file, path, name, H5T_STRING, "a string", &t, err, errlen);
    if (a < 0) return -1;
    int rc = 0;
    /* Read in the file's character set (HDF5 does not convert between sets); a fixed-length
     * string becomes NUL-terminated, whatever its padding. */
    int vlen = H5Tis_variable_str(t) > 0;
    size_t fixed = vlen ? 0 : H5Tget_size(t);
    hid_t mt = H5Tcopy(H5T_C_S1);
    char *s = NULL;
    if (!vlen) s = rt_calloc(1, fixed + 1);
    if (mt < 0 || H5Tset_cset(mt, H5Tget_cset(t)) < 0 ||
        H5Tset_size(mt, vlen ? H5T_VARIABLE : fixed + 1) < 0 ||
        (!vlen && H5Tset_strpad(mt, H5T_STR_NULLTERM) < 0) ||
        H5Aread(a, mt, vlen ? (void *)&s : s) < 0) {
        rc = rt_error(err, errlen, path, "cannot read attribute %s: %s", name, h5_error);
    } else {
        size_t len = s ? strlen(s) : 0;
        if (len >= cap)
            rc = rt_error(err, errlen, path, "attribute %s is %zu bytes long, at most %zu allowed",
                          name, len, cap - 1);
        else
            memcpy(buf, s ? s : "", len + 1);
    }
    if (vlen)
        H5free_memory(s);
    else
        rt_free(s);
    if (mt >= 0) H5Tclose(mt);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* Root attributes into s->info, validated. */
static int read_attributes(hid_t file, Shard *s, char *err, size_t errlen) {
    const char *p = s->path;
    ShardInfo *in = &s->info;
    char format[64];
    int64_t version;
    if (get_str_attr(file, p, "format", format, sizeof format, err, errlen) ||
        get_int_attr(file, p, "format_version", &version, err, errlen) ||
        get_int_attr(file, p, "vocab_size", &in->vocab_size, err, errlen) ||
        get_int_attr(file, p, "bos_id", &in->bos_id, err, errlen) ||
        get_int_attr(file, p, "eos_id", &in->eos_id, err, errlen) ||
        get_str_attr(file, p, "tokenizer_sha256", in->tokenizer_sha256, sizeof in->tokenizer_sha256,
                     err, errlen) ||
        get_int_attr(file, p, "n_tokens", &in->n_tokens, err, errlen) ||
        get_int_attr(file, p, "n_docs", &in->n_docs, err, errlen) ||
        get_str_attr(file, p, "source", in->source, sizeof in->source, err, errlen))
        return -1;
    if (strcmp(format, SHARD_FORMAT))
        return rt_error(err, errlen, p, "format is \"%s\", expected \"%s\"", format, SHARD_FORMAT);
    if (version != SHARD_FORMAT_VERSION)
        return rt_error(err, errlen, p,
                        "format_version is %" PRId64 ", this rotor reads version %d", version,
                        SHARD_FORMAT_VERSION);
    if (in->n_tokens < 0 || in->n_docs < 0 || in->n_docs == INT64_MAX)
        return rt_error(err, errlen, p,
                        "n_tokens = %" PRId64 ", n_docs = %" PRId64 ": out of range", in->n_tokens,
                        in->n_docs);
    return check_ids(p, in->vocab_size, in->bos_id, in->eos_id, err, errlen);
}

/* Opens dataset `name`, checks it is 1-D of `expect` entries with file type `ftype`
 * (described as `want` in messages). `what` says where `expect` comes from. */
static hid_t open_dataset(hid_t file, const char *path, const char *name, hid_t ftype,
                          const char *want, int64_t expect, const char *what, char *err,
                          size_t errlen) {
    char tn[64];
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return rt_error(err, errlen, path, "missing dataset /%s", name);
    hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
    if (ds < 0) return rt_error(err, errlen, path, "cannot open dataset /%s: %s", name, h5_error);
    hid_t t = H5Dget_type(ds), space = H5Dget_space(ds);
    hsize_t dims[1] = {0};
    int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
    if (rank == 1) H5Sget_simple_extent_dims(space, dims, NULL);
    int rc = 0;
    if (t < 0 || rank < 0)
        rc = rt_error(err, errlen, path, "cannot inspect dataset /%s: %s", name, h5_error);
    else if (H5Tequal(t, ftype) <= 0)
        rc = rt_error(err, errlen, path, "/%s has type %s, expected %s", name, type_name(t, tn),
                      want);
    else if (rank != 1)
        rc = rt_error(err, errlen, path, "/%s has %d dimensions, expected 1", name, rank);
    else if (dims[0] != (hsize_t)expect)
        rc = rt_error(err, errlen, path, "/%s has %llu entries, %s", name,
                      (unsigned long long)dims[0], what);
    if (t >= 0) H5Tclose(t);
    if (space >= 0) H5Sclose(space);
    if (rc) {
        H5Dclose(ds);
        return -1;
    }
    return ds;
}

/* /doc_offsets into s->offsets: n_docs + 1 entries, from 0, non-decreasing, to n_tokens. */
static int read_offsets(hid_t file, Shard *s, char *err, size_t errlen) {
    const char *p = s->path;
    int64_t n_docs = s->info.n_docs, n_tokens = s->info.n_tokens;
    char what[96];
    snprintf(what, sizeof what, "n_docs = %" PRId64 " needs %" PRId64, n_docs, n_docs + 1);
    hid_t ds = open_dataset(file, p, "doc_offsets", H5T_STD_U64LE, "uint64 (little-endian)",
                            n_docs + 1, what, err, errlen);
    if (ds < 0) return -1;
    /* The size comes from the file: allocate without dying on absurd values. Zeroed, as HDF5
     * leaves the entries without storage in the file (never written, fill time never) as they are.
     */
    s->offsets = (uint64_t)n_docs < SIZE_MAX / sizeof(uint64_t)
                     ? calloc((size_t)n_docs + 1, sizeof(uint64_t))
                     : NULL;
    int rc = 0;
    if (!s->offsets)
        rc = rt_error(err, errlen, p, "cannot allocate /doc_offsets (%" PRId64 " entries)",
                      n_docs + 1);
    else if (H5Dread(ds, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, s->offsets) < 0)
        rc = rt_error(err, errlen, p, "cannot read /doc_offsets: %s", h5_error);
    H5Dclose(ds);
    if (rc) return rc;
    const uint64_t *o = s->offsets;
    if (o[0] != 0)
        return rt_error(err, errlen, p, "/doc_offsets[0] = %" PRIu64 ", must be 0", o[0]);
    for (int64_t i = 1; i <= n_docs; i++)
        if (o[i] < o[i - 1])
            return rt_error(err, errlen, p,
                            "/doc_offsets decreases: [%" PRId64 "] = %" PRIu64 " after [%" PRId64
                            "] = %" PRIu64,
                            i, o[i], i - 1, o[i - 1]);
    if (o[n_docs] != (uint64_t)n_tokens)
        return rt_error(err, errlen, p,
                        "/doc_offsets[%" PRId64 "] = %" PRIu64 ", must equal n_tokens = %" PRId64,
                        n_docs, o[n_docs], n_tokens);
    return 0;
}

/* Checks /tokens (type, length, contiguous and uncompressed, stored in this file) and returns
 * its byte address in *addr (meaningless when it has no storage, allowed if empty). */
static int locate_tokens(hid_t file, Shard *s, haddr_t *addr, char *err, size_t errlen) {
    const char *p = s->path;
    char what[64], want[64];
    snprintf(what, sizeof what, "n_tokens = %" PRId64, s->info.n_tokens);
    snprintf(want, sizeof want, "uint%zu (little-endian) for vocab_size %" PRId64, 8 * s->width,
             s->info.vocab_size);
    hid_t ds = open_dataset(file, p, "tokens", s->width == 2 ? H5T_STD_U16LE : H5T_STD_U32LE, want,
                            s->info.n_tokens, what, err, errlen);
    if (ds < 0) return -1;
    hid_t dcpl = H5Dget_create_plist(ds);
    H5D_layout_t layout = dcpl < 0 ? H5D_LAYOUT_ERROR : H5Pget_layout(dcpl);
    int nfilters = dcpl < 0 ? -1 : H5Pget_nfilters(dcpl),
        nexternal = dcpl < 0 ? -1 : H5Pget_external_count(dcpl);
    int rc = 0;
    static const char *const layouts[] = {"compact", "contiguous", "chunked", "virtual"};
    if (layout < 0 || nfilters < 0 || nexternal < 0)
        rc = rt_error(err, errlen, p, "cannot read the layout of /tokens: %s", h5_error);
    else if (layout != H5D_CONTIGUOUS || nfilters)
        rc = rt_error(err, errlen, p,
                      "/tokens is stored %s with %d filter(s) (e.g. compression); shards need it "
                      "contiguous and "
                      "uncompressed",
                      layout < H5D_NLAYOUTS ? layouts[layout] : "in an unknown layout", nfilters);
    else if (nexternal)
        rc = rt_error(err, errlen, p,
                      "/tokens is stored in external file(s); shards need it in the shard");
    /* Without storage H5Dget_offset answers HADDR_UNDEF plus the user block's size, which wraps
     * around to a plausible address when the file has one: ask for the bytes allocated instead. */
    *addr = H5Dget_offset(ds);
    if (rc == 0 && s->info.n_tokens &&
        H5Dget_storage_size(ds) / s->width < (hsize_t)s->info.n_tokens)
        rc = rt_error(err, errlen, p, "/tokens has no storage in the file (never written)");
    if (dcpl >= 0) H5Pclose(dcpl);
    H5Dclose(ds);
    return rc;
}

/* Maps the n_tokens * width bytes at `addr` of the file open as fd (size checked). */
static int map_tokens(Shard *s, int fd, haddr_t addr, char *err, size_t errlen) {
    struct stat st;
    if (fstat(fd, &st)) return rt_error(err, errlen, s->path, "cannot stat: %s", strerror(errno));
    uint64_t n = (uint64_t)s->info.n_tokens, size = (uint64_t)st.st_size;
    if (n == 0) return 0;
    if (n > (UINT64_MAX - addr) / s->width || addr + n * s->width > size)
        return rt_error(err, errlen, s->path,
                        "file is truncated: %" PRIu64 " bytes, but /tokens (%" PRIu64
                        " x %zu bytes at offset %" PRIu64 ") needs more",
                        size, n, s->width, (uint64_t)addr);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), start = addr / page * page,
             end = addr + n * s->width;
    s->map_len = (size_t)(end - start);
    s->map = mmap(NULL, s->map_len, PROT_READ, MAP_SHARED, fd, (off_t)start);
    if (s->map == MAP_FAILED) {
        s->map = NULL;
        return rt_error(err, errlen, s->path, "cannot mmap %" PRIu64 " bytes of /tokens: %s",
                        end - start, strerror(errno));
    }
    s->tokens = (const unsigned char *)s->map + (addr - start);
    return 0;
}

Shard *shard_open(const char *path, char *err, size_t errlen) {
    h5_quiet();
    hid_t file = h5_open_rdonly(path);
    if (file < 0) {
        struct stat st;
        if (stat(path, &st))
            rt_error(err, errlen, path, "cannot open: %s", strerror(errno));
        else
            rt_error(err, errlen, path, "not a readable HDF5 file: %s", h5_error);
        return NULL;
    }
    Shard *s = rt_calloc(1, sizeof *s);
    s->path = rt_strdup(path);
    haddr_t addr = HADDR_UNDEF;
    int fd = -1;
    int rc = read_attributes(file, s, err, errlen);
    if (rc == 0) s->width = token_width(s->info.vocab_size);
    if (rc == 0) rc = locate_tokens(file, s, &addr, err, errlen);
    if (rc == 0) rc = read_offsets(file, s, err, errlen);
    /* The file descriptor HDF5 read the file through (default sec2 driver), so the bytes
     * mapped are those just validated even if PATH is replaced meanwhile. */
    void *handle = NULL;
    if (rc == 0 && H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0)
        rc = rt_error(err, errlen, path, "cannot get the file descriptor: %s", h5_error);
    if (rc == 0 && (fd = dup(*(int *)handle)) < 0)
        rc = rt_error(err, errlen, path, "cannot duplicate the file descriptor: %s",
                      strerror(errno));
    if (H5Fclose(file) < 0 && rc == 0)
        rc = rt_error(err, errlen, path, "cannot close: %s", h5_error);
    if (rc == 0) rc = map_tokens(s, fd, addr, err, errlen);
    if (fd >= 0) close(fd);
    if (rc) {
        shard_close(s);
        return NULL;
    }
    return s;
}

void shard_close(Shard *s) {
    if (!s) return;
    if (s->map) munmap(s->map, s->map_len);
    free(s->offsets);
    rt_free(s->path);
    rt_free(s);
}

const ShardInfo *shard_info(const Shard *s) { return &s->info; }
const char *shard_path(const Shard *s) { return s->path; }
const uint64_t *shard_doc_offsets(const Shard *s) { return s->offsets; }

/* Token i of the mapping (unaligned little-endian load). */
static inline uint32_t token_at(const Shard *s, int64_t i) {
    if (s->width == 2) {
        uint16_t v;
        memcpy(&v, s->tokens + 2 * i, 2);
        return le16toh(v);
    }
    uint32_t v;
    memcpy(&v, s->tokens + 4 * i, 4);
    return le32toh(v);
}

static int bad_token(const Shard *s, int64_t i, char *err, size_t errlen) {
    return rt_error(err, errlen, s->path,
                    "token %" PRId64 " is %" PRIu32 ", not below vocab_size %" PRId64, i,
                    token_at(s, i), s->info.vocab_size);
}

int shard_read(const Shard *s, int64_t start, int64_t n, int32_t *out, char *err, size_t errlen) {
    int64_t total = s->info.n_tokens;
    if (start < 0 || n < 0 || start > total || n > total - start)
        return rt_error(err, errlen, s->path,
                        "cannot read %" PRId64 " tokens from position %" PRId64
                        ": the shard has %" PRId64,
                        n, start, total);
    /* Copy while tracking the largest id (vectorises); locate a bad id only if there is one. */
    uint32_t max = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t v = token_at(s, start + i);
        max = v > max ? v : max;
        out[i] = (int32_t)v;
    }
    if ((int64_t)max < s->info.vocab_size) return 0;
    for (int64_t i = start;; i++)
        if ((int64_t)token_at(s, i) >= s->info.vocab_size) return bad_token(s, i, err, errlen);
}

/* counts (if given) is overwritten with the number of occurrences of each id. */
int shard_scan(const Shard *s, int64_t *counts, char *err, size_t errlen) {
    int64_t vocab = s->info.vocab_size;
    if (counts) memset(counts, 0, (size_t)vocab * sizeof *counts);
    for (int64_t i = 0; i < s->info.n_tokens; i++) {
        uint32_t v = token_at(s, i);
        if ((int64_t)v >= vocab) return bad_token(s, i, err, errlen);
        if (counts) counts[v]++;
    }
    return 0;
}
