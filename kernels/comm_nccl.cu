// Data-parallel collectives of the CUDA backend through NCCL, on the backend's stream: one
// communicator per process (one GPU per rank), bootstrapped by an id that rank 0 creates
// and MPI broadcasts (src/train/trainer.c). The ZeRO-1 slices may differ in size, so the
// reduce-scatter and all-gather are one rooted reduce / broadcast per rank in a group.
#include <nccl.h>
#include <string.h>

#include "comm_nccl.h"
#include "cuda_common.cuh"
#include "util/error.h"

static ncclComm_t comm;
static int comm_world;

#define NCCL_CHECK(x)                                                                           \
    do {                                                                                        \
        ncclResult_t _r = (x);                                                                  \
        if (_r != ncclSuccess)                                                                  \
            rt_die("NCCL error %d (%s) in %s at %s:%d", (int)_r, ncclGetErrorString(_r), #x,  \
                   __FILE__, __LINE__);                                                         \
    } while (0)

const size_t cuda_comm_id_size = sizeof(ncclUniqueId);

void cuda_comm_create_id(void *id) { NCCL_CHECK(ncclGetUniqueId((ncclUniqueId *)id)); }

void cuda_comm_init(const void *id, int rank, int world) {
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    NCCL_CHECK(ncclCommInitRank(&comm, world, uid, rank));
    comm_world = world;
}

static void need_comm(const char *op) {
    if (!comm) rt_die("%s: the NCCL communicator was not initialised", op);
}

void cuda_allreduce_sum(void *buf, int64_t n) {
    need_comm("allreduce_sum");
    NCCL_CHECK(ncclAllReduce(buf, buf, (size_t)n, ncclFloat32, ncclSum, comm, cuda_stream()));
}

void cuda_reduce_scatter_sum(void *buf, const int64_t *ranges) {
    need_comm("reduce_scatter_sum");
    float *p = (float *)buf;
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < comm_world; r++) {
        float *at = p + ranges[r];
        NCCL_CHECK(ncclReduce(at, at, (size_t)(ranges[r + 1] - ranges[r]), ncclFloat32, ncclSum, r, comm,
                              cuda_stream()));
    }
    NCCL_CHECK(ncclGroupEnd());
}

void cuda_allgather(void *buf, const int64_t *ranges) {
    need_comm("allgather");
    float *p = (float *)buf;
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < comm_world; r++) {
        float *at = p + ranges[r];
        NCCL_CHECK(ncclBroadcast(at, at, (size_t)(ranges[r + 1] - ranges[r]), ncclFloat32, r, comm, cuda_stream()));
    }
    NCCL_CHECK(ncclGroupEnd());
}
