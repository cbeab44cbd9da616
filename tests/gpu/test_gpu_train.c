/* End to end on the GPU: a tiny model (each mixer, with Selective RoPE + phase gate where it
 * takes a position embedding) trained 50 steps on the CUDA backend tracks the same training on the
 * CPU backend (same initialisation, same batches, same AdamW), within bf16 tolerance. The LSTM also
 * trains with carried states (docs/models.md §carried-states): each step's rows start from the
 * states the previous step's left. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "config/run_config.h"
#include "gpu_test.h"
#include "model/model.h"
#include "train/optimizer.h"
#include "util/error.h"
#include "util/rng.h"

#define STEPS 50
#define ROWS 4
#define LEN 128

/* Rows that follow a fixed random successor map x -> next[x] from a random start, with
 * every eighth token random: the loss falls far below log V within a few dozen steps. */
static void make_batch(Rng *r, const int32_t *next, int V, int32_t *tok, int32_t *lab) {
    for (int b = 0; b < ROWS; b++) {
        int32_t x = (int32_t)rng_below(r, (uint64_t)V);
        for (int t = 0; t <= LEN; t++) {
            if (t < LEN) tok[b * LEN + t] = x;
            if (t > 0) lab[b * LEN + t - 1] = x;
            x = t % 8 == 7 ? (int32_t)rng_below(r, (uint64_t)V) : next[x];
        }
    }
}

/* One optimizer step: loss per token, gradient clipped at norm 1, AdamW at lr. */
static double train_step(Model *m, Optimizer *opt, const TrainConfig *tc, const Batch *b,
                         double lr) {
    model_zero_grads(m);
    double loss = model_forward(m, b, 1.0 / (ROWS * LEN), NULL) / (ROWS * LEN);
    model_backward(m);
    double gn = sqrt(grad_sumsq(m, 0, model_params(m)->total));
    optimizer_step(opt, m, tc, lr, grad_clip_factor(gn, 1.0));
    return loss;
}

static void train_config(const char *name, int carried, double lr) {
    char path[1024], err[2048];
    const char *root =
        getenv("ROTOR_SOURCE_DIR"); /* a bundle run elsewhere (scripts/gpu_check.sh) */
    snprintf(path, sizeof path, "%s/configs/tiny/%s.ini", root ? root : ROTOR_SOURCE_DIR, name);
    RunConfig rc;
    if (run_config_load(&rc, path, NULL, 0, err, sizeof err)) rt_die("%s", err);
    if (carried) rc.model.doc_mask = 0; /* a row is one segment */
    Model *mc = model_create(&rc.model, gt_cpu), *mg = model_create(&rc.model, gt_gpu);
    model_init_weights(mc, 7);
    model_init_weights(mg, 7);
    int64_t n = model_params(mc)->total;
    Optimizer *oc = optimizer_create(gt_cpu, OPTIMIZER_ADAMW, 0, n),
              *og = optimizer_create(gt_gpu, OPTIMIZER_ADAMW, 0, n);
    Rng r;
    rng_init(&r, 11, 0);
    int V = rc.model.vocab_size;
    int32_t *next = rt_malloc(sizeof(int32_t) * (size_t)V), tok[ROWS * LEN], lab[ROWS * LEN];
    for (int v = 0; v < V; v++) next[v] = (int32_t)rng_below(&r, (uint64_t)V);
    Batch b = {.B = ROWS, .T = LEN, .tokens = tok, .labels = lab, .doc_start = NULL};
    void *carry_c = NULL, *carry_g = NULL;
    if (carried) {
        size_t bc = model_carry_bytes(mc, ROWS), bg = model_carry_bytes(mg, ROWS);
        carry_c = gt_cpu->alloc(bc), carry_g = gt_gpu->alloc(bg);
        gt_cpu->zero(carry_c, bc), gt_gpu->zero(carry_g, bg);
        model_set_carry(mc, carry_c, ROWS), model_set_carry(mg, carry_g, ROWS);
    }
    /* small mode (gpu_test.h): 2 steps race every kernel of a step; the loss cannot fall yet */
    const int steps = gt_small() ? 2 : STEPS;
    double first = 0, worst = 0, lc = 0, lg = 0;
    for (int s = 0; s < steps; s++) {
        make_batch(&r, next, V, tok, lab);
        lc = train_step(mc, oc, &rc.train, &b, lr);
        lg = train_step(mg, og, &rc.train, &b, lr);
        if (s == 0) first = lc;
        worst = fmax(worst, fabs(lg - lc) / lc);
        if (s % 10 == 0 || s == steps - 1)
            printf("    %s step %2d: loss cpu %.4f gpu %.4f\n", name, s, lc, lg);
    }
    /* bf16 activations perturb each step by ~1e-3 relative; over 50 steps of training the
     * trajectories separate slowly: 3% of the loss at any step. */
    char what[64];
    snprintf(what, sizeof what, "train %s%s loss", name, carried ? " carried" : "");
    printf("  %-28s err=%.3e tol=3.0e-02 %s\n", what, worst, worst <= 0.03 ? "ok" : "FAIL");
    CHECK(worst <= 0.03);
    if (!gt_small()) {
        CHECK_MSG(lg < 0.7 * first, "%s: GPU loss %.4f did not fall below 0.7 x the first %.4f",
                  name, lg, first);
        CHECK_MSG(lc < 0.7 * first, "%s: CPU loss %.4f did not fall below 0.7 x the first %.4f",
                  name, lc, first);
    }
    if (carried) {
        model_set_carry(mc, NULL, 0), model_set_carry(mg, NULL, 0);
        gt_cpu->release(carry_c), gt_gpu->release(carry_g);
    }
    rt_free(next);
    optimizer_free(oc);
    optimizer_free(og);
    model_free(mc);
    model_free(mg);
}

/* AdamW at 3e-3; the LSTM learns the map at that rate too slowly to pass the loss check in
 * 50 steps (4.16 -> 3.43 on both backends), at 1e-2 it falls to 1.49. Carried states are
 * trained with the LSTM alone: a carried nnRNN on these unrelated rows diverges on the CPU
 * by itself (modReLU bounds no state: 4.16 -> 37 by step 10 at 3e-3, and a 0.1 % change of
 * the learning rate moves the loss by 80 %), so its trajectories say nothing about the GPU;
 * the nnRNN's carried-state ops (rnn_fwd / rnn_bwd from h0) are compared one by one in
 * test_gpu_rnncells. */
static void test_train_gla(void) { train_config("gla-selective-pg", 0, 3e-3); }
static void test_train_gdn(void) { train_config("gdn-selective-pg", 0, 3e-3); }
static void test_train_fox(void) { train_config("fox-pro-selective-pg", 0, 3e-3); }
static void test_train_transformer(void) { train_config("transformer-selective-pg", 0, 3e-3); }
static void test_train_deltanet(void) { train_config("deltanet-selective-pg", 0, 3e-3); }
static void test_train_mamba2(void) { train_config("mamba2", 0, 3e-3); }
static void test_train_lru(void) { train_config("lru", 0, 3e-3); }
static void test_train_rotrnn(void) { train_config("rotrnn", 0, 3e-3); }
static void test_train_nnrnn(void) { train_config("nnrnn", 0, 3e-3); }
static void test_train_lstm(void) { train_config("lstm", 0, 1e-2), train_config("lstm", 1, 1e-2); }

static const TestCase tests[] = {
    {"train_gla_selective_pg", test_train_gla},
    {"train_gdn_selective_pg", test_train_gdn},
    {"train_fox_pro_selective_pg", test_train_fox},
    {"train_transformer_selective_pg", test_train_transformer},
    {"train_deltanet_selective_pg", test_train_deltanet},
    {"train_mamba2", test_train_mamba2},
    {"train_lru", test_train_lru},
    {"train_rotrnn", test_train_rotrnn},
    {"train_nnrnn", test_train_nnrnn},
    {"train_lstm", test_train_lstm},
};

GT_MAIN(tests)
