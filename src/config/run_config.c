/* Run config: one schema table (KEYS) drives defaults-in-help, parsing, range checks,
 * INI output and the help text. INI syntax is libinih's; this file only maps its
 * (section, key, value) callbacks onto RunConfig fields. */
#include "config/run_config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "data/mixture_spec.h"
#include "model/family.h"
#include "task/task.h"
#include "train/step_profile.h"
#include "util/error.h"
#include "util/fsutil.h"

/* ------------------------------------------------------------------------------------ */
/* Schema                                                                               */
/* ------------------------------------------------------------------------------------ */

typedef enum {
    T_INT,      /* int */
    T_I64,      /* int64_t */
    T_U64,      /* uint64_t */
    T_FLOAT,    /* double */
    T_BOOL,     /* int holding 0 or 1 */
    T_ENUM,     /* a C enum (int-sized) holding one Choice's value */
    T_ENUM_STR, /* a char array holding one Choice's name (run.device) */
    T_STR,      /* a char array */
} KeyType;

/* Allowed values of a float key. */
typedef enum { R_ANY, R_POS, R_NONNEG, R_UNIT /* [0, 1) */ } FloatRange;

typedef struct {
    const char *name;
    int value;
} Choice;

typedef struct {
    const char *section, *key;
    KeyType type;
    size_t offset, size;   /* the field inside RunConfig */
    const char *def;       /* the default, as a config file would write it */
    int64_t min;           /* integer keys: smallest allowed value */
    FloatRange range;      /* float keys */
    const Choice *choices; /* enum keys: allowed values, {NULL} terminated */
    const char *help;
} KeySpec;

static const char *const SECTIONS[] = {"model", "pe", "train", "data", "run", "task"};
#define NSECTIONS (sizeof SECTIONS / sizeof SECTIONS[0])

/* model.type: the family registry's names (model/family.h), filled by schema_init */
static Choice MIXERS[N_MIXERS + 1];
/* the [model] section's choices, from their spellings in model/model_config.c (schema_init) */
#define MAX_MODEL_CHOICES 4
static Choice ORTH_INITS[MAX_MODEL_CHOICES + 1], NONLINEARITIES[MAX_MODEL_CHOICES + 1],
    HEADS[MAX_MODEL_CHOICES + 1], POOLS[MAX_MODEL_CHOICES + 1], PAIRS[MAX_MODEL_CHOICES + 1],
    INPUTS[MAX_MODEL_CHOICES + 1], BLOCKS[MAX_MODEL_CHOICES + 1], MLPS[MAX_MODEL_CHOICES + 1],
    NORMS[MAX_MODEL_CHOICES + 1], DROPOUT_MASKS[MAX_MODEL_CHOICES + 1], PES[MAX_MODEL_CHOICES + 1];
static const Choice PHI_PROJS[] = {
    {"weight_norm", PHI_WEIGHT_NORM}, {"low_rank", PHI_LOW_RANK}, {NULL, 0}};
static const Choice CONV_ACTS[] = {{"none", ACT_NONE}, {"silu", ACT_SILU}, {NULL, 0}};
static const Choice TEMP_TYPES[] = {{"rope", TEMP_ROPE}, {"tan", TEMP_TAN}, {NULL, 0}};
static const Choice EXHAUSTED[] = {
    {"restart", DATA_EXHAUSTED_RESTART}, {"stop", DATA_EXHAUSTED_STOP}, {NULL, 0}};
static const Choice SCHEDULES[] = {{"cosine", SCHEDULE_COSINE},
                                   {"linear", SCHEDULE_LINEAR},
                                   {"constant", SCHEDULE_CONSTANT},
                                   {"wsd", SCHEDULE_WSD},
                                   {NULL, 0}};
static const Choice DECAY_SHAPES[] = {
    {"linear", DECAY_LINEAR}, {"cosine", DECAY_COSINE}, {"1-sqrt", DECAY_1_SQRT}, {NULL, 0}};
static const Choice KEEP_BESTS[] = {{"none", KEEP_BEST_NONE},
                                    {"val_loss", KEEP_BEST_VAL_LOSS},
                                    {"val_accuracy", KEEP_BEST_VAL_ACCURACY},
                                    {NULL, 0}};
static const Choice RECOMPUTES[] = {{"none", RECOMPUTE_NONE},
                                    {"default", RECOMPUTE_DEFAULT},
                                    {"mixer", RECOMPUTE_MIXER},
                                    {"block", RECOMPUTE_BLOCK},
                                    {NULL, 0}};
static const Choice TEXT_FORMATS[] = {{"raw", 0}, {"ptb", 1}, {NULL, 0}};
static const Choice OPTIMIZERS[] = {
    {"adamw", OPTIMIZER_ADAMW}, {"rmsprop", OPTIMIZER_RMSPROP}, {NULL, 0}};
static const Choice DEVICES[] = {{"cpu", 0}, {"cuda", 1}, {"auto", 2}, {NULL, 0}};
static const Choice COLLECTIVES[] = {{"auto", COLLECTIVES_AUTO},
                                     {"backend", COLLECTIVES_BACKEND},
                                     {"mpi", COLLECTIVES_MPI},
                                     {NULL, 0}};
/* task.type: "none" and the task registry's names and aliases (task/task.h), filled by schema_init
 */
static Choice TASKS[65];
static const Choice SPEECH_WORDS[] = {{"35", 35}, {"10", 10}, {NULL, 0}};
static const Choice DIFFICULTIES[] = {{"easy", 0}, {"intermediate", 1}, {"hard", 2}, {NULL, 0}};

#define FIELD(f) offsetof(RunConfig, f), sizeof(((RunConfig *)0)->f)
#define K_INT(s, k, f, def, min, h)                                                                \
    { s, k, T_INT, FIELD(f), def, min, R_ANY, NULL, h }
#define K_I64(s, k, f, def, min, h)                                                                \
    { s, k, T_I64, FIELD(f), def, min, R_ANY, NULL, h }
#define K_U64(s, k, f, def, h)                                                                     \
    { s, k, T_U64, FIELD(f), def, 0, R_ANY, NULL, h }
#define K_FLT(s, k, f, def, r, h)                                                                  \
    { s, k, T_FLOAT, FIELD(f), def, 0, r, NULL, h }
#define K_BOOL(s, k, f, def, h)                                                                    \
    { s, k, T_BOOL, FIELD(f), def, 0, R_ANY, NULL, h }
#define K_ENUM(s, k, f, def, ch, h)                                                                \
    { s, k, T_ENUM, FIELD(f), def, 0, R_ANY, ch, h }
#define K_ENUM_STR(s, k, f, def, ch, h)                                                            \
    { s, k, T_ENUM_STR, FIELD(f), def, 0, R_ANY, ch, h }
#define K_STR(s, k, f, def, h)                                                                     \
    { s, k, T_STR, FIELD(f), def, 0, R_ANY, NULL, h }

/* Every key with its default, grouped by section in SECTIONS order (the order of the INI output
 * and help). Keys of one field (a family's own name for it) share its default. */
static const KeySpec KEYS[] = {
    K_ENUM("model", "type", model.mixer, "gla", MIXERS, "token mixer"),
    K_ENUM("model", "head", model.head, "lm", HEADS,
           "output head: lm (next token), autoencoder (mad-lab's compression decoder; task.type = "
           "mad_compression sets it), or classifier (one class per sequence, labeled at its last "
           "token)"),
    K_INT("model", "num_classes", model.num_classes, "10", 2, "classifier: classes"),
    K_ENUM("model", "pool", model.pool, "mean", POOLS,
           "classifier: the mean of a sequence's states, or its last token's"),
    K_ENUM("model", "pair", model.pair, "none", PAIRS,
           "classifier: none (one sequence per row), or rows 2i, 2i+1 are one example's two "
           "documents (task.type = aan), pooled into u, v and combined as [u, v, u*v, u-v] (nli) "
           "or [u, v] (concat) before an MLP"),
    K_INT("model", "pair_mlp", model.pair_mlp, "512", 2,
          "classifier with pairs: the widths of the MLP's two ReLU layers, pair_mlp and pair_mlp / "
          "2 (LRA's mlp_dim)"),
    K_ENUM("model", "input", model.input, "embedding", INPUTS,
           "input encoder: a learned embedding per token, or linear ((token id - input_offset) / "
           "input_scale times a learned vector plus a bias: pixels, audio samples)"),
    K_FLT("model", "input_scale", model.input_scale, "255", R_POS,
          "linear input: token id v enters as (v - input_offset) / input_scale"),
    K_FLT("model", "input_offset", model.input_offset, "0", R_NONNEG,
          "linear input: the token id of value 0 (0 for pixels; 32768 for speech_commands' 16-bit "
          "samples s, carried as s + 32768)"),
    K_ENUM("model", "block", model.block, "prenorm", BLOCKS,
           "residual block: prenorm (h += Mixer(RMSNorm(h)), then h += SwiGLU-MLP(RMSNorm(h))), "
           "lra (the S5/LRU/RotRNN code's h += Drop(GLU(Drop(GELU(Mixer(RMSNorm(h)))))), no MLP; "
           "docs/models.md §block-dropout-bidirectional) or rnn (h = Mixer(h) alone, no norm, "
           "residual, MLP or final norm: the nnRNN/expRNN models, §nonlinear-rnns)"),
    K_ENUM("model", "mlp", model.mlp, "auto", MLPS,
           "what follows the mixer in a prenorm block: auto (swiglu; none for mamba2), swiglu (h "
           "+= SwiGLU-MLP(RMSNorm(h))), identity (h += RMSNorm(h): Zoology's state_mixer = "
           "Identity, docs/models.md §zoology-shape) or none"),
    K_ENUM("model", "norm", model.norm, "rmsnorm", NORMS,
           "the backbone's norms (the blocks' and the final one): rmsnorm, or layernorm with a "
           "bias (Zoology's; docs/models.md §zoology-shape); the mixers' own norms stay RMSNorms"),
    K_BOOL("model", "tie_embeddings", model.tie_embeddings, "false",
           "the LM head's weight is the embedding table (Zoology's models; config.json "
           "tie_word_embeddings; docs/models.md §zoology-shape)"),
    K_INT("model", "base_conv_kernel", model.base_conv_kernel, "3", 1,
          "the taps of BaseConv's depthwise causal conv, 1 to 4 (Zoology's kernel_size, its "
          "default 3; docs/models.md §zoology-shape)"),
    K_STR("model", "mixers", model.mixers, "",
          "the layers' mixers, a cycle over the layers as Zoology's Hybrid: \"base_conv gla\" "
          "makes layers 0, 2, ... BaseConv (docs/models.md §zoology-shape) and 1, 3, ... "
          "model.type; empty: model.type in every layer"),
    K_FLT("model", "dropout", model.dropout, "0", R_UNIT,
          "dropout probability in training passes (prenorm: after the mixer and after the MLP; "
          "lra: after the GELU and after the GLU); 0 = none"),
    K_FLT("model", "embed_dropout", model.embed_dropout, "0", R_UNIT,
          "dropout probability of the embedding's output in training passes (Zoology's "
          "embed_dropout, docs/models.md §zoology-shape); 0 = none"),
    K_ENUM("model", "dropout_mask", model.dropout_mask, "element", DROPOUT_MASKS,
           "one dropout draw per element, or per channel of a batch row shared by all its "
           "positions (the papers' code)"),
    K_BOOL("model", "bidirectional", model.bidirectional, "false",
           "with the classifier head: a second scan in reverse time with its own readout, summed"),
    K_INT("model", "vocab_size", model.vocab_size, "32000", 2, "vocabulary size V"),
    K_INT("model", "hidden_size", model.hidden_size, "1024", 1, "model width d"),
    K_INT("model", "num_layers", model.num_layers, "24", 1, "number of blocks L"),
    K_INT("model", "num_heads", model.num_heads, "4", 1, "mixer heads H"),
    K_FLT("model", "hidden_ratio", model.hidden_ratio, "4", R_POS,
          "MLP ratio (width 256*ceil(int(d*ratio*2/3)/256))"),
    K_INT("model", "intermediate_size", model.intermediate_size, "0", 0,
          "explicit MLP width, 0 = from hidden_ratio"),
    K_FLT("model", "norm_eps", model.norm_eps, "1e-6", R_POS,
          "epsilon of the backbone's norms and the mixers' RMSNorms"),
    K_FLT("model", "init_std", model.init_std, "0.02", R_POS, "std of the normal init of weights"),
    K_FLT("model", "expand_k", model.expand_k, "0.5", R_POS,
          "key width = d * expand_k (fla's DeltaNet: 1)"),
    K_FLT("model", "expand_v", model.expand_v, "1", R_POS, "value width factor"),
    K_BOOL("model", "short_conv", model.short_conv, "true", "short conv on q, k, v"),
    K_INT("model", "gate_low_rank_dim", model.gate_low_rank_dim, "16", 1,
          "rank of the gate projection"),
    K_FLT("model", "gate_logit_normalizer", model.gate_logit_normalizer, "16", R_POS,
          "gate logits divided by this"),
    K_INT("model", "key_head_dim", model.head_dim, "128", 1, "per-head key width (fla's head_dim)"),
    K_INT("model", "value_head_dim", model.head_dim, "128", 1,
          "per-head value width (fla's head_dim; heads = expand x hidden_size / value_head_dim)"),
    K_BOOL("model", "use_gate", model.use_gate, "false", "output gate swish(x W_g) (g_proj)"),
    K_INT("model", "expand", model.expand, "2", 1, "intermediate width = d * expand"),
    K_INT("model", "state_size", model.state_size, "128", 1,
          "SSM state size per group (the key width)"),
    K_INT("model", "complex_state_size", model.state_size, "128", 1, "complex state channels"),
    K_INT("model", "real_state_size", model.state_size, "128", 1,
          "real state width (num_heads x an even width)"),
    K_INT("model", "n_groups", model.n_groups, "1", 1,
          "groups of B, C (each read by heads / n_groups heads)"),
    K_BOOL("model", "use_conv_bias", model.use_conv_bias, "true", "bias in the conv over x, B, C"),
    K_FLT("model", "r_min", model.r_min, "0.9", R_UNIT,
          "smallest eigenvalue modulus |lambda| at init"),
    K_FLT("model", "r_max", model.r_max, "0.999", R_UNIT,
          "largest eigenvalue modulus |lambda| at init (< 1)"),
    K_FLT("model", "gamma_min", model.r_min, "0.9", R_UNIT, "smallest decay gamma at init (> 0)"),
    K_FLT("model", "gamma_max", model.r_max, "0.999", R_UNIT, "largest decay gamma at init (< 1)"),
    K_FLT("model", "max_phase", model.max_phase, "6.28", R_POS,
          "eigenvalue angles at init in [0, max_phase]"),
    K_FLT("model", "gamma_clamp", model.gamma_clamp, "0", R_NONNEG,
          "nnRNN: 0 = the eigenvalue moduli gamma_i are learned; else all held at this value (not "
          "trained, no gamma_penalty: the nnRNN supplement's Table 7)"),
    K_ENUM("model", "orth_init", model.orth_init, "cayley", ORTH_INITS,
           "initial orthogonal matrix, 2x2 rotations by Cayley's or Henaff's angles"),
    K_INT("model", "capacity", model.capacity, "2", 1,
          "eurnn: layers of 2x2 rotations of channel pairs in W (Jing et al.'s capacity L; L = "
          "hidden_size spans every rotation)"),
    K_ENUM("model", "nonlinearity", model.nonlinearity, "auto", NONLINEARITIES,
           "the cell's activation; auto = tanh for rnn and rnn_orth, modrelu (with its own bias) "
           "for exprnn and nnrnn (nnRNN's scripts give every cell modrelu)"),
    K_BOOL("model", "output_gate", model.output_gate, "false", "FoX-Pro: output gate"),
    K_BOOL("model", "output_norm", model.output_norm, "false", "FoX-Pro: output norm"),
    K_BOOL("model", "qk_norm", model.qk_norm, "false", "FoX-Pro and Transformer: QK norm"),
    K_BOOL("model", "k_shift", model.k_shift, "false", "FoX-Pro: key shift"),
    K_BOOL("model", "v_shift", model.v_shift, "false", "FoX-Pro: value shift"),
    K_BOOL("model", "doc_mask", model.doc_mask, "false",
           "restart every mixer at document starts (BOS)"),
    K_INT("model", "bos_id", model.bos_id, "1", -1,
          "beginning-of-document token id (-1: none; data.train = task sets -1)"),
    K_INT("model", "eos_id", model.eos_id, "2", -1,
          "end-of-document token id (-1: none; data.train = task sets -1)"),

    K_ENUM("pe", "type", model.pe.kind, "nope", PES, "position embedding"),
    K_FLT("pe", "rope_theta", model.pe.rope_theta, "500000", R_POS, "RoPE base"),
    K_ENUM("pe", "phi_proj", model.pe.phi_proj, "weight_norm", PHI_PROJS,
           "Selective RoPE angle projection"),
    K_INT("pe", "phi_rank", model.pe.phi_rank, "32", 1, "rank of the low_rank projection"),
    K_ENUM("pe", "conv_act", model.pe.conv_act, "silu", CONV_ACTS,
           "activation of the angle short conv"),
    K_BOOL("pe", "skip_conv", model.pe.skip_conv, "false",
           "first difference instead of the angle conv"),
    K_BOOL("pe", "bias", model.pe.bias, "false", "add exp(b) to the angles"),
    K_BOOL("pe", "phase_gate", model.pe.phase_gate, "false", "per-head sigmoid gate on the angles"),
    K_ENUM("pe", "temp_type", model.pe.temp_type, "rope", TEMP_TYPES, "temperature schedule"),
    K_FLT("pe", "temp_theta", model.pe.temp_theta, "500000", R_POS,
          "temperature base: >= 1 for rope; in (0,1) for tan, where the default is 0.995"),
    K_FLT("pe", "temp_max", model.pe.temp_max, "1", R_POS, "largest temperature"),
    K_BOOL("pe", "temp_grad", model.pe.temp_grad, "false", "train the temperatures"),

    K_INT("train", "seq_len", train.seq_len, "2048", 1,
          "context length T (also the model's max_seq_len)"),
    K_INT("train", "micro_batch", train.micro_batch, "8", 1, "rows per forward/backward"),
    K_INT("train", "grad_accum", train.grad_accum, "1", 1, "micro-batches per optimizer step"),
    K_I64("train", "steps", train.steps, "1000", 1, "optimizer steps"),
    K_FLT("train", "lr", train.lr, "0.001", R_POS, "peak learning rate"),
    K_FLT("train", "lr_start", train.lr_start, "1e-5", R_NONNEG,
          "learning rate at the start of warmup"),
    K_FLT("train", "lr_min", train.lr_min, "0.0001", R_NONNEG,
          "learning rate at the last step (cosine and linear schedules)"),
    K_FLT("train", "warmup_frac", train.warmup_frac, "0.1", R_UNIT,
          "fraction of steps of linear warmup"),
    K_ENUM("train", "schedule", train.schedule, "cosine", SCHEDULES,
           "decay from lr after the warmup: cosine or linear to lr_min, constant lr, or wsd "
           "(warmup, stable at lr, then train.decay_shape to lr_min over the last train.decay_frac "
           "of the steps)"),
    K_FLT("train", "decay_frac", train.decay_frac, "0.2", R_UNIT,
          "wsd: fraction of the steps, at the end, over which the learning rate decays to lr_min "
          "(0: no decay)"),
    K_ENUM("train", "decay_shape", train.decay_shape, "linear", DECAY_SHAPES,
           "wsd: the decay's shape, linear, cosine or 1-sqrt (lr_min + (lr - lr_min)(1 - "
           "sqrt(progress)))"),
    K_I64("train", "decay_start", train.decay_start, "0", 0,
          "wsd: the step at which the decay begins, instead of train.decay_frac; 0 = from "
          "decay_frac, or the step of train.decay_from's checkpoint"),
    K_STR("train", "init_from", train.init_from, "",
          "a model whose weights a new run starts from, with a fresh optimizer, schedule and data "
          "order: a rotor checkpoint or run directory (its latest checkpoint), or a Hugging Face / "
          "fla model directory (model.safetensors or the shards of model.safetensors.index.json; "
          "F32, BF16 or F16); names and shapes must match the run's model; a resumed run continues "
          "from its own checkpoint instead"),
    K_STR("train", "decay_from", train.decay_from, "",
          "wsd: a stable-phase checkpoint a decay run branches from into a fresh run.dir (its "
          "weights, optimizer state, step and data position, as --resume CHECKPOINT); the decay "
          "begins at its step unless train.decay_start says otherwise"),
    K_FLT("train", "plateau_factor", train.plateau_factor, "0", R_UNIT,
          "multiply every learning rate by this at each validation whose loss is not the best so "
          "far (nnRNN's halving: 0.5), on top of the schedule; 0 = off"),
    K_ENUM("train", "optimizer", train.optimizer, "adamw", OPTIMIZERS,
           "update rule: adamw (decoupled weight decay) or rmsprop (torch.optim.RMSprop: weight "
           "decay added to the gradient)"),
    K_FLT("train", "weight_decay", train.weight_decay, "0.1", R_NONNEG,
          "weight decay of the decayed parameters (AdamW: decoupled; RMSprop: added to the "
          "gradient)"),
    K_FLT("train", "lr_recurrent", train.lr_recurrent, "0", R_NONNEG,
          "peak lr of the recurrent parameters (RotRNN, LRU, nnRNN transitions), same schedule; 0 "
          "= train.lr"),
    K_FLT("train", "weight_decay_recurrent", train.weight_decay_recurrent, "0", R_NONNEG,
          "weight decay of the recurrent parameters"),
    K_FLT("train", "lr_orthogonal", train.lr_orthogonal, "0", R_NONNEG,
          "peak lr of the orthogonal parameters (nnRNN's and expRNN's skew-symmetric generators: "
          "their \"LR orth\"), same schedule; 0 = train.lr"),
    K_FLT("train", "weight_decay_orthogonal", train.weight_decay_orthogonal, "0", R_NONNEG,
          "weight decay of the orthogonal parameters"),
    K_FLT("train", "gamma_penalty", train.gamma_penalty, "0", R_NONNEG,
          "nnRNN: delta of the penalty delta sum (1 - gamma)^2 on the eigenvalue moduli (the "
          "authors' alam)"),
    K_FLT("train", "t_decay", train.t_decay, "0", R_NONNEG,
          "nnRNN: L2 decay of the non-normal part T (the authors' Tdecay): t_decay T added to its "
          "gradient"),
    K_FLT("train", "beta1", train.beta1, "0.9", R_UNIT, "AdamW beta1"),
    K_FLT("train", "beta2", train.beta2, "0.95", R_UNIT, "AdamW beta2"),
    K_FLT("train", "adam_eps", train.adam_eps, "1e-8", R_POS, "AdamW epsilon"),
    K_FLT("train", "rmsprop_alpha", train.rmsprop_alpha, "0.99", R_UNIT,
          "RMSprop: smoothing constant of the squared-gradient average"),
    K_FLT("train", "rmsprop_eps", train.rmsprop_eps, "1e-8", R_POS,
          "RMSprop: epsilon added to the root of the average"),
    K_FLT("train", "grad_clip", train.grad_clip, "1", R_NONNEG,
          "global gradient-norm clip, 0 = off"),
    K_U64("train", "seed", train.seed, "1234", "seed of initialisation and data order"),
    K_I64("train", "val_every", train.val_every, "100", 0, "steps between validations, 0 = never"),
    K_INT("train", "val_batches", train.val_batches, "8", 0,
          "micro-batches of every rank in the validation set (val_batches x micro_batch x ranks "
          "windows); unused when val_tokens > 0"),
    K_I64("train", "val_tokens", train.val_tokens, "0", 0,
          "validation set of this many tokens, the first ceil(val_tokens / seq_len) windows of the "
          "validation data, the same on any number of ranks (the Selective RoPE paper: 4M); 0 = "
          "val_batches"),
    K_STR("train", "eval_tasks", train.eval_tasks, "",
          "zero-shot tasks scored during training as `rotor eval` scores them (e.g. "
          "lambada_openai,piqa; the tokenizer is data.tokenizer), logged as eval_TASK_METRIC; "
          "empty = none"),
    K_I64(
        "train", "eval_every", train.eval_every, "0", 0,
        "steps between the zero-shot scores of train.eval_tasks (and at the last step); 0 = never"),
    K_I64("train", "eval_limit", train.eval_limit, "0", 0,
          "documents of each task scored during training, the first of its file (rotor eval "
          "--limit); 0 = all"),
    K_STR("train", "eval_data_dir", train.eval_data_dir, "",
          "the folder of the task files TASK.jsonl of train.eval_tasks (rotor eval --data-dir)"),
    K_I64("train", "log_every", train.log_every, "10", 1, "steps between metric lines"),
    K_I64("train", "checkpoint_every", train.checkpoint_every, "0", 0,
          "steps between checkpoints, 0 = only at the end"),
    K_INT("train", "keep_checkpoints", train.keep_checkpoints, "3", 0,
          "newest checkpoints kept, 0 = all"),
    K_BOOL("train", "async_checkpoint", train.async_checkpoint, "true",
           "write each checkpoint on a thread of its own from a host copy of the step, so that "
           "training goes on while it is written (the step stalls only for the copy; the copy is "
           "host memory of the weights and optimizer state, 12 bytes per parameter with AdamW on "
           "rank 0, kept for the run); a checkpoint still being written when the next is due is "
           "waited for; false = the step waits for the whole write"),
    K_ENUM("train", "keep_best", train.keep_best, "none", KEEP_BESTS,
           "keep the checkpoint of the best validation so far as RUN_DIR/checkpoints/best (ties: "
           "the earlier step); default val_accuracy for classification runs with validations, none "
           "otherwise (docs/classification.md)"),
    K_INT("train", "max_bad_steps", train.max_bad_steps, "5", 1,
          "consecutive non-finite steps before aborting"),
    K_BOOL("train", "zero", train.zero, "false",
           "ZeRO-1: shard the optimizer state across data-parallel ranks"),
    K_ENUM("train", "recompute", train.recompute, "default", RECOMPUTES,
           "what the backward recomputes instead of keeping from the forward: none (keeps the "
           "normalised inputs and swish(gate) * up of every layer: fastest, most memory), default "
           "(recomputes those elementwise passes), mixer (also re-runs each mixer's forward before "
           "its backward: one layer's mixer activations) or block (re-runs each block from its "
           "input: one layer's block activations); the same gradients; rotor info prints each "
           "one's memory"),
    K_BOOL("train", "carry_state", train.carry_state, "false",
           "task.type = chars with a recurrent cell (rnn, rnn_orth, exprnn, nnrnn, lstm): "
           "truncated backpropagation through time, the text read as ranks x micro_batch x "
           "grad_accum streams whose windows continue from their previous window's state (nnRNN's "
           "language task); validations score the whole valid text as task.eval_streams streams"),

    K_STR("data", "train", data.train, "",
          "training shards: a directory or glob of .h5 files, a weighted mixture of them "
          "([NAME=]PATH:WEIGHT, ...), synthetic:<task>, or task ([task] section) (required)"),
    K_STR("data", "val", data.val, "",
          "validation shards (or a mixture, as data.train), empty = windows held out from train "
          "(from every source of a mixture, mixed with data.train's weights)"),
    K_STR("data", "tokenizer", data.tokenizer, "",
          "tokenizer model whose sha256 the shards must carry (optional)"),
    K_INT("data", "prefetch", data.prefetch, "4", 1,
          "micro-batches read ahead by the loader thread"),
    K_STR("data", "stages", data.stages, "",
          "a mixture's weights from given steps on: STEP: NAME=WEIGHT, NAME=WEIGHT, ...; STEP: ... "
          "(every source named in each stage; empty = data.train's weights throughout)"),
    K_ENUM("data", "on_exhausted", data.on_exhausted, "restart", EXHAUSTED,
           "a training source that has served all its windows: restart (a new epoch in a fresh "
           "order) or stop (the run ends before the step that would need more, with a checkpoint)"),

    K_STR("run", "dir", run.dir, "runs/default", "run directory (metrics, checkpoints, plots)"),
    K_ENUM_STR("run", "device", run.device, "auto", DEVICES,
               "compute device: cpu, cuda, or auto (cuda when a GPU is visible)"),
    K_INT("run", "threads", run.threads, "0", 0, "CPU threads per rank, 0 = all cores"),
    K_BOOL("run", "tensorboard", run.tensorboard, "true",
           "TensorBoard event files of every metric in run.dir/tensorboard beside metrics.jsonl "
           "(tensorboard --logdir RUNS shows every run)"),
    K_STR("run", "profile_steps", run.profile_steps, "",
          "A:B: the backend's op timings of training steps A to B (from 1) as a Chrome / Perfetto "
          "trace and a table in run.dir/profile; \"\" = none"),
    K_FLT("run", "collective_timeout", run.collective_timeout, "600", R_NONNEG,
          "seconds a rank may wait for the others before the job is ended, 0 = forever"),
    K_FLT("run", "bucket_mb", run.bucket_mb, "25", R_POS,
          "MiB of gradients per data-parallel all-reduce, started during the backward as soon as "
          "they are final"),
    K_ENUM("run", "collectives", run.collectives, "auto", COLLECTIVES,
           "what sums the gradients of the data-parallel ranks: auto (the backend's own "
           "collectives, NCCL on cuda, when mpirun started the run; MPI otherwise), backend "
           "(always the backend's own), or mpi (MPI on host memory, a GPU's buffers copied through "
           "it: for several ranks on one GPU, which NCCL refuses; docs/distributed.md)"),

    K_ENUM_STR(
        "task", "type", task.type, "none", TASKS,
        "task of `rotor synth` (data.train = task): synthetic (copy_memory: nnRNN's copy task), "
        "classification (seq_image = images as pixel sequences, pathfinder, listops, text_bytes, "
        "aan = document pairs, speech_commands = raw 16 kHz waveforms), or chars (character-level "
        "language modelling on text files); parity, a3, s3, a5, s5 = state with that group"),
    K_INT("task", "vocab", task.vocab, "8192", 2,
          "mqar: vocabulary (keys [1, V/2), values [V/2, V)); mad: mad-lab's vocab_size"),
    K_INT("task", "num_kv_pairs", task.num_kv_pairs, "8", 1, "mqar: key-value pairs per example"),
    K_FLT("task", "power_a", task.power_a, "0.01", R_POS,
          "mqar: query gaps distributed as (g+1)^(a-1)"),
    K_BOOL("task", "random_non_queries", task.random_non_queries, "false",
           "mqar: random tokens between the queries instead of 0"),
    K_STR("task", "group", task.group, "S2",
          "state: group of the word problems (S2, A3, S3, A5, S5)"),
    K_INT("task", "test_len", task.test_len, "513", 2,
          "state: test sequence length in tokens, BOS + test_len - 1 elements (train: "
          "train.seq_len)"),
    K_INT("task", "min_string_len", task.min_len, "2", 1, "copy: shortest training string"),
    K_INT("task", "max_string_len", task.max_len, "64", 1, "copy: longest training string"),
    K_STR("task", "eval_lengths", task.eval_lengths, "2,4,8,16,32,64,128,256,512",
          "copy: comma-separated string lengths evaluated"),
    K_INT("task", "delay", task.delay, "200", 1,
          "copy_memory: nnRNN's T, the blanks from the last symbol to the marker (train.seq_len = "
          "delay + 2 copy_length follows)"),
    K_INT("task", "copy_length", task.copy_length, "10", 1,
          "copy_memory: symbols to remember and copy"),
    K_INT("task", "symbols", task.symbols, "8", 1,
          "copy_memory: alphabet size, at most 8 (tokens 1..symbols; blank 0, marker 9)"),
    K_INT("task", "seq_len", task.seq_len, "128", 2,
          "mad: mad-lab's seq_len; train.seq_len and model.vocab_size follow the task"),
    K_INT("task", "noise_vocab_size", task.noise_vocab_size, "0", 0,
          "mad: noise tokens (the top of the non-special vocabulary)"),
    K_FLT("task", "frac_noise", task.frac_noise, "0", R_UNIT,
          "mad: probability that a slot is noise"),
    K_INT("task", "k_motif_size", task.k_motif_size, "1", 1,
          "mad fuzzy recall: tokens of the longest key"),
    K_INT("task", "v_motif_size", task.v_motif_size, "1", 1,
          "mad fuzzy recall: tokens of the longest value"),
    K_BOOL(
        "task", "multi_query", task.multi_query, "true",
        "mad recall tasks: every repeated key is a query (else only the last, after a copy token)"),
    K_INT("task", "num_tokens_to_copy", task.num_tokens_to_copy, "16", 1,
          "mad selective copying: tokens to copy"),
    K_INT("task", "max_depth", task.max_depth, "10", 1,
          "listops: deepest node (the root is depth 1; nodes at max_depth are digits)"),
    K_INT("task", "max_args", task.max_args, "10", 2,
          "listops: an operator takes 2..max_args arguments"),
    K_INT("task", "min_length", task.min_length, "500", 0,
          "listops: expressions have more than min_length tokens"),
    K_INT("task", "max_length", task.max_length, "2000", 2,
          "listops: expressions have fewer than max_length tokens (generated: train.seq_len >= "
          "max_length - 1)"),
    K_INT("task", "classes", task.classes, "2", 2,
          "text_bytes, aan: labels are 0..classes-1 (IMDB: 2, neg and pos; AAN: 2, linked or not)"),
    K_STR("task", "path", task.path, "",
          "listops: directory of LRA's basic_{train,val,test}.tsv; text_bytes: aclImdb directory, "
          "or of {train,val,test}.tsv (label<TAB>text); aan: directory of LRA's "
          "new_aan_pairs.{train,eval,test}.tsv; pathfinder: LRA's resolution directory "
          "(pathfinder32, ..., pathfinder128 = Path-X); speech_commands: the Speech Commands "
          "directory (word/*.wav, validation_list.txt, testing_list.txt); empty: listops is "
          "generated; chars: a text file, or a directory of {train,valid,test}.txt or "
          "ptb.char.{train,valid,test}.txt"),
    K_ENUM_STR("task", "text_format", task.text_format, "raw", TEXT_FORMATS,
               "chars: raw (every UTF-8 character a symbol) or ptb (nnRNN's reading of PTB's "
               "character files: each line's whitespace-separated symbols, then <eos>)"),
    K_FLT("task", "valid_fraction", task.valid_fraction, "0.05", R_UNIT,
          "chars, one file: the fraction of its symbols before the test part held out for "
          "validation"),
    K_FLT("task", "test_fraction", task.test_fraction, "0.05", R_UNIT,
          "chars, one file: the fraction of its symbols at its end held out for testing"),
    K_INT("task", "eval_streams", task.eval_streams, "10", 1,
          "chars with train.carry_state: validation and `rotor synth` read the valid and test "
          "texts as this many streams, each carrying its state from window to window (nnRNN's "
          "eval_batch_size)"),
    K_ENUM_STR("task", "difficulty", task.difficulty, "hard", DIFFICULTIES,
               "pathfinder: LRA's split name, easy (curv_baseline), intermediate "
               "(curv_contour_length_9) or hard (curv_contour_length_14)"),
    K_I64("task", "train_examples", task.train_examples, "0", 0,
          "distinct training examples, cycled (0 = fresh ones forever)"),
    K_INT("task", "test_examples", task.test_examples, "1000", 1,
          "test examples (per length for copy)"),
    K_STR("task", "images", task.images, "",
          "seq_image: training images, an IDX file (MNIST format, plain or .gz) or a CIFAR-10 "
          "binary directory; train.seq_len follows its pixel count"),
    K_STR("task", "labels", task.labels, "", "seq_image: the IDX labels file of task.images"),
    K_STR("task", "test_images", task.test_images, "",
          "seq_image: the test split's IDX images (empty: task.images with train- replaced by "
          "t10k-)"),
    K_STR("task", "test_labels", task.test_labels, "",
          "seq_image: the test split's IDX labels (empty: task.labels with train- replaced by "
          "t10k-)"),
    K_BOOL("task", "permute", task.permute, "false",
           "seq_image: read the pixels in a fixed random order (permuted pixel MNIST)"),
    K_U64("task", "permute_seed", task.permute_seed, "1234",
          "seq_image: that order is NumPy's RandomState(permute_seed).permutation(pixels) (nnRNN's "
          "seed: 1234), the same for every image and split"),
    K_I64(
        "task", "val_examples", task.val_examples, "0", 0,
        "seq_image: the last images of task.images held out for validation (0 = a tenth, as LRA)"),
    K_ENUM_STR("task", "words", task.words, "35", SPEECH_WORDS,
               "speech_commands: 35 (every word: SC35, class ids in S4's ALL_CLASSES order) or 10 "
               "(yes no up down left right on off stop go: SC10)"),
    K_INT("task", "sample_stride", task.sample_stride, "1", 1,
          "speech_commands: read every sample_stride-th sample, S4's sr (1: 16 kHz, rows of 16000; "
          "2: 8 kHz, 8000)"),
    K_I64("task", "max_examples", task.max_examples, "0", 0,
          "speech_commands: clips read per split, the first of a fixed shuffle of it (0 = all; "
          "CPU-scale runs)"),
};
#define NKEYS (sizeof KEYS / sizeof KEYS[0])

/* table: the set's names with their indices as values, {NULL} terminated */
static void choices_of(Choice *table, const NameSet *set) {
    RT_ASSERT(set->n <= MAX_MODEL_CHOICES);
    for (int i = 0; i < set->n; i++) table[i] = (Choice){set->names[i], i};
    table[set->n] = (Choice){NULL, 0};
}

static void schema_init(void) {
    choices_of(ORTH_INITS, &ORTH_INIT_NAMES);
    choices_of(NONLINEARITIES, &NONLINEARITY_NAMES);
    choices_of(HEADS, &HEAD_NAMES);
    choices_of(POOLS, &POOL_NAMES);
    choices_of(PAIRS, &PAIR_NAMES);
    choices_of(INPUTS, &INPUT_NAMES);
    choices_of(BLOCKS, &BLOCK_NAMES);
    choices_of(MLPS, &MLP_NAMES);
    choices_of(NORMS, &NORM_NAMES);
    choices_of(DROPOUT_MASKS, &DROPOUT_MASK_NAMES);
    choices_of(PES, &PE_NAMES);
    for (int k = 0; k < N_MIXERS; k++) MIXERS[k] = (Choice){family_of((MixerKind)k)->name, k};
    int n;
    const char *const *names = task_type_names(&n);
    RT_ASSERT(n < (int)(sizeof TASKS / sizeof TASKS[0]));
    for (int i = 0; i < n; i++) TASKS[i] = (Choice){names[i], i};
}

/* Keys renamed because they meant one thing for one family or task and another for the next:
 * the old name is an error naming its replacements; a checkpoint's saved config (written
 * with every key before the rename) still reads it, into the same field. */
typedef struct {
    const char *section, *key;
    const char *replacement; /* the new key of the same field, for saved configs */
    const char *hint;        /* the replacements, for messages */
} Renamed;
static const Renamed RENAMED[] = {
    {"model", "head_dim", "key_head_dim",
     "model.key_head_dim (gated_deltanet's per-head key width) or model.value_head_dim (mamba2's "
     "per-head value width)"},
    {"task", "min_len", "min_string_len", "task.min_string_len (copy's shortest training string)"},
    {"task", "max_len", "max_string_len", "task.max_string_len (copy's longest training string)"},
};

/* Whether a [model] key belongs to some families only (Family.keys) or a [task] key to some
 * tasks only (TaskImpl.keys): such a key is an error where the config's family or task does
 * not read it. */
static bool key_scoped(const KeySpec *k) {
    if (!strcmp(k->section, "model")) {
        for (int f = 0; f < N_MIXERS; f++)
            if (family_reads_key(family_of((MixerKind)f), k->key)) return true;
        return false;
    }
    return !strcmp(k->section, "task") && task_names_with_key(k->key, NULL, 0) > 0;
}

/* Whether the config's family or task reads k (always for keys of every family and task). */
static bool key_applies(const KeySpec *k, const RunConfig *c) {
    if (!key_scoped(k)) return true;
    if (!strcmp(k->section, "model")) return family_reads_key(family_of(c->model.mixer), k->key);
    const TaskImpl *task = task_of(&c->task);
    return task && task_reads_key(task, k->key);
}

static void *field(RunConfig *c, const KeySpec *k) { return (char *)c + k->offset; }
static const void *cfield(const RunConfig *c, const KeySpec *k) {
    return (const char *)c + k->offset;
}

/* Integer-valued fields are read and written as int; the size check catches a table entry
 * whose type does not match its field. */
static int get_int(const RunConfig *c, const KeySpec *k) {
    RT_ASSERT(k->size == sizeof(int));
    return *(const int *)cfield(c, k);
}

static void set_int(RunConfig *c, const KeySpec *k, int v) {
    RT_ASSERT(k->size == sizeof(int));
    *(int *)field(c, k) = v;
}

/* ------------------------------------------------------------------------------------ */
/* Values: formatting, parsing, range checks                                            */
/* ------------------------------------------------------------------------------------ */

/* Shortest "%.Ng" that reads back as exactly x (0.1 -> "0.1", not 0.10000000000000001). */
static void format_double(double x, char *buf, size_t n) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) return;
    }
}

static const char *choice_name(const Choice *ch, int value) {
    for (; ch->name; ch++)
        if (ch->value == value) return ch->name;
    return "?";
}

/* The canonical text of k's value in c: buf, or the string field itself. */
static const char *format_value(const KeySpec *k, const RunConfig *c, char *buf, size_t n) {
    switch (k->type) {
    case T_INT: snprintf(buf, n, "%d", get_int(c, k)); return buf;
    case T_I64: snprintf(buf, n, "%" PRId64, *(const int64_t *)cfield(c, k)); return buf;
    case T_U64: snprintf(buf, n, "%" PRIu64, *(const uint64_t *)cfield(c, k)); return buf;
    case T_FLOAT: format_double(*(const double *)cfield(c, k), buf, n); return buf;
    case T_BOOL: return get_int(c, k) ? "true" : "false";
    case T_ENUM: return choice_name(k->choices, get_int(c, k));
    case T_ENUM_STR:
    case T_STR: return (const char *)cfield(c, k);
    }
    return "?";
}

/* What a value of k must look like, for messages ("an integer from 1 to 2147483647"). */
static void describe(const KeySpec *k, char *buf, size_t n) {
    switch (k->type) {
    case T_INT: snprintf(buf, n, "an integer from %" PRId64 " to %d", k->min, INT_MAX); return;
    case T_I64: snprintf(buf, n, "an integer >= %" PRId64, k->min); return;
    case T_U64: snprintf(buf, n, "an integer from 0 to %" PRIu64, UINT64_MAX); return;
    case T_FLOAT: {
        static const char *const what[] = {[R_ANY] = "a number",
                                           [R_POS] = "a number > 0",
                                           [R_NONNEG] = "a number >= 0",
                                           [R_UNIT] = "a number in [0, 1)"};
        snprintf(buf, n, "%s", what[k->range]);
        return;
    }
    case T_BOOL: snprintf(buf, n, "a boolean (true/false, yes/no, on/off, 1/0)"); return;
    case T_ENUM:
    case T_ENUM_STR: {
        size_t used = (size_t)snprintf(buf, n, "one of ");
        for (const Choice *ch = k->choices; ch->name && used < n; ch++)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", ch == k->choices ? "" : ", ",
                                     ch->name);
        return;
    }
    case T_STR:
        snprintf(buf, n,
                 "a string of at most %zu characters, without control characters "
                 "or ';' / '#' first or after a blank (read as comments)",
                 k->size - 1);
        return;
    }
}

/* A string that an INI line gives back unchanged: no control characters, no inline
 * comment start (';' or '#' after a blank, or first: written as "key = ;..."), no
 * surrounding blanks (inih strips those). */
static bool ini_safe_string(const char *s) {
    size_t n = strlen(s);
    if (n && (isspace((unsigned char)s[0]) || isspace((unsigned char)s[n - 1]))) return false;
    for (size_t i = 0; i < n; i++) {
        if (iscntrl((unsigned char)s[i])) return false;
        if ((s[i] == ';' || s[i] == '#') && (i == 0 || isspace((unsigned char)s[i - 1])))
            return false;
    }
    return true;
}

/* Whether k's current value in c is allowed by the schema. */
static bool value_ok(const KeySpec *k, const RunConfig *c) {
    switch (k->type) {
    case T_INT: return get_int(c, k) >= k->min;
    case T_I64: return *(const int64_t *)cfield(c, k) >= k->min;
    case T_U64: return true;
    case T_FLOAT: {
        double x = *(const double *)cfield(c, k);
        switch (k->range) {
        case R_ANY: return isfinite(x);
        case R_POS: return isfinite(x) && x > 0;
        case R_NONNEG: return isfinite(x) && x >= 0;
        case R_UNIT: return x >= 0 && x < 1;
        }
        return false;
    }
    case T_BOOL: return get_int(c, k) == 0 || get_int(c, k) == 1;
    case T_ENUM:
        for (const Choice *ch = k->choices; ch->name; ch++)
            if (ch->value == get_int(c, k)) return true;
        return false;
    case T_ENUM_STR: {
        const char *s = cfield(c, k);
        if (!memchr(s, '\0', k->size)) return false;
        for (const Choice *ch = k->choices; ch->name; ch++)
            if (!strcmp(ch->name, s)) return true;
        return false;
    }
    case T_STR: {
        const char *s = cfield(c, k);
        return memchr(s, '\0', k->size) && ini_safe_string(s);
    }
    }
    return false;
}

/* Reads text v into k's field of c; false when v is not of the key's type or does not
 * fit the field (ranges are value_ok's business). */
static bool parse_value(const KeySpec *k, RunConfig *c, const char *v) {
    char *end;
    errno = 0;
    switch (k->type) {
    case T_INT:
    case T_I64: {
        long long x = strtoll(v, &end, 10);
        if (end == v || *end || errno == ERANGE) return false;
        if (k->type == T_I64) {
            *(int64_t *)field(c, k) = x;
        } else {
            if (x < INT_MIN || x > INT_MAX) return false;
            set_int(c, k, (int)x);
        }
        return true;
    }
    case T_U64: {
        if (v[0] == '-') return false; /* strtoull would wrap it around */
        unsigned long long x = strtoull(v, &end, 10);
        if (end == v || *end || errno == ERANGE) return false;
        *(uint64_t *)field(c, k) = x;
        return true;
    }
    case T_FLOAT: {
        double x = strtod(v, &end);
        if (end == v || *end || !isfinite(x)) return false;
        *(double *)field(c, k) = x;
        return true;
    }
    case T_BOOL: {
        static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0",
                                                                                    "no", "off"};
        for (int i = 0; i < 4; i++) {
            if (!strcasecmp(v, yes[i])) {
                set_int(c, k, 1);
                return true;
            }
            if (!strcasecmp(v, no[i])) {
                set_int(c, k, 0);
                return true;
            }
        }
        return false;
    }
    case T_ENUM:
    case T_ENUM_STR:
        for (const Choice *ch = k->choices; ch->name; ch++) {
            if (strcasecmp(v, ch->name)) continue;
            if (k->type == T_ENUM) {
                set_int(c, k, ch->value);
            } else {
                memset(field(c, k), 0, k->size); /* no stale bytes: loads compare with memcmp */
                memcpy(field(c, k), ch->name, strlen(ch->name));
            }
            return true;
        }
        return false;
    case T_STR:
        if (strlen(v) >= k->size) return false;
        memset(field(c, k), 0, k->size); /* no stale bytes: loads compare with memcmp */
        memcpy(field(c, k), v, strlen(v));
        return true;
    }
    return false;
}

/* ------------------------------------------------------------------------------------ */
/* Defaults                                                                             */
/* ------------------------------------------------------------------------------------ */

/* Every key's default read from the table as a config file's value would be, so a default
 * outside a key's type or range cannot exist; keys of one field must agree on it. The model's
 * context length follows train.seq_len, as after loading. */
void run_config_defaults(RunConfig *c) {
    schema_init();
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < NKEYS; i++) {
        const KeySpec *k = &KEYS[i];
        RT_ASSERT(parse_value(k, c, k->def) && value_ok(k, c));
        for (size_t j = 0; j < i; j++)
            RT_ASSERT(KEYS[j].offset != k->offset || !strcmp(KEYS[j].def, k->def));
    }
    c->model.max_seq_len = c->train.seq_len;
}

void model_config_defaults(ModelConfig *m) {
    RunConfig c;
    run_config_defaults(&c);
    memcpy(m, &c.model, sizeof(*m)); /* padding included: configs compare with memcmp */
}

/* ------------------------------------------------------------------------------------ */
/* Name lookup and "did you mean" suggestions                                           */
/* ------------------------------------------------------------------------------------ */

static int find_key(const char *section, const char *key) {
    for (size_t i = 0; i < NKEYS; i++)
        if (!strcmp(KEYS[i].section, section) && !strcmp(KEYS[i].key, key)) return (int)i;
    return -1;
}

static bool known_section(const char *section) {
    for (size_t i = 0; i < NSECTIONS; i++)
        if (!strcmp(SECTIONS[i], section)) return true;
    return false;
}

#define NAME_MAX_LEN 63 /* longer names are never similar to a schema name */

/* How far typed is from the (lower-case) schema name known, or -1 when not similar:
 * similar means an edit distance <= 3 (and below the typed length), or a shared prefix of
 * 4+ characters, or one name containing the other (max_seq_len ~ seq_len), which counts as
 * distance 1 (warmup ~ warmup_frac before group). Case-blind. */
static int name_distance(const char *typed, const char *known) {
    char t[NAME_MAX_LEN + 1];
    size_t n = strlen(typed);
    if (n > NAME_MAX_LEN) return -1;
    for (size_t i = 0; i <= n; i++) t[i] = (char)tolower((unsigned char)typed[i]);
    int d = rt_edit_distance(t, known);
    if (d > 1 && ((n >= 4 && strstr(known, t)) || (strlen(known) >= 4 && strstr(t, known))))
        return 1;
    if (d <= 3 && d < (int)n) return d;
    size_t p = 0;
    while (t[p] && t[p] == known[p]) p++;
    if (p >= 4) return d;
    return -1;
}

/* The schema key closest to section.key (a key of the same name in another section is
 * closest), or -1. */
static int suggest_key(const char *section, const char *key) {
    int best = -1, best_cost = INT_MAX;
    for (size_t i = 0; i < NKEYS; i++) {
        int d = name_distance(key, KEYS[i].key);
        if (d < 0) continue;
        int cost = 2 * d + (strcmp(section, KEYS[i].section) != 0);
        if (cost < best_cost) best = (int)i, best_cost = cost;
    }
    return best;
}

static const char *suggest_section(const char *section) {
    const char *best = NULL;
    int best_d = INT_MAX;
    for (size_t i = 0; i < NSECTIONS; i++) {
        int d = name_distance(section, SECTIONS[i]);
        if (d >= 0 && d < best_d) best = SECTIONS[i], best_d = d;
    }
    return best;
}

/* ------------------------------------------------------------------------------------ */
/* Loading                                                                              */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    RunConfig cfg;               /* being filled; copied out only on success */
    const char *origin;          /* INI file name used in messages */
    const char *cursor;          /* next unread character of the INI text */
    int line;                    /* line of the INI text that inih is processing */
    bool at_line_start;          /* the next read starts a new line */
    const char *set_arg;         /* the --set being applied, NULL while reading the INI text */
    int file_line[NKEYS];        /* line where the INI text set each key, 0 = not set */
    const char *set_from[NKEYS]; /* the --set that set each key last, NULL = none */
    bool saved; /* a checkpoint's saved config: renamed keys and keys of other families read */
    bool temp_theta_given; /* pe.temp_theta was set explicitly */
    bool seq_len_given;    /* train.seq_len was set explicitly */
    bool vocab_size_given; /* model.vocab_size was set explicitly */
    bool head_given;       /* model.head was set explicitly */
    bool keep_best_given;  /* train.keep_best was set explicitly */
    char *err;
    size_t errlen;
    bool failed;
} Loader;

/* Records the first error, prefixed with where it happened; returns false. */
static bool fail(Loader *L, const char *fmt, ...) RT_PRINTF(2, 3);
static bool fail(Loader *L, const char *fmt, ...) {
    if (L->failed) return false;
    L->failed = true;
    int n = L->set_arg ? snprintf(L->err, L->errlen, "--set '%s': ", L->set_arg)
                       : snprintf(L->err, L->errlen, "%s:%d: ", L->origin, L->line);
    if (n >= 0 && (size_t)n < L->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(L->err + n, L->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* The schema entry for section.key, or NULL after reporting the unknown name with the
 * closest known one. */
static const KeySpec *resolve(Loader *L, const char *section, const char *key) {
    int i = find_key(section, key);
    if (i >= 0) return &KEYS[i];
    for (size_t r = 0; r < sizeof RENAMED / sizeof RENAMED[0]; r++) {
        if (strcmp(RENAMED[r].section, section) || strcmp(RENAMED[r].key, key)) continue;
        if (L->saved) return &KEYS[find_key(section, RENAMED[r].replacement)];
        fail(L, "%s.%s was renamed: %s", section, key, RENAMED[r].hint);
        return NULL;
    }
    int s = suggest_key(section, key);
    char hint[128] = "";
    if (s >= 0)
        snprintf(hint, sizeof hint, "; did you mean '%s.%s'?", KEYS[s].section, KEYS[s].key);
    if (!*section) {
        if (L->set_arg)
            fail(L, "'%s' names no section (expected section.key=value)%s", key, hint);
        else
            fail(L, "key '%s' comes before any [section]%s", key, hint);
    } else if (!known_section(section)) {
        const char *t = suggest_section(section);
        if (t)
            fail(L, "unknown section [%s]; did you mean [%s]?", section, t);
        else
            fail(L,
                 "unknown section [%s]; the sections are [model] [pe] [train] [data] [run] [task]",
                 section);
    } else if (s >= 0) {
        fail(L, "unknown key '%s.%s'%s", section, key, hint);
    } else {
        fail(L, "unknown key '%s.%s' (`rotor train --help` lists the keys)", section, key);
    }
    return NULL;
}

static bool set_value(Loader *L, const KeySpec *k, const char *v) {
    if (L->set_arg) L->set_from[k - KEYS] = L->set_arg;
    if (!parse_value(k, &L->cfg, v) || !value_ok(k, &L->cfg)) {
        char want[256];
        describe(k, want, sizeof want);
        return fail(L, "%s.%s = '%s': expected %s", k->section, k->key, v, want);
    }
    if (k->offset == offsetof(RunConfig, model.pe.temp_theta)) L->temp_theta_given = true;
    if (k->offset == offsetof(RunConfig, train.seq_len)) L->seq_len_given = true;
    if (k->offset == offsetof(RunConfig, model.vocab_size)) L->vocab_size_given = true;
    if (k->offset == offsetof(RunConfig, model.head)) L->head_given = true;
    if (k->offset == offsetof(RunConfig, train.keep_best)) L->keep_best_given = true;
    return true;
}

/* inih handler: one key = value line of the INI text. */
static int on_ini_key(void *user, const char *section, const char *key, const char *value) {
    Loader *L = user;
    const KeySpec *k = resolve(L, section, key);
    if (!k) return 0;
    int *first = &L->file_line[k - KEYS];
    if (*first)
        return fail(L, "%s.%s is set twice: at line %d and again here at line %d", k->section,
                    k->key, *first, L->line);
    *first = L->line;
    return set_value(L, k, value);
}

/* inih reader (fgets-like) over the INI text that also counts lines, since Debian's
 * libinih is built without line numbers in handler calls. */
static char *read_ini_line(char *buf, int size, void *stream) {
    Loader *L = stream;
    if (!*L->cursor) return NULL;
    if (L->at_line_start) L->line++;
    int n = 0;
    while (n < size - 1 && L->cursor[n]) {
        buf[n] = L->cursor[n];
        if (buf[n++] == '\n') break;
    }
    buf[n] = '\0';
    L->cursor += n;
    L->at_line_start = n > 0 && buf[n - 1] == '\n';
    return buf;
}

/* Debian's libinih exposes its build options as globals. A config is parsed with a growing
 * heap line buffer (long paths), no multi-line values (an indented line is a key of its
 * own, not a continuation of the previous value), ';' and '#' comments also after a value,
 * and a stop at the first error; the previous settings are restored afterwards. */
typedef struct {
    bool use_stack, allow_realloc, multiline, stop_on_first_error;
    int max_line;
    char *start_comments, *inline_comments;
} IniSettings;

static IniSettings ini_settings_swap(IniSettings s) {
    IniSettings old = {ini_use_stack,
                       ini_allow_realloc,
                       ini_allow_multiline,
                       ini_stop_on_first_error,
                       ini_max_line,
                       ini_start_comment_prefixes,
                       ini_inline_comment_prefixes};
    ini_use_stack = s.use_stack;
    ini_allow_realloc = s.allow_realloc;
    ini_allow_multiline = s.multiline;
    ini_stop_on_first_error = s.stop_on_first_error;
    ini_max_line = s.max_line;
    ini_start_comment_prefixes = s.start_comments;
    ini_inline_comment_prefixes = s.inline_comments;
    return old;
}

static void parse_ini_text(Loader *L, const char *text) {
    static char comment_chars[] = ";#";
    IniSettings ours = {false, true, false, true, 1 << 16, comment_chars, comment_chars};
    L->cursor = text;
    L->line = 0;
    L->at_line_start = true;
    IniSettings saved = ini_settings_swap(ours);
    int r = ini_parse_stream(read_ini_line, L, on_ini_key, L);
    ini_settings_swap(saved);
    if (r == 0 || L->failed) return;
    if (r < 0) {
        fail(L, "out of memory while parsing");
    } else {
        L->line = r;
        fail(L, "cannot parse this line: expected '[section]' or 'key = value'");
    }
}

/* Copies s[0, n) without surrounding blanks into buf; false when it does not fit. */
static bool copy_trimmed(char *buf, size_t size, const char *s, size_t n) {
    while (n && isspace((unsigned char)*s)) s++, n--;
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (n >= size) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return true;
}

/* One override "section.key=value". */
static void apply_set(Loader *L, const char *arg) {
    L->set_arg = arg;
    char name[2 * NAME_MAX_LEN + 2], value[4096];
    const char *eq = strchr(arg, '=');
    if (!eq || !copy_trimmed(name, sizeof name, arg, (size_t)(eq - arg)) || !*name) {
        fail(L, "expected section.key=value");
        return;
    }
    if (!copy_trimmed(value, sizeof value, eq + 1, strlen(eq + 1))) {
        fail(L, "the value is longer than %zu characters", sizeof value - 1);
        return;
    }
    char *dot = strchr(name, '.');
    const char *section = "", *key = name;
    if (dot) {
        *dot = '\0';
        section = name;
        key = dot + 1;
    }
    const KeySpec *k = resolve(L, section, key);
    if (k) set_value(L, k, value);
}

/* The keys the config set that its family or task does not read: the first is an error, reported
 * where it was set, with what reads it and the key of the same meaning that the family or task
 * does read. A file's key is only a warning when --set changed model.type or task.type (one
 * base config swept over families or tasks): the new type ignores it. Returns false on error. */
static bool check_scopes(Loader *L) {
    for (size_t i = 0; i < NKEYS; i++) {
        const KeySpec *k = &KEYS[i];
        if ((!L->file_line[i] && !L->set_from[i]) || key_applies(k, &L->cfg)) continue;
        int model = !strcmp(k->section, "model");
        char owners[512], own[160] = "", buf[64];
        if (model)
            family_names_with_key(k->key, owners, sizeof owners);
        else
            task_names_with_key(k->key, owners, sizeof owners);
        bool own_given = false; /* the type's own key of the same field was set */
        for (size_t j = 0; j < NKEYS; j++)
            if (j != i && KEYS[j].offset == k->offset && key_applies(&KEYS[j], &L->cfg)) {
                snprintf(own, sizeof own, "; its own key for this is %s.%s", KEYS[j].section,
                         KEYS[j].key);
                own_given = L->file_line[j] || L->set_from[j];
            }
        const char *type = model ? family_of(L->cfg.model.mixer)->name : L->cfg.task.type;
        const char *value = format_value(k, &L->cfg, buf, sizeof buf);
        const char *swept_by = L->set_from[find_key(k->section, "type")];
        if (!L->set_from[i] && swept_by) {
            rt_warn("%s:%d: %s.%s = %s is ignored: --set '%s' chose a type that does not read it "
                    "(a key of %s)%s",
                    L->origin, L->file_line[i], k->section, k->key, value, swept_by, owners, own);
            if (!own_given) {
                RunConfig d;
                run_config_defaults(&d);
                memcpy(field(&L->cfg, k), cfield(&d, k), k->size);
            }
            continue;
        }
        L->set_arg = L->set_from[i];
        L->line = L->file_line[i];
        return fail(L, "%s.%s = %s: %s.type = %s does not read it (a key of %s)%s", k->section,
                    k->key, value, model ? "model" : "task", type, owners, own);
    }
    return true;
}

static int load(RunConfig *out, const char *ini_text, const char *origin_name,
                const char *const *sets, int nsets, bool saved, char *err, size_t errlen) {
    schema_init();
    Loader *L = rt_calloc(1, sizeof(*L));
    L->saved = saved;
    run_config_defaults(&L->cfg);
    L->origin = origin_name ? origin_name : "<config>";
    L->err = err;
    L->errlen = err ? errlen : 0;
    if (ini_text) parse_ini_text(L, ini_text);
    for (int i = 0; i < nsets && !L->failed; i++) apply_set(L, sets[i]);
    int rc = -1;
    if (!L->failed) {
        /* Defaults that follow other keys. */
        PEConfig *pe = &L->cfg.model.pe;
        if (!L->temp_theta_given) pe->temp_theta = pe->temp_type == TEMP_TAN ? 0.995 : 500000;
        TaskConfig *task = &L->cfg.task;
        task_resolve_alias(task);
        if (!saved) check_scopes(L);
    }
    if (!L->failed) {
        TaskConfig *task = &L->cfg.task;
        const TaskImpl *impl = task_of(task);
        char shape_msg[1400];
        const char *shape_bad = NULL;
        if (impl && impl->shape) {
            TaskShape shape = {&L->cfg, L->seq_len_given, L->vocab_size_given, L->head_given};
            shape_bad = impl->shape(&shape, shape_msg, sizeof shape_msg);
        }
        L->cfg.model.max_seq_len = L->cfg.train.seq_len;
        if (!L->keep_best_given && L->cfg.train.val_every > 0 && run_config_classifies(&L->cfg))
            L->cfg.train.keep_best = KEEP_BEST_VAL_ACCURACY;
        if (!strcmp(L->cfg.data.train, "task"))
            L->cfg.model.bos_id = L->cfg.model.eos_id = -1; /* tasks have no documents */

        char origin[1200];
        if (ini_text)
            snprintf(origin, sizeof origin, "%s%s", L->origin,
                     nsets ? " with --set overrides" : "");
        else
            snprintf(origin, sizeof origin, "%s",
                     nsets ? "defaults with --set overrides" : "defaults");
        rc = shape_bad ? rt_error(err, L->errlen, origin, "%s", shape_bad)
                       : run_config_validate(&L->cfg, origin, err, L->errlen);
        if (rc == 0) memcpy(out, &L->cfg, sizeof(*out));
    }
    rt_free(L);
    return rc;
}

int run_config_load_string(RunConfig *out, const char *ini_text, const char *origin_name,
                           const char *const *sets, int nsets, char *err, size_t errlen) {
    return load(out, ini_text, origin_name, sets, nsets, false, err, errlen);
}

int run_config_load_saved(RunConfig *out, const char *ini_text, const char *origin_name, char *err,
                          size_t errlen) {
    return load(out, ini_text, origin_name, NULL, 0, true, err, errlen);
}

int run_config_load(RunConfig *out, const char *ini_path, const char *const *sets, int nsets,
                    char *err, size_t errlen) {
    if (!ini_path) return run_config_load_string(out, NULL, NULL, sets, nsets, err, errlen);
    char *text = fs_read_file(ini_path, NULL);
    if (!text) {
        if (err && errlen)
            snprintf(err, errlen, "cannot read config file '%s': %s", ini_path, strerror(errno));
        return -1;
    }
    int rc = run_config_load_string(out, text, ini_path, sets, nsets, err, errlen);
    rt_free(text);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Validation                                                                           */
/* ------------------------------------------------------------------------------------ */

/* data.train / data.val as shard sets or mixtures, data.stages and data.on_exhausted. */
static int check_mixture(const RunConfig *c, const char *origin, char *err, size_t errlen) {
    const DataConfig *d = &c->data;
    int shards = strcmp(d->train, "task") && strncmp(d->train, "synthetic:", 10);
    if (!shards) {
        if (d->stages[0])
            return rt_error(
                err, errlen, origin,
                "data.stages = %s: stages weigh the sources of a mixture of shard sets, "
                "and data.train = %s is not one",
                d->stages, d->train);
        if (d->on_exhausted == DATA_EXHAUSTED_STOP)
            return rt_error(
                err, errlen, origin,
                "data.on_exhausted = stop: data.train = %s is an endless stream; the key "
                "is for shard sets",
                d->train);
        return 0;
    }
    MixSpec *mix = rt_malloc(sizeof *mix);
    char why[1024];
    int rc = mix_spec_parse("data.train", d->train, d->stages, mix, why, sizeof why);
    if (!rc && mix->stages > 1 && mix->stage[mix->stages - 1].step >= c->train.steps)
        rc = rt_error(why, sizeof why, NULL,
                      "data.stages: the stage at step %" PRId64
                      " never starts: train.steps = %" PRId64,
                      mix->stage[mix->stages - 1].step, c->train.steps);
    if (!rc && d->val[0] && strcmp(d->val, "task") && strncmp(d->val, "synthetic:", 10))
        rc = mix_spec_parse("data.val", d->val, NULL, mix, why, sizeof why);
    rt_free(mix);
    return rc ? rt_error(err, errlen, origin, "%s", why) : 0;
}

int run_config_validate(const RunConfig *c, const char *origin, char *err, size_t errlen) {
    schema_init();
    for (size_t i = 0; i < NKEYS; i++) {
        const KeySpec *k = &KEYS[i];
        if (value_ok(k, c)) continue;
        char want[256], buf[64];
        describe(k, want, sizeof want);
        const char *v = format_value(k, c, buf, sizeof buf);
        if ((k->type == T_STR || k->type == T_ENUM_STR) && !memchr(v, '\0', k->size))
            v = "(unterminated)";
        return rt_error(err, errlen, origin, "%s.%s = %s: expected %s", k->section, k->key, v,
                        want);
    }
    const ModelConfig *m = &c->model;
    const TrainConfig *t = &c->train;
    ModelDims dims;
    const char *why = model_dims(m, &dims);
    if (why) return rt_error(err, errlen, origin, "%s", why);
    if (m->pe.temp_type == TEMP_TAN && !(m->pe.temp_theta < 1))
        return rt_error(err, errlen, origin,
                        "pe.temp_theta = %g must be in (0, 1) when pe.temp_type = tan",
                        m->pe.temp_theta);
    if (m->pe.temp_type == TEMP_ROPE && m->pe.temp_theta < 1)
        return rt_error(err, errlen, origin,
                        "pe.temp_theta = %g must be >= 1 when pe.temp_type = rope",
                        m->pe.temp_theta);
    const TaskImpl *task = task_of(&c->task);
    int from_task = !strcmp(c->data.train, "task");
    char names[512];
    if (m->head == HEAD_AUTOENCODER && !(task && (task->flags & TASK_AUTOENCODER))) {
        task_names_with_flags(TASK_AUTOENCODER, names, sizeof names);
        return rt_error(err, errlen, origin,
                        "model.head = autoencoder: only task.type = %s trains it (its labels are "
                        "the targets of the "
                        "decoded positions, not next tokens)",
                        names);
    }
    if (m->pair != PAIR_NONE && m->head != HEAD_CLASSIFIER)
        return rt_error(
            err, errlen, origin,
            "model.pair = %s: pairs are read by the classifier (model.head = classifier)",
            choice_name(PAIRS, (int)m->pair));
    int pairs = from_task && task && (task->flags & TASK_PAIRS);
    if (pairs && m->pair == PAIR_NONE)
        return rt_error(err, errlen, origin,
                        "task.type = %s: an example is two documents, read by the pair classifier "
                        "(model.head = "
                        "classifier, model.pair = nli or concat)",
                        c->task.type);
    if (!pairs && m->pair != PAIR_NONE && from_task) {
        task_names_with_flags(TASK_PAIRS, names, sizeof names);
        return rt_error(err, errlen, origin,
                        "model.pair = %s: only task.type = %s gives rows in pairs (task.type = %s)",
                        choice_name(PAIRS, (int)m->pair), names, c->task.type);
    }
    if (pairs && c->train.micro_batch % 2)
        return rt_error(err, errlen, origin,
                        "train.micro_batch = %d: task.type = %s's rows come in pairs (two "
                        "documents per example), "
                        "so it must be even",
                        c->train.micro_batch, c->task.type);
    if (m->bos_id >= m->vocab_size)
        return rt_error(err, errlen, origin,
                        "model.bos_id = %d must be below model.vocab_size = %d", m->bos_id,
                        m->vocab_size);
    if (m->eos_id >= m->vocab_size)
        return rt_error(err, errlen, origin,
                        "model.eos_id = %d must be below model.vocab_size = %d", m->eos_id,
                        m->vocab_size);
    if (t->val_every > 0 && t->val_tokens == 0 && t->val_batches < 1)
        return rt_error(err, errlen, origin,
                        "train.val_batches = %d must be >= 1 when train.val_every = %" PRId64
                        " > 0 (or set train.val_tokens)",
                        t->val_batches, t->val_every);
    const Family *fam = family_of(m->mixer);
    if (m->nonlinearity != RNN_NONLIN_AUTO && !family_reads_key(fam, "nonlinearity")) {
        char names[128];
        family_names_with_key("nonlinearity", names, sizeof names);
        return rt_error(err, errlen, origin,
                        "model.nonlinearity = %s: only the cells %s have one (model.type = %s)",
                        choice_name(NONLINEARITIES, (int)m->nonlinearity), names, fam->name);
    }
    int64_t prof_first, prof_last;
    if (step_profile_parse(c->run.profile_steps, &prof_first, &prof_last, err, errlen)) return -1;
    if (prof_last > t->steps)
        return rt_error(err, errlen, origin,
                        "run.profile_steps = %s ends after train.steps = %" PRId64,
                        c->run.profile_steps, t->steps);
    if (t->init_from[0] && t->decay_from[0])
        return rt_error(err, errlen, origin,
                        "train.init_from = %s and train.decay_from = %s name two starting points: "
                        "a decay run takes "
                        "its weights from its stable-phase checkpoint",
                        t->init_from, t->decay_from);
    const char *wsd_key = t->decay_from[0] ? "train.decay_from"
                          : t->decay_start ? "train.decay_start"
                                           : NULL;
    if (wsd_key && t->schedule != SCHEDULE_WSD)
        return rt_error(err, errlen, origin,
                        "%s is set: it belongs to train.schedule = wsd (the schedule is %s)",
                        wsd_key, choice_name(SCHEDULES, (int)t->schedule));
    if (t->schedule == SCHEDULE_WSD) {
        int64_t warmup = (int64_t)(t->warmup_frac * (double)t->steps);
        int64_t start = t->decay_start
                            ? t->decay_start
                            : t->steps - (int64_t)llround(t->decay_frac * (double)t->steps);
        if (t->decay_start >= t->steps)
            return rt_error(err, errlen, origin,
                            "train.decay_start = %" PRId64 " must be below train.steps = %" PRId64,
                            t->decay_start, t->steps);
        if (start < warmup && (t->decay_start || !t->decay_from[0]))
            return rt_error(err, errlen, origin,
                            "train.schedule = wsd: the decay would begin at step %" PRId64
                            ", inside the warmup's %" PRId64 " steps (train.warmup_frac = %g): %s",
                            start, warmup, t->warmup_frac,
                            t->decay_start ? "raise train.decay_start" : "lower train.decay_frac");
    }
    if (t->eval_tasks[0] || t->eval_every) {
        const char *missing =
            !t->eval_tasks[0]       ? "train.eval_tasks (the tasks to score)"
            : !t->eval_every        ? "train.eval_every (the steps between scores)"
            : !t->eval_data_dir[0]  ? "train.eval_data_dir (the folder of the task files)"
            : !c->data.tokenizer[0] ? "data.tokenizer (the tokenizer of the task texts)"
                                    : NULL;
        if (missing)
            return rt_error(err, errlen, origin,
                            "zero-shot scores during training (train.eval_tasks = %s, "
                            "train.eval_every = %" PRId64 ") need %s",
                            t->eval_tasks[0] ? t->eval_tasks : "\"\"", t->eval_every, missing);
        if (m->head != HEAD_LM)
            return rt_error(err, errlen, origin,
                            "train.eval_tasks = %s: zero-shot scores need a language model's "
                            "next-token head (model.head = lm)",
                            t->eval_tasks);
    }
    if (t->plateau_factor > 0 && t->val_every == 0)
        return rt_error(err, errlen, origin,
                        "train.plateau_factor = %g acts at validations: train.val_every = 0",
                        t->plateau_factor);
    if (t->keep_best != KEEP_BEST_NONE && t->val_every == 0)
        return rt_error(err, errlen, origin,
                        "train.keep_best = %s needs validations: train.val_every = 0",
                        run_config_keep_best_name(t->keep_best));
    if (t->keep_best == KEEP_BEST_VAL_ACCURACY && !run_config_classifies(c)) {
        task_names_with_flags(TASK_CLASSIFIES, names, sizeof names);
        return rt_error(err, errlen, origin,
                        "train.keep_best = val_accuracy: validation accuracy is measured for "
                        "classification runs "
                        "only (model.head = classifier, or data.train = task with task.type = %s)",
                        names);
    }
    if (t->carry_state) {
        const char *bad = NULL;
        char why[700], text[700];
        family_names_carrying(names, sizeof names);
        snprintf(why, sizeof why, "only the recurrent cells carry a state: model.type = %s", names);
        task_names_with_flags(TASK_TEXT, names, sizeof names);
        snprintf(
            text, sizeof text,
            "its streams are those of character-level text: data.train = task with task.type = %s",
            names);
        if (!from_task || !task || !(task->flags & TASK_TEXT))
            bad = text;
        else if (!family_carries(fam))
            bad = why;
        else if (m->doc_mask || m->bidirectional)
            bad = "a row must be one segment: model.doc_mask and model.bidirectional must be off";
        if (!bad && t->recompute >= RECOMPUTE_MIXER)
            bad = "the mixers' forward would run twice over the carried states: train.recompute = "
                  "none or default";
        if (bad) return rt_error(err, errlen, origin, "train.carry_state = true: %s", bad);
    }
    if (!c->data.train[0])
        return rt_error(
            err, errlen, origin,
            "data.train is required: a shard directory or glob, synthetic:<task>, or task");
    if (from_task && !task) {
        task_names(names, sizeof names);
        return rt_error(err, errlen, origin,
                        "data.train = task needs a [task] section with task.type = %s", names);
    }
    return check_mixture(c, origin, err, errlen);
}

int run_config_classifies(const RunConfig *c) {
    const TaskImpl *task = task_of(&c->task);
    return c->model.head == HEAD_CLASSIFIER ||
           (!strcmp(c->data.train, "task") && task && (task->flags & TASK_CLASSIFIES));
}

const char *run_config_keep_best_name(KeepBest k) { return choice_name(KEEP_BESTS, (int)k); }

/* ------------------------------------------------------------------------------------ */
/* Output                                                                               */
/* ------------------------------------------------------------------------------------ */

void run_config_write_ini(const RunConfig *c, FILE *f) {
    schema_init();
    fprintf(f, "; rotor run config: every key its family and task read, effective values\n");
    const char *section = NULL;
    for (size_t i = 0; i < NKEYS; i++) {
        const KeySpec *k = &KEYS[i];
        if (!key_applies(k, c)) continue;
        if (!section || strcmp(section, k->section)) {
            fprintf(f, "%s[%s]\n", section ? "\n" : "", k->section);
            section = k->section;
        }
        char buf[64];
        const char *v = format_value(k, c, buf, sizeof buf);
        fprintf(f, "%s =%s%s\n", k->key, *v ? " " : "", v);
    }
}

void run_config_write_changed(const RunConfig *c, FILE *f) {
    schema_init();
    RunConfig d;
    run_config_defaults(&d);
    const char *section = NULL;
    int col = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        const KeySpec *k = &KEYS[i];
        char buf[64], dbuf[64];
        const char *v = key_applies(k, c) ? format_value(k, c, buf, sizeof buf) : NULL;
        if (!v || !strcmp(v, format_value(k, &d, dbuf, sizeof dbuf))) continue;
        int width = (int)(strlen(k->key) + strlen(v)) + 5;
        if (!section || strcmp(section, k->section)) {
            col = fprintf(f, "%s  [%s]", section ? "\n" : "", k->section) - (section ? 1 : 0);
            section = k->section;
        } else if (col + width > 100) {
            col = fprintf(f, ",\n   ") - 2;
        } else {
            col += fprintf(f, ",");
        }
        col += fprintf(f, " %s = %s", k->key, v);
    }
    if (section) fputc('\n', f);
}

static const char *const TYPE_NAMES[] = {
    [T_INT] = "int",   [T_I64] = "int",   [T_U64] = "int",       [T_FLOAT] = "float",
    [T_BOOL] = "bool", [T_ENUM] = "enum", [T_ENUM_STR] = "enum", [T_STR] = "string"};

/* The model.type or task.type values that read a scoped key, comma-separated, into owners. */
static void key_owners(const KeySpec *k, char *owners, size_t n) {
    if (!strcmp(k->section, "model"))
        family_names_with_key(k->key, owners, n);
    else
        task_names_with_key(k->key, owners, n);
}

/* One key's help line: name, type, default, meaning, its choices, and the families or tasks
 * that read it when only some do. */
static void print_key_help(FILE *f, const KeySpec *k) {
    char name[2 * NAME_MAX_LEN + 2];
    snprintf(name, sizeof name, "%s.%s", k->section, k->key);
    fprintf(f, "  %-28s %-6s %-13s %s", name, TYPE_NAMES[k->type], *k->def ? k->def : "\"\"",
            k->help);
    if (k->choices) {
        for (const Choice *ch = k->choices; ch->name; ch++)
            fprintf(f, "%s%s", ch == k->choices ? " (" : "|", ch->name);
        fputc(')', f);
    }
    if (key_scoped(k)) {
        char owners[512];
        key_owners(k, owners, sizeof owners);
        fprintf(f, " [%s]", owners);
    }
    fputc('\n', f);
}

/* Text for a markdown table cell: '|' escaped, '<' and '>' as entities, '*' escaped so that
 * products such as u*v stay literal. */
static void md_cell(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '*')
            fputs("\\*", f);
        else
            fputc(*s, f);
    }
}

void run_config_print_markdown(FILE *f) {
    schema_init();
    fprintf(
        f,
        "# Config keys\n\n"
        "<!-- Generated by `rotor info --keys-markdown` from the KEYS table of "
        "src/config/run_config.c,\n"
        "     the table `rotor train --help` prints. Do not edit: regenerate with\n"
        "     build/rotor info --keys-markdown > docs/config-keys.md\n"
        "     (ctest's config_keys_doc fails when this page and the table differ). -->\n\n"
        "Reference: every key of a run config, by INI section (`[model] [pe] [train] [data] [run] "
        "[task]`), "
        "with its type, default and meaning, as `rotor train --help` lists them. Any key can be "
        "overridden "
        "on the command line with `--set section.key=value`. A key whose \"only for\" column names "
        "model.type or task.type values belongs to those only: setting it for another is an error. "
        "The INI syntax and the other files rotor reads and writes: [formats.md](formats.md).\n");
    for (size_t s = 0; s < NSECTIONS; s++) {
        fprintf(
            f,
            "\n## [%s]\n\n| key | type | default | meaning | only for |\n|---|---|---|---|---|\n",
            SECTIONS[s]);
        for (int scoped = 0; scoped < 2; scoped++)
            for (size_t i = 0; i < NKEYS; i++) {
                const KeySpec *k = &KEYS[i];
                if (strcmp(k->section, SECTIONS[s]) || key_scoped(k) != scoped) continue;
                fprintf(f, "| `%s.%s` | %s", k->section, k->key, TYPE_NAMES[k->type]);
                if (k->choices) {
                    fputs(":", f);
                    for (const Choice *ch = k->choices; ch->name; ch++)
                        fprintf(f, "%s`%s`", ch == k->choices ? " " : " \\| ", ch->name);
                }
                fprintf(f, " | `%s` | ", *k->def ? k->def : "\"\"");
                md_cell(f, k->help);
                fputs(" | ", f);
                if (scoped) {
                    char owners[512];
                    key_owners(k, owners, sizeof owners);
                    md_cell(f, owners);
                }
                fputs(" |\n", f);
            }
    }
}

void run_config_print_help(FILE *f) {
    schema_init();
    fprintf(
        f,
        "Config keys: INI sections [model] [pe] [train] [data] [run] [task]; override any key with "
        "--set section.key=value.\nA key in [brackets] belongs to those model.type or task.type "
        "values "
        "only: setting it for another is an error.\n");
    for (size_t s = 0; s < NSECTIONS; s++) {
        fprintf(f, "\n[%s]\n", SECTIONS[s]);
        for (int scoped = 0; scoped < 2; scoped++) {
            if (scoped && (!strcmp(SECTIONS[s], "model") || !strcmp(SECTIONS[s], "task")))
                fprintf(f, " %s\n",
                        !strcmp(SECTIONS[s], "model") ? "by model.type:" : "by task.type:");
            for (size_t i = 0; i < NKEYS; i++)
                if (!strcmp(KEYS[i].section, SECTIONS[s]) && key_scoped(&KEYS[i]) == scoped)
                    print_key_help(f, &KEYS[i]);
        }
    }
}
