/* The family registry: model/family_list.h's lines as a table indexed by MixerKind. */
#include "model/family.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "model/model_internal.h"
#include "util/error.h"
#include "util/name_list.h"

static const BackboneNames FLA_BACKBONE = {"model", "attn_norm", "attn", "norm"};

#define DECLARE(kind, desc) extern const Family desc;
ROTOR_FAMILIES(DECLARE)
#undef DECLARE

#define ENTRY(kind, desc) [MIXER_##kind] = &desc,
static const Family *const REGISTRY[N_MIXERS] = {ROTOR_FAMILIES(ENTRY)};
#undef ENTRY

const Family *family_of(MixerKind kind) {
    RT_ASSERT((int)kind >= 0 && (int)kind < N_MIXERS);
    return REGISTRY[kind];
}

const Family *family_by_name(const char *name, MixerKind *kind) {
    for (int k = 0; k < N_MIXERS; k++)
        if (!strcasecmp(REGISTRY[k]->name, name)) return *kind = (MixerKind)k, REGISTRY[k];
    return NULL;
}

const Family *family_by_model_type(const char *model_type, MixerKind *kind) {
    for (int k = 0; k < N_MIXERS; k++)
        if (!strcmp(REGISTRY[k]->hf.model_type, model_type))
            return *kind = (MixerKind)k, REGISTRY[k];
    return NULL;
}

const BackboneNames *family_backbone(const Family *f) {
    return f->names ? f->names : &FLA_BACKBONE;
}

int family_carries(const Family *f) { return f->mix->carry_width != NULL; }

int family_reads_key(const Family *f, const char *key) {
    for (const char *const *k = f->keys; k && *k; k++)
        if (!strcmp(*k, key)) return 1;
    return 0;
}

/* The names of the families that pass keep(f, key), joined. */
static void list_names(char *buf, size_t n, int (*keep)(const Family *, const char *),
                       const char *key) {
    const char *names[N_MIXERS];
    int count = 0;
    for (int k = 0; k < N_MIXERS; k++)
        if (keep(REGISTRY[k], key)) names[count++] = REGISTRY[k]->name;
    name_list(buf, n, names, count);
}

static int carries(const Family *f, const char *key) { return (void)key, family_carries(f); }
static int any(const Family *f, const char *key) { return (void)f, (void)key, 1; }

void family_names_with_key(const char *key, char *buf, size_t n) {
    list_names(buf, n, family_reads_key, key);
}
void family_names_carrying(char *buf, size_t n) { list_names(buf, n, carries, NULL); }
void family_names(char *buf, size_t n) { list_names(buf, n, any, NULL); }
