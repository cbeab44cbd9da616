/* OpenBLAS picks its kernels from the CPU model at load time and falls back to the
 * ancient "Prescott" (SSE3) kernels on CPUs it does not know (seen with OpenBLAS 0.3.21 on
 * Sapphire Rapids machines reporting a generic model name), which runs GEMMs 3-4x slower.
 * OPENBLAS_CORETYPE overrides the choice but is read only when the library loads. */
#ifndef ROTOR_BLAS_SETUP_H
#define ROTOR_BLAS_SETUP_H

/* If OpenBLAS fell back to generic SSE kernels on a CPU with AVX2/AVX-512 and the user did
 * not set OPENBLAS_CORETYPE, sets it (SkylakeX or Haswell) and re-executes the program
 * with the same arguments. Returns normally when nothing needs to change. */
void blas_select_kernels(char **argv);

/* The kernel set OpenBLAS is using, e.g. "SkylakeX". */
const char *blas_kernel_name(void);

#endif
