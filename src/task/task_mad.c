/* The six MAD tasks (task.type = mad_*; Poli et al. 2024, data/mad_tasks.h, docs/synthetic.md):
 * rows of task.seq_len tokens of the task.vocab vocabulary, which train.seq_len and
 * model.vocab_size follow; compression trains mad-lab's auto-encoder head.
 *
 * Scored by mad-lab's test accuracy: torchmetrics' MulticlassAccuracy with its default average =
 * "macro" and ignore_index = -100, logged per batch of 128 examples (mad-lab's batch_size)
 * and averaged over the batches by PyTorch Lightning (weighted by the batch's rows). Within
 * a batch: over the scored positions, the recall of each class (right / positions whose
 * target is the class), averaged over the classes that occur as a target or as a
 * prediction (a class only ever predicted wrongly counts 0). Predictions are argmaxes,
 * the first on ties, from one teacher-forced pass. token_accuracy is the plain fraction of
 * scored positions right. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "data/mad_tasks.h"
#include "data/synth_tasks.h"
#include "task/task.h"
#include "task/task_score.h"
#include "device/host_copy.h"
#include "util/error.h"

#define METRIC_BATCH 128
#define FORWARD_ROWS 32

static int argmax(const float *logits, int64_t row, int V) {
    int best = 0;
    const float *x = logits + row * V;
    for (int c = 1; c < V; c++)
        if (x[c] > x[best]) best = c;
    return best;
}

/* Macro recall over the classes seen as a target or a prediction. */
static double macro_recall(const int64_t *tp, const int64_t *fn, const int64_t *fp, int V) {
    double sum = 0;
    int classes = 0;
    for (int c = 0; c < V; c++) {
        if (tp[c] + fn[c] + fp[c] == 0) continue;
        classes++;
        if (tp[c] + fn[c]) sum += (double)tp[c] / (double)(tp[c] + fn[c]);
    }
    return classes ? sum / classes : 0;
}

/* Test examples 0 .. N-1 of the run `seed` (rows of T tokens, a V-token vocabulary; the
 * backend's [act] elements take act_size bytes): "accuracy" (mad-lab's test accuracy),
 * "token_accuracy", counts and the task setting. */
static json_t *mad_eval(Model *m, size_t act_size, const MadSpec *s, const TaskConfig *task,
                        uint64_t seed, int T, int V, int N) {
    size_t cells = (size_t)FORWARD_ROWS * T;
    int32_t *tok = rt_malloc(sizeof(int32_t) * cells), *lab = rt_malloc(sizeof(int32_t) * cells);
    uint8_t *greedy = rt_malloc(cells);
    double *logp = rt_malloc(sizeof(double) * cells);
    unsigned char *raw = rt_malloc(cells * (size_t)V * act_size);
    float *logits = rt_malloc(sizeof(float) * cells * (size_t)V);
    int64_t *tp = rt_malloc(sizeof(int64_t) * (size_t)V),
            *fn = rt_malloc(sizeof(int64_t) * (size_t)V),
            *fp = rt_malloc(sizeof(int64_t) * (size_t)V);
    int64_t right = 0, scored = 0;
    double weighted = 0;
    for (int b0 = 0; b0 < N; b0 += METRIC_BATCH) {
        int batch = N - b0 < METRIC_BATCH ? N - b0 : METRIC_BATCH;
        memset(tp, 0, sizeof(int64_t) * (size_t)V);
        memset(fn, 0, sizeof(int64_t) * (size_t)V);
        memset(fp, 0, sizeof(int64_t) * (size_t)V);
        for (int f0 = 0; f0 < batch; f0 += FORWARD_ROWS) {
            int rows = batch - f0 < FORWARD_ROWS ? batch - f0 : FORWARD_ROWS;
            for (int r = 0; r < rows; r++) {
                Rng rng;
                test_example_rng(&rng, seed, b0 + f0 + r);
                mad_example(s, &rng, 1, tok + (size_t)r * T, lab + (size_t)r * T);
            }
            Batch bt = {rows, T, tok, lab, NULL};
            int64_t M = model_token_logprobs(m, &bt, logp, greedy), q = 0;
            model_get_logits(m, raw);
            act_to_f32(act_size, logits, raw, M * V);
            for (size_t i = 0; i < (size_t)rows * T; i++) {
                if (lab[i] == -100) continue;
                int y = lab[i], pred = argmax(logits, q++, V);
                RT_ASSERT(y >= 0 && y < V);
                scored++;
                if (pred == y) {
                    right++;
                    tp[y]++;
                } else {
                    fn[y]++;
                    fp[pred]++;
                }
            }
            RT_ASSERT(q == M);
        }
        weighted += macro_recall(tp, fn, fp, V) * batch;
    }
    double acc = weighted / N, tok_acc = scored ? (double)right / (double)scored : 0;
    printf("%s: accuracy %.4f (mad-lab's: class-averaged per batch of %d), token accuracy %.4f "
           "over %lld scored "
           "positions of %d test examples\n",
           task->type, acc, METRIC_BATCH, tok_acc, (long long)scored, N);
    json_t *setting =
        json_pack("{s:i, s:i, s:i, s:f, s:i, s:i, s:b, s:i, s:I}", "vocab", task->vocab, "seq_len",
                  task->seq_len, "noise_vocab_size", task->noise_vocab_size, "frac_noise",
                  task->frac_noise, "k_motif_size", task->k_motif_size, "v_motif_size",
                  task->v_motif_size, "multi_query", task->multi_query, "num_tokens_to_copy",
                  task->num_tokens_to_copy, "train_examples", (json_int_t)task->train_examples);
    json_t *res = json_pack("{s:f, s:f, s:I, s:i, s:i, s:o}", "accuracy", acc, "token_accuracy",
                            tok_acc, "scored_positions", (json_int_t)scored, "examples", N,
                            "metric_batch", METRIC_BATCH, "setting", setting);
    rt_free(tok);
    rt_free(lab);
    rt_free(greedy);
    rt_free(logp);
    rt_free(logits);
    rt_free(raw);
    rt_free(tp);
    rt_free(fn);
    rt_free(fp);
    return res;
}

typedef struct {
    TaskRows base;
    MadSpec spec;
    int test;
} MadRows;

static void mad_row(const TaskRows *t, int64_t i, Rng *r, int32_t *tokens, int32_t *labels) {
    const MadRows *m = (const MadRows *)t;
    mad_example(&m->spec, r, m->test, tokens, labels);
}

static void mad_release(TaskRows *t) { mad_spec_free(&((MadRows *)t)->spec); }

static int mad_open_variant(MadTask variant, const TaskOpenArgs *a, TaskRows **out, char *err,
                            size_t errlen) {
    const TaskConfig *task = &a->rc->task;
    MadRows *m = rt_calloc(1, sizeof(MadRows));
    m->base = (TaskRows){.vocab = task->vocab, .row = mad_row, .release = mad_release};
    m->test = a->opt->split != SPLIT_TRAIN;
    const char *bad = mad_spec_make(&m->spec, variant, task, a->opt->seed);
    if (!bad && a->opt->seq_len != task->seq_len) bad = "train.seq_len differs from task.seq_len";
    if (!bad && mad_autoencoder(variant) != (a->rc->model.head == HEAD_AUTOENCODER))
        bad = mad_autoencoder(variant) ? "the task needs model.head = autoencoder"
                                       : "the task needs model.head = lm";
    if (bad) {
        task_rows_free(&m->base);
        return task_fail(err, errlen, task->type, bad);
    }
    *out = &m->base;
    return 0;
}

/* train.seq_len, model.vocab_size and model.head follow the task (an explicit other value is an
 * error). */
static const char *mad_shape_variant(MadTask variant, TaskShape *s, char *msg, size_t n) {
    const TaskConfig *task = &s->rc->task;
    int T = task->seq_len, V = task->vocab;
    ModelHead head = mad_autoencoder(variant) ? HEAD_AUTOENCODER : HEAD_LM;
    if (s->seq_len_given && s->rc->train.seq_len != T) {
        snprintf(msg, n,
                 "train.seq_len = %d: task %s with task.seq_len = %d has rows of %d tokens "
                 "(leave train.seq_len out)",
                 s->rc->train.seq_len, task->type, task->seq_len, T);
        return msg;
    }
    if (s->vocab_size_given && s->rc->model.vocab_size != V) {
        snprintf(msg, n,
                 "model.vocab_size = %d: task %s with task.vocab = %d needs %d (leave "
                 "model.vocab_size out)",
                 s->rc->model.vocab_size, task->type, task->vocab, V);
        return msg;
    }
    if (s->head_given && s->rc->model.head != head) {
        snprintf(msg, n,
                 "model.head = %s: task %s trains the %s head, as mad-lab does (leave "
                 "model.head out)",
                 HEAD_NAMES.names[s->rc->model.head], task->type, HEAD_NAMES.names[head]);
        return msg;
    }
    s->rc->train.seq_len = T;
    s->rc->model.vocab_size = V;
    s->rc->model.head = head;
    return NULL;
}

static json_t *mad_evaluate_variant(MadTask variant, const TaskEvalArgs *a) {
    const RunConfig *rc = a->rc;
    MadSpec spec;
    const char *bad = mad_spec_make(&spec, variant, &rc->task, rc->train.seed);
    if (bad) rt_die("[task] %s: %s", rc->task.type, bad);
    json_t *metrics = mad_eval(a->m, a->act_size, &spec, &rc->task, rc->train.seed,
                               rc->train.seq_len, rc->model.vocab_size, rc->task.test_examples);
    mad_spec_free(&spec);
    return metrics;
}

/* One TaskImpl per MAD task, each its hooks bound to its MadTask. */
#define MAD_TASK(impl, task_name, kind, keyset, extra_flags)                                       \
    static int impl##_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {      \
        return mad_open_variant(kind, a, out, err, errlen);                                        \
    }                                                                                              \
    static const char *impl##_shape(TaskShape *s, char *msg, size_t n) {                           \
        return mad_shape_variant(kind, s, msg, n);                                                 \
    }                                                                                              \
    static json_t *impl##_evaluate(const TaskEvalArgs *a) {                                        \
        return mad_evaluate_variant(kind, a);                                                      \
    }                                                                                              \
    const TaskImpl impl = {.name = task_name,                                                      \
                           .keys = keyset,                                                         \
                           .flags = extra_flags,                                                   \
                           .variant = kind,                                                        \
                           .shape = impl##_shape,                                                  \
                           .open = impl##_open,                                                    \
                           .evaluate = impl##_evaluate};

/* mad-lab's MADConfig: every task reads every key (mad_spec_make) */
static const char *const mad_keys[] = {"vocab",
                                       "seq_len",
                                       "noise_vocab_size",
                                       "frac_noise",
                                       "k_motif_size",
                                       "v_motif_size",
                                       "multi_query",
                                       "num_tokens_to_copy",
                                       "train_examples",
                                       "test_examples",
                                       NULL};

MAD_TASK(task_mad_in_context_recall, "mad_in_context_recall", MAD_RECALL, mad_keys, 0)
MAD_TASK(task_mad_noisy_in_context_recall, "mad_noisy_in_context_recall", MAD_NOISY_RECALL,
         mad_keys, 0)
MAD_TASK(task_mad_fuzzy_in_context_recall, "mad_fuzzy_in_context_recall", MAD_FUZZY_RECALL,
         mad_keys, 0)
MAD_TASK(task_mad_selective_copying, "mad_selective_copying", MAD_SELECTIVE_COPY, mad_keys, 0)
MAD_TASK(task_mad_compression, "mad_compression", MAD_COMPRESSION, mad_keys, TASK_AUTOENCODER)
MAD_TASK(task_mad_memorization, "mad_memorization", MAD_MEMORIZATION, mad_keys, 0)
