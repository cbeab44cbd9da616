/* The sequence classification tasks of Long Range Arena (task.type = listops, text_bytes, aan;
 * docs/classification.md "ListOps and text", "AAN retrieval"): a split is a set of examples,
 * example i a row of train.seq_len tokens in class_row's convention (data/class_set.h), its
 * class at the last real token. An aan example is a pair of documents, two rows: rows 2i and
 * 2i + 1 are pair i's first and second document, each labeled with the pair's class (the
 * pair classifier, model.pair, reads them together: docs/models.md §classification).
 *
 * ListOps is generated (data/listops.h) unless task.path names a directory of LRA's files;
 * text_bytes is always read (data/text_bytes.h). The files of task.path, split by split:
 *   listops     basic_train.tsv, basic_val.tsv, basic_test.tsv
 *   text_bytes  the aclImdb layout: train/ trains, test/ validates and tests (LRA validates on
 *               IMDB's test set, it has no other); or train.tsv, val.tsv (test.tsv when there
 *               is none), test.tsv
 *   aan         new_aan_pairs.train.tsv, new_aan_pairs.eval.tsv, new_aan_pairs.test.tsv
 * Row order: a generated split's row i is ListOps example i of the split's stream; a split
 * read from files is shuffled, the training set anew (from train.seed) on every pass over
 * it, the validation and test sets once in an order fixed for every run (aan: the pairs are
 * shuffled, each keeping its two rows together). */
#ifndef ROTOR_CLASS_TASK_H
#define ROTOR_CLASS_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "data/datasource.h"

typedef struct ClassTask ClassTask;

/* The classification tasks read here: ListOps (generated, or LRA's files), byte-level text
 * (IMDB or TSV files) and AAN document pairs. */
typedef enum { CLASS_LISTOPS, CLASS_TEXT_BYTES, CLASS_AAN } ClassKind;

/* Split opt->split of the task, rows of opt->seq_len tokens, shuffled from opt->seed. NULL
 * with a message naming the key, file or line at fault. */
ClassTask *class_task_open(const TaskConfig *task, ClassKind kind, const DataOptions *opt,
                           char *err, size_t errlen);
void class_task_free(ClassTask *c);

/* Rows in the split (aan: two per pair): a read one's count, 0 for a generated stream (no end). */
int64_t class_task_size(const ClassTask *c);
int class_task_vocab(const ClassTask *c);   /* tokens ids are below this */
int class_task_classes(const ClassTask *c); /* labels are below this */

/* Row i (any i >= 0: a read split starts over after its last example). */
void class_task_row(ClassTask *c, int64_t i, int32_t *tokens, int32_t *labels);

#endif
