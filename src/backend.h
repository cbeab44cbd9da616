/* The compute backend: every operation the model runs, as a table of functions.
 *
 * The model code (src/model/) calls only these functions and never touches buffer
 * contents, so the same forward/backward code runs on any backend chosen at run time.
 * Buffers are opaque `void *` in the backend's memory. Their element type follows their
 * role, written in brackets in each comment:
 *   [act]  activations and weights as the model computes with them (CPU: fp32),
 *   [f32]  values kept in fp32 on every backend: gate cumulative sums, recurrent
 *          states, normaliser statistics, losses, master weights, gradients, optimizer state,
 *   [i32]  int32 indices.
 * On the CPU backend every floating type is `real` (fp32, or fp64 in the test build).
 *
 * Layout: token-major, rows are the N = B*T tokens of a batch flattened; a per-head tensor
 * of H heads of D channels is [N, H, D]. Linear weights are [out, in] (PyTorch layout).
 * Gradient outputs for parameters always accumulate (+=); gradient outputs for
 * activations overwrite unless the argument is called `accumulate`.
 */
#ifndef ROTOR_BACKEND_H
#define ROTOR_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Document segments of a batch (fla's cu_seqlens): every op with a notion of time
 * (convs, shifts, scans, positions, mixers) treats each segment as its own sequence. */
typedef struct {
    int64_t ntok;       /* N = B*T */
    int nseg;           /* number of segments */
    const int64_t *cu;  /* [nseg+1] segment start offsets into the N tokens, cu[nseg] = N */
    const int32_t *pos; /* [N] position of each token within its segment */
    /* The same segments in the backend's memory, for device kernels (Backend.seqs_prepare fills
     * them; the CPU backend reads only the host arrays above). Chunks are the CHUNK_SIZE
     * pieces of every segment in order, the order of the chunk states. */
    int64_t nchunk;
    const int32_t *dev_cu;    /* [nseg+1] */
    const int32_t *dev_pos;   /* [N] */
    const int32_t *dev_chunk; /* [nchunk][3]: first token, length, segment */
} Seqs;

typedef enum { ACT_NONE = 0, ACT_SILU = 1, ACT_SIGMOID = 2 } Activation;

/* Taps of the short convs of the q/k/v prologue, Mamba2 and Selective RoPE (fla's conv_size,
 * Mamba2's d_conv): the conv ops' K; the widest K they take. */
#define SHORT_CONV_TAPS 4

/* One row of an op profile (Backend.profile_read): the calls of one op at one shape. */
typedef struct {
    char op[24];
    char shape[40]; /* "" where the op's calls are not told apart by shape */
    int64_t calls;
    double ms;    /* device time summed over the calls */
    double flops; /* floating-point operations of those calls, 0 if not counted */
    double bytes; /* the fewest bytes they must read and write, 0 if not counted */
} OpTime;

/* The shape of one call of a mixer or Selective RoPE op a model will make (Backend.supports). */
typedef struct {
    const char *op; /* "gla", "gdn", "fox", "cscan" or "selrope" */
    int H, K, V;    /* heads and head sizes; fox: K = V = D; selrope: K = V = P angle pairs */
} OpShape;

#include "backend_ops.h"

/* The CUDA backend's element sizes (bf16 [act], fp32 [f32]), known in every build so that
 * `rotor info` sizes a GPU's memory on a machine without one. */
enum { CUDA_ACT_SIZE = 2, CUDA_F32_SIZE = 4 };

typedef struct Backend Backend;
struct Backend {
    const char *name;
    const char *device;    /* what it runs on, for logs ("NVIDIA H100 80GB HBM3") */
    size_t act_size;       /* bytes per [act] element */
    size_t f32_size;       /* bytes per [f32] element */
    double peak_flops;     /* dense peak of the device in FLOP/s for MFU, 0 if unknown */
    double peak_bandwidth; /* memory bandwidth of the device in bytes/s, 0 if unknown */

    /* ---- memory ---- */
    void *(*alloc)(size_t bytes);
    void (*release)(void *p);
    void (*zero)(void *p, size_t bytes);
    void (*upload)(void *dst, const void *host_src, size_t bytes);
    void (*download)(void *host_dst, const void *src, size_t bytes);
    /* dst = src, both in backend memory. */
    void (*copy)(void *dst, const void *src, size_t bytes);
    /* Waits until every queued operation has finished (timers). */
    void (*synchronize)(void);
    /* Peak bytes of backend memory allocated so far (0 where not tracked). */
    size_t (*peak_memory)(void);
    /* Host memory that download and upload copy to and from fastest: page-locked on a GPU
     * (the staging of asynchronous checkpoints, train/checkpoint_snapshot.h). host_alloc
     * returns NULL when the system refuses it, and the caller takes plain host memory;
     * host_alloc and host_release are NULL where plain host memory is as fast (the CPU). */
    void *(*host_alloc)(size_t bytes);
    void (*host_release)(void *p);

    /* ---- compute: every op of src/backend_ops.h ---- */
#define ROTOR_OP_FIELD(ret, name, params, args) ret(*name) params;
    BACKEND_OPS(ROTOR_OP_FIELD)
#undef ROTOR_OP_FIELD

    /* ---- what the kernels take ----
     * Whether the backend's kernels run an op at this shape: 1, or 0 with the reason in why
     * (naming the limit and the value). NULL where every shape runs (the CPU). The model
     * asks for each of its mixer ops when it is created. */
    int (*supports)(const OpShape *shape, char *why, size_t why_size);

    /* ---- segments on the device ----
     * Fills s->nchunk and s->dev_* from the host arrays of s, in buffers owned by *mirror
     * (created by the first call, *mirror NULL before it, grown as needed) and valid until
     * the next call with the same mirror. NULL where the ops read the host arrays (the CPU). */
    void (*seqs_prepare)(Seqs *s, void **mirror);
    void (*seqs_release)(void *mirror);

    /* ---- collectives over the data-parallel ranks on [f32] buffers in backend memory ----
     * NULL where the buffers are host memory (the CPU): dist/ then works on them directly.
     * comm_create_id (rank 0) fills comm_id_size bytes that every rank passes to comm_init
     * after dist_broadcast. The collectives run on a communication stream of their own:
     * each starts after everything queued so far (the gradients it reads) and overlaps
     * whatever is queued after it, so its buffer range must stay untouched until comm_wait.
     * reduce_start sums buf[lo, hi) over the ranks; with ranges (ZeRO-1 slices) only rank
     * r gets the sum of [lo, hi) within its slice, as dist_reduce_start. allgather_start
     * gives every rank each rank's slice, as dist_allgather. comm_wait queues every later
     * operation after the started collectives and returns once they have finished: the
     * caller puts it under the watchdog (dist_watch_begin), since a dead peer hangs it. */
    size_t comm_id_size;
    void (*comm_create_id)(void *id);
    void (*comm_init)(const void *id, int rank, int world);
    void (*reduce_start)(void *buf, int64_t lo, int64_t hi, const int64_t *ranges);
    void (*allgather_start)(void *buf, const int64_t *ranges);
    void (*comm_wait)(void);

    /* ---- profiling (NULL where the backend offers none) ----
     * profile(1) times every later op of this table on the device, profile(0) stops;
     * profile_read waits for the device, fills up to max rows, one per op and shape in the
     * order first called, returns how many there are, and clears the counts. */
    void (*profile)(int on);
    int (*profile_read)(OpTime *rows, int max);
};

#define CHUNK_SIZE 64

/* Number of [f32] elements gla_fwd/gdn_fwd store in `states` for a batch: one K x V state
 * per head at the start of every chunk of every segment. */
static inline int64_t chunk_states_size(const Seqs *s, int H, int K, int V) {
    int64_t chunks = 0;
    for (int i = 0; i < s->nseg; i++)
        chunks += (s->cu[i + 1] - s->cu[i] + CHUNK_SIZE - 1) / CHUNK_SIZE;
    return chunks * H * (int64_t)K * V;
}

const Backend *backend_cpu(void);

/* The CUDA backend on GPU number local_rank % (visible GPUs) — one rank per GPU under
 * mpirun — or NULL with a reason in why (no CUDA in this build, no GPU visible, a GPU older
 * than compute capability 8.0). The first call picks the GPU; later calls return it. */
const Backend *backend_cuda(int local_rank, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
