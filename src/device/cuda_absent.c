/* What the CUDA library exports to C, in a build without the CUDA backend. */
#include <stdio.h>

#include "backend.h"
#include "util/error.h"

const Backend *backend_cuda(int local_rank, char *why, size_t why_size) {
    if (why)
        snprintf(why, why_size,
                 "this build has no CUDA backend: it was configured with ROTOR_CUDA=OFF or without "
                 "nvcc");
    return NULL;
}

/* kernels/ops/revcumsum.h: only reached through a CUDA backend, which this build cannot make */
void cuda_revcumsum(void *y, const void *x, const Seqs *s, int C) {
    (void)y, (void)x, (void)s, (void)C;
    rt_die("cuda_revcumsum: this build has no CUDA backend");
}
