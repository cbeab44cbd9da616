#include "serve_request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_kind.h"
#include "util/utf8.h"

#define MAX_STOP 16

/* Replaces every byte of s that starts no valid UTF-8 character by '?': a message may quote a
 * client's bytes (jansson's parse errors do) or be cut inside a character, and JSON strings
 * must be UTF-8. */
static void make_utf8(char *s) {
    for (size_t n = strlen(s), i = 0; i < n;) {
        size_t k = utf8_char_len(s + i, n - i);
        if (!k) s[i] = '?';
        i += k ? k : 1;
    }
}

int serve_fail(ServeError *e, int status, const char *param, const char *fmt, ...) {
    e->status = status;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    make_utf8(e->param);
    make_utf8(e->msg);
    return -1;
}

json_t *serve_error_json(const ServeError *e) {
    const char *type = e->status == 401   ? "authentication_error"
                       : e->status == 404 ? "not_found_error"
                       : e->status >= 500 ? "server_error"
                                          : "invalid_request_error";
    return json_pack("{s:{s:s, s:s, s:o, s:i}}", "error", "message", e->msg, "type", type, "param",
                     e->param[0] ? json_string(e->param) : json_null(), "code", e->status);
}

/* The body as a JSON object. */
static json_t *load_object(const char *body, size_t len, ServeError *e) {
    json_error_t jerr;
    json_t *j = json_loadb(body, len, 0, &jerr);
    if (!j) {
        serve_fail(e, 400, NULL, "the body is not valid JSON: %s (line %d, column %d)", jerr.text,
                   jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(j)) {
        serve_fail(e, 400, NULL, "the body must be a JSON object, got %s", json_kind(j));
        json_decref(j);
        return NULL;
    }
    return j;
}

/* Optional fields: absent or null keeps *out. */
static int get_int(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out,
                   ServeError *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v))
        return serve_fail(e, 400, key, "%s must be an integer, got %s", key, json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return serve_fail(e, 400, key, "%s = %lld is out of range: it must be in [%lld, %lld]", key,
                          (long long)x, (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

static int get_number(const json_t *o, const char *key, double *out, ServeError *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_number(v))
        return serve_fail(e, 400, key, "%s must be a number, got %s", key, json_kind(v));
    *out = json_number_value(v);
    return 0;
}

static int get_bool(const json_t *o, const char *key, int *out, ServeError *e) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v))
        return serve_fail(e, 400, key, "%s must be true or false, got %s", key, json_kind(v));
    *out = json_is_true(v);
    return 0;
}

int serve_encode_text(const Tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n,
                      ServeError *e) {
    int special[2] = {tok_bos_id(tok), tok_eos_id(tok)};
    int32_t *out = NULL;
    size_t count = 0, cap = 0, pos = 0;
    while (pos <= len) {
        /* the next special piece in the text, or the end */
        size_t at = len, plen = 0;
        int sid = -1;
        for (int k = 0; k < 2; k++) {
            const char *piece = special[k] >= 0 ? tok_id_to_piece(tok, special[k]) : NULL;
            if (!piece || !*piece) continue;
            size_t pl = strlen(piece);
            for (size_t i = pos; i + pl <= at && i + pl <= len; i++)
                if (!memcmp(text + i, piece, pl)) {
                    if (i < at || pl > plen) at = i, plen = pl, sid = special[k];
                    break;
                }
        }
        if (at > pos) {
            int32_t *seg;
            size_t m;
            char err[512];
            if (tok_encode(tok, text + pos, at - pos, 0, 0, &seg, &m, err, sizeof err)) {
                free(out);
                return serve_fail(e, 400, "prompt", "cannot tokenise the text: %s", err);
            }
            if (count + m + 1 > cap)
                out = rt_realloc(out, sizeof(int32_t) * (cap = 2 * (count + m + 1)));
            memcpy(out + count, seg, sizeof(int32_t) * m);
            count += m;
            free(seg);
        }
        if (sid < 0) break;
        if (count + 1 > cap) out = rt_realloc(out, sizeof(int32_t) * (cap = 2 * (count + 1)));
        out[count++] = sid;
        pos = at + plen;
    }
    /* malloc'd for the caller's free() */
    *ids = malloc(sizeof(int32_t) * (count ? count : 1));
    if (count) memcpy(*ids, out, sizeof(int32_t) * count);
    rt_free(out);
    *n = count;
    return 0;
}

/* Token ids from a JSON array: a prompt's or /detokenize's. field is the request's field ("prompt",
 * "tokens"), where the array in it ("prompt[2]"). */
static int read_ids(const json_t *a, const char *field, const char *where, const ServeLimits *lim,
                    int32_t **ids, size_t *n, ServeError *e) {
    size_t count = json_array_size(a);
    int32_t *out = malloc(sizeof(int32_t) * (count ? count : 1));
    for (size_t i = 0; i < count; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v)) {
            free(out);
            return serve_fail(e, 400, field, "%s[%zu] must be a token id (an integer), got %s",
                              where, i, json_kind(v));
        }
        json_int_t id = json_integer_value(v);
        if (id < 0 || id >= lim->vocab) {
            free(out);
            return serve_fail(
                e, 400, field,
                "%s[%zu] = %lld is not a token id of this tokenizer: ids are in [0, %d)", where, i,
                (long long)id, lim->vocab);
        }
        out[i] = (int32_t)id;
    }
    *ids = out;
    *n = count;
    return 0;
}

int serve_scores_prompt(const CompletionRequest *r) {
    return r->max_tokens <= 1 && (r->echo || r->logprobs >= 0);
}

/* Tokenises prompt i (a string or an array of ids) into p, BOS first when the server adds it,
 * and checks it against the context. */
static int read_prompt(const json_t *v, int i, int listed, const CompletionRequest *r,
                       const ServeLimits *lim, const Tokenizer *tok, ServePrompt *p,
                       ServeError *e) {
    char where[32];
    snprintf(where, sizeof where, listed ? "prompt[%d]" : "prompt", i);
    int32_t *ids;
    size_t n;
    if (json_is_string(v)) {
        size_t len = json_string_length(v);
        if (strlen(json_string_value(v)) != len)
            return serve_fail(e, 400, "prompt", "%s contains a NUL character", where);
        if (serve_encode_text(tok, json_string_value(v), len, &ids, &n, e)) return -1;
        p->text = rt_strdup(json_string_value(v));
    } else {
        if (read_ids(v, "prompt", where, lim, &ids, &n, e)) return -1;
        char err[512];
        if (!(p->text = tok_decode(tok, ids, n, err, sizeof err))) {
            free(ids);
            return serve_fail(e, 400, "prompt", "%s: %s", where, err);
        }
    }
    int bos = tok_bos_id(tok);
    p->added_bos = lim->add_bos && bos >= 0 && (n == 0 || ids[0] != bos);
    p->n = (int)n + p->added_bos;
    p->ids = rt_malloc(sizeof(int32_t) * ((size_t)p->n + (size_t)r->max_tokens + 1));
    if (p->added_bos) p->ids[0] = bos;
    memcpy(p->ids + p->added_bos, ids, sizeof(int32_t) * n);
    free(ids);
    if (p->n == 0)
        return serve_fail(e, 400, "prompt",
                          "%s is empty and the server adds no BOS (--no-bos): nothing to continue",
                          where);
    /* a scoring pass takes the whole context; generation needs a free position after the prompt */
    int most = serve_scores_prompt(r) ? lim->context : lim->context - 1;
    if (p->n > most)
        return serve_fail(
            e, 400, "prompt",
            "%s is %d tokens%s; the checkpoint's context is %d tokens (max_position_embeddings), "
            "so a prompt may have at most %d%s",
            where, p->n, p->added_bos ? " with the BOS the server adds" : "", lim->context, most,
            most < lim->context ? " when tokens are generated" : "");
    return 0;
}

static int read_prompts(const json_t *v, CompletionRequest *r, const ServeLimits *lim,
                        const Tokenizer *tok, ServeError *e) {
    if (!v)
        return serve_fail(e, 400, "prompt",
                          "prompt is required: a string, a list of strings, a list of token ids "
                          "or a list of lists of token ids");
    int listed = json_is_array(v) && json_array_size(v) && !json_is_integer(json_array_get(v, 0));
    if (!json_is_string(v) && !json_is_array(v))
        return serve_fail(e, 400, "prompt",
                          "prompt must be a string, a list of strings, a list of token ids or a "
                          "list of lists of token "
                          "ids, got %s",
                          json_kind(v));
    if (json_is_array(v) && !json_array_size(v))
        return serve_fail(e, 400, "prompt", "prompt is an empty list");
    size_t count = listed ? json_array_size(v) : 1;
    if ((int64_t)count * r->n > lim->max_rows)
        return serve_fail(
            e, 400, "prompt",
            "%zu prompts x n = %d are %lld completions; this server takes at most %d per request "
            "(--max-prompts)",
            count, r->n, (long long)count * r->n, lim->max_rows);
    r->prompts = rt_calloc(count, sizeof(ServePrompt));
    for (size_t i = 0; i < count; i++) {
        const json_t *p = listed ? json_array_get(v, i) : v;
        if (listed) {
            const json_t *first = json_array_get(v, 0);
            if (json_is_string(first) ? !json_is_string(p) : !json_is_array(p))
                return serve_fail(e, 400, "prompt", "prompt[%zu] must be %s like prompt[0]", i,
                                  json_is_string(first) ? "a string" : "a list of token ids");
        }
        r->n_prompts = (int)i + 1;
        if (read_prompt(p, (int)i, listed, r, lim, tok, &r->prompts[i], e)) return -1;
    }
    return 0;
}

static int read_stop(const json_t *v, CompletionRequest *r, ServeError *e) {
    if (!v || json_is_null(v)) return 0;
    int one = json_is_string(v);
    if (!one && !json_is_array(v))
        return serve_fail(e, 400, "stop", "stop must be a string or a list of strings");
    size_t count = one ? 1 : json_array_size(v);
    if (count > MAX_STOP)
        return serve_fail(e, 400, "stop", "stop has %zu strings; at most %d are allowed", count,
                          MAX_STOP);
    r->stop = rt_calloc(count ? count : 1, sizeof(char *));
    for (size_t i = 0; i < count; i++) {
        const json_t *s = one ? v : json_array_get(v, i);
        if (!json_is_string(s)) return serve_fail(e, 400, "stop", "stop[%zu] must be a string", i);
        if (!json_string_length(s) || strlen(json_string_value(s)) != json_string_length(s))
            return serve_fail(e, 400, "stop", "stop[%zu] is empty or contains a NUL character", i);
        r->stop[r->n_stop++] = rt_strdup(json_string_value(s));
    }
    return 0;
}

int serve_parse_completion(const char *body, size_t len, const ServeLimits *lim,
                           const Tokenizer *tok, CompletionRequest *req, ServeError *e) {
    *req =
        (CompletionRequest){.n = 1, .max_tokens = 16, .logprobs = -1, .sampling = {1.0, 0, 1.0, 0}};
    json_t *o = load_object(body, len, e);
    if (!o) return -1;
    int64_t max_tokens = req->max_tokens, n = 1, logprobs = -1, top_k = 0, seed = 0;
    int stream = 0, rc = -1;
    json_t *lp = json_object_get(o, "logprobs"), *model = json_object_get(o, "model");
    if (get_int(o, "max_tokens", 0, lim->max_tokens, &max_tokens, e) ||
        get_int(o, "n", 1, lim->max_rows, &n, e) || get_bool(o, "echo", &req->echo, e) ||
        get_bool(o, "stream", &stream, e) ||
        get_number(o, "temperature", &req->sampling.temperature, e) ||
        get_number(o, "top_p", &req->sampling.top_p, e) ||
        get_int(o, "top_k", -1, INT32_MAX, &top_k, e) || get_int(o, "seed", 0, INT64_MAX, &seed, e))
        goto done;
    if (json_is_boolean(lp))
        logprobs = json_is_true(lp) ? 1 : -1; /* the chat API's form */
    else if (get_int(o, "logprobs", 0, lim->max_logprobs, &logprobs, e))
        goto done;
    if (model && !json_is_null(model) && !json_is_string(model)) {
        serve_fail(e, 400, "model", "model must be a string");
        goto done;
    }
    if (stream) {
        serve_fail(e, 400, "stream",
                   "stream = true is not supported: this server answers each request whole");
        goto done;
    }
    req->max_tokens = (int)max_tokens;
    req->n = (int)n;
    req->logprobs = (int)logprobs;
    req->sampling.top_k = top_k < 0 ? 0 : (int)top_k; /* -1: every token, as vLLM takes it */
    req->sampling.seed = (uint64_t)seed;
    req->model = json_is_string(model) ? rt_strdup(json_string_value(model)) : NULL;
    char msg[256];
    const SamplingNames fields = {"temperature", "top_k", "top_p"};
    const char *field = sampling_check(&req->sampling, &fields, msg, sizeof msg);
    if (field) {
        serve_fail(e, 400, field, "%s", msg);
        goto done;
    }
    if (read_stop(json_object_get(o, "stop"), req, e)) goto done;
    rc = read_prompts(json_object_get(o, "prompt"), req, lim, tok, e);
done:
    json_decref(o);
    if (rc) serve_completion_free(req);
    return rc;
}

void serve_completion_free(CompletionRequest *req) {
    for (int i = 0; i < req->n_prompts; i++) {
        rt_free(req->prompts[i].ids);
        free(req->prompts[i].text); /* strdup'd or tok_decode's: malloc either way */
    }
    rt_free(req->prompts);
    for (int i = 0; i < req->n_stop; i++) rt_free(req->stop[i]);
    rt_free(req->stop);
    rt_free(req->model);
    *req = (CompletionRequest){0};
}

static json_t *ids_json(const int32_t *ids, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
    return a;
}

json_t *serve_tokenize(const char *body, size_t len, const Tokenizer *tok, ServeError *e) {
    json_t *o = load_object(body, len, e);
    if (!o) return NULL;
    json_t *p = json_object_get(o, "prompt"), *res = NULL;
    int special = 1;
    int32_t *ids = NULL;
    size_t n = 0;
    if (!p || json_is_null(p))
        serve_fail(e, 400, "prompt", "prompt is required: the text to tokenise, a string");
    else if (!json_is_string(p))
        serve_fail(e, 400, "prompt", "prompt must be a string, got %s", json_kind(p));
    else if (strlen(json_string_value(p)) != json_string_length(p))
        serve_fail(e, 400, "prompt", "prompt contains a NUL character");
    else if (!get_bool(o, "add_special_tokens", &special, e) &&
             !serve_encode_text(tok, json_string_value(p), json_string_length(p), &ids, &n, e)) {
        json_t *a = ids_json(ids, n);
        if (special && tok_bos_id(tok) >= 0)
            json_array_insert_new(a, 0, json_integer(tok_bos_id(tok)));
        res = json_pack("{s:o, s:i}", "tokens", a, "count", (int)json_array_size(a));
    }
    free(ids);
    json_decref(o);
    return res;
}

json_t *serve_detokenize(const char *body, size_t len, const Tokenizer *tok, ServeError *e) {
    json_t *o = load_object(body, len, e);
    if (!o) return NULL;
    json_t *t = json_object_get(o, "tokens"), *res = NULL;
    ServeLimits lim = {.vocab = tok_vocab_size(tok)};
    int32_t *ids;
    size_t n;
    if (!t || json_is_null(t))
        serve_fail(e, 400, "tokens", "tokens is required: a list of token ids");
    else if (!json_is_array(t))
        serve_fail(e, 400, "tokens", "tokens must be a list of token ids, got %s", json_kind(t));
    else if (!read_ids(t, "tokens", "tokens", &lim, &ids, &n, e)) {
        char err[512];
        char *text = tok_decode(tok, ids, n, err, sizeof err);
        if (text)
            res = json_pack("{s:s}", "prompt", text);
        else
            serve_fail(e, 400, "tokens", "%s", err);
        free(text);
        free(ids);
    }
    json_decref(o);
    return res;
}

json_t *serve_tokenizer_info(const Tokenizer *tok, const ServeLimits *lim) {
    int bos = tok_bos_id(tok), eos = tok_eos_id(tok), pad = tok_pad_id(tok);
    json_t *piece[3];
    int ids[3] = {bos, eos, pad};
    for (int k = 0; k < 3; k++) {
        const char *s = ids[k] >= 0 ? tok_id_to_piece(tok, ids[k]) : NULL;
        piece[k] = s ? json_string(s) : json_null();
    }
    return json_pack("{s:o, s:o, s:o, s:i, s:i, s:b, s:s}", "bos_token", piece[0], "eos_token",
                     piece[1], "pad_token", piece[2], "model_max_length", lim->context,
                     "vocab_size", lim->vocab, "add_bos_token", lim->add_bos, "tokenizer_class",
                     "SentencePiece");
}
