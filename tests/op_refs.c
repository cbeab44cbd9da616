/* The refs file of the op table (tests/op_refs.h). */
#include "op_refs.h"

#include <string.h>

#include "util/error.h"

static const char MAGIC[8] = {'R', 'O', 'T', 'O', 'R', 'O', 'P', 'S'};
#define REFS_VERSION 2

static void put(FILE *f, const void *p, size_t bytes) {
    if (bytes && fwrite(p, 1, bytes, f) != bytes) rt_die("refs: write failed");
}

static void get(FILE *f, const char *path, void *p, size_t bytes) {
    if (bytes && fread(p, 1, bytes, f) != bytes) rt_die("%s: truncated refs file", path);
}

void refs_write_header(FILE *f, int ncases) {
    uint32_t head[2] = {REFS_VERSION, (uint32_t)ncases};
    put(f, MAGIC, sizeof MAGIC);
    put(f, head, sizeof head);
}

int refs_read_header(FILE *f, const char *path) {
    char magic[8];
    uint32_t head[2];
    get(f, path, magic, sizeof magic);
    get(f, path, head, sizeof head);
    if (memcmp(magic, MAGIC, sizeof MAGIC) || head[0] != REFS_VERSION)
        rt_die("%s: not a version %d refs file of test_ops_grad --refs", path, REFS_VERSION);
    return (int)head[1];
}

/* n values as f32 (the backends compared are fp32 and bf16: TOL_F32 is 1e-4, f32's rounding
 * 6e-8 of a value, and it halves the file the GPU bundle carries) */
static void put_array(FILE *f, const double *x, int64_t n) {
    float *y = rt_malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) y[i] = (float)x[i];
    put(f, y, sizeof(float) * (size_t)n);
    rt_free(y);
}

void refs_write_case(FILE *f, const RefCase *rc) {
    uint32_t len = (uint32_t)strlen(rc->name), nt = (uint32_t)rc->nt;
    put(f, &len, sizeof len);
    put(f, rc->name, len);
    put(f, &rc->scalar, sizeof rc->scalar);
    put(f, &nt, sizeof nt);
    for (int i = 0; i < rc->nt; i++) {
        const RefTensor *t = &rc->t[i];
        uint8_t has[2] = {(uint8_t)t->has_v, (uint8_t)t->has_d};
        put(f, &t->n, sizeof t->n);
        put(f, has, sizeof has);
        if (t->has_v) put_array(f, t->v_in, t->n);
        if (t->has_d) put_array(f, t->d_in, t->n);
        if (t->has_v) put_array(f, t->v_out, t->n);
        if (t->has_d) put_array(f, t->d_out, t->n);
    }
}

static double *get_array(FILE *f, const char *path, int64_t n) {
    float *y = rt_malloc(sizeof(float) * (size_t)(n ? n : 1));
    double *x = rt_malloc(sizeof(double) * (size_t)(n ? n : 1));
    get(f, path, y, sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = y[i];
    rt_free(y);
    return x;
}

void refs_read_case(FILE *f, const char *path, RefCase *rc) {
    uint32_t len, nt;
    *rc = (RefCase){0};
    get(f, path, &len, sizeof len);
    if (len >= sizeof rc->name) rt_die("%s: a case name of %u bytes", path, len);
    get(f, path, rc->name, len);
    get(f, path, &rc->scalar, sizeof rc->scalar);
    get(f, path, &nt, sizeof nt);
    if (nt > MAX_TENSORS) rt_die("%s: case %s has %u tensors", path, rc->name, nt);
    rc->nt = (int)nt;
    for (int i = 0; i < rc->nt; i++) {
        RefTensor *t = &rc->t[i];
        uint8_t has[2];
        get(f, path, &t->n, sizeof t->n);
        get(f, path, has, sizeof has);
        t->has_v = has[0], t->has_d = has[1];
        if (t->has_v) t->v_in = get_array(f, path, t->n);
        if (t->has_d) t->d_in = get_array(f, path, t->n);
        if (t->has_v) t->v_out = get_array(f, path, t->n);
        if (t->has_d) t->d_out = get_array(f, path, t->n);
    }
}

void refs_free_case(RefCase *rc) {
    for (int i = 0; i < rc->nt; i++) {
        RefTensor *t = &rc->t[i];
        double *p[4] = {t->v_in, t->d_in, t->v_out, t->d_out};
        for (int k = 0; k < 4; k++)
            if (p[k]) rt_free(p[k]);
    }
    *rc = (RefCase){0};
}

/* A copy of a tensor's values (or [i32] values) or of its gradient buffer. */
static double *f64_copy(const real *x, const int32_t *ix, int64_t n) {
    double *y = rt_malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) y[i] = ix ? (double)ix[i] : (double)x[i];
    return y;
}

void refs_from_cpu_run(const OpCase *c, RefCase *rc) {
    Op *o = op_new(c, backend_cpu());
    op_on_host(o);
    *rc = (RefCase){.nt = o->nt};
    snprintf(rc->name, sizeof rc->name, "%s", c->name);
    for (int i = 0; i < o->nt; i++) {
        const Tensor *t = &o->t[i];
        RefTensor *q = &rc->t[i];
        *q = (RefTensor){.n = t->spec.n, .has_v = t->role != T_ABSENT, .has_d = t->d != NULL};
        if (q->has_v) q->v_in = f64_copy(t->v, t->iv, q->n);
        if (q->has_d) q->d_in = f64_copy(t->d, NULL, q->n);
    }
    rc->scalar = c->op->fwd(o);
    op_backward(o);
    for (int i = 0; i < o->nt; i++) {
        Tensor *t = &o->t[i];
        RefTensor *q = &rc->t[i];
        if (has_grad(t) && t->spec.grad == GRAD_ADD) subtract(t->d, t->pre, q->n);
        if (q->has_v) q->v_out = f64_copy(t->v, t->iv, q->n);
        if (q->has_d) q->d_out = f64_copy(t->d, NULL, q->n);
    }
    op_free(o);
}
