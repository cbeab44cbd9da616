#include "model/params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"

ParamName pname(const char *prefix, const char *suffix) {
    ParamName n;
    snprintf(n.s, sizeof n.s, "%s%s", prefix, suffix);
    return n;
}

int params_add(ParamTable *t, const char *name, int ndim, const int64_t *shape, ParamInit init,
               double init_arg, int decay, int trainable) {
    RT_ASSERT(ndim >= 1 && ndim <= PARAM_MAX_DIMS);
    RT_ASSERT(strlen(name) < PARAM_NAME_MAX);
    RT_ASSERT(params_find(t, name) < 0);
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->p = rt_realloc(t->p, sizeof(ParamInfo) * (size_t)t->cap);
    }
    ParamInfo *p = &t->p[t->n];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = ndim;
    p->numel = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        p->numel *= shape[i];
    }
    p->offset = (t->total + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN;
    p->init = init;
    p->init_arg = init_arg;
    p->decay = decay;
    p->trainable = trainable;
    t->total = p->offset + p->numel;
    return t->n++;
}

void params_set_recurrent(ParamTable *t, int idx) {
    RT_ASSERT(idx >= 0 && idx < t->n && !t->p[idx].orthogonal);
    t->p[idx].recurrent = 1;
}

void params_set_orthogonal(ParamTable *t, int idx) {
    RT_ASSERT(idx >= 0 && idx < t->n && !t->p[idx].recurrent);
    t->p[idx].orthogonal = 1;
}

int params_find(const ParamTable *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->p[i].name, name)) return i;
    return -1;
}

int64_t params_count(const ParamTable *t) {
    int64_t n = 0;
    for (int i = 0; i < t->n; i++) n += t->p[i].numel;
    return n;
}

void params_free(ParamTable *t) {
    rt_free(t->p);
    memset(t, 0, sizeof(*t));
}

void init_normal(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++) a->out[i] = a->p->init_arg * rng_normal(a->rng);
}

void init_zeros(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++) a->out[i] = 0;
}

void init_ones(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++) a->out[i] = 1;
}

void init_value(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++) a->out[i] = a->p->init_arg;
}

void init_uniform(const ParamInitArgs *a) {
    for (int64_t i = 0; i < a->p->numel; i++)
        a->out[i] = a->p->init_arg * (2 * rng_uniform(a->rng) - 1);
}

int params_check_finite(const ParamTable *t, const float *buf, int64_t lo, int64_t hi,
                        const char *what, char *err, size_t errlen) {
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        int64_t a = p->offset > lo ? p->offset : lo,
                b = p->offset + p->numel < hi ? p->offset + p->numel : hi, bad = 0, first = -1;
        for (int64_t e = a; e < b; e++)
            if (!isfinite(buf[e - lo]) && !bad++) first = e - p->offset;
        if (bad)
            return rt_error(err, errlen, NULL,
                            "%s: tensor %s holds %lld non-finite values (the first at element "
                            "%lld): the file is damaged",
                            what, p->name, (long long)bad, (long long)first);
    }
    return 0;
}
