/* The training recipe pieces of docs/models.md §training-recipe: AdamW and RMSprop with their
 * parameter groups, global-norm clipping (also folded into the update), and gradient accumulation
 * over micro-batches equal to one batch. */
#include <string.h>

#include "harness.h"
#include "model/model.h"
#include "testutil.h"
#include "train/optimizer.h"
#include "util/error.h"

/* docs/models.md §training-recipe's AdamW settings (the schedule is tests/test_schedule.c's). */
static TrainConfig recipe(void) {
    TrainConfig tc;
    memset(&tc, 0, sizeof tc);
    tc.weight_decay = 0.1;
    tc.beta1 = 0.9;
    tc.beta2 = 0.95;
    tc.adam_eps = 1e-8;
    return tc;
}

static ModelConfig tiny(MixerKind mixer, PEKind pe) {
    ModelConfig c =
        tu_model(mixer, (TuModelSize){.vocab = 19, .hidden = 16, .layers = 1, .heads = 2});
    c.head_dim = 8;
    c.intermediate_size = 32;
    c.pe.kind = pe;
    c.pe.bias = c.pe.phase_gate = 1;
    c.output_gate = c.output_norm = c.qk_norm = c.k_shift = c.v_shift = 1;
    return c;
}

/* docs/models.md §training-recipe: no weight decay on norm weights, biases, A_log, dt_bias,
 * weight-norm scalars and temperatures; decay on every matrix (linears, embeddings, convs, phi
 * projections). */
static void test_decay_groups(void) {
    for (int mixer = 0; mixer < 3; mixer++) {
        ModelConfig c = tiny((MixerKind)mixer, PE_SELECTIVE);
        Model *m = model_create(&c, backend_cpu());
        const ParamTable *t = model_params(m);
        for (int i = 0; i < t->n; i++) {
            const char *n = t->p[i].name;
            int no_decay = strstr(n, "norm") || strstr(n, "bias") || strstr(n, "A_log") ||
                           strstr(n, "scalar") || strstr(n, "temperature");
            CHECK_MSG(t->p[i].decay == !no_decay, "%s: decay flag %d", n, t->p[i].decay);
            CHECK_MSG(t->p[i].trainable == !strstr(n, "temperature"), "%s: trainable %d", n,
                      t->p[i].trainable);
        }
        model_free(m);
    }
}

/* The parameter-group tests' model: the tiny GLA with weights from `seed`, its parameter 2 in
 * the recurrent group and 3 in the orthogonal one. */
static Model *group_model(uint64_t seed) {
    ModelConfig c = tiny(MIXER_GLA, PE_SELECTIVE);
    Model *m = model_create(&c, backend_cpu());
    model_init_weights(m, seed);
    ParamTable *t = (ParamTable *)model_params(m);
    params_set_recurrent(t, 2);
    params_set_orthogonal(t, 3);
    return m;
}

/* recipe() with the groups' own settings: the peak learning rate GROUP_LR, the recurrent group
 * at 0.3 of it with weight decay 0.05, the orthogonal group at 0.1 of it with 0.02. */
#define GROUP_LR 1e-2
static TrainConfig group_recipe(void) {
    TrainConfig tc = recipe();
    tc.lr = GROUP_LR;
    tc.lr_recurrent = 0.3 * GROUP_LR;
    tc.weight_decay_recurrent = 0.05;
    tc.lr_orthogonal = 0.1 * GROUP_LR;
    tc.weight_decay_orthogonal = 0.02;
    return tc;
}

/* Parameter p's learning rate as a fraction of the peak, and its weight decay, in those groups
 * (the others: the peak, and recipe()'s 0.1 where they decay). */
static double group_lr_scale(const ParamInfo *p) {
    return p->orthogonal ? 0.1 : p->recurrent ? 0.3 : 1;
}
static double group_weight_decay(const ParamInfo *p) {
    return p->orthogonal ? 0.02 : p->recurrent ? 0.05 : p->decay ? 0.1 : 0;
}

/* One AdamW step: decayed parameters shrink by lr*wd*w on top of the Adam step, the others
 * move by the Adam step alone; frozen parameters do not move. */
static void test_adamw_step_groups(void) {
    Model *m = group_model(3);
    const ParamTable *t = model_params(m);
    const real *w = model_weights(m);
    real *g = model_grads(m);
    real *w0 = tu_copy(w, t->total);
    for (int64_t i = 0; i < t->total; i++) g[i] = (real)(i % 7 - 3) * 0.01f;
    TrainConfig tc = group_recipe();
    params_set_recurrent((ParamTable *)t, t->n - 1); /* a second recurrent parameter */
    Optimizer *opt = optimizer_create(backend_cpu(), OPTIMIZER_ADAMW, 0, t->total);
    optimizer_step(opt, m, &tc, GROUP_LR, 1);
    for (int i = 0; i < t->n; i++) {
        const ParamInfo *p = &t->p[i];
        for (int64_t j = 0; j < p->numel; j++) {
            int64_t k = p->offset + j;
            double gk = g[k], expect = w0[k];
            if (p->trainable) {
                /* first step: m^ = g, v^ = g^2, so the Adam step is g / (|g| + eps) */
                double lr = GROUP_LR * group_lr_scale(p), wd = group_weight_decay(p);
                expect -= lr * wd * w0[k] + lr * gk / (fabs(gk) + 1e-8);
            }
            CHECK_MSG(fabs(w[k] - expect) < 1e-6, "%s[%lld]: %g vs %g", p->name, (long long)j,
                      (double)w[k], expect);
        }
    }
    optimizer_free(opt);
    rt_free(w0);
    model_free(m);
}

/* torch.optim.RMSprop(lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0.05) on five weights over
 * three steps, the values torch 1.13 computes in float64 (the fourth weight's gradients of
 * 1e-9 tell eps outside the root from eps inside it). */
static void test_rmsprop_matches_torch(void) {
    real w[5] = {0.5, -1.25, 2.0, 0.0, 0.75}, sq[5] = {0};
    static const real g[3][5] = {
        {0.1, -0.2, 0.3, 1e-9, 0}, {-0.4, 0.05, 0.3, 2e-9, 0}, {0.2, 0.2, -0.1, -1e-9, 0}};
    static const double torch_w[3][5] = {
        {0.46837723139831416, -1.2183772272078395, 1.968377225898316, -0.0009693465699682846,
         0.7183772500649603},
        {0.4985398544404232, -1.2169920361426791, 1.945478743993908, 0.030632810172793762,
         0.6959094915857003},
        {0.4822596125313498, -1.2330293820802052, 1.9456438928153905, -0.0009750755013790899,
         0.6773395263594925}};
    static const double torch_sq[5] = {0.019088042049414066, 0.007528419519729989,
                                       0.02724712615503748, 2.348033583686648e-07,
                                       0.0003510935766372182};
    for (int t = 0; t < 3; t++) {
        backend_cpu()->rmsprop_update(w, NULL, sq, g[t], 5, 0.01, 0.9, 1e-8, 0.05);
        for (int i = 0; i < 5; i++)
            CHECK_MSG(fabs(w[i] - torch_w[t][i]) < 2e-6, "step %d w[%d]: %.9g vs torch %.9g", t + 1,
                      i, (double)w[i], torch_w[t][i]);
    }
    for (int i = 0; i < 5; i++)
        CHECK_MSG(fabs(sq[i] - torch_sq[i]) < 1e-6 * torch_sq[i] + 1e-12,
                  "square_avg[%d]: %.9g vs torch %.9g", i, (double)sq[i], torch_sq[i]);
}

/* optimizer_step with train.optimizer = rmsprop, two steps (the second at half the peak lr):
 * every trainable element against torch's RMSprop in double, each group with its learning
 * rate (scaled like the schedule) and its weight decay added to the gradient; frozen
 * parameters do not move. */
static void test_rmsprop_step_groups(void) {
    Model *m = group_model(4);
    const ParamTable *t = model_params(m);
    const real *w = model_weights(m);
    real *g = model_grads(m);
    TrainConfig tc = group_recipe();
    tc.optimizer = OPTIMIZER_RMSPROP;
    tc.rmsprop_alpha = 0.9;
    tc.rmsprop_eps = 1e-8;
    params_set_orthogonal((ParamTable *)t, t->n - 1); /* a second orthogonal parameter */
    double *rw = rt_malloc(sizeof(double) * (size_t)t->total),
           *rs = rt_calloc((size_t)t->total, sizeof(double));
    for (int64_t i = 0; i < t->total; i++) rw[i] = w[i];
    Optimizer *opt = optimizer_create(backend_cpu(), OPTIMIZER_RMSPROP, 0, t->total);
    CHECK(opt->spec->nstate == 1 && !strcmp(opt->spec->state_names[0], "square_avg"));
    static const double lrs[2] = {GROUP_LR, 0.5 * GROUP_LR};
    for (int step = 0; step < 2; step++) {
        for (int64_t i = 0; i < t->total; i++) g[i] = (real)((i * (step + 3)) % 11 - 5) * 0.01f;
        optimizer_step(opt, m, &tc, lrs[step], 1);
        for (int i = 0; i < t->n; i++) {
            const ParamInfo *p = &t->p[i];
            if (!p->trainable) continue;
            double scale = group_lr_scale(p), wd = group_weight_decay(p);
            for (int64_t k = p->offset; k < p->offset + p->numel; k++) {
                double gk = g[k] + wd * rw[k];
                rs[k] = 0.9 * rs[k] + 0.1 * gk * gk;
                rw[k] -= lrs[step] * scale * gk / (sqrt(rs[k]) + 1e-8);
            }
        }
        for (int i = 0; i < t->n; i++) {
            const ParamInfo *p = &t->p[i];
            int bad = 0;
            for (int64_t k = p->offset; k < p->offset + p->numel; k++)
                bad += !(fabs(w[k] - rw[k]) < 1e-6);
            CHECK_MSG(!bad, "step %d, %s: %d of %lld weights differ from torch's RMSprop", step + 1,
                      p->name, bad, (long long)p->numel);
        }
    }
    optimizer_free(opt);
    rt_free(rw);
    rt_free(rs);
    model_free(m);
}

static void test_clipping(void) {
    ModelConfig c = tiny(MIXER_FOX, PE_ROPE);
    Model *m = model_create(&c, backend_cpu());
    real *g = model_grads(m);
    const ParamTable *t = model_params(m);
    double ss = 0;
    for (int64_t i = 0; i < t->total; i++) {
        g[i] = (real)((i % 5) - 2);
        ss += (double)g[i] * g[i];
    }
    CHECK_CLOSE(sqrt(grad_sumsq(m, 0, t->total)), sqrt(ss), 1e-6);
    grads_scale(m, 0, t->total, 1.0 / sqrt(ss));
    CHECK_CLOSE(sqrt(grad_sumsq(m, 0, t->total)), 1.0, 1e-6);
    /* a slice: only its elements change */
    real before = g[t->total - 1];
    grads_scale(m, 10, 20, 2.0);
    CHECK(g[t->total - 1] == before);
    model_free(m);
}

/* The clip factor handed to optimizer_step leaves the weights, their copy and the state
 * exactly as grads_scale over the optimizer's range, then a step with factor 1, left them:
 * AdamW (the factor applied as adamw_runs reads the gradients) and RMSprop, over the whole
 * range and over a slice of it (a ZeRO-1 rank's), three steps. */
static void test_clip_folded(void) {
    for (int kind = 0; kind < 2; kind++)
        for (int slice = 0; slice < 2; slice++) {
            Model *a = group_model(6), *b = group_model(6);
            const ParamTable *t = model_params(a);
            int64_t lo = slice ? 13 : 0, hi = slice ? t->total - 7 : t->total;
            TrainConfig tc = group_recipe();
            tc.optimizer = (OptimizerKind)kind;
            tc.rmsprop_alpha = 0.9;
            tc.rmsprop_eps = 1e-8;
            Optimizer *oa = optimizer_create(backend_cpu(), tc.optimizer, lo, hi),
                      *ob = optimizer_create(backend_cpu(), tc.optimizer, lo, hi);
            for (int step = 0; step < 3; step++) {
                real *ga = model_grads(a), *gb = model_grads(b);
                for (int64_t i = 0; i < t->total; i++)
                    ga[i] = gb[i] = (real)((i * (step + 5)) % 13 - 6) * 0.3f;
                double clip = 0.37 + 0.2 * step;
                grads_scale(a, lo, hi, clip);
                optimizer_step(oa, a, &tc, GROUP_LR, 1);
                optimizer_step(ob, b, &tc, GROUP_LR, clip);
            }
            size_t bytes = sizeof(real) * (size_t)t->total;
            CHECK_MSG(!memcmp(model_weights(a), model_weights(b), bytes),
                      "%s, slice %d: weights differ", oa->spec->name, slice);
            for (int k = 0; k < oa->spec->nstate; k++)
                CHECK_MSG(!memcmp(oa->state[k], ob->state[k], sizeof(real) * (size_t)(hi - lo)),
                          "%s, slice %d: %s differs", oa->spec->name, slice,
                          oa->spec->state_names[k]);
            optimizer_free(oa);
            optimizer_free(ob);
            model_free(a);
            model_free(b);
        }
}

/* Two micro-batches of 2 rows with the loss averaged over all their labels give the
 * gradients of one batch of 4 rows (the trainer's accumulation, docs/models.md §training-recipe).
 */
static void test_accumulation_equals_full_batch(void) {
    for (int mixer = 0; mixer < 3; mixer++) {
        ModelConfig c = tiny((MixerKind)mixer, PE_SELECTIVE);
        c.doc_mask = 1;
        Model *m = model_create(&c, backend_cpu());
        model_init_weights(m, 5);
        int B = 4, T = 37;
        Rng r;
        rng_init(&r, 8, 0);
        int32_t tok[4 * 37], lab[4 * 37];
        for (int i = 0; i < B * T; i++) {
            tok[i] = (int32_t)rng_below(&r, 19);
            lab[i] = i % 11 == 0 ? -100 : (int32_t)rng_below(&r, 19);
        }
        const ParamTable *t = model_params(m);
        int64_t valid = 0;
        for (int i = 0; i < B * T; i++) valid += lab[i] != -100;
        Batch full = {B, T, tok, lab, NULL};
        model_zero_grads(m);
        double loss_full = model_forward(m, &full, 1.0 / valid, NULL) / valid;
        model_backward(m);
        real *g_full = tu_copy(model_grads(m), t->total);
        model_zero_grads(m);
        double loss_acc = 0;
        for (int half = 0; half < 2; half++) {
            Batch b = {2, T, tok + half * 2 * T, lab + half * 2 * T, NULL};
            loss_acc += model_forward(m, &b, (float)(1.0 / valid), NULL) / valid;
            model_backward(m);
        }
        CHECK_CLOSE(loss_acc, loss_full, 1e-5);
        double e = tu_rel_err(model_grads(m), g_full, t->total, 1e-6);
        CHECK_MSG(e < 1e-4, "%s: accumulated gradients differ from the full batch by %.3g",
                  mixer_name(c.mixer), e);
        rt_free(g_full);
        model_free(m);
    }
}

static const TestCase tests[] = {
    {"decay_groups", test_decay_groups},
    {"adamw_step_groups", test_adamw_step_groups},
    {"rmsprop_matches_torch", test_rmsprop_matches_torch},
    {"rmsprop_step_groups", test_rmsprop_step_groups},
    {"clipping", test_clipping},
    {"clip_folded", test_clip_folded},
    {"accumulation_equals_full_batch", test_accumulation_equals_full_batch},
};

TH_MAIN(tests)
