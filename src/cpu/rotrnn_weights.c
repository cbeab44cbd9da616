/* RotRNN's weights in the basis of its rotations (docs/models.md §rotrnn; RotWeights in
 * src/backend_ops.h): per head h, with gamma = exp(-exp(gamma_log)) and
 * xi = sqrt((1 - gamma^2) / ||B_h||_F^2), the input matrix xi P^T B_h, the output matrix
 * C_h P, and the eigenvalues gamma e^{i theta} of the rotation blocks.
 *
 * Backward, with Bw_h = xi P^T B_h and Cw_h = C_h P:
 *   dxi = <dBw_h, P^T B_h>,  dP = xi B_h dBw_h^T + C_h^T dCw_h (+ C2_h^T dCw2_h,
 * §block-dropout-bidirectional), dB_h += xi P dBw_h - (dxi xi / ||B_h||^2) B_h,  dC_h += dCw_h P^T,
 *   dgamma_log += sum_i dloga_i loga + dxi dxi/dgamma_log, with
 *   dxi/dgamma_log = -xi gamma^2 loga / (1 - gamma^2) (loga = -exp(gamma_log) = log gamma). */
#include "cpu/cpu_ops.h"

/* out = Cw [d, H n]: the columns of head h = C_h P_h (in = C, C_h its n columns); with `bwd`,
 * its backward in C instead: out = dC += dCw_h P_h^T (in = dCw). */
static void head_readout(real *out, const real *in, const real *P, int H, int n, int d, int bwd) {
    int Nn = H * n;
#pragma omp parallel for schedule(static)
    for (int e = 0; e < d; e++)
        for (int r = 0; r < Nn; r++) {
            int h = r / n, m = r % n; /* the column j of Cw_h, or i of dC_h */
            const real *Ph = P + (int64_t)h * n * n, *ie = in + (int64_t)e * Nn + h * n;
            double acc = 0;
            for (int k = 0; k < n; k++)
                acc += (double)ie[k] * (bwd ? Ph[m * n + k] : Ph[k * n + m]);
            real *o = out + (int64_t)e * Nn + r;
            *o = bwd ? *o + (real)acc : (real)acc;
        }
}

/* 1 - gamma^2 for gamma = exp(-exp(gl)), without cancellation. */
static double one_minus_gamma2(double gl) { return -expm1(-2 * exp(gl)); }

void cpu_rotrnn_weights_fwd(const RotWeights *w) {
    int H = w->H, n = w->n, d = w->d, P2 = n / 2, Nn = H * n;
    const real *P = w->P, *gl = w->gamma_log, *th = w->theta, *B = w->B, *C = w->C;
    real *xi = w->xi, *loga = w->loga, *angle = w->angle, *Bw = w->Bw, *Cw = w->Cw;
    for (int h = 0; h < H; h++) {
        const real *Bh = B + (int64_t)h * n * d;
        double T = 0;
        for (int64_t i = 0; i < (int64_t)n * d; i++) T += (double)Bh[i] * Bh[i];
        xi[h] = (real)sqrt(one_minus_gamma2(gl[h]) / T);
        for (int i = 0; i < P2; i++) {
            loga[h * P2 + i] = -exp(gl[h]);
            angle[h * P2 + i] = th[h * P2 + i];
        }
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < Nn; r++) { /* row r = (h, j) of Bw */
        int h = r / n, j = r % n;
        const real *Ph = P + (int64_t)h * n * n, *Bh = B + (int64_t)h * n * d;
        for (int e = 0; e < d; e++) {
            double acc = 0;
            for (int i = 0; i < n; i++) acc += (double)Ph[i * n + j] * Bh[(int64_t)i * d + e];
            Bw[(int64_t)r * d + e] = (real)(xi[h] * acc);
        }
    }
    head_readout(Cw, C, P, H, n, d, 0);
    if (w->Cw2) head_readout(w->Cw2, w->C2, P, H, n, d, 0);
}

void cpu_rotrnn_weights_bwd(const RotWeightGrads *g) {
    const RotWeights *w = &g->w;
    int H = w->H, n = w->n, d = w->d, P2 = n / 2, Nn = H * n;
    const real *P = w->P, *gl = w->gamma_log, *B = w->B, *C = w->C, *xi = w->xi;
    const real *dloga = g->dloga, *dangle = g->dangle, *dBw = g->dBw, *dCw = g->dCw;
    const real *C2 = w->Cw2 ? w->C2 : NULL, *dCw2 = g->dCw2;
    real *dP = g->dP, *dxi = g->dxi, *dgl = g->dgamma_log, *dth = g->dtheta, *dB = g->dB,
         *dC = g->dC;
#pragma omp parallel for schedule(static)
    for (int h = 0; h < H; h++) {
        const real *Ph = P + (int64_t)h * n * n, *Bh = B + (int64_t)h * n * d;
        const real *dBh = dBw + (int64_t)h * n * d;
        double dx = 0, T = 0;
        for (int j = 0; j < n; j++)
            for (int e = 0; e < d; e++) {
                double pb = 0;
                for (int i = 0; i < n; i++) pb += (double)Ph[i * n + j] * Bh[(int64_t)i * d + e];
                dx += pb * dBh[(int64_t)j * d + e];
            }
        for (int64_t i = 0; i < (int64_t)n * d; i++) T += (double)Bh[i] * Bh[i];
        dxi[h] = (real)dx;
        double lg = -exp((double)gl[h]), om = one_minus_gamma2(gl[h]), dl = 0;
        for (int i = 0; i < P2; i++) {
            dl += dloga[h * P2 + i];
            dth[h * P2 + i] += dangle[h * P2 + i];
        }
        /* gamma^2 = exp(2 loga) = 1 - om */
        dgl[h] += (real)(dl * lg - dx * xi[h] * (1 - om) * lg / om);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int e = 0; e < d; e++) {
                    int64_t ci = (int64_t)e * Nn + h * n + i, cj = (int64_t)e * Nn + h * n + j;
                    acc += (double)xi[h] * Bh[(int64_t)i * d + e] * dBh[(int64_t)j * d + e] +
                           (double)C[ci] * dCw[cj];
                    if (C2) acc += (double)C2[ci] * dCw2[cj];
                }
                dP[(int64_t)h * n * n + i * n + j] = (real)acc;
            }
        double shrink = dx * xi[h] / T;
        for (int i = 0; i < n; i++)
            for (int e = 0; e < d; e++) {
                double acc = 0;
                for (int j = 0; j < n; j++) acc += (double)Ph[i * n + j] * dBh[(int64_t)j * d + e];
                dB[(int64_t)h * n * d + (int64_t)i * d + e] +=
                    (real)(xi[h] * acc - shrink * Bh[(int64_t)i * d + e]);
            }
    }
    head_readout(dC, dCw, P, H, n, d, 1);
    if (w->Cw2) head_readout(g->dC2, g->dCw2, P, H, n, d, 1);
}
