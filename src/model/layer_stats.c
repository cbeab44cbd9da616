/* Statistics of a recurrent layer for the run's metrics (MixerImpl.stats, docs/models.md §lru,
 * §rotrnn, §nonlinear-rnns): summaries of its eigenvalue moduli and angles, read from the
 * parameters, and the norm of its states at the last forward (the RotRNN paper's Fig. 3), each a
 * host copy made once per validation. */
#include <math.h>

#include "device/host_copy.h"
#include "model/model_internal.h"
#include "util/error.h"

double *stats_param(const Ctx *c, int idx) {
    const ParamInfo *p = &c->params->p[idx];
    double *x = rt_malloc((size_t)p->numel * sizeof(double));
    backend_download_f64(c->be, x, WM(c, idx), p->numel);
    return x;
}

void stats_summary(json_t *o, const char *name, const double *x, int64_t n) {
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        sum += x[i];
        lo = fmin(lo, x[i]);
        hi = fmax(hi, x[i]);
    }
    char key[96];
    snprintf(key, sizeof key, "%s_mean", name);
    json_object_set_new(o, key, json_real(n ? sum / n : NAN));
    snprintf(key, sizeof key, "%s_min", name);
    json_object_set_new(o, key, json_real(lo));
    snprintf(key, sizeof key, "%s_max", name);
    json_object_set_new(o, key, json_real(hi));
}

void stats_angle_hist(json_t *o, const double *theta, int64_t n) {
    /* theta and -theta give the same conjugate pair: fold into [0, pi] */
    int count[STATS_ANGLE_BINS] = {0};
    for (int64_t i = 0; i < n; i++) {
        double a = fmod(theta[i], 2 * M_PI);
        if (a < 0) a += 2 * M_PI;
        if (a > M_PI) a = 2 * M_PI - a;
        int b = (int)(a / M_PI * STATS_ANGLE_BINS);
        count[b < STATS_ANGLE_BINS ? b : STATS_ANGLE_BINS - 1]++;
    }
    json_t *h = json_array();
    for (int b = 0; b < STATS_ANGLE_BINS; b++) json_array_append_new(h, json_integer(count[b]));
    json_object_set_new(o, "theta_hist", h);
}

void stats_state_norm(json_t *o, const Ctx *c, const void *h, int64_t width, int groups) {
    int64_t n = c->N * width;
    if (n <= 0) return;
    void *raw = rt_malloc((size_t)n * c->be->act_size);
    float *x = rt_malloc((size_t)n * sizeof(float));
    c->be->download(raw, h, (size_t)n * c->be->act_size);
    act_to_f32(c->be->act_size, x, raw, n);
    int64_t g = width / groups;
    double row = 0, group = 0;
    for (int64_t t = 0; t < c->N; t++) {
        double all = 0;
        for (int k = 0; k < groups; k++) {
            double s = 0;
            for (int64_t j = 0; j < g; j++) {
                double v = x[t * width + k * g + j];
                s += v * v;
            }
            all += s;
            group += sqrt(s);
        }
        row += sqrt(all);
    }
    json_object_set_new(o, "state_norm", json_real(row / c->N));
    if (groups > 1)
        json_object_set_new(o, "state_norm_head", json_real(group / ((double)c->N * groups)));
    rt_free(raw);
    rt_free(x);
}
