#include "device/host_copy.h"

#include <string.h>

#include "util/error.h"

/* The backend's [f32] element as a host type: 1 for double, 0 for float. */
static int f32_is_double(const Backend *be) {
    if (be->f32_size != sizeof(float) && be->f32_size != sizeof(double))
        rt_die("backend %s: [f32] elements of %zu bytes; only 4 (float) and 8 (double) are "
               "supported",
               be->name, be->f32_size);
    return be->f32_size == sizeof(double);
}

/* n values from a float array to a double one (to_double), or from double to float. */
static void convert(void *dst, const void *src, int to_double, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (to_double)
            ((double *)dst)[i] = ((const float *)src)[i];
        else
            ((float *)dst)[i] = (float)((const double *)src)[i];
}

/* dst = the n values at src: an upload (up) from a host array of floats or doubles
 * (host_double) to [f32] elements, or the download back, through a converted copy where the
 * types differ. */
static void f32_copy(const Backend *be, void *dst, const void *src, int host_double, int64_t n,
                     int up) {
    if (f32_is_double(be) == host_double) {
        size_t bytes = (host_double ? sizeof(double) : sizeof(float)) * (size_t)n;
        if (up)
            be->upload(dst, src, bytes);
        else
            be->download(dst, src, bytes);
        return;
    }
    size_t bytes = be->f32_size * (size_t)n;
    void *tmp = rt_malloc(bytes);
    if (up) {
        convert(tmp, src, !host_double, n);
        be->upload(dst, tmp, bytes);
    } else {
        be->download(tmp, src, bytes);
        convert(dst, tmp, host_double, n);
    }
    rt_free(tmp);
}

void backend_download_f32(const Backend *be, float *host, const void *src, int64_t n) {
    f32_copy(be, host, src, 0, n, 0);
}

void backend_upload_f32(const Backend *be, void *dst, const float *host, int64_t n) {
    f32_copy(be, dst, host, 0, n, 1);
}

void backend_download_f64(const Backend *be, double *host, const void *src, int64_t n) {
    f32_copy(be, host, src, 1, n, 0);
}

void backend_upload_f64(const Backend *be, void *dst, const double *host, int64_t n) {
    f32_copy(be, dst, host, 1, n, 1);
}

void act_to_f32(size_t act_size, float *dst, const void *src, int64_t n) {
    const unsigned char *p = src;
    for (int64_t i = 0; i < n; i++) {
        if (act_size == 2) { /* bf16: the upper half of a float */
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            uint32_t u = (uint32_t)h << 16;
            memcpy(dst + i, &u, 4);
        } else if (act_size == 4) {
            memcpy(dst + i, p + 4 * i, 4);
        } else {
            RT_ASSERT(act_size == 8);
            double d;
            memcpy(&d, p + 8 * i, 8);
            dst[i] = (float)d;
        }
    }
}
