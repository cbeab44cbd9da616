/* A shard set: the shards of a directory (its *.h5 files) or a glob, in name order, read as
 * one token stream (src/data/shard.h). */
#ifndef ROTOR_SHARD_SET_H
#define ROTOR_SHARD_SET_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "data/shard.h"

typedef struct {
    Shard **shards;
    int64_t *start; /* [n + 1] stream offset of each shard's first token */
    int n;
} ShardSet;

/* Opens the shards of spec. They must carry ids below model.vocab_size, one tokenizer (and
 * data.tokenizer's sha256 when given) and model.bos_id. Returns -1 with a message naming the
 * file on error. */
int shardset_open(ShardSet *s, const char *spec, const DataConfig *dc, const ModelConfig *mc,
                  char *err, size_t errlen);
void shardset_close(ShardSet *s);
int64_t shardset_tokens(const ShardSet *s);
/* Stream tokens [pos, pos + n) and, if doc is not NULL, their document-start flags. */
int shardset_read(const ShardSet *s, int64_t pos, int64_t n, int32_t *out, uint8_t *doc, char *err,
                  size_t errlen);

#endif
