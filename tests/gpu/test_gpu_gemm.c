/* cuBLASLt products against the CPU: matmul_fwd (with and without the bias epilogue),
 * matmul_bwd (dx overwrite and accumulate, dw += in fp32, dbias +=), and the per-head
 * head_matmul_fwd/bwd, and matmul_group_fwd/bwd (a mixer's input projections, under whichever
 * inproj variant ROTOR_KERNEL_VARIANT selects), and the MLP's gated products
 * matmul_gate_mul_fwd and gate_mul_matmul_dx (swiglu_gemm) at tiny and model-like shapes.
 *
 * Tolerances (relative to the largest reference value): bf16 outputs 1e-2 (one bf16
 * rounding of an fp32-accumulated sum, up to 2^-8, with margin for the accumulation order); fp32
 * outputs (dw, dbias) 1e-4: the inputs are bf16-exact on both sides and only the order of
 * the fp32 sums differs. */
#include "gpu_test.h"

static void check_matmul(int M, int N, int K, int bias) {
    char what[96];
    float *x = gt_randn((int64_t)M * K, 1.0), *w = gt_randn((int64_t)N * K, 0.05);
    float *b = bias ? gt_randn(N, 0.5) : NULL;
    float *out_c = gt_randn((int64_t)M * N, 1.0);
    gt_cpu->matmul_fwd(out_c, x, w, b, M, N, K);
    void *out_g = gt_act(gt_randn((int64_t)M * N, 1000.0), (int64_t)M * N); /* garbage */
    gt_gpu->matmul_fwd(out_g, gt_act(x, (int64_t)M * K), gt_act(w, (int64_t)N * K),
                       bias ? gt_act(b, N) : NULL, M, N, K);
    snprintf(what, sizeof what, "matmul_fwd %dx%dx%d%s", M, N, K, bias ? " +bias" : "");
    gt_compare(what, gt_get_act(out_g, (int64_t)M * N), out_c, (int64_t)M * N, 1e-2);

    float *dout = gt_randn((int64_t)M * N, 1.0);
    for (int accumulate = 0; accumulate <= 1; accumulate++) {
        float *dx0 = gt_randn((int64_t)M * K, 1.0), *dw0 = gt_randn((int64_t)N * K, 1.0);
        float *db0 = gt_randn(N, 1.0);
        float *dx_c = gt_copy(dx0, (int64_t)M * K), *dw_c = gt_copy(dw0, (int64_t)N * K),
              *db_c = gt_copy(db0, N);
        gt_cpu->matmul_bwd(dx_c, dw_c, bias ? db_c : NULL, dout, x, w, M, N, K, accumulate);
        void *dx_g = gt_act(dx0, (int64_t)M * K), *dw_g = gt_f32(dw0, (int64_t)N * K),
             *db_g = gt_f32(db0, N);
        gt_gpu->matmul_bwd(dx_g, dw_g, bias ? db_g : NULL, gt_act(dout, (int64_t)M * N),
                           gt_act(x, (int64_t)M * K), gt_act(w, (int64_t)N * K), M, N, K,
                           accumulate);
        snprintf(what, sizeof what, "matmul_bwd dx %dx%dx%d acc=%d", M, N, K, accumulate);
        gt_compare(what, gt_get_act(dx_g, (int64_t)M * K), dx_c, (int64_t)M * K, 1e-2);
        snprintf(what, sizeof what, "matmul_bwd dw %dx%dx%d", M, N, K);
        gt_compare(what, gt_get_f32(dw_g, (int64_t)N * K), dw_c, (int64_t)N * K, 1e-4);
        if (bias) {
            snprintf(what, sizeof what, "matmul_bwd dbias %dx%d", M, N);
            gt_compare(what, gt_get_f32(db_g, N), db_c, N, 1e-4);
        }
    }
    gt_reset();
}

static void test_matmul(void) {
    check_matmul(1, 1, 1, 1);
    check_matmul(37, 24, 16, 0);
    check_matmul(300, 64, 64, 1);
    check_matmul(513, 1024, 1024, 0);
    check_matmul(2048, 32000, 1024, 0); /* the LM head */
    check_matmul(1000, 16, 1024, 1);    /* the GLA gate's low-rank factor with bias */
}

static void check_head_matmul(int64_t N, int H, int Din, int P) {
    char what[96];
    int64_t nx = N * H * Din, nw = (int64_t)H * Din * P, no = N * H * P;
    float *x = gt_randn(nx, 1.0), *w = gt_randn(nw, 0.1), *out_c = gt_randn(no, 1.0);
    gt_cpu->head_matmul_fwd(out_c, x, w, N, H, Din, P);
    void *out_g = gt_act(gt_randn(no, 1000.0), no);
    gt_gpu->head_matmul_fwd(out_g, gt_act(x, nx), gt_act(w, nw), N, H, Din, P);
    snprintf(what, sizeof what, "head_matmul_fwd N=%lld H=%d %dx%d", (long long)N, H, Din, P);
    gt_compare(what, gt_get_act(out_g, no), out_c, no, 1e-2);
    float *dout = gt_randn(no, 1.0);
    for (int accumulate = 0; accumulate <= 1; accumulate++) {
        float *dx0 = gt_randn(nx, 1.0), *dw0 = gt_randn(nw, 1.0);
        float *dx_c = gt_copy(dx0, nx), *dw_c = gt_copy(dw0, nw);
        gt_cpu->head_matmul_bwd(dx_c, dw_c, dout, x, w, N, H, Din, P, accumulate);
        void *dx_g = gt_act(dx0, nx), *dw_g = gt_f32(dw0, nw);
        gt_gpu->head_matmul_bwd(dx_g, dw_g, gt_act(dout, no), gt_act(x, nx), gt_act(w, nw), N, H,
                                Din, P, accumulate);
        snprintf(what, sizeof what, "head_matmul_bwd dx H=%d acc=%d", H, accumulate);
        gt_compare(what, gt_get_act(dx_g, nx), dx_c, nx, 1e-2);
        snprintf(what, sizeof what, "head_matmul_bwd dw H=%d %dx%d", H, Din, P);
        gt_compare(what, gt_get_f32(dw_g, nw), dw_c, nw, 1e-4);
    }
    gt_reset();
}

static void test_head_matmul(void) {
    check_head_matmul(5, 2, 32, 8);
    check_head_matmul(300, 4, 256, 64);  /* GLA 370M: d/H = 256, P = dk/2 = 64 */
    check_head_matmul(1000, 16, 64, 32); /* FoX 370M */
}

/* A group of parts of widths N[0..n) over one input; adjacent: the weights lie in one
 * allocation one after another, and so do their gradients (the packed variants then use them in
 * place), else each has its own. Part 1 has a bias when bias. */
static void check_matmul_group(int M, int K, int n, const int *N, int adjacent, int bias) {
    char what[96];
    int64_t total = 0, offs[MATMUL_GROUP_MAX + 1] = {0};
    for (int i = 0; i < n; i++) offs[i + 1] = offs[i] + (int64_t)N[i] * K, total += N[i];
    float *x = gt_randn((int64_t)M * K, 1.0), *w = gt_randn(total * K, 0.05);
    float *b = gt_randn(N[1], 0.5), *dx0 = gt_randn((int64_t)M * K, 1.0);
    float *dw0 = gt_randn(total * K, 1.0), *db0 = gt_randn(N[1], 1.0);
    void *xg = gt_act(x, (int64_t)M * K), *wg_all = gt_act(w, total * K);
    void *dwg_all = gt_f32(dw0, total * K);
    MatmulGroup gc = {.x = x, .M = M, .K = K, .n = n}, gg = {.x = xg, .M = M, .K = K, .n = n};
    MatmulGroupGrads ac = {0}, ag = {0};
    for (int i = 0; i < n; i++) {
        int64_t ny = (int64_t)M * N[i];
        const void *wg = adjacent ? (const void *)((const char *)wg_all + 2 * offs[i])
                                  : gt_act(w + offs[i], (int64_t)N[i] * K);
        gc.p[i] = (MatmulPart){.w = w + offs[i], .y = gt_randn(ny, 1.0), .N = N[i]};
        gg.p[i] = (MatmulPart){.w = wg, .y = gt_garbage_act(ny), .N = N[i]};
        float *dy = gt_randn(ny, 1.0);
        ac.dy[i] = dy;
        ag.dy[i] = gt_act(dy, ny);
        ac.dw[i] = gt_copy(dw0 + offs[i], (int64_t)N[i] * K);
        ag.dw[i] = adjacent ? (void *)((char *)dwg_all + 4 * offs[i])
                            : gt_f32(dw0 + offs[i], (int64_t)N[i] * K);
    }
    if (bias) {
        gc.p[1].bias = b, gg.p[1].bias = gt_act(b, N[1]);
        ac.dbias[1] = gt_copy(db0, N[1]), ag.dbias[1] = gt_f32(db0, N[1]);
    }
    gt_cpu->matmul_group_fwd(&gc);
    gt_gpu->matmul_group_fwd(&gg);
    for (int i = 0; i < n; i++) {
        snprintf(what, sizeof what, "matmul_group_fwd %dx%dx%d part %d%s", M, N[i], K, i,
                 adjacent ? " adjacent" : "");
        gt_compare(what, gt_get_act(gg.p[i].y, (int64_t)M * N[i]), gc.p[i].y, (int64_t)M * N[i],
                   1e-2);
    }
    for (int accumulate = 0; accumulate <= 1; accumulate++) {
        ac.g = gc, ag.g = gg;
        ac.accumulate = ag.accumulate = accumulate;
        ac.dx = gt_copy(dx0, (int64_t)M * K), ag.dx = gt_act(dx0, (int64_t)M * K);
        gt_cpu->matmul_group_bwd(&ac);
        gt_gpu->matmul_group_bwd(&ag);
        snprintf(what, sizeof what, "matmul_group_bwd dx M=%d K=%d acc=%d", M, K, accumulate);
        gt_compare(what, gt_get_act(ag.dx, (int64_t)M * K), ac.dx, (int64_t)M * K, 1e-2);
    }
    /* the weights' gradients after both calls: two increments each */
    for (int i = 0; i < n; i++) {
        snprintf(what, sizeof what, "matmul_group_bwd dw part %d %dx%d", i, N[i], K);
        gt_compare(what, gt_get_f32(ag.dw[i], (int64_t)N[i] * K), ac.dw[i], (int64_t)N[i] * K,
                   1e-4);
    }
    if (bias)
        gt_compare("matmul_group_bwd dbias", gt_get_f32(ag.dbias[1], N[1]), ac.dbias[1], N[1],
                   1e-4);
    gt_reset();
}

static void test_matmul_group(void) {
    const int tiny[] = {23, 4, 16}, gla[] = {1024, 16, 512, 512, 1024},
              gdn[] = {1024, 8, 8, 1024, 1024, 1024};
    for (int adjacent = 0; adjacent <= 1; adjacent++) {
        check_matmul_group(37, 19, 3, tiny, adjacent, 1);
        /* GLA-370M's in.proj (gate, gk0, q, k, v) and GDN-370M's (gate, b, a, q, k, v) */
        check_matmul_group(gt_small() ? 256 : 2048, 1024, 5, gla, adjacent, 0);
        check_matmul_group(gt_small() ? 256 : 2048, 1024, 6, gdn, adjacent, 1);
    }
}

/* The MLP's gated products (under whichever swiglu_gemm variant ROTOR_KERNEL_VARIANT selects):
 * matmul_gate_mul_fwd's y and out, [M, N] from x [M, K]; gate_mul_matmul_dx's dx, dg and p,
 * [M, K] from dout [M, N] and w [N, K]. bf16 outputs of two or three bf16 factors: 2e-2. */
static void check_gated(int M, int N, int K) {
    const int64_t mn = (int64_t)M * N, mk = (int64_t)M * K, nk = (int64_t)N * K;
    float *x = gt_randn(mk, 1.0), *w = gt_randn(nk, 0.05), *g = gt_randn(mn, 1.5);
    MatmulGateMulArgs c = {.x = x,
                           .w = w,
                           .g = g,
                           .y = gt_zeros(mn),
                           .out = gt_zeros(mn),
                           .M = M,
                           .N = N,
                           .K = K,
                           .act = ACT_SILU},
                      d = c;
    d.x = gt_act(x, mk), d.w = gt_act(w, nk), d.g = gt_act(g, mn);
    d.y = gt_garbage_act(mn), d.out = gt_garbage_act(mn);
    gt_cpu->matmul_gate_mul_fwd(&c);
    gt_gpu->matmul_gate_mul_fwd(&d);
    gt_compare(gt_name("matmul_gate_mul_fwd y %dx%dx%d", M, N, K), gt_get_act(d.y, mn), c.y, mn,
               1e-2);
    gt_compare(gt_name("matmul_gate_mul_fwd out %dx%dx%d", M, N, K), gt_get_act(d.out, mn), c.out,
               mn, 2e-2);

    /* the backward's gated value p = u * swish(g2) is [M, K], its product p w^T [M, N] */
    float *u = gt_randn(mk, 1.0), *g2 = gt_randn(mk, 1.5), *dout = gt_randn(mn, 1.0);
    GateMulMatmulDx bc = {.dout = dout,
                          .w = w,
                          .x = u,
                          .g = g2,
                          .dx = gt_zeros(mk),
                          .dg = gt_zeros(mk),
                          .p = gt_zeros(mk),
                          .dp = gt_zeros(mk),
                          .M = M,
                          .N = N,
                          .K = K,
                          .act = ACT_SILU},
                    bd = bc;
    bd.dout = gt_act(dout, mn), bd.w = d.w, bd.x = gt_act(u, mk), bd.g = gt_act(g2, mk);
    bd.dx = gt_garbage_act(mk), bd.dg = gt_garbage_act(mk), bd.p = gt_garbage_act(mk);
    bd.dp = gt_garbage_act(mk);
    gt_cpu->gate_mul_matmul_dx(&bc);
    gt_gpu->gate_mul_matmul_dx(&bd);
    gt_compare(gt_name("gate_mul_matmul_dx dx %dx%dx%d", M, N, K), gt_get_act(bd.dx, mk), bc.dx, mk,
               2e-2);
    gt_compare(gt_name("gate_mul_matmul_dx dg %dx%dx%d", M, N, K), gt_get_act(bd.dg, mk), bc.dg, mk,
               2e-2);
    gt_compare(gt_name("gate_mul_matmul_dx p %dx%dx%d", M, N, K), gt_get_act(bd.p, mk), bc.p, mk,
               1e-2);
    gt_reset();
}

static void test_gated(void) {
    check_gated(37, 24, 16);
    check_gated(300, 64, 136);                        /* a partial tile in N and K */
    check_gated(gt_small() ? 256 : 1000, 2816, 1024); /* GLA-370M's up product */
    check_gated(gt_small() ? 256 : 1000, 1024, 2816); /* and its down projection */
}

static const TestCase tests[] = {
    {"matmul", test_matmul},
    {"head_matmul", test_head_matmul},
    {"matmul_group", test_matmul_group},
    {"gated", test_gated},
};

GT_MAIN(tests)
