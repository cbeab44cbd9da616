/* Speech Commands (task.type = speech_commands, data/speech_commands.h) on a tree written here
 * with libsndfile: the ten SC10 words, three clips each (one per split), a word and
 * _background_noise_ that SC10 never reads, and the two lists. Checks the splits, the labels,
 * the samples and their zero padding, the fixed sample of task.max_examples, the rows through
 * task_source_open (the token offset, task.sample_stride, train.seq_len following it, a new
 * training order every epoch), and every named error: a file of another rate, a stereo or
 * float file, a clip over one second, an unreadable one, a list line naming no file, a file in
 * both lists, a missing list or word directory, model.num_classes and train.seq_len. */
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config/run_config.h"
#include "data/datasource.h"
#include "data/speech_commands.h"
#include "harness.h"
#include "task/task.h"
#include "util/error.h"
#include "util/fsutil.h"

enum { WORDS = 10, PER_WORD = 3, CLIPS = WORDS * PER_WORD };

/* Clip id (word id / 3, split id % 3: 0 train, 1 validation, 2 test): its length and its
 * sample p. Sample 0 is the id, so a row names its clip; clip 4 is a full second. */
static int clip_len(int id) { return id == 4 ? SPEECH_SAMPLES : 40 + 7 * id; }
static int16_t clip_sample(int id, int p) {
    return (int16_t)(p == 0 ? id : ((id * 977 + p * 131) % 60001) - 30000);
}

/* A WAV file of n frames of `channels` channels at `rate` Hz (format: libsndfile's subtype). */
static void write_wav(const char *path, int id, int n, int rate, int channels, int format) {
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = SF_FORMAT_WAV | format};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    RT_ASSERT(f);
    int16_t *x = rt_malloc(sizeof(int16_t) * (size_t)(n * channels));
    for (int p = 0; p < n; p++)
        for (int c = 0; c < channels; c++) x[p * channels + c] = clip_sample(id, p);
    RT_ASSERT(sf_writef_short(f, x, n) == n);
    sf_close(f);
    rt_free(x);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    RT_ASSERT(f && fwrite(text, 1, strlen(text), f) == strlen(text) && fclose(f) == 0);
}

static const char *word(int w) {
    const char *const *list;
    RT_ASSERT(speech_words("10", &list) == WORDS);
    return list[w];
}

/* th_tmp_dir()/NAME: the SC10 tree. The lists also name a clip of "bed" (another word) and of
 * "cat" (absent), which SC10 does not read. */
static char *write_tree(const char *name) {
    char *root = rt_sprintf("%s/%s", th_tmp_dir(), name);
    char val[4096] = "bed/b_nohash_0.wav\n", test[4096] = "cat/c_nohash_0.wav\r\n";
    for (int id = 0; id < CLIPS; id++) {
        char *dir = rt_sprintf("%s/%s", root, word(id / PER_WORD));
        RT_ASSERT(fs_try_mkdirs(dir) == 0);
        char *rel = rt_sprintf("%s/%02d_nohash_0.wav", word(id / PER_WORD), id);
        char *path = rt_sprintf("%s/%s", root, rel);
        write_wav(path, id, clip_len(id), SPEECH_RATE, 1, SF_FORMAT_PCM_16);
        char *lists[3] = {NULL, val, test};
        if (id % 3)
            snprintf(lists[id % 3] + strlen(lists[id % 3]), 4096 - strlen(lists[id % 3]), "%s\n",
                     rel);
        rt_free(path);
        rt_free(rel);
        rt_free(dir);
    }
    char *other = rt_sprintf("%s/bed", root), *noise = rt_sprintf("%s/_background_noise_", root);
    RT_ASSERT(fs_try_mkdirs(other) == 0 && fs_try_mkdirs(noise) == 0);
    char *path = rt_sprintf("%s/b_nohash_0.wav", other);
    write_wav(path, 99, 100, SPEECH_RATE, 1, SF_FORMAT_PCM_16);
    rt_free(path);
    path = rt_sprintf("%s/running_tap.wav", noise); /* 44.1 kHz and long: an error if read */
    write_wav(path, 98, 3 * 44100, 44100, 1, SF_FORMAT_PCM_16);
    rt_free(path);
    path = rt_sprintf("%s/validation_list.txt", root);
    write_text(path, val);
    rt_free(path);
    path = rt_sprintf("%s/testing_list.txt", root);
    write_text(path, test);
    rt_free(path);
    rt_free(other);
    rt_free(noise);
    return root;
}

/* The clip id of a loaded clip, checking its samples and padding against that clip's. */
static int clip_of(const SpeechSet *s, int64_t i) {
    const int16_t *x = s->samples + (size_t)i * SPEECH_SAMPLES;
    int id = x[0], bad = id < 0 || id >= CLIPS;
    for (int p = 0; !bad && p < SPEECH_SAMPLES; p++)
        bad = x[p] != (p < clip_len(id) ? clip_sample(id, p) : 0);
    CHECK_MSG(!bad, "clip %lld: its samples are no clip's (or its padding is not zeros)",
              (long long)i);
    return bad ? -1 : id;
}

static void test_splits(void) {
    char *root = write_tree("splits");
    char err[2048];
    for (int split = 0; split < 3; split++) {
        SpeechSet s;
        CHECK_MSG(speech_load(root, "10", (DataSplit)split, 0, &s, err, sizeof err) == 0, "%s",
                  err);
        CHECK(s.n == WORDS);
        int seen[CLIPS] = {0};
        for (int64_t i = 0; i < s.n; i++) {
            int id = clip_of(&s, i);
            if (id < 0) continue;
            seen[id]++;
            CHECK_MSG(id % 3 == split && s.labels[i] == id / PER_WORD,
                      "split %d: clip %d, label %d", split, id, s.labels[i]);
        }
        for (int id = split; id < CLIPS; id += 3) CHECK(seen[id] == 1);
        speech_set_free(&s);
    }
    /* a fixed sample of 4 training clips, the same on every load */
    SpeechSet a, b;
    CHECK(speech_load(root, "10", SPLIT_TRAIN, 4, &a, err, sizeof err) == 0);
    CHECK(speech_load(root, "10", SPLIT_TRAIN, 4, &b, err, sizeof err) == 0);
    CHECK(a.n == 4 && b.n == 4 &&
          !memcmp(a.samples, b.samples, sizeof(int16_t) * 4 * SPEECH_SAMPLES));
    int seen[CLIPS] = {0};
    for (int64_t i = 0; i < a.n; i++) {
        int id = clip_of(&a, i);
        if (id >= 0) CHECK(id % 3 == 0 && !seen[id]++ && a.labels[i] == id / PER_WORD);
    }
    speech_set_free(&a);
    speech_set_free(&b);
    /* SC35 needs every word: the first missing one is named */
    CHECK(speech_load(root, "35", SPLIT_TRAIN, 0, &a, err, sizeof err) != 0 &&
          strstr(err, "/cat: no *.wav files"));
    const char *const *list;
    CHECK(speech_words("35", &list) == 35 && !strcmp(list[0], "bed") && !strcmp(list[34], "zero"));
    CHECK(speech_words("12", &list) == 0);
    rt_free(root);
}

/* speech_load's message for the tree NAME after change() ran on it, or "" when it loaded. */
static const char *load_error(const char *name, void (*change)(const char *root), DataSplit split) {
    static char err[2048];
    char *root = write_tree(name);
    if (change) change(root);
    SpeechSet s;
    err[0] = 0;
    if (speech_load(root, "10", split, 0, &s, err, sizeof err) == 0) speech_set_free(&s);
    rt_free(root);
    return err;
}

static void rewrite(const char *root, const char *rel, int id, int n, int rate, int channels,
                    int format) {
    char *path = rt_sprintf("%s/%s", root, rel);
    write_wav(path, id, n, rate, channels, format);
    rt_free(path);
}
static void at_8k(const char *root) {
    rewrite(root, "yes/00_nohash_0.wav", 0, 100, 8000, 1, SF_FORMAT_PCM_16);
}
static void stereo(const char *root) {
    rewrite(root, "yes/00_nohash_0.wav", 0, 100, SPEECH_RATE, 2, SF_FORMAT_PCM_16);
}
static void as_float(const char *root) {
    rewrite(root, "yes/00_nohash_0.wav", 0, 100, SPEECH_RATE, 1, SF_FORMAT_FLOAT);
}
static void too_long(const char *root) {
    rewrite(root, "yes/00_nohash_0.wav", 0, SPEECH_SAMPLES + 1, SPEECH_RATE, 1, SF_FORMAT_PCM_16);
}
static void not_audio(const char *root) {
    char *path = rt_sprintf("%s/yes/00_nohash_0.wav", root);
    write_text(path, "not a sound file\n");
    rt_free(path);
}
static void missing_entry(const char *root) {
    char *path = rt_sprintf("%s/validation_list.txt", root);
    write_text(path, "yes/01_nohash_0.wav\nno/gone_nohash_0.wav\n");
    rt_free(path);
}
static void in_both(const char *root) {
    char *path = rt_sprintf("%s/testing_list.txt", root);
    write_text(path, "yes/01_nohash_0.wav\n");
    rt_free(path);
}
static void no_list(const char *root) {
    char *path = rt_sprintf("%s/testing_list.txt", root);
    RT_ASSERT(unlink(path) == 0);
    rt_free(path);
}
static void no_word(const char *root) {
    char *path = rt_sprintf("%s/stop", root);
    RT_ASSERT(fs_remove_tree(path) == 0);
    rt_free(path);
}

static void test_errors(void) {
    CHECK(th_names(load_error("rate", at_8k, SPLIT_TRAIN),
                   "yes/00_nohash_0.wav: sampled at 8000 Hz, not 16000", NULL));
    CHECK(th_names(load_error("stereo", stereo, SPLIT_TRAIN),
                   "yes/00_nohash_0.wav: 2 channels, not mono", NULL));
    CHECK(th_names(load_error("float", as_float, SPLIT_TRAIN),
                   "yes/00_nohash_0.wav: not 16-bit PCM", NULL));
    CHECK(th_names(load_error("long", too_long, SPLIT_TRAIN), "yes/00_nohash_0.wav: 16001 samples",
                   "one second"));
    CHECK(th_names(load_error("text", not_audio, SPLIT_TRAIN),
                   "yes/00_nohash_0.wav: cannot read it as a sound file", NULL));
    /* a file only the training split reads is no error of the test split */
    CHECK(!load_error("rate_test", at_8k, SPLIT_TEST)[0]);
    CHECK(th_names(load_error("entry", missing_entry, SPLIT_TEST),
                   "validation_list.txt:2: no/gone_nohash_0.wav: no such", NULL));
    CHECK(th_names(load_error("both", in_both, SPLIT_TRAIN), "yes/01_nohash_0.wav is in both",
                   "testing_list.txt (line 1)"));
    CHECK(th_names(load_error("nolist", no_list, SPLIT_TRAIN), "testing_list.txt: cannot open",
                   NULL));
    CHECK(th_names(load_error("noword", no_word, SPLIT_VAL), "/stop: no *.wav files",
                   "docs/classification.md"));
    char err[2048];
    SpeechSet s;
    CHECK(speech_load("", "10", SPLIT_TRAIN, 0, &s, err, sizeof err) != 0 &&
          th_names(err, "task.path is empty", NULL));
    CHECK(speech_load("/nonexistent/sc", "10", SPLIT_TRAIN, 0, &s, err, sizeof err) != 0 &&
          th_names(err, "task.path = /nonexistent/sc: No such file", NULL));
}

/* Through task_source_open: tokens are samples + 32768, the class sits at the last position,
 * task.sample_stride keeps every k-th sample and sets train.seq_len, and each training epoch
 * is a new order of the whole split. */
static void test_task_source(void) {
    char *root = write_tree("source");
    const char *head = "[model]\ntype = gla\nhidden_size = 16\nnum_heads = 2\nhead = classifier\n"
                       "input = linear\ninput_offset = 32768\ninput_scale = 32768\n";
    char *ini = rt_sprintf("%snum_classes = 10\n[data]\ntrain = task\n[task]\ntype = "
                           "speech_commands\nwords = 10\npath = %s\nsample_stride = 4\n",
                           head, root);
    RunConfig rc;
    char err[2048];
    if (run_config_load_string(&rc, ini, "sc.ini", NULL, 0, err, sizeof err)) {
        CHECK_MSG(0, "%s", err);
        rt_free(ini);
        rt_free(root);
        return;
    }
    enum { T = SPEECH_SAMPLES / 4 };
    CHECK(rc.train.seq_len == T && rc.model.vocab_size == 65536);
    DataOptions opt = {.seq_len = T, .seed = 5, .split = SPLIT_TRAIN, .world = 1};
    DataSource *ds = task_source_open(&rc, &opt, err, sizeof err);
    CHECK_MSG(ds && ds->examples == WORDS, "%s", err);
    static int32_t tok[2 * WORDS * T], lab[2 * WORDS * T];
    CHECK(ds && ds->next_labeled(ds, tok, lab, 2 * WORDS, err, sizeof err) == 0);
    for (int e = 0; ds && e < 2; e++) {
        int seen[CLIPS] = {0};
        for (int b = 0; b < WORDS; b++) {
            const int32_t *x = tok + (size_t)(e * WORDS + b) * T,
                          *l = lab + (size_t)(e * WORDS + b) * T;
            int id = x[0] - 32768, bad = id < 0 || id >= CLIPS || l[T - 1] != id / PER_WORD;
            for (int p = 0; !bad && p < T; p++)
                bad = x[p] != (4 * p < clip_len(id) ? clip_sample(id, 4 * p) : 0) + 32768 ||
                      (p < T - 1 && l[p] != -100);
            CHECK_MSG(!bad, "epoch %d row %d (clip %d) breaks the row convention", e, b, id);
            if (!bad) seen[id]++;
        }
        for (int id = 0; id < CLIPS; id += 3) CHECK(seen[id] == 1);
    }
    CHECK(memcmp(tok, tok + (size_t)WORDS * T, sizeof(int32_t) * T * WORDS) != 0); /* a new order */
    datasource_free(ds);
    rt_free(ini);
    /* the shape's errors */
    ini = rt_sprintf("%snum_classes = 35\n[data]\ntrain = task\n[task]\ntype = "
                     "speech_commands\nwords = 10\npath = %s\n",
                     head, root);
    CHECK(run_config_load_string(&rc, ini, "sc.ini", NULL, 0, err, sizeof err) != 0 &&
          th_names(err, "model.num_classes = 35: task.words = 10 has 10 classes", NULL));
    rt_free(ini);
    ini = rt_sprintf("%snum_classes = 35\n[data]\ntrain = task\n[train]\nseq_len = "
                     "8000\n[task]\ntype = speech_commands\npath = %s\n",
                     head, root);
    CHECK(run_config_load_string(&rc, ini, "sc.ini", NULL, 0, err, sizeof err) != 0 &&
          th_names(err, "train.seq_len = 8000", "rows of 16000 samples"));
    rt_free(ini);
    rt_free(root);
}

static const TestCase tests[] = {
    {"splits", test_splits},
    {"errors", test_errors},
    {"task_source", test_task_source},
};

TH_MAIN(tests)
