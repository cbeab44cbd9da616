// Data-parallel collectives of the CUDA backend through NCCL: one communicator per process
// (one GPU per rank), bootstrapped by an id that rank 0 creates and MPI broadcasts
// (src/train/trainer.c). Every collective runs on a communication stream of its own, after
// an event recorded on the compute stream, so that the sums of the gradient buckets overlap
// the rest of the backward (docs/distributed.md); comm_wait makes the compute stream wait
// for an event recorded after them and blocks the host on that event, where the watchdog
// sees a hang. The ZeRO-1 slices may differ in size, so the sums into slices and the
// all-gather are one rooted reduce / broadcast per rank in a group.
#include <nccl.h>
#include <string.h>

#include "backend/comm_nccl.h"
#include "lib/cuda_common.cuh"
#include "util/error.h"

static ncclComm_t comm;
static int comm_world;
static cudaStream_t comm_stream;
static cudaEvent_t compute_done; // recorded on the compute stream before each collective
static cudaEvent_t comm_done;    // recorded on the communication stream by comm_wait

#define NCCL_CHECK(x)                                                                              \
    do {                                                                                           \
        ncclResult_t _r = (x);                                                                     \
        if (_r != ncclSuccess)                                                                     \
            rt_die("NCCL error %d (%s) in %s at %s:%d", (int)_r, ncclGetErrorString(_r), #x,       \
                   __FILE__, __LINE__);                                                            \
    } while (0)

const size_t cuda_comm_id_size = sizeof(ncclUniqueId);

void cuda_comm_create_id(void *id) { NCCL_CHECK(ncclGetUniqueId((ncclUniqueId *)id)); }

void cuda_comm_init(const void *id, int rank, int world) {
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    NCCL_CHECK(ncclCommInitRank(&comm, world, uid, rank));
    comm_world = world;
    // the highest priority: a bucket's kernels are scheduled ahead of the backward's
    int least, greatest;
    CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CUDA_CHECK(cudaStreamCreateWithPriority(&comm_stream, cudaStreamNonBlocking, greatest));
    CUDA_CHECK(cudaEventCreateWithFlags(&compute_done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&comm_done, cudaEventDisableTiming));
}

// The communication stream, ordered after everything queued so far on the compute stream
// (a wait captures the event's latest record, so one event serves every collective).
static cudaStream_t after_compute(const char *op) {
    if (!comm) rt_die("%s: the NCCL communicator was not initialised", op);
    CUDA_CHECK(cudaEventRecord(compute_done, cuda_stream()));
    CUDA_CHECK(cudaStreamWaitEvent(comm_stream, compute_done, 0));
    return comm_stream;
}

void cuda_reduce_start(void *buf, int64_t lo, int64_t hi, const int64_t *ranges) {
    cudaStream_t s = after_compute("reduce_start");
    float *p = (float *)buf;
    if (!ranges) {
        NCCL_CHECK(ncclAllReduce(p + lo, p + lo, (size_t)(hi - lo), ncclFloat32, ncclSum, comm, s));
        return;
    }
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < comm_world; r++) {
        int64_t a = lo > ranges[r] ? lo : ranges[r];
        int64_t b = hi < ranges[r + 1] ? hi : ranges[r + 1];
        if (a < b)
            NCCL_CHECK(ncclReduce(p + a, p + a, (size_t)(b - a), ncclFloat32, ncclSum, r, comm, s));
    }
    NCCL_CHECK(ncclGroupEnd());
}

void cuda_allgather_start(void *buf, const int64_t *ranges) {
    cudaStream_t s = after_compute("allgather_start");
    float *p = (float *)buf;
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < comm_world; r++) {
        float *at = p + ranges[r];
        if (ranges[r] < ranges[r + 1])
            NCCL_CHECK(ncclBroadcast(at, at, (size_t)(ranges[r + 1] - ranges[r]), ncclFloat32, r,
                                     comm, s));
    }
    NCCL_CHECK(ncclGroupEnd());
}

void cuda_comm_wait() {
    if (!comm) rt_die("comm_wait: the NCCL communicator was not initialised");
    CUDA_CHECK(cudaEventRecord(comm_done, comm_stream));
    CUDA_CHECK(cudaStreamWaitEvent(cuda_stream(), comm_done, 0));
    CUDA_CHECK(cudaEventSynchronize(comm_done));
}
