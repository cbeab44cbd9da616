/* `rotor data train-tokenizer`: trains a SentencePiece model (tok_train, with the Mistral
 * conventions: byte fallback, unk 0 / bos 1 / eos 2, identity normaliser) on the text of
 * the same inputs `rotor data tokenize` reads. The text goes, one line per line, into a
 * temporary file that SentencePiece reads; it is removed at exit and on SIGINT / SIGTERM. */
#include <errno.h>
#include <libgen.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dt_common.h"
#include "dt_input.h"
#include "tokenizer.h"
#include "util/error.h"
#include "util/options.h"
#include "util/fsutil.h"
#include "util/timer.h"

/* Text kept in memory to report the new model's bytes per token. */
#define SAMPLE_BYTES ((size_t)1 << 20)

static void usage(FILE *f) {
    fprintf(f,
            "usage: rotor data train-tokenizer --out PREFIX --vocab-size N [options] INPUT...\n\n"
            "Trains a SentencePiece tokenizer into PREFIX.model and PREFIX.vocab, with the\n"
            "conventions of the Mistral tokenizer: byte fallback (no unknown characters),\n"
            "ids 0/1/2 for <unk>/<s>/</s>, text kept as it is (identity normaliser), digits\n"
            "split. The inputs are read as by `rotor data tokenize` (JSONL, .gz, .zst, text,\n"
            "directories); every non-blank line of their text is one training sentence.\n\n"
            "options:\n"
            "  --out PREFIX          output name prefix (required); its directory is created\n"
            "  --vocab-size N        vocabulary size (required), at least the byte pieces,\n"
            "                        control pieces and characters of the text need\n"
            "  --model-type TYPE     bpe (default) or unigram\n"
            "  --max-sentences N     use at most the first N lines of the inputs (default\n"
            "                        2000000; SentencePiece samples at most 2000000 of them)\n"
            "  --text-field NAME     JSONL field holding the text (default: text)\n"
            "  --skip-bad-lines      skip (and count) JSONL lines without a usable text field\n"
            "  --skip-binary         skip inputs that are not text (as `rotor data tokenize`\n"
            "                        judges them), with a warning naming each\n"
            "  --threads N           training threads (default: OMP_NUM_THREADS, else all cores)\n"
            "  --help                show this help\n");
}

typedef struct {
    const char *out, *model_type;
    int64_t vocab_size, max_sentences;
    DtReadArgs read;
} Args;

static void parse_args(int argc, char **argv, Args *a) {
    static const char *const known[] = {"--out",         "--vocab-size",
                                        "--model-type",  "--max-sentences",
                                        "--text-field",  "--skip-bad-lines",
                                        "--skip-binary", "--threads",
                                        "--help",        NULL};
    memset(a, 0, sizeof *a);
    a->model_type = "bpe";
    a->max_sentences = 2000000;
    dt_read_args_init(&a->read, argc,
                      DT_DOCS_LINE); /* text files: every line, as for JSONL documents */
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v;
        if (dt_read_arg(&a->read, "data train-tokenizer", argc, argv, &i)) continue;
        if (opt_is_help(s)) {
            usage(stdout);
            exit(0);
        } else if ((v = opt_value("data train-tokenizer", argc, argv, &i, "--out"))) {
            a->out = v;
        } else if ((v = opt_value("data train-tokenizer", argc, argv, &i, "--vocab-size"))) {
            a->vocab_size = opt_parse_int("--vocab-size", v, 1, INT32_MAX);
        } else if ((v = opt_value("data train-tokenizer", argc, argv, &i, "--model-type"))) {
            if (strcmp(v, "bpe") && strcmp(v, "unigram"))
                rt_die("--model-type: '%s' is not one of bpe, unigram", v);
            a->model_type = v;
        } else if ((v = opt_value("data train-tokenizer", argc, argv, &i, "--max-sentences"))) {
            a->max_sentences = opt_parse_int("--max-sentences", v, 1, INT64_MAX);
        } else {
            opt_die_unknown("data train-tokenizer", s, known);
        }
    }
    if (!a->out) rt_die("missing --out PREFIX (see rotor data train-tokenizer --help)");
    if (!a->vocab_size) rt_die("missing --vocab-size N (see rotor data train-tokenizer --help)");
    if (!a->read.n_inputs) rt_die("no INPUT files given (see rotor data train-tokenizer --help)");
}

/* ---- the temporary text file ---- */

static char tmp_path[4096]; /* empty when there is none */

static void remove_tmp(void) {
    if (tmp_path[0]) unlink(tmp_path);
    tmp_path[0] = '\0';
}

/* SentencePiece cannot be stopped at a safe point, so a signal removes the file (unlink is
 * async-signal-safe) and then terminates the process as the signal would have. */
static void on_signal(int sig) {
    if (tmp_path[0]) unlink(tmp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static FILE *create_tmp(void) {
    const char *dir = getenv("TMPDIR");
    snprintf(tmp_path, sizeof tmp_path, "%s/rotor-train-tokenizer-XXXXXX",
             dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmp_path);
    if (fd < 0) {
        int e = errno;
        char failed[sizeof tmp_path];
        snprintf(failed, sizeof failed, "%s", tmp_path);
        tmp_path[0] = '\0';
        rt_die("cannot create the temporary file %s: %s (set TMPDIR to a writable directory)",
               failed, strerror(e));
    }
    atexit(remove_tmp);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    FILE *f = fdopen(fd, "w");
    if (!f) rt_die("cannot write %s: %s", tmp_path, strerror(errno));
    return f;
}

int dt_train_tokenizer_main(int argc, char **argv) {
    Args a;
    parse_args(argc, argv, &a);
    int threads = a.read.threads ? a.read.threads : omp_get_max_threads();
    DtInputs in, not_text;
    dt_inputs_expand(&in, a.read.inputs, a.read.n_inputs);
    dt_inputs_keep_text(&in, a.read.docs.skip_binary, &not_text);

    /* The sentences: every non-blank line of every document, "\r" line ends dropped. */
    double t0 = rt_now();
    FILE *f = create_tmp();
    DtDocReader *r = dt_docs_open(&in, &a.read.docs);
    char *sample = rt_malloc(SAMPLE_BYTES);
    size_t sample_len = 0;
    int64_t lines = 0, bytes = 0;
    const char *text;
    size_t len;
    char err[2048];
    int got;
    while (lines < a.max_sentences && (got = dt_docs_next(r, &text, &len, err, sizeof err))) {
        if (got < 0) rt_die("%s", err);
        const char *p = text, *end = text + len;
        while (p < end && lines < a.max_sentences) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t n = (size_t)((nl ? nl : end) - p);
            size_t kept = n && p[n - 1] == '\r' ? n - 1 : n;
            if (!dt_is_blank(p, kept)) {
                if (fwrite(p, 1, kept, f) != kept || putc('\n', f) == EOF)
                    rt_die("cannot write %s: %s", tmp_path, strerror(errno));
                if (sample_len + kept + 1 <= SAMPLE_BYTES) {
                    memcpy(sample + sample_len, p, kept);
                    sample[sample_len + kept] = '\n';
                    sample_len += kept + 1;
                }
                lines++;
                bytes += (int64_t)kept + 1;
            }
            p += n + 1;
        }
    }
    if (fclose(f)) rt_die("cannot write %s: %s", tmp_path, strerror(errno));
    int64_t bad = dt_docs_bad_lines(r);
    dt_docs_close(r);
    if (!lines) rt_die("the inputs hold no text to train on");

    /* SentencePiece writes PREFIX.model / PREFIX.vocab but creates no directory. */
    char *prefix_copy = rt_strdup(a.out);
    fs_mkdirs(dirname(prefix_copy));
    rt_free(prefix_copy);

    char c1[32], c2[32];
    fprintf(stderr,
            "train-tokenizer: training a %s model with %s pieces on %s lines (%.1f MB) "
            "with %d thread(s)...\n",
            a.model_type, dt_commas(a.vocab_size, c1), dt_commas(lines, c2), (double)bytes / 1e6,
            threads);
    const char *tmp = tmp_path;
    if (tok_train(&tmp, 1, a.out, (int)a.vocab_size, a.model_type, threads, err, sizeof err)) {
        /* The message names the temporary file: name the inputs instead. */
        size_t n = strlen(tmp_path);
        const char *why =
            !strncmp(err, tmp_path, n) && !strncmp(err + n, ": ", 2) ? err + n + 2 : err;
        rt_die("%s (on %s lines of %s%s)", why, dt_commas(lines, c2), a.read.inputs[0],
               a.read.n_inputs > 1 ? " and others" : "");
    }
    remove_tmp();

    /* Load the result back: it must be usable by `rotor data tokenize`. */
    char *model = rt_sprintf("%s.model", a.out);
    Tokenizer *tok = tok_load(model, err, sizeof err);
    if (!tok) rt_die("%s", err);
    int32_t *ids;
    size_t n_ids;
    if (tok_encode(tok, sample, sample_len, 0, 0, &ids, &n_ids, err, sizeof err)) rt_die("%s", err);
    printf("train-tokenizer: wrote %s and %s.vocab in %.1f s\n", model, a.out, rt_now() - t0);
    printf("  %s model, %d pieces (bos %d, eos %d, unk %d), sha256 %s\n", a.model_type,
           tok_vocab_size(tok), tok_bos_id(tok), tok_eos_id(tok), tok_unk_id(tok), tok_sha256(tok));
    printf("  trained on %s lines (%.1f MB) of %d file(s)%s%s%s\n", dt_commas(lines, c1),
           (double)bytes / 1e6, in.n, bad ? ", " : "", bad ? dt_commas(bad, c2) : "",
           bad ? " bad lines skipped" : "");
    printf("  %.2f bytes per token on the first %.1f MB of that text\n",
           n_ids ? (double)sample_len / (double)n_ids : 0.0, (double)sample_len / 1e6);
    free(ids);
    tok_free(tok);
    rt_free(model);
    rt_free(sample);
    dt_inputs_free(&in);
    dt_inputs_free(&not_text);
    dt_read_args_free(&a.read);
    return 0;
}
