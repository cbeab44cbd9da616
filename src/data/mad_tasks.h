/* The six MAD tasks (Poli et al. 2024, mad-lab's mad/data/instances.py), restated in C:
 * in-context recall, noisy in-context recall (the same generator with noise), fuzzy
 * in-context recall, selective copying, compression and memorization. An example is a row
 * of mad_row_len tokens with a label per position (-100: not scored), drawn from the
 * stream of (seed, split, index) as the other tasks (synth_tasks.h).
 *
 * Train and test rows differ where mad-lab's differ: the recall tasks train on every next
 * token (mad-lab returns inputs[1:] as targets when is_training) and test only on the
 * recalled values; fuzzy recall trains with keys of 1..k_motif_size tokens and tests with
 * keys of k_motif_size tokens. The other three label the same positions in both splits.
 * Row layouts, vocabularies and the compression shape: docs/synthetic.md (MAD). */
#ifndef ROTOR_MAD_TASKS_H
#define ROTOR_MAD_TASKS_H

#include <stdint.h>

#include "config/config.h"
#include "util/rng.h"

typedef enum {
    MAD_RECALL,         /* mad_in_context_recall */
    MAD_NOISY_RECALL,   /* mad_noisy_in_context_recall */
    MAD_FUZZY_RECALL,   /* mad_fuzzy_in_context_recall */
    MAD_SELECTIVE_COPY, /* mad_selective_copying */
    MAD_COMPRESSION,    /* mad_compression */
    MAD_MEMORIZATION,   /* mad_memorization */
} MadTask;

/* mad-lab's task keys (MADConfig names). */
typedef struct {
    MadTask task;
    int vocab;              /* vocab_size */
    int seq_len;            /* seq_len */
    int noise_vocab;        /* noise_vocab_size: the top of the non-special vocabulary */
    double frac_noise;      /* frac_noise */
    int k_motif, v_motif;   /* fuzzy recall: k_motif_size, v_motif_size */
    int multi_query;        /* recall tasks: every repeated key is a query */
    int num_tokens_to_copy; /* selective copying */
    int32_t *table;         /* memorization: the value of each key, fixed for the run */
} MadSpec;

/* 1 for compression, which mad-lab trains with its auto-encoder (model.head =
 * autoencoder: labels are the targets of the decoded positions), else 0 (the LM head). Rows
 * have task.seq_len tokens of the task.vocab vocabulary either way. */
int mad_autoencoder(MadTask t);

/* Fills s from the [task] keys and checks it; memorization draws its key-value table from
 * `seed` (the same for every example of both splits). NULL, or a message naming the key. */
const char *mad_spec_make(MadSpec *s, MadTask t, const TaskConfig *c, uint64_t seed);
void mad_spec_free(MadSpec *s);

/* Example of the train (test = 0) or test split: mad_row_len tokens and labels. */
void mad_example(const MadSpec *s, Rng *r, int test, int32_t *tokens, int32_t *labels);

#endif
