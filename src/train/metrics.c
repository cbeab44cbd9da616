#include "train/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fsutil.h"

void metrics_open(Metrics *m, const char *run_dir, int64_t keep_upto) {
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
}

void metrics_log(Metrics *m, json_t *obj) {
    char *s = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(9));
    fprintf(m->f, "%s\n", s);
    fflush(m->f);
    free(s);
    json_decref(obj);
}

void metrics_close(Metrics *m) {
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

static double plot_x(double x, int log_x) { return log_x ? log2(x) : x; }

void plot_svg(const char *path, const char *title, const char *xlabel, const char *ylabel,
              const PlotSeries *series, int nseries, PlotAxes axes) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int k = 0; k < nseries; k++)
        for (int i = 0; i < series[k].n; i++) {
            if (!isfinite(series[k].y[i])) continue;
            double x = plot_x(series[k].x[i], axes.log_x);
            x0 = fmin(x0, x), x1 = fmax(x1, x);
            y0 = fmin(y0, series[k].y[i]), y1 = fmax(y1, series[k].y[i]);
        }
    if (!isfinite(x0)) return;
    if (!isnan(axes.y_lo)) y0 = axes.y_lo;
    if (!isnan(axes.y_hi)) y1 = axes.y_hi;
    if (x1 <= x0) x1 = x0 + 1;
    if (y1 <= y0) y1 = y0 + 1e-9 + fabs(y0) * 0.01;
    const double W = 720, Hh = 420, L = 70, R = 20, T = 40, B = 50;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" font-size=\"12\">\n", W, Hh);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%g\" y=\"24\" font-size=\"15\">%s</text>\n", L, title);
    fprintf(f, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#444\"/>\n", L, T, W - L - R, Hh - T - B);
    for (int i = 0; i <= 4; i++) {
        double fy = T + (Hh - T - B) * i / 4.0, vy = y1 - (y1 - y0) * i / 4.0;
        double fx = L + (W - L - R) * i / 4.0, vx = x0 + (x1 - x0) * i / 4.0;
        fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>\n", L, fy, W - R, fy);
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.4g</text>\n", L - 6, fy + 4, vy);
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%.*g</text>\n", fx, Hh - B + 18,
                axes.log_x ? 3 : 6, axes.log_x ? exp2(vx) : vx);
    }
    fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n", (L + W - R) / 2, Hh - 10, xlabel);
    fprintf(f, "<text x=\"16\" y=\"%g\" transform=\"rotate(-90 16 %g)\" text-anchor=\"middle\">%s</text>\n", (T + Hh - B) / 2, (T + Hh - B) / 2, ylabel);
    static const char *const colors[8] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    for (int k = 0; k < nseries && k < 8; k++) {
        if (!series[k].n) continue;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colors[k]);
        for (int i = 0; i < series[k].n; i++) {
            if (!isfinite(series[k].y[i])) continue;
            double px = L + (W - L - R) * (plot_x(series[k].x[i], axes.log_x) - x0) / (x1 - x0);
            double py = T + (Hh - T - B) * (y1 - series[k].y[i]) / (y1 - y0);
            fprintf(f, "%.1f,%.1f ", px, py);
        }
        fprintf(f, "\"/>\n");
        fprintf(f, "<text x=\"%g\" y=\"%g\" fill=\"%s\">%s</text>\n", W - R - 170, T + 18 + 16.0 * k, colors[k], series[k].name);
    }
    fprintf(f, "</svg>\n");
    fclose(f);
    fs_write_atomic(path, buf, len);
    free(buf);
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
        if ((v = json_object_get(j, "loss")) && json_is_number(v)) series_add(&loss, x, json_number_value(v));
        if ((v = json_object_get(j, "val_loss")) && json_is_number(v)) series_add(&val, x, json_number_value(v));
        if ((v = json_object_get(j, "lr")) && json_is_number(v)) series_add(&lr, x, json_number_value(v));
        if ((v = json_object_get(j, "val_accuracy")) && json_is_number(v)) series_add(&acc, x, json_number_value(v));
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
