/* The LSTM recurrence (docs/models.md §lstm; LstmArgs in src/backend_ops.h), gates i, f, g, o:
 * a_t = z_t + h_{t-1} W^T, c_t = f c_{t-1} + i g, h_t = o tanh(c_t), one segment per thread,
 * each step one matrix-vector product through BLAS.
 *
 * Backward, with dh_t in total = dh_t + da_{t+1} W and dc carried back:
 *   dc_t += dh_t o (1 - tanh^2 c_t);  do = dh_t tanh(c_t);  di = dc_t g;  dg = dc_t i;
 *   df = dc_t c_{t-1};  dc_{t-1} = dc_t f;  da = (di i(1-i), df f(1-f), dg (1-g^2), do o(1-o));
 *   dW += sum_t da_t^T h_{t-1} (one GEMM per segment).
 * (h, c) before a segment's first token come from h0 when given; the gradient stops there. */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "util/error.h"

/* One step from (hp, cp) (NULL: zero state): gates q [4n], c [n], h [n]. */
static void lstm_cell(const LstmArgs *a, const real *hp, const real *cp, const real *z, real *q,
                      real *c, real *h) {
    int n = a->n;
    memcpy(q, z, sizeof(real) * 4 * (size_t)n);
    if (hp) gemm(0, 1, 1, 4 * n, n, 1, hp, n, a->W, n, 1, q, 4 * n);
    for (int j = 0; j < n; j++) {
        real i = sigmoidr(q[j]), f = sigmoidr(q[n + j]), g = tanh(q[2 * n + j]),
             o = sigmoidr(q[3 * n + j]);
        q[j] = i, q[n + j] = f, q[2 * n + j] = g, q[3 * n + j] = o;
        c[j] = f * (cp ? cp[j] : 0) + i * g;
        h[j] = o * tanh(c[j]);
    }
}

void cpu_lstm_fwd(const LstmArgs *a) {
    const Seqs *s = a->s;
    int n = a->n;
    const real *z = a->z;
    real *q = a->gates, *c = a->c, *h = a->h, *st = a->state;
#pragma omp parallel for schedule(dynamic, 1)
    for (int seg = 0; seg < s->nseg; seg++) {
        int64_t t0 = s->cu[seg], t1 = s->cu[seg + 1];
        const real *h0 = a->h0 ? (const real *)a->h0 + (int64_t)seg * 2 * n : NULL;
        for (int64_t t = t0; t < t1; t++) {
            int first = t == t0;
            lstm_cell(a, first ? h0 : h + (t - 1) * n,
                      first ? (h0 ? h0 + n : NULL) : c + (t - 1) * n, z + t * 4 * n, q + t * 4 * n,
                      c + t * n, h + t * n);
        }
        if (st) {
            real *x = st + (int64_t)seg * 2 * n;
            if (t1 > t0) {
                memcpy(x, h + (t1 - 1) * n, sizeof(real) * (size_t)n);
                memcpy(x + n, c + (t1 - 1) * n, sizeof(real) * (size_t)n);
            } else if (h0) {
                memcpy(x, h0, sizeof(real) * 2 * (size_t)n);
            } else {
                memset(x, 0, sizeof(real) * 2 * (size_t)n);
            }
        }
    }
}

void cpu_lstm_bwd(const LstmGrads *g) {
    const LstmArgs *a = &g->a;
    const Seqs *s = a->s;
    int n = a->n;
    const real *q = a->gates, *c = a->c, *h = a->h, *dh = g->dh;
    real *dz = g->dz;
#pragma omp parallel
    {
        real *gh = rt_malloc(sizeof(real) * 2 * (size_t)n), *dc = gh + n;
#pragma omp for schedule(dynamic, 1)
        for (int seg = 0; seg < s->nseg; seg++) {
            int64_t t0 = s->cu[seg], t1 = s->cu[seg + 1];
            const real *c0 = a->h0 ? (const real *)a->h0 + (int64_t)seg * 2 * n + n : NULL;
            memset(dc, 0, sizeof(real) * (size_t)n);
            for (int64_t t = t1 - 1; t >= t0; t--) {
                const real *qt = q + t * 4 * n, *ct = c + t * n;
                real *d = dz + t * 4 * n;
                memcpy(gh, dh + t * n, sizeof(real) * (size_t)n);
                if (t + 1 < t1) gemm(0, 0, 1, n, 4 * n, 1, d + 4 * n, 4 * n, a->W, n, 1, gh, n);
                for (int j = 0; j < n; j++) {
                    real i = qt[j], f = qt[n + j], gg = qt[2 * n + j], o = qt[3 * n + j];
                    real th = tanh(ct[j]), cp = t > t0 ? c[(t - 1) * n + j] : c0 ? c0[j] : 0;
                    real dct = dc[j] + gh[j] * o * (1 - th * th);
                    d[j] = dct * gg * i * (1 - i);
                    d[n + j] = dct * cp * f * (1 - f);
                    d[2 * n + j] = dct * i * (1 - gg * gg);
                    d[3 * n + j] = gh[j] * th * o * (1 - o);
                    dc[j] = dct * f;
                }
            }
        }
        rt_free(gh);
    }
    for (int seg = 0; seg < s->nseg; seg++) {
        int64_t t0 = s->cu[seg], len = s->cu[seg + 1] - t0;
        if (len > 1)
            gemm(1, 0, 4 * n, n, (int)(len - 1), 1, dz + (t0 + 1) * 4 * n, 4 * n, h + t0 * n, n, 1,
                 g->dW, n);
        if (a->h0 && len > 0)
            gemm(1, 0, 4 * n, n, 1, 1, dz + t0 * 4 * n, 4 * n,
                 (const real *)a->h0 + (int64_t)seg * 2 * n, n, 1, g->dW, n);
    }
}

void cpu_lstm_step(const LstmArgs *a) {
    const Seqs *s = a->s;
    int n = a->n;
    real *st = a->state;
    for (int64_t r = 0; r < s->ntok; r++) {
        real *x = st + r * 2 * n, *h = (real *)a->h + r * n, *c = (real *)a->c + r * n;
        int first = s->pos[r] == 0;
        lstm_cell(a, first ? NULL : x, first ? NULL : x + n, (const real *)a->z + r * 4 * n,
                  (real *)a->gates + r * 4 * n, c, h);
        memcpy(x, h, sizeof(real) * (size_t)n);
        memcpy(x + n, c, sizeof(real) * (size_t)n);
    }
}
