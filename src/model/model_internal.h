/* Internals shared by the model, its mixers and its position embeddings. */
#ifndef ROTOR_MODEL_INTERNAL_H
#define ROTOR_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "model/model_config.h"
#include "model/params.h"

/* Buffer carving: layers describe the buffers they need by calling carve() once with a
 * NULL base (planning: only the size is counted) and once with the real allocation. */
typedef struct {
    char *base;
    size_t used;
} Carve;

static inline void *carve(Carve *c, size_t bytes) {
    size_t b = (bytes + 63) & ~(size_t)63;
    void *r = c->base ? c->base + c->used : NULL;
    c->used += b;
    return r;
}

/* What a layer sees during a forward or backward pass. */
typedef struct {
    const Backend *be;
    const ModelConfig *cfg;
    const ModelDims *dims;
    const Seqs *seqs;
    int64_t N;               /* tokens in the batch */
    char *weights;           /* compute copy of the weights [act] */
    char *master;            /* master weights [f32] */
    char *grads;             /* gradients [f32] */
    const ParamTable *params;
    const void *rope_angle;  /* [f32][N, dk/2] when pe = rope, shared by the layers */
} Ctx;

static inline void *W(const Ctx *c, int idx) {
    return c->weights + (size_t)c->params->p[idx].offset * c->be->act_size;
}
/* Parameters the ops read in fp32 whatever the compute precision (SPEC §3 A_log, dt_bias). */
static inline void *WM(const Ctx *c, int idx) {
    return c->master + (size_t)c->params->p[idx].offset * c->be->f32_size;
}
static inline void *G(const Ctx *c, int idx) {
    return c->grads + (size_t)c->params->p[idx].offset * c->be->f32_size;
}
static inline size_t ACT(const Ctx *c, int64_t n) { return (size_t)n * c->be->act_size; }
static inline size_t F32(const Ctx *c, int64_t n) { return (size_t)n * c->be->f32_size; }

/* Declares a linear weight [out, in] ~ N(0, init_std) with weight decay. */
int declare_linear(ParamTable *t, const char *name, int64_t out, int64_t in, double std);
/* Declares a bias or norm vector (no weight decay): zeros or ones. */
int declare_vector(ParamTable *t, const char *name, int64_t n, int ones);
/* Declares a short-conv weight [C, 1, 4] ~ N(0, init_std) with weight decay. */
int declare_conv(ParamTable *t, const char *name, int64_t C, double std);

/* ---- position embeddings (pe.c, SPEC §5) ---- */
typedef struct {
    PEConfig cfg;
    int H, D, P, d_model;   /* heads, per-head q/k width, pairs, mixer input width */
    int phi_w, phi_scale, phi_w1, phi_w2, conv_w, bias, gate_w, gate_b, temp; /* param ids */
    /* saved (selective) */
    void *xh, *xh_rnorm, *phi_lr, *phi_raw, *gate_logit, *Phi;
    /* scratch (selective) */
    void *wn, *dwn, *dphi_raw, *dgate, *dxh, *dphi_lr;
} PosEmb;

void pe_declare(PosEmb *pe, ParamTable *t, const char *prefix, const ModelConfig *cfg, int H,
                int D);
void pe_bind(PosEmb *pe, const Backend *be, Carve *saved, Carve *scratch, int64_t N);
/* Rotates q, k [N,H,D] into qo, ko. x is the mixer input (Selective RoPE angles). */
void pe_forward(PosEmb *pe, const Ctx *c, const void *x, const void *q, const void *k, void *qo,
                void *ko);
/* dq, dk (overwrite) from dqo, dko; Selective RoPE also accumulates into dx. */
void pe_backward(PosEmb *pe, const Ctx *c, const void *x, const void *q, const void *k,
                 const void *dqo, const void *dko, void *dq, void *dk, void *dx);

/* ---- mixers (mixer_gla.c, mixer_gdn.c, mixer_fox.c) ---- */
typedef struct {
    /* Declares the layer's parameters under "model.layers.<layer>.attn." */
    void *(*create)(ParamTable *t, const ModelConfig *cfg, const ModelDims *dims, int layer);
    void (*destroy)(void *layer, const Backend *be);
    /* Saved activations (per layer) and scratch (shared by all layers) for N tokens. */
    void (*bind)(void *layer, const Backend *be, const ModelDims *dims, Carve *saved,
                 Carve *scratch, int64_t N);
    /* y = Mixer(x), x the normalised block input [N, d]. */
    void (*forward)(void *layer, const Ctx *c, const void *x, void *y);
    /* dx (overwrite) from dy; parameter gradients accumulate. */
    void (*backward)(void *layer, const Ctx *c, const void *x, const void *dy, void *dx);
} MixerImpl;

extern const MixerImpl mixer_gla, mixer_gdn, mixer_fox;

/* Grow-only [f32] buffer for the chunk states of the linear-attention mixers, whose size
 * depends on the segments of each batch. */
typedef struct {
    void *p;
    size_t bytes;
} GrowBuf;
void *growbuf_get(GrowBuf *b, const Backend *be, size_t bytes);
void growbuf_free(GrowBuf *b, const Backend *be);

#endif
