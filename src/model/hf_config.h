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
 * optional (absent or null: the model_config_defaults value; "position_embedding" absent:
 * NoPE, RoPE with "rope_theta" for the Transformer, "doc_mask" absent: off), so that a config.json written by fla itself loads.
 * "intermediate_size" may be null or absent when "hidden_ratio" gives the width. Keys fixed
 * to one value by docs/models.md (conv_size 4, use_output_gate true for GLA, qkv_bias false,
 * num_kv_heads null, d_conv 4, ...) are rejected when present with any other value. */
#ifndef ROTOR_HF_CONFIG_H
#define ROTOR_HF_CONFIG_H

#include <jansson.h>
#include <stddef.h>

#include "model/model_config.h"

/* json_dump* flags for config.json: indented, every float with 17 significant digits so
 * that it parses back to the same double. */
#define HF_CONFIG_JSON_FLAGS (JSON_INDENT(2) | JSON_REAL_PRECISION(17))

/* config.json for a valid config (model_dims() succeeds). "intermediate_size" is always
 * written explicitly (the derived MLP width). New reference. */
json_t *hf_config_to_json(const ModelConfig *c);

/* Fills *out from config.json: fields the file does not carry keep their
 * model_config_defaults values, and an "intermediate_size" equal to the width derived from
 * "hidden_ratio" becomes 0 (derived), so hf_config_to_json followed by hf_config_from_json
 * gives back a config identical in every field config.json carries. Integers are accepted
 * where floats are expected. Rejects an unknown model_type, a missing required key, a value
 * of the wrong type or range, and an inconsistent shape, with a message naming the key.
 * Returns 0, or -1 with the message in err (*out is then unspecified). */
int hf_config_from_json(const json_t *j, ModelConfig *out, char *err, size_t errlen);

#endif
