/* Decoding with a model (docs/models.md §decoding): a prefill pass over each row's prompt with the
 * chunked training kernels, then one token per row at a time from the decoding state —
 * each linear mixer's fp32 recurrent state, the attention mixers' KV caches with the
 * cumulative forget gate, short-conv tails, shift inputs, RoPE positions and Selective
 * RoPE's angle sums and angle-conv tails. The state is allocated once, at creation: it does
 * not grow with the tokens decoded (the KV caches hold max_len slots per row). */
#ifndef ROTOR_DECODE_H
#define ROTOR_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

typedef struct Decoder Decoder;

/* A decoder of `rows` sequences of at most max_len tokens each (prompt and generated). The
 * model must stay alive and unchanged while the decoder lives. */
Decoder *decoder_create(Model *m, int rows, int max_len);
void decoder_free(Decoder *d);

/* Backend bytes of the decoding state (every layer's states, tails and caches). */
size_t decoder_state_bytes(const Decoder *d);

/* Starts every row afresh with its prompt prompts[r][0, lens[r]), 1 <= lens[r] <= max_len,
 * in one forward pass; logits [rows, V] (host) are each row's next-token logits. */
void decoder_prefill(Decoder *d, const int32_t *const *prompts, const int *lens, float *logits);

/* Appends tokens[r] to every row r and writes the next-token logits [rows, V]. A row at
 * max_len tokens dies with an error naming the row and max_len. */
void decoder_step(Decoder *d, const int32_t *tokens, float *logits);

/* Tokens in row r so far (prompt and steps). */
int decoder_length(const Decoder *d, int row);

#endif
