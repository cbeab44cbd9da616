/* Long Range Arena's byte-level text classification ("Text": IMDB reviews, restated from
 * google-research/long-range-arena lra_benchmarks/text_classification/input_pipeline.py with
 * its char tokenizer): a review is the sequence of its bytes, byte b the token b + 1 (tfds's
 * ByteTextEncoder, which keeps id 0 for padding), so the vocabulary has 257 tokens. A review
 * longer than the row keeps its first bytes (LRA's [:max_length]). The readers keep the
 * bytes themselves in a ClassSet; data/class_task.c adds the 1. */
#ifndef ROTOR_TEXT_BYTES_H
#define ROTOR_TEXT_BYTES_H

#include <stddef.h>

#include "data/class_set.h"

enum { TEXT_BYTES_VOCAB = 257 };

/* The aclImdb directory as Stanford distributes it (aclImdb_v1.tar.gz): the *.txt files of
 * DIR/SPLIT/neg (label 0) and DIR/SPLIT/pos (label 1), SPLIT "train" or "test", neg then pos,
 * each in file-name order; a review is its file with ASCII whitespace stripped from both ends
 * (tfds's imdb_reviews). Appends them to `set`, keeping each one's first `keep` bytes. Returns
 * 0, or -1 with a message naming the directory or file. */
int text_bytes_read_imdb(const char *dir, const char *split, int keep, ClassSet *set, char *err,
                         size_t errlen);

/* A TSV file of "label<TAB>text" lines: label a class 0..classes-1, the text every byte after
 * the first tab (so it holds no newline). A first line "label<TAB>text" is a header. Returns
 * 0, or -1 with a message naming the file and line. */
int text_bytes_read_tsv(const char *path, int classes, int keep, ClassSet *set, char *err,
                        size_t errlen);

/* LRA's AAN retrieval pairs (new_aan_pairs.{train,eval,test}.tsv, read as
 * lra_benchmarks/matching/input_pipeline.py reads them): no header, five tab-separated fields
 * per line, label id1 id2 text1 text2, no quoting. The label is a number (LRA reads it as a
 * float, then an integer) that must be a class 0..classes-1; the texts must not be empty.
 * Appends two examples per line, text1 then text2, both with the line's label, each its first
 * min(keep, 10000) bytes (LRA encodes at most 10000 bytes, then cuts to max_length). Returns 0,
 * or -1 with a message naming the file and line. */
int text_bytes_read_aan(const char *path, int classes, int keep, ClassSet *set, char *err,
                        size_t errlen);

#endif
