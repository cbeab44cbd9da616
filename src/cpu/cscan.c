/* The complex diagonal scan of the LRU and RotRNN (docs/models.md §lru, §rotrnn; CScanArgs in
 * src/backend_ops.h), in the chunked form the CUDA kernels also take:
 *   1. every chunk of every segment runs h_t = lambda h_{t-1} + x_t from zero and keeps its
 *      last state;
 *   2. each segment carries the chunks forward: h_in(k+1) = lambda^len(k) h_in(k) + last(k),
 *      h_in of its first chunk 0 (lambda^len evaluated as exp(len (loga + i angle)));
 *   3. every chunk runs again from its entering state and writes h.
 * The backward is the same three passes in reverse on G_t = dh_t + conj(lambda) G_{t+1}
 * (dx = G), and the eigenvalue gradient w = sum_t G_t conj(lambda h_{t-1}) (dloga = Re w,
 * dangle = Im w: d(lambda h)/dloga = lambda h, d/dangle = i lambda h) is summed per chunk,
 * then over the chunks in order. tests/naive.c holds the plain sequential recurrence.
 * cscan_step (decoding, docs/models.md §decoding) is one step of the recurrence per row;
 * segment_reverse turns every segment around for the bidirectional scan
 * (§block-dropout-bidirectional). */
#include <string.h>

#include "cpu/chunks.h"
#include "util/error.h"

/* lambda_c^p = exp(p (loga_c + i angle_c)) as (re, im). */
static inline void eig_pow(real *re, real *im, real loga, real angle, double p) {
    double m = exp(p * (double)loga), a = p * (double)angle;
    *re = (real)(m * cos(a));
    *im = (real)(m * sin(a));
}

/* lambda as (re, im) pairs [2C], malloc'd. */
static real *eigenvalues(const real *loga, const real *angle, int C) {
    real *lam = rt_malloc(sizeof(real) * 2 * (size_t)C);
    for (int c = 0; c < C; c++) eig_pow(&lam[2 * c], &lam[2 * c + 1], loga[c], angle[c], 1);
    return lam;
}

/* z <- w z + (xr, xi), complex. */
static inline void cmadd(real *zr, real *zi, real wr, real wi, real xr, real xi) {
    real r = wr * *zr - wi * *zi + xr, i = wr * *zi + wi * *zr + xi;
    *zr = r;
    *zi = i;
}

/* Pass 1: every chunk's scan from zero into st [nk, 2C]: forward on lambda (its last state),
 * or backward on conj(lambda) (the G at its first token). */
static void chunk_scans(real *st, const real *x, const real *lam, const Chunk *ch, int64_t nk,
                        int C, int backward) {
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nk; k++)
        for (int c = 0; c < C; c++) {
            real zr = 0, zi = 0, li = backward ? -lam[2 * c + 1] : lam[2 * c + 1];
            for (int64_t j = 0; j < ch[k].len; j++) {
                int64_t t = backward ? ch[k].first + ch[k].len - 1 - j : ch[k].first + j;
                cmadd(&zr, &zi, lam[2 * c], li, x[t * 2 * C + 2 * c], x[t * 2 * C + 2 * c + 1]);
            }
            st[k * 2 * C + 2 * c] = zr;
            st[k * 2 * C + 2 * c + 1] = zi;
        }
}

/* Pass 2: each segment carries its chunks' results along, replacing st[k] by the state
 * entering chunk k (zero at a segment's first chunk in the scan's direction): forward
 * h_in(k+1) = lambda^len(k) h_in(k) + last(k), backward with conj(lambda) from the right.
 * final [nseg, 2C] (forward only, may be NULL): each segment's last state. */
static void carry_chunks(real *st, real *final, const real *loga, const real *angle,
                         const Chunk *ch, int64_t nk, int C, int backward) {
#pragma omp parallel for schedule(static)
    for (int c = 0; c < C; c++) {
        real zr = 0, zi = 0;
        for (int64_t j = 0; j < nk; j++) {
            int64_t k = backward ? nk - 1 - j : j, step = backward ? -1 : 1;
            if (j > 0 && ch[k].seg != ch[k - step].seg) zr = zi = 0;
            real pr, pi, lr = st[k * 2 * C + 2 * c], li = st[k * 2 * C + 2 * c + 1];
            eig_pow(&pr, &pi, loga[c], angle[c], ch[k].len);
            st[k * 2 * C + 2 * c] = zr;
            st[k * 2 * C + 2 * c + 1] = zi;
            cmadd(&zr, &zi, pr, backward ? -pi : pi, lr, li);
            if (final && (j == nk - 1 || ch[k + step].seg != ch[k].seg)) {
                final[(int64_t)ch[k].seg * 2 * C + 2 * c] = zr;
                final[(int64_t)ch[k].seg * 2 * C + 2 * c + 1] = zi;
            }
        }
    }
}

/* The chunks of a's segments with their entering states in a->states: passes 1 and 2 over
 * the inputs u (x, or dh in reverse for the backward), final as carry_chunks takes it. */
typedef struct {
    Chunk *ch;
    int64_t nk;
    real *lam; /* the eigenvalues (eigenvalues()) */
} ChunkStates;

static ChunkStates chunk_states(const CScanArgs *a, const real *u, real *final, int reverse) {
    ChunkStates cs;
    cs.ch = chunk_list(a->s, &cs.nk);
    cs.lam = eigenvalues(a->loga, a->angle, a->C);
    chunk_scans(a->states, u, cs.lam, cs.ch, cs.nk, a->C, reverse);
    carry_chunks(a->states, final, a->loga, a->angle, cs.ch, cs.nk, a->C, reverse);
    return cs;
}

void cpu_cscan_fwd(const CScanArgs *a) {
    const Seqs *s = a->s;
    int C = a->C;
    const real *x = a->x;
    real *h = a->h, *st = a->states, *final = a->state;
    ChunkStates cs = chunk_states(a, x, final, 0);
    const Chunk *ch = cs.ch;
    const real *lam = cs.lam;
    int64_t nk = cs.nk;
    /* a segment of no tokens has no chunk: its decoding state is zero */
    if (final)
        for (int seg = 0; seg < s->nseg; seg++)
            if (s->cu[seg + 1] == s->cu[seg])
                memset(final + (int64_t)seg * 2 * C, 0, sizeof(real) * 2 * (size_t)C);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nk; k++)
        for (int c = 0; c < C; c++) {
            real zr = st[k * 2 * C + 2 * c], zi = st[k * 2 * C + 2 * c + 1];
            for (int64_t t = ch[k].first; t < ch[k].first + ch[k].len; t++) {
                cmadd(&zr, &zi, lam[2 * c], lam[2 * c + 1], x[t * 2 * C + 2 * c],
                      x[t * 2 * C + 2 * c + 1]);
                h[t * 2 * C + 2 * c] = zr;
                h[t * 2 * C + 2 * c + 1] = zi;
            }
        }
    rt_free(cs.lam);
    rt_free(cs.ch);
}

void cpu_cscan_bwd(const CScanGrads *g) {
    const CScanArgs *a = &g->a;
    const Seqs *s = a->s;
    int C = a->C;
    const real *h = a->h, *dh = g->dh;
    real *dx = g->dx, *st = a->states;
    /* pass 1: G at each chunk's first token from zero after its last; pass 2: the G entering
     * each chunk from the right (zero after a segment's last chunk) */
    ChunkStates cs = chunk_states(a, dh, NULL, 1);
    const Chunk *ch = cs.ch;
    const real *lam = cs.lam;
    int64_t nk = cs.nk;
    /* pass 3: dx, and each chunk's share of w in fp64 */
    double *part = rt_malloc(sizeof(double) * 2 * (size_t)(nk ? nk : 1) * C);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nk; k++)
        for (int c = 0; c < C; c++) {
            real zr = st[k * 2 * C + 2 * c], zi = st[k * 2 * C + 2 * c + 1];
            real lr = lam[2 * c], li = lam[2 * c + 1];
            double wr = 0, wi = 0;
            int64_t start = s->cu[ch[k].seg];
            for (int64_t t = ch[k].first + ch[k].len - 1; t >= ch[k].first; t--) {
                cmadd(&zr, &zi, lr, -li, dh[t * 2 * C + 2 * c], dh[t * 2 * C + 2 * c + 1]);
                dx[t * 2 * C + 2 * c] = zr;
                dx[t * 2 * C + 2 * c + 1] = zi;
                if (t == start) continue;
                real hr = h[(t - 1) * 2 * C + 2 * c], hi = h[(t - 1) * 2 * C + 2 * c + 1];
                real pr = lr * hr - li * hi, pi = lr * hi + li * hr; /* lambda h_{t-1} */
                wr += (double)zr * pr + (double)zi * pi;             /* G conj(p) */
                wi += (double)zi * pr - (double)zr * pi;
            }
            part[(k * C + c) * 2] = wr;
            part[(k * C + c) * 2 + 1] = wi;
        }
    real *dloga = g->dloga, *dangle = g->dangle;
    for (int c = 0; c < C; c++) {
        double wr = 0, wi = 0;
        for (int64_t k = 0; k < nk; k++)
            wr += part[(k * C + c) * 2], wi += part[(k * C + c) * 2 + 1];
        dloga[c] = (g->accumulate ? dloga[c] : 0) + (real)wr;
        dangle[c] = (g->accumulate ? dangle[c] : 0) + (real)wi;
    }
    rt_free(part);
    rt_free(cs.lam);
    rt_free(cs.ch);
}

void cpu_cscan_step(const CScanArgs *a) {
    const Seqs *s = a->s;
    int C = a->C;
    const real *x = a->x;
    real *h = a->h, *st = a->state;
    real *lam = eigenvalues(a->loga, a->angle, C);
    for (int64_t r = 0; r < s->ntok; r++) {
        real *z = st + r * 2 * C;
        if (s->pos[r] == 0) memset(z, 0, sizeof(real) * 2 * (size_t)C);
        for (int c = 0; c < C; c++) {
            cmadd(&z[2 * c], &z[2 * c + 1], lam[2 * c], lam[2 * c + 1], x[r * 2 * C + 2 * c],
                  x[r * 2 * C + 2 * c + 1]);
            h[r * 2 * C + 2 * c] = z[2 * c];
            h[r * 2 * C + 2 * c + 1] = z[2 * c + 1];
        }
    }
    rt_free(lam);
}

void cpu_segment_reverse(void *y_, const void *x_, const Seqs *s, int C, int accumulate) {
    real *y = y_;
    const real *x = x_;
#pragma omp parallel for schedule(static)
    for (int seg = 0; seg < s->nseg; seg++)
        for (int64_t n = s->cu[seg]; n < s->cu[seg + 1]; n++) {
            real *yr = y + n * C;
            const real *xr = x + (s->cu[seg] + s->cu[seg + 1] - 1 - n) * C;
            for (int c = 0; c < C; c++) yr[c] = accumulate ? yr[c] + xr[c] : xr[c];
        }
}
