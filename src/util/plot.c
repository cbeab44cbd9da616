/* Line charts as SVG files (util/plot.h). */
#include "util/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/fsutil.h"

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
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n",
            W, Hh);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%g\" y=\"24\" font-size=\"15\">%s</text>\n", L, title);
    fprintf(f,
            "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#444\"/>\n",
            L, T, W - L - R, Hh - T - B);
    for (int i = 0; i <= 4; i++) {
        double fy = T + (Hh - T - B) * i / 4.0, vy = y1 - (y1 - y0) * i / 4.0;
        double fx = L + (W - L - R) * i / 4.0, vx = x0 + (x1 - x0) * i / 4.0;
        fprintf(f, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>\n", L, fy,
                W - R, fy);
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.4g</text>\n", L - 6, fy + 4, vy);
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%.*g</text>\n", fx, Hh - B + 18,
                axes.log_x ? 3 : 6, axes.log_x ? exp2(vx) : vx);
    }
    fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s</text>\n", (L + W - R) / 2,
            Hh - 10, xlabel);
    fprintf(f,
            "<text x=\"16\" y=\"%g\" transform=\"rotate(-90 16 %g)\" "
            "text-anchor=\"middle\">%s</text>\n",
            (T + Hh - B) / 2, (T + Hh - B) / 2, ylabel);
    static const char *const colors[8] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                          "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    for (int k = 0; k < nseries && k < 8; k++) {
        if (!series[k].n) continue;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                colors[k]);
        for (int i = 0; i < series[k].n; i++) {
            if (!isfinite(series[k].y[i])) continue;
            double px = L + (W - L - R) * (plot_x(series[k].x[i], axes.log_x) - x0) / (x1 - x0);
            double py = T + (Hh - T - B) * (y1 - series[k].y[i]) / (y1 - y0);
            fprintf(f, "%.1f,%.1f ", px, py);
        }
        fprintf(f, "\"/>\n");
        fprintf(f, "<text x=\"%g\" y=\"%g\" fill=\"%s\">%s</text>\n", W - R - 170,
                T + 18 + 16.0 * k, colors[k], series[k].name);
    }
    fprintf(f, "</svg>\n");
    fclose(f);
    fs_write_atomic(path, buf, len);
    free(buf);
}
