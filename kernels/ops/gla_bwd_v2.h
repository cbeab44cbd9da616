// gla_bwd:v2 (src/device/kernel_variants.c), implemented in gla_bwd_v2.cu: GLA's backward dq/dk
// pass and d log alpha's carry from later chunks, the part of cuda_gla_bwd (gla.cu) after dv.
#pragma once

#include "lib/cuda_common.cuh"

// On the backend's stream: dq, dk [bf16][N, H, K] and dg [f32][N, H, K] (d log alpha per key
// channel, its carry included) from q, k, v, dout, g and the chunk states `states` and their
// gradients G [nchunk, H, K, V], fp32, or bf16 where state_bf16 is set (gla_state:bf16); tot
// [f32][nchunk, H, K] is scratch.
void gla_bwd_dqdk_v2(bf16 *dq, bf16 *dk, float *dg, float *tot, const bf16 *q, const bf16 *k,
                     const bf16 *v, const bf16 *dout, const float *g, const void *states,
                     const void *G, bool state_bf16, const Seqs *s, int H, int K, int V,
                     float scale);
