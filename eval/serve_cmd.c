/* `rotor serve`: an HTTP server (libmicrohttpd, a thread per connection) for OpenAI-style
 * completion clients and lm-evaluation-harness's `local-completions` model. Connections parse
 * their requests themselves (eval/serve_request.c); completions go through a queue to the one
 * thread that runs the model (eval/serve_complete.c), in the order they arrived, those waiting
 * together that can share a batch (serve_can_batch) as one. SIGINT and
 * SIGTERM stop it: requests under way are answered first, then it exits 0. */
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cmd_common.h"
#include "cpu/parallel.h"
#include "eval_run.h"
#include "serve_complete.h"
#include "util/timer.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: rotor serve --ckpt DIR [options]\n\n"
            "Serves a checkpoint over HTTP with OpenAI's completions API, for lm-evaluation-harness's\n"
            "local-completions model (remote tokenizer) and OpenAI clients (docs/evaluation.md, part C):\n"
            "  POST /v1/completions   prompt (string, strings, token ids, lists of ids), max_tokens,\n"
            "                         echo, logprobs, temperature, top_p, top_k, seed, stop, n\n"
            "  POST /tokenize, POST /detokenize, GET /tokenizer_info   the harness's remote tokenizer\n"
            "  GET /v1/models, GET /health\n"
            "Prompts are scored as rotor eval scores and continued as rotor generate continues them.\n\n"
            "  --ckpt DIR           checkpoint directory (RUN_DIR/checkpoints/step_NNNNNNNN)\n"
            "  --host ADDR          address to listen on (default 127.0.0.1: this machine only)\n"
            "  --port N             port (default 8000; 0: any free port, printed at start)\n"
            "  --api-key KEY        require the header 'Authorization: Bearer KEY' (GET /health excepted)\n"
            "  --name NAME          the model's name in responses (default: the checkpoint directory's)\n"
            "  --tokenizer MODEL    SentencePiece model (default: the one its run trained with)\n"
            "  --no-bos             do not prepend BOS to the prompts (default: prepend, as rotor eval does)\n"
            "  --no-verify          load the checkpoint without checking its files' recorded sha256s\n"
            "  --max-body BYTES     request bodies at most (default 16777216); larger ones get 413\n"
            "  --max-prompts N      completions per request at most, prompts x n (default 64)\n"
            "  --max-tokens N       max_tokens at most (default: the checkpoint's context)\n"
            "  --max-logprobs N     logprobs at most (default 20)\n"
            "  --pass-tokens N      tokens per scoring forward pass at most, several requests' prompts\n"
            "                       together (default 512 on the CPU, where the logits of a small pass\n"
            "                       stay in cache; 4096 on a GPU)\n"
            "  --device D           cpu, cuda, or auto (default: cuda when a GPU is visible)\n"
            "  --threads N          CPU threads (default: all cores)\n");
}

typedef struct {
    const char *ckpt, *host, *api_key, *name, *tokenizer, *device;
    int port, threads, add_bos, verify, max_prompts, max_tokens, max_logprobs, pass_tokens;
    int64_t max_body;
} Options;

static void parse_options(int argc, char **argv, Options *o) {
    *o = (Options){.host = "127.0.0.1", .device = "auto", .port = 8000, .add_bos = 1, .verify = 1, .max_prompts = 64,
                   .max_logprobs = 20, .max_body = 16 << 20};
    static const char *const known[] = {"--ckpt",      "--host",       "--port",       "--api-key",   "--name",
                                        "--tokenizer", "--no-bos", "--no-verify",     "--max-body",   "--max-prompts",
                                        "--max-tokens", "--max-logprobs", "--pass-tokens", "--device",  "--threads",   "--help",
                                        NULL};
    const char *v;
    for (int i = 0; i < argc; i++) {
        if (opt_is_help(argv[i])) {
            usage(stdout);
            exit(0);
        } else if ((v = opt_value("serve", argc, argv, &i, "--ckpt"))) o->ckpt = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--host"))) o->host = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--port"))) o->port = (int)opt_parse_int("--port", v, 0, 65535);
        else if ((v = opt_value("serve", argc, argv, &i, "--api-key"))) o->api_key = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--name"))) o->name = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--tokenizer"))) o->tokenizer = v;
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
        else if ((v = opt_value("serve", argc, argv, &i, "--device"))) o->device = v;
        else if ((v = opt_value("serve", argc, argv, &i, "--threads")))
            o->threads = (int)opt_parse_int("--threads", v, 1, INT_MAX);
        else if (!strcmp(argv[i], "--no-bos")) o->add_bos = 0;
        else if (!strcmp(argv[i], "--no-verify")) o->verify = 0;
        else opt_die_unknown("serve", argv[i], known);
    }
    if (!o->ckpt) {
        usage(stderr);
        rt_die("--ckpt DIR is required: a checkpoint directory, RUN_DIR/checkpoints/step_NNNNNNNN");
    }
    if (o->api_key && !*o->api_key) rt_die("--api-key is empty: give the key clients must send");
}

/* ---- the model's thread and its queue ---- */

typedef struct Job {
    const CompletionRequest *req;
    json_t *res;
    int done;
    struct Job *next;
} Job;

typedef struct {
    ServeModel sm;
    ServeLimits lim;
    const Options *o;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    Job *head, *tail;
    int stop;
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
        } else link = &j->next;
    }
    s->head = first->next;
    s->tail = NULL;
    for (Job *j = s->head; j; j = j->next) s->tail = j;
    return n;
}

static void *model_thread(void *arg) {
    Server *s = arg;
#ifdef _OPENMP
    if (s->o->threads > 0) omp_set_num_threads(s->o->threads); /* a new thread starts from OpenMP's defaults */
#endif
    Job **batch = rt_malloc(sizeof(Job *) * (size_t)s->lim.max_rows);
    const CompletionRequest **reqs = rt_malloc(sizeof(CompletionRequest *) * (size_t)s->lim.max_rows);
    json_t **res = rt_malloc(sizeof(json_t *) * (size_t)s->lim.max_rows);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stop) pthread_cond_wait(&s->work, &s->mu);
        if (!s->head) break;
        int n = take_jobs(s, batch);
        pthread_mutex_unlock(&s->mu);
        int rows = 0, sampled = 0;
        for (int k = 0; k < n; k++) {
            reqs[k] = batch[k]->req;
            rows += reqs[k]->n_prompts * reqs[k]->n;
            sampled += reqs[k]->max_tokens > 0 && reqs[k]->sampling.temperature > 0;
        }
        double t0 = rt_now();
        serve_complete(&s->sm, reqs, n, res);
        fprintf(stderr, "rotor serve: %d request%s (%d sampled), %d completion%s, %.1f ms\n", n, n > 1 ? "s" : "",
                sampled, rows, rows > 1 ? "s" : "", 1e3 * (rt_now() - t0));
        pthread_mutex_lock(&s->mu);
        for (int k = 0; k < n; k++) {
            batch[k]->res = res[k];
            batch[k]->done = 1;
        }
        pthread_cond_broadcast(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    rt_free(res);
    rt_free(reqs);
    rt_free(batch);
    return NULL;
}

static json_t *run_job(Server *s, const CompletionRequest *req) {
    Job j = {req, NULL, 0, NULL};
    pthread_mutex_lock(&s->mu);
    if (s->tail) s->tail->next = &j;
    else s->head = &j;
    s->tail = &j;
    pthread_cond_signal(&s->work);
    while (!j.done) pthread_cond_wait(&s->done, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return j.res;
}

/* ---- HTTP ---- */

typedef struct {
    char *body;
    size_t len, cap;
    int too_big;
} Upload;

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *j) {
    char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(j);
    if (!text) text = strdup("{\"error\": {\"message\": \"the response could not be encoded\", \"code\": 500}}"), status = 500;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, const ServeError *e) {
    return send_json(c, (unsigned)e->status, serve_error_json(e));
}

static int authorized(const Server *s, struct MHD_Connection *c) {
    if (!s->o->api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && !strncmp(h, "Bearer ", 7) && !strcmp(h + 7, s->o->api_key);
}

static json_t *models_json(const Server *s) {
    return json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:i}]}", "object", "list", "data", "id", s->sm.name, "object",
                     "model", "created", (json_int_t)0, "owned_by", "rotor", "max_model_len", s->lim.context);
}

/* The answer to a whole request. */
static enum MHD_Result answer(Server *s, struct MHD_Connection *c, const char *url, const char *method,
                              const Upload *u) {
    static const char *const gets[] = {"/health", "/v1/models", "/tokenizer_info", NULL};
    static const char *const posts[] = {"/v1/completions", "/tokenize", "/detokenize", NULL};
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST"), known_get = 0, known_post = 0;
    for (int i = 0; gets[i]; i++) known_get |= !strcmp(url, gets[i]);
    for (int i = 0; posts[i]; i++) known_post |= !strcmp(url, posts[i]);
    ServeError e = {0};
    if (!known_get && !known_post) {
        serve_fail(&e, 404, NULL,
                   "%s %s: no such endpoint; this server has GET /health, /v1/models, /tokenizer_info and POST "
                   "/v1/completions, /tokenize, /detokenize",
                   method, url);
        return send_error(c, &e);
    }
    if ((known_get && !get) || (known_post && !post)) {
        serve_fail(&e, 405, NULL, "%s %s: use %s", method, url, known_get ? "GET" : "POST");
        return send_error(c, &e);
    }
    if (!strcmp(url, "/health")) return send_json(c, 200, json_pack("{s:s}", "status", "ok"));
    if (!authorized(s, c)) {
        serve_fail(&e, 401, NULL, "a valid API key is required: send the header 'Authorization: Bearer KEY'");
        return send_error(c, &e);
    }
    if (u->too_big) {
        serve_fail(&e, 413, NULL, "the body is larger than this server's limit of %lld bytes (--max-body)",
                   (long long)s->o->max_body);
        return send_error(c, &e);
    }
    const char *body = u->body ? u->body : "";
    json_t *res = NULL;
    if (!strcmp(url, "/v1/models")) res = models_json(s);
    else if (!strcmp(url, "/tokenizer_info")) res = serve_tokenizer_info(s->sm.tok, &s->lim);
    else if (!strcmp(url, "/tokenize")) res = serve_tokenize(body, u->len, s->sm.tok, &e);
    else if (!strcmp(url, "/detokenize")) res = serve_detokenize(body, u->len, s->sm.tok, &e);
    else {
        CompletionRequest req;
        if (!serve_parse_completion(body, u->len, &s->lim, s->sm.tok, &req, &e)) {
            res = run_job(s, &req);
            serve_completion_free(&req);
            if (!res) serve_fail(&e, 500, NULL, "the completion could not be encoded as JSON");
        }
    }
    return res ? send_json(c, 200, res) : send_error(c, &e);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *size, void **state) {
    Server *s = cls;
    Upload *u = *state;
    if (!u) { /* the headers: a body announced over the limit is refused before it is read */
        *state = u = rt_calloc(1, sizeof *u);
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoll(cl, NULL, 10) > s->o->max_body) {
            u->too_big = 1;
            return answer(s, c, url, method, u);
        }
        return MHD_YES;
    }
    if (*size) {
        if (!u->too_big && u->len + *size > (size_t)s->o->max_body) u->too_big = 1;
        if (!u->too_big) {
            if (u->len + *size + 1 > u->cap) u->body = rt_realloc(u->body, u->cap = 2 * (u->len + *size) + 1);
            memcpy(u->body + u->len, data, *size);
            u->len += *size;
            u->body[u->len] = 0;
        }
        *size = 0;
        return MHD_YES;
    }
    return answer(s, c, url, method, u);
}

static void request_done(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode why) {
    Upload *u = *state;
    if (!u) return;
    rt_free(u->body);
    rt_free(u);
    *state = NULL;
}

static struct MHD_Daemon *start_http(Server *s, const Options *o) {
    char port[16];
    snprintf(port, sizeof port, "%d", o->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
    int rc = getaddrinfo(o->host, port, &hints, &ai);
    if (rc) rt_die("--host %s: %s", o->host, gai_strerror(rc));
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d =
        MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                         MHD_OPTION_NOTIFY_COMPLETED, request_done, s, MHD_OPTION_CONNECTION_TIMEOUT,
                         (unsigned)600, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) rt_die("cannot listen on %s port %d (--host, --port): %s", o->host, o->port, strerror(errno));
    return d;
}

int serve_main(int argc, char **argv) {
    Options o;
    parse_options(argc, argv, &o);
#ifdef _OPENMP
    if (o.threads > 0) omp_set_num_threads(o.threads);
#endif
    Server s = {.o = &o};
    Model *m = cmd_load_model(o.ckpt, o.device, o.verify);
    const ModelConfig *mc = model_config(m);
    if (mc->head != HEAD_LM)
        rt_die("%s has the auto-encoder head (config.json rotor_head): serving needs a language model's "
               "next-token head", o.ckpt);
    Tokenizer *tok = cmd_load_tokenizer(o.ckpt, o.tokenizer, mc, o.add_bos);
    s.lim = (ServeLimits){mc->max_seq_len, tok_vocab_size(tok), o.add_bos, o.max_prompts,
                          o.max_tokens ? o.max_tokens : mc->max_seq_len, o.max_logprobs};
    if (s.lim.max_logprobs > s.lim.vocab) s.lim.max_logprobs = s.lim.vocab; /* no more alternatives than ids */
    char *name = NULL;
    if (!o.name) { /* the checkpoint directory's name: RUN/checkpoints/step_N gives RUN/step_N */
        const char *end = o.ckpt + strlen(o.ckpt);
        while (end > o.ckpt + 1 && end[-1] == '/') end--;
        const char *b = end;
        while (b > o.ckpt && b[-1] != '/') b--;
        name = rt_sprintf("%.*s", (int)(end - b), b);
    }
    int pass_tokens = o.pass_tokens ? o.pass_tokens : !strcmp(model_backend(m)->name, "cpu") ? 512 : 4096;
    s.sm = (ServeModel){m, tok, &s.lim, o.name ? o.name : name, pass_tokens};
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.work, NULL);
    pthread_cond_init(&s.done, NULL);

    /* the signals are taken by sigwait below: every thread started from here blocks them */
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
    printf("rotor serve: %s (%s + %s, context %d, BOS %s) on http://%s:%u/v1, %s, %d threads\n", s.sm.name,
           mixer_name(mc->mixer), pe_name(mc->pe.kind), mc->max_seq_len, o.add_bos ? "prepended" : "not prepended",
           o.host, info ? info->port : (unsigned)o.port, model_backend(m)->name, par_max_threads());
    fflush(stdout);
    int sig;
    sigwait(&sigs, &sig);
    fprintf(stderr, "rotor serve: %s, stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    MHD_stop_daemon(d); /* waits for the connections' threads: their requests are answered */
    pthread_mutex_lock(&s.mu);
    s.stop = 1;
    pthread_cond_signal(&s.work);
    pthread_mutex_unlock(&s.mu);
    pthread_join(worker, NULL);
    rt_free(name);
    tok_free(tok);
    model_free(m);
    return 0;
}
