/* The nonlinear recurrence of the tanh/modReLU RNN, expRNN and nnRNN (docs/models.md
 * §nonlinear-rnns; RnnArgs in src/backend_ops.h): h_t = act(h_{t-1} W^T + z_t) over each segment,
 * one segment per thread, each step one matrix-vector product through BLAS.
 *
 * Backward (through time), with a_t the pre-activation and g_t = dL/dh_t in total:
 *   g_t = dh_t + da_{t+1} W,  da_t = g_t act'(a_t),  dz_t = da_t,
 *   dW += sum_t da_t^T h_{t-1} (one GEMM per segment; h_{t0-1} = h0[seg], truncated there),
 * act' read from h alone: tanh' = 1 - h^2; modReLU' = [h != 0] (h = 0 exactly where the relu
 * is off or a = 0, where PyTorch's sign has derivative 0), and d bias = sum_t da_t sign(h_t). */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "util/error.h"

static inline real rnn_act(RnnAct act, real a, real b) {
    if (act == RNN_TANH) return tanh(a);
    real m = fabs(a) + b;
    return m > 0 ? (a > 0 ? m : a < 0 ? -m : 0) : 0;
}

/* One step: y = act(prev W^T + z) for n channels (prev NULL: a zero state). */
static void rnn_cell(const RnnArgs *a, const real *prev, const real *z, real *y) {
    int n = a->n;
    const real *b = a->bias;
    memcpy(y, z, sizeof(real) * (size_t)n);
    if (prev) gemm(0, 1, 1, n, n, 1, prev, n, a->W, n, 1, y, n);
    for (int i = 0; i < n; i++) y[i] = rnn_act(a->act, y[i], b ? b[i] : 0);
}

void cpu_rnn_fwd(const RnnArgs *a) {
    const Seqs *s = a->s;
    int n = a->n;
    const real *z = a->z;
    real *h = a->h, *st = a->state;
#pragma omp parallel for schedule(dynamic, 1)
    for (int seg = 0; seg < s->nseg; seg++) {
        int64_t t0 = s->cu[seg], t1 = s->cu[seg + 1];
        const real *h0 = a->h0 ? (const real *)a->h0 + (int64_t)seg * n : NULL;
        for (int64_t t = t0; t < t1; t++)
            rnn_cell(a, t > t0 ? h + (t - 1) * n : h0, z + t * n, h + t * n);
        if (st) {
            if (t1 > t0)
                memcpy(st + (int64_t)seg * n, h + (t1 - 1) * n, sizeof(real) * (size_t)n);
            else if (h0)
                memcpy(st + (int64_t)seg * n, h0, sizeof(real) * (size_t)n);
            else
                memset(st + (int64_t)seg * n, 0, sizeof(real) * (size_t)n);
        }
    }
}

void cpu_rnn_bwd(const RnnGrads *g) {
    const RnnArgs *a = &g->a;
    const Seqs *s = a->s;
    int n = a->n, mod = a->act == RNN_MODRELU;
    const real *h = a->h, *dh = g->dh;
    real *dz = g->dz;
#pragma omp parallel for schedule(dynamic, 1)
    for (int seg = 0; seg < s->nseg; seg++) {
        int64_t t0 = s->cu[seg], t1 = s->cu[seg + 1];
        for (int64_t t = t1 - 1; t >= t0; t--) {
            real *d = dz + t * n;
            const real *ht = h + t * n;
            memcpy(d, dh + t * n, sizeof(real) * (size_t)n);
            if (t + 1 < t1) gemm(0, 0, 1, n, n, 1, d + n, n, a->W, n, 1, d, n);
            for (int i = 0; i < n; i++) d[i] *= mod ? (real)(ht[i] != 0) : 1 - ht[i] * ht[i];
        }
    }
    /* the parameter gradients: sums over the tokens, segment by segment in order */
    real *dW = g->dW, *db = g->dbias;
    for (int seg = 0; seg < s->nseg; seg++) {
        int64_t t0 = s->cu[seg], len = s->cu[seg + 1] - t0;
        if (len > 1)
            gemm(1, 0, n, n, (int)(len - 1), 1, dz + (t0 + 1) * n, n, h + t0 * n, n, 1, dW, n);
        if (a->h0 && len > 0)
            gemm(1, 0, n, n, 1, 1, dz + t0 * n, n, (const real *)a->h0 + (int64_t)seg * n, n, 1, dW,
                 n);
    }
    if (mod)
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++) {
            double acc = 0;
            for (int64_t t = 0; t < s->ntok; t++) {
                real v = h[t * n + i];
                acc += v > 0 ? dz[t * n + i] : v < 0 ? -dz[t * n + i] : 0;
            }
            db[i] += (real)acc;
        }
}

void cpu_rnn_step(const RnnArgs *a) {
    const Seqs *s = a->s;
    int n = a->n;
    real *st = a->state, *h = a->h;
    for (int64_t r = 0; r < s->ntok; r++) {
        real *x = st + r * n;
        rnn_cell(a, s->pos[r] == 0 ? NULL : x, (const real *)a->z + r * n, h + r * n);
        memcpy(x, h + r * n, sizeof(real) * (size_t)n);
    }
}
