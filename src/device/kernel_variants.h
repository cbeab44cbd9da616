/* Kernel variants: a rewritten CUDA kernel lands beside the verified one and is chosen at run
 * time, so that one build carries both and a GPU run can check and time them side by side
 * (docs/gpu.md "Kernel variants"). Variant 0 of every op is the verified kernel and the
 * default; a variant becomes the default only in a commit citing the GPU run that showed it
 * correct and faster.
 *
 *   ROTOR_KERNEL_VARIANT=gla_bwd:v2,gdn_scan:c32s2   (read when the CUDA backend starts)
 *
 * The table is plain C so that the CPU build parses and tests it; only the CUDA kernels act on
 * the choice. */
#ifndef ROTOR_KERNEL_VARIANTS_H
#define ROTOR_KERNEL_VARIANTS_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* In the order the speed part of scripts/gpu_check.sh checks them: GLA's step first. */
typedef enum {
    KV_GLA_BWD,   /* gla_bwd's dq/dk pass and d log alpha's carry (kernels/ops/gla.cu) */
    KV_GLA_STATE, /* the element type of GLA's chunk states and their gradients */
    KV_INPROJ,    /* a mixer's input projections, matmul_group (kernels/ops/gemm_group.cu) */
    KV_GEMM_ALGO, /* how cuBLASLt's algorithm is chosen per product shape (kernels/ops/gemm.cu) */
    KV_ADAMW,     /* AdamW over the optimizer's runs, adamw_runs (kernels/ops/loss_optim.cu) */
    KV_NORMGATE,  /* the readout's RMSNorm and output gate, rmsnorm_gate_fwd/bwd (norm.cu) */
    KV_GATE_REBUILD, /* the MLP's gate backward with its product rebuilt (elementwise.cu) */
    KV_SWIGLU_GEMM,  /* the MLP's gated products, matmul_gate_mul_fwd / gate_mul_matmul_dx */
    KV_RMSNORM_BWD,  /* RMSNorm's backward, dx and the weight gradient (kernels/ops/norm.cu) */
    KV_CONV,         /* the short causal conv, forward and backward (kernels/ops/timemix.cu) */
    KV_SELROPE,  /* Selective RoPE's fused scans, forward and backward (kernels/ops/selrope.cu) */
    KV_GDN_SCAN, /* Gated DeltaNet's sequential scans over chunks (kernels/ops/gdn.cu) */
    KV_FOX_FWD,  /* FoX attention's forward (kernels/ops/fox.cu, fox_v2.cu) */
    KV_FOX_BWD,  /* FoX attention's backward */
    KV_COUNT
} KernelVariantOp;

enum { KV_MAX_VARIANTS = 8 };

typedef struct {
    const char *name;    /* the op's key in ROTOR_KERNEL_VARIANT */
    const char *bench;   /* the op of bench/gpu_mixers that runs it at the 370M shapes */
    const char *test;    /* the GPU test program that checks it against the CPU reference */
    const char *kernels; /* a regular expression on its kernels' names (Nsight Compute) */
    const char *variants[KV_MAX_VARIANTS]; /* [0]: the verified default; NULL-terminated */
    const char *what[KV_MAX_VARIANTS];     /* one line per variant */
} KernelVariantInfo;

extern const KernelVariantInfo kernel_variant_ops[KV_COUNT];

/* The index of op's chosen variant (0 unless set). */
int kernel_variant(KernelVariantOp op);

/* Sets the choice from a spec "op:name[,op:name]..." (spaces around items allowed; "" or
 * "default" restores every default; ops not named go back to their defaults). Returns 0, or
 * -1 with a message naming the bad item and the choices in err; on error nothing changes. */
int kernel_variants_set(const char *spec, char *err, size_t errlen);

/* The spec of the current choice, non-default ops only ("" when all are defaults). */
void kernel_variants_describe(char *buf, size_t n);

/* kernel_variants_set(getenv("ROTOR_KERNEL_VARIANT")); no variable: 0. The message names the
 * variable. */
int kernel_variants_from_env(char *err, size_t errlen);

/* One line per op to f: "name bench test kernels variant..." (the first the default), and
 * with `verbose` each variant's description below it. */
void kernel_variants_list(FILE *f, int verbose);

#ifdef __cplusplus
}
#endif

#endif
