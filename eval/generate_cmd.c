/* `rotor generate`: text from a checkpoint. One --prompt streams its completion to stdout as
 * it is decoded; --prompts FILE.jsonl runs every prompt of the file as one batch and writes
 * one JSON object per prompt. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_common.h"
#include "config/run_config.h"
#include "cpu/parallel.h"
#include "eval_run.h"
#include "generate.h"
#include "train/checkpoint.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: rotor generate --ckpt DIR (--prompt TEXT | --prompts FILE.jsonl) [options]\n\n"
        "Continues prompts with a checkpoint's model: a prefill pass over each prompt, then one\n"
        "token at a time until EOS or the length limit. The prompt is tokenised as rotor eval\n"
        "does: BOS first (--no-bos to leave it out).\n\n"
        "  --ckpt DIR              checkpoint directory (RUN_DIR/checkpoints/step_NNNNNNNN), or a\n"
        "                          run directory: its latest intact checkpoint\n"
        "  --prompt TEXT           one prompt; its completion is printed to stdout as it is "
        "decoded\n"
        "  --prompts FILE.jsonl    one JSON object per line with a string \"prompt\"; all prompts "
        "are\n"
        "                          decoded together and each gets one JSON line on stdout (or "
        "--out):\n"
        "                          index, prompt, completion, tokens (the completion's ids), "
        "n_tokens,\n"
        "                          n_prompt_tokens, stop_reason (\"eos\" or \"length\")\n"
        "  --max-new-tokens N      tokens generated per prompt at most (default 128); prompt and\n"
        "                          completion together stay within the training context "
        "(train.seq_len)\n"
        "  --temperature T         logits are divided by T before sampling; 0 is greedy (default "
        "1)\n"
        "  --top-k K               sample among the K most likely tokens; 0: all (default 0)\n"
        "  --top-p P               sample among the most likely tokens of total probability P,\n"
        "                          in (0, 1]; 1: all (default 1). Applied after --top-k\n"
        "  --seed S                random seed (default 0); prompt i of a batch draws from its "
        "own\n"
        "                          stream (S, i), so its completion does not depend on the others\n"
        "  --tokenizer MODEL       SentencePiece model (default: the one its run trained with)\n"
        "  --no-bos                do not prepend BOS to the prompts (default: prepend)\n"
        "  --no-verify             load the checkpoint without checking its files' recorded "
        "sha256s\n"
        "  --out FILE.jsonl        the JSON lines go to FILE instead of stdout; with --prompt, "
        "its\n"
        "                          line is written there too (the text still streams to stdout)\n"
        "  --device D              cpu, cuda, or auto (default: cuda when a GPU is visible)\n"
        "  --threads N             CPU threads (default: all cores)\n\n"
        "A summary goes to stderr: tokens, prefill time, decoding speed, decoding state size.\n");
}

typedef struct {
    char *text;
    char where[1100]; /* "--prompt" or FILE:LINE, for errors */
} Prompt;

static void free_prompts(Prompt *p, int n) {
    for (int r = 0; r < n; r++) rt_free(p[r].text);
    rt_free(p);
}

/* Reads the prompts of a JSONL file: blank lines are skipped; every other line must be an
 * object with a non-empty string "prompt". NULL with the file and line at fault in err when
 * it is not so (nothing is left allocated). */
static Prompt *read_prompts(const char *path, int *count, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        rt_error(err, errlen, NULL, "--prompts %s: %s", path, strerror(errno));
        return NULL;
    }
    Prompt *p = NULL;
    int n = 0, cap = 0, rc = 0;
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    for (long lineno = 1; !rc && (len = getline(&line, &line_cap, f)) >= 0; lineno++) {
        if (strspn(line, " \t\r\n") == (size_t)len) continue;
        json_error_t jerr;
        json_t *doc = json_loadb(line, (size_t)len, 0, &jerr);
        json_t *s = json_object_get(doc, "prompt");
        if (!doc)
            rc = rt_error(err, errlen, NULL, "%s:%ld: not valid JSON: %s", path, lineno, jerr.text);
        else if (!json_is_object(doc) || !json_is_string(s))
            rc = rt_error(err, errlen, NULL, "%s:%ld: expected an object with a string \"prompt\"",
                          path, lineno);
        else if (!json_string_length(s))
            rc = rt_error(err, errlen, NULL, "%s:%ld: the prompt is empty", path, lineno);
        else {
            if (n == cap) p = rt_realloc(p, sizeof *p * (size_t)(cap = cap ? 2 * cap : 16));
            p[n].text = rt_strdup(json_string_value(s));
            snprintf(p[n].where, sizeof p[n].where, "%s:%ld", path, lineno);
            n++;
        }
        json_decref(doc);
    }
    if (!rc && ferror(f))
        rc = rt_error(err, errlen, NULL, "--prompts %s: read error: %s", path, strerror(errno));
    if (!rc && !n) rc = rt_error(err, errlen, NULL, "--prompts %s: no prompts in the file", path);
    free(line);
    fclose(f);
    if (rc) {
        free_prompts(p, n);
        return NULL;
    }
    *count = n;
    return p;
}

/* Streaming one completion to stdout: after every token the whole completion is decoded
 * again and its new end printed, except a trailing U+FFFD: the bytes of a character whose
 * other byte pieces are still to come decode to it for now. */
typedef struct {
    const Tokenizer *tok;
    const char *prompt_text;
    size_t printed; /* bytes of the completion's text on stdout */
} Stream;

static void stream_print(Stream *s, const char *text, size_t len) {
    if (len <= s->printed) return;
    fwrite(text + s->printed, 1, len - s->printed, stdout);
    fflush(stdout);
    s->printed = len;
}

static void stream_token(void *ctx, int row, const int32_t *seq, int n_prompt, int n) {
    Stream *s = ctx;
    char *text = cmd_completion_text(s->tok, seq, n_prompt, n, s->prompt_text);
    size_t len = strlen(text);
    while (len >= 3 && !memcmp(text + len - 3, "\xEF\xBF\xBD", 3)) len -= 3;
    stream_print(s, text, len);
    free(text);
}

static json_t *row_json(int index, const char *prompt, const char *completion, const int32_t *ids,
                        int n_prompt, const GenerateRow *g) {
    json_t *tokens = json_array();
    for (int i = 0; i < g->n; i++) json_array_append_new(tokens, json_integer(ids[i]));
    json_t *o = json_pack("{s:i, s:s, s:s, s:o, s:i, s:i, s:s}", "index", index, "prompt", prompt,
                          "completion", completion, "tokens", tokens, "n_tokens", g->n,
                          "n_prompt_tokens", n_prompt, "stop_reason",
                          g->eos         ? "eos"
                          : g->nonfinite ? "nonfinite"
                                         : "length");
    RT_ASSERT(o); /* the texts are UTF-8: read from JSON, or decoded by SentencePiece */
    return o;
}

typedef struct {
    const char *ckpt, *prompt, *prompts, *tokenizer, *out, *device;
    int max_new, threads, add_bos, verify;
    SamplingArgs sampling;
} Options;

/* Reads and checks the options; --help prints the usage and exits. */
static void parse_options(int argc, char **argv, Options *o) {
    *o = (Options){
        .device = "auto", .max_new = 128, .add_bos = 1, .verify = 1, .sampling = {1.0, 0, 1.0, 0}};
    static const char *const known[] = {
        "--ckpt",        "--prompt",  "--prompts",   "--max-new-tokens",
        "--temperature", "--top-k",   "--top-p",     "--seed",
        "--tokenizer",   "--no-bos",  "--no-verify", "--out",
        "--device",      "--threads", "--help",      NULL};
    const char *v;
    for (int i = 0; i < argc; i++) {
        if (opt_is_help(argv[i])) {
            usage(stdout);
            exit(0);
        } else if ((v = opt_value("generate", argc, argv, &i, "--ckpt")))
            o->ckpt = v;
        else if ((v = opt_value("generate", argc, argv, &i, "--prompt")))
            o->prompt = v;
        else if ((v = opt_value("generate", argc, argv, &i, "--prompts")))
            o->prompts = v;
        else if ((v = opt_value("generate", argc, argv, &i, "--max-new-tokens"))) {
            int64_t n = opt_parse_int("--max-new-tokens", v, 1, INT64_MAX);
            o->max_new = n > INT_MAX / 2 ? INT_MAX / 2 : (int)n; /* the context caps it anyway */
        } else if ((v = opt_value("generate", argc, argv, &i, "--temperature")))
            o->sampling.temperature = opt_parse_number("--temperature", v, -INFINITY, INFINITY);
        else if ((v = opt_value("generate", argc, argv, &i, "--top-k"))) {
            int64_t k = opt_parse_int("--top-k", v, INT_MIN,
                                      INT64_MAX); /* a negative k is sampling_check's error */
            o->sampling.top_k = k > INT_MAX ? INT_MAX : (int)k;
        } else if ((v = opt_value("generate", argc, argv, &i, "--top-p")))
            o->sampling.top_p = opt_parse_number("--top-p", v, -INFINITY, INFINITY);
        else if ((v = opt_value("generate", argc, argv, &i, "--seed")))
            o->sampling.seed = (uint64_t)opt_parse_int("--seed", v, 0, INT64_MAX);
        else if ((v = opt_value("generate", argc, argv, &i, "--tokenizer")))
            o->tokenizer = v;
        else if ((v = opt_value("generate", argc, argv, &i, "--out")))
            o->out = v;
        else if ((v = opt_value("generate", argc, argv, &i, "--device")))
            o->device = v;
        else if ((v = opt_value("generate", argc, argv, &i, "--threads")))
            o->threads = (int)opt_parse_int("--threads", v, 1, INT_MAX);
        else if (!strcmp(argv[i], "--no-bos"))
            o->add_bos = 0;
        else if (!strcmp(argv[i], "--no-verify"))
            o->verify = 0;
        else
            opt_die_unknown("generate", argv[i], known);
    }
    if (!o->ckpt) {
        usage(stderr);
        rt_die("--ckpt DIR is required: a checkpoint directory, RUN_DIR/checkpoints/step_NNNNNNNN, "
               "or a run directory");
    }
    if (o->prompt && o->prompts)
        rt_die("--prompt and --prompts cannot be used together: give one of them");
    if (!o->prompt && !o->prompts) rt_die("no prompt: give --prompt TEXT or --prompts FILE.jsonl");
    if (o->prompt && !*o->prompt) rt_die("--prompt is empty: give the text to continue");
    char msg[256];
    if (sampling_check(&o->sampling, &(SamplingNames){"--temperature", "--top-k", "--top-p"}, msg,
                       sizeof msg))
        rt_die("%s (see rotor generate --help)", msg);
}

/* The context a prompt and its completion must fit: the run's training length (its
 * rotor.ini), or config.json's max_position_embeddings without a rotor.ini. *key names the
 * source for errors (malloc'd). */
static int checkpoint_context(const char *ckpt, const ModelConfig *mc, char **key) {
    RunConfig rc;
    char err[2048];
    if (!checkpoint_read_config(ckpt, &rc, err, sizeof err)) {
        *key = rt_sprintf("train.seq_len in %s/rotor.ini", ckpt);
        return rc.train.seq_len;
    }
    *key = rt_sprintf("max_position_embeddings in %s/config.json", ckpt);
    return mc->max_seq_len;
}

/* Each prompt's tokens, with room for max_new more after them. Dies when a prompt encodes to
 * nothing or leaves no room in the context. */
static int32_t **encode_prompts(const Tokenizer *tok, const Prompt *ps, int rows, int add_bos,
                                int context, const char *context_key, int max_new, int *lens) {
    int32_t **seqs = rt_malloc(sizeof(int32_t *) * (size_t)rows);
    char err[2048];
    for (int r = 0; r < rows; r++) {
        int32_t *ids;
        size_t n;
        if (tok_encode(tok, ps[r].text, strlen(ps[r].text), add_bos, 0, &ids, &n, err, sizeof err))
            rt_die("%s: %s", ps[r].where, err);
        if (n == 0)
            rt_die("%s: the prompt encodes to no tokens (drop --no-bos to start it with BOS)",
                   ps[r].where);
        if (n >= (size_t)context)
            rt_die("%s: the prompt is %zu tokens%s; the context is %d tokens (%s), so a prompt may "
                   "have at most %d",
                   ps[r].where, n, add_bos ? " with BOS" : "", context, context_key, context - 1);
        seqs[r] = rt_malloc(sizeof(int32_t) * (n + (size_t)max_new));
        memcpy(seqs[r], ids, sizeof(int32_t) * n);
        free(ids);
        lens[r] = (int)n;
    }
    return seqs;
}

int generate_main(int argc, char **argv) {
    Options o;
    parse_options(argc, argv, &o);
    int rows = 1;
    Prompt *ps;
    if (o.prompts) {
        char err[2048];
        if (!(ps = read_prompts(o.prompts, &rows, err, sizeof err))) rt_die("%s", err);
    } else {
        ps = rt_calloc(1, sizeof *ps);
        ps->text = rt_strdup(o.prompt);
        snprintf(ps->where, sizeof ps->where, "--prompt");
    }
#ifdef _OPENMP
    if (o.threads > 0) omp_set_num_threads(o.threads);
#endif
    char *ckpt_dir;
    Model *m = cmd_load_model(o.ckpt, o.device, o.verify, &ckpt_dir);
    o.ckpt = ckpt_dir;
    const ModelConfig *mc = model_config(m);
    Tokenizer *tok = cmd_load_tokenizer(o.ckpt, o.tokenizer, mc, o.add_bos);
    char *context_key;
    int context = checkpoint_context(o.ckpt, mc, &context_key);
    int max_new = o.max_new < context ? o.max_new : context;
    int *lens = rt_malloc(sizeof(int) * (size_t)rows), prompt_tokens = 0;
    int32_t **seqs = encode_prompts(tok, ps, rows, o.add_bos, context, context_key, max_new, lens);
    for (int r = 0; r < rows; r++) prompt_tokens += lens[r];
    /* JSON lines: of every prompt, to --out or stdout; of a single prompt, only to --out */
    FILE *jsonl = o.out ? fopen(o.out, "w") : o.prompts ? stdout : NULL;
    if (o.out && !jsonl) rt_die("--out %s: %s", o.out, strerror(errno));
    const char *jsonl_name = o.out ? o.out : "stdout";

    GenerateArgs ga = {max_new, context, mc->eos_id, tok_vocab_size(tok), o.sampling, NULL, NULL};
    GenerateRow *res = rt_malloc(sizeof(GenerateRow) * (size_t)rows);
    GenerateStats st;
    char *prompt0_text = cmd_decode(tok, seqs[0], lens[0]);
    Stream stream = {tok, prompt0_text, 0};
    generate(m, &ga, seqs, lens, rows, res, &st, o.prompts ? NULL : stream_token, &stream);

    /* the outputs: the rest of the streamed text, the JSON lines */
    int generated = 0, n_eos = 0, first_bad = -1;
    for (int r = 0; r < rows; r++) {
        char *ptext = r ? cmd_decode(tok, seqs[r], lens[r]) : prompt0_text;
        char *text = cmd_completion_text(tok, seqs[r], lens[r], res[r].n, ptext);
        if (!o.prompts) {
            stream_print(&stream, text, strlen(text));
            fputs("\n", stdout);
        }
        if (jsonl) {
            json_t *j = row_json(r, ps[r].text, text, seqs[r] + lens[r], lens[r], &res[r]);
            if (json_dumpf(j, jsonl, JSON_COMPACT) || fputc('\n', jsonl) == EOF)
                rt_die("cannot write %s: %s", jsonl_name, strerror(errno));
            json_decref(j);
        }
        generated += res[r].n;
        n_eos += res[r].eos;
        if (res[r].nonfinite && first_bad < 0) first_bad = r;
        free(text);
        if (r) free(ptext);
    }
    if (jsonl && (jsonl == stdout ? fflush(stdout) : fclose(jsonl)))
        rt_die("cannot write %s: %s", jsonl_name, strerror(errno));
    fflush(stdout);
    fprintf(stderr,
            "generate: %d prompt%s (%d tokens), %d tokens generated (%d ended by EOS), prefill "
            "%.1f ms, "
            "decode %.1f tok/s (%d steps of %d row%s), decoding state %.2f MiB for %d tokens per "
            "row, %s, %d threads\n",
            rows, rows > 1 ? "s" : "", prompt_tokens, generated, n_eos, 1e3 * st.prefill_s,
            st.decode_s > 0 ? generated / st.decode_s : 0.0, st.steps, rows, rows > 1 ? "s" : "",
            (double)st.state_bytes / (1024.0 * 1024.0), st.max_len, model_backend(m)->name,
            par_max_threads());
    if (first_bad >= 0)
        rt_die("%s: prompt %d: the logits after %d generated tokens are not finite (NaN or inf): "
               "the weights are damaged or the activations overflow",
               o.ckpt, first_bad, res[first_bad].n);

    free(prompt0_text);
    for (int r = 0; r < rows; r++) rt_free(seqs[r]);
    rt_free(seqs);
    free_prompts(ps, rows);
    rt_free(lens);
    rt_free(res);
    rt_free(context_key);
    tok_free(tok);
    model_free(m);
    rt_free(ckpt_dir);
    return 0;
}
