/* Line charts as SVG: the run's loss and learning-rate plots (train/metrics.c) and the tasks'
 * accuracy plots (src/task/). */
#ifndef ROTOR_PLOT_H
#define ROTOR_PLOT_H

#include <math.h>

/* A line chart as SVG: up to 8 series of n points (x, y) on shared axes, with a legend. */
typedef struct {
    const char *name;
    const double *x, *y;
    int n;
} PlotSeries;
/* Axes: y from y_lo to y_hi (both NAN: the data's range); log_x: a log2 x axis (x > 0). */
typedef struct {
    double y_lo, y_hi;
    int log_x;
} PlotAxes;
#define PLOT_AUTO ((PlotAxes){NAN, NAN, 0})
#define PLOT_FRACTION ((PlotAxes){0, 1, 0})
void plot_svg(const char *path, const char *title, const char *xlabel, const char *ylabel,
              const PlotSeries *series, int nseries, PlotAxes axes);

#endif
