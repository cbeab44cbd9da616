#include "model/model_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *mixer_name(MixerKind k) {
    switch (k) {
    case MIXER_GLA: return "gla";
    case MIXER_GDN: return "gated_deltanet";
    case MIXER_FOX: return "fox";
    case MIXER_TRANSFORMER: return "transformer";
    case MIXER_DELTANET: return "deltanet";
    case MIXER_MAMBA2: return "mamba2";
    case MIXER_LRU: return "lru";
    case MIXER_ROTRNN: return "rotrnn";
    case MIXER_RNN: return "rnn";
    case MIXER_RNN_ORTH: return "rnn_orth";
    case MIXER_EXPRNN: return "exprnn";
    case MIXER_NNRNN: return "nnrnn";
    case MIXER_LSTM: return "lstm";
    }
    return "?";
}

const char *model_head_keys(const ModelConfig *c) {
    static char s[200];
    if (c->mixer == MIXER_GDN)
        snprintf(s, sizeof s, "model.num_heads = %d, model.head_dim = %d, model.expand_v = %g",
                 c->num_heads, c->head_dim, c->expand_v);
    else if (c->mixer == MIXER_MAMBA2)
        snprintf(s, sizeof s, "model.hidden_size = %d, model.expand = %d, model.head_dim = %d, model.state_size = %d",
                 c->hidden_size, c->expand, c->head_dim, c->state_size);
    else if (c->mixer == MIXER_LRU)
        snprintf(s, sizeof s, "model.state_size = %d", c->state_size);
    else if (c->mixer == MIXER_ROTRNN)
        snprintf(s, sizeof s, "model.state_size = %d, model.num_heads = %d", c->state_size, c->num_heads);
    else if (c->mixer >= MIXER_RNN)
        snprintf(s, sizeof s, "model.hidden_size = %d", c->hidden_size);
    else if (c->mixer == MIXER_GLA || c->mixer == MIXER_DELTANET)
        snprintf(s, sizeof s,
                 "model.hidden_size = %d, model.num_heads = %d, model.expand_k = %g, model.expand_v = %g",
                 c->hidden_size, c->num_heads, c->expand_k, c->expand_v);
    else
        snprintf(s, sizeof s, "model.hidden_size = %d, model.num_heads = %d", c->hidden_size,
                 c->num_heads);
    return s;
}

const char *pe_name(PEKind k) {
    switch (k) {
    case PE_NOPE: return "nope";
    case PE_ROPE: return "rope";
    case PE_SELECTIVE: return "selective";
    }
    return "?";
}

int model_outputs(const ModelConfig *c) {
    return c->head == HEAD_CLASSIFIER ? c->num_classes : c->vocab_size;
}

const char *block_name(BlockKind k) {
    switch (k) {
    case BLOCK_PRENORM: return "prenorm";
    case BLOCK_LRA: return "lra";
    case BLOCK_RNN: return "rnn";
    }
    return "?";
}

void model_config_defaults(ModelConfig *c) {
    memset(c, 0, sizeof(*c));
    c->num_classes = 10;
    c->pair_mlp = 512;
    c->input_scale = 255;
    c->mixer = MIXER_GLA;
    c->vocab_size = 32000;
    c->hidden_size = 1024;
    c->num_layers = 24;
    c->num_heads = 4;
    c->hidden_ratio = 4;
    c->intermediate_size = 0;
    c->norm_eps = 1e-6;
    c->init_std = 0.02;
    c->expand_k = 0.5;
    c->expand_v = 1.0;
    c->short_conv = 1;
    c->gate_low_rank_dim = 16;
    c->gate_logit_normalizer = 16;
    c->head_dim = 128;
    c->expand = 2;
    c->state_size = 128;
    c->n_groups = 1;
    c->use_conv_bias = 1;
    c->r_min = 0.9;
    c->r_max = 0.999;
    c->max_phase = 6.28;
    c->doc_mask = 0;
    c->bos_id = 1;
    c->eos_id = 2;
    c->max_seq_len = 4096;
    c->pe.kind = PE_NOPE;
    c->pe.rope_theta = 500000;
    c->pe.phi_proj = PHI_WEIGHT_NORM;
    c->pe.phi_rank = 32;
    c->pe.conv_act = ACT_SILU;
    c->pe.temp_type = TEMP_ROPE;
    c->pe.temp_theta = 500000;
    c->pe.temp_max = 1.0;
}

static int is_integer(double x) { return fabs(x - round(x)) < 1e-9; }

/* Widths far beyond any model (2^24) are refused before they overflow an int. */
#define MAX_WIDTH 16777216.0

/* The LRU's and RotRNN's state (docs/models.md §13, §14): NoPE only, and init ranges the
 * initialisers can take. */
static const char *linrec_dims(const ModelConfig *c, ModelDims *o) {
    static char msg[256];
    int rot = c->mixer == MIXER_ROTRNN;
    const char *name = mixer_name(c->mixer);
    if (c->state_size <= 0 || c->state_size > MAX_WIDTH / 2) return "model.state_size must be in [1, 2^23]";
    if (rot && (c->state_size % c->num_heads || (c->state_size / c->num_heads) % 2)) {
        snprintf(msg, sizeof msg,
                 "model.state_size = %d, model.num_heads = %d: model.type = rotrnn needs an even state width per head",
                 c->state_size, c->num_heads);
        return msg;
    }
    if (!((rot ? c->r_min > 0 : c->r_min >= 0) && c->r_min <= c->r_max && c->r_max < 1)) {
        snprintf(msg, sizeof msg, "model.r_min = %g, model.r_max = %g: model.type = %s needs %s r_min <= r_max < 1",
                 c->r_min, c->r_max, name, rot ? "0 <" : "0 <=");
        return msg;
    }
    if (!(c->max_phase > 0)) {
        snprintf(msg, sizeof msg, "model.max_phase = %g must be positive", c->max_phase);
        return msg;
    }
    if (c->pe.kind != PE_NOPE) {
        snprintf(msg, sizeof msg, "pe.type = %s: model.type = %s takes pe.type = nope only (docs/models.md §%d)",
                 pe_name(c->pe.kind), name, rot ? 14 : 13);
        return msg;
    }
    o->H = rot ? c->num_heads : 1;
    o->key_dim = o->value_dim = rot ? c->state_size : 2 * c->state_size;
    o->dk = o->dv = o->key_dim / o->H;
    return NULL;
}

/* The block's keys (docs/models.md §16): a dropout probability, and bidirectional scans only
 * where a layer has them and the head reads whole sequences. */
static const char *block_checks(const ModelConfig *c) {
    static char msg[256];
    if (!(c->dropout >= 0 && c->dropout < 1)) {
        snprintf(msg, sizeof msg, "model.dropout = %g must be in [0, 1)", c->dropout);
        return msg;
    }
    if (!c->bidirectional) return NULL;
    if (c->mixer != MIXER_LRU && c->mixer != MIXER_ROTRNN) {
        snprintf(msg, sizeof msg,
                 "model.bidirectional = true: model.type = %s is causal only (lru and rotrnn have a reverse scan)",
                 mixer_name(c->mixer));
        return msg;
    }
    if (c->head != HEAD_CLASSIFIER)
        return "model.bidirectional = true needs model.head = classifier: a language model, its decoding and "
               "the auto-encoder read causal states";
    return NULL;
}

/* The nonlinear RNNs (docs/models.md §17, §18): one state of width d, NoPE only; the nnRNN's
 * Schur form pairs the state channels. */
static const char *rnn_dims(const ModelConfig *c, ModelDims *o) {
    static char msg[256];
    if (c->mixer == MIXER_NNRNN && c->hidden_size % 2) {
        snprintf(msg, sizeof msg, "model.hidden_size = %d: model.type = nnrnn needs an even state width",
                 c->hidden_size);
        return msg;
    }
    if (c->pe.kind != PE_NOPE) {
        snprintf(msg, sizeof msg, "pe.type = %s: model.type = %s takes pe.type = nope only (docs/models.md §17)",
                 pe_name(c->pe.kind), mixer_name(c->mixer));
        return msg;
    }
    o->H = 1;
    o->dk = o->dv = o->key_dim = o->value_dim = c->hidden_size;
    return NULL;
}

const char *model_dims(const ModelConfig *c, ModelDims *o) {
    static char msg[256];
    memset(o, 0, sizeof(*o));
    int d = c->hidden_size, H = c->num_heads;
    if (d <= 0) return "model.hidden_size must be positive";
    if (d > MAX_WIDTH) return "model.hidden_size must be at most 2^24";
    if (H <= 0) return "model.num_heads must be positive";
    if (c->num_layers <= 0) return "model.num_layers must be positive";
    if (c->vocab_size <= 1) return "model.vocab_size must be at least 2";
    if (c->vocab_size > MAX_WIDTH) return "model.vocab_size must be at most 2^24";
    const char *bad = block_checks(c);
    if (bad) return bad;
    o->H = H;
    switch (c->mixer) {
    case MIXER_GLA:
    case MIXER_DELTANET: { /* fla DeltaNetConfig: key_dim = d expand_k, as GLA */
        double kd = d * c->expand_k, vd = d * c->expand_v;
        if (kd > MAX_WIDTH || vd > MAX_WIDTH) {
            snprintf(msg, sizeof msg, "model.expand_k = %g / expand_v = %g give a width beyond 2^24",
                     c->expand_k, c->expand_v);
            return msg;
        }
        if (!is_integer(kd) || kd <= 0) {
            snprintf(msg, sizeof msg, "model.expand_k = %g gives a non-integer key width %g", c->expand_k, kd);
            return msg;
        }
        if (!is_integer(vd) || vd <= 0) {
            snprintf(msg, sizeof msg, "model.expand_v = %g gives a non-integer value width %g", c->expand_v, vd);
            return msg;
        }
        o->key_dim = (int)round(kd);
        o->value_dim = (int)round(vd);
        if (o->key_dim % H || o->value_dim % H) {
            snprintf(msg, sizeof msg,
                     "model.num_heads = %d does not divide the key width %d and value width %d",
                     H, o->key_dim, o->value_dim);
            return msg;
        }
        o->dk = o->key_dim / H;
        o->dv = o->value_dim / H;
        break;
    }
    case MIXER_GDN: {
        if (c->head_dim <= 0) return "model.head_dim must be positive";
        double dv = c->head_dim * c->expand_v;
        if ((double)H * c->head_dim > MAX_WIDTH || (double)H * dv > MAX_WIDTH) {
            snprintf(msg, sizeof msg, "model.num_heads = %d x head_dim = %d (x expand_v = %g) is beyond 2^24",
                     H, c->head_dim, c->expand_v);
            return msg;
        }
        if (!is_integer(dv) || dv <= 0) {
            snprintf(msg, sizeof msg, "model.expand_v = %g times head_dim %d is not an integer", c->expand_v, c->head_dim);
            return msg;
        }
        o->dk = c->head_dim;
        o->dv = (int)round(dv);
        o->key_dim = H * o->dk;
        o->value_dim = H * o->dv;
        break;
    }
    case MIXER_FOX:
    case MIXER_TRANSFORMER:
        if (d % H) {
            snprintf(msg, sizeof msg, "model.num_heads = %d does not divide model.hidden_size = %d", H, d);
            return msg;
        }
        o->dk = o->dv = d / H;
        o->key_dim = o->value_dim = d;
        break;
    case MIXER_MAMBA2: {
        double I = (double)d * c->expand;
        if (c->expand <= 0 || I > MAX_WIDTH) return "model.expand must be positive, with expand x hidden_size at most 2^24";
        if (c->head_dim <= 0 || (int)I % c->head_dim) {
            snprintf(msg, sizeof msg, "model.head_dim = %d must divide model.expand x model.hidden_size = %d",
                     c->head_dim, (int)I);
            return msg;
        }
        if (c->state_size <= 0 || c->state_size > 4096) return "model.state_size must be in [1, 4096]";
        o->H = (int)I / c->head_dim;
        if (c->n_groups <= 0 || o->H % c->n_groups) {
            snprintf(msg, sizeof msg, "model.n_groups = %d must divide the %d heads (expand x hidden_size / head_dim)",
                     c->n_groups, o->H);
            return msg;
        }
        if (c->pe.kind != PE_NOPE) {
            snprintf(msg, sizeof msg, "pe.type = %s: model.type = mamba2 takes pe.type = nope only (docs/models.md §10)",
                     pe_name(c->pe.kind));
            return msg;
        }
        o->dk = c->state_size;
        o->dv = c->head_dim;
        o->key_dim = o->H * o->dk;
        o->value_dim = (int)I;
        return NULL; /* no MLP: mlp_width 0 */
    }
    case MIXER_LRU:
    case MIXER_ROTRNN: {
        const char *err = linrec_dims(c, o);
        if (err) return err;
        break;
    }
    case MIXER_RNN:
    case MIXER_RNN_ORTH:
    case MIXER_EXPRNN:
    case MIXER_NNRNN:
    case MIXER_LSTM: {
        const char *err = rnn_dims(c, o);
        if (err) return err;
        break;
    }
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
    if (c->block != BLOCK_PRENORM) return NULL; /* lra: its GLU replaces the MLP; rnn: none (mlp_width 0) */
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
    return c->mixer == MIXER_EXPRNN || c->mixer == MIXER_NNRNN;
}
