/* The host copy a checkpoint is written from (train/checkpoint_writer.h): everything the files
 * of one step hold, taken on the trainer's thread at the end of the step, so that the files
 * can be written while the next steps change the weights and the optimizer state.
 *
 * Memory: the staging buffers are allocated by the first snapshot, sized for the run, and
 * reused by every later one (the asynchronous writer keeps them for the run, the synchronous
 * one frees them after each save). They are a host copy of the checkpointed tensors: on rank 0 the
 * fp32 master weights and, unsharded, every optimizer state buffer, (1 + states) x 4 bytes
 * per parameter (AdamW: 12 bytes, 4.4 GiB for 370M parameters); with ZeRO-1 every rank holds
 * its slice of the states (rank 0 the weights as well); and the carried states of
 * train.carry_state. On a GPU they are page-locked (Backend.host_alloc), which the device
 * copies into fastest. */
#ifndef ROTOR_CHECKPOINT_SNAPSHOT_H
#define ROTOR_CHECKPOINT_SNAPSHOT_H

#include <stdint.h>

#include "model/model.h"
#include "train/checkpoint.h"
#include "train/optimizer.h"

/* One staging buffer and the allocator it came from. */
typedef struct {
    float *p;
    int64_t n;
    const Backend *pinned; /* host_alloc'd by this backend; NULL: rt_malloc'd */
} Staging;

/* What a checkpoint is taken from: the trainer's state and its model and optimizer. */
typedef struct {
    const TrainerState *state; /* data_state and carry are copied */
    Model *model;
    const Optimizer *opt;
} CheckpointFrom;

struct CheckpointSnapshot {   /* typedef'd in train/checkpoint.h */
    TrainerState st;          /* data_state: a deep copy, owned; carry: the staging's */
    ModelConfig model;        /* for config.json */
    const ParamTable *params; /* the model's, unchanged through a run */
    const OptimizerSpec *spec;
    int64_t opt_step; /* the optimizer's t */
    int64_t lo, hi;   /* the optimizer's range of the flat parameters */
    int sharded;      /* ZeRO-1: every rank writes its slice of the state */
    /* the staging, filled on the ranks that write them: weights [total] (rank 0); state[k]
     * [total] (rank 0, unsharded) or [hi - lo] (every rank, sharded); carry (rank 0) */
    Staging weights, state[OPT_MAX_STATE], carry;
};

/* Copies everything the checkpoint of from->state->step needs into s (zeroed before its first
 * use), allocating the staging buffers the first time. Every rank calls it. */
void checkpoint_snapshot_take(CheckpointSnapshot *s, const CheckpointFrom *from);
/* Releases what one snapshot owns (its data state); the staging stays for the next. */
void checkpoint_snapshot_clear(CheckpointSnapshot *s);
/* Releases everything, the staging too; s can take snapshots again. */
void checkpoint_snapshot_free(CheckpointSnapshot *s);

#endif
