/* What the commands over a checkpoint (`rotor eval`, `rotor generate`, `rotor serve`) share:
 * loading a checkpoint's model and tokenizer with the checks that they fit each other. Every
 * failure dies with a message naming the option, file or value at fault. */
#ifndef ROTOR_CMD_COMMON_H
#define ROTOR_CMD_COMMON_H

#include "model/model.h"
#include "tokenizer.h"
#include "util/error.h"
#include "util/options.h"

/* The model of checkpoint directory ckpt (config.json, model.safetensors), or of a run
 * directory's latest intact checkpoint (checkpoint_find_latest, as --resume auto takes it;
 * said on stderr), on the backend `device` (cpu, cuda or auto; errors name --device); *dir
 * (malloc'd) is the checkpoint directory. Dies when ckpt is neither, or, with verify, when a
 * file of it differs from the checksum recorded when it was written (the message names the
 * file and --no-verify). */
Model *cmd_load_model(const char *ckpt, const char *device, int verify, char **dir);
/* The tokenizer at `path`, or, when path is NULL, the one the checkpoint's run trained with
 * (checkpoint_find_tokenizer: its copy in the checkpoint, or the file it records). Dies when
 * there is none (naming --tokenizer), when it has more pieces than the model's vocabulary or,
 * with add_bos, when its BOS id is not the model's. */
Tokenizer *cmd_load_tokenizer(const char *ckpt, const char *path, const ModelConfig *mc,
                              int add_bos);

/* ids decoded to text (malloc'd); dies on an id the tokenizer does not have. */
char *cmd_decode(const Tokenizer *tok, const int32_t *ids, int n);
/* The text a completion adds to its prompt: decode(prompt + completion) past decode(prompt)
 * (prompt_text). Decoding the completion alone would lose the space that SentencePiece drops
 * at the start of a text; it is the answer only if the prompt's text is unexpectedly not a
 * prefix. seq holds the n_prompt prompt tokens, then the n of the completion. Malloc'd. */
char *cmd_completion_text(const Tokenizer *tok, const int32_t *seq, int n_prompt, int n,
                          const char *prompt_text);

#endif
