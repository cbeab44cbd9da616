/* OpenMP helpers that also compile without OpenMP. */
#ifndef ROTOR_PARALLEL_H
#define ROTOR_PARALLEL_H

#ifdef _OPENMP
#include <omp.h>
static inline int par_nthreads(void) { return omp_get_num_threads(); }
static inline int par_thread(void) { return omp_get_thread_num(); }
static inline int par_max_threads(void) { return omp_get_max_threads(); }
#else
static inline int par_nthreads(void) { return 1; }
static inline int par_thread(void) { return 0; }
static inline int par_max_threads(void) { return 1; }
#endif

/* Deterministic parallel sums. OpenMP's reduction clause combines thread partials in
 * arrival order, so floating-point results vary run to run; training must be reproducible
 * (a resumed run equals an uninterrupted one), so sums go through per-thread slots that
 * are added in thread order. Usage:
 *     double *part = par_partials();   // one zeroed slot per thread
 *     #pragma omp parallel
 *     { double *acc = part + par_thread();
 *       #pragma omp for schedule(static)
 *       for (...) *acc += ...; }
 *     double total = par_sum(part);
 */
double *par_partials(void);
double par_sum(double *partials);

#endif
