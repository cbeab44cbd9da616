/* A flat file of little-endian unsigned token ids (2 or 4 bytes each), memory-mapped.
 * Window i covers tokens [i T, i T + T]; windows overlap by one token so every token but
 * the first is a label exactly once per epoch. The train split visits its windows in a
 * fresh seeded permutation every epoch; the validation split reads its windows in order. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/datasource.h"
#include "util/error.h"
#include "util/rng.h"

typedef struct {
    DataSource base;
    const unsigned char *map;
    size_t map_bytes;
    int token_bytes, T;
    int64_t first, count; /* windows of this split: [first, first + count) */
    int64_t *perm;        /* train: permutation of the current epoch */
    uint64_t seed;
    DataSplit split;
    int64_t epoch, index; /* position: next window is perm[index] of epoch */
} TokenFile;

static inline int32_t token_at(const TokenFile *f, int64_t i) {
    const unsigned char *p = f->map + (size_t)i * f->token_bytes;
    uint32_t v = p[0] | (uint32_t)p[1] << 8;
    if (f->token_bytes == 4) v |= (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return (int32_t)v;
}

static void shuffle_epoch(TokenFile *f) {
    for (int64_t i = 0; i < f->count; i++) f->perm[i] = i;
    if (f->split != SPLIT_TRAIN) return;
    Rng r;
    rng_init(&r, f->seed, 0x5EED0000ull + (uint64_t)f->epoch);
    for (int64_t i = f->count - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1), t = f->perm[i];
        f->perm[i] = f->perm[j];
        f->perm[j] = t;
    }
}

static void tf_next(DataSource *ds, int32_t *out, int B) {
    TokenFile *f = (TokenFile *)ds;
    for (int b = 0; b < B; b++) {
        if (f->index == f->count) {
            f->epoch++;
            f->index = 0;
            shuffle_epoch(f);
        }
        int64_t w = f->first + f->perm[f->index++];
        for (int t = 0; t <= f->T; t++) out[(size_t)b * (f->T + 1) + t] = token_at(f, w * f->T + t);
    }
}

static json_t *tf_get_state(const DataSource *ds) {
    const TokenFile *f = (const TokenFile *)ds;
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "kind", "token_file", "file", ds->desc,
                     "windows", (json_int_t)f->count, "seq_len", (json_int_t)f->T, "epoch",
                     (json_int_t)f->epoch, "index", (json_int_t)f->index);
}

static int tf_set_state(DataSource *ds, const json_t *st, char *err, size_t errlen) {
    TokenFile *f = (TokenFile *)ds;
    json_int_t windows, seq_len, epoch, index;
    const char *kind;
    if (json_unpack((json_t *)st, "{s:s, s:I, s:I, s:I, s:I}", "kind", &kind, "windows", &windows,
                    "seq_len", &seq_len, "epoch", &epoch, "index", &index) ||
        strcmp(kind, "token_file")) {
        snprintf(err, errlen, "%s: the saved data position is not a token-file position", ds->desc);
        return -1;
    }
    if (windows != f->count || seq_len != f->T || index < 0 || index > windows || epoch < 0) {
        snprintf(err, errlen,
                 "%s: the saved data position (%lld windows of %lld tokens) does not match this "
                 "file (%lld windows of %d tokens)",
                 ds->desc, (long long)windows, (long long)seq_len + 1, (long long)f->count, f->T + 1);
        return -1;
    }
    f->epoch = epoch;
    f->index = index;
    shuffle_epoch(f);
    return 0;
}

static void tf_destroy(DataSource *ds) {
    TokenFile *f = (TokenFile *)ds;
    if (f->map) munmap((void *)f->map, f->map_bytes);
    rt_free(f->perm);
    rt_free(f);
}

DataSource *token_file_open(const char *path, const DataConfig *dc, const ModelConfig *mc, int T,
                            uint64_t seed, DataSplit split, int64_t holdout, char *err,
                            size_t errlen) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open token file %s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) || sb.st_size == 0 || sb.st_size % dc->token_bytes) {
        snprintf(err, errlen, "%s: size %lld is not a positive multiple of data.token_bytes = %d",
                 path, (long long)sb.st_size, dc->token_bytes);
        close(fd);
        return NULL;
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "cannot map %s: %s", path, strerror(errno));
        return NULL;
    }
    TokenFile *f = rt_calloc(1, sizeof(TokenFile));
    snprintf(f->base.desc, sizeof f->base.desc, "%s", path);
    f->map = map;
    f->map_bytes = (size_t)sb.st_size;
    f->token_bytes = dc->token_bytes;
    f->T = T;
    f->seed = seed;
    f->split = split;
    int64_t ntok = sb.st_size / dc->token_bytes;
    for (int64_t i = 0; i < ntok; i++)
        if (token_at(f, i) >= mc->vocab_size) {
            snprintf(err, errlen, "%s: token %lld has id %d, not below model.vocab_size = %d", path,
                     (long long)i, token_at(f, i), mc->vocab_size);
            tf_destroy(&f->base);
            return NULL;
        }
    int64_t nwin = (ntok - 1) / T;
    if (holdout < 0) holdout = 0;
    if (nwin - holdout < 1) {
        snprintf(err, errlen,
                 "%s holds %lld tokens: too few for windows of %d tokens (train.seq_len + 1)%s",
                 path, (long long)ntok, T + 1, holdout ? " plus the held-out validation windows" : "");
        tf_destroy(&f->base);
        return NULL;
    }
    f->first = split == SPLIT_TRAIN ? 0 : nwin - holdout;
    f->count = split == SPLIT_TRAIN ? nwin - holdout : (holdout ? holdout : nwin);
    if (split == SPLIT_VAL && !holdout) f->first = 0;
    f->perm = rt_malloc(sizeof(int64_t) * (size_t)f->count);
    shuffle_epoch(f);
    f->base.vocab_size = mc->vocab_size;
    f->base.next = tf_next;
    f->base.get_state = tf_get_state;
    f->base.set_state = tf_set_state;
    f->base.destroy = tf_destroy;
    return &f->base;
}
