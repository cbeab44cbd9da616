#include "cpu/parallel.h"

#include "util/error.h"

double *par_partials(void) { return rt_calloc((size_t)par_max_threads(), sizeof(double)); }

double par_sum(double *partials) {
    double total = 0;
    for (int t = 0; t < par_max_threads(); t++) total += partials[t];
    rt_free(partials);
    return total;
}
