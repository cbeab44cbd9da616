#include "dist/dist.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"
#include "util/timer.h"

static int g_rank, g_world = 1, g_local_rank, g_inited;
/* the non-blocking gradient sums started since the last dist_reduce_wait */
static MPI_Request *g_req;
static int g_nreq, g_req_cap;

/* ---- watchdog ---- */

static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t wd_thread;
static int wd_running;
static double wd_timeout;
static double wd_since; /* start of the collective in progress, 0 when none */
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

void dist_watch_begin(const char *what) {
    if (!wd_running) return;
    pthread_mutex_lock(&wd_mu);
    wd_since = rt_now();
    wd_what = what;
    pthread_mutex_unlock(&wd_mu);
}

void dist_watch_end(void) {
    if (!wd_running) return;
    pthread_mutex_lock(&wd_mu);
    wd_since = 0;
    pthread_mutex_unlock(&wd_mu);
}

/* ---- setup ---- */

void dist_init(int *argc, char ***argv) {
    RT_ASSERT(!g_inited);
    /* without a launcher this is rank 0 of 1 and MPI stays untouched: its singleton start
     * needs a daemon that not every machine can run */
    if (!dist_launched()) return;
    int provided;
    /* only the main thread calls MPI; the watchdog never does */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        rt_die("MPI initialisation failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_world);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &g_local_rank);
    MPI_Comm_free(&node);
    g_inited = 1;
}

void dist_set_timeout(double timeout_s) {
    pthread_mutex_lock(&wd_mu);
    wd_timeout = timeout_s;
    pthread_mutex_unlock(&wd_mu);
    if (timeout_s > 0 && g_world > 1 && !wd_running) {
        if (pthread_create(&wd_thread, NULL, watchdog_main, NULL))
            rt_die("cannot start the watchdog thread");
        pthread_detach(wd_thread);
        wd_running = 1;
    }
}

void dist_finalize(void) {
    if (!g_inited) return;
    rt_free(g_req);
    g_req = NULL;
    g_req_cap = 0;
    MPI_Finalize();
    g_inited = 0;
}

int dist_rank(void) { return g_rank; }
int dist_world(void) { return g_world; }
int dist_local_rank(void) { return g_local_rank; }
/* What the launchers put in every process's environment: Open MPI's mpirun, PMI-1/2 and
 * PMIx (MPICH's hydra, srun --mpi=pmi2/pmix, PRRTE), and srun itself. */
int dist_launched(void) {
    static const char *const vars[] = {
        "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MPI_LOCALNRANKS",
        "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

/* ---- collectives ---- */

static MPI_Datatype real_type(size_t elem_size) {
    RT_ASSERT(elem_size == 4 || elem_size == 8);
    return elem_size == 4 ? MPI_FLOAT : MPI_DOUBLE;
}

/* MPI counts are int: large buffers go in pieces of at most 2^30 elements. */
#define PIECE ((int64_t)1 << 30)

void dist_allreduce_sum_f64(double *buf, int n) {
    if (g_world == 1) return;
    dist_watch_begin("an all-reduce of metrics");
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    dist_watch_end();
}

void dist_allreduce_sum_i64(int64_t *buf, int n) {
    if (g_world == 1) return;
    dist_watch_begin("an all-reduce of counts");
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    dist_watch_end();
}

int dist_any(int flag) {
    if (g_world == 1) return flag != 0;
    int v = flag != 0;
    dist_watch_begin("an agreement on stopping");
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    dist_watch_end();
    return v;
}

/* ---- gradient buckets: non-blocking sums ---- */

static MPI_Request *new_request(void) {
    if (g_nreq == g_req_cap) {
        g_req_cap = g_req_cap ? 2 * g_req_cap : 64;
        g_req = rt_realloc(g_req, sizeof(MPI_Request) * (size_t)g_req_cap);
    }
    return &g_req[g_nreq++];
}

/* Starts the sum of buf[lo, hi) into every rank (root < 0) or into rank root only. */
static void start_sum(char *buf, int64_t lo, int64_t hi, int root, size_t elem_size) {
    for (int64_t off = lo; off < hi; off += PIECE) {
        int cnt = (int)(hi - off < PIECE ? hi - off : PIECE);
        void *at = buf + off * (int64_t)elem_size;
        if (root < 0)
            MPI_Iallreduce(MPI_IN_PLACE, at, cnt, real_type(elem_size), MPI_SUM, MPI_COMM_WORLD,
                           new_request());
        else
            MPI_Ireduce(root == g_rank ? MPI_IN_PLACE : at, root == g_rank ? at : NULL, cnt,
                        real_type(elem_size), MPI_SUM, root, MPI_COMM_WORLD, new_request());
    }
}

void dist_reduce_start(void *buf, int64_t lo, int64_t hi, const int64_t *ranges, size_t elem_size) {
    if (g_world == 1) return;
    if (!ranges) {
        start_sum(buf, lo, hi, -1, elem_size);
    } else {
        for (int r = 0; r < g_world; r++) {
            int64_t a = lo > ranges[r] ? lo : ranges[r];
            int64_t b = hi < ranges[r + 1] ? hi : ranges[r + 1];
            if (a < b) start_sum(buf, a, b, r, elem_size);
        }
    }
    /* Open MPI moves non-blocking collectives on only inside MPI calls: testing them here
     * lets the earlier buckets progress while the backward goes on */
    int done;
    MPI_Testall(g_nreq, g_req, &done, MPI_STATUSES_IGNORE);
}

void dist_reduce_wait(void) {
    if (!g_nreq) return;
    dist_watch_begin("the gradient sums of the buckets");
    MPI_Waitall(g_nreq, g_req, MPI_STATUSES_IGNORE);
    dist_watch_end();
    g_nreq = 0;
}

void dist_allgather(void *buf, const int64_t *ranges, size_t elem_size) {
    if (g_world == 1) return;
    dist_watch_begin("a parameter all-gather");
    char *p = buf;
    for (int r = 0; r < g_world; r++)
        for (int64_t off = ranges[r]; off < ranges[r + 1]; off += PIECE) {
            int cnt = (int)(ranges[r + 1] - off < PIECE ? ranges[r + 1] - off : PIECE);
            MPI_Bcast(p + off * (int64_t)elem_size, cnt, real_type(elem_size), r, MPI_COMM_WORLD);
        }
    dist_watch_end();
}

void dist_broadcast(void *buf, size_t bytes) {
    if (g_world == 1) return;
    dist_watch_begin("a broadcast");
    for (size_t off = 0; off < bytes; off += (size_t)PIECE) {
        size_t cnt = bytes - off < (size_t)PIECE ? bytes - off : (size_t)PIECE;
        MPI_Bcast((char *)buf + off, (int)cnt, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    dist_watch_end();
}

void dist_barrier(void) {
    if (g_world == 1) return;
    dist_watch_begin("a barrier");
    MPI_Barrier(MPI_COMM_WORLD);
    dist_watch_end();
}

void dist_partition(int64_t n, int world, int64_t align, int64_t *ranges) {
    int64_t units = (n + align - 1) / align;
    for (int r = 0; r <= world; r++) {
        int64_t e = units * r / world * align;
        ranges[r] = e < n ? e : n;
    }
    ranges[world] = n;
}
