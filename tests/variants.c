#include "variants.h"

#include <stdio.h>
#include <stdlib.h>

#include "model/family.h"
#include "testutil.h"

const char *const PE_VARIANT_NAMES[N_PE_VARIANTS] = {
    "nope",
    "rope",
    "sel-wn-silu",
    "sel-lowrank-none-bias-gate",
    "sel-skip-tan-tempgrad",
    "sel-bias-gate-docmask",
};

/* The mixers that take NoPE only (docs/models.md §mamba2, §lru, §rotrnn, §nonlinear-rnns, §lstm).
 */
static int nope_only(const ModelConfig *c) { return family_of(c->mixer)->pe == PE_BIT(PE_NOPE); }

int pe_variant_applies(const ModelConfig *c, int k) {
    return !nope_only(c) || k == 0 || k == N_PE_VARIANTS - 1;
}

const char *pe_variant_name(const ModelConfig *c, int k) {
    return nope_only(c) && k ? "nope-docmask" : PE_VARIANT_NAMES[k];
}

void apply_pe_variant(ModelConfig *c, int k) {
    if (nope_only(c)) {
        c->doc_mask = k != 0;
        return;
    }
    c->pe.kind = k == 0 ? PE_NOPE : k == 1 ? PE_ROPE : PE_SELECTIVE;
    switch (k) {
    case 1: c->pe.rope_theta = 100; break; /* a small base: large angles within 70 tokens */
    case 3:
        c->pe.phi_proj = PHI_LOW_RANK;
        c->pe.conv_act = ACT_NONE;
        c->pe.bias = c->pe.phase_gate = 1;
        break;
    case 4:
        c->pe.skip_conv = 1;
        c->pe.temp_type = TEMP_TAN;
        c->pe.temp_theta = 0.9;
        c->pe.temp_max = 2;
        c->pe.temp_grad = 1;
        break;
    case 5:
        c->pe.bias = c->pe.phase_gate = 1;
        c->pe.temp_max = 3;
        c->doc_mask = 1;
        break;
    }
}

void apply_mixer_option(ModelConfig *c, int on) {
    if (c->mixer == MIXER_FOX)
        c->output_gate = c->output_norm = c->qk_norm = c->k_shift = c->v_shift = on;
    else if (c->mixer == MIXER_TRANSFORMER)
        c->qk_norm = on;
    else if (c->mixer == MIXER_MAMBA2)
        c->n_groups = 1 + on, c->use_conv_bias = on;
    else if (c->mixer == MIXER_LRU) /* the paper's default ring, or a narrow one near 1 (LRA's) */
        c->r_min = on ? 0.9 : 0, c->r_max = on ? 0.999 : 0.99, c->max_phase = on ? 0.314 : 6.28;
    else if (c->mixer == MIXER_ROTRNN) /* one head of 8 state channels, or two of 4 */
        c->num_heads = 1 + on, c->state_size = 8;
    else if (family_carries(
                 family_of(c->mixer))) { /* the recurrent cells: the papers' model shape: the RNN
                                          * layers alone, and the other activation (modReLU for the
                                          * tanh cells, tanh for expRNN, nnRNN and EURNN) */
        c->block = on ? BLOCK_RNN : BLOCK_PRENORM,
        c->orth_init = on ? ORTH_INIT_HENAFF : ORTH_INIT_CAYLEY;
        if (on && c->mixer != MIXER_LSTM)
            c->nonlinearity = family_of(c->mixer)->modrelu ? RNN_NONLIN_TANH : RNN_NONLIN_MODRELU;
        if (c->mixer == MIXER_EURNN)
            c->capacity = on ? 5 : 2; /* odd: the last layer rotates the even pairs */
    } else
        c->short_conv = on;
    if (c->mixer == MIXER_DELTANET) c->use_gate = !on; /* on: fla's default, conv and no gate */
}

const char *mixer_option_name(const ModelConfig *c, int on) {
    switch (c->mixer) {
    case MIXER_GLA: return on ? "gla-conv" : "gla-noconv";
    case MIXER_GDN: return on ? "gdn-conv" : "gdn-noconv";
    case MIXER_FOX: return on ? "fox-pro" : "fox-plain";
    case MIXER_TRANSFORMER: return on ? "transformer-qknorm" : "transformer";
    case MIXER_DELTANET: return on ? "deltanet-conv" : "deltanet-noconv-gate";
    case MIXER_MAMBA2: return on ? "mamba2-groups-bias" : "mamba2-plain";
    case MIXER_LRU: return on ? "lru-ring0.9" : "lru-ring0";
    case MIXER_ROTRNN: return on ? "rotrnn-2heads" : "rotrnn-1head";
    case MIXER_RNN: return on ? "rnn-rnnblock-modrelu" : "rnn-prenorm";
    case MIXER_RNN_ORTH: return on ? "rnn_orth-rnnblock-modrelu" : "rnn_orth-prenorm";
    case MIXER_EXPRNN: return on ? "exprnn-rnnblock-henaff-tanh" : "exprnn-prenorm-cayley";
    case MIXER_NNRNN: return on ? "nnrnn-rnnblock-henaff-tanh" : "nnrnn-prenorm-cayley";
    case MIXER_LSTM: return on ? "lstm-rnnblock" : "lstm-prenorm";
    case MIXER_EURNN: return on ? "eurnn-rnnblock-tanh-L5" : "eurnn-prenorm-L2";
    }
    return "?";
}

void run_pe_variants(MixerKind mixer, int option, VariantCheck check) {
    for (int k = 0; k < N_PE_VARIANTS; k++) {
        ModelConfig x = tu_tiny_model(mixer, 2);
        apply_mixer_option(&x, option);
        if (!pe_variant_applies(&x, k)) continue;
        apply_pe_variant(&x, k);
        char label[160];
        snprintf(label, sizeof label, "%s %s", mixer_option_name(&x, option),
                 pe_variant_name(&x, k));
        double e = check(&x, label);
        printf("    %-45s worst %.2e\n", label, e);
    }
}

void run_both_options(MixerKind mixer, VariantCheck check) {
    run_pe_variants(mixer, 0, check);
    run_pe_variants(mixer, 1, check);
}

void apply_hybrid(ModelConfig *c, int k) {
    snprintf(c->mixers, sizeof c->mixers, "%s", k == 1 ? "gla base_conv" : "base_conv gla");
    c->mlp = k == 2 ? MLP_NONE : MLP_IDENTITY;
    c->short_conv = k == 2;
    c->tie_embeddings = k == 0;
    c->norm = k == 0 ? NORM_LAYER : NORM_RMS;
    c->base_conv_kernel = k == 2 ? 4 : 3; /* Zoology's 3, and the widest */
}

const char *hybrid_name(int k) {
    static const char *const names[N_HYBRIDS] = {"base_conv+gla-identity", "gla+base_conv-identity",
                                                 "base_conv4+gla-conv-nomlp"};
    return names[k];
}

void run_hybrid_variants(VariantCheck check) {
    for (int h = 0; h < N_HYBRIDS; h++)
        for (int k = 0; k < N_PE_VARIANTS; k++) {
            if (h && k != 0 && k != 3)
                continue; /* the other shapes: NoPE and Selective RoPE's options */
            ModelConfig x = tu_tiny_model(MIXER_GLA, 3);
            apply_hybrid(&x, h);
            apply_pe_variant(&x, k);
            char label[160];
            snprintf(label, sizeof label, "%s %s", hybrid_name(h), pe_variant_name(&x, k));
            double e = check(&x, label);
            printf("    %-45s worst %.2e\n", label, e);
        }
}

/* The mixers of run_variant_tests. */
static const MixerKind BOTH_OPTION_MIXERS[] = {MIXER_LRU,      MIXER_ROTRNN, MIXER_RNN,
                                               MIXER_RNN_ORTH, MIXER_EXPRNN, MIXER_EURNN,
                                               MIXER_NNRNN,    MIXER_LSTM};
#define N_BOTH_OPTION_MIXERS ((int)(sizeof BOTH_OPTION_MIXERS / sizeof BOTH_OPTION_MIXERS[0]))

typedef struct {
    MixerKind mixer;
    VariantCheck check;
} MixerTest;

static void run_mixer_test(const void *arg) {
    const MixerTest *t = arg;
    run_both_options(t->mixer, t->check);
}

static void run_hybrid_test(const void *arg) {
    run_hybrid_variants(((const MixerTest *)arg)->check);
}

int run_variant_tests(const TestCase *tests, int n, const char *prefix, VariantCheck check,
                      int argc, char **argv) {
    MixerTest mixer_tests[N_BOTH_OPTION_MIXERS];
    char names[N_BOTH_OPTION_MIXERS][64];
    TestRow *rows = malloc(sizeof(TestRow) * (size_t)(n + N_BOTH_OPTION_MIXERS + 1));
    for (int i = 0; i < n; i++) rows[i] = th_row(&tests[i]);
    for (int i = 0; i < N_BOTH_OPTION_MIXERS; i++) {
        mixer_tests[i] = (MixerTest){BOTH_OPTION_MIXERS[i], check};
        snprintf(names[i], sizeof names[i], "%s_%s", prefix, mixer_name(BOTH_OPTION_MIXERS[i]));
        rows[n + i] = (TestRow){names[i], run_mixer_test, &mixer_tests[i]};
    }
    char hybrid[64];
    snprintf(hybrid, sizeof hybrid, "%s_hybrid", prefix);
    MixerTest hybrid_test = {MIXER_GLA, check};
    rows[n + N_BOTH_OPTION_MIXERS] = (TestRow){hybrid, run_hybrid_test, &hybrid_test};
    int rc = th_run_rows(rows, n + N_BOTH_OPTION_MIXERS + 1, argc, argv);
    free(rows);
    return rc;
}
