/* The chunk walk shared by the chunked kernels (chunks.h). */
#include "cpu/chunks.h"

#include <string.h>

#include "util/error.h"

/* bases[0..nseg]: the number of segment seg's first chunk (bases[nseg] = the number of
 * chunks), malloc'd. */
static int64_t *chunk_bases(const Seqs *s) {
    int64_t *b = rt_malloc(sizeof(int64_t) * (size_t)(s->nseg + 1));
    b[0] = 0;
    for (int i = 0; i < s->nseg; i++)
        b[i + 1] = b[i] + (s->cu[i + 1] - s->cu[i] + CHUNK_SIZE - 1) / CHUNK_SIZE;
    return b;
}

Chunk *chunk_list(const Seqs *s, int64_t *n) {
    int64_t *bases = chunk_bases(s);
    *n = bases[s->nseg];
    Chunk *ch = rt_malloc(sizeof(Chunk) * (size_t)(*n ? *n : 1));
    for (int seg = 0; seg < s->nseg; seg++)
        for (int64_t k = bases[seg]; k < bases[seg + 1]; k++) {
            int64_t first = s->cu[seg] + (k - bases[seg]) * CHUNK_SIZE;
            int64_t left = s->cu[seg + 1] - first;
            ch[k] = (Chunk){first, (int)(left < CHUNK_SIZE ? left : CHUNK_SIZE), seg};
        }
    rt_free(bases);
    return ch;
}

void chunk_rows_get(real *buf, const real *x, const Chunk *c, int h, int H, int D) {
    for (int t = 0; t < c->len; t++)
        memcpy(buf + t * D, x + ((c->first + t) * H + h) * (int64_t)D, sizeof(real) * D);
}

void chunk_rows_put(real *x, const real *buf, const Chunk *c, int h, int H, int D) {
    for (int t = 0; t < c->len; t++)
        memcpy(x + ((c->first + t) * H + h) * (int64_t)D, buf + t * D, sizeof(real) * D);
}

void linattn_load(const LinAttnArgs *a, const Chunk *c, int h, real *Q, real *K, real *V) {
    int H = a->H, Kd = a->K;
    const real *q = a->q, *k = a->k;
    real scale = (real)a->scale;
    for (int t = 0; t < c->len; t++) {
        int64_t rk = ((c->first + t) * H + h) * (int64_t)Kd;
        for (int i = 0; i < Kd; i++) {
            Q[t * Kd + i] = q[rk + i] * scale;
            K[t * Kd + i] = k[rk + i];
        }
    }
    chunk_rows_get(V, a->v, c, h, H, a->V);
}

void linattn_store(const LinAttnGrads *g, const Chunk *c, int h, const real *dQ, const real *dK,
                   const real *dV) {
    int H = g->a.H, Kd = g->a.K;
    real *dq = g->dq, *dk = g->dk;
    real scale = (real)g->a.scale;
    for (int t = 0; t < c->len; t++) {
        int64_t rk = ((c->first + t) * H + h) * (int64_t)Kd;
        for (int i = 0; i < Kd; i++) {
            dq[rk + i] = dQ[t * Kd + i] * scale;
            dk[rk + i] = dK[t * Kd + i];
        }
    }
    chunk_rows_put(g->dv, dV, c, h, H, g->a.V);
}

/* Every (segment, head) pair in parallel: the forward of its chunks, or with g the backward. */
static void walk(const LinAttnChunks *k, const LinAttnArgs *a, const LinAttnGrads *g) {
    const Seqs *s = a->s;
    int H = a->H, K = a->K, V = a->V;
    size_t kv = sizeof(real) * (size_t)K * V;
    real *states = a->states, *state = a->state;
    int64_t *bases = chunk_bases(s), n;
    Chunk *ch = chunk_list(s, &n);
#pragma omp parallel
    {
        void *work = k->work_new(K, V);
        real *S = rt_alloc_aligned(kv); /* the state, or in the backward its gradient */
#pragma omp for collapse(2) schedule(dynamic)
        for (int seg = 0; seg < s->nseg; seg++)
            for (int h = 0; h < H; h++) {
                memset(S, 0, kv);
                if (!g) {
                    for (int64_t c = bases[seg]; c < bases[seg + 1]; c++) {
                        memcpy(states + (c * H + h) * (int64_t)K * V, S, kv);
                        k->fwd(work, a, &ch[c], h, S);
                    }
                    if (state) memcpy(state + ((int64_t)seg * H + h) * K * V, S, kv);
                } else {
                    for (int64_t c = bases[seg + 1] - 1; c >= bases[seg]; c--)
                        k->bwd(work, g, &ch[c], h, states + (c * H + h) * (int64_t)K * V, S);
                    if (k->bwd_end) k->bwd_end(g, seg, h);
                }
            }
        rt_free(S);
        k->work_free(work);
    }
    rt_free(ch);
    rt_free(bases);
}

void linattn_chunks_fwd(const LinAttnChunks *k, const LinAttnArgs *a) { walk(k, a, NULL); }

void linattn_chunks_bwd(const LinAttnChunks *k, const LinAttnGrads *g) { walk(k, &g->a, g); }
