/* Declared activations: every layer lists its buffers once — name, width per token,
 * element type, saved for the backward or scratch, and what it aliases when the layer's
 * configuration leaves it out — and acts_bind derives the binding from that list. */
#ifndef ROTOR_ACTS_H
#define ROTOR_ACTS_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/* Buffer carving: the model calls a binding once with NULL bases (planning: only the sizes
 * are counted) and once with the real allocations. */
typedef struct {
    char *base;
    size_t used;
} Carve;

void *carve(Carve *c, size_t bytes);

typedef enum {
    BUF_SAVED,  /* per layer, kept from the forward for the backward */
    BUF_SCRATCH /* shared by all layers: valid within one layer's forward or backward */
} BufLife;

typedef enum { BUF_ACT, BUF_F32 } BufType; /* [act] or [f32] elements (src/backend.h) */

#define BUF_NULL ((size_t)-1)

typedef struct {
    const char *name;
    size_t field; /* offsetof the `void *` it binds, in the layer's struct */
    BufLife life;
    BufType type;
    int width;     /* index into the layer's widths: elements per token */
    int per_token; /* 0: widths[width] elements in all, whatever the number of tokens */
    unsigned when; /* it exists when the layer has every feature bit of `when` */
    size_t alias;  /* otherwise the field holds the buffer of this earlier field (BUF_NULL:
                    * NULL) */
} BufDecl;

/* Entries of a layer's table, T its struct type: one that always exists, one that exists
 * with the features `when` and otherwise aliases field `other`, or is NULL. */
#define BUF(T, f, life, type, width)                                                               \
    { #f, offsetof(T, f), life, type, width, 1, 0, BUF_NULL }
#define BUF_IF(T, f, life, type, width, when, other)                                               \
    { #f, offsetof(T, f), life, type, width, 1, when, offsetof(T, other) }
#define BUF_OPT(T, f, life, type, width, when)                                                     \
    { #f, offsetof(T, f), life, type, width, 1, when, BUF_NULL }
/* A buffer sized by the layer, not by the tokens (weights derived in the forward). */
#define BUF_FIXED(T, f, life, type, width, when)                                                   \
    { #f, offsetof(T, f), life, type, width, 0, when, BUF_NULL }

#define BUF_COUNT(table) ((int)(sizeof(table) / sizeof((table)[0])))

/* Binds the n entries of decl in `layer` for N tokens, in order, carving saved buffers from
 * `saved` and scratch from `scratch`. */
void acts_bind(void *layer, const BufDecl *decl, int n, const int64_t *widths, unsigned features,
               const Backend *be, Carve *saved, Carve *scratch, int64_t N);

#endif
