// The gates' activations (docs/models.md §backbone SwiGLU, §gla step 6 and the readouts like it):
// act(g) and act'(g) for SILU (swish), SIGMOID and NONE (the plain product), as
// src/cpu/elementwise.c computes them; shared by gate_mul (elementwise.cu) and the fused readout
// norm and gate (norm.cu).
#pragma once

#include "lib/cuda_common.cuh"
#include "util/error.h"

__device__ __forceinline__ float act_value(float g, Activation act) {
    if (act == ACT_NONE) return g;
    float s = sigmoidf_(g);
    return act == ACT_SILU ? g * s : s;
}
__device__ __forceinline__ float act_deriv(float g, Activation act) {
    if (act == ACT_NONE) return 1.f;
    float s = sigmoidf_(g);
    return act == ACT_SILU ? s * (1.f + g * (1.f - s)) : s * (1.f - s);
}

// Dies naming op unless act is one of the three.
inline void check_gate_act(Activation act, const char *op) {
    if (act != ACT_NONE && act != ACT_SILU && act != ACT_SIGMOID)
        rt_die("%s: activation %d unsupported (NONE, SILU or SIGMOID)", op, (int)act);
}
