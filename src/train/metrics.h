/* The run's outputs besides checkpoints: RUN_DIR/metrics.jsonl (one JSON object per logged
 * step, docs/formats.md "Logs and plots"), the same numbers as TensorBoard scalars in
 * RUN_DIR/tensorboard, the live progress line, and SVG plots of loss, learning rate and
 * validation accuracy. */
#ifndef ROTOR_METRICS_H
#define ROTOR_METRICS_H

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "io/tb_events.h"
#include "util/plot.h"

typedef struct {
    char path[1100];
    FILE *f;
    int tty;       /* stdout is a terminal: progress rewrites one line */
    int line_open; /* a progress line is on screen without newline */
    TbEvents *tb;  /* RUN_DIR/tensorboard's event file (run.tensorboard), or NULL */
} Metrics;

/* Opens RUN_DIR/metrics.jsonl for appending; entries with step > keep_upto are dropped
 * first (a resumed run redoes those steps). With `tensorboard`, also a new TensorBoard event
 * file in RUN_DIR/tensorboard whose scalars start at keep_upto + 1 (io/tb_events.h). Dies with a
 * message on I/O errors. */
void metrics_open(Metrics *m, const char *run_dir, int64_t keep_upto, int tensorboard);
/* Appends one object (stolen reference) and flushes; with TensorBoard, each number of the
 * record is a scalar at its "step": "val_X" as val/X, "eval_X" as eval/X, others as train/X,
 * the numbers of nested objects under their paths (train/recurrent/...). */
void metrics_log(Metrics *m, json_t *obj);
void metrics_close(Metrics *m);

/* One-line progress: on a terminal rewritten in place, otherwise printed as a line. */
void progress_print(Metrics *m, const char *line);
/* Prints a line of text, ending a pending progress line first. */
void progress_message(Metrics *m, const char *fmt, ...);

/* RUN_DIR/loss.svg (train and validation loss), RUN_DIR/lr.svg and, when metrics.jsonl
 * holds val_accuracy (classification runs), RUN_DIR/accuracy.svg from metrics.jsonl. */
void plots_write(const char *run_dir);

#endif
