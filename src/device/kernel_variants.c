#include "device/kernel_variants.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Each variant's line says what it changes against variant 0; docs/gpu.md "Kernel variants"
 * says what has run where. */
const KernelVariantInfo kernel_variant_ops[KV_COUNT] = {
    [KV_GLA_BWD] = {.name = "gla_bwd",
                    .bench = "gla",
                    .test = "test_gpu_gla",
                    .kernels = "gla_bwd_dqdk|gla_dg_",
                    .variants = {"v1", "v2"},
                    .what = {"the verified dq/dk pass: LDG -> STS tiles, 1 block per SM, "
                             "d log alpha's carry by a scan over chunks",
                             "cp.async double-buffered dO/V tiles, the in-chunk cumsums by "
                             "256-thread scans, 2 blocks per SM, the carry by direct sums"}},
    [KV_GLA_STATE] = {.name = "gla_state",
                      .bench = "gla",
                      .test = "test_gpu_gla",
                      .kernels = "gla_",
                      .variants = {"f32", "bf16", "bf16a"},
                      .what = {"the verified passes: chunk states and their gradients G "
                               "written and read in fp32",
                               "states and G in bf16, as their consumers round them (each "
                               "chunk's increment and each state rounded once, the scans sum "
                               "in fp32); q, k, v, dO, state and G tiles copied by cp.async",
                               "bf16, and the forward's intra-chunk scores A kept in the states "
                               "buffer's free half for the backward, which skips its scores "
                               "pass (where K V >= 2 x 64^2)"}},
    [KV_INPROJ] = {.name = "inproj",
                   .bench = "inproj",
                   .test = "test_gpu_gemm",
                   .kernels = "gemm|nvjet|xmma|cutlass|pack_kernel|add_grads",
                   .variants = {"loop", "packed", "narrow"},
                   .what = {"the verified products: each input projection its own product",
                            "all of a layer's input projections as one product into a packed "
                            "buffer, its column blocks then copied out (the backward: dy "
                            "gathered, one product for dx, one for the weights' gradients)",
                            "only the projections of width <= 64 (gates, low-rank) packed so, "
                            "the wide ones alone"}},
    [KV_GEMM_ALGO] = {.name = "gemm_algo",
                      .bench = "gemm",
                      .test = "test_gpu_gemm",
                      .kernels = "gemm|nvjet|xmma|cutlass",
                      .variants = {"heuristic", "timed"},
                      .what = {"the verified choice: cuBLASLt's first heuristic result per shape",
                               "up to 8 heuristic results per shape, each timed on the shape's "
                               "first call, the fastest kept"}},
    [KV_ADAMW] = {.name = "adamw",
                  .bench = "adamw",
                  .test = "test_gpu_basic",
                  .kernels = "map_kernel|adamw_runs_kernel",
                  .variants = {"runs", "fused"},
                  .what = {"the verified kernels: the clip factor's scale pass over the runs, "
                           "then one adamw launch per run",
                           "one launch over every run (the run table uploaded per call, blocks "
                           "striding over 2048-element tiles of the runs), the clip factor "
                           "applied to the gradient as it is read"}},
    [KV_NORMGATE] = {.name = "normgate",
                     .bench = "normgate",
                     .test = "test_gpu_basic",
                     .kernels = "norm_fwd|map_kernel|rmsnorm_bwd|dw_reduce|rmsnorm_gate|colsum_add",
                     .variants = {"pair", "fused"},
                     .what = {"the verified kernels in the former order: rmsnorm_fwd writing the "
                              "normed values, gate_mul_fwd; gate_mul_bwd writing their gradient, "
                              "rmsnorm_bwd",
                              "one kernel a direction: the forward writes r and rstd only, the "
                              "backward recomputes the normed values from x, rstd and w in "
                              "registers, forms their gradient and the gate's there and runs the "
                              "norm's row reduction, the blocks' dw partials by cuda_colsum_add; "
                              "rows of 16-byte vectors only"}},
    [KV_GATE_REBUILD] = {.name = "gate_rebuild",
                         .bench = "swiglu",
                         .test = "test_gpu_basic",
                         .kernels = "map_kernel",
                         .variants = {"pair", "fused"},
                         .what = {"the verified kernels in turn: gate_mul_fwd rebuilds swish(gate) "
                                  "* up, then gate_mul_bwd reads gate and up again",
                                  "one pass reading dact, gate and up once and writing the "
                                  "product with both gradients"}},
    [KV_SWIGLU_GEMM] = {.name = "swiglu_gemm",
                        .bench = "swiglu_gemm",
                        .test = "test_gpu_gemm",
                        .kernels = "gemm|nvjet|xmma|cutlass|map_kernel",
                        .variants = {"pair", "cutlass", "cutlass_n256"},
                        .what = {"the verified kernels in turn: the up product by cuBLASLt, then "
                                 "gate_mul_fwd; the down projection's input gradient, then "
                                 "gate_mul_bwd_rebuild",
                                 "one CUTLASS Hopper product each (TMA, wgmma, 128 x 128 tiles, "
                                 "persistent) with the gate in its epilogue: up and the product "
                                 "written from the accumulators; the gradients of up and gate "
                                 "and the rebuilt product instead of the input gradient "
                                 "(builds with -DROTOR_CUTLASS=ON)",
                                 "cutlass with 128 x 256 tiles (half the blocks' loads of the "
                                 "activations per output; fewer mainloop stages)"}},
    [KV_RMSNORM_BWD] = {.name = "rmsnorm_bwd",
                        .bench = "rmsnorm",
                        .test = "test_gpu_basic",
                        .kernels = "rmsnorm_bwd|dw_reduce|colsum_add",
                        .variants = {"v1", "v2"},
                        .what = {"the verified backward: a row's x and dy read twice (the second "
                                 "time from L1), the warps' dw sums through [warps][C] of shared "
                                 "memory, the blocks' partials added by one thread per column",
                                 "x and dy read once and held in registers (a lane's 16-byte "
                                 "loads all issued before the first is used; 2 rows a lane group "
                                 "at a time below 512 channels), w staged in shared memory, the "
                                 "warps' dw sums added in order into [C], the blocks' partials "
                                 "by cuda_colsum_add; rows of 16-byte vectors only"}},
    [KV_CONV] = {.name = "conv",
                 .bench = "conv",
                 .test = "test_gpu_timemix",
                 .kernels = "conv_(fwd|bwd)|colsum_add",
                 .variants = {"v1", "v2"},
                 .what = {"the verified short conv: runs of 32 tokens a warp, one token's loads "
                          "at a time",
                          "runs of 64 tokens a warp, the inputs of 16 tokens loaded into "
                          "registers before any is used"}},
    [KV_SELROPE] = {.name = "selrope",
                    .bench = "selrope_gla",
                    .test = "test_gpu_selrope",
                    .kernels = "selrope_",
                    .variants = {"r32", "r16", "r8"},
                    .what = {"the verified scans: 32 tokens a warp, tiles of 256 (the backward "
                             "spills at 128 registers)",
                             "16 tokens a warp, tiles of 128: half the values held in "
                             "registers, twice the blocks",
                             "8 tokens a warp, tiles of 64"}},
    [KV_GDN_SCAN] = {.name = "gdn_scan",
                     .bench = "gdn",
                     .test = "test_gpu_gdn",
                     .kernels = "gdn_(fwd|bwd)_scan",
                     .variants = {"auto", "c16s1", "c16s2", "c32s1", "c32s2", "reg"},
                     .what = {"the verified layout choice: the widest tile and double buffering "
                              "that fit, 16 columns first when 32 would not fill the GPU",
                              "16 value columns per block, one stage",
                              "16 value columns per block, double-buffered",
                              "32 value columns per block, one stage",
                              "32 value columns per block, double-buffered",
                              "the state in registers (mma accumulators) instead of an fp32 "
                              "shared tile, no fp32 staging tiles; 16 or 32 columns, one or two "
                              "stages, whichever takes the fewest waves (gdn_scan_reg.cu)"}},
    [KV_FOX_FWD] = {.name = "fox_fwd",
                    .bench = "fox",
                    .test = "test_gpu_fox",
                    .kernels = "fox_",
                    .variants = {"v1", "m128n64", "m128n128", "m128w8"},
                    .what = {"the verified forward: 64 queries a block, 4 warps of 16 rows, "
                             "64-key tiles, log f summed by warp 0 of every block",
                             "128 queries a block, 4 warps of 32 rows (8 of 16 at D 128), "
                             "64-key tiles; the segment cumsum of log f summed once and "
                             "copied beside K/V by cp.async (fox_v2.cu)",
                             "128 queries a block, 8 warps of 16 rows, 128-key tiles",
                             "128 queries a block, 8 warps of 16 rows, 64-key tiles"}},
    [KV_FOX_BWD] = {.name = "fox_bwd",
                    .bench = "fox",
                    .test = "test_gpu_fox",
                    .kernels = "fox_",
                    .variants = {"v1", "split", "split64"},
                    .what = {"the verified backward: a block per 64 keys, 4 warps, dQ added "
                             "into an fp32 buffer by atomics, then converted",
                             "a dQ pass (128 queries, 8 warps, delta and dS's row sums formed "
                             "there) and a dK/dV pass (128 keys, 8 warps): no atomics, no dQ "
                             "buffer; log f's cumsum summed once (fox_v2.cu)",
                             "the same with 64 keys (4 warps) a dK/dV block"}},
};

static int chosen[KV_COUNT];

int kernel_variant(KernelVariantOp op) { return chosen[op]; }

/* The list "a, b, c" of an op's variants, or of all ops (op < 0). */
static void choices(char *buf, size_t n, int op) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < (op < 0 ? KV_COUNT : KV_MAX_VARIANTS); i++) {
        const char *name = op < 0 ? kernel_variant_ops[i].name : kernel_variant_ops[op].variants[i];
        if (!name) break;
        int w = snprintf(buf + len, n - len, "%s%s", i ? ", " : "", name);
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
    }
}

/* The item [s, e) without the spaces around it. */
static void trim(const char **s, const char **e) {
    while (*s < *e && isspace((unsigned char)**s)) (*s)++;
    while (*e > *s && isspace((unsigned char)(*e)[-1])) (*e)--;
}

/* The length of [s, e) to print, at most 80 characters. */
static int cap(const char *s, const char *e) { return e - s > 80 ? 80 : (int)(e - s); }

/* The index of the name [s, e) among names[0..n) (NULL-terminated before n), or -1. */
static int find(const char *const *names, int n, size_t stride, const char *s, const char *e) {
    for (int i = 0; i < n; i++) {
        const char *name = *(const char *const *)((const char *)names + (size_t)i * stride);
        if (!name) break;
        if (strlen(name) == (size_t)(e - s) && !strncmp(name, s, (size_t)(e - s))) return i;
    }
    return -1;
}

int kernel_variants_set(const char *spec, char *err, size_t errlen) {
    int next[KV_COUNT] = {0}, named[KV_COUNT] = {0};
    char list[200], why[400] = "";
    const char *p = spec ? spec : "", *end = p + strlen(p);
    trim(&p, &end);
    if ((size_t)(end - p) == strlen("default") && !strncmp(p, "default", 7)) p = end;
    while (p < end) {
        const char *s = p, *e = memchr(p, ',', (size_t)(end - p));
        if (!e) e = end;
        p = e < end ? e + 1 : end;
        trim(&s, &e);
        const char *colon = memchr(s, ':', (size_t)(e - s));
        if (!colon) {
            snprintf(why, sizeof why, "'%.*s': expected op:variant", cap(s, e), s);
            break;
        }
        const char *os = s, *oe = colon, *vs = colon + 1, *ve = e;
        trim(&os, &oe);
        trim(&vs, &ve);
        int op = find(&kernel_variant_ops[0].name, KV_COUNT, sizeof kernel_variant_ops[0], os, oe);
        if (op < 0) {
            choices(list, sizeof list, -1);
            snprintf(why, sizeof why, "'%.*s': no op of that name has variants (ops: %s)",
                     cap(os, oe), os, list);
            break;
        }
        if (named[op]) {
            snprintf(why, sizeof why, "'%s' is named twice", kernel_variant_ops[op].name);
            break;
        }
        int v =
            find(kernel_variant_ops[op].variants, KV_MAX_VARIANTS, sizeof(const char *), vs, ve);
        if (v < 0) {
            choices(list, sizeof list, op);
            snprintf(why, sizeof why, "'%.*s': %s has no such variant (variants: %s)", cap(s, e), s,
                     kernel_variant_ops[op].name, list);
            break;
        }
        named[op] = 1;
        next[op] = v;
    }
    if (why[0]) {
        if (err && errlen) snprintf(err, errlen, "%s", why);
        return -1;
    }
    memcpy(chosen, next, sizeof chosen);
    return 0;
}

void kernel_variants_describe(char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < KV_COUNT; i++) {
        if (!chosen[i]) continue;
        int w = snprintf(buf + len, n - len, "%s%s:%s", len ? "," : "", kernel_variant_ops[i].name,
                         kernel_variant_ops[i].variants[chosen[i]]);
        if (w < 0 || (size_t)w >= n - len) break;
        len += (size_t)w;
    }
}

int kernel_variants_from_env(char *err, size_t errlen) {
    const char *spec = getenv("ROTOR_KERNEL_VARIANT");
    if (!spec) return 0;
    char why[400];
    if (kernel_variants_set(spec, why, sizeof why) == 0) return 0;
    if (err && errlen) snprintf(err, errlen, "ROTOR_KERNEL_VARIANT=%s: %s", spec, why);
    return -1;
}

void kernel_variants_list(FILE *f, int verbose) {
    for (int i = 0; i < KV_COUNT; i++) {
        const KernelVariantInfo *op = &kernel_variant_ops[i];
        fprintf(f, "%s %s %s %s", op->name, op->bench, op->test, op->kernels);
        for (int v = 0; v < KV_MAX_VARIANTS && op->variants[v]; v++)
            fprintf(f, " %s", op->variants[v]);
        fputc('\n', f);
        if (verbose)
            for (int v = 0; v < KV_MAX_VARIANTS && op->variants[v]; v++)
                fprintf(f, "    %-6s %s%s\n", op->variants[v], op->what[v], v ? "" : " (default)");
    }
}
