/* Every compute op of the Backend table, written once. BACKEND_OPS(X) expands
 * X(return type, name, (parameters), (their names)) for each op: src/backend.h makes the
 * table's fields of it, src/cpu/cpu_ops.h the prototypes of cpu_<name>,
 * kernels/backend/cuda_ops.h those of cuda_<name>, each backend its table, src/device/op_costs.h
 * the cost model's prototypes and the op profilers their timed calls. Conventions (element types in
 * brackets, layout, accumulation) are stated at the top of src/backend.h; the math of each op in
 * docs/models.md. Included by backend.h only. */
#ifndef ROTOR_BACKEND_OPS_H
#define ROTOR_BACKEND_OPS_H

/* ---- argument structs of the mixer and Selective RoPE ops ---- */

/* A chunked linear-attention mixer: GLA (docs/models.md §gla), Mamba2's SSD (§mamba2, GLA with
 * g_per_head), Gated DeltaNet (§gated-deltanet) or DeltaNet (§deltanet, the delta rule without
 * decay: gdn ops with g == NULL). */
typedef struct {
    const Seqs *s;
    int H, K, V;       /* heads, key and value head sizes */
    double scale;      /* applied to q */
    const void *q, *k; /* [N,H,K]; GDN: L2-normalised */
    const void *v;     /* [N,H,V] */
    const void *g;     /* [f32] log decay: GLA per channel [N,H,K], GDN per head [N,H];
                        * NULL (gdn ops only): no decay, log decay 0 */
    int g_per_head;    /* GLA: g is [N,H], the same log decay for every key channel */
    const void *beta;  /* [f32][N,H] delta-rule write strength (GDN); NULL for GLA */
    void *o;           /* [N,H,V] */
    /* [f32] the state at the start of every chunk (chunk_states_size); the CUDA gla ops under
     * gla_state:bf16 (device/kernel_variants.h) keep them in bf16 in its first half */
    void *states;
    /* [f32][nseg, H, K, V] or NULL: the decoding state (docs/models.md §decoding). gla_fwd and
     * gdn_fwd write each segment's state after its last token into it; gla_step and gdn_step
     * read each row's state and advance it by the row's token. */
    void *state;
} LinAttnArgs;

/* Its backward: a.states as the forward left them (a.o unused); gradients overwrite. */
typedef struct {
    LinAttnArgs a;
    const void *dout;   /* [N,H,V] */
    void *dq, *dk, *dv; /* like q, k, v */
    void *dg;           /* [f32] like g; ignored when g is NULL */
    void *dbeta;        /* [f32] like beta; NULL for GLA */
} LinAttnGrads;

/* Causal softmax attention with a forget gate (FoX, docs/models.md §fox), blockwise with an
 * online softmax; without one when logf is NULL (the Transformer, §transformer). */
typedef struct {
    const Seqs *s;
    int H, D; /* heads, head size */
    double scale;
    const void *q, *k, *v; /* [N,H,D] */
    const void *logf;      /* [f32][N,H] log forget gate, NULL for none */
    void *o;               /* [N,H,D] */
    void *lse;             /* [f32][N,H] log-sum-exp of each row, saved for the backward */
} AttnArgs;

/* One decoding step of causal attention (docs/models.md §decoding): row b's token at position
 * s->pos[b] enters the row's KV cache at that slot, then attends to slots 0..pos. */
typedef struct {
    const Seqs *s; /* B rows of one token each (s->ntok = s->nseg = B) */
    int H, D, cap; /* heads, head size, cache slots per row */
    double scale;
    const void *q, *k, *v; /* [B,H,D] */
    const void *logf;      /* [f32][B,H] log forget gate, NULL for none */
    void *kc, *vc;         /* [act][B, cap, H, D] the keys and values of every slot */
    void *fc;              /* [f32][B, cap, H] the cumulative log forget gate F of every
                            * slot (F_pos = F_{pos-1} + logf), NULL without a gate */
    void *o;               /* [B,H,D] */
} AttnStepArgs;

/* Its backward from a.o and a.lse as the forward left them; gradients overwrite. */
typedef struct {
    AttnArgs a;
    const void *dout; /* [N,H,D] */
    void *dq, *dk, *dv;
    void *dlogf; /* [f32][N,H]; ignored (may be NULL) when a.logf is NULL */
} AttnGrads;

/* Selective RoPE steps 3-8 (docs/models.md §position-embeddings) in one op, from the raw angle
 * increments phi_raw [N, H, P] (P = D/2 pairs, D = 2P): phi = conv_act(conv(phi_raw, conv_w))
 * (conv_fwd: conv_w [H*P, 4], NULL for the first difference; conv_act NONE or SILU), phi' = (phi +
 * exp(bias)) * sigmoid(gate_logit)  (bias [H*P] or NULL, gate [N,H] or NULL), Phi [f32] = cumsum of
 * phi' over each segment (saved for the backward), qo, ko = rotate(q, k, angle) per head with angle
 * = temp[j] * Phi (temp [f32][P]). */
typedef struct {
    const Seqs *s;
    int H, P;
    const void *q, *k;   /* [N,H,2P] */
    const void *phi_raw; /* [N,H,P] */
    const void *conv_w;  /* [H*P, 4] or NULL */
    Activation conv_act;
    const void *bias;       /* [H*P] or NULL */
    const void *gate_logit; /* [N,H] or NULL */
    const void *temp;       /* [f32][P] */
    void *qo, *ko;          /* [N,H,2P] */
    void *Phi;              /* [f32][N,H,P]; selrope_step: [B,H,P] each row's angle sum,
                             * read and advanced */
    void *tail;             /* selrope_step only: [act][B, 3, H*P] each row's last three
                             * phi_raw (zeros before its first token), read and advanced */
} SelRopeArgs;

/* Its backward from a.Phi: dq, dk, dphi_raw, dgate_logit overwrite; dconv_w, dbias, dtemp
 * accumulate. dconv_w, dbias and dgate_logit may be NULL and are ignored when conv_w, bias
 * or gate_logit is NULL; dtemp may be NULL (frozen temperatures). */
typedef struct {
    SelRopeArgs a;
    const void *dqo, *dko;
    void *dq, *dk, *dphi_raw, *dconv_w, *dbias, *dgate_logit, *dtemp;
} SelRopeGrads;

/* A complex diagonal linear recurrence over each segment (LRU docs/models.md §lru, RotRNN §rotrnn
 * in its P basis): per complex channel c < C, h_t = lambda_c h_{t-1} + x_t with
 * lambda_c = exp(loga_c + i angle_c), loga <= 0, and h = 0 before a segment's first token.
 * Complex values are interleaved (re, im) pairs: x and h are [N, 2C] real rows, pair c at
 * (2c, 2c+1), so one step scales pair c by exp(loga_c) and rotates it by angle_c. The state
 * is carried in fp32 whatever the element type of x and h. */
typedef struct {
    const Seqs *s;
    int C;                    /* complex channels */
    const void *loga, *angle; /* [f32][C] */
    const void *x;            /* [N, 2C] */
    void *h;                  /* [N, 2C] */
    void *states;             /* [f32] scratch of chunk_states_size(s, 1, C, 2) elements */
    /* [f32][nseg, 2C] or NULL: the decoding state (docs/models.md §decoding). cscan_fwd writes each
     * segment's state after its last token into it; cscan_step reads each row's state and
     * advances it by the row's token. */
    void *state;
} CScanArgs;

/* Its backward from a.h as the forward left it (a.x unused): dx overwrites, and so do dloga,
 * dangle ([f32][C], the gradients at the eigenvalues' log modulus and angle) unless
 * accumulate (then they add: the two scans of a bidirectional layer); a.states is scratch
 * again. */
typedef struct {
    CScanArgs a;
    const void *dh; /* [N, 2C] */
    void *dx;       /* [N, 2C] */
    void *dloga, *dangle;
    int accumulate;
} CScanGrads;

/* The LRU's weights as the complex scan and two real matmuls read them (docs/models.md §lru),
 * from its [f32] parameters: loga = -exp(nu_log), angle = exp(theta_log); Bw [2N, d] with rows
 * 2c, 2c+1 = exp(gamma_log_c) (B_re[c,:], B_im[c,:]); Cw [d, 2N] with columns 2c, 2c+1 =
 * (C_re[:,c], -C_im[:,c]), so that Re(C h) = h Cw^T for h as [2N] interleaved reals. */
typedef struct {
    int N, d;                                   /* complex state channels, model width */
    const void *nu_log, *theta_log, *gamma_log; /* [f32][N] */
    const void *B_re, *B_im;                    /* [f32][N, d] */
    const void *C_re, *C_im;                    /* [f32][d, N] */
    void *loga, *angle;                         /* [f32][N] */
    void *Bw, *Cw;                              /* [2N, d], [d, 2N] */
    /* bidirectional (docs/models.md §block-dropout-bidirectional): the reverse scan's readout
     * C_re2, C_im2 made into Cw2 as C_re, C_im into Cw; all three NULL without */
    const void *C_re2, *C_im2;
    void *Cw2;
} LruWeights;

/* Its backward: from the gradients at loga, angle, Bw and Cw ([f32]), the parameter
 * gradients ([f32]) accumulate. */
typedef struct {
    LruWeights w;
    const void *dloga, *dangle, *dBw, *dCw;
    void *dnu_log, *dtheta_log, *dgamma_log, *dB_re, *dB_im, *dC_re, *dC_im;
    const void *dCw2; /* with w.Cw2 */
    void *dC_re2, *dC_im2;
} LruWeightGrads;

/* RotRNN's weights in the basis of its rotations (docs/models.md §rotrnn), per head h < H of n
 * (even) state channels, from P_h = expm(M_h - M_h^T) and the [f32] parameters:
 * xi_h = sqrt((1 - gamma_h^2) / ||B_h||_F^2) with gamma_h = exp(-exp(gamma_log_h));
 * loga = -exp(gamma_log_h) and angle = theta_h for the n/2 channels of head h;
 * Bw [H n, d] with rows of head h = xi_h P_h^T B_h; Cw [d, H n] with columns of head h =
 * C_h P_h (C_h the head's n columns of C). */
typedef struct {
    int H, n, d;           /* heads, state channels per head, model width */
    const void *P;         /* [f32][H, n, n] */
    const void *gamma_log; /* [f32][H] */
    const void *theta;     /* [f32][H, n/2] */
    const void *B;         /* [f32][H, n, d] */
    const void *C;         /* [f32][d, H n] */
    void *xi;              /* [f32][H], kept for the backward */
    void *loga, *angle;    /* [f32][H n/2] */
    void *Bw, *Cw;         /* [H n, d], [d, H n] */
    /* bidirectional (docs/models.md §block-dropout-bidirectional): the reverse scan's readout C2
     * [f32][d, H n] made into Cw2 as C into Cw; both NULL without */
    const void *C2;
    void *Cw2;
} RotWeights;

/* Its backward from w.xi as the forward left it: dP [f32][H, n, n] overwrites (the gradient at
 * P, for orth_expm_bwd); dxi [f32][H] is scratch; the parameter gradients accumulate. */
typedef struct {
    RotWeights w;
    const void *dloga, *dangle, *dBw, *dCw;
    void *dP, *dxi;
    void *dgamma_log, *dtheta, *dB, *dC;
    const void *dCw2; /* with w.Cw2: dP also takes C2_h^T dCw2_h */
    void *dC2;
} RotWeightGrads;

/* A nonlinear recurrence over each segment (docs/models.md §nonlinear-rnns): h_t = act(W h_{t-1} +
 * z_t), h before a segment's first token h0[seg] (0 without h0), z the precomputed input
 * projections. act is tanh, or modReLU with its own bias b: modReLU(a)_i = sign(a_i) relu(|a_i| +
 * b_i). Row layout as everywhere: a token's h is a row, so one step is h_t = act(h_{t-1} W^T +
 * z_t). The state is carried in fp32 whatever the element type of z and h. */
typedef enum { RNN_TANH = 0, RNN_MODRELU = 1 } RnnAct;
typedef struct {
    const Seqs *s;
    int n; /* state width */
    RnnAct act;
    const void *W;    /* [f32][n, n] */
    const void *bias; /* [f32][n] modReLU bias; NULL for tanh */
    const void *z;    /* [N, n] */
    void *h;          /* [N, n] */
    /* [f32][nseg, n] or NULL: the decoding state (docs/models.md §decoding), as CScanArgs.state */
    void *state;
    /* [f32][nseg, n] or NULL (zeros): each segment's initial state, carried from an earlier
     * window (docs/models.md §carried-states); it may not alias state */
    const void *h0;
} RnnArgs;

/* Its backward (backpropagation through time) from a.h as the forward left it (a.z unused):
 * dz overwrites; dW and dbias ([f32]) accumulate (dbias ignored for tanh). Truncated at the
 * segment starts: the gradient does not flow into a.h0, which enters dW as h_{t0-1}. */
typedef struct {
    RnnArgs a;
    const void *dh; /* [N, n] */
    void *dz;       /* [N, n] */
    void *dW, *dbias;
} RnnGrads;

/* The LSTM recurrence over each segment (docs/models.md §lstm), PyTorch's gate order i, f, g, o:
 * a_t = z_t + h_{t-1} W^T (z the input projections plus biases), i, f, o = sigmoid, g = tanh
 * of their quarter of a_t, c_t = f c_{t-1} + i g, h_t = o tanh(c_t); h, c before a
 * segment's first token from h0, else 0. */
typedef struct {
    const Seqs *s;
    int n;          /* state width */
    const void *W;  /* [f32][4n, n] */
    const void *z;  /* [N, 4n] */
    void *gates;    /* [N, 4n] the activated gates i, f, g, o (kept for the backward) */
    void *c;        /* [f32][N, n] the cell states (kept for the backward) */
    void *h;        /* [N, n] */
    void *state;    /* [f32][nseg, 2n] (h, c) or NULL: the decoding state */
    const void *h0; /* [f32][nseg, 2n] (h, c) or NULL (zeros): the initial states, as RnnArgs.h0 */
} LstmArgs;

/* Its backward from a.gates, a.c, a.h as the forward left them: dz overwrites, dW accumulates;
 * truncated at the segment starts, as RnnGrads. */
typedef struct {
    LstmArgs a;
    const void *dh; /* [N, n] */
    void *dz;       /* [N, 4n] */
    void *dW;       /* [f32][4n, n] */
} LstmGrads;

/* The nnRNN's recurrent matrix from its Schur form (docs/models.md §nonlinear-rnns): V = P (Lambda
 * + T) P^T with P orthogonal (orth_expm), Lambda block diagonal with the 2x2 blocks gamma_i [[cos
 * theta_i, -sin theta_i], [sin theta_i, cos theta_i]] and T the strictly lower triangle of the
 * parameter T (its other entries are not read). n even. */
typedef struct {
    int n;
    const void *P;             /* [f32][n, n] */
    const void *gamma, *theta; /* [f32][n/2] */
    const void *T;             /* [f32][n, n] */
    void *K;                   /* [f32][n, n] Lambda + T, kept for the backward */
    void *V;                   /* [f32][n, n] */
    void *work;                /* [f32][2n, n] scratch */
} NnrnnWeights;

/* Its backward from w.K as the forward left it: dP [f32] overwrites (for orth_expm_bwd);
 * dgamma, dtheta, dT accumulate. */
typedef struct {
    NnrnnWeights w;
    const void *dV;
    void *dP, *dgamma, *dtheta, *dT;
} NnrnnWeightGrads;

/* [f32] elements of the scratch orth_expm_fwd/bwd take for H matrices of n x n. */
static inline int64_t orth_expm_work_size(int H, int n) { return 6 * (int64_t)H * n * n; }

/* The angles of EURNN's L layers of rotations on n channels (eurnn_weights_fwd): layer l
 * (from 0) rotates the pairs (p, p + 1), p = l % 2, l % 2 + 2, ..., p + 1 < n. The CPU and
 * the CUDA kernels share these. */
#ifdef __CUDACC__
#define EURNN_FN static inline __host__ __device__
#else
#define EURNN_FN static inline
#endif
EURNN_FN int eurnn_layer_pairs(int n, int l) { return (n - l % 2) / 2; }
EURNN_FN int64_t eurnn_angles(int n, int L) {
    return (int64_t)((L + 1) / 2) * eurnn_layer_pairs(n, 0) +
           (int64_t)(L / 2) * eurnn_layer_pairs(n, 1);
}

/* What a completions server returns of each row n of logits [N,V] (eval/serve_complete.c):
 * lse[n] = log sum_j exp x[n,j] over all V, label_lp[n] = x[n,labels[n]] - lse[n] (0 for
 * label -100), and the k largest of x[n, 0..vocab) in order, ties to the lower id (the first
 * argmax first): top_id[n*k + r] and top_lp[n*k + r] = x - lse. 1 <= k <= vocab <= V. Every
 * output is a device buffer, [f32] or int32. */
typedef struct {
    const void *logits;    /* [act][N,V] */
    const int32_t *labels; /* [N] */
    int64_t N;
    int V, vocab, k;
    void *lse, *label_lp; /* [f32][N] */
    int32_t *top_id;      /* [N*k] */
    void *top_lp;         /* [f32][N*k] */
} LogitScoresArgs;

/* The products of one input x [M,K] with several weights: a mixer's input projections (q, k,
 * v, gates), issued together so that a backend may run them as one product (docs/gpu.md
 * "Kernel variants", inproj). Part i: y_i [M, N_i] = x w_i^T (+ bias_i). */
enum { MATMUL_GROUP_MAX = 8 };

typedef struct {
    const void *w;    /* [N, K] */
    const void *bias; /* [N] or NULL */
    void *y;          /* [M, N] */
    int N;
} MatmulPart;

typedef struct {
    const void *x; /* [M, K] */
    int M, K, n;   /* rows, input width, parts */
    MatmulPart p[MATMUL_GROUP_MAX];
} MatmulGroup;

/* Its backward, as matmul_bwd of each part in order: dx (=, or += if accumulate) the sum of
 * dy_i w_i, dw_i += dy_i^T x, dbias_i += the column sums of dy_i (dbias_i NULL without a
 * bias). */
typedef struct {
    MatmulGroup g;
    const void *dy[MATMUL_GROUP_MAX]; /* [M, N_i] */
    void *dw[MATMUL_GROUP_MAX];       /* [f32] */
    void *dbias[MATMUL_GROUP_MAX];    /* [f32] */
    void *dx;
    int accumulate;
} MatmulGroupGrads;

/* The SwiGLU MLP's products with its gate (docs/models.md §backbone SwiGLU), issued as one op
 * each so that a backend may fuse the gate into the product's epilogue (docs/gpu.md "Kernel
 * variants", swiglu_gemm). matmul_gate_mul_fwd: y = x w^T [M, N] as matmul_fwd (the up
 * projection), then out = y * act(g) as gate_mul_fwd of the gate g [M, N]. */
typedef struct {
    const void *x, *w; /* [M, K], [N, K] */
    const void *g;     /* [M, N] */
    void *y, *out;     /* [M, N] */
    int M, N, K;
    Activation act;
} MatmulGateMulArgs;

/* gate_mul_matmul_dx: the input gradient of a product of a gated value, p = x * act(g) [M, K]
 * then p w^T (the down projection): dp = dout w as matmul_bwd's dx (dout [M, N], w [N, K]),
 * then gate_mul_bwd_rebuild of dp, which writes dx, dg and p rebuilt (for the product's weight
 * gradient). dp [M, K] is scratch a backend may use; dx, dg and p overwrite. */
typedef struct {
    const void *dout, *w; /* [M, N], [N, K] */
    const void *x, *g;    /* [M, K] */
    void *dx, *dg, *p;    /* [M, K] */
    void *dp;             /* [M, K] scratch */
    int M, N, K;
    Activation act;
} GateMulMatmulDx;

/* An optimizer update over runs of a flat parameter range (docs/models.md §training-recipe):
 * run r covers the elements [offset, offset + n) from the range's start, with its parameter
 * group's learning rate and weight decay. Runs do not overlap; elements of no run are left
 * as they are. */
typedef struct {
    int64_t offset, n;
    double lr, weight_decay;
} UpdateRun;

/* AdamW over the runs in one call (adamw_runs): the buffers at the range's first element, the
 * run table in host memory. The gradient enters every update multiplied by grad_scale (the
 * global-norm clip factor, 1 without clipping) exactly as scale() would round it; afterwards
 * the gradients of the runs may be left scaled or not. */
typedef struct {
    void *w, *w_act; /* [f32] master weights; [act] their compute copy, or NULL */
    void *m, *v;     /* [f32] moments */
    void *g;         /* [f32] gradients */
    const UpdateRun *runs;
    int nruns;
    double beta1, beta2, eps, grad_scale;
    int64_t t; /* the step, >= 1 */
} AdamWRuns;

/* The readout's RMSNorm and output gate in one op (rmsnorm_gate_fwd; docs/models.md §gla step 6,
 * the GDN, DeltaNet and FoX readouts as it): on = rmsnorm_fwd of x (G groups of C channels a
 * row, w of G*C entries if w_per_group else C), then r = gate_mul_fwd(on, gp, act). */
typedef struct {
    const void *x;  /* [N, G, C] the mixer's output */
    const void *w;  /* the norm's weight */
    const void *gp; /* [N, G, C] the gate's input */
    int64_t N;
    int G, C, w_per_group;
    Activation act;
    double eps;
    void *r;    /* [N, G, C] the gated output */
    void *rstd; /* [f32][N*G], saved for the backward */
    void *on;   /* [N, G, C] the normed values: a backend may write them in the forward and read
                 * them in the backward (the CPU does), or leave the buffer alone */
} RmsnormGateArgs;

/* Its backward from the forward's a.rstd (and a.on, where the backend wrote it): as
 * gate_mul_bwd into don, then rmsnorm_bwd of don. dx and dgp overwrite, dw [f32] accumulates;
 * don [N, G, C] is scratch a backend may use. */
typedef struct {
    RmsnormGateArgs a;
    const void *dr; /* [N, G, C] */
    void *dx, *dgp; /* [N, G, C] */
    void *dw;       /* [f32] like w */
    void *don;      /* [N, G, C] scratch */
} RmsnormGateGrads;

/* ---- the ops ---- */
#define BACKEND_OPS(X)                                                                               \
    /* dst [act] = src [f32] over n elements (the compute copy of the master weights). */            \
    X(void, to_act, (void *dst, const void *src, int64_t n), (dst, src, n))                          \
                                                                                                     \
    /* ---- dense ---- */                                                                            \
    /* out[M,N] = x[M,K] w[N,K]^T (+ bias[N] if bias). */                                            \
    X(void, matmul_fwd,                                                                              \
      (void *out, const void *x, const void *w, const void *bias, int M, int N, int K),              \
      (out, x, w, bias, M, N, K))                                                                    \
    /* dx[M,K] (=, or += if accumulate) dout w; dw[N,K] += dout^T x; dbias[N] += sum_rows            \
     * dout. dx, dw or dbias may be NULL. */                                                         \
    X(void, matmul_bwd,                                                                              \
      (void *dx, void *dw, void *dbias, const void *dout, const void *x, const void *w, int M,       \
       int N, int K, int accumulate),                                                                \
      (dx, dw, dbias, dout, x, w, M, N, K, accumulate))                                              \
    /* MatmulGroup: several products of one input, and their backward. */                            \
    X(void, matmul_group_fwd, (const MatmulGroup *g), (g))                                           \
    X(void, matmul_group_bwd, (const MatmulGroupGrads *a), (a))                                      \
    /* MatmulGateMulArgs, GateMulMatmulDx: the MLP's gated products. */                              \
    X(void, matmul_gate_mul_fwd, (const MatmulGateMulArgs *a), (a))                                  \
    X(void, gate_mul_matmul_dx, (const GateMulMatmulDx *a), (a))                                     \
    /* out[n,:] = E[tok[n],:]; tokens [i32] */                                                       \
    X(void, embedding_fwd, (void *out, const int32_t *tok, const void *E, int64_t n, int C),         \
      (out, tok, E, n, C))                                                                           \
    X(void, embedding_bwd, (void *dE, const int32_t *tok, const void *dout, int64_t n, int C),       \
      (dE, tok, dout, n, C))                                                                         \
    /* out[rows[i],:] = src[i,:] [act] for n distinct rows [i32]; other rows untouched. */           \
    X(void, scatter_rows, (void *out, const int32_t *rows, const void *src, int64_t n, int C),       \
      (out, rows, src, n, C))                                                                        \
                                                                                                     \
    /* ---- normalisation ---- */                                                                    \
    /* x [N, G, C] -> y = x * rstd * w, rstd [f32][N*G]; w has G*C entries if w_per_group            \
     * else C (shared by all groups). docs/models.md §backbone RMSNorm. */                          \
    X(void, rmsnorm_fwd,                                                                             \
      (void *y, void *rstd, const void *x, const void *w, int64_t N, int G, int C,                   \
       int w_per_group, double eps),                                                                 \
      (y, rstd, x, w, N, G, C, w_per_group, eps))                                                    \
    /* The residual add fused with the norm that reads its result: h = a + b [N, C] (the             \
     * residual stream, rounded to [act]), then y, rstd = rmsnorm_fwd of h with G = 1. */            \
    X(void, add_rmsnorm_fwd,                                                                         \
      (void *h, void *y, void *rstd, const void *a, const void *b, const void *w, int64_t N,         \
       int C, double eps),                                                                           \
      (h, y, rstd, a, b, w, N, C, eps))                                                              \
    X(void, rmsnorm_bwd,                                                                             \
      (void *dx, void *dw, const void *dy, const void *x, const void *w, const void *rstd,           \
       int64_t N, int G, int C, int w_per_group, int accumulate),                                    \
      (dx, dw, dy, x, w, rstd, N, G, C, w_per_group, accumulate))                                    \
    /* RmsnormGateArgs: rmsnorm_fwd then gate_mul_fwd, and their backward in the reverse order. */   \
    X(void, rmsnorm_gate_fwd, (const RmsnormGateArgs *a), (a))                                       \
    X(void, rmsnorm_gate_bwd, (const RmsnormGateGrads *a), (a))                                      \
    /* LayerNorm of x [N, C] (docs/models.md §zoology-shape): y = (x - mean) rstd w + b, mean and   \
     * rstd [f32][N] = 1/sqrt(var + eps) (the biased variance). Its backward: dx (=, or += if        \
     * accumulate); dw, db [f32] accumulate. */                                                      \
    X(void, layernorm_fwd,                                                                           \
      (void *y, void *mean, void *rstd, const void *x, const void *w, const void *b, int64_t N,      \
       int C, double eps),                                                                           \
      (y, mean, rstd, x, w, b, N, C, eps))                                                           \
    X(void, layernorm_bwd,                                                                           \
      (void *dx, void *dw, void *db, const void *dy, const void *x, const void *w,                   \
       const void *mean, const void *rstd, int64_t N, int C, int accumulate),                        \
      (dx, dw, db, dy, x, w, mean, rstd, N, C, accumulate))                                          \
    /* y = x / sqrt(sum x^2 + eps) per group of D; rnorm [f32][N*G] = 1/sqrt(...). */                \
    X(void, l2norm_fwd,                                                                              \
      (void *y, void *rnorm, const void *x, int64_t N, int G, int D, double eps),                    \
      (y, rnorm, x, N, G, D, eps))                                                                   \
    X(void, l2norm_bwd,                                                                              \
      (void *dx, const void *dy, const void *y, const void *rnorm, int64_t N, int G, int D,          \
       int accumulate),                                                                              \
      (dx, dy, y, rnorm, N, G, D, accumulate))                                                       \
                                                                                                     \
    /* ---- elementwise ---- */                                                                      \
    /* out = x * act(g) (act = SILU: swish, SIGMOID, NONE: x * g); dx, dg overwrite. SwiGLU          \
     * is gate_mul(up, gate, SILU). */                                                               \
    X(void, gate_mul_fwd, (void *out, const void *x, const void *g, int64_t n, Activation act),      \
      (out, x, g, n, act))                                                                           \
    X(void, gate_mul_bwd,                                                                            \
      (void *dx, void *dg, const void *dout, const void *x, const void *g, int64_t n,                \
       Activation act),                                                                              \
      (dx, dg, dout, x, g, n, act))                                                                  \
    /* gate_mul_bwd that also rebuilds the forward's out = x * act(g) for a later product's          \
     * weight gradient (the MLP's down projection under train.recompute = default): the same         \
     * values as gate_mul_fwd then gate_mul_bwd. */                                                  \
    X(void, gate_mul_bwd_rebuild,                                                                    \
      (void *out, void *dx, void *dg, const void *dout, const void *x, const void *g, int64_t n,     \
       Activation act),                                                                              \
      (out, dx, dg, dout, x, g, n, act))                                                             \
    /* y = a + b over n values; y may be a or b (BaseConv's skip, docs/models.md §zoology-shape).   \
     */                                                                                              \
    X(void, add, (void *y, const void *a, const void *b, int64_t n), (y, a, b, n))                   \
    X(void, silu_fwd, (void *y, const void *x, int64_t n), (y, x, n))                                \
    X(void, silu_bwd, (void *dx, const void *dy, const void *x, int64_t n), (dx, dy, x, n))          \
    /* y = gelu(x) = x Phi(x), the exact (erf) form; the auto-encoder head (docs/models.md           \
     * §autoencoder-head). */                                                                       \
    X(void, gelu_fwd, (void *y, const void *x, int64_t n), (y, x, n))                                \
    X(void, gelu_bwd, (void *dx, const void *dy, const void *x, int64_t n), (dx, dy, x, n))          \
    /* Inverted dropout (docs/models.md §block-dropout-bidirectional) over x [N, C]: y = x keep /   \
     * (1 - p), keep = dropout_keep(key, i, dropout_threshold(p)) of util/dropout_mask.h with i =    \
     * n C + c (T = 0), or i = (n / T) C + c (T > 0: one draw per channel of each row of T           \
     * tokens). y may be x. Its own backward: dx = dropout(dy) with the same arguments. */           \
    X(void, dropout, (void *y, const void *x, int64_t N, int C, int T, uint64_t key, double p),      \
      (y, x, N, C, T, key, p))                                                                       \
    /* y = max(x, 0); dx = dy where x > 0, else 0 (dx may be dy): the pair classifier's MLP          \
     * (docs/models.md §classification). */                                                         \
    X(void, relu_fwd, (void *y, const void *x, int64_t n), (y, x, n))                                \
    X(void, relu_bwd, (void *dx, const void *dy, const void *x, int64_t n), (dx, dy, x, n))          \
    /* The pair classifier's features (docs/models.md §classification): x [2P, d] holds each        \
     * pair's pooled u = x[2p], v = x[2p+1]; f [P, 4d] row p = [u, v, u*v, u-v] (LRA's NLI           \
     * interaction). The backward overwrites dx [2P, d]: du = df_0 + v df_2 + df_3,                  \
     * dv = df_1 + u df_2 - df_3 (df_k the k-th d-wide block of df's row). */                        \
    X(void, pair_nli_fwd, (void *f, const void *x, int64_t P, int d), (f, x, P, d))                  \
    X(void, pair_nli_bwd, (void *dx, const void *df, const void *x, int64_t P, int d),               \
      (dx, df, x, P, d))                                                                             \
                                                                                                     \
    /* ---- time mixing helpers (all respect segments) ---- */                                       \
    /* Depthwise causal conv of K taps (1 to 4), weight [C,K] (tap K-1 = current token),             \
     * plus bias [C] when not NULL, then act (NONE or SILU). A NULL weight means the fixed           \
     * first difference x_t - x_{t-1} (Selective RoPE skip_conv; K = 4). x, y [N, C]. dw, db         \
     * [f32] accumulate (ignored when NULL). */                                                      \
    X(void, conv_fwd,                                                                                \
      (void *y, const void *x, const void *w, const void *b, const Seqs *s, int C, int K,            \
       Activation act),                                                                              \
      (y, x, w, b, s, C, K, act))                                                                    \
    X(void, conv_bwd,                                                                                \
      (void *dx, void *dw, void *db, const void *dy, const void *x, const void *w, const void *b,    \
       const Seqs *s, int C, int K, Activation act),                                                 \
      (dx, dw, db, dy, x, w, b, s, C, K, act))                                                       \
    /* y[cu[s] + i, :] (=, or += if accumulate) x[cu[s+1] - 1 - i, :] for x, y [N, C]                \
     * (y != x): every segment in reverse time order (the bidirectional scan, docs/models.md         \
     * §block-dropout-bidirectional). Its own backward: the reversal is its own inverse. */         \
    X(void, segment_reverse, (void *y, const void *x, const Seqs *s, int C, int accumulate),         \
      (y, x, s, C, accumulate))                                                                      \
    /* FoX data-dependent shift (docs/models.md §fox): y_t = a_t x_{t-1} + (1-a_t) x_t with         \
     * a = sigmoid(a_logit) [N,H] per head, x [N,H,D], x_{-1} = 0 at a segment start. */             \
    X(void, shift_fwd, (void *y, const void *x, const void *a_logit, const Seqs *s, int H, int D),   \
      (y, x, a_logit, s, H, D))                                                                      \
    X(void, shift_bwd,                                                                               \
      (void *dx, void *da_logit, const void *dy, const void *x, const void *a_logit,                 \
       const Seqs *s, int H, int D),                                                                 \
      (dx, da_logit, dy, x, a_logit, s, H, D))                                                       \
                                                                                                     \
    /* ---- position embeddings (docs/models.md §position-embeddings), half-split pairs (j, j+D/2)  \
     * ---- */                                                                                       \
    /* angle [f32][N, D/2] = pos * theta^(-2j/D). */                                                 \
    X(void, rope_angles, (void *angle, const Seqs *s, int D, double theta), (angle, s, D, theta))    \
    /* y = rotate(x, angle): x [N,H,D]; angle [f32] is [N, H, D/2] if per_head else                  \
     * [N, D/2] shared by the heads. */                                                              \
    X(void, rotate_fwd,                                                                              \
      (void *y, const void *x, const void *angle, int64_t N, int H, int D, int per_head),            \
      (y, x, angle, N, H, D, per_head))                                                              \
    /* dx = rotate(dy, -angle); dangle [f32] += d/dangle if not NULL (per_head layout). */           \
    X(void, rotate_bwd,                                                                              \
      (void *dx, void *dangle, const void *dy, const void *x, const void *angle, int64_t N, int H,   \
       int D, int per_head),                                                                         \
      (dx, dangle, dy, x, angle, N, H, D, per_head))                                                 \
    X(void, selrope_fwd, (const SelRopeArgs *a), (a))                                                \
    X(void, selrope_bwd, (const SelRopeGrads *g), (g))                                               \
    /* Weight-normalised per-head projection weight (docs/models.md §position-embeddings            \
     * weight_norm): wn[h,:,j] = s[h] * w[h,:,j] / ||w[h,:,j]||, w [H, Din, P]. */                   \
    X(void, weightnorm_fwd, (void *wn, const void *w, const void *scale, int H, int Din, int P),     \
      (wn, w, scale, H, Din, P))                                                                     \
    X(void, weightnorm_bwd,                                                                          \
      (void *dw, void *dscale, const void *dwn, const void *w, const void *scale, int H, int Din,    \
       int P),                                                                                       \
      (dw, dscale, dwn, w, scale, H, Din, P))                                                        \
    /* Per-head projection: out[n,h,:] = x[n,h,:] (Din) . w[h] (Din x P); x [N,H,Din],               \
     * out [N,H,P]. */                                                                               \
    X(void, head_matmul_fwd,                                                                         \
      (void *out, const void *x, const void *w, int64_t N, int H, int Din, int P),                   \
      (out, x, w, N, H, Din, P))                                                                     \
    X(void, head_matmul_bwd,                                                                         \
      (void *dx, void *dw, const void *dout, const void *x, const void *w, int64_t N, int H,         \
       int Din, int P, int accumulate),                                                              \
      (dx, dw, dout, x, w, N, H, Din, P, accumulate))                                                \
                                                                                                     \
    /* ---- gates ---- */                                                                            \
    /* y = logsigmoid(x) / normalizer [f32]. */                                                      \
    X(void, logsigmoid_fwd, (void *y, const void *x, int64_t n, double normalizer),                  \
      (y, x, n, normalizer))                                                                         \
    X(void, logsigmoid_bwd,                                                                          \
      (void *dx, const void *dy, const void *x, int64_t n, double normalizer),                       \
      (dx, dy, x, n, normalizer))                                                                    \
    /* y = sigmoid(x) [f32] (the delta rule's beta, docs/models.md §gated-deltanet, §deltanet); dy \
     * [f32]. */                                                                                     \
    X(void, sigmoid_fwd, (void *y, const void *x, int64_t n), (y, x, n))                             \
    X(void, sigmoid_bwd, (void *dx, const void *dy, const void *x, int64_t n), (dx, dy, x, n))       \
    /* The per-head decay of Gated DeltaNet (docs/models.md §gated-deltanet) and Mamba2 (§mamba2): \
     * the time step dt = softplus(dt_raw + dt_bias) and the log decay g = -exp(A_log) dt [f32];     \
     * dt_raw [N,H], A_log and dt_bias [f32][H]. dt may be NULL (not kept: GDN). */                  \
    X(void, decay_gates_fwd,                                                                         \
      (void *dt, void *g, const void *dt_raw, const void *A_log, const void *dt_bias, int64_t N,     \
       int H),                                                                                       \
      (dt, g, dt_raw, A_log, dt_bias, N, H))                                                         \
    /* ddt_raw (overwrite) from ddt (NULL: dt unused) and dg [f32]; dA_log, ddt_bias [f32]           \
     * accumulate. */                                                                                \
    X(void, decay_gates_bwd,                                                                         \
      (void *ddt_raw, void *dA_log, void *ddt_bias, const void *ddt, const void *dg,                 \
       const void *dt_raw, const void *A_log, const void *dt_bias, int64_t N, int H),                \
      (ddt_raw, dA_log, ddt_bias, ddt, dg, dt_raw, A_log, dt_bias, N, H))                            \
    /* ---- Mamba2 (docs/models.md §mamba2) ---- */                                                 \
    /* y[n,h,:] = s[n,h] x[n,h,:] with s [f32][N,H]; x, y [N,H,D]. */                                \
    X(void, head_scale_fwd, (void *y, const void *x, const void *s, int64_t N, int H, int D),        \
      (y, x, s, N, H, D))                                                                            \
    /* dx = s dy, ds [f32][N,H] = sum_d dy x (both overwrite). */                                    \
    X(void, head_scale_bwd,                                                                          \
      (void *dx, void *ds, const void *dy, const void *x, const void *s, int64_t N, int H, int D),   \
      (dx, ds, dy, x, s, N, H, D))                                                                   \
    /* The skip y[n,h,:] += Dp[h] x[n,h,:], Dp [f32][H]. */                                          \
    X(void, head_skip_fwd, (void *y, const void *x, const void *Dp, int64_t N, int H, int D),        \
      (y, x, Dp, N, H, D))                                                                           \
    /* dx += Dp[h] dy; dDp [f32][H] += sum over tokens and channels of dy x. */                      \
    X(void, head_skip_bwd,                                                                           \
      (void *dx, void *dDp, const void *dy, const void *x, const void *Dp, int64_t N, int H,         \
       int D),                                                                                       \
      (dx, dDp, dy, x, Dp, N, H, D))                                                                 \
    /* out[n,h,:] = src[n, h / (H/G), :]: each of G groups [N,G,K] read by H/G consecutive           \
     * heads, out [N,H,K]. */                                                                        \
    X(void, group_bcast_fwd, (void *out, const void *src, int64_t N, int H, int G, int K),           \
      (out, src, N, H, G, K))                                                                        \
    /* dsrc[n,g,:] = sum over the heads h of group g of dout[n,h,:] (overwrite). */                  \
    X(void, group_bcast_bwd, (void *dsrc, const void *dout, int64_t N, int H, int G, int K),         \
      (dsrc, dout, N, H, G, K))                                                                      \
                                                                                                     \
    /* ---- LRU and RotRNN (docs/models.md §lru, §rotrnn) ---- */                                  \
    X(void, cscan_fwd, (const CScanArgs *a), (a))                                                    \
    X(void, cscan_bwd, (const CScanGrads *g), (g))                                                   \
    X(void, lru_weights_fwd, (const LruWeights *w), (w))                                             \
    X(void, lru_weights_bwd, (const LruWeightGrads *g), (g))                                         \
    /* P_h = expm(M_h - M_h^T) for H matrices [f32][H, n, n]; work [f32] scratch of                  \
     * orth_expm_work_size(H, n) elements. */                                                        \
    X(void, orth_expm_fwd, (void *P, const void *M, void *work, int H, int n), (P, M, work, H, n))   \
    /* dM [f32] += the gradient at M from dP [f32], through the Frechet derivative of expm. */       \
    X(void, orth_expm_bwd, (void *dM, const void *dP, const void *M, void *work, int H, int n),      \
      (dM, dP, M, work, H, n))                                                                       \
    X(void, rotrnn_weights_fwd, (const RotWeights *w), (w))                                          \
    X(void, rotrnn_weights_bwd, (const RotWeightGrads *g), (g))                                      \
                                                                                                     \
    /* ---- nonlinear RNNs: tanh/modReLU RNN, expRNN, nnRNN, LSTM (docs/models.md §nonlinear-rnns,  \
     * §lstm) ---- */                                                                               \
    X(void, rnn_fwd, (const RnnArgs *a), (a))                                                        \
    X(void, rnn_bwd, (const RnnGrads *g), (g))                                                       \
    X(void, lstm_fwd, (const LstmArgs *a), (a))                                                      \
    X(void, lstm_bwd, (const LstmGrads *g), (g))                                                     \
    X(void, nnrnn_weights_fwd, (const NnrnnWeights *w), (w))                                         \
    X(void, nnrnn_weights_bwd, (const NnrnnWeightGrads *g), (g))                                     \
    /* EURNN's recurrent matrix W [f32][n, n] = R_{L-1} ... R_1 R_0 (§nonlinear-rnns): R_l rotates  \
     * the rows of each pair of layer l (eurnn_layer_pairs), (x_p, x_q) -> (c x_p - s x_q, s x_p +   \
     * c x_q), by its angle of theta [f32], eurnn_angles(n, L) of them, layer after layer. */        \
    X(void, eurnn_weights_fwd, (void *W, const void *theta, int n, int L), (W, theta, n, L))         \
    /* dtheta [f32] += the gradient at theta from dW [f32], W as the forward left it; work           \
     * [f32] scratch of 2 n^2 elements. */                                                           \
    X(void, eurnn_weights_bwd,                                                                       \
      (void *dtheta, const void *dW, const void *W, const void *theta, void *work, int n, int L),    \
      (dtheta, dW, W, theta, work, n, L))                                                            \
    /* Returns coef sum_i (w_i - target)^2 over n [f32] values (fp64, on the host); g [f32]          \
     * += its gradient 2 coef (w - target) when g is not NULL. The nnRNN's penalties                 \
     * (§nonlinear-rnns). */                                                                        \
    X(double, l2_penalty, (void *g, const void *w, int64_t n, double target, double coef),           \
      (g, w, n, target, coef))                                                                       \
                                                                                                     \
    /* ---- mixers ---- */                                                                           \
    X(void, gla_fwd, (const LinAttnArgs *a), (a))                                                    \
    X(void, gla_bwd, (const LinAttnGrads *g), (g))                                                   \
    X(void, gdn_fwd, (const LinAttnArgs *a), (a))                                                    \
    X(void, gdn_bwd, (const LinAttnGrads *g), (g))                                                   \
    X(void, fox_fwd, (const AttnArgs *a), (a))                                                       \
    X(void, fox_bwd, (const AttnGrads *g), (g))                                                      \
                                                                                                     \
    /* ---- decoding (docs/models.md §decoding) ---- */                                             \
    /* tail[seg, j, :] = x[cu[seg+1] - W + j, :] for j < W, zero where that is before the            \
     * segment's start: the last W rows of each segment; x [N,C], tail [nseg, W, C], [f32]           \
     * elements if f32 else [act]. */                                                                \
    X(void, segment_tail, (void *tail, const void *x, const Seqs *s, int C, int W, int f32),         \
      (tail, x, s, C, W, f32))                                                                       \
    /* y [f32][N,C] = cumulative sum of x [f32] over each segment. */                                \
    X(void, segment_cumsum, (void *y, const void *x, const Seqs *s, int C), (y, x, s, C))            \
    /* cache[seg, pos[n], :] = x[n, :] for every token n of segment seg; cache [nseg, cap, C],       \
     * [f32] elements if f32 else [act]. */                                                          \
    X(void, cache_write, (void *cache, const void *x, const Seqs *s, int cap, int C, int f32),       \
      (cache, x, s, cap, C, f32))                                                                    \
    /* The step ops: s holds B rows of one token each (s->ntok = s->nseg = B) at positions           \
     * s->pos; each row reads its decoding state and advances it by its token. A row at              \
     * position 0 starts a sequence: it reads a zero state, as the forward ops do at a               \
     * segment start. */                                                                             \
    /* conv_fwd for one token per row: x, y [B,C]; tail [act][B,3,C] the row's previous three        \
     * inputs, oldest first (for any K). */                                                          \
    X(void, conv_step,                                                                               \
      (void *y, const void *x, const void *w, const void *b, void *tail, const Seqs *s, int C,       \
       int K, Activation act),                                                                       \
      (y, x, w, b, tail, s, C, K, act))                                                              \
    /* shift_fwd for one token per row: prev [act][B,H,D] the row's previous x. */                   \
    X(void, shift_step,                                                                              \
      (void *y, const void *x, const void *a_logit, void *prev, const Seqs *s, int H, int D),        \
      (y, x, a_logit, prev, s, H, D))                                                                \
    /* selrope_fwd for one token per row, with a->Phi and a->tail the rows' state. */                \
    X(void, selrope_step, (const SelRopeArgs *a), (a))                                               \
    /* gla_fwd / gdn_fwd for one token per row from and into a->state; a->states unused. */          \
    X(void, gla_step, (const LinAttnArgs *a), (a))                                                   \
    X(void, gdn_step, (const LinAttnArgs *a), (a))                                                   \
    /* cscan_fwd for one token per row from and into a->state; a->states unused. */                  \
    X(void, cscan_step, (const CScanArgs *a), (a))                                                   \
    /* rnn_fwd / lstm_fwd for one token per row from and into a->state. */                           \
    X(void, rnn_step, (const RnnArgs *a), (a))                                                       \
    X(void, lstm_step, (const LstmArgs *a), (a))                                                     \
    /* Causal attention for one token per row over its KV cache (AttnStepArgs). */                   \
    X(void, attn_step, (const AttnStepArgs *a), (a))                                                 \
                                                                                                     \
    /* ---- loss ---- */                                                                             \
    /* Softmax cross-entropy over logits [N,V] with labels [i32] (-100 ignored): returns the         \
     * summed loss in fp64 on the host and, if grad_scale != 0, replaces the logits by               \
     * grad_scale * dloss/dlogits (rows with ignored labels become 0). */                            \
    X(double, cross_entropy,                                                                         \
      (void *logits, const int32_t *labels, int64_t N, int V, double grad_scale),                    \
      (logits, labels, N, V, grad_scale))                                                            \
    /* Per-row log-probability of the label and whether the label is the first argmax                \
     * (evaluation): logp [f32][N], is_argmax [N] host bytes; rows with label -100 give 0            \
     * and 1. */                                                                                     \
    X(void, token_logprobs,                                                                          \
      (const void *logits, const int32_t *labels, int64_t N, int V, void *logp,                      \
       uint8_t *is_argmax),                                                                          \
      (logits, labels, N, V, logp, is_argmax))                                                       \
    /* LogitScoresArgs: a completions server's per-row statistics. */                                \
    X(void, logit_scores, (const LogitScoresArgs *a), (a))                                           \
                                                                                                     \
    /* ---- optimizer ---- */                                                                        \
    /* Sum of squares of n [f32] values, in fp64 on the host. */                                     \
    X(double, sumsq, (const void *x, int64_t n), (x, n))                                             \
    /* x *= s over n [f32] values. */                                                                \
    X(void, scale, (void *x, int64_t n, double s), (x, n, s))                                        \
    /* AdamW on [f32] master weights w with moments m, v, gradient g (docs/models.md                 \
     * §training-recipe), step t >= 1; w_act, when not NULL, receives the updated weights as [act]  \
     * in the same pass. */                                                                          \
    X(void, adamw,                                                                                   \
      (void *w, void *w_act, void *m, void *v, const void *g, int64_t n, double lr, double beta1,    \
       double beta2, double eps, double weight_decay, int64_t t),                                    \
      (w, w_act, m, v, g, n, lr, beta1, beta2, eps, weight_decay, t))                                \
    /* adamw over every run of AdamWRuns with the gradient scaled by grad_scale: the weights and     \
     * moments that scale() over the runs, then adamw per run, leave. */                             \
    X(void, adamw_runs, (const AdamWRuns *a), (a))                                                   \
    /* RMSprop as torch.optim.RMSprop without momentum, not centered (docs/models.md                 \
     * §training-recipe), on [f32] master weights w with square average sq and gradient g; w_act    \
     * as for adamw. */                                                                              \
    X(void, rmsprop_update,                                                                          \
      (void *w, void *w_act, void *sq, const void *g, int64_t n, double lr, double alpha,            \
       double eps, double weight_decay),                                                             \
      (w, w_act, sq, g, n, lr, alpha, eps, weight_decay))

#endif
