/* The parameter table: every parameter of the model in one flat fp32 buffer, with the
 * fla/Hugging Face name and shape used in checkpoints (docs/formats.md "Checkpoints"), its initialiser and
 * its optimizer group. Layers refer to their parameters by index. */
#ifndef ROTOR_PARAMS_H
#define ROTOR_PARAMS_H

#include <stdint.h>

typedef enum {
    INIT_NORMAL,      /* N(0, arg) */
    INIT_ZEROS,
    INIT_ONES,
    INIT_UNIFORM,     /* U(-arg, arg) */
    INIT_GDN_A_LOG,   /* log U(0, 16) (docs/models.md §3) */
    INIT_GDN_DT_BIAS, /* inverse softplus of a log-uniform dt in [1e-3, 1e-1] (docs/models.md §3;
                       * Mamba2's dt_bias alike, §10) */
    INIT_MAMBA2_A_LOG, /* log U(1, 16) (docs/models.md §10) */
    INIT_TEMPERATURE, /* computed from the PE config (docs/models.md §5 step 7) */
    /* docs/models.md §13 (LRU) and §14 (RotRNN), from model.r_min, r_max, max_phase: */
    INIT_LRU_NU_LOG,       /* log(-1/2 log(u (r_max^2 - r_min^2) + r_min^2)), u ~ U(0, 1) */
    INIT_LRU_THETA_LOG,    /* log(max_phase u) */
    INIT_LRU_GAMMA_LOG,    /* log sqrt(1 - |lambda|^2) of the nu_log whose index is the arg */
    INIT_ROTRNN_GAMMA_LOG, /* log(-log gamma) ~ U(log(-log r_max), log(-log r_min)) */
    INIT_ROTRNN_THETA,     /* U(0, max_phase) (also the nnRNN's theta, docs/models.md §17) */
    /* docs/models.md §17: */
    INIT_ORTHOGONAL,       /* a random orthogonal [n, n] (Gram-Schmidt of a Gaussian matrix) */
    INIT_ORTH_LOG          /* [n, n] M with M - M^T the skew log of model.orth_init's 2x2 rotations:
                            * angle s_i at (2i, 2i+1) when the arg is 1, at (2i+1, 2i) when -1 */
} InitKind;

#define PARAM_NAME_MAX 128
#define PARAM_MAX_DIMS 4

typedef struct {
    char name[PARAM_NAME_MAX];
    int ndim;
    int64_t shape[PARAM_MAX_DIMS];
    int64_t numel;
    int64_t offset;  /* element offset in the flat buffers, a multiple of PARAM_ALIGN */
    InitKind init;
    double init_arg;
    int decay;       /* AdamW weight decay applies (docs/models.md §7 groups) */
    int trainable;   /* has a gradient and is updated (frozen temperatures are not) */
    /* a parameter of a recurrence's state transition or its input normalisation (LRU nu_log,
     * theta_log, gamma_log; RotRNN theta, gamma_log, M; the log of the orthogonal matrix of
     * expRNN and nnRNN; docs/models.md §13, §14, §17): its own
     * learning rate and weight decay (train.lr_recurrent, train.weight_decay_recurrent, §7) */
    int recurrent;
    /* the parameter of an orthogonal matrix (nnRNN's and expRNN's skew-symmetric generator):
     * its own learning rate and weight decay (train.lr_orthogonal,
     * train.weight_decay_orthogonal, docs/models.md §7); never also recurrent */
    int orthogonal;
} ParamInfo;

typedef struct {
    ParamInfo *p;
    int n, cap;
    int64_t total;   /* size of the flat buffers: all parameters and their alignment padding */
} ParamTable;

/* Every parameter starts on a 64-element boundary (128 bytes in bf16) so that device
 * kernels and cuBLASLt get aligned pointers. Padding elements stay zero. */
#define PARAM_ALIGN 64

/* Appends a parameter; returns its index. Offsets are assigned in order. */
int params_add(ParamTable *t, const char *name, int ndim, const int64_t *shape, InitKind init,
               double init_arg, int decay, int trainable);
/* Marks parameter idx as recurrent (ParamInfo.recurrent). */
void params_set_recurrent(ParamTable *t, int idx);
/* Marks parameter idx as orthogonal (ParamInfo.orthogonal). */
void params_set_orthogonal(ParamTable *t, int idx);
/* Index of a parameter by name, -1 if absent. */
int params_find(const ParamTable *t, const char *name);
/* Number of parameter elements (without padding). */
int64_t params_count(const ParamTable *t);
void params_free(ParamTable *t);

#endif
