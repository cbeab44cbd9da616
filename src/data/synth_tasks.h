/* Synthetic tasks (docs/evaluation.md part B): deterministic generators of (tokens, labels)
 * sequences with the loss on marked positions only (label -100 elsewhere). Every example is a pure
 * function of (seed, stream, index), so train and test data come from disjoint streams
 * and any example can be regenerated. */
#ifndef ROTOR_SYNTH_TASKS_H
#define ROTOR_SYNTH_TASKS_H

#include <stdint.h>

#include "util/rng.h"

/* The random stream of example i of the training (stream 0), test (1) or validation (2:
 * ListOps, whose validation split is not its test split) split of a task run with `seed`:
 * the splits never share a stream. */
enum { STREAM_TRAIN = 0, STREAM_TEST = 1, STREAM_VAL = 2 };
void task_example_rng(Rng *r, uint64_t seed, int stream, int64_t i);

/* ---- MQAR (Zoology multiquery_ar, num_passes = 1) ----
 * Keys from [1, V/2), values from [V/2, V); D distinct keys and D distinct values; context
 * k1 v1 ... kD vD; D query offsets g in [0, (L - 2D)/2) drawn without replacement with
 * P(g) proportional to (g + 1)^(a - 1); key k_j written at position 2D + 2 g_j with label
 * v_j; the other slots 0, or uniform random tokens in [0, V) when random_non_queries. */
typedef struct {
    int vocab, seq_len, num_kv_pairs;
    double power_a;
    int random_non_queries;
} MqarSpec;
/* Checks the spec (even length, 4D <= L, V > L); NULL or a message naming the key. */
const char *mqar_check(const MqarSpec *s);
void mqar_example(const MqarSpec *s, Rng *r, int32_t *tokens, int32_t *labels);

/* ---- state tracking: word problems over a finite group ----
 * A sequence of len tokens is BOS (token id = group order, unlabeled) followed by len - 1
 * group elements drawn uniformly; the label at position t >= 1 is the running product
 * x_1 x_2 ... x_t (accumulator starting at the identity, multiplied on the right), predicted
 * from the same position (tagging, as in the selective-rope and DeltaProduct setups, whose
 * tokenizer also prepends BOS: it gives the rotation a fixed reference).
 * Elements are permutations of {0..n-1} in lexicographic order (the alternating groups:
 * the even ones, in that order), so the identity is element 0; the product a.b is the
 * composition (a.b)(i) = a(b(i)). */
typedef struct {
    char name[8]; /* "S2", "A3", "S3", "A5", "S5" */
    int n;        /* permutations of n points */
    int order;    /* number of elements */
    int *mul;     /* [order * order]: index of a.b */
} Group;
/* NULL or a message when the name is unknown. */
const char *group_make(Group *g, const char *name);
void group_free(Group *g);
void state_example(const Group *g, Rng *r, int len, int32_t *tokens, int32_t *labels);

/* ---- copying (Jelassi et al. 2024) ----
 * Letters are tokens 0..25, then BOS '$' = 26, copy '|' = 27, EOS '.' = 28, pad '*' = 29.
 * An example is "$ s | s ." with |s| uniform in [min_len, max_len]; the loss is on the
 * copied s and the '.'. Training sequences pack examples into the context (the last one
 * cut off, unlabeled); an evaluation sequence holds one example of a given length followed
 * by padding. */
enum {
    COPY_LETTERS = 26,
    COPY_BOS = 26,
    COPY_SEP = 27,
    COPY_EOS = 28,
    COPY_PAD = 29,
    COPY_VOCAB = 30
};
void copy_train_sequence(Rng *r, int min_len, int max_len, int seq_len, int32_t *tokens,
                         int32_t *labels);
/* Needs seq_len >= 2 len + 3. */
void copy_eval_sequence(Rng *r, int len, int seq_len, int32_t *tokens, int32_t *labels);

/* ---- copy memory (nnRNN's copytask.py: Arjovsky et al.'s copying memory problem) ----
 * Tokens are nnRNN's input values: blank 0, symbols 1..symbols (nnRNN: up to 8), marker 9. A
 * row of delay + 2 length tokens holds `length` symbols drawn uniformly, delay - 1 blanks, the
 * marker, `length` blanks. Every position is scored at the same position (tagging): blank for
 * the first delay + length, then the symbols in order. Outputs are 0..8 (nnRNN's 9 classes). */
enum { COPYMEM_BLANK = 0, COPYMEM_MARKER = 9, COPYMEM_MAX_SYMBOLS = 8, COPYMEM_INPUTS = 10 };
typedef struct {
    int delay, length, symbols;
} CopyMemSpec;
/* NULL or a message naming the key. */
const char *copy_memory_check(const CopyMemSpec *s);
/* Tokens in a row: delay + 2 length. */
int copy_memory_row(const CopyMemSpec *s);
void copy_memory_example(const CopyMemSpec *s, Rng *r, int32_t *tokens, int32_t *labels);
/* The mean loss per position of predicting blank until the marker's copy starts and then
 * each symbol with probability 1/symbols: length ln(symbols) / (delay + 2 length) (nnRNN's
 * 10 log 8 / (T + 20)). */
double copy_memory_baseline(const CopyMemSpec *s);

#endif
