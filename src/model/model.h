/* The language model: embedding, L pre-norm blocks (mixer + SwiGLU MLP), final norm and
 * untied LM head (docs/models.md §backbone), with an explicit forward and backward on any backend.
 */
#ifndef ROTOR_MODEL_H
#define ROTOR_MODEL_H

#include <jansson.h>
#include <stdint.h>

#include "backend.h"
#include "model/model_config.h"
#include "model/params.h"

/* A batch of B rows of T input tokens with their labels (next tokens, -100 ignored), on
 * the host. With model.doc_mask, documents start at every row start and where doc_start is
 * 1 (or, when doc_start is NULL, at every BOS token). */
typedef struct {
    int B, T;
    const int32_t *tokens;    /* [B*T] */
    const int32_t *labels;    /* [B*T] */
    const uint8_t *doc_start; /* [B*T] or NULL */
} Batch;

typedef struct Model Model;

Model *model_create(const ModelConfig *cfg, const Backend *be);
void model_free(Model *m);

const ModelConfig *model_config(const Model *m);
const ModelDims *model_dims_of(const Model *m);
const ParamTable *model_params(const Model *m);
const Backend *model_backend(const Model *m);
/* Flat [f32] buffers on the backend: the master weights, to read (a checkpoint's save) or
 * to write (a load, an all-gather: the [act] compute copy is then refreshed by the next
 * forward), and the accumulated gradients. */
const void *model_weights(const Model *m);
void *model_weights_to_write(Model *m);
void *model_grads(Model *m);
/* For a writer that updates master elements and, in the same pass, the same elements of
 * the [act] compute copy (AdamW): the master, and in *copy the compute copy, or NULL when
 * there is none to keep (it is the master itself, or already stale: then it is rebuilt). */
void *model_weights_and_copy(Model *m, void **copy);

/* Initialises every parameter per the parameter tables of docs/models.md from `seed` (deterministic
 * per parameter). */
void model_init_weights(Model *m, uint64_t seed);
/* The mixers' penalties on their parameters (the nnRNN's, docs/models.md §nonlinear-rnns: delta for
 * its eigenvalue moduli, t_decay the L2 decay of its non-normal part): returns their sum; with
 * grad, adds their gradient to the gradients. 0 for the other mixers. */
double model_penalty(Model *m, double delta, double t_decay, int grad);
void model_zero_grads(Model *m);
/* The recurrent mixers' statistics (MixerImpl.stats: eigenvalue moduli and angles, the states'
 * norm at the last forward), one object per layer, for the metrics of a validation; NULL for
 * the other mixers or before any forward. */
json_t *model_recurrent_stats(Model *m);

/* Forward pass; keeps the activations needed by model_backward. Returns the summed
 * cross-entropy over the non-ignored labels (fp64) and, if n_valid is not NULL, their
 * count. The LM head runs only on the positions with a label. With grad_scale > 0 the
 * logits are replaced by grad_scale * dloss/dlogits and a model_backward call may follow;
 * with grad_scale == 0 only the loss is computed. */
double model_forward(Model *m, const Batch *b, double grad_scale, int64_t *n_valid);
/* Forward pass for scoring: as model_forward with grad_scale 0, without the loss (the
 * logits stay for model_get_logits). Returns the number of positions with a label. */
int64_t model_forward_logits(Model *m, const Batch *b);
/* Backward pass of the last forward: accumulates (+=) into the gradient buffer. */
void model_backward(Model *m);
/* Announces, during model_backward, that elements [lo, hi) of the flat gradient buffer are
 * final for this backward: nothing later in the pass writes them (on a device backend, the
 * work that writes them has been queued on its stream). The ranges come in backward order
 * — LM head and final norm, blocks L-1 .. 0, embedding — each ending where the previous one
 * began, and tile [0, params total) exactly once per backward (alignment padding
 * included). The trainer starts the gradient all-reduce of each bucket from it. NULL (the
 * default) turns the announcements off. */
typedef void (*GradReadyFn)(void *ctx, int64_t lo, int64_t hi);
void model_set_grad_ready(Model *m, GradReadyFn fn, void *ctx);
/* Which model_forward calls apply dropout (model.dropout, docs/models.md
 * §block-dropout-bidirectional): DROPOUT_AUTO (the default) those that prepare a backward
 * (grad_scale > 0: training), not scoring and validation (grad_scale 0); DROPOUT_ALWAYS every one
 * (a gradient check's loss evaluations); DROPOUT_NEVER none. Decoding never drops. */
typedef enum { DROPOUT_AUTO, DROPOUT_ALWAYS, DROPOUT_NEVER } DropoutUse;
void model_set_dropout_use(Model *m, DropoutUse u);
/* The masks of a dropping forward are a hash of (seed, stream, layer, site, token or row,
 * channel); each dropping forward then advances the stream by one. model_init_weights sets
 * (its seed, 0). A caller that sets the stream before each forward from (step, micro-batch,
 * rank) makes the masks independent of the passes run before (a resumed run draws the masks of
 * the uninterrupted one); the same stream twice gives the same masks (a fixed mask). */
void model_set_dropout_stream(Model *m, uint64_t seed, uint64_t stream);
/* Logits of the last forward at the positions with a label, in order: host copy [M,
 * model_outputs(cfg)] of [act] elements. Only valid after model_forward with grad_scale == 0
 * (otherwise they were replaced by their gradient). model_forward_logits is the scoring forward. */
void model_get_logits(Model *m, void *host);
/* What a completions server returns of each labeled position of the last
 * model_forward_logits (LogitScoresArgs, src/backend_ops.h), into host arrays: lse and the
 * label's log p [M], the k most likely of the first `vocab` ids and their log p [M*k]. */
typedef struct {
    double *lse, *label_lp;
    int32_t *top_id;
    double *top_lp;
} LogitScores;
void model_logit_scores(Model *m, int vocab, int k, const LogitScores *out);
/* The logits of labeled position `row` of the last model_forward_logits: host [outputs] of [act].
 */
void model_get_logit_row(Model *m, int64_t row, void *host);
/* Forward pass for scoring: for each position with a label, in order, logp = log
 * p(label | the tokens up to it) and greedy = the label is the first argmax. Returns the
 * number of such positions. */
int64_t model_token_logprobs(Model *m, const Batch *b, double *logp, uint8_t *greedy);

/* Truncated backpropagation through time with the state carried across batches
 * (train.carry_state, docs/models.md §carried-states). A carried-state block holds, for `rows`
 * batch rows, every layer's recurrent state; it lives on the backend and belongs to the caller.
 * model_carry_width: [f32] elements of one row's state over all layers, 0 when a layer's
 * mixer cannot carry (only the recurrent cells rnn, rnn_orth, exprnn, nnrnn and lstm can).
 * model_carry_bytes: the block's bytes for `rows` rows (it unbinds any block). A zeroed block
 * is the zero state. model_set_carry(m, block, rows) makes every later model_forward start
 * batch row r from row r of the block and leave there the row's final state, the gradient
 * stopping at the batch's start; each row must be one segment (no doc_mask, no
 * bidirectional), B <= rows. NULL turns carrying off. Binding is cheap: a caller with several
 * blocks (one per micro-batch) binds each before its forward. A decoder binds the same
 * layer states: rebind after one. */
int64_t model_carry_width(const Model *m);
size_t model_carry_bytes(Model *m, int rows);
void model_set_carry(Model *m, void *state, int rows);
/* Host copies of a block as rows [rows, model_carry_width] (the layers' states in order). */
void model_carry_download(Model *m, const void *state, int rows, float *host);
void model_carry_upload(Model *m, void *state, int rows, const float *host);

/* Parameter counts of a config without building the model (nothing is allocated). */
void model_count_params(const ModelConfig *cfg, int64_t *total, int64_t *non_embedding);
/* cfg's parameter table (names, offsets, groups) without the model's buffers; params_free it. */
void model_declare_params(const ModelConfig *cfg, ParamTable *out);
/* Prints "model: gla + selective, 375.2M parameters (...)" and its dimensions (model_summary.c). */
void model_print_summary(const ModelConfig *mc, const ModelDims *dm, int64_t params,
                         int64_t non_embedding);
/* Device memory of training on one rank with N tokens per micro-batch, on a backend whose
 * [act] and [f32] elements take act_size and f32_size bytes: the model's buffers as they
 * are allocated (master weights, gradients and the compute copy; activations saved for
 * the backward; the scratch shared by the layers) and the optimizer's `optimizer_buffers`
 * [f32] values per parameter (AdamW's two moments, RMSprop's one average). */
typedef struct {
    size_t weights, optimizer, saved, scratch;
} ModelMemory;
ModelMemory model_memory(const ModelConfig *cfg, int64_t N, size_t act_size, size_t f32_size,
                         int optimizer_buffers, Recompute recompute);
/* What the training backward recomputes (train.recompute; RECOMPUTE_DEFAULT until set). Under
 * MIXER and BLOCK, model_recurrent_stats has no per-layer statistics (NULL). */
void model_set_recompute(Model *m, Recompute r);
/* Parameter counts: all, and without the embedding and LM head. */
int64_t model_num_params(const Model *m);
int64_t model_num_params_non_embedding(const Model *m);
/* Training FLOPs per token (forward + backward) for context length T, for MFU. */
double model_flops_per_token(const Model *m, int T);

#endif
