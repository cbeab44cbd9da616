#include "serve_complete.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd_common.h"
#include "device/host_copy.h"
#include "generate.h"

/* One row of a scoring pass over tokens seq[0, len): slot q < len - first holds token
 * first + q (first >= 1); with next, one more slot holds the distribution after the last
 * token, and its logits are kept to draw from. */
typedef struct {
    const int32_t *seq;
    int len, first, next;
    int slots;          /* len - first + next */
    double *lp;         /* [slots] log p(token), the next slot's unused */
    double *lse;        /* [slots] log-sum-exp of the slot's logits: log p(t) = logit(t) - lse */
    int32_t *top_id;    /* [slots * topn] most likely ids first */
    double *top_lp;     /* [slots * topn] */
    float *next_logits; /* [outputs] with next */
} ScoreRow;

static void score_row_init(ScoreRow *s, const int32_t *seq, int len, int first, int next, int topn,
                           int outputs) {
    *s = (ScoreRow){seq, len, first < 1 ? 1 : first, next, 0, NULL, NULL, NULL, NULL, NULL};
    s->slots = (len - s->first > 0 ? len - s->first : 0) + next;
    size_t k = (size_t)(s->slots ? s->slots : 1);
    s->lp = rt_calloc(k, sizeof(double));
    s->lse = rt_calloc(k, sizeof(double));
    s->top_id = rt_calloc(k * (size_t)(topn ? topn : 1), sizeof(int32_t));
    s->top_lp = rt_calloc(k * (size_t)(topn ? topn : 1), sizeof(double));
    if (next) s->next_logits = rt_malloc(sizeof(float) * (size_t)outputs);
}

static void score_row_free(ScoreRow *s) {
    rt_free(s->lp);
    rt_free(s->lse);
    rt_free(s->top_id);
    rt_free(s->top_lp);
    rt_free(s->next_logits);
}

/* 1 when every scored slot's logits were finite (their log-sum-exp is). */
static int score_row_finite(const ScoreRow *s) {
    for (int q = 0; q < s->slots; q++)
        if (!isfinite(s->lse[q])) return 0;
    return 1;
}

static int input_len(const ScoreRow *s) { return s->slots ? s->len - 1 + s->next : 0; }

static int by_input_len_desc(const void *a, const void *b) {
    const ScoreRow *x = *(ScoreRow *const *)a, *y = *(ScoreRow *const *)b;
    int lx = input_len(x), ly = input_len(y);
    return lx != ly ? (lx < ly ? 1 : -1) : (x < y ? -1 : x > y);
}

/* Scores the rows in forward passes of sm->pass_tokens tokens at most (more when one row is
 * longer), longest rows first (as `rotor eval` does: little padding, which has no label). The
 * backend reduces each labeled position's logits to what the response holds (model_logit_scores);
 * only a next slot's logits come to the host whole. */
static void score_rows(const ServeModel *sm, ScoreRow *row_list, int n, int topn) {
    Model *m = sm->m;
    const int vocab = sm->lim->vocab, outputs = model_outputs(model_config(m)), k = topn ? topn : 1;
    const size_t act = model_backend(m)->act_size;
    RT_ASSERT(k <= vocab);
    ScoreRow **rows = rt_malloc(sizeof(ScoreRow *) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) rows[i] = &row_list[i];
    qsort(rows, (size_t)n, sizeof(ScoreRow *), by_input_len_desc);
    void *raw = rt_malloc(act * (size_t)outputs);
    for (int i = 0; i < n;) {
        int T = 0, B = 0;
        while (i + B < n) {
            int L = input_len(rows[i + B]), t = L > T ? L : T;
            if (B && (int64_t)t * (B + 1) > sm->pass_tokens) break;
            T = t;
            B++;
        }
        if (T == 0) {
            i += B;
            continue;
        }
        int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)B * T),
                *lab = rt_malloc(sizeof(int32_t) * (size_t)B * T);
        int64_t M = 0;
        for (int b = 0; b < B; b++) {
            const ScoreRow *s = rows[i + b];
            int L = input_len(s);
            for (int p = 0; p < T; p++) {
                int in = p < L, labeled = in && p >= s->first - 1;
                tok[(size_t)b * T + p] = in ? s->seq[p] : 0;
                lab[(size_t)b * T + p] = !labeled ? -100 : p + 1 < s->len ? s->seq[p + 1] : 0;
                M += labeled;
            }
        }
        Batch bt = {B, T, tok, lab, NULL};
        RT_ASSERT(model_forward_logits(m, &bt) == M);
        LogitScores sc = {rt_malloc(sizeof(double) * (size_t)M),
                          rt_malloc(sizeof(double) * (size_t)M),
                          rt_malloc(sizeof(int32_t) * (size_t)(M * k)),
                          rt_malloc(sizeof(double) * (size_t)(M * k))};
        model_logit_scores(m, vocab, k, &sc);
        /* the labeled positions in order: row by row, each row's slots in order */
        int64_t q = 0;
        for (int b = 0; b < B; b++) {
            ScoreRow *s = rows[i + b];
            size_t slots = (size_t)s->slots;
            memcpy(s->lse, sc.lse + q, sizeof(double) * slots);
            memcpy(s->lp, sc.label_lp + q, sizeof(double) * slots);
            memcpy(s->top_id, sc.top_id + q * k, sizeof(int32_t) * slots * (size_t)k);
            memcpy(s->top_lp, sc.top_lp + q * k, sizeof(double) * slots * (size_t)k);
            if (s->next) {
                model_get_logit_row(m, q + s->slots - 1, raw);
                act_to_f32(act, s->next_logits, raw, outputs);
            }
            q += s->slots;
        }
        RT_ASSERT(q == M);
        rt_free(sc.lse);
        rt_free(sc.label_lp);
        rt_free(sc.top_id);
        rt_free(sc.top_lp);
        rt_free(tok);
        rt_free(lab);
        i += B;
    }
    rt_free(raw);
    rt_free(rows);
}

/* ---- the response ---- */

/* A token as text in logprobs: its piece with SentencePiece's U+2581 as a space; a byte piece
 * <0xNN> as its byte when ASCII, else "bytes:\xNN" (as OpenAI writes a partial character). */
static json_t *token_string(const Tokenizer *tok, int id) {
    const char *piece = tok_id_to_piece(tok, id);
    unsigned byte;
    char buf[32];
    if (!piece) return json_string("");
    if (strlen(piece) == 6 && sscanf(piece, "<0x%2X>", &byte) == 1) {
        if (byte < 0x80)
            snprintf(buf, sizeof buf, "%c", (char)byte);
        else
            snprintf(buf, sizeof buf, "bytes:\\x%02x", byte);
        return json_string(buf);
    }
    size_t n = strlen(piece);
    char *s = rt_malloc(n + 1), *w = s;
    for (const char *p = piece; *p;)
        if (!strncmp(p, "\xE2\x96\x81", 3)) {
            *w++ = ' ';
            p += 3;
        } else
            *w++ = *p++;
    *w = 0;
    json_t *j = json_string(s);
    rt_free(s);
    return j ? j : json_string("");
}

/* One logprobs entry: a token, its log p (NAN: null) and its slot's top list (NULL: null). */
typedef struct {
    int id;
    double lp;
    const int32_t *top_id;
    const double *top_lp;
} Entry;

static void entries_add(Entry *e, int *n, const ScoreRow *s, int q, int id, int topn) {
    e[(*n)++] = (Entry){id, q < s->slots - s->next ? s->lp[q] : 0, s->top_id + (size_t)q * topn,
                        s->top_lp + (size_t)q * topn};
}

/* The entries' text_offset: where each token's text begins in the choice's text, in
 * characters (OpenAI's text_offset; vLLM's too). The returned tokens follow the prompt's
 * n_before tokens (without echo), which are decoded with them so that the text of each starts
 * where it does after its prompt; their text is then left out of the offsets. */
static int64_t *text_offsets(const Tokenizer *tok, const int32_t *before, int n_before,
                             const Entry *e, int n) {
    int32_t *ids = rt_malloc(sizeof(int32_t) * (size_t)(n_before + n + 1));
    int64_t *at = rt_malloc(sizeof(int64_t) * (size_t)(n_before + n + 1));
    memcpy(ids, before, sizeof(int32_t) * (size_t)n_before);
    for (int i = 0; i < n; i++) ids[n_before + i] = e[i].id;
    char err[512];
    char *text = tok_decode_spans(tok, ids, (size_t)(n_before + n), at, err, sizeof err);
    if (!text) rt_die("%s", err); /* the ids were checked against the vocabulary */
    int64_t base = n_before ? (n ? at[n_before] : 0) : 0;
    int64_t *off = rt_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) off[i] = at[n_before + i] - base;
    free(text);
    rt_free(at);
    rt_free(ids);
    return off;
}

static json_t *logprobs_json(const Tokenizer *tok, const Entry *e, int n, int topn,
                             const int64_t *offsets) {
    json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array();
    for (int i = 0; i < n; i++) {
        json_t *s = token_string(tok, e[i].id);
        json_array_append_new(offs, json_integer(offsets[i]));
        json_array_append_new(tokens, s);
        json_array_append_new(lps, isnan(e[i].lp) ? json_null() : json_real(e[i].lp));
        if (!e[i].top_id) {
            json_array_append_new(tops, json_null());
            continue;
        }
        json_t *top = json_object();
        for (int k = 0; k < topn; k++) {
            json_t *key = token_string(tok, e[i].top_id[k]);
            if (!json_object_get(top,
                                 json_string_value(key))) /* two ids of one text: the likelier */
                json_object_set_new(top, json_string_value(key), json_real(e[i].top_lp[k]));
            json_decref(key);
        }
        json_array_append_new(tops, top);
    }
    return json_pack("{s:o, s:o, s:o, s:o}", "tokens", tokens, "token_logprobs", lps,
                     "top_logprobs", tops, "text_offset", offs);
}

/* A completion: its tokens after the prompt in seq, and what ended it. */
typedef struct {
    const int32_t *seq; /* prompt (n_prompt tokens), then the completion */
    int n_prompt, n;
    int eos; /* EOS was drawn (not among the n) */
} Completion;

/* The completion's text, cut at the first stop string (*n and *stopped updated: the tokens
 * that reach the cut stay). */
static char *completion_text(const Tokenizer *tok, const CompletionRequest *req, Completion *c,
                             int *stopped) {
    char *prompt = cmd_decode(tok, c->seq, c->n_prompt);
    char *text = cmd_completion_text(tok, c->seq, c->n_prompt, c->n, prompt);
    size_t cut = strlen(text);
    for (int k = 0; k < req->n_stop; k++) {
        char *at = strstr(text, req->stop[k]);
        if (at && (size_t)(at - text) < cut) cut = (size_t)(at - text);
    }
    *stopped = cut < strlen(text);
    if (*stopped) {
        text[cut] = 0;
        for (int k = 0; k <= c->n; k++) {
            char *t = cmd_completion_text(tok, c->seq, c->n_prompt, k, prompt);
            size_t len = strlen(t);
            free(t);
            if (len >= cut) {
                c->n = k;
                break;
            }
        }
        c->eos = 0;
    }
    free(prompt);
    return text;
}

typedef struct {
    const ServeModel *sm;
    const CompletionRequest *req;
    json_t *choices;
    int64_t prompt_tokens, completion_tokens;
    int nonfinite; /* a choice met logits that are not finite: the request fails */
} Response;

/* Choice r: its text and, with logprobs, the entries of the prompt (echo) and of the completion. */
static void add_choice(Response *res, int r, Completion *c, const ScoreRow *prompt_row,
                       const ScoreRow *row) {
    const CompletionRequest *req = res->req;
    const ServePrompt *p = &req->prompts[r / req->n];
    const Tokenizer *tok = res->sm->tok;
    int topn = req->logprobs > 0 ? req->logprobs : 0, stopped;
    char *text = completion_text(tok, req, c, &stopped);
    json_t *lp = json_null();
    if (req->logprobs >= 0) {
        Entry *e = rt_malloc(sizeof(Entry) * (size_t)(c->n_prompt + c->n + 2));
        int n = 0;
        if (req->echo) {
            if (!p->added_bos)
                e[n++] = (Entry){c->seq[0], NAN, NULL, NULL}; /* nothing precedes it */
            for (int k = 1; k < p->n; k++)
                entries_add(e, &n, prompt_row, k - prompt_row->first, c->seq[k], topn);
        }
        /* the completion's tokens, EOS included: the harness drops the last entry as the drawn one
         */
        for (int k = 0; k < c->n + c->eos; k++) {
            int id = k < c->n ? c->seq[p->n + k] : tok_eos_id(tok);
            if (row->next) { /* drawn from the scoring pass's last position */
                entries_add(e, &n, row, row->slots - 1, id, topn);
                e[n - 1].lp = (double)row->next_logits[id] - row->lse[row->slots - 1];
            } else
                entries_add(e, &n, row, p->n + k - row->first, id, topn);
        }
        int n_before =
            req->echo ? 0 : p->n - p->added_bos; /* the prompt's tokens, not the BOS it was given */
        int64_t *offsets = text_offsets(tok, c->seq + p->added_bos, n_before, e, n);
        lp = logprobs_json(tok, e, n, topn, offsets);
        rt_free(offsets);
        rt_free(e);
    }
    char *full = req->echo ? rt_sprintf("%s%s", p->text, text) : NULL;
    json_array_append_new(res->choices,
                          json_pack("{s:i, s:s, s:o, s:s}", "index", r, "text", full ? full : text,
                                    "logprobs", lp, "finish_reason",
                                    stopped || c->eos ? "stop" : "length"));
    res->completion_tokens += c->n;
    rt_free(full);
    free(text);
}

/* echo / logprobs with max_tokens <= 1: one pass over the prompts of the nres requests; each
 * request draws its token with its own sampler (its rows' streams as if it were alone). */
static void complete_scoring(Response *res, int nres) {
    const CompletionRequest *req = res[0].req;
    const ServeModel *sm = res[0].sm;
    int P = 0, topn = req->logprobs > 0 ? req->logprobs : 0;
    for (int k = 0; k < nres; k++) P += res[k].req->n_prompts;
    int outputs = model_outputs(model_config(sm->m)), eos = tok_eos_id(sm->tok);
    ScoreRow *rows = rt_malloc(sizeof(ScoreRow) * (size_t)P);
    for (int k = 0, i = 0; k < nres; k++)
        for (int j = 0; j < res[k].req->n_prompts; j++, i++) {
            const ServePrompt *p = &res[k].req->prompts[j];
            /* with echo every prompt token after the first; else only the next slot */
            score_row_init(&rows[i], p->ids, p->n, req->echo ? 1 : p->n, req->max_tokens > 0, topn,
                           outputs);
        }
    score_rows(sm, rows, P, topn);
    for (int k = 0, first = 0; k < nres; first += res[k++].req->n_prompts) {
        const CompletionRequest *q = res[k].req;
        int R = q->n_prompts * q->n;
        Sampler *s = q->max_tokens > 0 ? sampler_create(&q->sampling, sm->lim->vocab, R) : NULL;
        for (int r = 0; r < R; r++) {
            const ServePrompt *p = &q->prompts[r / q->n];
            ScoreRow *row = &rows[first + r / q->n];
            int32_t *seq = rt_malloc(sizeof(int32_t) * ((size_t)p->n + 1));
            memcpy(seq, p->ids, sizeof(int32_t) * (size_t)p->n);
            Completion c = {seq, p->n, 0, 0};
            int t = s ? sampler_next(s, r, row->next_logits) : 0;
            if (t == SAMPLER_NONFINITE || !score_row_finite(row))
                res[k].nonfinite = 1;
            else if (s && t == eos)
                c.eos = 1;
            else if (s)
                seq[c.n++ + p->n] = t;
            if (!res[k].nonfinite) add_choice(&res[k], r, &c, row, row);
            rt_free(seq);
        }
        if (s) sampler_free(s);
    }
    for (int i = 0; i < P; i++) score_row_free(&rows[i]);
    rt_free(rows);
}

/* Generation: every choice of the nres requests a row of one generate() batch (requests after
 * the first only when serve_can_batch with it), each row with its request's sampling settings
 * and the stream it has when its request runs alone (its index in the request); with logprobs
 * a scoring pass over prompt + completion (+ EOS) after it. */
static void complete_generating(Response *res, int nres) {
    const CompletionRequest *req = res[0].req;
    const ServeModel *sm = res[0].sm;
    int R = 0, topn = req->logprobs > 0 ? req->logprobs : 0;
    for (int k = 0; k < nres; k++) R += res[k].req->n_prompts * res[k].req->n;
    int outputs = model_outputs(model_config(sm->m));
    int32_t **seqs = rt_malloc(sizeof(int32_t *) * (size_t)R);
    int *lens = rt_malloc(sizeof(int) * (size_t)R);
    GenerateRow *out = rt_calloc((size_t)R, sizeof(GenerateRow));
    SamplingArgs *sampling = rt_malloc(sizeof(SamplingArgs) * (size_t)R);
    uint64_t *stream = rt_malloc(sizeof(uint64_t) * (size_t)R);
    for (int k = 0, r = 0; k < nres; k++)
        for (int i = 0; i < res[k].req->n_prompts * res[k].req->n; i++, r++) {
            const ServePrompt *p = &res[k].req->prompts[i / res[k].req->n];
            seqs[r] = rt_malloc(sizeof(int32_t) * ((size_t)p->n + (size_t)req->max_tokens + 1));
            memcpy(seqs[r], p->ids, sizeof(int32_t) * (size_t)p->n);
            lens[r] = p->n;
            sampling[r] = res[k].req->sampling;
            stream[r] = (uint64_t)i;
        }
    if (req->max_tokens > 0) {
        GenerateArgs ga = {req->max_tokens, sm->lim->context, tok_eos_id(sm->tok),
                           sm->lim->vocab,  req->sampling,    sampling,
                           stream};
        GenerateStats st;
        generate(sm->m, &ga, seqs, lens, R, out, &st, NULL, NULL);
    }
    rt_free(stream);
    rt_free(sampling);
    Completion *cs = rt_malloc(sizeof(Completion) * (size_t)R);
    ScoreRow *rows = rt_calloc((size_t)R, sizeof(ScoreRow));
    for (int r = 0; r < R; r++) {
        cs[r] = (Completion){seqs[r], lens[r], out[r].n, out[r].eos};
        if (out[r].eos) seqs[r][lens[r] + out[r].n] = tok_eos_id(sm->tok);
        if (req->logprobs >= 0)
            score_row_init(&rows[r], seqs[r], lens[r] + out[r].n + out[r].eos,
                           req->echo ? 1 : lens[r], 0, topn, outputs);
    }
    if (req->logprobs >= 0) score_rows(sm, rows, R, topn);
    for (int k = 0, r = 0; k < nres; k++)
        for (int i = 0; i < res[k].req->n_prompts * res[k].req->n; i++, r++) {
            if (out[r].nonfinite || (req->logprobs >= 0 && !score_row_finite(&rows[r])))
                res[k].nonfinite = 1;
            if (!res[k].nonfinite) add_choice(&res[k], i, &cs[r], &rows[r], &rows[r]);
            score_row_free(&rows[r]);
            rt_free(seqs[r]);
        }
    rt_free(rows);
    rt_free(cs);
    rt_free(out);
    rt_free(lens);
    rt_free(seqs);
}

int serve_can_batch(const CompletionRequest *a, const CompletionRequest *b) {
    /* every row samples with its own request's settings and stream: only the shape matters */
    return a->max_tokens == b->max_tokens && a->logprobs == b->logprobs && a->echo == b->echo;
}

static json_t *response_json(const Response *res) {
    static long counter;
    char id[64];
    snprintf(id, sizeof id, "cmpl-rotor-%ld", ++counter);
    return json_pack("{s:s, s:s, s:I, s:s, s:o, s:{s:I, s:I, s:I}}", "id", id, "object",
                     "text_completion", "created", (json_int_t)time(NULL), "model",
                     res->req->model ? res->req->model : res->sm->name, "choices", res->choices,
                     "usage", "prompt_tokens", (json_int_t)res->prompt_tokens, "completion_tokens",
                     (json_int_t)res->completion_tokens, "total_tokens",
                     (json_int_t)(res->prompt_tokens + res->completion_tokens));
}

void serve_complete(const ServeModel *sm, const CompletionRequest *const *reqs, int n, json_t **out,
                    ServeError *errs) {
    Response *res = rt_malloc(sizeof(Response) * (size_t)n);
    for (int k = 0; k < n; k++) {
        RT_ASSERT(k == 0 || serve_can_batch(reqs[0], reqs[k]));
        res[k] = (Response){.sm = sm, .req = reqs[k], .choices = json_array()};
        for (int i = 0; i < reqs[k]->n_prompts; i++)
            res[k].prompt_tokens += reqs[k]->prompts[i].n - reqs[k]->prompts[i].added_bos;
    }
    if (serve_scores_prompt(reqs[0]))
        complete_scoring(res, n);
    else
        complete_generating(res, n);
    for (int k = 0; k < n; k++) {
        errs[k] = (ServeError){0};
        if (!res[k].nonfinite) {
            out[k] = response_json(&res[k]);
            continue;
        }
        json_decref(res[k].choices);
        out[k] = NULL;
        serve_fail(&errs[k], 500, NULL,
                   "the model's logits for this request are not finite (NaN or inf): the "
                   "checkpoint's weights are damaged or its activations overflow");
    }
    rt_free(res);
}
