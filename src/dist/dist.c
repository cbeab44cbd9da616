#include "dist/dist.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"
#include "util/timer.h"

static int g_rank, g_world = 1, g_local_rank, g_local_world = 1, g_inited;

/* ---- watchdog ---- */

static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t wd_thread;
static int wd_running;
static double wd_timeout;
static double wd_since;         /* start of the collective in progress, 0 when none */
static const char *wd_what = "";

static void *watchdog_main(void *arg) {
    (void)arg;
    for (;;) {
        sleep(1);
        pthread_mutex_lock(&wd_mu);
        double since = wd_since, timeout = wd_timeout;
        const char *what = wd_what;
        pthread_mutex_unlock(&wd_mu);
        if (since > 0 && timeout > 0 && rt_now() - since > timeout) {
            fprintf(stderr,
                    "rotor: error: rank %d waited %.0f s in %s: another rank has died or hangs "
                    "(run.collective_timeout = %g s); exiting\n",
                    g_rank, rt_now() - since, what, timeout);
            fflush(stderr);
            _exit(1);
        }
    }
    return NULL;
}

static void enter(const char *what) {
    if (!wd_running) return;
    pthread_mutex_lock(&wd_mu);
    wd_since = rt_now();
    wd_what = what;
    pthread_mutex_unlock(&wd_mu);
}

static void leave(void) {
    if (!wd_running) return;
    pthread_mutex_lock(&wd_mu);
    wd_since = 0;
    pthread_mutex_unlock(&wd_mu);
}

/* ---- setup ---- */

void dist_init(int *argc, char ***argv) {
    RT_ASSERT(!g_inited);
    int provided;
    /* only the main thread calls MPI; the watchdog never does */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        rt_die("MPI initialisation failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_world);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &g_local_rank);
    MPI_Comm_size(node, &g_local_world);
    MPI_Comm_free(&node);
    g_inited = 1;
}

void dist_set_timeout(double timeout_s) {
    pthread_mutex_lock(&wd_mu);
    wd_timeout = timeout_s;
    pthread_mutex_unlock(&wd_mu);
    if (timeout_s > 0 && g_world > 1 && !wd_running) {
        if (pthread_create(&wd_thread, NULL, watchdog_main, NULL)) rt_die("cannot start the watchdog thread");
        pthread_detach(wd_thread);
        wd_running = 1;
    }
}

void dist_finalize(void) {
    if (!g_inited) return;
    MPI_Finalize();
    g_inited = 0;
}

int dist_rank(void) { return g_rank; }
int dist_world(void) { return g_world; }
int dist_local_rank(void) { return g_local_rank; }
int dist_local_world(void) { return g_local_world; }
int dist_launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

/* ---- collectives ---- */

static MPI_Datatype real_type(size_t elem_size) {
    RT_ASSERT(elem_size == 4 || elem_size == 8);
    return elem_size == 4 ? MPI_FLOAT : MPI_DOUBLE;
}

/* MPI counts are int: large buffers go in pieces of at most 2^30 elements. */
#define PIECE ((int64_t)1 << 30)

void dist_allreduce_sum(void *buf, int64_t n, size_t elem_size) {
    if (g_world == 1) return;
    enter("a gradient all-reduce");
    char *p = buf;
    for (int64_t off = 0; off < n; off += PIECE) {
        int cnt = (int)(n - off < PIECE ? n - off : PIECE);
        MPI_Allreduce(MPI_IN_PLACE, p + off * (int64_t)elem_size, cnt, real_type(elem_size), MPI_SUM, MPI_COMM_WORLD);
    }
    leave();
}

void dist_allreduce_sum_f64(double *buf, int n) {
    if (g_world == 1) return;
    enter("an all-reduce of metrics");
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    leave();
}

void dist_allreduce_sum_i64(int64_t *buf, int n) {
    if (g_world == 1) return;
    enter("an all-reduce of counts");
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    leave();
}

int dist_any(int flag) {
    if (g_world == 1) return flag != 0;
    int v = flag != 0;
    enter("an agreement on stopping");
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    leave();
    return v;
}

void dist_reduce_scatter_sum(void *buf, const int64_t *ranges, size_t elem_size) {
    if (g_world == 1) return;
    enter("a gradient reduce-scatter");
    /* one reduce per rank's slice, rooted at that rank: exact sums, any slice size */
    char *p = buf;
    for (int r = 0; r < g_world; r++)
        for (int64_t off = ranges[r]; off < ranges[r + 1]; off += PIECE) {
            int cnt = (int)(ranges[r + 1] - off < PIECE ? ranges[r + 1] - off : PIECE);
            void *at = p + off * (int64_t)elem_size;
            MPI_Reduce(r == g_rank ? MPI_IN_PLACE : at, r == g_rank ? at : NULL, cnt, real_type(elem_size), MPI_SUM, r,
                       MPI_COMM_WORLD);
        }
    leave();
}

void dist_allgather(void *buf, const int64_t *ranges, size_t elem_size) {
    if (g_world == 1) return;
    enter("a parameter all-gather");
    char *p = buf;
    for (int r = 0; r < g_world; r++)
        for (int64_t off = ranges[r]; off < ranges[r + 1]; off += PIECE) {
            int cnt = (int)(ranges[r + 1] - off < PIECE ? ranges[r + 1] - off : PIECE);
            MPI_Bcast(p + off * (int64_t)elem_size, cnt, real_type(elem_size), r, MPI_COMM_WORLD);
        }
    leave();
}

void dist_broadcast(void *buf, size_t bytes) {
    if (g_world == 1) return;
    enter("a broadcast");
    for (size_t off = 0; off < bytes; off += (size_t)PIECE) {
        size_t cnt = bytes - off < (size_t)PIECE ? bytes - off : (size_t)PIECE;
        MPI_Bcast((char *)buf + off, (int)cnt, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    leave();
}

void dist_barrier(void) {
    if (g_world == 1) return;
    enter("a barrier");
    MPI_Barrier(MPI_COMM_WORLD);
    leave();
}

void dist_partition(int64_t n, int world, int64_t align, int64_t *ranges) {
    int64_t units = (n + align - 1) / align;
    for (int r = 0; r <= world; r++) {
        int64_t e = units * r / world * align;
        ranges[r] = e < n ? e : n;
    }
    ranges[world] = n;
}
