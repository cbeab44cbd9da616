/* Cross-entropy with its fused gradient, and the optimizer primitives (docs/models.md
 * §training-recipe). */
#include "cpu/cpu_ops.h"
#include "cpu/parallel.h"
#include "util/error.h"

/* The largest of x[0, V) (logits hold no NaN). */
static real row_max(const real *x, int V) {
    real mx = x[0];
#pragma omp simd reduction(max : mx)
    for (int j = 1; j < V; j++) mx = maxr(mx, x[j]);
    return mx;
}

/* sum_j exp(x[j] - shift) over x[0, V), accumulated in fp64 (the fp32 build's expf is
 * libmvec's SIMD one, cpu/real.h). */
static double row_sum_exp(const real *x, int V, real shift) {
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < V; j++) sum += (double)exp(x[j] - shift);
    return sum;
}

double cpu_cross_entropy(void *logits_, const int32_t *labels, int64_t N, int V,
                         double grad_scale) {
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
            real mx = row_max(x, V);
            real xy = x[y];
            if (grad_scale == 0) {
                *total += (double)mx + log(row_sum_exp(x, V, mx)) - (double)xy;
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
        real mx = row_max(x, V);
        int arg = 0; /* the first maximum, as torch.argmax (none among NaN logits) */
        while (arg < V && x[arg] != mx) arg++;
        logp[n] = (real)((double)x[y] - (double)mx - log(row_sum_exp(x, V, mx)));
        is_argmax[n] = arg == y;
    }
}

/* The k largest of x[0, vocab) into id[0, k) in order, ties to the lower id: an insertion
 * list, with blocks whose largest cannot enter it passed over in one vector reduction. */
static void row_top(const real *x, int vocab, int k, int32_t *id) {
    enum { BLOCK = 128 };
    int have = 0;
    for (int j0 = 0; j0 < vocab; j0 += BLOCK) {
        int j1 = j0 + BLOCK < vocab ? j0 + BLOCK : vocab;
        if (have == k && row_max(x + j0, j1 - j0) <= x[id[k - 1]]) continue;
        for (int j = j0; j < j1; j++) {
            if (have == k && x[j] <= x[id[k - 1]]) continue;
            int at = have < k ? have++ : k - 1;
            for (; at > 0 && x[j] > x[id[at - 1]]; at--) id[at] = id[at - 1];
            id[at] = j;
        }
    }
}

void cpu_logit_scores(const LogitScoresArgs *a) {
    RT_ASSERT(a->k >= 1 && a->k <= a->vocab && a->vocab <= a->V);
    const real *logits = a->logits;
    real *lse = a->lse, *label_lp = a->label_lp, *top_lp = a->top_lp;
#pragma omp parallel for schedule(dynamic, 8)
    for (int64_t n = 0; n < a->N; n++) {
        const real *x = logits + n * a->V;
        int32_t y = a->labels[n], *id = a->top_id + n * a->k;
        RT_ASSERT(y == -100 || (y >= 0 && y < a->V));
        row_top(x, a->vocab, a->k, id);
        real mx = x[id[0]]; /* the top one is the largest, but for the outputs past vocab */
        if (a->vocab < a->V) mx = maxr(mx, row_max(x + a->vocab, a->V - a->vocab));
        double l = (double)mx + log(row_sum_exp(x, a->V, mx));
        lse[n] = (real)l;
        label_lp[n] = y == -100 ? 0 : (real)((double)x[y] - l);
        for (int r = 0; r < a->k; r++) top_lp[n * a->k + r] = (real)((double)x[id[r]] - l);
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

/* Decoupled weight decay as torch.optim.AdamW: w <- w - lr (wd w + m^/(sqrt(v^) + eps)), over
 * run r of a with its gradient multiplied by (real)a->grad_scale, cpu_scale's rounding. */
static void adamw_run(const AdamWRuns *a, const UpdateRun *r) {
    real *w = (real *)a->w + r->offset, *m = (real *)a->m + r->offset,
         *v = (real *)a->v + r->offset;
    real *w_act = a->w_act ? (real *)a->w_act + r->offset : NULL;
    const real *g = (const real *)a->g + r->offset;
    int64_t n = r->n;
    double bc1 = 1.0 - pow((double)a->beta1, (double)a->t),
           bc2 = 1.0 - pow((double)a->beta2, (double)a->t);
    real step = (real)(r->lr / bc1), rbc2 = (real)(1.0 / sqrt(bc2));
    real b1 = a->beta1, b2 = a->beta2, decay = (real)r->lr * (real)r->weight_decay;
    real gs = (real)a->grad_scale, eps = (real)a->eps;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        real gi = g[i] * gs;
        m[i] = b1 * m[i] + ((real)1 - b1) * gi;
        v[i] = b2 * v[i] + ((real)1 - b2) * gi * gi;
        w[i] -= decay * w[i] + step * m[i] / (sqrt(v[i]) * rbc2 + eps);
        if (w_act) w_act[i] = w[i];
    }
}

void cpu_adamw(void *w_, void *w_act_, void *m_, void *v_, const void *g_, int64_t n, double lr,
               double beta1, double beta2, double eps, double weight_decay, int64_t t) {
    UpdateRun r = {0, n, lr, weight_decay};
    AdamWRuns a = {.w = w_,
                   .w_act = w_act_,
                   .m = m_,
                   .v = v_,
                   .g = (void *)g_,
                   .runs = &r,
                   .nruns = 1,
                   .beta1 = beta1,
                   .beta2 = beta2,
                   .eps = eps,
                   .grad_scale = 1,
                   .t = t};
    adamw_run(&a, &r);
}

void cpu_adamw_runs(const AdamWRuns *a) {
    for (int k = 0; k < a->nruns; k++) adamw_run(a, &a->runs[k]);
}

/* torch.optim.RMSprop (no momentum, not centered): the weight decay is added to the gradient,
 * g' = g + wd w; s <- alpha s + (1 - alpha) g'^2; w <- w - lr g' / (sqrt(s) + eps). */
void cpu_rmsprop_update(void *w_, void *w_act_, void *sq_, const void *g_, int64_t n, double lr,
                        double alpha, double eps, double weight_decay) {
    real *w = w_, *w_act = w_act_, *sq = sq_;
    const real *g = g_;
    real a = (real)alpha, a1 = (real)(1 - alpha), step = (real)lr, e = (real)eps,
         wd = (real)weight_decay;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) {
        real gi = g[i] + wd * w[i];
        sq[i] = a * sq[i] + a1 * gi * gi;
        w[i] -= step * gi / (sqrt(sq[i]) + e);
        if (w_act) w_act[i] = w[i];
    }
}
