// The CUDA backend's op profiler (Backend.profile, bench/step_bench --profile): while it is on,
// every op of the table runs between two CUDA events on the compute stream, and its device
// time is summed per op and shape, with the floating-point operations and the fewest bytes
// the op must move (the cost model of src/device/op_costs.h, op_costs.cuh) for achieved
// TFLOP/s and GB/s.
#pragma once

#include <type_traits>

#include "backend.h"
#include "device/op_costs.h"

// Cost<F>::of(args) of op F; ops without a specialisation report time only.
template <auto F> struct Cost {
    template <class... A> static OpCost of(A...) { return OpCost{}; }
};

// Opens the timed region of one call of op `id` (an index from prof_op_id), returns its
// record; prof_end closes it.
int prof_op_id(const char *op);
int prof_begin(int id, const OpCost &c);
void prof_end(int rec);

// The timed version of op F: same signature, same result.
template <auto F> struct Timed;
template <class R, class... A, R (*F)(A...)> struct Timed<F> {
    static int id;
    static R call(A... a) {
        int rec = prof_begin(id, Cost<F>::of(a...));
        if constexpr (std::is_void_v<R>) {
            F(a...);
            prof_end(rec);
        } else {
            R r = F(a...);
            prof_end(rec);
            return r;
        }
    }
};
template <class R, class... A, R (*F)(A...)> int Timed<F>::id = -1;

// Field `op` of a table: the plain function or its timed version named `name`.
template <auto F> auto timed(const char *name) {
    if (Timed<F>::id < 0) Timed<F>::id = prof_op_id(name);
    return &Timed<F>::call;
}

// Backend.profile_read of the CUDA backend.
int cuda_profile_read(OpTime *rows, int max);
