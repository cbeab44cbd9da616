// Backend.supports of the CUDA backend: whether the mixer and Selective RoPE kernels take a
// shape, from the limits each kernel file declares (cuda_<op>_supports).
#include <stdio.h>
#include <string.h>

#include "cuda_ops.h"

int cuda_supports(const OpShape *sh, char *why, size_t why_size) {
    if (!strcmp(sh->op, "gla")) return cuda_gla_supports(sh->H, sh->K, sh->V, why, why_size);
    if (!strcmp(sh->op, "gdn")) return cuda_gdn_supports(sh->H, sh->K, sh->V, why, why_size);
    if (!strcmp(sh->op, "fox")) return cuda_fox_supports(sh->H, sh->K, why, why_size);
    if (!strcmp(sh->op, "selrope")) return cuda_selrope_supports(sh->H, sh->K, why, why_size);
    snprintf(why, why_size, "no CUDA kernels for op '%s'", sh->op);
    return 0;
}
