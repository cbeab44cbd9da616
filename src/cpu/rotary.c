/* Position embeddings (docs/models.md §position-embeddings): RoPE angle tables, the half-split
 * rotation, the Selective RoPE angle scan (bias, phase gate, cumulative sum, temperatures) and its
 * weight-normed per-head projection. */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/error.h"

void cpu_rope_angles(void *angle_, const Seqs *s, int D, double theta) {
    real *angle = angle_;
    int P = D / 2;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < s->ntok; n++)
        for (int j = 0; j < P; j++)
            angle[n * P + j] = (real)((double)s->pos[n] * pow(theta, -2.0 * j / D));
}

static inline int64_t angle_index(int64_t n, int h, int j, int H, int P, int per_head) {
    return per_head ? (n * H + h) * P + j : n * P + j;
}

void cpu_rotate_fwd(void *y_, const void *x_, const void *angle_, int64_t N, int H, int D,
                    int per_head) {
    real *y = y_;
    const real *x = x_, *angle = angle_;
    int P = D / 2;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++)
        for (int h = 0; h < H; h++) {
            const real *xr = x + (n * H + h) * D;
            real *yr = y + (n * H + h) * D;
            for (int j = 0; j < P; j++) {
                real a = angle[angle_index(n, h, j, H, P, per_head)];
                real c = cos(a), sn = sin(a), x0 = xr[j], x1 = xr[j + P];
                yr[j] = x0 * c - x1 * sn;
                yr[j + P] = x0 * sn + x1 * c;
            }
        }
}

void cpu_rotate_bwd(void *dx_, void *dangle_, const void *dy_, const void *x_, const void *angle_,
                    int64_t N, int H, int D, int per_head) {
    real *dx = dx_, *dangle = dangle_;
    const real *dy = dy_, *x = x_, *angle = angle_;
    int P = D / 2;
    RT_ASSERT(!dangle || per_head);
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++)
        for (int h = 0; h < H; h++) {
            const real *xr = x + (n * H + h) * D, *dyr = dy + (n * H + h) * D;
            real *dxr = dx + (n * H + h) * D;
            for (int j = 0; j < P; j++) {
                int64_t ai = angle_index(n, h, j, H, P, per_head);
                real a = angle[ai];
                real c = cos(a), sn = sin(a), x0 = xr[j], x1 = xr[j + P];
                real d0 = dyr[j], d1 = dyr[j + P];
                dxr[j] = d0 * c + d1 * sn;
                dxr[j + P] = -d0 * sn + d1 * c;
                /* y0 = x0 c - x1 s, y1 = x0 s + x1 c  =>  dy/da . dy = d1 y0 - d0 y1 */
                if (dangle) dangle[ai] += d1 * (x0 * c - x1 * sn) - d0 * (x0 * sn + x1 * c);
            }
        }
}

void cpu_selrope_angles_fwd(void *angle_, void *Phi_, const void *phi_, const void *bias_,
                            const void *gate_logit_, const void *temp_, const Seqs *s, int H,
                            int P) {
    real *angle = angle_, *Phi = Phi_;
    const real *phi = phi_, *bias = bias_, *gl = gate_logit_, *temp = temp_;
    int C = H * P;
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int seg = 0; seg < s->nseg; seg++)
        for (int h = 0; h < H; h++) {
            real acc[P];
            memset(acc, 0, sizeof(acc));
            for (int64_t n = s->cu[seg]; n < s->cu[seg + 1]; n++) {
                real gate = gl ? sigmoidr(gl[n * H + h]) : 1;
                for (int j = 0; j < P; j++) {
                    int64_t i = n * C + h * P + j;
                    real inc = phi[i] + (bias ? exp(bias[h * P + j]) : 0);
                    acc[j] += inc * gate;
                    Phi[i] = acc[j];
                    angle[i] = temp[j] * acc[j];
                }
            }
        }
}

void cpu_selrope_angles_bwd(void *dphi_, void *dbias_, void *dgate_logit_, void *dtemp_,
                            void *dangle_, const void *phi_, const void *bias_,
                            const void *gate_logit_, const void *temp_, const void *Phi_,
                            const Seqs *s, int H, int P) {
    real *dphi = dphi_, *dbias = dbias_, *dgl = dgate_logit_, *dtemp = dtemp_;
    const real *dangle = dangle_, *phi = phi_, *bias = bias_, *gl = gate_logit_, *temp = temp_,
               *Phi = Phi_;
    int C = H * P;
    int nthr = par_max_threads();
    /* per-thread partial sums of dbias [C] and dtemp [P] */
    real *partial = rt_calloc((size_t)nthr * (size_t)(C + P), sizeof(real));
#pragma omp parallel
    {
        real *pb = partial + (size_t)par_thread() * (size_t)(C + P), *pt = pb + C;
#pragma omp for collapse(2) schedule(static) /* static: the partials must be reproducible */
        for (int seg = 0; seg < s->nseg; seg++)
            for (int h = 0; h < H; h++) {
                real acc[P];
                memset(acc, 0, sizeof(acc));
                for (int64_t n = s->cu[seg + 1] - 1; n >= s->cu[seg]; n--) {
                    real gate = gl ? sigmoidr(gl[n * H + h]) : 1;
                    real dg = 0;
                    for (int j = 0; j < P; j++) {
                        int64_t i = n * C + h * P + j;
                        pt[j] += dangle[i] * Phi[i];
                        acc[j] += dangle[i] * temp[j]; /* d Phi, reverse-accumulated */
                        real eb = bias ? exp(bias[h * P + j]) : 0;
                        if (dphi) dphi[i] = acc[j] * gate;
                        if (bias) pb[h * P + j] += acc[j] * gate * eb;
                        dg += acc[j] * (phi[i] + eb);
                    }
                    if (dgl) dgl[n * H + h] = dg * gate * ((real)1 - gate);
                }
            }
    }
    for (int t = 0; t < nthr; t++) {
        const real *pb = partial + (size_t)t * (size_t)(C + P);
        if (dbias)
            for (int i = 0; i < C; i++) dbias[i] += pb[i];
        if (dtemp)
            for (int j = 0; j < P; j++) dtemp[j] += pb[C + j];
    }
    rt_free(partial);
}

void cpu_weightnorm_fwd(void *wn_, const void *w_, const void *scale_, int H, int Din, int P) {
    real *wn = wn_;
    const real *w = w_, *sc = scale_;
    for (int h = 0; h < H; h++)
        for (int j = 0; j < P; j++) {
            const real *col = w + (int64_t)h * Din * P + j;
            real ss = 0;
            for (int i = 0; i < Din; i++) ss += col[(int64_t)i * P] * col[(int64_t)i * P];
            real nrm = fmax(sqrt(ss), (real)1e-12);
            for (int i = 0; i < Din; i++)
                wn[(int64_t)h * Din * P + (int64_t)i * P + j] = sc[h] * col[(int64_t)i * P] / nrm;
        }
}

/* wn = s u with u = w/|w| per column: ds = sum dwn.u, dw = s (dwn - u (u.dwn)) / |w| */
void cpu_weightnorm_bwd(void *dw_, void *dscale_, const void *dwn_, const void *w_,
                        const void *scale_, int H, int Din, int P) {
    real *dw = dw_, *dsc = dscale_;
    const real *dwn = dwn_, *w = w_, *sc = scale_;
    for (int h = 0; h < H; h++)
        for (int j = 0; j < P; j++) {
            int64_t base = (int64_t)h * Din * P + j;
            real ss = 0;
            for (int i = 0; i < Din; i++) ss += w[base + (int64_t)i * P] * w[base + (int64_t)i * P];
            real nrm = fmax(sqrt(ss), (real)1e-12);
            real udot = 0;
            for (int i = 0; i < Din; i++)
                udot += w[base + (int64_t)i * P] / nrm * dwn[base + (int64_t)i * P];
            dsc[h] += udot;
            for (int i = 0; i < Din; i++) {
                int64_t idx = base + (int64_t)i * P;
                dw[idx] += sc[h] * (dwn[idx] - w[idx] / nrm * udot) / nrm;
            }
        }
}

void cpu_head_matmul_fwd(void *out_, const void *x_, const void *w_, int64_t N, int H, int Din,
                         int P) {
    real *out = out_;
    const real *x = x_, *w = w_;
    for (int h = 0; h < H; h++)
        gemm(0, 0, (int)N, P, Din, 1, x + (int64_t)h * Din, H * Din, w + (int64_t)h * Din * P, P, 0,
             out + (int64_t)h * P, H * P);
}

void cpu_head_matmul_bwd(void *dx_, void *dw_, const void *dout_, const void *x_, const void *w_,
                         int64_t N, int H, int Din, int P, int accumulate) {
    real *dx = dx_, *dw = dw_;
    const real *dout = dout_, *x = x_, *w = w_;
    for (int h = 0; h < H; h++) {
        gemm(0, 1, (int)N, Din, P, 1, dout + (int64_t)h * P, H * P, w + (int64_t)h * Din * P, P,
             accumulate ? 1 : 0, dx + (int64_t)h * Din, H * Din);
        gemm(1, 0, Din, P, (int)N, 1, x + (int64_t)h * Din, H * Din, dout + (int64_t)h * P, H * P,
             1, dw + (int64_t)h * Din * P, P);
    }
}
