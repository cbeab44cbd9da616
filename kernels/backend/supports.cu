// Backend.supports of the CUDA backend: whether the mixer and Selective RoPE kernels take a
// shape, from the limits each kernel file declares (cuda_<op>_supports).
#include <stdio.h>
#include <string.h>

#include "backend/cuda_ops.h"
#include "lib/cuda_common.cuh"

int cuda_supports(const OpShape *sh, char *why, size_t why_size) {
    if (!strcmp(sh->op, "gla")) return cuda_gla_supports(sh->H, sh->K, sh->V, why, why_size);
    if (!strcmp(sh->op, "gdn")) return cuda_gdn_supports(sh->H, sh->K, sh->V, why, why_size);
    if (!strcmp(sh->op, "fox")) return cuda_fox_supports(sh->H, sh->K, why, why_size);
    if (!strcmp(sh->op, "selrope")) return cuda_selrope_supports(sh->H, sh->K, why, why_size);
    if (!strcmp(sh->op, "cscan")) return 1; /* cscan.cu: any number of channels */
    if (!strcmp(sh->op, "rnn") || !strcmp(sh->op, "lstm"))
        return cuda_rnn_supports(sh->K, why, why_size);
    snprintf(why, why_size, "no CUDA kernels for op '%s'", sh->op);
    return 0;
}

int cuda_linear_attn_sizes(char *why, size_t why_size, const char *family, int H, int K, int k_max,
                           int V, int v_max) {
    if (H < 1)
        return cuda_unsupported(why, why_size, "the %s kernels take H >= 1 heads, got H=%d", family,
                                H);
    if (K < 16 || K > k_max || K % 16)
        return cuda_unsupported(why, why_size,
                                "the %s kernels take K (key head size) a multiple of 16 in "
                                "16..%d, got K=%d",
                                family, k_max, K);
    if (V < 16 || V > v_max || V % 16)
        return cuda_unsupported(why, why_size,
                                "the %s kernels take V (value head size) a multiple of 16 in "
                                "16..%d, got V=%d",
                                family, v_max, V);
    return 1;
}
