/* backend_cuda() of a build without the CUDA backend. */
#include <stdio.h>

#include "backend.h"

const Backend *backend_cuda(int local_rank, char *why, size_t why_size) {
    if (why) snprintf(why, why_size, "this build has no CUDA backend: it was configured with ROTOR_CUDA=OFF or without nvcc");
    return NULL;
}
