/* Shared pieces of the `rotor data` subcommands (internal to data_tools/): option parsing in
 * the style of src/cli/main.c ("--name value" or "--name=value"; unknown options are errors
 * that name the closest known option), strict number parsing, interrupt handling, and the
 * three subcommands' entry points. */
#ifndef ROTOR_DT_COMMON_H
#define ROTOR_DT_COMMON_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Subcommands: argv[0] is the subcommand name; each returns the exit status. */
int dt_tokenize_main(int argc, char **argv);
int dt_inspect_main(int argc, char **argv);
int dt_train_tokenizer_main(int argc, char **argv);

/* ---- option parsing ---- */
/* The value of "--name value" or "--name=value" at argv[*i] (advancing *i past a separate
 * value), or NULL when argv[*i] is not --name. Dies when the value is missing. */
const char *dt_option(int argc, char **argv, int *i, const char *name);
/* 1 when argv[i] is the flag --name (a flag takes no "=value"). */
int dt_flag(const char *arg, const char *name);
/* Dies: "unknown option 'ARG'; did you mean '--x'? (see rotor data CMD --help)", or, for a
 * known flag given "=value", that it takes no value. known: NULL-terminated list of the
 * command's options. */
void dt_die_unknown_option(const char *cmd, const char *arg, const char *const *known)
    __attribute__((noreturn));
/* Strict parsers for option values: the whole string must be a number within [lo, hi];
 * otherwise they die naming the option and the value. */
int64_t dt_parse_int(const char *opt, const char *value, int64_t lo, int64_t hi);
double dt_parse_double(const char *opt, const char *value, double lo, double hi);

/* ---- interrupts ---- */
/* Catches SIGINT and SIGTERM: instead of dying at once, the process records the signal so
 * that the long-running loops can stop at a safe point and remove their temporary files. */
void dt_catch_interrupts(void);
/* The signal caught (SIGINT or SIGTERM), or 0. */
int dt_interrupted(void);

/* ---- formatting ---- */
/* n with thousands separators ("1,234,567") into buf[32]; returns buf. */
const char *dt_commas(int64_t n, char buf[32]);

#endif
