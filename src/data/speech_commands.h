/* Google's Speech Commands (Warden 2018) as raw waveforms, the classification task of S4, S5,
 * the LRU and RotRNN (task.type = speech_commands; docs/classification.md "Speech Commands").
 *
 * The directory is the dataset as released (speech_commands_v0.02): one directory per word,
 * each of 16 kHz mono 16-bit PCM WAV files of at most one second (read through libsndfile),
 * and two lists, validation_list.txt and testing_list.txt, whose lines name the validation and
 * test files as word/file.wav. The training split is every other file of the chosen words.
 * Directories of other words, and _background_noise_, are never read.
 *
 * The words are S4's (src/dataloaders/datasets/sc.py): "35" all of them, in its ALL_CLASSES
 * order, which gives the class ids; "10" the ten commands (SUBSET_CLASSES: yes no up down left
 * right on off stop go). A clip shorter than a second is padded with zeros at its end to
 * 16000 samples, as S4's F.pad does. */
#ifndef ROTOR_SPEECH_COMMANDS_H
#define ROTOR_SPEECH_COMMANDS_H

#include <stddef.h>
#include <stdint.h>

#include "data/datasource.h"

#define SPEECH_RATE 16000    /* Hz: every file's */
#define SPEECH_SAMPLES 16000 /* one second: every clip, padded */

/* Clips in memory. */
typedef struct {
    int64_t n;
    int16_t *samples; /* [n][SPEECH_SAMPLES] */
    uint8_t *labels;  /* [n] class ids */
} SpeechSet;

/* The words of task.words ("35" or "10") in class-id order, in *list; returns their count, or
 * 0 when words names no set. */
int speech_words(const char *words, const char *const **list);

/* The clips of one split of the dataset in dir. max_examples > 0 keeps that many of them, the
 * first of a fixed shuffle of the split (the same in every run); the clips are stored in that
 * shuffled order (0: all, likewise shuffled). Returns 0, or -1 with a message naming the
 * directory, list line or file at fault: a missing word directory or list, a list line naming
 * no file, a file in both lists, a file that is not 16 kHz mono 16-bit PCM or is longer than a
 * second, empty or unreadable. */
int speech_load(const char *dir, const char *words, DataSplit split, int64_t max_examples,
                SpeechSet *set, char *err, size_t errlen);
void speech_set_free(SpeechSet *s);

#endif
