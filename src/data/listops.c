#include "data/listops.h"

#include <stdio.h>
#include <string.h>

#include "data/synth_tasks.h"
#include "util/error.h"

#define BRANCH_P                                                                                   \
    0.25 /* LRA's VALUE_P: below max_depth a node is an operator when random() <= 0.25 */
#define CHECK_TREES 100000 /* expressions drawn by listops_check */

static const uint8_t OPS[4] = {LISTOPS_MIN, LISTOPS_MAX, LISTOPS_MED, LISTOPS_SM};

static int is_digit(uint8_t x) { return x >= LISTOPS_DIGIT0 && x < LISTOPS_DIGIT0 + 10; }
static int is_op(uint8_t x) { return x >= LISTOPS_MIN && x <= LISTOPS_SM; }

/* ---- values ---- */

/* The argument values of one operator, as a histogram. */
typedef struct {
    int count, sum, hist[10];
} Args;

static void add_arg(Args *a, int v) {
    a->count++;
    a->sum += v;
    a->hist[v]++;
}

/* The k-th smallest argument (0-based). */
static int kth(const Args *a, int k) {
    for (int v = 0; v < 10; v++) {
        if (k < a->hist[v]) return v;
        k -= a->hist[v];
    }
    RT_ASSERT(0);
    return -1;
}

static int apply(uint8_t op, const Args *a) {
    switch (op) {
    case LISTOPS_MIN: return kth(a, 0);
    case LISTOPS_MAX: return kth(a, a->count - 1);
    case LISTOPS_MED:
        return (kth(a, (a->count - 1) / 2) + kth(a, a->count / 2)) / 2; /* int(np.median) */
    default: return a->sum % 10;                                        /* SM */
    }
}

int listops_eval(const uint8_t *tok, int n) {
    typedef struct {
        uint8_t op;
        Args args;
    } Frame;
    Frame *st = rt_malloc(sizeof(Frame) * (size_t)(n > 0 ? n : 1));
    int depth = 0, value = -1;
    for (int i = 0; i < n; i++) {
        uint8_t x = tok[i];
        if (is_op(x)) {
            memset(&st[depth], 0, sizeof(Frame));
            st[depth++].op = x;
            continue;
        }
        int v;
        if (is_digit(x)) {
            v = x - LISTOPS_DIGIT0;
        } else if (x == LISTOPS_END && depth > 0 && st[depth - 1].args.count > 0) {
            depth--;
            v = apply(st[depth].op, &st[depth].args);
        } else {
            break; /* not a token, "]" without an open operator, or an operator without arguments */
        }
        if (depth > 0) {
            add_arg(&st[depth - 1].args, v);
        } else {
            if (i == n - 1) value = v; /* the whole expression, with nothing after it */
            break;
        }
    }
    rt_free(st);
    return value;
}

/* ---- the generator ---- */

typedef struct {
    const ListopsSpec *s;
    Rng *r;
    uint8_t *tok;
    int n, cap; /* cap: the longest admissible expression, max_length - 1 */
    int full;   /* the expression outgrew cap: it will be rejected */
} Tree;

static void emit(Tree *t, uint8_t x) {
    if (t->n == t->cap)
        t->full = 1;
    else
        t->tok[t->n++] = x;
}

/* A node at `depth` and its subtree; returns its value. The operator is drawn before its
 * arguments (LRA draws it after them: the same distribution, independent draws). */
static int node(Tree *t, int depth) {
    if (depth < t->s->max_depth && rng_uniform(t->r) <= BRANCH_P) {
        uint8_t op = OPS[rng_below(t->r, 4)];
        int nargs = 2 + (int)rng_below(t->r, (uint64_t)(t->s->max_args - 1));
        Args a = {0};
        emit(t, op);
        for (int k = 0; k < nargs && !t->full; k++) add_arg(&a, node(t, depth + 1));
        emit(t, LISTOPS_END);
        return t->full ? 0 : apply(op, &a);
    }
    int v = (int)rng_below(t->r, 10);
    emit(t, (uint8_t)(LISTOPS_DIGIT0 + v));
    return v;
}

/* One expression into tok; its length, or 0 when it is longer than max_length - 1. */
static int tree(const ListopsSpec *s, Rng *r, uint8_t *tok, int *value) {
    Tree t = {s, r, tok, 0, s->max_length - 1, 0};
    *value = node(&t, 1);
    return t.full ? 0 : t.n;
}

static int admissible(const ListopsSpec *s, int n) {
    return n > s->min_length && n < s->max_length;
}

/* The split of an expression: a hash of its tokens, 6 of 8 classes train, 1 validation, 1 test. */
static int stream_of(const uint8_t *tok, int n) {
    uint64_t h = 0xCBF29CE484222325ull; /* FNV-1a, then splitmix64's mixing */
    for (int i = 0; i < n; i++) h = (h ^ tok[i]) * 0x100000001B3ull;
    uint64_t c = rng_splitmix64(&h) % 8;
    return c < 6 ? STREAM_TRAIN : c == 6 ? STREAM_VAL : STREAM_TEST;
}

const char *listops_check(const ListopsSpec *s) {
    static char msg[512];
    if (s->max_depth < 1) {
        snprintf(msg, sizeof msg, "task.max_depth = %d must be at least 1", s->max_depth);
    } else if (s->max_args < 2) {
        snprintf(msg, sizeof msg, "task.max_args = %d must be at least 2", s->max_args);
    } else if (s->min_length < 0 || s->max_length < s->min_length + 2) {
        snprintf(msg, sizeof msg,
                 "task.min_length = %d, task.max_length = %d: expressions have more than "
                 "min_length and fewer than "
                 "max_length tokens, so max_length must be at least min_length + 2 (and min_length "
                 ">= 0)",
                 s->min_length, s->max_length);
    } else {
        uint8_t *tok = rt_malloc((size_t)s->max_length);
        Rng r;
        rng_init(&r, 0x115705ull, 0);
        int found[3] = {0, 0, 0}, any = 0, value; /* admissible expressions per split (stream) */
        for (int k = 0; k < CHECK_TREES && !(found[0] && found[1] && found[2]); k++) {
            int n = tree(s, &r, tok, &value);
            if (admissible(s, n)) found[stream_of(tok, n)] = any = 1;
        }
        rt_free(tok);
        if (found[0] && found[1] && found[2]) return NULL;
        snprintf(
            msg, sizeof msg,
            "%s of more than task.min_length = %d and fewer than task.max_length = %d tokens among "
            "%d drawn with "
            "task.max_depth = %d and task.max_args = %d: widen the lengths or raise the limits",
            any ? "too few distinct expressions to fill the training, validation and test splits "
                  "(a hash of its "
                  "tokens puts each in one)"
                : "no expression",
            s->min_length, s->max_length, CHECK_TREES, s->max_depth, s->max_args);
    }
    return msg;
}

int listops_example(const ListopsSpec *s, uint64_t seed, int stream, int64_t i, uint8_t *tok,
                    int *value) {
    Rng r;
    task_example_rng(&r, seed, stream, i);
    for (;;) {
        int n = tree(s, &r, tok, value);
        if (admissible(s, n) && stream_of(tok, n) == stream) return n;
    }
}

/* ---- text ---- */

int listops_tokenize(const char *text, uint8_t *tok, int cap, char *err, size_t errlen) {
    static const char *const WORDS[] = {"[MIN", "[MAX", "[MED", "[SM", "]"};
    static const char SPACE[] = " \t\n\r\v\f";
    int n = 0;
    for (const char *p = text + strspn(text, SPACE); *p; p += strspn(p, SPACE)) {
        size_t len = strcspn(p, SPACE);
        int id = -1;
        if (len == 1 && p[0] >= '0' && p[0] <= '9') id = LISTOPS_DIGIT0 + (p[0] - '0');
        for (int w = 0; w < 5 && id < 0; w++)
            if (len == strlen(WORDS[w]) && !memcmp(p, WORDS[w], len)) id = LISTOPS_MIN + w;
        if (id < 0 && !(len == 1 && (p[0] == '(' || p[0] == ')')))
            return rt_error(
                err, errlen, NULL,
                "unknown token '%.*s' (ListOps has ( ) [MIN [MAX [MED [SM ] and the digits 0-9)",
                len > 40 ? 40 : (int)len, p);
        if (id >= 0) {
            if (n == cap) return rt_error(err, errlen, NULL, "more than %d tokens", cap);
            tok[n++] = (uint8_t)id;
        }
        p += len;
    }
    return n;
}
