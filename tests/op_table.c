/* The op table (tests/op_table.h): the tensor helpers, every op's definition, the cases and
 * the checks against direct computations. Compiled into the fp64 test_ops_grad and the fp32
 * test_ops_backends. */
#include "op_table.h"

#include "cpu/cpu_ops.h"
#include "harness.h"
#include "util/error.h"

#include <stdarg.h>
#include <string.h>

const int LENS[NSEG] = {70, 1, 33, 130};

/* A size of the case: its Dims field where set, else the op's own small one. */
static int64_t dim(int64_t given, int64_t small) { return given ? given : small; }

/* ---------------------------------------------------------------- helpers ---- */

/* n values with |x| in [lo, hi] and a random sign: never zero. */
real *rand_nz(Rng *r, int64_t n, double lo, double hi) {
    real *x = tu_rand(r, n, lo, hi);
    for (int64_t i = 0; i < n; i++)
        if (rng_uniform(r) < 0.5) x[i] = -x[i];
    return x;
}

/* Garbage for buffers that an op must overwrite. */
real *garbage(Rng *r, int64_t n) { return tu_rand(r, n, 50.0, 100.0); }

void subtract(real *a, const real *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) a[i] -= b[i];
}

/* Exact agreement (up to rounding) of a with the reference b. */
void check_equal(const char *what, const real *a, const real *b, int64_t n) {
    double e = tu_rel_err(a, b, n, 1e-3);
    printf("    %-40s rel err %.2e\n", what, e);
    CHECK_MSG(e <= EXACT_TOL, "%s: relative error %.3g > %.1g", what, e, EXACT_TOL);
}

void free_all(real **bufs, int n) {
    for (int i = 0; i < n; i++)
        if (bufs[i]) rt_free(bufs[i]);
}

static real *init_values(Rng *r, int64_t n, Init in) {
    switch (in.kind) {
    case INIT_NZ: return rand_nz(r, n, in.a, in.b);
    case INIT_UNIFORM: return tu_rand(r, n, in.a, in.b);
    case INIT_NORMAL: return tu_randn(r, n, in.a);
    case INIT_GARBAGE: return garbage(r, n);
    default: return tu_zeros(n);
    }
}

static Tensor *add_tensor(Op *o, Role role, Spec sp) {
    RT_ASSERT(o->nt < MAX_TENSORS);
    Tensor *t = &o->t[o->nt++];
    *t = (Tensor){.spec = sp, .role = role};
    if (role != T_ABSENT) t->v = init_values(&o->r, sp.n, sp.init);
    if (role == T_OUT) t->d = rand_nz(&o->r, sp.n, 0.05, 1.0);
    if (role == T_ABSENT || sp.grad == GRAD_ADD) {
        t->pre = rand_nz(&o->r, sp.n, 0.1, 1.0);
        t->d = tu_copy(t->pre, sp.n);
    } else if (sp.grad == GRAD_SET) {
        t->d = garbage(&o->r, sp.n);
    }
    return t;
}

static Tensor *input(Op *o, const char *name, int64_t n, Init init, GradKind grad) {
    return add_tensor(o, T_IN, (Spec){.name = name, .n = n, .init = init, .grad = grad});
}

static Tensor *output(Op *o, const char *name, int64_t n, Init init) {
    return add_tensor(o, T_OUT, (Spec){.name = name, .n = n, .init = init});
}

static Tensor *absent(Op *o, const char *name, int64_t n) {
    return add_tensor(o, T_ABSENT, (Spec){.name = name, .n = n});
}

static Tensor *aux(Op *o, const char *name, int64_t n, Init init) {
    return add_tensor(o, T_AUX, (Spec){.name = name, .n = n, .init = init});
}

/* [i32] values without a gradient (token ids, labels), filled by the build. */
static Tensor *indices(Op *o, const char *name, int64_t n) {
    RT_ASSERT(o->nt < MAX_TENSORS);
    Tensor *t = &o->t[o->nt++];
    *t = (Tensor){.spec = {.name = name, .n = n, .kind = EL_I32},
                  .role = T_AUX,
                  .iv = rt_calloc((size_t)n, sizeof(int32_t))};
    return t;
}

/* The value [f32] (and so a gradient that overwrites). */
static Tensor *f32(Tensor *t) {
    t->spec.kind = EL_F32;
    return t;
}

/* The gradient (or an output's probe) of another type than the rule's. */
static Tensor *dkind(Tensor *t, Elem k) {
    t->spec.dkind = k;
    return t;
}

static Tensor *fd_samples(Tensor *t, int samples) {
    t->spec.samples = samples;
    return t;
}

static Tensor *by_rows(Tensor *t, int64_t rowlen) {
    t->spec.rowlen = rowlen;
    return t;
}

/* Host values (ref, extra) and backend buffers (fwd, bwd); NULL for no tensor. */
static real *V(const Tensor *t) { return t ? t->v : NULL; }
static void *BV(const Tensor *t) { return t ? t->bv : NULL; }
static void *BD(const Tensor *t) { return t ? t->bd : NULL; }

/* Bytes of n elements of kind k on o's backend. */
static size_t elem_bytes(const Op *o, Elem k, int64_t n) {
    size_t size = k == EL_I32 ? sizeof(int32_t) : k == EL_F32 ? o->be->f32_size : o->be->act_size;
    return size * (size_t)n;
}

int has_grad(const Tensor *t) { return t->role == T_IN && t->spec.grad != GRAD_NONE; }

Elem tensor_kind(const Tensor *t) { return t->spec.kind == EL_DEFAULT ? EL_ACT : t->spec.kind; }

Elem tensor_dkind(const Tensor *t) {
    if (t->spec.dkind != EL_DEFAULT) return t->spec.dkind;
    return t->spec.grad == GRAD_ADD ? EL_F32 : tensor_kind(t);
}

Op *op_new(const OpCase *c, const Backend *be) {
    Op *o = rt_calloc(1, c->op->size);
    o->c = c;
    o->v = &c->v;
    o->be = be;
    rng_init(&o->r, c->seed, 0);
    const Dims *dm = &c->v.dims;
    o->ts = dm->lens ? tu_seqs(dm->lens, dm->nseg) : tu_seqs(LENS, NSEG);
    o->s = &o->ts.s;
    c->op->build(o);
    return o;
}

void op_free(Op *o) {
    for (int i = 0; i < o->nt; i++) {
        FREE_ALL(o->t[i].v, o->t[i].d, o->t[i].pre);
        if (o->t[i].iv) rt_free(o->t[i].iv);
    }
    tu_seqs_free(&o->ts);
    rt_free(o);
}

void op_on_host(Op *o) {
    for (int i = 0; i < o->nt; i++) {
        Tensor *t = &o->t[i];
        t->bv = t->iv ? (void *)t->iv : (void *)t->v;
        t->bd = t->d;
    }
}

void op_backward(Op *o) {
    o->c->op->bwd(o);
    for (int i = 0; i < o->nt; i++) {
        Tensor *t = &o->t[i];
        if (!t->spec.dscale) continue;
        RT_ASSERT(t->bd == t->d);
        for (int64_t j = 0; j < t->spec.n; j++) t->d[j] /= (real)t->spec.dscale;
    }
}

/* "<case> <what>" for the printed lines. */
const char *label(Op *o, const char *fmt, ...) {
    int k = snprintf(o->label, sizeof o->label, "%s ", o->c->name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->label + k, sizeof o->label - (size_t)k, fmt, ap);
    va_end(ap);
    return o->label;
}

/* ---------------------------------------------------------------- dense ---- */

typedef struct {
    Op o;
    Tensor *x, *w, *bias, *out;
    int M, N, K;
} Matmul;

static void matmul_build(Op *o) {
    Matmul *m = (Matmul *)o;
    /* GPU-sized: dims.N rows, dims.V outputs, dims.K inputs */
    m->M = (int)dim(o->v->dims.N, 37), m->N = (int)dim(o->v->dims.V, 23),
    m->K = (int)dim(o->v->dims.K, 19);
    m->x = input(o, "x", (int64_t)m->M * m->K, NZ(0.05, 1.0), GRAD_SET);
    m->w = input(o, "w", (int64_t)m->N * m->K, NZ(0.05, 1.0), GRAD_ADD);
    if (o->v->bias) m->bias = input(o, "bias", m->N, NZ(0.05, 1.0), GRAD_ADD);
    m->out = output(o, "out", (int64_t)m->M * m->N, ZERO);
}

static double matmul_fwd(Op *o) {
    Matmul *m = (Matmul *)o;
    o->be->matmul_fwd(BV(m->out), BV(m->x), BV(m->w), BV(m->bias), m->M, m->N, m->K);
    return 0;
}

static void matmul_bwd(Op *o) {
    Matmul *m = (Matmul *)o;
    o->be->matmul_bwd(BD(m->x), BD(m->w), BD(m->bias), BD(m->out), BV(m->x), BV(m->w), m->M, m->N,
                      m->K, o->accumulate);
}

static void matmul_ref(Op *o, real *ref) {
    Matmul *m = (Matmul *)o;
    const real *x = m->x->v, *w = m->w->v, *bias = V(m->bias);
    for (int i = 0; i < m->M; i++)
        for (int j = 0; j < m->N; j++) {
            double acc = bias ? (double)bias[j] : 0.0;
            for (int kk = 0; kk < m->K; kk++)
                acc += (double)x[i * m->K + kk] * (double)w[j * m->K + kk];
            ref[i * m->N + j] = (real)acc;
        }
}

/* dx, dw and dbias may each be NULL */
static void matmul_extra(Op *o) {
    Matmul *m = (Matmul *)o;
    int64_t nw = m->w->spec.n;
    real *dw = tu_zeros(nw);
    cpu_matmul_bwd(NULL, dw, NULL, m->out->d, m->x->v, m->w->v, m->M, m->N, m->K, 0);
    check_equal(label(o, "dw with dx=dbias=NULL"), dw, m->w->d, nw);
    int64_t nx = m->x->spec.n;
    real *dx = tu_zeros(nx);
    cpu_matmul_bwd(dx, NULL, NULL, m->out->d, NULL, m->w->v, m->M, m->N, m->K, 0);
    check_equal(label(o, "dx with dw=dbias=NULL"), dx, m->x->d, nx);
    rt_free(dw);
    rt_free(dx);
}

static const OpDef MATMUL = {.size = sizeof(Matmul),
                             .build = matmul_build,
                             .fwd = matmul_fwd,
                             .bwd = matmul_bwd,
                             .ref = matmul_ref,
                             .extra = matmul_extra,
                             .accumulate = 1,
                             .ops = "matmul_fwd matmul_bwd"};

/* A group of products of one input (a mixer's input projections): parts of widths 23, 4 and
 * 16, the second with a bias when the case has one. */
enum { GROUP_PARTS = 3 };
static const int GROUP_N[GROUP_PARTS] = {23, 4, 16};

typedef struct {
    Op o;
    Tensor *x, *w[GROUP_PARTS], *bias, *y[GROUP_PARTS];
    int M, K;
} MatmulGroupOp;

static void matmul_group_build(Op *o) {
    MatmulGroupOp *m = (MatmulGroupOp *)o;
    m->M = 37, m->K = 19;
    m->x = input(o, "x", (int64_t)m->M * m->K, NZ(0.05, 1.0), GRAD_SET);
    for (int i = 0; i < GROUP_PARTS; i++)
        m->w[i] = input(o, "w", (int64_t)GROUP_N[i] * m->K, NZ(0.05, 1.0), GRAD_ADD);
    if (o->v->bias) m->bias = input(o, "bias", GROUP_N[1], NZ(0.05, 1.0), GRAD_ADD);
    for (int i = 0; i < GROUP_PARTS; i++)
        m->y[i] = output(o, "y", (int64_t)m->M * GROUP_N[i], ZERO);
}

static MatmulGroup group_args(MatmulGroupOp *m, real *(*value)(const Tensor *)) {
    MatmulGroup g = {.x = value(m->x), .M = m->M, .K = m->K, .n = GROUP_PARTS};
    for (int i = 0; i < GROUP_PARTS; i++)
        g.p[i] = (MatmulPart){.w = value(m->w[i]),
                              .bias = i == 1 ? value(m->bias) : NULL,
                              .y = value(m->y[i]),
                              .N = GROUP_N[i]};
    return g;
}

static real *backend_value(const Tensor *t) { return t ? (real *)t->bv : NULL; }
static real *host_value(const Tensor *t) { return V(t); }

static double matmul_group_fwd(Op *o) {
    MatmulGroup g = group_args((MatmulGroupOp *)o, backend_value);
    o->be->matmul_group_fwd(&g);
    return 0;
}

static void matmul_group_bwd(Op *o) {
    MatmulGroupOp *m = (MatmulGroupOp *)o;
    MatmulGroupGrads a = {
        .g = group_args(m, backend_value), .dx = BD(m->x), .accumulate = o->accumulate};
    for (int i = 0; i < GROUP_PARTS; i++) {
        a.dy[i] = BD(m->y[i]);
        a.dw[i] = BD(m->w[i]);
        a.dbias[i] = i == 1 ? BD(m->bias) : NULL;
    }
    o->be->matmul_group_bwd(&a);
}

/* The first part, directly. */
static void matmul_group_ref(Op *o, real *ref) {
    MatmulGroupOp *m = (MatmulGroupOp *)o;
    const real *x = m->x->v, *w = m->w[0]->v;
    for (int i = 0; i < m->M; i++)
        for (int j = 0; j < GROUP_N[0]; j++) {
            double acc = 0.0;
            for (int kk = 0; kk < m->K; kk++)
                acc += (double)x[i * m->K + kk] * (double)w[j * m->K + kk];
            ref[i * GROUP_N[0] + j] = (real)acc;
        }
}

/* Every part's output equals matmul_fwd's of its weight (and bias). */
static void matmul_group_extra(Op *o) {
    MatmulGroupOp *m = (MatmulGroupOp *)o;
    MatmulGroup g = group_args(m, host_value);
    for (int i = 0; i < GROUP_PARTS; i++) {
        int64_t n = (int64_t)m->M * GROUP_N[i];
        real *want = tu_zeros(n);
        cpu_matmul_fwd(want, g.x, g.p[i].w, g.p[i].bias, m->M, GROUP_N[i], m->K);
        check_equal(label(o, "part %d against matmul_fwd", i), m->y[i]->v, want, n);
        rt_free(want);
    }
}

static const OpDef MATMUL_GROUP = {.size = sizeof(MatmulGroupOp),
                                   .build = matmul_group_build,
                                   .fwd = matmul_group_fwd,
                                   .bwd = matmul_group_bwd,
                                   .ref = matmul_group_ref,
                                   .extra = matmul_group_extra,
                                   .accumulate = 1,
                                   .ops = "matmul_group_fwd matmul_group_bwd"};

/* y = a + b; its backward is the identity, formed with the op itself (da = dy + 0). */
typedef struct {
    Op o;
    Tensor *a, *b, *zero, *y;
    int64_t n;
} Add;

static void add_build(Op *o) {
    Add *m = (Add *)o;
    m->n = dim(o->v->dims.N, 301);
    m->a = input(o, "a", m->n, NZ(0.05, 1.0), GRAD_SET);
    m->b = input(o, "b", m->n, NZ(0.05, 1.0), GRAD_SET);
    m->zero = aux(o, "zero", m->n, ZERO);
    m->y = output(o, "y", m->n, ZERO);
}

static double add_fwd(Op *o) {
    Add *m = (Add *)o;
    o->be->add(BV(m->y), BV(m->a), BV(m->b), m->n);
    return 0;
}

static void add_bwd(Op *o) {
    Add *m = (Add *)o;
    o->be->add(BD(m->a), BD(m->y), BV(m->zero), m->n);
    o->be->add(BD(m->b), BD(m->y), BV(m->zero), m->n);
}

static void add_ref(Op *o, real *ref) {
    Add *m = (Add *)o;
    for (int64_t i = 0; i < m->n; i++) ref[i] = m->a->v[i] + m->b->v[i];
}

static const OpDef ADD = {.size = sizeof(Add),
                          .build = add_build,
                          .fwd = add_fwd,
                          .bwd = add_bwd,
                          .ref = add_ref,
                          .ops = "add"};

/* The optimizer's gradient norm and clip: L = sumsq(x) (returned, fp64 on the host), so
 * dx = 2 x, formed as a copy of x scaled by 2. */
typedef struct {
    Op o;
    Tensor *x;
    int64_t n;
} SumsqScale;

static void sumsq_scale_build(Op *o) {
    SumsqScale *m = (SumsqScale *)o;
    m->n = dim(o->v->dims.N, 1001);
    m->x = f32(input(o, "x", m->n, NZ(0.05, 3.0), GRAD_SET));
}

static double sumsq_scale_fwd(Op *o) {
    SumsqScale *m = (SumsqScale *)o;
    return o->be->sumsq(BV(m->x), m->n);
}

static void sumsq_scale_bwd(Op *o) {
    SumsqScale *m = (SumsqScale *)o;
    o->be->copy(BD(m->x), BV(m->x), elem_bytes(o, EL_F32, m->n));
    o->be->scale(BD(m->x), m->n, 2.0);
}

static const OpDef SUMSQ_SCALE = {.size = sizeof(SumsqScale),
                                  .build = sumsq_scale_build,
                                  .fwd = sumsq_scale_fwd,
                                  .bwd = sumsq_scale_bwd,
                                  .ops = "sumsq scale"};

/* y = a + b with y = a (BaseConv's skip); out of place, the case `add`. */
static void test_add_in_place(void) {
    Rng r;
    rng_init(&r, 103, 0);
    int64_t n = 301;
    real *a = rand_nz(&r, n, 0.05, 1.0), *b = rand_nz(&r, n, 0.05, 1.0);
    real *ref = tu_zeros(n);
    for (int64_t i = 0; i < n; i++) ref[i] = a[i] + b[i];
    cpu_add(a, a, b, n);
    check_equal("add in place", a, ref, n);
    FREE_ALL(a, b, ref);
}

/* Token ids 0..6 only, so they repeat and ids 7..10 get no gradient; with a run of repeats. */
typedef struct {
    Op o;
    Tensor *tok, *E, *out;
    int64_t n;
    int C;
} Embedding;

static void embedding_build(Op *o) {
    Embedding *m = (Embedding *)o;
    int Vocab = 11;
    m->n = 41, m->C = 9;
    m->tok = indices(o, "tok", m->n);
    int32_t *tok = m->tok->iv;
    for (int64_t i = 0; i < m->n; i++) tok[i] = (int32_t)rng_below(&o->r, 7);
    tok[5] = tok[6] = tok[7] = 3;
    m->E = input(o, "E", (int64_t)Vocab * m->C, NZ(0.05, 1.0), GRAD_ADD);
    m->out = output(o, "out", m->n * m->C, ZERO);
}

static double embedding_fwd(Op *o) {
    Embedding *m = (Embedding *)o;
    o->be->embedding_fwd(BV(m->out), BV(m->tok), BV(m->E), m->n, m->C);
    return 0;
}

static void embedding_bwd(Op *o) {
    Embedding *m = (Embedding *)o;
    o->be->embedding_bwd(BD(m->E), BV(m->tok), BD(m->out), m->n, m->C);
}

static void embedding_ref(Op *o, real *ref) {
    Embedding *m = (Embedding *)o;
    for (int64_t i = 0; i < m->n; i++)
        for (int j = 0; j < m->C; j++) ref[i * m->C + j] = m->E->v[m->tok->iv[i] * m->C + j];
}

static const OpDef EMBEDDING = {.size = sizeof(Embedding),
                                .build = embedding_build,
                                .fwd = embedding_fwd,
                                .bwd = embedding_bwd,
                                .ref = embedding_ref,
                                .ops = "embedding_fwd embedding_bwd"};

/* ---------------------------------------------------------- normalisation ---- */

#define NORM_EPS 1e-6f

typedef struct {
    Op o;
    Tensor *x, *w, *y, *rstd;
    int64_t N;
    int G, C;
} RmsNorm;

static void rmsnorm_build(Op *o) {
    RmsNorm *m = (RmsNorm *)o;
    m->N = dim(o->v->dims.N, 13), m->G = o->v->groups, m->C = (int)dim(o->v->dims.C, 10);
    int64_t n = m->N * m->G * m->C;
    m->x = input(o, "x", n, NZ(0.05, 1.5), GRAD_SET);
    m->w = input(o, "w", o->v->per_group ? (int64_t)m->G * m->C : m->C, NZ(0.3, 1.5), GRAD_ADD);
    m->y = output(o, "y", n, ZERO);
    m->rstd = f32(aux(o, "rstd", m->N * m->G, ZERO));
}

static double rmsnorm_fwd(Op *o) {
    RmsNorm *m = (RmsNorm *)o;
    o->be->rmsnorm_fwd(BV(m->y), BV(m->rstd), BV(m->x), BV(m->w), m->N, m->G, m->C, o->v->per_group,
                       NORM_EPS);
    return 0;
}

static void rmsnorm_bwd(Op *o) {
    RmsNorm *m = (RmsNorm *)o;
    o->be->rmsnorm_bwd(BD(m->x), BD(m->w), BD(m->y), BV(m->x), BV(m->w), BV(m->rstd), m->N, m->G,
                       m->C, o->v->per_group, o->accumulate);
}

static void rmsnorm_ref(Op *o, real *ref) {
    RmsNorm *m = (RmsNorm *)o;
    const real *x = m->x->v;
    int C = m->C;
    for (int64_t row = 0; row < m->N * m->G; row++) {
        double ss = 0;
        for (int j = 0; j < C; j++) ss += (double)x[row * C + j] * (double)x[row * C + j];
        double rs = 1.0 / sqrt(ss / C + (double)NORM_EPS);
        const real *wr = m->w->v + (o->v->per_group ? (row % m->G) * C : 0);
        for (int j = 0; j < C; j++)
            ref[row * C + j] = (real)((double)x[row * C + j] * rs * (double)wr[j]);
    }
}

static const OpDef RMSNORM = {.size = sizeof(RmsNorm),
                              .build = rmsnorm_build,
                              .fwd = rmsnorm_fwd,
                              .bwd = rmsnorm_bwd,
                              .ref = rmsnorm_ref,
                              .accumulate = 1,
                              .ops = "rmsnorm_fwd rmsnorm_bwd"};

/* LayerNorm: y = (x - mean) rstd w + b per row of C */
typedef struct {
    Op o;
    Tensor *x, *w, *b, *y, *mean, *rstd;
    int64_t N;
    int C;
} LayerNorm;

static void layernorm_build(Op *o) {
    LayerNorm *m = (LayerNorm *)o;
    m->N = dim(o->v->dims.N, 13), m->C = (int)dim(o->v->dims.C, 10);
    m->x = input(o, "x", m->N * m->C, NZ(0.05, 1.5), GRAD_SET);
    m->w = input(o, "w", m->C, NZ(0.3, 1.5), GRAD_ADD);
    m->b = input(o, "b", m->C, NZ(0.05, 1.0), GRAD_ADD);
    m->y = output(o, "y", m->N * m->C, ZERO);
    m->mean = f32(aux(o, "mean", m->N, ZERO));
    m->rstd = f32(aux(o, "rstd", m->N, ZERO));
}

static double layernorm_fwd(Op *o) {
    LayerNorm *m = (LayerNorm *)o;
    o->be->layernorm_fwd(BV(m->y), BV(m->mean), BV(m->rstd), BV(m->x), BV(m->w), BV(m->b), m->N,
                         m->C, NORM_EPS);
    return 0;
}

static void layernorm_bwd(Op *o) {
    LayerNorm *m = (LayerNorm *)o;
    o->be->layernorm_bwd(BD(m->x), BD(m->w), BD(m->b), BD(m->y), BV(m->x), BV(m->w), BV(m->mean),
                         BV(m->rstd), m->N, m->C, o->accumulate);
}

static void layernorm_ref(Op *o, real *ref) {
    LayerNorm *m = (LayerNorm *)o;
    const real *x = m->x->v;
    int C = m->C;
    for (int64_t row = 0; row < m->N; row++) {
        double mu = 0, var = 0;
        for (int j = 0; j < C; j++) mu += (double)x[row * C + j] / C;
        for (int j = 0; j < C; j++)
            var += ((double)x[row * C + j] - mu) * ((double)x[row * C + j] - mu) / C;
        for (int j = 0; j < C; j++)
            ref[row * C + j] = (real)(((double)x[row * C + j] - mu) / sqrt(var + (double)NORM_EPS) *
                                          (double)m->w->v[j] +
                                      (double)m->b->v[j]);
    }
}

static const OpDef LAYERNORM = {.size = sizeof(LayerNorm),
                                .build = layernorm_build,
                                .fwd = layernorm_fwd,
                                .bwd = layernorm_bwd,
                                .ref = layernorm_ref,
                                .accumulate = 1,
                                .ops = "layernorm_fwd layernorm_bwd"};

typedef struct {
    Op o;
    Tensor *x, *y, *rn;
    int64_t N;
    int G, D;
} L2Norm;

static void l2norm_build(Op *o) {
    L2Norm *m = (L2Norm *)o;
    m->N = dim(o->v->dims.N, 13), m->G = (int)dim(o->v->dims.H, 3),
    m->D = (int)dim(o->v->dims.K, 8);
    int64_t n = m->N * m->G * m->D;
    m->x = input(o, "x", n, NZ(0.05, 1.5), GRAD_SET);
    m->y = output(o, "y", n, ZERO);
    m->rn = f32(aux(o, "rnorm", m->N * m->G, ZERO));
}

static double l2norm_fwd(Op *o) {
    L2Norm *m = (L2Norm *)o;
    o->be->l2norm_fwd(BV(m->y), BV(m->rn), BV(m->x), m->N, m->G, m->D, NORM_EPS);
    return 0;
}

static void l2norm_bwd(Op *o) {
    L2Norm *m = (L2Norm *)o;
    o->be->l2norm_bwd(BD(m->x), BD(m->y), BV(m->y), BV(m->rn), m->N, m->G, m->D, o->accumulate);
}

static void l2norm_ref(Op *o, real *ref) {
    L2Norm *m = (L2Norm *)o;
    const real *x = m->x->v;
    int D = m->D;
    for (int64_t row = 0; row < m->N * m->G; row++) {
        double ss = 0;
        for (int j = 0; j < D; j++) ss += (double)x[row * D + j] * (double)x[row * D + j];
        for (int j = 0; j < D; j++)
            ref[row * D + j] = (real)((double)x[row * D + j] / sqrt(ss + (double)NORM_EPS));
    }
}

static const OpDef L2NORM = {.size = sizeof(L2Norm),
                             .build = l2norm_build,
                             .fwd = l2norm_fwd,
                             .bwd = l2norm_bwd,
                             .ref = l2norm_ref,
                             .accumulate = 1,
                             .ops = "l2norm_fwd l2norm_bwd"};

/* ---------------------------------------------------------- elementwise ---- */

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* out = x * act(g); `rebuilt`: gate_mul_bwd_rebuild's copy of out */
typedef struct {
    Op o;
    Tensor *x, *g, *out, *rebuilt;
    int64_t n;
} GateMul;

static void gate_mul_build(Op *o) {
    GateMul *m = (GateMul *)o;
    m->n = dim(o->v->dims.N, 157);
    m->x = input(o, "x", m->n, NZ(0.05, 2.0), GRAD_SET);
    m->g = input(o, "g", m->n, NZ(0.05, 5.0), GRAD_SET);
    m->out = output(o, "out", m->n, ZERO);
}

static double gate_mul_fwd(Op *o) {
    GateMul *m = (GateMul *)o;
    o->be->gate_mul_fwd(BV(m->out), BV(m->x), BV(m->g), m->n, o->v->act);
    return 0;
}

static void gate_mul_bwd(Op *o) {
    GateMul *m = (GateMul *)o;
    o->be->gate_mul_bwd(BD(m->x), BD(m->g), BD(m->out), BV(m->x), BV(m->g), m->n, o->v->act);
}

/* act(g) of the gates in double: swish, sigmoid, or g itself */
static double gate_act_ref(Activation act, double g) {
    return act == ACT_SILU ? g * sigmoid(g) : act == ACT_NONE ? g : sigmoid(g);
}

static void gate_mul_ref(Op *o, real *ref) {
    GateMul *m = (GateMul *)o;
    for (int64_t i = 0; i < m->n; i++)
        ref[i] = (real)((double)m->x->v[i] * gate_act_ref(o->v->act, (double)m->g->v[i]));
}

static const OpDef GATE_MUL = {.size = sizeof(GateMul),
                               .build = gate_mul_build,
                               .fwd = gate_mul_fwd,
                               .bwd = gate_mul_bwd,
                               .ref = gate_mul_ref,
                               .ops = "gate_mul_fwd gate_mul_bwd"};

/* The backward that also rebuilds out (the MLP's product for the down projection's dw). */
static void gate_mul_rebuild_build(Op *o) {
    GateMul *m = (GateMul *)o;
    gate_mul_build(o);
    m->rebuilt = aux(o, "rebuilt", m->n, GARBAGE);
}

static void gate_mul_rebuild_bwd(Op *o) {
    GateMul *m = (GateMul *)o;
    o->be->gate_mul_bwd_rebuild(BV(m->rebuilt), BD(m->x), BD(m->g), BD(m->out), BV(m->x), BV(m->g),
                                m->n, o->v->act);
}

/* the rebuilt product is the forward's, bit for bit */
static void gate_mul_rebuild_extra(Op *o) {
    GateMul *m = (GateMul *)o;
    check_equal(label(o, "rebuilt out"), m->rebuilt->v, m->out->v, m->n);
}

static const OpDef GATE_MUL_REBUILD = {.size = sizeof(GateMul),
                                       .build = gate_mul_rebuild_build,
                                       .fwd = gate_mul_fwd,
                                       .bwd = gate_mul_rebuild_bwd,
                                       .ref = gate_mul_ref,
                                       .extra = gate_mul_rebuild_extra,
                                       .ops = "gate_mul_fwd gate_mul_bwd_rebuild"};

/* The MLP's gated products (MatmulGateMulArgs, GateMulMatmulDx) at M x N x K = 37 x 24 x 16
 * (widths of multiples of 8, as the CUDA fused kernels take them; a GPU-sized case gives N, V
 * and K). matmul_gate_mul: out = y * act(g), y = x w^T, both outputs; its backward through
 * the ops it stands for. */
typedef struct {
    Op o;
    Tensor *x, *w, *g, *out, *y, *dy, *p, *dp;
    int M, N, K;
} GatedMatmul;

static void gated_matmul_dims(Op *o) {
    GatedMatmul *m = (GatedMatmul *)o;
    m->M = (int)dim(o->v->dims.N, 37), m->N = (int)dim(o->v->dims.V, 24);
    m->K = (int)dim(o->v->dims.K, 16);
}

static void matmul_gate_mul_build(Op *o) {
    GatedMatmul *m = (GatedMatmul *)o;
    gated_matmul_dims(o);
    int64_t mn = (int64_t)m->M * m->N;
    m->x = input(o, "x", (int64_t)m->M * m->K, NZ(0.05, 1.0), GRAD_SET);
    m->w = input(o, "w", (int64_t)m->N * m->K, NZ(0.05, 1.0), GRAD_ADD);
    m->g = input(o, "g", mn, NZ(0.05, 4.0), GRAD_SET);
    m->out = output(o, "out", mn, ZERO);
    m->y = output(o, "y", mn, ZERO);
    m->dy = aux(o, "dy", mn, ZERO);
}

static double matmul_gate_mul_fwd(Op *o) {
    GatedMatmul *m = (GatedMatmul *)o;
    o->be->matmul_gate_mul_fwd(&(MatmulGateMulArgs){.x = BV(m->x),
                                                    .w = BV(m->w),
                                                    .g = BV(m->g),
                                                    .y = BV(m->y),
                                                    .out = BV(m->out),
                                                    .M = m->M,
                                                    .N = m->N,
                                                    .K = m->K,
                                                    .act = o->v->act});
    return 0;
}

/* dL/dy = y's own probe + the gate's part */
static void matmul_gate_mul_bwd(Op *o) {
    GatedMatmul *m = (GatedMatmul *)o;
    int64_t mn = (int64_t)m->M * m->N;
    o->be->gate_mul_bwd(BV(m->dy), BD(m->g), BD(m->out), BV(m->y), BV(m->g), mn, o->v->act);
    o->be->add(BV(m->dy), BV(m->dy), BD(m->y), mn);
    o->be->matmul_bwd(BD(m->x), BD(m->w), NULL, BV(m->dy), BV(m->x), BV(m->w), m->M, m->N, m->K, 0);
}

static void matmul_gate_mul_ref(Op *o, real *ref) {
    GatedMatmul *m = (GatedMatmul *)o;
    for (int i = 0; i < m->M; i++)
        for (int j = 0; j < m->N; j++) {
            double acc = 0;
            for (int k = 0; k < m->K; k++)
                acc += (double)m->x->v[i * m->K + k] * (double)m->w->v[j * m->K + k];
            int64_t e = (int64_t)i * m->N + j;
            ref[e] = (real)(acc * gate_act_ref(o->v->act, (double)m->g->v[e]));
        }
}

/* y is matmul_fwd's and out gate_mul_fwd's of it, bit for bit */
static void matmul_gate_mul_extra(Op *o) {
    GatedMatmul *m = (GatedMatmul *)o;
    int64_t mn = (int64_t)m->M * m->N;
    real *y = tu_zeros(mn), *out = tu_zeros(mn);
    cpu_matmul_fwd(y, m->x->v, m->w->v, NULL, m->M, m->N, m->K);
    cpu_gate_mul_fwd(out, y, m->g->v, mn, o->v->act);
    check_equal(label(o, "y against matmul_fwd"), m->y->v, y, mn);
    check_equal(label(o, "out against gate_mul_fwd"), m->out->v, out, mn);
    FREE_ALL(y, out);
}

static const OpDef MATMUL_GATE_MUL = {.size = sizeof(GatedMatmul),
                                      .build = matmul_gate_mul_build,
                                      .fwd = matmul_gate_mul_fwd,
                                      .bwd = matmul_gate_mul_bwd,
                                      .ref = matmul_gate_mul_ref,
                                      .extra = matmul_gate_mul_extra,
                                      .ops = "matmul_gate_mul_fwd gate_mul_bwd add matmul_bwd"};

/* gate_mul_matmul: out = p w^T, p = x * act(g) [M, K]; the backward's dx and dg by
 * gate_mul_matmul_dx, which rebuilds p for dw. */
static void gate_mul_matmul_build(Op *o) {
    GatedMatmul *m = (GatedMatmul *)o;
    gated_matmul_dims(o);
    int64_t mk = (int64_t)m->M * m->K;
    m->x = input(o, "x", mk, NZ(0.05, 2.0), GRAD_SET);
    m->g = input(o, "g", mk, NZ(0.05, 4.0), GRAD_SET);
    m->w = input(o, "w", (int64_t)m->N * m->K, NZ(0.05, 1.0), GRAD_ADD);
    m->out = output(o, "out", (int64_t)m->M * m->N, ZERO);
    m->y = aux(o, "p", mk, ZERO);
    m->p = aux(o, "rebuilt", mk, GARBAGE);
    m->dp = aux(o, "dp", mk, GARBAGE);
}

static double gate_mul_matmul_fwd(Op *o) {
    GatedMatmul *m = (GatedMatmul *)o;
    o->be->gate_mul_fwd(BV(m->y), BV(m->x), BV(m->g), (int64_t)m->M * m->K, o->v->act);
    o->be->matmul_fwd(BV(m->out), BV(m->y), BV(m->w), NULL, m->M, m->N, m->K);
    return 0;
}

static void gate_mul_matmul_bwd(Op *o) {
    GatedMatmul *m = (GatedMatmul *)o;
    o->be->gate_mul_matmul_dx(&(GateMulMatmulDx){.dout = BD(m->out),
                                                 .w = BV(m->w),
                                                 .x = BV(m->x),
                                                 .g = BV(m->g),
                                                 .dx = BD(m->x),
                                                 .dg = BD(m->g),
                                                 .p = BV(m->p),
                                                 .dp = BV(m->dp),
                                                 .M = m->M,
                                                 .N = m->N,
                                                 .K = m->K,
                                                 .act = o->v->act});
    o->be->matmul_bwd(NULL, BD(m->w), NULL, BD(m->out), BV(m->p), NULL, m->M, m->N, m->K, 0);
}

static void gate_mul_matmul_ref(Op *o, real *ref) {
    GatedMatmul *m = (GatedMatmul *)o;
    for (int i = 0; i < m->M; i++)
        for (int j = 0; j < m->N; j++) {
            double acc = 0;
            for (int k = 0; k < m->K; k++) {
                int64_t e = (int64_t)i * m->K + k;
                acc += (double)m->x->v[e] * gate_act_ref(o->v->act, (double)m->g->v[e]) *
                       (double)m->w->v[j * m->K + k];
            }
            ref[(int64_t)i * m->N + j] = (real)acc;
        }
}

/* the rebuilt product is the forward's, bit for bit */
static void gate_mul_matmul_extra(Op *o) {
    GatedMatmul *m = (GatedMatmul *)o;
    check_equal(label(o, "rebuilt p"), m->p->v, m->y->v, (int64_t)m->M * m->K);
}

static const OpDef GATE_MUL_MATMUL = {.size = sizeof(GatedMatmul),
                                      .build = gate_mul_matmul_build,
                                      .fwd = gate_mul_matmul_fwd,
                                      .bwd = gate_mul_matmul_bwd,
                                      .ref = gate_mul_matmul_ref,
                                      .extra = gate_mul_matmul_extra,
                                      .ops =
                                          "gate_mul_fwd matmul_fwd gate_mul_matmul_dx matmul_bwd"};

/* The readout's RMSNorm and output gate (rmsnorm_gate_fwd/bwd): r = rmsnorm(x; w) * act(gp)
 * over G groups of 16 channels a row (rows of 16-byte vectors for the CUDA fused kernels), the
 * weight shared or per group; on and don are the CPU's saved and scratch buffers. */
typedef struct {
    Op o;
    Tensor *x, *w, *gp, *r, *rstd, *on, *don;
    int64_t N;
    int G, C;
} RmsNormGate;

static void rmsnorm_gate_build(Op *o) {
    RmsNormGate *m = (RmsNormGate *)o;
    m->N = dim(o->v->dims.N, 13), m->G = o->v->groups, m->C = (int)dim(o->v->dims.C, 16);
    int64_t n = m->N * m->G * m->C;
    m->x = input(o, "x", n, NZ(0.05, 1.5), GRAD_SET);
    m->w = input(o, "w", o->v->per_group ? (int64_t)m->G * m->C : m->C, NZ(0.3, 1.5), GRAD_ADD);
    m->gp = input(o, "gp", n, NZ(0.05, 4.0), GRAD_SET);
    m->r = output(o, "r", n, ZERO);
    m->rstd = f32(aux(o, "rstd", m->N * m->G, ZERO));
    m->on = aux(o, "on", n, ZERO);
    m->don = aux(o, "don", n, ZERO);
}

static RmsnormGateArgs rmsnorm_gate_args(const Op *o) {
    const RmsNormGate *m = (const RmsNormGate *)o;
    return (RmsnormGateArgs){.x = BV(m->x),
                             .w = BV(m->w),
                             .gp = BV(m->gp),
                             .N = m->N,
                             .G = m->G,
                             .C = m->C,
                             .w_per_group = o->v->per_group,
                             .act = o->v->act,
                             .eps = NORM_EPS,
                             .r = BV(m->r),
                             .rstd = BV(m->rstd),
                             .on = BV(m->on)};
}

static double rmsnorm_gate_fwd(Op *o) {
    RmsnormGateArgs a = rmsnorm_gate_args(o);
    o->be->rmsnorm_gate_fwd(&a);
    return 0;
}

static void rmsnorm_gate_bwd(Op *o) {
    RmsNormGate *m = (RmsNormGate *)o;
    RmsnormGateGrads g = {.a = rmsnorm_gate_args(o),
                          .dr = BD(m->r),
                          .dx = BD(m->x),
                          .dgp = BD(m->gp),
                          .dw = BD(m->w),
                          .don = BV(m->don)};
    o->be->rmsnorm_gate_bwd(&g);
}

static void rmsnorm_gate_ref(Op *o, real *ref) {
    RmsNormGate *m = (RmsNormGate *)o;
    const real *x = m->x->v;
    int C = m->C;
    for (int64_t row = 0; row < m->N * m->G; row++) {
        double ss = 0;
        for (int j = 0; j < C; j++) ss += (double)x[row * C + j] * (double)x[row * C + j];
        double rs = 1.0 / sqrt(ss / C + (double)NORM_EPS);
        const real *wr = m->w->v + (o->v->per_group ? (row % m->G) * C : 0);
        for (int j = 0; j < C; j++) {
            int64_t i = row * C + j;
            double on = (double)x[i] * rs * (double)wr[j];
            ref[i] = (real)(on * gate_act_ref(o->v->act, (double)m->gp->v[i]));
        }
    }
}

static const OpDef RMSNORM_GATE = {.size = sizeof(RmsNormGate),
                                   .build = rmsnorm_gate_build,
                                   .fwd = rmsnorm_gate_fwd,
                                   .bwd = rmsnorm_gate_bwd,
                                   .ref = rmsnorm_gate_ref,
                                   .ops = "rmsnorm_gate_fwd rmsnorm_gate_bwd"};

/* The one-input elementwise ops, out = f(x) over 157 values with |x| in [0.05, v.hi]. */
typedef struct {
    Op o;
    Tensor *x, *out;
    int64_t n;
} Unary;

static void unary_build(Op *o) {
    Unary *m = (Unary *)o;
    m->n = 157;
    m->x = input(o, "x", m->n, NZ(0.05, o->v->hi), GRAD_SET);
    m->out = output(o, "out", m->n, ZERO);
}

/* The gates' form: the output [f32] (and so its dout). */
static void unary_f32_build(Op *o) {
    unary_build(o);
    f32(((Unary *)o)->out);
}

static double silu_fwd(Op *o) {
    Unary *m = (Unary *)o;
    o->be->silu_fwd(BV(m->out), BV(m->x), m->n);
    return 0;
}

static void silu_bwd(Op *o) {
    Unary *m = (Unary *)o;
    o->be->silu_bwd(BD(m->x), BD(m->out), BV(m->x), m->n);
}

static const OpDef SILU = {.size = sizeof(Unary),
                           .build = unary_build,
                           .fwd = silu_fwd,
                           .bwd = silu_bwd,
                           .ops = "silu_fwd silu_bwd"};

static double gelu_fwd(Op *o) {
    Unary *m = (Unary *)o;
    o->be->gelu_fwd(BV(m->out), BV(m->x), m->n);
    return 0;
}

static void gelu_bwd(Op *o) {
    Unary *m = (Unary *)o;
    o->be->gelu_bwd(BD(m->x), BD(m->out), BV(m->x), m->n);
}

/* the erf form: gelu(1) = Phi(1) = 0.841344746 */
static void gelu_extra(Op *o) {
    (void)o;
    real one = 1, y;
    cpu_gelu_fwd(&y, &one, 1);
    CHECK_MSG(fabs((double)y - 0.8413447460685429) < 1e-6, "gelu(1) = %.9f", (double)y);
}

static const OpDef GELU = {.size = sizeof(Unary),
                           .build = unary_build,
                           .fwd = gelu_fwd,
                           .bwd = gelu_bwd,
                           .extra = gelu_extra,
                           .ops = "gelu_fwd gelu_bwd"};

/* ReLU away from its kink (|x| >= 0.05), its backward in place (dx = dy), and the values. */
static double relu_fwd(Op *o) {
    Unary *m = (Unary *)o;
    o->be->relu_fwd(BV(m->out), BV(m->x), m->n);
    return 0;
}

static void relu_bwd(Op *o) {
    Unary *m = (Unary *)o;
    o->be->copy(BD(m->x), BD(m->out), elem_bytes(o, EL_ACT, m->n));
    o->be->relu_bwd(BD(m->x), BD(m->x), BV(m->x), m->n);
}

static void relu_extra(Op *o) {
    Unary *m = (Unary *)o;
    const real *x = m->x->v;
    for (int64_t i = 0; i < m->n; i++) CHECK(m->out->v[i] == (x[i] > 0 ? x[i] : 0));
}

static const OpDef RELU = {.size = sizeof(Unary),
                           .build = unary_build,
                           .fwd = relu_fwd,
                           .bwd = relu_bwd,
                           .extra = relu_extra,
                           .ops = "relu_fwd relu_bwd"};

static double sigmoid_fwd(Op *o) {
    Unary *m = (Unary *)o;
    o->be->sigmoid_fwd(BV(m->out), BV(m->x), m->n);
    return 0;
}

static void sigmoid_bwd(Op *o) {
    Unary *m = (Unary *)o;
    o->be->sigmoid_bwd(BD(m->x), BD(m->out), BV(m->x), m->n);
}

static void sigmoid_ref(Op *o, real *ref) {
    Unary *m = (Unary *)o;
    for (int64_t i = 0; i < m->n; i++) ref[i] = (real)sigmoid((double)m->x->v[i]);
}

static const OpDef SIGMOID = {.size = sizeof(Unary),
                              .build = unary_f32_build,
                              .fwd = sigmoid_fwd,
                              .bwd = sigmoid_bwd,
                              .ref = sigmoid_ref,
                              .ops = "sigmoid_fwd sigmoid_bwd"};

static double logsigmoid_fwd(Op *o) {
    Unary *m = (Unary *)o;
    o->be->logsigmoid_fwd(BV(m->out), BV(m->x), m->n, o->v->norm);
    return 0;
}

static void logsigmoid_bwd(Op *o) {
    Unary *m = (Unary *)o;
    o->be->logsigmoid_bwd(BD(m->x), BD(m->out), BV(m->x), m->n, o->v->norm);
}

static void logsigmoid_ref(Op *o, real *ref) {
    Unary *m = (Unary *)o;
    for (int64_t i = 0; i < m->n; i++)
        ref[i] = (real)(-log1p(exp(-(double)m->x->v[i])) / (double)o->v->norm);
}

static const OpDef LOGSIGMOID = {.size = sizeof(Unary),
                                 .build = unary_f32_build,
                                 .fwd = logsigmoid_fwd,
                                 .bwd = logsigmoid_bwd,
                                 .ref = logsigmoid_ref,
                                 .ops = "logsigmoid_fwd logsigmoid_bwd"};

/* Dropout (docs/models.md §block-dropout-bidirectional), L = wo . dropout(x): dx = dropout(wo) with
 * the same key (the op is its own backward) against finite differences; the mask is deterministic,
 * keeps about 1 - p of the elements (within 5 sigma), scales them by 1/(1 - p), and in channel mode
 * is the same at every token of a row of T and differs between rows. */
#define DROP_KEY 0x1234abcdull
#define DROP_P 0.3

typedef struct {
    Op o;
    Tensor *x, *y;
    int64_t N;
    int C;
} Dropout;

static void dropout_build(Op *o) {
    Dropout *m = (Dropout *)o;
    m->N = 240, m->C = 50;
    m->x = fd_samples(input(o, "x", m->N * m->C, NZ(0.05, 2.0), GRAD_SET), 200);
    m->y = output(o, "y", m->N * m->C, ZERO);
}

static double dropout_fwd(Op *o) {
    Dropout *m = (Dropout *)o;
    o->be->dropout(BV(m->y), BV(m->x), m->N, m->C, o->v->T, DROP_KEY, DROP_P);
    return 0;
}

static void dropout_bwd(Op *o) {
    Dropout *m = (Dropout *)o;
    o->be->dropout(BD(m->x), BD(m->y), m->N, m->C, o->v->T, DROP_KEY, DROP_P);
}

static void dropout_extra(Op *o) {
    Dropout *m = (Dropout *)o;
    int64_t n = m->N * m->C, C = m->C, T = o->v->T;
    const real *x = m->x->v, *y = m->y->v;
    real *y2 = tu_zeros(n), *y3 = tu_zeros(n);
    cpu_dropout(y2, x, m->N, m->C, o->v->T, DROP_KEY, DROP_P);
    int64_t kept = 0, bad = 0, shared = 0, rows_differ = 0;
    for (int64_t i = 0; i < n; i++) {
        bad += y[i] != y2[i];
        if (y[i] != 0) kept++, bad += fabs((double)y[i] - x[i] / 0.7) > 1e-12 * fabs((double)x[i]);
        int64_t tok = i / C;
        if (T && tok % T) shared += (y[i] != 0) != (y[i - C] != 0);
        if (T && tok >= T) rows_differ += (y[i] != 0) != (y[i - T * C] != 0);
    }
    int64_t draws = T ? (m->N / T) * C : n;
    double expect = 0.7 * draws, sd = sqrt(draws * 0.7 * 0.3),
           got = T ? (double)kept / T : (double)kept;
    printf("    %-40s kept %.0f of %lld draws (expected %.0f +- %.0f)\n", label(o, "mask"), got,
           (long long)draws, expect, sd);
    CHECK_MSG(bad == 0, "dropout: %lld elements not x / (1 - p) or 0, or not reproduced",
              (long long)bad);
    CHECK(fabs(got - expect) < 5 * sd);
    CHECK_MSG(shared == 0, "dropout channel mode: %lld masks differ within a row",
              (long long)shared);
    CHECK(!T || rows_differ > 0);
    cpu_dropout(y3, x, m->N, m->C, o->v->T, DROP_KEY + 1, DROP_P); /* another key, another mask */
    int64_t moved = 0;
    for (int64_t i = 0; i < n; i++) moved += (y3[i] != 0) != (y2[i] != 0);
    CHECK(moved > 0);
    FREE_ALL(y2, y3);
}

static const OpDef DROPOUT = {.size = sizeof(Dropout),
                              .build = dropout_build,
                              .fwd = dropout_fwd,
                              .bwd = dropout_bwd,
                              .extra = dropout_extra,
                              .ops = "dropout"};

/* segment_reverse (docs/models.md §block-dropout-bidirectional): every segment turned around, its
 * accumulating form, and being its own adjoint: wo . rev(x) = rev(wo) . x. */
/* y = every segment of x in reverse time order; its own adjoint, so its backward is itself
 * (with accumulate). */
typedef struct {
    Op o;
    Tensor *x, *y;
    int C;
} SegReverse;

static void segrev_build(Op *o) {
    SegReverse *m = (SegReverse *)o;
    m->C = (int)dim(o->v->dims.C, 3);
    m->x = input(o, "x", o->s->ntok * m->C, NZ(0.05, 1.0), GRAD_SET);
    m->y = output(o, "y", o->s->ntok * m->C, ZERO);
}

static double segrev_fwd(Op *o) {
    SegReverse *m = (SegReverse *)o;
    o->be->segment_reverse(BV(m->y), BV(m->x), o->s, m->C, 0);
    return 0;
}

static void segrev_bwd(Op *o) {
    SegReverse *m = (SegReverse *)o;
    o->be->segment_reverse(BD(m->x), BD(m->y), o->s, m->C, o->accumulate);
}

static void segrev_ref(Op *o, real *ref) {
    SegReverse *m = (SegReverse *)o;
    const Seqs *s = o->s;
    for (int seg = 0; seg < s->nseg; seg++)
        for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++)
            for (int c = 0; c < m->C; c++)
                ref[t * m->C + c] = m->x->v[(s->cu[seg] + s->cu[seg + 1] - 1 - t) * m->C + c];
}

static const OpDef SEGMENT_REVERSE = {.size = sizeof(SegReverse),
                                      .build = segrev_build,
                                      .fwd = segrev_fwd,
                                      .bwd = segrev_bwd,
                                      .ref = segrev_ref,
                                      .accumulate = 1,
                                      .ops = "segment_reverse"};

/* The pair classifier's features [u, v, u v, u - v] (docs/models.md §classification): values and
 * dx. */
typedef struct {
    Op o;
    Tensor *x, *f;
    int64_t P;
    int d;
} PairNli;

static void pair_nli_build(Op *o) {
    PairNli *m = (PairNli *)o;
    m->P = 3, m->d = 5;
    m->x = input(o, "x", 2 * m->P * m->d, NZ(0.1, 2.0), GRAD_SET);
    m->f = output(o, "f", 4 * m->P * m->d, ZERO);
}

static double pair_nli_fwd(Op *o) {
    PairNli *m = (PairNli *)o;
    o->be->pair_nli_fwd(BV(m->f), BV(m->x), m->P, m->d);
    return 0;
}

static void pair_nli_bwd(Op *o) {
    PairNli *m = (PairNli *)o;
    o->be->pair_nli_bwd(BD(m->x), BD(m->f), BV(m->x), m->P, m->d);
}

static void pair_nli_extra(Op *o) {
    PairNli *m = (PairNli *)o;
    int d = m->d;
    for (int64_t p = 0; p < m->P; p++)
        for (int j = 0; j < d; j++) {
            real u = m->x->v[2 * p * d + j], v = m->x->v[(2 * p + 1) * d + j],
                 *f = m->f->v + 4 * p * d;
            CHECK(f[j] == u && f[d + j] == v && f[2 * d + j] == u * v && f[3 * d + j] == u - v);
        }
}

static const OpDef PAIR_FEATURES = {.size = sizeof(PairNli),
                                    .build = pair_nli_build,
                                    .fwd = pair_nli_fwd,
                                    .bwd = pair_nli_bwd,
                                    .extra = pair_nli_extra,
                                    .ops = "pair_nli_fwd pair_nli_bwd"};

/* The per-head decay of Gated DeltaNet and Mamba2 (docs/models.md §gated-deltanet, §mamba2): dt =
 * softplus(dt_raw + dt_bias), g = -exp(A_log) dt; both outputs, or g alone when dt is not kept
 * (GDN: dt NULL, ddt NULL). */
typedef struct {
    Op o;
    Tensor *dt_raw, *A_log, *dt_bias, *dt, *g;
    int64_t N;
    int H;
} Decay;

static void decay_build(Op *o) {
    Decay *m = (Decay *)o;
    m->N = 41, m->H = 3;
    int64_t n = m->N * m->H;
    m->dt_raw = input(o, "dt_raw", n, NZ(0.05, 4.0), GRAD_SET);
    m->A_log = f32(input(o, "A_log", m->H, NZ(0.1, 2.0), GRAD_ADD));
    m->dt_bias = f32(input(o, "dt_bias", m->H, NZ(0.1, 3.0), GRAD_ADD));
    if (o->v->keep_dt) m->dt = f32(output(o, "dt", n, ZERO));
    m->g = f32(output(o, "g", n, ZERO));
}

static double decay_fwd(Op *o) {
    Decay *m = (Decay *)o;
    o->be->decay_gates_fwd(BV(m->dt), BV(m->g), BV(m->dt_raw), BV(m->A_log), BV(m->dt_bias), m->N,
                           m->H);
    return 0;
}

static void decay_bwd(Op *o) {
    Decay *m = (Decay *)o;
    o->be->decay_gates_bwd(BD(m->dt_raw), BD(m->A_log), BD(m->dt_bias), BD(m->dt), BD(m->g),
                           BV(m->dt_raw), BV(m->A_log), BV(m->dt_bias), m->N, m->H);
}

static void decay_extra(Op *o) {
    Decay *m = (Decay *)o;
    int64_t n = m->N * m->H;
    real *rdt = tu_zeros(n), *rg = tu_zeros(n);
    for (int64_t i = 0; i < n; i++) {
        int h = (int)(i % m->H);
        double sp = log1p(exp((double)m->dt_raw->v[i] + (double)m->dt_bias->v[h]));
        rdt[i] = (real)sp;
        rg[i] = (real)(-exp((double)m->A_log->v[h]) * sp);
    }
    if (m->dt) check_equal(label(o, "dt value"), m->dt->v, rdt, n);
    check_equal(label(o, "g value"), m->g->v, rg, n);
    FREE_ALL(rdt, rg);
}

static const OpDef DECAY_GATES = {.size = sizeof(Decay),
                                  .build = decay_build,
                                  .fwd = decay_fwd,
                                  .bwd = decay_bwd,
                                  .extra = decay_extra,
                                  .ops = "decay_gates_fwd decay_gates_bwd"};

/* The per-head scale y = s x (s per token and head) and the skip y += Dp x (Dp per head; its
 * forward adds to y0, its gradients accumulate). */
typedef struct {
    Op o;
    Tensor *x, *s, *y, *y0;
    int64_t N;
    int H, D;
} Head;

static void head_build(Op *o) {
    Head *m = (Head *)o;
    int skip = o->v->skip;
    m->N = 23, m->H = 3, m->D = 5;
    int64_t n = m->N * m->H * m->D;
    GradKind gk = skip ? GRAD_ADD : GRAD_SET;
    m->x = dkind(input(o, "x", n, NZ(0.05, 1.5), gk), EL_ACT);
    m->s = f32(input(o, skip ? "Dp" : "s", skip ? m->H : m->N * m->H, NZ(0.05, 1.5), gk));
    m->y = output(o, "y", n, ZERO);
    if (skip) m->y0 = aux(o, "y0", n, NZ(0.05, 1.0));
}

static double head_fwd(Op *o) {
    Head *m = (Head *)o;
    if (m->y0) {
        o->be->copy(BV(m->y), BV(m->y0), elem_bytes(o, EL_ACT, m->y->spec.n));
        o->be->head_skip_fwd(BV(m->y), BV(m->x), BV(m->s), m->N, m->H, m->D);
    } else {
        o->be->head_scale_fwd(BV(m->y), BV(m->x), BV(m->s), m->N, m->H, m->D);
    }
    return 0;
}

static void head_bwd(Op *o) {
    Head *m = (Head *)o;
    if (m->y0)
        o->be->head_skip_bwd(BD(m->x), BD(m->s), BD(m->y), BV(m->x), BV(m->s), m->N, m->H, m->D);
    else
        o->be->head_scale_bwd(BD(m->x), BD(m->s), BD(m->y), BV(m->x), BV(m->s), m->N, m->H, m->D);
}

static void head_ref(Op *o, real *ref) {
    Head *m = (Head *)o;
    for (int64_t i = 0; i < m->y->spec.n; i++) {
        int64_t row = i / m->D;
        ref[i] = m->y0 ? m->y0->v[i] + m->s->v[row % m->H] * m->x->v[i] : m->s->v[row] * m->x->v[i];
    }
}

static const OpDef HEAD = {.size = sizeof(Head),
                           .build = head_build,
                           .fwd = head_fwd,
                           .bwd = head_bwd,
                           .ref = head_ref,
                           .ops = "head_scale_fwd head_scale_bwd head_skip_fwd head_skip_bwd"};

/* B and C of a group go to each of its heads: head h reads group h / (H/G). */
typedef struct {
    Op o;
    Tensor *src, *out;
    int64_t N;
    int H, G, K;
} Bcast;

static void bcast_build(Op *o) {
    Bcast *m = (Bcast *)o;
    m->N = 13, m->H = 6, m->G = 2, m->K = 4;
    m->src = input(o, "src", m->N * m->G * m->K, NZ(0.05, 1.5), GRAD_SET);
    m->out = output(o, "out", m->N * m->H * m->K, GARBAGE); /* overwritten */
}

static double bcast_fwd(Op *o) {
    Bcast *m = (Bcast *)o;
    o->be->group_bcast_fwd(BV(m->out), BV(m->src), m->N, m->H, m->G, m->K);
    return 0;
}

static void bcast_bwd(Op *o) {
    Bcast *m = (Bcast *)o;
    o->be->group_bcast_bwd(BD(m->src), BD(m->out), m->N, m->H, m->G, m->K);
}

static void bcast_ref(Op *o, real *ref) {
    Bcast *m = (Bcast *)o;
    int H = m->H, G = m->G, K = m->K;
    for (int64_t t = 0; t < m->N; t++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < K; i++)
                ref[(t * H + h) * K + i] = m->src->v[(t * G + h / (H / G)) * K + i];
}

static const OpDef GROUP_BCAST = {.size = sizeof(Bcast),
                                  .build = bcast_build,
                                  .fwd = bcast_fwd,
                                  .bwd = bcast_bwd,
                                  .ref = bcast_ref,
                                  .ops = "group_bcast_fwd group_bcast_bwd"};

/* ---------------------------------------------------------- time mixing ---- */

/* Causal depthwise conv of K taps per segment (tap K-1 = current token), plus the bias; without
 * w the first difference x_t - x_{t-1}. */
typedef struct {
    Op o;
    Tensor *x, *w, *b, *y;
    int C, K;
} Conv;

static void conv_build(Op *o) {
    Conv *m = (Conv *)o;
    int C = m->C = (int)dim(o->v->dims.C, 5);
    m->K = o->v->taps ? o->v->taps : 4;
    m->x = fd_samples(input(o, "x", o->s->ntok * C, NZ(0.05, 1.5), GRAD_SET), 100000);
    if (o->v->conv) m->w = input(o, "w", m->K * C, NZ(0.1, 1.0), GRAD_ADD);
    m->b = o->v->bias ? input(o, "b", C, NZ(0.1, 1.0), GRAD_ADD) : dkind(absent(o, "b", C), EL_F32);
    m->y = output(o, "y", o->s->ntok * C, ZERO);
}

static double conv_fwd(Op *o) {
    Conv *m = (Conv *)o;
    o->be->conv_fwd(BV(m->y), BV(m->x), BV(m->w), BV(m->b), o->s, m->C, m->K, o->v->act);
    return 0;
}

static void conv_bwd(Op *o) {
    Conv *m = (Conv *)o;
    o->be->conv_bwd(BD(m->x), BD(m->w), BD(m->b), BD(m->y), BV(m->x), BV(m->w), BV(m->b), o->s,
                    m->C, m->K, o->v->act);
}

/* The pre-activation of channel ch at token t of the segment starting at t0. */
static double conv_at(const real *x, const real *w, int64_t t, int64_t t0, int C, int K, int ch) {
    double p = 0;
    for (int back = 0; back < (w ? K : 2) && t - back >= t0; back++) {
        double tap = w ? (double)w[ch * K + K - 1 - back] : (back == 0 ? 1 : -1);
        p += tap * (double)x[(t - back) * C + ch];
    }
    return p;
}

static double act_value(Activation act, double p) { return act == ACT_SILU ? p * sigmoid(p) : p; }

static void conv_ref(Op *o, real *ref) {
    Conv *m = (Conv *)o;
    const Seqs *s = o->s;
    for (int seg = 0; seg < s->nseg; seg++)
        for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++)
            for (int ch = 0; ch < m->C; ch++) {
                double p = conv_at(m->x->v, V(m->w), t, s->cu[seg], m->C, m->K, ch) +
                           (m->b->v ? (double)m->b->v[ch] : 0);
                ref[t * m->C + ch] = (real)act_value(o->v->act, p);
            }
}

static const OpDef CONV = {.size = sizeof(Conv),
                           .build = conv_build,
                           .fwd = conv_fwd,
                           .bwd = conv_bwd,
                           .ref = conv_ref,
                           .ops = "conv_fwd conv_bwd"};

/* y_t = a x_{t-1} + (1 - a) x_t with a = sigmoid(a_logit) per token and head; x_{-1} = 0. */
typedef struct {
    Op o;
    Tensor *x, *al, *y;
    int H, D;
} Shift;

static void shift_build(Op *o) {
    Shift *m = (Shift *)o;
    /* its own shape's D = 3 is odd, which only the CPU takes */
    m->H = (int)dim(o->v->dims.H, 2), m->D = (int)dim(o->v->dims.K, 3);
    int64_t nh = o->s->ntok * m->H;
    m->x = fd_samples(input(o, "x", nh * m->D, NZ(0.05, 1.5), GRAD_SET), 100000);
    m->al = fd_samples(input(o, "a_logit", nh, NZ(0.05, 3.0), GRAD_SET), 100000);
    m->y = output(o, "y", nh * m->D, ZERO);
}

static double shift_fwd(Op *o) {
    Shift *m = (Shift *)o;
    o->be->shift_fwd(BV(m->y), BV(m->x), BV(m->al), o->s, m->H, m->D);
    return 0;
}

static void shift_bwd(Op *o) {
    Shift *m = (Shift *)o;
    o->be->shift_bwd(BD(m->x), BD(m->al), BD(m->y), BV(m->x), BV(m->al), o->s, m->H, m->D);
}

static void shift_ref(Op *o, real *ref) {
    Shift *m = (Shift *)o;
    int H = m->H, D = m->D;
    const real *x = m->x->v;
    for (int64_t t = 0; t < o->s->ntok; t++)
        for (int h = 0; h < H; h++) {
            double a = sigmoid((double)m->al->v[t * H + h]);
            for (int d = 0; d < D; d++) {
                int64_t i = (t * H + h) * D + d;
                double prev = o->s->pos[t] >= 1 ? (double)x[i - H * D] : 0.0;
                ref[i] = (real)(a * prev + (1 - a) * (double)x[i]);
            }
        }
}

static const OpDef SHIFT = {.size = sizeof(Shift),
                            .build = shift_build,
                            .fwd = shift_fwd,
                            .bwd = shift_bwd,
                            .ref = shift_ref,
                            .ops = "shift_fwd shift_bwd"};

static void test_revcumsum(void) {
    Rng r;
    rng_init(&r, 406, 0);
    TestSeqs ts = tu_seqs(LENS, NSEG);
    const Seqs *s = &ts.s;
    int C = 7;
    int64_t n = s->ntok * C;
    real *x = rand_nz(&r, n, 0.05, 1.5), *y = garbage(&r, n), *ref = tu_zeros(n);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int ch = 0; ch < C; ch++)
            for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++) {
                double acc = 0;
                for (int64_t u = t; u < s->cu[seg + 1]; u++) acc += (double)x[u * C + ch];
                ref[t * C + ch] = (real)acc;
            }
    cpu_revcumsum(y, x, s, C);
    check_equal("revcumsum value", y, ref, n);
    /* linear: it is the adjoint of the per-segment cumsum, <w, revcumsum x> = <cumsum w, x> */
    real *w = rand_nz(&r, n, 0.05, 1.0), *cw = tu_zeros(n);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int ch = 0; ch < C; ch++) {
            double acc = 0;
            for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++) {
                acc += (double)w[t * C + ch];
                cw[t * C + ch] = (real)acc;
            }
        }
    double lhs = tu_dot(w, y, n), rhs = tu_dot(cw, x, n);
    printf("    %-40s %.3e vs %.3e\n", "revcumsum adjoint of cumsum", lhs, rhs);
    CHECK_CLOSE(lhs, rhs, EXACT_TOL);
    cpu_revcumsum(x, x, s, C); /* in place */
    check_equal("revcumsum in place", x, ref, n);
    FREE_ALL(x, y, ref, w, cw);
    tu_seqs_free(&ts);
}

/* ---------------------------------------------------------- positions ---- */

/* RoPE's angles pos * theta^(-2j/D) [f32]: no input, so nothing to differentiate. */
typedef struct {
    Op o;
    Tensor *angle;
    int D;
} RopeAngles;

#define ROPE_THETA 500000.0

static void rope_angles_build(Op *o) {
    RopeAngles *m = (RopeAngles *)o;
    m->D = (int)dim(o->v->dims.K, 16);
    m->angle = f32(output(o, "angle", o->s->ntok * (m->D / 2), ZERO));
}

static double rope_angles_fwd(Op *o) {
    RopeAngles *m = (RopeAngles *)o;
    o->be->rope_angles(BV(m->angle), o->s, m->D, ROPE_THETA);
    return 0;
}

static void rope_angles_bwd(Op *o) { (void)o; }

static void rope_angles_ref(Op *o, real *ref) {
    RopeAngles *m = (RopeAngles *)o;
    int P = m->D / 2;
    for (int64_t t = 0; t < o->s->ntok; t++)
        for (int j = 0; j < P; j++)
            ref[t * P + j] = (real)((double)o->s->pos[t] * pow(ROPE_THETA, -2.0 * j / m->D));
}

static const OpDef ROPE_ANGLES = {.size = sizeof(RopeAngles),
                                  .build = rope_angles_build,
                                  .fwd = rope_angles_fwd,
                                  .bwd = rope_angles_bwd,
                                  .ref = rope_angles_ref,
                                  .ops = "rope_angles"};

/* Rotation of the pairs (j, j+P) of a head of 2P channels by angle a (in place in out). */
static void rotate_pair(real *out, const real *x, int P, int j, double a) {
    double x0 = (double)x[j], x1 = (double)x[j + P];
    out[j] = (real)(x0 * cos(a) - x1 * sin(a));
    out[j + P] = (real)(x0 * sin(a) + x1 * cos(a));
}

/* Angles per token shared by the heads, or per token and head (the only layout with dangle). */
typedef struct {
    Op o;
    Tensor *x, *ang, *y;
    int64_t N;
    int H, D;
} Rotate;

static void rotate_build(Op *o) {
    Rotate *m = (Rotate *)o;
    m->N = 21, m->H = 3, m->D = 8;
    int64_t na = o->v->per_head ? m->N * m->H * (m->D / 2) : m->N * (m->D / 2);
    m->x = input(o, "x", m->N * m->H * m->D, NZ(0.05, 1.5), GRAD_SET);
    m->ang = f32(input(o, "angle", na, NZ(0.05, 3.0), o->v->per_head ? GRAD_ADD : GRAD_NONE));
    m->y = output(o, "y", m->N * m->H * m->D, ZERO);
}

static double rotate_fwd(Op *o) {
    Rotate *m = (Rotate *)o;
    o->be->rotate_fwd(BV(m->y), BV(m->x), BV(m->ang), m->N, m->H, m->D, o->v->per_head);
    return 0;
}

static void rotate_bwd(Op *o) {
    Rotate *m = (Rotate *)o;
    o->be->rotate_bwd(BD(m->x), BD(m->ang), BD(m->y), BV(m->x), BV(m->ang), m->N, m->H, m->D,
                      o->v->per_head);
}

static void rotate_ref(Op *o, real *ref) {
    Rotate *m = (Rotate *)o;
    int H = m->H, D = m->D, P = D / 2;
    for (int64_t t = 0; t < m->N; t++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j < P; j++) {
                int64_t b = (t * H + h) * D;
                rotate_pair(ref + b, m->x->v + b, P, j,
                            (double)m->ang->v[o->v->per_head ? (t * H + h) * P + j : t * P + j]);
            }
}

static const OpDef ROTATE = {.size = sizeof(Rotate),
                             .build = rotate_build,
                             .fwd = rotate_fwd,
                             .bwd = rotate_bwd,
                             .ref = rotate_ref,
                             .ops = "rotate_fwd rotate_bwd"};

/* Selective RoPE's angles (docs/models.md §position-embeddings): Phi = per-segment cumsum of (phi +
 * exp(bias)) times sigmoid(gate_logit), angle = temp Phi. */
typedef struct {
    Op o;
    Tensor *phi, *bias, *gl, *temp, *angle, *Phi, *dangle;
    int H, P;
} SelAngles;

static void sel_angles_build(Op *o) {
    SelAngles *m = (SelAngles *)o;
    m->H = 2, m->P = 3;
    int64_t N = o->s->ntok, HP = m->H * m->P;
    m->phi = fd_samples(input(o, "phi", N * HP, NZ(0.05, 1.0), GRAD_SET), 100000);
    if (o->v->bias) m->bias = input(o, "bias", HP, NZ(0.05, 1.0), GRAD_ADD);
    if (o->v->gate)
        m->gl = fd_samples(input(o, "gate_logit", N * m->H, NZ(0.05, 3.0), GRAD_SET), 100000);
    m->temp = f32(input(o, "temp", m->P, UNIFORM(0.05, 1.0), GRAD_ADD));
    m->angle = f32(output(o, "angle", N * HP, ZERO));
    m->Phi = f32(aux(o, "Phi", N * HP, ZERO));
    m->dangle = f32(aux(o, "dangle", N * HP, ZERO));
}

static double sel_angles_fwd(Op *o) {
    SelAngles *m = (SelAngles *)o;
    cpu_selrope_angles_fwd(BV(m->angle), BV(m->Phi), BV(m->phi), BV(m->bias), BV(m->gl),
                           BV(m->temp), o->s, m->H, m->P);
    return 0;
}

static void sel_angles_bwd(Op *o) {
    SelAngles *m = (SelAngles *)o;
    o->be->copy(BV(m->dangle), BD(m->angle),
                elem_bytes(o, EL_F32, m->angle->spec.n)); /* consumed as scratch */
    cpu_selrope_angles_bwd(BD(m->phi), BD(m->bias), BD(m->gl), BD(m->temp), BV(m->dangle),
                           BV(m->phi), BV(m->bias), BV(m->gl), BV(m->temp), BV(m->Phi), o->s, m->H,
                           m->P);
}

/* The angle increment of channel (h, j) at token t: conv output pre, plus exp(bias), gated. */
static double sel_increment(double pre, const real *bias, const real *gl, int64_t t, int H, int h,
                            int ch) {
    double inc = pre + (bias ? exp((double)bias[ch]) : 0.0);
    return gl ? inc * sigmoid((double)gl[t * H + h]) : inc;
}

/* Phi and angle both against the cumulative sums. */
static void sel_angles_extra(Op *o) {
    SelAngles *m = (SelAngles *)o;
    const Seqs *s = o->s;
    int H = m->H, P = m->P, HP = H * P;
    int64_t n = s->ntok * HP;
    real *rPhi = tu_zeros(n), *rang = tu_zeros(n);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int ch = 0; ch < HP; ch++) {
            double acc = 0;
            for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++) {
                int64_t i = t * HP + ch;
                acc += sel_increment((double)m->phi->v[i], V(m->bias), V(m->gl), t, H, ch / P, ch);
                rPhi[i] = (real)acc;
                rang[i] = (real)((double)m->temp->v[ch % P] * acc);
            }
        }
    check_equal(label(o, "Phi value"), m->Phi->v, rPhi, n);
    check_equal(label(o, "angle value"), m->angle->v, rang, n);
    FREE_ALL(rPhi, rang);
}

/* cpu_selrope_angles_fwd/bwd: the CPU's own steps of selrope_fwd/bwd, outside the Backend table */
static const OpDef SELROPE_ANGLES = {.size = sizeof(SelAngles),
                                     .build = sel_angles_build,
                                     .fwd = sel_angles_fwd,
                                     .bwd = sel_angles_bwd,
                                     .extra = sel_angles_extra,
                                     .cpu_only = 1};

/* The fused op (docs/models.md §position-embeddings steps 3-8), L = wq . qo + wk . ko; without
 * conv_w the first difference, without bias or gate their gradients untouched. */
typedef struct {
    Op o;
    Tensor *q, *k, *phi_raw, *w, *bias, *gl, *temp, *qo, *ko, *Phi;
    int H, P;
} SelFused;

static void sel_fused_build(Op *o) {
    SelFused *m = (SelFused *)o;
    m->H = (int)dim(o->v->dims.H, 2), m->P = (int)dim(o->v->dims.K / 2, 3); /* K / 2 pairs */
    int C = m->H * m->P;
    int64_t N = o->s->ntok, n = N * C;
    m->q = fd_samples(input(o, "q", 2 * n, NZ(0.05, 1.0), GRAD_SET), 300);
    m->k = fd_samples(input(o, "k", 2 * n, NZ(0.05, 1.0), GRAD_SET), 300);
    m->phi_raw = fd_samples(input(o, "phi_raw", n, NZ(0.05, 1.0), GRAD_SET), 300);
    m->temp = f32(input(o, "temp", m->P, UNIFORM(0.05, 1.0), GRAD_ADD));
    m->w = o->v->conv ? input(o, "conv_w", 4 * C, NZ(0.1, 1.0), GRAD_ADD)
                      : dkind(absent(o, "conv_w", 4 * C), EL_F32);
    m->bias = o->v->bias ? input(o, "bias", C, NZ(0.05, 1.0), GRAD_ADD)
                         : dkind(absent(o, "bias", C), EL_F32);
    if (o->v->gate)
        m->gl = fd_samples(input(o, "gate_logit", N * m->H, NZ(0.05, 3.0), GRAD_SET), 300);
    m->qo = output(o, "qo", 2 * n, ZERO);
    m->ko = output(o, "ko", 2 * n, ZERO);
    m->Phi = f32(aux(o, "Phi", n, ZERO));
}

static SelRopeArgs sel_fused_args(SelFused *m) {
    return (SelRopeArgs){.s = m->o.s,
                         .H = m->H,
                         .P = m->P,
                         .q = BV(m->q),
                         .k = BV(m->k),
                         .phi_raw = BV(m->phi_raw),
                         .conv_w = BV(m->w),
                         .conv_act = m->o.v->act,
                         .bias = BV(m->bias),
                         .gate_logit = BV(m->gl),
                         .temp = BV(m->temp),
                         .qo = BV(m->qo),
                         .ko = BV(m->ko),
                         .Phi = BV(m->Phi)};
}

static double sel_fused_fwd(Op *o) {
    SelRopeArgs a = sel_fused_args((SelFused *)o);
    o->be->selrope_fwd(&a);
    return 0;
}

static void sel_fused_bwd(Op *o) {
    SelFused *m = (SelFused *)o;
    o->be->selrope_bwd(&(SelRopeGrads){.a = sel_fused_args(m),
                                       .dqo = BD(m->qo),
                                       .dko = BD(m->ko),
                                       .dq = BD(m->q),
                                       .dk = BD(m->k),
                                       .dphi_raw = BD(m->phi_raw),
                                       .dconv_w = BD(m->w),
                                       .dbias = BD(m->bias),
                                       .dgate_logit = BD(m->gl),
                                       .dtemp = BD(m->temp)});
}

/* qo from the definition in double: conv + act (or first difference), bias, gate, cumsum per
 * segment, rotation of the pairs (j, j+P) by temp_j Phi. */
static void sel_fused_ref(Op *o, real *qo) {
    SelFused *m = (SelFused *)o;
    const Seqs *s = o->s;
    int H = m->H, P = m->P, C = H * P;
    for (int seg = 0; seg < s->nseg; seg++)
        for (int ch = 0; ch < C; ch++) {
            int h = ch / P, j = ch % P;
            double Phi = 0;
            for (int64_t t = s->cu[seg]; t < s->cu[seg + 1]; t++) {
                double pre =
                    act_value(o->v->act, conv_at(m->phi_raw->v, m->w->v, t, s->cu[seg], C, 4, ch));
                Phi += sel_increment(pre, m->bias->v, V(m->gl), t, H, h, ch);
                int64_t b = (t * H + h) * 2 * P;
                rotate_pair(qo + b, m->q->v + b, P, j, (double)m->temp->v[j] * Phi);
            }
        }
}

static OpShape sel_fused_shape(const Op *o) {
    const SelFused *m = (const SelFused *)o;
    return (OpShape){.op = "selrope", .H = m->H, .K = m->P, .V = m->P};
}

static const OpDef SELROPE_FUSED = {.size = sizeof(SelFused),
                                    .build = sel_fused_build,
                                    .fwd = sel_fused_fwd,
                                    .bwd = sel_fused_bwd,
                                    .ref = sel_fused_ref,
                                    .ops = "selrope_fwd selrope_bwd",
                                    .shape = sel_fused_shape};

/* Per head h and column j: wn = scale_h w / ||w[h, :, j]||. */
typedef struct {
    Op o;
    Tensor *w, *sc, *wn;
    int H, Din, P;
} WeightNorm;

static void weightnorm_build(Op *o) {
    WeightNorm *m = (WeightNorm *)o;
    m->H = 2, m->Din = 7, m->P = 3;
    int64_t n = (int64_t)m->H * m->Din * m->P;
    m->w = input(o, "w", n, NZ(0.05, 1.0), GRAD_ADD);
    m->sc = input(o, "scale", m->H, NZ(0.3, 2.0), GRAD_ADD);
    m->wn = dkind(output(o, "wn", n, ZERO), EL_F32); /* dwn: head_matmul_bwd's [f32] dw */
}

static double weightnorm_fwd(Op *o) {
    WeightNorm *m = (WeightNorm *)o;
    o->be->weightnorm_fwd(BV(m->wn), BV(m->w), BV(m->sc), m->H, m->Din, m->P);
    return 0;
}

static void weightnorm_bwd(Op *o) {
    WeightNorm *m = (WeightNorm *)o;
    o->be->weightnorm_bwd(BD(m->w), BD(m->sc), BD(m->wn), BV(m->w), BV(m->sc), m->H, m->Din, m->P);
}

static void weightnorm_ref(Op *o, real *ref) {
    WeightNorm *m = (WeightNorm *)o;
    int Din = m->Din, P = m->P;
    const real *w = m->w->v;
    for (int h = 0; h < m->H; h++)
        for (int j = 0; j < P; j++) {
            double ss = 0;
            for (int i = 0; i < Din; i++) ss += pow((double)w[(h * Din + i) * P + j], 2);
            for (int i = 0; i < Din; i++)
                ref[(h * Din + i) * P + j] =
                    (real)((double)m->sc->v[h] * (double)w[(h * Din + i) * P + j] / sqrt(ss));
        }
}

static const OpDef WEIGHTNORM = {.size = sizeof(WeightNorm),
                                 .build = weightnorm_build,
                                 .fwd = weightnorm_fwd,
                                 .bwd = weightnorm_bwd,
                                 .ref = weightnorm_ref,
                                 .ops = "weightnorm_fwd weightnorm_bwd"};

/* out[t, h] = x[t, h] w[h] per head. */
typedef struct {
    Op o;
    Tensor *x, *w, *out;
    int64_t N;
    int H, Din, P;
} HeadMatmul;

static void head_matmul_build(Op *o) {
    HeadMatmul *m = (HeadMatmul *)o;
    m->N = 17, m->H = 3, m->Din = 7, m->P = 4;
    m->x = input(o, "x", m->N * m->H * m->Din, NZ(0.05, 1.0), GRAD_SET);
    m->w = input(o, "w", (int64_t)m->H * m->Din * m->P, NZ(0.05, 1.0), GRAD_ADD);
    m->out = output(o, "out", m->N * m->H * m->P, ZERO);
}

static double head_matmul_fwd(Op *o) {
    HeadMatmul *m = (HeadMatmul *)o;
    o->be->head_matmul_fwd(BV(m->out), BV(m->x), BV(m->w), m->N, m->H, m->Din, m->P);
    return 0;
}

static void head_matmul_bwd(Op *o) {
    HeadMatmul *m = (HeadMatmul *)o;
    o->be->head_matmul_bwd(BD(m->x), BD(m->w), BD(m->out), BV(m->x), BV(m->w), m->N, m->H, m->Din,
                           m->P, o->accumulate);
}

static void head_matmul_ref(Op *o, real *ref) {
    HeadMatmul *m = (HeadMatmul *)o;
    int H = m->H, Din = m->Din, P = m->P;
    for (int64_t t = 0; t < m->N; t++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j < P; j++) {
                double acc = 0;
                for (int i = 0; i < Din; i++)
                    acc += (double)m->x->v[(t * H + h) * Din + i] *
                           (double)m->w->v[((int64_t)h * Din + i) * P + j];
                ref[(t * H + h) * P + j] = (real)acc;
            }
}

static const OpDef HEAD_MATMUL = {.size = sizeof(HeadMatmul),
                                  .build = head_matmul_build,
                                  .fwd = head_matmul_fwd,
                                  .bwd = head_matmul_bwd,
                                  .ref = head_matmul_ref,
                                  .accumulate = 1,
                                  .ops = "head_matmul_fwd head_matmul_bwd"};

/* ---------------------------------------------------------- mixers ---- */

/* Gates of the mixer checks are weak (log decay in [-0.05, -0.002] per token, e^-1.7 over a
 * chunk on average) so that states and earlier tiles carried across chunk boundaries matter:
 * with log decays ~U(-1, 0) a chunk decays by ~e^-32 and the inter-chunk terms would be
 * invisible to the check. Mixer gradients are checked by token rows (Spec.rowlen). */
#define WEAK_DECAY UNIFORM(-0.05, -0.002)
/* Variant.strong: log decays to -2 a token, so that e^B underflows within a chunk (the GPU
 * kernels' in-chunk ratios and their guards) */
#define STRONG_DECAY UNIFORM(-2.0, -0.002)
#define DECAY(o) ((o)->v->strong ? STRONG_DECAY : WEAK_DECAY)

/* GLA with a log decay per key channel, or one per head (Mamba2's SSD, which passes scale 1;
 * tested with another so that the scale's place in its kernel counts); Gated DeltaNet, or with
 * g absent the ungated delta rule (DeltaNet). */
typedef struct {
    Op o;
    Tensor *q, *k, *v, *g, *beta, *out, *states;
    double scale;
    int H, K, Vd;
} LinAttn;

/* scale 0: 1 / sqrt(K) */
static void lin_attn_build(Op *o, double scale) {
    LinAttn *m = (LinAttn *)o;
    const Dims *dm = &o->v->dims;
    int H = m->H = (int)dim(dm->H, 2), K = m->K = (int)dim(dm->K, 8),
        Vd = m->Vd = (int)dim(dm->V, 6);
    int64_t N = o->s->ntok;
    m->scale = scale ? scale : 1.0 / sqrt((double)K);
    m->q = by_rows(input(o, "q", N * H * K, NZ(0.05, 1.5), GRAD_SET), H * K);
    m->k = by_rows(input(o, "k", N * H * K, NZ(0.05, 1.5), GRAD_SET), H * K);
    m->v = by_rows(input(o, "v", N * H * Vd, NZ(0.05, 1.5), GRAD_SET), H * Vd);
    m->out = output(o, "o", N * H * Vd, ZERO);
    m->states = f32(aux(o, "states", chunk_states_size(o->s, H, K, Vd), ZERO));
}

static LinAttnArgs lin_attn_args(LinAttn *m) {
    return (LinAttnArgs){.s = m->o.s,
                         .H = m->H,
                         .K = m->K,
                         .V = m->Vd,
                         .scale = m->scale,
                         .q = BV(m->q),
                         .k = BV(m->k),
                         .v = BV(m->v),
                         .g = BV(m->g),
                         .g_per_head = m->o.v->per_head,
                         .beta = BV(m->beta),
                         .o = BV(m->out),
                         .states = BV(m->states)};
}

static LinAttnGrads lin_attn_grads(LinAttn *m) {
    return (LinAttnGrads){.a = lin_attn_args(m),
                          .dout = BD(m->out),
                          .dq = BD(m->q),
                          .dk = BD(m->k),
                          .dv = BD(m->v),
                          .dg = BD(m->g),
                          .dbeta = BD(m->beta)};
}

static void gla_build(Op *o) {
    LinAttn *m = (LinAttn *)o;
    int per_head = o->v->per_head;
    lin_attn_build(o, per_head ? 0.5 : 0);
    int64_t row = per_head ? m->H : m->H * m->K;
    m->g = f32(by_rows(input(o, "g", o->s->ntok * row, DECAY(o), GRAD_SET), row));
}

static double gla_fwd(Op *o) {
    LinAttnArgs a = lin_attn_args((LinAttn *)o);
    o->be->gla_fwd(&a);
    return 0;
}

static void gla_bwd(Op *o) {
    LinAttnGrads g = lin_attn_grads((LinAttn *)o);
    o->be->gla_bwd(&g);
}

static OpShape gla_shape(const Op *o) {
    const LinAttn *m = (const LinAttn *)o;
    return (OpShape){.op = "gla", .H = m->H, .K = m->K, .V = m->Vd};
}

static const OpDef GLA = {.size = sizeof(LinAttn),
                          .build = gla_build,
                          .fwd = gla_fwd,
                          .bwd = gla_bwd,
                          .ops = "gla_fwd gla_bwd",
                          .shape = gla_shape};

static void l2normalise_rows(real *x, int64_t rows, int D) {
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int d = 0; d < D; d++) ss += (double)x[r * D + d] * (double)x[r * D + d];
        for (int d = 0; d < D; d++) x[r * D + d] = (real)((double)x[r * D + d] / sqrt(ss + 1e-6));
    }
}

static void gdn_build(Op *o) {
    LinAttn *m = (LinAttn *)o;
    lin_attn_build(o, 0);
    int64_t nh = o->s->ntok * m->H;
    l2normalise_rows(m->q->v, nh, m->K);
    l2normalise_rows(m->k->v, nh, m->K);
    m->beta = f32(by_rows(input(o, "beta", nh, UNIFORM(0.05, 0.95), GRAD_SET), m->H));
    if (o->v->gate) m->g = f32(by_rows(input(o, "g", nh, DECAY(o), GRAD_SET), m->H));
}

static double gdn_fwd(Op *o) {
    LinAttnArgs a = lin_attn_args((LinAttn *)o);
    o->be->gdn_fwd(&a);
    return 0;
}

static void gdn_bwd(Op *o) {
    LinAttnGrads g = lin_attn_grads((LinAttn *)o);
    o->be->gdn_bwd(&g);
}

static OpShape gdn_shape(const Op *o) {
    const LinAttn *m = (const LinAttn *)o;
    return (OpShape){.op = "gdn", .H = m->H, .K = m->K, .V = m->Vd};
}

static const OpDef GDN = {.size = sizeof(LinAttn),
                          .build = gdn_build,
                          .fwd = gdn_fwd,
                          .bwd = gdn_bwd,
                          .ops = "gdn_fwd gdn_bwd",
                          .shape = gdn_shape};

/* FoX attention; without a forget gate (logf absent, the Transformer) dlogf is left alone. */
typedef struct {
    Op o;
    Tensor *q, *k, *v, *logf, *out, *lse;
    int H, D;
} Fox;

static void fox_build(Op *o) {
    Fox *m = (Fox *)o;
    int H = m->H = (int)dim(o->v->dims.H, 2), D = m->D = (int)dim(o->v->dims.K, 8);
    int64_t N = o->s->ntok;
    m->q = by_rows(input(o, "q", N * H * D, NZ(0.05, 1.5), GRAD_SET), H * D);
    m->k = by_rows(input(o, "k", N * H * D, NZ(0.05, 1.5), GRAD_SET), H * D);
    m->v = by_rows(input(o, "v", N * H * D, NZ(0.05, 1.5), GRAD_SET), H * D);
    m->logf = f32(o->v->gate ? by_rows(input(o, "logf", N * H, DECAY(o), GRAD_SET), H)
                             : absent(o, "logf", N * H));
    m->out = output(o, "o", N * H * D, ZERO);
    m->lse = f32(aux(o, "lse", N * H, ZERO));
}

static AttnArgs fox_args(Fox *m) {
    return (AttnArgs){.s = m->o.s,
                      .H = m->H,
                      .D = m->D,
                      .scale = 1.0 / sqrt((double)m->D),
                      .q = BV(m->q),
                      .k = BV(m->k),
                      .v = BV(m->v),
                      .logf = BV(m->logf),
                      .o = BV(m->out),
                      .lse = BV(m->lse)};
}

static double fox_fwd(Op *o) {
    AttnArgs a = fox_args((Fox *)o);
    o->be->fox_fwd(&a);
    return 0;
}

static void fox_bwd(Op *o) {
    Fox *m = (Fox *)o;
    o->be->fox_bwd(&(AttnGrads){.a = fox_args(m),
                                .dout = BD(m->out),
                                .dq = BD(m->q),
                                .dk = BD(m->k),
                                .dv = BD(m->v),
                                .dlogf = BD(m->logf)});
}

static OpShape fox_shape(const Op *o) {
    const Fox *m = (const Fox *)o;
    return (OpShape){.op = "fox", .H = m->H, .K = m->D, .V = m->D};
}

static const OpDef FOX = {.size = sizeof(Fox),
                          .build = fox_build,
                          .fwd = fox_fwd,
                          .bwd = fox_bwd,
                          .ops = "fox_fwd fox_bwd",
                          .shape = fox_shape};

/* ------------------------------------------------- LRU and RotRNN ---- */

/* The complex scan (docs/models.md §lru, §rotrnn), L = wo . h; weak decays (|lambda| in
 * [e^-0.05, e^-0.002]) so that states carried across chunks matter, angles in [-pi, pi]. */
typedef struct {
    Op o;
    Tensor *x, *loga, *angle, *h, *states;
    int C;
} CScan;

static void cscan_build(Op *o) {
    CScan *m = (CScan *)o;
    int C = m->C = 3;
    m->x = by_rows(input(o, "x", o->s->ntok * 2 * C, NZ(0.05, 1.5), GRAD_SET), 2 * C);
    m->loga = f32(input(o, "loga", C, WEAK_DECAY, GRAD_SET));
    m->angle = f32(input(o, "angle", C, UNIFORM(-3.1, 3.1), GRAD_SET));
    m->h = output(o, "h", o->s->ntok * 2 * C, ZERO);
    m->states = f32(aux(o, "states", chunk_states_size(o->s, 1, C, 2), ZERO));
}

static CScanArgs cscan_args(CScan *m) {
    return (CScanArgs){.s = m->o.s,
                       .C = m->C,
                       .loga = BV(m->loga),
                       .angle = BV(m->angle),
                       .x = BV(m->x),
                       .h = BV(m->h),
                       .states = BV(m->states)};
}

static double cscan_fwd(Op *o) {
    CScanArgs a = cscan_args((CScan *)o);
    o->be->cscan_fwd(&a);
    return 0;
}

static void cscan_bwd(Op *o) {
    CScan *m = (CScan *)o;
    o->be->cscan_bwd(&(CScanGrads){.a = cscan_args(m),
                                   .dh = BD(m->h),
                                   .dx = BD(m->x),
                                   .dloga = BD(m->loga),
                                   .dangle = BD(m->angle)});
}

static const OpDef CSCAN = {.size = sizeof(CScan),
                            .build = cscan_build,
                            .fwd = cscan_fwd,
                            .bwd = cscan_bwd,
                            .ops = "cscan_fwd cscan_bwd"};

/* The LRU's weight op, every output probed; C_re2, C_im2: the bidirectional layer's reverse
 * readout (docs/models.md §block-dropout-bidirectional). */
typedef struct {
    Op o;
    Tensor *nu, *th, *gl, *Br, *Bi, *Cr, *Ci, *Cr2, *Ci2, *loga, *angle, *Bw, *Cw, *Cw2;
    int N, d;
} LruW;

static void lru_w_build(Op *o) {
    LruW *m = (LruW *)o;
    int N = m->N = 5;
    int64_t nB = (int64_t)N * (m->d = 7);
    m->nu = f32(input(o, "nu_log", N, UNIFORM(-3, 1), GRAD_ADD));
    m->th = f32(input(o, "theta_log", N, UNIFORM(-3, 1), GRAD_ADD));
    m->gl = f32(input(o, "gamma_log", N, UNIFORM(-2, 0), GRAD_ADD));
    m->Br = f32(input(o, "B_re", nB, NZ(0.05, 1), GRAD_ADD));
    m->Bi = f32(input(o, "B_im", nB, NZ(0.05, 1), GRAD_ADD));
    m->Cr = f32(input(o, "C_re", nB, NZ(0.05, 1), GRAD_ADD));
    m->Ci = f32(input(o, "C_im", nB, NZ(0.05, 1), GRAD_ADD));
    m->Cr2 = f32(input(o, "C_re2", nB, NZ(0.05, 1), GRAD_ADD));
    m->Ci2 = f32(input(o, "C_im2", nB, NZ(0.05, 1), GRAD_ADD));
    m->loga = f32(output(o, "loga", N, ZERO));
    m->angle = f32(output(o, "angle", N, ZERO));
    m->Bw = dkind(output(o, "Bw", 2 * nB, ZERO), EL_F32);
    m->Cw = dkind(output(o, "Cw", 2 * nB, ZERO), EL_F32);
    m->Cw2 = dkind(output(o, "Cw2", 2 * nB, ZERO), EL_F32);
}

static LruWeights lru_weights(LruW *m) {
    return (LruWeights){.N = m->N,
                        .d = m->d,
                        .nu_log = BV(m->nu),
                        .theta_log = BV(m->th),
                        .gamma_log = BV(m->gl),
                        .B_re = BV(m->Br),
                        .B_im = BV(m->Bi),
                        .C_re = BV(m->Cr),
                        .C_im = BV(m->Ci),
                        .loga = BV(m->loga),
                        .angle = BV(m->angle),
                        .Bw = BV(m->Bw),
                        .Cw = BV(m->Cw),
                        .C_re2 = BV(m->Cr2),
                        .C_im2 = BV(m->Ci2),
                        .Cw2 = BV(m->Cw2)};
}

static double lru_w_fwd(Op *o) {
    LruWeights w = lru_weights((LruW *)o);
    o->be->lru_weights_fwd(&w);
    return 0;
}

static void lru_w_bwd(Op *o) {
    LruW *m = (LruW *)o;
    o->be->lru_weights_bwd(&(LruWeightGrads){.w = lru_weights(m),
                                             .dloga = BD(m->loga),
                                             .dangle = BD(m->angle),
                                             .dBw = BD(m->Bw),
                                             .dCw = BD(m->Cw),
                                             .dnu_log = BD(m->nu),
                                             .dtheta_log = BD(m->th),
                                             .dgamma_log = BD(m->gl),
                                             .dB_re = BD(m->Br),
                                             .dB_im = BD(m->Bi),
                                             .dC_re = BD(m->Cr),
                                             .dC_im = BD(m->Ci),
                                             .dCw2 = BD(m->Cw2),
                                             .dC_re2 = BD(m->Cr2),
                                             .dC_im2 = BD(m->Ci2)});
}

/* values: Re(C h) = h Cw^T and gamma B u = Bw u for one complex h, real u */
static void lru_w_extra(Op *o) {
    LruW *m = (LruW *)o;
    int N = m->N, d = m->d;
    const real *Cr = m->Cr->v, *Ci = m->Ci->v, *Cw = m->Cw->v, *Bw = m->Bw->v, *gl = m->gl->v;
    double worst = 0;
    for (int e = 0; e < d; e++) {
        double ref = 0, got = 0;
        for (int k = 0; k < N; k++) {
            double hr = 0.3 + k, hi = 0.7 - k; /* any complex vector */
            ref += Cr[e * N + k] * hr - Ci[e * N + k] * hi;
            got += Cw[e * 2 * N + 2 * k] * hr + Cw[e * 2 * N + 2 * k + 1] * hi;
        }
        worst = fmax(worst, fabs(ref - got));
    }
    for (int k = 0; k < N; k++) {
        worst = fmax(worst, fabs(m->loga->v[k] + exp(m->nu->v[k])) +
                                fabs(m->angle->v[k] - exp(m->th->v[k])));
        for (int e = 0; e < d; e++)
            worst =
                fmax(worst, fabs(Bw[2 * k * d + e] - exp(gl[k]) * m->Br->v[k * d + e]) +
                                fabs(Bw[(2 * k + 1) * d + e] - exp(gl[k]) * m->Bi->v[k * d + e]));
    }
    printf("    %-40s abs err %.2e\n", label(o, "value"), worst);
    CHECK(worst < 1e-12);
}

static const OpDef LRU_WEIGHTS = {.size = sizeof(LruW),
                                  .build = lru_w_build,
                                  .fwd = lru_w_fwd,
                                  .bwd = lru_w_bwd,
                                  .extra = lru_w_extra,
                                  .ops = "lru_weights_fwd lru_weights_bwd"};

/* P = expm(M - M^T): orthogonal; a 2x2 rotation in closed form; dM through the Frechet
 * derivative against finite differences (L = W . P), for heads whose ||S||_1 needs several
 * squarings. */
typedef struct {
    Op o;
    Tensor *M, *P, *work;
    int H, n;
} Expm;

static void expm_build(Op *o) {
    Expm *m = (Expm *)o;
    m->H = 2, m->n = 8;
    m->M = f32(input(o, "M", (int64_t)m->H * m->n * m->n, NORMAL(1.0), GRAD_ADD));
    m->P = f32(output(o, "P", (int64_t)m->H * m->n * m->n, ZERO));
    m->work = f32(aux(o, "work", orth_expm_work_size(m->H, m->n), ZERO));
}

static double expm_fwd(Op *o) {
    Expm *m = (Expm *)o;
    o->be->orth_expm_fwd(BV(m->P), BV(m->M), BV(m->work), m->H, m->n);
    return 0;
}

static void expm_bwd(Op *o) {
    Expm *m = (Expm *)o;
    o->be->orth_expm_bwd(BD(m->M), BD(m->P), BV(m->M), BV(m->work), m->H, m->n);
}

static void expm_extra(Op *o) {
    Expm *m = (Expm *)o;
    real M2[4] = {0.3, 1.9, -0.4, 0.1}, P2[4]; /* S = [[0, 2.3], [-2.3, 0]] */
    cpu_orth_expm_fwd(P2, M2, NULL, 1, 2);
    double a = 2.3, e2 = fabs(P2[0] - cos(a)) + fabs(P2[1] - sin(a)) + fabs(P2[2] + sin(a)) +
                         fabs(P2[3] - cos(a));
    printf("    %-40s abs err %.2e\n", label(o, "2x2 rotation"), e2);
    CHECK(e2 < 1e-13);
    int n = m->n;
    const real *P = m->P->v;
    double orth = 0;
    for (int h = 0; h < m->H; h++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int k = 0; k < n; k++)
                    acc += P[h * n * n + k * n + i] * P[h * n * n + k * n + j];
                orth = fmax(orth, fabs(acc - (i == j)));
            }
    printf("    %-40s abs err %.2e\n", label(o, "P^T P = I"), orth);
    CHECK(orth < 1e-12);
}

static const OpDef ORTH_EXPM = {.size = sizeof(Expm),
                                .build = expm_build,
                                .fwd = expm_fwd,
                                .bwd = expm_bwd,
                                .extra = expm_extra,
                                .ops = "orth_expm_fwd orth_expm_bwd"};

/* The basis P of RotRNN or the nnRNN: an input of its own, or (chain) P = expm(M - M^T) from
 * the input M, whose gradient then comes from dP through orth_expm's backward. */
typedef struct {
    Tensor *M, *P, *dP, *work; /* dP, M and work only for chain (else P's gradient is dP) */
    int H, n;
} Basis;

static void basis_build(Op *o, Basis *b, int H, int n, Init M) {
    int64_t nP = (int64_t)H * n * n;
    b->H = H, b->n = n;
    if (o->v->chain) {
        b->M = f32(input(o, "M", nP, M, GRAD_ADD));
        b->P = f32(aux(o, "P", nP, ZERO));
        b->dP = f32(aux(o, "dP", nP, GARBAGE));
        b->work = f32(aux(o, "work", orth_expm_work_size(H, n), ZERO));
    } else {
        b->P = f32(input(o, "P", nP, NZ(0.1, 1), GRAD_SET));
    }
}

/* The buffer of dL/dP the weight op's backward writes. */
static void *basis_dP(const Basis *b) { return b->dP ? BV(b->dP) : BD(b->P); }

static void basis_fwd(Op *o, Basis *b) {
    if (b->M) o->be->orth_expm_fwd(BV(b->P), BV(b->M), BV(b->work), b->H, b->n);
}

static void basis_bwd(Op *o, Basis *b) {
    if (b->M) o->be->orth_expm_bwd(BD(b->M), BV(b->dP), BV(b->M), BV(b->work), b->H, b->n);
}

/* RotRNN's weight op (every output probed, C2 the reverse readout of §block-dropout-bidirectional).
 */
typedef struct {
    Op o;
    Basis b;
    Tensor *gl, *th, *B, *C, *C2, *loga, *angle, *Bw, *Cw, *Cw2, *xi, *dxi;
    int d;
} RotW;

static void rot_w_build(Op *o) {
    RotW *m = (RotW *)o;
    int H = 2, n = 4;
    int64_t C = (int64_t)H * n / 2, nB = (int64_t)H * n * (m->d = 5);
    basis_build(o, &m->b, H, n, NORMAL(1.0));
    m->gl = f32(input(o, "gamma_log", H, UNIFORM(-3, 0), GRAD_ADD));
    m->th = f32(input(o, "theta", C, UNIFORM(0, 6.28), GRAD_ADD));
    m->B = f32(input(o, "B", nB, NZ(0.05, 1), GRAD_ADD));
    m->C = f32(input(o, "C", nB, NZ(0.05, 1), GRAD_ADD));
    m->C2 = f32(input(o, "C2", nB, NZ(0.05, 1), GRAD_ADD));
    m->loga = f32(output(o, "loga", C, ZERO));
    m->angle = f32(output(o, "angle", C, ZERO));
    m->Bw = dkind(output(o, "Bw", nB, ZERO), EL_F32);
    m->Cw = dkind(output(o, "Cw", nB, ZERO), EL_F32);
    m->Cw2 = dkind(output(o, "Cw2", nB, ZERO), EL_F32);
    m->xi = f32(aux(o, "xi", H, ZERO));
    m->dxi = f32(aux(o, "dxi", H, GARBAGE));
}

static RotWeights rot_weights(RotW *m) {
    return (RotWeights){.H = m->b.H,
                        .n = m->b.n,
                        .d = m->d,
                        .P = BV(m->b.P),
                        .gamma_log = BV(m->gl),
                        .theta = BV(m->th),
                        .B = BV(m->B),
                        .C = BV(m->C),
                        .xi = BV(m->xi),
                        .loga = BV(m->loga),
                        .angle = BV(m->angle),
                        .Bw = BV(m->Bw),
                        .Cw = BV(m->Cw),
                        .C2 = BV(m->C2),
                        .Cw2 = BV(m->Cw2)};
}

static double rot_w_fwd(Op *o) {
    RotW *m = (RotW *)o;
    basis_fwd(o, &m->b);
    RotWeights w = rot_weights(m);
    o->be->rotrnn_weights_fwd(&w);
    return 0;
}

static void rot_w_bwd(Op *o) {
    RotW *m = (RotW *)o;
    o->be->rotrnn_weights_bwd(&(RotWeightGrads){.w = rot_weights(m),
                                                .dloga = BD(m->loga),
                                                .dangle = BD(m->angle),
                                                .dBw = BD(m->Bw),
                                                .dCw = BD(m->Cw),
                                                .dP = basis_dP(&m->b),
                                                .dxi = BV(m->dxi),
                                                .dgamma_log = BD(m->gl),
                                                .dtheta = BD(m->th),
                                                .dB = BD(m->B),
                                                .dC = BD(m->C),
                                                .dCw2 = BD(m->Cw2),
                                                .dC2 = BD(m->C2)});
    basis_bwd(o, &m->b);
}

/* xi normalises: ||xi B_h||^2 = 1 - gamma^2 */
static void rot_w_extra(Op *o) {
    RotW *m = (RotW *)o;
    int nd = m->b.n * m->d;
    double worst = 0;
    for (int h = 0; h < m->b.H; h++) {
        double ss = 0, g = exp(-exp(m->gl->v[h]));
        for (int i = 0; i < nd; i++) ss += pow(m->xi->v[h] * m->B->v[h * nd + i], 2);
        worst = fmax(worst, fabs(ss - (1 - g * g)));
    }
    printf("    %-40s abs err %.2e\n", label(o, "xi"), worst);
    CHECK(worst < 1e-12);
}

static const OpDef ROTRNN_WEIGHTS = {
    .size = sizeof(RotW),
    .build = rot_w_build,
    .fwd = rot_w_fwd,
    .bwd = rot_w_bwd,
    .extra = rot_w_extra,
    .ops = "rotrnn_weights_fwd rotrnn_weights_bwd orth_expm_fwd orth_expm_bwd"};

/* -------------------------------------------------- nonlinear RNNs ---- */

/* The step form of a recurrence (decoding) against its forward: one token of one segment per
 * call, from each segment's start; h and each segment's final state must match. */
typedef struct {
    void (*fwd)(Op *o, real *state); /* the forward, keeping each segment's final state */
    void (*step)(Op *o, const Seqs *one, int64_t tok, real *h, real *state);
    const real *h; /* the forward's h [ntok, n] */
    int n, sw;     /* widths of h and of a state */
} Stepper;

static void check_steps(Op *o, Stepper st) {
    const Seqs *s = o->s;
    int64_t nh = s->ntok * st.n, ns = (int64_t)NSEG * st.sw;
    real *hs = tu_zeros(nh), *state = tu_zeros(ns), *final = tu_zeros(ns);
    st.fwd(o, final);
    int32_t pos[1];
    int64_t cu[2] = {0, 1};
    Seqs one = {.ntok = 1, .nseg = 1, .cu = cu, .pos = pos};
    for (int seg = 0; seg < NSEG; seg++)
        for (int64_t tok = s->cu[seg]; tok < s->cu[seg + 1]; tok++) {
            pos[0] = (int32_t)(tok - s->cu[seg]);
            st.step(o, &one, tok, hs + tok * st.n, state + seg * st.sw);
        }
    check_equal(label(o, "step = forward"), hs, st.h, nh);
    check_equal(label(o, "final state"), state, final, ns);
    FREE_ALL(hs, state, final);
}

/* The nonlinear recurrence (docs/models.md §nonlinear-rnns), tanh or modReLU, over the segments,
 * from zero or (h0) carried initial states (§carried-states). The modReLU bias accumulates its
 * gradient; tanh has none and leaves dbias alone. */
typedef struct {
    Op o;
    Tensor *z, *W, *b, *h, *h0;
    int n;
} Rnn;

static void rnn_build(Op *o) {
    Rnn *m = (Rnn *)o;
    int n = m->n = 5, mod = o->v->rnn == RNN_MODRELU;
    int64_t nz = o->s->ntok * n;
    m->z = by_rows(input(o, "z", nz, NORMAL(0.8), GRAD_SET), n);
    m->W = f32(input(o, "W", (int64_t)n * n, NORMAL(mod ? 0.3 : 0.5), GRAD_ADD));
    m->b = f32(mod ? input(o, "bias", n, UNIFORM(-0.3, 0.2), GRAD_ADD) : absent(o, "bias", n));
    m->h = output(o, "h", nz, ZERO);
    if (o->v->h0) m->h0 = f32(aux(o, "h0", (int64_t)NSEG * n, NORMAL(0.5)));
}

static RnnArgs rnn_args(Rnn *m) {
    return (RnnArgs){.s = m->o.s,
                     .n = m->n,
                     .act = m->o.v->rnn,
                     .W = BV(m->W),
                     .bias = BV(m->b),
                     .z = BV(m->z),
                     .h = BV(m->h),
                     .h0 = BV(m->h0)};
}

static double rnn_fwd(Op *o) {
    RnnArgs a = rnn_args((Rnn *)o);
    o->be->rnn_fwd(&a);
    return 0;
}

static void rnn_bwd(Op *o) {
    Rnn *m = (Rnn *)o;
    o->be->rnn_bwd(&(RnnGrads){
        .a = rnn_args(m), .dh = BD(m->h), .dz = BD(m->z), .dW = BD(m->W), .dbias = BD(m->b)});
}

static void rnn_fwd_state(Op *o, real *state) {
    RnnArgs a = rnn_args((Rnn *)o);
    a.state = state;
    cpu_rnn_fwd(&a);
}

static void rnn_step(Op *o, const Seqs *one, int64_t tok, real *h, real *state) {
    Rnn *m = (Rnn *)o;
    RnnArgs a = rnn_args(m);
    a.s = one, a.z = m->z->v + tok * m->n, a.h = h, a.state = state;
    cpu_rnn_step(&a);
}

static void rnn_extra(Op *o) {
    Rnn *m = (Rnn *)o;
    if (!m->h0) check_steps(o, (Stepper){rnn_fwd_state, rnn_step, m->h->v, m->n, m->n});
}

static OpShape rnn_shape(const Op *o) { return (OpShape){.op = "rnn", .K = ((const Rnn *)o)->n}; }

static const OpDef RNN = {.size = sizeof(Rnn),
                          .build = rnn_build,
                          .fwd = rnn_fwd,
                          .bwd = rnn_bwd,
                          .extra = rnn_extra,
                          .ops = "rnn_fwd rnn_bwd",
                          .shape = rnn_shape};

/* The LSTM recurrence (docs/models.md §lstm), from zero or (h0) carried (h, c) states. */
typedef struct {
    Op o;
    Tensor *z, *W, *h, *gates, *c, *h0, *step_gates, *step_c;
    int n;
} Lstm;

static void lstm_build(Op *o) {
    Lstm *m = (Lstm *)o;
    int n = m->n = 3;
    int64_t nh = o->s->ntok * n;
    m->z = by_rows(input(o, "z", 4 * nh, NORMAL(1.0), GRAD_SET), 4 * n);
    m->W = f32(input(o, "W", 4 * (int64_t)n * n, NORMAL(0.6), GRAD_ADD));
    m->h = output(o, "h", nh, ZERO);
    m->gates = aux(o, "gates", 4 * nh, ZERO);
    m->c = f32(aux(o, "c", nh, ZERO));
    m->step_gates = aux(o, "step_gates", 4 * n, ZERO); /* lstm_extra's, on the host */
    m->step_c = f32(aux(o, "step_c", n, ZERO));
    if (o->v->h0) m->h0 = f32(aux(o, "h0", (int64_t)NSEG * 2 * n, NORMAL(0.5)));
}

static LstmArgs lstm_args(Lstm *m) {
    return (LstmArgs){.s = m->o.s,
                      .n = m->n,
                      .W = BV(m->W),
                      .z = BV(m->z),
                      .gates = BV(m->gates),
                      .c = BV(m->c),
                      .h = BV(m->h),
                      .h0 = BV(m->h0)};
}

static double lstm_fwd(Op *o) {
    LstmArgs a = lstm_args((Lstm *)o);
    o->be->lstm_fwd(&a);
    return 0;
}

static void lstm_bwd(Op *o) {
    Lstm *m = (Lstm *)o;
    o->be->lstm_bwd(
        &(LstmGrads){.a = lstm_args(m), .dh = BD(m->h), .dz = BD(m->z), .dW = BD(m->W)});
}

static void lstm_fwd_state(Op *o, real *state) {
    LstmArgs a = lstm_args((Lstm *)o);
    a.state = state;
    cpu_lstm_fwd(&a);
}

static void lstm_step(Op *o, const Seqs *one, int64_t tok, real *h, real *state) {
    Lstm *m = (Lstm *)o;
    LstmArgs a = lstm_args(m);
    a.s = one, a.z = m->z->v + tok * 4 * m->n, a.gates = m->step_gates->v, a.c = m->step_c->v,
    a.h = h, a.state = state;
    cpu_lstm_step(&a);
}

static void lstm_extra(Op *o) {
    Lstm *m = (Lstm *)o;
    if (!m->h0) check_steps(o, (Stepper){lstm_fwd_state, lstm_step, m->h->v, m->n, 2 * m->n});
}

static OpShape lstm_shape(const Op *o) {
    return (OpShape){.op = "lstm", .K = ((const Lstm *)o)->n};
}

static const OpDef LSTM = {.size = sizeof(Lstm),
                           .build = lstm_build,
                           .fwd = lstm_fwd,
                           .bwd = lstm_bwd,
                           .extra = lstm_extra,
                           .ops = "lstm_fwd lstm_bwd",
                           .shape = lstm_shape};

/* Carrying the state (docs/models.md §carried-states): each segment run as two windows, the second
 * from the first's final state, equals the segment run whole (the second window's h and final
 * state), for the RNN (lstm = 0) and the LSTM (lstm = 1). */
static const int SPLIT_A[] = {35, 1, 16, 65}, SPLIT_B[] = {35, 2, 17, 65};

static void run_windows(int lstm, const Seqs *s, int n, const real *W, const real *b, const real *z,
                        const real *h0, real *h, real *state) {
    int64_t N = s->ntok;
    if (lstm) {
        real *q = tu_zeros(4 * N * n), *c = tu_zeros(N * n);
        cpu_lstm_fwd(&(LstmArgs){
            .s = s, .n = n, .W = W, .z = z, .gates = q, .c = c, .h = h, .state = state, .h0 = h0});
        FREE_ALL(q, c);
    } else {
        cpu_rnn_fwd(&(RnnArgs){.s = s,
                               .n = n,
                               .act = RNN_MODRELU,
                               .W = W,
                               .bias = b,
                               .z = z,
                               .h = h,
                               .state = state,
                               .h0 = h0});
    }
}

static void carry_split_case(int lstm) {
    Rng r;
    rng_init(&r, 709 + (uint64_t)lstm, 0);
    int whole[NSEG], n = 4, zw = lstm ? 4 * n : n, sw = lstm ? 2 * n : n;
    for (int i = 0; i < NSEG; i++) whole[i] = SPLIT_A[i] + SPLIT_B[i];
    TestSeqs tw = tu_seqs(whole, NSEG), ta = tu_seqs(SPLIT_A, NSEG), tb = tu_seqs(SPLIT_B, NSEG);
    int64_t N = tw.s.ntok;
    real *W = tu_randn(&r, (int64_t)zw * n, 0.4), *b = tu_rand(&r, n, -0.3, 0.2),
         *z = tu_randn(&r, N * zw, 0.8);
    real *za = tu_zeros(ta.s.ntok * zw), *zb = tu_zeros(tb.s.ntok * zw), *hw = tu_zeros(N * n),
         *ha = tu_zeros(ta.s.ntok * n);
    real *hb = tu_zeros(tb.s.ntok * n), *hb_want = tu_zeros(tb.s.ntok * n);
    real *h0 = tu_randn(&r, (int64_t)NSEG * sw, 0.5), *sw_ = tu_zeros((int64_t)NSEG * sw),
         *sa = tu_zeros((int64_t)NSEG * sw);
    real *sb = tu_zeros((int64_t)NSEG * sw);
    for (int i = 0; i < NSEG; i++) {
        memcpy(za + ta.s.cu[i] * zw, z + tw.s.cu[i] * zw, sizeof(real) * (size_t)(SPLIT_A[i] * zw));
        memcpy(zb + tb.s.cu[i] * zw, z + (tw.s.cu[i] + SPLIT_A[i]) * zw,
               sizeof(real) * (size_t)(SPLIT_B[i] * zw));
    }
    run_windows(lstm, &tw.s, n, W, b, z, h0, hw, sw_);
    run_windows(lstm, &ta.s, n, W, b, za, h0, ha, sa);
    run_windows(lstm, &tb.s, n, W, b, zb, sa, hb, sb);
    for (int i = 0; i < NSEG; i++)
        memcpy(hb_want + tb.s.cu[i] * n, hw + (tw.s.cu[i] + SPLIT_A[i]) * n,
               sizeof(real) * (size_t)(SPLIT_B[i] * n));
    check_equal(lstm ? "lstm carried window = whole" : "rnn carried window = whole", hb, hb_want,
                tb.s.ntok * n);
    check_equal(lstm ? "lstm carried final state" : "rnn carried final state", sb, sw_,
                (int64_t)NSEG * sw);
    FREE_ALL(W, b, z, za, zb, hw, ha, hb, hb_want, h0, sw_, sa, sb);
    tu_seqs_free(&tw);
    tu_seqs_free(&ta);
    tu_seqs_free(&tb);
}

static void test_carry_split(void) {
    carry_split_case(0);
    carry_split_case(1);
}

/* The nnRNN's Schur form V = P (Lambda + T) P^T (docs/models.md §nonlinear-rnns), P from its basis.
 */
typedef struct {
    Basis b;
    Tensor *gamma, *theta, *T, *K, *V, *work; /* V: the op's output or the cell's scratch */
} Schur;

static void schur_build(Op *o, Schur *p, int n, Init gamma, Init T) {
    int64_t nn = (int64_t)n * n;
    basis_build(o, &p->b, 1, n, NORMAL(0.7));
    p->gamma = f32(input(o, "gamma", n / 2, gamma, GRAD_ADD));
    p->theta = f32(input(o, "theta", n / 2, UNIFORM(0, 6.28), GRAD_ADD));
    p->T = f32(input(o, "T", nn, T, GRAD_ADD));
    p->K = f32(aux(o, "K", nn, ZERO));
    p->work = f32(aux(o, "work", 2 * nn, ZERO));
}

static NnrnnWeights schur_weights(const Schur *p) {
    return (NnrnnWeights){.n = p->b.n,
                          .P = BV(p->b.P),
                          .gamma = BV(p->gamma),
                          .theta = BV(p->theta),
                          .T = BV(p->T),
                          .K = BV(p->K),
                          .V = BV(p->V),
                          .work = BV(p->work)};
}

static void schur_fwd(Op *o, Schur *p) {
    basis_fwd(o, &p->b);
    NnrnnWeights w = schur_weights(p);
    o->be->nnrnn_weights_fwd(&w);
}

static void schur_bwd(Op *o, Schur *p, const void *dV) {
    o->be->nnrnn_weights_bwd(&(NnrnnWeightGrads){.w = schur_weights(p),
                                                 .dV = dV,
                                                 .dP = basis_dP(&p->b),
                                                 .dgamma = BD(p->gamma),
                                                 .dtheta = BD(p->theta),
                                                 .dT = BD(p->T)});
    basis_bwd(o, &p->b);
}

/* The weight op alone (L = W . V) or chained with P = expm(M - M^T). */
typedef struct {
    Op o;
    Schur p;
    Tensor *V;
} NnW;

static void nn_w_build(Op *o) {
    NnW *m = (NnW *)o;
    schur_build(o, &m->p, 6, UNIFORM(0.5, 1.5), NORMAL(0.5));
    m->V = f32(output(o, "V", 36, ZERO));
    m->p.V = m->V;
}

static double nn_w_fwd(Op *o) {
    schur_fwd(o, &((NnW *)o)->p);
    return 0;
}

static void nn_w_bwd(Op *o) {
    NnW *m = (NnW *)o;
    schur_bwd(o, &m->p, BD(m->V));
}

/* V's value against the product written out */
static void nn_w_extra(Op *o) {
    NnW *m = (NnW *)o;
    if (o->v->chain) return;
    int n = m->p.b.n;
    const real *P = m->p.b.P->v, *T = m->p.T->v, *gm = m->p.gamma->v, *th = m->p.theta->v;
    double worst = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int a = 0; a < n; a++)
                for (int b = 0; b < n; b++) {
                    double k = b < a ? T[a * n + b] : 0;
                    if (a / 2 == b / 2) {
                        double ang = th[a / 2];
                        k += gm[a / 2] * (a == b ? cos(ang) : a < b ? -sin(ang) : sin(ang));
                    }
                    acc += P[i * n + a] * k * P[j * n + b];
                }
            worst = fmax(worst, fabs(acc - m->V->v[i * n + j]));
        }
    printf("    %-40s abs err %.2e\n", label(o, "V"), worst);
    CHECK(worst < 1e-12);
}

static const OpDef NNRNN_WEIGHTS = {
    .size = sizeof(NnW),
    .build = nn_w_build,
    .fwd = nn_w_fwd,
    .bwd = nn_w_bwd,
    .extra = nn_w_extra,
    .ops = "nnrnn_weights_fwd nnrnn_weights_bwd orth_expm_fwd orth_expm_bwd"};

/* EURNN's W = R_{L-1} ... R_0 from its angles (docs/models.md §nonlinear-rnns). */
typedef struct {
    Op o;
    Tensor *theta, *W, *work;
} EuW;

static void eu_w_build(Op *o) {
    EuW *m = (EuW *)o;
    int n = o->v->n, L = o->v->layers;
    m->theta = f32(input(o, "theta", eurnn_angles(n, L), UNIFORM(-3.14, 3.14), GRAD_ADD));
    m->W = f32(output(o, "W", (int64_t)n * n, ZERO));
    m->work = f32(aux(o, "work", 2 * (int64_t)n * n, ZERO));
}

static double eu_w_fwd(Op *o) {
    EuW *m = (EuW *)o;
    o->be->eurnn_weights_fwd(BV(m->W), BV(m->theta), o->v->n, o->v->layers);
    return 0;
}

static void eu_w_bwd(Op *o) {
    EuW *m = (EuW *)o;
    o->be->eurnn_weights_bwd(BD(m->theta), BD(m->W), BV(m->W), BV(m->theta), BV(m->work), o->v->n,
                             o->v->layers);
}

/* W against the product of the layers' rotation matrices, each written out in full */
static void eu_w_extra(Op *o) {
    EuW *m = (EuW *)o;
    int n = o->v->n;
    size_t nn = (size_t)n * n;
    double *A = calloc(nn, sizeof(double)), *R = calloc(nn, sizeof(double)),
           *B = calloc(nn, sizeof(double));
    for (int i = 0; i < n; i++) A[i * n + i] = 1;
    const real *th = m->theta->v;
    for (int l = 0; l < o->v->layers; l++) {
        memset(R, 0, nn * sizeof(double));
        for (int i = 0; i < n; i++) R[i * n + i] = 1;
        for (int p = l % 2, k = 0; p + 1 < n; p += 2, k++) {
            R[p * n + p] = R[(p + 1) * n + p + 1] = cos(th[k]);
            R[p * n + p + 1] = -sin(th[k]);
            R[(p + 1) * n + p] = sin(th[k]);
        }
        th += eurnn_layer_pairs(n, l);
        for (int i = 0; i < n; i++) /* B = R A */
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int k = 0; k < n; k++) acc += R[i * n + k] * A[k * n + j];
                B[i * n + j] = acc;
            }
        memcpy(A, B, nn * sizeof(double));
    }
    double worst = 0;
    for (size_t i = 0; i < nn; i++) worst = fmax(worst, fabs(A[i] - m->W->v[i]));
    printf("    %-40s abs err %.2e\n", label(o, "W"), worst);
    CHECK(worst < 1e-12);
    free(A);
    free(R);
    free(B);
}

static const OpDef EURNN_WEIGHTS = {.size = sizeof(EuW),
                                    .build = eu_w_build,
                                    .fwd = eu_w_fwd,
                                    .bwd = eu_w_bwd,
                                    .extra = eu_w_extra,
                                    .ops = "eurnn_weights_fwd eurnn_weights_bwd"};

/* The whole nnRNN cell through its parameters: V from (M, gamma, theta, T), then the modReLU
 * recurrence; L = wo . h. */
typedef struct {
    Op o;
    Schur p;
    Tensor *b, *h, *z, *dz, *dV;
    int n;
} NnCell;

static void nn_cell_build(Op *o) {
    NnCell *m = (NnCell *)o;
    int n = m->n = 4;
    int64_t nz = o->s->ntok * n;
    schur_build(o, &m->p, n, UNIFORM(0.6, 0.95), NORMAL(0.3));
    m->p.V = f32(aux(o, "V", (int64_t)n * n, ZERO));
    m->dV = f32(aux(o, "dV", (int64_t)n * n, ZERO));
    m->b = f32(input(o, "bias", n, UNIFORM(-0.2, 0.1), GRAD_ADD));
    m->h = output(o, "h", nz, ZERO);
    m->z = aux(o, "z", nz, NORMAL(0.8));
    m->dz = aux(o, "dz", nz, GARBAGE);
}

static RnnArgs nn_cell_args(NnCell *m) {
    return (RnnArgs){.s = m->o.s,
                     .n = m->n,
                     .act = RNN_MODRELU,
                     .W = BV(m->p.V),
                     .bias = BV(m->b),
                     .z = BV(m->z),
                     .h = BV(m->h)};
}

static double nn_cell_fwd(Op *o) {
    NnCell *m = (NnCell *)o;
    schur_fwd(o, &m->p);
    RnnArgs a = nn_cell_args(m);
    o->be->rnn_fwd(&a);
    return 0;
}

static void nn_cell_bwd(Op *o) {
    NnCell *m = (NnCell *)o;
    o->be->zero(BV(m->dV), elem_bytes(o, EL_F32, m->dV->spec.n));
    o->be->rnn_bwd(&(RnnGrads){
        .a = nn_cell_args(m), .dh = BD(m->h), .dz = BV(m->dz), .dW = BV(m->dV), .dbias = BD(m->b)});
    schur_bwd(o, &m->p, BV(m->dV));
}

static const OpDef NNRNN_CELL = {
    .size = sizeof(NnCell),
    .build = nn_cell_build,
    .fwd = nn_cell_fwd,
    .bwd = nn_cell_bwd,
    .ops = "nnrnn_weights_fwd nnrnn_weights_bwd orth_expm_fwd orth_expm_bwd rnn_fwd rnn_bwd"};

/* coef sum (w - target)^2 and its gradient added to g. */
#define PEN_TARGET 1.0
#define PEN_COEF 0.3

typedef struct {
    Op o;
    Tensor *w;
    double value; /* returned by the backward's call */
} Penalty;

static void penalty_build(Op *o) { ((Penalty *)o)->w = f32(input(o, "w", 9, NORMAL(1), GRAD_ADD)); }

static double penalty_fwd(Op *o) {
    Penalty *m = (Penalty *)o;
    return o->be->l2_penalty(NULL, BV(m->w), m->w->spec.n, PEN_TARGET, PEN_COEF);
}

static void penalty_bwd(Op *o) {
    Penalty *m = (Penalty *)o;
    m->value = o->be->l2_penalty(BD(m->w), BV(m->w), m->w->spec.n, PEN_TARGET, PEN_COEF);
}

static void penalty_extra(Op *o) {
    Penalty *m = (Penalty *)o;
    double ref = 0;
    for (int64_t i = 0; i < m->w->spec.n; i++) ref += PEN_COEF * pow(m->w->v[i] - PEN_TARGET, 2);
    printf("    %-40s %.12g vs %.12g\n", label(o, "value"), m->value, ref);
    CHECK_CLOSE(m->value, ref, EXACT_TOL);
}

static const OpDef L2_PENALTY = {.size = sizeof(Penalty),
                                 .build = penalty_build,
                                 .fwd = penalty_fwd,
                                 .bwd = penalty_bwd,
                                 .extra = penalty_extra,
                                 .ops = "l2_penalty"};

/* ---------------------------------------------------------- loss ---- */

/* The loss with grad_scale 0 (logits kept) is the forward; the backward's call with
 * grad_scale CE_SCALE writes the scaled gradient over the logits, divided back by the runners
 * (Spec.dscale). */
#define CE_SCALE 0.37f

typedef struct {
    Op o;
    Tensor *labels, *logits, *work;
    int64_t N;
    int V;
    double scaled_loss;
} CrossEntropy;

static void ce_build(Op *o) {
    CrossEntropy *m = (CrossEntropy *)o;
    m->N = dim(o->v->dims.N, 11), m->V = (int)dim(o->v->dims.V, 13);
    m->labels = indices(o, "labels", m->N);
    int32_t *labels = m->labels->iv;
    for (int64_t i = 0; i < m->N; i++) labels[i] = (int32_t)rng_below(&o->r, (uint64_t)m->V);
    labels[2 % m->N] = labels[7 % m->N] = -100; /* ignored rows, and the last id */
    labels[10 % m->N] = m->V - 1;
    m->logits = input(o, "logits", m->N * m->V, NZ(0.05, 4.0), GRAD_SET);
    m->logits->spec.dscale = CE_SCALE;
    m->work = aux(o, "work", m->N * m->V, ZERO);
}

static double ce_fwd(Op *o) {
    CrossEntropy *m = (CrossEntropy *)o;
    o->be->copy(BV(m->work), BV(m->logits), elem_bytes(o, EL_ACT, m->N * m->V));
    return o->be->cross_entropy(BV(m->work), BV(m->labels), m->N, m->V, 0.0f);
}

static void ce_bwd(Op *o) {
    CrossEntropy *m = (CrossEntropy *)o;
    o->be->copy(BD(m->logits), BV(m->logits), elem_bytes(o, EL_ACT, m->N * m->V));
    m->scaled_loss = o->be->cross_entropy(BD(m->logits), BV(m->labels), m->N, m->V, CE_SCALE);
}

/* the loss against a direct log-softmax, with either grad_scale; ignored rows get no gradient */
static void ce_extra(Op *o) {
    CrossEntropy *m = (CrossEntropy *)o;
    int V = m->V;
    const real *logits = m->logits->v;
    const int32_t *labels = m->labels->iv;
    double ref = 0;
    for (int64_t i = 0; i < m->N; i++) {
        if (labels[i] == -100) continue;
        double se = 0;
        for (int j = 0; j < V; j++) se += exp((double)logits[i * V + j]);
        ref -= (double)logits[i * V + labels[i]] - log(se);
    }
    double l0 = ce_fwd(o);
    printf("    %-40s %.12g vs %.12g\n", label(o, "loss (grad_scale 0)"), l0, ref);
    CHECK_CLOSE(l0, ref, EXACT_TOL);
    check_equal(label(o, "grad_scale 0 keeps logits"), m->work->v, logits, m->N * V);
    printf("    %-40s %.12g vs %.12g\n", label(o, "loss (grad_scale 0.37)"), m->scaled_loss, ref);
    CHECK_CLOSE(m->scaled_loss, ref, EXACT_TOL);
    int ignored_zero = 1;
    for (int j = 0; j < V; j++)
        ignored_zero &= m->logits->d[2 * V + j] == 0 && m->logits->d[7 * V + j] == 0;
    CHECK_MSG(ignored_zero, "cross_entropy: rows with label -100 must have zero gradient");
}

static const OpDef CROSS_ENTROPY = {.size = sizeof(CrossEntropy),
                                    .build = ce_build,
                                    .fwd = ce_fwd,
                                    .bwd = ce_bwd,
                                    .extra = ce_extra,
                                    .ops = "cross_entropy"};

/* ---------------------------------------------------------- optimizer ---- */

/* One torch.optim.AdamW step in double: p *= 1 - lr wd; m, v EMAs; bias-corrected update. */
static void adamw_ref(double *w, double *m, double *v, const real *g, int64_t n, double lr,
                      double b1, double b2, double eps, double wd, int64_t t) {
    double bc1 = 1 - pow(b1, (double)t), bc2 = 1 - pow(b2, (double)t);
    for (int64_t i = 0; i < n; i++) {
        double gi = (double)g[i];
        w[i] *= 1 - lr * wd;
        m[i] = b1 * m[i] + (1 - b1) * gi;
        v[i] = b2 * v[i] + (1 - b2) * gi * gi;
        double denom = sqrt(v[i]) / sqrt(bc2) + eps;
        w[i] -= lr / bc1 * m[i] / denom;
    }
}

static void adamw_compare(const char *what, const real *w, const real *m, const real *v,
                          const double *rw, const double *rm, const double *rv, int64_t n) {
    real *a = tu_zeros(n), *b = tu_zeros(n), *cc = tu_zeros(n);
    for (int64_t i = 0; i < n; i++) a[i] = (real)rw[i], b[i] = (real)rm[i], cc[i] = (real)rv[i];
    char name[96];
    snprintf(name, sizeof name, "%s w", what);
    check_equal(name, w, a, n);
    snprintf(name, sizeof name, "%s m", what);
    check_equal(name, m, b, n);
    snprintf(name, sizeof name, "%s v", what);
    check_equal(name, v, cc, n);
    FREE_ALL(a, b, cc);
}

static void test_adamw(void) {
    Rng r;
    rng_init(&r, 801, 0);
    int64_t n = 53;
    /* a large lr and weight decay so that every term of the update is visible */
    float lr = 0.01f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
    real *w = rand_nz(&r, n, 0.1, 2.0), *m = tu_zeros(n), *v = tu_zeros(n);
    double *rw = rt_malloc(sizeof(double) * (size_t)n), *rm = rt_malloc(sizeof(double) * (size_t)n),
           *rv = rt_malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) rw[i] = (double)w[i], rm[i] = 0, rv[i] = 0;
    /* steps 1..5 from zero moments, checking t = 1 and t = 5 (and the ones between) */
    for (int64_t t = 1; t <= 5; t++) {
        real *g = rand_nz(&r, n, 0.001, 1.0);
        real *copy = tu_rand(&r, n, -1.0, 1.0); /* garbage, overwritten */
        cpu_adamw(w, copy, m, v, g, n, lr, b1, b2, eps, wd, t);
        adamw_ref(rw, rm, rv, g, n, lr, b1, b2, eps, wd, t);
        char what[64];
        snprintf(what, sizeof what, "adamw step t=%d:", (int)t);
        adamw_compare(what, w, m, v, rw, rm, rv, n);
        for (int64_t i = 0; i < n; i++)
            CHECK_MSG(copy[i] == w[i], "adamw copy [%lld]", (long long)i);
        FREE_ALL(g, copy);
    }
    /* a single t = 5 step from arbitrary moments */
    real *m5 = rand_nz(&r, n, 0.01, 0.5), *v5 = tu_rand(&r, n, 0.01, 0.5),
         *g = rand_nz(&r, n, 0.001, 1.0);
    for (int64_t i = 0; i < n; i++)
        rw[i] = (double)w[i], rm[i] = (double)m5[i], rv[i] = (double)v5[i];
    cpu_adamw(w, NULL, m5, v5, g, n, lr, b1, b2, eps, wd, 5);
    adamw_ref(rw, rm, rv, g, n, lr, b1, b2, eps, wd, 5);
    adamw_compare("adamw t=5 from given moments:", w, m5, v5, rw, rm, rv, n);
    /* weight decay alone: zero gradient, zero moments -> w *= 1 - lr wd exactly */
    real *z = tu_zeros(n), *mz = tu_zeros(n), *vz = tu_zeros(n), *wz = tu_copy(w, n);
    for (int64_t i = 0; i < n; i++)
        rw[i] = (double)w[i] * (1 - (double)lr * (double)wd), rm[i] = 0, rv[i] = 0;
    cpu_adamw(wz, NULL, mz, vz, z, n, lr, b1, b2, eps, wd, 1);
    adamw_compare("adamw zero grad (decay only):", wz, mz, vz, rw, rm, rv, n);
    FREE_ALL(w, m, v, m5, v5, g, z, mz, vz, wz);
    rt_free(rw);
    rt_free(rm);
    rt_free(rv);
}

/* adamw_runs over four runs with their own learning rates and weight decays (one empty, gaps
 * between them), the gradient scaled by 0.37 and then by 1: the weights, copy and moments
 * exactly those of scale over each run then adamw per run, against torch's AdamW in double on
 * the scaled gradient; the gaps' elements and the gradient itself unchanged. */
static void test_adamw_runs(void) {
    Rng r;
    rng_init(&r, 805, 0);
    enum { N = 97, RUNS = 4 };
    static const UpdateRun runs[RUNS] = {
        {0, 20, 0.01, 0.1}, {23, 31, 0.003, 0}, {54, 0, 0.02, 0.1}, {60, 37, 0.001, 0.05}};
    real *w = rand_nz(&r, N, 0.1, 2.0), *m = tu_rand(&r, N, -0.1, 0.1), *v = tu_rand(&r, N, 0, 0.1);
    real *act = tu_rand(&r, N, -1.0, 1.0);
    real *ew = tu_copy(w, N), *em = tu_copy(m, N), *ev = tu_copy(v, N), *ea = tu_copy(act, N);
    double *rw = rt_malloc(sizeof(double) * N), *rm = rt_malloc(sizeof(double) * N),
           *rv = rt_malloc(sizeof(double) * N);
    for (int64_t t = 1; t <= 2; t++) {
        double gs = t == 1 ? 0.37 : 1;
        real *g = rand_nz(&r, N, 0.001, 1.0), *g0 = tu_copy(g, N), *eg = tu_copy(g, N);
        for (int i = 0; i < N; i++) rw[i] = (double)w[i], rm[i] = (double)m[i], rv[i] = v[i];
        AdamWRuns a = {.w = w,
                       .w_act = act,
                       .m = m,
                       .v = v,
                       .g = g,
                       .runs = runs,
                       .nruns = RUNS,
                       .beta1 = 0.9,
                       .beta2 = 0.95,
                       .eps = 1e-8,
                       .grad_scale = gs,
                       .t = t};
        cpu_adamw_runs(&a);
        for (int k = 0; k < RUNS; k++) {
            const UpdateRun *u = &runs[k];
            int64_t o = u->offset;
            cpu_scale(eg + o, u->n, gs);
            cpu_adamw(ew + o, ea + o, em + o, ev + o, eg + o, u->n, u->lr, 0.9, 0.95, 1e-8,
                      u->weight_decay, t);
            adamw_ref(rw + o, rm + o, rv + o, eg + o, u->n, u->lr, 0.9, 0.95, 1e-8, u->weight_decay,
                      t);
        }
        char what[64];
        snprintf(what, sizeof what, "adamw_runs t=%d:", (int)t);
        adamw_compare(what, w, m, v, rw, rm, rv, N);
        CHECK_MSG(!memcmp(w, ew, sizeof(real) * N) && !memcmp(m, em, sizeof(real) * N) &&
                      !memcmp(v, ev, sizeof(real) * N) && !memcmp(act, ea, sizeof(real) * N),
                  "adamw_runs t=%d: not exactly scale then adamw per run", (int)t);
        CHECK_MSG(!memcmp(g, g0, sizeof(real) * N), "adamw_runs t=%d: the gradient changed",
                  (int)t);
        FREE_ALL(g, g0, eg);
    }
    FREE_ALL(w, m, v, act, ew, em, ev, ea);
    rt_free(rw);
    rt_free(rm);
    rt_free(rv);
}

/* rmsnorm_gate_fwd and _bwd on the CPU against rmsnorm_fwd then gate_mul_fwd, and gate_mul_bwd
 * then rmsnorm_bwd, on the same values: every output to the last bit (r, rstd, on, dx, dgp, and
 * dw added to the same values), for the three gates, a shared and a per-group weight, rows of
 * 10 channels (not a multiple of 8) and of 64. */
static void rmsnorm_gate_case(Rng *r, int G, int C, int per_group, Activation act) {
    const int64_t N = 37, n = N * G * C, nw = per_group ? (int64_t)G * C : C;
    real *x = rand_nz(r, n, 0.05, 1.5), *gp = rand_nz(r, n, 0.05, 4.0),
         *dr = rand_nz(r, n, 0.05, 1.0);
    real *w = rand_nz(r, nw, 0.3, 1.5), *dw = rand_nz(r, nw, 0.1, 1.0), *ew_d = tu_copy(dw, nw);
    real *out = garbage(r, n), *rstd = garbage(r, N * G), *on = garbage(r, n), *don = garbage(r, n);
    real *dx = garbage(r, n), *dgp = garbage(r, n);
    real *e_out = garbage(r, n), *e_rstd = garbage(r, N * G), *e_on = garbage(r, n),
         *e_don = garbage(r, n), *e_dx = garbage(r, n), *e_dgp = garbage(r, n);
    RmsnormGateArgs a = {.x = x,
                         .w = w,
                         .gp = gp,
                         .N = N,
                         .G = G,
                         .C = C,
                         .w_per_group = per_group,
                         .act = act,
                         .eps = NORM_EPS,
                         .r = out,
                         .rstd = rstd,
                         .on = on};
    cpu_rmsnorm_gate_fwd(&a);
    cpu_rmsnorm_gate_bwd(
        &(RmsnormGateGrads){.a = a, .dr = dr, .dx = dx, .dgp = dgp, .dw = dw, .don = don});
    cpu_rmsnorm_fwd(e_on, e_rstd, x, w, N, G, C, per_group, NORM_EPS);
    cpu_gate_mul_fwd(e_out, e_on, gp, n, act);
    cpu_gate_mul_bwd(e_don, e_dgp, dr, e_on, gp, n, act);
    cpu_rmsnorm_bwd(e_dx, ew_d, e_don, x, w, e_rstd, N, G, C, per_group, 0);
    size_t b = sizeof(real) * (size_t)n;
    CHECK_MSG(!memcmp(out, e_out, b) && !memcmp(rstd, e_rstd, sizeof(real) * (size_t)(N * G)) &&
                  !memcmp(on, e_on, b),
              "rmsnorm_gate_fwd G=%d C=%d per_group=%d act=%d: not exactly rmsnorm_fwd then "
              "gate_mul_fwd",
              G, C, per_group, (int)act);
    CHECK_MSG(!memcmp(dx, e_dx, b) && !memcmp(dgp, e_dgp, b) &&
                  !memcmp(dw, ew_d, sizeof(real) * (size_t)nw),
              "rmsnorm_gate_bwd G=%d C=%d per_group=%d act=%d: not exactly gate_mul_bwd then "
              "rmsnorm_bwd",
              G, C, per_group, (int)act);
    FREE_ALL(x, gp, dr, w, dw, ew_d, out, rstd, on, don, dx, dgp);
    FREE_ALL(e_out, e_rstd, e_on, e_don, e_dx, e_dgp);
}

static void test_rmsnorm_gate_composition(void) {
    Rng r;
    rng_init(&r, 806, 0);
    rmsnorm_gate_case(&r, 4, 64, 0, ACT_SILU);
    rmsnorm_gate_case(&r, 3, 10, 1, ACT_SIGMOID);
    rmsnorm_gate_case(&r, 1, 64, 0, ACT_NONE);
    rmsnorm_gate_case(&r, 16, 64, 1, ACT_SIGMOID);
    printf("    %-40s bit-identical\n", "rmsnorm_gate vs its two ops");
}

/* Five torch.optim.RMSprop steps (weight decay added to the gradient, eps outside the root)
 * against the same in double, from a zero square average and from a given one; the [act]
 * copy equals the weights. */
static void test_rmsprop_update(void) {
    Rng r;
    rng_init(&r, 803, 0);
    int64_t n = 53;
    double lr = 0.01, alpha = 0.9, eps = 1e-8, wd = 0.1;
    real *w = rand_nz(&r, n, 0.1, 2.0), *sq = tu_zeros(n);
    double *rw = rt_malloc(sizeof(double) * (size_t)n), *rs = rt_calloc((size_t)n, sizeof(double));
    for (int64_t i = 0; i < n; i++) rw[i] = (double)w[i];
    for (int t = 1; t <= 6; t++) {
        real *g = rand_nz(&r, n, 0.001, 1.0), *copy = tu_rand(&r, n, -1.0, 1.0);
        if (t == 6) /* a given square average */
            for (int64_t i = 0; i < n; i++)
                rs[i] = (double)(sq[i] = (real)(0.01 + 0.3 * rng_uniform(&r)));
        cpu_rmsprop_update(w, copy, sq, g, n, lr, alpha, eps, wd);
        real *ew = tu_zeros(n), *es = tu_zeros(n);
        for (int64_t i = 0; i < n; i++) {
            double gi = (double)g[i] + wd * rw[i];
            rs[i] = alpha * rs[i] + (1 - alpha) * gi * gi;
            rw[i] -= lr * gi / (sqrt(rs[i]) + eps);
            ew[i] = (real)rw[i];
            es[i] = (real)rs[i];
            CHECK_MSG(copy[i] == w[i], "rmsprop copy [%lld]", (long long)i);
        }
        char what[64];
        snprintf(what, sizeof what, "rmsprop step %d: w", t);
        check_equal(what, w, ew, n);
        snprintf(what, sizeof what, "rmsprop step %d: square_avg", t);
        check_equal(what, sq, es, n);
        FREE_ALL(g, copy, ew, es);
    }
    FREE_ALL(w, sq);
    rt_free(rw);
    rt_free(rs);
}

static void test_sumsq_scale(void) {
    Rng r;
    rng_init(&r, 802, 0);
    int64_t n = 1001;
    real *x = rand_nz(&r, n, 0.05, 3.0);
    double ref = 0;
    for (int64_t i = 0; i < n; i++) ref += (double)x[i] * (double)x[i];
    double got = cpu_sumsq(x, n);
    printf("    %-40s %.12g vs %.12g\n", "sumsq value", got, ref);
    CHECK_CLOSE(got, ref, EXACT_TOL);
    real *y = tu_copy(x, n), *yr = tu_zeros(n);
    float sc = 0.3f;
    for (int64_t i = 0; i < n; i++) yr[i] = x[i] * (real)sc;
    cpu_scale(y, n, sc);
    check_equal("scale value", y, yr, n);
    FREE_ALL(x, y, yr);
}

/* ---------------------------------------------------------- the cases ---- */

const OpCase CASES[] = {
    {"matmul_bias", &MATMUL, 101, {.bias = 1}},
    {"matmul_nobias", &MATMUL, 102, {0}},
    {"matmul_group_bias", &MATMUL_GROUP, 111, {.bias = 1}},
    {"matmul_group", &MATMUL_GROUP, 112, {0}},
    {"embedding", &EMBEDDING, 104, {0}},
    {"add", &ADD, 105, {0}},
    {"sumsq_scale", &SUMSQ_SCALE, 106, {0}},
    {"rmsnorm_g1", &RMSNORM, 201, {.groups = 1}},
    {"rmsnorm_shared", &RMSNORM, 202, {.groups = 3}},
    {"rmsnorm_per_group", &RMSNORM, 203, {.groups = 3, .per_group = 1}},
    {"layernorm", &LAYERNORM, 210, {0}},
    {"l2norm", &L2NORM, 204, {0}},
    {"gate_mul_silu", &GATE_MUL, 301, {.act = ACT_SILU}},
    {"gate_mul_sigmoid", &GATE_MUL, 302, {.act = ACT_SIGMOID}},
    {"gate_mul_none", &GATE_MUL, 311, {.act = ACT_NONE}},
    {"gate_mul_rebuild_silu", &GATE_MUL_REBUILD, 313, {.act = ACT_SILU}},
    {"matmul_gate_mul_silu", &MATMUL_GATE_MUL, 314, {.act = ACT_SILU}},
    {"matmul_gate_mul_sigmoid", &MATMUL_GATE_MUL, 315, {.act = ACT_SIGMOID}},
    {"gate_mul_matmul_silu", &GATE_MUL_MATMUL, 316, {.act = ACT_SILU}},
    {"gate_mul_matmul_none", &GATE_MUL_MATMUL, 317, {.act = ACT_NONE}},

    {"rmsnorm_gate_silu", &RMSNORM_GATE, 321, {.groups = 3, .act = ACT_SILU}},
    {"rmsnorm_gate_sig_pg", &RMSNORM_GATE, 322, {.groups = 3, .per_group = 1, .act = ACT_SIGMOID}},
    {"rmsnorm_gate_none_g1", &RMSNORM_GATE, 323, {.groups = 1, .act = ACT_NONE}},
    {"silu", &SILU, 303, {.hi = 6.0}},
    {"gelu", &GELU, 309, {.hi = 4.0}},
    {"dropout", &DROPOUT, 311, {0}},
    {"dropout_channel", &DROPOUT, 312, {.T = 24}},
    {"relu", &RELU, 311, {.hi = 3.0}},
    {"pair_nli", &PAIR_FEATURES, 313, {0}},
    {"logsigmoid_16", &LOGSIGMOID, 304, {.hi = 8.0, .norm = 16.0f}},
    {"logsigmoid_1", &LOGSIGMOID, 305, {.hi = 8.0, .norm = 1.0f}},
    {"sigmoid", &SIGMOID, 307, {.hi = 6.0}},
    {"decay_gates_gdn", &DECAY_GATES, 306, {0}},
    {"decay_gates_mamba2", &DECAY_GATES, 307, {.keep_dt = 1}},
    {"head_scale", &HEAD, 308, {0}},
    {"head_skip", &HEAD, 309, {.skip = 1}},
    {"group_bcast", &GROUP_BCAST, 310, {0}},
    {"conv_w_none", &CONV, 401, {.conv = 1}},
    {"conv_w_silu", &CONV, 402, {.conv = 1, .act = ACT_SILU}},
    {"conv_diff_none", &CONV, 403, {0}},
    {"conv_diff_silu", &CONV, 404, {.act = ACT_SILU}},
    {"conv_bias_none", &CONV, 405, {.conv = 1, .bias = 1}},
    {"conv_bias_silu", &CONV, 406, {.conv = 1, .bias = 1, .act = ACT_SILU}},
    {"conv_k3_bias_none", &CONV, 407, {.conv = 1, .taps = 3, .bias = 1}},
    {"conv_k2_silu", &CONV, 408, {.conv = 1, .taps = 2, .act = ACT_SILU}},
    {"conv_k1_bias_none", &CONV, 409, {.conv = 1, .taps = 1, .bias = 1}},
    {"shift", &SHIFT, 405, {0}},
    {"segment_reverse", &SEGMENT_REVERSE, 406, {0}},
    {"rope_angles", &ROPE_ANGLES, 407, {0}},
    {"rotate_shared", &ROTATE, 501, {0}},
    {"rotate_per_head", &ROTATE, 502, {.per_head = 1}},
    {"selrope_plain", &SELROPE_ANGLES, 503, {0}},
    {"selrope_bias", &SELROPE_ANGLES, 504, {.bias = 1}},
    {"selrope_gate", &SELROPE_ANGLES, 505, {.gate = 1}},
    {"selrope_bias_gate", &SELROPE_ANGLES, 506, {.bias = 1, .gate = 1}},
    {"selrope_fused_conv_silu",
     &SELROPE_FUSED,
     511,
     {.conv = 1, .act = ACT_SILU, .bias = 1, .gate = 1}},
    {"selrope_fused_conv_none", &SELROPE_FUSED, 512, {.conv = 1, .gate = 1}},
    {"selrope_fused_diff", &SELROPE_FUSED, 513, {.bias = 1}},
    {"selrope_fused_diff_plain", &SELROPE_FUSED, 514, {0}},
    {"weightnorm", &WEIGHTNORM, 507, {0}},
    {"head_matmul", &HEAD_MATMUL, 508, {0}},
    {"gla", &GLA, 601, {0}},
    {"gla_per_head", &GLA, 602, {.per_head = 1}},
    {"gdn", &GDN, 602, {.gate = 1}},
    {"deltanet", &GDN, 604, {0}},
    {"fox", &FOX, 603, {.gate = 1}},
    {"fox_no_gate", &FOX, 604, {0}},
    {"cscan", &CSCAN, 701, {0}},
    {"lru_weights", &LRU_WEIGHTS, 702, {0}},
    {"orth_expm", &ORTH_EXPM, 703, {0}},
    {"rotrnn_weights", &ROTRNN_WEIGHTS, 704, {0}},
    {"rotrnn_through_expm", &ROTRNN_WEIGHTS, 705, {.chain = 1}},
    {"rnn_tanh", &RNN, 706, {.rnn = RNN_TANH}},
    {"rnn_tanh_h0", &RNN, 706, {.rnn = RNN_TANH, .h0 = 1}},
    {"rnn_modrelu", &RNN, 707, {.rnn = RNN_MODRELU}},
    {"rnn_modrelu_h0", &RNN, 707, {.rnn = RNN_MODRELU, .h0 = 1}},
    {"lstm", &LSTM, 708, {0}},
    {"lstm_h0", &LSTM, 708, {.h0 = 1}},
    {"nnrnn_weights", &NNRNN_WEIGHTS, 709, {0}},
    {"nnrnn_through_expm", &NNRNN_WEIGHTS, 710, {.chain = 1}},
    {"nnrnn_cell", &NNRNN_CELL, 711, {.chain = 1}},
    {"l2_penalty", &L2_PENALTY, 712, {0}},
    {"eurnn_weights_odd", &EURNN_WEIGHTS, 713, {.n = 7, .layers = 3}},
    {"eurnn_weights_even", &EURNN_WEIGHTS, 714, {.n = 6, .layers = 4}},
    {"cross_entropy", &CROSS_ENTROPY, 701, {0}},
};
const int NCASES = TH_COUNT(CASES);

/* The GPU-sized cases' segments: one of 4096 tokens (64 chunks, 16 or 32 tiles of the scans)
 * then a short one; and lengths on either side of the 64-token chunks and tiles. */
static const int LONG[] = {4096, 70}, EDGES[] = {1, 63, 64, 65, 130, 127, 129};
#define LONG_SEGS .lens = LONG, .nseg = 2
#define EDGE_SEGS .lens = EDGES, .nseg = 7

const OpCase GPU_CASES[] = {
    /* the mixers at the 370M models' heads (docs/models.md §named-configurations) */
    {"gla_370m", &GLA, 1601, {.dims = {LONG_SEGS, .H = 4, .K = 128, .V = 256}}},
    {"gla_partial_tiles", &GLA, 1602, {.dims = {EDGE_SEGS, .H = 3, .K = 80, .V = 144}}},
    {"gla_ssd_370m", &GLA, 1603, {.per_head = 1, .dims = {EDGE_SEGS, .H = 32, .K = 128, .V = 64}}},
    {"gdn_370m", &GDN, 1604, {.gate = 1, .dims = {LONG_SEGS, .H = 8, .K = 128, .V = 128}}},
    {"gdn_k256_edges", &GDN, 1605, {.gate = 1, .dims = {EDGE_SEGS, .H = 2, .K = 256, .V = 256}}},
    {"gla_370m_strong", &GLA, 1617, {.strong = 1, .dims = {EDGE_SEGS, .H = 4, .K = 128, .V = 256}}},
    {"gdn_370m_strong",
     &GDN,
     1618,
     {.gate = 1, .strong = 1, .dims = {EDGE_SEGS, .H = 8, .K = 128, .V = 128}}},
    {"fox_370m_strong",
     &FOX,
     1619,
     {.gate = 1, .strong = 1, .dims = {EDGE_SEGS, .H = 16, .K = 64}}},
    {"deltanet_370m", &GDN, 1606, {.dims = {LONG_SEGS, .H = 8, .K = 128, .V = 128}}},
    /* heads below one 64-wide tile (zero-padded), of exactly one, and K = 96, not a multiple
     * of 64 (GDN's backward takes it as two K tiles of 48; a K > 64 bug was found so) */
    {"gla_tiny_edges", &GLA, 1631, {.dims = {EDGE_SEGS, .H = 2, .K = 16, .V = 32}}},
    {"gla_ssd_tiny_edges",
     &GLA,
     1632,
     {.per_head = 1, .dims = {EDGE_SEGS, .H = 4, .K = 16, .V = 32}}},
    {"gla_k64_edges", &GLA, 1633, {.dims = {EDGE_SEGS, .H = 1, .K = 64, .V = 64}}},
    {"gdn_tiny_edges", &GDN, 1634, {.gate = 1, .dims = {EDGE_SEGS, .H = 2, .K = 16, .V = 16}}},
    {"gdn_k64_edges", &GDN, 1635, {.gate = 1, .dims = {EDGE_SEGS, .H = 1, .K = 64, .V = 32}}},
    {"gdn_k96_edges", &GDN, 1636, {.gate = 1, .dims = {EDGE_SEGS, .H = 2, .K = 96, .V = 32}}},
    {"fox_370m", &FOX, 1607, {.gate = 1, .dims = {LONG_SEGS, .H = 16, .K = 64}}},
    {"fox_d128_edges", &FOX, 1608, {.gate = 1, .dims = {EDGE_SEGS, .H = 1, .K = 128}}},
    {"transformer_370m", &FOX, 1609, {.dims = {LONG_SEGS, .H = 16, .K = 64}}},
    /* Selective RoPE on GLA's and FoX's heads, and the short conv of GLA's q/k/v widths */
    {"selrope_gla_370m",
     &SELROPE_FUSED,
     1610,
     {.conv = 1, .act = ACT_SILU, .bias = 1, .gate = 1, .dims = {LONG_SEGS, .H = 4, .K = 128}}},
    {"selrope_fox_edges", &SELROPE_FUSED, 1611, {.conv = 1, .dims = {EDGE_SEGS, .H = 16, .K = 64}}},
    /* the fused op's every form at the few angle pairs the kernels take (P an even divisor of
     * 64: the finite-difference rows' P = 3 is refused there); P = 2 puts a head in one lane */
    {"selrope_p4_conv_silu_edges",
     &SELROPE_FUSED,
     1637,
     {.conv = 1, .act = ACT_SILU, .bias = 1, .gate = 1, .dims = {EDGE_SEGS, .H = 2, .K = 8}}},
    {"selrope_p4_conv_none_edges",
     &SELROPE_FUSED,
     1638,
     {.conv = 1, .gate = 1, .dims = {EDGE_SEGS, .H = 2, .K = 8}}},
    {"selrope_p4_diff_edges",
     &SELROPE_FUSED,
     1639,
     {.bias = 1, .dims = {EDGE_SEGS, .H = 2, .K = 8}}},
    {"selrope_p2_diff_plain_edges", &SELROPE_FUSED, 1640, {.dims = {EDGE_SEGS, .H = 3, .K = 4}}},
    {"selrope_p8_conv_silu_edges",
     &SELROPE_FUSED,
     1641,
     {.conv = 1, .act = ACT_SILU, .dims = {EDGE_SEGS, .H = 2, .K = 16}}},
    {"conv_370m", &CONV, 1612, {.conv = 1, .act = ACT_SILU, .dims = {LONG_SEGS, .C = 1024}}},
    /* the conv's taps, bias and first difference, and FoX's k/v shift, at even widths (the CUDA
     * kernels take channel pairs: the finite-difference rows' odd widths are refused there) */
    {"conv_k3_bias_edges",
     &CONV,
     1624,
     {.conv = 1, .taps = 3, .bias = 1, .dims = {EDGE_SEGS, .C = 6}}},
    {"conv_k2_silu_edges",
     &CONV,
     1625,
     {.conv = 1, .taps = 2, .act = ACT_SILU, .dims = {EDGE_SEGS, .C = 6}}},
    {"conv_k1_bias_edges",
     &CONV,
     1626,
     {.conv = 1, .taps = 1, .bias = 1, .dims = {EDGE_SEGS, .C = 6}}},
    {"conv_bias_silu_edges",
     &CONV,
     1627,
     {.conv = 1, .bias = 1, .act = ACT_SILU, .dims = {EDGE_SEGS, .C = 6}}},
    {"conv_diff_silu_edges", &CONV, 1628, {.act = ACT_SILU, .dims = {EDGE_SEGS, .C = 6}}},
    {"shift_edges", &SHIFT, 1629, {.dims = {EDGE_SEGS, .H = 2, .K = 4}}},
    {"shift_fox_370m", &SHIFT, 1630, {.dims = {LONG_SEGS, .H = 16, .K = 64}}},
    /* the row-wise and elementwise ops at a 370M layer's widths (a quarter of its rows) */
    {"rmsnorm_370m", &RMSNORM, 1613, {.groups = 1, .dims = {.N = 4096, .C = 1024}}},
    {"layernorm_1024", &LAYERNORM, 1642, {.dims = {.N = 4096, .C = 1024}}},
    {"layernorm_c100", &LAYERNORM, 1643, {.dims = {.N = 300, .C = 100}}}, /* C % 8: scalar */
    {"l2norm_gdn_370m", &L2NORM, 1644, {.dims = {.N = 4096, .H = 8, .K = 128}}},
    {"l2norm_d100", &L2NORM, 1645, {.dims = {.N = 100, .H = 2, .K = 100}}},
    /* the products: the LM head (a tenth of its rows), partial tiles, a narrow projection */
    {"matmul_lm_head", &MATMUL, 1646, {.dims = {.N = 256, .V = 32000, .K = 1024}}},
    {"matmul_partial_tiles", &MATMUL, 1647, {.bias = 1, .dims = {.N = 513, .V = 1000, .K = 1032}}},
    {"matmul_narrow_bias", &MATMUL, 1648, {.bias = 1, .dims = {.N = 1000, .V = 16, .K = 1024}}},
    {"rmsnorm_gate_370m",
     &RMSNORM_GATE,
     1614,
     {.groups = 4, .act = ACT_SILU, .dims = {.N = 4096, .C = 256}}},
    {"gate_mul_rebuild_370m",
     &GATE_MUL_REBUILD,
     1615,
     {.act = ACT_SILU, .dims = {.N = 1024 * 2816}}},
    /* the MLP's gated products of a GLA-370M layer (d 1024, width 2816), 1024 tokens */
    {"matmul_gate_mul_370m",
     &MATMUL_GATE_MUL,
     1622,
     {.act = ACT_SILU, .dims = {.N = 1024, .V = 2816, .K = 1024}}},
    {"gate_mul_matmul_370m",
     &GATE_MUL_MATMUL,
     1623,
     {.act = ACT_SILU, .dims = {.N = 1024, .V = 1024, .K = 2816}}},
    {"add_370m", &ADD, 1649, {.dims = {.N = 300 * 2816 + 3}}},
    {"segment_reverse_long", &SEGMENT_REVERSE, 1651, {.dims = {LONG_SEGS, .C = 1024}}},
    {"rope_angles_d128_long", &ROPE_ANGLES, 1652, {.dims = {LONG_SEGS, .K = 128}}},
    {"sumsq_scale_4m", &SUMSQ_SCALE, 1650, {.dims = {.N = (1 << 22) + 1}}},
    {"cross_entropy_32k", &CROSS_ENTROPY, 1616, {.dims = {.N = 512, .V = 32000}}},
    {"cross_entropy_v1001",
     &CROSS_ENTROPY,
     1620,
     {.dims = {.N = 50, .V = 1001}}}, /* V % 8: scalar */
    {"cross_entropy_one_row", &CROSS_ENTROPY, 1621, {.dims = {.N = 1, .V = 5}}},
};
const int NGPU_CASES = TH_COUNT(GPU_CASES);

/* Checked against direct computations, outside the table. */
const DirectTest DIRECT[] = {
    {{"add_in_place", test_add_in_place}, "add"},
    {{"revcumsum", test_revcumsum}, ""}, /* cpu_revcumsum, outside the Backend table */
    {{"carry_split", test_carry_split}, "rnn_fwd lstm_fwd"},
    {{"adamw", test_adamw}, "adamw"},
    {{"adamw_runs", test_adamw_runs}, "adamw_runs"},
    {{"rmsnorm_gate_composition", test_rmsnorm_gate_composition},
     "rmsnorm_gate_fwd rmsnorm_gate_bwd"},
    {{"rmsprop_update", test_rmsprop_update}, "rmsprop_update"},
    {{"sumsq_scale_exact", test_sumsq_scale}, "sumsq scale"},
};
const int NDIRECT = TH_COUNT(DIRECT);
