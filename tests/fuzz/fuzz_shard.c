/* Fuzz target: the shard reader's checks (src/data/shard.c, docs/formats.md "Token shards").
 * Raw bytes as an HDF5 file would mostly exercise libhdf5's own parser, so the input is
 * decoded into a structured shard instead, written with libhdf5 to a temporary file and
 * opened with shard_open. The reader must either reject it with a message naming the file,
 * or accept it, and then report exactly what was written, and every read it offers must stay
 * in bounds and agree with the data (shard_read, shard_scan, the offsets).
 *
 * The input, read front to back (bytes past its end read as 0):
 *   u8 vocabulary (VOCABS[b % 8]), u8 documents (b % 8), one u8 per document (its length,
 *   b % 16), u8 seed of the token ids (below the vocabulary): a valid shard so far; then
 *   operations until the input ends, each an opcode byte and its arguments (see `apply`):
 *   set an attribute (an integer of any width, order and signedness; a string, fixed or
 *   variable length, of any padding and character set; a float), change its dataspace (null,
 *   an array), drop it; change a dataset's type, shape (rank 0 to 2), layout (chunked,
 *   compressed, compact, never written, external), one of its values, or replace it by a
 *   group or nothing; put a user block before the HDF5 data; cut bytes off the file's end. */
#define _GNU_SOURCE
#include <hdf5.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/shard.h"
#include "fuzz_target.h"
#include "util/error.h"

/* ---- reading the input ---- */

typedef struct {
    const uint8_t *p;
    size_t n;
} Input;

static uint8_t take_u8(Input *in) {
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

/* `bytes` bytes, little-endian. */
static uint64_t take_uint(Input *in, int bytes) {
    uint64_t v = 0;
    for (int k = 0; k < bytes; k++) v |= (uint64_t)take_u8(in) << (8 * k);
    return v;
}

/* ---- the shard to write ---- */

enum { N_ATTRS = 10, MAX_STR = 72, MAX_DIM = 64 };
static const char *const ATTR_NAMES[N_ATTRS] = {
    "format",   "format_version", "vocab_size", "bos_id", "eos_id", "tokenizer_sha256",
    "n_tokens", "n_docs",         "source",     "comment" /* not read by rotor */};
enum { A_FORMAT, A_VERSION, A_VOCAB, A_BOS, A_EOS, A_SHA, A_N_TOKENS, A_N_DOCS, A_SOURCE };

typedef enum { ATTR_ABSENT, ATTR_INT, ATTR_STR, ATTR_FLOAT } AttrKind;
/* Strings: variable length (UTF-8, ASCII), fixed length (NUL-terminated, NUL- or space-padded). */
typedef enum {
    STR_VLEN_UTF8,
    STR_VLEN_ASCII,
    STR_NULLTERM,
    STR_NULLPAD,
    STR_SPACEPAD,
    N_STR_KINDS
} StrKind;
/* Dataspaces of an attribute. */
typedef enum { SPACE_SCALAR, SPACE_NULL, SPACE_ONE, SPACE_TWO, N_SPACES } Space;

typedef struct {
    AttrKind kind;
    Space space;
    hid_t int_type;   /* ATTR_INT: its file type */
    uint64_t bits;    /* ATTR_INT: the value as stored (truncated to the type's width) */
    double real;      /* ATTR_FLOAT */
    StrKind str_kind; /* ATTR_STR */
    char str[MAX_STR + 1];
    size_t str_len;
} AttrSpec;

typedef enum { DS_DATASET, DS_ABSENT, DS_GROUP, N_DS_KINDS } DsKind;
typedef enum {
    LAYOUT_CONTIGUOUS,
    LAYOUT_CHUNKED,
    LAYOUT_DEFLATE,
    LAYOUT_COMPACT,
    LAYOUT_UNWRITTEN,
    LAYOUT_EXTERNAL,
    N_LAYOUTS
} Layout;

typedef struct {
    const char *name;
    DsKind kind;
    hid_t type;
    int rank;
    hsize_t dims[2];
    Layout layout;
    uint64_t *values; /* count() of them, cut to the type's width when written */
} DatasetSpec;

typedef struct {
    AttrSpec attrs[N_ATTRS];
    DatasetSpec tokens, offsets;
    hsize_t userblock;
    uint64_t cut; /* bytes cut off the end of the file */
    int changed;  /* an operation was applied: the shard may be invalid */
} ShardSpec;

static const int64_t VOCABS[8] = {100, 2, 255, 65536, 65537, 70000, (int64_t)1 << 31, 1};

static hid_t int_types(int k) {
    const hid_t t[10] = {H5T_STD_I8LE,  H5T_STD_U8LE,  H5T_STD_I16LE, H5T_STD_U16LE, H5T_STD_I32LE,
                         H5T_STD_U32LE, H5T_STD_I64LE, H5T_STD_U64LE, H5T_STD_I64BE, H5T_STD_U32BE};
    return t[k % 10];
}

static hid_t dataset_types(int k) {
    const hid_t t[12] = {H5T_STD_U16LE, H5T_STD_U32LE, H5T_STD_U64LE,  H5T_STD_U8LE,
                         H5T_STD_U16BE, H5T_STD_U32BE, H5T_STD_U64BE,  H5T_STD_I16LE,
                         H5T_STD_I32LE, H5T_STD_I64LE, H5T_IEEE_F32LE, H5T_IEEE_F64LE};
    return t[k % 12];
}

static size_t count(const DatasetSpec *d) {
    return d->rank == 0 ? 1 : d->rank == 1 ? (size_t)d->dims[0] : (size_t)(d->dims[0] * d->dims[1]);
}

/* v as integer type t stores it: cut to its width, sign-extended when t is signed. */
static uint64_t truncate_to(hid_t t, uint64_t v) {
    size_t bytes = H5Tget_size(t);
    if (bytes >= 8) return v;
    uint64_t mask = ((uint64_t)1 << (8 * bytes)) - 1;
    v &= mask;
    if (H5Tget_sign(t) == H5T_SGN_2 && (v >> (8 * bytes - 1))) v |= ~mask; /* sign-extend */
    return v;
}

static void set_int(AttrSpec *a, hid_t type, uint64_t v) {
    *a = (AttrSpec){
        .kind = ATTR_INT, .space = SPACE_SCALAR, .int_type = type, .bits = truncate_to(type, v)};
}

static void set_str(AttrSpec *a, StrKind kind, const char *s, size_t len) {
    *a = (AttrSpec){.kind = ATTR_STR, .space = SPACE_SCALAR, .str_kind = kind, .str_len = len};
    memcpy(a->str, s, len);
}

static uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The valid shard the header describes. */
static void base_shard(Input *in, ShardSpec *sp) {
    memset(sp, 0, sizeof *sp);
    int64_t vocab = VOCABS[take_u8(in) % 8];
    int n_docs = take_u8(in) % 8;
    uint64_t *offsets = calloc((size_t)n_docs + 1, sizeof *offsets);
    for (int d = 0; d < n_docs; d++) offsets[d + 1] = offsets[d] + take_u8(in) % 16;
    uint64_t n_tokens = offsets[n_docs], seed = take_u8(in);
    uint64_t *tokens = calloc(n_tokens ? n_tokens : 1, sizeof *tokens);
    for (uint64_t i = 0; i < n_tokens; i++) tokens[i] = mix(seed * 1000003u + i) % (uint64_t)vocab;

    set_str(&sp->attrs[A_FORMAT], STR_VLEN_UTF8, "rotor-tokens", 12);
    set_int(&sp->attrs[A_VERSION], H5T_STD_I64LE, 1);
    set_int(&sp->attrs[A_VOCAB], H5T_STD_I64LE, (uint64_t)vocab);
    set_int(&sp->attrs[A_BOS], H5T_STD_I64LE, vocab > 1 ? 1 : 0);
    set_int(&sp->attrs[A_EOS], H5T_STD_I64LE, vocab > 2 ? 2 : (uint64_t)-1);
    const char *sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    set_str(&sp->attrs[A_SHA], STR_VLEN_UTF8, sha, strlen(sha));
    set_int(&sp->attrs[A_N_TOKENS], H5T_STD_I64LE, n_tokens);
    set_int(&sp->attrs[A_N_DOCS], H5T_STD_I64LE, (uint64_t)n_docs);
    set_str(&sp->attrs[A_SOURCE], STR_VLEN_UTF8, "fuzz_shard", 10);
    sp->tokens = (DatasetSpec){.name = "tokens",
                               .type = vocab <= 65536 ? H5T_STD_U16LE : H5T_STD_U32LE,
                               .rank = 1,
                               .dims = {n_tokens},
                               .values = tokens};
    sp->offsets = (DatasetSpec){.name = "doc_offsets",
                                .type = H5T_STD_U64LE,
                                .rank = 1,
                                .dims = {(hsize_t)n_docs + 1},
                                .values = offsets};
}

/* New dimensions for d: values kept where they fit, new ones 0. */
static void reshape(DatasetSpec *d, int rank, hsize_t d0, hsize_t d1) {
    size_t before = count(d);
    d->rank = rank;
    d->dims[0] = d0;
    d->dims[1] = d1;
    size_t after = count(d);
    d->values = realloc(d->values, (after ? after : 1) * sizeof *d->values);
    if (after > before) memset(d->values + before, 0, (after - before) * sizeof *d->values);
}

/* One operation of the input on sp: 0, or -1 at the end of the input. */
static int apply(Input *in, ShardSpec *sp) {
    if (!in->n) return -1;
    sp->changed = 1;
    int op = take_u8(in) % 12;
    AttrSpec *a = &sp->attrs[take_u8(in) % N_ATTRS];
    DatasetSpec *d = take_u8(in) % 2 ? &sp->offsets : &sp->tokens;
    switch (op) {
    case 0: { /* the arguments in input order: no two takes in one call */
        hid_t type = int_types(take_u8(in));
        set_int(a, type, take_uint(in, 8));
        break;
    }
    case 1: {
        StrKind kind = (StrKind)(take_u8(in) % N_STR_KINDS);
        size_t len = take_u8(in) % (MAX_STR + 1);
        char s[MAX_STR];
        for (size_t k = 0; k < len; k++) s[k] = (char)take_u8(in);
        set_str(a, kind, s, len);
        break;
    }
    case 2: a->space = (Space)(take_u8(in) % N_SPACES); break;
    case 3: *a = (AttrSpec){.kind = ATTR_FLOAT, .real = (double)(int64_t)take_uint(in, 8)}; break;
    case 4: a->kind = ATTR_ABSENT; break;
    case 5: d->type = dataset_types(take_u8(in)); break;
    case 6: {
        int rank = take_u8(in) % 3;
        hsize_t d0 = take_u8(in) % MAX_DIM, d1 = take_u8(in) % MAX_DIM;
        reshape(d, rank, d0, d1);
        break;
    }
    case 7: d->layout = (Layout)(take_u8(in) % N_LAYOUTS); break;
    case 8: {
        size_t at = (size_t)take_uint(in, 2);
        uint64_t v = take_uint(in, 8);
        if (count(d)) d->values[at % count(d)] = v;
        break;
    }
    case 9: d->kind = (DsKind)(take_u8(in) % N_DS_KINDS); break;
    case 10: sp->userblock = (hsize_t[]){0, 512, 1024, 4096}[take_u8(in) % 4]; break;
    case 11: sp->cut = take_uint(in, 2) + 1; break;
    }
    return 0;
}

/* ---- writing it with libhdf5 ---- */

static hid_t attr_space(Space s) {
    hsize_t n = s == SPACE_TWO ? 2 : 1;
    return s == SPACE_SCALAR ? H5Screate(H5S_SCALAR)
           : s == SPACE_NULL ? H5Screate(H5S_NULL)
                             : H5Screate_simple(1, &n, NULL);
}

static int space_points(Space s) { return s == SPACE_NULL ? 0 : s == SPACE_TWO ? 2 : 1; }

/* The memory type for writing integers of file type t: the same width and sign, little-endian,
 * so that HDF5 only reorders bytes. */
static hid_t le_copy(hid_t t) {
    hid_t m = H5Tcopy(t);
    if (m >= 0 && H5Tset_order(m, H5T_ORDER_LE) < 0) {
        H5Tclose(m);
        return H5I_INVALID_HID;
    }
    return m;
}

/* n values as little-endian integers of `bytes` bytes each, into buf. */
static void pack(unsigned char *buf, const uint64_t *v, size_t n, size_t bytes) {
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < bytes; k++) buf[i * bytes + k] = (unsigned char)(v[i] >> (8 * k));
}

static hid_t str_type(const AttrSpec *a) {
    hid_t t = H5Tcopy(H5T_C_S1);
    int vlen = a->str_kind == STR_VLEN_UTF8 || a->str_kind == STR_VLEN_ASCII;
    size_t fixed = a->str_len + (a->str_kind == STR_NULLTERM) + !a->str_len; /* at least 1 */
    H5T_str_t pad = a->str_kind == STR_NULLPAD    ? H5T_STR_NULLPAD
                    : a->str_kind == STR_SPACEPAD ? H5T_STR_SPACEPAD
                                                  : H5T_STR_NULLTERM;
    if (t < 0 || H5Tset_size(t, vlen ? H5T_VARIABLE : fixed) < 0 ||
        (!vlen && H5Tset_strpad(t, pad) < 0) ||
        H5Tset_cset(t, a->str_kind == STR_VLEN_ASCII ? H5T_CSET_ASCII : H5T_CSET_UTF8) < 0) {
        if (t >= 0) H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

/* Two copies of a's value (as many as any of its dataspaces holds) laid out as its memory type
 * wants them: in buf, or for variable-length strings the pointers in strs. */
static const void *attr_values(const AttrSpec *a, hid_t ftype, unsigned char *buf,
                               const char **strs) {
    size_t size = H5Tget_size(ftype);
    if (a->kind == ATTR_STR && H5Tis_variable_str(ftype) > 0) {
        strs[0] = strs[1] = a->str; /* NUL-terminated: an inner NUL ends it */
        return strs;
    }
    if (a->kind == ATTR_INT) {
        uint64_t v[2] = {a->bits, a->bits};
        pack(buf, v, 2, size);
    } else if (a->kind == ATTR_FLOAT) {
        memcpy(buf, &a->real, 8);
        memcpy(buf + 8, &a->real, 8);
    } else { /* fixed length: padded as its type says */
        memset(buf, a->str_kind == STR_SPACEPAD ? ' ' : 0, 2 * size);
        memcpy(buf, a->str, a->str_len);
        memcpy(buf + size, a->str, a->str_len);
    }
    return buf;
}

/* Writes attribute `name` as a describes it: 0, or -1 when HDF5 refuses. */
static int write_attr(hid_t file, const char *name, const AttrSpec *a) {
    if (a->kind == ATTR_ABSENT) return 0;
    hid_t space = attr_space(a->space);
    hid_t ftype = a->kind == ATTR_INT     ? H5Tcopy(a->int_type)
                  : a->kind == ATTR_FLOAT ? H5Tcopy(H5T_IEEE_F64LE)
                                          : str_type(a);
    hid_t mtype = ftype < 0             ? H5I_INVALID_HID
                  : a->kind == ATTR_INT ? le_copy(a->int_type)
                                        : H5Tcopy(ftype);
    hid_t attr = space < 0 || mtype < 0
                     ? H5I_INVALID_HID
                     : H5Acreate2(file, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    unsigned char buf[2 * (MAX_STR + 8)];
    const char *strs[2];
    int rc = attr < 0 ? -1 : 0;
    if (rc == 0 && space_points(a->space) > 0)
        rc = H5Awrite(attr, mtype, attr_values(a, ftype, buf, strs)) < 0 ? -1 : 0;
    if (attr >= 0) H5Aclose(attr);
    if (mtype >= 0) H5Tclose(mtype);
    if (ftype >= 0) H5Tclose(ftype);
    if (space >= 0) H5Sclose(space);
    return rc;
}

/* Where LAYOUT_EXTERNAL puts the values of dataset `name`. */
static const char *external_path(const char *name) {
    static char path[2][80];
    int k = !strcmp(name, "tokens");
    if (!path[k][0])
        snprintf(path[k], sizeof path[k], "/tmp/rotor-fuzz-%d-%s.bin", (int)getpid(), name);
    return path[k];
}

/* The creation properties of d's layout. */
static hid_t dataset_plist(const DatasetSpec *d) {
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[2] = {8, 8};
    herr_t rc = dcpl < 0 ? -1 : 0;
    switch (d->layout) {
    case LAYOUT_CONTIGUOUS: rc = H5Pset_layout(dcpl, H5D_CONTIGUOUS); break;
    case LAYOUT_DEFLATE:
        rc = H5Pset_chunk(dcpl, d->rank, chunk) < 0 ? -1 : H5Pset_deflate(dcpl, 1);
        break;
    case LAYOUT_CHUNKED: rc = H5Pset_chunk(dcpl, d->rank, chunk); break;
    case LAYOUT_COMPACT: rc = H5Pset_layout(dcpl, H5D_COMPACT); break;
    case LAYOUT_UNWRITTEN:
        rc = H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE) < 0
                 ? -1
                 : H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
        break;
    case LAYOUT_EXTERNAL:
        rc = H5Pset_external(dcpl, external_path(d->name), 0,
                             (hsize_t)(count(d) * H5Tget_size(d->type)) + 1);
        break;
    default: break;
    }
    if (rc < 0 && dcpl >= 0) {
        H5Pclose(dcpl);
        return H5I_INVALID_HID;
    }
    return dcpl;
}

/* The values of d in memory for writing, with their memory type in *mtype (free both). */
static void *dataset_buffer(const DatasetSpec *d, hid_t *mtype) {
    size_t n = count(d);
    if (H5Tget_class(d->type) == H5T_FLOAT) {
        double *v = malloc((n ? n : 1) * sizeof *v);
        for (size_t i = 0; i < n; i++) v[i] = (double)d->values[i];
        *mtype = H5Tcopy(H5T_NATIVE_DOUBLE);
        return v;
    }
    size_t bytes = H5Tget_size(d->type);
    unsigned char *buf = malloc((n ? n : 1) * bytes);
    pack(buf, d->values, n, bytes);
    *mtype = le_copy(d->type);
    return buf;
}

/* Writes d as it describes: 0, or -1 when HDF5 refuses. */
static int write_dataset(hid_t file, const DatasetSpec *d) {
    if (d->kind == DS_ABSENT) return 0;
    if (d->kind == DS_GROUP) {
        hid_t g = H5Gcreate2(file, d->name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        return g < 0 ? -1 : H5Gclose(g);
    }
    int chunked = d->layout == LAYOUT_CHUNKED || d->layout == LAYOUT_DEFLATE;
    hsize_t unlimited[2] = {H5S_UNLIMITED, H5S_UNLIMITED};
    hid_t space = d->rank == 0 ? H5Screate(H5S_SCALAR)
                               : H5Screate_simple(d->rank, d->dims, chunked ? unlimited : NULL);
    hid_t dcpl = dataset_plist(d), mtype = H5I_INVALID_HID;
    hid_t ds = space < 0 || dcpl < 0
                   ? H5I_INVALID_HID
                   : H5Dcreate2(file, d->name, d->type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    void *buf = dataset_buffer(d, &mtype);
    int rc = ds < 0 || mtype < 0 ? -1 : 0;
    if (rc == 0 && d->layout != LAYOUT_UNWRITTEN && count(d))
        rc = H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0 ? -1 : 0;
    free(buf);
    if (mtype >= 0) H5Tclose(mtype);
    if (ds >= 0 && H5Dclose(ds) < 0) rc = -1;
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    return rc;
}

/* Writes the shard to path: 0, or -1 when HDF5 refuses something the spec asks for (not a
 * finding: such an input is dropped). */
static int write_shard(const char *path, const ShardSpec *sp) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    hid_t file = fcpl < 0 || (sp->userblock && H5Pset_userblock(fcpl, sp->userblock) < 0)
                     ? H5I_INVALID_HID
                     : H5Fcreate(path, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    if (fcpl >= 0) H5Pclose(fcpl);
    if (file < 0) return -1;
    int rc = write_dataset(file, &sp->tokens) | write_dataset(file, &sp->offsets);
    for (int k = 0; k < N_ATTRS; k++) rc |= write_attr(file, ATTR_NAMES[k], &sp->attrs[k]);
    if (H5Fclose(file) < 0) rc = -1;
    struct stat st;
    if (rc == 0 && sp->cut && !stat(path, &st))
        rc = truncate(path, st.st_size > (off_t)sp->cut ? st.st_size - (off_t)sp->cut : 0);
    return rc ? -1 : 0;
}

/* ---- what an accepted shard must satisfy ---- */

/* The attribute read as an integer: written as one, with a single value. */
static int64_t written_int(const ShardSpec *sp, int k) {
    const AttrSpec *a = &sp->attrs[k];
    FUZZ_CHECK(a->kind == ATTR_INT && space_points(a->space) == 1,
               "attribute %s accepted as written as kind %d", ATTR_NAMES[k], (int)a->kind);
    return (int64_t)a->bits;
}

/* A string attribute read back: what was written, up to a NUL or trailing padding. */
static void check_string(const ShardSpec *sp, int k, const char *read) {
    const AttrSpec *a = &sp->attrs[k];
    FUZZ_CHECK(a->kind == ATTR_STR && space_points(a->space) == 1,
               "attribute %s accepted as kind %d", ATTR_NAMES[k], (int)a->kind);
    size_t n = strlen(read);
    FUZZ_CHECK(n <= a->str_len && !memcmp(read, a->str, n), "attribute %s reads as '%s'",
               ATTR_NAMES[k], read);
}

static uint64_t stored_token(const ShardSpec *sp, size_t i) {
    return truncate_to(sp->tokens.type, sp->tokens.values[i]);
}

/* A dataset never written reads as zeros (shard.c zeroes what HDF5 leaves alone). */
static uint64_t stored_offset(const ShardSpec *sp, size_t i) {
    return sp->offsets.layout == LAYOUT_UNWRITTEN ? 0 : sp->offsets.values[i];
}

/* Every read of an accepted shard, against what was written. */
static void check_accepted(const Shard *s, const ShardSpec *sp, const char *path) {
    const ShardInfo *info = shard_info(s);
    int64_t vocab = written_int(sp, A_VOCAB);
    FUZZ_CHECK(info->vocab_size == vocab && info->bos_id == written_int(sp, A_BOS) &&
                   info->eos_id == written_int(sp, A_EOS) && written_int(sp, A_VERSION) == 1,
               "attributes read differ from those written");
    FUZZ_CHECK(info->n_tokens == written_int(sp, A_N_TOKENS) &&
                   info->n_docs == written_int(sp, A_N_DOCS),
               "n_tokens / n_docs read differ from those written");
    check_string(sp, A_FORMAT, "rotor-tokens");
    check_string(sp, A_SHA, info->tokenizer_sha256);
    check_string(sp, A_SOURCE, info->source);
    FUZZ_CHECK(sp->tokens.kind == DS_DATASET && sp->tokens.rank == 1 &&
                   sp->tokens.dims[0] == (hsize_t)info->n_tokens,
               "/tokens accepted with rank %d", sp->tokens.rank);
    FUZZ_CHECK(sp->tokens.type == (vocab <= 65536 ? H5T_STD_U16LE : H5T_STD_U32LE),
               "/tokens accepted with another type");
    FUZZ_CHECK(sp->offsets.kind == DS_DATASET && sp->offsets.rank == 1 &&
                   sp->offsets.type == H5T_STD_U64LE &&
                   sp->offsets.dims[0] == (hsize_t)info->n_docs + 1,
               "/doc_offsets accepted with rank %d", sp->offsets.rank);
    const uint64_t *off = shard_doc_offsets(s);
    FUZZ_CHECK(off[0] == 0 && off[info->n_docs] == (uint64_t)info->n_tokens,
               "offsets do not span the tokens");
    for (int64_t d = 0; d <= info->n_docs; d++)
        FUZZ_CHECK(off[d] == stored_offset(sp, (size_t)d) && (d == 0 || off[d] >= off[d - 1]),
                   "offset %" PRId64 " differs", d);

    int32_t *buf = malloc(sizeof(int32_t) * (size_t)(info->n_tokens + 1));
    char err[1024];
    int any_bad = 0;
    for (int64_t d = 0; d < info->n_docs; d++) {
        int64_t start = (int64_t)off[d], n = (int64_t)(off[d + 1] - off[d]);
        int bad = 0;
        for (int64_t i = start; i < start + n; i++)
            bad |= stored_token(sp, (size_t)i) >= (uint64_t)vocab;
        any_bad |= bad;
        int rc = shard_read(s, start, n, buf, err, sizeof err);
        FUZZ_CHECK(rc == (bad ? -1 : 0), "document %" PRId64 ": shard_read returns %d", d, rc);
        if (rc) FUZZ_CHECK(strstr(err, path), "error does not name the file: %s", err);
        for (int64_t i = 0; !rc && i < n; i++)
            FUZZ_CHECK((uint64_t)buf[i] == stored_token(sp, (size_t)(start + i)),
                       "token %" PRId64 " differs", start + i);
    }
    int64_t n = info->n_tokens;
    FUZZ_CHECK(shard_read(s, n, 1, buf, err, sizeof err) == -1 && strstr(err, path),
               "read past the end accepted");
    FUZZ_CHECK(shard_read(s, -1, 1, buf, err, sizeof err) == -1, "read before the start accepted");
    FUZZ_CHECK(shard_read(s, 0, n + 1, buf, err, sizeof err) == -1,
               "read of n_tokens + 1 accepted");
    FUZZ_CHECK(shard_read(s, n, 0, buf, err, sizeof err) == 0, "empty read at the end refused");
    free(buf);

    /* counts only for vocabularies that fit in memory comfortably */
    int64_t *counts = vocab <= (1 << 20) ? calloc((size_t)vocab, sizeof *counts) : NULL;
    int rc = shard_scan(s, counts, err, sizeof err);
    FUZZ_CHECK(rc == (any_bad ? -1 : 0), "shard_scan returns %d",
               rc); /* the documents cover every token */
    if (!rc && counts) {
        int64_t total = 0;
        for (int64_t id = 0; id < vocab; id++) total += counts[id];
        FUZZ_CHECK(total == n, "counts sum to %" PRId64 " of %" PRId64 " tokens", total, n);
    }
    free(counts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/rotor-fuzz-%d.h5", (int)getpid());
    Input in = {data, size};
    ShardSpec sp;
    base_shard(&in, &sp);
    for (int ops = 0; ops < 64 && apply(&in, &sp) == 0; ops++) {
    }
    if (write_shard(path, &sp) == 0) {
        char err[1024];
        Shard *s = shard_open(path, err, sizeof err);
        if (s) {
            check_accepted(s, &sp, path);
            shard_close(s);
        } else {
            FUZZ_CHECK(strstr(err, path), "error does not name the file: %s", err);
            FUZZ_CHECK(sp.changed, "the valid shard of the header is rejected: %s", err);
        }
    }
    unlink(path);
    unlink(external_path("tokens"));
    unlink(external_path("doc_offsets"));
    free(sp.tokens.values);
    free(sp.offsets.values);
    return 0;
}
