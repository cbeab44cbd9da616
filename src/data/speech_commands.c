#include "data/speech_commands.h"

#include <errno.h>
#include <glob.h>
#include <sndfile.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/class_set.h"
#include "util/error.h"
#include "util/rng.h"

static const char DOCS[] = "docs/classification.md \"Speech Commands\"";

/* S4's ALL_CLASSES and SUBSET_CLASSES (src/dataloaders/datasets/sc.py), in its order: the
 * class ids. */
static const char *const WORDS_35[] = {
    "bed",  "cat",   "down",  "five",   "forward", "go",    "house",  "left", "marvin",
    "no",   "on",    "right", "sheila", "tree",    "up",    "visual", "yes",  "backward",
    "bird", "dog",   "eight", "follow", "four",    "happy", "learn",  "nine", "off",
    "one",  "seven", "six",   "stop",   "three",   "two",   "wow",    "zero"};
static const char *const WORDS_10[] = {"yes",   "no", "up",  "down", "left",
                                       "right", "on", "off", "stop", "go"};

int speech_words(const char *words, const char *const **list) {
    if (!strcmp(words, "35")) {
        *list = WORDS_35;
        return (int)(sizeof WORDS_35 / sizeof WORDS_35[0]);
    }
    if (!strcmp(words, "10")) {
        *list = WORDS_10;
        return (int)(sizeof WORDS_10 / sizeof WORDS_10[0]);
    }
    return 0;
}

void speech_set_free(SpeechSet *s) {
    rt_free(s->samples);
    rt_free(s->labels);
    memset(s, 0, sizeof *s);
}

/* One list file's entries, sorted by name. */
typedef struct {
    char *name; /* word/file.wav */
    long line;
    int seen; /* a file of the directory */
} Entry;

typedef struct {
    const char *path;
    Entry *e;
    size_t n, cap;
} List;

static int add_entry(void *ctx, const TsvLine *l, char *msg, size_t msglen) {
    List *L = ctx;
    if (l->rest || !strchr(l->first, '/')) {
        snprintf(msg, msglen, "expected one file as word/file.wav, got \"%.200s%s%.200s\"",
                 l->first, l->rest ? "\t" : "", l->rest ? l->rest : "");
        return -1;
    }
    if (L->n == L->cap)
        L->e = rt_realloc(L->e, sizeof(Entry) * (L->cap = L->cap ? 2 * L->cap : 4096));
    L->e[L->n++] = (Entry){rt_strdup(l->first), l->line, 0};
    return 0;
}

static int by_entry_name(const void *a, const void *b) {
    return strcmp(((const Entry *)a)->name, ((const Entry *)b)->name);
}

static Entry *find(const List *L, const char *name) {
    Entry key = {(char *)name, 0, 0};
    return bsearch(&key, L->e, L->n, sizeof(Entry), by_entry_name);
}

static void list_free(List *L) {
    for (size_t i = 0; i < L->n; i++) rt_free(L->e[i].name);
    rt_free(L->e);
}

static int read_list(const char *dir, const char *name, List *L, char *err, size_t errlen) {
    char *path = rt_sprintf("%s/%s", dir, name);
    L->path = name;
    int rc = tsv_read(path, add_entry, L, err, errlen);
    rt_free(path);
    if (rc) return -1;
    qsort(L->e, L->n, sizeof(Entry), by_entry_name);
    for (size_t i = 1; i < L->n; i++)
        if (!strcmp(L->e[i - 1].name, L->e[i].name))
            return rt_error(err, errlen, NULL, "%s/%s:%ld: %s is listed twice (also line %ld)", dir,
                            name, L->e[i].line, L->e[i].name, L->e[i - 1].line);
    return 0;
}

/* Every entry of a chosen word names a file that was found. */
static int check_seen(const char *dir, const List *L, const char *const *words, int nwords,
                      char *err, size_t errlen) {
    for (size_t i = 0; i < L->n; i++) {
        if (L->e[i].seen) continue;
        size_t wl = (size_t)(strchr(L->e[i].name, '/') - L->e[i].name);
        for (int w = 0; w < nwords; w++)
            if (strlen(words[w]) == wl && !strncmp(words[w], L->e[i].name, wl))
                return rt_error(
                    err, errlen, NULL,
                    "%s/%s:%ld: %s: no such *.wav file in %s (a list of another release "
                    "of the dataset?)",
                    dir, L->path, L->e[i].line, L->e[i].name, dir);
    }
    return 0;
}

/* The split's files, as paths relative to dir, with their class ids. */
typedef struct {
    char **rel;
    uint8_t *label;
    int64_t n, cap;
} Files;

static void files_add(Files *f, const char *rel, int label) {
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 4096;
        f->rel = rt_realloc(f->rel, sizeof(char *) * (size_t)f->cap);
        f->label = rt_realloc(f->label, (size_t)f->cap);
    }
    f->rel[f->n] = rt_strdup(rel);
    f->label[f->n++] = (uint8_t)label;
}

static void files_free(Files *f) {
    for (int64_t i = 0; i < f->n; i++) rt_free(f->rel[i]);
    rt_free(f->rel);
    rt_free(f->label);
}

/* The split's files of every chosen word, marking the list entries found. */
static int list_split(const char *dir, const char *const *words, int nwords, DataSplit split,
                      List *val, List *test, Files *out, char *err, size_t errlen) {
    for (int w = 0; w < nwords; w++) {
        char *pattern = rt_sprintf("%s/%s/*.wav", dir, words[w]);
        glob_t g;
        int rc = glob(pattern, 0, NULL, &g);
        rt_free(pattern);
        if (rc) {
            globfree(&g);
            return rt_error(
                err, errlen, NULL,
                "%s/%s: no *.wav files: task.words needs a directory of clips for each of "
                "its words (%s)",
                dir, words[w], DOCS);
        }
        for (size_t i = 0; i < g.gl_pathc; i++) {
            const char *rel = g.gl_pathv[i] + strlen(dir) + 1; /* word/file.wav */
            Entry *v = find(val, rel), *t = find(test, rel);
            if (v && t) {
                rt_error(err, errlen, NULL, "%s is in both %s/%s (line %ld) and %s (line %ld)", rel,
                         dir, val->path, v->line, test->path, t->line);
                globfree(&g);
                return -1;
            }
            if (v) v->seen = 1;
            if (t) t->seen = 1;
            DataSplit s = v ? SPLIT_VAL : t ? SPLIT_TEST : SPLIT_TRAIN;
            if (s == split) files_add(out, rel, w);
        }
        globfree(&g);
    }
    return 0;
}

/* One clip into out[SPEECH_SAMPLES], zero-padded. */
static int read_clip(const char *path, int16_t *out, char *err, size_t errlen) {
    SF_INFO info = {0};
    SNDFILE *f = sf_open(path, SFM_READ, &info);
    if (!f)
        return rt_error(err, errlen, path, "cannot read it as a sound file: %s", sf_strerror(NULL));
    int rc = 0;
    if (info.samplerate != SPEECH_RATE)
        rc = rt_error(err, errlen, path, "sampled at %d Hz, not %d Hz (Speech Commands' rate)",
                      info.samplerate, SPEECH_RATE);
    else if (info.channels != 1)
        rc = rt_error(err, errlen, path, "%d channels, not mono", info.channels);
    else if ((info.format & SF_FORMAT_SUBMASK) != SF_FORMAT_PCM_16)
        rc = rt_error(err, errlen, path, "not 16-bit PCM (libsndfile format 0x%x)",
                      (unsigned)info.format);
    else if (info.frames < 1 || info.frames > SPEECH_SAMPLES)
        rc = rt_error(err, errlen, path, "%lld samples: a clip holds 1 to %d (one second)",
                      (long long)info.frames, SPEECH_SAMPLES);
    else if (sf_readf_short(f, out, info.frames) != info.frames)
        rc = rt_error(err, errlen, path, "truncated: fewer than the %lld samples of its header",
                      (long long)info.frames);
    else
        memset(out + info.frames, 0, sizeof(int16_t) * (size_t)(SPEECH_SAMPLES - info.frames));
    sf_close(f);
    return rc;
}

int speech_load(const char *dir, const char *words, DataSplit split, int64_t max_examples,
                SpeechSet *set, char *err, size_t errlen) {
    memset(set, 0, sizeof *set);
    const char *const *list;
    int nwords = speech_words(words, &list);
    if (!nwords)
        return rt_error(err, errlen, NULL, "task.words = %s: expected 35 or 10 (%s)", words, DOCS);
    struct stat st;
    if (!dir[0])
        return rt_error(err, errlen, NULL,
                        "task.path is empty: give the Speech Commands directory (%s)", DOCS);
    if (stat(dir, &st))
        return rt_error(err, errlen, NULL, "task.path = %s: %s (%s)", dir, strerror(errno), DOCS);
    if (!S_ISDIR(st.st_mode))
        return rt_error(err, errlen, NULL, "task.path = %s: not a directory (%s)", dir, DOCS);
    List val = {0}, test = {0};
    Files files = {0};
    int rc = read_list(dir, "validation_list.txt", &val, err, errlen) ||
             read_list(dir, "testing_list.txt", &test, err, errlen) ||
             list_split(dir, list, nwords, split, &val, &test, &files, err, errlen) ||
             check_seen(dir, &val, list, nwords, err, errlen) ||
             check_seen(dir, &test, list, nwords, err, errlen);
    if (!rc && !files.n)
        rc = rt_error(err, errlen, NULL, "%s: the %s split of task.words = %s holds no file", dir,
                      split == SPLIT_TRAIN ? "training"
                      : split == SPLIT_VAL ? "validation"
                                           : "test",
                      words);
    if (!rc) {
        int64_t n = max_examples > 0 && max_examples < files.n ? max_examples : files.n;
        uint64_t key = rng_mix64(0x5EEC4C0DEull + (uint64_t)split);
        set->n = n;
        set->samples = rt_malloc(sizeof(int16_t) * SPEECH_SAMPLES * (size_t)n);
        set->labels = rt_malloc((size_t)n);
        for (int64_t i = 0; i < n && !rc; i++) {
            int64_t k = rng_permute(i, files.n, key);
            char *path = rt_sprintf("%s/%s", dir, files.rel[k]);
            rc = read_clip(path, set->samples + (size_t)i * SPEECH_SAMPLES, err, errlen);
            set->labels[i] = files.label[k];
            rt_free(path);
        }
        if (rc) speech_set_free(set);
    }
    list_free(&val);
    list_free(&test);
    files_free(&files);
    return rc ? -1 : 0;
}
