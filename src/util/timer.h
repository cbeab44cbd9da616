#ifndef ROTOR_TIMER_H
#define ROTOR_TIMER_H

#include <time.h>

/* Monotonic wall-clock seconds. */
static inline double rt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
