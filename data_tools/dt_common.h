/* Shared pieces of the `rotor data` subcommands (internal to data_tools/): the arguments
 * that tokenize and train-tokenizer both take, interrupt handling, number formatting, and
 * the three subcommands' entry points (their options go through util/options.h). */
#ifndef ROTOR_DT_COMMON_H
#define ROTOR_DT_COMMON_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dt_input.h"

/* Subcommands: argv[0] is the subcommand name; each returns the exit status. */
int dt_tokenize_main(int argc, char **argv);
int dt_inspect_main(int argc, char **argv);
int dt_train_tokenizer_main(int argc, char **argv);

/* ---- the arguments of the commands that read documents ---- */
/* INPUT... (every argument after "--" is one too), --text-field NAME, --skip-bad-lines,
 * --skip-binary and --threads N. */
typedef struct {
    char **inputs;
    int n_inputs;
    DtDocOptions docs;
    int threads;      /* 0: OMP_NUM_THREADS, else all cores */
    int options_done; /* "--" seen */
} DtReadArgs;

/* Defaults for argc arguments: text field "text", plain text split as text_docs. */
void dt_read_args_init(DtReadArgs *a, int argc, DtTextDocs text_docs);
/* Takes argv[*i] (advancing *i past a separate value) when it is an INPUT or one of the
 * options above: 1, or 0 for any other argument. cmd names the command for the hints
 * ("data tokenize"). */
int dt_read_arg(DtReadArgs *a, const char *cmd, int argc, char **argv, int *i);
void dt_read_args_free(DtReadArgs *a);

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
