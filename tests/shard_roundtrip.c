/* Test helper for tests/data_tools_test.sh: reads token shards with the plain HDF5 API
 * (independently of src/data/shard.c) and prints, per shard, one JSON line with what
 * docs/formats.md "Token shards" specifies: the root attributes, the /tokens datatype and
 * layout, checks of /doc_offsets, and every document decoded with the tokenizer.
 *
 *   shard_roundtrip MODEL SPLIT_SEED SHARD...
 *
 * Per document: "text" (the ids after BOS, and before EOS when "eos" is true, decoded),
 * "n" (stored tokens), "bos" (first id is BOS), "eos" (last id is EOS), and "xxh3", the hex
 * XXH3_64bits_withSeed(text, SPLIT_SEED) of the decoded text, from which the test
 * recomputes the train/validation split. Exit status 1 when a shard cannot be read. */
#include <hdf5.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "tokenizer.h"

static int failed;

static void fail(const char *path, const char *what) {
    fprintf(stderr, "shard_roundtrip: %s: %s\n", path, what);
    failed = 1;
}

/* A scalar root attribute as JSON: integer or string (NULL when absent or another type). */
static json_t *attribute(hid_t file, const char *name) {
    if (H5Aexists(file, name) <= 0) return NULL;
    hid_t a = H5Aopen(file, name, H5P_DEFAULT), t = H5Aget_type(a);
    json_t *v = NULL;
    if (H5Tget_class(t) == H5T_INTEGER) {
        long long x;
        if (H5Aread(a, H5T_NATIVE_LLONG, &x) >= 0) v = json_integer(x);
    } else if (H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) > 0) {
        char *s = NULL;
        hid_t mt = H5Tcopy(t);
        if (H5Aread(a, mt, &s) >= 0) v = json_string(s);
        H5free_memory(s);
        H5Tclose(mt);
    }
    H5Tclose(t);
    H5Aclose(a);
    return v;
}

/* Reads 1-D dataset `name` as native type mtype into a malloc'd array; *n its length;
 * *type_name describes the file type ("u16le", "u32le", "u64le", other). */
static void *dataset(hid_t file, const char *name, hid_t mtype, size_t size, hsize_t *n,
                     const char **type_name, int *contiguous) {
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0) return NULL;
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT), t = H5Dget_type(d), s = H5Dget_space(d);
    hid_t dcpl = H5Dget_create_plist(d);
    *contiguous = H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl) == 0;
    *type_name = H5Tequal(t, H5T_STD_U16LE) > 0   ? "u16le"
                 : H5Tequal(t, H5T_STD_U32LE) > 0 ? "u32le"
                 : H5Tequal(t, H5T_STD_U64LE) > 0 ? "u64le"
                                                  : "other";
    void *data = NULL;
    if (H5Sget_simple_extent_ndims(s) == 1) {
        H5Sget_simple_extent_dims(s, n, NULL);
        data = malloc((*n ? *n : 1) * size);
        if (*n && H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
            free(data);
            data = NULL;
        }
    }
    H5Pclose(dcpl);
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
    return data;
}

static void dump_shard(const Tokenizer *tok, uint64_t seed, const char *path) {
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_file_locking(fapl, 0, 1);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (file < 0) {
        fail(path, "cannot open as HDF5");
        return;
    }
    json_t *out = json_object(), *attrs = json_object();
    json_object_set_new(out, "path", json_string(path));
    static const char *const names[] = {"format",   "format_version", "vocab_size",
                                        "bos_id",   "eos_id",         "tokenizer_sha256",
                                        "n_tokens", "n_docs",         "source"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        json_t *v = attribute(file, names[k]);
        json_object_set_new(attrs, names[k], v ? v : json_null());
    }
    json_object_set_new(out, "attrs", attrs);

    hsize_t n_tokens = 0, n_offsets = 0;
    const char *ttype = "missing", *otype = "missing";
    int tcontig = 0, ocontig = 0;
    uint32_t *tokens = dataset(file, "tokens", H5T_NATIVE_UINT32, 4, &n_tokens, &ttype, &tcontig);
    uint64_t *off =
        dataset(file, "doc_offsets", H5T_NATIVE_UINT64, 8, &n_offsets, &otype, &ocontig);
    H5Fclose(file);
    json_object_set_new(out, "tokens_type", json_string(ttype));
    json_object_set_new(out, "tokens_contiguous", json_boolean(tcontig));
    json_object_set_new(out, "tokens_len", json_integer((json_int_t)n_tokens));
    json_object_set_new(out, "offsets_type", json_string(otype));
    json_object_set_new(out, "offsets_len", json_integer((json_int_t)n_offsets));
    if (!tokens || !off || !n_offsets) {
        fail(path, "cannot read /tokens or /doc_offsets");
    } else {
        /* offsets: 0 first, n_tokens last, strictly increasing (no empty documents) */
        int ok = off[0] == 0 && off[n_offsets - 1] == n_tokens;
        for (hsize_t i = 1; i < n_offsets; i++) ok = ok && off[i] > off[i - 1];
        json_object_set_new(out, "offsets_ok", json_boolean(ok));
        int bos = tok_bos_id(tok), eos = tok_eos_id(tok);
        json_t *docs = json_array();
        for (hsize_t d = 0; ok && d + 1 < n_offsets; d++) {
            const uint32_t *t = tokens + off[d];
            size_t n = (size_t)(off[d + 1] - off[d]);
            int has_bos = (int)t[0] == bos, has_eos = n > 1 && (int)t[n - 1] == eos;
            size_t body = n - (size_t)has_bos - (size_t)has_eos;
            int32_t *ids = malloc((body ? body : 1) * sizeof *ids);
            for (size_t i = 0; i < body; i++) ids[i] = (int32_t)t[i + (size_t)has_bos];
            char err[512];
            char *text = tok_decode(tok, ids, body, err, sizeof err);
            free(ids);
            if (!text) {
                fail(path, err);
                break;
            }
            size_t len = strlen(text);
            char hash[17];
            snprintf(hash, sizeof hash, "%016" PRIx64,
                     (uint64_t)XXH3_64bits_withSeed(text, len, seed));
            json_array_append_new(docs, json_pack("{s:s%, s:I, s:b, s:b, s:s}", "text", text, len,
                                                  "n", (json_int_t)n, "bos", has_bos, "eos",
                                                  has_eos, "xxh3", hash));
            free(text);
        }
        json_object_set_new(out, "docs", docs);
    }
    free(tokens);
    free(off);
    char *line = json_dumps(out, JSON_COMPACT | JSON_ENSURE_ASCII);
    puts(line);
    free(line);
    json_decref(out);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: shard_roundtrip MODEL SPLIT_SEED SHARD...\n");
        return 2;
    }
    char err[512];
    Tokenizer *tok = tok_load(argv[1], err, sizeof err);
    if (!tok) {
        fprintf(stderr, "shard_roundtrip: %s\n", err);
        return 1;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    uint64_t seed = strtoull(argv[2], NULL, 10);
    for (int k = 3; k < argc; k++) dump_shard(tok, seed, argv[k]);
    tok_free(tok);
    return failed;
}
