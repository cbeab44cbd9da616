#include "cpu/blas_setup.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char *blas_kernel_name(void) { return openblas_get_corename(); }

void blas_select_kernels(char **argv) {
    if (getenv("OPENBLAS_CORETYPE")) return;
    const char *core = openblas_get_corename();
    if (!core || (strcasecmp(core, "prescott") && strcasecmp(core, "core2") &&
                  strcasecmp(core, "nehalem") && strcasecmp(core, "katmai")))
        return;
    const char *want = NULL;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = "Haswell";
#endif
    if (!want) return;
    setenv("OPENBLAS_CORETYPE", want, 1);
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with the slow kernels */
    fprintf(stderr,
            "rotor: warning: OpenBLAS uses generic %s kernels on this CPU; set "
            "OPENBLAS_CORETYPE=%s for faster matrix products\n",
            core, want);
}
