#include "train/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fsutil.h"
#include "util/plot.h"

void metrics_open(Metrics *m, const char *run_dir, int64_t keep_upto, int tensorboard) {
    memset(m, 0, sizeof(*m));
    snprintf(m->path, sizeof m->path, "%s/metrics.jsonl", run_dir);
    m->tty = isatty(STDOUT_FILENO);
    FILE *old = fopen(m->path, "r");
    if (old) {
        /* keep only the entries of steps the resumed run will not redo */
        char *kept = NULL;
        size_t kept_len = 0;
        FILE *mem = open_memstream(&kept, &kept_len);
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, old) > 0) {
            json_t *j = json_loads(line, 0, NULL);
            json_t *st = j ? json_object_get(j, "step") : NULL;
            if (st && json_is_integer(st) && json_integer_value(st) <= keep_upto) fputs(line, mem);
            json_decref(j);
        }
        free(line);
        fclose(old);
        fclose(mem);
        fs_write_atomic(m->path, kept, kept_len);
        free(kept);
    }
    m->f = fopen(m->path, "a");
    if (!m->f) rt_die("cannot open %s for writing: %s", m->path, strerror(errno));
    if (tensorboard) {
        char dir[1200], err[1400];
        snprintf(dir, sizeof dir, "%s/tensorboard", run_dir);
        if (!(m->tb = tb_open(dir, keep_upto + 1, err, sizeof err)))
            rt_die("run.tensorboard: %s", err);
    }
}

/* The numbers of obj as scalars under prefix/key (objects recursively; arrays, strings and
 * nulls are not scalars). */
static void tb_numbers(Metrics *m, const char *prefix, json_t *obj, int64_t step, double t) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        char tag[256], err[1400];
        if (!strcmp(prefix, "") && !strcmp(key, "step")) continue;
        if (prefix[0])
            snprintf(tag, sizeof tag, "%s/%s", prefix, key);
        else if (!strncmp(key, "val_", 4))
            snprintf(tag, sizeof tag, "val/%s", key + 4);
        else if (!strncmp(key, "eval_", 5))
            snprintf(tag, sizeof tag, "eval/%s", key + 5);
        else
            snprintf(tag, sizeof tag, "train/%s", key);
        if (json_is_object(v))
            tb_numbers(m, tag, v, step, t);
        else if (json_is_number(v) &&
                 tb_scalar(m->tb, tag, step, t, (float)json_number_value(v), err, sizeof err))
            rt_die("run.tensorboard: %s", err);
    }
}

void metrics_log(Metrics *m, json_t *obj) {
    char *s = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(9));
    fprintf(m->f, "%s\n", s);
    fflush(m->f);
    free(s);
    const json_t *step = json_object_get(obj, "step");
    if (m->tb && json_is_integer(step)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        tb_numbers(m, "", obj, json_integer_value(step),
                   (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec);
        tb_flush(m->tb);
    }
    json_decref(obj);
}

void metrics_close(Metrics *m) {
    tb_close(m->tb);
    m->tb = NULL;
    if (m->f) fclose(m->f);
    if (m->line_open) fputc('\n', stdout);
    m->f = NULL;
}

void progress_print(Metrics *m, const char *line) {
    if (m->tty) {
        printf("\r\033[K%s", line);
        m->line_open = 1;
    } else {
        printf("%s\n", line);
    }
    fflush(stdout);
}

void progress_message(Metrics *m, const char *fmt, ...) {
    if (m->line_open) {
        fputc('\n', stdout);
        m->line_open = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

/* ---- plots ---- */

typedef struct {
    double *x, *y;
    int n, cap;
} Series;

static void series_add(Series *s, double x, double y) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->x = rt_realloc(s->x, sizeof(double) * (size_t)s->cap);
        s->y = rt_realloc(s->y, sizeof(double) * (size_t)s->cap);
    }
    s->x[s->n] = x;
    s->y[s->n++] = y;
}

void plots_write(const char *run_dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir);
    FILE *f = fopen(path, "r");
    if (!f) return;
    Series loss = {0}, val = {0}, lr = {0}, acc = {0};
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j) continue;
        json_t *st = json_object_get(j, "step"), *v;
        double x = json_number_value(st);
        if ((v = json_object_get(j, "loss")) && json_is_number(v))
            series_add(&loss, x, json_number_value(v));
        if ((v = json_object_get(j, "val_loss")) && json_is_number(v))
            series_add(&val, x, json_number_value(v));
        if ((v = json_object_get(j, "lr")) && json_is_number(v))
            series_add(&lr, x, json_number_value(v));
        if ((v = json_object_get(j, "val_accuracy")) && json_is_number(v))
            series_add(&acc, x, json_number_value(v));
        json_decref(j);
    }
    free(line);
    fclose(f);
    snprintf(path, sizeof path, "%s/loss.svg", run_dir);
    PlotSeries losses[2] = {{"train", loss.x, loss.y, loss.n}, {"validation", val.x, val.y, val.n}};
    plot_svg(path, "Loss", "step", "cross-entropy (nats/token)", losses, 2, PLOT_AUTO);
    snprintf(path, sizeof path, "%s/lr.svg", run_dir);
    PlotSeries lrs[1] = {{"lr", lr.x, lr.y, lr.n}};
    plot_svg(path, "Learning rate", "step", "lr", lrs, 1, PLOT_AUTO);
    if (acc.n) {
        snprintf(path, sizeof path, "%s/accuracy.svg", run_dir);
        PlotSeries accs[1] = {{"validation", acc.x, acc.y, acc.n}};
        plot_svg(path, "Validation accuracy", "step", "accuracy", accs, 1, PLOT_FRACTION);
    }
    Series *all[4] = {&loss, &val, &lr, &acc};
    for (int k = 0; k < 4; k++) {
        rt_free(all[k]->x);
        rt_free(all[k]->y);
    }
}
