/* Fuzz target: a task document (one JSON line of a task file, docs/evaluation.md part A). The first
 * byte picks the task, the rest is the line. Every choice's (context, continuation) is
 * built, or the document is rejected with a message; built requests are tokenised
 * whole-minus-prefix with the Mistral tokenizer when ../shared/data is there (the context
 * tokens and the continuation tokens together give back at most the whole request). The
 * HellaSwag preprocessing and Python's capitalize run on every string of the document. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval.h"
#include "fuzz_target.h"
#include "util/error.h"

static const Tokenizer *mistral(void) {
    static int tried;
    static Tokenizer *tok;
    if (!tried) {
        tried = 1;
        const char *path = ROTOR_SHARED_DATA "/tokenizer/mistral-7b-v0.1.model";
        struct stat sb;
        char err[1024];
        if (!stat(path, &sb) && !(tok = tok_load(path, err, sizeof err))) rt_die("%s", err);
    }
    return tok;
}

static void string_functions(const json_t *v) {
    if (json_is_string(v)) {
        free(eval_hellaswag_preprocess(json_string_value(v)));
        free(eval_capitalize(json_string_value(v)));
    } else if (json_is_object(v)) {
        const char *key;
        json_t *x;
        json_object_foreach((json_t *)v, key, x) string_functions(x);
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) string_functions(x);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    TaskKind kind = (TaskKind)(data[0] % (TASK_ARC_CHALLENGE + 1));
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)data + 1, size - 1, 0, &jerr);
    if (!doc) return 0;
    string_functions(doc);
    char err[1024];
    for (int choice = 0;; choice++) {
        char *context, *continuation;
        if (eval_build_strings(kind, doc, choice, &context, &continuation, err, sizeof err)) {
            FUZZ_CHECK(err[0], "a rejected document without a message");
            break;
        }
        const Tokenizer *tok = mistral();
        if (tok) {
            int32_t *tokens = NULL;
            int n_tokens = 0, n_cont = 0;
            if (!eval_encode_request(tok, 1, &context, &continuation, &tokens, &n_tokens, &n_cont,
                                     err, sizeof err)) {
                FUZZ_CHECK(n_cont >= 0 && n_cont < n_tokens, "n_cont %d of %d tokens", n_cont,
                           n_tokens);
                for (int i = 0; i < n_tokens; i++)
                    FUZZ_CHECK(tokens[i] >= 0 && tokens[i] < tok_vocab_size(tok), "token id %d",
                               tokens[i]);
                free(tokens);
            }
        }
        free(context);
        free(continuation);
    }
    json_decref(doc);
    return 0;
}
