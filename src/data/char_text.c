#include "data/char_text.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "util/error.h"
#include "util/fsutil.h"
#include "util/rng.h"

/* A split's symbols. */
typedef struct {
    int32_t *tok;
    int64_t n, cap;
} Stream;

struct CharText {
    json_t *ids;     /* symbol -> id (jansson's hash table) */
    json_t *vocab;   /* the symbols in id order */
    Stream split[3]; /* SPLIT_TRAIN, SPLIT_VAL, SPLIT_TEST */
};

/* Appends the id of symbol s[0, len), numbering it if new. */
static void push_symbol(CharText *t, Stream *st, const char *s, size_t len) {
    json_t *id = json_object_getn(t->ids, s, len);
    int32_t v;
    if (id) {
        v = (int32_t)json_integer_value(id);
    } else {
        v = (int32_t)json_array_size(t->vocab);
        json_object_setn_new(t->ids, s, len, json_integer(v));
        json_array_append_new(t->vocab, json_stringn(s, len));
    }
    if (st->n == st->cap)
        st->tok = rt_realloc(st->tok,
                             sizeof(int32_t) * (size_t)(st->cap = st->cap ? 2 * st->cap : 1 << 16));
    st->tok[st->n++] = v;
}

/* Bytes of the UTF-8 character that starts with byte c (the text is valid UTF-8). */
static size_t char_bytes(unsigned char c) {
    return c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
}

static int ascii_space(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

/* raw: every character a symbol. */
static void read_raw(CharText *t, Stream *st, const char *s, size_t len) {
    for (size_t i = 0; i < len;) {
        size_t k = char_bytes((unsigned char)s[i]);
        push_symbol(t, st, s + i, k);
        i += k;
    }
}

/* ptb: nnRNN's Corpus.tokenize, which reads the file in Python's text mode (lines end at
 * "\n", "\r\n" or "\r") and takes line.split() + ["<eos>"] of every line. */
static void read_ptb(CharText *t, Stream *st, const char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        for (;;) {
            while (i < len && ascii_space(s[i])) i++;
            if (i == len || s[i] == '\n' || s[i] == '\r') break;
            size_t b = i;
            while (i < len && !ascii_space(s[i]) && s[i] != '\n' && s[i] != '\r') i++;
            push_symbol(t, st, s + b, i - b);
        }
        push_symbol(t, st, "<eos>", 5);
        if (i < len) i += s[i] == '\r' && i + 1 < len && s[i + 1] == '\n' ? 2 : 1;
    }
}

/* Reads `path` as UTF-8 text and appends its symbols to st. */
static int read_file(CharText *t, Stream *st, const char *path, int ptb, char *err, size_t errlen) {
    size_t len;
    char *text = fs_read_file(path, &len);
    if (!text) return rt_error(err, errlen, path, "cannot read: %s", strerror(errno));
    json_t *check = json_stringn(text, len); /* NULL for invalid UTF-8 */
    int rc = 0;
    if (!check)
        rc = rt_error(err, errlen, path,
                      "is not UTF-8 text (task.type = chars reads UTF-8 characters)");
    else if (ptb)
        read_ptb(t, st, text, len);
    else
        read_raw(t, st, text, len);
    json_decref(check);
    rt_free(text);
    return rc;
}

static int is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The three files of a directory: nnRNN's names, else PTB's. */
static int split_files(const char *dir, char *paths[3], char *err, size_t errlen) {
    static const char *const names[2][3] = {
        {"train.txt", "valid.txt", "test.txt"},
        {"ptb.char.train.txt", "ptb.char.valid.txt", "ptb.char.test.txt"}};
    for (int set = 0; set < 2; set++) {
        int found = 0;
        for (int k = 0; k < 3; k++) {
            paths[k] = rt_sprintf("%s/%s", dir, names[set][k]);
            found += is_file(paths[k]);
        }
        if (found == 3) return 0;
        for (int k = 0; k < 3; k++) rt_free(paths[k]);
    }
    return rt_error(
        err, errlen, dir,
        "task.path is a directory without train.txt, valid.txt and test.txt "
        "(nnRNN's names) or ptb.char.train.txt, ptb.char.valid.txt and ptb.char.test.txt");
}

/* One file's symbols in train, then cut: the last test_fraction test, the valid_fraction before
 * them valid. */
static int cut_file(CharText *t, const TaskConfig *task, char *err, size_t errlen) {
    Stream *all = &t->split[SPLIT_TRAIN];
    if (read_file(t, all, task->path, !strcmp(task->text_format, "ptb"), err, errlen)) return -1;
    int64_t n = all->n, nt = (int64_t)floor((double)n * task->test_fraction),
            nv = (int64_t)floor((double)n * task->valid_fraction);
    if (nt < 2 || nv < 2 || n - nt - nv < 2)
        return rt_error(err, errlen, task->path,
                        "%lld symbols cut by task.valid_fraction = %g and task.test_fraction = %g "
                        "leave a split of fewer than 2 symbols",
                        (long long)n, task->valid_fraction, task->test_fraction);
    for (int k = SPLIT_VAL; k <= SPLIT_TEST; k++) {
        int64_t first = k == SPLIT_VAL ? n - nt - nv : n - nt, count = k == SPLIT_VAL ? nv : nt;
        Stream *st = &t->split[k];
        st->tok = rt_malloc(sizeof(int32_t) * (size_t)count);
        memcpy(st->tok, all->tok + first, sizeof(int32_t) * (size_t)count);
        st->n = st->cap = count;
    }
    all->n = n - nt - nv; /* train keeps the front of the buffer */
    return 0;
}

CharText *char_text_open(const TaskConfig *task, char *err, size_t errlen) {
    if (!task->path[0]) {
        rt_error(err, errlen, NULL,
                 "task.type = chars needs task.path: a text file, or a directory of train.txt, "
                 "valid.txt and test.txt");
        return NULL;
    }
    CharText *t = rt_calloc(1, sizeof(CharText));
    t->ids = json_object();
    t->vocab = json_array();
    int ptb = !strcmp(task->text_format, "ptb"), rc;
    if (is_dir(task->path)) {
        char *paths[3];
        rc = split_files(task->path, paths, err, errlen);
        if (!rc) {
            for (int k = 0; k < 3 && !rc; k++) {
                rc = read_file(t, &t->split[k], paths[k], ptb, err, errlen);
                if (!rc && t->split[k].n < 2)
                    rc = rt_error(err, errlen, paths[k], "holds fewer than 2 symbols");
            }
            for (int k = 0; k < 3; k++) rt_free(paths[k]);
        }
    } else {
        rc = cut_file(t, task, err, errlen);
    }
    if (rc) {
        char_text_free(t);
        return NULL;
    }
    return t;
}

void char_text_free(CharText *t) {
    if (!t) return;
    for (int k = 0; k < 3; k++) rt_free(t->split[k].tok);
    json_decref(t->ids);
    json_decref(t->vocab);
    rt_free(t);
}

int char_text_vocab_size(const CharText *t) { return (int)json_array_size(t->vocab); }

json_t *char_text_vocab_json(const CharText *t) { return json_deep_copy(t->vocab); }

const int32_t *char_text_tokens(const CharText *t, DataSplit split, int64_t *n) {
    *n = t->split[split].n;
    return t->split[split].tok;
}

int64_t char_text_rows(const CharText *t, DataSplit split, int T) {
    int64_t labels = t->split[split].n - 1;
    return split == SPLIT_TRAIN ? labels / T : (labels + T - 1) / T;
}

/* a_j of the stream layout. */
static int64_t stream_start(int64_t labels, int S, int64_t j) { return j * labels / S; }

int64_t char_text_stream_windows(const CharText *t, DataSplit split, int S, int T) {
    int64_t labels = t->split[split].n - 1, longest = 0;
    if (labels < S) return 0;
    for (int64_t j = 0; j < S; j++) {
        int64_t len = stream_start(labels, S, j + 1) - stream_start(labels, S, j);
        if (len > longest) longest = len;
    }
    return (longest + T - 1) / T;
}

void char_text_stream_row(const CharText *t, DataSplit split, int S, int T, int64_t i,
                          int32_t *tokens, int32_t *labels) {
    const Stream *s = &t->split[split];
    int64_t W = char_text_stream_windows(t, split, S, T), j = i % S, k = (i / S) % W;
    int64_t a = stream_start(s->n - 1, S, j), end = stream_start(s->n - 1, S, j + 1);
    for (int p = 0; p < T; p++) {
        int64_t q = a + k * T + p;
        tokens[p] = q < end ? s->tok[q] : 0;
        labels[p] = q < end ? s->tok[q + 1] : -100;
    }
}

void char_text_row(const CharText *t, DataSplit split, int T, uint64_t seed, int64_t i,
                   int32_t *tokens, int32_t *labels) {
    const Stream *s = &t->split[split];
    int64_t rows = char_text_rows(t, split, T), pass = i / rows, k = i % rows;
    if (split == SPLIT_TRAIN)
        k = rng_permute(k, rows, rng_mix64(seed ^ rng_mix64((uint64_t)pass + 0xC4A5ull)));
    int64_t start = k * T;
    for (int p = 0; p < T; p++) {
        int64_t q = start + p;
        tokens[p] = q < s->n ? s->tok[q] : 0;
        labels[p] = q + 1 < s->n ? s->tok[q + 1] : -100;
    }
}
