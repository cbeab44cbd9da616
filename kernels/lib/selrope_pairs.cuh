// Selective RoPE's pieces per pair of angle channels c, c+1 (docs/models.md §position-embeddings
// steps 4-8), shared by the fused op (selrope.cu) and its decoding step (decode.cu): the
// increment's bias and phase gate, and the rotation of the half-split pairs (j, j+P) of q and k.
#pragma once

#include "lib/cuda_common.cuh"

namespace {

// sigmoid(gate logit) of token n, head h; 1 without a phase gate.
__device__ __forceinline__ float gate_at(const bf16 *gl, int n, int H, int h) {
    return gl ? sigmoidf_(bf2f(gl[(int64_t)n * H + h])) : 1.f;
}

// exp(bias) of channels c, c+1; 0 without a bias.
__device__ __forceinline__ float2 exp_bias(const bf16 *bias, int c) {
    return bias ? f2(expf(bf2f(bias[c])), expf(bf2f(bias[c + 1]))) : f2(0.f, 0.f);
}

__device__ __forceinline__ void sincos2(float2 a, float2 *s, float2 *c) {
    sincosf(a.x, &s->x, &c->x);
    sincosf(a.y, &s->y, &c->y);
}

// y_j = x_j cos a - x_{j+P} sin a, y_{j+P} = x_j sin a + x_{j+P} cos a for two pairs; x, y
// point at element j of a head.
__device__ __forceinline__ void rotate_pairs(bf16 *y, const bf16 *x, int P, float2 c, float2 s) {
    float2 x0 = ld2(x), x1 = ld2(x + P);
    st2(y, x0 * c - x1 * s);
    st2(y + P, x0 * s + x1 * c);
}

} // namespace
