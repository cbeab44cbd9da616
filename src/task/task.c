/* The task registry: one line per task in ROTOR_TASKS. */
#include "task/task.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/error.h"
#include "util/name_list.h"

/* Each task's TaskImpl, defined beside its code (task_*.c); the order is that of `rotor train
 * --help`. */
#define ROTOR_TASKS(X)                                                                             \
    X(task_mqar)                                                                                   \
    X(task_state)                                                                                  \
    X(task_copy)                                                                                   \
    X(task_copy_memory)                                                                            \
    X(task_chars)                                                                                  \
    X(task_mad_in_context_recall)                                                                  \
    X(task_mad_noisy_in_context_recall)                                                            \
    X(task_mad_fuzzy_in_context_recall)                                                            \
    X(task_mad_selective_copying)                                                                  \
    X(task_mad_compression)                                                                        \
    X(task_mad_memorization)                                                                       \
    X(task_seq_image)                                                                              \
    X(task_pathfinder)                                                                             \
    X(task_listops)                                                                                \
    X(task_text_bytes)                                                                             \
    X(task_aan)                                                                                    \
    X(task_speech_commands)

#define DECLARE(impl) extern const TaskImpl impl;
ROTOR_TASKS(DECLARE)
#undef DECLARE
#define ENTRY(impl) &impl,
static const TaskImpl *const TASKS[] = {ROTOR_TASKS(ENTRY)};
#undef ENTRY
#define NTASKS ((int)(sizeof TASKS / sizeof TASKS[0]))

const TaskImpl *task_of(const TaskConfig *t) {
    for (int i = 0; i < NTASKS; i++)
        if (!strcmp(TASKS[i]->name, t->type)) return TASKS[i];
    return NULL;
}

void task_resolve_alias(TaskConfig *t) {
    for (int i = 0; i < NTASKS; i++)
        for (const char *const *a = TASKS[i]->aliases; a && *a; a++)
            if (!strcasecmp(*a, t->type)) {
                TASKS[i]->resolve_alias(t, *a);
                return;
            }
}

const char *const *task_type_names(int *n) {
    static const char *names[64];
    static int count;
    if (!count) {
        names[count++] = "none";
        for (int i = 0; i < NTASKS; i++) {
            names[count++] = TASKS[i]->name;
            for (const char *const *a = TASKS[i]->aliases; a && *a; a++) names[count++] = *a;
        }
        RT_ASSERT(count <= 64);
    }
    *n = count;
    return names;
}

int task_reads_key(const TaskImpl *task, const char *key) {
    for (const char *const *k = task->keys; k && *k; k++)
        if (!strcmp(*k, key)) return 1;
    return 0;
}

/* Whether a task is listed: it reads key, or has every bit of flags. */
static int listed(const TaskImpl *t, const char *key, unsigned flags) {
    return (!key || task_reads_key(t, key)) && (t->flags & flags) == flags;
}

/* The names of the listed tasks, joined (buf may be NULL); returns their count. */
static int list_names(const char *key, unsigned flags, char *buf, size_t n) {
    const char *names[NTASKS];
    int count = 0;
    for (int i = 0; i < NTASKS; i++)
        if (listed(TASKS[i], key, flags)) names[count++] = TASKS[i]->name;
    if (buf) name_list(buf, n, names, count);
    return count;
}

void task_names(char *buf, size_t n) { list_names(NULL, 0, buf, n); }
int task_names_with_key(const char *key, char *buf, size_t n) { return list_names(key, 0, buf, n); }
void task_names_with_flags(unsigned flags, char *buf, size_t n) { list_names(NULL, flags, buf, n); }

void task_rows_free(TaskRows *t) {
    if (!t) return;
    if (t->release) t->release(t);
    rt_free(t);
}

typedef struct {
    TaskRows base;
    void *set;
    void (*set_row)(void *set, int64_t i, int32_t *tokens, int32_t *labels);
    void (*set_free)(void *set);
} IndexedRows;

static void indexed_row(const TaskRows *t, int64_t i, Rng *r, int32_t *tokens, int32_t *labels) {
    const IndexedRows *x = (const IndexedRows *)t;
    (void)r;
    x->set_row(x->set, i, tokens, labels);
}

static void indexed_release(TaskRows *t) {
    IndexedRows *x = (IndexedRows *)t;
    x->set_free(x->set);
}

TaskRows *indexed_rows(void *set,
                       void (*set_row)(void *set, int64_t i, int32_t *tokens, int32_t *labels),
                       void (*set_free)(void *set), int64_t examples, int vocab) {
    IndexedRows *x = rt_calloc(1, sizeof(IndexedRows));
    *x = (IndexedRows){
        {.examples = examples, .vocab = vocab, .row = indexed_row, .release = indexed_release},
        set,
        set_row,
        set_free};
    return &x->base;
}
