/* The run configuration: the [model] [pe] [train] [data] [run] [task] sections of an INI
 * file (docs/formats.md "Configs") plus `--set section.key=value` overrides, parsed against one
 * schema table into a validated RunConfig (config/config.h). Every error message names
 * where it came from (file:line or --set), the key, the bad value and what is expected. */
#ifndef ROTOR_RUN_CONFIG_H
#define ROTOR_RUN_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "config/config.h"

/* Every key's default from the key table (data.train is left empty, which validation rejects);
 * the struct is zeroed first, so padding compares equal under memcmp. */
void run_config_defaults(RunConfig *c);
/* The [model] and [pe] part of those: the config a config.json's absent keys fall back to. */
void model_config_defaults(ModelConfig *m);

/* Loads defaults, then the INI file (path may be NULL: defaults only), then each override
 * "section.key=value" in order, then validates. On error returns -1 and writes into err a
 * message naming the file and line (or "--set"), the key, the bad value, and what is
 * expected; for an unknown key or section also the closest known name. Returns 0 on
 * success. *out is only written on success. */
int run_config_load(RunConfig *out, const char *ini_path, const char *const *sets, int nsets,
                    char *err, size_t errlen);

/* Same from an in-memory INI string (a checkpoint's rotor.ini); ini_text may be NULL
 * (defaults only), origin_name is the name used in messages. */
int run_config_load_string(RunConfig *out, const char *ini_text, const char *origin_name,
                           const char *const *sets, int nsets, char *err, size_t errlen);

/* A checkpoint's saved config (its rotor.ini): as run_config_load_string, but keys renamed
 * since it was written are read under their new names, and keys its family or task does not
 * read (written by versions that saved every key) are read and not refused. */
int run_config_load_saved(RunConfig *out, const char *ini_text, const char *origin_name, char *err,
                          size_t errlen);

/* Checks the ranges of every key and the cross-key constraints (shapes via model_dims(),
 * pe.temp_theta against pe.temp_type, ids below the vocabulary, ...). Returns 0, or -1 with
 * a message "<origin>: <problem naming the key(s)>" in err. run_config_load* call it. */
int run_config_validate(const RunConfig *c, const char *origin, char *err, size_t errlen);

/* 1 for a classification run: the classifier head, or data.train = task with a
 * classification task (seq_image, listops, text_bytes), whose rows carry one class each.
 * Validation then also measures accuracy, and train.keep_best defaults to val_accuracy. */
int run_config_classifies(const RunConfig *c);
/* "none", "val_loss", "val_accuracy": the metric's name in configs, metrics.jsonl and
 * trainer_state.json. */
const char *run_config_keep_best_name(KeepBest k);

/* Writes the effective config as INI (every key that its family and task read, canonical
 * spelling, floats in shortest round-trip form): run_config_load_string of that text gives
 * back a memcmp-identical RunConfig when the keys it does not read hold their defaults. */
void run_config_write_ini(const RunConfig *c, FILE *f);

/* The keys of the effective config whose values differ from their defaults, a line per
 * section ("  [train] steps = 300, lr = 0.003, ...", wrapped at 100 columns): a summary that
 * fits a screen. */
void run_config_write_changed(const RunConfig *c, FILE *f);

/* Help text listing every section.key with its type, default and a one-line description
 * (for `rotor train --help`). */
void run_config_print_help(FILE *f);

/* The same keys as a markdown reference page, docs/config-keys.md (`rotor info --keys-markdown`):
 * a table per section of key, type and choices, default, meaning and the model.type or task.type
 * values that read it. */
void run_config_print_markdown(FILE *f);

#endif
