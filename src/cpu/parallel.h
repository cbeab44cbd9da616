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

#endif
