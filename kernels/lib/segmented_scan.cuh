// The carry pass of the three-pass segmented scans along the tokens (timemix.cu's reverse
// cumsum, selrope.cu's angle scan and its reverse): given every tile's state from zero
// (tile_val [ntile][C], and tile_flag: the tile holds a segment boundary), the state entering
// each tile in scan order (carry [ntile][C]). States combine as (f1, v1) then (f2, v2) ->
// (f1 | f2, f2 ? v2 : v1 + v2).
#pragma once

#include "lib/cuda_common.cuh"

namespace {

// One warp per column c walks the tiles in scan order (from the right when REV) in batches
// of 32, a lane per tile: a segmented inclusive scan across the lanes plus the batch's
// incoming state, shifted one lane.
template <bool REV>
__global__ void scan_carry_kernel(float *__restrict__ carry, const float *__restrict__ tile_val,
                                  const int *__restrict__ tile_flag, int ntile, int C) {
    int lane = threadIdx.x % 32;
    int c = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (c >= C) return;
    float run = 0.f;
    for (int b = 0; b < ntile; b += 32) {
        int t = REV ? ntile - 1 - b - lane : b + lane;
        bool ok = t >= 0 && t < ntile;
        int f = ok ? tile_flag[t] : 0;
        float v = ok ? tile_val[(int64_t)t * C + c] : 0.f;
        for (int o = 1; o < 32; o <<= 1) {
            float vo = __shfl_up_sync(FULL_MASK, v, o);
            int fo = __shfl_up_sync(FULL_MASK, f, o);
            if (lane >= o) {
                if (!f) v += vo;
                f |= fo;
            }
        }
        float incl = f ? v : run + v;
        float excl = __shfl_up_sync(FULL_MASK, incl, 1);
        if (lane == 0) excl = run;
        if (ok) carry[(int64_t)t * C + c] = excl;
        run = __shfl_sync(FULL_MASK, incl, 31);
    }
}

template <bool REV>
void launch_scan_carry(float *carry, const float *val, const int *flag, int ntile, int C) {
    scan_carry_kernel<REV>
        <<<(unsigned)cdiv(C, 8), 256, 0, cuda_stream()>>>(carry, val, flag, ntile, C);
    CUDA_LAUNCHED();
}

} // namespace
