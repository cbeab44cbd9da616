/* Parameter declaration helpers and the grow-only state buffer shared by the mixers. */
#include <stdio.h>

#include "model/model_internal.h"

int declare_linear(ParamTable *t, const char *name, int64_t out, int64_t in, double std) {
    int64_t shape[2] = {out, in};
    return params_add(t, name, 2, shape, init_normal, std, 1, 1);
}

int declare_vector(ParamTable *t, const char *name, int64_t n, int ones) {
    int64_t shape[1] = {n};
    return params_add(t, name, 1, shape, ones ? init_ones : init_zeros, 0, 0, 1);
}

int declare_conv(ParamTable *t, const char *name, int64_t C, double std) {
    int64_t shape[3] = {C, 1, 4};
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

int declare_recurrent(ParamTable *t, const char *name, int ndim, const int64_t *shape, ParamInit init,
                      double init_arg) {
    int id = params_add(t, name, ndim, shape, init, init_arg, 0, 1);
    params_set_recurrent(t, id);
    return id;
}

int declare_orthogonal(ParamTable *t, const char *name, int ndim, const int64_t *shape, ParamInit init,
                       double init_arg) {
    int id = params_add(t, name, ndim, shape, init, init_arg, 0, 1);
    params_set_orthogonal(t, id);
    return id;
}

void init_phase(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++) a->out[i] = a->cfg->max_phase * rng_uniform(a->rng);
}
