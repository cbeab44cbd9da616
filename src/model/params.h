/* The parameter table: every parameter of the model in one flat fp32 buffer, with the
 * fla/Hugging Face name and shape used in checkpoints (docs/formats.md "Checkpoints"), its
 * initialiser and its optimizer group. Layers refer to their parameters by index. */
#ifndef ROTOR_PARAMS_H
#define ROTOR_PARAMS_H

#include <stdint.h>

#include "model/model_config.h"
#include "util/rng.h"

typedef struct ParamInfo ParamInfo;

/* What an initialiser sees: the parameter, the model config, the parameter's own random
 * stream (seed, parameter index), and the initial values of the other parameters (the LRU's
 * gamma_log is made from its nu_log). */
typedef struct ParamInitArgs ParamInitArgs;
typedef void (*ParamInit)(const ParamInitArgs *a);
struct ParamInitArgs {
    const ModelConfig *cfg;
    const ParamInfo *p;
    Rng *rng;
    double *out; /* p->numel values */
    void (*values_of)(const void *ctx, int idx, double *out);
    const void *ctx;
};

/* The generic initialisers; a family's own stand beside its layer (mixer_*.c, pe.c). */
void init_normal(const ParamInitArgs *a); /* N(0, init_arg) */
void init_zeros(const ParamInitArgs *a);
void init_ones(const ParamInitArgs *a);
void init_value(const ParamInitArgs *a);   /* every element init_arg */
void init_uniform(const ParamInitArgs *a); /* U(-init_arg, init_arg) */

#define PARAM_NAME_MAX 128
#define PARAM_MAX_DIMS 4

struct ParamInfo {
    char name[PARAM_NAME_MAX];
    int ndim;
    int64_t shape[PARAM_MAX_DIMS];
    int64_t numel;
    int64_t offset; /* element offset in the flat buffers, a multiple of PARAM_ALIGN */
    ParamInit init;
    double init_arg;
    int decay;     /* AdamW weight decay applies (docs/models.md §training-recipe groups) */
    int trainable; /* has a gradient and is updated (frozen temperatures are not) */
    /* a parameter of a recurrence's state transition or its input normalisation (LRU nu_log,
     * theta_log, gamma_log; RotRNN theta, gamma_log, M; the log of the orthogonal matrix of
     * expRNN and nnRNN; docs/models.md §lru, §rotrnn, §nonlinear-rnns): its own
     * learning rate and weight decay (train.lr_recurrent, train.weight_decay_recurrent,
     * §training-recipe) */
    int recurrent;
    /* the parameter of an orthogonal matrix (nnRNN's and expRNN's skew-symmetric generator):
     * its own learning rate and weight decay (train.lr_orthogonal,
     * train.weight_decay_orthogonal, docs/models.md §training-recipe); never also recurrent */
    int orthogonal;
};

typedef struct {
    ParamInfo *p;
    int n, cap;
    int64_t total; /* size of the flat buffers: all parameters and their alignment padding */
} ParamTable;

/* Every parameter starts on a 64-element boundary (128 bytes in bf16) so that device
 * kernels and cuBLASLt get aligned pointers. Padding elements stay zero. */
#define PARAM_ALIGN 64

/* A layer's parameter name as a value: its prefix ("model.layers.3.attn.") and its own part
 * ("q_proj.weight"), as pname(prefix, "q_proj.weight").s within one expression. */
typedef struct {
    char s[PARAM_NAME_MAX];
} ParamName;
ParamName pname(const char *prefix, const char *suffix);

/* Appends a parameter; returns its index. Offsets are assigned in order. */
int params_add(ParamTable *t, const char *name, int ndim, const int64_t *shape, ParamInit init,
               double init_arg, int decay, int trainable);
/* Marks parameter idx as recurrent (ParamInfo.recurrent). */
void params_set_recurrent(ParamTable *t, int idx);
/* Marks parameter idx as orthogonal (ParamInfo.orthogonal). */
void params_set_orthogonal(ParamTable *t, int idx);
/* Index of a parameter by name, -1 if absent. */
int params_find(const ParamTable *t, const char *name);
/* 0 when buf (elements [lo, hi) of t's flat layout) holds finite values only; else an error
 * "WHAT: tensor NAME holds N non-finite values (the first at element I): ..." naming the first
 * such parameter. A trainer never writes them (it skips non-finite updates), so they mean
 * damage no checksum recorded (a file loaded with --no-verify, a model from elsewhere). */
int params_check_finite(const ParamTable *t, const float *buf, int64_t lo, int64_t hi,
                        const char *what, char *err, size_t errlen);
/* Number of parameter elements (without padding). */
int64_t params_count(const ParamTable *t);
void params_free(ParamTable *t);

#endif
