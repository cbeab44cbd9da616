/* task.type = chars: character-level language modelling on text files (nnRNN's Penn Treebank
 * characters, or any UTF-8 text; docs/nnrnn.md). The text becomes a stream of symbols over a
 * vocabulary of the symbols that occur, numbered in order of first appearance in the train,
 * then valid, then test text (nnRNN's Dictionary):
 *   task.text_format = raw  every UTF-8 character is a symbol, newlines included;
 *   task.text_format = ptb  nnRNN's Corpus: each line's whitespace-separated symbols, then
 *                           "<eos>" (PTB's character files spell a word's letters apart
 *                           and mark word ends with "_").
 * task.path is a directory with train.txt, valid.txt and test.txt (nnRNN's data/pennchar) or
 * ptb.char.train.txt, ptb.char.valid.txt and ptb.char.test.txt (PTB's names), or one file whose
 * symbols are cut into train, valid and test: the last task.test_fraction of them test, the
 * task.valid_fraction before those valid.
 *
 * Rows of T = train.seq_len inputs predict the next symbol at every position. train: the
 * floor((n - 1) / T) windows of T + 1 symbols (overlapping by one) in a new order every pass,
 * a function of the run seed and the pass; valid and test: their windows in text order, the
 * last one padded (token 0, label -100), so every symbol after the first is a label exactly
 * once per pass. */
#ifndef ROTOR_CHAR_TEXT_H
#define ROTOR_CHAR_TEXT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "data/datasource.h"

typedef struct CharText CharText;

/* Reads and tokenises the three splits. NULL with a message naming the key, file and byte
 * offset at fault (invalid UTF-8, a missing file, an empty split). */
CharText *char_text_open(const TaskConfig *task, char *err, size_t errlen);
void char_text_free(CharText *t);
int char_text_vocab_size(const CharText *t);
/* The symbols in id order as a JSON array of strings (a new reference). */
json_t *char_text_vocab_json(const CharText *t);
/* The split's symbols (SPLIT_VAL: the valid text). */
const int32_t *char_text_tokens(const CharText *t, DataSplit split, int64_t *n);
/* Rows in one pass over the split at row length T; 0 when the split is too short for one. */
int64_t char_text_rows(const CharText *t, DataSplit split, int T);
/* The row of the split's global index i >= 0 (wrapping into later passes); `seed` orders the
 * training windows. */
void char_text_row(const CharText *t, DataSplit split, int T, uint64_t seed, int64_t i,
                   int32_t *tokens, int32_t *labels);

/* Streams for truncated BPTT with carried states (train.carry_state, docs/models.md
 * §carried-states, nnRNN's batchify): the split's n symbols cut into S contiguous streams, stream j
 * predicting the symbols a_j + 1 .. a_{j+1} with a_j = floor(j (n - 1) / S) (so every symbol after
 * the first is a label of exactly one stream), read in windows of T. Row i of the layout is window
 * k = (i / S) mod W of stream j = i mod S, W = char_text_stream_windows: rows i .. i + S - 1 are
 * one batch of all streams, and a pass is W such batches, after which the streams restart.
 * Positions past a stream's end are padding (token 0, label -100). 0 windows when the split
 * has fewer than S + 1 symbols (a stream would be empty). */
int64_t char_text_stream_windows(const CharText *t, DataSplit split, int S, int T);
void char_text_stream_row(const CharText *t, DataSplit split, int S, int T, int64_t i,
                          int32_t *tokens, int32_t *labels);

#endif
