/* The NCCL collectives of the CUDA backend (kernels/backend/comm_nccl.cu) on one GPU, a world of
 * one rank. They run on a stream of their own, after the work queued on the compute stream
 * before them, and comm_wait queues the compute stream after them; what one GPU can check
 * is that this ordering neither deadlocks nor loses work: a rank's own sum leaves its
 * buffer as it was, compute work queued before each collective and after comm_wait lands,
 * and a tiny model's backward with its gradients summed bucket by bucket
 * (train/grad_buckets.c) gives the gradients of a plain backward. Sums across ranks and the
 * overlap itself need several GPUs under mpirun (docs/distributed.md). */
#include <stdio.h>
#include <stdlib.h>

#include "config/run_config.h"
#include "gpu_test.h"
#include "model/model.h"
#include "train/grad_buckets.h"
#include "util/error.h"
#include "util/rng.h"

/* Gradients of two backward passes on the GPU from the same weights and batch: fp32
 * atomic sums (embedding rows, biases) in another order, a few ulp of the largest value. */
#define TOL_GRAD 1e-5

/* The NCCL communicator of a world of one, set up on first use. */
static GradComm need_comm(void) {
    static GradComm comm;
    if (!comm.device) comm = grad_comm_init_device(gt_gpu);
    return comm;
}

/* Buckets from the top of the buffer down, as in a backward: the compute stream writes each
 * range (x 4) just before its sum starts, and scales everything by 1/2 after comm_wait. A
 * sum of one rank is the identity, so the result is 2 x (the initial x 2) exactly. */
static void run_buckets(const int64_t *ranges, const char *what) {
    need_comm();
    const Backend *be = gt_gpu;
    const int64_t n = (3 << 20) + 77, bucket = 1000003;
    float *x = gt_rand(n, -1, 1);
    void *dev = gt_f32(x, n);
    be->scale(dev, n, 2.0);
    for (int64_t hi = n; hi > 0; hi -= bucket) {
        int64_t lo = hi > bucket ? hi - bucket : 0;
        be->scale((float *)dev + lo, hi - lo, 4.0);
        be->reduce_start(dev, lo, hi, ranges);
    }
    be->comm_wait();
    be->scale(dev, n, 0.5);
    float *want = gt_zeros(n);
    for (int64_t i = 0; i < n; i++) want[i] = 4 * x[i];
    gt_compare(what, gt_get_f32(dev, n), want, n, 0);
    gt_reset();
}

static void test_allreduce_buckets(void) { run_buckets(NULL, "all-reduce buckets, world 1"); }

static void test_zero_buckets(void) {
    const int64_t ranges[2] = {0, (3 << 20) + 77};
    run_buckets(ranges, "ZeRO-1 reduce buckets, world 1");
}

/* The ZeRO-1 all-gather of one slice, with a write queued before it and a read after. */
static void test_allgather(void) {
    need_comm();
    const Backend *be = gt_gpu;
    const int64_t n = 100003, ranges[2] = {0, n};
    float *x = gt_rand(n, -1, 1);
    void *dev = gt_f32(x, n);
    be->scale(dev, n, 2.0);
    be->allgather_start(dev, ranges);
    be->comm_wait();
    be->scale(dev, n, 2.0);
    float *want = gt_zeros(n);
    for (int64_t i = 0; i < n; i++) want[i] = 4 * x[i];
    gt_compare("all-gather, world 1", gt_get_f32(dev, n), want, n, 0);
    gt_reset();
}

/* Backward of the tiny model with and without bucketed sums (one bucket per block). */
static void run_model(int zero) {
    GradComm comm = need_comm();
    char path[1024], err[2048];
    /* ROTOR_SOURCE_DIR: a bundle run elsewhere (scripts/gpu_check.sh) */
    const char *root = getenv("ROTOR_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/configs/tiny/gla-selective-pg.ini",
             root ? root : ROTOR_SOURCE_DIR);
    RunConfig rc;
    if (run_config_load(&rc, path, NULL, 0, err, sizeof err)) rt_die("%s", err);
    Model *plain = model_create(&rc.model, gt_gpu), *summed = model_create(&rc.model, gt_gpu);
    model_init_weights(plain, 3);
    model_init_weights(summed, 3);
    enum { B = 4, T = 128 };
    int32_t tok[B * T], lab[B * T];
    Rng r;
    rng_init(&r, 5, 0);
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)rng_below(&r, (uint64_t)rc.model.vocab_size);
        lab[i] = (int32_t)rng_below(&r, (uint64_t)rc.model.vocab_size);
    }
    Batch b = {.B = B, .T = T, .tokens = tok, .labels = lab, .doc_start = NULL};
    int64_t P = model_params(plain)->total, ranges[2] = {0, P};
    model_zero_grads(plain);
    model_forward(plain, &b, 1.0 / (B * T), NULL);
    model_backward(plain);
    GradBuckets gb;
    grad_buckets_init(&gb, summed, comm, zero ? ranges : NULL, 0.01);
    model_zero_grads(summed);
    model_forward(summed, &b, 1.0 / (B * T), NULL);
    model_set_grad_ready(summed, grad_buckets_ready, &gb);
    model_backward(summed);
    model_set_grad_ready(summed, NULL, NULL);
    int buckets = grad_buckets_finish(&gb);
    CHECK_MSG(buckets == rc.model.num_layers + 2,
              "%d buckets, expected one per block, head and embedding", buckets);
    gt_compare(zero ? "model gradients, ZeRO-1 buckets" : "model gradients, all-reduce buckets",
               gt_get_f32(model_grads(summed), P), gt_get_f32(model_grads(plain), P), P, TOL_GRAD);
    model_free(plain);
    model_free(summed);
    gt_reset();
}

static void test_model_allreduce(void) { run_model(0); }
static void test_model_zero(void) { run_model(1); }

static const TestCase tests[] = {
    {"comm_allreduce_buckets", test_allreduce_buckets},
    {"comm_zero_buckets", test_zero_buckets},
    {"comm_allgather", test_allgather},
    {"comm_model_allreduce", test_model_allreduce},
    {"comm_model_zero", test_model_zero},
};

GT_MAIN(tests)
