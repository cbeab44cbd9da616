/* The CPU backend's op profiler (profile.h). */
#include "cpu/profile.h"

#include <stdio.h>
#include <string.h>

#include "cpu/cpu_ops.h"
#include "util/timer.h"

const CostUnits cpu_cost_units = {sizeof(real), sizeof(real)};

/* One row per op and shape in the order first called; a profile of a training step has a
 * few hundred. Calls past the last row are summed into it under "(other)". */
enum { MAX_ROWS = 4096 };
static OpTime rows[MAX_ROWS];
static int nrows;

void cpu_profile_record(const char *op, const OpCost *cost, double seconds) {
    OpTime *r = NULL;
    for (int i = nrows - 1; i >= 0 && !r; i--)
        if (!strcmp(rows[i].op, op) && !strcmp(rows[i].shape, cost->shape)) r = &rows[i];
    if (!r && nrows < MAX_ROWS) {
        r = &rows[nrows++];
        memset(r, 0, sizeof *r);
        snprintf(r->op, sizeof r->op, "%s", op);
        snprintf(r->shape, sizeof r->shape, "%s", cost->shape);
    }
    if (!r) {
        r = &rows[MAX_ROWS - 1];
        snprintf(r->op, sizeof r->op, "(other)");
        r->shape[0] = 0;
    }
    r->calls++;
    r->ms += 1e3 * seconds;
    r->flops += cost->flops;
    r->bytes += cost->bytes;
}

int cpu_profile_read(OpTime *out, int max) {
    int n = nrows;
    memcpy(out, rows, sizeof(OpTime) * (size_t)(n < max ? n : max));
    nrows = 0;
    return n;
}

/* timed_<op>: the op between two clock readings; its cost is worked out before the first. */
#define ROTOR_TIMED_CALL_void(call, done)                                                          \
    call;                                                                                          \
    done;
#define ROTOR_TIMED_CALL_double(call, done)                                                        \
    double result_ = call;                                                                         \
    done;                                                                                          \
    return result_;
#define ROTOR_CPU_TIMED(ret, name, params, args)                                                   \
    static ret timed_##name params {                                                               \
        OpCost cost_ = OP_COST(&cpu_cost_units, name, args);                                       \
        double t0_ = rt_now();                                                                     \
        ROTOR_TIMED_CALL_##ret(cpu_##name args, cpu_profile_record(#name, &cost_, rt_now() - t0_)) \
    }
BACKEND_OPS(ROTOR_CPU_TIMED)
#undef ROTOR_CPU_TIMED

void cpu_profile_ops(Backend *b, int on) {
#define ROTOR_CPU_SET(ret, name, params, args) b->name = on ? timed_##name : cpu_##name;
    BACKEND_OPS(ROTOR_CPU_SET)
#undef ROTOR_CPU_SET
}
