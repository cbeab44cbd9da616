#include "train/checkpoint_writer.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/run_config.h"
#include "dist/dist.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/timer.h"

struct CheckpointWriter {
    CheckpointWriterConfig c;
    int rank, world;
    char *ini;               /* rotor.ini's text, the same for every checkpoint of the run */
    CheckpointSnapshot snap; /* async: its staging reused by every save */
    CheckpointJob job;       /* the checkpoint in flight */
    /* the trainer's thread's own, the same on every rank */
    int busy;               /* a checkpoint is in flight */
    int agreed;             /* every rank's files are written, or have failed */
    double t_save, stall_s; /* when the save began; how long it stalled the step */
    /* shared with the writer's thread, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int threaded; /* the writer's thread writes the checkpoint in flight (not yet joined) */
    int files_done, files_ok; /* this rank's files */
    int gate; /* rank 0 may finish: every rank's files are written, or failed_ranks failed */
    int64_t failed_ranks;
    int finished, ok; /* this rank's part is over, and its outcome (rank 0: the checkpoint's) */
    double write_s;   /* from the start of this rank's files to the end of its part */
    char err[2048];   /* this rank's failure, "" for none */
};

static const CheckpointDone NONE = {-1, 0, 0, 0, 0};

/* This rank's files: on the writer's thread, else on the trainer's. */
static void run_files(CheckpointWriter *w) {
    char err[sizeof w->err] = "";
    int ok = !checkpoint_write_files(&w->job, err, sizeof err);
    pthread_mutex_lock(&w->mu);
    w->files_done = 1;
    w->files_ok = ok;
    if (!ok) snprintf(w->err, sizeof w->err, "%s", err);
    if (w->rank != 0) { /* the other ranks' part ends with their files */
        w->finished = 1;
        w->ok = ok;
        w->write_s = rt_now() - w->t_save - w->stall_s;
    }
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Rank 0, once the gate is open: the checkpoint completed, or its directory discarded. */
static void run_finish(CheckpointWriter *w) {
    char err[sizeof w->err] = "";
    int ok = 0;
    if (w->failed_ranks == 0)
        ok = !checkpoint_finish(&w->job, err, sizeof err);
    else
        checkpoint_discard(&w->job);
    pthread_mutex_lock(&w->mu);
    w->finished = 1;
    w->ok = ok;
    if (err[0]) snprintf(w->err, sizeof w->err, "%s", err);
    w->write_s = rt_now() - w->t_save - w->stall_s;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void *writer_main(void *arg) {
    CheckpointWriter *w = arg;
    run_files(w);
    if (w->rank == 0) {
        pthread_mutex_lock(&w->mu);
        while (!w->gate) pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
        run_finish(w);
    }
    return NULL;
}

/* The writer's thread for the checkpoint in flight, with every signal blocked (they stay the
 * trainer thread's: SIGTERM and the like stop the training loop). 0 when it cannot start. */
static int start_thread(CheckpointWriter *w) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e)
        rt_warn("cannot start the checkpoint writer's thread (%s): the checkpoint of step %lld is "
                "written by the "
                "trainer's",
                strerror(e), (long long)w->snap.st.step);
    return !e;
}

/* Summed over the ranks: [0] ranks still writing their files, [1] ranks whose files failed,
 * [2] 1 when rank 0's part is over, [3] 1 when rank 0 failed. */
static void tally(CheckpointWriter *w, int64_t v[4]) {
    pthread_mutex_lock(&w->mu);
    v[0] = !w->files_done;
    v[1] = w->files_done && !w->files_ok;
    v[2] = w->rank == 0 && w->finished;
    v[3] = w->rank == 0 && w->finished && !w->ok;
    pthread_mutex_unlock(&w->mu);
    dist_allreduce_sum_i64(v, 4);
}

/* Every rank's files are written (or failed_ranks failed): rank 0 may finish, on the writer's
 * thread or, without one, here. */
static void agree(CheckpointWriter *w, int64_t failed_ranks) {
    w->agreed = 1;
    pthread_mutex_lock(&w->mu);
    w->failed_ranks = failed_ranks;
    w->gate = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (w->rank == 0 && !w->threaded) run_finish(w);
}

/* Every rank, once rank 0's part is over: the thread joined, the outcome. */
static int complete(CheckpointWriter *w, int rank0_failed, CheckpointDone *done, char *err,
                    size_t errlen) {
    int64_t step = w->snap.st.step;
    *done = (CheckpointDone){step, w->threaded, w->stall_s, w->write_s, 0};
    if (w->threaded) pthread_join(w->thread, NULL);
    w->threaded = 0;
    w->busy = 0;
    if (w->c.async)
        checkpoint_snapshot_clear(&w->snap);
    else
        checkpoint_snapshot_free(
            &w->snap); /* synchronous: the host copy only while it is written */
    if (!rank0_failed) return 0;
    if (w->err[0]) return rt_error(err, errlen, NULL, "%s", w->err);
    return rt_error(
        err, errlen, NULL,
        "checkpoint %s/checkpoints/step_%08lld was not written: %s failed (its message says why)",
        w->c.run_dir, (long long)step, w->rank == 0 || w->failed_ranks ? "another rank" : "rank 0");
}

int checkpoint_writer_poll(CheckpointWriter *w, CheckpointDone *done, char *err, size_t errlen) {
    *done = NONE;
    if (!w->busy) return 0;
    int64_t v[4];
    tally(w, v);
    if (!w->agreed && v[0] == 0) agree(w, v[1]);
    return v[2] ? complete(w, v[3] != 0, done, err, errlen)
                : 0; /* rank 0 finishes only after agree */
}

int checkpoint_writer_wait(CheckpointWriter *w, CheckpointDone *done, char *err, size_t errlen) {
    *done = NONE;
    if (!w->busy) return 0;
    double t0 = rt_now();
    int64_t v[4];
    pthread_mutex_lock(&w->mu);
    while (!w->files_done) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    if (!w->agreed) {
        tally(w, v);
        agree(w, v[1]);
    }
    pthread_mutex_lock(&w->mu);
    while (!w->finished) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    tally(w, v);
    int r = complete(w, v[3] != 0, done, err, errlen);
    done->waited_s = rt_now() - t0;
    return r;
}

int checkpoint_writer_save(CheckpointWriter *w, const CheckpointFrom *from, int keep_best,
                           CheckpointDone *done, char *err, size_t errlen) {
    RT_ASSERT(from->opt && from->state->step >= 0 && !w->busy);
    *done = NONE;
    double t0 = rt_now();
    int64_t step = from->state->step;
    char msg[sizeof w->err] = "";
    int ok = w->rank != 0 || !checkpoint_begin(w->c.run_dir, step, msg, sizeof msg);
    if (dist_any(!ok))
        return ok ? rt_error(err, errlen, NULL,
                             "checkpoint %s/checkpoints/step_%08lld was not written: rank 0 failed "
                             "(its message says why)",
                             w->c.run_dir, (long long)step)
                  : rt_error(err, errlen, NULL, "%s", msg);
    checkpoint_snapshot_take(&w->snap, from);
    w->job = (CheckpointJob){w->c.run_dir, w->ini, w->c.rc->data.tokenizer, &w->snap, w->c.keep,
                             keep_best,    NULL};
    w->busy = 1;
    w->agreed = 0;
    w->files_done = w->files_ok = w->gate = w->finished = w->ok = 0;
    w->failed_ranks = 0;
    w->err[0] = '\0';
    w->t_save = t0;
    w->stall_s = rt_now() - t0;
    w->threaded = w->c.async && start_thread(w);
    if (w->threaded) return 0;
    run_files(w);
    int r = checkpoint_writer_wait(w, done, err, errlen);
    done->stall_s = rt_now() - t0;
    done->waited_s = 0;
    return r;
}

/* The writer whose checkpoint in flight an exit() (rt_die) on another thread lets finish
 * first, where that needs no other rank: one process, or only rank 0 writing files. */
static CheckpointWriter *exiting_writer;

static void finish_at_exit(void) {
    CheckpointWriter *w = exiting_writer;
    if (!w || !w->threaded || pthread_equal(pthread_self(), w->thread)) return;
    pthread_mutex_lock(&w->mu);
    int alone =
        w->rank != 0 || w->world == 1 || !w->snap.sharded; /* rank 0 needs no other rank's files */
    if (alone || w->gate) {
        while (!w->files_done) pthread_cond_wait(&w->cv, &w->mu);
        if (!w->gate) w->failed_ranks = !w->files_ok;
        w->gate = 1;
        pthread_cond_broadcast(&w->cv);
        while (!w->finished) pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    if (alone || w->gate) pthread_join(w->thread, NULL);
}

/* rotor.ini's text (free it). */
static char *ini_text(const RunConfig *rc) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    RT_ASSERT(f);
    run_config_write_ini(rc, f);
    fclose(f);
    return text;
}

CheckpointWriter *checkpoint_writer_create(const CheckpointWriterConfig *c) {
    static int registered;
    CheckpointWriter *w = rt_calloc(1, sizeof *w);
    w->c = *c;
    w->rank = dist_rank();
    w->world = dist_world();
    w->ini = ini_text(c->rc);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (c->async) {
        if (!registered) atexit(finish_at_exit);
        registered = 1;
        exiting_writer = w;
    }
    return w;
}

void checkpoint_writer_free(CheckpointWriter *w) {
    if (!w) return;
    RT_ASSERT(!w->busy);
    if (exiting_writer == w) exiting_writer = NULL;
    checkpoint_snapshot_free(&w->snap);
    free(w->ini);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    rt_free(w);
}

int checkpoint_save(const char *run_dir, const TrainerState *st, Model *m, const Optimizer *opt,
                    const RunConfig *rc, int keep, char *err, size_t errlen) {
    CheckpointWriter *w = checkpoint_writer_create(&(CheckpointWriterConfig){run_dir, rc, keep, 0});
    CheckpointDone done;
    int r = checkpoint_writer_save(w, &(CheckpointFrom){st, m, opt}, 0, &done, err, errlen);
    checkpoint_writer_free(w);
    return r;
}
