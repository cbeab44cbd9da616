// Every operation of the CUDA backend: the compute ops of src/backend_ops.h, each
// implemented as cuda_<op> by one file per family of kernels (gemm.cu, elementwise.cu,
// norm.cu, timemix.cu, rotary.cu, selrope.cu, gla.cu, gdn.cu, fox.cu, decode.cu,
// loss_optim.cu), and the backend's own fields that are not memory, collectives or profiling
// (backend_cuda.cu).
#pragma once

#include "backend.h"

#define ROTOR_CUDA_OP(ret, name, params, args) ret cuda_##name params;
BACKEND_OPS(ROTOR_CUDA_OP)
#undef ROTOR_CUDA_OP

// Backend.supports (supports.cu) and Backend.seqs_prepare / seqs_release (seqs_mirror.cu).
int cuda_supports(const OpShape *shape, char *why, size_t why_size);
void cuda_seqs_prepare(Seqs *s, void **mirror);
void cuda_seqs_release(void *mirror);

// Shape limits of the kernels (gla.cu, gdn.cu, fox.cu, selrope.cu, rnn.cu): 1 if the shape is
// supported, else 0 with the reason in why.
int cuda_gla_supports(int H, int K, int V, char *why, size_t why_size);
int cuda_gdn_supports(int H, int K, int V, char *why, size_t why_size);
int cuda_fox_supports(int H, int D, char *why, size_t why_size);
int cuda_selrope_supports(int H, int P, char *why, size_t why_size);
// The nonlinear recurrences (rnn.cu): state width n.
int cuda_rnn_supports(int n, char *why, size_t why_size);
