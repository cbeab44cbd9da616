/* The CPU backend's op profiler (Backend.profile): while it is on, every op of the table runs
 * between two readings of the host clock (the CPU ops return when their work is done) and
 * its time is summed per op and shape, with the cost model's FLOPs and bytes
 * (device/op_costs.h) for achieved rates. */
#ifndef ROTOR_CPU_PROFILE_H
#define ROTOR_CPU_PROFILE_H

#include "backend.h"
#include "device/op_costs.h"

/* Points the ops of table b at their timed versions (on) or the plain ones (off). */
void cpu_profile_ops(Backend *b, int on);
/* Adds one call of `op` that took `seconds` to the profile (ops outside the table: zero). */
void cpu_profile_record(const char *op, const OpCost *cost, double seconds);
/* Backend.profile_read of the CPU backend. */
int cpu_profile_read(OpTime *rows, int max);
/* The element sizes of the CPU backend, for the cost model. */
extern const CostUnits cpu_cost_units;

#endif
