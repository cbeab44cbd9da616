/* Parameter declaration helpers, the grow-only state buffer and the nonlinear cells' state
 * shared by the mixers. */
#include <stdio.h>

#include "model/model_internal.h"
#include "util/error.h"

int declare_linear(ParamTable *t, const char *name, int64_t out, int64_t in, double std) {
    int64_t shape[2] = {out, in};
    return params_add(t, name, 2, shape, init_normal, std, 1, 1);
}

int declare_vector(ParamTable *t, const char *name, int64_t n, int ones) {
    int64_t shape[1] = {n};
    return params_add(t, name, 1, shape, ones ? init_ones : init_zeros, 0, 0, 1);
}

int declare_conv(ParamTable *t, const char *name, int64_t C, double std) {
    int64_t shape[3] = {C, 1, SHORT_CONV_TAPS};
    return params_add(t, name, 3, shape, init_normal, std, 1, 1);
}

void *growbuf_get(GrowBuf *b, const Backend *be, size_t bytes) {
    if (bytes > b->bytes) {
        if (b->p) be->release(b->p);
        b->p = be->alloc(bytes);
        b->bytes = bytes;
    }
    return b->p;
}

void growbuf_free(GrowBuf *b, const Backend *be) {
    if (b->p) be->release(b->p);
    b->p = NULL;
    b->bytes = 0;
}

int declare_recurrent(ParamTable *t, const char *name, int ndim, const int64_t *shape,
                      ParamInit init, double init_arg) {
    int id = params_add(t, name, ndim, shape, init, init_arg, 0, 1);
    params_set_recurrent(t, id);
    return id;
}

int declare_orthogonal(ParamTable *t, const char *name, int ndim, const int64_t *shape,
                       ParamInit init, double init_arg) {
    int id = params_add(t, name, ndim, shape, init, init_arg, 0, 1);
    params_set_orthogonal(t, id);
    return id;
}

void init_phase(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++) a->out[i] = a->cfg->max_phase * rng_uniform(a->rng);
}

void *cell_state(CellState *cs, const Ctx *c, const void **h0) {
    *h0 = NULL;
    if (c->carry) { /* start from the carried states, kept for the backward (docs/models.md
                       §carried-states) */
        size_t bytes = F32(c, (int64_t)c->seqs->nseg * cs->width);
        void *p = growbuf_get(&cs->h0, c->be, bytes);
        c->be->copy(p, cs->S, bytes);
        *h0 = p;
    }
    return c->mode == PASS_TRAIN && !c->carry ? NULL : cs->S;
}

void cell_destroy(void *layer, const Backend *be) {
    CellState *cs = layer;
    if (be) growbuf_free(&cs->h0, be);
    rt_free(cs);
}

void cell_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                     int64_t rows, int max_len) {
    CellState *cs = layer;
    (void)dm, (void)max_len;
    cs->S = carve(state, F32S(be, rows * cs->width));
}

int64_t cell_carry_width(const void *layer) { return ((const CellState *)layer)->width; }
