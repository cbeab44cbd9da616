#include "model/model_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/family.h"
#include "model/model_internal.h"

const char *mixer_name(MixerKind k) { return family_of(k)->name; }

const char *model_head_keys(const ModelConfig *c) {
    static char s[200];
    family_of(c->mixer)->head_keys(c, s, sizeof s);
    return s;
}

const NameSet PE_NAMES = NAME_SET([PE_NOPE] = "nope", [PE_ROPE] = "rope", [PE_SELECTIVE] = "selective");
const NameSet HEAD_NAMES =
    NAME_SET([HEAD_LM] = "lm", [HEAD_AUTOENCODER] = "autoencoder", [HEAD_CLASSIFIER] = "classifier");
const NameSet POOL_NAMES = NAME_SET([POOL_MEAN] = "mean", [POOL_LAST] = "last");
const NameSet PAIR_NAMES = NAME_SET([PAIR_NONE] = "none", [PAIR_NLI] = "nli", [PAIR_CONCAT] = "concat");
const NameSet INPUT_NAMES = NAME_SET([INPUT_EMBEDDING] = "embedding", [INPUT_LINEAR] = "linear");
const NameSet BLOCK_NAMES = NAME_SET([BLOCK_PRENORM] = "prenorm", [BLOCK_LRA] = "lra", [BLOCK_RNN] = "rnn");
const NameSet DROPOUT_MASK_NAMES = NAME_SET([DROPOUT_ELEMENT] = "element", [DROPOUT_CHANNEL] = "channel");
const NameSet ORTH_INIT_NAMES = NAME_SET([ORTH_INIT_CAYLEY] = "cayley", [ORTH_INIT_HENAFF] = "henaff");
const NameSet NONLINEARITY_NAMES =
    NAME_SET([RNN_NONLIN_AUTO] = "auto", [RNN_NONLIN_TANH] = "tanh", [RNN_NONLIN_MODRELU] = "modrelu");

const char *pe_name(PEKind k) { return (unsigned)k < (unsigned)PE_NAMES.n ? PE_NAMES.names[k] : "?"; }

int model_outputs(const ModelConfig *c) {
    return c->head == HEAD_CLASSIFIER ? c->num_classes : c->vocab_size;
}

/* The block's keys (docs/models.md §16): a dropout probability, and bidirectional scans only
 * where a layer has them and the head reads whole sequences. */
static const char *block_checks(const ModelConfig *c, const Family *f) {
    static char msg[256];
    if (!(c->dropout >= 0 && c->dropout < 1)) {
        snprintf(msg, sizeof msg, "model.dropout = %g must be in [0, 1)", c->dropout);
        return msg;
    }
    if (!c->bidirectional) return NULL;
    if (!family_reads_key(f, "bidirectional")) {
        char names[128];
        family_names_with_key("bidirectional", names, sizeof names);
        snprintf(msg, sizeof msg, "model.bidirectional = true: model.type = %s is causal only (%s have a reverse scan)",
                 f->name, names);
        return msg;
    }
    if (c->head != HEAD_CLASSIFIER)
        return "model.bidirectional = true needs model.head = classifier: a language model, its decoding and "
               "the auto-encoder read causal states";
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
    if (!bad) bad = f->dims(c, o, msg, sizeof msg);
    if (bad) return bad;
    if (!(f->pe & PE_BIT(c->pe.kind))) {
        snprintf(msg, sizeof msg, "pe.type = %s: model.type = %s takes pe.type = nope only (docs/models.md %s)",
                 pe_name(c->pe.kind), f->name, f->section);
        return msg;
    }
    if (c->pe.kind != PE_NOPE && o->dk % 2) {
        snprintf(msg, sizeof msg, "pe.type = %s needs an even per-head key width, got %d", pe_name(c->pe.kind), o->dk);
        return msg;
    }
    if (c->pe.kind == PE_SELECTIVE && d % H) {
        snprintf(msg, sizeof msg,
                 "pe.type = selective splits the hidden size into num_heads slices: %d heads do not divide %d",
                 H, d);
        return msg;
    }
    /* lra: its GLU replaces the MLP; rnn and Mamba2's blocks: none (mlp_width 0) */
    if (c->block != BLOCK_PRENORM || f->no_mlp) return NULL;
    if (c->intermediate_size > MAX_WIDTH) return "model.intermediate_size must be at most 2^24";
    if (c->intermediate_size > 0) {
        o->mlp_width = c->intermediate_size;
    } else {
        if (c->hidden_ratio <= 0) return "model.hidden_ratio must be positive";
        if (d * c->hidden_ratio * 2.0 / 3.0 > MAX_WIDTH) return "model.hidden_ratio gives an MLP width beyond 2^24";
        int w = (int)(d * c->hidden_ratio * 2.0 / 3.0); /* docs/models.md §1, evaluated left to right as fla */
        o->mlp_width = 256 * ((w + 255) / 256);
    }
    return NULL;
}

int rnn_modrelu(const ModelConfig *c) {
    if (c->nonlinearity != RNN_NONLIN_AUTO) return c->nonlinearity == RNN_NONLIN_MODRELU;
    return family_of(c->mixer)->modrelu;
}
