#include "naive.h"

#include <complex.h>
#include <math.h>
#include <string.h>

#include "util/error.h"

#define IDX(n, h, d, H, D) ((((int64_t)(n)) * (H) + (h)) * (D) + (d))

/* The readout o_t = scale S_t^T q_t backwards at one token of one head (q, dq: K values;
 * dout: V; St, dS: K x V): dq = scale St dout, and dS += scale q dout^T. */
static void readout_bwd(real *dq, double *dS, const double *St, const real *q, const real *dout,
                        int K, int V, double scale) {
    for (int i = 0; i < K; i++) {
        double acc = 0;
        for (int j = 0; j < V; j++) {
            acc += St[i * V + j] * (double)dout[j];
            dS[i * V + j] += scale * (double)q[i] * (double)dout[j];
        }
        dq[i] = (real)(acc * scale);
    }
}

/* The number of tokens of the longest segment. */
static int64_t longest_segment(const Seqs *s) {
    int64_t len = 0;
    for (int seg = 0; seg < s->nseg; seg++)
        if (s->cu[seg + 1] - s->cu[seg] > len) len = s->cu[seg + 1] - s->cu[seg];
    return len;
}

/* GLA: S_t = Diag(a_t) S_{t-1} + k_t^T v_t, o_t = scale q_t S_t (docs/models.md §gla). */
void naive_gla_fwd(real *o, const real *q, const real *k, const real *v, const real *g,
                   const Seqs *s, int H, int K, int V, double scale) {
    double *S = rt_malloc(sizeof(double) * K * V);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int h = 0; h < H; h++) {
            memset(S, 0, sizeof(double) * K * V);
            for (int64_t n = s->cu[seg]; n < s->cu[seg + 1]; n++) {
                for (int i = 0; i < K; i++) {
                    double a = exp((double)g[IDX(n, h, i, H, K)]);
                    for (int j = 0; j < V; j++)
                        S[i * V + j] = a * S[i * V + j] + (double)k[IDX(n, h, i, H, K)] *
                                                              (double)v[IDX(n, h, j, H, V)];
                }
                for (int j = 0; j < V; j++) {
                    double acc = 0;
                    for (int i = 0; i < K; i++) acc += (double)q[IDX(n, h, i, H, K)] * S[i * V + j];
                    o[IDX(n, h, j, H, V)] = (real)(acc * scale);
                }
            }
        }
    rt_free(S);
}

void naive_gla_bwd(real *dq, real *dk, real *dv, real *dg, const real *dout, const real *q,
                   const real *k, const real *v, const real *g, const Seqs *s, int H, int K, int V,
                   double scale) {
    /* S[t+1] after token t */
    double *S = rt_malloc(sizeof(double) * (size_t)(longest_segment(s) + 1) * K * V);
    double *dS = rt_malloc(sizeof(double) * K * V);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int h = 0; h < H; h++) {
            int64_t n0 = s->cu[seg], len = s->cu[seg + 1] - n0;
            memset(S, 0, sizeof(double) * K * V);
            for (int64_t t = 0; t < len; t++)
                for (int i = 0; i < K; i++) {
                    double a = exp((double)g[IDX(n0 + t, h, i, H, K)]);
                    for (int j = 0; j < V; j++)
                        S[(t + 1) * K * V + i * V + j] =
                            a * S[t * K * V + i * V + j] +
                            (double)k[IDX(n0 + t, h, i, H, K)] * (double)v[IDX(n0 + t, h, j, H, V)];
                }
            memset(dS, 0, sizeof(double) * K * V);
            for (int64_t t = len - 1; t >= 0; t--) {
                int64_t n = n0 + t;
                const double *St = S + (t + 1) * K * V, *Sp = S + t * K * V;
                readout_bwd(dq + IDX(n, h, 0, H, K), dS, St, q + IDX(n, h, 0, H, K),
                            dout + IDX(n, h, 0, H, V), K, V, scale);
                for (int i = 0; i < K; i++) {
                    double acc = 0, da = 0, a = exp((double)g[IDX(n, h, i, H, K)]);
                    for (int j = 0; j < V; j++) {
                        acc += dS[i * V + j] * (double)v[IDX(n, h, j, H, V)];
                        da += dS[i * V + j] * Sp[i * V + j];
                    }
                    dk[IDX(n, h, i, H, K)] = (real)acc;
                    dg[IDX(n, h, i, H, K)] = (real)(da * a);
                }
                for (int j = 0; j < V; j++) {
                    double acc = 0;
                    for (int i = 0; i < K; i++)
                        acc += dS[i * V + j] * (double)k[IDX(n, h, i, H, K)];
                    dv[IDX(n, h, j, H, V)] = (real)acc;
                }
                for (int i = 0; i < K; i++) {
                    double a = exp((double)g[IDX(n, h, i, H, K)]);
                    for (int j = 0; j < V; j++) dS[i * V + j] *= a;
                }
            }
        }
    rt_free(S);
    rt_free(dS);
}

/* GDN: S_t = e^{g_t} (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T, o_t = scale S_t^T q_t.
 * g == NULL: no decay (DeltaNet), and dg is not written. */
static void gdn_step(double *Sn, const double *Sp, const double *kk, const double *vv, double b,
                     double eg, int K, int V) {
    for (int j = 0; j < V; j++) {
        double kS = 0;
        for (int i = 0; i < K; i++) kS += kk[i] * Sp[i * V + j];
        for (int i = 0; i < K; i++)
            Sn[i * V + j] = eg * (Sp[i * V + j] - b * kk[i] * kS) + b * kk[i] * vv[j];
    }
}

static double decay(const real *g, int64_t i) { return g ? exp((double)g[i]) : 1.0; }

static void load_vec(double *dst, const real *src, int n) {
    for (int i = 0; i < n; i++) dst[i] = (double)src[i];
}

void naive_gdn_fwd(real *o, const real *q, const real *k, const real *v, const real *beta,
                   const real *g, const Seqs *s, int H, int K, int V, double scale) {
    double *S = rt_malloc(sizeof(double) * K * V), *S2 = rt_malloc(sizeof(double) * K * V);
    double *kk = rt_malloc(sizeof(double) * K), *vv = rt_malloc(sizeof(double) * V);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int h = 0; h < H; h++) {
            memset(S, 0, sizeof(double) * K * V);
            for (int64_t n = s->cu[seg]; n < s->cu[seg + 1]; n++) {
                load_vec(kk, k + IDX(n, h, 0, H, K), K);
                load_vec(vv, v + IDX(n, h, 0, H, V), V);
                gdn_step(S2, S, kk, vv, (double)beta[n * H + h], decay(g, n * H + h), K, V);
                memcpy(S, S2, sizeof(double) * K * V);
                for (int j = 0; j < V; j++) {
                    double acc = 0;
                    for (int i = 0; i < K; i++) acc += S[i * V + j] * (double)q[IDX(n, h, i, H, K)];
                    o[IDX(n, h, j, H, V)] = (real)(acc * scale);
                }
            }
        }
    rt_free(S);
    rt_free(S2);
    rt_free(kk);
    rt_free(vv);
}

void naive_gdn_bwd(real *dq, real *dk, real *dv, real *dbeta, real *dg, const real *dout,
                   const real *q, const real *k, const real *v, const real *beta, const real *g,
                   const Seqs *s, int H, int K, int V, double scale) {
    double *S = rt_malloc(sizeof(double) * (size_t)(longest_segment(s) + 1) * K * V);
    double *dS = rt_malloc(sizeof(double) * K * V), *dSp = rt_malloc(sizeof(double) * K * V);
    double *kk = rt_malloc(sizeof(double) * K), *vv = rt_malloc(sizeof(double) * V);
    double *kdS = rt_malloc(sizeof(double) * V), *kSp = rt_malloc(sizeof(double) * V);
    for (int seg = 0; seg < s->nseg; seg++)
        for (int h = 0; h < H; h++) {
            int64_t n0 = s->cu[seg], len = s->cu[seg + 1] - n0;
            memset(S, 0, sizeof(double) * K * V);
            for (int64_t t = 0; t < len; t++) {
                load_vec(kk, k + IDX(n0 + t, h, 0, H, K), K);
                load_vec(vv, v + IDX(n0 + t, h, 0, H, V), V);
                gdn_step(S + (t + 1) * K * V, S + t * K * V, kk, vv, (double)beta[(n0 + t) * H + h],
                         decay(g, (n0 + t) * H + h), K, V);
            }
            memset(dS, 0, sizeof(double) * K * V);
            for (int64_t t = len - 1; t >= 0; t--) {
                int64_t n = n0 + t;
                const double *St = S + (t + 1) * K * V, *Sp = S + t * K * V;
                double b = (double)beta[n * H + h], eg = decay(g, n * H + h);
                load_vec(kk, k + IDX(n, h, 0, H, K), K);
                load_vec(vv, v + IDX(n, h, 0, H, V), V);
                readout_bwd(dq + IDX(n, h, 0, H, K), dS, St, q + IDX(n, h, 0, H, K),
                            dout + IDX(n, h, 0, H, V), K, V, scale);
                /* S_t = eg Sp - eg b k (k^T Sp) + b k v^T */
                for (int j = 0; j < V; j++) {
                    double a = 0, c = 0;
                    for (int i = 0; i < K; i++) {
                        a += kk[i] * dS[i * V + j];
                        c += kk[i] * Sp[i * V + j];
                    }
                    kdS[j] = a;
                    kSp[j] = c;
                }
                double db = 0, dgt = 0;
                for (int j = 0; j < V; j++) db += kdS[j] * (vv[j] - eg * kSp[j]);
                for (int i = 0; i < K * V; i++) dgt += dS[i] * St[i];
                for (int j = 0; j < V; j++) {
                    double dvj = 0;
                    for (int i = 0; i < K; i++) dvj += b * kk[i] * dS[i * V + j];
                    dv[IDX(n, h, j, H, V)] = (real)dvj;
                    dgt -= b * kdS[j] * vv[j];
                }
                for (int i = 0; i < K; i++) {
                    double acc = 0;
                    for (int j = 0; j < V; j++)
                        acc += -eg * b * (dS[i * V + j] * kSp[j] + Sp[i * V + j] * kdS[j]) +
                               b * dS[i * V + j] * vv[j];
                    dk[IDX(n, h, i, H, K)] = (real)acc;
                }
                dbeta[n * H + h] = (real)db;
                if (dg) dg[n * H + h] = (real)dgt;
                for (int i = 0; i < K; i++)
                    for (int j = 0; j < V; j++)
                        dSp[i * V + j] = eg * (dS[i * V + j] - b * kk[i] * kdS[j]);
                memcpy(dS, dSp, sizeof(double) * K * V);
            }
        }
    rt_free(S);
    rt_free(dS);
    rt_free(dSp);
    rt_free(kk);
    rt_free(vv);
    rt_free(kdS);
    rt_free(kSp);
}

/* FoX: explicit masked softmax over each segment (docs/models.md §fox). */
static void fox_probs(double *P, const real *q, const real *k, const real *logf, int64_t n0,
                      int64_t len, int h, int H, int D, double scale) {
    double *c = rt_malloc(sizeof(double) * (size_t)len);
    double run = 0;
    for (int64_t t = 0; t < len; t++) c[t] = run += logf ? (double)logf[(n0 + t) * H + h] : 0;
    for (int64_t i = 0; i < len; i++) {
        double mx = -INFINITY;
        for (int64_t j = 0; j <= i; j++) {
            double sc = 0;
            for (int d = 0; d < D; d++)
                sc += (double)q[IDX(n0 + i, h, d, H, D)] * (double)k[IDX(n0 + j, h, d, H, D)];
            sc = sc * scale + c[i] - c[j];
            P[i * len + j] = sc;
            if (sc > mx) mx = sc;
        }
        double sum = 0;
        for (int64_t j = 0; j <= i; j++) sum += P[i * len + j] = exp(P[i * len + j] - mx);
        for (int64_t j = 0; j < len; j++) P[i * len + j] = j <= i ? P[i * len + j] / sum : 0;
    }
    rt_free(c);
}

void naive_fox_fwd(real *o, const real *q, const real *k, const real *v, const real *logf,
                   const Seqs *s, int H, int D, double scale) {
    for (int seg = 0; seg < s->nseg; seg++)
        for (int h = 0; h < H; h++) {
            int64_t n0 = s->cu[seg], len = s->cu[seg + 1] - n0;
            double *P = rt_malloc(sizeof(double) * (size_t)(len * len));
            fox_probs(P, q, k, logf, n0, len, h, H, D, scale);
            for (int64_t i = 0; i < len; i++)
                for (int d = 0; d < D; d++) {
                    double acc = 0;
                    for (int64_t j = 0; j <= i; j++)
                        acc += P[i * len + j] * (double)v[IDX(n0 + j, h, d, H, D)];
                    o[IDX(n0 + i, h, d, H, D)] = (real)acc;
                }
            rt_free(P);
        }
}

void naive_fox_bwd(real *dq, real *dk, real *dv, real *dlogf, const real *dout, const real *q,
                   const real *k, const real *v, const real *logf, const Seqs *s, int H, int D,
                   double scale) {
    for (int seg = 0; seg < s->nseg; seg++)
        for (int h = 0; h < H; h++) {
            int64_t n0 = s->cu[seg], len = s->cu[seg + 1] - n0;
            double *P = rt_malloc(sizeof(double) * (size_t)(len * len));
            double *dc = rt_calloc((size_t)len, sizeof(double));
            fox_probs(P, q, k, logf, n0, len, h, H, D, scale);
            for (int64_t t = 0; t < len; t++)
                for (int d = 0; d < D; d++) {
                    dq[IDX(n0 + t, h, d, H, D)] = 0;
                    dk[IDX(n0 + t, h, d, H, D)] = 0;
                    dv[IDX(n0 + t, h, d, H, D)] = 0;
                }
            for (int64_t i = 0; i < len; i++) {
                double *dp = rt_malloc(sizeof(double) * (size_t)(i + 1)), rowdot = 0;
                for (int64_t j = 0; j <= i; j++) {
                    double a = 0;
                    for (int d = 0; d < D; d++) {
                        a += (double)dout[IDX(n0 + i, h, d, H, D)] *
                             (double)v[IDX(n0 + j, h, d, H, D)];
                        dv[IDX(n0 + j, h, d, H, D)] +=
                            (real)(P[i * len + j] * (double)dout[IDX(n0 + i, h, d, H, D)]);
                    }
                    dp[j] = a;
                    rowdot += P[i * len + j] * a;
                }
                for (int64_t j = 0; j <= i; j++) {
                    double ds = P[i * len + j] * (dp[j] - rowdot);
                    dc[i] += ds;
                    dc[j] -= ds;
                    for (int d = 0; d < D; d++) {
                        dq[IDX(n0 + i, h, d, H, D)] +=
                            (real)(scale * ds * (double)k[IDX(n0 + j, h, d, H, D)]);
                        dk[IDX(n0 + j, h, d, H, D)] +=
                            (real)(scale * ds * (double)q[IDX(n0 + i, h, d, H, D)]);
                    }
                }
                rt_free(dp);
            }
            double acc = 0;
            for (int64_t t = len - 1; logf && t >= 0; t--)
                dlogf[(n0 + t) * H + h] = (real)(acc += dc[t]);
            rt_free(P);
            rt_free(dc);
        }
}

/* ---- the LRU / RotRNN scan (docs/models.md §lru, §rotrnn) ---- */

static double complex eig(const real *loga, const real *angle, int c) {
    return cexp((double)loga[c] + I * (double)angle[c]);
}

void naive_cscan_fwd(real *h, const real *x, const real *loga, const real *angle, const Seqs *s,
                     int C) {
    for (int seg = 0; seg < s->nseg; seg++)
        for (int c = 0; c < C; c++) {
            double complex lam = eig(loga, angle, c), z = 0;
            for (int64_t n = s->cu[seg]; n < s->cu[seg + 1]; n++) {
                z = lam * z + ((double)x[n * 2 * C + 2 * c] + I * (double)x[n * 2 * C + 2 * c + 1]);
                h[n * 2 * C + 2 * c] = (real)creal(z);
                h[n * 2 * C + 2 * c + 1] = (real)cimag(z);
            }
        }
}

void naive_cscan_bwd(real *dx, real *dloga, real *dangle, const real *dh, const real *x,
                     const real *loga, const real *angle, const Seqs *s, int C) {
    real *h = rt_malloc(sizeof(real) * (size_t)(s->ntok ? s->ntok : 1) * 2 * C);
    naive_cscan_fwd(h, x, loga, angle, s, C);
    for (int c = 0; c < C; c++) {
        double complex lam = eig(loga, angle, c), w = 0;
        for (int seg = 0; seg < s->nseg; seg++) {
            double complex G = 0;
            for (int64_t n = s->cu[seg + 1] - 1; n >= s->cu[seg]; n--) {
                G = ((double)dh[n * 2 * C + 2 * c] + I * (double)dh[n * 2 * C + 2 * c + 1]) +
                    conj(lam) * G;
                dx[n * 2 * C + 2 * c] = (real)creal(G);
                dx[n * 2 * C + 2 * c + 1] = (real)cimag(G);
                if (n == s->cu[seg]) continue;
                /* h_t = lambda h_{t-1} + x_t: d/dloga = lambda h_{t-1}, d/dangle = i lambda h_{t-1}
                 */
                double complex p = lam * ((double)h[(n - 1) * 2 * C + 2 * c] +
                                          I * (double)h[(n - 1) * 2 * C + 2 * c + 1]);
                w += G * conj(p);
            }
        }
        dloga[c] = (real)creal(w);
        dangle[c] = (real)cimag(w);
    }
    rt_free(h);
}
