/* A model family: one value of model.type and all that rotor knows of it, in one descriptor
 * beside its layer (src/model/mixer_*.c), registered by one line of model/family_list.h.
 * The model, the run config and config.json read the descriptor; none of them branches on a
 * family. */
#ifndef ROTOR_FAMILY_H
#define ROTOR_FAMILY_H

#include <stddef.h>

#include "model/hf_config.h"
#include "model/model_config.h"

struct MixerImpl;

/* What a family takes beyond the keys of every family (Family.options). */
enum {
    FAMILY_BIDIRECTIONAL =
        1, /* model.bidirectional: a second scan in reverse time (classifier head) */
    FAMILY_NONLINEARITY = 2,  /* model.nonlinearity */
    FAMILY_ORTH_INIT = 4,     /* model.orth_init, written to config.json as rotor_orth_init */
    FAMILY_DERIVED_HEADS = 8, /* config.json's num_heads is derived from the shape (fla's Mamba2) */
};

/* Family.pe: the pe.type values a family takes. */
#define PE_BIT(kind) (1u << (kind))
#define PE_ANY (PE_BIT(PE_NOPE) | PE_BIT(PE_ROPE) | PE_BIT(PE_SELECTIVE))

/* fla's names of the backbone's tensors: <root>.embeddings, <root>.layers.<l>.<block_norm> (the
 * norm before the mixer) and .<module> (the mixer), <root>.<final_norm>.weight. */
typedef struct {
    const char *root, *block_norm, *module, *final_norm;
} BackboneNames;

typedef struct Family {
    const char *name;            /* model.type */
    const char *section;         /* its section of docs/models.md, named in messages ("§mamba2") */
    const struct MixerImpl *mix; /* its layer (model_internal.h) */
    const BackboneNames *names;  /* its tensors' names in checkpoints; NULL: fla's model.*,
                                  * attn_norm,  attn, norm (family_backbone) */
    int no_mlp;                  /* its prenorm blocks have no MLP (Mamba2's) */
    unsigned pe;                 /* PE_BIT of each pe.type it takes */
    unsigned options;            /* FAMILY_* */
    int modrelu;                 /* model.nonlinearity = auto is modReLU (else tanh) */
    /* the [model] keys it reads beyond those of every family, NULL-terminated */
    const char *const *keys;
    /* Checks its shape keys and derives H, dk, dv, key_dim and value_dim (docs/models.md);
     * returns NULL, or a message written to msg. */
    const char *(*dims)(const ModelConfig *c, ModelDims *o, char *msg, size_t n);
    /* The keys that set its head sizes, with their values ("model.hidden_size = 64,
     * model.num_heads = 4"), for messages. */
    void (*head_keys)(const ModelConfig *c, char *buf, size_t n);
    /* Forward FLOPs per token and layer outside the products with weights, at context T. */
    double (*mixing_flops)(const ModelConfig *c, const ModelDims *d, int T);
    HfSchema hf; /* its config.json */
} Family;

const Family *family_of(MixerKind kind);
/* Its tensors' names in checkpoints: Family.names, or those of fla's GLA, Gated DeltaNet,
 * FoX, Transformer and DeltaNet, which rotor's families without an fla counterpart take too. */
const BackboneNames *family_backbone(const Family *f);
/* The family of a model.type name (case-blind), or NULL; *kind is set when found. */
const Family *family_by_name(const char *name, MixerKind *kind);
/* The family of a config.json model_type, or NULL; *kind is set when found. */
const Family *family_by_model_type(const char *model_type, MixerKind *kind);
/* Whether its layer carries a state across batches (train.carry_state). */
int family_carries(const Family *f);
/* Whether it reads the [model] key (a name without "model."). */
int family_reads_key(const Family *f, const char *key);
/* The families that read key, or that carry, as "rnn, rnn_orth and lstm" (messages). */
void family_names_with_key(const char *key, char *buf, size_t n);
void family_names_carrying(char *buf, size_t n);
/* "gla, gated_deltanet, ..., lstm": every model.type. */
void family_names(char *buf, size_t n);

#endif
