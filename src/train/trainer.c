/* The training loop (SPEC §7): gradient accumulation over micro-batches, loss averaged
 * over every label of the optimizer step, global-norm clipping, AdamW with warmup +
 * cosine, periodic validation, metrics, progress, atomic checkpoints and resumption. */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config/run_config.h"
#include "cpu/blas_setup.h"
#include "cpu/parallel.h"
#include "data/datasource.h"
#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/optimizer.h"
#include "util/error.h"
#include "util/fsutil.h"
#include "util/timer.h"

typedef struct {
    const RunConfig *rc;
    Model *model;
    AdamW *opt;
    DataSource *train, *val;
    json_t *val_start;      /* the validation source's initial position */
    int32_t *win;
    uint8_t *win_doc;
    int32_t **tok, **lab;   /* one input and label buffer per micro-batch of a step */
    uint8_t **doc;
    Metrics metrics;
} Trainer;

static void format_count(char *buf, size_t n, double x) {
    if (x >= 1e9)
        snprintf(buf, n, "%.2fB", x / 1e9);
    else if (x >= 1e6)
        snprintf(buf, n, "%.2fM", x / 1e6);
    else if (x >= 1e3)
        snprintf(buf, n, "%.1fK", x / 1e3);
    else
        snprintf(buf, n, "%.0f", x);
}

void print_model_summary(const ModelConfig *mc, const ModelDims *dm, int64_t params,
                         int64_t non_embedding) {
    char a[32], b[32];
    format_count(a, sizeof a, (double)params);
    format_count(b, sizeof b, (double)non_embedding);
    printf("model: %s + %s, %s parameters (%lld; %s without embedding and LM head)\n",
           mixer_name(mc->mixer), pe_name(mc->pe.kind), a, (long long)params, b);
    printf("       d=%d L=%d H=%d dk=%d dv=%d mlp=%d vocab=%d%s\n", mc->hidden_size,
           mc->num_layers, dm->H, dm->dk, dm->dv, dm->mlp_width, mc->vocab_size,
           mc->doc_mask ? " doc_mask" : "");
}

/* Reads B windows into micro-batch slot `a`; returns the number of non-ignored labels. */
static int64_t next_batch(Trainer *tr, DataSource *ds, int a, Batch *b) {
    int B = tr->rc->train.micro_batch, T = tr->rc->train.seq_len;
    char err[1024];
    if (ds->next(ds, tr->win, tr->win_doc, B, err, sizeof err)) rt_die("%s", err);
    windows_to_batch(tr->win, tr->win_doc, B, T, tr->tok[a], tr->lab[a], tr->doc[a]);
    b->B = B;
    b->T = T;
    b->tokens = tr->tok[a];
    b->labels = tr->lab[a];
    b->doc_start = tr->doc[a];
    int64_t valid = 0;
    for (int64_t i = 0; i < (int64_t)B * T; i++) valid += tr->lab[a][i] != -100;
    return valid;
}

/* Mean loss over the fixed validation windows. */
static double validate(Trainer *tr) {
    char err[512];
    if (tr->val->set_state(tr->val, tr->val_start, err, sizeof err)) rt_die("%s", err);
    double sum = 0;
    int64_t count = 0;
    for (int i = 0; i < tr->rc->train.val_batches; i++) {
        Batch b;
        count += next_batch(tr, tr->val, 0, &b);
        sum += model_forward(tr->model, &b, 0.0, NULL);
    }
    return sum / (double)(count ? count : 1);
}

static void save_checkpoint(Trainer *tr, int64_t step, int64_t tokens) {
    TrainerState st = {step, tokens, tr->rc->train.seed, 1, tr->train->get_state(tr->train)};
    char err[1024];
    if (checkpoint_save(tr->rc->run.dir, &st, tr->model, tr->opt, tr->rc,
                        tr->rc->train.keep_checkpoints, err, sizeof err))
        rt_die("%s", err);
    json_decref(st.data_state);
    progress_message(&tr->metrics, "checkpoint: %s/checkpoints/step_%08lld", tr->rc->run.dir,
                     (long long)step);
    plots_write(tr->rc->run.dir);
}

static void open_data(Trainer *tr) {
    const RunConfig *rc = tr->rc;
    char err[2048];
    int T = rc->train.seq_len;
    int64_t val_windows = (int64_t)rc->train.val_batches * rc->train.micro_batch;
    int synthetic = !strncmp(rc->data.train, "synthetic:", 10);
    int holdout = !rc->data.val[0] && !synthetic && rc->train.val_every > 0;
    DataOptions opt = {T, rc->train.seed, SPLIT_TRAIN, 0, 1, holdout ? val_windows : 0, rc->data.prefetch};
    tr->train = datasource_open(rc->data.train, &rc->data, &rc->model, &opt, err, sizeof err);
    if (!tr->train) rt_die("data.train: %s", err);
    if (rc->train.val_every > 0) {
        const char *spec = rc->data.val[0] ? rc->data.val : rc->data.train;
        opt.split = SPLIT_VAL;
        tr->val = datasource_open(spec, &rc->data, &rc->model, &opt, err, sizeof err);
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

int train_run(const RunConfig *rc, const char *resume) {
    if (strcmp(rc->run.device, "cpu"))
        rt_die("run.device = %s: this build has no CUDA backend yet; use run.device = cpu",
               rc->run.device);
#ifdef _OPENMP
    if (rc->run.threads > 0) omp_set_num_threads(rc->run.threads);
#endif
    Trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.rc = rc;
    const TrainConfig *tc = &rc->train;
    const Backend *be = backend_cpu();
    tr.model = model_create(&rc->model, be);
    print_model_summary(&rc->model, model_dims_of(tr.model), model_num_params(tr.model),
                        model_num_params_non_embedding(tr.model));
    printf("backend: %s, %d threads, BLAS kernels %s\n", be->name, par_max_threads(), blas_kernel_name());
    tr.opt = adamw_create(be, model_num_params(tr.model));
    open_data(&tr);
    fs_mkdirs(rc->run.dir);

    int64_t start = 0, tokens = 0;
    char *ckpt = NULL;
    if (resume && !strcmp(resume, "auto")) {
        ckpt = checkpoint_find_latest(rc->run.dir);
    } else if (resume) {
        ckpt = rt_strdup(resume);
    }
    if (ckpt) {
        TrainerState st;
        char err[1024];
        if (checkpoint_load(ckpt, tr.model, tr.opt, &st, err, sizeof err)) rt_die("%s", err);
        if (st.data_state && tr.train->set_state(tr.train, st.data_state, err, sizeof err))
            rt_die("%s: %s", ckpt, err);
        json_decref(st.data_state);
        start = st.step;
        tokens = st.tokens;
        printf("resumed from %s at step %lld (%lld tokens)\n", ckpt, (long long)start,
               (long long)tokens);
        rt_free(ckpt);
    } else {
        model_init_weights(tr.model, tc->seed);
        printf("initialised from seed %llu\n", (unsigned long long)tc->seed);
    }
    printf("---- effective config ----\n");
    run_config_write_ini(rc, stdout);
    printf("--------------------------\n");
    fflush(stdout);
    metrics_open(&tr.metrics, rc->run.dir, start);

    int64_t tokens_per_step = (int64_t)tc->micro_batch * tc->seq_len * tc->grad_accum;
    double flops_per_token = model_flops_per_token(tr.model, tc->seq_len);
    double t_begin = rt_now(), t_last = t_begin;
    int64_t tokens_last = tokens;
    int bad_steps = 0;
    Batch *batches = rt_calloc((size_t)tc->grad_accum, sizeof(Batch));
    for (int64_t step = start; step < tc->steps; step++) {
        double lr = lr_at(tc, step);
        /* read the whole step first: the loss is averaged over all its labels */
        int64_t valid = 0;
        for (int a = 0; a < tc->grad_accum; a++) valid += next_batch(&tr, tr.train, a, &batches[a]);
        model_zero_grads(tr.model);
        double loss_sum = 0;
        for (int a = 0; a < tc->grad_accum; a++) {
            loss_sum += model_forward(tr.model, &batches[a], 1.0 / (double)(valid ? valid : 1), NULL);
            model_backward(tr.model);
        }
        double loss = loss_sum / (double)(valid ? valid : 1);
        double gnorm = grad_global_norm(tr.model);
        if (!isfinite(loss) || !isfinite(gnorm)) {
            bad_steps++;
            progress_message(&tr.metrics, "step %lld: non-finite loss %g or gradient norm %g; update skipped (%d in a row)",
                             (long long)step + 1, loss, gnorm, bad_steps);
            if (bad_steps >= tc->max_bad_steps)
                rt_die("%d consecutive steps with non-finite loss or gradients (train.max_bad_steps); "
                       "the last complete checkpoint in %s/checkpoints is intact", bad_steps, rc->run.dir);
            tokens += tokens_per_step;
            continue;
        }
        bad_steps = 0;
        if (tc->grad_clip > 0 && gnorm > tc->grad_clip) grads_scale(tr.model, tc->grad_clip / (gnorm + 1e-6));
        adamw_step(tr.opt, tr.model, tc, lr);
        tokens += tokens_per_step;
        int64_t done = step + 1;
        int last = done == tc->steps;

        double now = rt_now();
        double tps = (double)(tokens - tokens_last) / fmax(now - t_last, 1e-9);
        if (done % tc->log_every == 0 || last || (tc->val_every && done % tc->val_every == 0)) {
            json_t *j = json_pack("{s:I, s:I, s:f, s:f, s:f, s:f}", "step", (json_int_t)done,
                                  "tokens", (json_int_t)tokens, "loss", loss, "lr", lr, "grad_norm",
                                  gnorm, "tokens_per_s", tps);
            /* MFU needs the device's peak; unknown for the CPU backend */
            json_object_set_new(j, "mfu", be->peak_flops > 0 ? json_real(flops_per_token * tps / be->peak_flops) : json_null());
            if (tc->val_every && (done % tc->val_every == 0 || last)) {
                double vl = validate(&tr);
                json_object_set_new(j, "val_loss", json_real(vl));
                json_object_set_new(j, "val_ppl", json_real(exp(vl)));
                progress_message(&tr.metrics, "step %lld: validation loss %.4f (ppl %.2f)",
                                 (long long)done, vl, exp(vl));
            }
            metrics_log(&tr.metrics, j);
            t_last = now;
            tokens_last = tokens;
        }
        double elapsed = now - t_begin, eta = elapsed / (double)(done - start) * (double)(tc->steps - done);
        char line[256];
        snprintf(line, sizeof line, "step %lld/%lld | loss %.4f | lr %.3g | gnorm %.3f | %.0f tok/s | ETA %.0fs",
                 (long long)done, (long long)tc->steps, loss, lr, gnorm, tps, eta);
        if (tr.metrics.tty || done % tc->log_every == 0 || last) progress_print(&tr.metrics, line);
        if ((tc->checkpoint_every && done % tc->checkpoint_every == 0) || last)
            save_checkpoint(&tr, done, tokens);
    }
    rt_free(batches);
    metrics_close(&tr.metrics);
    plots_write(rc->run.dir);
    printf("done: %lld steps in %.1fs\n", (long long)(tc->steps - start), rt_now() - t_begin);
    json_decref(tr.val_start);
    datasource_free(tr.train);
    datasource_free(tr.val);
    for (int a = 0; a < tc->grad_accum; a++) {
        rt_free(tr.tok[a]);
        rt_free(tr.lab[a]);
        rt_free(tr.doc[a]);
    }
    rt_free(tr.win);
    rt_free(tr.win_doc);
    rt_free(tr.tok);
    rt_free(tr.lab);
    rt_free(tr.doc);
    adamw_free(tr.opt);
    model_free(tr.model);
    return 0;
}
