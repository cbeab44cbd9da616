#include "task/text_score.h"

#include "util/error.h"

void text_score_streams(Model *m, const CharText *t, DataSplit split, int T, int S, int first,
                        int count, TextScore *sc) {
    int64_t W = char_text_stream_windows(t, split, S, T);
    if (count <= 0 || W == 0) return;
    const Backend *be = model_backend(m);
    size_t bytes = model_carry_bytes(m, count);
    void *state = be->alloc(bytes);
    be->zero(state, bytes);
    size_t cells = (size_t)count * (size_t)T;
    int32_t *tok = rt_malloc(sizeof(int32_t) * cells), *lab = rt_malloc(sizeof(int32_t) * cells);
    double *logp = rt_malloc(sizeof(double) * cells);
    uint8_t *greedy = rt_malloc(cells);
    for (int64_t k = 0; k < W; k++) {
        for (int b = 0; b < count; b++)
            char_text_stream_row(t, split, S, T, k * S + first + b, tok + (size_t)b * T,
                                 lab + (size_t)b * T);
        model_set_carry(m, state, count);
        Batch bt = {count, T, tok, lab, NULL};
        int64_t n = model_token_logprobs(m, &bt, logp, greedy);
        for (int64_t i = 0; i < n; i++) sc->nll -= logp[i], sc->right += greedy[i];
        sc->labels += n;
    }
    model_set_carry(m, NULL, 0);
    be->release(state);
    rt_free(tok);
    rt_free(lab);
    rt_free(logp);
    rt_free(greedy);
}
