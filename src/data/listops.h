/* Long Range Arena's ListOps (Tay et al. 2021), restated in C from google-research/
 * long-range-arena: the generator of lra_benchmarks/data/listops.py and the tokens of
 * lra_benchmarks/listops/input_pipeline.py. docs/classification.md ("ListOps and text") has
 * the semantics and every deviation.
 *
 * An expression is a tree: a node at depth d < max_depth (the root has depth 1) is, with
 * probability 1/4, an operator drawn from MIN MAX MED SM over 2..max_args arguments (each a
 * node at depth d + 1), otherwise a digit 0-9; nodes at max_depth are digits. Its tokens are
 * prefix order with a closing "]": "[MAX 2 [SM 3 4 ] 9 ]". Its value is the operator applied
 * to its arguments' values: MIN, MAX, MED the median (the mean of the two middle values
 * rounded down for an even count, LRA's int(np.median)), SM the sum modulo 10. Only
 * expressions of more than min_length and fewer than max_length tokens are kept.
 *
 * LRA's TSV files ("Source\tTarget") write an expression with parentheses around every
 * partial application, "( ( ( [MAX 2 ) ( ... ) ) 9 ) ] )"; its input pipeline drops them, so
 * the tokens of a TSV line are those of the tree. */
#ifndef ROTOR_LISTOPS_H
#define ROTOR_LISTOPS_H

#include <stddef.h>
#include <stdint.h>

#include "data/class_set.h"

/* Token ids. 0 is padding (LRA's encoder reserves it too); digit v is LISTOPS_DIGIT0 + v. */
enum {
    LISTOPS_DIGIT0 = 1,
    LISTOPS_MIN = 11,
    LISTOPS_MAX = 12,
    LISTOPS_MED = 13,
    LISTOPS_SM = 14,
    LISTOPS_END = 15, /* "]" */
    LISTOPS_VOCAB = 16,
    LISTOPS_CLASSES = 10 /* the value of an expression */
};

/* The generator's limits (LRA's flags of the same names; defaults 10, 10, 500, 2000). */
typedef struct {
    int max_depth;  /* the root is depth 1; nodes at max_depth are digits */
    int max_args;   /* an operator takes 2..max_args arguments */
    int min_length; /* kept: min_length < tokens < max_length */
    int max_length;
} ListopsSpec;

/* NULL, or a message naming the task key at fault: limits out of range, or among 100000
 * expressions drawn none of an admissible length in one of the three splits (the generator
 * would spin). */
const char *listops_check(const ListopsSpec *s);

/* Example i of a stream of task_example_rng (STREAM_TRAIN, STREAM_TEST or STREAM_VAL): the
 * first expression of the example's random stream whose length is admissible and which
 * belongs to the stream's split. Every expression belongs to exactly one split (a hash of its
 * tokens: 3/4 train, 1/8 validation, 1/8 test), so the splits never share an expression.
 * Writes its tokens to tok[max_length - 1], returns their count; *value = its value. */
int listops_example(const ListopsSpec *s, uint64_t seed, int stream, int64_t i, uint8_t *tok,
                    int *value);

/* The value of tok[0..n) (token ids), or -1 when the tokens are not exactly one well-formed
 * expression (an operator with at least one argument, then "]"; a digit alone is one). */
int listops_eval(const uint8_t *tok, int n);

/* The tokens of an expression in LRA's text form (whitespace-separated "[MIN" "[MAX" "[MED"
 * "[SM" "]" and digits; "(" and ")" are dropped, as LRA's pipeline drops them) into
 * tok[cap]. Returns the count, or -1 with a message naming the unknown token. */
int listops_tokenize(const char *text, uint8_t *tok, int cap, char *err, size_t errlen);

/* Reads one of LRA's files (basic_train.tsv, basic_val.tsv, basic_test.tsv): a header
 * "Source\tTarget", then one expression and its value per line. Appends each example to
 * `set`, its tokens cut to the first `keep`. Every value is checked against listops_eval.
 * Returns 0, or -1 with a message naming the file and line. */
int listops_read_tsv(const char *path, int keep, ClassSet *set, char *err, size_t errlen);

#endif
