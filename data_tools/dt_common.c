#include "dt_common.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/options.h"

void dt_read_args_init(DtReadArgs *a, int argc, DtTextDocs text_docs) {
    *a = (DtReadArgs){.inputs = rt_malloc(sizeof(char *) * (size_t)(argc > 0 ? argc : 1)),
                      .docs = {.text_field = "text", .text_docs = text_docs}};
}

int dt_read_arg(DtReadArgs *a, const char *cmd, int argc, char **argv, int *i) {
    const char *s = argv[*i], *v;
    if (a->options_done || s[0] != '-' || !s[1])
        a->inputs[a->n_inputs++] = argv[*i];
    else if (!strcmp(s, "--"))
        a->options_done = 1;
    else if ((v = opt_value(cmd, argc, argv, i, "--text-field")))
        a->docs.text_field = v;
    else if (!strcmp(s, "--skip-bad-lines"))
        a->docs.skip_bad_lines = 1;
    else if (!strcmp(s, "--skip-binary"))
        a->docs.skip_binary = 1;
    else if ((v = opt_value(cmd, argc, argv, i, "--threads")))
        a->threads = (int)opt_parse_int("--threads", v, 1, 4096);
    else
        return 0;
    return 1;
}

void dt_read_args_free(DtReadArgs *a) { rt_free(a->inputs); }

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
