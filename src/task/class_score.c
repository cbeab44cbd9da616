#include "task/class_score.h"

#include <string.h>

#include "util/error.h"

void class_score_init(ClassScore *s, int outputs) {
    memset(s, 0, sizeof(*s));
    s->outputs = outputs;
    s->class_rows = rt_calloc((size_t)outputs, sizeof(int64_t));
    s->class_right = rt_calloc((size_t)outputs, sizeof(int64_t));
}

void class_score_batch(ClassScore *s, Model *m, const Batch *b) {
    for (int r = 0; r < b->B; r++) {
        int n = 0;
        for (int t = 0; t < b->T; t++) n += b->labels[(size_t)r * b->T + t] != -100;
        if (n != 1)
            rt_die("classification: row %d of a batch has %d labeled positions, not one", r, n);
    }
    if (b->B > s->cap) {
        s->cap = b->B;
        s->logp = rt_realloc(s->logp, sizeof(double) * (size_t)s->cap);
        s->greedy = rt_realloc(s->greedy, (size_t)s->cap);
    }
    int64_t M = model_token_logprobs(m, b, s->logp, s->greedy), q = 0;
    RT_ASSERT(M == b->B);
    for (int64_t p = 0; p < (int64_t)b->B * b->T; p++) {
        int32_t y = b->labels[p];
        if (y == -100) continue;
        if (y < 0 || y >= s->outputs)
            rt_die("classification: label %d is not a class id (0..%d)", y, s->outputs - 1);
        s->class_rows[y]++;
        s->class_right[y] += s->greedy[q];
        s->right += s->greedy[q];
        s->nll -= s->logp[q++];
    }
    s->rows += b->B;
}

void class_score_free(ClassScore *s) {
    rt_free(s->class_rows);
    rt_free(s->class_right);
    rt_free(s->logp);
    rt_free(s->greedy);
    memset(s, 0, sizeof(*s));
}
