/* The compute backend: every operation the model runs, as a table of functions.
 *
 * The model code (src/model/) calls only these functions and never touches buffer
 * contents, so the same forward/backward code runs on any backend chosen at run time.
 * Buffers are opaque `void *` in the backend's memory. Their element type follows their
 * role, written in brackets in each comment:
 *   [act]  activations and weights as the model computes with them (CPU: fp32),
 *   [f32]  values kept in fp32 on every backend: gate cumulative sums, recurrent
 *          states, normaliser statistics, losses, master weights, gradients, optimizer state,
 *   [i32]  int32 indices.
 * On the CPU backend every floating type is `real` (fp32, or fp64 in the test build).
 *
 * Layout: token-major, rows are the N = B*T tokens of a batch flattened; a per-head tensor
 * of H heads of D channels is [N, H, D]. Linear weights are [out, in] (PyTorch layout).
 * Gradient outputs for parameters always accumulate (+=); gradient outputs for
 * activations overwrite unless the argument is called `accumulate`.
 */
#ifndef ROTOR_BACKEND_H
#define ROTOR_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Document segments of a batch (fla's cu_seqlens): every op with a notion of time
 * (convs, shifts, scans, positions, mixers) treats each segment as its own sequence. */
typedef struct {
    int64_t ntok;         /* N = B*T */
    int nseg;             /* number of segments */
    const int64_t *cu;    /* [nseg+1] segment start offsets into the N tokens, cu[nseg] = N */
    const int32_t *pos;   /* [N] position of each token within its segment */
    /* The same segments in the backend's memory, for device kernels (seqs_mirror() fills
     * them; the CPU backend reads only the host arrays above). Chunks are the CHUNK_SIZE
     * pieces of every segment in order, the order of the chunk states. */
    int64_t nchunk;
    const int32_t *dev_cu;    /* [nseg+1] */
    const int32_t *dev_pos;   /* [N] */
    const int32_t *dev_chunk; /* [nchunk][3]: first token, length, segment */
} Seqs;

typedef enum { ACT_NONE = 0, ACT_SILU = 1, ACT_SIGMOID = 2 } Activation;

/* One row of an op profile (Backend.profile_read): the calls of one op at one shape. */
typedef struct {
    char op[24];
    char shape[40];  /* "" where the op's calls are not told apart by shape */
    int64_t calls;
    double ms;       /* device time summed over the calls */
    double flops;    /* floating-point operations of those calls, 0 if not counted */
    double bytes;    /* the fewest bytes they must read and write, 0 if not counted */
} OpTime;

typedef struct Backend Backend;
struct Backend {
    const char *name;
    const char *device; /* what it runs on, for logs ("NVIDIA H100 80GB HBM3") */
    size_t act_size; /* bytes per [act] element */
    size_t f32_size; /* bytes per [f32] element */
    double peak_flops; /* dense peak of the device in FLOP/s for MFU, 0 if unknown */
    double peak_bandwidth; /* memory bandwidth of the device in bytes/s, 0 if unknown */

    /* ---- memory ---- */
    void *(*alloc)(size_t bytes);
    void (*release)(void *p);
    void (*zero)(void *p, size_t bytes);
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    void (*download)(void *host_dst, const void *src, size_t bytes);
    /* Waits until every queued operation has finished (timers). */
    void (*synchronize)(void);
    /* Peak bytes of backend memory allocated so far (0 where not tracked). */
    size_t (*peak_memory)(void);
    /* dst [act] = src [f32] over n elements (the compute copy of the master weights). */
    void (*to_act)(void *dst, const void *src, int64_t n);

    /* ---- dense ---- */
    /* out[M,N] = x[M,K] w[N,K]^T (+ bias[N] if bias). */
    void (*matmul_fwd)(void *out, const void *x, const void *w, const void *bias, int M, int N,
                       int K);
    /* dx[M,K] (=, or += if accumulate) dout w; dw[N,K] += dout^T x; dbias[N] += sum_rows dout.
     * dx or dbias may be NULL. */
    void (*matmul_bwd)(void *dx, void *dw, void *dbias, const void *dout, const void *x,
                       const void *w, int M, int N, int K, int accumulate);
    /* out[n,:] = E[tok[n],:]; tokens [i32] */
    void (*embedding_fwd)(void *out, const int32_t *tok, const void *E, int64_t n, int C);
    void (*embedding_bwd)(void *dE, const int32_t *tok, const void *dout, int64_t n, int C);
    /* out[rows[i],:] = src[i,:] [act] for n distinct rows [i32]; other rows untouched. */
    void (*scatter_rows)(void *out, const int32_t *rows, const void *src, int64_t n, int C);

    /* ---- normalisation ---- */
    /* x [N, G, C] -> y = x * rstd * w, rstd [f32][N*G]; w has G*C entries if w_per_group
     * else C (shared by all groups). SPEC §1 RMSNorm. */
    void (*rmsnorm_fwd)(void *y, void *rstd, const void *x, const void *w, int64_t N, int G,
                        int C, int w_per_group, double eps);
    /* The residual add fused with the norm that reads its result: h = a + b [N, C] (the
     * residual stream, rounded to [act]), then y, rstd = rmsnorm_fwd of h with G = 1. */
    void (*add_rmsnorm_fwd)(void *h, void *y, void *rstd, const void *a, const void *b,
                            const void *w, int64_t N, int C, double eps);
    void (*rmsnorm_bwd)(void *dx, void *dw, const void *dy, const void *x, const void *w,
                        const void *rstd, int64_t N, int G, int C, int w_per_group,
                        int accumulate);
    /* y = x / sqrt(sum x^2 + eps) per group of D; rnorm [f32][N*G] = 1/sqrt(...). */
    void (*l2norm_fwd)(void *y, void *rnorm, const void *x, int64_t N, int G, int D, double eps);
    void (*l2norm_bwd)(void *dx, const void *dy, const void *y, const void *rnorm, int64_t N,
                       int G, int D, int accumulate);

    /* ---- elementwise ---- */
    /* out = x * act(g) (act = SILU: swish, SIGMOID); dx, dg overwrite. SwiGLU is
     * gate_mul(up, gate, SILU). */
    void (*gate_mul_fwd)(void *out, const void *x, const void *g, int64_t n, Activation act);
    void (*gate_mul_bwd)(void *dx, void *dg, const void *dout, const void *x, const void *g,
                         int64_t n, Activation act);
    void (*silu_fwd)(void *y, const void *x, int64_t n);
    void (*silu_bwd)(void *dx, const void *dy, const void *x, int64_t n);

    /* ---- time mixing helpers (all respect segments) ---- */
    /* Depthwise causal conv, kernel 4, weight [C,4] (tap 3 = current token), then act
     * (NONE or SILU). A NULL weight means the fixed first difference x_t - x_{t-1}
     * (Selective RoPE skip_conv). x, y [N, C]. */
    void (*conv_fwd)(void *y, const void *x, const void *w, const Seqs *s, int C,
                     Activation act);
    void (*conv_bwd)(void *dx, void *dw, const void *dy, const void *x, const void *w,
                     const Seqs *s, int C, Activation act);
    /* FoX data-dependent shift (SPEC §4): y_t = a_t x_{t-1} + (1-a_t) x_t with
     * a = sigmoid(a_logit) [N,H] per head, x [N,H,D], x_{-1} = 0 at a segment start. */
    void (*shift_fwd)(void *y, const void *x, const void *a_logit, const Seqs *s, int H, int D);
    void (*shift_bwd)(void *dx, void *da_logit, const void *dy, const void *x,
                      const void *a_logit, const Seqs *s, int H, int D);
    /* Reverse cumulative sum over each segment, [f32] x [N, C] -> y (in place allowed). */
    void (*revcumsum)(void *y, const void *x, const Seqs *s, int C);

    /* ---- position embeddings (SPEC §5), half-split pairs (j, j+D/2) ---- */
    /* angle [f32][N, D/2] = pos * theta^(-2j/D). */
    void (*rope_angles)(void *angle, const Seqs *s, int D, double theta);
    /* y = rotate(x, angle): x [N,H,D]; angle [f32] is [N, H, D/2] if per_head else
     * [N, D/2] shared by the heads. */
    void (*rotate_fwd)(void *y, const void *x, const void *angle, int64_t N, int H, int D,
                       int per_head);
    /* dx = rotate(dy, -angle); dangle [f32] += d/dangle if not NULL (per_head layout). */
    void (*rotate_bwd)(void *dx, void *dangle, const void *dy, const void *x, const void *angle,
                       int64_t N, int H, int D, int per_head);
    /* Selective RoPE steps 3-8 (SPEC §5) in one op, from the raw angle increments
     * phi_raw [N, H, P] (P = D/2 pairs, D = 2P):
     *   phi = conv_act(conv(phi_raw, conv_w))  (conv_fwd: conv_w [H*P, 4], NULL for the
     *         first difference; conv_act NONE or SILU),
     *   phi' = (phi + exp(bias)) * sigmoid(gate_logit)  (bias [H*P] or NULL, gate [N,H] or NULL),
     *   Phi [f32] = cumsum of phi' over each segment (saved for the backward),
     *   qo, ko = rotate(q, k, angle) per head with angle = temp[j] * Phi (temp [f32][P]);
     * q, k, qo, ko [N, H, D]. */
    void (*selrope_fwd)(void *qo, void *ko, void *Phi, const void *q, const void *k,
                        const void *phi_raw, const void *conv_w, Activation conv_act,
                        const void *bias, const void *gate_logit, const void *temp,
                        const Seqs *s, int H, int P);
    /* Its backward from dqo, dko and the saved Phi: dq, dk, dphi_raw (overwrite),
     * dconv_w (+=), dbias (+=), dgate_logit (overwrite), dtemp (+=). dconv_w, dbias and
     * dgate_logit may be NULL and are ignored when conv_w, bias or gate_logit is NULL;
     * dtemp may be NULL (frozen temperatures). */
    void (*selrope_bwd)(void *dq, void *dk, void *dphi_raw, void *dconv_w, void *dbias,
                        void *dgate_logit, void *dtemp, const void *dqo, const void *dko,
                        const void *q, const void *k, const void *phi_raw, const void *conv_w,
                        Activation conv_act, const void *bias, const void *gate_logit,
                        const void *temp, const void *Phi, const Seqs *s, int H, int P);
    /* Weight-normalised per-head projection weight (SPEC §5 weight_norm):
     * wn[h,:,j] = s[h] * w[h,:,j] / ||w[h,:,j]||, w [H, Din, P]. */
    void (*weightnorm_fwd)(void *wn, const void *w, const void *scale, int H, int Din, int P);
    void (*weightnorm_bwd)(void *dw, void *dscale, const void *dwn, const void *w,
                           const void *scale, int H, int Din, int P);
    /* Per-head projection: out[n,h,:] = x[n,h,:] (Din) . w[h] (Din x P); x [N,H,Din], out [N,H,P]. */
    void (*head_matmul_fwd)(void *out, const void *x, const void *w, int64_t N, int H, int Din,
                            int P);
    void (*head_matmul_bwd)(void *dx, void *dw, const void *dout, const void *x, const void *w,
                            int64_t N, int H, int Din, int P, int accumulate);

    /* ---- gates ---- */
    /* y = logsigmoid(x) / normalizer [f32]. */
    void (*logsigmoid_fwd)(void *y, const void *x, int64_t n, double normalizer);
    void (*logsigmoid_bwd)(void *dx, const void *dy, const void *x, int64_t n, double normalizer);
    /* Gated DeltaNet (SPEC §3): beta = sigmoid(b_raw); g = -exp(A_log) softplus(a_raw + dt_bias)
     * [f32]; b_raw, a_raw, beta, g [N,H]. */
    void (*gdn_gates_fwd)(void *beta, void *g, const void *b_raw, const void *a_raw,
                          const void *A_log, const void *dt_bias, int64_t N, int H);
    void (*gdn_gates_bwd)(void *db_raw, void *da_raw, void *dA_log, void *ddt_bias,
                          const void *dbeta, const void *dg, const void *b_raw,
                          const void *a_raw, const void *A_log, const void *dt_bias, int64_t N,
                          int H);

    /* ---- mixers ---- */
    /* GLA (SPEC §2), chunked: q,k [N,H,K], v,o [N,H,V], g = log alpha [f32][N,H,K];
     * states [f32] holds the state at the start of every chunk (see gla_states_size). */
    void (*gla_fwd)(void *o, void *states, const void *q, const void *k, const void *v,
                    const void *g, const Seqs *s, int H, int K, int V, double scale);
    void (*gla_bwd)(void *dq, void *dk, void *dv, void *dg, const void *dout, const void *q,
                    const void *k, const void *v, const void *g, const void *states,
                    const Seqs *s, int H, int K, int V, double scale);
    /* Gated DeltaNet (SPEC §3), chunked WY/UT form: q,k [N,H,K] (L2-normalised), v,o [N,H,V],
     * beta, g [f32][N,H]. */
    void (*gdn_fwd)(void *o, void *states, const void *q, const void *k, const void *v,
                    const void *beta, const void *g, const Seqs *s, int H, int K, int V,
                    double scale);
    void (*gdn_bwd)(void *dq, void *dk, void *dv, void *dbeta, void *dg, const void *dout,
                    const void *q, const void *k, const void *v, const void *beta,
                    const void *g, const void *states, const Seqs *s, int H, int K, int V,
                    double scale);
    /* FoX attention (SPEC §4), blockwise with online softmax: q,k,v,o [N,H,D],
     * logf [f32][N,H], lse [f32][N,H] saved for the backward. */
    void (*fox_fwd)(void *o, void *lse, const void *q, const void *k, const void *v,
                    const void *logf, const Seqs *s, int H, int D, double scale);
    void (*fox_bwd)(void *dq, void *dk, void *dv, void *dlogf, const void *dout, const void *q,
                    const void *k, const void *v, const void *logf, const void *o,
                    const void *lse, const Seqs *s, int H, int D, double scale);

    /* ---- loss ---- */
    /* Softmax cross-entropy over logits [N,V] with labels [i32] (-100 ignored): returns the
     * summed loss in fp64 on the host and, if grad_scale != 0, replaces the logits by
     * grad_scale * dloss/dlogits (rows with ignored labels become 0). */
    double (*cross_entropy)(void *logits, const int32_t *labels, int64_t N, int V,
                            double grad_scale);

    /* Per-row log-probability of the label and whether the label is the first argmax
     * (evaluation): logp [f32][N], is_argmax [N] host bytes; rows with label -100 give 0
     * and 1. */
    void (*token_logprobs)(const void *logits, const int32_t *labels, int64_t N, int V,
                           void *logp, uint8_t *is_argmax);

    /* ---- optimizer ---- */
    /* Sum of squares of n [f32] values, in fp64 on the host. */
    double (*sumsq)(const void *x, int64_t n);
    /* ---- collectives over the data-parallel ranks on [f32] buffers in backend memory ----
     * NULL where the buffers are host memory (the CPU): dist/ then works on them directly.
     * comm_create_id (rank 0) fills comm_id_size bytes that every rank passes to comm_init
     * after dist_broadcast. The collectives run on a communication stream of their own:
     * each starts after everything queued so far (the gradients it reads) and overlaps
     * whatever is queued after it, so its buffer range must stay untouched until comm_wait.
     * reduce_start sums buf[lo, hi) over the ranks; with ranges (ZeRO-1 slices) only rank
     * r gets the sum of [lo, hi) within its slice, as dist_reduce_start. allgather_start
     * gives every rank each rank's slice, as dist_allgather. comm_wait queues every later
     * operation after the started collectives and returns once they have finished: the
     * caller puts it under the watchdog (dist_watch_begin), since a dead peer hangs it. */
    size_t comm_id_size;
    void (*comm_create_id)(void *id);
    void (*comm_init)(const void *id, int rank, int world);
    void (*reduce_start)(void *buf, int64_t lo, int64_t hi, const int64_t *ranges);
    void (*allgather_start)(void *buf, const int64_t *ranges);
    void (*comm_wait)(void);

    /* x *= s over n [f32] values. */
    void (*scale)(void *x, int64_t n, double s);
    /* AdamW on [f32] master weights w with moments m, v, gradient g (SPEC §7), step t >= 1;
     * w_act, when not NULL, receives the updated weights as [act] in the same pass. */
    void (*adamw)(void *w, void *w_act, void *m, void *v, const void *g, int64_t n, double lr,
                  double beta1, double beta2, double eps, double weight_decay, int64_t t);

    /* ---- profiling (NULL where the backend offers none) ----
     * profile(1) times every later op of this table on the device, profile(0) stops;
     * profile_read waits for the device, fills up to max rows, one per op and shape in the
     * order first called, returns how many there are, and clears the counts. */
    void (*profile)(int on);
    int (*profile_read)(OpTime *rows, int max);
};

/* Number of [f32] elements gla_fwd/gdn_fwd store in `states` for a batch: one K x V state
 * per head at the start of every chunk of every segment. */
int64_t chunk_states_size(const Seqs *s, int H, int K, int V);

#define CHUNK_SIZE 64

const Backend *backend_cpu(void);

/* The CUDA backend on GPU number local_rank % (visible GPUs) — one rank per GPU under
 * mpirun — or NULL with a reason in why (no CUDA in this build, no GPU visible, a GPU older
 * than compute capability 8.0). The first call picks the GPU; later calls return it. */
const Backend *backend_cuda(int local_rank, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
