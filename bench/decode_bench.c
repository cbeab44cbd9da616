/* Prefill and decode benchmark (src/model/decode.h) with random-init weights, per config:
 *   prefill    decoder_prefill of one row of T tokens, for each T of --lengths: ms and
 *              tokens/s (the mean of --reps prefills after a warm-up one; with --stat min
 *              the fastest, for a machine whose speed drifts between them);
 *   decode     for each batch size B of --batches, a prefill of --prompt tokens per row, then
 *              --steps decoder_step calls: ms per step and B x steps / time as tokens/s;
 *   recompute  the baseline: the same batch-1 generation (prompt P, steps S: S + 1
 *              next-token logit vectors) by a model_forward with grad_scale 0 over the whole
 *              prefix for each of them (lengths P .. P + S, the LM head on the last position,
 *              its logits copied to the host), against the decoder's prefill + S steps
 *              (the mean of --reps such generations).
 * Each line also gives decoder_state_bytes and the backend's peak memory so far (its pool's
 * high-water mark over the whole run, "-" where the backend does not track it). The tokens
 * are uniform random ids (never BOS); decode feeds fixed random tokens, not the logits'
 * choices, so the times are the decoder's alone; the logits still come back to the host, as
 * the API returns them. The backend is synchronized around every timed stretch. After the
 * baseline one more forward checks the decoder's last logits (no test, a sanity line):
 * logp_diff is the difference of the log-probability of the decoder's greedy token by the
 * decoder's logits and by the forward's, greedy_agrees whether the forward picks the same
 * token. One key=value line per measurement (scripts/gpu_check.sh, part decode, reads them
 * beside bench/fla_generate.py's):
 *   prefill name=<config> T=<T> ms=<x> tok_s=<y> state_mib=<s> peak_gib=<p>
 *   decode name=<config> batch=<B> prompt=<P> steps=<S> prefill_ms=<x> ms_step=<y> tok_s=<z> ...
 *   recompute name=<config> prompt=<P> steps=<S> decoder_ms=<x> recompute_ms=<y> speedup=<r>x ...
 * and with --out FILE the same numbers as JSON.
 *   decode_bench [--device cpu|cuda|auto] [--lengths 1024,2048,...] [--batches 1,64]
 *                [--prompt P] [--steps S] [--reps N] [--set section.key=value]... [--out FILE]
 *                CONFIG.ini...
 * Defaults: cuda, lengths 1024 to 32768 by doubling, batches 1 and 64, prompt 512, 64 steps,
 * 3 reps. On the CPU the tiny configs (configs/tiny/) run in seconds with lengths up to 8192
 * (FoX's attention over 32768 tokens takes a minute). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/run_config.h"
#include "cpu/blas_setup.h"
#include "device/device.h"
#include "model/decode.h"
#include "model/model.h"
#include "util/error.h"
#include "util/rng.h"
#include "util/timer.h"

enum { MAX_LIST = 32, MAX_SETS = 256 };

typedef struct {
    const char *device;
    int lengths[MAX_LIST], nlengths;
    int batches[MAX_LIST], nbatches;
    int prompt, steps, reps;
    int fastest; /* --stat min: a prefill's time is the fastest of --reps, not their mean */
    const char *sets[MAX_SETS];
    int nsets;
} Options;

/* One config's model and what every measurement needs. */
typedef struct {
    const Backend *be;
    Model *m;
    const char *name; /* the config's file name without directory and .ini */
    int V, bos;
    Rng rng;
    json_t *out; /* this config's JSON object */
} Bench;

/* n uniform random token ids below V, never BOS (no document starts inside a row). */
static int32_t *random_tokens(Bench *b, size_t n) {
    int32_t *t = rt_malloc(sizeof(int32_t) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        t[i] = (int32_t)rng_below(&b->rng, (uint64_t)b->V - 1);
        if (t[i] >= b->bos) t[i]++;
    }
    return t;
}

static double mib(size_t bytes) { return (double)bytes / (1 << 20); }

/* The peak as text ("-" when the backend tracks none) and into the JSON object. */
static const char *peak_text(Bench *b, json_t *o, char *buf, size_t n) {
    size_t peak = b->be->peak_memory();
    json_object_set_new(o, "peak_bytes", peak ? json_integer((json_int_t)peak) : json_null());
    if (!peak) return "-";
    snprintf(buf, n, "%.3f", (double)peak / (1 << 30));
    return buf;
}

static void prefill_bench(Bench *b, const Options *o) {
    json_t *rows = json_array();
    float *logits = rt_malloc(sizeof(float) * (size_t)b->V);
    for (int i = 0; i < o->nlengths; i++) {
        int T = o->lengths[i];
        int32_t *tok = random_tokens(b, (size_t)T);
        const int32_t *prompts[1] = {tok};
        Decoder *d = decoder_create(b->m, 1, T);
        decoder_prefill(d, prompts, &T, logits); /* warm-up: plans, allocations */
        b->be->synchronize();
        double s = 0;
        for (int r = 0; r < o->reps; r++) {
            double t0 = rt_now();
            decoder_prefill(d, prompts, &T, logits);
            b->be->synchronize();
            double t = rt_now() - t0;
            s = o->fastest ? (r == 0 || t < s ? t : s) : s + t / o->reps;
        }
        size_t state = decoder_state_bytes(d);
        json_t *row = json_pack("{s:i, s:f, s:f, s:I}", "T", T, "ms", 1e3 * s, "tokens_per_s",
                                T / s, "state_bytes", (json_int_t)state);
        char pk[32];
        printf("prefill name=%s T=%d ms=%.3f tok_s=%.0f state_mib=%.2f peak_gib=%s\n", b->name, T,
               1e3 * s, T / s, mib(state), peak_text(b, row, pk, sizeof pk));
        fflush(stdout);
        json_array_append_new(rows, row);
        decoder_free(d);
        rt_free(tok);
    }
    rt_free(logits);
    json_object_set_new(b->out, "prefill", rows);
}

typedef struct {
    double prefill_s, steps_s;
    size_t state_bytes;
} DecodeTime;

/* A prefill of `prompt` tokens per row and `steps` steps, rows r's tokens at
 * tok[r * (prompt + steps)]: its prompt, then the tokens fed to the steps. logits [rows, V]
 * end as the last step's. A warm-up prefill and step run first. */
static DecodeTime decode_run(Bench *b, int rows, int prompt, int steps, const int32_t *tok,
                             float *logits) {
    int L = prompt + steps;
    const int32_t **prompts = rt_malloc(sizeof(int32_t *) * (size_t)rows);
    int *lens = rt_malloc(sizeof(int) * (size_t)rows);
    int32_t *feed = rt_malloc(sizeof(int32_t) * (size_t)rows * (size_t)steps);
    for (int r = 0; r < rows; r++) {
        prompts[r] = tok + (size_t)r * L;
        lens[r] = prompt;
        for (int s = 0; s < steps; s++)
            feed[(size_t)s * rows + r] = tok[(size_t)r * L + prompt + s];
    }
    Decoder *d = decoder_create(b->m, rows, L);
    decoder_prefill(d, prompts, lens, logits); /* warm-up */
    decoder_step(d, feed, logits);
    b->be->synchronize();
    double t0 = rt_now();
    decoder_prefill(d, prompts, lens, logits); /* starts every row afresh */
    b->be->synchronize();
    double t1 = rt_now();
    for (int s = 0; s < steps; s++) decoder_step(d, feed + (size_t)s * rows, logits);
    b->be->synchronize();
    DecodeTime t = {t1 - t0, rt_now() - t1, decoder_state_bytes(d)};
    RT_ASSERT(decoder_length(d, 0) == L);
    decoder_free(d);
    rt_free(prompts);
    rt_free(lens);
    rt_free(feed);
    return t;
}

static void decode_bench(Bench *b, const Options *o) {
    json_t *rows = json_array();
    for (int i = 0; i < o->nbatches; i++) {
        int B = o->batches[i];
        int32_t *tok = random_tokens(b, (size_t)B * (o->prompt + o->steps));
        float *logits = rt_malloc(sizeof(float) * (size_t)B * b->V);
        DecodeTime t = decode_run(b, B, o->prompt, o->steps, tok, logits);
        double tps = (double)B * o->steps / t.steps_s, ms_step = 1e3 * t.steps_s / o->steps;
        json_t *row =
            json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:I}", "batch", B, "prompt", o->prompt,
                      "steps", o->steps, "prefill_ms", 1e3 * t.prefill_s, "ms_per_step", ms_step,
                      "tokens_per_s", tps, "state_bytes", (json_int_t)t.state_bytes);
        char pk[32];
        printf("decode name=%s batch=%d prompt=%d steps=%d prefill_ms=%.3f ms_step=%.4f tok_s=%.0f "
               "state_mib=%.2f peak_gib=%s\n",
               b->name, B, o->prompt, o->steps, 1e3 * t.prefill_s, ms_step, tps, mib(t.state_bytes),
               peak_text(b, row, pk, sizeof pk));
        fflush(stdout);
        json_array_append_new(rows, row);
        rt_free(tok);
        rt_free(logits);
    }
    json_object_set_new(b->out, "decode", rows);
}

/* Seconds of the baseline: for T = prompt .. prompt + steps, a forward over seq[0, T) with
 * the LM head on position T - 1 and its logits copied to the host. */
static double recompute_run(Bench *b, const int32_t *seq, int prompt, int steps) {
    int L = prompt + steps;
    int32_t *lab = rt_malloc(sizeof(int32_t) * (size_t)L);
    for (int i = 0; i < L; i++) lab[i] = -100;
    void *host = rt_malloc(b->be->act_size * (size_t)b->V);
    Batch bt = {.B = 1, .T = L, .tokens = seq, .labels = lab, .doc_start = NULL};
    lab[L - 1] = 0;
    model_forward(b->m, &bt, 0.0, NULL); /* warm-up at the longest length: the buffers */
    lab[L - 1] = -100;
    b->be->synchronize();
    double t0 = rt_now();
    for (int T = prompt; T <= L; T++) {
        bt.T = T;
        lab[T - 1] = 0; /* any label: the head runs on the labelled positions only */
        model_forward(b->m, &bt, 0.0, NULL);
        model_get_logits(b->m, host);
        lab[T - 1] = -100;
    }
    b->be->synchronize();
    double s = rt_now() - t0;
    rt_free(lab);
    rt_free(host);
    return s;
}

/* The greedy token of logits[0, V) and its log-probability. */
static int greedy(const float *x, int V, double *logp) {
    int best = 0;
    for (int c = 1; c < V; c++)
        if (x[c] > x[best]) best = c;
    double sum = 0;
    for (int c = 0; c < V; c++) sum += exp((double)x[c] - x[best]);
    *logp = -log(sum);
    return best;
}

static void recompute_bench(Bench *b, const Options *o) {
    int L = o->prompt + o->steps;
    int32_t *seq = random_tokens(b, (size_t)L);
    float *logits = rt_malloc(sizeof(float) * (size_t)b->V);
    double dec = 0; /* the mean of --reps generations: a few ms, where one is noisy */
    for (int r = 0; r < o->reps; r++) {
        DecodeTime t = decode_run(b, 1, o->prompt, o->steps, seq, logits);
        dec += (t.prefill_s + t.steps_s) / o->reps;
    }
    double rec = recompute_run(b, seq, o->prompt, o->steps);
    /* the decoder's last logits against a forward over the same L tokens */
    double logp_dec, logp_fwd;
    int32_t *lab = rt_malloc(sizeof(int32_t) * (size_t)L);
    for (int i = 0; i < L; i++) lab[i] = -100;
    lab[L - 1] = greedy(logits, b->V, &logp_dec);
    uint8_t agrees[1];
    Batch bt = {.B = 1, .T = L, .tokens = seq, .labels = lab, .doc_start = NULL};
    RT_ASSERT(model_token_logprobs(b->m, &bt, &logp_fwd, agrees) == 1);
    double diff = fabs(logp_dec - logp_fwd);
    json_object_set_new(b->out, "recompute",
                        json_pack("{s:i, s:i, s:f, s:f, s:f, s:f, s:b}", "prompt", o->prompt,
                                  "steps", o->steps, "decoder_ms", 1e3 * dec, "recompute_ms",
                                  1e3 * rec, "speedup", rec / dec, "logp_diff", diff,
                                  "greedy_agrees", agrees[0]));
    printf("recompute name=%s prompt=%d steps=%d decoder_ms=%.3f recompute_ms=%.3f speedup=%.2fx "
           "logp_diff=%.2g greedy_agrees=%d\n",
           b->name, o->prompt, o->steps, 1e3 * dec, 1e3 * rec, rec / dec, diff, agrees[0]);
    fflush(stdout);
    rt_free(seq);
    rt_free(logits);
    rt_free(lab);
}

static json_t *bench_config(const Backend *be, const char *path, const Options *o) {
    RunConfig rc;
    char err[2048];
    if (run_config_load(&rc, path, o->sets, o->nsets, err, sizeof err)) rt_die("%s", err);
    const char *slash = strrchr(path, '/');
    char name[256];
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : path);
    char *dot = strstr(name, ".ini");
    if (dot) *dot = 0;
    Bench b = {.be = be, .name = name, .V = rc.model.vocab_size, .bos = rc.model.bos_id};
    rng_init(&b.rng, 1, 0);
    b.m = model_create(&rc.model, be);
    model_init_weights(b.m, rc.train.seed);
    b.out = json_pack("{s:s, s:s, s:I}", "config", path, "name", name, "params",
                      (json_int_t)model_num_params(b.m));
    printf("config %s: %s, %.2fM parameters\n", path, mixer_name(rc.model.mixer),
           model_num_params(b.m) / 1e6);
    prefill_bench(&b, o);
    decode_bench(&b, o);
    recompute_bench(&b, o);
    model_free(b.m);
    return b.out;
}

static void usage(void) {
    fprintf(stderr,
            "usage: decode_bench [--device cpu|cuda|auto] [--lengths T,T,...] [--batches B,B,...]\n"
            "                    [--prompt P] [--steps S] [--reps N] [--stat mean|min]\n"
            "                    [--set section.key=value]...\n"
            "                    [--out FILE] CONFIG.ini...\n");
    exit(2);
}

/* A comma-separated list of positive integers into out[MAX_LIST]; returns the count. */
static int parse_list(const char *opt, const char *s, int *out) {
    int n = 0;
    for (const char *p = s; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1 << 30 || (*end && *end != ',') || n == MAX_LIST)
            rt_die("%s takes up to %d positive integers separated by commas, not '%s'", opt,
                   MAX_LIST, s);
        out[n++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (!n) rt_die("%s: an empty list", opt);
    return n;
}

static int positive(const char *opt, const char *s) {
    int v = atoi(s);
    if (v < 1) rt_die("%s takes a positive integer, not '%s'", opt, s);
    return v;
}

int main(int argc, char **argv) {
    blas_select_kernels(argv);
    Options o = {.device = "cuda", .prompt = 512, .steps = 64, .reps = 3};
    o.nlengths = parse_list("--lengths", "1024,2048,4096,8192,16384,32768", o.lengths);
    o.nbatches = parse_list("--batches", "1,64", o.batches);
    const char *out_path = NULL;
    int i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) usage();
        i++;
        if (!strcmp(a, "--device")) {
            o.device = v;
        } else if (!strcmp(a, "--lengths")) {
            o.nlengths = parse_list(a, v, o.lengths);
        } else if (!strcmp(a, "--batches")) {
            o.nbatches = parse_list(a, v, o.batches);
        } else if (!strcmp(a, "--prompt")) {
            o.prompt = positive(a, v);
        } else if (!strcmp(a, "--steps")) {
            o.steps = positive(a, v);
        } else if (!strcmp(a, "--reps")) {
            o.reps = positive(a, v);
        } else if (!strcmp(a, "--stat")) {
            if (strcmp(v, "mean") && strcmp(v, "min")) rt_die("--stat takes mean or min, not '%s'", v);
            o.fastest = !strcmp(v, "min");
        } else if (!strcmp(a, "--out")) {
            out_path = v;
        } else if (!strcmp(a, "--set") && o.nsets < MAX_SETS) {
            o.sets[o.nsets++] = v;
        } else {
            usage();
        }
    }
    if (i >= argc) usage();
    const Backend *be = backend_select(o.device, "--device");
    printf(
        "device %s (%s, %s activations): prefill the %s of %d after a warm-up; decode %d steps "
        "after a prompt of %d\n",
        be->device, be->name, be->act_size == 2 ? "bf16" : "fp32", o.fastest ? "fastest" : "mean", o.reps, o.steps,
        o.prompt);
    json_t *runs = json_array();
    for (int k = i; k < argc; k++) json_array_append_new(runs, bench_config(be, argv[k], &o));
    if (out_path) {
        json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:o}", "program", "decode_bench",
                              "device", be->device, "dtype", be->act_size == 2 ? "bf16" : "fp32",
                              "prompt", o.prompt, "steps", o.steps, "reps", o.reps, "runs", runs);
        json_object_set_new(j, "prefill_stat", json_string(o.fastest ? "min" : "mean"));
        if (json_dump_file(j, out_path, JSON_INDENT(1)))
            rt_die("decode_bench: cannot write %s", out_path);
        json_decref(j);
    } else {
        json_decref(runs);
    }
    return 0;
}
