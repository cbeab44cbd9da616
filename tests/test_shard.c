/* Token shards (src/data/shard.c): round trips with 16- and 32-bit tokens, atomic writes,
 * rejection of malformed files (built here with the HDF5 API) with messages naming the file
 * and the problem, HDF5_USE_FILE_LOCKING=FALSE and foreign locks, offsets beyond 2^32 (a
 * sparse 8 GB file), concurrent reads, and the speed of shard_read. */
#include "data/shard.h"
#include "harness.h"
#include "testutil.h"
#include "util/error.h"
#include "util/rng.h"
#include "util/timer.h"
#include "util/fsutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <hdf5.h>
#include <inttypes.h>
#include <omp.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

static char err[2048];

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                              */
/* ------------------------------------------------------------------------------------ */

static ShardInfo make_info(int64_t vocab) {
    ShardInfo in;
    memset(&in, 0, sizeof in);
    in.vocab_size = vocab;
    in.bos_id = 1;
    in.eos_id = 2;
    snprintf(in.tokenizer_sha256, sizeof in.tokenizer_sha256, "%064d", 7);
    snprintf(in.source, sizeof in.source, "test_shard: synthetic documents, vocab %" PRId64, vocab);
    return in;
}

/* The documents written to a shard, to compare against. */
typedef struct {
    int32_t *tokens;
    uint64_t *offsets;
    int64_t n_tokens, n_docs;
} Corpus;

static void corpus_free(Corpus *c) {
    rt_free(c->tokens);
    rt_free(c->offsets);
}

/* Writes n_docs random documents (BOS + up to max_len - 1 ids; every 17th one empty) with
 * shard_writer and returns them. */
static Corpus write_random(const char *path, int64_t vocab, int64_t n_docs, int64_t max_len,
                           uint64_t seed) {
    ShardInfo info = make_info(vocab);
    ShardWriter *w = shard_writer_open(path, &info, err, sizeof err);
    RT_ASSERT(w);
    Rng r;
    rng_init(&r, seed, 0);
    Corpus c = {rt_malloc(sizeof(int32_t) * (size_t)(n_docs * max_len)),
                rt_malloc(sizeof(uint64_t) * (size_t)(n_docs + 1)), 0, n_docs};
    c.offsets[0] = 0;
    for (int64_t d = 0; d < n_docs; d++) {
        int64_t len = d % 17 == 16 ? 0 : 1 + (int64_t)rng_below(&r, (uint64_t)max_len);
        int32_t *doc = c.tokens + c.n_tokens;
        for (int64_t i = 0; i < len; i++)
            doc[i] = i == 0 ? 1 : (int32_t)rng_below(&r, (uint64_t)vocab);
        if (len) doc[len - 1] = (int32_t)(vocab - 1); /* the largest id occurs */
        CHECK_MSG(shard_writer_add(w, doc, (size_t)len, err, sizeof err) == 0, "%s", err);
        c.n_tokens += len;
        c.offsets[d + 1] = (uint64_t)c.n_tokens;
    }
    CHECK(shard_writer_tokens(w) == c.n_tokens);
    CHECK_MSG(shard_writer_close(w, err, sizeof err) == 0, "%s", err);
    return c;
}

/* Opens `path` expecting failure with a message naming the file and containing `what`. */
static void expect_reject(const char *path, const char *what) {
    Shard *s = shard_open(path, err, sizeof err);
    CHECK_MSG(!s, "%s opened, expected failure with \"%s\"", path, what);
    if (s) {
        shard_close(s);
        return;
    }
    CHECK_MSG(strstr(err, path) && strstr(err, what), "message \"%s\" lacks \"%s\"", err, what);
}

/* ---- building shards, well- or ill-formed, directly with the HDF5 API ---- */

static void attr_int(hid_t f, const char *name, hid_t type, int64_t v) {
    hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(f, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    RT_ASSERT(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
}

/* A fixed-length (space-padded, as some writers do) or variable-length string. */
static void attr_str(hid_t f, const char *name, const char *s, int fixed) {
    hid_t sp = H5Screate(H5S_SCALAR), t = H5Tcopy(H5T_C_S1);
    if (fixed) {
        H5Tset_size(t, strlen(s) + 3);
        H5Tset_strpad(t, H5T_STR_SPACEPAD);
    } else {
        H5Tset_size(t, H5T_VARIABLE);
    }
    hid_t a = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (fixed) {
        char *buf = rt_calloc(1, strlen(s) + 3);
        memcpy(buf, s, strlen(s));
        RT_ASSERT(a >= 0 && H5Awrite(a, t, buf) >= 0);
        rt_free(buf);
    } else {
        RT_ASSERT(a >= 0 && H5Awrite(a, t, &s) >= 0);
    }
    H5Aclose(a);
    H5Tclose(t);
    H5Sclose(sp);
}

/* What build_shard writes; spec_default() is a valid shard. */
typedef struct {
    const char *format;
    int64_t version, vocab, bos, eos, n_tokens_attr, n_docs_attr;
    const char *omit_attr; /* a root attribute left out */
    const char *str_attr;  /* an integer attribute written as a string instead */
    int fixed_strings;     /* fixed-length strings (default: variable-length) */
    hid_t count_type;      /* file type of n_tokens / n_docs */
    int omit_tokens, omit_offsets;
    hid_t tokens_type;      /* file type of /tokens */
    int gzip;               /* /tokens chunked and deflated */
    int userblock;          /* 512-byte user block before the HDF5 data */
    const uint16_t *tokens; /* n_tokens ids */
    int64_t n_tokens;
    const uint64_t *offsets; /* n_offsets entries */
    int64_t n_offsets;
} Spec;

enum { SPEC_TOKENS = 100 };
static uint16_t spec_tokens[SPEC_TOKENS];
static const uint64_t spec_offsets[] = {0, 10, 10, 60, 100};

static Spec spec_default(void) {
    for (int i = 0; i < SPEC_TOKENS; i++) spec_tokens[i] = (uint16_t)(i * 37 % 1000);
    return (Spec){.format = "rotor-tokens",
                  .version = 1,
                  .vocab = 1000,
                  .bos = 1,
                  .eos = 2,
                  .n_tokens_attr = SPEC_TOKENS,
                  .n_docs_attr = 4,
                  .count_type = H5T_STD_I64LE,
                  .tokens_type = H5T_STD_U16LE,
                  .tokens = spec_tokens,
                  .n_tokens = SPEC_TOKENS,
                  .offsets = spec_offsets,
                  .n_offsets = 5};
}

static void dataset(hid_t f, const char *name, hid_t ftype, hid_t mtype, const void *data,
                    int64_t n, int gzip) {
    hsize_t dims[1] = {(hsize_t)n}, chunk[1] = {16};
    hid_t sp = H5Screate_simple(1, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (gzip) RT_ASSERT(H5Pset_chunk(dcpl, 1, chunk) >= 0 && H5Pset_deflate(dcpl, 6) >= 0);
    hid_t d = H5Dcreate2(f, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    RT_ASSERT(d >= 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
}

/* Every root attribute of spec except spec->omit_attr. */
static void spec_attrs(hid_t f, const Spec *sp) {
    const struct {
        const char *name;
        int64_t v;
        hid_t type;
    } ints[] = {{"format_version", sp->version, H5T_STD_I64LE},
                {"vocab_size", sp->vocab, H5T_STD_I64LE},
                {"bos_id", sp->bos, H5T_STD_I64LE},
                {"eos_id", sp->eos, H5T_STD_I64LE},
                {"n_tokens", sp->n_tokens_attr, sp->count_type},
                {"n_docs", sp->n_docs_attr, sp->count_type}};
    const struct {
        const char *name, *v;
    } strs[] = {
        {"format", sp->format}, {"tokenizer_sha256", "abc123"}, {"source", "built by test_shard"}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (sp->omit_attr && !strcmp(sp->omit_attr, ints[i].name)) continue;
        if (sp->str_attr && !strcmp(sp->str_attr, ints[i].name))
            attr_str(f, ints[i].name, "12", sp->fixed_strings);
        else
            attr_int(f, ints[i].name, ints[i].type, ints[i].v);
    }
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (!sp->omit_attr || strcmp(sp->omit_attr, strs[i].name))
            attr_str(f, strs[i].name, strs[i].v, sp->fixed_strings);
}

static void build_shard(const char *path, const Spec *sp) {
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (sp->userblock) H5Pset_userblock(fcpl, 512);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    RT_ASSERT(f >= 0);
    if (!sp->omit_tokens)
        dataset(f, "tokens", sp->tokens_type, H5T_NATIVE_UINT16, sp->tokens, sp->n_tokens,
                sp->gzip);
    if (!sp->omit_offsets)
        dataset(f, "doc_offsets", H5T_STD_U64LE, H5T_NATIVE_UINT64, sp->offsets, sp->n_offsets, 0);
    spec_attrs(f, sp);
    RT_ASSERT(H5Fclose(f) >= 0);
    H5Pclose(fcpl);
}

/* ------------------------------------------------------------------------------------ */
/* Tests                                                                                */
/* ------------------------------------------------------------------------------------ */

/* Writes, reopens and compares everything; vocab > 65536 stores 32-bit tokens. */
static void roundtrip(int64_t vocab, hid_t expect_type) {
    char *dir = tu_temp_dir(), *path = rt_sprintf("%s/shard_000.h5", dir),
         *tmp = rt_sprintf("%s.tmp", path);
    Corpus c = write_random(path, vocab, 300, 400, (uint64_t)vocab);
    CHECK(fs_exists(path) && !fs_exists(tmp));

    /* The stored type, checked independently of the reader. */
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, "tokens", H5P_DEFAULT);
    hid_t t = H5Dget_type(d);
    CHECK(H5Tequal(t, expect_type) > 0);
    H5Tclose(t);
    H5Dclose(d);
    H5Fclose(f);

    Shard *s = shard_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (s) {
        const ShardInfo *in = shard_info(s), want = make_info(vocab);
        CHECK(!strcmp(shard_path(s), path));
        CHECK(in->vocab_size == vocab && in->bos_id == 1 && in->eos_id == 2);
        CHECK(!strcmp(in->tokenizer_sha256, want.tokenizer_sha256) &&
              !strcmp(in->source, want.source));
        CHECK(in->n_tokens == c.n_tokens && in->n_docs == c.n_docs);
        CHECK(!memcmp(shard_doc_offsets(s), c.offsets, sizeof(uint64_t) * (size_t)(c.n_docs + 1)));
        int32_t *buf = rt_malloc(sizeof(int32_t) * (size_t)c.n_tokens);
        int bad = 0;
        for (int64_t i = 0; i < c.n_docs; i++) {
            int64_t a = (int64_t)c.offsets[i], n = (int64_t)c.offsets[i + 1] - a;
            bad += shard_read(s, a, n, buf, err, sizeof err) != 0 ||
                   memcmp(buf, c.tokens + a, sizeof(int32_t) * (size_t)n);
        }
        CHECK_MSG(!bad, "%d documents differ", bad);
        CHECK(shard_read(s, 0, c.n_tokens, buf, err, sizeof err) == 0 &&
              !memcmp(buf, c.tokens, sizeof(int32_t) * (size_t)c.n_tokens));
        /* Ranges outside the shard. */
        CHECK(shard_read(s, c.n_tokens - 5, 6, buf, err, sizeof err) == -1 && strstr(err, path) &&
              strstr(err, "cannot read 6 tokens from position"));
        CHECK(shard_read(s, -1, 2, buf, err, sizeof err) == -1);
        CHECK(shard_read(s, c.n_tokens, 0, buf, err, sizeof err) == 0);

        int64_t *counts = rt_calloc((size_t)vocab, sizeof *counts),
                *want_counts = rt_calloc((size_t)vocab, sizeof *counts);
        for (int64_t i = 0; i < c.n_tokens; i++) want_counts[c.tokens[i]]++;
        counts[0] = 12345; /* overwritten, not added to */
        CHECK_MSG(shard_scan(s, counts, err, sizeof err) == 0, "%s", err);
        CHECK(!memcmp(counts, want_counts, sizeof(int64_t) * (size_t)vocab));
        CHECK(shard_scan(s, NULL, err, sizeof err) == 0);
        rt_free(counts);
        rt_free(want_counts);
        rt_free(buf);
        shard_close(s);
    }
    corpus_free(&c);
    fs_remove_tree(dir);
    rt_free(tmp);
    rt_free(path);
    rt_free(dir);
}

static void test_roundtrip_u16(void) { roundtrip(1000, H5T_STD_U16LE); }
static void test_roundtrip_u32(void) { roundtrip(100000, H5T_STD_U32LE); }

/* No documents, and only empty documents: /tokens has no storage (HADDR_UNDEF). */
static void test_empty(void) {
    char *dir = tu_temp_dir(), *path = rt_sprintf("%s/empty.h5", dir);
    for (int n_docs = 0; n_docs <= 3; n_docs += 3) {
        ShardInfo info = make_info(50);
        ShardWriter *w = shard_writer_open(path, &info, err, sizeof err);
        RT_ASSERT(w);
        for (int i = 0; i < n_docs; i++) CHECK(shard_writer_add(w, NULL, 0, err, sizeof err) == 0);
        CHECK_MSG(shard_writer_close(w, err, sizeof err) == 0, "%s", err);
        Shard *s = shard_open(path, err, sizeof err);
        CHECK_MSG(s, "%s", err);
        if (!s) continue;
        CHECK(shard_info(s)->n_tokens == 0 && shard_info(s)->n_docs == n_docs);
        CHECK(shard_doc_offsets(s)[n_docs] == 0);
        int32_t x;
        CHECK(shard_read(s, 0, 0, &x, err, sizeof err) == 0);
        CHECK(shard_read(s, 0, 1, &x, err, sizeof err) == -1);
        int64_t counts[50];
        CHECK(shard_scan(s, counts, err, sizeof err) == 0 && counts[0] == 0);
        shard_close(s);
    }
    fs_remove_tree(dir);
    rt_free(path);
    rt_free(dir);
}

/* PATH appears only at close; abort and a crash leave no PATH; bad ids are refused. */
static void test_atomic(void) {
    char *dir = tu_temp_dir(), *path = rt_sprintf("%s/shard.h5", dir),
         *tmp = rt_sprintf("%s.tmp", path);
    ShardInfo info = make_info(1000);
    const int32_t doc[] = {1, 5, 999, 7};

    ShardWriter *w = shard_writer_open(path, &info, err, sizeof err);
    RT_ASSERT(w);
    CHECK(shard_writer_add(w, doc, 4, err, sizeof err) == 0);
    CHECK(!fs_exists(path) && fs_exists(tmp));
    /* Out-of-range ids name the file and the document. */
    const int32_t too_big[] = {1, 1000}, negative[] = {1, 3, -4};
    CHECK(shard_writer_add(w, too_big, 2, err, sizeof err) == -1 && strstr(err, path) &&
          strstr(err, "document 1: token 1 is 1000"));
    CHECK(shard_writer_add(w, negative, 3, err, sizeof err) == -1 &&
          strstr(err, "document 1: token 2 is -4"));
    CHECK(shard_writer_tokens(w) == 4);
    shard_writer_abort(w);
    CHECK(!fs_exists(path) && !fs_exists(tmp));

    /* A writer killed before close (a child process that exits without closing). */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        ShardWriter *cw = shard_writer_open(path, &info, err, sizeof err);
        if (cw) shard_writer_add(cw, doc, 4, err, sizeof err);
        _exit(cw ? 0 : 1);
    }
    int status = -1;
    RT_ASSERT(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(!fs_exists(path) && fs_exists(tmp));
    expect_reject(path, "No such file");
    CHECK(!shard_open(tmp, err, sizeof err) && strstr(err, tmp));

    /* The next writer replaces the leftover. */
    w = shard_writer_open(path, &info, err, sizeof err);
    RT_ASSERT(w);
    CHECK(shard_writer_add(w, doc, 4, err, sizeof err) == 0);
    CHECK_MSG(shard_writer_close(w, err, sizeof err) == 0, "%s", err);
    CHECK(fs_exists(path) && !fs_exists(tmp));
    Shard *s = shard_open(path, err, sizeof err);
    CHECK_MSG(s && shard_info(s)->n_tokens == 4, "%s", err);
    shard_close(s);

    /* An invalid ShardInfo is refused before anything is created. */
    info.bos_id = 1000;
    CHECK(!shard_writer_open(path, &info, err, sizeof err) && strstr(err, "bos_id = 1000"));
    fs_remove_tree(dir);
    rt_free(tmp);
    rt_free(path);
    rt_free(dir);
}

/* Malformed files: each refused with the file's name and the problem. */
static void test_rejections(void) {
    char *dir = tu_temp_dir(), *path = rt_sprintf("%s/bad.h5", dir);
    Spec sp;

    /* The builder's defaults, a user block, fixed-length space-padded strings and unsigned
     * counts are all valid. */
    for (int variant = 0; variant < 3; variant++) {
        sp = spec_default();
        sp.userblock = variant == 1;
        sp.fixed_strings = variant == 2;
        sp.count_type = variant == 2 ? H5T_STD_U64LE : H5T_STD_I64LE;
        build_shard(path, &sp);
        Shard *s = shard_open(path, err, sizeof err);
        CHECK_MSG(s, "variant %d: %s", variant, err);
        if (!s) continue;
        int32_t buf[SPEC_TOKENS];
        CHECK(shard_read(s, 0, SPEC_TOKENS, buf, err, sizeof err) == 0);
        for (int i = 0; i < SPEC_TOKENS; i++) CHECK(buf[i] == spec_tokens[i]);
        CHECK(!strcmp(shard_info(s)->source, "built by test_shard"));
        shard_close(s);
    }

    /* Not a file, not HDF5, truncated. */
    unlink(path);
    expect_reject(path, "cannot open: No such file or directory");
    FILE *fp = fopen(path, "w");
    fputs("{\"not\": \"hdf5\"}\n", fp);
    fclose(fp);
    expect_reject(path, "not a readable HDF5 file");
    Corpus c = write_random(path, 1000, 200, 200, 9);
    corpus_free(&c);
    struct stat st;
    RT_ASSERT(stat(path, &st) == 0 && truncate(path, st.st_size / 2) == 0);
    expect_reject(path, "truncated");

    /* Missing parts. */
    sp = spec_default();
    sp.omit_tokens = 1;
    build_shard(path, &sp);
    expect_reject(path, "missing dataset /tokens");
    sp = spec_default();
    sp.omit_offsets = 1;
    build_shard(path, &sp);
    expect_reject(path, "missing dataset /doc_offsets");
    static const char *const attrs[] = {"format",   "format_version", "vocab_size",
                                        "bos_id",   "eos_id",         "tokenizer_sha256",
                                        "n_tokens", "n_docs",         "source"};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        sp = spec_default();
        sp.omit_attr = attrs[i];
        build_shard(path, &sp);
        char *what = rt_sprintf("missing root attribute %s", attrs[i]);
        expect_reject(path, what);
        rt_free(what);
    }

    /* Inconsistent offsets and counts. */
    const uint64_t from5[] = {5, 10, 10, 60, 100}, decreasing[] = {0, 10, 9, 60, 100},
                   short_end[] = {0, 10, 10, 60, 99};
    const struct {
        const uint64_t *offsets;
        int64_t n;
        const char *what;
    } bad_offsets[] = {{from5, 5, "/doc_offsets[0] = 5, must be 0"},
                       {decreasing, 5, "/doc_offsets decreases: [2] = 9 after [1] = 10"},
                       {short_end, 5, "/doc_offsets[4] = 99, must equal n_tokens = 100"},
                       {spec_offsets, 4, "/doc_offsets has 4 entries, n_docs = 4 needs 5"}};
    for (size_t i = 0; i < sizeof bad_offsets / sizeof bad_offsets[0]; i++) {
        sp = spec_default();
        sp.offsets = bad_offsets[i].offsets;
        sp.n_offsets = bad_offsets[i].n;
        build_shard(path, &sp);
        expect_reject(path, bad_offsets[i].what);
    }
    sp = spec_default();
    sp.n_tokens_attr = 101;
    build_shard(path, &sp);
    expect_reject(path, "/tokens has 100 entries, n_tokens = 101");

    /* Wrong attribute values and types. */
    sp = spec_default();
    sp.format = "rotor-tokenz";
    build_shard(path, &sp);
    expect_reject(path, "format is \"rotor-tokenz\", expected \"rotor-tokens\"");
    sp = spec_default();
    sp.version = 2;
    build_shard(path, &sp);
    expect_reject(path, "format_version is 2");
    sp = spec_default();
    sp.str_attr = "vocab_size";
    build_shard(path, &sp);
    expect_reject(path, "attribute vocab_size is a string, expected an integer");
    sp = spec_default();
    sp.eos = 1000;
    build_shard(path, &sp);
    expect_reject(path, "eos_id = 1000, must be -1 or below vocab_size 1000");

    /* /tokens layout and types. */
    sp = spec_default();
    sp.gzip = 1;
    build_shard(path, &sp);
    expect_reject(path, "/tokens is stored chunked with 1 filter(s)");
    const struct {
        hid_t type;
        const char *what;
    } bad_types[] = {
        {H5T_IEEE_F32LE, "/tokens has type float32, expected uint16"},
        {H5T_STD_U16BE, "/tokens has type uint16 big-endian, expected uint16"},
        {H5T_STD_I16LE, "/tokens has type int16, expected uint16"},
        {H5T_STD_U32LE,
         "/tokens has type uint32, expected uint16 (little-endian) for vocab_size 1000"}};
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++) {
        sp = spec_default();
        sp.tokens_type = bad_types[i].type;
        build_shard(path, &sp);
        expect_reject(path, bad_types[i].what);
    }

    /* An id >= vocab_size: found by reads that include it and by shard_scan. */
    uint16_t bad_ids[SPEC_TOKENS];
    sp = spec_default();
    memcpy(bad_ids, spec_tokens, sizeof bad_ids);
    bad_ids[57] = 5000;
    sp.tokens = bad_ids;
    build_shard(path, &sp);
    Shard *s = shard_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (s) {
        int32_t buf[SPEC_TOKENS];
        CHECK(shard_read(s, 0, 57, buf, err, sizeof err) == 0);
        CHECK(shard_read(s, 58, 42, buf, err, sizeof err) == 0);
        CHECK(shard_read(s, 50, 10, buf, err, sizeof err) == -1 && strstr(err, path) &&
              strstr(err, "token 57 is 5000, not below vocab_size 1000"));
        err[0] = 0;
        CHECK(shard_scan(s, NULL, err, sizeof err) == -1 && strstr(err, path) &&
              strstr(err, "token 57 is 5000, not below vocab_size 1000"));
        shard_close(s);
    }
    fs_remove_tree(dir);
    rt_free(path);
    rt_free(dir);
}

/* Opens path with shard_open and checks its first tokens. */
static void open_and_read(const char *path, const Corpus *c) {
    int32_t buf[10];
    Shard *s = shard_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    CHECK(s && shard_read(s, 0, 10, buf, err, sizeof err) == 0 &&
          !memcmp(buf, c->tokens, sizeof buf));
    shard_close(s);
}

/* A foreign exclusive lock (another process's writer), another HDF5 handle on the file in
 * this process, and HDF5_USE_FILE_LOCKING=FALSE. */
static void test_locking(void) {
    char *dir = tu_temp_dir(), *path = rt_sprintf("%s/shard.h5", dir);
    Corpus c = write_random(path, 1000, 20, 50, 3);
    const char *env = getenv("HDF5_USE_FILE_LOCKING");
    char *saved_env = env ? rt_strdup(env) : NULL;

    int fd = open(path, O_RDONLY);
    RT_ASSERT(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
    if (!env) { /* HDF5's default, locking, would fail */
        hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        CHECK_MSG(f < 0, "HDF5 with locking opened an exclusively locked file");
        if (f >= 0) H5Fclose(f);
    }
    open_and_read(path, &c);
    flock(fd, LOCK_UN);

    /* Open meanwhile with HDF5's default flags. */
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK(f >= 0);
    open_and_read(path, &c);
    if (f >= 0) H5Fclose(f);

    /* HDF5 reads the variable when it initialises: restart it after setting it. */
    setenv("HDF5_USE_FILE_LOCKING", "FALSE", 1);
    H5close();
    RT_ASSERT(flock(fd, LOCK_EX | LOCK_NB) == 0);
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    CHECK_MSG(f >= 0, "HDF5_USE_FILE_LOCKING=FALSE had no effect");
    open_and_read(path, &c);
    if (f >= 0) H5Fclose(f);
    open_and_read(path, &c);
    close(fd);

    if (saved_env)
        setenv("HDF5_USE_FILE_LOCKING", saved_env, 1);
    else
        unsetenv("HDF5_USE_FILE_LOCKING");
    H5close();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    rt_free(saved_env);
    corpus_free(&c);
    fs_remove_tree(dir);
    rt_free(path);
    rt_free(dir);
}

/* Token i of the sparse 64-bit shard (only the written ranges). */
static uint16_t big_token(uint64_t i) { return (uint16_t)((i * 7 + (i >> 32) * 13) % 50000); }

static void big_write(hid_t d, uint64_t start, uint64_t n) {
    uint16_t *v = rt_malloc(sizeof(uint16_t) * n);
    for (uint64_t i = 0; i < n; i++) v[i] = big_token(start + i);
    hsize_t off[1] = {start}, cnt[1] = {n};
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, cnt, NULL);
    RT_ASSERT(H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0);
    RT_ASSERT(H5Dwrite(d, H5T_NATIVE_UINT16, ms, fs, H5P_DEFAULT, v) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    rt_free(v);
}

/* Builds at path a shard of n 16-bit tokens whose /doc_offsets pass 2^32, as a sparse file:
 * /tokens is allocated but never filled, except for the ranges big_write writes. Returns 0
 * (with a message) where free space is short or the file system does not make it sparse. */
static int build_big_shard(const char *path, uint64_t n, const char *dir) {
    struct statvfs vfs;
    if (statvfs(dir, &vfs) || (uint64_t)vfs.f_bavail * vfs.f_frsize < 2 * n + ((uint64_t)1 << 30)) {
        printf("    skipped: less than 9 GiB free in %s for a file that may not be sparse\n", dir);
        return 0;
    }
    const uint64_t two32 = (uint64_t)1 << 32;
    hsize_t dims[1] = {n};
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
          sp = H5Screate_simple(1, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    RT_ASSERT(H5Pset_layout(dcpl, H5D_CONTIGUOUS) >= 0 &&
              H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) >= 0 &&
              H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0);
    hid_t d = H5Dcreate2(f, "tokens", H5T_STD_U16LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    RT_ASSERT(f >= 0 && d >= 0);
    big_write(d, 0, 300);
    big_write(d, two32 + 200, 800);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
    const uint64_t offsets[] = {0, 100, two32 + 500, n};
    dataset(f, "doc_offsets", H5T_STD_U64LE, H5T_NATIVE_UINT64, offsets, 4, 0);
    Spec spec = spec_default();
    spec.vocab = 50000;
    spec.n_tokens_attr = (int64_t)n;
    spec.n_docs_attr = 3;
    spec_attrs(f, &spec);
    RT_ASSERT(H5Fclose(f) >= 0);

    struct stat st;
    RT_ASSERT(stat(path, &st) == 0);
    CHECK((uint64_t)st.st_size >= 2 * n);
    if ((uint64_t)st.st_blocks * 512 > ((uint64_t)64 << 20)) {
        printf("    skipped: %s is not sparse (%lld MiB allocated)\n", dir,
               (long long)st.st_blocks / 2048);
        return 0;
    }
    return 1;
}

/* Offsets beyond 2^32 and an 8 GB /tokens, read back where it was written. */
static void test_offsets_beyond_4g(void) {
    const uint64_t two32 = (uint64_t)1 << 32, n = two32 + 1000;
    char *dir = tu_temp_dir(), *path = rt_sprintf("%s/big.h5", dir);
    Shard *s = NULL;
    if (build_big_shard(path, n, dir)) {
        s = shard_open(path, err, sizeof err);
        CHECK_MSG(s, "%s", err);
    }
    if (s) {
        CHECK(shard_info(s)->n_tokens == (int64_t)n && shard_info(s)->n_docs == 3);
        CHECK(shard_doc_offsets(s)[2] == two32 + 500 && shard_doc_offsets(s)[3] == n);
        int32_t buf[800];
        int bad = 0;
        CHECK(shard_read(s, (int64_t)(two32 + 500), 500, buf, err, sizeof err) == 0);
        for (uint64_t i = 0; i < 500; i++) bad += buf[i] != big_token(two32 + 500 + i);
        CHECK(shard_read(s, (int64_t)(two32 + 200), 800, buf, err, sizeof err) == 0);
        for (uint64_t i = 0; i < 800; i++) bad += buf[i] != big_token(two32 + 200 + i);
        CHECK(shard_read(s, 0, 300, buf, err, sizeof err) == 0);
        for (uint64_t i = 0; i < 300; i++) bad += buf[i] != big_token(i);
        CHECK_MSG(!bad, "%d tokens differ", bad);
        CHECK(shard_read(s, (int64_t)n - 1, 2, buf, err, sizeof err) == -1 &&
              strstr(err, "from position 4294968295"));
        shard_close(s);
    }
    fs_remove_tree(dir);
    rt_free(path);
    rt_free(dir);
}

/* Random windows of 4097 tokens read by several threads at once equal the documents. */
static void test_threads(void) {
    char *dir = tu_temp_dir(), *path = rt_sprintf("%s/shard.h5", dir);
    Corpus c = write_random(path, 30000, 4000, 500, 11);
    Shard *s = shard_open(path, err, sizeof err);
    CHECK_MSG(s, "%s", err);
    if (s) {
        enum { WINDOW = 4097, READS = 4000 };
        int bad = 0;
#pragma omp parallel num_threads(8) reduction(+ : bad)
        {
            int32_t *buf = rt_malloc(sizeof(int32_t) * WINDOW);
            char terr[256];
            Rng r;
            rng_init(&r, 5, (uint64_t)omp_get_thread_num());
#pragma omp for
            for (int i = 0; i < READS; i++) {
                int64_t start = (int64_t)rng_below(&r, (uint64_t)(c.n_tokens - WINDOW));
                bad += shard_read(s, start, WINDOW, buf, terr, sizeof terr) != 0 ||
                       memcmp(buf, c.tokens + start, sizeof(int32_t) * WINDOW);
            }
            rt_free(buf);
        }
        CHECK_MSG(!bad, "%d of %d concurrent reads differ", bad, (int)READS);
        shard_close(s);
    }
    corpus_free(&c);
    fs_remove_tree(dir);
    rt_free(path);
    rt_free(dir);
}

/* shard_read speed from one thread: windows of 4097 tokens (a 4096-token sequence plus
 * its shifted target), at random places in a page-cached shard. */
static void test_read_speed(void) {
    char *dir = tu_temp_dir(), *path = rt_sprintf("%s/shard.h5", dir);
    for (int wide = 0; wide < 2; wide++) {
        int64_t vocab = wide ? 100000 : 32000;
        Corpus c = write_random(path, vocab, 8000, 1000, 13);
        Shard *s = shard_open(path, err, sizeof err);
        CHECK_MSG(s, "%s", err);
        if (s) {
            enum { WINDOW = 4097, READS = 20000 };
            int32_t *buf = rt_malloc(sizeof(int32_t) * WINDOW);
            Rng r;
            rng_init(&r, 1, 0);
            int fails = 0;
            double t0 = rt_now();
            for (int i = 0; i < READS; i++)
                fails += shard_read(s, (int64_t)rng_below(&r, (uint64_t)(c.n_tokens - WINDOW)),
                                    WINDOW, buf, err, sizeof err);
            double dt = rt_now() - t0;
            CHECK(fails == 0);
            printf("    shard_read (%s tokens, %" PRId64
                   "-token shard): %.0f windows of %d/s, %.2f Gtokens/s\n",
                   wide ? "uint32" : "uint16", c.n_tokens, READS / dt, WINDOW,
                   READS * (double)WINDOW / dt / 1e9);
            rt_free(buf);
            shard_close(s);
        }
        corpus_free(&c);
    }
    fs_remove_tree(dir);
    rt_free(path);
    rt_free(dir);
}

static const TestCase tests[] = {
    {"shard_roundtrip_u16", test_roundtrip_u16},
    {"shard_roundtrip_u32", test_roundtrip_u32},
    {"shard_empty", test_empty},
    {"shard_atomic", test_atomic},
    {"shard_rejections", test_rejections},
    {"shard_locking", test_locking},
    {"shard_offsets_beyond_4g", test_offsets_beyond_4g},
    {"shard_threads", test_threads},
    {"shard_read_speed", test_read_speed},
};

int main(int argc, char **argv) {
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* expected HDF5 failures stay quiet */
    return th_run(tests, TH_COUNT(tests), argc, argv);
}
