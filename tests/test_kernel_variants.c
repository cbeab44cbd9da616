/* The kernel-variant choice of device/kernel_variants.h (docs/gpu.md "Kernel variants"): specs
 * that set, reset and describe it, and the messages of bad specs, which change nothing. */
#include <stdlib.h>
#include <string.h>

#include "device/kernel_variants.h"
#include "harness.h"

static void test_defaults(void) {
    char d[256];
    CHECK(kernel_variants_set("", NULL, 0) == 0);
    for (int i = 0; i < KV_COUNT; i++) CHECK(kernel_variant((KernelVariantOp)i) == 0);
    kernel_variants_describe(d, sizeof d);
    CHECK(!strcmp(d, ""));
    /* every op has a default and at least one other variant, each with its line */
    for (int i = 0; i < KV_COUNT; i++) {
        const KernelVariantInfo *op = &kernel_variant_ops[i];
        CHECK(op->name && op->bench && op->test && op->kernels);
        CHECK(op->variants[0] && op->variants[1]);
        for (int v = 0; v < KV_MAX_VARIANTS && op->variants[v]; v++) CHECK(op->what[v] != NULL);
    }
}

static void test_set_and_describe(void) {
    char d[256];
    CHECK(kernel_variants_set(" gdn_scan : c32s2 , gla_bwd:v2", NULL, 0) == 0);
    CHECK(kernel_variant(KV_GLA_BWD) == 1);
    CHECK(kernel_variant(KV_GDN_SCAN) == 4);
    CHECK(kernel_variant(KV_GLA_STATE) == 0);
    kernel_variants_describe(d, sizeof d);
    CHECK_MSG(!strcmp(d, "gla_bwd:v2,gdn_scan:c32s2"), "described as '%s'", d);
    /* naming a default is allowed and describes as nothing */
    CHECK(kernel_variants_set("gla_bwd:v1", NULL, 0) == 0);
    kernel_variants_describe(d, sizeof d);
    CHECK(!strcmp(d, ""));
    /* a new spec replaces the old one: ops it does not name go back to their defaults */
    CHECK(kernel_variants_set("gla_state:bf16", NULL, 0) == 0);
    CHECK(kernel_variants_set("gdn_scan:c16s1", NULL, 0) == 0);
    CHECK(kernel_variant(KV_GLA_STATE) == 0 && kernel_variant(KV_GDN_SCAN) == 1);
    CHECK(kernel_variants_set("default", NULL, 0) == 0);
    CHECK(kernel_variant(KV_GDN_SCAN) == 0);
}

/* A bad spec fails with a message naming the item and the choices, and keeps the choice. */
static void check_bad(const char *spec, const char *want) {
    char err[512] = "";
    CHECK(kernel_variants_set("gla_bwd:v2", NULL, 0) == 0);
    CHECK_MSG(kernel_variants_set(spec, err, sizeof err) == -1, "'%s' accepted", spec);
    CHECK_MSG(strstr(err, want) != NULL, "'%s': message '%s' lacks '%s'", spec, err, want);
    CHECK(kernel_variant(KV_GLA_BWD) == 1);
}

static void test_bad_specs(void) {
    check_bad("gla_bwd", "'gla_bwd': expected op:variant");
    check_bad("gla_bwd:v2,mamba2:v2", "'mamba2': no op of that name has variants (ops: gla_bwd, "
                                      "gla_state, inproj, gemm_algo, adamw, normgate, "
                                      "gate_rebuild, swiglu_gemm, rmsnorm_bwd, conv, "
                                      "selrope, gdn_scan, fox_fwd, fox_bwd)");
    check_bad(
        "fox_fwd:v2",
        "'fox_fwd:v2': fox_fwd has no such variant (variants: v1, m128n64, m128n128, m128w8)");
    check_bad("gla_bwd:v9", "'gla_bwd:v9': gla_bwd has no such variant (variants: v1, v2)");
    check_bad("gla_bwd:v2,gla_bwd:v1", "'gla_bwd' is named twice");
    check_bad("gla_bwd:v2,,gdn_scan:c16s1", "'': expected op:variant");
    check_bad("gla_bwd:", "has no such variant");
}

static void test_env(void) {
    char err[512] = "";
    setenv("ROTOR_KERNEL_VARIANT", "gdn_scan:c16s2", 1);
    CHECK(kernel_variants_from_env(err, sizeof err) == 0);
    CHECK(kernel_variant(KV_GDN_SCAN) == 2);
    setenv("ROTOR_KERNEL_VARIANT", "gdn_scan:wide", 1);
    CHECK(kernel_variants_from_env(err, sizeof err) == -1);
    CHECK_MSG(
        strstr(
            err,
            "ROTOR_KERNEL_VARIANT=gdn_scan:wide: 'gdn_scan:wide': gdn_scan has no such variant") ==
            err,
        "message '%s'", err);
    unsetenv("ROTOR_KERNEL_VARIANT");
    CHECK(kernel_variants_from_env(err, sizeof err) == 0);
    CHECK(kernel_variant(KV_GDN_SCAN) == 2); /* no variable: the choice stays */
}

static const TestCase tests[] = {
    {"defaults", test_defaults},
    {"set_and_describe", test_set_and_describe},
    {"bad_specs", test_bad_specs},
    {"env", test_env},
};

TH_MAIN(tests)
