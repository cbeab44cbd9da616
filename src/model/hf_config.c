#include "model/hf_config.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "model/family.h"
#include "util/error.h"
#include "util/json_kind.h"

/* ------------------------------------------------------------------------------------ */
/* Schema                                                                               */
/* ------------------------------------------------------------------------------------ */

static const HfField COMMON[] = {
    HF_FIELD("vocab_size", HF_INT, HF_POS, 1, vocab_size),
    HF_FIELD("hidden_size", HF_INT, HF_POS, 1, hidden_size),
    HF_FIELD("num_hidden_layers", HF_INT, HF_POS, 1, num_layers),
    HF_FIELD("num_heads", HF_INT, HF_POS, 1, num_heads),
    HF_FIELD("hidden_ratio", HF_REAL, HF_POS, 0, hidden_ratio),
    HF_FIELD("norm_eps", HF_REAL, HF_POS, 1, norm_eps),
    HF_FIELD("initializer_range", HF_REAL, HF_POS, 0, init_std),
    HF_FIELD("bos_token_id", HF_INT, HF_TOKEN, 0, bos_id),
    HF_FIELD("eos_token_id", HF_INT, HF_TOKEN, 0, eos_id),
    HF_FIELD("max_position_embeddings", HF_INT, HF_POS, 0, max_seq_len),
    HF_FIELD("doc_mask", HF_BOOL, HF_ANY, 0, doc_mask),
    HF_FIELD("tie_word_embeddings", HF_BOOL, HF_ANY, 0, tie_embeddings),
};
static const HfField ROPE[] = {
    HF_FIELD("theta", HF_REAL, HF_POS, 0, pe.rope_theta),
};
static const HfField SELECTIVE[] = {
    HF_FIELD("phi_proj_rank", HF_INT, HF_POS, 1, pe.phi_rank),
    HF_FIELD("skip_conv", HF_BOOL, HF_ANY, 1, pe.skip_conv),
    HF_FIELD("use_bias", HF_BOOL, HF_ANY, 1, pe.bias),
    HF_FIELD("use_gate", HF_BOOL, HF_ANY, 1, pe.phase_gate),
    HF_FIELD("temp_theta", HF_REAL, HF_POS, 1, pe.temp_theta),
    HF_FIELD("temp_max", HF_REAL, HF_POS, 1, pe.temp_max),
    HF_FIELD("temp_grad", HF_BOOL, HF_ANY, 1, pe.temp_grad),
};

/* position_embedding's choices as fla's Selective RoPE code spells them, in the orders of
 * PEKind, PhiProj, {ACT_NONE, ACT_SILU} and TempKind */
static const NameSet FLA_PE_TYPES = NAME_SET("nope", "rope", "selective_rope");
static const NameSet FLA_PHI_PROJS = NAME_SET("full-rank", "low-rank");
static const NameSet FLA_CONV_ACTS = NAME_SET(NULL, "silu");
static const NameSet FLA_TEMP_TYPES = NAME_SET("rope", "rfa");

static const HfFixed COMMON_FIXED[] = {
    {"fuse_norm", "true", 0},
    {"fuse_swiglu", "false", 0},
    {"fuse_cross_entropy", "false", 0},
    {"use_cache", "true", 0},
};
static const HfFixed SELECTIVE_FIXED[] = {
    {"gate_parametrization", "\"standard\"", 1},
    {"d_conv", "4", 1},
};

/* ------------------------------------------------------------------------------------ */
/* Writing                                                                              */
/* ------------------------------------------------------------------------------------ */

static void put_fields(json_t *o, const ModelConfig *c, const HfField *f, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const void *p = (const char *)c + f[i].offset;
        json_t *v = f[i].type == HF_REAL                            ? json_real(*(const double *)p)
                    : f[i].range == HF_TOKEN && *(const int *)p < 0 ? json_null()
                    : f[i].type == HF_INT                           ? json_integer(*(const int *)p)
                                                                    : json_boolean(*(const int *)p);
        json_object_set_new(o, f[i].key, v);
    }
}

static void put_fixed(json_t *o, const HfFixed *f, size_t n) {
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_loads(f[i].json, JSON_DECODE_ANY, NULL);
        RT_ASSERT(v);
        json_object_set_new(o, f[i].key, v);
    }
}

/* o[key] = the name of choice `value` of set (JSON null for a NULL name) */
static void put_name(json_t *o, const char *key, const NameSet *set, int value) {
    RT_ASSERT(value >= 0 && value < set->n);
    const char *name = set->names[value];
    json_object_set_new(o, key, name ? json_string(name) : json_null());
}

static json_t *pe_to_json(const ModelConfig *c) {
    const PEConfig *pe = &c->pe;
    json_t *o = json_object();
    put_name(o, "type", &FLA_PE_TYPES, pe->kind);
    switch (pe->kind) {
    case PE_NOPE: break;
    case PE_ROPE: put_fields(o, c, ROPE, HF_COUNT(ROPE)); break;
    case PE_SELECTIVE:
        RT_ASSERT(pe->conv_act == ACT_NONE || pe->conv_act == ACT_SILU);
        put_name(o, "phi_parametrization", &FLA_PHI_PROJS, pe->phi_proj);
        put_fields(o, c, SELECTIVE, HF_COUNT(SELECTIVE));
        put_name(o, "conv_act", &FLA_CONV_ACTS, pe->conv_act == ACT_SILU);
        put_name(o, "temp_type", &FLA_TEMP_TYPES, pe->temp_type);
        put_fixed(o, SELECTIVE_FIXED, HF_COUNT(SELECTIVE_FIXED));
        break;
    }
    return o;
}

/* rotor's keys of config.json for shapes fla lacks (docs/models.md §autoencoder-head,
 * §classification, §block-dropout-bidirectional, §nonlinear-rnns, §zoology-shape), in the
 * order they are written. A key is written when its condition holds (NULL: always) and its
 * value is not its default (`always`: whatever the value). It is read where its condition
 * holds (the conditions read keys of earlier rows; elsewhere the key is ignored): absent, the
 * field keeps its default, or, when `required`, the file is refused. */
typedef enum { RK_CHOICE, RK_INT, RK_REAL, RK_BOOL, RK_STRING } RotorKeyType;
typedef struct {
    const char *key;
    RotorKeyType type;
    size_t offset, size;  /* of the ModelConfig field (int, double, or a char array) */
    const NameSet *names; /* RK_CHOICE */
    double lo, hi;        /* RK_INT: lo..hi; RK_REAL: in [lo, hi), or (lo, hi) when lo_open */
    int lo_open;
    double dflt; /* the value of an absent key */
    int (*when)(const ModelConfig *c);
    const char *when_text; /* the condition, for messages */
    int required, always;
    int (*written)(const ModelConfig *c); /* RK_CHOICE: the value written, when not the field's */
} RotorKey;

#define RK(k, t, f)                                                                                \
    .key = k, .type = t, .offset = offsetof(ModelConfig, f), .size = sizeof(((ModelConfig *)0)->f)
static int is_classifier(const ModelConfig *c) { return c->head == HEAD_CLASSIFIER; }
static int has_pairs(const ModelConfig *c) { return c->pair != PAIR_NONE; }
static int linear_input(const ModelConfig *c) { return c->input == INPUT_LINEAR; }
static int has_mixers(const ModelConfig *c) { return c->mixers[0] != 0; }
static int has_dropout(const ModelConfig *c) { return c->dropout > 0; }
static int reads_orth_init(const ModelConfig *c) {
    return family_reads_key(family_of(c->mixer), "orth_init");
}
/* absent: the type's own nonlinearity; written resolved */
static int resolved_nonlinearity(const ModelConfig *c) {
    return rnn_modrelu(c) ? RNN_NONLIN_MODRELU : RNN_NONLIN_TANH;
}

static const RotorKey ROTOR_KEYS[] = {
    {RK("rotor_head", RK_CHOICE, head), .names = &HEAD_NAMES, .dflt = HEAD_LM},
    {RK("num_labels", RK_INT, num_classes), .lo = 2, .hi = INT_MAX, .when = is_classifier,
     .when_text = "rotor_head \"classifier\"", .required = 1, .always = 1},
    {RK("rotor_pool", RK_CHOICE, pool), .names = &POOL_NAMES, .when = is_classifier,
     .when_text = "rotor_head \"classifier\"", .required = 1, .always = 1},
    {RK("rotor_pair", RK_CHOICE, pair), .names = &PAIR_NAMES, .dflt = PAIR_NONE,
     .when = is_classifier, .when_text = "rotor_head \"classifier\""},
    {RK("rotor_pair_mlp", RK_INT, pair_mlp), .lo = 2, .hi = INT_MAX, .when = has_pairs,
     .when_text = "rotor_pair", .required = 1, .always = 1},
    {RK("rotor_input", RK_CHOICE, input), .names = &INPUT_NAMES, .dflt = INPUT_EMBEDDING},
    {RK("rotor_input_scale", RK_REAL, input_scale), .lo = 0, .lo_open = 1, .hi = INFINITY,
     .when = linear_input, .when_text = "rotor_input \"linear\"", .required = 1, .always = 1},
    {RK("rotor_input_offset", RK_REAL, input_offset), .hi = INFINITY, .when = linear_input,
     .when_text = "rotor_input \"linear\""},
    {RK("rotor_block", RK_CHOICE, block), .names = &BLOCK_NAMES, .dflt = BLOCK_PRENORM},
    {RK("rotor_mlp", RK_CHOICE, mlp), .names = &MLP_NAMES, .dflt = MLP_AUTO},
    {RK("rotor_norm", RK_CHOICE, norm), .names = &NORM_NAMES, .dflt = NORM_RMS},
    {RK("rotor_mixers", RK_STRING, mixers)},
    {RK("rotor_base_conv_kernel", RK_INT, base_conv_kernel), .lo = 1, .hi = SHORT_CONV_TAPS,
     .when = has_mixers, .when_text = "rotor_mixers", .always = 1},
    {RK("rotor_embed_dropout", RK_REAL, embed_dropout), .hi = 1},
    {RK("rotor_dropout", RK_REAL, dropout), .hi = 1},
    {RK("rotor_dropout_mask", RK_CHOICE, dropout_mask), .names = &DROPOUT_MASK_NAMES,
     .dflt = DROPOUT_ELEMENT, .when = has_dropout, .when_text = "rotor_dropout"},
    {RK("rotor_bidirectional", RK_BOOL, bidirectional)},
    {RK("rotor_orth_init", RK_CHOICE, orth_init), .names = &ORTH_INIT_NAMES,
     .when = reads_orth_init, .when_text = "this model_type", .always = 1},
    {RK("rotor_nonlinearity", RK_CHOICE, nonlinearity), .names = &NONLINEARITY_NAMES,
     .dflt = RNN_NONLIN_AUTO, .written = resolved_nonlinearity},
};
#undef RK

static double rotor_key_value(const RotorKey *k, const ModelConfig *c) {
    const void *p = (const char *)c + k->offset;
    return k->type == RK_REAL     ? *(const double *)p
           : k->type == RK_STRING ? ((const char *)p)[0] != 0
                                  : *(const int *)p;
}

static void put_rotor_shape(json_t *o, const ModelConfig *c) {
    for (size_t i = 0; i < HF_COUNT(ROTOR_KEYS); i++) {
        const RotorKey *k = &ROTOR_KEYS[i];
        const void *p = (const char *)c + k->offset;
        if ((k->when && !k->when(c)) || (!k->always && rotor_key_value(k, c) == k->dflt)) continue;
        switch (k->type) {
        case RK_CHOICE:
            put_name(o, k->key, k->names, k->written ? k->written(c) : *(const int *)p);
            break;
        case RK_INT: json_object_set_new(o, k->key, json_integer(*(const int *)p)); break;
        case RK_REAL: json_object_set_new(o, k->key, json_real(*(const double *)p)); break;
        case RK_BOOL: json_object_set_new(o, k->key, json_boolean(*(const int *)p)); break;
        case RK_STRING: json_object_set_new(o, k->key, json_string((const char *)p)); break;
        }
    }
}

/* rotor's model of a family: model_type ROTOR_TYPE + fla's, architecture ROTOR_ARCH + fla's */
#define ROTOR_TYPE "rotor_"
#define ROTOR_ARCH "Rotor"
#define ARCH_SUFFIX "ForCausalLM"

int hf_fla_nope(const ModelConfig *c) { return c->pe.kind == PE_NOPE; }

/* fla's blocks: the family's mixer in every layer, its own MLP (model.mlp = auto's), RMSNorms
 * and an untied LM head (rotor does not check fla's tying). */
static int fla_layers(const ModelConfig *c) {
    ModelConfig own = *c;
    own.mlp = MLP_AUTO;
    return !c->mixers[0] && model_mlp(c) == model_mlp(&own) && !c->tie_embeddings &&
           c->norm == NORM_RMS;
}

int hf_config_is_fla(const ModelConfig *c) {
    const HfSchema *ms = &family_of(c->mixer)->hf;
    return ms->fla_computes && c->head == HEAD_LM && c->input == INPUT_EMBEDDING &&
           c->block == BLOCK_PRENORM && !c->bidirectional && fla_layers(c) && ms->fla_computes(c);
}

/* model_type and architectures: fla's model, or rotor's with the auto_map of its Python files
 * (hf_remote.h: configuration_rotor.py holds Rotor<name>Config, modeling_rotor.py
 * Rotor<name>ForCausalLM) */
static void put_names(json_t *o, const ModelConfig *c, const HfSchema *ms) {
    if (hf_config_is_fla(c)) {
        json_object_set_new(o, "model_type", json_string(ms->model_type));
        json_object_set_new(o, "architectures", json_pack("[s]", ms->architecture));
        return;
    }
    size_t n = strlen(ms->architecture), sn = strlen(ARCH_SUFFIX);
    RT_ASSERT(n > sn && !strcmp(ms->architecture + n - sn, ARCH_SUFFIX));
    char *type = rt_sprintf(ROTOR_TYPE "%s", ms->model_type);
    char *arch = rt_sprintf(ROTOR_ARCH "%s", ms->architecture);
    char *config =
        rt_sprintf("configuration_rotor." ROTOR_ARCH "%.*sConfig", (int)(n - sn), ms->architecture);
    char *model = rt_sprintf("modeling_rotor.%s", arch);
    json_object_set_new(o, "model_type", json_string(type));
    json_object_set_new(o, "architectures", json_pack("[s]", arch));
    json_object_set_new(
        o, "auto_map",
        json_pack("{s:s, s:s}", "AutoConfig", config, "AutoModelForCausalLM", model));
    rt_free(type);
    rt_free(arch);
    rt_free(config);
    rt_free(model);
}

json_t *hf_config_to_json(const ModelConfig *c) {
    ModelDims dims;
    RT_ASSERT(model_dims(c, &dims) == NULL);
    const HfSchema *ms = &family_of(c->mixer)->hf;
    json_t *o = json_object();
    put_names(o, c, ms);
    put_rotor_shape(o, c);
    put_fields(o, c, COMMON, HF_COUNT(COMMON));
    if (dims.mlp_width)
        json_object_set_new(o, "intermediate_size", json_integer(dims.mlp_width));
    else if (ms->derived_heads)
        json_object_set_new(o, "num_heads", json_integer(dims.H));
    /* the lra block's GELU (docs/models.md §block-dropout-bidirectional) */
    const char *act = c->block == BLOCK_LRA ? "gelu" : dims.mlp_width ? "swish" : "silu";
    json_object_set_new(o, "hidden_act", json_string(act));
    put_fixed(o, COMMON_FIXED, HF_COUNT(COMMON_FIXED));
    put_fields(o, c, ms->fields, ms->nfields);
    put_fixed(o, ms->fixed, ms->nfixed);
    json_object_set_new(o, "position_embedding", pe_to_json(c));
    return o;
}

/* ------------------------------------------------------------------------------------ */
/* Reading                                                                              */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    char *err;
    size_t errlen;
} Errs;

static int fail(Errs *e, const char *fmt, ...) RT_PRINTF(2, 3);
static int fail(Errs *e, const char *fmt, ...) {
    if (e->err && e->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->err, e->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A JSON value as compact text (for messages); static storage. */
static const char *json_text(const json_t *v) {
    static char buf[96];
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(buf, sizeof buf, "%s", s ? s : "?");
    free(s);
    return buf;
}

static int read_fields(const json_t *o, const char *prefix, const HfField *f, size_t n,
                       ModelConfig *out, Errs *e) {
    static const char *const range_words[] = {[HF_ANY] = "",
                                              [HF_POS] = "positive ",
                                              [HF_NONNEG] = "non-negative ",
                                              [HF_TOKEN] = "non-negative "};
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_object_get(o, f[i].key);
        if (v && json_is_null(v) && f[i].range == HF_TOKEN) {
            *(int *)((char *)out + f[i].offset) = -1;
            continue;
        }
        if (!v || (json_is_null(v) && !f[i].required)) {
            if (f[i].required) return fail(e, "config key '%s%s' is missing", prefix, f[i].key);
            continue;
        }
        void *p = (char *)out + f[i].offset;
        const char *rw = range_words[f[i].range];
        switch (f[i].type) {
        case HF_BOOL:
            if (!json_is_boolean(v))
                return fail(e, "config key '%s%s' must be true or false, got %s", prefix, f[i].key,
                            json_kind(v));
            *(int *)p = json_is_true(v);
            break;
        case HF_INT: {
            json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
            if (!json_is_integer(v) || x < INT_MIN || x > INT_MAX ||
                (f[i].range == HF_POS && x <= 0) ||
                ((f[i].range == HF_NONNEG || f[i].range == HF_TOKEN) && x < 0))
                return fail(e, "config key '%s%s' must be a %sinteger, got %s", prefix, f[i].key,
                            rw, json_is_integer(v) ? json_text(v) : json_kind(v));
            *(int *)p = (int)x;
            break;
        }
        case HF_REAL: {
            double x = json_is_number(v) ? json_number_value(v) : 0;
            if (!json_is_number(v) || (f[i].range == HF_POS && !(x > 0)) ||
                (f[i].range == HF_NONNEG && !(x >= 0)))
                return fail(e, "config key '%s%s' must be a %snumber, got %s", prefix, f[i].key, rw,
                            json_is_number(v) ? json_text(v) : json_kind(v));
            *(double *)p = x;
            break;
        }
        }
    }
    return 0;
}

static int check_fixed(const json_t *o, const char *prefix, const HfFixed *f, size_t n, Errs *e) {
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_object_get(o, f[i].key);
        if (!f[i].checked || !v) continue;
        json_t *want = json_loads(f[i].json, JSON_DECODE_ANY, NULL);
        RT_ASSERT(want);
        int same = json_equal(v, want);
        json_decref(want);
        if (!same)
            return fail(e, "config key '%s%s' = %s is not supported (rotor implements %s)", prefix,
                        f[i].key, json_text(v), f[i].json);
    }
    return 0;
}

/* A string-valued key that must be one of names[] (a NULL entry stands for JSON null);
 * stores the index. */
static int read_choice(const json_t *o, const char *prefix, const char *key, const NameSet *set,
                       int *idx, Errs *e) {
    const char *const *names = set->names;
    int n = set->n;
    *idx = 0; /* also on failure, where callers do not read it */
    const json_t *v = json_object_get(o, key);
    if (!v) return fail(e, "config key '%s%s' is missing", prefix, key);
    for (int i = 0; i < n; i++) {
        if (names[i] ? json_is_string(v) && !strcmp(json_string_value(v), names[i])
                     : json_is_null(v)) {
            *idx = i;
            return 0;
        }
    }
    char want[160] = "";
    for (int i = 0; i < n; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s%s%s",
                 i ? (i == n - 1 ? " or " : ", ") : "", names[i] ? "\"" : "",
                 names[i] ? names[i] : "null", names[i] ? "\"" : "");
    return fail(e, "config key '%s%s' = %s is not supported (expected %s)", prefix, key,
                json_text(v), want);
}

static int read_pe(const json_t *j, ModelConfig *out, Errs *e) {
    const json_t *pe = json_object_get(j, "position_embedding");
    if (!pe || json_is_null(pe)) { /* fla's own configs: NoPE, but RoPE in fla's Attention */
        out->pe.kind = family_of(out->mixer)->hf.default_pe;
        return 0;
    }
    if (!json_is_object(pe))
        return fail(e, "config key 'position_embedding' must be an object, got %s", json_kind(pe));
    static const char *const P = "position_embedding.";
    int kind = 0;
    if (read_choice(pe, P, "type", &FLA_PE_TYPES, &kind, e)) return -1;
    out->pe.kind = (PEKind)kind;
    if (kind == PE_ROPE) return read_fields(pe, P, ROPE, HF_COUNT(ROPE), out, e);
    if (kind != PE_SELECTIVE) return 0;
    int proj, act, temp;
    if (read_choice(pe, P, "phi_parametrization", &FLA_PHI_PROJS, &proj, e) ||
        read_choice(pe, P, "conv_act", &FLA_CONV_ACTS, &act, e) ||
        read_choice(pe, P, "temp_type", &FLA_TEMP_TYPES, &temp, e) ||
        read_fields(pe, P, SELECTIVE, HF_COUNT(SELECTIVE), out, e) ||
        check_fixed(pe, P, SELECTIVE_FIXED, HF_COUNT(SELECTIVE_FIXED), e))
        return -1;
    out->pe.phi_proj = (PhiProj)proj;
    out->pe.conv_act = act ? ACT_SILU : ACT_NONE;
    out->pe.temp_type = (TempKind)temp;
    if (out->pe.temp_type == TEMP_TAN && !(out->pe.temp_theta < 1))
        return fail(e,
                    "config key 'position_embedding.temp_theta' = %.17g must be below 1 when "
                    "temp_type is \"rfa\"",
                    out->pe.temp_theta);
    return 0;
}

/* The rotor keys (ROTOR_KEYS) into out, in the table's order. */
static int read_rotor_shape(const json_t *j, ModelConfig *out, Errs *e) {
    for (size_t i = 0; i < HF_COUNT(ROTOR_KEYS); i++) {
        const RotorKey *k = &ROTOR_KEYS[i];
        const json_t *v = json_object_get(j, k->key);
        if (k->when && !k->when(out)) continue; /* a key of a shape this model does not have */
        if (!v) {
            if (k->required)
                return fail(e, "config key '%s' is missing: %s needs it", k->key, k->when_text);
            continue;
        }
        void *p = (char *)out + k->offset;
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        switch (k->type) {
        case RK_CHOICE: {
            int idx;
            if (read_choice(j, "", k->key, k->names, &idx, e)) return -1;
            *(int *)p = idx;
            break;
        }
        case RK_INT:
            if (!json_is_integer(v) || x < k->lo || x > k->hi)
                return fail(e, "config key '%s' must be an integer %s %.0f%s%.0f, got %s", k->key,
                            k->hi < INT_MAX ? "from" : ">=", k->lo, k->hi < INT_MAX ? " to " : "",
                            k->hi < INT_MAX ? k->hi : 0, json_text(v));
            *(int *)p = (int)json_integer_value(v);
            break;
        case RK_REAL:
            if (!json_is_number(v) || !(k->lo_open ? x > k->lo : x >= k->lo) || !(x < k->hi))
                return fail(e, "config key '%s' must be a number in %s%g, %g), got %s", k->key,
                            k->lo_open ? "(" : "[", k->lo, k->hi, json_text(v));
            *(double *)p = x;
            break;
        case RK_BOOL:
            if (!json_is_boolean(v))
                return fail(e, "config key '%s' must be true or false, got %s", k->key,
                            json_text(v));
            *(int *)p = json_is_true(v);
            break;
        case RK_STRING:
            if (!json_is_string(v) || json_string_length(v) >= k->size)
                return fail(e, "config key '%s' must be a string of under %zu characters, got %s",
                            k->key, k->size, json_text(v));
            snprintf((char *)p, k->size, "%s", json_string_value(v));
            break;
        }
    }
    return 0;
}

/* model_type: fla's name of a family's model or rotor's (ROTOR_TYPE + fla's) */
static int read_model_type(const json_t *j, MixerKind *kind, Errs *e) {
    const json_t *v = json_object_get(j, "model_type");
    if (!v) return fail(e, "config key 'model_type' is missing");
    const char *name = json_is_string(v) ? json_string_value(v) : "";
    if (!strncmp(name, ROTOR_TYPE, strlen(ROTOR_TYPE))) name += strlen(ROTOR_TYPE);
    if (family_by_model_type(name, kind)) return 0;
    char want[400] = "";
    for (int k = 0; k < N_MIXERS; k++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s\"%s\"", k ? ", " : "",
                 family_of((MixerKind)k)->hf.model_type);
    return fail(e,
                "config key 'model_type' = %s is not supported (expected %s, or one of them "
                "prefixed \"%s\")",
                json_text(v), want, ROTOR_TYPE);
}

int hf_config_from_json(const json_t *j, const ModelConfig *defaults, ModelConfig *out, char *err,
                        size_t errlen) {
    Errs e = {err, errlen};
    memcpy(out, defaults, sizeof(*out));
    if (!json_is_object(j))
        return fail(&e, "config.json must hold a JSON object, got %s", json_kind(j));
    if (read_model_type(j, &out->mixer, &e)) return -1;
    const Family *fam = family_of(out->mixer);
    const HfSchema *ms = &fam->hf;
    /* rotor's auto-encoder head (docs/models.md §autoencoder-head) has no fla counterpart: its own
     * key, absent for the LM head */
    if (read_rotor_shape(j, out, &e)) return -1;
    if (read_fields(j, "", COMMON, HF_COUNT(COMMON), out, &e) ||
        check_fixed(j, "", COMMON_FIXED, HF_COUNT(COMMON_FIXED), &e) ||
        read_fields(j, "", ms->fields, ms->nfields, out, &e) ||
        check_fixed(j, "", ms->fixed, ms->nfixed, &e) || read_pe(j, out, &e))
        return -1;
    const json_t *act = json_object_get(j, "hidden_act");
    const char *an = json_is_string(act) ? json_string_value(act) : "";
    int act_ok =
        out->block == BLOCK_LRA ? !strcmp(an, "gelu") : !strcmp(an, "swish") || !strcmp(an, "silu");
    if (act && !act_ok)
        return fail(&e, "config key 'hidden_act' = %s is not supported (expected %s)",
                    json_text(act),
                    out->block == BLOCK_LRA ? "\"gelu\" with rotor_block \"lra\""
                                            : "\"swish\" or \"silu\"");

    /* The MLP width (none for Mamba2): explicit, or from hidden_ratio; stored as 0 when the
     * ratio gives it. */
    const json_t *inter = json_object_get(j, "intermediate_size");
    const json_t *ratio = json_object_get(j, "hidden_ratio");
    int explicit_width = 0, mlp = model_mlp(out) == MLP_SWIGLU;
    if (mlp && inter && !json_is_null(inter)) {
        if (!json_is_integer(inter) || json_integer_value(inter) <= 0 ||
            json_integer_value(inter) > INT_MAX)
            return fail(&e,
                        "config key 'intermediate_size' must be a positive integer or null, got %s",
                        json_is_integer(inter) ? json_text(inter) : json_kind(inter));
        explicit_width = (int)json_integer_value(inter);
    } else if (mlp && (!ratio || json_is_null(ratio))) {
        return fail(&e, "config keys 'intermediate_size' and 'hidden_ratio' are both missing: one "
                        "gives the MLP width");
    }
    ModelDims dims;
    const char *why = model_dims(out, &dims);
    if (why) return fail(&e, "inconsistent config: %s", why);
    if (explicit_width && explicit_width != dims.mlp_width) out->intermediate_size = explicit_width;
    if (ms->derived_heads && out->num_heads != dims.H) /* fla's Mamba2 refuses it too */
        return fail(&e,
                    "config key 'num_heads' = %d differs from expand x hidden_size / head_dim = %d",
                    out->num_heads, dims.H);
    if (out->bos_id >= out->vocab_size || out->eos_id >= out->vocab_size)
        return fail(&e,
                    "config keys 'bos_token_id' = %d and 'eos_token_id' = %d must be below "
                    "'vocab_size' = %d",
                    out->bos_id, out->eos_id, out->vocab_size);
    return 0;
}
