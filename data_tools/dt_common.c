#include "dt_common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

const char *dt_option(int argc, char **argv, int *i, const char *name) {
    size_t n = strlen(name);
    const char *arg = argv[*i];
    if (strncmp(arg, name, n) || (arg[n] && arg[n] != '=')) return NULL;
    if (arg[n] == '=') return arg + n + 1;
    if (*i + 1 >= argc) rt_die("%s needs a value (see --help)", name);
    return argv[++*i];
}

int dt_flag(const char *arg, const char *name) { return !strcmp(arg, name); }

void dt_die_unknown_option(const char *cmd, const char *arg, const char *const *known) {
    /* Compare the option name only, without any "=value". */
    char name[128];
    snprintf(name, sizeof name, "%s", arg);
    char *eq = strchr(name, '=');
    if (eq) *eq = '\0';
    const char *best = NULL;
    int best_d = 3; /* suggest only names within two edits */
    for (int k = 0; known[k]; k++) {
        int d = rt_edit_distance(name, known[k]);
        if (d < best_d) best_d = d, best = known[k];
    }
    if (best_d == 0) rt_die("%s takes no value (see rotor data %s --help)", name, cmd);
    if (best)
        rt_die("unknown option '%s'; did you mean '%s'? (see rotor data %s --help)", name, best,
               cmd);
    rt_die("unknown option '%s' (see rotor data %s --help)", name, cmd);
}

int64_t dt_parse_int(const char *opt, const char *value, int64_t lo, int64_t hi) {
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (!*value || *end || errno) rt_die("%s: '%s' is not an integer", opt, value);
    if (v < lo || v > hi)
        rt_die("%s: %lld is out of range [%lld, %lld]", opt, v, (long long)lo, (long long)hi);
    return v;
}

double dt_parse_double(const char *opt, const char *value, double lo, double hi) {
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (!*value || *end || errno || !isfinite(v)) rt_die("%s: '%s' is not a number", opt, value);
    if (v < lo || v > hi) rt_die("%s: %g is out of range [%g, %g]", opt, v, lo, hi);
    return v;
}

static volatile sig_atomic_t caught_signal;

static void on_signal(int sig) { caught_signal = sig; }

void dt_catch_interrupts(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int dt_interrupted(void) { return caught_signal; }

const char *dt_commas(int64_t n, char buf[32]) {
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%lld", (long long)(n < 0 ? -n : n));
    char *p = buf;
    if (n < 0) *p++ = '-';
    for (int k = 0; k < len; k++) {
        if (k && (len - k) % 3 == 0) *p++ = ',';
        *p++ = digits[k];
    }
    *p = '\0';
    return buf;
}
