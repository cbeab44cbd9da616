/* train.init_from: a new run's first weights from an existing model (continued pretraining,
 * docs/models.md §starting-points), with a fresh optimizer, schedule and data order. The
 * source is
 *   - a rotor checkpoint (a directory with trainer_state.json: its files checked against
 *     their recorded sizes, and sha256s with `hashes`),
 *   - a rotor run directory (its checkpoints/: the latest intact checkpoint, as --resume
 *     auto finds it),
 *   - a Hugging Face / fla model directory: model.safetensors, or the shards its
 *     model.safetensors.index.json lists (config.json is not read: the run's [model] gives
 *     the shapes), or a .safetensors file itself.
 * Tensors may be F32, BF16, F16 or F64 (converted to the fp32 master weights). Every parameter
 * of the model must be there under its name with its shape and every tensor of the files must
 * be a parameter: errors name the tensor, its file and both shapes. */
#ifndef ROTOR_INIT_FROM_H
#define ROTOR_INIT_FROM_H

#include <stddef.h>

#include "model/model.h"

/* Loads the weights of `path` into m (nothing changes on error). *what gets a malloc'd
 * description of what was loaded ("the checkpoint DIR", "the 2 shards of DIR"). Returns 0,
 * or -1 with a message naming the file and the tensor. */
int init_from_load(const char *path, Model *m, int hashes, char **what, char *err, size_t errlen);

#endif
