/* Token shards (docs/formats.md "Token shards"): one HDF5 file per shard holding
 *   /tokens       1-D H5T_STD_U16LE (H5T_STD_U32LE when vocab_size > 65536), contiguous,
 *                 uncompressed: all documents back to back, each BOS + tokens (+ EOS)
 *   /doc_offsets  1-D H5T_STD_U64LE, n_docs + 1 entries: document starts, last = n_tokens
 *   attributes    format = "rotor-tokens", format_version = 1, vocab_size, bos_id, eos_id,
 *                 tokenizer_sha256, n_tokens, n_docs, source
 * Writers write PATH.tmp and rename it into place when complete, so a file named *.h5 is
 * never half written. Readers open read-only and work with HDF5_USE_FILE_LOCKING=FALSE. */
#ifndef ROTOR_SHARD_H
#define ROTOR_SHARD_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t vocab_size;
    int64_t bos_id, eos_id;
    char tokenizer_sha256[65];
    char source[1024]; /* free text: inputs and tool that made the shard */
    int64_t n_tokens, n_docs;
} ShardInfo;

/* ---- writing ---- */
typedef struct ShardWriter ShardWriter;
/* Starts PATH (written as PATH.tmp until shard_writer_close). Token width from vocab_size. */
ShardWriter *shard_writer_open(const char *path, const ShardInfo *info, char *err, size_t errlen);
/* Appends one document (its tokens, already BOS-prefixed by the caller). */
int shard_writer_add(ShardWriter *w, const int32_t *tokens, size_t n, char *err, size_t errlen);
int64_t shard_writer_tokens(const ShardWriter *w);
/* Writes datasets and attributes, closes, fsyncs, renames PATH.tmp -> PATH. Frees w. */
int shard_writer_close(ShardWriter *w, char *err, size_t errlen);
/* Deletes PATH.tmp and frees w (an interrupted or failed write). */
void shard_writer_abort(ShardWriter *w);

/* ---- reading ---- */
typedef struct Shard Shard;
/* Opens and validates a shard: attributes present and typed, format and version, dataset
 * types, shapes and layout (contiguous, uncompressed), n_tokens / n_docs equal to the
 * dataset sizes, offsets starting at 0, non-decreasing and ending at n_tokens, the file
 * long enough. Token ids are checked when read (shard_read) and fully by shard_scan.
 * The tokens are memory-mapped: reading needs no HDF5 call, so any thread may read.
 * NULL with a message naming the file and the problem. */
Shard *shard_open(const char *path, char *err, size_t errlen);
void shard_close(Shard *s);
const ShardInfo *shard_info(const Shard *s);
const char *shard_path(const Shard *s);
/* Tokens [start, start + n) as int32; -1 with a message naming the file and position if
 * the range is outside the shard or an id is >= vocab_size. */
int shard_read(const Shard *s, int64_t start, int64_t n, int32_t *out, char *err, size_t errlen);
/* Document offsets (n_docs + 1 entries, in memory after open). */
const uint64_t *shard_doc_offsets(const Shard *s);
/* Reads every token: checks ids < vocab_size and fills counts[vocab_size] if not NULL. */
int shard_scan(const Shard *s, int64_t *counts, char *err, size_t errlen);

#endif
