/* run.profile_steps = A:B: the backend's per-op timings (Backend.profile) of training steps A
 * to B (counted from 1, as metrics.jsonl counts them), written by rank 0 into RUN_DIR/profile:
 *   trace.json  Chrome / Perfetto trace-event JSON (chrome://tracing, ui.perfetto.dev), in
 *               microseconds from the first profiled step's start: per step a "step N"
 *               event over its wall time and inside it, back to back from its
 *               start in the order first called, one event per op and shape whose duration is
 *               that op's device time summed over the step's calls (args: calls, shape, flops,
 *               bytes); the gaps to the step's end are the time between ops
 *   ops.tsv     per op and shape over all the profiled steps: calls, ms, share of the steps'
 *               wall time, GFLOP/s, GB/s (the same sums as the trace's events)
 * Profiled steps synchronise the device around every op: they run slower than the others. */
#ifndef ROTOR_STEP_PROFILE_H
#define ROTOR_STEP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/* "A:B" with 1 <= A <= B into *first, *last; "" gives 0, 0 (off). Returns 0, or -1 with a
 * message naming the value. */
int step_profile_parse(const char *spec, int64_t *first, int64_t *last, char *err, size_t errlen);

typedef struct StepProfile StepProfile;

/* NULL when first == 0 or the backend has no profiler (a message says so on rank 0). */
StepProfile *step_profile_create(const Backend *be, int64_t first, int64_t last,
                                 const char *run_dir, int lead);
/* Around training step `done` (1-based): begin before it, end after it with its wall-clock
 * start and end (seconds, rt_now); the last profiled step's end writes the files. */
void step_profile_begin(StepProfile *p, int64_t done);
void step_profile_end(StepProfile *p, int64_t done, double t_start, double t_end);
void step_profile_free(StepProfile *p);

#endif
