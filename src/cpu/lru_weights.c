/* The LRU's weights from its parameters (docs/models.md §lru; LruWeights in src/backend_ops.h):
 * the eigenvalues' log modulus and angle, the normalised input matrix gamma (B_re + i B_im)
 * as interleaved real rows, and the readout Re(C h) as a real matrix over interleaved pairs
 * (and the reverse scan's readout, §block-dropout-bidirectional). */
#include "cpu/cpu_ops.h"

/* Cw [d, 2N]: columns 2c, 2c+1 = (C_re[:, c], -C_im[:, c]), so Re(C h) = h Cw^T. */
static void pair_readout(real *Cw, const real *Cr, const real *Ci, int N, int d) {
#pragma omp parallel for schedule(static)
    for (int e = 0; e < d; e++)
        for (int c = 0; c < N; c++) {
            Cw[(int64_t)e * 2 * N + 2 * c] = Cr[(int64_t)e * N + c];
            Cw[(int64_t)e * 2 * N + 2 * c + 1] = -Ci[(int64_t)e * N + c];
        }
}

/* Its backward: dC_re, dC_im accumulate. */
static void pair_readout_bwd(real *dCr, real *dCi, const real *dCw, int N, int d) {
#pragma omp parallel for schedule(static)
    for (int e = 0; e < d; e++)
        for (int c = 0; c < N; c++) {
            dCr[(int64_t)e * N + c] += dCw[(int64_t)e * 2 * N + 2 * c];
            dCi[(int64_t)e * N + c] -= dCw[(int64_t)e * 2 * N + 2 * c + 1];
        }
}

void cpu_lru_weights_fwd(const LruWeights *w) {
    int N = w->N, d = w->d;
    const real *nu = w->nu_log, *th = w->theta_log, *gl = w->gamma_log;
    const real *Br = w->B_re, *Bi = w->B_im;
    real *loga = w->loga, *angle = w->angle, *Bw = w->Bw;
    for (int c = 0; c < N; c++) {
        loga[c] = -exp(nu[c]);
        angle[c] = exp(th[c]);
    }
#pragma omp parallel for schedule(static)
    for (int c = 0; c < N; c++) {
        real g = exp(gl[c]);
        for (int e = 0; e < d; e++) {
            Bw[(int64_t)2 * c * d + e] = g * Br[(int64_t)c * d + e];
            Bw[(int64_t)(2 * c + 1) * d + e] = g * Bi[(int64_t)c * d + e];
        }
    }
    pair_readout(w->Cw, w->C_re, w->C_im, N, d);
    if (w->Cw2) pair_readout(w->Cw2, w->C_re2, w->C_im2, N, d);
}

void cpu_lru_weights_bwd(const LruWeightGrads *g) {
    const LruWeights *w = &g->w;
    int N = w->N, d = w->d;
    const real *loga = w->loga, *angle = w->angle, *gl = w->gamma_log;
    const real *Br = w->B_re, *Bi = w->B_im;
    const real *dloga = g->dloga, *dangle = g->dangle, *dBw = g->dBw;
    real *dnu = g->dnu_log, *dth = g->dtheta_log, *dgl = g->dgamma_log;
    real *dBr = g->dB_re, *dBi = g->dB_im;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < N; c++) {
        /* loga = -exp(nu_log), angle = exp(theta_log): each is its own derivative */
        dnu[c] += dloga[c] * loga[c];
        dth[c] += dangle[c] * angle[c];
        real gm = exp(gl[c]);
        double acc = 0;
        for (int e = 0; e < d; e++) {
            real gr = dBw[(int64_t)2 * c * d + e], gi = dBw[(int64_t)(2 * c + 1) * d + e];
            dBr[(int64_t)c * d + e] += gm * gr;
            dBi[(int64_t)c * d + e] += gm * gi;
            acc += (double)gr * Br[(int64_t)c * d + e] + (double)gi * Bi[(int64_t)c * d + e];
        }
        dgl[c] += (real)(acc * gm);
    }
    pair_readout_bwd(g->dC_re, g->dC_im, g->dCw, N, d);
    if (w->Cw2) pair_readout_bwd(g->dC_re2, g->dC_im2, g->dCw2, N, d);
}
