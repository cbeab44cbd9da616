/* The chunks of a batch's segments as the chunked CPU kernels walk them (GLA, Gated
 * DeltaNet, the complex scan): every segment cut into CHUNK_SIZE pieces (its last one may be
 * shorter), all of them numbered in order, the numbering of the chunk states. */
#ifndef ROTOR_CPU_CHUNKS_H
#define ROTOR_CPU_CHUNKS_H

#include "cpu/cpu_ops.h"

typedef struct {
    int64_t first; /* first token */
    int len, seg;  /* tokens, segment */
} Chunk;

/* Every chunk in order, malloc'd; their count in *n. */
Chunk *chunk_list(const Seqs *s, int64_t *n);

/* A chunked linear-attention kernel (GLA, Gated DeltaNet) as pieces for the walk below,
 * which runs every (segment, head) pair in parallel, each thread with its own work buffers.
 * Chunk number k of head h has its K x V start state at ((k * H + h) * K * V) in states. */
typedef struct {
    void *(*work_new)(int K, int V);
    void (*work_free)(void *work);
    /* The chunk's outputs from S, the state before it (stored already); S advanced past it. */
    void (*fwd)(void *work, const LinAttnArgs *a, const Chunk *c, int h, real *S);
    /* The chunk's gradients from S0, the state before it, and dS, the gradient of the state
     * after it, which becomes the gradient of S0. */
    void (*bwd)(void *work, const LinAttnGrads *g, const Chunk *c, int h, const real *S0, real *dS);
    /* After the backward of a pair's chunks (first to last token of segment seg), or NULL. */
    void (*bwd_end)(const LinAttnGrads *g, int seg, int h);
} LinAttnChunks;

/* Rows of head h of an [N, H, D] tensor x in the chunk: chunk_rows_get copies them into
 * buf [len, D], chunk_rows_put copies buf back into them. */
void chunk_rows_get(real *buf, const real *x, const Chunk *c, int h, int H, int D);
void chunk_rows_put(real *x, const real *buf, const Chunk *c, int h, int H, int D);
/* The chunk's rows of head h: Q = scale q, K = k [len, K], V = v [len, V]. */
void linattn_load(const LinAttnArgs *a, const Chunk *c, int h, real *Q, real *K, real *V);
/* The chunk's gradients of head h from its rows: dq = scale dQ, dk = dK, dv = dV. */
void linattn_store(const LinAttnGrads *g, const Chunk *c, int h, const real *dQ, const real *dK,
                   const real *dV);

/* The forward: each pair's chunks in order from a zero state, every chunk's start state
 * written to a->states, the final state to a->state when it is not NULL. */
void linattn_chunks_fwd(const LinAttnChunks *k, const LinAttnArgs *a);
/* The backward: each pair's chunks from the last, from a zero state gradient. */
void linattn_chunks_bwd(const LinAttnChunks *k, const LinAttnGrads *g);

#endif
