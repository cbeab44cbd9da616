/* `rotor data inspect`: validates token shards (docs/formats.md "Token shards") and summarises
 * them. Every shard is opened (shard_open checks attributes, datasets and offsets) and
 * scanned (every id below vocab_size); each document must be non-empty and start with BOS,
 * and with --tokenizer the shards must name that tokenizer's sha256 and vocabulary size.
 * Every problem is printed; the exit status is 1 when there was any. */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/shard.h"
#include "dt_common.h"
#include "tokenizer.h"
#include "util/error.h"
#include "util/options.h"
#include "util/rng.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: rotor data inspect PATH... [--tokenizer MODEL] [--sample N]\n\n"
            "Validates token shards and prints, per shard, its documents, tokens, file size and\n"
            "source; then the totals, the vocabulary usage, the document lengths and samples.\n"
            "PATH is a shard file, a directory (its *.h5 files, recursively: e.g. the --out\n"
            "directory of `rotor data tokenize`, with train/ and val/) or a glob ('dir/*.h5').\n"
            "The exit status is 1 when any shard is invalid (every problem is printed), or when a\n"
            "PATH names no file (a glob matching none): then nothing is inspected.\n\n"
            "options:\n"
            "  --tokenizer MODEL    the SentencePiece model the shards were made with: their\n"
            "                       tokenizer_sha256 and vocab_size must match it; pieces of the\n"
            "                       frequent ids and samples are shown as text\n"
            "  --sample N           number of random documents to show (default 1; 0 for none)\n"
            "  --sample-tokens N    tokens shown of each sample (default 300)\n"
            "  --seed N             seed of the sample choice (default 0)\n"
            "  --help               show this help\n");
}

typedef struct {
    char **paths;
    int n_paths;
    const char *tokenizer;
    int64_t samples, sample_tokens;
    uint64_t seed;
} Args;

static void parse_args(int argc, char **argv, Args *a) {
    static const char *const known[] = {"--tokenizer", "--sample", "--sample-tokens",
                                        "--seed",      "--help",   NULL};
    memset(a, 0, sizeof *a);
    a->samples = 1;
    a->sample_tokens = 300;
    a->paths = rt_malloc(sizeof(char *) * (size_t)(argc > 0 ? argc : 1));
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v;
        if (s[0] != '-' || !s[1]) {
            a->paths[a->n_paths++] = argv[i];
        } else if (opt_is_help(s)) {
            usage(stdout);
            exit(0);
        } else if ((v = opt_value("data inspect", argc, argv, &i, "--tokenizer"))) {
            a->tokenizer = v;
        } else if ((v = opt_value("data inspect", argc, argv, &i, "--sample-tokens"))) {
            a->sample_tokens = opt_parse_int("--sample-tokens", v, 1, INT32_MAX);
        } else if ((v = opt_value("data inspect", argc, argv, &i, "--sample"))) {
            a->samples = opt_parse_int("--sample", v, 0, 1000000);
        } else if ((v = opt_value("data inspect", argc, argv, &i, "--seed"))) {
            a->seed = (uint64_t)opt_parse_int("--seed", v, 0, INT64_MAX);
        } else {
            opt_die_unknown("data inspect", s, known);
        }
    }
    if (!a->n_paths)
        rt_die("no PATH given: name shard files, directories or globs (see rotor data inspect "
               "--help)");
}

/* ---- finding the shards ---- */

typedef struct {
    char **v;
    int n;
} Names;

static void names_add(Names *l, char *owned) {
    l->v = rt_realloc(l->v, sizeof(char *) * (size_t)(l->n + 1));
    l->v[l->n++] = owned;
}

static void names_free(Names *l) {
    for (int k = 0; k < l->n; k++) rt_free(l->v[k]);
    rt_free(l->v);
    *l = (Names){0};
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* *.h5 files under dir, recursively; unfinished *.h5.tmp files are reported in *unfinished. */
static void find_shards(const char *dir, Names *out, Names *unfinished) {
    DIR *d = opendir(dir);
    if (!d) return; /* reported by the caller as "no shards" */
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *path = rt_sprintf("%s/%s", dir, e->d_name);
        struct stat sb;
        if (!stat(path, &sb) && S_ISDIR(sb.st_mode)) {
            find_shards(path, out, unfinished);
            rt_free(path);
        } else if (ends_with(e->d_name, ".h5")) {
            names_add(out, path);
        } else if (ends_with(e->d_name, ".h5.tmp")) {
            names_add(unfinished, path);
        } else {
            rt_free(path);
        }
    }
    closedir(d);
}

/* The shard files PATH stands for (see usage), sorted: their number, or -1 when PATH names
 * nothing (no such file, a glob matching none), with the reason in *why. */
static int expand_path(const char *spec, Names *out, Names *unfinished, const char **why) {
    int before = out->n;
    struct stat sb;
    if (!stat(spec, &sb)) {
        char *copy = rt_strdup(spec);
        for (size_t len = strlen(copy); len > 1 && copy[len - 1] == '/';) copy[--len] = '\0';
        if (S_ISDIR(sb.st_mode)) {
            find_shards(copy, out, unfinished);
            rt_free(copy);
        } else {
            names_add(out, copy); /* a file: opened as a shard whatever its name */
        }
    } else {
        int stat_errno = errno;
        glob_t g;
        if (glob(spec, 0, NULL, &g)) {
            *why = strpbrk(spec, "*?[")   ? "no file matches this glob"
                   : stat_errno == ENOENT ? "no such file or directory"
                                          : strerror(stat_errno);
            return -1;
        }
        for (size_t k = 0; k < g.gl_pathc; k++) {
            if (!stat(g.gl_pathv[k], &sb) && S_ISDIR(sb.st_mode))
                find_shards(g.gl_pathv[k], out, unfinished);
            else
                names_add(out, rt_strdup(g.gl_pathv[k]));
        }
        globfree(&g);
    }
    if (out->n > before)
        qsort(out->v + before, (size_t)(out->n - before), sizeof(char *), compare_names);
    return out->n - before;
}

/* ---- checking ---- */

static int problems;

static void problem(const char *fmt, ...) RT_PRINTF(1, 2);
static void problem(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    rt_vprint("error", fmt, ap);
    va_end(ap);
    problems++;
}

/* Each document non-empty and starting with BOS (docs/formats.md "Token shards"); 0 or -1 after
 * reporting. */
static int check_documents(const Shard *s) {
    const ShardInfo *in = shard_info(s);
    const uint64_t *off = shard_doc_offsets(s);
    char err[1024];
    for (int64_t d = 0; d < in->n_docs; d++) {
        if (off[d + 1] == off[d]) {
            problem("%s: document %lld is empty (every document starts with BOS)", shard_path(s),
                    (long long)d);
            return -1;
        }
        int32_t first;
        if (shard_read(s, (int64_t)off[d], 1, &first, err, sizeof err)) {
            problem("%s", err);
            return -1;
        }
        if (in->bos_id >= 0 && first != in->bos_id) {
            problem("%s: document %lld starts with id %d, not BOS (%lld)", shard_path(s),
                    (long long)d, first, (long long)in->bos_id);
            return -1;
        }
    }
    return 0;
}

/* Printable form of a piece: quoted, control characters escaped. */
static void print_piece(const char *piece) {
    putchar('\'');
    for (const unsigned char *p = (const unsigned char *)piece; *p; p++) {
        if (*p == '\\' || *p == '\'')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            printf("\\x%02x", *p);
        else
            putchar(*p);
    }
    putchar('\'');
}

static int compare_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Prints the vocabulary usage and the 10 most frequent ids (with pieces given tok). */
static void print_vocabulary(const int64_t *counts, int64_t vocab, int64_t total,
                             const Tokenizer *tok) {
    enum { TOP = 10 };
    int64_t used = 0, top[TOP];
    int ntop = 0;
    for (int64_t id = 0; id < vocab; id++) {
        if (!counts[id]) continue;
        used++;
        /* insertion into the top list, ordered by count (ties: smaller id first) */
        int k = ntop < TOP ? ntop++ : TOP;
        while (k > 0 && counts[top[k - 1]] < counts[id]) {
            if (k < TOP) top[k] = top[k - 1];
            k--;
        }
        if (k < TOP) top[k] = id;
    }
    char c1[32], c2[32];
    printf("vocabulary: %s of %s ids used (%.1f%%)\n", dt_commas(used, c1), dt_commas(vocab, c2),
           vocab ? 100.0 * (double)used / (double)vocab : 0.0);
    if (!ntop) return;
    printf("most frequent ids:\n  %8s %15s %7s%s\n", "id", "count", "share", tok ? "  piece" : "");
    for (int k = 0; k < ntop; k++) {
        printf("  %8lld %15s %6.2f%%", (long long)top[k], dt_commas(counts[top[k]], c1),
               100.0 * (double)counts[top[k]] / (double)total);
        const char *piece = tok ? tok_id_to_piece(tok, (int)top[k]) : NULL;
        if (piece) {
            printf("  ");
            print_piece(piece);
        }
        putchar('\n');
    }
}

/* Prints the first sample_tokens tokens of document d of s: decoded with tok, else ids. */
static void print_sample(int k, const Shard *s, int64_t d, const Args *a, const Tokenizer *tok) {
    const uint64_t *off = shard_doc_offsets(s);
    int64_t len = (int64_t)(off[d + 1] - off[d]);
    int64_t n = len < a->sample_tokens ? len : a->sample_tokens;
    int32_t *ids = rt_malloc(sizeof(int32_t) * (size_t)n);
    char err[1024], c1[32], c2[32];
    if (shard_read(s, (int64_t)off[d], n, ids, err, sizeof err)) rt_die("%s", err);
    printf("\nsample %d: %s document %s (%s tokens%s):\n", k + 1, shard_path(s), dt_commas(d, c1),
           dt_commas(len, c2), n < len ? ", the first ones shown" : "");
    if (tok) {
        char *text = tok_decode(tok, ids, (size_t)n, err, sizeof err);
        if (!text) rt_die("%s", err);
        printf("%s%s\n", text, n < len ? " [...]" : "");
        free(text);
    } else {
        for (int64_t i = 0; i < n; i++) printf("%s%d", i ? " " : "", ids[i]);
        printf("%s\n", n < len ? " ..." : "");
    }
    rt_free(ids);
}

int dt_inspect_main(int argc, char **argv) {
    Args a;
    parse_args(argc, argv, &a);
    char err[1024];
    Tokenizer *tok = NULL;
    if (a.tokenizer && !(tok = tok_load(a.tokenizer, err, sizeof err))) rt_die("%s", err);

    Names files = {0}, unfinished = {0};
    int missing = 0; /* PATHs naming nothing: then nothing is inspected */
    for (int k = 0; k < a.n_paths; k++) {
        const char *why = NULL;
        int n = expand_path(a.paths[k], &files, &unfinished, &why);
        if (n < 0) {
            problem("%s: %s", a.paths[k], why);
            missing++;
        } else if (!n) {
            problem("%s: no token shards (*.h5) found: give a shard file, a directory or a glob",
                    a.paths[k]);
        }
    }
    if (missing) {
        fprintf(stderr, "rotor: error: %d of %d PATH(s) name no file; nothing inspected\n", missing,
                a.n_paths);
        names_free(&files);
        names_free(&unfinished);
        rt_free(a.paths);
        tok_free(tok);
        return 1;
    }
    for (int k = 0; k < unfinished.n; k++)
        rt_warn("%s: an unfinished shard (a write in progress or interrupted); ignored",
                unfinished.v[k]);

    Shard **shards = rt_calloc((size_t)(files.n ? files.n : 1), sizeof *shards);
    int64_t vocab = 0, *counts = NULL, *shard_counts = NULL;
    int64_t total_docs = 0, total_tokens = 0, total_bytes = 0;
    int n_valid = 0, mixed_tokenizers = 0;
    if (files.n)
        printf("%-40s %12s %15s %15s  %s\n", "shard", "documents", "tokens", "bytes", "source");
    for (int k = 0; k < files.n; k++) {
        Shard *s = shard_open(files.v[k], err, sizeof err);
        if (!s) {
            problem("%s", err);
            continue;
        }
        const ShardInfo *in = shard_info(s);
        if (in->vocab_size > vocab) {
            counts = rt_realloc(counts, sizeof(int64_t) * (size_t)in->vocab_size);
            memset(counts + vocab, 0, sizeof(int64_t) * (size_t)(in->vocab_size - vocab));
            shard_counts = rt_realloc(shard_counts, sizeof(int64_t) * (size_t)in->vocab_size);
            vocab = in->vocab_size;
        }
        int bad = 0;
        if (shard_scan(s, shard_counts, err, sizeof err)) {
            problem("%s", err);
            bad = 1;
        } else if (check_documents(s)) {
            bad = 1;
        }
        if (tok && strcmp(in->tokenizer_sha256, tok_sha256(tok))) {
            problem("%s: tokenizer_sha256 %s differs from %s's %s: the shard was made with "
                    "another tokenizer",
                    files.v[k], in->tokenizer_sha256, a.tokenizer, tok_sha256(tok));
            bad = 1;
        }
        if (tok && in->vocab_size != tok_vocab_size(tok)) {
            problem("%s: vocab_size %lld differs from %s's %d", files.v[k],
                    (long long)in->vocab_size, a.tokenizer, tok_vocab_size(tok));
            bad = 1;
        }
        struct stat sb;
        int64_t bytes = stat(files.v[k], &sb) ? 0 : (int64_t)sb.st_size;
        char c1[32], c2[32], c3[32];
        printf("%-40s %12s %15s %15s  %s\n", files.v[k], dt_commas(in->n_docs, c1),
               dt_commas(in->n_tokens, c2), dt_commas(bytes, c3), in->source);
        if (bad) {
            shard_close(s);
            continue;
        }
        for (int64_t id = 0; id < in->vocab_size; id++) counts[id] += shard_counts[id];
        if (n_valid && strcmp(shard_info(shards[0])->tokenizer_sha256, in->tokenizer_sha256))
            mixed_tokenizers = 1;
        shards[n_valid++] = s;
        total_docs += in->n_docs;
        total_tokens += in->n_tokens;
        total_bytes += bytes;
    }

    char c1[32], c2[32], c3[32];
    printf("\ntotal: %d valid shard(s) of %d, %s documents, %s tokens, %s bytes\n", n_valid,
           files.n, dt_commas(total_docs, c1), dt_commas(total_tokens, c2),
           dt_commas(total_bytes, c3));
    if (n_valid) {
        const ShardInfo *in0 = shard_info(shards[0]);
        if (mixed_tokenizers)
            printf("tokenizer_sha256: the shards name different tokenizers\n");
        else
            printf("tokenizer_sha256: %s (all shards), bos %lld, eos %lld\n", in0->tokenizer_sha256,
                   (long long)in0->bos_id, (long long)in0->eos_id);
        print_vocabulary(counts, vocab, total_tokens, tok);

        /* Document lengths, over all valid shards. */
        int64_t *len = rt_malloc(sizeof(int64_t) * (size_t)(total_docs ? total_docs : 1));
        int64_t m = 0;
        for (int k = 0; k < n_valid; k++) {
            const uint64_t *off = shard_doc_offsets(shards[k]);
            for (int64_t d = 0; d < shard_info(shards[k])->n_docs; d++)
                len[m++] = (int64_t)(off[d + 1] - off[d]);
        }
        if (m) {
            qsort(len, (size_t)m, sizeof *len, compare_i64);
            double median =
                m % 2 ? (double)len[m / 2] : 0.5 * (double)(len[m / 2 - 1] + len[m / 2]);
            printf("document length (tokens): min %lld, mean %.1f, median %.1f, max %lld\n",
                   (long long)len[0], (double)total_tokens / (double)m, median,
                   (long long)len[m - 1]);
        }
        rt_free(len);

        /* Samples: documents drawn uniformly over all valid shards. */
        Rng rng;
        rng_init(&rng, a.seed, 0);
        for (int k = 0; k < a.samples && total_docs; k++) {
            int64_t d = (int64_t)rng_below(&rng, (uint64_t)total_docs);
            int j = 0;
            while (d >= shard_info(shards[j])->n_docs) d -= shard_info(shards[j++])->n_docs;
            print_sample(k, shards[j], d, &a, tok);
        }
    }
    fflush(stdout);

    for (int k = 0; k < n_valid; k++) shard_close(shards[k]);
    rt_free(shards);
    rt_free(counts);
    rt_free(shard_counts);
    if (!files.n && problems)
        fprintf(stderr, "rotor: error: no shard file found in the PATH(s) given\n");
    else if (problems)
        fprintf(stderr,
                "rotor: error: %d of %d shard file(s) invalid, %d problem(s) in all; see "
                "above\n",
                files.n - n_valid, files.n, problems);
    names_free(&files);
    names_free(&unfinished);
    rt_free(a.paths);
    tok_free(tok);
    return problems ? 1 : 0;
}
