/* The SentencePiece tokenizer behind tokenizer/tokenizer.h: the Mistral 7B v0.1 model
 * (ids, sha256, byte fallback, exact round trips), invalid UTF-8, piece/id conversions,
 * errors naming the file or id, concurrent encode/decode, and training BPE/unigram models.
 *
 * Behaviour of this model found here and asserted below (SentencePiece 0.1.97, identity
 * normaliser, remove_extra_whitespaces off, dummy prefix on):
 *  - Valid UTF-8 without NUL and without U+2581 round-trips exactly: leading, trailing and
 *    repeated spaces, tabs, newlines and the empty string included. Encode prepends a space
 *    (the dummy prefix, "Hello" -> "▁Hello") and decode removes it again.
 *  - U+2581 (▁) is SentencePiece's own space marker and is not escaped on input, so it
 *    decodes as an ASCII space.
 *  - Invalid UTF-8 is not an error: every byte that does not start a well-formed sequence
 *    (stray continuation bytes, truncated or overlong sequences, surrogates, > U+10FFFF)
 *    becomes one U+FFFD, which decode returns as EF BF BD.
 *  - A NUL byte encodes to <0x00>; tok_decode returns a NUL-terminated string, so text after
 *    a NUL is not visible to the caller.
 *  - Decoding control ids: <s> and </s> give nothing, <unk> gives " ⁇ ".
 * Tests that need ../shared/data print a "skipped" line when it is absent, and the program
 * then exits with ctest's skip code. */
#include "harness.h"
#include "shared_data.h"
#include "tokenizer.h"
#include "util/rng.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#define MISTRAL_SHA256 "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055"

static char err[1024];

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                              */
/* ------------------------------------------------------------------------------------ */

/* Encodes text (len bytes) without BOS/EOS, failing the test on error. */
static int32_t *encode(const Tokenizer *t, const char *text, size_t len, size_t *n) {
    int32_t *ids = NULL;
    int rc = tok_encode(t, text, len, 0, 0, &ids, n, err, sizeof err);
    CHECK_MSG(rc == 0, "encode: %s", err);
    return ids;
}

static int ids_equal(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof(int32_t)) == 0);
}

/* decode(encode(text)), malloc'd; NULL (and a failed check) on error. */
static char *round_trip(const Tokenizer *t, const char *text, size_t len) {
    size_t n;
    int32_t *ids = encode(t, text, len, &n);
    char *out = tok_decode(t, ids, n, err, sizeof err);
    CHECK_MSG(out, "decode: %s", err);
    free(ids);
    return out;
}

/* Appends the UTF-8 encoding of code point c to *p. */
static void put_utf8(char **p, uint32_t c) {
    unsigned char *q = (unsigned char *)*p;
    if (c < 0x80) {
        *q++ = (unsigned char)c;
    } else if (c < 0x800) {
        *q++ = (unsigned char)(0xC0 | (c >> 6));
        *q++ = (unsigned char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        *q++ = (unsigned char)(0xE0 | (c >> 12));
        *q++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        *q++ = (unsigned char)(0x80 | (c & 0x3F));
    } else {
        *q++ = (unsigned char)(0xF0 | (c >> 18));
        *q++ = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
        *q++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        *q++ = (unsigned char)(0x80 | (c & 0x3F));
    }
    *p = (char *)q;
}

/* A random code point other than NUL, surrogates and U+2581: mostly ASCII and whitespace,
 * then Latin, the rest of the BMP and the supplementary planes. */
static uint32_t random_code_point(Rng *r) {
    static const char ws[] = " \t\n\r";
    for (;;) {
        uint64_t k = rng_below(r, 100);
        uint32_t c;
        if (k < 40)
            c = (uint32_t)(0x20 + rng_below(r, 0x5F));
        else if (k < 55)
            c = (uint32_t)ws[rng_below(r, 4)];
        else if (k < 70)
            c = (uint32_t)(0x80 + rng_below(r, 0x250 - 0x80));
        else if (k < 90)
            c = (uint32_t)(1 + rng_below(r, 0xFFFF));
        else
            c = (uint32_t)(0x10000 + rng_below(r, 0x110000 - 0x10000));
        if (c != 0 && c != 0x2581 && (c < 0xD800 || c > 0xDFFF)) return c;
    }
}

/* A random valid UTF-8 string of up to max_cp code points into buf (>= 4*max_cp+1 bytes). */
static size_t random_utf8(Rng *r, char *buf, int max_cp) {
    char *p = buf;
    int n = (int)rng_below(r, (uint64_t)max_cp + 1);
    for (int i = 0; i < n; i++) put_utf8(&p, random_code_point(r));
    *p = '\0';
    return (size_t)(p - buf);
}

/* Length of the well-formed UTF-8 sequence at s[0..len) (shortest form, no surrogates,
 * <= U+10FFFF), or 0 when s does not start one. */
static size_t utf8_seq_len(const unsigned char *s, size_t len) {
    size_t n;
    uint32_t c, min;
    if (s[0] < 0x80) return 1;
    if ((s[0] & 0xE0) == 0xC0)
        n = 2, c = s[0] & 0x1F, min = 0x80;
    else if ((s[0] & 0xF0) == 0xE0)
        n = 3, c = s[0] & 0x0F, min = 0x800;
    else if ((s[0] & 0xF8) == 0xF0)
        n = 4, c = s[0] & 0x07, min = 0x10000;
    else
        return 0;
    if (len < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    return n;
}

/* What the Mistral model's decode(encode(s)) gives for arbitrary bytes without NUL: each
 * byte that does not start a well-formed sequence becomes U+FFFD, and U+2581 a space.
 * Into out (>= 3*len+1 bytes); returns the length. */
static size_t expected_round_trip(const char *s, size_t len, char *out) {
    const unsigned char *u = (const unsigned char *)s;
    char *p = out;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq_len(u + i, len - i);
        if (k == 0) {
            memcpy(p, "\xEF\xBF\xBD", 3), p += 3, i++;
        } else if (k == 3 && !memcmp(u + i, "\xE2\x96\x81", 3)) {
            *p++ = ' ', i += 3;
        } else {
            memcpy(p, u + i, k), p += k, i += k;
        }
    }
    *p = '\0';
    return (size_t)(p - out);
}

static char *make_tmpdir(void) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/rotor_test_tok_XXXXXX");
    return mkdtemp(dir);
}

/* ------------------------------------------------------------------------------------ */
/* The Mistral model                                                                    */
/* ------------------------------------------------------------------------------------ */

static void test_mistral_basics(void) {
    Tokenizer *t = load_mistral();
    if (!t) return;
    CHECK(tok_vocab_size(t) == 32000);
    CHECK(tok_bos_id(t) == 1);
    CHECK(tok_eos_id(t) == 2);
    CHECK(tok_unk_id(t) == 0);
    CHECK(tok_pad_id(t) == -1);
    CHECK_MSG(!strcmp(tok_sha256(t), MISTRAL_SHA256), "sha256 %s", tok_sha256(t));
    CHECK(strstr(tok_path(t), "mistral-7b-v0.1.model") != NULL);

    const char *hello = "Hello world!";
    const int32_t plain[] = {22557, 1526, 28808}, with_bos[] = {1, 22557, 1526, 28808},
                  both[] = {1, 22557, 1526, 28808, 2};
    int32_t *ids;
    size_t n;
    ids = encode(t, hello, strlen(hello), &n);
    CHECK(ids_equal(ids, n, plain, 3));
    free(ids);
    CHECK(tok_encode(t, hello, strlen(hello), 1, 0, &ids, &n, err, sizeof err) == 0);
    CHECK(ids_equal(ids, n, with_bos, 4));
    free(ids);
    CHECK(tok_encode(t, hello, strlen(hello), 1, 1, &ids, &n, err, sizeof err) == 0);
    CHECK(ids_equal(ids, n, both, 5));
    /* Control tokens decode to nothing. */
    char *text = tok_decode(t, ids, n, err, sizeof err);
    CHECK_MSG(text && !strcmp(text, hello), "decoded '%s'", text ? text : err);
    free(text);
    free(ids);

    /* The empty string: no pieces, and only the requested control ids. */
    ids = encode(t, "", 0, &n);
    CHECK(n == 0);
    free(ids);
    CHECK(tok_encode(t, "", 0, 1, 1, &ids, &n, err, sizeof err) == 0);
    CHECK(n == 2 && ids[0] == 1 && ids[1] == 2);
    free(ids);
    tok_free(t);
}

/* Characters outside the vocabulary become their UTF-8 bytes as <0xNN> pieces. */
static void test_byte_fallback(void) {
    Tokenizer *t = load_mistral();
    if (!t) return;
    static const struct {
        const char *text, *pieces[6];
    } cases[] = {
        {"\xF0\x9F\xA6\x80", {"\xE2\x96\x81", "<0xF0>", "<0x9F>", "<0xA6>", "<0x80>"}}, /* 🦀 */
        {"\xEE\x80\x80", {"\xE2\x96\x81", "<0xEE>", "<0x80>", "<0x80>"}},               /* U+E000 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n;
        int32_t *ids = encode(t, cases[c].text, strlen(cases[c].text), &n);
        size_t want = 0;
        while (cases[c].pieces[want]) want++;
        CHECK_MSG(n == want, "case %zu: %zu ids, want %zu", c, n, want);
        for (size_t i = 0; i < n && i < want; i++) {
            const char *piece = tok_id_to_piece(t, ids[i]);
            CHECK_MSG(piece && !strcmp(piece, cases[c].pieces[i]), "case %zu piece %zu: %s", c, i,
                      piece ? piece : "(null)");
        }
        char *back = tok_decode(t, ids, n, err, sizeof err);
        CHECK_MSG(back && !strcmp(back, cases[c].text), "case %zu decoded differently", c);
        free(back);
        free(ids);
    }
    tok_free(t);
}

static void test_round_trip(void) {
    Tokenizer *t = load_mistral();
    if (!t) return;
    static const char *fixed[] = {
        "",
        "Hello world!",
        "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 \xC3\x85ngstr\xC3\xB6m",
        "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE6\x96\x87\xE7\xAB\xA0",
        "\xF0\x9F\xA6\x80 \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD emoji",
        " leading space",
        "   three leading spaces",
        "trailing spaces   ",
        "double  spaces   and\ttabs\t\tand\nnewlines\n\n",
        "\n",
        "\nstarts with a newline",
        " ",
        "  ",
        "\t",
        "\r\n windows \r\n line ends \r\n",
        "A\xCC\x8A combining ring vs \xC3\x85 precomposed", /* not NFKC-normalised */
        "\xEF\xBD\x81 full-width a, \xEF\xAC\x81 ligature",
        "<s> </s> <unk> <0x41> are text, not control tokens",
        "\xEF\xBF\xBD literal replacement character",
        "mixed \xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xCE\xB1\xCE\xB2\xCE\xB3 "
        "\xD8\xB9\xD8\xB1\xD8\xA8\xD9\x8A \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\x82 12345 3.14159",
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        char *back = round_trip(t, fixed[i], strlen(fixed[i]));
        CHECK_MSG(back && !strcmp(back, fixed[i]), "'%s' came back as '%s'", fixed[i],
                  back ? back : "(null)");
        free(back);
    }

    /* Random strings of random code points (no NUL, surrogates or U+2581). */
    Rng r;
    rng_init(&r, 1234, 0);
    static char buf[4 * 64 + 1];
    int bad = 0;
    for (int i = 0; i < 3000; i++) {
        size_t len = random_utf8(&r, buf, 64);
        char *back = round_trip(t, buf, len);
        if (!back || strcmp(back, buf)) {
            if (bad++ < 3) fprintf(stderr, "    random string %d did not round-trip\n", i);
        }
        free(back);
    }
    CHECK_MSG(bad == 0, "%d of 3000 random strings did not round-trip", bad);
    tok_free(t);
}

/* U+2581 and NUL, the two exceptions to exact round trips of valid UTF-8. */
static void test_round_trip_exceptions(void) {
    Tokenizer *t = load_mistral();
    if (!t) return;
    char *back = round_trip(t, "x\xE2\x96\x81 y", 6);
    CHECK_MSG(back && !strcmp(back, "x  y"), "U+2581 came back as '%s'", back ? back : "");
    free(back);

    size_t n;
    int32_t *ids = encode(t, "a\0b", 3, &n);
    CHECK(n == 3 && !strcmp(tok_id_to_piece(t, ids[1]), "<0x00>"));
    back = tok_decode(t, ids, n, err, sizeof err);
    CHECK(back && !strcmp(back, "a")); /* "a\0b": the caller sees "a" */
    free(back);
    free(ids);

    const int32_t controls[] = {1, 22557, 0, 1526, 2};
    back = tok_decode(t, controls, 5, err, sizeof err);
    CHECK_MSG(back && !strcmp(back, "Hello \xE2\x81\x87  world"), "controls gave '%s'",
              back ? back : err);
    free(back);
    tok_free(t);
}

/* Invalid UTF-8 never fails or crashes: malformed bytes become U+FFFD. */
static void test_invalid_utf8(void) {
    Tokenizer *t = load_mistral();
    if (!t) return;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"a\xFF!", "a\xEF\xBF\xBD!"},                             /* never valid */
        {"\x80", "\xEF\xBF\xBD"},                                 /* stray continuation */
        {"x\xC3", "x\xEF\xBF\xBD"},                               /* truncated at the end */
        {"\xE6\x97!", "\xEF\xBF\xBD\xEF\xBF\xBD!"},               /* truncated: 2 bytes */
        {"\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD"},                 /* overlong '/' */
        {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* surrogate U+D800 */
        {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* >10FFFF */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *back = round_trip(t, cases[c].in, strlen(cases[c].in));
        CHECK_MSG(back && !strcmp(back, cases[c].out), "invalid case %zu", c);
        free(back);
    }

    /* A lone byte piece that is not a whole character decodes to U+FFFD too. */
    int id = tok_piece_to_id(t, "<0xFF>");
    CHECK(id > 0);
    int32_t ids[1] = {id};
    char *s = tok_decode(t, ids, 1, err, sizeof err);
    CHECK(s && !strcmp(s, "\xEF\xBF\xBD"));
    free(s);

    /* Random byte soup (valid characters mixed with arbitrary non-zero bytes): the result
     * is exactly the rule of expected_round_trip. */
    Rng r;
    rng_init(&r, 99, 0);
    static char in[4 * 48 + 1], want[3 * 4 * 48 + 1];
    int bad = 0;
    for (int i = 0; i < 2000; i++) {
        char *p = in;
        int parts = (int)rng_below(&r, 49);
        for (int k = 0; k < parts; k++) {
            if (rng_below(&r, 3))
                put_utf8(&p, random_code_point(&r));
            else
                *p++ = (char)(1 + rng_below(&r, 255));
        }
        size_t len = (size_t)(p - in);
        expected_round_trip(in, len, want);
        char *back = round_trip(t, in, len);
        if (!back || strcmp(back, want)) bad++;
        free(back);
    }
    CHECK_MSG(bad == 0, "%d of 2000 byte strings decoded differently from the U+FFFD rule", bad);
    tok_free(t);
}

static void test_piece_id(void) {
    Tokenizer *t = load_mistral();
    if (!t) return;
    CHECK(!strcmp(tok_id_to_piece(t, 1), "<s>"));
    CHECK(!strcmp(tok_id_to_piece(t, 2), "</s>"));
    CHECK(!strcmp(tok_id_to_piece(t, 0), "<unk>"));
    CHECK(!strcmp(tok_id_to_piece(t, 22557), "\xE2\x96\x81Hello"));
    CHECK(tok_piece_to_id(t, "<s>") == 1);
    CHECK(tok_piece_to_id(t, "</s>") == 2);
    CHECK(tok_piece_to_id(t, "<unk>") == 0);
    CHECK(tok_piece_to_id(t, "\xE2\x96\x81Hello") == 22557);
    CHECK(tok_piece_to_id(t, "<0x41>") == 3 + 0x41);
    CHECK(tok_piece_to_id(t, "no such piece, surely") == -1);
    CHECK(tok_piece_to_id(t, "") == -1);
    CHECK(tok_id_to_piece(t, -1) == NULL);
    CHECK(tok_id_to_piece(t, 32000) == NULL);
    CHECK(tok_id_to_piece(t, 31999) != NULL);
    /* Every piece maps back to its id (pieces are unique). */
    int bad = 0;
    for (int id = 0; id < tok_vocab_size(t); id++)
        bad += tok_piece_to_id(t, tok_id_to_piece(t, id)) != id;
    CHECK_MSG(bad == 0, "%d pieces do not map back to their id", bad);
    tok_free(t);
}

static void test_errors(void) {
    /* Missing and garbage files: NULL with the path in the message. */
    const char *missing = "/nonexistent/dir/tokenizer.model";
    CHECK(tok_load(missing, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, missing) != NULL, "message: %s", err);

    char *dir = make_tmpdir();
    CHECK(dir);
    if (dir) {
        char path[128];
        snprintf(path, sizeof path, "%s/garbage.model", dir);
        static const char *contents[] = {"this is not a SentencePiece model\n", ""};
        for (int k = 0; k < 2; k++) {
            FILE *f = fopen(path, "wb");
            CHECK(f);
            if (!f) continue;
            fputs(contents[k], f);
            fclose(f);
            err[0] = '\0';
            CHECK(tok_load(path, err, sizeof err) == NULL);
            CHECK_MSG(strstr(err, path) != NULL, "message: %s", err);
        }
        unlink(path);
        rmdir(dir);
    }
    /* Without an error buffer, failures are still reported by the result. */
    CHECK(tok_load(missing, NULL, 0) == NULL);

    Tokenizer *t = load_mistral();
    if (!t) return;
    const int32_t bad_ids[] = {1, 22557, 32000};
    err[0] = '\0';
    CHECK(tok_decode(t, bad_ids, 3, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "32000") != NULL, "message: %s", err);
    const int32_t negative[] = {-5};
    CHECK(tok_decode(t, negative, 1, err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "-5") != NULL, "message: %s", err);
    /* Zero ids decode to the empty string. */
    char *s = tok_decode(t, NULL, 0, err, sizeof err);
    CHECK(s && s[0] == '\0');
    free(s);
    tok_free(t);
}

/* ------------------------------------------------------------------------------------ */
/* Concurrent use                                                                       */
/* ------------------------------------------------------------------------------------ */

enum { N_STRINGS = 400, N_THREADS = 8, REPEATS = 3 };

typedef struct {
    const Tokenizer *t;
    char **texts;
    size_t *lens;
    int32_t **ids; /* single-threaded reference results */
    size_t *n_ids;
    int first;      /* this thread starts at a different string */
    int mismatches; /* written by this thread only */
} EncodeJob;

static void *encode_worker(void *arg) {
    EncodeJob *j = arg;
    char e[256];
    for (int rep = 0; rep < REPEATS; rep++)
        for (int k = 0; k < N_STRINGS; k++) {
            int i = (j->first + k) % N_STRINGS;
            int32_t *ids;
            size_t n;
            if (tok_encode(j->t, j->texts[i], j->lens[i], 1, 0, &ids, &n, e, sizeof e)) {
                j->mismatches++;
                continue;
            }
            if (!ids_equal(ids, n, j->ids[i], j->n_ids[i])) j->mismatches++;
            char *back = tok_decode(j->t, ids + 1, n - 1, e, sizeof e);
            if (!back || strcmp(back, j->texts[i])) j->mismatches++;
            free(back);
            free(ids);
        }
    return NULL;
}

static void test_threads(void) {
    Tokenizer *t = load_mistral();
    if (!t) return;
    Rng r;
    rng_init(&r, 7, 0);
    char *texts[N_STRINGS];
    size_t lens[N_STRINGS], n_ids[N_STRINGS];
    int32_t *ids[N_STRINGS];
    for (int i = 0; i < N_STRINGS; i++) {
        texts[i] = malloc(4 * 120 + 1);
        lens[i] = random_utf8(&r, texts[i], 120);
        CHECK(tok_encode(t, texts[i], lens[i], 1, 0, &ids[i], &n_ids[i], err, sizeof err) == 0);
    }
    /* Fixed thread count (not OpenMP) so that the calls overlap whatever the environment. */
    EncodeJob jobs[N_THREADS];
    pthread_t th[N_THREADS];
    for (int k = 0; k < N_THREADS; k++) {
        jobs[k] = (EncodeJob){t, texts, lens, ids, n_ids, k * N_STRINGS / N_THREADS, 0};
        CHECK(pthread_create(&th[k], NULL, encode_worker, &jobs[k]) == 0);
    }
    int mismatches = 0;
    for (int k = 0; k < N_THREADS; k++) {
        pthread_join(th[k], NULL);
        mismatches += jobs[k].mismatches;
    }
    CHECK_MSG(mismatches == 0, "%d concurrent encodes/decodes differ from single-threaded",
              mismatches);
    for (int i = 0; i < N_STRINGS; i++) free(texts[i]), free(ids[i]);
    tok_free(t);
}

/* ------------------------------------------------------------------------------------ */
/* Training                                                                             */
/* ------------------------------------------------------------------------------------ */

/* Trains a 1000-piece model of the given type on tiny Shakespeare and checks it. */
static void check_training(const char *model_type) {
    char corpus[1024];
    if (!shared_file("text/tinyshakespeare.txt", corpus, sizeof corpus)) return;
    char *dir = make_tmpdir();
    CHECK(dir);
    if (!dir) return;
    char prefix[128], model[160], vocab[160];
    snprintf(prefix, sizeof prefix, "%s/%s", dir, model_type);
    snprintf(model, sizeof model, "%s.model", prefix);
    snprintf(vocab, sizeof vocab, "%s.vocab", prefix);
    const char *inputs[] = {corpus};
    int rc = tok_train(inputs, 1, prefix, 1000, model_type, 2, err, sizeof err);
    CHECK_MSG(rc == 0, "tok_train: %s", err);
    Tokenizer *t = rc == 0 ? tok_load(model, err, sizeof err) : NULL;
    CHECK_MSG(rc != 0 || t, "tok_load: %s", err);
    if (t) {
        CHECK(tok_vocab_size(t) == 1000);
        CHECK(tok_unk_id(t) == 0);
        CHECK(tok_bos_id(t) == 1);
        CHECK(tok_eos_id(t) == 2);
        CHECK(tok_pad_id(t) == -1);
        CHECK(tok_piece_to_id(t, "<0xF0>") > 0); /* byte fallback pieces */
        /* The first lines of the corpus, and text the corpus never had. */
        FILE *f = fopen(corpus, "r");
        CHECK(f);
        char line[512];
        for (int i = 0; f && i < 50 && fgets(line, sizeof line, f); i++) {
            char *back = round_trip(t, line, strlen(line));
            CHECK_MSG(back && !strcmp(back, line), "line %d: '%s' -> '%s'", i + 1, line,
                      back ? back : "");
            free(back);
        }
        if (f) fclose(f);
        const char *novel = "  Crab \xF0\x9F\xA6\x80 in 2024,\tcaf\xC3\xA9\n";
        char *back = round_trip(t, novel, strlen(novel));
        CHECK(back && !strcmp(back, novel));
        free(back);
        tok_free(t);
    }
    unlink(model);
    unlink(vocab);
    rmdir(dir);
}

static void test_train_bpe(void) { check_training("bpe"); }
static void test_train_unigram(void) { check_training("unigram"); }

static void test_train_errors(void) {
    const char *inputs[] = {"/nonexistent/corpus.txt"};
    err[0] = '\0';
    CHECK(tok_train(inputs, 1, "/tmp/unused", 1000, "wordpiece", 2, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "wordpiece") != NULL, "message: %s", err);
    CHECK(tok_train(inputs, 0, "/tmp/unused", 1000, "bpe", 2, err, sizeof err) == -1);
    CHECK(tok_train(inputs, 1, "/tmp/unused", 1000, "bpe", 0, err, sizeof err) == -1);
    err[0] = '\0';
    CHECK(tok_train(inputs, 1, "/tmp/unused", 1000, "bpe", 2, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, inputs[0]) != NULL, "message: %s", err);
    const char *comma[] = {"/tmp/a,b.txt"};
    CHECK(tok_train(comma, 1, "/tmp/unused", 1000, "bpe", 2, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, comma[0]) != NULL, "message: %s", err);
}

static const TestCase tests[] = {
    {"tokenizer_mistral_basics", test_mistral_basics},
    {"tokenizer_byte_fallback", test_byte_fallback},
    {"tokenizer_round_trip", test_round_trip},
    {"tokenizer_round_trip_exceptions", test_round_trip_exceptions},
    {"tokenizer_invalid_utf8", test_invalid_utf8},
    {"tokenizer_piece_id", test_piece_id},
    {"tokenizer_errors", test_errors},
    {"tokenizer_threads", test_threads},
    {"tokenizer_train_bpe", test_train_bpe},
    {"tokenizer_train_unigram", test_train_unigram},
    {"tokenizer_train_errors", test_train_errors},
};

TH_MAIN(tests)
