/* Binding of declared activations (acts.h). */
#include "model/acts.h"

#include "util/error.h"

void *carve(Carve *c, size_t bytes) {
    size_t b = (bytes + 63) & ~(size_t)63;
    void *r = c->base ? c->base + c->used : NULL;
    c->used += b;
    return r;
}

void acts_bind(void *layer, const BufDecl *decl, int n, const int64_t *widths, unsigned features,
               const Backend *be, Carve *saved, Carve *scratch, int64_t N) {
    char *base = layer;
    for (int i = 0; i < n; i++) {
        const BufDecl *b = &decl[i];
        void **slot = (void **)(base + b->field);
        if ((features & b->when) != b->when) {
            RT_ASSERT(b->alias == BUF_NULL || b->alias != b->field);
            *slot = b->alias == BUF_NULL ? NULL : *(void **)(base + b->alias);
            continue;
        }
        size_t elem = b->type == BUF_ACT ? be->act_size : be->f32_size;
        size_t count = (size_t)widths[b->width] * (size_t)(b->per_token ? N : 1);
        *slot = carve(b->life == BUF_SAVED ? saved : scratch, elem * count);
    }
}
