#include "generate.h"

#include "model/decode.h"
#include "util/error.h"
#include "util/timer.h"

void generate(Model *m, const GenerateArgs *a, int32_t *const *seqs, const int *lens, int rows,
              GenerateRow *out, GenerateStats *st, GenerateTokenFn on_token, void *ctx) {
    /* Row r generates at most cap[r] tokens. Every row steps until the longest-running one
     * is done, so the decoder holds the longest prompt plus that many steps: more than the
     * context only when a long prompt's row ends early beside a shorter prompt's. */
    int *cap = rt_malloc(sizeof(int) * (size_t)rows), *live = rt_malloc(sizeof(int) * (size_t)rows);
    int max_prompt = 0, max_cap = 0;
    for (int r = 0; r < rows; r++) {
        RT_ASSERT(lens[r] >= 1 && lens[r] < a->context);
        cap[r] = a->context - lens[r] < a->max_new ? a->context - lens[r] : a->max_new;
        if (lens[r] > max_prompt) max_prompt = lens[r];
        if (cap[r] > max_cap) max_cap = cap[r];
        out[r] = (GenerateRow){0};
        live[r] = 1;
    }
    const int V = model_config(m)->vocab_size;
    st->max_len = max_prompt + max_cap - 1;
    Decoder *d = decoder_create(m, rows, st->max_len);
    st->state_bytes = decoder_state_bytes(d);
    Sampler *sm = a->row_sampling
                      ? sampler_create_rows(a->row_sampling, a->row_stream, a->vocab, rows)
                      : sampler_create(&a->sampling, a->vocab, rows);
    float *logits = rt_malloc(sizeof(float) * (size_t)rows * (size_t)V);
    int32_t *next = rt_malloc(sizeof(int32_t) * (size_t)rows);
    for (int r = 0; r < rows; r++) next[r] = seqs[r][lens[r] - 1];

    double t0 = rt_now();
    decoder_prefill(d, (const int32_t *const *)seqs, lens, logits);
    double t1 = rt_now();
    st->steps = 0;
    for (;;) {
        int any = 0;
        for (int r = 0; r < rows; r++) {
            if (!live[r]) continue;
            int t = sampler_next(sm, r, logits + (size_t)r * V);
            if (t == a->eos_id || t == SAMPLER_NONFINITE) {
                out[r].eos = t == a->eos_id;
                out[r].nonfinite = t == SAMPLER_NONFINITE;
                live[r] = 0;
                continue;
            }
            seqs[r][lens[r] + out[r].n++] = next[r] = t;
            if (on_token) on_token(ctx, r, seqs[r], lens[r], out[r].n);
            live[r] = out[r].n < cap[r];
            any |= live[r];
        }
        if (!any) break;
        decoder_step(d, next, logits);
        st->steps++;
    }
    st->prefill_s = t1 - t0;
    st->decode_s = rt_now() - t1;
    rt_free(next);
    rt_free(logits);
    sampler_free(sm);
    decoder_free(d);
    rt_free(live);
    rt_free(cap);
}
