/* Internals shared by the model, its mixers and its position embeddings. */
#ifndef ROTOR_MODEL_INTERNAL_H
#define ROTOR_MODEL_INTERNAL_H

#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "model/acts.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/params.h"

/* What a forward pass is for: training or scoring; a decoding prefill, which also leaves
 * every segment's decoding state (segment r = row r of the decoder); or one decoding step,
 * whose segments are the decoder's rows, one token each at its position, read from and
 * advancing that state (docs/models.md §decoding). */
typedef enum { PASS_TRAIN, PASS_PREFILL, PASS_STEP } PassMode;

/* What a layer sees during a forward or backward pass. */
typedef struct {
    PassMode mode;
    const Backend *be;
    const ModelConfig *cfg;
    const ModelDims *dims;
    const Seqs *seqs;
    int64_t N;     /* tokens in the batch */
    char *weights; /* compute copy of the weights [act] */
    char *master;  /* master weights [f32] */
    char *grads;   /* gradients [f32] */
    const ParamTable *params;
    const void *rope_angle; /* [f32][N, dk/2] when pe = rope, shared by the layers */
    int max_len;            /* decoding: KV-cache slots per row */
    /* a PASS_TRAIN with carried states (train.carry_state, docs/models.md §carried-states): segment
     * r
     * (= batch row r) starts from row r of the layer's bound state, which the pass leaves
     * holding the segment's final state */
    int carry;
} Ctx;

static inline void *W(const Ctx *c, int idx) {
    return c->weights + (size_t)c->params->p[idx].offset * c->be->act_size;
}
/* Parameters the ops read in fp32 whatever the compute precision (docs/models.md §gated-deltanet
 * A_log, dt_bias). */
static inline void *WM(const Ctx *c, int idx) {
    return c->master + (size_t)c->params->p[idx].offset * c->be->f32_size;
}
static inline void *G(const Ctx *c, int idx) {
    return c->grads + (size_t)c->params->p[idx].offset * c->be->f32_size;
}
/* Bytes of n [act] or [f32] elements. */
static inline size_t ACTS(const Backend *be, int64_t n) { return (size_t)n * be->act_size; }
static inline size_t F32S(const Backend *be, int64_t n) { return (size_t)n * be->f32_size; }
static inline size_t ACT(const Ctx *c, int64_t n) { return ACTS(c->be, n); }
static inline size_t F32(const Ctx *c, int64_t n) { return F32S(c->be, n); }

/* Declares a linear weight [out, in] ~ N(0, init_std) with weight decay. */
int declare_linear(ParamTable *t, const char *name, int64_t out, int64_t in, double std);
/* Declares a bias or norm vector (no weight decay): zeros or ones. */
int declare_vector(ParamTable *t, const char *name, int64_t n, int ones);
/* Declares a short-conv weight [C, 1, 4] ~ N(0, init_std) with weight decay. */
int declare_conv(ParamTable *t, const char *name, int64_t C, double std);
/* Declares a parameter of a recurrence (ParamInfo.recurrent; no weight decay). */
int declare_recurrent(ParamTable *t, const char *name, int ndim, const int64_t *shape,
                      ParamInit init, double init_arg);
/* Declares the parameter of an orthogonal matrix (ParamInfo.orthogonal; no weight decay). */
int declare_orthogonal(ParamTable *t, const char *name, int ndim, const int64_t *shape,
                       ParamInit init, double init_arg);

/* Grow-only [f32] buffer for the chunk states of the linear-attention mixers, whose size
 * depends on the segments of each batch. */
typedef struct {
    void *p;
    size_t bytes;
} GrowBuf;
void *growbuf_get(GrowBuf *b, const Backend *be, size_t bytes);
void growbuf_free(GrowBuf *b, const Backend *be);

/* ---- position embeddings (pe.c, docs/models.md §position-embeddings) ---- */
typedef struct {
    PEConfig cfg;
    int H, D, P, d_model; /* heads, per-head q/k width, pairs, mixer input width */
    int phi_w, phi_scale, phi_w1, phi_w2, conv_w, bias, gate_w, gate_b, temp; /* param ids */
    /* saved (selective) */
    void *xh, *xh_rnorm, *phi_lr, *phi_raw, *gate_logit, *Phi;
    /* scratch (selective) */
    void *wn, *dwn, *dphi_raw, *dgate, *dxh, *dphi_lr;
    /* decoding state (selective): each row's angle sum [f32] and last three phi_raw */
    void *Phi_s, *tail_s;
} PosEmb;

void pe_declare(PosEmb *pe, ParamTable *t, const char *prefix, const ModelConfig *cfg, int H,
                int D);
void pe_bind(PosEmb *pe, const Backend *be, Carve *saved, Carve *scratch, int64_t N);
void pe_bind_state(PosEmb *pe, const Backend *be, Carve *state, int64_t rows);
/* Rotates q, k [N,H,D] into qo, ko. x is the mixer input (Selective RoPE angles). Decoding
 * passes keep Selective RoPE's state (Ctx.mode). */
void pe_forward(PosEmb *pe, const Ctx *c, const void *x, const void *q, const void *k, void *qo,
                void *ko);
/* dq, dk (overwrite) from dqo, dko; Selective RoPE also writes its share of dx (=, or += if
 * accumulate). Returns whether dx holds a value now (accumulate, or Selective RoPE). */
int pe_backward(PosEmb *pe, const Ctx *c, const void *x, const void *q, const void *k,
                const void *dqo, const void *dko, void *dq, void *dk, void *dx, int accumulate);

/* ---- pieces shared by mixers ---- */

/* A mixer's projections of its input x [N, d] (q, k, v, gates), run as one matmul_group so
 * that a backend may run them as one product (docs/gpu.md "Kernel variants", inproj). Each
 * part names the layer's fields that hold its output and that output's gradient (bound
 * later); the backward runs the parts in the order they were added. */
typedef struct {
    int w, b; /* parameter ids of the weight [N, d] and the bias (-1: none) */
    int N;
    void **y, **dy;
} InProjPart;
typedef struct {
    InProjPart p[MATMUL_GROUP_MAX];
    int n;
} InProj;

void inproj_add(InProj *ip, int w, int b, int64_t N, void **y, void **dy);
void inproj_forward(const InProj *ip, const Ctx *c, const void *x);
/* dx (=, or += if accumulate) the parts' shares from their dy; the weights' gradients. */
void inproj_backward(const InProj *ip, const Ctx *c, const void *x, void *dx, int accumulate);

/* Projections q, k, v of the mixer input, then per channel a short causal conv with an
 * activation, or the activation alone, or nothing (GLA docs/models.md §gla, Gated DeltaNet
 * §gated-deltanet). q1, k1, v1 are the results (the projections themselves when nothing follows).
 * proj holds every projection of the mixer input: q, k, v and those the mixer adds.
 */
typedef struct {
    InProj proj;
    int q, k, v, qconv, kconv, vconv;  /* parameter ids */
    int conv;                          /* short conv */
    Activation conv_act, plain_act;    /* after the conv; alone without it (NONE or SILU) */
    int64_t widths[2];                 /* key_dim, value_dim */
    void *q0, *k0, *v0, *q1, *k1, *v1; /* saved */
    void *dq0, *dk0, *dv0;             /* scratch */
    void *qt, *kt, *vt;                /* decoding state: the conv inputs' tails */
} QKVPrologue;

/* Declares q_proj, k_proj, v_proj [width, d] under prefix. */
void qkv_declare_proj(QKVPrologue *p, ParamTable *t, const char *prefix, int d, int64_t Kd,
                      int64_t Vd, double std);
/* Declares the q/k/v_conv1d weights when conv. */
void qkv_declare_conv(QKVPrologue *p, ParamTable *t, const char *prefix, int conv,
                      Activation conv_act, Activation plain_act, double std);
/* Adds q, k, v to proj (after the convs are declared), their gradients at q1, k1, v1 in
 * *dq1, *dk1, *dv1 (the layer's fields). */
void qkv_inproj(QKVPrologue *p, void **dq1, void **dk1, void **dv1);
void qkv_bind(QKVPrologue *p, const Backend *be, Carve *saved, Carve *scratch, int64_t N);
void qkv_bind_state(QKVPrologue *p, const Backend *be, Carve *state, int64_t rows);
/* Every projection of proj, then the transforms; decoding passes keep the conv tails
 * (Ctx.mode). */
void qkv_forward(QKVPrologue *p, const Ctx *c, const void *x);
/* From the gradients at q1, k1, v1 (consumed as scratch) and those of the other parts of
 * proj: dx (=, or += if accumulate) the projections' share. */
void qkv_backward(QKVPrologue *p, const Ctx *c, const void *x, void *dq1, void *dk1, void *dv1,
                  void *dx, int accumulate);

/* The readout of a mixer's heads o [N, H, dv]: optional RMSNorm per head (weight shared by
 * the heads or one per head), optional output gate act(x W_g), then o_proj (GLA, GDN: norm
 * shared + swish gate; FoX: its optional output norm and sigmoid gate). */
typedef enum { READOUT_NO_NORM, READOUT_NORM_SHARED, READOUT_NORM_PER_HEAD } ReadoutNorm;
typedef struct {
    int g, norm, o; /* parameter ids, -1 where absent */
    ReadoutNorm norm_kind;
    Activation gate; /* ACT_NONE: no gate */
    int H, dv, d;
    int64_t widths[3]; /* H * dv, H, 0 */
    /* saved: the heads' output (written by the mixer), the norm's rstd and result, the
     * gate projection, the gated result */
    void *o_, *rstd, *on, *gp, *r;
    /* scratch: gradients at r, on, gp and o_ */
    void *dr, *don, *dgp, *do_;
} Readout;

void readout_declare_gate(Readout *r, ParamTable *t, const char *prefix, Activation gate, int d,
                          int H, int dv, double std);
void readout_declare_norm(Readout *r, ParamTable *t, const char *name, ReadoutNorm kind);
void readout_declare_out(Readout *r, ParamTable *t, const char *prefix, double std);
void readout_bind(Readout *r, const Backend *be, Carve *saved, Carve *scratch, int64_t N);
/* Adds the gate's projection (if any) to a mixer's input projections. */
void readout_inproj(Readout *r, InProj *ip);
/* y = o_proj(gate(norm(o_))), the gate's projection gp made by the input projections. */
void readout_forward(Readout *r, const Ctx *c, void *y);
/* do_ and the gate projection's gradient dgp from dy. */
void readout_backward(Readout *r, const Ctx *c, const void *dy);

/* What GLA and (Gated) DeltaNet build around their chunked core op (linattn.c): the
 * QKVPrologue, the position embedding of q and k, the Readout, the op's arguments and chunk
 * states, and the decoding state. The mixer's struct starts with it. */
typedef struct {
    QKVPrologue in;
    PosEmb pe;
    Readout out;
    GrowBuf states;
    LinAttnArgs attn; /* the core op's arguments, set by the forward for the backward */
    void *qr, *kr;    /* saved: q, k after the position embedding (in.q1, in.k1 with NoPE) */
    /* scratch: their gradients, v1's, and those of q1, k1 before the position embedding */
    void *dqr, *dkr, *dv1, *dq1, *dk1;
    void *S; /* decoding state: each row's [f32] H x K x V state */
} LinAttnLayer;

/* Binds the LinAttnLayer's buffers and the mixer's own table (own, n, widths, features as
 * acts_bind takes them). */
void linattn_bind(void *layer, const BufDecl *own, int n, const int64_t *widths, unsigned features,
                  const Backend *be, const ModelDims *dm, Carve *saved, Carve *scratch, int64_t N);
/* q1, k1, v1 (QKVPrologue), then qr, kr (the position embedding). */
void linattn_qk_forward(LinAttnLayer *la, const Ctx *c, const void *x);
/* Adds q, k, v to in.proj: the last of a mixer's create, after the readout's gate and its
 * own projections (the backward runs them in this order). */
void linattn_inproj(LinAttnLayer *la);
/* From dqr, dkr, dv1 (consumed as scratch) and the gradients of the mixer's own projections:
 * dx = the position embedding's and the projections' shares. */
void linattn_qk_backward(LinAttnLayer *la, const Ctx *c, const void *x, void *dx);
/* The chunked core op on *a with its chunk states in *states, or its step form in a
 * PASS_STEP: GLA's ops, or with the delta rule Gated DeltaNet's (Mamba2 runs GLA's). */
void linattn_run(const Ctx *c, LinAttnArgs *a, GrowBuf *states, int delta);
/* MixerImpl.destroy and .bind_state of a mixer whose struct starts with a LinAttnLayer. */
void linattn_destroy(void *layer, const Backend *be);
void linattn_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                        int64_t rows, int max_len);

/* The core the LRU and RotRNN share (diag_rnn.c, docs/models.md §lru, §rotrnn): for the mixer
 * input x [N, d], y = scan(x Bw^T) Cw^T + D x, the scan the complex diagonal recurrence of C
 * channels (cscan ops; its input and states h as [N, 2C] interleaved pairs) and D [d] a
 * per-channel skip. The mixer's weight op fills Bw, Cw, loga and angle before drnn_forward,
 * and turns dBw, dCw, dloga, dangle into its parameters' gradients after drnn_backward. */
typedef struct {
    int C, d, D; /* complex channels, model width; parameter id of D */
    int bidir;   /* a second scan in reverse time, read out by Cw2 (docs/models.md
                    §block-dropout-bidirectional) */
    GrowBuf states;
    CScanArgs scan, rscan; /* set by the forward for the backward (rscan: the reverse scan) */
    /* saved (per layer): the weights [2C, d] and [d, 2C], the eigenvalues' log modulus and
     * angle [f32][C], the states h; bidirectional: the reverse readout Cw2 [d, 2C] and the
     * reverse scan's states hr (segments in reverse time order) */
    void *Bw, *Cw, *loga, *angle, *h, *Cw2, *hr;
    /* scratch: the scan's input, the gradients at h and at it; the weights' [f32];
     * bidirectional: a [N, d] buffer (the reverse readout in reverse time, then its gradient)
     * and dCw2 */
    void *bx, *dh, *dbx, *dBw, *dCw, *dloga, *dangle, *yr, *dCw2;
    void *S; /* decoding state: each row's [f32] 2C state */
} DiagRnn;

/* Declares D [d] ~ N(0, 1) (no weight decay) under prefix; bidir from cfg->bidirectional. */
void drnn_declare(DiagRnn *r, ParamTable *t, const char *prefix, int C, int d, int bidir);
/* MixerImpl.stats of the LRU and RotRNN: the eigenvalues' moduli (modulus_*: the LRU's nu,
 * RotRNN's gamma) and angles (theta_*, theta_hist) of the last forward and the norm of its
 * forward states, in `heads` heads (RotRNN; 1: the LRU). */
void drnn_stats(const DiagRnn *r, const Ctx *c, json_t *o, int heads);
void drnn_bind(DiagRnn *r, const Backend *be, Carve *saved, Carve *scratch, int64_t N);
/* MixerImpl.destroy and .bind_state of a mixer whose struct starts with a DiagRnn. */
void drnn_destroy(void *layer, const Backend *be);
void drnn_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                     int64_t rows, int max_len);
/* y = scan(x Bw^T) Cw^T + D x, bidirectional + rscan(x Bw^T) Cw2^T (rscan: the same recurrence
 * from each segment's end back to its start); decoding passes keep the rows' states (Ctx.mode). */
void drnn_forward(DiagRnn *r, const Ctx *c, const void *x, void *y);
/* dx (overwrite) from dy; dD accumulates; dBw, dCw, dloga, dangle (both scans' sums) and dCw2
 * overwrite. */
void drnn_backward(DiagRnn *r, const Ctx *c, const void *x, const void *dy, void *dx);

/* The state of a nonlinear cell (RNN, LSTM: mixer_rnn.c, mixer_lstm.c), carried across
 * batches or kept for decoding (docs/models.md §decoding, §carried-states): width [f32] elements a
 * row. The mixer's struct starts with it. */
typedef struct {
    int64_t width;
    void *S; /* each row's state */
    GrowBuf
        h0; /* a carrying pass: the segments' initial states [f32][nseg, width], for the backward */
} CellState;

/* The state the cell's op reads and writes in this pass (NULL: none), and in a carrying pass
 * *h0 = the segments' initial states, copied from it (else NULL). */
void *cell_state(CellState *cs, const Ctx *c, const void **h0);
/* MixerImpl.destroy, .bind_state and .carry_width of a mixer whose struct starts with a
 * CellState. */
void cell_destroy(void *layer, const Backend *be);
void cell_bind_state(void *layer, const Backend *be, const ModelDims *dm, Carve *state,
                     int64_t rows, int max_len);
int64_t cell_carry_width(const void *layer);

/* Statistics of a recurrent layer for the metrics (layer_stats.c, MixerImpl.stats). */
enum { STATS_ANGLE_BINS = 16 };
/* A host copy of parameter idx (its [f32] master) as doubles; the caller frees it. */
double *stats_param(const Ctx *c, int idx);
/* o.<name>_mean, _min, _max of x[0, n). */
void stats_summary(json_t *o, const char *name, const double *x, int64_t n);
/* o.theta_hist: STATS_ANGLE_BINS counts of the angles folded into [0, pi] (a conjugate pair's
 * angle), equal bins. */
void stats_angle_hist(json_t *o, const double *theta, int64_t n);
/* From the last forward's states h [c->N, width] ([act]): o.state_norm, the mean over tokens of
 * |h_t|, and with groups > 1 (heads of width / groups channels) o.state_norm_head, the mean
 * over tokens and heads of the head's norm. */
void stats_state_norm(json_t *o, const Ctx *c, const void *h, int64_t width, int groups);

/* ---- mixers (mixer_gla.c, mixer_gdn.c: GDN and DeltaNet, mixer_fox.c: FoX and the
 * Transformer, mixer_mamba2.c, mixer_lru.c, mixer_rotrnn.c, mixer_rnn.c: the tanh RNNs,
 * expRNN and nnRNN, mixer_lstm.c) ---- */
typedef struct MixerImpl {
    const char *op; /* its core op, as Backend.supports names it ("gla", "gdn", "fox", "cscan",
                     * "rnn", "lstm") */
    /* Declares the layer's parameters under prefix ("model.layers.<l>.attn.": the family's
     * names, model.c) */
    void *(*create)(ParamTable *t, const ModelConfig *cfg, const ModelDims *dims,
                    const char *prefix);
    void (*destroy)(void *layer, const Backend *be);
    /* Saved activations (per layer) and scratch (shared by all layers) for N tokens. */
    void (*bind)(void *layer, const Backend *be, const ModelDims *dims, Carve *saved,
                 Carve *scratch, int64_t N);
    /* y = Mixer(x), x the normalised block input [N, d]. A PASS_PREFILL also writes each
     * segment's decoding state; a PASS_STEP runs one token per row from that state and
     * advances it, using the activation buffers as scratch (Ctx.mode). */
    void (*forward)(void *layer, const Ctx *c, const void *x, void *y);
    /* dx (overwrite) from dy; parameter gradients accumulate. */
    void (*backward)(void *layer, const Ctx *c, const void *x, const void *dy, void *dx);
    /* Carves the layer's decoding state for `rows` rows of at most max_len tokens. */
    void (*bind_state)(void *layer, const Backend *be, const ModelDims *dims, Carve *state,
                       int64_t rows, int max_len);
    /* NULL, or the layer's penalty on its parameters (the nnRNN's, docs/models.md §nonlinear-rnns:
     * delta for its eigenvalue moduli, t_decay for its non-normal part); with grad, its gradient is
     * added to the parameters' gradients. */
    double (*penalty)(void *layer, const Ctx *c, double delta, double t_decay, int grad);
    /* NULL for a mixer that cannot carry its state across batches (Ctx.carry); else the
     * [f32] elements of a row's state, which bind_state carves as one [rows, width] buffer. */
    int64_t (*carry_width)(const void *layer);
    /* NULL, or adds the layer's statistics to o for the metrics of a validation: its
     * recurrence's moduli and angles now and its states' norm at the last forward
     * (layer_stats.c; docs/models.md §lru, §rotrnn, §nonlinear-rnns) */
    void (*stats)(void *layer, const Ctx *c, json_t *o);
} MixerImpl;

/* Zoology's BaseConv (mixer_base_conv.c, docs/models.md §zoology-shape): a layer of model.mixers,
 * not a family. */
extern const MixerImpl mixer_base_conv;

/* Initialisers two families share: angles U(0, model.max_phase) (RotRNN's theta, the nnRNN's,
 * docs/models.md §rotrnn, §nonlinear-rnns; layers_common.c) and dt_bias (Gated DeltaNet's and
 * Mamba2's, §gated-deltanet, §mamba2; mixer_gdn.c). */
void init_phase(const ParamInitArgs *a);
void init_dt_bias(const ParamInitArgs *a);

/* ---- the families' shared parts (model/family.h): widths far beyond any model (2^24) are
 * refused before they overflow an int ---- */
#define MAX_WIDTH 16777216.0
static inline int is_integer(double x) { return fabs(x - round(x)) < 1e-9; }
/* GLA's and DeltaNet's widths: key_dim = d expand_k, value_dim = d expand_v (mixer_gla.c) */
const char *expand_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n);
void expand_head_keys(const ModelConfig *c, char *buf, size_t n);
/* the chunked linear-attention op's FLOPs (GLA, Gated DeltaNet, DeltaNet, Mamba2's SSD) */
double chunked_flops(const ModelConfig *c, const ModelDims *dm, int T);
/* the LRU's and RotRNN's init ranges and scan FLOPs (diag_rnn.c) */
typedef struct {
    const char *family, *min, *max; /* model.type, and the keys of the moduli's range */
    int positive;                   /* the range starts above 0 */
} DrnnInitKeys;
const char *drnn_check_init(const ModelConfig *c, const DrnnInitKeys *k, char *msg, size_t n);
double drnn_flops(const ModelConfig *c, const ModelDims *dm, int T);
/* the nonlinear cells' one state of width d (mixer_rnn.c; also the LSTM's) */
const char *rnn_cell_dims(const ModelConfig *c, ModelDims *o, char *msg, size_t n);
void rnn_cell_head_keys(const ModelConfig *c, char *buf, size_t n);
double rnn_cell_flops(const ModelConfig *c, const ModelDims *dm, int T);

/* ---- output heads other than the LM head: the auto-encoder (head_autoencoder.c,
 * docs/models.md §autoencoder-head) and the sequence classifier (head_classifier.c,
 * §classification) ---- */
typedef struct {
    /* Declares its parameters after the backbone's. */
    void *(*create)(ParamTable *t, const ModelConfig *cfg);
    void (*destroy)(void *head, const Backend *be);
    /* Saved activations and scratch for batches of up to N tokens. */
    void (*bind)(void *head, const Backend *be, Carve *saved, Carve *scratch, int64_t N);
    /* logits [M, outputs] for the labeled positions rows[0, M) (host token indices of a
     * batch of rows of T tokens), from the final-normed states xf [N, d]. */
    void (*forward)(void *head, const Ctx *c, const void *xf, const int32_t *rows, int64_t M, int T,
                    void *logits);
    /* dxf [N, d] (overwrite) from the logits' gradient; parameter gradients accumulate. */
    void (*backward)(void *head, const Ctx *c, const void *dlogits, void *dxf);
    /* Its output weight's parameter id (not a non-embedding parameter). */
    int (*unembedding)(const void *head);
} HeadImpl;

extern const HeadImpl head_autoencoder, head_classifier;

/* ---- decoding (model.c, for decode.c) ---- */

/* Binds every layer's decoding state for `rows` rows of at most max_len tokens at base
 * (NULL: only measures); returns its bytes. The layers keep the pointers: one decoder per
 * model at a time. */
size_t model_bind_decode_state(Model *m, void *base, int rows, int max_len);

/* A decoding pass: a prefill of one segment per row (PASS_PREFILL), or one token per row
 * (PASS_STEP). Segments cu [nseg+1] over tokens [cu[nseg]] with positions pos. */
typedef struct {
    PassMode mode;
    int max_len;
    int nseg;
    const int64_t *cu;
    const int32_t *pos;
    const int32_t *tokens;
} DecodePass;

/* Runs it; logits [nseg, V] (host floats) of each segment's last token. */
void model_decode_pass(Model *m, const DecodePass *p, float *logits);

#endif
