/* The training loop (docs/models.md §training-recipe): gradient accumulation over micro-batches,
 * loss averaged over every label of the optimizer step, global-norm clipping, AdamW or RMSprop with
 * the warmup + decay schedule of train.schedule, periodic validation (with accuracy for
 * classification runs), metrics, progress, atomic checkpoints, the best validation's
 * checkpoint (train.keep_best) and resumption.
 *
 * Data parallel under mpirun: every rank reads its own windows of each global micro-batch
 * (global batch = ranks x micro_batch x grad_accum rows); the gradients, computed with the
 * loss scaled by 1 / (labels of the whole global step), are summed over the ranks, so every
 * rank applies the same update as one process with ranks x grad_accum micro-batches. The
 * sums run in buckets started during the last backward of the step (train/grad_buckets.h).
 * With train.zero (ZeRO-1) each rank receives only the sums of its slice of the
 * parameters, updates that slice with its slice of the optimizer state, and the slices are
 * all-gathered. Only rank 0 prints, logs and writes the shared checkpoint files.
 *
 * With train.carry_state (docs/models.md §carried-states) every micro-batch slot of every rank
 * holds the recurrent states of its rows, which are streams of the text: each step's window starts
 * from the state the slot's previous window left (zeros at the start of a pass), the gradient
 * truncated there. The states of all streams are saved in every checkpoint.
 *
 * Checkpoints are written by train/checkpoint_writer.h: with train.async_checkpoint from a host
 * copy of the step while the next steps run, one in flight at a time; the run ends (and exits
 * 0) only once the last one is complete.
 *
 * SIGTERM, SIGINT and SIGUSR1 (SLURM pre-emption) finish the current step on every rank,
 * write a checkpoint and exit 0. */
#include "train/trainer.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config/run_config.h"
#include "cpu/parallel.h"
#include "data/char_text.h"
#include "data/datasource.h"
#include "data/mixture_spec.h"
#include "device/device.h"
#include "dist/dist.h"
#include "dist/grad_comm.h"
#include "train/checkpoint.h"
#include "train/checkpoint_writer.h"
#include "task/class_score.h"
#include "train/grad_buckets.h"
#include "train/init_from.h"
#include "train/step_profile.h"
#include "train/metrics.h"
#include "train/optimizer.h"
#include "train/run_dir.h"
#include "train/schedule.h"
#include "task/task.h"
#include "task/text_score.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/timer.h"

typedef struct {
    const RunConfig *rc;
    int rank, world;
    Model *model;
    Optimizer *opt;
    int64_t *ranges; /* ZeRO-1 slices of the flat parameters, [world + 1] */
    GradComm comm;   /* how gradients and weight slices travel between the ranks */
    GradBuckets buckets;
    DataSource *train, *val;
    json_t *val_start;   /* the validation source's initial position */
    int64_t val_windows; /* windows of the validation set, all ranks together */
    int classifies;      /* rows carry one class each: validation measures accuracy */
    int text_task; /* the task is character-level text: validations also log bits per character */
    BestValidation best; /* of train.keep_best, so far */
    Plateau plateau;     /* train.plateau_factor's learning-rate factor and best loss */
    int32_t *win;
    uint8_t *win_doc;
    int32_t **tok, **lab; /* one input and label buffer per micro-batch of a step */
    uint8_t **doc;
    Metrics metrics;
    CheckpointWriter *ckpt;
    /* train.carry_state: each micro-batch slot's carried states (a model_carry_bytes block of
     * micro_batch rows), whether the slot's rows of this step continue their streams, and the
     * text whose valid split the validations score */
    void **carry;
    size_t carry_bytes;
    uint8_t *continues;
    CharText *text;
    char data_end[1024];   /* why the data ran out (data.on_exhausted = stop) */
    const TrainEval *eval; /* train.eval_tasks' scorer and its tasks, or NULL */
    void *eval_ctx;
} Trainer;

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

/* The lines a data source left for the log: the training source's are printed. */
static void data_notices(Trainer *tr, DataSource *ds) {
    if (!ds->notice[0]) return;
    if (ds == tr->train && tr->rank == 0) progress_message(&tr->metrics, "%s", ds->notice);
    ds->notice[0] = 0;
}

/* Reads this rank's B windows into micro-batch slot `a`; returns its non-ignored labels, or
 * -1 when the data ran out (data.on_exhausted = stop), with the reason in tr->data_end. */
static int64_t next_batch(Trainer *tr, DataSource *ds, int a, Batch *b) {
    int B = tr->rc->train.micro_batch, T = tr->rc->train.seq_len;
    char err[1024];
    if (ds->next_labeled) {
        if (ds->next_labeled(ds, tr->tok[a], tr->lab[a], B, err, sizeof err)) rt_die("%s", err);
        b->doc_start = NULL;
    } else {
        int rc = ds->next(ds, tr->win, tr->win_doc, B, err, sizeof err);
        if (rc < 0) rt_die("%s", err);
        if (rc > 0) {
            snprintf(tr->data_end, sizeof tr->data_end, "%s", err);
            return -1;
        }
        data_notices(tr, ds);
        windows_to_batch(tr->win, tr->win_doc, B, T, tr->tok[a], tr->lab[a], tr->doc[a]);
        b->doc_start = tr->doc[a];
    }
    b->B = B;
    b->T = T;
    b->tokens = tr->tok[a];
    b->labels = tr->lab[a];
    int64_t valid = 0;
    for (int64_t i = 0; i < (int64_t)B * T; i++) valid += tr->lab[a][i] != -100;
    return valid;
}

typedef struct {
    double loss;     /* mean over the labels */
    double accuracy; /* classification runs: rows whose class is the argmax; else NAN */
} Validation;

/* train.carry_state: the whole valid text as task.eval_streams streams with carried states,
 * rank r scoring its share of them. */
static Validation validate_streams(Trainer *tr) {
    const RunConfig *rc = tr->rc;
    int S = rc->task.eval_streams, first = (int)((int64_t)S * tr->rank / tr->world);
    int last = (int)((int64_t)S * (tr->rank + 1) / tr->world);
    TextScore sc = {0, 0, 0};
    text_score_streams(tr->model, tr->text, SPLIT_VAL, rc->train.seq_len, S, first, last - first,
                       &sc);
    double sums[2] = {sc.nll, (double)sc.labels};
    dist_allreduce_sum_f64(sums, 2);
    return (Validation){sums[0] / (sums[1] > 0 ? sums[1] : 1), NAN};
}

/* The validation set's windows, all ranks together: train.val_tokens' ceil(val_tokens / T),
 * the same on any number of ranks, or val_batches micro-batches of every rank. */
static int64_t validation_windows(const RunConfig *rc, int world) {
    const TrainConfig *t = &rc->train;
    if (t->val_tokens > 0) return (t->val_tokens + t->seq_len - 1) / t->seq_len;
    return (int64_t)t->val_batches * t->micro_batch * world;
}

/* Rows of b that are validation windows (a prefix): the source serves rank r the windows
 * r*B .. r*B+B-1 of each global micro-batch of world*B (data/datasource.h), so the windows
 * 0 .. val_windows-1 are the ranks' first rows up to that index; the rows after it, in the
 * last global micro-batch, are dropped. Returns their labels' count. */
static int64_t keep_validation_rows(const Trainer *tr, int64_t k, Batch *b, int64_t valid) {
    int64_t first = (k * tr->world + tr->rank) * b->B;
    int64_t rows = tr->val_windows - first;
    if (rows >= b->B) return valid;
    b->B = rows > 0 ? (int)rows : 0;
    valid = 0;
    for (int64_t i = 0; i < (int64_t)b->B * b->T; i++) valid += b->labels[i] != -100;
    return valid;
}

/* Loss (and accuracy) over the fixed validation windows of all ranks. A classification
 * run scores its rows as `rotor synth` scores the test rows (task/class_score.h): the loss
 * is then the mean of -log p(class). */
static Validation validate(Trainer *tr) {
    if (tr->text) return validate_streams(tr);
    char err[512];
    if (tr->val->set_state(tr->val, tr->val_start, err, sizeof err)) rt_die("%s", err);
    double sums[3] = {0, 0, 0}; /* loss, labels, rows right */
    ClassScore sc;
    if (tr->classifies) class_score_init(&sc, model_outputs(&tr->rc->model));
    int64_t global_batch = (int64_t)tr->world * tr->rc->train.micro_batch;
    int64_t batches = (tr->val_windows + global_batch - 1) / global_batch;
    for (int64_t k = 0; k < batches; k++) {
        Batch b;
        int64_t valid = keep_validation_rows(tr, k, &b, next_batch(tr, tr->val, 0, &b));
        if (!b.B) continue;
        sums[1] += (double)valid;
        if (tr->classifies)
            class_score_batch(&sc, tr->model, &b);
        else
            sums[0] += model_forward(tr->model, &b, 0.0, NULL);
    }
    if (tr->classifies) {
        sums[0] = sc.nll;
        sums[2] = (double)sc.right;
        class_score_free(&sc);
    }
    dist_allreduce_sum_f64(sums, 3);
    double n = sums[1] > 0 ? sums[1] : 1;
    return (Validation){sums[0] / n, tr->classifies ? sums[2] / n : NAN};
}

/* 1 when v beats the best validation so far of metric k (a tie keeps the earlier step). */
static int improves(const BestValidation *best, KeepBest k, const Validation *v) {
    double x = k == KEEP_BEST_VAL_LOSS ? v->loss : v->accuracy;
    if (k == KEEP_BEST_NONE || !isfinite(x)) return 0;
    return best->metric == KEEP_BEST_NONE ||
           (k == KEEP_BEST_VAL_LOSS ? x < best->value : x > best->value);
}

/* train.plateau_factor (nnRNN's StepLR, stepped when a validation is not the best): a
 * validation loss that does not beat the best so far multiplies the learning rates by the
 * factor from the next step on. */
static void plateau_update(Trainer *tr, const Validation *v, int64_t step) {
    Plateau *p = &tr->plateau;
    if (isnan(p->best_val_loss) || v->loss < p->best_val_loss) {
        p->best_val_loss = v->loss;
        return;
    }
    p->lr_scale *= tr->rc->train.plateau_factor;
    if (tr->rank == 0)
        progress_message(
            &tr->metrics,
            "step %lld: validation loss %.4f is not below the best %.4f: learning rates x %g "
            "(now x %g of the schedule)",
            (long long)step, v->loss, p->best_val_loss, tr->rc->train.plateau_factor, p->lr_scale);
}

/* Before the first step: checkpoints/best must be the checkpoint of the best validation
 * the run's state records. One that is not (left by an earlier run in this directory, or
 * by steps after the checkpoint resumed from) is replaced by that step's checkpoint or,
 * when that is gone, removed, and the record is dropped: the next validation starts a new
 * best. Rank 0 decides; every rank gets the record. */
static void check_best_dir(Trainer *tr) {
    const RunConfig *rc = tr->rc;
    BestValidation *b = &tr->best;
    if (tr->rank == 0) {
        char *dir = rt_sprintf("%s/checkpoints/" CHECKPOINT_BEST, rc->run.dir), err[1024];
        TrainerState on_disk;
        int found = fs_exists(dir) && !checkpoint_read_state(dir, &on_disk, err, sizeof err);
        if (found) json_decref(on_disk.data_state);
        if (b->metric != KEEP_BEST_NONE && !(found && on_disk.step == b->step)) {
            if (checkpoint_keep_best(rc->run.dir, b->step, err, sizeof err)) {
                rt_warn("the checkpoint of the best %s so far (step %lld) is gone (%s); the next "
                        "validation starts a new best",
                        run_config_keep_best_name(b->metric), (long long)b->step, err);
                b->metric = KEEP_BEST_NONE;
            } else {
                progress_message(&tr->metrics,
                                 "%s: the checkpoint of step %lld, the best %s so far", dir,
                                 (long long)b->step, run_config_keep_best_name(b->metric));
            }
        }
        if (b->metric == KEEP_BEST_NONE && fs_exists(dir)) {
            if (fs_remove_tree(dir))
                rt_die("%s: cannot remove the best checkpoint of an earlier run: %s", dir,
                       strerror(errno));
            progress_message(&tr->metrics, "removed %s: not a validation of this run", dir);
        }
        rt_free(dir);
    }
    dist_broadcast(b, sizeof *b);
}

/* The global stream of row b of micro-batch slot a on this rank: the order of the global
 * micro-batches (datasource.h), slot a's rows those of global micro-batch a. */
static int64_t carry_stream(const Trainer *tr, int a, int b) {
    return ((int64_t)a * tr->world + tr->rank) * tr->rc->train.micro_batch + b;
}

/* Every stream's carried states [streams, width] on every rank (each rank fills its own and
 * the sums over the ranks gather them; exact: the others add zeros). NULL without carrying. */
static float *gather_carry(Trainer *tr, int64_t *rows, int64_t *width) {
    if (!tr->carry) return NULL;
    int B = tr->rc->train.micro_batch, A = tr->rc->train.grad_accum;
    int64_t W = model_carry_width(tr->model), S = (int64_t)tr->world * A * B;
    double *all = rt_calloc((size_t)(S * W), sizeof(double));
    float *mine = rt_malloc(sizeof(float) * (size_t)(B * W));
    for (int a = 0; a < A; a++) {
        model_carry_download(tr->model, tr->carry[a], B, mine);
        for (int b = 0; b < B; b++)
            for (int64_t k = 0; k < W; k++) all[carry_stream(tr, a, b) * W + k] = mine[b * W + k];
    }
    dist_allreduce_sum_f64(all, (int)(S * W));
    float *out = rt_malloc(sizeof(float) * (size_t)(S * W));
    for (int64_t i = 0; i < S * W; i++) out[i] = (float)all[i];
    rt_free(all);
    rt_free(mine);
    *rows = S, *width = W;
    return out;
}

/* Resuming: this rank's rows of the checkpoint's carried states. */
static void load_carry(Trainer *tr, const char *ckpt) {
    int B = tr->rc->train.micro_batch, A = tr->rc->train.grad_accum;
    int64_t W = model_carry_width(tr->model), S = (int64_t)tr->world * A * B;
    float *all = rt_malloc(sizeof(float) * (size_t)(S * W)),
          *mine = rt_malloc(sizeof(float) * (size_t)(B * W));
    char err[1024];
    if (checkpoint_load_carry(ckpt, S, W, all, err, sizeof err)) rt_die("%s", err);
    for (int a = 0; a < A; a++) {
        for (int b = 0; b < B; b++)
            memcpy(mine + b * W, all + carry_stream(tr, a, b) * W, sizeof(float) * (size_t)W);
        model_carry_upload(tr->model, tr->carry[a], B, mine);
    }
    rt_free(all);
    rt_free(mine);
}

/* Rank 0's line for a checkpoint that a call of the writer completed, with what waited for it. */
static void report_checkpoint(Trainer *tr, const CheckpointDone *d, const char *waiter) {
    if (tr->rank != 0 || d->step < 0) return;
    char waited[96] = "";
    if (d->waited_s >= 0.0005)
        snprintf(waited, sizeof waited, "; %s waited %.3f s for it", waiter, d->waited_s);
    if (d->async)
        progress_message(
            &tr->metrics,
            "checkpoint: %s/checkpoints/step_%08lld (the step stalled %.3f s for the host copy; "
            "written in %.3f s in the background%s)",
            tr->rc->run.dir, (long long)d->step, d->stall_s, d->write_s, waited);
    else
        progress_message(
            &tr->metrics,
            "checkpoint: %s/checkpoints/step_%08lld (written in %.3f s, the step waiting)",
            tr->rc->run.dir, (long long)d->step, d->stall_s);
}

/* The checkpoint of step `step`, checkpoints/best becoming it with `best`: written from a host
 * copy (after the previous one is complete), in the background with train.async_checkpoint. */
static void save_checkpoint(Trainer *tr, int64_t step, int64_t tokens, int best) {
    TrainerState st = {.step = step,
                       .tokens = tokens,
                       .seed = tr->rc->train.seed,
                       .world_size = tr->world,
                       .data_state = tr->train->get_state(tr->train),
                       .best = tr->best,
                       .plateau = tr->plateau};
    float *carry = gather_carry(tr, &st.carry_rows, &st.carry_width);
    st.carry = carry;
    char err[2048];
    CheckpointDone d;
    if (checkpoint_writer_wait(tr->ckpt, &d, err, sizeof err))
        rt_die("%s", err); /* the previous one */
    report_checkpoint(tr, &d, "the next checkpoint");
    if (checkpoint_writer_save(tr->ckpt, &(CheckpointFrom){&st, tr->model, tr->opt}, best, &d, err,
                               sizeof err))
        rt_die("%s", err);
    report_checkpoint(tr, &d, ""); /* written synchronously */
    json_decref(st.data_state);
    rt_free(carry);
    if (tr->rank == 0) plots_write(tr->rc->run.dir);
}

/* Once per step: completes a checkpoint whose background write has finished (a failed one
 * ends the run with its message). */
static void poll_checkpoint(Trainer *tr) {
    CheckpointDone d;
    char err[2048];
    if (checkpoint_writer_poll(tr->ckpt, &d, err, sizeof err)) rt_die("%s", err);
    report_checkpoint(tr, &d, "");
}

/* data.on_exhausted = stop: the data ran out before step `step` + 1. The run ends with a
 * checkpoint of its last step; a fresh run that could not train one step is an error. */
static void end_of_data(Trainer *tr, int64_t step, int64_t saved, int64_t tokens) {
    if (step == 0)
        rt_die("data.train: %s before the first step; data.on_exhausted = stop ends the run",
               tr->data_end);
    if (tr->rank == 0)
        progress_message(
            &tr->metrics,
            "data.train: %s; the run ends after step %lld of %lld (data.on_exhausted = stop)",
            tr->data_end, (long long)step, (long long)tr->rc->train.steps);
    if (saved != step) save_checkpoint(tr, step, tokens, 0);
}

/* data.train or data.val: "task" (the [task] section's task), or a shard set or synthetic:<task>.
 */
static DataSource *open_source(const char *spec, const RunConfig *rc, const DataOptions *opt,
                               char *err, size_t errlen) {
    return !strcmp(spec, "task") ? task_source_open(rc, opt, err, errlen)
                                 : datasource_open(spec, rc, opt, err, errlen);
}

static void open_data(Trainer *tr) {
    const RunConfig *rc = tr->rc;
    char err[2048];
    int T = rc->train.seq_len;
    /* without a validation set, the validation windows are held out of train */
    tr->val_windows = validation_windows(rc, tr->world);
    int synthetic = !strncmp(rc->data.train, "synthetic:", 10) || !strcmp(rc->data.train, "task");
    int holdout = !rc->data.val[0] && !synthetic && rc->train.val_every > 0;
    int carry = rc->train.carry_state;
    int64_t windows_per_step = (int64_t)tr->world * rc->train.micro_batch * rc->train.grad_accum;
    DataOptions opt = {.seq_len = T,
                       .seed = rc->train.seed,
                       .split = SPLIT_TRAIN,
                       .rank = tr->rank,
                       .world = tr->world,
                       .holdout_windows = holdout ? tr->val_windows : 0,
                       .prefetch = rc->data.prefetch,
                       .carry_streams = carry ? (int)windows_per_step : 0,
                       .windows_per_step = windows_per_step};
    tr->train = open_source(rc->data.train, rc, &opt, err, sizeof err);
    if (!tr->train) rt_die("data.train: %s", err);
    if (carry && rc->train.val_every > 0) { /* validations score the valid text's streams */
        if (!(tr->text = char_text_open(&rc->task, err, sizeof err))) rt_die("%s", err);
        if (!char_text_stream_windows(tr->text, SPLIT_VAL, rc->task.eval_streams, T))
            rt_die(
                "task.eval_streams = %d: the valid text holds fewer symbols than its streams + 1",
                rc->task.eval_streams);
    } else if (rc->train.val_every > 0) {
        const char *spec = rc->data.val[0] ? rc->data.val : rc->data.train;
        opt.split = SPLIT_VAL;
        tr->val = open_source(spec, rc, &opt, err, sizeof err);
        if (!tr->val) rt_die("%s: %s", rc->data.val[0] ? "data.val" : "data.train", err);
        tr->val_start = tr->val->get_state(tr->val);
    }
    size_t B = (size_t)rc->train.micro_batch, A = (size_t)rc->train.grad_accum;
    tr->win = rt_malloc(sizeof(int32_t) * B * (size_t)(T + 1));
    tr->win_doc = rt_malloc(B * (size_t)(T + 1));
    tr->tok = rt_calloc(A, sizeof(int32_t *));
    tr->lab = rt_calloc(A, sizeof(int32_t *));
    tr->doc = rt_calloc(A, sizeof(uint8_t *));
    for (size_t a = 0; a < A; a++) {
        tr->tok[a] = rt_malloc(sizeof(int32_t) * B * (size_t)T);
        tr->lab[a] = rt_malloc(sizeof(int32_t) * B * (size_t)T);
        tr->doc[a] = rt_malloc(B * (size_t)T);
    }
}

static void close_data(Trainer *tr) {
    for (int a = 0; a < tr->rc->train.grad_accum; a++) {
        rt_free(tr->tok[a]);
        rt_free(tr->lab[a]);
        rt_free(tr->doc[a]);
    }
    rt_free(tr->win);
    rt_free(tr->win_doc);
    rt_free(tr->tok);
    rt_free(tr->lab);
    rt_free(tr->doc);
    json_decref(tr->val_start);
    datasource_free(tr->train);
    datasource_free(tr->val);
    char_text_free(tr->text);
}

/* train.eval_tasks: the tasks, loaded once by the command's scorer. */
static void open_eval(Trainer *tr, const TrainStart *start) {
    const TrainConfig *tc = &tr->rc->train;
    if (!tc->eval_tasks[0]) return;
    if (!start->eval)
        rt_die("train.eval_tasks = %s: this program has no zero-shot scorer (rotor train has)",
               tc->eval_tasks);
    char err[2048];
    tr->eval = start->eval;
    if (!(tr->eval_ctx = tr->eval->open(tr->rc, err, sizeof err))) rt_die("%s", err);
}

/* train.carry_state: a zeroed block of carried states per micro-batch slot. */
static void open_carry(Trainer *tr) {
    const TrainConfig *tc = &tr->rc->train;
    if (!tc->carry_state) return;
    const Backend *be = model_backend(tr->model);
    tr->carry_bytes = model_carry_bytes(tr->model, tc->micro_batch);
    tr->carry = rt_calloc((size_t)tc->grad_accum, sizeof(void *));
    tr->continues = rt_calloc((size_t)tc->grad_accum, 1);
    for (int a = 0; a < tc->grad_accum; a++) {
        tr->carry[a] = be->alloc(tr->carry_bytes);
        be->zero(tr->carry[a], tr->carry_bytes);
    }
}

static void close_carry(Trainer *tr) {
    for (int a = 0; tr->carry && a < tr->rc->train.grad_accum; a++)
        model_backend(tr->model)->release(tr->carry[a]);
    rt_free(tr->carry);
    rt_free(tr->continues);
}

/* Rank 0 locks run.dir and, when a fresh start finds a run there, refuses or (--overwrite)
 * moves that run aside; every rank stops when rank 0 cannot go on. Returns the lock's file
 * descriptor on rank 0, -1 on the others. */
static int claim_run_dir(const Trainer *tr, const TrainStart *start) {
    const char *dir = tr->rc->run.dir;
    char err[2048] = "", what[256];
    int fd = -1, ok = 1;
    if (tr->rank == 0) {
        ok = (fd = run_dir_lock(dir, err, sizeof err)) >= 0;
        if (ok && !start->resume && run_dir_holds_run(dir, what, sizeof what)) {
            char *moved = NULL;
            if (!start->overwrite)
                ok = !rt_error(
                    err, sizeof err, NULL,
                    "run.dir = %s already holds a run (%s): continue it with --resume auto, "
                    "or start afresh with --overwrite, which moves it aside to "
                    "%s.old-YYYYMMDD-HHMMSS",
                    dir, what, dir);
            else if (run_dir_move_aside(dir, &moved, err, sizeof err))
                ok = 0;
            else { /* the lock moved with the old run: lock the new directory */
                int fresh = run_dir_lock(dir, err, sizeof err);
                run_dir_unlock(fd);
                ok = (fd = fresh) >= 0;
                if (ok) printf("--overwrite: moved the earlier run (%s) to %s\n", what, moved);
            }
            rt_free(moved);
        }
    }
    dist_broadcast(&ok, sizeof ok);
    if (!ok && tr->rank == 0) rt_die("%s", err);
    if (!ok) exit(1); /* rank 0 says why */
    return fd;
}

/* The checkpoint to resume from, chosen and checked (checkpoint_verify, with sha256s unless
 * --no-verify) by rank 0: NULL for a fresh start. A decay run (train.decay_from) starts from
 * that checkpoint where --resume auto finds none of its own. Dies when there is nothing intact
 * to resume from. */
static char *resume_path(const Trainer *tr, const TrainStart *start) {
    char path[4096] = "", err[2048] = "", what[1100] = "";
    int ok = 1;
    const char *from = tr->rc->train.decay_from;
    if (from[0] && start->resume && strcmp(start->resume, "auto")) { /* the same on every rank */
        if (tr->rank == 0)
            rt_die("--resume %s and train.decay_from = %s name two starting points: drop one (a "
                   "decay run "
                   "continues with --resume auto)",
                   start->resume, from);
        exit(1);
    }
    if (tr->rank == 0 && (start->resume || from[0])) {
        char *p = NULL;
        int hashes = !start->no_verify, auto_resume = start->resume != NULL;
        const char *ckpt = auto_resume ? start->resume : from;
        snprintf(what, sizeof what, auto_resume ? "--resume %s" : "train.decay_from = %s", ckpt);
        if (auto_resume && !strcmp(start->resume, "auto")) {
            ok = !checkpoint_find_latest(tr->rc->run.dir, hashes, &p, err, sizeof err);
            if (ok && !p && from[0]) {
                printf("--resume auto: no checkpoint in %s/checkpoints; the decay run starts from "
                       "train.decay_from = %s\n",
                       tr->rc->run.dir, from);
                ckpt = from;
                snprintf(what, sizeof what, "train.decay_from = %s", from);
            } else if (ok && !p) {
                printf("--resume auto: no checkpoint in %s/checkpoints; starting afresh\n",
                       tr->rc->run.dir);
                ckpt = NULL;
            } else {
                ckpt = NULL;
            }
        }
        if (ckpt && checkpoint_verify(ckpt, hashes, err, sizeof err)) {
            ok = 0;
            size_t len = strlen(err);
            snprintf(err + len, sizeof err - len, "%s",
                     hashes ? " (--no-verify resumes from it without the sha256s)" : "");
        } else if (ckpt) {
            p = rt_strdup(ckpt);
        }
        if (p && strlen(p) >= sizeof path)
            ok = !rt_error(err, sizeof err, NULL, "checkpoint path too long: %s", p);
        else if (p)
            snprintf(path, sizeof path, "%s", p);
        rt_free(p);
    }
    dist_broadcast(&ok, sizeof ok);
    if (!ok && tr->rank == 0) rt_die("%s: %s", what, err);
    if (!ok) exit(1);
    dist_broadcast(path, sizeof path);
    return path[0] ? rt_strdup(path) : NULL;
}

/* The schedule of the run: train's, with a decay run's first decay step (train.decay_from
 * without train.decay_start) taken from the step of the checkpoint it branched from. */
static TrainConfig run_schedule(const Trainer *tr) {
    TrainConfig sched = tr->rc->train;
    if (sched.schedule != SCHEDULE_WSD || !sched.decay_from[0] || sched.decay_start) return sched;
    TrainerState st;
    char err[1024];
    int ok = tr->rank != 0 || !checkpoint_read_state(sched.decay_from, &st, err, sizeof err);
    int64_t step = ok && tr->rank == 0 ? st.step : 0;
    if (ok && tr->rank == 0) json_decref(st.data_state);
    dist_broadcast(&ok, sizeof ok);
    if (!ok && tr->rank == 0)
        rt_die("train.decay_from = %s: %s (the decay begins at its step; set train.decay_start to "
               "do without it)",
               sched.decay_from, err);
    if (!ok) exit(1);
    dist_broadcast(&step, sizeof step);
    if (step >= sched.steps) {
        if (tr->rank == 0)
            rt_die("train.decay_from = %s is at step %lld: train.steps = %lld leaves no decay",
                   sched.decay_from, (long long)step, (long long)sched.steps);
        exit(1);
    }
    sched.decay_start = step;
    return sched;
}

/* The effective config, every key, into RUN_DIR/rotor.ini; on the terminal only the keys set
 * away from their defaults, so that the messages before the first step stay in sight. */
static void write_config(const RunConfig *rc) {
    char *text = NULL, *path = rt_sprintf("%s/rotor.ini", rc->run.dir);
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    RT_ASSERT(f);
    run_config_write_ini(rc, f);
    fclose(f);
    fs_write_atomic(path, text, len);
    printf("config (every key: %s), set away from the defaults:\n", path);
    run_config_write_changed(rc, stdout);
    fflush(stdout);
    free(text);
    rt_free(path);
}

/* Forward and backward of every micro-batch of a step, the gradients accumulating; the
 * last backward also starts the sums over the ranks, bucket by bucket (the earlier ones
 * do not communicate: their gradients are not final). Returns this rank's loss. */
static double forward_backward(Trainer *tr, int64_t step, Batch *batches, double inv) {
    int A = tr->rc->train.grad_accum;
    double loss = 0;
    model_zero_grads(tr->model);
    for (int a = 0; a < A; a++) {
        /* dropout's masks (docs/models.md §block-dropout-bidirectional) are a function of the step,
         * the micro-batch and the rank alone, so that a resumed run draws those of the
         * uninterrupted one */
        uint64_t stream =
            ((uint64_t)step * (uint64_t)A + (uint64_t)a) * (uint64_t)tr->world + (uint64_t)tr->rank;
        model_set_dropout_stream(tr->model, tr->rc->train.seed, stream);
        if (tr->carry) { /* the slot's rows continue from its carried states, or start afresh */
            if (!tr->continues[a]) model_backend(tr->model)->zero(tr->carry[a], tr->carry_bytes);
            model_set_carry(tr->model, tr->carry[a], tr->rc->train.micro_batch);
        }
        if (a == A - 1 && grad_comm_summing(&tr->comm))
            model_set_grad_ready(tr->model, grad_buckets_ready, &tr->buckets);
        loss += model_forward(tr->model, &batches[a], inv, NULL) * inv;
        model_backward(tr->model);
    }
    model_set_grad_ready(tr->model, NULL, NULL);
    return loss;
}

/* Waits for the sums of the gradients over the ranks (each rank's slice only, with ZeRO-1),
 * adds the gradient of the parameter penalties (the nnRNN's, docs/models.md §nonlinear-rnns; once,
 * on every rank's sum) and returns the global gradient norm and the number of buckets. */
static double reduce_gradients(Trainer *tr, int *buckets) {
    Model *m = tr->model;
    *buckets = grad_comm_summing(&tr->comm) ? grad_buckets_finish(&tr->buckets) : 0;
    model_penalty(m, tr->rc->train.gamma_penalty, tr->rc->train.t_decay, 1);
    if (tr->ranges) {
        double ss = grad_sumsq(m, tr->opt->lo, tr->opt->hi);
        dist_allreduce_sum_f64(&ss, 1);
        return sqrt(ss);
    }
    return sqrt(grad_sumsq(m, 0, model_params(m)->total));
}

/* What a step reports: its record in metrics.jsonl and its progress line. */
typedef struct {
    int64_t done, first, tokens; /* steps done, the run's first step, tokens seen */
    double loss, lr, gnorm, tps, elapsed;
    int validating, best, last;
    Validation val;
    const json_t *scores; /* train.eval_tasks' zero-shot scores at this step, or NULL */
} StepReport;

/* A mixture's tokens drawn from each source so far, all ranks together: "data_tokens". */
static void data_tokens(Trainer *tr, json_t *j) {
    const char *names[MIX_MAX_SOURCES];
    int64_t windows[MIX_MAX_SOURCES];
    int n = tr->train->drawn ? tr->train->drawn(tr->train, names, windows, MIX_MAX_SOURCES) : 0;
    if (!n) return;
    json_t *o = json_object();
    for (int i = 0; i < n; i++)
        json_object_set_new(o, names[i], json_integer(windows[i] * tr->rc->train.seq_len));
    json_object_set_new(j, "data_tokens", o);
}

/* The zero-shot scores as eval_NAME in the record, and a progress line. */
static void log_scores(Trainer *tr, json_t *j, const StepReport *r) {
    char line[1024];
    size_t used = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)r->scores, key, v) {
        char name[160];
        snprintf(name, sizeof name, "eval_%s", key);
        json_object_set_new(j, name, json_real(json_number_value(v)));
        if (used < sizeof line)
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%s %.4f", used ? ", " : "",
                                     key, json_number_value(v));
    }
    progress_message(&tr->metrics, "step %lld: zero-shot %s", (long long)r->done, line);
}

/* Rank 0's log of a step whose update was applied: a record every train.log_every steps, at
 * the last step and at each validation (returns 1 then: the rate restarts from there), and
 * the progress line (every step on a terminal). */
static int log_step(Trainer *tr, const StepReport *r, double flops_per_token) {
    const TrainConfig *tc = &tr->rc->train;
    const Backend *be = model_backend(tr->model);
    int logged = r->done % tc->log_every == 0 || r->last || r->validating || r->scores;
    if (logged) {
        json_t *j = json_pack("{s:I, s:I, s:f, s:f, s:f, s:f}", "step", (json_int_t)r->done,
                              "tokens", (json_int_t)r->tokens, "loss", r->loss, "lr", r->lr,
                              "grad_norm", r->gnorm, "tokens_per_s", r->tps);
        data_tokens(tr, j);
        /* MFU needs the device's peak; unknown for the CPU backend */
        json_object_set_new(j, "mfu",
                            be->peak_flops > 0
                                ? json_real(flops_per_token * r->tps / (be->peak_flops * tr->world))
                                : json_null());
        if (be->peak_memory() > 0) /* device backends: the high-water mark of their memory */
            json_object_set_new(j, "peak_memory_gib",
                                json_real((double)be->peak_memory() / (1 << 30)));
        if (r->validating) {
            const Validation *val = &r->val;
            json_object_set_new(j, "val_loss", json_real(val->loss));
            json_object_set_new(j, "val_ppl", json_real(exp(val->loss)));
            if (tr->text_task) /* character-level text: bits per character */
                json_object_set_new(j, "val_bpc", json_real(val->loss / M_LN2));
            char acc[64] = "", kept[160] = "";
            json_t *rec = model_recurrent_stats(tr->model); /* state norms, moduli, angles */
            if (rec) json_object_set_new(j, "recurrent", rec);
            if (tr->classifies) {
                json_object_set_new(j, "val_accuracy", json_real(val->accuracy));
                snprintf(acc, sizeof acc, ", accuracy %.4f", val->accuracy);
            }
            if (tr->best.metric != KEEP_BEST_NONE)
                snprintf(kept, sizeof kept, "; %s %s %.4f at step %lld",
                         r->best ? "new best" : "best", run_config_keep_best_name(tr->best.metric),
                         tr->best.value, (long long)tr->best.step);
            progress_message(&tr->metrics, "step %lld: validation loss %.4f (ppl %.2f)%s%s",
                             (long long)r->done, val->loss, exp(val->loss), acc, kept);
        }
        if (r->scores) log_scores(tr, j, r);
        metrics_log(&tr->metrics, j);
    }
    double eta = r->elapsed / (double)(r->done - r->first) * (double)(tc->steps - r->done);
    char line[256];
    snprintf(line, sizeof line,
             "step %lld/%lld | loss %.4f | lr %.3g | gnorm %.3f | %.0f tok/s | ETA %.0fs",
             (long long)r->done, (long long)tc->steps, r->loss, r->lr, r->gnorm, r->tps, eta);
    if (tr->metrics.tty || r->done % tc->log_every == 0 || r->last)
        progress_print(&tr->metrics, line);
    return logged;
}

int train_run(const RunConfig *rc, const TrainStart *start) {
#ifdef _OPENMP
    if (rc->run.threads > 0) omp_set_num_threads(rc->run.threads);
#endif
    Trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.rc = rc;
    tr.rank = dist_rank();
    tr.world = dist_world();
    int lead = tr.rank == 0;
    tr.classifies = run_config_classifies(rc);
    const TaskImpl *task = task_of(&rc->task);
    tr.text_task = task && (task->flags & TASK_TEXT);
    dist_set_timeout(rc->run.collective_timeout);
    open_eval(&tr, start); /* the tasks' files are read before the run directory is claimed */
    int lock = claim_run_dir(&tr, start);
    const TrainConfig *tc = &rc->train;
    const Backend *be = backend_select(rc->run.device, "run.device");
    tr.model = model_create(&rc->model, be);
    model_set_recompute(tr.model, tc->recompute);
    int64_t P = model_params(tr.model)->total; /* the flat buffers, padding included */
    tr.comm = grad_comm_init(be, rc->run.collectives, P);
    if (tc->zero && tr.world > 1) {
        tr.ranges = rt_malloc(sizeof(int64_t) * (size_t)(tr.world + 1));
        dist_partition(P, tr.world, 64, tr.ranges);
        tr.opt = optimizer_create(be, tc->optimizer, tr.ranges[tr.rank], tr.ranges[tr.rank + 1]);
    } else {
        tr.opt = optimizer_create(be, tc->optimizer, 0, P);
    }
    grad_buckets_init(&tr.buckets, tr.model, tr.comm, tr.ranges, rc->run.bucket_mb);
    if (lead) {
        model_print_summary(&rc->model, model_dims_of(tr.model), model_num_params(tr.model),
                            model_num_params_non_embedding(tr.model));
        printf("backend: %s on %s\n", be->name, be->device);
        if (grad_comm_summing(&tr.comm)) /* several ranks, or one that a launcher started */
            printf("data parallel: %d rank%s, global batch %d rows of %d tokens, gradients reduced "
                   "by %s%s\n",
                   tr.world, tr.world > 1 ? "s" : "", tr.world * tc->micro_batch * tc->grad_accum,
                   tc->seq_len, grad_comm_name(&tr.comm),
                   tr.ranges ? ", optimizer state sharded (ZeRO-1)" : "");
        else
            printf("one process: batch %d rows of %d tokens\n", tc->micro_batch * tc->grad_accum,
                   tc->seq_len);
    }
    open_data(&tr);
    open_carry(&tr);
    dist_barrier();

    int64_t first = 0, tokens = 0;
    tr.plateau = (Plateau){1, NAN};
    char *ckpt = resume_path(&tr, start);
    if (ckpt) {
        TrainerState st;
        char err[1024];
        /* rank 0 checked the files in resume_path */
        if (checkpoint_load(ckpt, &(CheckpointLoad){.model = tr.model, .opt = tr.opt, .state = &st},
                            err, sizeof err))
            rt_die("%s", err);
        if (st.data_state && tr.train->set_state(tr.train, st.data_state, err, sizeof err))
            rt_die("%s: %s", ckpt, err);
        json_decref(st.data_state);
        if (tr.carry) load_carry(&tr, ckpt);
        first = st.step;
        tokens = st.tokens;
        if (st.best.metric == tc->keep_best) tr.best = st.best;
        tr.plateau = st.plateau;
        if (first > tc->steps) /* before anything of the run directory is rewritten */
            rt_die("train.steps = %lld is below step %lld, where the run resumes (%s): nothing "
                   "would be trained; raise train.steps to continue the run",
                   (long long)tc->steps, (long long)first, ckpt);
        if (lead)
            printf("resumed from %s at step %lld (%lld tokens, written by %d rank%s)%s\n", ckpt,
                   (long long)first, (long long)tokens, st.world_size, st.world_size > 1 ? "s" : "",
                   first == tc->steps ? ": the run is complete (train.steps), nothing to train"
                                      : "");
        rt_free(ckpt);
    } else if (tc->init_from[0]) {
        char err[2048], *what = NULL;
        if (init_from_load(tc->init_from, tr.model, !start->no_verify, &what, err, sizeof err))
            rt_die("train.init_from = %s: %s", tc->init_from, err);
        if (lead)
            printf("initialised from %s (train.init_from: a fresh optimizer and schedule)\n", what);
        rt_free(what);
    } else {
        model_init_weights(tr.model, tc->seed);
        if (lead) printf("initialised from seed %llu\n", (unsigned long long)tc->seed);
    }
    if (lead) {
        write_config(rc);
        metrics_open(&tr.metrics, rc->run.dir, first, rc->run.tensorboard);
    }
    if (tc->keep_best != KEEP_BEST_NONE) check_best_dir(&tr);
    tr.ckpt = checkpoint_writer_create(
        &(CheckpointWriterConfig){rc->run.dir, rc, tc->keep_checkpoints, tc->async_checkpoint});
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);

    const TrainConfig sched = run_schedule(&tr);
    if (lead && sched.schedule == SCHEDULE_WSD)
        printf("schedule: wsd, the decay to lr_min from step %lld of %lld\n",
               (long long)wsd_decay_start(&sched), (long long)sched.steps);
    int64_t tokens_per_step = (int64_t)tr.world * tc->micro_batch * tc->seq_len * tc->grad_accum;
    double flops_per_token = model_flops_per_token(tr.model, tc->seq_len);
    double t_begin = rt_now(), t_last = t_begin;
    int stopped = 0; /* a signal ended the run before train.steps */
    int64_t end = tc->steps,
            saved = first; /* the last step: train.steps, or where the data ran out */
    int64_t tokens_last = tokens;
    int bad_steps = 0;
    int64_t prof_first, prof_last;
    char perr[256];
    if (step_profile_parse(rc->run.profile_steps, &prof_first, &prof_last, perr, sizeof perr))
        rt_die("%s", perr);
    StepProfile *prof =
        step_profile_create(be, prof_first > first ? prof_first : 0, prof_last, rc->run.dir, lead);
    Batch *batches = rt_calloc((size_t)tc->grad_accum, sizeof(Batch));
    for (int64_t step = first; step < tc->steps; step++) {
        double lr = lr_at(&sched, step) * tr.plateau.lr_scale;
        step_profile_begin(prof, step + 1);
        double t_step = rt_now();
        /* read the whole step first: the loss is averaged over all its labels on all ranks */
        int64_t valid = 0;
        int ran_out = 0;
        for (int a = 0; a < tc->grad_accum && !ran_out; a++) {
            int64_t v = next_batch(&tr, tr.train, a, &batches[a]);
            ran_out = v < 0;
            valid += v;
            if (tr.carry) tr.continues[a] = (uint8_t)tr.train->continues;
        }
        if (dist_any(ran_out)) {
            end_of_data(&tr, step, saved, tokens);
            end = step;
            break;
        }
        dist_allreduce_sum_i64(&valid, 1);
        double loss = forward_backward(&tr, step, batches, 1.0 / (double)(valid ? valid : 1));
        int buckets;
        double gnorm = reduce_gradients(&tr, &buckets);
        dist_allreduce_sum_f64(&loss, 1);
        /* the penalties belong to the loss the step minimises: logged with it */
        loss += model_penalty(tr.model, tc->gamma_penalty, tc->t_decay, 0);
        if (lead && step == first && buckets)
            progress_message(&tr.metrics,
                             "gradient sums: %d bucket%s per step (run.bucket_mb = %g)", buckets,
                             buckets > 1 ? "s" : "", rc->run.bucket_mb);
        int64_t done = step + 1;
        tokens += tokens_per_step;
        int skipped = !isfinite(loss) || !isfinite(gnorm);
        if (skipped) {
            bad_steps++;
            if (lead)
                progress_message(&tr.metrics,
                                 "step %lld: non-finite loss %g or gradient norm %g; update "
                                 "skipped (%d in a row)",
                                 (long long)done, loss, gnorm, bad_steps);
            if (bad_steps >= tc->max_bad_steps)
                rt_die(
                    "%d consecutive steps with non-finite loss or gradients (train.max_bad_steps); "
                    "the last complete checkpoint in %s/checkpoints is intact",
                    bad_steps, rc->run.dir);
        } else {
            bad_steps = 0;
            optimizer_step(tr.opt, tr.model, tc, lr, grad_clip_factor(gnorm, tc->grad_clip));
            if (tr.ranges)
                grad_comm_allgather(&tr.comm, model_weights_to_write(tr.model), tr.ranges);
        }
        step_profile_end(prof, done, t_step, rt_now());
        int last = done == tc->steps;
        double now = rt_now();
        double tps = (double)(tokens - tokens_last) / fmax(now - t_last, 1e-9);
        int validating = tc->val_every && (done % tc->val_every == 0 || last);
        Validation val = validating ? validate(&tr) : (Validation){0, NAN};
        /* every rank scores its share of the documents */
        json_t *scores = tr.eval_ctx && (done % tc->eval_every == 0 || last)
                             ? tr.eval->score(tr.eval_ctx, tr.model)
                             : NULL;
        int best = validating && !skipped && improves(&tr.best, tc->keep_best, &val);
        if (validating && !skipped && tc->plateau_factor > 0) plateau_update(&tr, &val, done);
        if (best)
            tr.best = (BestValidation){
                tc->keep_best, tc->keep_best == KEEP_BEST_VAL_LOSS ? val.loss : val.accuracy, done};
        if (lead && !skipped) {
            StepReport r = {.done = done,
                            .first = first,
                            .tokens = tokens,
                            .loss = loss,
                            .lr = lr,
                            .gnorm = gnorm,
                            .tps = tps,
                            .elapsed = now - t_begin,
                            .validating = validating,
                            .best = best,
                            .last = last,
                            .val = val,
                            .scores = scores};
            if (log_step(&tr, &r, flops_per_token)) {
                t_last = now;
                tokens_last = tokens;
            }
        }
        json_decref(scores);
        int stopping = dist_any(stop_signal != 0);
        poll_checkpoint(&tr);
        /* a new best is saved as a step too, so that resuming never starts before it */
        if ((tc->checkpoint_every && done % tc->checkpoint_every == 0) || last || stopping ||
            best) {
            save_checkpoint(&tr, done, tokens, best);
            saved = done;
        }
        if (stopping && !last) {
            if (lead)
                progress_message(&tr.metrics,
                                 "stopped by a signal after step %lld; resume with --resume auto",
                                 (long long)done);
            stopped = 1;
            break;
        }
    }
    rt_free(batches);
    step_profile_free(prof);
    CheckpointDone final;
    char err[2048];
    if (checkpoint_writer_wait(tr.ckpt, &final, err, sizeof err)) rt_die("%s", err);
    report_checkpoint(&tr, &final, "the end of the run");
    checkpoint_writer_free(tr.ckpt);
    if (lead) {
        metrics_close(&tr.metrics);
        plots_write(rc->run.dir);
        if (!stopped)
            printf("done: %lld steps in %.1fs\n", (long long)(end - first), rt_now() - t_begin);
    }
    if (tr.eval_ctx) tr.eval->close(tr.eval_ctx);
    close_carry(&tr);
    close_data(&tr);
    rt_free(tr.ranges);
    optimizer_free(tr.opt);
    grad_comm_free(&tr.comm);
    model_free(tr.model);
    run_dir_unlock(lock);
    return stopped;
}
