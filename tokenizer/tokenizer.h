/* C API over SentencePiece (Debian's libsentencepiece). No C++ types or exceptions cross
 * this interface. A loaded Tokenizer is immutable: encode/decode may be called from several
 * threads at once. */
#ifndef ROTOR_TOKENIZER_H
#define ROTOR_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct Tokenizer Tokenizer;

/* Loads a SentencePiece model file. NULL with a message naming the file on error. */
Tokenizer *tok_load(const char *model_path, char *err, size_t errlen);
void tok_free(Tokenizer *t);

int tok_vocab_size(const Tokenizer *t);
int tok_bos_id(const Tokenizer *t); /* -1 when the model has none */
int tok_eos_id(const Tokenizer *t);
int tok_unk_id(const Tokenizer *t);
int tok_pad_id(const Tokenizer *t);
/* Lower-case hex sha256 of the model file's bytes (64 characters). */
const char *tok_sha256(const Tokenizer *t);
const char *tok_path(const Tokenizer *t);

/* Encodes len bytes of UTF-8 text (not NUL-terminated necessarily) into *ids (malloc'd,
 * caller frees) and *n; BOS first / EOS last when asked. Returns 0, or -1 with a message. */
int tok_encode(const Tokenizer *t, const char *text, size_t len, int add_bos, int add_eos,
               int32_t **ids, size_t *n, char *err, size_t errlen);
/* Decodes ids to UTF-8 (malloc'd, NUL-terminated); ids out of range are an error (NULL). */
char *tok_decode(const Tokenizer *t, const int32_t *ids, size_t n, char *err, size_t errlen);
/* tok_decode, and where each id's text begins in it: char_begin[i], in Unicode characters
 * (SentencePiece's spans; the byte pieces of one character all begin where it does); NULL
 * char_begin: tok_decode. */
char *tok_decode_spans(const Tokenizer *t, const int32_t *ids, size_t n, int64_t *char_begin, char *err,
                       size_t errlen);
/* The piece string of an id (valid while t lives), NULL when out of range; the id of a
 * piece, or -1 when absent. */
const char *tok_id_to_piece(const Tokenizer *t, int id);
int tok_piece_to_id(const Tokenizer *t, const char *piece);

/* Trains a new model from text files (one sentence per line, as spm_train) into
 * PREFIX.model and PREFIX.vocab. model_type: "bpe" or "unigram". Byte fallback on, bos 1,
 * eos 2, unk 0 (the Mistral conventions). Returns 0, or -1 with a message. */
int tok_train(const char *const *inputs, int n_inputs, const char *prefix, int vocab_size,
              const char *model_type, int threads, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
