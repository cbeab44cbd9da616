/* The op table (tests/op_table.h) on every backend of the build against its fp64 results.
 *
 *   test_ops_backends REFS [FILTER]
 *
 * REFS is the file of `test_ops_grad --refs` (tests/op_refs.h; ctest makes it first). Each
 * case is built, its tensors are allocated in the backend's memory with their element types
 * and filled with the fp64 run's inputs and pre-filled gradient buffers ([f32] through
 * backend_upload_f64, [act] through an [f32] copy and be->to_act, [i32] as int32), the forward
 * and the backward run, and the outputs and gradients (net of the pre-filled values of
 * accumulated ones; those of absent inputs must stay as they were) are compared with the fp64
 * run's: max|a - b| / max(max|b|, 1e-6) per tensor against the tolerance of the case's element
 * types on that backend (TOL_F32, or TOL_BF16 where a tensor is bf16; TOL_BF16_GPU_SIZED for
 * the GPU-sized cases), and the returned
 * scalar (losses) by |a - b| / max(|b|, 1). One line per case:
 *   name  cpu-f32 ok 0.03 of tol  cuda FAIL 3.1 of tol (dk)
 * The CPU (fp32) runs here; the CUDA backend (backend_cuda) runs in a child process, so that
 * a kernel that refuses a shape (rt_die: conv and shift take an even width, which some of
 * the finite-difference shapes are not) costs that case ("died", listed at the end but no
 * failure), not the rest; without a GPU every case reads "cuda skipped: no GPU". The GPU-sized
 * cases (GPU_CASES) run there only, against the CPU fp32 backend on the same inputs (in that
 * child: refs_from_cpu_run), their rows reading "cpu-f32 reference". A case whose op is
 * outside the Backend table (OpDef.cpu_only) is "cpu only" there; one whose shape the backend's
 * kernels do not take (Backend.supports) "unsupported". The output buffers start with stale
 * values (the fp64 run's at zero), so a kernel that adds to its output fails; an op whose
 * backward takes `accumulate` runs it again with the flag set (run_accumulate). The last rows
 * check that every op of BACKEND_OPS is exercised by a case or a direct test, or exempted below
 * with its reason, and, with a GPU, that every op a case calls was compared on CUDA.
 * ROTOR_TEST_OPS_STANDIN=cpu runs the CPU backend where CUDA would (its rows read
 * "cpu-standin"), so that the child's path (the GPU-sized cases against a CPU run, the results
 * read back, the CUDA coverage) is tested without a GPU (ctest test_ops_backends_standin). */
#include "device/host_copy.h"
#include "harness.h"
#include "op_refs.h"
#include "op_table.h"
#include "util/error.h"

#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOL_F32 1e-4
#define TOL_BF16 2e-2
#define TOL_BF16_GPU_SIZED 3e-2 /* bf16 through 4096-token scans and 1024-wide rows */
#define ERR_FLOOR 1e-6

/* ------------------------------------------------------------ one case on one backend ---- */

typedef enum { RES_OK, RES_FAIL, RES_SKIPPED, RES_UNSUPPORTED, RES_CPU_ONLY, RES_DIED } Status;
typedef struct {
    Status status;
    double ratio;   /* worst err / tol */
    char what[160]; /* the worst tensor, or why it did not run */
} Result;

static const char *const STATUS[] = {"ok", "FAIL", "skipped:", "unsupported", "cpu only", "died"};

static void *alloc(const Backend *be, size_t bytes) { return be->alloc(bytes ? bytes : 1); }

static size_t kind_bytes(const Backend *be, Elem k, int64_t n) {
    return (k == EL_I32 ? sizeof(int32_t) : k == EL_F32 ? be->f32_size : be->act_size) * (size_t)n;
}

static void upload(const Backend *be, Elem k, void *dst, const double *x, int64_t n) {
    if (k == EL_I32) {
        int32_t *ix = rt_malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
        for (int64_t i = 0; i < n; i++) ix[i] = (int32_t)x[i];
        be->upload(dst, ix, sizeof(int32_t) * (size_t)n);
        rt_free(ix);
    } else if (k == EL_F32) {
        backend_upload_f64(be, dst, x, n);
    } else {
        void *tmp = alloc(be, kind_bytes(be, EL_F32, n));
        backend_upload_f64(be, tmp, x, n);
        be->to_act(dst, tmp, n);
        be->release(tmp);
    }
}

static double *download(const Backend *be, Elem k, const void *src, int64_t n) {
    double *x = rt_malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (k == EL_F32) {
        backend_download_f64(be, x, src, n);
        return x;
    }
    RT_ASSERT(k == EL_ACT);
    void *raw = rt_malloc(kind_bytes(be, k, n) + 1);
    float *f = rt_malloc(sizeof(float) * (size_t)(n ? n : 1));
    be->download(raw, src, kind_bytes(be, k, n));
    act_to_f32(be->act_size, f, raw, n);
    for (int64_t i = 0; i < n; i++) x[i] = f[i];
    rt_free(raw);
    rt_free(f);
    return x;
}

static double rel_err(const double *a, const double *b, int64_t n) {
    double mx = ERR_FLOOR, err = 0;
    for (int64_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs(b[i]));
        double d = fabs(a[i] - b[i]);
        if (!(d <= err)) err = d; /* NaN sticks */
    }
    return err / mx;
}

/* The case's tolerance on be: bf16's (tol_bf16) where one of its tensors is bf16 there. */
static double case_tol(const Op *o, double tol_bf16) {
    for (int i = 0; i < o->nt; i++) {
        const Tensor *t = &o->t[i];
        if ((tensor_kind(t) == EL_ACT || (t->d && tensor_dkind(t) == EL_ACT)) &&
            o->be->act_size == 2)
            return tol_bf16;
    }
    return TOL_F32;
}

static void worse(Result *r, double err, double tol, const char *what) {
    double ratio = err / tol;
    if (!(ratio <= r->ratio)) {
        r->ratio = ratio;
        snprintf(r->what, sizeof r->what, "%s", what);
    }
}

/* Compares one tensor's downloaded output or gradient with the reference. */
static void compare(Result *r, const Op *o, const Tensor *t, const RefTensor *q, int grad,
                    double tol) {
    Elem k = grad ? tensor_dkind(t) : tensor_kind(t);
    double *got = download(o->be, k, grad ? t->bd : t->bv, q->n);
    if (grad && t->spec.grad == GRAD_ADD)
        for (int64_t i = 0; i < q->n; i++) got[i] -= q->d_in[i];
    if (grad && t->spec.dscale)
        for (int64_t i = 0; i < q->n; i++) got[i] /= t->spec.dscale;
    char what[96];
    snprintf(what, sizeof what, grad ? "d%s" : "%s", t->spec.name);
    worse(r, rel_err(got, grad ? q->d_out : q->v_out, q->n), tol, what);
    rt_free(got);
}

/* What an output buffer holds before the forward on a backend: finite values that are none of
 * the results, so that a kernel that adds to its output or leaves part of it unwritten fails
 * (the fp64 run starts outputs at zero). Valid until the next call. */
static const double *stale(int64_t n) {
    static double *buf;
    static int64_t cap;
    if (n > cap) {
        rt_free(buf);
        buf = rt_malloc(sizeof(double) * (size_t)n);
        cap = n;
    }
    for (int64_t i = 0; i < n; i++) buf[i] = 37.0 + (double)(i % 13);
    return buf;
}

/* An op whose backward takes `accumulate`: the backward again with it set, onto the gradients
 * the first one left; what it adds to each buffer is compared with the reference gradient
 * (GRAD_SET inputs: their activation gradient added; GRAD_ADD: the same from where they were),
 * and absent inputs' buffers stay as they were. */
static void run_accumulate(Result *r, Op *o, const RefCase *rc, double tol) {
    double *first[MAX_TENSORS] = {0};
    for (int i = 0; i < o->nt; i++) {
        const Tensor *t = &o->t[i];
        if (has_grad(t) || t->role == T_ABSENT)
            first[i] = download(o->be, tensor_dkind(t), t->bd, rc->t[i].n);
    }
    o->accumulate = 1;
    o->c->op->bwd(o);
    o->accumulate = 0;
    o->be->synchronize();
    for (int i = 0; i < o->nt; i++) {
        const Tensor *t = &o->t[i];
        if (!first[i]) continue;
        int64_t n = rc->t[i].n;
        double *got = download(o->be, tensor_dkind(t), t->bd, n);
        char what[96];
        snprintf(what, sizeof what, "d%s (accumulate=1)", t->spec.name);
        for (int64_t k = 0; k < n; k++) got[k] -= first[i][k];
        if (t->spec.dscale)
            for (int64_t k = 0; k < n; k++) got[k] /= t->spec.dscale;
        if (t->role == T_ABSENT) /* nothing added: got is zero, measured against the buffer */
            for (int64_t k = 0; k < n; k++) got[k] += rc->t[i].d_out[k];
        worse(r, rel_err(got, rc->t[i].d_out, n), tol, what);
        rt_free(got);
        rt_free(first[i]);
    }
}

static Result run_on(const Backend *be, const OpCase *c, const RefCase *rc, double tol_bf16) {
    Result r = {.status = RES_OK};
    if (c->op->cpu_only && be != backend_cpu()) return (Result){.status = RES_CPU_ONLY};
    Op *o = op_new(c, be);
    if (o->nt != rc->nt)
        rt_die("%s: %d tensors, the refs file has %d (rebuild it)", c->name, o->nt, rc->nt);
    if (c->op->shape && be->supports) {
        OpShape sh = c->op->shape(o);
        if (!be->supports(&sh, r.what, sizeof r.what)) {
            op_free(o);
            r.status = RES_UNSUPPORTED;
            return r;
        }
    }
    void *mirror = NULL;
    if (be->seqs_prepare) be->seqs_prepare(&o->ts.s, &mirror);
    for (int i = 0; i < o->nt; i++) {
        Tensor *t = &o->t[i];
        const RefTensor *q = &rc->t[i];
        if (q->n != t->spec.n)
            rt_die("%s: tensor %s of %lld, the refs file's of %lld", c->name, t->spec.name,
                   (long long)t->spec.n, (long long)q->n);
        if (q->has_v)
            upload(be, tensor_kind(t), t->bv = alloc(be, kind_bytes(be, tensor_kind(t), q->n)),
                   t->role == T_OUT ? stale(q->n) : q->v_in, q->n);
        if (q->has_d)
            upload(be, tensor_dkind(t), t->bd = alloc(be, kind_bytes(be, tensor_dkind(t), q->n)),
                   q->d_in, q->n);
    }
    double scalar = c->op->fwd(o);
    c->op->bwd(o);
    be->synchronize();
    double tol = case_tol(o, tol_bf16);
    r.ratio = fabs(scalar - rc->scalar) / fmax(fabs(rc->scalar), 1.0) / tol;
    snprintf(r.what, sizeof r.what, "returned value");
    for (int i = 0; i < o->nt; i++) {
        const Tensor *t = &o->t[i];
        if (t->role == T_OUT) compare(&r, o, t, &rc->t[i], 0, tol);
        if (has_grad(t) || t->role == T_ABSENT) compare(&r, o, t, &rc->t[i], 1, tol);
    }
    if (c->op->accumulate) run_accumulate(&r, o, rc, tol);
    if (!(r.ratio <= 1)) r.status = RES_FAIL;
    for (int i = 0; i < o->nt; i++) {
        if (o->t[i].bv) be->release(o->t[i].bv);
        if (o->t[i].bd) be->release(o->t[i].bd);
    }
    if (mirror) be->seqs_release(mirror);
    op_free(o);
    return r;
}

/* ------------------------------------------------------------ the refs ---- */

static RefCase *refs;

static void read_refs(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) rt_die("cannot read %s (made by test_ops_grad --refs)", path);
    int n = refs_read_header(f, path);
    if (n != NCASES) rt_die("%s holds %d cases, the table %d (rebuild it)", path, n, NCASES);
    refs = rt_calloc((size_t)n, sizeof(RefCase));
    for (int i = 0; i < n; i++) {
        refs_read_case(f, path, &refs[i]);
        if (strcmp(refs[i].name, CASES[i].name))
            rt_die("%s: case %d is %s, the table's %s (rebuild it)", path, i, refs[i].name,
                   CASES[i].name);
    }
    fclose(f);
}

/* ------------------------------------------------------------ CUDA in a child ---- */

static Result cuda_results[512];
#define NALL (NCASES + NGPU_CASES) /* the table's cases, then the GPU-sized ones */

/* Case i of CASES, then of GPU_CASES. */
static const OpCase *case_at(int i) { return i < NCASES ? &CASES[i] : &GPU_CASES[i - NCASES]; }

/* Case i on the GPU: against the refs file, or a GPU-sized case against the CPU fp32 run. */
static Result run_on_gpu(const Backend *gpu, int i) {
    if (i < NCASES) return run_on(gpu, &CASES[i], &refs[i], TOL_BF16);
    RefCase rc;
    refs_from_cpu_run(case_at(i), &rc);
    Result r = run_on(gpu, case_at(i), &rc, TOL_BF16_GPU_SIZED);
    refs_free_case(&rc);
    return r;
}

/* The backend the child runs: CUDA, or the CPU standing in for it (SECOND: its rows' label). */
static const char *SECOND = "cuda";
static int standin(void) {
    const char *s = getenv("ROTOR_TEST_OPS_STANDIN");
    if (s && *s && strcmp(s, "cpu")) rt_die("ROTOR_TEST_OPS_STANDIN=%s: only cpu stands in", s);
    return s && *s;
}

/* Runs cases first.. on the CUDA backend, one line "index status ratio what" each on fd. */
static void cuda_child(int first, int fd) {
    FILE *out = fdopen(fd, "w");
    char why[160] = "";
    const Backend *gpu = standin() ? backend_cpu() : backend_cuda(0, why, sizeof why);
    for (int i = first; i < NALL; i++) {
        Result r = gpu ? run_on_gpu(gpu, i) : (Result){.status = RES_SKIPPED};
        if (!gpu) snprintf(r.what, sizeof r.what, "no GPU (%s)", why);
        for (char *p = r.what; *p; p++)
            if (*p == '\n') *p = ' ';
        fprintf(out, "%d %d %.6g %s\n", i, (int)r.status, r.ratio, r.what);
        fflush(out);
    }
    fclose(out);
    _exit(0);
}

/* Every case's CUDA result, from children that start again after a case that dies. */
static void run_cuda(void) {
    RT_ASSERT(NALL <= (int)(sizeof cuda_results / sizeof cuda_results[0]));
    int next = 0;
    while (next < NALL) {
        int fds[2];
        if (pipe(fds)) rt_die("pipe failed");
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) rt_die("fork failed");
        if (pid == 0) {
            close(fds[0]);
            cuda_child(next, fds[1]);
        }
        close(fds[1]);
        FILE *in = fdopen(fds[0], "r");
        char line[256];
        while (fgets(line, sizeof line, in)) {
            int i, st, k = 0;
            double ratio;
            if (sscanf(line, "%d %d %lf %n", &i, &st, &ratio, &k) < 3 || i != next)
                rt_die("cuda child: bad line %s", line);
            Result *r = &cuda_results[i];
            *r = (Result){.status = (Status)st, .ratio = ratio};
            snprintf(r->what, sizeof r->what, "%.*s", (int)strcspn(line + k, "\n"), line + k);
            next++;
        }
        fclose(in);
        int wstatus;
        waitpid(pid, &wstatus, 0);
        if (next < NALL && !(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)) {
            cuda_results[next] = (Result){.status = RES_DIED};
            snprintf(cuda_results[next].what, sizeof cuda_results[next].what, "(exit status %d)",
                     WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus));
            next++;
        } else if (next < NALL) {
            rt_die("cuda child ended after %d of %d cases", next, NALL);
        }
    }
}

/* ------------------------------------------------------------ the rows ---- */

static void print_result(const char *backend, const Result *r) {
    printf("  %s %s", backend, STATUS[r->status]);
    if (r->status == RES_OK || r->status == RES_FAIL) printf(" %.2g of tol", r->ratio);
    if (r->status == RES_FAIL) printf(" (%s)", r->what);
    if (r->status == RES_SKIPPED || r->status == RES_UNSUPPORTED || r->status == RES_DIED)
        printf(" %s", r->what);
}

static void run_row(const void *arg) {
    int i = (int)(intptr_t)arg;
    const OpCase *c = case_at(i);
    Result cpu = {.status = RES_SKIPPED};
    printf("%-26s", c->name);
    if (i < NCASES) {
        cpu = run_on(backend_cpu(), c, &refs[i], TOL_BF16);
        print_result("cpu-f32", &cpu);
    } else {
        printf("  cpu-f32 reference");
    }
    char second[32];
    snprintf(second, sizeof second, " %s", SECOND);
    print_result(second, &cuda_results[i]);
    printf("\n");
    /* the ratio of each compared backend as err=/tol= (scripts/gpu_check.sh's worst column) */
    const Result *both[2] = {&cpu, &cuda_results[i]};
    for (int b = 0; b < 2; b++) {
        if (both[b]->status == RES_OK || both[b]->status == RES_FAIL)
            printf("    %s err=%.3e tol=1\n", b ? SECOND : "cpu-f32", both[b]->ratio);
        CHECK_MSG(both[b]->status != RES_FAIL, "%s on %s: FAIL %s", c->name, b ? SECOND : "cpu-f32",
                  both[b]->what);
    }
}

/* ------------------------------------------------------------ coverage ---- */

/* Ops of BACKEND_OPS no case or direct test of the table calls, each with where it is checked. */
static const char *const EXEMPT[] = {
    "to_act", /* every [act] buffer of this runner is filled through it */
    /* no backward of their own: tests/gpu/test_gpu_basic against the CPU, and on the CPU through
     * the model (test_model_grad: the residual stream's norms, the classifier's pooled rows) */
    "scatter_rows", "add_rmsnorm_fwd",
    /* decoding: test_decode_f32/f64 (every family's steps against the forward) and
     * tests/gpu/test_gpu_decode; cscan_step also test_gpu_diagrnn, and rnn_step and lstm_step
     * test_gpu_rnncells alone (the decoded models have no RNN) */
    "segment_tail", "segment_cumsum", "cache_write", "conv_step", "shift_step", "selrope_step",
    "gla_step", "gdn_step", "cscan_step", "attn_step", "rnn_step",
    "lstm_step", /* also the RNN and LSTM cases' extra check (check_steps) on the CPU */
    "token_logprobs", "logit_scores", /* test_scoring_f32/f64, tests/gpu/test_gpu_basic */
};

#define OP_NAME(ret, name, params, args) #name,
static const char *const OP_NAMES[] = {BACKEND_OPS(OP_NAME)};
#undef OP_NAME

/* Whether the space-separated list holds word. */
static int lists(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; p && *p;) {
        size_t k = strcspn(p, " ");
        if (k == n && !strncmp(p, word, n)) return 1;
        p += k + (p[k] == ' ');
    }
    return 0;
}

static int is_op(const char *word, size_t n) {
    for (int j = 0; j < TH_COUNT(OP_NAMES); j++)
        if (strlen(OP_NAMES[j]) == n && !strncmp(OP_NAMES[j], word, n)) return 1;
    return 0;
}

/* Every name in a list is an op of the table. */
static void check_list(const char *who, const char *list) {
    for (const char *p = list; p && *p;) {
        size_t k = strcspn(p, " ");
        CHECK_MSG(is_op(p, k), "%s lists '%.*s', no op of BACKEND_OPS", who, (int)k, p);
        p += k + (p[k] == ' ');
    }
}

static void test_coverage(void) {
    int uncovered = 0;
    for (int i = 0; i < NCASES; i++) check_list(CASES[i].name, CASES[i].op->ops);
    for (int i = 0; i < NDIRECT; i++) check_list(DIRECT[i].t.name, DIRECT[i].ops);
    for (int j = 0; j < TH_COUNT(EXEMPT); j++)
        CHECK_MSG(is_op(EXEMPT[j], strlen(EXEMPT[j])), "exempt '%s' is no op", EXEMPT[j]);
    for (int j = 0; j < TH_COUNT(OP_NAMES); j++) {
        int in = 0;
        for (int i = 0; i < NCASES && !in; i++) in = lists(CASES[i].op->ops, OP_NAMES[j]);
        for (int i = 0; i < NDIRECT && !in; i++) in = lists(DIRECT[i].ops, OP_NAMES[j]);
        for (int i = 0; i < TH_COUNT(EXEMPT) && !in; i++) in = !strcmp(EXEMPT[i], OP_NAMES[j]);
        if (!in) {
            fprintf(stderr,
                    "    %s: no case or direct test of tests/op_table.c calls it, and it is not "
                    "exempt\n",
                    OP_NAMES[j]);
            uncovered++;
        }
    }
    printf("    %d ops, %d exempt, %d uncovered\n", TH_COUNT(OP_NAMES), TH_COUNT(EXEMPT),
           uncovered);
    CHECK(uncovered == 0);
}

/* With a GPU: every op a case calls was compared on CUDA in at least one case (its status ok or
 * FAIL), so that an op whose every row the kernels refuse (unsupported, died) or that runs
 * only on the CPU is not counted as checked there. The ops only the direct tests call (on the
 * CPU: tests/gpu checks them on CUDA) are listed. Without a GPU there is nothing to count. */
static void test_cuda_coverage(void) {
    if (cuda_results[0].status == RES_SKIPPED) {
        printf("    not counted: %s\n", cuda_results[0].what);
        return;
    }
    int unchecked = 0, direct_only = 0;
    for (int j = 0; j < TH_COUNT(OP_NAMES); j++) {
        int called = 0, compared = 0;
        for (int i = 0; i < NALL; i++)
            if (lists(case_at(i)->op->ops, OP_NAMES[j])) {
                called = 1;
                compared |= cuda_results[i].status == RES_OK || cuda_results[i].status == RES_FAIL;
            }
        int direct = 0;
        for (int i = 0; i < NDIRECT && !direct; i++) direct = lists(DIRECT[i].ops, OP_NAMES[j]);
        if (called && !compared) {
            fprintf(stderr,
                    "    %s: no case of it was compared on %s (each unsupported, died or cpu "
                    "only)\n",
                    OP_NAMES[j], SECOND);
            unchecked++;
        } else if (!called && direct) {
            printf("    %s: direct tests only (CPU)\n", OP_NAMES[j]);
            direct_only++;
        }
    }
    printf("    %d ops, %d compared on %s by none of their cases, %d in direct tests only\n",
           TH_COUNT(OP_NAMES), unchecked, SECOND, direct_only);
    CHECK(unchecked == 0);
}

/* Every GPU-sized case builds on the CPU (its tensors drawn at their sizes): a GPU run does
 * not find a case that cannot start. */
static void test_gpu_cases_build(void) {
    int64_t elements = 0;
    for (int i = 0; i < NGPU_CASES; i++) {
        Op *o = op_new(&GPU_CASES[i], backend_cpu());
        for (int t = 0; t < o->nt; t++) {
            CHECK_MSG(o->t[t].spec.n > 0, "%s: tensor %s is empty", GPU_CASES[i].name,
                      o->t[t].spec.name);
            elements += o->t[t].spec.n;
        }
        op_free(o);
    }
    printf("    %d GPU-sized cases, %.1fM elements\n", NGPU_CASES, (double)elements / 1e6);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_ops_backends REFS [FILTER]\n");
        return 2;
    }
    read_refs(argv[1]);
    if (standin()) SECOND = "cpu-standin";
    run_cuda();
    static const TestCase coverage = {"coverage", test_coverage},
                          cuda_coverage = {"cuda_coverage", test_cuda_coverage},
                          gpu_build = {"gpu_cases_build", test_gpu_cases_build};
    TestRow *rows = rt_malloc(sizeof(TestRow) * (size_t)(NALL + 3));
    for (int i = 0; i < NALL; i++)
        rows[i] = (TestRow){case_at(i)->name, run_row, (void *)(intptr_t)i};
    rows[NALL] = th_row(&coverage);
    rows[NALL + 1] = th_row(&cuda_coverage);
    rows[NALL + 2] = th_row(&gpu_build);
    int rc = th_run_rows(rows, NALL + 3, argc - 1, argv + 1);
    for (int i = 0; i < NALL; i++)
        if (cuda_results[i].status == RES_DIED)
            printf("%s died: %s (a kernel refused it, its message above)\n", SECOND,
                   case_at(i)->name);
    for (int i = 0; i < NCASES; i++) refs_free_case(&refs[i]);
    rt_free(refs);
    rt_free(rows);
    return rc;
}
