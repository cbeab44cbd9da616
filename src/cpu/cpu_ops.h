/* The CPU reference of every backend operation (see src/backend_ops.h for the list and
 * src/backend.h for the contracts). These are plain C with OpenMP and BLAS; the CUDA kernels
 * are tested against them. */
#ifndef ROTOR_CPU_OPS_H
#define ROTOR_CPU_OPS_H

#include "backend.h"
#include "cpu/real.h"

#define ROTOR_CPU_OP(ret, name, params, args) ret cpu_##name params;
BACKEND_OPS(ROTOR_CPU_OP)
#undef ROTOR_CPU_OP

/* ---- pieces and helpers of the ops above, outside the table ---- */
/* Reverse cumulative sum over each segment, [f32] x [N, C] -> y (in place allowed): the
 * reference of the CUDA backend's scan inside fox_bwd (d log f). */
void cpu_revcumsum(void *y, const void *x, const Seqs *s, int C);
/* The Selective RoPE angle scan (docs/models.md §position-embeddings steps 4-7), a piece of
 * cpu_selrope_fwd/bwd: phi' = (phi + exp(bias)) * sigmoid(gate_logit), Phi [f32] = its cumsum over
 * each segment, angle = temp[j] * Phi. The backward consumes dangle [f32] as scratch and gives dphi
 * (overwrite), dbias (+=), dgate_logit (overwrite), dtemp (+=), each skipped when NULL. */
void cpu_selrope_angles_fwd(void *angle, void *Phi, const void *phi, const void *bias,
                            const void *gate_logit, const void *temp, const Seqs *s, int H, int P);
void cpu_selrope_angles_bwd(void *dphi, void *dbias, void *dgate_logit, void *dtemp, void *dangle,
                            const void *phi, const void *bias, const void *gate_logit,
                            const void *temp, const void *Phi, const Seqs *s, int H, int P);

#endif
