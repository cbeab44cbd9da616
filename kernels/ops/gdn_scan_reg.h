// gdn_scan:reg (src/device/kernel_variants.c): Gated DeltaNet's two sequential scans over
// chunks with the carried state in registers (gdn_scan_reg.cu), launched by gdn.cu in place of
// its gdn_fwd_scan / gdn_bwd_scan with the same arguments and results. Decay when g != NULL.
#pragma once

#include "lib/cuda_common.cuh"

// Whether ROTOR_KERNEL_VARIANT chose gdn_scan:reg.
bool gdn_scan_reg_chosen();

// states [nchunk, H, K, V] (S_c, fp32), fin [nseg, H, K, V] (the state after each segment, or
// NULL), U (U~ in, U = U~ - W S_c out), as gdn_fwd_scan.
void gdn_fwd_scan_reg(float *states, float *fin, bf16 *U, const bf16 *W, const bf16 *k,
                      const float *beta, const float *g, const Seqs *s, int H, int K, int V,
                      const char *op);

// dSs [nchunk, H, K, V] (dS_{c+1}, fp32) and dU, as gdn_bwd_scan.
void gdn_bwd_scan_reg(float *dSs, bf16 *dU, const bf16 *q, const bf16 *k, const bf16 *W,
                      const bf16 *P, const bf16 *dout, const float *beta, const float *g,
                      const Seqs *s, int H, int K, int V, float scale, const char *op);
