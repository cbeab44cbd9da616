#include "gpu_test.h"

#include <stdarg.h>
#include <stdlib.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "util/rng.h"

const Backend *gt_cpu, *gt_gpu;

static Rng rng;

/* Everything allocated for the current test: host blocks and device blocks. */
typedef struct {
    void *p;
    int device;
} Owned;
static Owned *owned;
static int n_owned, cap_owned;
static void *mirrors[64];
static int n_mirrors;

static void *own(void *p, int device) {
    if (n_owned == cap_owned) {
        cap_owned = cap_owned ? 2 * cap_owned : 64;
        owned = rt_realloc(owned, sizeof(Owned) * (size_t)cap_owned);
    }
    owned[n_owned++] = (Owned){p, device};
    return p;
}

static void *host_alloc(size_t bytes) { return own(rt_malloc(bytes ? bytes : 1), 0); }
static void *dev_alloc(size_t bytes) { return own(gt_gpu->alloc(bytes ? bytes : 1), 1); }

/* Round to nearest even bf16 (fp32 with the low 16 bits cleared). */
static uint16_t to_bf16_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; /* NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
static float from_bf16_bits(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static float round_bf16(float f) { return from_bf16_bits(to_bf16_bits(f)); }

float *gt_rand(int64_t n, double lo, double hi) {
    float *x = host_alloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = round_bf16((float)(lo + (hi - lo) * rng_uniform(&rng)));
    return x;
}

float *gt_randn(int64_t n, double std) {
    float *x = host_alloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = round_bf16((float)(std * rng_normal(&rng)));
    return x;
}

void gt_l2norm_rows(float *x, int64_t rows, int D) {
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int d = 0; d < D; d++) ss += (double)x[r * D + d] * x[r * D + d];
        for (int d = 0; d < D; d++)
            x[r * D + d] = round_bf16((float)(x[r * D + d] / sqrt(ss + 1e-6)));
    }
}

float *gt_copy(const float *x, int64_t n) {
    float *y = host_alloc(sizeof(float) * (size_t)n);
    memcpy(y, x, sizeof(float) * (size_t)n);
    return y;
}

float *gt_zeros(int64_t n) {
    float *x = host_alloc(sizeof(float) * (size_t)n);
    memset(x, 0, sizeof(float) * (size_t)n);
    return x;
}

float *gt_prefill(const float *grad, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)grad[i]));
    double scale = m > 0 ? ldexp(1.0, (int)ceil(log2(m))) : 1.0;
    float *x = gt_rand(n, -1, 1);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(x[i] * scale);
    return x;
}

float *gt_plus(const float *a, const float *b, int64_t n) {
    float *y = gt_copy(a, n);
    for (int64_t i = 0; i < n; i++) y[i] += b[i];
    return y;
}

void *gt_garbage_act(int64_t n) { return gt_act(gt_rand(n, -1000, 1000), n); }
void *gt_garbage_f32(int64_t n) { return gt_f32(gt_rand(n, -1000, 1000), n); }

void *gt_act(const float *host, int64_t n) {
    uint16_t *b = rt_malloc(2 * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) b[i] = to_bf16_bits(host[i]);
    void *d = dev_alloc(gt_gpu->act_size * (size_t)n);
    gt_gpu->upload(d, b, 2 * (size_t)n);
    rt_free(b);
    return d;
}

static void *upload(const void *host, size_t bytes) {
    void *d = dev_alloc(bytes);
    gt_gpu->upload(d, host, bytes);
    return d;
}

void *gt_f32(const float *host, int64_t n) { return upload(host, sizeof(float) * (size_t)n); }

int32_t *gt_i32(const int32_t *host, int64_t n) {
    return upload(host, sizeof(int32_t) * (size_t)n);
}

float *gt_get_act(const void *dev, int64_t n) {
    uint16_t *b = rt_malloc(2 * (size_t)(n ? n : 1));
    gt_gpu->download(b, dev, 2 * (size_t)n);
    float *x = host_alloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = from_bf16_bits(b[i]);
    rt_free(b);
    return x;
}

float *gt_get_f32(const void *dev, int64_t n) {
    float *x = host_alloc(sizeof(float) * (size_t)n);
    gt_gpu->download(x, dev, sizeof(float) * (size_t)n);
    return x;
}

/* Segments cu [nseg+1] with positions pos (host arrays owned here) and their device mirror. */
static Seqs *make_seqs(const int64_t *cu, const int32_t *pos, int nseg) {
    RT_ASSERT(n_mirrors < 64);
    Seqs *s = host_alloc(sizeof(Seqs));
    *s = (Seqs){.ntok = cu[nseg], .nseg = nseg, .cu = cu, .pos = pos};
    void *m = NULL;
    gt_gpu->seqs_prepare(s, &m);
    mirrors[n_mirrors++] = m;
    return s;
}

Seqs *gt_seqs(const int *lens, int nseg) {
    int64_t *cu = host_alloc(sizeof(int64_t) * (size_t)(nseg + 1));
    cu[0] = 0;
    for (int i = 0; i < nseg; i++) cu[i + 1] = cu[i] + lens[i];
    int32_t *pos = host_alloc(sizeof(int32_t) * (size_t)cu[nseg]);
    for (int i = 0; i < nseg; i++)
        for (int64_t t = cu[i]; t < cu[i + 1]; t++) pos[t] = (int32_t)(t - cu[i]);
    return make_seqs(cu, pos, nseg);
}

Seqs *gt_step_seqs(const int32_t *pos, int B) {
    int64_t *cu = host_alloc(sizeof(int64_t) * (size_t)(B + 1));
    for (int i = 0; i <= B; i++) cu[i] = i;
    int32_t *p = host_alloc(sizeof(int32_t) * (size_t)B);
    memcpy(p, pos, sizeof(int32_t) * (size_t)B);
    return make_seqs(cu, p, B);
}

double gt_compare(const char *what, const float *gpu, const float *cpu, int64_t n, double tol) {
    double mx = 1e-6, err = 0;
    for (int64_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs((double)cpu[i]));
        double d = fabs((double)gpu[i] - (double)cpu[i]);
        if (!(d <= err)) err = d; /* NaN sticks */
    }
    err /= mx;
    int ok = err <= tol;
    printf("  %-28s err=%.3e tol=%.1e %s\n", what, err, tol, ok ? "ok" : "FAIL");
    if (!ok) th_failures++;
    return err;
}

double gt_compare_scalar(const char *what, double gpu, double cpu, double floor, double tol) {
    double err = fabs(gpu - cpu) / fmax(fabs(cpu), floor);
    int ok = err <= tol;
    printf("  %-28s err=%.3e tol=%.1e %s\n", what, err, tol, ok ? "ok" : "FAIL");
    if (!ok) th_failures++;
    return err;
}

void gt_reset(void) {
    gt_gpu->synchronize();
    for (int i = 0; i < n_owned; i++) {
        if (owned[i].device)
            gt_gpu->release(owned[i].p);
        else
            rt_free(owned[i].p);
    }
    n_owned = 0;
    for (int i = 0; i < n_mirrors; i++) gt_gpu->seqs_release(mirrors[i]);
    n_mirrors = 0;
}

const char *gt_name(const char *fmt, ...) {
    static char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

static int small_mode;

int gt_small(void) { return small_mode; }

int gt_layout_count(int n) { return small_mode && n > 2 ? 2 : n; }

int gt_main(const TestCase *tests, int n, int argc, char **argv) {
    char why[256] = "";
    gt_gpu = backend_cuda(0, why, sizeof why);
    if (!gt_gpu) {
        printf("skipped: no GPU (%s)\n", why);
        return 77;
    }
    gt_cpu = backend_cpu();
    const char *small = getenv("ROTOR_GPU_TEST_SMALL");
    small_mode = small && strcmp(small, "0") != 0 && *small;
    if (small_mode)
        printf("small mode (ROTOR_GPU_TEST_SMALL): two layouts per case, no long cases\n");
    rng_init(&rng, 20261122, 0);
    int rc = th_run(tests, n, argc, argv);
    rt_free(owned);
    return rc;
}
