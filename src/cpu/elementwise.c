/* Elementwise activations and gates: output gating / SwiGLU, SiLU, GELU, ReLU and the pair
 * classifier's features (docs/models.md §classification), log-sigmoid gates, the delta rule's beta
 * and the per-head decay of Gated DeltaNet and Mamba2 (§gated-deltanet, §mamba2); dropout
 * (§block-dropout-bidirectional). */
#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/dropout_mask.h"
#include "util/error.h"

/* act(g) and act'(g) of the gates: swish, sigmoid, or none (the plain product) */
static inline real act_value(real g, Activation act) {
    if (act == ACT_NONE) return g;
    return act == ACT_SILU ? g * sigmoidr(g) : sigmoidr(g);
}

static inline real act_deriv(real g, Activation act) {
    if (act == ACT_NONE) return 1;
    real s = sigmoidr(g);
    return act == ACT_SILU ? s * ((real)1 + g * ((real)1 - s)) : s * ((real)1 - s);
}

void cpu_gate_mul_fwd(void *out_, const void *x_, const void *g_, int64_t n, Activation act) {
    real *out = out_;
    const real *x = x_, *g = g_;
    RT_ASSERT(act == ACT_NONE || act == ACT_SILU || act == ACT_SIGMOID);
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * act_value(g[i], act);
}

void cpu_gate_mul_bwd(void *dx_, void *dg_, const void *dout_, const void *x_, const void *g_,
                      int64_t n, Activation act) {
    real *dx = dx_, *dg = dg_;
    const real *dout = dout_, *x = x_, *g = g_;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        real d = dout[i];
        dx[i] = d * act_value(g[i], act);
        dg[i] = d * x[i] * act_deriv(g[i], act);
    }
}

/* gate_mul_fwd's loop, then gate_mul_bwd's: the same bits as the two ops (one fused loop's
 * vectorised sigmoid need not round as theirs do) */
void cpu_gate_mul_bwd_rebuild(void *out, void *dx, void *dg, const void *dout, const void *x,
                              const void *g, int64_t n, Activation act) {
    cpu_gate_mul_fwd(out, x, g, n, act);
    cpu_gate_mul_bwd(dx, dg, dout, x, g, n, act);
}

void cpu_silu_fwd(void *y_, const void *x_, int64_t n) {
    real *y = y_;
    const real *x = x_;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * sigmoidr(x[i]);
}

void cpu_silu_bwd(void *dx_, const void *dy_, const void *x_, int64_t n) {
    real *dx = dx_;
    const real *dy = dy_, *x = x_;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * act_deriv(x[i], ACT_SILU);
}

/* Phi(x), the standard normal's distribution function */
static inline real normal_cdf(real x) { return (real)0.5 * ((real)1 + erf(x * (real)M_SQRT1_2)); }

void cpu_gelu_fwd(void *y_, const void *x_, int64_t n) {
    real *y = y_;
    const real *x = x_;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * normal_cdf(x[i]);
}

void cpu_gelu_bwd(void *dx_, const void *dy_, const void *x_, int64_t n) {
    real *dx = dx_;
    const real *dy = dy_, *x = x_;
    const real inv_sqrt_2pi = (real)0.3989422804014327;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        dx[i] = dy[i] * (normal_cdf(x[i]) + x[i] * inv_sqrt_2pi * exp(-(real)0.5 * x[i] * x[i]));
}

void cpu_relu_fwd(void *y_, const void *x_, int64_t n) {
    real *y = y_;
    const real *x = x_;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0;
}

void cpu_relu_bwd(void *dx_, const void *dy_, const void *x_, int64_t n) {
    real *dx = dx_;
    const real *dy = dy_, *x = x_;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) dx[i] = x[i] > 0 ? dy[i] : 0;
}

void cpu_pair_nli_fwd(void *f_, const void *x_, int64_t P, int d) {
    real *f = f_;
    const real *x = x_;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < P; p++) {
        const real *u = x + 2 * p * d, *v = u + d;
        real *o = f + 4 * p * d;
        for (int j = 0; j < d; j++) {
            o[j] = u[j];
            o[d + j] = v[j];
            o[2 * d + j] = u[j] * v[j];
            o[3 * d + j] = u[j] - v[j];
        }
    }
}

void cpu_pair_nli_bwd(void *dx_, const void *df_, const void *x_, int64_t P, int d) {
    real *dx = dx_;
    const real *df = df_, *x = x_;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < P; p++) {
        const real *u = x + 2 * p * d, *v = u + d, *g = df + 4 * p * d;
        real *du = dx + 2 * p * d, *dv = du + d;
        for (int j = 0; j < d; j++) {
            du[j] = g[j] + v[j] * g[2 * d + j] + g[3 * d + j];
            dv[j] = g[d + j] + u[j] * g[2 * d + j] - g[3 * d + j];
        }
    }
}

void cpu_sigmoid_fwd(void *y_, const void *x_, int64_t n) {
    real *y = y_;
    const real *x = x_;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = sigmoidr(x[i]);
}

void cpu_sigmoid_bwd(void *dx_, const void *dy_, const void *x_, int64_t n) {
    real *dx = dx_;
    const real *dy = dy_, *x = x_;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * act_deriv(x[i], ACT_SIGMOID);
}

void cpu_logsigmoid_fwd(void *y_, const void *x_, int64_t n, double normalizer) {
    real *y = y_;
    const real *x = x_;
    real inv = (real)1 / (real)normalizer;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) y[i] = logsigmoidr(x[i]) * inv;
}

/* d/dx logsigmoid(x) = sigmoid(-x) */
void cpu_logsigmoid_bwd(void *dx_, const void *dy_, const void *x_, int64_t n, double normalizer) {
    real *dx = dx_;
    const real *dy = dy_, *x = x_;
    real inv = (real)1 / (real)normalizer;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] * sigmoidr(-x[i]) * inv;
}

/* docs/models.md §gated-deltanet, §mamba2: dt = softplus(dt_raw + dt_bias), g = -exp(A_log) dt. */
void cpu_decay_gates_fwd(void *dt_, void *g_, const void *dt_raw_, const void *A_log_,
                         const void *dt_bias_, int64_t N, int H) {
    real *dt = dt_, *g = g_;
    const real *dt_raw = dt_raw_, *A_log = A_log_, *dt_bias = dt_bias_;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++)
        for (int h = 0; h < H; h++) {
            int64_t i = n * H + h;
            real d = softplusr(dt_raw[i] + dt_bias[h]);
            if (dt) dt[i] = d;
            g[i] = -exp(A_log[h]) * d;
        }
}

void cpu_decay_gates_bwd(void *ddt_raw_, void *dA_log_, void *ddt_bias_, const void *ddt_,
                         const void *dg_, const void *dt_raw_, const void *A_log_,
                         const void *dt_bias_, int64_t N, int H) {
    real *ddt_raw = ddt_raw_, *dA_log = dA_log_, *ddt_bias = ddt_bias_;
    const real *ddt = ddt_, *dg = dg_, *dt_raw = dt_raw_, *A_log = A_log_, *dt_bias = dt_bias_;
    /* H is small: one pass per head, the per-head sums reduced deterministically */
    for (int h = 0; h < H; h++) {
        real A = exp(A_log[h]);
        double *pA = par_partials(), *pdt = par_partials();
#pragma omp parallel
        {
            double sA = 0, sdt = 0;
#pragma omp for schedule(static)
            for (int64_t n = 0; n < N; n++) {
                int64_t i = n * H + h;
                real z = dt_raw[i] + dt_bias[h];
                /* g = -A dt: dg/dA_log = -A dt, d/d dt = ddt - A dg; d dt/dz = sigmoid(z) */
                sA += (double)(dg[i] * -A * softplusr(z));
                real dz = ((ddt ? ddt[i] : 0) - A * dg[i]) * sigmoidr(z);
                ddt_raw[i] = dz;
                sdt += (double)dz;
            }
            pA[par_thread()] = sA;
            pdt[par_thread()] = sdt;
        }
        dA_log[h] += (real)par_sum(pA);
        ddt_bias[h] += (real)par_sum(pdt);
    }
}

void cpu_dropout(void *y_, const void *x_, int64_t N, int C, int T, uint64_t key, double p) {
    real *y = y_;
    const real *x = x_;
    uint32_t thr = dropout_threshold(p);
    real scale = (real)(1 / (1 - p));
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        uint64_t base = (uint64_t)(T ? n / T : n) * (uint64_t)C;
        for (int c = 0; c < C; c++) {
            int64_t i = n * C + c;
            y[i] = dropout_keep(key, base + (uint64_t)c, thr) ? x[i] * scale : 0;
        }
    }
}
