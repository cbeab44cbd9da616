/* The choice of the next token from a row of logits, as Hugging Face's warpers apply the
 * settings, in this order (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper):
 *   1. temperature T: the logits are divided by T; T = 0 is greedy (the first argmax, and
 *      top-k / top-p do not matter);
 *   2. top-k: only the k highest scaled logits stay (ties with the k-th stay too);
 *   3. top-p (nucleus): of what remains, in order of decreasing probability (ties: lower id
 *      first), only the tokens whose preceding mass is below top_p stay, so the kept set is
 *      the smallest one whose mass reaches top_p; the most likely token always stays.
 * The token is then drawn from the softmax of the kept scaled logits.
 *
 * Random numbers: row r of a sampler draws from the stream rng_init(seed, r) (util/rng.h),
 * one uniform number per sampled token, and from nothing else. A row's tokens therefore
 * depend on its seed, its index and its own logits only: prompt i of a batch gets the
 * tokens it would get alone as row i, whatever the other rows are. A sampler can also give
 * each row its own settings and stream (sampler_create_rows): the rows of several requests
 * then draw in one batch what each request draws alone. */
#ifndef ROTOR_SAMPLING_H
#define ROTOR_SAMPLING_H

#include <stdint.h>

typedef struct {
    double temperature; /* >= 0; 0 is greedy */
    int top_k;          /* >= 0; 0 keeps every token */
    double top_p;       /* in (0, 1]; 1 keeps every token */
    uint64_t seed;      /* names the random streams */
} SamplingArgs;

/* What a caller calls the settings in its messages: its options ("--top-p") or its fields
 * ("top_p"). */
typedef struct {
    const char *temperature, *top_k, *top_p;
} SamplingNames;

/* NULL when the settings are valid, else the name of the one at fault, with msg naming it and its
 * value ("top_p = 1.5: must be in (0, 1] (1 keeps every token)"). */
const char *sampling_check(const SamplingArgs *a, const SamplingNames *names, char *msg,
                           int msglen);

typedef struct Sampler Sampler;

/* A sampler of `rows` independent rows over the first `vocab` logits of a row (a model's
 * vocabulary may be padded past its tokenizer's). The settings must pass sampling_check. */
Sampler *sampler_create(const SamplingArgs *a, int vocab, int rows);
/* Row r with its own settings args[r] and stream rng_init(args[r].seed, stream[r]). */
Sampler *sampler_create_rows(const SamplingArgs *args, const uint64_t *stream, int vocab, int rows);
void sampler_free(Sampler *s);

/* sampler_next's answer to logits that are not all finite: they define no distribution (a
 * model whose weights are damaged or whose activations overflow). */
#define SAMPLER_NONFINITE (-1)

/* The next token of row r from its logits [vocab], or SAMPLER_NONFINITE when one of them is
 * NaN or infinite; advances the row's random stream (greedy draws nothing). */
int sampler_next(Sampler *s, int row, const float *logits);

#endif
