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

// TEMPORARY until the kernel-library merge: the limits of the entry checks.
int cuda_gla_supports(int H, int K, int V, char *why, size_t n) {
    if (H >= 1 && K >= 16 && K <= 256 && K % 16 == 0 && V >= 16 && V <= 512 && V % 16 == 0) return 1;
    snprintf(why, n, "the GLA kernels take key head sizes K a multiple of 16 in 16..256 and value head sizes V a multiple of 16 in 16..512, got K=%d V=%d", K, V);
    return 0;
}
int cuda_gdn_supports(int H, int K, int V, char *why, size_t n) {
    if (H >= 1 && K >= 16 && K <= 256 && K % 16 == 0 && V >= 16 && V <= 256 && V % 16 == 0) return 1;
    snprintf(why, n, "the Gated DeltaNet kernels take head sizes K, V multiples of 16 in 16..256, got K=%d V=%d", K, V);
    return 0;
}
int cuda_fox_supports(int H, int D, char *why, size_t n) {
    if (H >= 1 && (D == 32 || D == 64 || D == 128)) return 1;
    snprintf(why, n, "the FoX kernels take head size D = 32, 64 or 128, got D=%d", D);
    return 0;
}
int cuda_selrope_supports(int H, int P, char *why, size_t n) {
    if (H >= 1 && P >= 2 && P % 2 == 0 && 64 % P == 0) return 1;
    snprintf(why, n, "the Selective RoPE kernels take P = head size / 2 an even divisor of 64, got P=%d", P);
    return 0;
}
