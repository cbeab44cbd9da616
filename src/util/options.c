#include "util/options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* " (see rotor CMD --help)" into buf. */
static const char *help_hint(const char *cmd, char *buf, size_t size) {
    snprintf(buf, size, " (see rotor %s%s--help)", cmd ? cmd : "", cmd ? " " : "");
    return buf;
}

/* The known word closest to name, if one is within two edits; its distance in *dist. */
static const char *closest(const char *name, const char *const *known, int *dist) {
    const char *best = NULL;
    *dist = 3;
    for (int k = 0; known[k]; k++) {
        int d = rt_edit_distance(name, known[k]);
        if (d < *dist) *dist = d, best = known[k];
    }
    return best;
}

int opt_is_help(const char *arg) { return !strcmp(arg, "--help") || !strcmp(arg, "-h"); }

const char *opt_value(const char *cmd, int argc, char **argv, int *i, const char *name) {
    size_t n = strlen(name);
    const char *arg = argv[*i];
    if (strncmp(arg, name, n) || (arg[n] && arg[n] != '=')) return NULL;
    if (arg[n] == '=') return arg + n + 1;
    char hint[128];
    if (*i + 1 >= argc) rt_die("%s needs a value%s", name, help_hint(cmd, hint, sizeof hint));
    return argv[++*i];
}

void opt_die_unknown(const char *cmd, const char *arg, const char *const *known) {
    char name[128], hint[128]; /* the option without any "=value" */
    snprintf(name, sizeof name, "%s", arg);
    char *eq = strchr(name, '=');
    if (eq && name[0] == '-') *eq = '\0';
    help_hint(cmd, hint, sizeof hint);
    int d;
    const char *best = closest(name, known, &d);
    if (d == 0 && eq) rt_die("%s takes no value%s", name, hint);
    if (best) rt_die("unknown option '%s'; did you mean '%s'?%s", name, best, hint);
    if (name[0] == '-') rt_die("unknown option '%s'%s", name, hint);
    rt_die("unexpected argument '%s'%s", arg, hint);
}

void opt_die_unknown_word(const char *cmd, const char *what, const char *arg,
                          const char *const *known) {
    char hint[128], list[512] = "";
    help_hint(cmd, hint, sizeof hint);
    int d;
    const char *best = closest(arg, known, &d);
    if (best) rt_die("unknown %s '%s'; did you mean '%s'?%s", what, arg, best, hint);
    for (int k = 0; known[k]; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", known[k]);
    rt_die("unknown %s '%s': one of %s%s", what, arg, list, hint);
}

int64_t opt_parse_int(const char *opt, const char *v, int64_t lo, int64_t hi) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*v && !*end && !errno && x >= lo && x <= hi) return x;
    if (lo == INT64_MIN && hi == INT64_MAX) rt_die("%s = '%s': expected an integer", opt, v);
    if (hi == INT64_MAX) rt_die("%s = '%s': expected an integer >= %lld", opt, v, (long long)lo);
    rt_die("%s = '%s': expected an integer in [%lld, %lld]", opt, v, (long long)lo, (long long)hi);
}

double opt_parse_number(const char *opt, const char *v, double lo, double hi) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (*v && !*end && !errno && isfinite(x) && x >= lo && x <= hi) return x;
    if (lo == -INFINITY && hi == INFINITY) rt_die("%s = '%s': expected a number", opt, v);
    rt_die("%s = '%s': expected a number in [%g, %g]", opt, v, lo, hi);
}
