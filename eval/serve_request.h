/* The requests of `rotor serve` (eval/serve_cmd.c), read apart from the HTTP layer so that a
 * fuzz target can drive them (tests/fuzz/fuzz_serve_request.c): the body of
 * POST /v1/completions in the shape OpenAI's completions API and lm-evaluation-harness's
 * `local-completions` model send, and the remote-tokenizer endpoints the harness calls
 * (/tokenize, /detokenize, /tokenizer_info). A rejected request gets the HTTP status and a
 * message naming the field, its value and the limit. */
#ifndef ROTOR_SERVE_REQUEST_H
#define ROTOR_SERVE_REQUEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "sampling.h"
#include "tokenizer.h"
#include "util/error.h"

/* What a request may ask for. */
typedef struct {
    int context;    /* the checkpoint's context in tokens, BOS included (ModelConfig.max_seq_len) */
    int vocab;      /* token ids are in [0, vocab) (the tokenizer's pieces) */
    int add_bos;    /* the server prepends BOS to a prompt that does not start with it */
    int max_rows;   /* prompts x n per request at most */
    int max_tokens; /* max_tokens at most */
    int max_logprobs; /* logprobs at most */
} ServeLimits;

typedef struct {
    int status;     /* HTTP status: 400, 401, 404, 405, 413, 500, 503 */
    char param[64]; /* the field at fault, "" when none */
    char msg[1024];
} ServeError;

/* Fills e and returns -1. */
int serve_fail(ServeError *e, int status, const char *param, const char *fmt, ...) RT_PRINTF(4, 5);
/* {"error": {"message", "type", "param", "code"}}, as OpenAI's API answers. */
json_t *serve_error_json(const ServeError *e);

typedef struct {
    int32_t *ids;  /* [BOS when added] + the prompt's tokens, with room for max_tokens more */
    int n;         /* tokens in ids */
    int added_bos; /* ids[0] is a BOS the server added: never returned */
    char *text;    /* the prompt as text: as sent, or its ids decoded */
} ServePrompt;

typedef struct {
    ServePrompt *prompts;
    int n_prompts;
    int n;          /* choices per prompt; choice i * n + j is prompt i's j-th */
    int max_tokens; /* >= 0 */
    int echo;
    int logprobs; /* top-N per position; -1: no logprobs */
    SamplingArgs sampling;
    char **stop; /* stop strings, n_stop of them */
    int n_stop;
    char *model; /* as sent, or NULL */
} CompletionRequest;

/* Parses and checks a POST /v1/completions body and tokenises its prompts. Returns 0, or -1
 * with e filled (nothing left allocated). */
int serve_parse_completion(const char *body, size_t len, const ServeLimits *lim,
                           const Tokenizer *tok, CompletionRequest *req, ServeError *e);
void serve_completion_free(CompletionRequest *req);
/* 1 when the request is answered from one scoring pass over its prompts (echo or logprobs
 * with max_tokens <= 1: the harness's loglikelihood requests), whose last position gives
 * the one token drawn; a prompt may then fill the whole context. 0: it is generated. */
int serve_scores_prompt(const CompletionRequest *req);

/* Text to ids as the server tokenises a string prompt: the tokenizer's BOS and EOS piece
 * strings in the text become their ids (as Hugging Face tokenizers treat special tokens),
 * the text between them is encoded by SentencePiece. *ids is malloc'd. */
int serve_encode_text(const Tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n,
                      ServeError *e);

/* The remote-tokenizer endpoints: the response JSON, or NULL with e filled. */
json_t *serve_tokenize(const char *body, size_t len, const Tokenizer *tok, ServeError *e);
json_t *serve_detokenize(const char *body, size_t len, const Tokenizer *tok, ServeError *e);
json_t *serve_tokenizer_info(const Tokenizer *tok, const ServeLimits *lim);

#endif
