/* Backend.supports at model creation: the model asks the backend about each mixer op it
 * will run (with its head sizes) and refuses, before allocating anything, a configuration
 * whose kernels the backend lacks, naming the config keys that set the sizes. The backend
 * here is the CPU's with a stand-in query that has a kernel-style limit (head sizes a
 * multiple of 16), as the CUDA backend's does (kernels/backend/supports.cu). */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "model/model.h"
#include "testutil.h"

static OpShape asked[8];
static int n_asked;

static int multiple_of_16(const OpShape *s, char *why, size_t n) {
    if (n_asked < 8) asked[n_asked++] = *s;
    if (!strcmp(s->op, "selrope") || (s->K % 16 == 0 && s->V % 16 == 0)) return 1;
    snprintf(why, n, "stand-in kernels take head sizes a multiple of 16, got K=%d V=%d", s->K,
             s->V);
    return 0;
}

static Backend limited(void) {
    Backend b = *backend_cpu();
    b.supports = multiple_of_16;
    return b;
}

static ModelConfig tiny(MixerKind mixer, PEKind pe) {
    ModelConfig c =
        tu_model(mixer, (TuModelSize){.vocab = 64, .hidden = 64, .layers = 1, .heads = 2});
    c.head_dim = 32;
    c.pe.kind = pe;
    return c;
}

/* Runs model_create in a child; returns its exit status and its stderr in msg. */
static int create_in_child(const ModelConfig *c, const Backend *be, char *msg, size_t n) {
    int fd[2];
    if (pipe(fd)) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        model_free(model_create(c, be));
        _exit(0);
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fd[0], msg + got, n - 1 - got)) > 0) got += (size_t)r;
    msg[got] = 0;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Supported shapes: created, after the backend was asked about the mixer op and Selective
 * RoPE with the model's head sizes. */
static void test_asks_for_each_op(void) {
    Backend be = limited();
    ModelConfig c = tiny(MIXER_GLA, PE_SELECTIVE); /* K = 64 * 0.5 / 2 = 16, V = 32, P = 8 */
    c.expand_k = 0.5;
    n_asked = 0;
    Model *m = model_create(&c, &be);
    CHECK(m != NULL);
    CHECK(n_asked == 2);
    CHECK(!strcmp(asked[0].op, "gla") && asked[0].H == 2 && asked[0].K == 16 && asked[0].V == 32);
    CHECK(!strcmp(asked[1].op, "selrope") && asked[1].H == 2 && asked[1].K == 8);
    model_free(m);
    n_asked = 0;
    c = tiny(MIXER_FOX, PE_ROPE);
    m = model_create(&c, &be);
    CHECK(n_asked == 1 && !strcmp(asked[0].op, "fox") && asked[0].K == 32 && asked[0].V == 32);
    model_free(m);
    n_asked = 0;
    c = tiny(MIXER_GDN, PE_NOPE);
    m = model_create(&c, &be);
    CHECK(n_asked == 1 && !strcmp(asked[0].op, "gdn") && asked[0].K == 32);
    model_free(m);
}

/* Unsupported head sizes: rotor stops with status 1, naming the keys, their values and the
 * backend's reason. */
static void refused(ModelConfig c, const char *keys) {
    Backend be = limited();
    char msg[1024];
    int status = create_in_child(&c, &be, msg, sizeof msg);
    printf("    %s", msg);
    CHECK_MSG(status == 1, "exit status %d", status);
    CHECK_MSG(strstr(msg, keys) != NULL, "message lacks '%s'", keys);
    CHECK_MSG(strstr(msg, "stand-in kernels take head sizes a multiple of 16") != NULL,
              "message lacks the backend's reason");
}

static void test_refuses_naming_the_keys(void) {
    ModelConfig c = tiny(MIXER_GLA, PE_NOPE);
    c.expand_k = 0.25; /* K = 8 */
    refused(c, "model.hidden_size = 64, model.num_heads = 2, model.expand_k = 0.25, "
               "model.expand_v = 1: the cpu backend cannot run its gla op (H=2 K=8 V=32)");
    c = tiny(MIXER_GDN, PE_NOPE);
    c.head_dim = 24;
    refused(c, "model.num_heads = 2, model.key_head_dim = 24, model.expand_v = 1: the cpu backend "
               "cannot run its gdn op (H=2 K=24 V=24)");
    c = tiny(MIXER_FOX, PE_NOPE);
    c.num_heads = 8; /* D = 8 */
    refused(c, "model.hidden_size = 64, model.num_heads = 8: the cpu backend cannot run its fox "
               "op (H=8 K=8 V=8)");
}

/* The CPU backend runs every shape: it has no query, and the same configuration is made. */
static void test_cpu_takes_any_shape(void) {
    CHECK(backend_cpu()->supports == NULL);
    ModelConfig c = tiny(MIXER_GDN, PE_NOPE);
    c.head_dim = 24;
    Model *m = model_create(&c, backend_cpu());
    CHECK(m != NULL);
    model_free(m);
}

static const TestCase tests[] = {
    {"asks_for_each_op", test_asks_for_each_op},
    {"refuses_naming_the_keys", test_refuses_naming_the_keys},
    {"cpu_takes_any_shape", test_cpu_takes_any_shape},
};

TH_MAIN(tests)
