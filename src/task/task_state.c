/* task.type = state: word problems of a finite group (S2, A3, S3, A5, S5; Selective RoPE's
 * state tracking, docs/synthetic.md): BOS then group elements, each labeled with the product
 * of the prefix (data/synth_tasks.h). Trained at train.seq_len, tested at task.test_len: token
 * accuracy and the prefix accuracy curve (plotted). parity, a3, s3, a5 and s5 name state with
 * that group. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "data/synth_tasks.h"
#include "task/task.h"
#include "task/task_score.h"
#include "util/error.h"
#include "util/plot.h"

typedef struct {
    TaskRows base;
    Group group;
    int T;
} StateRows;

static void state_row(const TaskRows *t, int64_t i, Rng *r, int32_t *tokens, int32_t *labels) {
    const StateRows *s = (const StateRows *)t;
    state_example(&s->group, r, s->T, tokens, labels);
}

static void state_release(TaskRows *t) { group_free(&((StateRows *)t)->group); }

static int state_open(const TaskOpenArgs *a, TaskRows **out, char *err, size_t errlen) {
    StateRows *s = rt_calloc(1, sizeof(StateRows));
    const char *bad = group_make(&s->group, a->rc->task.group);
    if (bad) {
        task_rows_free(&s->base);
        return task_fail(err, errlen, "state", bad);
    }
    s->T = a->opt->seq_len;
    /* vocab: the elements and BOS */
    s->base = (TaskRows){.vocab = s->group.order + 1, .row = state_row, .release = state_release};
    *out = &s->base;
    return 0;
}

/* Sequences are BOS + group elements: element t (1-based) sits at token t. */
static json_t *state_evaluate(const TaskEvalArgs *a) {
    const RunConfig *rc = a->rc;
    int T = rc->task.test_len, E = T - 1, N = rc->task.test_examples,
        train_E = rc->train.seq_len - 1, B = TASK_EVAL_BATCH;
    TestRows tr;
    test_rows_open(&tr, a->m, rc, SPLIT_TEST, T);
    const uint8_t *g = tr.greedy;
    int64_t *first_wrong =
        rt_calloc((size_t)E + 1, sizeof(int64_t)); /* histogram of the first wrong element */
    int64_t right = 0;
    for (int i = 0; i < N; i += B) {
        int rows = N - i < B ? N - i : B;
        RT_ASSERT(test_rows_score(&tr, i, rows) == (int64_t)rows * E);
        for (int b = 0; b < rows; b++) {
            int fw = E;
            for (int t = 0; t < E; t++) {
                right += g[b * E + t];
                if (!g[b * E + t] && fw == E) fw = t;
            }
            first_wrong[fw]++;
        }
    }
    /* prefix accuracy at t: the sequences whose first t elements are all predicted right */
    double *curve = rt_malloc(sizeof(double) * (size_t)E),
           *xs = rt_malloc(sizeof(double) * (size_t)E);
    int64_t still = N;
    json_t *jc = json_array();
    for (int t = 1; t <= E; t++) {
        still -= first_wrong[t - 1];
        curve[t - 1] = (double)still / N;
        xs[t - 1] = t;
        json_array_append_new(jc, json_real(curve[t - 1]));
    }
    double tok_acc = (double)right / ((double)N * E),
           at_train = curve[(train_E < E ? train_E : E) - 1], at_test = curve[E - 1];
    printf("state %s: token accuracy %.4f; sequences right up to t = %d: %.4f, up to t = %d: %.4f "
           "(%d test sequences)\n",
           rc->task.group, tok_acc, train_E, at_train, E, at_test, N);
    char *path = rt_sprintf("%s/prefix_accuracy.svg", rc->run.dir), title[128];
    snprintf(title, sizeof title, "%s word problems: test sequences right up to t (trained at %d)",
             rc->task.group, train_E);
    PlotSeries s = {"prefix accuracy", xs, curve, E};
    plot_svg(path, title, "t (group elements)", "fraction of sequences", &s, 1, PLOT_FRACTION);
    rt_free(path);
    json_t *res = json_pack(
        "{s:s, s:f, s:i, s:f, s:i, s:f, s:i, s:o}", "group", rc->task.group, "token_accuracy",
        tok_acc, "train_len", train_E, "prefix_accuracy_train_len", at_train, "test_len", E,
        "prefix_accuracy_test_len", at_test, "examples", N, "prefix_accuracy", jc);
    test_rows_close(&tr);
    rt_free(first_wrong);
    rt_free(curve);
    rt_free(xs);
    return res;
}

/* parity is S2; the others name their group */
static const char *const state_aliases[] = {"parity", "a3", "s3", "a5", "s5", NULL};
static const char *const state_alias_groups[] = {"S2", "A3", "S3", "A5", "S5"};

static void state_resolve_alias(TaskConfig *t, const char *alias) {
    for (int i = 0; state_aliases[i]; i++)
        if (!strcasecmp(alias, state_aliases[i]))
            snprintf(t->group, sizeof t->group, "%s", state_alias_groups[i]);
    snprintf(t->type, sizeof t->type, "state");
}

static const char *const state_keys[] = {"group", "test_len", "train_examples", "test_examples",
                                         NULL};

const TaskImpl task_state = {
    .name = "state",
    .aliases = state_aliases,
    .keys = state_keys,
    .resolve_alias = state_resolve_alias,
    .open = state_open,
    .evaluate = state_evaluate,
};
