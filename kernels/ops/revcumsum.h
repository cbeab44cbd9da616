// Reverse cumulative sum over each segment, [f32] x [N, C] -> y (in place allowed), on the
// backend's stream: a piece of fox_bwd (d log f), implemented in timemix.cu. Not an op of the
// table; declared with C linkage for its GPU test against cpu_revcumsum.
#pragma once

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

void cuda_revcumsum(void *y, const void *x, const Seqs *s, int C);

#ifdef __cplusplus
}
#endif
