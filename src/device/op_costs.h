/* The cost model of the backend ops, shared by the op profilers of every backend
 * (Backend.profile): what one call of an op must do, its floating-point operations and the
 * fewest bytes it must move (each input read once, each output written once, a += output
 * read and written), at the backend's element sizes. The profilers divide these by the time
 * they measure for achieved FLOP/s and bytes/s. Mixer FLOPs count the dense chunk products as
 * the chunked kernels compute them (per token and head, C = CHUNK_SIZE):
 *   GLA forward 2C(K+V) + 4KV, backward twice that;
 *   GDN forward 6CK + 4CV + 6KV (WY/UT form: A, W, U, the state pass, the output), backward
 *   twice that;
 *   FoX forward 4D per causal (query, key) pair, backward 2.5 times that (five products).
 * An op without a cost (its op_cost_<name> left undefined: the prototypes below are weak, so
 * such a pointer is NULL) is reported with its time only. */
#ifndef ROTOR_OP_COSTS_H
#define ROTOR_OP_COSTS_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    double act, f32; /* bytes of an [act] and an [f32] element */
} CostUnits;

typedef struct {
    double flops, bytes;
    char shape[40]; /* a label of the call's shape, "" where calls are not told apart */
} OpCost;

#define ROTOR_UNPACK(...) __VA_ARGS__
#define ROTOR_OP_COST(ret, name, params, args)                                                     \
    __attribute__((weak)) OpCost op_cost_##name(const CostUnits *u, ROTOR_UNPACK params);
BACKEND_OPS(ROTOR_OP_COST)
#undef ROTOR_OP_COST

/* The cost of one call of op `name` with arguments `args` (the op's parenthesised argument
 * list), zero where the op has none. */
#define OP_COST(units, name, args)                                                                 \
    (op_cost_##name ? op_cost_##name(units, ROTOR_UNPACK args) : op_cost_none())

/* A cost of zero; defined beside the costs, so that an executable calling OP_COST links them. */
OpCost op_cost_none(void);

#ifdef __cplusplus
}
#endif

#endif
