/* Shard sets (shard_set.h). */
#include <dirent.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/shard_set.h"
#include "util/error.h"
#include "util/sha256.h"

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The shard files of spec: a directory (its *.h5 files), or a glob / single file. */
static char **list_shards(const char *spec, int *count, char *err, size_t errlen) {
    struct stat sb;
    char **names = NULL;
    int n = 0;
    if (!stat(spec, &sb) && S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(spec);
        if (!d) {
            rt_error(err, errlen, spec, "cannot read the directory");
            return NULL;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t len = strlen(e->d_name);
            if (len < 4 || strcmp(e->d_name + len - 3, ".h5")) continue;
            names = rt_realloc(names, sizeof(char *) * (size_t)(n + 1));
            names[n++] = rt_sprintf("%s/%s", spec, e->d_name);
        }
        closedir(d);
    } else {
        glob_t g;
        if (glob(spec, 0, NULL, &g) == 0) {
            for (size_t i = 0; i < g.gl_pathc; i++) {
                names = rt_realloc(names, sizeof(char *) * (size_t)(n + 1));
                names[n++] = rt_strdup(g.gl_pathv[i]);
            }
            globfree(&g);
        }
    }
    if (!n) {
        rt_error(err, errlen, spec,
                 "no token shards (*.h5) found: give a directory of shards, a glob such as "
                 "'dir/*.h5', or synthetic:<task>");
        return NULL;
    }
    qsort(names, (size_t)n, sizeof(char *), compare_names);
    *count = n;
    return names;
}

void shardset_close(ShardSet *s) {
    for (int i = 0; i < s->n; i++) shard_close(s->shards[i]);
    rt_free(s->shards);
    rt_free(s->start);
    memset(s, 0, sizeof(*s));
}

int shardset_open(ShardSet *s, const char *spec, const DataConfig *dc, const ModelConfig *mc,
                  char *err, size_t errlen) {
    memset(s, 0, sizeof(*s));
    int n;
    char **names = list_shards(spec, &n, err, errlen);
    if (!names) return -1;
    s->shards = rt_calloc((size_t)n, sizeof(Shard *));
    s->start = rt_calloc((size_t)n + 1, sizeof(int64_t));
    int rc = 0;
    char tok_sha[65] = "";
    if (dc->tokenizer[0] && sha256_file(dc->tokenizer, tok_sha, err, errlen)) rc = -1;
    for (int i = 0; i < n && !rc; i++) {
        Shard *sh = shard_open(names[i], err, errlen);
        if (!sh) {
            rc = -1;
            break;
        }
        s->shards[s->n++] = sh;
        const ShardInfo *in = shard_info(sh), *first = shard_info(s->shards[0]);
        s->start[i + 1] = s->start[i] + in->n_tokens;
        if (in->vocab_size > mc->vocab_size)
            rc = rt_error(err, errlen, names[i],
                          "vocab_size %lld is larger than model.vocab_size = %d",
                          (long long)in->vocab_size, mc->vocab_size);
        else if (strcmp(in->tokenizer_sha256, first->tokenizer_sha256))
            rc = rt_error(err, errlen, names[i],
                          "made with tokenizer sha256 %s, but %s was made with %s",
                          in->tokenizer_sha256, names[0], first->tokenizer_sha256);
        else if (tok_sha[0] && strcmp(in->tokenizer_sha256, tok_sha))
            rc = rt_error(err, errlen, names[i],
                          "made with tokenizer sha256 %s, but data.tokenizer = %s has sha256 %s",
                          in->tokenizer_sha256, dc->tokenizer, tok_sha);
        else if (in->bos_id != mc->bos_id)
            rc = rt_error(err, errlen, names[i], "bos_id %lld differs from model.bos_id = %d",
                          (long long)in->bos_id, mc->bos_id);
    }
    for (int i = 0; i < n; i++) rt_free(names[i]);
    rt_free(names);
    if (rc) shardset_close(s);
    return rc;
}

int64_t shardset_tokens(const ShardSet *s) { return s->start[s->n]; }

int shardset_read(const ShardSet *s, int64_t pos, int64_t n, int32_t *out, uint8_t *doc, char *err,
                  size_t errlen) {
    int i = 0;
    while (i + 1 < s->n && s->start[i + 1] <= pos) i++;
    while (n > 0) {
        const Shard *sh = s->shards[i];
        int64_t local = pos - s->start[i], avail = shard_info(sh)->n_tokens - local;
        int64_t take = n < avail ? n : avail;
        if (take > 0) {
            if (shard_read(sh, local, take, out, err, errlen)) return -1;
            if (doc) {
                memset(doc, 0, (size_t)take);
                const uint64_t *off = shard_doc_offsets(sh);
                int64_t lo = 0, hi = shard_info(sh)->n_docs; /* first offset >= local */
                while (lo < hi) {
                    int64_t mid = (lo + hi) / 2;
                    if ((int64_t)off[mid] < local)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                for (int64_t k = lo; k < shard_info(sh)->n_docs && (int64_t)off[k] < local + take;
                     k++)
                    doc[off[k] - (uint64_t)local] = 1;
                doc += take;
            }
            out += take;
            pos += take;
            n -= take;
        }
        i++;
    }
    return 0;
}
