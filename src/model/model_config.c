#include "model/model_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "model/family.h"
#include "model/model_internal.h"

const char *mixer_name(MixerKind k) { return family_of(k)->name; }

const char *model_head_keys(const ModelConfig *c) {
    static char s[200];
    family_of(c->mixer)->head_keys(c, s, sizeof s);
    return s;
}

const NameSet PE_NAMES =
    NAME_SET([PE_NOPE] = "nope", [PE_ROPE] = "rope", [PE_SELECTIVE] = "selective");
const NameSet HEAD_NAMES = NAME_SET([HEAD_LM] = "lm", [HEAD_AUTOENCODER] = "autoencoder",
                                    [HEAD_CLASSIFIER] = "classifier");
const NameSet POOL_NAMES = NAME_SET([POOL_MEAN] = "mean", [POOL_LAST] = "last");
const NameSet PAIR_NAMES =
    NAME_SET([PAIR_NONE] = "none", [PAIR_NLI] = "nli", [PAIR_CONCAT] = "concat");
const NameSet INPUT_NAMES = NAME_SET([INPUT_EMBEDDING] = "embedding", [INPUT_LINEAR] = "linear");
const NameSet BLOCK_NAMES =
    NAME_SET([BLOCK_PRENORM] = "prenorm", [BLOCK_LRA] = "lra", [BLOCK_RNN] = "rnn");
const NameSet MLP_NAMES = NAME_SET([MLP_AUTO] = "auto", [MLP_SWIGLU] = "swiglu",
                                   [MLP_IDENTITY] = "identity", [MLP_NONE] = "none");
const NameSet NORM_NAMES = NAME_SET([NORM_RMS] = "rmsnorm", [NORM_LAYER] = "layernorm");
const NameSet DROPOUT_MASK_NAMES =
    NAME_SET([DROPOUT_ELEMENT] = "element", [DROPOUT_CHANNEL] = "channel");
const NameSet ORTH_INIT_NAMES =
    NAME_SET([ORTH_INIT_CAYLEY] = "cayley", [ORTH_INIT_HENAFF] = "henaff");
const NameSet NONLINEARITY_NAMES = NAME_SET([RNN_NONLIN_AUTO] = "auto", [RNN_NONLIN_TANH] = "tanh",
                                            [RNN_NONLIN_MODRELU] = "modrelu");

const char *pe_name(PEKind k) {
    return (unsigned)k < (unsigned)PE_NAMES.n ? PE_NAMES.names[k] : "?";
}

int model_outputs(const ModelConfig *c) {
    return c->head == HEAD_CLASSIFIER ? c->num_classes : c->vocab_size;
}

/* The block's keys (docs/models.md §block-dropout-bidirectional): a dropout probability, and
 * bidirectional scans only where a layer has them and the head reads whole sequences. */
static const char *block_checks(const ModelConfig *c, const Family *f) {
    static char msg[256];
    if (!(c->dropout >= 0 && c->dropout < 1)) {
        snprintf(msg, sizeof msg, "model.dropout = %g must be in [0, 1)", c->dropout);
        return msg;
    }
    if (!(c->embed_dropout >= 0 && c->embed_dropout < 1)) {
        snprintf(msg, sizeof msg, "model.embed_dropout = %g must be in [0, 1)", c->embed_dropout);
        return msg;
    }
    if (!c->bidirectional) return NULL;
    if (!family_reads_key(f, "bidirectional")) {
        char names[128];
        family_names_with_key("bidirectional", names, sizeof names);
        snprintf(
            msg, sizeof msg,
            "model.bidirectional = true: model.type = %s is causal only (%s have a reverse scan)",
            f->name, names);
        return msg;
    }
    if (c->head != HEAD_CLASSIFIER)
        return "model.bidirectional = true needs model.head = classifier: a language model, its "
               "decoding and "
               "the auto-encoder read causal states";
    return NULL;
}

MlpKind model_mlp(const ModelConfig *c) {
    if (c->mlp != MLP_AUTO) return c->mlp;
    return c->block != BLOCK_PRENORM || family_of(c->mixer)->no_mlp ? MLP_NONE : MLP_SWIGLU;
}

/* The entries of model.mixers: their count, and in *base_conv the bits of those that are
 * BaseConv; NULL, or a message naming the entry that is neither base_conv nor model.type. */
static const char *parse_mixers(const ModelConfig *c, int *n, unsigned *base_conv) {
    static char msg[256];
    const char *type = mixer_name(c->mixer), *p = c->mixers;
    *n = 0, *base_conv = 0;
    while (*p) {
        size_t len = strcspn(p, " ,");
        if (len) {
            int conv = len == 9 && !strncmp(p, "base_conv", 9);
            if (!conv && !(len == strlen(type) && !strncasecmp(p, type, len))) {
                snprintf(msg, sizeof msg,
                         "model.mixers = \"%s\": \"%.*s\" is neither base_conv nor model.type (%s)",
                         c->mixers, (int)len, p, type);
                return msg;
            }
            if (*n == MAX_LAYER_MIXERS) {
                snprintf(msg, sizeof msg, "model.mixers = \"%s\": at most %d entries", c->mixers,
                         MAX_LAYER_MIXERS);
                return msg;
            }
            if (conv) *base_conv |= 1u << *n;
            ++*n;
        }
        p += len + (p[len] != 0);
    }
    return NULL;
}

LayerMixer model_layer_mixer(const ModelConfig *c, int l) {
    int n;
    unsigned base_conv;
    if (parse_mixers(c, &n, &base_conv) || n == 0) return LAYER_FAMILY;
    return base_conv >> (l % n) & 1 ? LAYER_BASE_CONV : LAYER_FAMILY;
}

/* model.norm, model.mlp, model.mixers and model.tie_embeddings (docs/models.md §zoology-shape):
 * what the block, the family and the head allow. */
static const char *layer_checks(const ModelConfig *c, const Family *f) {
    static char msg[256];
    if (c->norm == NORM_LAYER && c->block == BLOCK_RNN)
        return "model.norm = layernorm: model.block = rnn has no norms";
    if (c->tie_embeddings && (c->head != HEAD_LM || c->input != INPUT_EMBEDDING))
        return "model.tie_embeddings = true needs the LM head (model.head = lm) and an embedding "
               "table "
               "(model.input = embedding)";
    if (c->mlp != MLP_AUTO && c->mlp != MLP_NONE) {
        if (c->block != BLOCK_PRENORM) {
            snprintf(msg, sizeof msg, "model.mlp = %s needs model.block = prenorm (got %s)",
                     MLP_NAMES.names[c->mlp], BLOCK_NAMES.names[c->block]);
            return msg;
        }
        if (f->no_mlp) {
            snprintf(msg, sizeof msg,
                     "model.mlp = %s: model.type = %s's blocks have no MLP (auto or none)",
                     MLP_NAMES.names[c->mlp], f->name);
            return msg;
        }
    }
    if (c->base_conv_kernel < 1 || c->base_conv_kernel > SHORT_CONV_TAPS) {
        snprintf(msg, sizeof msg, "model.base_conv_kernel = %d: BaseConv's conv takes 1 to %d taps",
                 c->base_conv_kernel, SHORT_CONV_TAPS);
        return msg;
    }
    int n;
    unsigned base_conv;
    const char *bad = parse_mixers(c, &n, &base_conv);
    if (bad || !base_conv) return bad;
    if (base_conv == (1u << n) - 1) {
        snprintf(msg, sizeof msg, "model.mixers = \"%s\" has no %s layer (model.type)", c->mixers,
                 f->name);
        return msg;
    }
    if (c->block != BLOCK_PRENORM) {
        snprintf(msg, sizeof msg,
                 "model.mixers = \"%s\": BaseConv layers need model.block = prenorm (got %s)",
                 c->mixers, BLOCK_NAMES.names[c->block]);
        return msg;
    }
    return NULL;
}

const char *model_dims(const ModelConfig *c, ModelDims *o) {
    static char msg[256];
    memset(o, 0, sizeof(*o));
    const Family *f = family_of(c->mixer);
    int d = c->hidden_size, H = c->num_heads;
    if (d <= 0) return "model.hidden_size must be positive";
    if (d > MAX_WIDTH) return "model.hidden_size must be at most 2^24";
    if (H <= 0) return "model.num_heads must be positive";
    if (c->num_layers <= 0) return "model.num_layers must be positive";
    if (c->vocab_size <= 1) return "model.vocab_size must be at least 2";
    if (c->vocab_size > MAX_WIDTH) return "model.vocab_size must be at most 2^24";
    const char *bad = block_checks(c, f);
    if (!bad) bad = layer_checks(c, f);
    if (!bad) bad = f->dims(c, o, msg, sizeof msg);
    if (bad) return bad;
    if (!(f->pe & PE_BIT(c->pe.kind))) {
        snprintf(msg, sizeof msg,
                 "pe.type = %s: model.type = %s takes pe.type = nope only (docs/models.md %s)",
                 pe_name(c->pe.kind), f->name, f->section);
        return msg;
    }
    if (c->pe.kind != PE_NOPE && o->dk % 2) {
        snprintf(msg, sizeof msg, "pe.type = %s needs an even per-head key width, got %d",
                 pe_name(c->pe.kind), o->dk);
        return msg;
    }
    if (c->pe.kind == PE_SELECTIVE && d % H) {
        snprintf(msg, sizeof msg,
                 "pe.type = selective splits the hidden size into num_heads slices: %d heads do "
                 "not divide %d",
                 H, d);
        return msg;
    }
    /* lra: its GLU replaces the MLP; rnn and Mamba2's blocks, identity and none: no width */
    if (model_mlp(c) != MLP_SWIGLU) return NULL;
    if (c->intermediate_size > MAX_WIDTH) return "model.intermediate_size must be at most 2^24";
    if (c->intermediate_size > 0) {
        o->mlp_width = c->intermediate_size;
    } else {
        if (c->hidden_ratio <= 0) return "model.hidden_ratio must be positive";
        if (d * c->hidden_ratio * 2.0 / 3.0 > MAX_WIDTH)
            return "model.hidden_ratio gives an MLP width beyond 2^24";
        int w = (int)(d * c->hidden_ratio * 2.0 /
                      3.0); /* docs/models.md §backbone, evaluated left to right as fla */
        o->mlp_width = 256 * ((w + 255) / 256);
    }
    return NULL;
}

int rnn_modrelu(const ModelConfig *c) {
    if (c->nonlinearity != RNN_NONLIN_AUTO) return c->nonlinearity == RNN_NONLIN_MODRELU;
    return family_of(c->mixer)->modrelu;
}
