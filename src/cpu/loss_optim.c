/* Cross-entropy with its fused gradient, and the optimizer primitives (docs/models.md §7). */
#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/error.h"

double cpu_cross_entropy(void *logits_, const int32_t *labels, int64_t N, int V, double grad_scale) {
    real *logits = logits_;
    double *part = par_partials();
#pragma omp parallel
    {
        double *total = part + par_thread();
#pragma omp for schedule(static)
        for (int64_t n = 0; n < N; n++) {
            real *x = logits + n * V;
            int32_t y = labels[n];
            if (y == -100) {
                if (grad_scale != 0)
                    for (int j = 0; j < V; j++) x[j] = 0;
                continue;
            }
            RT_ASSERT(y >= 0 && y < V);
            real mx = x[0];
            for (int j = 1; j < V; j++) mx = maxr(mx, x[j]);
            real xy = x[y];
            if (grad_scale == 0) {
                double sum = 0;
                for (int j = 0; j < V; j++) sum += (double)exp(x[j] - mx);
                *total += (double)mx + log(sum) - (double)xy;
                continue;
            }
            /* one exp per logit: x <- exp(x - max), then scale by 1/sum */
            double sum = 0;
#pragma omp simd reduction(+ : sum)
            for (int j = 0; j < V; j++) {
                x[j] = exp(x[j] - mx);
                sum += (double)x[j];
            }
            *total += (double)mx + log(sum) - (double)xy;
            real k = (real)((double)grad_scale / sum);
#pragma omp simd
            for (int j = 0; j < V; j++) x[j] *= k;
            x[y] -= (real)grad_scale;
        }
    }
    return par_sum(part);
}

void cpu_token_logprobs(const void *logits_, const int32_t *labels, int64_t N, int V, void *logp_,
                        uint8_t *is_argmax) {
    const real *logits = logits_;
    real *logp = logp_;
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; n++) {
        const real *x = logits + n * V;
        int32_t y = labels[n];
        if (y == -100) {
            logp[n] = 0;
            is_argmax[n] = 1;
            continue;
        }
        RT_ASSERT(y >= 0 && y < V);
        int arg = 0; /* the first maximum, as torch.argmax */
        for (int j = 1; j < V; j++)
            if (x[j] > x[arg]) arg = j;
        double sum = 0;
        for (int j = 0; j < V; j++) sum += (double)exp(x[j] - x[arg]);
        logp[n] = (real)((double)x[y] - (double)x[arg] - log(sum));
        is_argmax[n] = arg == y;
    }
}

double cpu_sumsq(const void *x_, int64_t n) {
    const real *x = x_;
    double *part = par_partials();
#pragma omp parallel
    {
        double acc = 0;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++) acc += (double)x[i] * (double)x[i];
        part[par_thread()] = acc;
    }
    return par_sum(part);
}

double cpu_l2_penalty(void *g_, const void *w_, int64_t n, double target, double coef) {
    const real *w = w_;
    real *g = g_;
    double sum = 0; /* a handful of small tensors: one thread, in order */
    for (int64_t i = 0; i < n; i++) {
        double e = (double)w[i] - target;
        sum += e * e;
        if (g) g[i] += (real)(2 * coef * e);
    }
    return coef * sum;
}

void cpu_scale(void *x_, int64_t n, double s) {
    real *x = x_;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) x[i] *= (real)s;
}

/* Decoupled weight decay as torch.optim.AdamW: w <- w - lr (wd w + m^/(sqrt(v^) + eps)). */
void cpu_adamw(void *w_, void *w_act_, void *m_, void *v_, const void *g_, int64_t n, double lr,
               double beta1, double beta2, double eps, double weight_decay, int64_t t) {
    real *w = w_, *w_act = w_act_, *m = m_, *v = v_;
    const real *g = g_;
    double bc1 = 1.0 - pow((double)beta1, (double)t), bc2 = 1.0 - pow((double)beta2, (double)t);
    real step = (real)(lr / bc1), rbc2 = (real)(1.0 / sqrt(bc2));
    real b1 = beta1, b2 = beta2, decay = (real)lr * (real)weight_decay;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        real gi = g[i];
        m[i] = b1 * m[i] + ((real)1 - b1) * gi;
        v[i] = b2 * v[i] + ((real)1 - b2) * gi * gi;
        w[i] -= decay * w[i] + step * m[i] / (sqrt(v[i]) * rbc2 + (real)eps);
        if (w_act) w_act[i] = w[i];
    }
}

/* torch.optim.RMSprop (no momentum, not centered): the weight decay is added to the gradient,
 * g' = g + wd w; s <- alpha s + (1 - alpha) g'^2; w <- w - lr g' / (sqrt(s) + eps). */
void cpu_rmsprop_update(void *w_, void *w_act_, void *sq_, const void *g_, int64_t n, double lr, double alpha,
                        double eps, double weight_decay) {
    real *w = w_, *w_act = w_act_, *sq = sq_;
    const real *g = g_;
    real a = (real)alpha, a1 = (real)(1 - alpha), step = (real)lr, e = (real)eps, wd = (real)weight_decay;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        real gi = g[i] + wd * w[i];
        sq[i] = a * sq[i] + a1 * gi * gi;
        w[i] -= step * gi / (sqrt(sq[i]) + e);
        if (w_act) w_act[i] = w[i];
    }
}
