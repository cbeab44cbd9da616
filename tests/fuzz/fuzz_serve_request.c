/* Fuzz target: a request body of `rotor serve` (eval/serve_request.c). The first byte picks
 * the endpoint (its value mod 3: /v1/completions, /tokenize, /detokenize) and whether the
 * server adds BOS (bit 3); the rest is the body. With the Mistral tokenizer of ../shared/data
 * (or $ROTOR_SHARED_DATA), a request is parsed or rejected with a 4xx and a message; a parsed
 * completion has 1 to max_rows rows of valid ids that fit the context. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"
#include "serve_request.h"

static const Tokenizer *mistral(void) {
    static int tried;
    static Tokenizer *tok;
    if (!tried) {
        tried = 1;
        const char *dir =
            getenv("ROTOR_SHARED_DATA") ? getenv("ROTOR_SHARED_DATA") : ROTOR_SHARED_DATA;
        char *path = rt_sprintf("%s/tokenizer/mistral-7b-v0.1.model", dir);
        struct stat sb;
        char err[1024];
        if (!stat(path, &sb) && !(tok = tok_load(path, err, sizeof err))) rt_die("%s", err);
        rt_free(path);
    }
    return tok;
}

static void check_error(const ServeError *e) {
    FUZZ_CHECK(e->status >= 400 && e->status < 500 && e->msg[0],
               "a rejection with status %d, message '%s'", e->status, e->msg);
    json_t *j = serve_error_json(e);
    FUZZ_CHECK(j, "the error '%s' does not encode as JSON", e->msg);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const Tokenizer *tok = mistral();
    if (size < 1 || !tok) return 0;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    ServeLimits lim = {64, tok_vocab_size(tok), (data[0] >> 3) & 1, 8, 32, 5};
    ServeError e = {0};
    int endpoint = data[0] % 3;
    if (endpoint == 0) {
        CompletionRequest req;
        if (serve_parse_completion(body, len, &lim, tok, &req, &e)) {
            check_error(&e);
            return 0;
        }
        FUZZ_CHECK(req.n_prompts >= 1 && req.n >= 1 && req.n_prompts * req.n <= lim.max_rows,
                   "%d prompts x n %d", req.n_prompts, req.n);
        FUZZ_CHECK(req.max_tokens >= 0 && req.max_tokens <= lim.max_tokens, "max_tokens %d",
                   req.max_tokens);
        FUZZ_CHECK(req.logprobs >= -1 && req.logprobs <= lim.max_logprobs, "logprobs %d",
                   req.logprobs);
        for (int i = 0; i < req.n_prompts; i++) {
            const ServePrompt *p = &req.prompts[i];
            FUZZ_CHECK(p->n >= 1 && p->n <= lim.context && p->text, "prompt %d: %d tokens", i,
                       p->n);
            FUZZ_CHECK(serve_scores_prompt(&req) || p->n < lim.context,
                       "prompt %d fills the context", i);
            for (int k = 0; k < p->n; k++)
                FUZZ_CHECK(p->ids[k] >= 0 && p->ids[k] < lim.vocab, "id %d", p->ids[k]);
        }
        serve_completion_free(&req);
        return 0;
    }
    json_t *res =
        endpoint == 1 ? serve_tokenize(body, len, tok, &e) : serve_detokenize(body, len, tok, &e);
    if (!res) {
        check_error(&e);
        return 0;
    }
    json_t *ids = json_object_get(res, "tokens");
    FUZZ_CHECK(endpoint == 2 ? json_is_string(json_object_get(res, "prompt")) : json_is_array(ids),
               "response shape");
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v)
        FUZZ_CHECK(json_integer_value(v) >= 0 && json_integer_value(v) < lim.vocab, "id");
    json_decref(res);
    return 0;
}
