/* `rotor serve`: an HTTP server (libmicrohttpd, a thread per connection) for OpenAI-style
 * completion clients and lm-evaluation-harness's `local-completions` model. Connections parse
 * their requests themselves (eval/serve_request.c); completions go through a queue to the one
 * thread that runs the model (eval/serve_complete.c), in the order they arrived, those waiting
 * together that can share a batch (serve_can_batch) as one.
 *
 * Connections: at most --max-connections are served at once, the oldest open ones; a request on
 * any other is answered 503 with Retry-After, and MHD's own limit stays above as the last guard. A
 * connection must send each whole request within --timeout seconds of opening or of its last
 * answer, so idle and trickling clients are closed; the model's work on a request is not timed.
 * SIGINT and SIGTERM stop it: new connections are refused and new requests on open ones get 503,
 * the requests under way are answered for up to --grace seconds (those left then get 503), and it
 * exits 0. */
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmd_common.h"
#include "cpu/parallel.h"
#include "eval_run.h"
#include "serve_complete.h"
#include "util/timer.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: rotor serve --ckpt DIR [options]\n\n"
        "Serves a checkpoint over HTTP with OpenAI's completions API, for lm-evaluation-harness's\n"
        "local-completions model (remote tokenizer) and OpenAI clients (docs/evaluation.md, part "
        "C):\n"
        "  POST /v1/completions   prompt (string, strings, token ids, lists of ids), max_tokens,\n"
        "                         echo, logprobs, temperature, top_p, top_k, seed, stop, n\n"
        "  POST /tokenize, POST /detokenize, GET /tokenizer_info   the harness's remote tokenizer\n"
        "  GET /v1/models, GET /health\n"
        "Prompts are scored as rotor eval scores and continued as rotor generate continues "
        "them.\n\n"
        "  --ckpt DIR           checkpoint directory (RUN_DIR/checkpoints/step_NNNNNNNN), or a "
        "run\n"
        "                       directory: its latest intact checkpoint\n"
        "  --host ADDR          address to listen on (default 127.0.0.1: this machine only)\n"
        "  --port N             port (default 8000; 0: any free port, printed at start)\n"
        "  --api-key KEY        require the header 'Authorization: Bearer KEY' (GET /health "
        "excepted)\n"
        "  --name NAME          the model's name in responses (default: the checkpoint "
        "directory's)\n"
        "  --tokenizer MODEL    SentencePiece model (default: the one its run trained with)\n"
        "  --no-bos             do not prepend BOS to the prompts (default: prepend, as rotor eval "
        "does)\n"
        "  --no-verify          load the checkpoint without checking its files' recorded sha256s\n"
        "  --max-body BYTES     request bodies at most (default 16777216); larger ones get 413\n"
        "  --max-prompts N      completions per request at most, prompts x n (default 64)\n"
        "  --max-tokens N       max_tokens at most (default: the checkpoint's context)\n"
        "  --max-logprobs N     logprobs at most (default 20)\n"
        "  --pass-tokens N      tokens per scoring forward pass at most, several requests' "
        "prompts\n"
        "                       together (default 512 on the CPU, where the logits of a small "
        "pass\n"
        "                       stay in cache; 4096 on a GPU)\n"
        "  --timeout S          a connection must send each whole request within S seconds of "
        "opening or of\n"
        "                       its last answer, else it is closed: idle and trickling clients "
        "(default 10);\n"
        "                       the model's work on a request is not timed\n"
        "  --max-connections N  connections served at once, the oldest open ones (default 256); a "
        "request\n"
        "                       on any other gets 503 with Retry-After\n"
        "  --grace S            on SIGTERM or SIGINT, the requests under way have S seconds to be "
        "answered\n"
        "                       (default 30); those left then get 503\n"
        "  --device D           cpu, cuda, or auto (default: cuda when a GPU is visible)\n"
        "  --threads N          CPU threads (default: all cores)\n");
}

typedef struct {
    const char *ckpt, *host, *api_key, *name, *tokenizer, *device;
    int port, threads, add_bos, verify, max_prompts, max_tokens, max_logprobs, pass_tokens;
    int timeout, max_connections, grace; /* seconds, connections, seconds */
    int64_t max_body;
} Options;

static void parse_options(int argc, char **argv, Options *o) {
    *o = (Options){.host = "127.0.0.1",
                   .device = "auto",
                   .port = 8000,
                   .add_bos = 1,
                   .verify = 1,
                   .max_prompts = 64,
                   .max_logprobs = 20,
                   .max_body = 16 << 20,
                   .timeout = 10,
                   .max_connections = 256,
                   .grace = 30};
    static const char *const known[] = {"--ckpt",        "--host",
                                        "--port",        "--api-key",
                                        "--name",        "--tokenizer",
                                        "--no-bos",      "--no-verify",
                                        "--max-body",    "--max-prompts",
                                        "--max-tokens",  "--max-logprobs",
                                        "--pass-tokens", "--device",
                                        "--threads",     "--help",
                                        "--timeout",     "--max-connections",
                                        "--grace",       NULL};
    const char *v;
    for (int i = 0; i < argc; i++) {
        if (opt_is_help(argv[i])) {
            usage(stdout);
            exit(0);
        } else if ((v = opt_value("serve", argc, argv, &i, "--ckpt")))
            o->ckpt = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--host")))
            o->host = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--port")))
            o->port = (int)opt_parse_int("--port", v, 0, 65535);
        else if ((v = opt_value("serve", argc, argv, &i, "--api-key")))
            o->api_key = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--name")))
            o->name = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--tokenizer")))
            o->tokenizer = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--max-body")))
            o->max_body = opt_parse_int("--max-body", v, 1, INT64_MAX);
        else if ((v = opt_value("serve", argc, argv, &i, "--max-prompts")))
            o->max_prompts = (int)opt_parse_int("--max-prompts", v, 1, 1 << 20);
        else if ((v = opt_value("serve", argc, argv, &i, "--max-tokens")))
            o->max_tokens = (int)opt_parse_int("--max-tokens", v, 1, INT_MAX / 2);
        else if ((v = opt_value("serve", argc, argv, &i, "--max-logprobs")))
            o->max_logprobs = (int)opt_parse_int("--max-logprobs", v, 0, 1000);
        else if ((v = opt_value("serve", argc, argv, &i, "--pass-tokens")))
            o->pass_tokens = (int)opt_parse_int("--pass-tokens", v, 1, 1 << 20);
        else if ((v = opt_value("serve", argc, argv, &i, "--timeout")))
            o->timeout = (int)opt_parse_int("--timeout", v, 1, 86400);
        else if ((v = opt_value("serve", argc, argv, &i, "--max-connections")))
            o->max_connections = (int)opt_parse_int("--max-connections", v, 1, 100000);
        else if ((v = opt_value("serve", argc, argv, &i, "--grace")))
            o->grace = (int)opt_parse_int("--grace", v, 0, 86400);
        else if ((v = opt_value("serve", argc, argv, &i, "--device")))
            o->device = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--threads")))
            o->threads = (int)opt_parse_int("--threads", v, 1, INT_MAX);
        else if (!strcmp(argv[i], "--no-bos"))
            o->add_bos = 0;
        else if (!strcmp(argv[i], "--no-verify"))
            o->verify = 0;
        else
            opt_die_unknown("serve", argv[i], known);
    }
    if (!o->ckpt) {
        usage(stderr);
        rt_die("--ckpt DIR is required: a checkpoint directory, RUN_DIR/checkpoints/step_NNNNNNNN, "
               "or a run directory");
    }
    if (o->api_key && !*o->api_key) rt_die("--api-key is empty: give the key clients must send");
}

/* ---- the model's thread and its queue ---- */

typedef enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_CANCELLED } JobState;

typedef struct Job {
    const CompletionRequest *req;
    json_t *res;
    ServeError err; /* when res is NULL after the model ran */
    JobState state;
    struct Job *next;
} Job;

/* A connection (MHD's socket context), for --max-connections and --timeout. */
typedef struct Conn {
    int fd;
    double since;  /* when it opened or its last answer was sent */
    int receiving; /* until its next request has arrived whole, which is due by since + --timeout */
    int admitted;  /* one of the --max-connections oldest, which are served */
    struct Conn *prev, *next;
} Conn;

typedef struct {
    ServeModel sm;
    ServeLimits lim;
    const Options *o;
    pthread_mutex_t mu; /* the queue's: */
    pthread_cond_t work, done;
    Job *head, *tail;
    int running;             /* jobs in the model's current batch */
    int stop;                /* the model's thread ends once the queue is empty */
    int abandon;             /* the grace period is over: the model's thread leaves its jobs */
    pthread_mutex_t conn_mu; /* the connections': */
    Conn *conns;
    int admitted;  /* connections admitted, at most --max-connections */
    int in_flight; /* requests whose headers have arrived and whose answers have not been sent */
    int stopping;  /* after SIGTERM or SIGINT: new requests get 503 */
} Server;

/* Takes the first queued job and the queued jobs that can join its batch (serve_can_batch), up
 * to --max-prompts rows; the others keep their places. */
static int take_jobs(Server *s, Job **batch) {
    Job *first = s->head, **link = &first->next;
    int n = 1, rows = first->req->n_prompts * first->req->n;
    batch[0] = first;
    for (Job *j = first->next; j; j = *link) {
        int r = j->req->n_prompts * j->req->n;
        if (rows + r <= s->lim.max_rows && serve_can_batch(first->req, j->req)) {
            *link = j->next;
            batch[n++] = j;
            rows += r;
        } else
            link = &j->next;
    }
    s->head = first->next;
    s->tail = NULL;
    for (Job *j = s->head; j; j = j->next) s->tail = j;
    for (int k = 0; k < n; k++) batch[k]->state = JOB_RUNNING;
    return n;
}

static void *model_thread(void *arg) {
    Server *s = arg;
#ifdef _OPENMP
    if (s->o->threads > 0)
        omp_set_num_threads(s->o->threads); /* a new thread starts from OpenMP's defaults */
#endif
    Job **batch = rt_malloc(sizeof(Job *) * (size_t)s->lim.max_rows);
    const CompletionRequest **reqs =
        rt_malloc(sizeof(CompletionRequest *) * (size_t)s->lim.max_rows);
    json_t **res = rt_malloc(sizeof(json_t *) * (size_t)s->lim.max_rows);
    ServeError *errs = rt_malloc(sizeof(ServeError) * (size_t)s->lim.max_rows);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stop && !s->abandon) pthread_cond_wait(&s->work, &s->mu);
        if (!s->head || s->abandon) break;
        int n = s->running = take_jobs(s, batch);
        pthread_mutex_unlock(&s->mu);
        int rows = 0, sampled = 0;
        for (int k = 0; k < n; k++) {
            reqs[k] = batch[k]->req;
            rows += reqs[k]->n_prompts * reqs[k]->n;
            sampled += reqs[k]->max_tokens > 0 && reqs[k]->sampling.temperature > 0;
        }
        double t0 = rt_now();
        serve_complete(&s->sm, reqs, n, res, errs);
        fprintf(stderr, "rotor serve: %d request%s (%d sampled), %d completion%s, %.1f ms\n", n,
                n > 1 ? "s" : "", sampled, rows, rows > 1 ? "s" : "", 1e3 * (rt_now() - t0));
        pthread_mutex_lock(&s->mu);
        s->running = 0;
        for (int k = 0; k < n; k++) {
            if (s->abandon) { /* its client has had a 503, and its Job is gone */
                json_decref(res[k]);
                continue;
            }
            batch[k]->res = res[k];
            batch[k]->err = errs[k];
            batch[k]->state = JOB_DONE;
        }
        pthread_cond_broadcast(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    rt_free(errs);
    rt_free(res);
    rt_free(reqs);
    rt_free(batch);
    return NULL;
}

/* Queues req for the model's thread and waits: the completion's JSON when *state is JOB_DONE, or
 * NULL with *e its error. After the grace period, *state is JOB_CANCELLED (it never ran) or
 * JOB_RUNNING (the model's thread is still reading req). */
static json_t *run_job(Server *s, const CompletionRequest *req, JobState *state, ServeError *e) {
    Job j = {req, NULL, {0}, JOB_QUEUED, NULL};
    pthread_mutex_lock(&s->mu);
    if (s->abandon)
        j.state = JOB_CANCELLED;
    else {
        if (s->tail)
            s->tail->next = &j;
        else
            s->head = &j;
        s->tail = &j;
        pthread_cond_signal(&s->work);
    }
    while (j.state == JOB_QUEUED || (j.state == JOB_RUNNING && !s->abandon))
        pthread_cond_wait(&s->done, &s->mu);
    *state = j.state;
    *e = j.err;
    pthread_mutex_unlock(&s->mu);
    return j.res;
}

/* The grace period is over: queued jobs are cancelled, and the model's thread leaves the batch it
 * runs; their clients get 503. Returns the jobs of that batch (0: the thread can be joined). */
static int abandon_jobs(Server *s) {
    pthread_mutex_lock(&s->mu);
    s->abandon = 1;
    for (Job *j = s->head; j; j = j->next)
        j->state = JOB_CANCELLED; /* their waiters need mu to leave */
    s->head = s->tail = NULL;
    int running = s->running;
    pthread_cond_broadcast(&s->done);
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    return running;
}

/* ---- connections ---- */

#define RETRY_AFTER_S "1" /* the Retry-After of a 503 */
/* File descriptors kept for the rest of the process (stdio, the listening socket, a GPU driver's)
 * when MHD's connection limit is fitted to RLIMIT_NOFILE. */
#define FD_RESERVE 64

/* Connections past --max-connections that MHD still accepts, to answer them 503 (or let them idle
 * until --timeout); past these, it resets them. */
#define EXCESS_CONNECTIONS 1024

/* MHD's own connection limit, the last guard above --max-connections, within the file descriptors
 * this process may open (raised toward the hard limit where needed). */
static unsigned connection_guard(int max_connections) {
    rlim_t want = (rlim_t)max_connections + EXCESS_CONNECTIONS + FD_RESERVE;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl)) rt_die("getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
        if (setrlimit(RLIMIT_NOFILE, &rl)) getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < (rlim_t)max_connections + 1 + FD_RESERVE)
        rt_die("--max-connections %d needs %d file descriptors, and this process may open %llu "
               "(ulimit -n): lower "
               "--max-connections or raise the limit",
               max_connections, max_connections + 1 + FD_RESERVE, (unsigned long long)rl.rlim_cur);
    return (unsigned)((rl.rlim_cur < want ? rl.rlim_cur : want) - FD_RESERVE);
}

/* The oldest connection not admitted, if any (the list starts with the newest). */
static Conn *oldest_waiting(Server *s) {
    Conn *oldest = NULL;
    for (Conn *c = s->conns; c; c = c->next)
        if (!c->admitted) oldest = c;
    return oldest;
}

/* MHD's notices of connections opening and closing: the records of --max-connections and --timeout.
 * The --max-connections oldest connections are admitted: a new one while there is room, and the
 * oldest waiting one when an admitted one closes. */
static void connection_event(void *cls, struct MHD_Connection *c, void **socket_context,
                             enum MHD_ConnectionNotificationCode what) {
    Server *s = cls;
    Conn *conn = *socket_context;
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = conn = rt_calloc(1, sizeof *conn);
        pthread_mutex_lock(&s->conn_mu);
        *conn = (Conn){ci ? ci->connect_fd : -1,
                       rt_now(),
                       1,
                       s->admitted < s->o->max_connections,
                       NULL,
                       s->conns};
        s->admitted += conn->admitted;
        if (s->conns) s->conns->prev = conn;
        s->conns = conn;
        pthread_mutex_unlock(&s->conn_mu);
    } else if (conn) {
        pthread_mutex_lock(&s->conn_mu);
        if (conn->prev)
            conn->prev->next = conn->next;
        else
            s->conns = conn->next;
        if (conn->next) conn->next->prev = conn->prev;
        Conn *next_in = conn->admitted ? oldest_waiting(s) : NULL;
        if (next_in)
            next_in->admitted = 1;
        else
            s->admitted -= conn->admitted;
        pthread_mutex_unlock(&s->conn_mu);
        rt_free(conn);
        *socket_context = NULL;
    }
}

static Conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Shuts the sockets of the connections whose request has not arrived whole within --timeout of
 * their opening or last answer: idle clients, and trickling ones (MHD's own timeout restarts with
 * every byte). MHD then closes them. A record leaves the list before MHD closes its socket
 * (MHD_CONNECTION_NOTIFY_CLOSED), so fd is still the connection's. */
static void close_late_connections(Server *s) {
    double now = rt_now();
    pthread_mutex_lock(&s->conn_mu);
    for (Conn *c = s->conns; c; c = c->next)
        if (c->receiving && now - c->since > s->o->timeout) {
            shutdown(c->fd, SHUT_RDWR);
            c->receiving = 0;
        }
    pthread_mutex_unlock(&s->conn_mu);
}

/* Whether a request whose headers have arrived is taken, and then counts it in flight: on an
 * admitted connection, and not after SIGTERM. Otherwise e is the 503. */
static int take_request(Server *s, Conn *conn, ServeError *e) {
    pthread_mutex_lock(&s->conn_mu);
    int admitted = conn->admitted, taken = admitted && !s->stopping;
    s->in_flight += taken;
    pthread_mutex_unlock(&s->conn_mu);
    if (!admitted)
        serve_fail(
            e, 503, NULL,
            "the server is serving its limit of %d connections (--max-connections): retry later",
            s->o->max_connections);
    else if (!taken)
        serve_fail(e, 503, NULL,
                   "the server is stopping (SIGTERM or SIGINT): it takes no new requests");
    return taken;
}

static void set_receiving(Server *s, Conn *conn, int receiving) {
    pthread_mutex_lock(&s->conn_mu);
    conn->receiving = receiving;
    conn->since = rt_now();
    pthread_mutex_unlock(&s->conn_mu);
}

static int is_stopping(Server *s) {
    pthread_mutex_lock(&s->conn_mu);
    int stopping = s->stopping;
    pthread_mutex_unlock(&s->conn_mu);
    return stopping;
}

static int requests_in_flight(Server *s) {
    pthread_mutex_lock(&s->conn_mu);
    int n = s->in_flight;
    pthread_mutex_unlock(&s->conn_mu);
    return n;
}

/* ---- HTTP ---- */

typedef struct {
    char *body;
    size_t len, cap;
    int too_big;
    int in_flight; /* counted in Server.in_flight */
} Upload;

/* A 503, and any answer after SIGTERM, closes its connection. */
static enum MHD_Result send_json(Server *s, struct MHD_Connection *c, unsigned status, json_t *j) {
    char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(j);
    if (!text)
        text = strdup(
            "{\"error\": {\"message\": \"the response could not be encoded\", \"code\": 500}}"),
        status = 500;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (status == 503) MHD_add_response_header(r, "Retry-After", RETRY_AFTER_S);
    if (status == 503 || is_stopping(s))
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(Server *s, struct MHD_Connection *c, const ServeError *e) {
    return send_json(s, c, (unsigned)e->status, serve_error_json(e));
}

/* Equal strings, in a time that depends on the length of `secret` only. */
static int same_secret(const char *given, const char *secret) {
    size_t n = strlen(given), m = strlen(secret);
    unsigned char diff = n != m;
    for (size_t i = 0; i < m; i++) diff |= (unsigned char)((i < n ? given[i] : 0) ^ secret[i]);
    return !diff;
}

/* 'Authorization: Bearer KEY', the scheme in any case (RFC 7235), the key exactly. */
static int authorized(const Server *s, struct MHD_Connection *c) {
    if (!s->o->api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7)) return 0;
    for (h += 7; *h == ' '; h++) {
    }
    return same_secret(h, s->o->api_key);
}

static json_t *models_json(const Server *s) {
    return json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:i}]}", "object", "list", "data", "id",
                     s->sm.name, "object", "model", "created", (json_int_t)0, "owned_by", "rotor",
                     "max_model_len", s->lim.context);
}

/* A completion through the model's queue: its JSON, or NULL with e filled. */
static json_t *run_completion(Server *s, const Upload *u, ServeError *e) {
    CompletionRequest *req = rt_malloc(sizeof *req);
    if (serve_parse_completion(u->body ? u->body : "", u->len, &s->lim, s->sm.tok, req, e)) {
        rt_free(req);
        return NULL;
    }
    JobState state;
    json_t *res = run_job(s, req, &state, e);
    if (state == JOB_DONE && !res && !e->status)
        serve_fail(e, 500, NULL, "the completion could not be encoded as JSON");
    else if (state != JOB_DONE)
        serve_fail(
            e, 503, NULL,
            "the server stopped (SIGTERM or SIGINT) before this completion was done (--grace)");
    if (state !=
        JOB_RUNNING) { /* else the model's thread still reads req: the process ends first */
        serve_completion_free(req);
        rt_free(req);
    }
    return res;
}

/* The answer to a whole request. */
static enum MHD_Result answer(Server *s, struct MHD_Connection *c, const char *url,
                              const char *method, const Upload *u) {
    static const char *const gets[] = {"/health", "/v1/models", "/tokenizer_info", NULL};
    static const char *const posts[] = {"/v1/completions", "/tokenize", "/detokenize", NULL};
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST"), known_get = 0, known_post = 0;
    for (int i = 0; gets[i]; i++) known_get |= !strcmp(url, gets[i]);
    for (int i = 0; posts[i]; i++) known_post |= !strcmp(url, posts[i]);
    ServeError e = {0};
    if (!known_get && !known_post) {
        serve_fail(&e, 404, NULL,
                   "%s %s: no such endpoint; this server has GET /health, /v1/models, "
                   "/tokenizer_info and POST "
                   "/v1/completions, /tokenize, /detokenize",
                   method, url);
        return send_error(s, c, &e);
    }
    if ((known_get && !get) || (known_post && !post)) {
        serve_fail(&e, 405, NULL, "%s %s: use %s", method, url, known_get ? "GET" : "POST");
        return send_error(s, c, &e);
    }
    if (!strcmp(url, "/health")) return send_json(s, c, 200, json_pack("{s:s}", "status", "ok"));
    if (!authorized(s, c)) {
        serve_fail(&e, 401, NULL,
                   "a valid API key is required: send the header 'Authorization: Bearer KEY'");
        return send_error(s, c, &e);
    }
    if (u->too_big) {
        serve_fail(&e, 413, NULL,
                   "the body is larger than this server's limit of %lld bytes (--max-body)",
                   (long long)s->o->max_body);
        return send_error(s, c, &e);
    }
    const char *body = u->body ? u->body : "";
    json_t *res = NULL;
    if (!strcmp(url, "/v1/models"))
        res = models_json(s);
    else if (!strcmp(url, "/tokenizer_info"))
        res = serve_tokenizer_info(s->sm.tok, &s->lim);
    else if (!strcmp(url, "/tokenize"))
        res = serve_tokenize(body, u->len, s->sm.tok, &e);
    else if (!strcmp(url, "/detokenize"))
        res = serve_detokenize(body, u->len, s->sm.tok, &e);
    else
        res = run_completion(s, u, &e);
    return res ? send_json(s, c, 200, res) : send_error(s, c, &e);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **state) {
    Server *s = cls;
    Upload *u = *state;
    if (!u) { /* the headers: a body announced over the limit is refused before it is read */
        *state = u = rt_calloc(1, sizeof *u);
        ServeError e = {0};
        if (!(u->in_flight = take_request(s, conn_of(c), &e))) return send_error(s, c, &e);
        const char *cl =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoll(cl, NULL, 10) > s->o->max_body) {
            u->too_big = 1;
            return answer(s, c, url, method, u);
        }
        return MHD_YES;
    }
    if (*size) {
        if (!u->too_big && u->len + *size > (size_t)s->o->max_body) u->too_big = 1;
        if (!u->too_big) {
            if (u->len + *size + 1 > u->cap)
                u->body = rt_realloc(u->body, u->cap = 2 * (u->len + *size) + 1);
            memcpy(u->body + u->len, data, *size);
            u->len += *size;
            u->body[u->len] = 0;
        }
        *size = 0;
        return MHD_YES;
    }
    /* the request is whole: no deadline until it is answered (and MHD restarts its own idle timer
     * when the answer is queued, so the model's work, however long, does not time it out) */
    set_receiving(s, conn_of(c), 0);
    return answer(s, c, url, method, u);
}

/* A request's end, answered or not: the connection's next request is due within --timeout. */
static void request_done(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode why) {
    Server *s = cls;
    Upload *u = *state;
    Conn *conn = conn_of(c);
    if (conn) set_receiving(s, conn, 1);
    if (!u) return;
    pthread_mutex_lock(&s->conn_mu);
    s->in_flight -= u->in_flight;
    pthread_mutex_unlock(&s->conn_mu);
    rt_free(u->body);
    rt_free(u);
    *state = NULL;
}

#if MHD_VERSION < 0x01000000
/* libmicrohttpd before 1.0 answers a Content-Length it cannot read (not digits, or past 2^64)
 * itself, before the handler runs, and builds that answer's header twice, so that the client
 * reads two status lines: parse_connection_headers queues the answer, then its caller overwrites
 * the connection's state and the header is built again. MHD logs the refusal first, from the
 * connection's own thread, where request_line_seen has recorded the connection: the server
 * answers there itself, with its JSON error, and shuts the socket, so that MHD's copy goes
 * nowhere (its messages about failing to send it are dropped). */
static _Thread_local struct MHD_Connection
    *parsing;                           /* the connection this thread reads a request of */
static _Thread_local int answered_here; /* that connection's error went out by answer_bad_length */

static void *request_line_seen(void *cls, const char *uri, struct MHD_Connection *c) {
    parsing = c;
    return NULL; /* the request's state: handle() makes it */
}

static void send_all(int fd, const char *text) {
    for (size_t n = strlen(text), sent = 0; sent < n;) {
        ssize_t k = send(fd, text + sent, n - sent, MSG_NOSIGNAL);
        if (k <= 0) return; /* the client left, or its window is full: it gets what went */
        sent += (size_t)k;
    }
}

/* The error for the unreadable Content-Length of c's request, written to its socket, then shut. */
static void answer_bad_length(Server *s, struct MHD_Connection *c, int too_large) {
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return;
    ServeError e = {0};
    if (too_large)
        serve_fail(
            &e, 413, NULL,
            "Content-Length: %.40s is larger than this server's limit of %lld bytes (--max-body)",
            cl ? cl : "", (long long)s->o->max_body);
    else
        serve_fail(&e, 400, NULL, "Content-Length: '%.40s' is not a number of bytes (digits only)",
                   cl ? cl : "");
    json_t *j = serve_error_json(&e);
    char *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    char *head = rt_sprintf(
        "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
        "Connection: close\r\n\r\n",
        e.status, MHD_get_reason_phrase_for((unsigned)e.status), body ? strlen(body) : 0);
    send_all(ci->connect_fd, head);
    if (body) send_all(ci->connect_fd, body);
    shutdown(ci->connect_fd, SHUT_RDWR);
    answered_here = 1;
    rt_free(head);
    free(body);
}
#endif

/* MHD's messages go to stderr, as its own logger writes them. */
/* MHD_start_daemon is under way: its failure is reported by start_http (MHD's own message names
 * "port 0", the port argument, not the address it was given) */
static atomic_int starting;

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    if (starting) return;
#if MHD_VERSION < 0x01000000
    if (answered_here)
        return; /* a thread serves one connection: these are about the answer MHD could not send */
    if (parsing && strstr(fmt, "Content-Length' header. Closing connection.")) {
        answer_bad_length(cls, parsing, !strncmp(fmt, "Too large", 9));
        return;
    }
#endif
    vfprintf(stderr, fmt, ap);
}

static struct MHD_Daemon *start_http(Server *s, const Options *o) {
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *ai;
    int rc = getaddrinfo(o->host, port, &hints, &ai);
    if (rc) rt_die("--host %s: %s", o->host, gai_strerror(rc));
    /* poll, as select takes no socket past FD_SETSIZE (1024); ITC, for MHD_quiesce_daemon */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    starting = 1;
    struct MHD_Daemon *d =
        MHD_start_daemon(/* the logger first, as MHD asks */
                         flags, 0, NULL, NULL, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
                         MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED,
                         request_done, s, MHD_OPTION_NOTIFY_CONNECTION, connection_event, s,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout,
                         MHD_OPTION_CONNECTION_LIMIT, connection_guard(o->max_connections),
#if MHD_VERSION < 0x01000000
                         MHD_OPTION_URI_LOG_CALLBACK, request_line_seen, s,
#endif
                         MHD_OPTION_END);
    int start_errno = errno;
    starting = 0;
    freeaddrinfo(ai);
    errno = start_errno;
    if (!d)
        rt_die("cannot listen on %s port %d (--host, --port): %s", o->host, o->port,
               strerror(errno));
    return d;
}

/* ---- stopping ---- */

#define TICK_S 0.25 /* how often late connections are closed */

/* SIGINT or SIGTERM within `seconds`, else -1. */
static int next_signal(const sigset_t *sigs, double seconds) {
    if (seconds <= 0) return -1;
    struct timespec ts = {(time_t)seconds, (long)(1e9 * (seconds - (double)(time_t)seconds))};
    return sigtimedwait(sigs, NULL, &ts);
}

/* Serves until SIGINT or SIGTERM, closing late connections meanwhile. */
static int serve_until_signal(Server *s, const sigset_t *sigs) {
    int sig;
    while ((sig = next_signal(sigs, TICK_S)) < 0) close_late_connections(s);
    return sig;
}

/* After SIGINT or SIGTERM: new connections are refused and new requests on open ones get 503,
 * while the requests in flight are answered, for up to --grace seconds (a second signal ends the
 * wait); the jobs left then get 503. Returns 1 when the model's thread is still inside a batch. */
static int stop_serving(Server *s, struct MHD_Daemon *d, const sigset_t *sigs, int sig) {
    MHD_socket listen_fd = MHD_quiesce_daemon(d);
    /* refuses connections at once; MHD wants the socket itself closed after MHD_stop_daemon */
    if (listen_fd != MHD_INVALID_SOCKET) shutdown(listen_fd, SHUT_RDWR);
    pthread_mutex_lock(&s->conn_mu);
    s->stopping = 1;
    int n = s->in_flight;
    pthread_mutex_unlock(&s->conn_mu);
    fprintf(stderr,
            "rotor serve: %s, stopping: %d request%s in flight, waiting up to %d s (--grace)\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", n, n == 1 ? "" : "s", s->o->grace);
    double end = rt_now() + s->o->grace;
    for (double left; requests_in_flight(s) > 0 && (left = end - rt_now()) > 0;) {
        if (next_signal(sigs, left < TICK_S ? left : TICK_S) > 0)
            break; /* a second signal: no more waiting */
        close_late_connections(s);
    }
    int running = 0;
    if ((n = requests_in_flight(s)) > 0) {
        running = abandon_jobs(s);
        fprintf(stderr,
                "rotor serve: %d request%s still in flight: the completions not done get 503\n", n,
                n == 1 ? "" : "s");
        for (double until = rt_now() + 2;
             requests_in_flight(s) > 0 && rt_now() < until;) /* the 503s go out */
            nanosleep(&(struct timespec){0, 20000000}, NULL);
    } else
        fprintf(stderr, "rotor serve: every request in flight was answered\n");
    MHD_stop_daemon(d);
    if (listen_fd != MHD_INVALID_SOCKET) close(listen_fd);
    return running > 0;
}

int serve_main(int argc, char **argv) {
    Options o;
    parse_options(argc, argv, &o);
#ifdef _OPENMP
    if (o.threads > 0) omp_set_num_threads(o.threads);
#endif
    Server s = {.o = &o};
    char *ckpt_dir;
    Model *m = cmd_load_model(o.ckpt, o.device, o.verify, &ckpt_dir);
    o.ckpt = ckpt_dir;
    const ModelConfig *mc = model_config(m);
    if (mc->head != HEAD_LM)
        rt_die("%s has the auto-encoder head (config.json rotor_head): serving needs a language "
               "model's "
               "next-token head",
               o.ckpt);
    Tokenizer *tok = cmd_load_tokenizer(o.ckpt, o.tokenizer, mc, o.add_bos);
    s.lim = (ServeLimits){mc->max_seq_len,
                          tok_vocab_size(tok),
                          o.add_bos,
                          o.max_prompts,
                          o.max_tokens ? o.max_tokens : mc->max_seq_len,
                          o.max_logprobs};
    if (s.lim.max_logprobs > s.lim.vocab)
        s.lim.max_logprobs = s.lim.vocab; /* no more alternatives than ids */
    char *name = NULL;
    if (!o.name) { /* the checkpoint directory's name: RUN/checkpoints/step_N gives RUN/step_N */
        const char *end = o.ckpt + strlen(o.ckpt);
        while (end > o.ckpt + 1 && end[-1] == '/') end--;
        const char *b = end;
        while (b > o.ckpt && b[-1] != '/') b--;
        name = rt_sprintf("%.*s", (int)(end - b), b);
    }
    int pass_tokens = o.pass_tokens                            ? o.pass_tokens
                      : !strcmp(model_backend(m)->name, "cpu") ? 512
                                                               : 4096;
    s.sm = (ServeModel){m, tok, &s.lim, o.name ? o.name : name, pass_tokens};
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.work, NULL);
    pthread_cond_init(&s.done, NULL);
    pthread_mutex_init(&s.conn_mu, NULL);

    /* the signals are taken by next_signal (sigtimedwait): every thread started from here blocks
     * them */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that left: the write fails, the server goes on */
    pthread_t worker;
    if (pthread_create(&worker, NULL, model_thread, &s)) rt_die("cannot start the model's thread");
    struct MHD_Daemon *d = start_http(&s, &o);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("rotor serve: %s (%s + %s, context %d, BOS %s) on http://%s:%u/v1, %s, %d threads\n",
           s.sm.name, mixer_name(mc->mixer), pe_name(mc->pe.kind), mc->max_seq_len,
           o.add_bos ? "prepended" : "not prepended", o.host, info ? info->port : (unsigned)o.port,
           model_backend(m)->name, par_max_threads());
    fflush(stdout);
    if (stop_serving(&s, d, &sigs, serve_until_signal(&s, &sigs))) {
        fflush(NULL);
        _exit(0); /* the model's thread cannot be stopped inside a batch: the process ends without
                     it */
    }
    pthread_mutex_lock(&s.mu);
    s.stop = 1;
    pthread_cond_signal(&s.work);
    pthread_mutex_unlock(&s.mu);
    pthread_join(worker, NULL);
    rt_free(name);
    tok_free(tok);
    model_free(m);
    rt_free(ckpt_dir);
    return 0;
}
