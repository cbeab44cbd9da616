/* Training-step benchmark on the GPU: for each config, the time of full optimizer steps
 * (forward, backward, AdamW) at its seq_len x micro_batch, as tokens/s, MFU, and peak
 * memory; the baseline measured in the same run is a large bf16 GEMM through the same
 * backend, so "of GEMM" says what fraction of the achievable matmul rate a step reaches.
 *   gpu_step [--steps N] CONFIG.ini...
 * Prints "skipped: no GPU" and exits 77 without one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/run_config.h"
#include "model/model.h"
#include "train/optimizer.h"
#include "util/error.h"
#include "util/rng.h"
#include "util/timer.h"

/* FLOP/s of an 8192^3 bf16 GEMM (out = x w^T) on the backend. */
static double gemm_rate(const Backend *be) {
    const int n = 8192;
    size_t bytes = (size_t)n * n * be->act_size;
    void *x = be->alloc(bytes), *w = be->alloc(bytes), *out = be->alloc(bytes);
    be->zero(x, bytes);
    be->zero(w, bytes);
    be->matmul_fwd(out, x, w, NULL, n, n, n);
    be->synchronize();
    const int reps = 20;
    double t0 = rt_now();
    for (int i = 0; i < reps; i++) be->matmul_fwd(out, x, w, NULL, n, n, n);
    be->synchronize();
    double dt = rt_now() - t0;
    be->release(x);
    be->release(w);
    be->release(out);
    return 2.0 * n * (double)n * n * reps / dt;
}

static void bench_config(const Backend *be, const char *path, int steps, double gemm) {
    RunConfig rc;
    char err[2048];
    if (run_config_load(&rc, path, NULL, 0, err, sizeof err)) rt_die("%s", err);
    const TrainConfig *tc = &rc.train;
    int Bm = tc->micro_batch, T = tc->seq_len, V = rc.model.vocab_size;
    Model *m = model_create(&rc.model, be);
    model_init_weights(m, tc->seed);
    int64_t n = model_params(m)->total;
    AdamW *opt = adamw_create(be, 0, n);
    size_t N = (size_t)Bm * T;
    int32_t *tok = rt_malloc(sizeof(int32_t) * N), *lab = rt_malloc(sizeof(int32_t) * N);
    Rng r;
    rng_init(&r, 1, 0);
    for (size_t i = 0; i < N; i++) tok[i] = (int32_t)rng_below(&r, (uint64_t)V), lab[i] = (int32_t)rng_below(&r, (uint64_t)V);
    Batch b = {.B = Bm, .T = T, .tokens = tok, .labels = lab, .doc_start = NULL};
    double t0 = 0, loss = 0;
    for (int s = -1; s < steps; s++) { /* step -1 warms up (plans, allocations) */
        if (s == 0) {
            be->synchronize();
            t0 = rt_now();
        }
        model_zero_grads(m);
        loss = model_forward(m, &b, 1.0 / (double)N, NULL) / (double)N;
        model_backward(m);
        adamw_step(opt, m, tc, tc->lr);
    }
    be->synchronize();
    double dt = (rt_now() - t0) / steps, tps = (double)N / dt;
    double flops = model_flops_per_token(m, T) * tps;
    ModelMemory mm = model_memory(&rc.model, (int64_t)N, be->act_size, be->f32_size);
    double counted = (double)(mm.weights + mm.optimizer + mm.saved + mm.scratch);
    printf("%-40s %6d x %-5d %8.1f ms %10.0f tok/s  MFU %5.1f%%  %5.1f%% of GEMM  peak %6.2f GiB "
           "(model's buffers %.2f)  loss %.3f\n",
           path, Bm, T, 1e3 * dt, tps, be->peak_flops > 0 ? 100 * flops / be->peak_flops : 0.0,
           100 * flops / gemm, (double)be->peak_memory() / (1 << 30), counted / (1 << 30), loss);
    fflush(stdout);
    adamw_free(opt);
    model_free(m);
    rt_free(tok);
    rt_free(lab);
}

int main(int argc, char **argv) {
    int steps = 3, first = 1;
    if (argc > 2 && !strcmp(argv[1], "--steps")) steps = atoi(argv[2]), first = 3;
    if (first >= argc || steps < 1) {
        fprintf(stderr, "usage: gpu_step [--steps N] CONFIG.ini...\n");
        return 2;
    }
    char why[512];
    const Backend *be = backend_cuda(0, why, sizeof why);
    if (!be) {
        printf("skipped: no GPU (%s)\n", why);
        return 77;
    }
    double gemm = gemm_rate(be);
    printf("device %s: bf16 GEMM 8192^3 %.1f TFLOP/s (dense peak %.1f)\n", be->device, gemm / 1e12,
           be->peak_flops / 1e12);
    for (int i = first; i < argc; i++) bench_config(be, argv[i], steps, gemm);
    return 0;
}
