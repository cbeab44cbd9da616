// The fox_fwd and fox_bwd variants after v1 (src/device/kernel_variants.c), implemented in
// fox_v2.cu: cuda_fox_fwd and cuda_fox_bwd (fox.cu) check the arguments and hand them over.
#pragma once

#include "backend.h"

// variant: the index of the chosen variant in kernel_variant_ops[KV_FOX_FWD] (fwd) or
// [KV_FOX_BWD] (bwd), 1 or more; a->s->ntok > 0.
void fox_fwd_v2(const AttnArgs *a, int variant);
void fox_bwd_v2(const AttnGrads *g, int variant);
