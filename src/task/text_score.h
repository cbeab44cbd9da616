/* Scoring character-level text with carried states (train.carry_state, docs/models.md
 * §carried-states): the split read as S streams (data/char_text.h), each window of a stream
 * starting from the state its previous window left, as nnRNN evaluates its language task. The
 * trainer's validation (each rank a share of the streams) and `rotor synth`'s scores of the valid
 * and test texts both count with it. */
#ifndef ROTOR_TEXT_SCORE_H
#define ROTOR_TEXT_SCORE_H

#include <stdint.h>

#include "data/char_text.h"
#include "model/model.h"

typedef struct {
    double nll;            /* summed -log p(symbol) */
    int64_t labels, right; /* symbols scored, and those that were the first argmax */
} TextScore;

/* Adds to *sc the scores of streams [first, first + count) of the split's S streams in windows
 * of T, from zero states. Leaves the model without carried states (model_set_carry NULL). */
void text_score_streams(Model *m, const CharText *t, DataSplit split, int T, int S, int first,
                        int count, TextScore *sc);

#endif
