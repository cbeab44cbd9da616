/* The gradient communication's MPI path through host memory (dist/grad_comm.c), run under
 * `mpirun -np 2` (and alone, as rank 0 of 1): a backend that claims collectives of its own
 * (as the CUDA backend, whose buffers are device memory) with run.collectives = mpi must
 * copy each bucket to the host before its sum starts and back once the sums have arrived,
 * with and without ZeRO-1 slices, and gather the slices of a buffer. Its "device" memory is
 * the CPU's, but every transfer is counted: a sum that skips the stage leaves the buffer as
 * it was, and the checks fail. */
#include <string.h>

#include "config/config.h"
#include "dist/dist.h"
#include "dist/grad_comm.h"
#include "harness.h"
#include "util/error.h"

static int64_t downloaded, uploaded; /* bytes through the stage */

static void counted_download(void *host_dst, const void *src, size_t bytes) {
    downloaded += (int64_t)bytes;
    memcpy(host_dst, src, bytes);
}

static void counted_upload(void *dst, const void *host_src, size_t bytes) {
    uploaded += (int64_t)bytes;
    memcpy(dst, host_src, bytes);
}

static void no_comm_init(const void *id, int rank, int world) {
    rt_die("not the backend's collectives");
}

/* The CPU backend, posing as one with collectives and memory of its own. */
static const Backend *device_like(void) {
    static Backend be;
    if (!be.name) {
        be = *backend_cpu();
        be.name = "device-like";
        be.comm_init = no_comm_init;
        be.download = counted_download;
        be.upload = counted_upload;
    }
    return &be;
}

enum { N = 1000 };

/* rank r's gradient: (r + 1) (i + 1); their sum over W ranks: W (W + 1) / 2 (i + 1) */
static void fill(float *buf, int rank) {
    for (int i = 0; i < N; i++) buf[i] = (float)((rank + 1) * (i + 1));
}

static void test_reduce(void) {
    const Backend *be = device_like();
    RT_ASSERT(be->f32_size == sizeof(float));
    GradComm gc = grad_comm_init(be, COLLECTIVES_MPI, N);
    CHECK(!gc.device && gc.stage && !strcmp(grad_comm_name(&gc), "MPI through host memory"));
    int W = dist_world(), r = dist_rank();
    float *buf = be->alloc(N * sizeof(float));
    fill(buf, r);
    downloaded = uploaded = 0;
    /* two buckets from the top down, as in a backward */
    grad_comm_reduce_start(&gc, buf, 600, N, NULL);
    grad_comm_reduce_start(&gc, buf, 0, 600, NULL);
    grad_comm_reduce_wait(&gc);
    CHECK(downloaded == N * (int64_t)sizeof(float) && uploaded == downloaded);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += buf[i] != (float)(W * (W + 1) / 2 * (i + 1));
    CHECK_MSG(!bad, "%d of %d sums wrong", bad, N);

    /* ZeRO-1: rank r's slice gets the sums, the rest keeps its own values */
    int64_t ranges[64];
    RT_ASSERT(W < 63);
    dist_partition(N, W, 64, ranges);
    fill(buf, r);
    grad_comm_reduce_start(&gc, buf, 300, N, ranges);
    grad_comm_reduce_start(&gc, buf, 0, 300, ranges);
    grad_comm_reduce_wait(&gc);
    bad = 0;
    for (int i = 0; i < N; i++) {
        int mine = i >= ranges[r] && i < ranges[r + 1];
        bad += buf[i] != (float)((mine ? W * (W + 1) / 2 : r + 1) * (i + 1));
    }
    CHECK_MSG(!bad, "%d of %d ZeRO-1 values wrong", bad, N);
    be->release(buf);
    grad_comm_free(&gc);
}

static void test_allgather(void) {
    const Backend *be = device_like();
    GradComm gc = grad_comm_init(be, COLLECTIVES_MPI, N);
    int W = dist_world(), r = dist_rank();
    int64_t ranges[64];
    dist_partition(N, W, 64, ranges);
    float *buf = be->alloc(N * sizeof(float));
    for (int i = 0; i < N; i++) buf[i] = -1;
    for (int64_t i = ranges[r]; i < ranges[r + 1]; i++) buf[i] = (float)(1000 * r + i);
    uploaded = 0;
    grad_comm_allgather(&gc, buf, ranges);
    CHECK(uploaded == N * (int64_t)sizeof(float));
    int bad = 0;
    for (int s = 0; s < W; s++)
        for (int64_t i = ranges[s]; i < ranges[s + 1]; i++) bad += buf[i] != (float)(1000 * s + i);
    CHECK_MSG(!bad, "%d of %d gathered values wrong", bad, N);
    be->release(buf);
    grad_comm_free(&gc);
}

/* The host-memory backend needs no stage; asking for its collectives is an error elsewhere. */
static void test_host_backend(void) {
    GradComm gc = grad_comm_init(backend_cpu(), COLLECTIVES_MPI, N);
    CHECK(!gc.device && !gc.stage && !strcmp(grad_comm_name(&gc), "MPI"));
    grad_comm_free(&gc);
}

static const TestCase tests[] = {
    {"staged_reduce", test_reduce},
    {"staged_allgather", test_allgather},
    {"host_backend", test_host_backend},
};

int main(int argc, char **argv) {
    dist_init(&argc, &argv);
    int rc = th_run(tests, TH_COUNT(tests), argc, argv);
    dist_finalize();
    return rc;
}
