/* Everything a run is configured with: the [model] [pe] [train] [data] [run] [task] sections
 * of the INI config (docs/formats.md "Configs"), parsed and validated by src/config/run_config.c.
 */
#ifndef ROTOR_CONFIG_CONFIG_H
#define ROTOR_CONFIG_CONFIG_H

#include <stdint.h>

#include "model/model_config.h"

/* Learning-rate decay after the warmup (train/schedule.h); wsd: warmup, stable, decay. */
typedef enum { SCHEDULE_COSINE, SCHEDULE_LINEAR, SCHEDULE_CONSTANT, SCHEDULE_WSD } Schedule;

/* The shape of wsd's decay (train/schedule.h). */
typedef enum { DECAY_LINEAR, DECAY_COSINE, DECAY_1_SQRT } DecayShape;

/* The validation metric whose best value so far the trainer keeps a checkpoint of
 * (RUN_DIR/checkpoints/best; docs/classification.md "Best validation checkpoint"). */
typedef enum { KEEP_BEST_NONE, KEEP_BEST_VAL_LOSS, KEEP_BEST_VAL_ACCURACY } KeepBest;

/* What sums the gradients of the data-parallel ranks (dist/grad_comm.h): the backend's own
 * collectives where a launcher started the run (auto), always (backend), or MPI on host
 * memory, the backend's buffers copied through it (mpi: several ranks on one GPU). */
typedef enum { COLLECTIVES_AUTO, COLLECTIVES_BACKEND, COLLECTIVES_MPI } Collectives;

/* The update rule (train/optimizer.h, docs/models.md §training-recipe). */
typedef enum { OPTIMIZER_ADAMW, OPTIMIZER_RMSPROP } OptimizerKind;

typedef struct {
    int seq_len;     /* T: inputs per row; a window holds T+1 tokens */
    int micro_batch; /* rows per forward/backward */
    int grad_accum;  /* micro-batches per optimizer step */
    int64_t steps;   /* optimizer steps */
    double lr;       /* peak learning rate */
    double lr_start; /* warmup starts here (docs/models.md §training-recipe: 1e-5) */
    double lr_min;   /* cosine or linear decay ends here (docs/models.md §training-recipe: 1e-4) */
    double warmup_frac; /* fraction of steps of linear warmup (0.1) */
    Schedule schedule;  /* decay after the warmup (docs/models.md §training-recipe: cosine) */
    /* wsd: the decay over the last decay_frac of the steps, or from step decay_start (> 0),
     * in decay_shape; decay_from: the stable-phase checkpoint a decay run branches from (its
     * weights, optimizer state, step and data position), whose step is then the decay_start
     * unless that is set */
    double decay_frac;
    DecayShape decay_shape;
    int64_t decay_start;
    char decay_from[1024];
    /* the model a new run takes its first weights from (train/init_from.h), "" for none */
    char init_from[1024];
    /* zero-shot scores during training (eval/train_eval.c): train.eval_tasks (comma-separated
     * names of `rotor eval --tasks`) every eval_every steps, the first eval_limit documents
     * of each (0: all) of the task files in eval_data_dir */
    char eval_tasks[256];
    int64_t eval_every, eval_limit;
    char eval_data_dir[1024];
    double plateau_factor;   /* > 0: the learning rates are multiplied by it at every validation
                                whose loss is not the best so far (nnRNN's StepLR); 0 = off */
    OptimizerKind optimizer; /* adamw (docs/models.md §training-recipe) or rmsprop */
    double weight_decay;     /* 0.1: decoupled for AdamW, added to the gradient for RMSprop */
    /* the recurrent parameters' group (ParamInfo.recurrent): peak learning rate (0: lr; it
     * follows the same schedule, scaled by lr_recurrent / lr) and weight decay */
    double lr_recurrent, weight_decay_recurrent;
    /* the orthogonal parameters' group (ParamInfo.orthogonal: the skew-symmetric generators
     * of nnRNN's and expRNN's orthogonal matrices), the same way */
    double lr_orthogonal, weight_decay_orthogonal;
    /* the nnRNN's penalties (docs/models.md §nonlinear-rnns): delta (the authors' alam) on
     * sum (1 - gamma)^2, and the L2 decay of T (Tdecay) */
    double gamma_penalty, t_decay;
    double beta1, beta2, adam_eps;
    double rmsprop_alpha, rmsprop_eps; /* torch.optim.RMSprop's alpha and eps */
    double grad_clip;                  /* global norm, 1.0; 0 disables */
    uint64_t seed;                     /* initialisation and data order */
    int64_t val_every;                 /* steps between validations, 0 = never */
    int val_batches;                   /* micro-batches of every rank in the fixed validation set */
    int64_t val_tokens;       /* > 0: the validation set's tokens, whatever the ranks (trainer.c) */
    int64_t log_every;        /* steps between metric lines */
    int64_t checkpoint_every; /* steps between checkpoints, 0 = only at the end */
    int keep_checkpoints;     /* newest checkpoints kept, 0 = all */
    int async_checkpoint; /* checkpoints written by a thread from a host copy while training goes on
                             (train/checkpoint_writer.h) */
    KeepBest keep_best;   /* checkpoints/best follows this metric (classification runs: val_accuracy
                             by default) */
    int max_bad_steps;    /* consecutive non-finite steps before aborting */
    int zero;             /* ZeRO-1: optimizer state sharded across data-parallel ranks */
    /* truncated BPTT with the recurrent state carried across windows (docs/models.md
     * §carried-states): batch rows are streams of the text, each window continuing its row's last
     * one */
    int carry_state;
    Recompute recompute; /* what the backward recomputes (model/model_config.h) */
} TrainConfig;

/* data.on_exhausted: what a source that has served all its windows does */
typedef enum { DATA_EXHAUSTED_RESTART, DATA_EXHAUSTED_STOP } DataExhausted;

typedef struct {
    char train[8192]; /* shard directory or glob (*.h5), a mixture of them (data/mixture_spec.h), or
                         synthetic:<task> */
    char val[8192];   /* the same, or empty: windows held out from train */
    char tokenizer[1024]; /* optional: the shards must carry this model's sha256 */
    int prefetch;         /* micro-batches the loader thread reads ahead */
    char stages[4096];    /* data.stages: the mixture's weights from given steps on */
    DataExhausted on_exhausted;
} DataConfig;

typedef struct {
    char dir[1024];            /* run directory: metrics.jsonl, checkpoints/, plots */
    char device[16];           /* "cpu", "cuda" or "auto" (device/device.h) */
    int threads;               /* OpenMP threads per rank, 0 = all cores */
    double collective_timeout; /* seconds in one collective before the job is ended */
    double bucket_mb;          /* MiB of gradients per all-reduce started during the backward */
    Collectives collectives;   /* what sums the gradients */
    int tensorboard;           /* TensorBoard event files in dir/tensorboard beside metrics.jsonl */
    char profile_steps[32];    /* "A:B": the steps whose op timings go to dir/profile
                                  (train/step_profile.h) */
} RunSection;

/* A task of `rotor synth` (docs/evaluation.md part B), synthetic or classification
 * (data/image_task.h, data/class_task.h, docs/classification.md): data.train = task trains on it.
 */
typedef struct {
    char type[32];          /* "none", "mqar", "state", "copy", "copy_memory", "mad_*", "seq_image",
                               "pathfinder", "listops", "text_bytes", "aan", "speech_commands", "chars" (the
                               shorthands parity, a3, ... become state) */
    int vocab;              /* mqar, mad: vocabulary V (mqar: keys [1, V/2), values [V/2, V)) */
    int num_kv_pairs;       /* mqar: D */
    double power_a;         /* mqar: query gaps ~ (g+1)^(a-1) */
    int random_non_queries; /* mqar: random tokens instead of 0 between the queries */
    char group[8];          /* state: S2, A3, S3, A5, S5 */
    int test_len;           /* state: test sequence length (the train length is train.seq_len) */
    int min_len, max_len;   /* copy: string lengths of the training examples */
    char eval_lengths[256]; /* copy: comma-separated string lengths evaluated */
    int seq_len;            /* mad: mad-lab's seq_len (train.seq_len follows it) */
    int noise_vocab_size;   /* mad: noise tokens */
    double frac_noise;      /* mad: fraction of noise */
    int k_motif_size, v_motif_size;  /* mad fuzzy recall: largest key and value motifs */
    int multi_query;                 /* mad recall tasks: every repeated key is a query */
    int num_tokens_to_copy;          /* mad selective copying */
    int delay, copy_length, symbols; /* copy_memory: nnRNN's T, c_length and labels */
    char text_format[8];             /* chars: "raw" (UTF-8 characters) or "ptb" (nnRNN's Corpus:
                                        whitespace-separated symbols, <eos> per line) */
    double valid_fraction, test_fraction; /* chars: the cut of a single file's symbols */
    int eval_streams;        /* chars with train.carry_state: streams of the valid and test texts */
    int max_depth, max_args; /* listops: LRA's generator limits */
    int min_length, max_length; /* listops: expressions have more than min_length and fewer than
                                   max_length tokens */
    int classes;                /* text_bytes: labels 0..classes-1 */
    char path[1024]; /* listops, text_bytes, aan, pathfinder, speech_commands: the directory of the
                        files read (listops: instead of generating); chars: the text file or
                        directory */
    char difficulty[16];    /* pathfinder: LRA's easy, intermediate or hard */
    int64_t train_examples; /* distinct training examples cycled through (0 = fresh ones forever) */
    int test_examples;      /* test examples (per length for copy) */
    char images[1024]; /* seq_image: training images, an IDX file or a CIFAR-10 binary directory */
    char labels[1024]; /* seq_image: the IDX labels of images */
    char test_images[1024]; /* seq_image: the test split's IDX files (empty: derived from images,
                               labels) */
    char test_labels[1024];
    int permute;           /* seq_image: pixels in a fixed random order */
    uint64_t permute_seed; /* seq_image: the seed of that order */
    int64_t
        val_examples;  /* seq_image: the last ones of the training file, held out (0 = a tenth) */
    char words[4];     /* speech_commands: "35" (every word) or "10" (the ten commands) */
    int sample_stride; /* speech_commands: every sample_stride-th sample is read (1: 16 kHz, 2: 8
                          kHz) */
    int64_t max_examples; /* speech_commands: clips read per split, a fixed sample (0 = all) */
} TaskConfig;

typedef struct {
    ModelConfig model;
    TrainConfig train;
    DataConfig data;
    RunSection run;
    TaskConfig task;
} RunConfig;

#endif
