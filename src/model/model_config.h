/* Model hyper-parameters (docs/models.md, §backbone to §named-configurations). Filled from the
 * [model] and [pe] sections of a run config (src/config/run_config.c) or from a checkpoint's
 * config.json (hf_config.c). */
#ifndef ROTOR_MODEL_CONFIG_H
#define ROTOR_MODEL_CONFIG_H

#include "backend.h"
#include "model/family_list.h"

/* The model families (model.type), listed in model/family_list.h; model/family.h describes each. */
#define ROTOR_MIXER_ENUM(kind, desc) MIXER_##kind,
#define ROTOR_MIXER_COUNT(kind, desc) +1
typedef enum { ROTOR_FAMILIES(ROTOR_MIXER_ENUM) } MixerKind;
enum { N_MIXERS = 0 ROTOR_FAMILIES(ROTOR_MIXER_COUNT) };
#undef ROTOR_MIXER_ENUM
#undef ROTOR_MIXER_COUNT
typedef enum { PE_NOPE = 0, PE_ROPE = 1, PE_SELECTIVE = 2 } PEKind;
typedef enum { PHI_WEIGHT_NORM = 0, PHI_LOW_RANK = 1 } PhiProj;
typedef enum { TEMP_ROPE = 0, TEMP_TAN = 1 } TempKind;

/* Position embedding (docs/models.md §position-embeddings). */
typedef struct {
    PEKind kind;
    double rope_theta;   /* RoPE base, 500000 */
    PhiProj phi_proj;    /* Selective RoPE angle projection */
    int phi_rank;        /* low_rank rank r (default 32) */
    Activation conv_act; /* ACT_NONE or ACT_SILU on the angle short conv */
    int skip_conv;       /* first difference instead of the conv */
    int bias;            /* phi += exp(b) */
    int phase_gate;      /* phi *= sigmoid(x W + b), one gate per head */
    TempKind temp_type;  /* rope: temp_max theta^(-2j/dk); tan: tan(theta_j/2) rescaled */
    double temp_theta;   /* 5e5 for rope, in (0,1) for tan (default 0.995) */
    double temp_max;     /* largest temperature */
    int temp_grad;       /* temperatures are trained */
} PEConfig;

/* What the backbone's final-normed hidden states feed: the LM head (next-token logits at
 * every position), mad-lab's auto-encoder decoder (docs/models.md §autoencoder-head: the last
 * position's state decodes every position; MAD's compression task), or a sequence classifier
 * (§classification: the states pooled over each sequence, then class logits). */
typedef enum { HEAD_LM, HEAD_AUTOENCODER, HEAD_CLASSIFIER } ModelHead;
/* The classifier's pooling over a sequence's positions (up to its labeled last token). */
typedef enum { POOL_MEAN, POOL_LAST } PoolKind;
/* The classifier's reading of the rows (docs/models.md §classification): one sequence per row, or
 * pairs (LRA's dual encoder: rows 2i and 2i + 1 are one example's two documents), whose pooled
 * states u, v combine into [u, v, u v, u - v] (nli, LRA's NLI interaction) or [u, v] (concat), then
 * an MLP of two ReLU layers gives the pair's logits. */
typedef enum { PAIR_NONE, PAIR_NLI, PAIR_CONCAT } PairKind;
/* How tokens enter the backbone: a learned embedding per token id, or a linear map of the
 * token id read as a value, (id - input_offset) / input_scale (pixels, audio samples;
 * docs/models.md §classification). */
typedef enum { INPUT_EMBEDDING, INPUT_LINEAR } InputKind;
/* The residual block around the mixer (docs/models.md §backbone, §block-dropout-bidirectional,
 * §nonlinear-rnns): prenorm, h += Mixer(RMSNorm(h)) then h += SwiGLU-MLP(RMSNorm(h)) (Mamba2: no
 * MLP), a final norm before the head; lra, the S5/LRU/RotRNN code's block h +=
 * Drop(GLU(Drop(GELU(Mixer(RMSNorm(h)))))) without an MLP; or rnn, h = Mixer(h) with no norm, no
 * residual, no MLP and no final norm (the single-RNN-layer models of nnRNN and expRNN). */
typedef enum { BLOCK_PRENORM, BLOCK_LRA, BLOCK_RNN } BlockKind;
/* What follows the mixer in a prenorm block (docs/models.md §backbone, §zoology-shape): auto
 * (SwiGLU, or nothing for a family whose blocks have no MLP: Mamba2, and outside prenorm blocks),
 * the SwiGLU MLP, identity (Zoology's state_mixer = Identity: h += Norm(h), the norm's output added
 * back), or nothing. */
typedef enum { MLP_AUTO, MLP_SWIGLU, MLP_IDENTITY, MLP_NONE } MlpKind;
/* The backbone's norms (the blocks' and the final one; docs/models.md §backbone, §zoology-shape):
 * RMSNorm, or LayerNorm with a bias (Zoology's). The mixers' own norms stay RMSNorms. */
typedef enum { NORM_RMS, NORM_LAYER } NormKind;
/* The mixer of a layer (docs/models.md §zoology-shape): the family's (model.type), or Zoology's
 * BaseConv. */
typedef enum { LAYER_FAMILY, LAYER_BASE_CONV } LayerMixer;
enum { MAX_LAYER_MIXERS = 8 };
/* What one dropout draw covers (docs/models.md §block-dropout-bidirectional): one element of one
 * token, or one channel of a whole batch row (every position of the row shares it, as the papers'
 * nn.Dropout with broadcast_dims over time). */
typedef enum { DROPOUT_ELEMENT, DROPOUT_CHANNEL } DropoutMask;
/* The skew-symmetric log of the initial orthogonal matrix of expRNN and nnRNN (§nonlinear-rnns):
 * 2x2 blocks with angles from Henaff et al. (U(-pi, 0)) or the Cayley init (-tan(u/2), u ~ U(0,
 * pi/2)). */
typedef enum { ORTH_INIT_CAYLEY, ORTH_INIT_HENAFF } OrthInit;
/* The nonlinear RNN cells' activation (docs/models.md §nonlinear-rnns): auto = tanh for rnn and
 * rnn_orth, modReLU for exprnn and nnrnn (nnRNN's --nonlin gives modReLU to every cell). */
typedef enum { RNN_NONLIN_AUTO, RNN_NONLIN_TANH, RNN_NONLIN_MODRELU } RnnNonlinearity;

typedef struct {
    MixerKind mixer;
    ModelHead head;
    int num_classes; /* classifier: classes */
    PoolKind pool;   /* classifier: pooling */
    PairKind pair;   /* classifier: one sequence per row, or pairs of rows */
    int pair_mlp;    /* classifier with pairs: the MLP's widths, pair_mlp and pair_mlp / 2 */
    InputKind input;
    double
        input_scale; /* INPUT_LINEAR: the value of token id v is (v - input_offset) / input_scale */
    double input_offset; /* INPUT_LINEAR: 0 for pixels; 32768 for 16-bit audio samples carried as s
                            + 32768 */
    BlockKind block;
    MlpKind mlp;
    NormKind norm;
    int tie_embeddings; /* the LM head's weight is the embedding table (docs/models.md §backbone,
                           §zoology-shape) */
    /* model.mixers: the layers' mixers as a cycle over the layers, Zoology's Hybrid (layer l
     * takes entry l mod n); "" = model.type in every layer (model_layer_mixer) */
    char mixers[64];
    int base_conv_kernel; /* BaseConv's conv taps, 1 to 4 (Zoology's kernel_size, §zoology-shape) */
    double dropout;       /* probability of dropping, in [0, 1); training passes only */
    double embed_dropout; /* the same of the embedding's output (Zoology's embed_dropout,
                             §zoology-shape) */
    DropoutMask dropout_mask;
    int bidirectional; /* LRU, RotRNN with the classifier: a second scan in reverse time */
    int vocab_size;
    int hidden_size;       /* d */
    int num_layers;        /* L */
    int num_heads;         /* H */
    double hidden_ratio;   /* MLP ratio; intermediate = 256 ceil(int(d ratio 2/3) / 256) */
    int intermediate_size; /* explicit MLP width, 0 = from hidden_ratio */
    double norm_eps;       /* every RMSNorm but the QK-norm (1e-5) */
    double init_std;       /* N(0, init_std) init of linears, embeddings, convs */
    /* GLA (expand_k, expand_v also DeltaNet's) */
    double expand_k, expand_v;    /* expand_v is shared with GDN */
    int short_conv;               /* GLA, GDN, DeltaNet: short conv on q, k, v */
    int gate_low_rank_dim;        /* 16 */
    double gate_logit_normalizer; /* 16 */
    /* GDN and Mamba2 */
    int head_dim;
    int use_gate; /* DeltaNet: output gate swish(x W_g) */
    /* Mamba2 (docs/models.md §mamba2): intermediate = expand d, H = intermediate / head_dim.
     * state_size is also the LRU's complex state width and RotRNN's real one (§lru, §rotrnn). */
    int expand, state_size, n_groups, use_conv_bias;
    /* LRU and RotRNN init (docs/models.md §lru, §rotrnn): eigenvalue moduli in [r_min, r_max] (the
     * LRU's ring, RotRNN's gamma), angles in [0, max_phase] */
    double r_min, r_max, max_phase;
    OrthInit orth_init; /* expRNN, nnRNN (docs/models.md §nonlinear-rnns) */
    /* nnRNN (docs/models.md §nonlinear-rnns): 0, or every eigenvalue modulus gamma_i held at this
     * value */
    double gamma_clamp;
    int capacity; /* EURNN: layers of rotations (docs/models.md §nonlinear-rnns) */
    RnnNonlinearity
        nonlinearity; /* rnn, rnn_orth, exprnn, nnrnn (docs/models.md §nonlinear-rnns) */
    /* FoX "Pro" flags (qk_norm also for the Transformer) */
    int output_gate, output_norm, qk_norm, k_shift, v_shift;
    /* data conventions */
    int doc_mask; /* restart every mixer at document starts (BOS tokens) */
    int bos_id, eos_id;
    int max_seq_len; /* context length the model is trained at (config.json only) */
    PEConfig pe;
} ModelConfig;

/* Logits per scored position: num_classes for the classifier, else vocab_size. */
int model_outputs(const ModelConfig *c);

/* The MLP of the blocks, model.mlp = auto resolved. */
MlpKind model_mlp(const ModelConfig *c);
/* The mixer of layer l (model.mixers). */
LayerMixer model_layer_mixer(const ModelConfig *c, int l);

/* Per-head dimensions of the mixer's q/k (key) and v (value); mlp_width 0: blocks without
 * an MLP (Mamba2). Mamba2: dk = state_size, dv = head_dim. LRU and RotRNN: dk = dv = the
 * real state width per head (LRU: one head of 2 state_size reals; RotRNN: state_size /
 * num_heads), key_dim = value_dim = the whole real state. The nonlinear RNNs (§nonlinear-rnns,
 * §lstm): one head of dk = dv = d, their state width; mlp_width 0 with model.block = rnn. */
typedef struct {
    int H, dk, dv, key_dim, value_dim, mlp_width;
} ModelDims;

/* Derives dimensions; returns NULL or a message (static storage) naming the problem. */
const char *model_dims(const ModelConfig *c, ModelDims *out);
/* The config keys that set the mixer's head sizes, with their values ("model.hidden_size =
 * 64, model.num_heads = 4, model.expand_k = 0.5, model.expand_v = 1"), in static storage. */
const char *model_head_keys(const ModelConfig *c);
/* Whether a nonlinear RNN cell of the config uses modReLU (else tanh), model.nonlinearity
 * resolved for its type. */
int rnn_modrelu(const ModelConfig *c);

/* What the backward recomputes instead of keeping from the forward (train.recompute,
 * docs/training.md "Memory for speed"): NONE keeps the normalised inputs of the mixer and the
 * MLP and swish(gate) * up of every layer; DEFAULT recomputes those three elementwise passes;
 * MIXER also re-runs every layer's mixer forward before its backward, so one layer's mixer
 * activations serve all layers; BLOCK re-runs each whole block from its input h[l], so
 * one layer's block activations (the mixer's, the MLP's and the residual after the mixer)
 * serve all layers. The gradients are the same in every mode. */
typedef enum { RECOMPUTE_DEFAULT, RECOMPUTE_NONE, RECOMPUTE_MIXER, RECOMPUTE_BLOCK } Recompute;

/* The spellings of a choice, indexed by its enum's values. */
typedef struct {
    const char *const *names;
    int n;
} NameSet;
#define NAME_SET(...)                                                                              \
    {                                                                                              \
        (const char *const[]){__VA_ARGS__},                                                        \
            (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))               \
    }
/* The [model] section's choices, as the run config's values, config.json's rotor_* keys and
 * messages spell them (model_config.c). */
extern const NameSet PE_NAMES, HEAD_NAMES, POOL_NAMES, PAIR_NAMES, INPUT_NAMES, BLOCK_NAMES,
    MLP_NAMES, NORM_NAMES, DROPOUT_MASK_NAMES, ORTH_INIT_NAMES, NONLINEARITY_NAMES;

/* model.type: "gla", "gated_deltanet", ... (the family descriptors) */
const char *mixer_name(MixerKind k);
/* pe.type: "nope", "rope", "selective" */
const char *pe_name(PEKind k);

#endif
