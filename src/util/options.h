/* Command-line options of every rotor command: "--name value" or "--name=value", flags
 * without a value, strict number parsing, and errors for what matches nothing that name the
 * closest known word ("did you mean"). Every failure dies with a message naming the option
 * and the value, and the help to read: cmd is the command ("train", "data tokenize"; NULL
 * for rotor itself), so the hint reads "see rotor CMD --help". */
#ifndef ROTOR_OPTIONS_H
#define ROTOR_OPTIONS_H

#include <stdint.h>

#include "util/error.h"

/* 1 when arg asks for help: --help or -h. */
int opt_is_help(const char *arg);
/* The value of "--name value" or "--name=value" at argv[*i] (advancing *i past a separate
 * value), or NULL when argv[*i] is not --name. Dies when the value is missing. */
const char *opt_value(const char *cmd, int argc, char **argv, int *i, const char *name);
/* Dies on an argument that no option of the command matches. known: the command's options,
 * NULL-terminated. "unknown option '--x'; did you mean '--y'?" when one is within two edits
 * of its name (the part before any '='), "--flag takes no value" for a flag given a value,
 * "unknown option" or, for an argument that is no option, "unexpected argument" otherwise. */
void opt_die_unknown(const char *cmd, const char *arg, const char *const *known) RT_NORETURN;
/* Dies on a command word that is none of the known ones (NULL-terminated): "unknown WHAT
 * 'x'; did you mean 'y'?", or "unknown WHAT 'x': one of a, b, c". */
void opt_die_unknown_word(const char *cmd, const char *what, const char *arg,
                          const char *const *known) RT_NORETURN;
/* The whole of v as an integer in [lo, hi], or dies naming the option and the value. */
int64_t opt_parse_int(const char *opt, const char *v, int64_t lo, int64_t hi);
/* The whole of v as a finite number in [lo, hi], or dies naming the option and the value. */
double opt_parse_number(const char *opt, const char *v, double lo, double hi);

#endif
