/* Decoding (decode.h, docs/models.md §decoding): the prefill packs every row's prompt as one
 * segment of a single pass; a step passes one token per row at the row's position. With
 * doc_mask a BOS token starts a new document: a prompt is prefilled from its last BOS (the
 * tokens before it cannot reach later ones), and a generated BOS restarts its row at
 * position 0, which the step ops read as a zero state. */
#include "model/decode.h"

#include "model/model_internal.h"
#include "util/error.h"

struct Decoder {
    Model *m;
    int rows, max_len;
    void *state;
    size_t state_bytes;
    int *len;     /* tokens per row so far */
    int32_t *pos; /* each row's next position (its length within the current document) */
    int64_t *cu;  /* [rows + 1] */
    int32_t *tok; /* a step's tokens */
};

Decoder *decoder_create(Model *m, int rows, int max_len) {
    if (rows < 1 || max_len < 1)
        rt_die("decoder: %d rows of at most %d tokens; both must be at least 1", rows, max_len);
    if (model_config(m)->head != HEAD_LM)
        rt_die("decoder: the model has the auto-encoder head (model.head = autoencoder); decoding "
               "needs a language model's head");
    const Backend *be = model_backend(m);
    Decoder *d = rt_calloc(1, sizeof(Decoder));
    d->m = m;
    d->rows = rows;
    d->max_len = max_len;
    d->state_bytes = model_bind_decode_state(m, NULL, rows, max_len);
    d->state = be->alloc(d->state_bytes ? d->state_bytes : 1);
    be->zero(d->state, d->state_bytes);
    model_bind_decode_state(m, d->state, rows, max_len);
    d->len = rt_calloc((size_t)rows, sizeof(int));
    d->pos = rt_calloc((size_t)rows, sizeof(int32_t));
    d->cu = rt_malloc(sizeof(int64_t) * (size_t)(rows + 1));
    d->tok = rt_malloc(sizeof(int32_t) * (size_t)rows);
    return d;
}

void decoder_free(Decoder *d) {
    if (!d) return;
    model_backend(d->m)->release(d->state);
    rt_free(d->len);
    rt_free(d->pos);
    rt_free(d->cu);
    rt_free(d->tok);
    rt_free(d);
}

size_t decoder_state_bytes(const Decoder *d) { return d->state_bytes; }

int decoder_length(const Decoder *d, int row) {
    RT_ASSERT(row >= 0 && row < d->rows);
    return d->len[row];
}

/* Where row r's current document starts in its prompt: after the last BOS under doc_mask. */
static int document_start(const Decoder *d, const int32_t *prompt, int len) {
    const ModelConfig *cfg = model_config(d->m);
    if (!cfg->doc_mask) return 0;
    int s = 0;
    for (int i = 0; i < len; i++)
        if (prompt[i] == cfg->bos_id) s = i;
    return s;
}

void decoder_prefill(Decoder *d, const int32_t *const *prompts, const int *lens, float *logits) {
    int64_t total = 0;
    int *start = rt_malloc(sizeof(int) * (size_t)d->rows);
    for (int r = 0; r < d->rows; r++) {
        if (lens[r] < 1 || lens[r] > d->max_len)
            rt_die("decoder: the prompt of row %d has %d tokens; it must have 1 to %d (the "
                   "decoder's max_len)",
                   r, lens[r], d->max_len);
        start[r] = document_start(d, prompts[r], lens[r]);
        total += lens[r] - start[r];
    }
    int32_t *tok = rt_malloc(sizeof(int32_t) * (size_t)total);
    int32_t *pos = rt_malloc(sizeof(int32_t) * (size_t)total);
    d->cu[0] = 0;
    for (int r = 0; r < d->rows; r++) {
        int n = lens[r] - start[r];
        for (int i = 0; i < n; i++) {
            tok[d->cu[r] + i] = prompts[r][start[r] + i];
            pos[d->cu[r] + i] = i;
        }
        d->cu[r + 1] = d->cu[r] + n;
        d->len[r] = lens[r];
        d->pos[r] = n;
    }
    model_decode_pass(d->m,
                      &(DecodePass){.mode = PASS_PREFILL,
                                    .max_len = d->max_len,
                                    .nseg = d->rows,
                                    .cu = d->cu,
                                    .pos = pos,
                                    .tokens = tok},
                      logits);
    rt_free(tok);
    rt_free(pos);
    rt_free(start);
}

void decoder_step(Decoder *d, const int32_t *tokens, float *logits) {
    const ModelConfig *cfg = model_config(d->m);
    for (int r = 0; r < d->rows; r++) {
        if (d->len[r] >= d->max_len)
            rt_die("decoder: row %d already holds %d tokens, the decoder's max_len", r, d->len[r]);
        if (cfg->doc_mask && tokens[r] == cfg->bos_id) d->pos[r] = 0;
        d->cu[r] = r;
        d->tok[r] = tokens[r];
    }
    d->cu[d->rows] = d->rows;
    model_decode_pass(d->m,
                      &(DecodePass){.mode = PASS_STEP,
                                    .max_len = d->max_len,
                                    .nseg = d->rows,
                                    .cu = d->cu,
                                    .pos = d->pos,
                                    .tokens = d->tok},
                      logits);
    for (int r = 0; r < d->rows; r++) d->len[r]++, d->pos[r]++;
}
