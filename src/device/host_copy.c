#include "device/host_copy.h"

#include "util/error.h"

/* The backend's [f32] element as a host type: 1 for double, 0 for float. */
static int f32_is_double(const Backend *be) {
    if (be->f32_size != sizeof(float) && be->f32_size != sizeof(double))
        rt_die("backend %s: [f32] elements of %zu bytes; only 4 (float) and 8 (double) are "
               "supported", be->name, be->f32_size);
    return be->f32_size == sizeof(double);
}

void backend_download_f32(const Backend *be, float *host, const void *src, int64_t n) {
    if (!f32_is_double(be)) {
        be->download(host, src, sizeof(float) * (size_t)n);
        return;
    }
    double *d = rt_malloc(sizeof(double) * (size_t)n);
    be->download(d, src, sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) host[i] = (float)d[i];
    rt_free(d);
}

void backend_upload_f32(const Backend *be, void *dst, const float *host, int64_t n) {
    if (!f32_is_double(be)) {
        be->upload(dst, host, sizeof(float) * (size_t)n);
        return;
    }
    double *d = rt_malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) d[i] = host[i];
    be->upload(dst, d, sizeof(double) * (size_t)n);
    rt_free(d);
}

void backend_download_f64(const Backend *be, double *host, const void *src, int64_t n) {
    if (f32_is_double(be)) {
        be->download(host, src, sizeof(double) * (size_t)n);
        return;
    }
    float *f = rt_malloc(sizeof(float) * (size_t)n);
    be->download(f, src, sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) host[i] = f[i];
    rt_free(f);
}

void backend_upload_f64(const Backend *be, void *dst, const double *host, int64_t n) {
    if (f32_is_double(be)) {
        be->upload(dst, host, sizeof(double) * (size_t)n);
        return;
    }
    float *f = rt_malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) f[i] = (float)host[i];
    be->upload(dst, f, sizeof(float) * (size_t)n);
    rt_free(f);
}
