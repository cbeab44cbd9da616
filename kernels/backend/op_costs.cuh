// Each op's cost for the CUDA backend's profiler (profile.cuh): the shared cost model of
// src/device/op_costs.h at the CUDA backend's element sizes, bf16 [act] and fp32 [f32].
#pragma once

#include "backend/cuda_ops.h"
#include "backend/profile.cuh"
#include "device/op_costs.h"

inline constexpr CostUnits cuda_cost_units = {CUDA_ACT_SIZE, CUDA_F32_SIZE};

#define ROTOR_CUDA_COST(ret, name, params, args)                                                   \
    template <> struct Cost<cuda_##name> {                                                         \
        static OpCost of params { return OP_COST(&cuda_cost_units, name, args); }                  \
    };
BACKEND_OPS(ROTOR_CUDA_COST)
#undef ROTOR_CUDA_COST
