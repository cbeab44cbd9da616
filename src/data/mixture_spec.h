/* data.train (or data.val) as a weighted mixture of shard sets, and data.stages, which change
 * the weights at given steps (docs/formats.md "Data mixtures"):
 *
 *   data.train  = [NAME=]PATH[:WEIGHT], [NAME=]PATH[:WEIGHT], ...
 *   data.stages = STEP: NAME=WEIGHT, NAME=WEIGHT, ...; STEP: ...
 *
 * PATH is a directory or glob of shards as for a single set. NAME defaults to the last
 * component of PATH without a glob character that is not train or val (so DIR/train of
 * `rotor data tokenize` is named after DIR). Weights are relative (normalised to sum 1),
 * >= 0; a mixture of several sources needs one for each. A stage names every source. */
#ifndef ROTOR_MIXTURE_SPEC_H
#define ROTOR_MIXTURE_SPEC_H

#include <stddef.h>
#include <stdint.h>

#define MIX_MAX_SOURCES 16
#define MIX_MAX_STAGES 16

typedef struct {
    char name[64];
    char path[1024];
} MixSource;

typedef struct {
    int64_t step;                   /* its first step; 0 for stage 0 (data.train's weights) */
    double weight[MIX_MAX_SOURCES]; /* normalised to sum 1 */
} MixStage;

typedef struct {
    int n;      /* sources; 1: a single shard set (no mixture) */
    int stages; /* >= 1 */
    MixSource src[MIX_MAX_SOURCES];
    MixStage stage[MIX_MAX_STAGES];
} MixSpec;

/* Parses `spec` (data.train or data.val, named by `key` in messages) and `stages` (data.stages,
 * may be empty or NULL) into *out. Returns 0, or -1 with a message naming the key and the
 * part of its value that is wrong. */
int mix_spec_parse(const char *key, const char *spec, const char *stages, MixSpec *out, char *err,
                   size_t errlen);

/* The stage that the window drawn at global step `step` belongs to. */
int mix_stage_at(const MixSpec *m, int64_t step);

/* "name 0.7, name 0.3": a stage's weights for messages. */
void mix_describe_stage(const MixSpec *m, int stage, char *out, size_t len);

#endif
