/* The model variants the whole-model tests sweep: for each mixer, its option switched off
 * and on (GLA/GDN short conv; DeltaNet short conv, its output gate when off; FoX the Pro
 * flags; Transformer QK-norm; the others below), times six position embeddings covering
 * every Selective RoPE option. */
#ifndef ROTOR_TEST_VARIANTS_H
#define ROTOR_TEST_VARIANTS_H

#include "harness.h"
#include "model/model_config.h"

#define N_PE_VARIANTS 6
extern const char *const PE_VARIANT_NAMES[N_PE_VARIANTS];

/* Sets the position embedding (and doc_mask for the last variant) of variant k. Mamba2, the
 * LRU, RotRNN and the nonlinear RNNs take NoPE only: of their variants only nope and the last (NoPE
 * with doc_mask) apply. */
void apply_pe_variant(ModelConfig *c, int k);
int pe_variant_applies(const ModelConfig *c, int k);
const char *pe_variant_name(const ModelConfig *c, int k);
/* GLA/GDN: short conv on q, k, v; DeltaNet: short conv, else the output gate; FoX: output
 * gate + norm, QK-norm, k/v shift; Transformer: QK-norm; Mamba2: two groups of B, C and the
 * conv bias; LRU: a narrow init ring near 1 and small phases instead of the paper's default;
 * RotRNN: two heads instead of one; the nonlinear RNNs (§nonlinear-rnns, §lstm): model.block = rnn
 * instead of prenorm (and for expRNN and nnRNN Henaff's init instead of Cayley's). */
void apply_mixer_option(ModelConfig *c, int on);
/* "gla-conv", "fox-pro", "transformer-qknorm", ... */
const char *mixer_option_name(const ModelConfig *c, int on);

/* Runs check on the two-layer tiny model (tu_tiny_model) of `mixer` with `option`, under
 * every position embedding that applies, and prints each variant's worst error. */
typedef double (*VariantCheck)(const ModelConfig *cfg, const char *label);
void run_pe_variants(MixerKind mixer, int option, VariantCheck check);
/* run_pe_variants with the option off, then on. */
void run_both_options(MixerKind mixer, VariantCheck check);

/* The hybrids of model.mixers and model.mlp (docs/models.md §zoology-shape), on GLA: k = 0
 * Zoology's (BaseConv then GLA without short conv, h += Norm(h) for the MLP, LayerNorms, the LM
 * head tied to the embedding), 1 the other order, 2 with GLA's short conv and no MLP.
 * run_hybrid_variants runs check on the three-layer tiny model of each, hybrid 0 under every
 * position embedding, the others under NoPE and one Selective RoPE. */
#define N_HYBRIDS 3
void apply_hybrid(ModelConfig *c, int k);
const char *hybrid_name(int k);
void run_hybrid_variants(VariantCheck check);

/* main() of a whole-model test program: the tests of `tests`, then one test per mixer whose
 * tests take both options at once (the LRU, RotRNN and the nonlinear RNNs, docs/models.md §lru,
 * §rotrnn, §nonlinear-rnns, §lstm), named <prefix>_<mixer name>, running run_both_options with
 * check, and <prefix>_hybrid running run_hybrid_variants. */
int run_variant_tests(const TestCase *tests, int n, const char *prefix, VariantCheck check,
                      int argc, char **argv);

#endif
