/* The op table: every Backend op with a backward (and a few without) as a case of tensors,
 * a forward and a backward, run through a `const Backend *` (src/backend.h) so that one
 * table checks every backend. tests/test_ops_grad.c checks each case in fp64 on the CPU
 * (finite differences and the contract's conventions) and writes the fp64 results for
 * tests/test_ops_backends.c (tests/op_refs.h), which runs every case on every backend of
 * the build and compares.
 *
 * A case (OpCase) names an op (OpDef), a seed and the op's variant switches. The OpDef's
 * build declares its tensors (host arrays of `real`, drawn from the case's seed), fwd and
 * bwd run the op on the tensors' backend buffers (BV, BD) through o->be; ref and extra are
 * fp64 checks on the host arrays, run by test_ops_grad only. In the fp64 run the backend
 * buffers are the host arrays themselves (op_on_host). Each tensor has its element type
 * (src/backend.h): [act] unless marked [f32] or [i32]; its gradient buffer (and an output's
 * probe, the backward's dout) is [f32] for accumulated (parameter) gradients, else of the
 * value's type, unless the op says otherwise (tensor_dkind). */
#ifndef ROTOR_OP_TABLE_H
#define ROTOR_OP_TABLE_H

#include "harness.h"
#include "testutil.h"

#define EXACT_TOL 1e-12

/* Several segments, none a multiple of 64; the last one spans three chunks (64+64+2). */
#define NSEG 4
extern const int LENS[NSEG];

typedef enum { INIT_ZERO, INIT_NZ, INIT_UNIFORM, INIT_NORMAL, INIT_GARBAGE } InitKind;
typedef struct {
    InitKind kind;
    double a, b;
} Init;
#define ZERO ((Init){INIT_ZERO, 0, 0})
#define NZ(lo, hi) ((Init){INIT_NZ, lo, hi}) /* |x| in [lo, hi], random sign */
#define UNIFORM(lo, hi) ((Init){INIT_UNIFORM, lo, hi})
#define NORMAL(std) ((Init){INIT_NORMAL, std, 0})
#define GARBAGE ((Init){INIT_GARBAGE, 0, 0})

/* GRAD_SET: the backward overwrites the gradient; GRAD_ADD: it accumulates. */
typedef enum { GRAD_NONE, GRAD_SET, GRAD_ADD } GradKind;

/* Element types in backend memory; EL_DEFAULT: [act] for a value, the rule above for a
 * gradient. */
typedef enum { EL_DEFAULT, EL_ACT, EL_F32, EL_I32 } Elem;

/* How a tensor is made and, for an input, how its gradient is checked. */
typedef struct {
    const char *name;
    int64_t n;
    Init init;
    GradKind grad;
    Elem kind, dkind; /* of the value and of the gradient (or probe) buffer */
    int samples;      /* finite-difference samples (0: FD_SAMPLES); every entry when n is smaller */
    int64_t rowlen;   /* > 0: a mixer's gradient, MIXER_SAMPLES samples and both ends of the
                       * EDGE_TOKENS rows of rowlen elements */
    double dscale;    /* != 0: the backward writes dscale times the gradient (divided back by
                       * the runners) */
} Spec;

/* T_ABSENT: an input the variant leaves out (the forward gets NULL), whose gradient buffer the
 * backward still gets and must leave untouched. T_AUX: scratch or saved values of the op, or
 * an input without a gradient check (its values come from the build). */
typedef enum { T_IN, T_OUT, T_AUX, T_ABSENT } Role;

typedef struct {
    Spec spec;
    Role role;
    real *v;       /* values; NULL when absent or [i32] */
    int32_t *iv;   /* [i32] values */
    real *d;       /* dL/d(this): an output's probe w (the backward's dout); an input's gradient as
                    * the backward writes it, net of `pre` once the runner has checked it */
    real *pre;     /* what d held before the backward (GRAD_ADD and absent inputs) */
    void *bv, *bd; /* v (or iv) and d in the backend's memory */
} Tensor;

/* The sizes of a GPU-sized case (GPU_CASES); a zero or NULL field keeps the op's own small
 * size. Each op reads those it has: H heads, K key (FoX: head) width, V value width, C
 * channels, N rows (or elements), V also a vocabulary. */
typedef struct {
    const int *lens; /* the token segments, nseg of them (NULL: LENS) */
    int nseg;
    int H, K, V, C;
    int64_t N;
} Dims;

/* The switches of a case; each op reads those it has. */
typedef struct {
    int bias, gate, conv, per_head, chain, h0, skip, keep_dt, per_group;
    int strong; /* the mixers' log decays to -2 a token (STRONG_DECAY) instead of -0.05 */
    int groups; /* rmsnorm: G */
    int taps;   /* conv with a weight: its taps K (0: 4) */
    int T;      /* dropout: rows of T tokens share the mask of a channel (0: none) */
    Activation act;
    RnnAct rnn;
    double hi;     /* elementwise ops: |x| in [0.05, hi] */
    float norm;    /* logsigmoid's normalizer */
    int n, layers; /* eurnn_weights: channels and layers of rotations */
    Dims dims;
} Variant;

typedef struct OpDef OpDef;
typedef struct {
    const char *name;
    const OpDef *op;
    uint64_t seed;
    Variant v;
} OpCase;

#define MAX_TENSORS 20
/* The state of a case while it runs; every op's own struct starts with it. */
typedef struct {
    const OpCase *c;
    const Variant *v;
    const Backend *be;
    Rng r;
    TestSeqs ts; /* the segments LENS */
    const Seqs *s;
    int accumulate; /* the flag of backwards that take one */
    int nt;
    Tensor t[MAX_TENSORS];
    char label[160];
} Op;

struct OpDef {
    size_t size;          /* of the op's struct */
    void (*build)(Op *o); /* declares the tensors */
    double (*fwd)(Op *o); /* the outputs from the inputs; returns a scalar part of L (losses) */
    void (*bwd)(Op *o);   /* the gradients of the inputs from the outputs' d */
    void (*ref)(Op *o, real *want); /* optional: the first output computed directly */
    void (*extra)(Op *o);           /* optional: other checks, after the backward and the convention
                                     * checks, before the finite differences */
    int accumulate;                 /* the backward takes `accumulate` */
    const char *ops;                /* the Backend ops fwd and bwd call, space-separated */
    int cpu_only;                   /* fwd or bwd calls a CPU function outside the Backend table */
    OpShape (*shape)(const Op *o);  /* optional: the call as Backend.supports takes it */
};

extern const OpCase CASES[];
extern const int NCASES;
/* The GPU-sized cases: the 370M models' shapes and segment layouts around the kernels' tiles
 * and chunks, too large for finite differences or a stored reference. test_ops_backends runs
 * each where a GPU is, against the CPU fp32 backend on the same inputs. */
extern const OpCase GPU_CASES[];
extern const int NGPU_CASES;

/* Checks against direct computations, outside the table (fp64 only), with the Backend ops
 * they exercise. */
typedef struct {
    TestCase t;
    const char *ops;
} DirectTest;
extern const DirectTest DIRECT[];
extern const int NDIRECT;

/* A case built on backend be: its tensors' host arrays drawn from the case's seed, no
 * backend buffers yet. */
Op *op_new(const OpCase *c, const Backend *be);
void op_free(Op *o);
/* The backend buffers of every tensor are its host arrays (the fp64 CPU run). */
void op_on_host(Op *o);
/* The backward, then the gradients written scaled (Spec.dscale) divided back on the host
 * (host buffers only). */
void op_backward(Op *o);

Elem tensor_kind(const Tensor *t);
Elem tensor_dkind(const Tensor *t);
int has_grad(const Tensor *t);

/* n values with |x| in [lo, hi] and a random sign: never zero. */
real *rand_nz(Rng *r, int64_t n, double lo, double hi);
/* Garbage for buffers that an op must overwrite. */
real *garbage(Rng *r, int64_t n);
void subtract(real *a, const real *b, int64_t n);
/* Exact agreement (up to rounding) of a with the reference b. */
void check_equal(const char *what, const real *a, const real *b, int64_t n);
/* "<case> <what>" for the printed lines. */
const char *label(Op *o, const char *fmt, ...);

void free_all(real **bufs, int n);
#define FREE_ALL(...)                                                                              \
    do {                                                                                           \
        real *_b[] = {__VA_ARGS__};                                                                \
        free_all(_b, (int)(sizeof(_b) / sizeof(_b[0])));                                           \
    } while (0)

#endif
