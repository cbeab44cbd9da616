/* Decoding (docs/models.md §decoding) against the full forward pass: for every mixer x option x
 * position embedding, the logits of a prefill and then one token at a time equal those of
 * one forward pass over the same tokens, position by position. Three rows decode together:
 * a prompt that crosses a chunk boundary, a one-token prompt, and a prompt of exactly one
 * chunk; the steps cross further boundaries, and under doc_mask a BOS in a prompt and a
 * generated BOS start new documents. Also: memory stays flat while decoding, and the
 * linear mixers' state does not depend on the length decoded. */
#include <string.h>

#include "cpu/real.h"
#include "harness.h"
#include "model/decode.h"
#include "testutil.h"
#include "util/error.h"
#include "variants.h"

#define ROWS 3
#define STEPS 60
static const int PROMPT[ROWS] = {70, 1, 64};
/* fp64: the same math, to the float rounding of the logits both sides return (a mistake
 * shows as 1e-4 or more). fp32: the chunked and the step-by-step sums round differently,
 * most of all the delta rule without decay (DeltaNet), up to ~3e-4 at these weights. */
#define TOL (sizeof(real) == 8 ? 1e-6 : 5e-4)

/* Logits of every position of one sequence from a single forward pass. */
static float *full_logits(Model *m, const int32_t *tok, int T) {
    int V = model_config(m)->vocab_size;
    int32_t *lab = rt_calloc((size_t)T, sizeof(int32_t)); /* every position scored */
    model_forward(m, &(Batch){1, T, tok, lab, NULL}, 0.0, NULL);
    real *raw = rt_malloc(sizeof(real) * (size_t)T * V);
    model_get_logits(m, raw);
    float *out = rt_malloc(sizeof(float) * (size_t)T * V);
    for (int64_t i = 0; i < (int64_t)T * V; i++) out[i] = (float)raw[i];
    rt_free(raw);
    rt_free(lab);
    return out;
}

/* Largest |a - b| relative to max(1, |b|) over V logits. */
static double logit_error(const float *a, const float *b, int V) {
    double worst = 0;
    for (int i = 0; i < V; i++) {
        double d = fabs((double)a[i] - b[i]) / fmax(1.0, fabs((double)b[i]));
        if (d > worst) worst = d;
    }
    return worst;
}

static double check_decoding(const ModelConfig *cfg, const char *label) {
    Model *m = model_create(cfg, backend_cpu());
    model_init_weights(m, 11);
    int V = cfg->vocab_size, T = PROMPT[0] + STEPS;
    Rng r;
    rng_init(&r, 5, 0);
    int32_t seq[ROWS][PROMPT[0] + STEPS];
    for (int row = 0; row < ROWS; row++)
        for (int t = 0; t < T; t++) {
            int32_t x = (int32_t)rng_below(&r, (uint64_t)V);
            seq[row][t] = x == cfg->bos_id ? x + 1 : x; /* BOS only where placed below */
        }
    seq[0][30] = seq[0][90] = seq[1][20] = cfg->bos_id; /* in a prompt; generated */
    float *full[ROWS];
    for (int row = 0; row < ROWS; row++) full[row] = full_logits(m, seq[row], PROMPT[row] + STEPS);

    Decoder *d = decoder_create(m, ROWS, PROMPT[0] + STEPS);
    const int32_t *prompts[ROWS] = {seq[0], seq[1], seq[2]};
    float *got = rt_malloc(sizeof(float) * ROWS * V);
    double worst = 0;
    decoder_prefill(d, prompts, PROMPT, got);
    for (int step = 0; step <= STEPS; step++) {
        for (int row = 0; row < ROWS; row++) {
            int at = PROMPT[row] - 1 + step;
            double e = logit_error(got + row * V, full[row] + (int64_t)at * V, V);
            CHECK_MSG(e < TOL, "%s: row %d position %d: logits differ by %.3g", label, row, at, e);
            if (e > worst) worst = e;
        }
        if (step == STEPS) break;
        int32_t next[ROWS];
        for (int row = 0; row < ROWS; row++) next[row] = seq[row][PROMPT[row] + step];
        decoder_step(d, next, got);
    }
    for (int row = 0; row < ROWS; row++) {
        CHECK(decoder_length(d, row) == PROMPT[row] + STEPS);
        rt_free(full[row]);
    }
    rt_free(got);
    decoder_free(d);
    model_free(m);
    return worst;
}

static void test_gla(void) { run_both_options(MIXER_GLA, check_decoding); }
static void test_gdn(void) { run_both_options(MIXER_GDN, check_decoding); }
static void test_deltanet(void) { run_both_options(MIXER_DELTANET, check_decoding); }
static void test_fox(void) { run_both_options(MIXER_FOX, check_decoding); }
static void test_transformer(void) { run_both_options(MIXER_TRANSFORMER, check_decoding); }
static void test_mamba2(void) { run_both_options(MIXER_MAMBA2, check_decoding); }
/* the LRU, RotRNN and the nonlinear RNNs: run_variant_tests */

/* ---- memory ---- */

/* The CPU backend with its live and peak bytes counted. */
static size_t live, peak;
static void *counting_alloc(size_t bytes) {
    size_t *p = rt_alloc_aligned(bytes + 64);
    p[0] = bytes;
    live += bytes;
    if (live > peak) peak = live;
    return (char *)p + 64;
}
static void counting_release(void *q) {
    if (!q) return;
    size_t *p = (size_t *)((char *)q - 64);
    live -= p[0];
    rt_free(p);
}

static void test_memory_flat(void) {
    Backend be = *backend_cpu();
    be.alloc = counting_alloc;
    be.release = counting_release;
    static const MixerKind kinds[] = {MIXER_GLA,    MIXER_GDN,  MIXER_DELTANET,
                                      MIXER_MAMBA2, MIXER_LRU,  MIXER_ROTRNN,
                                      MIXER_NNRNN,  MIXER_LSTM, MIXER_FOX};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        ModelConfig cfg = tu_tiny_model(kinds[i], 2);
        if (kinds[i] != MIXER_MAMBA2 && kinds[i] != MIXER_LRU && kinds[i] != MIXER_ROTRNN &&
            kinds[i] < MIXER_RNN)
            cfg.pe.kind = PE_SELECTIVE;
        Model *m = model_create(&cfg, &be);
        model_init_weights(m, 3);
        int linear = kinds[i] != MIXER_FOX, V = cfg.vocab_size;
        Decoder *small = decoder_create(m, 2, 100);
        size_t small_bytes = decoder_state_bytes(small);
        decoder_free(small);
        Decoder *d = decoder_create(m, 2, 1000);
        /* the linear mixers' state is the same for 100 or 1000 tokens; FoX's cache grows */
        CHECK_MSG(linear ? decoder_state_bytes(d) == small_bytes
                         : decoder_state_bytes(d) > small_bytes,
                  "%s: state %zu bytes for 1000 tokens, %zu for 100", mixer_name(kinds[i]),
                  decoder_state_bytes(d), small_bytes);
        int32_t prompt[8] = {2, 3, 4, 5, 6, 7, 8, 9};
        const int32_t *prompts[2] = {prompt, prompt + 3};
        int lens[2] = {8, 5};
        float *logits = rt_malloc(sizeof(float) * 2 * V);
        decoder_prefill(d, prompts, lens, logits);
        int32_t next[2] = {4, 5};
        decoder_step(d, next, logits);
        size_t live0 = live, peak0 = peak;
        for (int s = 0; s < 900; s++) decoder_step(d, next, logits);
        CHECK_MSG(live == live0 && peak == peak0,
                  "%s: 900 steps moved live bytes %zu -> %zu, peak %zu -> %zu",
                  mixer_name(kinds[i]), live0, live, peak0, peak);
        rt_free(logits);
        decoder_free(d);
        model_free(m);
    }
}

static const TestCase tests[] = {
    {"decode_gla", test_gla},
    {"decode_gdn", test_gdn},
    {"decode_deltanet", test_deltanet},
    {"decode_fox", test_fox},
    {"decode_transformer", test_transformer},
    {"decode_mamba2", test_mamba2},
    {"decode_memory_flat", test_memory_flat},
};

int main(int argc, char **argv) {
    return run_variant_tests(tests, TH_COUNT(tests), "decode", check_decoding, argc, argv);
}
