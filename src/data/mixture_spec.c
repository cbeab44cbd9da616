/* Parsing of data mixtures and data stages (mixture_spec.h). */
#include "data/mixture_spec.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

/* Copies s[0..n) without surrounding blanks into out (of size cap); returns its length, or
 * -1 when it does not fit. */
static int trimmed(const char *s, size_t n, char *out, size_t cap) {
    while (n && isspace((unsigned char)*s)) s++, n--;
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (n >= cap) return -1;
    memcpy(out, s, n);
    out[n] = 0;
    return (int)n;
}

/* A weight: a finite number >= 0 that fills the whole of s. */
static int parse_weight(const char *s, double *w) {
    char *end;
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return -1;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    if (*end || !isfinite(v) || v < 0) return -1;
    *w = v;
    return 0;
}

static int valid_name(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.') return 0;
    return 1;
}

/* The last component of path that holds no glob character and is not train or val (the
 * split directories of `rotor data tokenize`): "/data/web/train/ *.h5" -> "web". */
static void default_name(const char *path, char *out, size_t cap) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    out[0] = 0;
    for (char *p = strtok(buf, "/"); p; p = strtok(NULL, "/")) {
        if (strpbrk(p, "*?[") || ((!strcmp(p, "train") || !strcmp(p, "val")) && out[0])) continue;
        size_t n = strlen(p);
        if (n > 3 && !strcmp(p + n - 3, ".h5")) n -= 3;
        if (n >= cap) n = cap - 1;
        memcpy(out, p, n);
        out[n] = 0;
    }
    for (char *c = out; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.') *c = '_';
}

static int normalise(double *w, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += w[i];
    if (!(sum > 0)) return -1;
    for (int i = 0; i < n; i++) w[i] /= sum;
    return 0;
}

static int find_source(const MixSpec *m, const char *name) {
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->src[i].name, name)) return i;
    return -1;
}

/* One source of data.train: [NAME=]PATH[:WEIGHT]; *has_weight tells whether it gave one. */
static int parse_source(const char *key, const char *item, MixSource *src, double *w,
                        int *has_weight, char *err, size_t errlen) {
    char text[1200];
    snprintf(text, sizeof text, "%s", item);
    char *path = text;
    char *eq = strchr(text, '=');
    src->name[0] = 0;
    if (eq && (!strchr(text, '/') || eq < strchr(text, '/'))) {
        *eq = 0;
        if (trimmed(text, strlen(text), src->name, sizeof src->name) < 0 || !valid_name(src->name))
            return rt_error(
                err, errlen, NULL,
                "%s: '%s': a source's name is letters, digits, '_', '-' or '.' (at most 63)", key,
                text);
        path = eq + 1;
    }
    *has_weight = 0;
    char *colon = strrchr(path, ':');
    if (colon && !parse_weight(colon + 1, w)) {
        *colon = 0;
        *has_weight = 1;
    } else if (colon && strspn(colon + 1, " \t0123456789.+-eE") == strlen(colon + 1)) {
        return rt_error(err, errlen, NULL, "%s: '%s': the weight after ':' must be a number >= 0",
                        key, item);
    }
    if (trimmed(path, strlen(path), src->path, sizeof src->path) <= 0)
        return rt_error(err, errlen, NULL, "%s: '%s' names no shard directory or glob", key, item);
    if (!src->name[0]) default_name(src->path, src->name, sizeof src->name);
    if (!src->name[0])
        return rt_error(err, errlen, NULL, "%s: '%s': name the source (NAME=%s)", key, item,
                        src->path);
    return 0;
}

/* One stage of data.stages: STEP: NAME=WEIGHT, ... */
static int parse_stage(const MixSpec *m, const char *text, MixStage *st, char *err, size_t errlen) {
    const char *colon = strchr(text, ':');
    char num[64];
    char *end;
    if (!colon || trimmed(text, (size_t)(colon - text), num, sizeof num) <= 0 ||
        (st->step = strtoll(num, &end, 10), *end) || st->step <= 0)
        return rt_error(err, errlen, NULL,
                        "data.stages: '%s': a stage is STEP: NAME=WEIGHT, ... with STEP > 0", text);
    int given[MIX_MAX_SOURCES] = {0};
    char list[2048];
    snprintf(list, sizeof list, "%s", colon + 1);
    char *save = NULL;
    for (char *it = strtok_r(list, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        char name[64], item[2048], *eq = strchr(it, '=');
        int i = -1;
        trimmed(it, strlen(it), item, sizeof item);
        if (eq && trimmed(it, (size_t)(eq - it), name, sizeof name) > 0) i = find_source(m, name);
        if (!eq || i < 0 || parse_weight(eq + 1, &st->weight[i]))
            return rt_error(err, errlen, NULL,
                            "data.stages: stage at step %lld: '%s' must be NAME=WEIGHT with a "
                            "source of data.train "
                            "and a weight >= 0",
                            (long long)st->step, item);
        if (given[i]++)
            return rt_error(err, errlen, NULL, "data.stages: stage at step %lld gives '%s' twice",
                            (long long)st->step, name);
    }
    for (int i = 0; i < m->n; i++)
        if (!given[i])
            return rt_error(err, errlen, NULL,
                            "data.stages: the stage at step %lld gives no weight for '%s' (give "
                            "%s=0 to leave it out)",
                            (long long)st->step, m->src[i].name, m->src[i].name);
    if (normalise(st->weight, m->n))
        return rt_error(err, errlen, NULL,
                        "data.stages: the weights of the stage at step %lld sum to 0",
                        (long long)st->step);
    return 0;
}

int mix_spec_parse(const char *key, const char *spec, const char *stages, MixSpec *out, char *err,
                   size_t errlen) {
    memset(out, 0, sizeof *out);
    char list[8192];
    if (snprintf(list, sizeof list, "%s", spec) >= (int)sizeof list)
        return rt_error(err, errlen, NULL, "%s is longer than %zu characters", key,
                        sizeof list - 1);
    int weighted = 0;
    char *save = NULL;
    for (char *it = strtok_r(list, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        if (out->n == MIX_MAX_SOURCES)
            return rt_error(err, errlen, NULL, "%s: more than %d sources", key, MIX_MAX_SOURCES);
        int has = 0;
        if (parse_source(key, it, &out->src[out->n], &out->stage[0].weight[out->n], &has, err,
                         errlen))
            return -1;
        if (find_source(out, out->src[out->n].name) >= 0)
            return rt_error(err, errlen, NULL,
                            "%s: two sources are named '%s': name them (NAME=PATH:WEIGHT)", key,
                            out->src[out->n].name);
        weighted += has;
        out->n++;
    }
    if (!out->n) return rt_error(err, errlen, NULL, "%s names no source", key);
    if (out->n == 1 && !weighted) out->stage[0].weight[0] = 1;
    if (out->n > 1 && weighted < out->n)
        return rt_error(err, errlen, NULL,
                        "%s: every source of a mixture needs a weight (PATH:WEIGHT): %s", key,
                        spec);
    if (normalise(out->stage[0].weight, out->n))
        return rt_error(err, errlen, NULL, "%s: the weights sum to 0", key);
    out->stages = 1;
    if (!stages || !stages[0]) return 0;
    if (out->n == 1)
        return rt_error(
            err, errlen, NULL,
            "data.stages = %s: stages change the weights of a mixture, and %s names one source",
            stages, key);
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", stages);
    save = NULL;
    for (char *it = strtok_r(buf, ";", &save); it; it = strtok_r(NULL, ";", &save)) {
        if (out->stages == MIX_MAX_STAGES)
            return rt_error(err, errlen, NULL, "data.stages: more than %d stages",
                            MIX_MAX_STAGES - 1);
        MixStage *st = &out->stage[out->stages];
        if (parse_stage(out, it, st, err, errlen)) return -1;
        if (st->step <= out->stage[out->stages - 1].step)
            return rt_error(
                err, errlen, NULL,
                "data.stages: the stage at step %lld must come after the one at step %lld",
                (long long)st->step, (long long)out->stage[out->stages - 1].step);
        out->stages++;
    }
    return 0;
}

int mix_stage_at(const MixSpec *m, int64_t step) {
    int s = 0;
    while (s + 1 < m->stages && m->stage[s + 1].step <= step) s++;
    return s;
}

void mix_describe_stage(const MixSpec *m, int stage, char *out, size_t len) {
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < m->n && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s %.3g", i ? ", " : "", m->src[i].name,
                                 m->stage[stage].weight[i]);
}
