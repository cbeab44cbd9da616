/* device/host_copy.h on the CPU backend, whose [f32] is float here and double in the f64
 * build: float and double host arrays go in and come back rounded to the backend's [f32]
 * and then to the host type, and nothing else changes them. */
#include "backend.h"
#include "cpu/real.h"
#include "device/host_copy.h"
#include "harness.h"
#include "util/error.h"

#define N 1000

/* Values that need every bit of a double, so that each rounding shows. */
static double value(int i) { return (i - N / 2) / 3.0 + 1e-12 * i; }

static void test_f64_round_trip(void) {
    const Backend *be = backend_cpu();
    double host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = value(i);
    void *dev = be->alloc(N * be->f32_size);
    backend_upload_f64(be, dev, host, N);
    backend_download_f64(be, back, dev, N);
    const real *raw = dev;
    int bad = 0;
    for (int i = 0; i < N; i++) bad += raw[i] != (real)host[i] || back[i] != (double)(real)host[i];
    CHECK_MSG(!bad, "%d of %d values changed beyond the backend's rounding", bad, N);
    be->release(dev);
}

static void test_f32_round_trip(void) {
    const Backend *be = backend_cpu();
    float host[N], back[N];
    double wide[N];
    for (int i = 0; i < N; i++) host[i] = (float)value(i);
    void *dev = be->alloc(N * be->f32_size);
    backend_upload_f32(be, dev, host, N);
    backend_download_f32(be, back, dev, N);
    backend_download_f64(be, wide, dev, N);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += back[i] != host[i] || wide[i] != (double)host[i];
    CHECK_MSG(!bad, "%d of %d float values changed", bad, N);
    /* double values reach a float host array rounded once more */
    for (int i = 0; i < N; i++) wide[i] = value(i);
    backend_upload_f64(be, dev, wide, N);
    backend_download_f32(be, back, dev, N);
    bad = 0;
    for (int i = 0; i < N; i++) bad += back[i] != (float)(real)wide[i];
    CHECK_MSG(!bad, "%d of %d double values not rounded to float", bad, N);
    be->release(dev);
}

static const TestCase tests[] = {
    {"host_copy_double", test_f64_round_trip},
    {"host_copy_float", test_f32_round_trip},
};

TH_MAIN(tests)
