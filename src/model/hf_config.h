/* The Hugging Face config.json of a model (docs/formats.md "Checkpoints"): fla's config keys for
 * GLAForCausalLM / GatedDeltaNetForCausalLM / ForgettingTransformerForCausalLM /
 * TransformerForCausalLM plus rotor's
 * "doc_mask", FoX-Pro flags and "position_embedding" object. The schema is shared with the
 * PyTorch reference (tests/reference/ref_model.py), which builds its model from this file.
 *
 * Reading maps every key that describes the model onto a ModelConfig; keys that do not
 * describe it (fla runtime options such as fuse_norm, use_cache, attn_mode, architectures,
 * transformers_version, ...) are ignored. Required keys: model_type, vocab_size, hidden_size,
 * num_hidden_layers, num_heads, norm_eps; GLA expand_k, expand_v, use_short_conv; Gated
 * DeltaNet head_dim, expand_v, use_short_conv; FoX qk_norm, use_output_gate; Transformer
 * qk_norm; every key of a
 * selective_rope position_embedding but gate_parametrization and d_conv. The other keys are
 * optional (absent or null: the default given, the key table's; "position_embedding" absent:
 * NoPE, RoPE with "rope_theta" for the Transformer, "doc_mask" absent: off), so that a config.json
 * written by fla itself loads. "intermediate_size" may be null or absent when "hidden_ratio" gives
 * the width. Keys fixed to one value by docs/models.md (conv_size 4, use_output_gate true for GLA,
 * qkv_bias false, num_kv_heads null, d_conv 4, ...) are rejected when present with any other value.
 */
#ifndef ROTOR_HF_CONFIG_H
#define ROTOR_HF_CONFIG_H

#include <jansson.h>
#include <stddef.h>

#include "model/model_config.h"

/* A family's part of config.json (model/family.h): its model_type and architecture, the
 * keys stored in ModelConfig fields and the keys fixed to the one value rotor implements. */
typedef enum { HF_INT, HF_REAL, HF_BOOL } HfFieldType;
/* HF_TOKEN: a token id, or null for none (-1) */
typedef enum { HF_ANY, HF_POS, HF_NONNEG, HF_TOKEN } HfRange;

/* A config.json key stored in a ModelConfig field (int for HF_INT/HF_BOOL, double for HF_REAL). */
typedef struct {
    const char *key;
    HfFieldType type;
    HfRange range;
    int required;
    size_t offset;
} HfField;
#define HF_FIELD(k, t, r, req, f)                                                                  \
    { k, t, r, req, offsetof(ModelConfig, f) }

/* A key with the one value rotor implements (JSON text). Written as is; when `checked`, a
 * file that sets it to anything else is rejected (unchecked ones are fla runtime options
 * that do not change what the model computes). */
typedef struct {
    const char *key;
    const char *json;
    int checked;
} HfFixed;

typedef struct {
    /* fla's model_type and architecture (or rotor's names for a family fla lacks) */
    const char *model_type, *architecture;
    const HfField *fields;
    size_t nfields;
    const HfFixed *fixed;
    size_t nfixed;
    PEKind default_pe; /* a config.json without "position_embedding" (fla's own files) */
    int derived_heads; /* num_heads is derived from the shape, written and checked (fla's Mamba2) */
    /* Whether fla's own model of model_type computes exactly rotor's function for this config
     * (a causal LM of prenorm blocks; hf_config_is_fla() checks that part); NULL: fla has none.
     * Otherwise config.json names rotor's model of the family, shipped in the checkpoint. */
    int (*fla_computes)(const ModelConfig *c);
} HfSchema;
#define HF_COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* A table and its length, as HfSchema takes them. */
#define HF_TABLE(a) (a), HF_COUNT(a)

/* json_dump* flags for config.json: indented, every float with 17 significant digits so
 * that it parses back to the same double. */
#define HF_CONFIG_JSON_FLAGS (JSON_INDENT(2) | JSON_REAL_PRECISION(17))

/* config.json for a valid config (model_dims() succeeds). "intermediate_size" is always
 * written explicitly (the derived MLP width). New reference. */
json_t *hf_config_to_json(const ModelConfig *c);

/* HfSchema.fla_computes of fla's linear-attention layers, which have no position embedding */
int hf_fla_nope(const ModelConfig *c);

/* Whether config.json names fla's own model (model_type as fla spells it) rather than rotor's
 * (model_type "rotor_" + fla's, architecture "Rotor" + fla's, and an "auto_map" naming the
 * Python files of hf_remote.h, which the checkpoint then holds; docs/interop.md). */
int hf_config_is_fla(const ModelConfig *c);

/* Fills *out from config.json: fields the file does not carry take their values in *defaults
 * (model_config_defaults: the key table's, config/run_config.h), and an "intermediate_size" equal
 * to the width derived from "hidden_ratio" becomes 0 (derived), so hf_config_to_json followed by
 * hf_config_from_json gives back a config identical in every field config.json carries. Integers
 * are accepted where floats are expected. model_type may be fla's or rotor's ("rotor_" + fla's) for
 * every family. Rejects an unknown model_type, a missing required key, a value of the wrong type or
 * range, and an inconsistent shape, with a message naming the key. Returns 0, or -1 with the
 * message in err (*out is then unspecified). */
int hf_config_from_json(const json_t *j, const ModelConfig *defaults, ModelConfig *out, char *err,
                        size_t errlen);

#endif
