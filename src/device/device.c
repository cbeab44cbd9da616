#include "device/device.h"

#include <stdio.h>
#include <string.h>

#include "dist/dist.h"
#include "util/error.h"

const Backend *backend_select(const char *device, const char *source) {
    if (!strcmp(device, "cpu")) return backend_cpu();
    if (strcmp(device, "cuda") && strcmp(device, "auto"))
        rt_die("%s = %s: unknown device (expected cpu, cuda or auto)", source, device);
    char why[256] = "";
    const Backend *be = backend_cuda(dist_local_rank(), why, sizeof why);
    if (be) return be;
    if (!strcmp(device, "auto")) return backend_cpu();
    rt_die("%s = cuda: the CUDA backend cannot be used: %s (use cpu)", source, why);
}
