/* Text generation with a model: every prompt is a row of one Decoder (model/decode.h),
 * prefilled together, then decoded one token per row per step with a Sampler (sampling.h)
 * until each row has drawn EOS or reached its length limit. All rows step together: a row
 * that has ended keeps feeding its last token and its output is ignored, so a row's tokens
 * do not depend on the other rows (up to the backend's arithmetic). */
#ifndef ROTOR_GENERATE_H
#define ROTOR_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "sampling.h"

typedef struct {
    int max_new; /* tokens generated per row at most (>= 1) */
    int context; /* prompt + completion of a row never exceed it (> every prompt length) */
    int eos_id;  /* drawing it ends the row (it is not part of the completion); -1: none */
    int vocab;   /* tokens are drawn among the first `vocab` logits (the tokenizer's pieces) */
    SamplingArgs sampling; /* row r draws from the random stream (seed, r) */
    /* Or, when not NULL, row r's own settings and stream (row_sampling[r].seed,
     * row_stream[r]): the rows of several requests in one batch (sampling.h). */
    const SamplingArgs *row_sampling;
    const uint64_t *row_stream;
} GenerateArgs;

typedef struct {
    int n;         /* completion tokens */
    int eos;       /* 1: EOS ended the row; 0: max_new, the context or non-finite logits did */
    int nonfinite; /* 1: the logits after the n tokens were not finite (SAMPLER_NONFINITE) */
} GenerateRow;

typedef struct {
    double prefill_s, decode_s; /* the prefill pass; everything after it */
    int steps;                  /* decoder steps (every row stepped together) */
    int max_len;                /* the decoder's tokens per row */
    size_t state_bytes;         /* the decoder's state (decoder_state_bytes) */
} GenerateStats;

/* Called after each token a row generates (EOS excluded): seq holds the prompt and the
 * completion so far, n_prompt + n tokens. */
typedef void (*GenerateTokenFn)(void *ctx, int row, const int32_t *seq, int n_prompt, int n);

/* Generates a completion for each of `rows` prompts. seqs[r] holds the prompt in
 * [0, lens[r]), 1 <= lens[r] < a->context, with room for max_new more tokens, and receives
 * the completion after it; out[r] says how long it is and what ended it. on_token may be
 * NULL. */
void generate(Model *m, const GenerateArgs *a, int32_t *const *seqs, const int *lens, int rows,
              GenerateRow *out, GenerateStats *st, GenerateTokenFn on_token, void *ctx);

#endif
