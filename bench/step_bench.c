/* Training-step benchmark on the GPU or the CPU: for each config, the time of full optimizer
 * steps (forward, backward, global-norm clipping, the config's optimizer, as the trainer runs
 * them) at its seq_len x micro_batch, as tokens/s, MFU, and peak memory; the baselines
 * measured in the same run are a large GEMM and a pass over a large buffer (the backend's
 * `scale`, read and written once) through the same backend, so "of GEMM" says what fraction
 * of the achievable matmul rate a step reaches, and the profile's rates compare with both.
 *   step_bench [--device cuda|cpu] [--steps N] [--shape TxB] [--set section.key=value]...
 *              [--profile] [--json FILE] CONFIG.ini...
 * --device: cuda (the default; prints "skipped: no GPU" and exits 77 without one) or cpu (at
 * run.threads of each config; the baselines are measured again for a config whose thread
 * count differs from theirs). --shape runs every config at seq_len T x micro_batch B
 * instead of its own; --set overrides a key of every config (model.vocab_size for a chars
 * config whose text is elsewhere). --profile then times one more step op by op
 * (Backend.profile: each op between CUDA events, or host clock readings on the CPU) and
 * prints per op and shape its calls, ms, share of the step, and achieved GFLOP/s and GB/s
 * with their fractions of the measured GEMM rate and bandwidth, largest first, with the
 * time between ops (launch gaps, host work) as its own line. --json writes every number to
 * FILE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "config/run_config.h"
#include "cpu/blas_setup.h"
#include "cpu/parallel.h"
#include "device/device.h"
#include "device/kernel_variants.h"
#include "model/model.h"
#include "train/optimizer.h"
#include "util/error.h"
#include "util/rng.h"
#include "util/timer.h"

typedef struct {
    int steps, profile, T, B; /* T, B: 0 keeps the config's */
    const char **sets;        /* --set overrides */
    int nsets;
    FILE *json;
    const char *device;   /* "cuda" or "cpu" */
    double gemm;          /* FLOP/s of the GEMM baseline */
    double bandwidth;     /* bytes/s of the memory baseline */
    int baseline_threads; /* the CPU threads they were measured with */
} Options;

/* FLOP/s of an n^3 GEMM (out = x w^T) on the backend, the best of `reps` calls after one to
 * warm up (8192 in bf16 on a GPU, 2048 on a CPU). */
static double gemm_rate(const Backend *be, int n, int reps) {
    size_t bytes = (size_t)n * n * be->act_size;
    void *x = be->alloc(bytes), *w = be->alloc(bytes), *out = be->alloc(bytes);
    be->zero(x, bytes);
    be->zero(w, bytes);
    be->matmul_fwd(out, x, w, NULL, n, n, n);
    be->synchronize();
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        double t0 = rt_now();
        be->matmul_fwd(out, x, w, NULL, n, n, n);
        be->synchronize();
        double dt = rt_now() - t0;
        if (dt < best) best = dt;
    }
    be->release(x);
    be->release(w);
    be->release(out);
    return 2.0 * n * (double)n * n / best;
}

/* Bytes/s of the backend's `scale` over a [f32] buffer far larger than any cache (each
 * element read and written once), the best of `reps` passes after one to warm up. */
static double bandwidth(const Backend *be, size_t bytes, int reps) {
    int64_t n = (int64_t)(bytes / be->f32_size);
    void *x = be->alloc(bytes);
    be->zero(x, bytes);
    be->scale(x, n, 1.0);
    be->synchronize();
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        double t0 = rt_now();
        be->scale(x, n, 1.0);
        be->synchronize();
        double dt = rt_now() - t0;
        if (dt < best) best = dt;
    }
    be->release(x);
    return 2.0 * (double)n * (double)be->f32_size / best;
}

/* The GEMM and memory baselines at the threads the steps will use (an 8192^3 GEMM and 2 GiB
 * on a GPU, 2048^3 and 512 MiB on a CPU); prints them. */
static void measure_baselines(const Backend *be, Options *o) {
    int cpu = !strcmp(o->device, "cpu"), n = cpu ? 2048 : 8192;
    o->gemm = gemm_rate(be, n, cpu ? 5 : 20);
    o->bandwidth = bandwidth(be, (size_t)1 << (cpu ? 29 : 31), cpu ? 5 : 20);
    o->baseline_threads = par_max_threads();
    char threads[32] = "";
    if (cpu) snprintf(threads, sizeof threads, " at %d threads", o->baseline_threads);
    printf("device %s: GEMM %d^3 %.1f GFLOP/s, memory %.1f GB/s%s (dense peak %.1f TFLOP/s, %.2f "
           "TB/s)\n",
           be->device, n, o->gemm / 1e9, o->bandwidth / 1e9, threads, be->peak_flops / 1e12,
           be->peak_bandwidth / 1e12);
}

/* One optimizer step as the trainer takes it; returns the mean loss per token. */
static double train_step(Model *m, Optimizer *opt, const TrainConfig *tc, const Batch *b) {
    double N = (double)b->B * b->T;
    model_zero_grads(m);
    double loss = model_forward(m, b, 1.0 / N, NULL) / N;
    model_backward(m);
    double gnorm = sqrt(grad_sumsq(m, 0, model_params(m)->total));
    optimizer_step(opt, m, tc, tc->lr, grad_clip_factor(gnorm, tc->grad_clip));
    return loss;
}

static int by_ms(const void *a, const void *b) {
    double x = ((const OpTime *)a)->ms, y = ((const OpTime *)b)->ms;
    return (x < y) - (x > y);
}

/* Times one step op by op and prints the table (and its JSON rows). */
static void profile_step(const Backend *be, Model *m, Optimizer *opt, const TrainConfig *tc,
                         const Batch *b, double plain_ms, const Options *o) {
    FILE *json = o->json;
    enum { MAX_ROWS = 1024 };
    static OpTime rows[MAX_ROWS];
    be->synchronize();
    be->profile(1);
    double t0 = rt_now();
    train_step(m, opt, tc, b);
    be->synchronize();
    double step_ms = 1e3 * (rt_now() - t0);
    be->profile(0);
    int n = be->profile_read(rows, MAX_ROWS);
    if (n > MAX_ROWS) n = MAX_ROWS;
    qsort(rows, (size_t)n, sizeof rows[0], by_ms);
    double ops_ms = 0;
    int64_t calls = 0;
    for (int i = 0; i < n; i++) ops_ms += rows[i].ms, calls += rows[i].calls;
    printf("  profile: %lld op calls, step %.1f ms timed op by op (%.1f ms without), ops %.1f ms, "
           "between ops %.1f ms\n",
           (long long)calls, step_ms, plain_ms, ops_ms, step_ms - ops_ms);
    printf("  %-22s %-18s %6s %9s %6s %8s %6s %8s %6s\n", "op", "shape", "calls", "ms", "share",
           "GFLOP/s", "%GEMM", "GB/s", "%BW");
    if (json) fprintf(json, ",\n   \"profile_step_ms\": %.4f, \"profile\": [", step_ms);
    for (int i = 0; i < n; i++) {
        const OpTime *r = &rows[i];
        double s = r->ms * 1e-3;
        double fl = s > 0 ? r->flops / s : 0, bw = s > 0 ? r->bytes / s : 0;
        char fls[16] = "-", gms[16] = "-", bws[16] = "-", bwp[16] = "-";
        if (r->flops > 0) {
            snprintf(fls, sizeof fls, "%.1f", fl / 1e9);
            snprintf(gms, sizeof gms, "%.0f%%", 100 * fl / o->gemm);
        }
        if (r->bytes > 0) {
            snprintf(bws, sizeof bws, "%.1f", bw / 1e9);
            snprintf(bwp, sizeof bwp, "%.0f%%", 100 * bw / o->bandwidth);
        }
        printf("  %-22s %-18s %6lld %9.3f %5.1f%% %8s %6s %8s %6s\n", r->op,
               r->shape[0] ? r->shape : "-", (long long)r->calls, r->ms, 100 * r->ms / step_ms, fls,
               gms, bws, bwp);
        if (json)
            fprintf(json,
                    "%s\n    {\"op\": \"%s\", \"shape\": \"%s\", \"calls\": %lld, \"ms\": %.5f, "
                    "\"flops\": %.6g, \"bytes\": %.6g}",
                    i ? "," : "", r->op, r->shape, (long long)r->calls, r->ms, r->flops, r->bytes);
    }
    printf("  %-22s %-18s %6s %9.3f %5.1f%%\n", "(between ops)", "-", "-", step_ms - ops_ms,
           100 * (step_ms - ops_ms) / step_ms);
    if (json) fprintf(json, "]");
}

static void bench_config(const Backend *be, const char *path, Options *o, int first) {
    RunConfig rc;
    char err[2048];
    if (run_config_load(&rc, path, o->sets, o->nsets, err, sizeof err)) rt_die("%s", err);
    if (o->T) rc.train.seq_len = o->T, rc.train.micro_batch = o->B;
#ifdef _OPENMP
    if (!strcmp(o->device, "cpu") && rc.run.threads > 0) omp_set_num_threads(rc.run.threads);
#endif
    if (par_max_threads() != o->baseline_threads) measure_baselines(be, o);
    const TrainConfig *tc = &rc.train;
    int Bm = tc->micro_batch, T = tc->seq_len, V = rc.model.vocab_size;
    Model *m = model_create(&rc.model, be);
    model_init_weights(m, tc->seed);
    int64_t n = model_params(m)->total;
    Optimizer *opt = optimizer_create(be, tc->optimizer, 0, n);
    size_t N = (size_t)Bm * T;
    int32_t *tok = rt_malloc(sizeof(int32_t) * N), *lab = rt_malloc(sizeof(int32_t) * N);
    Rng r;
    rng_init(&r, 1, 0);
    for (size_t i = 0; i < N; i++)
        tok[i] = (int32_t)rng_below(&r, (uint64_t)V), lab[i] = (int32_t)rng_below(&r, (uint64_t)V);
    Batch b = {.B = Bm, .T = T, .tokens = tok, .labels = lab, .doc_start = NULL};
    double t0 = 0, loss = 0;
    for (int s = -1; s < o->steps; s++) { /* step -1 warms up (plans, allocations) */
        if (s == 0) {
            be->synchronize();
            t0 = rt_now();
        }
        loss = train_step(m, opt, tc, &b);
    }
    be->synchronize();
    double dt = (rt_now() - t0) / o->steps, tps = (double)N / dt;
    double flops = model_flops_per_token(m, T) * tps;
    double mfu = be->peak_flops > 0 ? flops / be->peak_flops : 0.0;
    ModelMemory mm = model_memory(&rc.model, (int64_t)N, be->act_size, be->f32_size,
                                  opt->spec->nstate, rc.train.recompute);
    double counted = (double)(mm.weights + mm.optimizer + mm.saved + mm.scratch);
    double peak_gib = (double)be->peak_memory() / (1 << 30);
    printf("%-40s %6d x %-5d %8.1f ms %10.0f tok/s  MFU %5.1f%%  %5.1f%% of GEMM  peak %6.2f GiB "
           "(model's buffers %.2f)  loss %.3f\n",
           path, Bm, T, 1e3 * dt, tps, 100 * mfu, 100 * flops / o->gemm, peak_gib,
           counted / (1 << 30), loss);
    fflush(stdout);
    if (o->json)
        fprintf(o->json,
                "%s\n  {\"config\": \"%s\", \"micro_batch\": %d, \"seq_len\": %d, "
                "\"step_ms\": %.4f, \"tokens_per_s\": %.1f, \"mfu\": %.5f, "
                "\"peak_gib\": %.4f, \"model_buffers_gib\": %.4f, \"loss\": %.5f, "
                "\"gemm_gflops\": %.2f, \"bandwidth_gb_per_s\": %.2f",
                first ? "" : ",", path, Bm, T, 1e3 * dt, tps, mfu, peak_gib, counted / (1 << 30),
                loss, o->gemm / 1e9, o->bandwidth / 1e9);
    if (o->profile) {
        if (!be->profile)
            rt_die("step_bench --profile: the %s backend offers no op profile", be->name);
        profile_step(be, m, opt, tc, &b, 1e3 * dt, o);
        fflush(stdout);
    }
    if (o->json) fprintf(o->json, "}");
    optimizer_free(opt);
    model_free(m);
    rt_free(tok);
    rt_free(lab);
}

static void usage(void) {
    fprintf(stderr, "usage: step_bench [--device cuda|cpu] [--steps N] [--shape TxB] [--set "
                    "section.key=value]... "
                    "[--profile] [--json FILE] CONFIG.ini...\n");
    exit(2);
}

int main(int argc, char **argv) {
    Options o = {.steps = 3, .device = "cuda"};
    const char *json_path = NULL;
    o.sets = rt_calloc((size_t)argc, sizeof(char *));
    int i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        if (!strcmp(argv[i], "--profile")) {
            o.profile = 1;
        } else if (i + 1 < argc && !strcmp(argv[i], "--device")) {
            o.device = argv[++i];
            if (strcmp(o.device, "cuda") && strcmp(o.device, "cpu")) {
                fprintf(stderr, "step_bench: --device takes cuda or cpu, not '%s'\n", o.device);
                return 2;
            }
        } else if (i + 1 < argc && !strcmp(argv[i], "--steps")) {
            o.steps = atoi(argv[++i]);
        } else if (i + 1 < argc && !strcmp(argv[i], "--shape")) {
            if (sscanf(argv[++i], "%dx%d", &o.T, &o.B) != 2 || o.T < 1 || o.B < 1) {
                fprintf(stderr,
                        "step_bench: --shape takes SEQ_LENxMICRO_BATCH (16384x1), not '%s'\n",
                        argv[i]);
                return 2;
            }
        } else if (i + 1 < argc && !strcmp(argv[i], "--json")) {
            json_path = argv[++i];
        } else if (i + 1 < argc && !strcmp(argv[i], "--set")) {
            o.sets[o.nsets++] = argv[++i];
        } else {
            usage();
        }
    }
    if (i >= argc || o.steps < 1) usage();
    const Backend *be;
    int cpu = !strcmp(o.device, "cpu");
    if (cpu) {
        blas_select_kernels(argv);
        be = backend_select("cpu", "--device");
    } else {
        char why[512];
        if (!(be = backend_cuda(0, why, sizeof why))) {
            printf("skipped: no GPU (%s)\n", why);
            return 77;
        }
    }
    if (json_path && !(o.json = fopen(json_path, "w")))
        rt_die("step_bench: cannot write %s", json_path);
    char variants[256]; /* the kernel variants in use (ROTOR_KERNEL_VARIANT), "" for the defaults */
    kernel_variants_describe(variants, sizeof variants);
    measure_baselines(be, &o);
    if (o.json)
        fprintf(o.json,
                "{\"device\": \"%s\", \"gemm_gflops\": %.2f, \"bandwidth_gb_per_s\": %.2f, "
                "\"peak_tflops\": %.2f, \"peak_tb_per_s\": %.3f, \"steps\": %d, "
                "\"kernel_variants\": \"%s\", \"configs\": [",
                be->device, o.gemm / 1e9, o.bandwidth / 1e9, be->peak_flops / 1e12,
                be->peak_bandwidth / 1e12, o.steps, variants);
    for (int k = i; k < argc; k++) bench_config(be, argv[k], &o, k == i);
    if (o.json) {
        fprintf(o.json, "\n]}\n");
        fclose(o.json);
    }
    rt_free(o.sets);
    return 0;
}
