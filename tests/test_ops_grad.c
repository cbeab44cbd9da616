/* Finite-difference gradient checks of every CPU op that has a backward (src/backend.h,
 * src/cpu/cpu_ops.h), in double precision (built with ROTOR_REAL_DOUBLE only).
 *
 * Table-driven (the op table, tests/op_table.h): a case names an op, a seed and the op's
 * variant switches; an op (OpDef) declares its tensors, runs its forward and backward, and may
 * add the checks particular to it. One runner (run_case) checks every case the same way, with
 * backend_cpu() on host arrays. The op is probed
 * with L = sum(w . out) over its outputs for random w, so the backward is called with
 * dout = w. Every input with a gradient is checked against central differences (h = 1e-6,
 * tolerance 1e-6 relative to max |grad|), together with the output conventions of the
 * contract: activation gradients overwrite (the buffers are pre-filled with garbage),
 * parameter gradients accumulate (pre-filled with random values that are subtracted before
 * the check), a gradient whose input the variant leaves out stays untouched, and a backward
 * with an `accumulate` flag adds to its activation gradients when the flag is set.
 * Time-dependent ops run on several segments whose lengths are not multiples of the chunk
 * size, one of them longer than two chunks. Ops without a backward (add, segment_reverse,
 * revcumsum, rope_angles, the carried-state split, adamw, adamw_runs, rmsprop_update, sumsq,
 * scale) are checked against direct computations (DIRECT of the op table), and the fused
 * readout norm and gate (rmsnorm_gate_fwd/bwd, rows of the table) there also against its two ops
 * bit for bit.
 *
 * With --refs FILE the program checks nothing: it writes each case's fp64 inputs, outputs and
 * gradients to FILE (tests/op_refs.h) for tests/test_ops_backends.c. */
#include "cpu/cpu_ops.h"
#include "harness.h"
#include "op_refs.h"
#include "op_table.h"
#include "util/error.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef ROTOR_REAL_DOUBLE
#error "test_ops_grad needs the double-precision core (rotor_test(... f64))"
#endif

#define FD_H 1e-6
#define FD_TOL 1e-6
#define FD_SAMPLES 1000
#define MIXER_SAMPLES 60

/* Tokens at segment starts/ends and chunk boundaries of LENS (cu = 0, 70, 71, 104, 234). */
static const int64_t EDGE_TOKENS[] = {0, 1, 63, 64, 69, 70, 71, 103, 104, 167, 168, 231, 232, 233};
#define NEDGE ((int)(sizeof(EDGE_TOKENS) / sizeof(EDGE_TOKENS[0])))

/* ---------------------------------------------------------------- helpers ---- */

static double maxabs(const real *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)x[i]));
    return m;
}

/* The finite differences evaluate the forward thousands of times on small inputs: run them
 * on one thread (the forward values do not depend on the thread count), which keeps the test
 * fast on a loaded machine where tiny OpenMP regions are slow. The analytic backward calls
 * keep the default thread count, so their per-thread partial sums are exercised. */
static int fd_serial_begin(void) {
#ifdef _OPENMP
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    return nt;
#else
    return 1;
#endif
}

static void fd_serial_end(int nt) {
#ifdef _OPENMP
    omp_set_num_threads(nt);
#else
    (void)nt;
#endif
}

/* Finite-difference check of grad against x over `samples` entries (all when n <= samples). */
static void fd_check(const char *what, tu_loss_fn f, void *ctx, real *x, const real *grad,
                     int64_t n, int samples, Rng *r) {
    int nt = fd_serial_begin();
    double e = tu_gradcheck(f, ctx, x, grad, n, samples, FD_H, r);
    fd_serial_end(nt);
    printf("    %-40s fd err %.2e (max|g| %.2g)\n", what, e, maxabs(grad, n));
    CHECK_MSG(e <= FD_TOL, "%s: finite-difference relative error %.3g > %.1g", what, e, FD_TOL);
}

/* Like fd_check, over the first and last element of each listed row (rows of `rowlen`
 * elements): entries at segment starts/ends and chunk boundaries that random sampling may
 * miss. Same normalisation as tu_gradcheck. */
static void fd_check_rows(const char *what, tu_loss_fn f, void *ctx, real *x, const real *grad,
                          int64_t n, int64_t rowlen, const int64_t *rows, int nrows) {
    double gscale = fmax(maxabs(grad, n), 1e-6), worst = 0;
    int nt = fd_serial_begin();
    for (int r = 0; r < nrows; r++)
        for (int side = 0; side < 2; side++) {
            int64_t i = rows[r] * rowlen + (side ? rowlen - 1 : 0);
            RT_ASSERT(i >= 0 && i < n);
            real keep = x[i];
            x[i] = keep + (real)FD_H;
            double fp = f(ctx);
            x[i] = keep - (real)FD_H;
            double fm = f(ctx);
            x[i] = keep;
            double e = fabs((fp - fm) / (2 * FD_H) - (double)grad[i]) / gscale;
            if (!(e <= worst)) worst = e;
        }
    fd_serial_end(nt);
    printf("    %-40s fd err %.2e (boundary rows)\n", what, worst);
    CHECK_MSG(worst <= FD_TOL, "%s (boundary rows): finite-difference relative error %.3g > %.1g",
              what, worst, FD_TOL);
}

/* ------------------------------------------------------------- the runner ---- */

static double op_loss(void *p) {
    Op *o = p;
    double L = o->c->op->fwd(o);
    for (int i = 0; i < o->nt; i++)
        if (o->t[i].role == T_OUT) L += tu_dot(o->t[i].d, o->t[i].v, o->t[i].spec.n);
    return L;
}

static void check_ref(Op *o) {
    Tensor *out = o->t;
    while (out->role != T_OUT) out++;
    real *want = tu_zeros(out->spec.n);
    o->c->op->ref(o, want);
    check_equal(label(o, "value"), out->v, want, out->spec.n);
    rt_free(want);
}

/* After the backward: absent inputs' gradients untouched; accumulated ones net of `pre`. */
static void check_conventions(Op *o) {
    for (int i = 0; i < o->nt; i++) {
        Tensor *t = &o->t[i];
        if (t->role == T_ABSENT)
            check_equal(label(o, "d%s untouched", t->spec.name), t->d, t->pre, t->spec.n);
        else if (has_grad(t) && t->spec.grad == GRAD_ADD)
            subtract(t->d, t->pre, t->spec.n);
    }
}

/* With `accumulate` set the backward adds its activation gradients to the buffers' contents,
 * and its parameter gradients (which always add) are the same from zero. */
static void check_accumulate(Op *o) {
    real *first[MAX_TENSORS] = {0}, *pre[MAX_TENSORS] = {0};
    for (int i = 0; i < o->nt; i++) {
        Tensor *t = &o->t[i];
        if (!has_grad(t)) continue;
        first[i] = t->d;
        pre[i] =
            t->spec.grad == GRAD_SET ? rand_nz(&o->r, t->spec.n, 0.1, 1.0) : tu_zeros(t->spec.n);
        t->d = tu_copy(pre[i], t->spec.n);
    }
    op_on_host(o);
    o->accumulate = 1;
    op_backward(o);
    o->accumulate = 0;
    for (int i = 0; i < o->nt; i++) {
        Tensor *t = &o->t[i];
        if (!has_grad(t)) continue;
        subtract(t->d, pre[i], t->spec.n);
        check_equal(label(o, t->spec.grad == GRAD_SET ? "d%s (accumulate=1) adds" : "d%s from zero",
                          t->spec.name),
                    t->d, first[i], t->spec.n);
        FREE_ALL(t->d, pre[i]);
        t->d = first[i];
    }
    op_on_host(o);
}

static void check_fd(Op *o, Tensor *t) {
    const char *what = label(o, t->spec.grad == GRAD_ADD ? "d%s (+=)" : "d%s", t->spec.name);
    int64_t n = t->spec.n;
    if (t->spec.rowlen) {
        fd_check(what, op_loss, o, t->v, t->d, n, MIXER_SAMPLES, &o->r);
        fd_check_rows(what, op_loss, o, t->v, t->d, n, t->spec.rowlen, EDGE_TOKENS, NEDGE);
    } else {
        fd_check(what, op_loss, o, t->v, t->d, n, t->spec.samples ? t->spec.samples : FD_SAMPLES,
                 &o->r);
    }
}

/* The generic check of one case: forward, its value, backward, conventions, op-specific
 * checks, then every gradient against finite differences. */
static void run_case(const void *arg) {
    const OpCase *c = arg;
    Op *o = op_new(c, backend_cpu());
    op_on_host(o);
    op_loss(o);
    if (c->op->ref) check_ref(o);
    op_backward(o);
    check_conventions(o);
    if (c->op->accumulate) check_accumulate(o);
    if (c->op->extra) c->op->extra(o);
    for (int i = 0; i < o->nt; i++)
        if (has_grad(&o->t[i])) check_fd(o, &o->t[i]);
    op_free(o);
}

/* ------------------------------------------------------------- --refs ---- */

/* One case forward and backward, as run_case does before its checks. */
static void ref_case(FILE *f, const OpCase *c) {
    RefCase rc;
    refs_from_cpu_run(c, &rc);
    refs_write_case(f, &rc);
    refs_free_case(&rc);
}

static int write_refs(const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) rt_die("cannot write %s", path);
    refs_write_header(f, NCASES);
    for (int i = 0; i < NCASES; i++) ref_case(f, &CASES[i]);
    if (fclose(f)) rt_die("cannot write %s", path);
    printf("%d cases written to %s\n", NCASES, path);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--refs")) return write_refs(argv[2]);
    TestRow *rows = rt_malloc(sizeof(TestRow) * (size_t)(NCASES + NDIRECT));
    for (int i = 0; i < NCASES; i++) rows[i] = (TestRow){CASES[i].name, run_case, &CASES[i]};
    for (int i = 0; i < NDIRECT; i++) rows[NCASES + i] = th_row(&DIRECT[i].t);
    int rc = th_run_rows(rows, NCASES + NDIRECT, argc, argv);
    rt_free(rows);
    return rc;
}
