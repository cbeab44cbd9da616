/* `rotor data tokenize`: documents from JSONL / text inputs -> HDF5 token shards
 * (docs/formats.md "Token shards") in OUT/train/ and OUT/val/, plus OUT/manifest.json.
 *
 * Pipeline, one block at a time: the main thread reads ~8 MB of documents; an OpenMP
 * `parallel for schedule(dynamic)` encodes them (tok_encode is thread-safe) and hashes them
 * for the split; the main thread then appends them to the shards in document order. The
 * output therefore does not depend on the number of threads. Reading is a few per cent of
 * the time (JSON parsing and decompression run at hundreds of MB/s, SentencePiece at a few
 * MB/s per core), so it is not overlapped with encoding.
 *
 * Split: a document goes to validation when XXH3_64bits_withSeed(text, seed) / 2^64 is
 * below --val-fraction, a function of its content only (so the order of the inputs does not
 * matter, and exact duplicates share a split).
 *
 * Failure safety: every input is checked to be readable text (dt_inputs_keep_text) before
 * anything is written, and the output directory is only touched (created, old shards and
 * manifest deleted) when the first shard is opened, so a refused input, or a bad line in the
 * first block, leaves it as it was. Shards are written as PATH.tmp and renamed when complete
 * (shard.h). On SIGINT / SIGTERM the loops stop at the next safe point, and on any fatal
 * error an atexit handler runs; both abort the open writers, which deletes their PATH.tmp.
 * Closed shards stay; the manifest is written (atomically) only after a complete run. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "data/shard.h"
#include "dt_common.h"
#include "dt_input.h"
#include "tokenizer.h"
#include "util/error.h"
#include "util/options.h"
#include "util/fsutil.h"
#include "util/timer.h"

/* A block is read until it holds this much text or this many documents. */
#define BLOCK_BYTES ((size_t)8 << 20)
#define BLOCK_DOCS 262144

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: rotor data tokenize --tokenizer MODEL --out DIR [options] INPUT...\n\n"
        "Tokenises documents into HDF5 token shards (docs/formats.md): DIR/train/shard_00000.h5, "
        "...\n"
        "and DIR/val/shard_00000.h5, ..., plus DIR/manifest.json. Every document is stored as\n"
        "BOS + its tokens (+ EOS with --append-eos); empty (whitespace-only) documents are\n"
        "skipped and counted. Encoding runs on all cores; the output does not depend on the\n"
        "number of threads.\n\n"
        "inputs (kind chosen by the file name; a directory means all its files, recursively,\n"
        "in sorted order):\n"
        "  *.jsonl, *.json, *.ndjson   one JSON object per line, the document in --text-field\n"
        "  ... .gz / .zst              the same (or text) compressed with gzip / zstd\n"
        "  anything else               plain UTF-8 text, split by --text-docs\n"
        "An input is refused as not text when it holds a NUL byte, or when more than 8 bytes\n"
        "and 0.1%% of its first MiB (after decompression) are not UTF-8; the message names the\n"
        "byte offset and line. A text input's few invalid bytes are read as U+FFFD each.\n\n"
        "options:\n"
        "  --tokenizer MODEL     SentencePiece model file (required)\n"
        "  --out DIR             output directory (required; created if missing)\n"
        "  --text-field NAME     JSONL field holding the document text (default: text)\n"
        "  --text-docs MODE      what a document is in plain text inputs (default: file):\n"
        "                          file       each file is one document\n"
        "                          paragraph  documents are separated by blank lines\n"
        "                          line       each line is one document\n"
        "  --skip-bad-lines      skip (and count) JSONL lines that are not UTF-8 JSON objects\n"
        "                        with a string --text-field free of \\u0000, instead of stopping\n"
        "  --skip-binary         skip inputs that are not text, with a warning naming each,\n"
        "                        instead of stopping (an error still when none is left); a\n"
        "                        NUL byte past the first MiB skips the rest of its input\n"
        "  --append-eos          end every document with EOS as well\n"
        "  --val-fraction F      fraction of documents for validation, in [0, 1] (default\n"
        "                        0.001); chosen by a hash of the document's text, so a\n"
        "                        document lands in the same split in every run\n"
        "  --split-seed N        seed of that hash, 0 .. 2^63-1 (default 0)\n"
        "  --shard-tokens N      tokens per shard (default 100000000): a shard is closed\n"
        "                        after the document that reaches N; documents are never split\n"
        "  --threads N           encoding threads (default: OMP_NUM_THREADS, else all cores)\n"
        "  --overwrite           delete the shards already in DIR/train and DIR/val first\n"
        "                        (without it, such shards are an error)\n"
        "  --help                show this help\n\n"
        "Progress goes to stderr (one line rewritten in place on a terminal). Every input is\n"
        "checked (readable, text) before anything is written, and DIR is only touched when\n"
        "the first shard is written, so a refused input leaves DIR as it was. On a later error\n"
        "or SIGINT/SIGTERM the unfinished shards are deleted; complete ones stay, and\n"
        "DIR/manifest.json is written only when the whole run succeeds.\n");
}

typedef struct {
    const char *tokenizer, *out;
    DtReadArgs read;
    int append_eos, overwrite;
    double val_fraction;
    uint64_t split_seed;
    int64_t shard_tokens;
} Args;

static void parse_args(int argc, char **argv, Args *a) {
    static const char *const known[] = {"--tokenizer",      "--out",
                                        "--text-field",     "--text-docs",
                                        "--skip-bad-lines", "--skip-binary",
                                        "--append-eos",     "--val-fraction",
                                        "--split-seed",     "--shard-tokens",
                                        "--threads",        "--overwrite",
                                        "--help",           NULL};
    memset(a, 0, sizeof *a);
    dt_read_args_init(&a->read, argc, DT_DOCS_FILE);
    a->val_fraction = 0.001;
    a->shard_tokens = 100000000;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v;
        if (dt_read_arg(&a->read, "data tokenize", argc, argv, &i)) continue;
        if (opt_is_help(s)) {
            usage(stdout);
            exit(0);
        } else if ((v = opt_value("data tokenize", argc, argv, &i, "--tokenizer"))) {
            a->tokenizer = v;
        } else if ((v = opt_value("data tokenize", argc, argv, &i, "--out"))) {
            a->out = v;
        } else if ((v = opt_value("data tokenize", argc, argv, &i, "--text-docs"))) {
            if (dt_parse_text_docs(v, &a->read.docs.text_docs))
                rt_die("--text-docs: '%s' is not one of file, paragraph, line", v);
        } else if (!strcmp(s, "--append-eos")) {
            a->append_eos = 1;
        } else if ((v = opt_value("data tokenize", argc, argv, &i, "--val-fraction"))) {
            a->val_fraction = opt_parse_number("--val-fraction", v, 0, 1);
        } else if ((v = opt_value("data tokenize", argc, argv, &i, "--split-seed"))) {
            a->split_seed = (uint64_t)opt_parse_int("--split-seed", v, 0, INT64_MAX);
        } else if ((v = opt_value("data tokenize", argc, argv, &i, "--shard-tokens"))) {
            a->shard_tokens = opt_parse_int("--shard-tokens", v, 1, INT64_MAX);
        } else if (!strcmp(s, "--overwrite")) {
            a->overwrite = 1;
        } else {
            opt_die_unknown("data tokenize", s, known);
        }
    }
    if (!a->tokenizer) rt_die("missing --tokenizer MODEL (see rotor data tokenize --help)");
    if (!a->out) rt_die("missing --out DIR (see rotor data tokenize --help)");
    if (!a->read.n_inputs) rt_die("no INPUT files given (see rotor data tokenize --help)");
}

/* ---- the two splits and their shards ---- */

typedef struct {
    const char *name;     /* "train" or "val" */
    char *dir;            /* OUT/name */
    ShardWriter *writer;  /* the shard being filled, NULL between shards */
    int64_t shard_docs;   /* documents in it */
    json_t *shards;       /* manifest entries of the closed shards */
    int64_t docs, tokens; /* totals of the split */
} Split;

static Split splits[2]; /* train, val; file-scope so that the exit handler can reach them */

/* Deletes the unfinished shards (their PATH.tmp): at exit after a fatal error, and after an
 * interrupt. Closed shards are not touched. */
static void abort_open_shards(void) {
    for (int k = 0; k < 2; k++)
        if (splits[k].writer) {
            shard_writer_abort(splits[k].writer);
            splits[k].writer = NULL;
        }
}

/* ---- the output directory ---- */

static int is_shard_file(const char *name) {
    size_t n = strlen(name);
    return (n > 3 && !strcmp(name + n - 3, ".h5")) || (n > 7 && !strcmp(name + n - 7, ".h5.tmp"));
}

/* The shard files (*.h5, *.h5.tmp) already in dir (none when it does not exist yet): an
 * error without overwrite; with it, deleted when unlink_them is set. Returns their number. */
static int old_shards(const char *dir, int overwrite, int unlink_them) {
    DIR *d = opendir(dir);
    if (!d && errno == ENOENT) return 0;
    if (!d) rt_die("cannot read the directory %s: %s", dir, strerror(errno));
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d))) {
        if (!is_shard_file(e->d_name)) continue;
        char *path = rt_sprintf("%s/%s", dir, e->d_name);
        if (!overwrite) {
            closedir(d);
            rt_die("%s already holds shards (e.g. %s): pass --overwrite to replace them, or "
                   "choose another --out",
                   dir, path);
        }
        if (unlink_them && unlink(path)) rt_die("cannot delete %s: %s", path, strerror(errno));
        rt_free(path);
        found++;
    }
    closedir(d);
    return found;
}

/* Makes the output directory ready for the first shard: DIR/train and DIR/val created, the
 * old shards deleted (--overwrite), the old manifest too. Done only then, so that a run that
 * fails before (a bad line in the first block) leaves DIR as it was. */
static void start_output(const Args *a) {
    static int started;
    if (started) return;
    started = 1;
    for (int k = 0; k < 2; k++) {
        fs_mkdirs(splits[k].dir);
        int deleted = old_shards(splits[k].dir, a->overwrite, 1);
        if (deleted)
            fprintf(stderr, "tokenize: --overwrite: deleted %d shard file(s) in %s\n", deleted,
                    splits[k].dir);
    }
    char *manifest = rt_sprintf("%s/manifest.json", a->out);
    if (unlink(manifest) && errno != ENOENT)
        rt_die("cannot delete the old %s: %s", manifest, strerror(errno));
    rt_free(manifest);
}

static char *shard_name(const Split *sp) {
    return rt_sprintf("%s/shard_%05zu.h5", sp->name, json_array_size(sp->shards));
}

static void close_shard(Split *sp) {
    char err[1024];
    char *name = shard_name(sp);
    int64_t tokens = shard_writer_tokens(sp->writer);
    ShardWriter *w = sp->writer;
    sp->writer = NULL; /* closing frees it, whatever the outcome */
    if (shard_writer_close(w, err, sizeof err)) rt_die("%s", err);
    json_array_append_new(sp->shards,
                          json_pack("{s:s, s:I, s:I}", "name", name, "documents",
                                    (json_int_t)sp->shard_docs, "tokens", (json_int_t)tokens));
    rt_free(name);
    sp->shard_docs = 0;
}

/* Appends one document to the split, opening a shard first and closing it once it reaches
 * shard_tokens (docs/formats.md: documents are never split across shards). */
static void add_document(Split *sp, const Args *a, const ShardInfo *info, const int32_t *ids,
                         size_t n) {
    char err[1024];
    if (!sp->writer) {
        start_output(a);
        char *name = shard_name(sp);
        char *path = rt_sprintf("%s/%s", a->out, name);
        sp->writer = shard_writer_open(path, info, err, sizeof err);
        if (!sp->writer) rt_die("%s", err);
        rt_free(path);
        rt_free(name);
        /* Registered once HDF5 is initialised (by the open above), so that it runs before
         * HDF5's own exit handler: atexit handlers run in reverse order. */
        static int registered;
        if (!registered) registered = !atexit(abort_open_shards);
    }
    if (shard_writer_add(sp->writer, ids, n, err, sizeof err)) rt_die("%s", err);
    sp->shard_docs++;
    sp->docs++;
    sp->tokens += (int64_t)n;
    if (shard_writer_tokens(sp->writer) >= a->shard_tokens) close_shard(sp);
}

/* ShardInfo.source: "rotor data tokenize: " and the inputs as given, shortened with " ..."
 * (at a UTF-8 character boundary) when they do not fit. */
static void make_source(char *src, size_t cap, char *const *inputs, int n) {
    const char *ellipsis = " ...";
    size_t len = (size_t)snprintf(src, cap, "rotor data tokenize:");
    for (int k = 0; k < n; k++) {
        size_t add = 1 + strlen(inputs[k]);
        if (len + add < cap) {
            len += (size_t)snprintf(src + len, cap - len, " %s", inputs[k]);
            continue;
        }
        size_t keep = cap - 1 - strlen(ellipsis); /* bytes kept before the ellipsis */
        if (len < keep) {                         /* fill with the start of this input */
            snprintf(src + len, keep - len + 1, " %s", inputs[k]);
            len = keep;
        }
        while (len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80) len--; /* not mid-character */
        snprintf(src + len, cap - len, "%s", ellipsis);
        return;
    }
}

/* ---- progress ---- */

typedef struct {
    double t0, last;
    int tty;
} Progress;

/* Documents, tokens, input MB and MB/s: on a terminal one line rewritten at most four times a
 * second, otherwise a plain line every ten seconds. */
static void show_progress(Progress *p, int64_t docs, int64_t tokens, int64_t bytes) {
    double now = rt_now();
    if (now - p->last < (p->tty ? 0.25 : 10)) return;
    p->last = now;
    char d[32], t[32];
    double mb = (double)bytes / 1e6, secs = now - p->t0;
    fprintf(stderr, "%stokenize: %s docs, %s tokens, %.1f MB in, %.2f MB/s%s", p->tty ? "\r" : "",
            dt_commas(docs, d), dt_commas(tokens, t), mb, secs > 0 ? mb / secs : 0.0,
            p->tty ? "\033[K" : "\n");
}

/* ---- blocks of documents ---- */

typedef struct {
    char *text; /* the documents back to back */
    size_t text_len, text_cap;
    size_t *start, *len; /* per document */
    int32_t **ids;       /* per document: BOS + tokens (+ EOS), from tok_encode */
    size_t *n_ids;
    unsigned char *val; /* per document: goes to validation */
    int n, cap;
} Block;

/* Reads documents into b until it is full or the inputs end; returns 0 at the end. Empty
 * documents are counted in *empty, not stored. */
static int read_block(Block *b, DtDocReader *r, int64_t *empty) {
    b->n = 0;
    b->text_len = 0;
    const char *text;
    size_t len;
    char err[1024];
    while (b->text_len < BLOCK_BYTES && b->n < BLOCK_DOCS && !dt_interrupted()) {
        int got = dt_docs_next(r, &text, &len, err, sizeof err);
        if (got < 0) rt_die("%s", err);
        if (!got) return b->n > 0;
        if (dt_is_blank(text, len)) {
            (*empty)++;
            continue;
        }
        if (b->n == b->cap) {
            b->cap = b->cap ? 2 * b->cap : 1024;
            b->start = rt_realloc(b->start, sizeof *b->start * (size_t)b->cap);
            b->len = rt_realloc(b->len, sizeof *b->len * (size_t)b->cap);
            b->ids = rt_realloc(b->ids, sizeof *b->ids * (size_t)b->cap);
            b->n_ids = rt_realloc(b->n_ids, sizeof *b->n_ids * (size_t)b->cap);
            b->val = rt_realloc(b->val, (size_t)b->cap);
        }
        if (b->text_len + len > b->text_cap) {
            b->text_cap = 2 * (b->text_len + len);
            b->text = rt_realloc(b->text, b->text_cap);
        }
        memcpy(b->text + b->text_len, text, len);
        b->start[b->n] = b->text_len;
        b->len[b->n] = len;
        b->ids[b->n] = NULL;
        b->n++;
        b->text_len += len;
    }
    return 1;
}

/* The validation threshold: a hash h (uniform on [0, 2^64)) selects validation when
 * h < threshold, i.e. h / 2^64 < val_fraction. */
typedef struct {
    int all;            /* val_fraction == 1 */
    uint64_t threshold; /* otherwise */
} ValRule;

static ValRule val_rule(double fraction) {
    ValRule v = {fraction >= 1, 0};
    if (!v.all) v.threshold = (uint64_t)(fraction * 18446744073709551616.0); /* * 2^64 */
    return v;
}

/* Encodes and classifies every document of the block in parallel; dies if one fails. */
static void encode_block(Block *b, const Tokenizer *tok, const Args *a, ValRule rule) {
    int failed = -1;
    char fail_msg[1024] = "";
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < b->n; i++) {
        if (dt_interrupted()) continue; /* the caller stops after this block */
        const char *text = b->text + b->start[i];
        uint64_t h = XXH3_64bits_withSeed(text, b->len[i], a->split_seed);
        b->val[i] = rule.all || h < rule.threshold;
        char err[1024];
        if (tok_encode(tok, text, b->len[i], 1, a->append_eos, &b->ids[i], &b->n_ids[i], err,
                       sizeof err)) {
#pragma omp critical(encode_failure)
            if (failed < 0 || i < failed) {
                failed = i;
                snprintf(fail_msg, sizeof fail_msg, "%s", err);
            }
        }
    }
    if (failed >= 0) rt_die("%s", fail_msg);
}

static void block_free(Block *b) {
    rt_free(b->text);
    rt_free(b->start);
    rt_free(b->len);
    rt_free(b->ids);
    rt_free(b->n_ids);
    rt_free(b->val);
}

/* Stops after SIGINT / SIGTERM: unfinished shards deleted, exit status 128 + signal. */
static void stop_if_interrupted(const char *out) {
    int sig = dt_interrupted();
    if (!sig) return;
    abort_open_shards();
    size_t closed = json_array_size(splits[0].shards) + json_array_size(splits[1].shards);
    if (isatty(STDERR_FILENO)) fputc('\n', stderr); /* end the progress line */
    fprintf(stderr,
            "rotor: error: interrupted by %s: unfinished shards deleted; the %zu complete "
            "shard(s) in %s stay, but no manifest was written (run again with --overwrite)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM", closed, out);
    exit(128 + sig);
}

/* ---- manifest ---- */

static json_t *split_json(const Split *sp) {
    return json_pack("{s:I, s:I, s:O}", "documents", (json_int_t)sp->docs, "tokens",
                     (json_int_t)sp->tokens, "shards", sp->shards);
}

/* What the run skipped: documents, lines, and the inputs that are not text. */
typedef struct {
    int64_t empty_documents, bad_lines;
    const DtInputs *not_text;          /* found before reading */
    const char *const *not_text_later; /* found while reading: a NUL byte past the first MiB */
    int n_not_text_later;
} Skipped;

static json_t *paths_json(char *const *paths, int n) {
    json_t *a = json_array();
    for (int k = 0; k < n; k++) json_array_append_new(a, json_string(paths[k]));
    return a;
}

static json_t *not_text_json(const Skipped *sk) {
    json_t *a = paths_json(sk->not_text->paths, sk->not_text->n);
    for (int k = 0; k < sk->n_not_text_later; k++)
        json_array_append_new(a, json_string(sk->not_text_later[k]));
    return a;
}

static void write_manifest(const Args *a, const Tokenizer *tok, const DtInputs *in,
                           const Skipped *sk, int64_t bytes, int64_t text_bytes) {
    json_t *inputs = paths_json(in->paths, in->n);
    json_t *m = json_pack(
        "{s:s, s:i, s:s, s:{s:s, s:s, s:i, s:i, s:i}, s:o, "
        "s:{s:s, s:s, s:b, s:b, s:b, s:f, s:I, s:I}, s:{s:I, s:I, s:o}, s:I, s:I, s:{s:o, s:o}}",
        "format", "rotor-tokens-manifest", "format_version", 1, "created_by",
        "rotor " ROTOR_VERSION " data tokenize", "tokenizer", "path", tok_path(tok), "sha256",
        tok_sha256(tok), "vocab_size", tok_vocab_size(tok), "bos_id", tok_bos_id(tok), "eos_id",
        tok_eos_id(tok), "inputs", inputs, "options", "text_field", a->read.docs.text_field,
        "text_docs", dt_text_docs_name(a->read.docs.text_docs), "append_eos", a->append_eos,
        "skip_bad_lines", a->read.docs.skip_bad_lines, "skip_binary", a->read.docs.skip_binary,
        "val_fraction", a->val_fraction, "split_seed", (json_int_t)a->split_seed, "shard_tokens",
        (json_int_t)a->shard_tokens, "skipped", "empty_documents", (json_int_t)sk->empty_documents,
        "bad_lines", (json_int_t)sk->bad_lines, "not_text_inputs", not_text_json(sk), "input_bytes",
        (json_int_t)bytes, "text_bytes", (json_int_t)text_bytes, "splits", "train",
        split_json(&splits[0]), "val", split_json(&splits[1]));
    if (!m) rt_die("cannot write %s/manifest.json: a path or option is not valid UTF-8", a->out);
    char *text = json_dumps(m, JSON_INDENT(2));
    char *path = rt_sprintf("%s/manifest.json", a->out);
    size_t len = strlen(text);
    text = rt_realloc(text, len + 2);
    text[len++] = '\n';
    fs_write_atomic(path, text, len);
    rt_free(path);
    free(text);
    json_decref(m);
}

/* ---- the command ---- */

int dt_tokenize_main(int argc, char **argv) {
    Args a;
    parse_args(argc, argv, &a);
    if (a.read.threads) omp_set_num_threads(a.read.threads);

    char err[1024];
    Tokenizer *tok = tok_load(a.tokenizer, err, sizeof err);
    if (!tok) rt_die("%s", err);
    if (tok_bos_id(tok) < 0)
        rt_die("%s: the tokenizer has no BOS token, which every stored document starts with",
               a.tokenizer);
    if (a.append_eos && tok_eos_id(tok) < 0)
        rt_die("%s: the tokenizer has no EOS token (needed by --append-eos)", a.tokenizer);

    DtInputs in, not_text;
    dt_inputs_expand(&in, a.read.inputs, a.read.n_inputs);
    dt_inputs_keep_text(&in, a.read.docs.skip_binary, &not_text);

    ShardInfo info;
    memset(&info, 0, sizeof info);
    info.vocab_size = tok_vocab_size(tok);
    info.bos_id = tok_bos_id(tok);
    info.eos_id = tok_eos_id(tok);
    snprintf(info.tokenizer_sha256, sizeof info.tokenizer_sha256, "%s", tok_sha256(tok));
    make_source(info.source, sizeof info.source, a.read.inputs, a.read.n_inputs);

    const char *names[2] = {"train", "val"};
    for (int k = 0; k < 2; k++) {
        splits[k].name = names[k];
        splits[k].dir = rt_sprintf("%s/%s", a.out, names[k]);
        splits[k].shards = json_array();
        old_shards(splits[k].dir, a.overwrite, 0); /* refused now, deleted by start_output */
    }
    dt_catch_interrupts();

    DtDocReader *r = dt_docs_open(&in, &a.read.docs);
    ValRule rule = val_rule(a.val_fraction);
    Block b;
    memset(&b, 0, sizeof b);
    double t0 = rt_now();
    Progress p = {t0, t0, isatty(STDERR_FILENO)};
    int64_t empty = 0, text_bytes = 0;
    while (read_block(&b, r, &empty)) {
        stop_if_interrupted(a.out);
        encode_block(&b, tok, &a, rule);
        stop_if_interrupted(a.out);
        for (int i = 0; i < b.n; i++) {
            add_document(&splits[b.val[i]], &a, &info, b.ids[i], b.n_ids[i]);
            free(b.ids[i]);
        }
        text_bytes += (int64_t)b.text_len;
        stop_if_interrupted(a.out);
        show_progress(&p, splits[0].docs + splits[1].docs, splits[0].tokens + splits[1].tokens,
                      dt_docs_bytes(r));
    }
    stop_if_interrupted(a.out);
    for (int k = 0; k < 2; k++)
        if (splits[k].writer) close_shard(&splits[k]);
    stop_if_interrupted(a.out);

    int64_t bytes = dt_docs_bytes(r), bad = dt_docs_bad_lines(r);
    if (!splits[0].docs && !splits[1].docs) rt_warn("the inputs hold no documents");
    start_output(&a); /* when no shard was written */
    Skipped skipped = {empty, bad, &not_text, NULL, 0};
    skipped.not_text_later = dt_docs_skipped(r, &skipped.n_not_text_later);
    write_manifest(&a, tok, &in, &skipped, bytes, text_bytes);
    double secs = rt_now() - p.t0;
    if (p.tty) fprintf(stderr, "\r\033[K");
    char c1[32], c2[32], c3[32], c4[32];
    printf("tokenize: %d input file(s), %.1f MB in %.1f s (%.2f MB/s), %s empty documents "
           "skipped, %s bad lines skipped, %d input(s) skipped as not text\n",
           in.n, (double)bytes / 1e6, secs, secs > 0 ? (double)bytes / 1e6 / secs : 0.0,
           dt_commas(empty, c1), dt_commas(bad, c2), not_text.n + skipped.n_not_text_later);
    for (int k = 0; k < 2; k++)
        printf("  %-5s %s documents, %s tokens, %zu shard(s) in %s\n", splits[k].name,
               dt_commas(splits[k].docs, c3), dt_commas(splits[k].tokens, c4),
               json_array_size(splits[k].shards), splits[k].dir);
    printf("  manifest: %s/manifest.json\n", a.out);

    dt_docs_close(r);
    block_free(&b);
    for (int k = 0; k < 2; k++) {
        json_decref(splits[k].shards);
        rt_free(splits[k].dir);
    }
    dt_inputs_free(&in);
    dt_inputs_free(&not_text);
    tok_free(tok);
    dt_read_args_free(&a.read);
    return 0;
}
