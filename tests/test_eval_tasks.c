/* Zero-shot task adapters (eval/tasks.c) and metrics (eval/metrics.c) against
 * lm-evaluation-harness semantics (docs/evaluation.md part A).
 *
 * Pinned requests: for real documents of every task file in ../shared/data/eval (the
 * awkward ones: LAMBADA targets with quotes and newlines inside the last "word", PIQA
 * solutions with trailing/leading spaces, HellaSwag brackets nested/unclosed/across lines,
 * WinoGrande blanks before " ." and "'s", ARC numeric labels) and for a few documents written
 * here, the expected strings and token ids were computed outside rotor: the harness's
 * request building re-typed in Python on Python's own str/re semantics (lambada_openai.yaml,
 * piqa.yaml, hellaswag/utils.py, winogrande/preprocess_winogrande.py, arc_easy.yaml,
 * api/model.py _encode_pair), tokenised with SentencePiece's Python binding on the Mistral
 * 7B v0.1 model; every single-line string among them (82) was also encoded with Debian's
 * `spm_encode --model M --output_format=id` and agreed.
 *
 * The whole-minus-prefix split, checked by hand on two cases:
 *  - PIQA doc 1: context "Question: dresser\nAnswer:" encodes to
 *    [▁Question : ▁d res ser <0x0A> An swer :] (9 ids); the whole string with
 *    " replace drawer with bobby pin " gives those 9 and then
 *    [▁replace ▁drawer ▁with ▁b obby ▁pin ▁] = 9013 27673 395 287 11551 9550 28705: the
 *    solution's trailing space stays in the continuation as a lone "▁" (28705); nothing
 *    moves since the context ends in ':'.
 *  - LAMBADA "It was the  end": split(' ') gives [It, was, the, "", end], so the context is
 *    "It was the " and its trailing space moves: context "It was the" = [▁It ▁was ▁the]
 *    (661 403 272), whole "It was the  end" = [▁It ▁was ▁the ▁ ▁end], continuation
 *    [▁ ▁end] = 28705 948.
 * Tests that need ../shared/data print a "skipped" line when it is absent, and the program
 * then exits with ctest's skip code. */
#include "harness.h"
#include "shared_data.h"
#include "eval.h"
#include "tokenizer.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char err[2048];

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                              */
/* ------------------------------------------------------------------------------------ */

/* Document `index` (0-based, blank lines skipped) of ../shared/data/eval/<task>.jsonl. */
static char *read_doc_line(const char *task, int64_t index) {
    char path[1024];
    snprintf(path, sizeof path, "%s/eval/%s.jsonl", ROTOR_SHARED_DATA, task);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f, "cannot open %s", path);
    if (!f) return NULL;
    char *line = NULL;
    size_t cap = 0;
    int64_t i = 0;
    while (getline(&line, &cap, f) >= 0) {
        if (line[strspn(line, " \t\r\n")] == '\0') continue;
        if (i++ == index) break;
    }
    fclose(f);
    return line;
}

static TaskKind kind_of(const char *task) {
    static const char *names[] = {"lambada_openai", "piqa",     "hellaswag",
                                  "winogrande",     "arc_easy", "arc_challenge"};
    static const TaskKind kinds[] = {TASK_LAMBADA,    TASK_PIQA,     TASK_HELLASWAG,
                                     TASK_WINOGRANDE, TASK_ARC_EASY, TASK_ARC_CHALLENGE};
    for (int i = 0; i < 6; i++)
        if (strcmp(names[i], task) == 0) return kinds[i];
    CHECK_MSG(0, "unknown task %s", task);
    return TASK_LAMBADA;
}

/* A fresh temporary directory for task files (removed by rm_dir). */
static char *make_dir(void) {
    char *d = strdup("/tmp/rotor_eval_test_XXXXXX");
    CHECK(mkdtemp(d) != NULL);
    return d;
}

static void write_file(const char *dir, const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f, "cannot write %s", path);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void rm_dir(char *dir) {
    static const char *names[] = {"lambada_openai", "piqa",     "hellaswag",
                                  "winogrande",     "arc_easy", "arc_challenge"};
    char path[1024];
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s.jsonl", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    free(dir);
}

/* ------------------------------------------------------------------------------------ */
/* Python string semantics                                                              */
/* ------------------------------------------------------------------------------------ */

/* str.capitalize, expected values from Python 3.11. */
static void test_capitalize(void) {
    static const char *cases[][2] = {
        {"hello WORLD", "Hello world"},
        {"éCOLE", "École"},
        {"ǆ", "ǅ"}, /* U+01C6 -> U+01C5: title case, not upper (U+01C4) */
        {"ǆEMAL", "ǅemal"},
        {"ßa", "Ssa"}, /* full title mapping of ß */
        {"", ""},
        {"ΑΣ", "Ας"}, /* final sigma, in the context of the first letter */
        {"Σ", "Σ"},
        {"ΑΣ ΑΣ", "Ας ας"},
        {"1ABC", "1abc"},
        {" aBC", " abc"}, /* no adjustment to the first cased letter */
        {"İX", "İx"},
        {"ŉx", "ʼNx"},
        {"ﬁNE", "Fine"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = eval_capitalize(cases[i][0]);
        CHECK_MSG(strcmp(got, cases[i][1]) == 0, "capitalize(\"%s\") = \"%s\", want \"%s\"",
                  cases[i][0], got, cases[i][1]);
        free(got);
    }
}

/* hellaswag/utils.py preprocess, expected values from Python 3.11. */
static void test_hellaswag_preprocess(void) {
    static const char *cases[][2] = {
        {"  [header] How to  [title] Do it [step] now  ", " How to . Do it now"},
        {"a [b [c] d] e", "a d] e"},          /* non-greedy: up to the first ']' */
        {"a [b c", "a [b c"},                 /* unclosed */
        {"a [b\nc] d [e] f", "a [b\nc] d f"}, /* '.' does not match '\n' */
        {"a [b [c\nd] e", "a [b [c\nd] e"},
        {"x   y", "x  y"}, /* one pass of "  " -> " " */
        {"x    y", "x  y"},
        {"x     y", "x   y"},
        {"[title] foo", " foo"}, /* " [title]" needs its space */
        {"a  [title] b", "a . b"},
        {"a ]b[ c]", "a ]b"},
        {"\xc2\xa0 x \xe3\x80\x80", "x"}, /* U+00A0, U+3000: Python whitespace */
        {"", ""},
        {"[a]\n[b]", "\n"},
        {"\xe2\x80\x8b x ", "\xe2\x80\x8b x"}, /* U+200B is not whitespace */
        {"[]", ""},
        {"[[]]", "]"},
        {"a[b]c[d", "ac[d"},
        {"\x1c\x1dx\x1e\x1f", "x"},
        {"\xc2\x85x\xe2\x80\xa8", "x"}, /* U+0085, U+2028 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = eval_hellaswag_preprocess(cases[i][0]);
        CHECK_MSG(strcmp(got, cases[i][1]) == 0, "preprocess(\"%s\") = \"%s\", want \"%s\"",
                  cases[i][0], got, cases[i][1]);
        free(got);
    }
}

/* The trailing-whitespace move uses Python's rstrip: every code point of str.isspace moves
 * to the continuation, and nothing else does. */
static void test_whitespace_move(void) {
    Tokenizer *tok = load_mistral();
    if (!tok) return;
    static const uint32_t space[] = {0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x1C,   0x1D,   0x1E,
                                     0x1F,   0x20,   0x85,   0xA0,   0x1680, 0x2000, 0x2001, 0x2002,
                                     0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
                                     0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
    static const uint32_t not_space[] = {0x200B, 0x180E, 0xFEFF, 0x2060, 0x00AD, 'x'};
    for (int pass = 0; pass < 2; pass++) {
        const uint32_t *set = pass == 0 ? space : not_space;
        int n = pass == 0 ? (int)(sizeof space / sizeof space[0])
                          : (int)(sizeof not_space / sizeof not_space[0]);
        for (int i = 0; i < n; i++) {
            char ch[8] = {0}, *ctx, *cont, want[32];
            uint32_t c = set[i];
            if (c < 0x80) {
                ch[0] = (char)c;
            } else if (c < 0x800) {
                ch[0] = (char)(0xC0 | (c >> 6)), ch[1] = (char)(0x80 | (c & 0x3F));
            } else {
                ch[0] = (char)(0xE0 | (c >> 12)), ch[1] = (char)(0x80 | ((c >> 6) & 0x3F)),
                ch[2] = (char)(0x80 | (c & 0x3F));
            }
            /* context "q" + ch + ch, continuation " y" */
            ctx = malloc(32);
            snprintf(ctx, 32, "q%s%s", ch, ch);
            cont = strdup(" y");
            int32_t *ids = NULL;
            int n_ids, n_cont;
            int rc =
                eval_encode_request(tok, 1, &ctx, &cont, &ids, &n_ids, &n_cont, err, sizeof err);
            CHECK_MSG(rc == 0, "%s", err);
            if (pass == 0) {
                snprintf(want, sizeof want, "%s%s y", ch, ch);
                CHECK_MSG(strcmp(ctx, "q") == 0 && strcmp(cont, want) == 0, "U+%04X did not move",
                          c);
            } else {
                CHECK_MSG(strlen(ctx) == 1 + 2 * strlen(ch) && strcmp(cont, " y") == 0,
                          "U+%04X moved", c);
            }
            CHECK(rc != 0 || (n_ids >= 2 && ids[0] == 1 && n_cont >= 1));
            free(ctx);
            free(cont);
            free(ids);
        }
    }
    tok_free(tok);
}

/* Edges of the scoring primitive: an empty context conditions on BOS even without add_bos
 * (the harness's prefix token); a context of whitespace only becomes empty after the move
 * and is then encoded normally; an empty continuation gives n_cont = 0. */
static void test_encode_edges(void) {
    Tokenizer *tok = load_mistral();
    if (!tok) return;
    struct {
        const char *ctx, *cont;
        int add_bos;
        const char *want_ctx, *want_cont;
        int n, n_cont;
        int32_t ids[4];
    } cases[] = {
        {"", " Hello", 0, "", " Hello", 3, 2, {1, 28705, 22557}},
        {"", " Hello", 1, "", " Hello", 3, 2, {1, 28705, 22557}},
        {"  ", "Hello", 0, "", "  Hello", 2, 2, {259, 22557}}, /* [▁▁ ▁Hello] */
        {"Hello", "", 1, "Hello", "", 2, 0, {1, 22557}},
        {"Hello", "", 0, "Hello", "", 1, 0, {22557}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *ctx = strdup(cases[i].ctx), *cont = strdup(cases[i].cont);
        int32_t *ids = NULL;
        int n, n_cont;
        int rc = eval_encode_request(tok, cases[i].add_bos, &ctx, &cont, &ids, &n, &n_cont, err,
                                     sizeof err);
        CHECK_MSG(rc == 0, "%s", err);
        CHECK_MSG(strcmp(ctx, cases[i].want_ctx) == 0 && strcmp(cont, cases[i].want_cont) == 0,
                  "case %zu: \"%s\" + \"%s\"", i, ctx, cont);
        CHECK_MSG(rc == 0 && n == cases[i].n && n_cont == cases[i].n_cont &&
                      memcmp(ids, cases[i].ids, (size_t)n * sizeof(int32_t)) == 0,
                  "case %zu: %d tokens, n_cont %d", i, n, n_cont);
        free(ctx);
        free(cont);
        free(ids);
    }
    tok_free(tok);
}

/* ------------------------------------------------------------------------------------ */
/* Pinned requests                                                                      */
/* ------------------------------------------------------------------------------------ */

typedef struct {
    const char *context, *continuation;         /* eval_build_strings: the harness's request */
    const char *enc_context, *enc_continuation; /* after the trailing-whitespace move */
    const int32_t *ctx_ids;                     /* [BOS] + encode(context) */
    int n_ctx;
    const int32_t *cont_ids; /* whole[len(context tokens):] */
    int n_cont;
} PinnedRequest;

typedef struct {
    const char *task;
    int64_t line;     /* document index in ../shared/data/eval/<task>.jsonl, -1: `json` */
    const char *json; /* the document when line < 0 */
    int gold, n_choices;
    int64_t choice_chars[4];
    PinnedRequest req[4];
} PinnedDoc;

/* Generated (see the top of this file); do not edit by hand. */
static const int32_t ids_0[] = {
    1,     560,   586,   17919, 349,   264,   3081,  7253,  28725, 304,   3416,  378,   349,  264,
    1741,  19900, 695,   765,   28718, 3186,  28723, 330,   6980,  753,   23190, 28723, 13,   13,
    28739, 10638, 2330,  513,   368,   28742, 267,   1404,  298,   347,   575,   438,   2125, 2719,
    4067,  486,   8300,  28725, 368,   1659,  390,   1162,  506,   741,   17503, 611,   13,   13,
    28737, 913,   438,   713,   28725, 4622,  341,   25704, 28723, 5410,  456,   349,   741,  3127,
    302,   1492,  28723, 1092,  390,   315,   19696, 438,   382,   1977,  262,   28725, 516,  5108,
    1191,  1800,  297,   264,   10689, 17924, 28725, 315,   949,   28742, 28707, 1656,  684};
static const int32_t ids_1[] = {10090};
static const int32_t ids_2[] = {
    1,     330,   12072, 14803, 2910,  559,  773,   298,   1721,  582,   264,   13628, 16163,
    304,   25064, 378,   1060,  297,   272,  16232, 28723, 28705, 12642, 2056,  264,   16163,
    302,   13628, 298,   511,   776,   369,  28723, 13,    28735, 283,   912,   304,   320,
    409,   2495,  438,   624,   302,   272,  2475,  9882,  395,   799,   11089, 28723, 28705,
    11773, 9409,  304,   9672,  28725, 1312, 8652,  9957,  28723, 28705, 661,   3593,  264,
    4610,  2071,  28723, 25300, 6758,  477,  272,   852,   298,   1038,  1864,  544,   403,
    1162,  304,   298,   625,   1698,  913,  438};
static const int32_t ids_3[] = {12642};
static const int32_t ids_4[] = {
    1,     4127,  390,   400,   11591, 852,   778,   272,   25602, 594,   302,   272,   14088,
    28725, 2070,  28725, 400,   3364,  264,   2664,  3441,  28747, 345,   28755, 380,   28709,
    611,   13,    13,    28759, 316,   515,   2382,  579,   4672,  28723, 985,   12003, 264,
    2664,  3075,  5188,  369,   28637, 1012,  17013, 302,   559,   28725, 304,   559,   2687,
    3691,  13123, 3000,  297,   272,   11375, 3646,  28723, 1092,  2511,  403,   390,   13978,
    390,   559,   2282,  390,   630,   22934, 713,   297,   28723, 351,   380,   28709, 2770,
    737,   400,   829,   10768, 4085,  28723, 8516,  400,   6900,  298,   9502,  28725};
static const int32_t ids_5[] = {345, 28759, 316, 515};
static const int32_t ids_6[] = {
    1,    345,  9653, 2680,  10728, 2066,  298,   947,  298,   4602,  559,   28723, 2387,  302,
    272,  3339, 885,  28716, 1532,  28725, 264,   13,   13,    485,   21858, 28733, 1164,  2680,
    611,  13,   13,   28739, 7226,  21542, 272,   5045, 10745, 356,   272,   15814, 1528,  403,
    5566, 302,  264,  10668, 8442,  862,   9101,  358,  773,   28723, 13,    13,    28739, 28737,
    1073, 378,  403,  611,   3291,  28764, 11770, 438,  351,   3816,  316,   28723, 345,   1313,
    1864, 2382, 737,  5045,  3339,  28723, 1015,  378,  5785,  403,   741,   2112};
static const int32_t ids_7[] = {302, 13, 13, 11782};
static const int32_t ids_8[] = {
    1,     26756, 28725, 478,   28809, 333,  1419,  264,   12110, 9862,  297,   272,   17210, 28816,
    28838, 13,    28835, 18461, 14569, 13,   28835, 28816, 2324,  541,   3300,  378,   1060,  395,
    264,   19818, 315,   1419,  297,   272,  1253,  28723, 661,   28809, 28713, 544,   5883,  1236,
    579,   315,   949,   28809, 28707, 1073, 28816, 28838, 13,    28835, 18461, 14569, 13,    28835,
    28816, 1164,  538,   659,   2598,  592,  28723, 315,   28809, 28719, 1864,  378,   28809, 584};
static const int32_t ids_9[] = {347, 28816, 28838, 13, 28835, 18461};
static const int32_t ids_10[] = {1, 661, 403, 272};
static const int32_t ids_11[] = {28705, 948};
static const int32_t ids_12[] = {1, 264, 29000, 287, 28935};
static const int32_t ids_13[] = {277};
static const int32_t ids_14[] = {1};
static const int32_t ids_15[] = {28705, 22557};
static const int32_t ids_16[] = {1,    22478, 28747, 1602,  511, 315,  4313,  264,
                                 1111, 21406, 18958, 25807, 354, 378,  28742, 28713,
                                 633,  6958,  1549,  28804, 13,  2820, 16981, 28747};
static const int32_t ids_17[] = {7133, 547,  272,  1111,  21406, 18958, 395,  264,  25807, 2173,
                                 302,  264,  1664, 13352, 302,   2855,  3202, 1269, 302,   27755,
                                 3830, 4216, 782,  28725, 368,   622,   835,  927,  298,   8002,
                                 378,  395,  264,  2130,  10859, 304,   264,  2887, 14523, 28723};
static const int32_t ids_18[] = {7133,  547,  272,   1111,  21406, 18958, 395,  264,   25807, 2173,
                                 302,   264,  1664,  13352, 302,   2855,  3202, 1269,  302,   27755,
                                 21576, 3388, 28725, 368,   622,   835,   927,  298,   8002,  378,
                                 395,   264,  2130,  10859, 304,   264,   2887, 14523, 28723};
static const int32_t ids_19[] = {1, 22478, 28747, 281, 411, 457, 13, 2820, 16981, 28747};
static const int32_t ids_20[] = {9013, 27673, 395, 287, 11551, 9550, 28705};
static const int32_t ids_21[] = {7446, 28725, 4768, 820, 426, 395, 28705, 287, 11551, 9550, 28705};
static const int32_t ids_22[] = {1, 22478, 28747, 15118, 13061, 13, 2820, 16981, 28747};
static const int32_t ids_23[] = {28705, 541, 28705, 347, 7098, 486, 264, 28705, 5113, 28705};
static const int32_t ids_24[] = {28705, 541,   28705, 347,   7098, 486,
                                 264,   28705, 14338, 17673, 28705};
static const int32_t ids_25[] = {1,   22478, 28747, 1824, 11070, 511, 368,  2669,  354,
                                 264, 3418,  28768, 3068, 28804, 13,  2820, 16981, 28747};
static const int32_t ids_26[] = {25518, 272,   5252, 395,   7515,  13563, 274,   579,   378,
                                 28809, 28713, 2795, 2173,  28723, 15540, 297,   28705, 28750,
                                 14487, 302,   3075, 10203, 567,   28705, 28740, 28733, 28750,
                                 14487, 302,   6138, 346,   26131, 14545, 18342, 28723};
static const int32_t ids_27[] = {25518, 272,   5252, 395,   7515,  13563, 274,   579,   378,
                                 28809, 28713, 544,  2173,  28723, 15540, 297,   28705, 28750,
                                 14487, 302,   3075, 10203, 567,   28705, 28740, 28733, 28750,
                                 14487, 302,   6138, 346,   26131, 14545, 18342, 28723};
static const int32_t ids_28[] = {1,   5243, 1009, 480, 5810, 17078, 28747, 330,
                                 676, 349,  6398, 356, 264,  9145,  28723, 400};
static const int32_t ids_29[] = {349, 1413, 12551, 298, 12551, 264, 5964, 302, 1321, 278, 28723};
static const int32_t ids_30[] = {349, 3191, 7319, 2184, 24903, 805, 28723};
static const int32_t ids_31[] = {349, 6632, 264, 7294, 849, 28742, 28713, 277, 4276, 28723};
static const int32_t ids_32[] = {8383, 13672, 582, 9145, 288, 356, 264, 9145, 28723};
static const int32_t ids_33[] = {1,     6377,  28747, 1602,  298,  4289, 5034, 1907,  356,   264,
                                 3296,  2125,  28723, 13560, 6535, 2979, 264,  1664,  3316,  1159,
                                 2855,  1536,  304,   4663,  8969, 302,  2130, 28723, 1684,  368,
                                 9095,  28725, 368,   7234,  574,  2187, 7641, 304,   16815, 6601,
                                 28723, 1529,  3773,  2979,  2856, 3316, 1159, 368,   576,   298,
                                 2855,  622,   2111,  574,   2187, 727,  298,  5106,  1060,  28723};
static const int32_t ids_34[] = {10339, 7969, 304,   4051, 390,  5106, 390,  2572, 1938,
                                 272,   1370, 28723, 851,  349,  2608, 272,  1222, 395,
                                 905,   693,  2943,  356,  3296, 2202, 28723};
static const int32_t ids_35[] = {13560, 739,   368,  460,  459,  754, 346,  10272, 304,  2111,
                                 3936,  264,   1721, 1159, 1404, 298, 2855, 28723, 2378, 459,
                                 347,   26100, 486,  5277, 439,  930, 296,  28723};
static const int32_t ids_36[] = {995, 1023, 835,  4663, 8532, 302,   2130, 5473, 272, 1370,
                                 298, 3079, 6521, 2922, 601,  28723, 995,  993,  835, 947,
                                 298, 1840, 2130, 486,  574,  2855,  2205, 28723};
static const int32_t ids_37[] = {415,   1489,  727,  354,   368,  298,   9095, 349,  438,   2125,
                                 28723, 2463,  1404, 298,   2855, 438,   264,  2552, 727,   304,
                                 25280, 28725, 368,  622,   2477, 11088, 582,  4622, 24343, 887,
                                 28725, 442,   2949, 15231, 4622, 5917,  28723};
static const int32_t ids_38[] = {
    1,     13651, 404,  304,   10394, 1689,  1063, 28747, 1602, 298,   4461,  1250, 22069,
    356,   10990, 8570, 28723, 2378,  368,   1528, 927,   298,  1840,  24402, 852,  28804,
    1047,  368,   541,  28742, 28707, 14951, 298,  264,   680,  297,   8478,  7114, 28725,
    9421,  298,   272,  3493,  28742, 1429,  6323, 28742, 319,  1379,  279,   304,  2115,
    28723, 415,   6261, 972,   14650, 28723, 415,  4921,  1852, 28713, 582,   28723};
static const int32_t ids_39[] = {
    2378, 459,  312, 28733, 7262,  456,  1250,  1832, 1759,  1671, 19877, 27098, 288,  1059,
    1430, 2515, 368, 1216,  28723, 1047, 28725, 3545, 28725, 574,  3282,  511,   459,  1709,
    298,  947,  368, 298,   1464,  298,  1038,  680,  7114,  304,  28748, 271,   1235, 456,
    1527, 368,  805, 28725, 17433, 852,  486,   8190, 1103,  9439, 574,   1868,  1141, 28723};
static const int32_t ids_40[] = {
    995,  993,   868,   1032,  574,  2996,  345,  4716, 2159, 22511, 369,   574,   2515, 349,  2632,
    2373, 28705, 28750, 28781, 3316, 11955, 995,  541,  5339, 340,   21452, 298,   4716, 6500, 544,
    302,  574,   13199, 298,   3754, 272,   3455, 442,  2496, 395,   2962,  11756, 28723};
static const int32_t ids_41[] = {10213, 356,   272, 28742, 1658,  574,  4126, 1753, 28808, 387,
                                 7371,  28725, 562, 622,   368,   4665, 1658, 378,  1753,  28804,
                                 387,   609,   995, 28742, 584,   1032, 264,  2928, 1852,  582,
                                 7201,  368,   767, 28742, 28713, 3544, 28723};
static const int32_t ids_42[] = {3604, 1832, 659,  776,   773,   910,  1188,  590,  10306, 272,
                                 5994, 1432, 2125, 28723, 995,   1368, 10306, 272,  5994,  28725,
                                 562,  378,  3157, 28742, 28707, 4892, 298,   1315, 378,   28723};
static const int32_t ids_43[] = {
    1,    13651, 404,   304,  10394, 1689,  1063, 28747, 1602,  298,   5310, 26479, 2260,
    325,  28716, 449,   5278, 6992,  11505, 1047, 2572,  28725, 10221, 1741, 21709, 302,
    2887, 304,   23327, 5347, 28723, 661,   378,  459,   16446, 298,   1840, 7998,  14082,
    354,  1043,  15772, 302,  727,   390,   456,  5212,  24038, 272,   5701, 304,   727,
    298,  17669, 346,   568,  413,   270,   9222, 22067, 14082, 28723};
static const int32_t ids_44[] = {27038, 288,   1413, 16176, 5087,  28725, 15003, 283, 473,   28725,
                                 11488, 28725, 9685, 304,   799,   16244, 14082, 541, 4015,  272,
                                 24038, 7332,  354,  272,   4319,  374,   352,   304, 1736,  298,
                                 396,   7483,  2258, 3164,  302,   272,   15022, 568, 27038, 847,
                                 1606,  304,   799,  341,   12940, 14082, 28723};
static const int32_t ids_45[] = {
    11435, 28713, 1023, 459, 347,   19208, 22067, 442,  8435,  28723, 661,   349,   25844, 298,
    5310,  14082, 369,  460, 22067, 5894,  28725, 390,  15368, 298,   1486,  17991, 354,   3774,
    15772, 622,   4015, 805, 707,   27826, 24038, 2169, 297,   272,   14082, 28723};
static const int32_t ids_46[] = {1047,  368,   3079, 575,  297,   521,   11384, 28725, 24038, 622,
                                 5941,  298,   272,  5439, 28723, 8469,  28725, 378,   349,   2278,
                                 298,   5310,  477,  3587, 284,   509,   304,   6447,  4911,  304,
                                 938,   272,   4979, 998,  536,   354,   13198, 390,   3403,  390,
                                 2572,  28725, 378,  349,  264,   1179,  3028,  298,   3232,  356,
                                 17877, 741,   2112, 302,  3588,  16856, 14175, 28723};
static const int32_t ids_47[] = {415,   24038, 868,   6049, 28713, 298,   272,   8894,  28725, 272,
                                 2187,  304,   1019,  298,  272,   261,   19474, 28723, 733,   990,
                                 28710, 990,   28710, 349,  264,   1212,  302,   24038, 369,   6104,
                                 3631,  366,   3126,  309,  381,   24038, 28723};
static const int32_t ids_48[] = {
    1,    12860, 8000, 304, 17338, 28747, 1602,  298,   3238, 4855, 3691,  28723, 15767,
    354,  264,   284,  833, 412,   3119,  28723, 330,   541,  3084, 2485,  4855,  3691,
    395,  264,   2055, 302, 7531,  304,   6249,  28723, 1791, 6619, 264,   2208,  9867,
    607,  284,   833,  412, 28725, 1840,  272,   8480,  7950, 3641, 28725, 272,   1830,
    1043, 28725, 304,  967, 8532,  302,   13083, 5473,  574,  2485, 25347, 28723};
static const int32_t ids_49[] = {995,  541, 3238, 574,  3691,  442,   2229, 378,  28723, 6746,
                                 1864, 574, 3691, 3157, 28742, 28707, 1368, 1043, 442,   1368,
                                 2485, 304, 369,  368,  5211,  297,   707,  305,  10575, 28723};
static const int32_t ids_50[] = {6746, 1864,  574,  2485,  25347, 2949,  1019,  346,  5473,  574,
                                 3691, 298,   3084, 10870, 264,   13627, 13083, 568,  10339, 18739,
                                 442,  13296, 770,  354,   275,   3832,  3691,  28723};
static const int32_t ids_51[] = {367,  833,   412,   15981, 460,  2608,  3468,  1043,  28725,
                                 2608, 28705, 28782, 28734, 3486, 442,   680,   28725, 4662,
                                 8833, 7531,  298,   272,   2081, 25458, 28723, 995,   993,
                                 835,  947,   298,   1038,  574,  3691,  913,   6931,  263,
                                 297,  272,   2778,  304,   3774, 356,   272,   8480,  28723};
static const int32_t ids_52[] = {415,   284,  833,   412,  349,  264,   3502,  13491,
                                 3691,  7886, 28723, 995,  541,  7656,  378,   7191,
                                 16065, 1006, 28725, 268,  3438, 286,   17753, 28725,
                                 442,   395,  1382,  1495, 668,  14853, 28723};
static const int32_t ids_53[] = {
    1,     10712, 5372, 28747, 1602,  298,   938,  10615, 298,   1316,  4551, 1813, 3233,  28723,
    17662, 10615, 486,  3595,  2071,  28723, 4023, 741,   9729,  4551,  460,  680,  19798, 28725,
    6741,  28725, 368,  949,   28742, 28707, 947,  264,   2838,  1407,  369,  622,  576,   1103,
    754,   652,   1335, 28723, 19190, 28725, 368,  949,   28742, 28707, 947,  298,  6788,  6402,
    4551,  486,   8102, 706,   10615, 369,   460,  1368,  9878,  3320,  28723};
static const int32_t ids_54[] = {24640, 28725, 272,   1489,  5994,  4715, 460,  808,
                                 297,   272,   1432,  5445,  28723, 4023, 368,  993,
                                 506,   2195,  27995, 28725, 368,   541,  1300, 8532,
                                 302,   1598,  10615, 354,   4551,  3270, 28723};
static const int32_t ids_55[] = {1047,  2572,  28725, 4987,  10615, 486,   4551,  368,   2016,
                                 28725, 459,   4551,  590,   2141,  737,   28723, 1263,  3335,
                                 28725, 297,   272,   5994,  4786,  6439,  400,   11497, 453,
                                 28705, 28750, 28705, 28750, 28734, 28734, 28734, 28725, 272,
                                 9882,  438,   11814, 8070,  325,   28740, 28783, 28723};
static const int32_t ids_56[] = {
    11442, 298,   3088,  1545,  369, 3791,  354,   272,   3595, 272,   6371, 349,   438,  28723,
    1263,  4551,  28705, 28750, 298, 28705, 28787, 1267,  1571, 28725, 1038, 1864,  272,  2838,
    349,   11735, 3588,  28725, 304, 369,   9242,  11562, 272,  3028,  368,  28742, 267,  2942,
    298,   625,   2673,  28725, 390, 378,   3208,  298,   347,  1272,  2302, 346,   5444, 28723};
static const int32_t ids_57[] = {4822, 302,   272,  727,  28725, 4551, 625, 767,   590,  947,  2935,
                                 356,  28723, 8890, 574,  3595,  2071, 778, 15301, 390,  368,  1567,
                                 582,  395,   264,  1664, 10475, 354,  574, 5994,  3518, 28723};
static const int32_t ids_58[] = {1,     12860, 8000,  304,   17338, 28747, 1602,  298,   281,
                                 7187,  574,   3691,  395,   446,   796,   11092, 28723, 21815,
                                 264,   3181,  28723, 935,   28713, 12523, 2106,  446,   796,
                                 11092, 3791,  1489,  28723, 995,   541,   6750,  989,   26443};
static const int32_t ids_59[] = {28705, 1263, 264, 23645, 19759, 28725, 938,  624,  11200,
                                 28723, 842,  399, 262,   331,   574,   3691, 28723};
static const int32_t ids_60[] = {298,  625, 264, 3199, 263,   28705, 3181, 28723,
                                 3268, 309, 272, 2130, 28723, 384,   508,  28723};
static const int32_t ids_61[] = {28705};
static const int32_t ids_62[] = {297, 264, 13494, 733, 1009, 13, 9175, 28793, 304, 13535, 28723};
static const int32_t ids_63[] = {1,    12642, 403, 264,  1188, 1873,
                                 1147, 14535, 821, 8866, 579,  12642};
static const int32_t ids_64[] = {1743, 1433, 272, 7089, 4469, 28723};
static const int32_t ids_65[] = {1, 12642, 403, 264, 1188, 1873, 1147, 14535, 821, 8866, 579, 8866};
static const int32_t ids_66[] = {1,     5480, 403,  8538, 4186,  1491, 515,   28742,
                                 28713, 5690, 1658, 356,  19781, 562,  28705, 5480};
static const int32_t ids_67[] = {26066, 264, 2055, 302, 19781, 27272, 28713, 28723};
static const int32_t ids_68[] = {1,    5480, 403, 8538,  4186, 1491,  515,  28742, 28713,
                                 5690, 1658, 356, 19781, 562,  28705, 4186, 1491,  515};
static const int32_t ids_69[] = {1,    315,  2774,  4543,  25697, 2518, 28723, 28705, 9738,  315,
                                 4226, 297,  272,   16699, 304,   4662, 586,   2003,  28725, 562,
                                 586,  4386, 11719, 8215,  315,   403,  297,   272,   28705, 16699};
static const int32_t ids_70[] = {842};
static const int32_t ids_71[] = {1,    315,  2774,  4543,  25697, 2518, 28723, 28705, 9738,  315,
                                 4226, 297,  272,   16699, 304,   4662, 586,   2003,  28725, 562,
                                 586,  4386, 11719, 8215,  315,   403,  297,   272,   28705, 2003};
static const int32_t ids_72[] = {1,     17311, 403,  6495,  298,   347,  13225, 846,  3257, 354,
                                 24047, 562,   1539, 28809, 28707, 1347, 582,   1096, 17311};
static const int32_t ids_73[] = {403, 13652, 28723};
static const int32_t ids_74[] = {1,     17311, 403,  6495,  298,   347,  13225, 846,  3257, 354,
                                 24047, 562,   1539, 28809, 28707, 1347, 582,   1096, 24047};
static const int32_t ids_75[] = {1,    7303, 2261, 5480,  767,  727, 272,
                                 7607, 3377, 274,  28725, 1096, 7303};
static const int32_t ids_76[] = {464, 28713, 3054, 553, 5426, 28723};
static const int32_t ids_77[] = {1,    7303, 2261, 5480,  767,  727, 272,
                                 7607, 3377, 274,  28725, 1096, 5480};
static const int32_t ids_78[] = {1,    415,   4056, 8071, 1539, 28742, 28707, 4646, 297,  272, 8040,
                                 2210, 28725, 579,  478,  553,  298,   3530,  272,  4056, 8071};
static const int32_t ids_79[] = {1,    415,   4056, 8071, 1539, 28742, 28707, 4646, 297,  272, 8040,
                                 2210, 28725, 579,  478,  553,  298,   3530,  272,  8040, 2210};
static const int32_t ids_80[] = {1,    22478, 28747, 9595,  6251, 1489, 15157, 2079,
                                 8886, 28724, 448,   21537, 349,  272,  13865, 302,
                                 1080, 2887,  3738,  28804, 13,   2820, 16981, 28747};
static const int32_t ids_81[] = {7057, 3646, 349, 272,   2832,  302,  3408,
                                 354,  5597, 544, 27374, 28713, 28723};
static const int32_t ids_82[] = {4822, 27374, 28713, 460, 1419, 356,
                                 2533, 3519,  302,   297, 2130, 28723};
static const int32_t ids_83[] = {2364, 5997, 22168, 28744, 547,  349,  680,
                                 2632, 821,  799,   319,   2018, 28723};
static const int32_t ids_84[] = {415, 22862, 297, 544, 27374, 28713, 460, 9923, 28723};
static const int32_t ids_85[] = {1,   22478, 28747, 9595, 349,  264,   6251,
                                 684, 11259, 28804, 13,   2820, 16981, 28747};
static const int32_t ids_86[] = {415,   5151,  7641,  12091, 403,  28705,
                                 28740, 28782, 28902, 28743, 28723};
static const int32_t ids_87[] = {415,   7641, 2819,  3154,  403,   28705, 28740, 28734, 28902,
                                 28743, 298,  28705, 28750, 28734, 28902, 28743, 28723};
static const int32_t ids_88[] = {415,   1486,  7641,  10759, 622,   347,
                                 28705, 28740, 28781, 28902, 28743, 28723};
static const int32_t ids_89[] = {415,   5151,  1486,  7641,  297,   2246, 349,
                                 28705, 28750, 28734, 28902, 28743, 28723};
static const int32_t ids_90[] = {1,    22478, 28747, 1094,  27486, 263,  3977,  274,   369, 264,
                                 9873, 6580,  1002,  9556,  1024,  264,  1424,  28706, 271, 570,
                                 5088, 28723, 9595,  349,   272,   1080, 3917,  2030,  302, 456,
                                 5247, 297,   15015, 28804, 13,    2820, 16981, 28747};
static const int32_t ids_91[] = {9116, 23101, 8353, 622, 17889, 28723};
static const int32_t ids_92[] = {9116, 23101, 1267, 622, 2727, 3774, 28723};
static const int32_t ids_93[] = {9116, 23101, 2202, 622, 2727, 19367, 28723};
static const int32_t ids_94[] = {9116, 23101, 18428, 622, 2727, 12774, 28723};
static const int32_t ids_95[] = {1,     22478, 28747, 9595, 302,  1167,  349,  264,
                                 27454, 282,   28804, 13,   2820, 16981, 28747};
static const int32_t ids_96[] = {480, 719};
static const int32_t ids_97[] = {388, 883};
static const int32_t ids_98[] = {467, 406};
static const PinnedDoc PINNED[] = {
    /* plain */
    {"lambada_openai",
     0,
     NULL,
     0,
     1,
     {5},
     {{"In my palm is a clear stone, and inside it is a small ivory statuette. A guardian "
       "angel.\n\n\"Figured if you're going to be out at night getting hit by cars, you might as "
       "well have some backup.\"\n\nI look at him, feeling stunned. Like this is some sort of "
       "sign. But as I stare at Harlin, his mouth curved in a confident grin, I don't care about",
       " signs",
       "In my palm is a clear stone, and inside it is a small ivory statuette. A guardian "
       "angel.\n\n\"Figured if you're going to be out at night getting hit by cars, you might as "
       "well have some backup.\"\n\nI look at him, feeling stunned. Like this is some sort of "
       "sign. But as I stare at Harlin, his mouth curved in a confident grin, I don't care about",
       " signs", ids_0, 97, ids_1, 1}}},
    /* a double space inside the context (split(' ') gives an empty word) */
    {"lambada_openai",
     21,
     NULL,
     0,
     1,
     {5},
     {{"A cowboy behind her said to break up a cheese slice and mush it down in the mixture.  "
       "Sarah took a slice of cheese to do just that.\nSarah and Tess sat at one of the large "
       "tables with other guests.  Everyone talked and laughed, while eating lunch.  It seemed a "
       "happy group. Dale watched from the back to make sure all was well and to get another look "
       "at",
       " Sarah",
       "A cowboy behind her said to break up a cheese slice and mush it down in the mixture.  "
       "Sarah took a slice of cheese to do just that.\nSarah and Tess sat at one of the large "
       "tables with other guests.  Everyone talked and laughed, while eating lunch.  It seemed a "
       "happy group. Dale watched from the back to make sure all was well and to get another look "
       "at",
       " Sarah", ids_2, 85, ids_3, 1}}},
    /* target with an opening quote */
    {"lambada_openai",
     70,
     NULL,
     0,
     1,
     {6},
     {{"Even as he settled back into the cushions of the swing, though, he heard a soft voice: "
       "\"Mateo.\"\n\nNadia looked so beautiful. She wore a soft white dress that outlined every "
       "inch of her, and her black hair gleamed in the moonlight. But nothing was as incredible as "
       "her eyes as she drank him in. Mateo felt like he could hardly speak. Yet he managed to "
       "whisper,",
       " \"Nadia",
       "Even as he settled back into the cushions of the swing, though, he heard a soft voice: "
       "\"Mateo.\"\n\nNadia looked so beautiful. She wore a soft white dress that outlined every "
       "inch of her, and her black hair gleamed in the moonlight. But nothing was as incredible as "
       "her eyes as she drank him in. Mateo felt like he could hardly speak. Yet he managed to "
       "whisper,",
       " \"Nadia", ids_4, 90, ids_5, 4}}},
    /* newlines inside the last 'word' */
    {"lambada_openai",
     426,
     NULL,
     0,
     1,
     {9},
     {{"\"Anybody worried enough to want to save her. One of the firefighters, "
       "a\n\nneighbor-anybody.\"\n\n\"Assuming the blue flash on the tape really was evidence of a "
       "Wild Power,\" Pierce said.\n\n\"I think it was.\" Jez glanced at Morgead. \"It sure looked "
       "like blue fire. And it certainly was some kind",
       " of\n\nPower",
       "\"Anybody worried enough to want to save her. One of the firefighters, "
       "a\n\nneighbor-anybody.\"\n\n\"Assuming the blue flash on the tape really was evidence of a "
       "Wild Power,\" Pierce said.\n\n\"I think it was.\" Jez glanced at Morgead. \"It sure looked "
       "like blue fire. And it certainly was some kind",
       " of\n\nPower", ids_6, 82, ids_7, 4}}},
    /* curly quotes, dash and a newline inside the last 'word' */
    {"lambada_openai",
     1053,
     NULL,
     0,
     1,
     {9},
     {{"Listen, we’ve found a rear gate in the fence–”\n“Sal!”\n“–We can pull it down with a rope "
       "I found in the car. It’s all quiet here so I don’t think–”\n“Sal!”\n“–anyone has seen us. "
       "I’m sure it’ll",
       " be–”\n“Sal",
       "Listen, we’ve found a rear gate in the fence–”\n“Sal!”\n“–We can pull it down with a rope "
       "I found in the car. It’s all quiet here so I don’t think–”\n“Sal!”\n“–anyone has seen us. "
       "I’m sure it’ll",
       " be–”\n“Sal", ids_8, 70, ids_9, 6}}},
    /* context ends with a space: it moves to the continuation */
    {"lambada_openai",
     -1,
     "{\"text\": \"It was the  end\"}",
     0,
     1,
     {3},
     {{"It was the ", " end", "It was the", "  end", ids_10, 4, ids_11, 2}}},
    /* U+00A0 is Python whitespace (moves), U+200B is not */
    {"lambada_openai",
     -1,
     "{\"text\": \"a\xc2\xa0"
     " b\xe2\x80\x8b"
     " c\"}",
     0,
     1,
     {1},
     {{"a\xc2\xa0"
       " b\xe2\x80\x8b"
       "",
       " c",
       "a\xc2\xa0"
       " b\xe2\x80\x8b"
       "",
       " c", ids_12, 5, ids_13, 1}}},
    /* no space: empty context, conditioned on BOS */
    {"lambada_openai",
     -1,
     "{\"text\": \"Hello\"}",
     0,
     1,
     {5},
     {{"", " Hello", "", " Hello", ids_14, 1, ids_15, 2}}},
    /* plain */
    {"piqa",
     0,
     NULL,
     0,
     2,
     {164, 166},
     {{"Question: How do I ready a guinea pig cage for it's new occupants?\nAnswer:",
       " Provide the guinea pig with a cage full of a few inches of bedding made of ripped paper "
       "strips, you will also need to supply it with a water bottle and a food dish.",
       "Question: How do I ready a guinea pig cage for it's new occupants?\nAnswer:",
       " Provide the guinea pig with a cage full of a few inches of bedding made of ripped paper "
       "strips, you will also need to supply it with a water bottle and a food dish.",
       ids_16, 24, ids_17, 40},
      {"Question: How do I ready a guinea pig cage for it's new occupants?\nAnswer:",
       " Provide the guinea pig with a cage full of a few inches of bedding made of ripped jeans "
       "material, you will also need to supply it with a water bottle and a food dish.",
       "Question: How do I ready a guinea pig cage for it's new occupants?\nAnswer:",
       " Provide the guinea pig with a cage full of a few inches of bedding made of ripped jeans "
       "material, you will also need to supply it with a water bottle and a food dish.",
       ids_16, 24, ids_18, 39}}},
    /* solutions with trailing spaces (kept) and a double space */
    {"piqa",
     1,
     NULL,
     1,
     2,
     {30, 34},
     {{"Question: dresser\nAnswer:", " replace drawer with bobby pin ",
       "Question: dresser\nAnswer:", " replace drawer with bobby pin ", ids_19, 10, ids_20, 7},
      {"Question: dresser\nAnswer:", " finish, woodgrain with  bobby pin ",
       "Question: dresser\nAnswer:", " finish, woodgrain with  bobby pin ", ids_19, 10, ids_21,
       11}}},
    /* solutions with a leading space: the continuation starts with two */
    {"piqa",
     1517,
     NULL,
     0,
     2,
     {28, 33},
     {{"Question: chip clip\nAnswer:", "  can  be broken by a  board ",
       "Question: chip clip\nAnswer:", "  can  be broken by a  board ", ids_22, 9, ids_23, 10},
      {"Question: chip clip\nAnswer:", "  can  be broken by a  wash cloth ",
       "Question: chip clip\nAnswer:", "  can  be broken by a  wash cloth ", ids_22, 9, ids_24,
       11}}},
    /* non-ASCII apostrophes */
    {"piqa",
     20,
     NULL,
     0,
     2,
     {123, 122},
     {{"Question: What alcohol do you pour for a mojito?\nAnswer:",
       " Fill the glass with ice cubes so it’s half full. Pour in 2 shots of white rum & 1-2 shots "
       "of freshly squeezed orange juice.",
       "Question: What alcohol do you pour for a mojito?\nAnswer:",
       " Fill the glass with ice cubes so it’s half full. Pour in 2 shots of white rum & 1-2 shots "
       "of freshly squeezed orange juice.",
       ids_25, 18, ids_26, 35},
      {"Question: What alcohol do you pour for a mojito?\nAnswer:",
       " Fill the glass with ice cubes so it’s all full. Pour in 2 shots of white rum & 1-2 shots "
       "of freshly squeezed orange juice.",
       "Question: What alcohol do you pour for a mojito?\nAnswer:",
       " Fill the glass with ice cubes so it’s all full. Pour in 2 shots of white rum & 1-2 shots "
       "of freshly squeezed orange juice.",
       ids_25, 18, ids_27, 35}}},
    /* plain */
    {"hellaswag",
     0,
     NULL,
     3,
     4,
     {37, 27, 26, 36},
     {{"Roof shingle removal: A man is sitting on a roof. he",
       " is using wrap to wrap a pair of skis.",
       "Roof shingle removal: A man is sitting on a roof. he",
       " is using wrap to wrap a pair of skis.", ids_28, 16, ids_29, 11},
      {"Roof shingle removal: A man is sitting on a roof. he", " is ripping level tiles off.",
       "Roof shingle removal: A man is sitting on a roof. he", " is ripping level tiles off.",
       ids_28, 16, ids_30, 7},
      {"Roof shingle removal: A man is sitting on a roof. he", " is holding a rubik's cube.",
       "Roof shingle removal: A man is sitting on a roof. he", " is holding a rubik's cube.",
       ids_28, 16, ids_31, 10},
      {"Roof shingle removal: A man is sitting on a roof. he",
       " starts pulling up roofing on a roof.",
       "Roof shingle removal: A man is sitting on a roof. he",
       " starts pulling up roofing on a roof.", ids_28, 16, ids_32, 9}}},
    /* an ending with a double space */
    {"hellaswag",
     4121,
     NULL,
     2,
     4,
     {111, 125, 121, 166},
     {{"Health: How to sleep comfortably on a hot night. Stop exercising a few hours before "
       "bedtime and drink plenty of water. When you exercise, you raise your body temperature and "
       "retain heat. Exercising several hours before you go to bed will give your body time to "
       "cool down.",
       " Keep legs and feet as cool as possible during the day. This is often the case with people "
       "who live on hot days.",
       "Health: How to sleep comfortably on a hot night. Stop exercising a few hours before "
       "bedtime and drink plenty of water. When you exercise, you raise your body temperature and "
       "retain heat. Exercising several hours before you go to bed will give your body time to "
       "cool down.",
       " Keep legs and feet as cool as possible during the day. This is often the case with people "
       "who live on hot days.",
       ids_33, 60, ids_34, 25},
      {"Health: How to sleep comfortably on a hot night. Stop exercising a few hours before "
       "bedtime and drink plenty of water. When you exercise, you raise your body temperature and "
       "retain heat. Exercising several hours before you go to bed will give your body time to "
       "cool down.",
       " Stop when you are not overly tired and give yourself a break before going to bed. Do not "
       "be embarrassed by physical exertion.",
       "Health: How to sleep comfortably on a hot night. Stop exercising a few hours before "
       "bedtime and drink plenty of water. When you exercise, you raise your body temperature and "
       "retain heat. Exercising several hours before you go to bed will give your body time to "
       "cool down.",
       " Stop when you are not overly tired and give yourself a break before going to bed. Do not "
       "be embarrassed by physical exertion.",
       ids_33, 60, ids_35, 28},
      {"Health: How to sleep comfortably on a hot night. Stop exercising a few hours before "
       "bedtime and drink plenty of water. When you exercise, you raise your body temperature and "
       "retain heat. Exercising several hours before you go to bed will give your body time to "
       "cool down.",
       " You should also drink lots of water throughout the day to stay hydrated. You may also "
       "want to keep water by your bedside.",
       "Health: How to sleep comfortably on a hot night. Stop exercising a few hours before "
       "bedtime and drink plenty of water. When you exercise, you raise your body temperature and "
       "retain heat. Exercising several hours before you go to bed will give your body time to "
       "cool down.",
       " You should also drink lots of water throughout the day to stay hydrated. You may also "
       "want to keep water by your bedside.",
       ids_33, 60, ids_36, 28},
      {"Health: How to sleep comfortably on a hot night. Stop exercising a few hours before "
       "bedtime and drink plenty of water. When you exercise, you raise your body temperature and "
       "retain heat. Exercising several hours before you go to bed will give your body time to "
       "cool down.",
       " The best time for you to exercise is at night. By going to bed at a certain time and "
       "resting, you will either wake up feeling refreshed, or fall asleep feeling heavy.",
       "Health: How to sleep comfortably on a hot night. Stop exercising a few hours before "
       "bedtime and drink plenty of water. When you exercise, you raise your body temperature and "
       "retain heat. Exercising several hours before you go to bed will give your body time to "
       "cool down.",
       " The best time for you to exercise is at night. By going to bed at a certain time and "
       "resting, you will either wake up feeling refreshed, or fall asleep feeling heavy.",
       ids_33, 60, ids_37, 37}}},
    /* nested '[a [your name]' */
    {"hellaswag",
     4078,
     NULL,
     3,
     4,
     {263, 232, 133, 130},
     {{"Computers and Electronics: How to avoid being annoying on instant messages. Do you really "
       "need to keep answering back? If you can't contribute to a more in depth conversation, "
       "respond to the original' verbal' gambit and stop. The button flashes. The screen pops up.",
       " Do not re-enter this being friend process without thoroughly sniffing through each item "
       "you own. If, however, your friends do not seem to want you to try to make more "
       "conversation and/or does this turn you off, snap back by putting right beside your current "
       "name.",
       "Computers and Electronics: How to avoid being annoying on instant messages. Do you really "
       "need to keep answering back? If you can't contribute to a more in depth conversation, "
       "respond to the original' verbal' gambit and stop. The button flashes. The screen pops up.",
       " Do not re-enter this being friend process without thoroughly sniffing through each item "
       "you own. If, however, your friends do not seem to want you to try to make more "
       "conversation and/or does this turn you off, snap back by putting right beside your current "
       "name.",
       ids_38, 64, ids_39, 56},
      {"Computers and Electronics: How to avoid being annoying on instant messages. Do you really "
       "need to keep answering back? If you can't contribute to a more in depth conversation, "
       "respond to the original' verbal' gambit and stop. The button flashes. The screen pops up.",
       " You may then see your question \" completely request confirmation that your item is "
       "available within 24 hours \". You can select deactivate to completely delete all of your "
       "attempts to contact the site or company with address updates.",
       "Computers and Electronics: How to avoid being annoying on instant messages. Do you really "
       "need to keep answering back? If you can't contribute to a more in depth conversation, "
       "respond to the original' verbal' gambit and stop. The button flashes. The screen pops up.",
       " You may then see your question \" completely request confirmation that your item is "
       "available within 24 hours \". You can select deactivate to completely delete all of your "
       "attempts to contact the site or company with address updates.",
       ids_38, 64, ids_40, 43},
      {"Computers and Electronics: How to avoid being annoying on instant messages. Do you really "
       "need to keep answering back? If you can't contribute to a more in depth conversation, "
       "respond to the original' verbal' gambit and stop. The button flashes. The screen pops up.",
       " Click on the' put your phone away! - sorry, but will you please put it away? -). You'll "
       "see a message pop up asking you what's wrong.",
       "Computers and Electronics: How to avoid being annoying on instant messages. Do you really "
       "need to keep answering back? If you can't contribute to a more in depth conversation, "
       "respond to the original' verbal' gambit and stop. The button flashes. The screen pops up.",
       " Click on the' put your phone away! - sorry, but will you please put it away? -). You'll "
       "see a message pop up asking you what's wrong.",
       ids_38, 64, ids_41, 37},
      {"Computers and Electronics: How to avoid being annoying on instant messages. Do you really "
       "need to keep answering back? If you can't contribute to a more in depth conversation, "
       "respond to the original' verbal' gambit and stop. The button flashes. The screen pops up.",
       " Your friend has just said how much they enjoyed the movie last night. You too enjoyed the "
       "movie, but it isn't necessary to say it.",
       "Computers and Electronics: How to avoid being annoying on instant messages. Do you really "
       "need to keep answering back? If you can't contribute to a more in depth conversation, "
       "respond to the original' verbal' gambit and stop. The button flashes. The screen pops up.",
       " Your friend has just said how much they enjoyed the movie last night. You too enjoyed the "
       "movie, but it isn't necessary to say it.",
       ids_38, 64, ids_42, 30}}},
    /* unclosed '[ coli' */
    {"hellaswag",
     5079,
     NULL,
     1,
     4,
     {221, 197, 267, 142},
     {{"Computers and Electronics: How to eat defensively (hiv positive individuals ). If "
       "possible, prepare small quantities of food and consume immediately. It it not wise to keep "
       "prepared foods for long periods of time as this gives bacteria the opportunity and time to "
       "multiply.. Eat properly cooked foods.",
       " Avoiding using preservatives, margarine, butter, salt and other processed foods can kill "
       "the bacteria responsible for the infestation and lead to an increased incidence of the "
       "virus.. Avoid grains and other starchy foods.",
       "Computers and Electronics: How to eat defensively (hiv positive individuals ). If "
       "possible, prepare small quantities of food and consume immediately. It it not wise to keep "
       "prepared foods for long periods of time as this gives bacteria the opportunity and time to "
       "multiply.. Eat properly cooked foods.",
       " Avoiding using preservatives, margarine, butter, salt and other processed foods can kill "
       "the bacteria responsible for the infestation and lead to an increased incidence of the "
       "virus.. Avoid grains and other starchy foods.",
       ids_43, 62, ids_44, 47},
      {"Computers and Electronics: How to eat defensively (hiv positive individuals ). If "
       "possible, prepare small quantities of food and consume immediately. It it not wise to keep "
       "prepared foods for long periods of time as this gives bacteria the opportunity and time to "
       "multiply.. Eat properly cooked foods.",
       " Foods should not be partly cooked or raw. It is safer to eat foods that are cooked fully, "
       "as exposure to high temperatures for longer periods will kill off any viable bacteria "
       "present in the foods.",
       "Computers and Electronics: How to eat defensively (hiv positive individuals ). If "
       "possible, prepare small quantities of food and consume immediately. It it not wise to keep "
       "prepared foods for long periods of time as this gives bacteria the opportunity and time to "
       "multiply.. Eat properly cooked foods.",
       " Foods should not be partly cooked or raw. It is safer to eat foods that are cooked fully, "
       "as exposure to high temperatures for longer periods will kill off any viable bacteria "
       "present in the foods.",
       ids_43, 62, ids_45, 40},
      {"Computers and Electronics: How to eat defensively (hiv positive individuals ). If "
       "possible, prepare small quantities of food and consume immediately. It it not wise to keep "
       "prepared foods for long periods of time as this gives bacteria the opportunity and time to "
       "multiply.. Eat properly cooked foods.",
       " If you stay out in unprotected, bacteria will race to the surface. Therefore, it is "
       "important to eat from clean pans and bowls and use the proper attire for cooking as soon "
       "as possible, it is a good idea to focus on maintaining some kind of simple survival "
       "mechanism.",
       "Computers and Electronics: How to eat defensively (hiv positive individuals ). If "
       "possible, prepare small quantities of food and consume immediately. It it not wise to keep "
       "prepared foods for long periods of time as this gives bacteria the opportunity and time to "
       "multiply.. Eat properly cooked foods.",
       " If you stay out in unprotected, bacteria will race to the surface. Therefore, it is "
       "important to eat from clean pans and bowls and use the proper attire for cooking as soon "
       "as possible, it is a good idea to focus on maintaining some kind of simple survival "
       "mechanism.",
       ids_43, 62, ids_46, 58},
      {"Computers and Electronics: How to eat defensively (hiv positive individuals ). If "
       "possible, prepare small quantities of food and consume immediately. It it not wise to keep "
       "prepared foods for long periods of time as this gives bacteria the opportunity and time to "
       "multiply.. Eat properly cooked foods.",
       " The bacteria then spreads to the cells, the body and even to the tissues. [ coli coli is "
       "a type of bacteria that follows haemophilus bacteria.",
       "Computers and Electronics: How to eat defensively (hiv positive individuals ). If "
       "possible, prepare small quantities of food and consume immediately. It it not wise to keep "
       "prepared foods for long periods of time as this gives bacteria the opportunity and time to "
       "multiply.. Eat properly cooked foods.",
       " The bacteria then spreads to the cells, the body and even to the tissues. [ coli coli is "
       "a type of bacteria that follows haemophilus bacteria.",
       ids_43, 62, ids_47, 37}}},
    /* brackets in the context */
    {"hellaswag",
     5592,
     NULL,
     3,
     4,
     {116, 142, 191, 104},
     {{"Personal Care and Style: How to style straight hair. Opt for a pixie cut. A can provide "
       "short straight hair with a lot of volume and movement. To achieve a voluminous pixie, keep "
       "the sides cropped, the top long, and add lots of layers throughout your short locks.",
       " You can style your hair or model it. Make sure your hair isn't too long or too short and "
       "that you fill in any lumps.",
       "Personal Care and Style: How to style straight hair. Opt for a pixie cut. A can provide "
       "short straight hair with a lot of volume and movement. To achieve a voluminous pixie, keep "
       "the sides cropped, the top long, and add lots of layers throughout your short locks.",
       " You can style your hair or model it. Make sure your hair isn't too long or too short and "
       "that you fill in any lumps.",
       ids_48, 64, ids_49, 30},
      {"Personal Care and Style: How to style straight hair. Opt for a pixie cut. A can provide "
       "short straight hair with a lot of volume and movement. To achieve a voluminous pixie, keep "
       "the sides cropped, the top long, and add lots of layers throughout your short locks.",
       " Make sure your short locks fall evenly throughout your hair to provide approximately a "
       "dozen layers.. Keep extensions or pomade for wavy hair.",
       "Personal Care and Style: How to style straight hair. Opt for a pixie cut. A can provide "
       "short straight hair with a lot of volume and movement. To achieve a voluminous pixie, keep "
       "the sides cropped, the top long, and add lots of layers throughout your short locks.",
       " Make sure your short locks fall evenly throughout your hair to provide approximately a "
       "dozen layers.. Keep extensions or pomade for wavy hair.",
       ids_48, 64, ids_50, 28},
      {"Personal Care and Style: How to style straight hair. Opt for a pixie cut. A can provide "
       "short straight hair with a lot of volume and movement. To achieve a voluminous pixie, keep "
       "the sides cropped, the top long, and add lots of layers throughout your short locks.",
       " Pixie cuts are often pretty long, often 50 minutes or more, sometimes adding volume to "
       "the side lengths. You may also want to make your hair look thicker in the front and longer "
       "on the sides.",
       "Personal Care and Style: How to style straight hair. Opt for a pixie cut. A can provide "
       "short straight hair with a lot of volume and movement. To achieve a voluminous pixie, keep "
       "the sides cropped, the top long, and add lots of layers throughout your short locks.",
       " Pixie cuts are often pretty long, often 50 minutes or more, sometimes adding volume to "
       "the side lengths. You may also want to make your hair look thicker in the front and longer "
       "on the sides.",
       ids_48, 64, ids_51, 45},
      {"Personal Care and Style: How to style straight hair. Opt for a pixie cut. A can provide "
       "short straight hair with a lot of volume and movement. To achieve a voluminous pixie, keep "
       "the sides cropped, the top long, and add lots of layers throughout your short locks.",
       " The pixie is a versatile haircut. You can wear it slightly tousled, slicked backed, or "
       "with edgy spikes.",
       "Personal Care and Style: How to style straight hair. Opt for a pixie cut. A can provide "
       "short straight hair with a lot of volume and movement. To achieve a voluminous pixie, keep "
       "the sides cropped, the top long, and add lots of layers throughout your short locks.",
       " The pixie is a versatile haircut. You can wear it slightly tousled, slicked backed, or "
       "with edgy spikes.",
       ids_48, 64, ids_52, 31}}},
    /* unclosed '[[ (18.' */
    {"hellaswag",
     8393,
     NULL,
     2,
     4,
     {139, 154, 222, 147},
     {{"Family Life: How to use movies to help kids build character. Pick movies by age group. "
       "While some younger kids are more mature, generally, you don't want a story line that will "
       "go right over their head. Similarly, you don't want to lose older kids by showing them "
       "movies that are too simplistic.",
       " Often, the best movie lines are set in the last century. While you may have super teens, "
       "you can find lots of great movies for kids online.",
       "Family Life: How to use movies to help kids build character. Pick movies by age group. "
       "While some younger kids are more mature, generally, you don't want a story line that will "
       "go right over their head. Similarly, you don't want to lose older kids by showing them "
       "movies that are too simplistic.",
       " Often, the best movie lines are set in the last century. While you may have super teens, "
       "you can find lots of great movies for kids online.",
       ids_53, 67, ids_54, 31},
      {"Family Life: How to use movies to help kids build character. Pick movies by age group. "
       "While some younger kids are more mature, generally, you don't want a story line that will "
       "go right over their head. Similarly, you don't want to lose older kids by showing them "
       "movies that are too simplistic.",
       " If possible, choose movies by kids you love, not kids they already like. For instance, in "
       "the movie audrey hepburn 2 2000, the tables at breakfast [[ (18.",
       "Family Life: How to use movies to help kids build character. Pick movies by age group. "
       "While some younger kids are more mature, generally, you don't want a story line that will "
       "go right over their head. Similarly, you don't want to lose older kids by showing them "
       "movies that are too simplistic.",
       " If possible, choose movies by kids you love, not kids they already like. For instance, in "
       "the movie audrey hepburn 2 2000, the tables at breakfast [[ (18.",
       ids_53, 67, ids_55, 44},
      {"Family Life: How to use movies to help kids build character. Pick movies by age group. "
       "While some younger kids are more mature, generally, you don't want a story line that will "
       "go right over their head. Similarly, you don't want to lose older kids by showing them "
       "movies that are too simplistic.",
       " Try to pick something that works for the age the kid is at. For kids 2 to 7 years old, "
       "make sure the story is fairly simple, and that plot supports the idea you're trying to get "
       "across, as it needs to be glaringly obvious.",
       "Family Life: How to use movies to help kids build character. Pick movies by age group. "
       "While some younger kids are more mature, generally, you don't want a story line that will "
       "go right over their head. Similarly, you don't want to lose older kids by showing them "
       "movies that are too simplistic.",
       " Try to pick something that works for the age the kid is at. For kids 2 to 7 years old, "
       "make sure the story is fairly simple, and that plot supports the idea you're trying to get "
       "across, as it needs to be glaringly obvious.",
       ids_53, 67, ids_56, 56},
      {"Family Life: How to use movies to help kids build character. Pick movies by age group. "
       "While some younger kids are more mature, generally, you don't want a story line that will "
       "go right over their head. Similarly, you don't want to lose older kids by showing them "
       "movies that are too simplistic.",
       " Most of the time, kids get what they want early on. Take your age group into "
       "consideration as you come up with a few choices for your movie series.",
       "Family Life: How to use movies to help kids build character. Pick movies by age group. "
       "While some younger kids are more mature, generally, you don't want a story line that will "
       "go right over their head. Similarly, you don't want to lose older kids by showing them "
       "movies that are too simplistic.",
       " Most of the time, kids get what they want early on. Take your age group into "
       "consideration as you come up with a few choices for your movie series.",
       ids_53, 67, ids_57, 32}}},
    /* canonical WikiHow form: [header]/[title]/[step], ctx_b capitalised, 3- and 4-space runs, a
       bracket across a newline, an ending that preprocesses to '' */
    {"hellaswag",
     -1,
     "{\"ind\": 24, \"activity_label\": \"Personal Care and Style\", \"ctx_a\": \"[header] How to "
     "dye your hair with kool aid [title] Choose a color. [step] Unsweetened kool aid works "
     "best.\", \"ctx_b\": \"yOU CAN mix two packets\", \"ctx\": \"\", \"endings\": [\"[substeps] "
     "For a lighter shade, use one packet.  [title] Rinse your hair.\", \"to get a  darker   "
     "color. [step] Boil the water [title] Dip.\", \"[header]\", \" in a bowl [of\\nwater] and "
     "stir. \"], \"label\": \"1\"}",
     1,
     4,
     {56, 44, 0, 30},
     {{"Personal Care and Style: How to dye your hair with kool aid. Choose a color. Unsweetened "
       "kool aid works best. You can mix two packets",
       "  For a lighter shade, use one packet. . Rinse your hair.",
       "Personal Care and Style: How to dye your hair with kool aid. Choose a color. Unsweetened "
       "kool aid works best. You can mix two packets",
       "  For a lighter shade, use one packet. . Rinse your hair.", ids_58, 36, ids_59, 17},
      {"Personal Care and Style: How to dye your hair with kool aid. Choose a color. Unsweetened "
       "kool aid works best. You can mix two packets",
       " to get a darker  color. Boil the water. Dip.",
       "Personal Care and Style: How to dye your hair with kool aid. Choose a color. Unsweetened "
       "kool aid works best. You can mix two packets",
       " to get a darker  color. Boil the water. Dip.", ids_58, 36, ids_60, 16},
      {"Personal Care and Style: How to dye your hair with kool aid. Choose a color. Unsweetened "
       "kool aid works best. You can mix two packets",
       " ",
       "Personal Care and Style: How to dye your hair with kool aid. Choose a color. Unsweetened "
       "kool aid works best. You can mix two packets",
       " ", ids_58, 36, ids_61, 1},
      {"Personal Care and Style: How to dye your hair with kool aid. Choose a color. Unsweetened "
       "kool aid works best. You can mix two packets",
       " in a bowl [of\nwater] and stir.",
       "Personal Care and Style: How to dye your hair with kool aid. Choose a color. Unsweetened "
       "kool aid works best. You can mix two packets",
       " in a bowl [of\nwater] and stir.", ids_58, 36, ids_62, 11}}},
    /* plain */
    {"winogrande",
     0,
     NULL,
     1,
     2,
     {51, 51},
     {{"Sarah was a much better surgeon than Maria so Sarah", " always got the easier cases.",
       "Sarah was a much better surgeon than Maria so Sarah", " always got the easier cases.",
       ids_63, 12, ids_64, 6},
      {"Sarah was a much better surgeon than Maria so Maria", " always got the easier cases.",
       "Sarah was a much better surgeon than Maria so Maria", " always got the easier cases.",
       ids_65, 12, ids_64, 6}}},
    /* double space before the blank */
    {"winogrande",
     76,
     NULL,
     1,
     2,
     {60, 64},
     {{"Mary was helping Patricia's daughter put on makeup but  Mary",
       " watches a lot of makeup tutorials.",
       "Mary was helping Patricia's daughter put on makeup but  Mary",
       " watches a lot of makeup tutorials.", ids_66, 16, ids_67, 8},
      {"Mary was helping Patricia's daughter put on makeup but  Patricia",
       " watches a lot of makeup tutorials.",
       "Mary was helping Patricia's daughter put on makeup but  Patricia",
       " watches a lot of makeup tutorials.", ids_68, 18, ids_67, 8}}},
    /* blank followed by ' .' */
    {"winogrande",
     180,
     NULL,
     0,
     2,
     {141, 139},
     {{"I started playing drums young.  Sometimes I played in the garage and sometimes my room, "
       "but my parents preferred knowing I was in the  garage",
       " .",
       "I started playing drums young.  Sometimes I played in the garage and sometimes my room, "
       "but my parents preferred knowing I was in the  garage",
       " .", ids_69, 30, ids_70, 1},
      {"I started playing drums young.  Sometimes I played in the garage and sometimes my room, "
       "but my parents preferred knowing I was in the  room",
       " .",
       "I started playing drums young.  Sometimes I played in the garage and sometimes my room, "
       "but my parents preferred knowing I was in the  room",
       " .", ids_71, 30, ids_70, 1}}},
    /* non-ASCII apostrophe */
    {"winogrande",
     749,
     NULL,
     1,
     2,
     {76, 79},
     {{"Ian was supposed to be babysitting for Dennis but didn’t show up because Ian",
       " was forgotten.",
       "Ian was supposed to be babysitting for Dennis but didn’t show up because Ian",
       " was forgotten.", ids_72, 19, ids_73, 3},
      {"Ian was supposed to be babysitting for Dennis but didn’t show up because Dennis",
       " was forgotten.",
       "Ian was supposed to be babysitting for Dennis but didn’t show up because Dennis",
       " was forgotten.", ids_74, 19, ids_73, 3}}},
    /* blank followed by "'s" */
    {"winogrande",
     -1,
     "{\"sentence\": \"Ann asked Mary what time the library closes, because _'s watch had "
     "stopped.\", \"option1\": \"Ann\", \"option2\": \"Mary\", \"answer\": \"2\"}",
     1,
     2,
     {56, 57},
     {{"Ann asked Mary what time the library closes, because Ann", " 's watch had stopped.",
       "Ann asked Mary what time the library closes, because Ann", " 's watch had stopped.", ids_75,
       13, ids_76, 6},
      {"Ann asked Mary what time the library closes, because Mary", " 's watch had stopped.",
       "Ann asked Mary what time the library closes, because Mary", " 's watch had stopped.",
       ids_77, 13, ids_76, 6}}},
    /* blank followed by '.' and U+3000 (stripped) */
    {"winogrande",
     -1,
     "{\"sentence\": \"The trophy didn't fit in the suitcase, so we had to leave the _.\xe3\x80\x80"
     "\", \"option1\": \"trophy\", \"option2\": \"suitcase\", \"answer\": \"1\"}",
     0,
     2,
     {68, 70},
     {{"The trophy didn't fit in the suitcase, so we had to leave the trophy", " .",
       "The trophy didn't fit in the suitcase, so we had to leave the trophy", " .", ids_78, 21,
       ids_70, 1},
      {"The trophy didn't fit in the suitcase, so we had to leave the suitcase", " .",
       "The trophy didn't fit in the suitcase, so we had to leave the suitcase", " .", ids_79, 21,
       ids_70, 1}}},
    /* plain */
    {"arc_easy",
     0,
     NULL,
     0,
     4,
     {59, 54, 50, 43},
     {{"Question: Which statement best explains why photosynthesis is the foundation of most food "
       "webs?\nAnswer:",
       " Sunlight is the source of energy for nearly all ecosystems.",
       "Question: Which statement best explains why photosynthesis is the foundation of most food "
       "webs?\nAnswer:",
       " Sunlight is the source of energy for nearly all ecosystems.", ids_80, 24, ids_81, 13},
      {"Question: Which statement best explains why photosynthesis is the foundation of most food "
       "webs?\nAnswer:",
       " Most ecosystems are found on land instead of in water.",
       "Question: Which statement best explains why photosynthesis is the foundation of most food "
       "webs?\nAnswer:",
       " Most ecosystems are found on land instead of in water.", ids_80, 24, ids_82, 12},
      {"Question: Which statement best explains why photosynthesis is the foundation of most food "
       "webs?\nAnswer:",
       " Carbon dioxide is more available than other gases.",
       "Question: Which statement best explains why photosynthesis is the foundation of most food "
       "webs?\nAnswer:",
       " Carbon dioxide is more available than other gases.", ids_80, 24, ids_83, 13},
      {"Question: Which statement best explains why photosynthesis is the foundation of most food "
       "webs?\nAnswer:",
       " The producers in all ecosystems are plants.",
       "Question: Which statement best explains why photosynthesis is the foundation of most food "
       "webs?\nAnswer:",
       " The producers in all ecosystems are plants.", ids_80, 24, ids_84, 9}}},
    /* degree signs */
    {"arc_easy",
     22,
     NULL,
     3,
     4,
     {43, 45, 43, 44},
     {{"Question: Which is a statement about climate?\nAnswer:",
       " The average temperature yesterday was 15°C.",
       "Question: Which is a statement about climate?\nAnswer:",
       " The average temperature yesterday was 15°C.", ids_85, 14, ids_86, 11},
      {"Question: Which is a statement about climate?\nAnswer:",
       " The temperature range today was 10°C to 20°C.",
       "Question: Which is a statement about climate?\nAnswer:",
       " The temperature range today was 10°C to 20°C.", ids_85, 14, ids_87, 17},
      {"Question: Which is a statement about climate?\nAnswer:",
       " The high temperature tomorrow will be 14°C.",
       "Question: Which is a statement about climate?\nAnswer:",
       " The high temperature tomorrow will be 14°C.", ids_85, 14, ids_88, 12},
      {"Question: Which is a statement about climate?\nAnswer:",
       " The average high temperature in May is 20°C.",
       "Question: Which is a statement about climate?\nAnswer:",
       " The average high temperature in May is 20°C.", ids_85, 14, ids_89, 13}}},
    /* plain */
    {"arc_challenge",
     0,
     NULL,
     2,
     4,
     {32, 35, 35, 39},
     {{"Question: An astronomer observes that a planet rotates faster after a meteorite impact. "
       "Which is the most likely effect of this increase in rotation?\nAnswer:",
       " Planetary density will decrease.",
       "Question: An astronomer observes that a planet rotates faster after a meteorite impact. "
       "Which is the most likely effect of this increase in rotation?\nAnswer:",
       " Planetary density will decrease.", ids_90, 38, ids_91, 6},
      {"Question: An astronomer observes that a planet rotates faster after a meteorite impact. "
       "Which is the most likely effect of this increase in rotation?\nAnswer:",
       " Planetary years will become longer.",
       "Question: An astronomer observes that a planet rotates faster after a meteorite impact. "
       "Which is the most likely effect of this increase in rotation?\nAnswer:",
       " Planetary years will become longer.", ids_90, 38, ids_92, 7},
      {"Question: An astronomer observes that a planet rotates faster after a meteorite impact. "
       "Which is the most likely effect of this increase in rotation?\nAnswer:",
       " Planetary days will become shorter.",
       "Question: An astronomer observes that a planet rotates faster after a meteorite impact. "
       "Which is the most likely effect of this increase in rotation?\nAnswer:",
       " Planetary days will become shorter.", ids_90, 38, ids_93, 7},
      {"Question: An astronomer observes that a planet rotates faster after a meteorite impact. "
       "Which is the most likely effect of this increase in rotation?\nAnswer:",
       " Planetary gravity will become stronger.",
       "Question: An astronomer observes that a planet rotates faster after a meteorite impact. "
       "Which is the most likely effect of this increase in rotation?\nAnswer:",
       " Planetary gravity will become stronger.", ids_90, 38, ids_94, 7}}},
    /* numeric labels, three choices */
    {"arc_challenge",
     -1,
     "{\"id\": \"Mercury_7\", \"question\": \"Which of these is a mammal?\", \"choices\": "
     "{\"text\": [\"shark\", \"whale\", \"trout\"], \"label\": [\"1\", \"2\", \"3\"]}, "
     "\"answerKey\": \"2\"}",
     1,
     3,
     {5, 5, 5},
     {{"Question: Which of these is a mammal?\nAnswer:", " shark",
       "Question: Which of these is a mammal?\nAnswer:", " shark", ids_95, 15, ids_96, 2},
      {"Question: Which of these is a mammal?\nAnswer:", " whale",
       "Question: Which of these is a mammal?\nAnswer:", " whale", ids_95, 15, ids_97, 2},
      {"Question: Which of these is a mammal?\nAnswer:", " trout",
       "Question: Which of these is a mammal?\nAnswer:", " trout", ids_95, 15, ids_98, 2}}},
};
#define N_PINNED ((int)(sizeof PINNED / sizeof PINNED[0]))

/* The raw JSON line of a pinned document (malloc'd), NULL when its file is absent. */
static char *pinned_json(const PinnedDoc *p) {
    if (p->line < 0) return strdup(p->json);
    return read_doc_line(p->task, p->line);
}

/* Checks request r (from eval_task_load) against the pinned one. */
static void check_request(const PinnedDoc *p, int c, const EvalRequest *r) {
    const PinnedRequest *q = &p->req[c];
    CHECK_MSG(strcmp(r->context, q->enc_context) == 0, "%s:%lld choice %d: context \"%s\"", p->task,
              (long long)p->line, c, r->context);
    CHECK_MSG(strcmp(r->continuation, q->enc_continuation) == 0,
              "%s:%lld choice %d: continuation \"%s\"", p->task, (long long)p->line, c,
              r->continuation);
    int ok = r->n_tokens == q->n_ctx + q->n_cont && r->n_cont == q->n_cont &&
             memcmp(r->tokens, q->ctx_ids, (size_t)q->n_ctx * sizeof(int32_t)) == 0 &&
             (q->n_cont == 0 ||
              memcmp(r->tokens + q->n_ctx, q->cont_ids, (size_t)q->n_cont * sizeof(int32_t)) == 0);
    CHECK_MSG(ok, "%s:%lld choice %d: tokens differ (%d tokens, n_cont %d; want %d + %d)", p->task,
              (long long)p->line, c, r->n_tokens, r->n_cont, q->n_ctx, q->n_cont);
}

/* eval_build_strings and eval_encode_request on every pinned document. */
static void test_pinned_requests(void) {
    Tokenizer *tok = load_mistral();
    if (!tok) return;
    for (int i = 0; i < N_PINNED; i++) {
        const PinnedDoc *p = &PINNED[i];
        char *line = pinned_json(p);
        if (!line) continue;
        json_error_t jerr;
        json_t *doc = json_loads(line, 0, &jerr);
        CHECK_MSG(doc, "%s", jerr.text);
        free(line);
        if (!doc) continue;
        for (int c = 0; c < p->n_choices; c++) {
            char *ctx = NULL, *cont = NULL;
            int rc = eval_build_strings(kind_of(p->task), doc, c, &ctx, &cont, err, sizeof err);
            CHECK_MSG(rc == 0, "%s", err);
            if (rc) continue;
            CHECK_MSG(strcmp(ctx, p->req[c].context) == 0, "%s:%lld choice %d: \"%s\"", p->task,
                      (long long)p->line, c, ctx);
            CHECK_MSG(strcmp(cont, p->req[c].continuation) == 0, "%s:%lld choice %d: \"%s\"",
                      p->task, (long long)p->line, c, cont);
            EvalRequest r = {.context = ctx, .continuation = cont};
            rc = eval_encode_request(tok, 1, &r.context, &r.continuation, &r.tokens, &r.n_tokens,
                                     &r.n_cont, err, sizeof err);
            CHECK_MSG(rc == 0, "%s", err);
            if (rc == 0) check_request(p, c, &r);
            /* without BOS the same ids follow, except that an empty context keeps it */
            free(r.tokens);
            char *ctx2 = strdup(p->req[c].context), *cont2 = strdup(p->req[c].continuation);
            int32_t *ids = NULL;
            int n, n_cont;
            rc = eval_encode_request(tok, 0, &ctx2, &cont2, &ids, &n, &n_cont, err, sizeof err);
            int keep = p->req[c].context[0] == '\0';
            CHECK_MSG(rc == 0 && n == r.n_tokens - 1 + keep && n_cont == r.n_cont &&
                          memcmp(ids, p->req[c].ctx_ids + 1 - keep,
                                 (size_t)(p->req[c].n_ctx - 1 + keep) * sizeof(int32_t)) == 0,
                      "%s:%lld choice %d without BOS", p->task, (long long)p->line, c);
            free(ids);
            free(ctx2);
            free(cont2);
            free(r.context);
            free(r.continuation);
        }
        char *ctx = NULL, *cont = NULL;
        CHECK(eval_build_strings(kind_of(p->task), doc, p->n_choices, &ctx, &cont, err,
                                 sizeof err) == -1 &&
              strstr(err, "out of range"));
        json_decref(doc);
    }
    tok_free(tok);
}

/* Each pinned document alone in a task file, through eval_task_load: gold, choice lengths
 * (acc_norm), requests and tokens. */
static void test_pinned_load(void) {
    Tokenizer *tok = load_mistral();
    if (!tok) return;
    char *dir = make_dir();
    for (int i = 0; i < N_PINNED; i++) {
        const PinnedDoc *p = &PINNED[i];
        char *line = pinned_json(p), name[64];
        if (!line) continue;
        snprintf(name, sizeof name, "%s.jsonl", p->task);
        write_file(dir, name, line);
        free(line);
        EvalTask t;
        int rc = eval_task_load(&t, p->task, dir, 0, tok, 1, err, sizeof err);
        CHECK_MSG(rc == 0, "%s", err);
        if (rc) continue;
        CHECK(t.kind == kind_of(p->task) && t.n_docs_in_file == 1 && t.n_docs == 1);
        CHECK(t.n_requests == p->n_choices && t.docs[0].n_choices == p->n_choices);
        CHECK_MSG(t.docs[0].gold == p->gold, "%s:%lld gold %d", p->task, (long long)p->line,
                  t.docs[0].gold);
        CHECK(t.docs[0].index == 0 && t.docs[0].first_request == 0);
        for (int c = 0; c < p->n_choices && c < t.n_requests; c++) {
            CHECK_MSG(t.docs[0].choice_chars[c] == p->choice_chars[c],
                      "%s:%lld choice %d: %lld chars", p->task, (long long)p->line, c,
                      (long long)t.docs[0].choice_chars[c]);
            CHECK(t.requests[c].doc == 0 && t.requests[c].choice == c);
            check_request(p, c, &t.requests[c]);
        }
        eval_task_free(&t);
    }
    rm_dir(dir);
    tok_free(tok);
}

/* The real task files: document counts, hashes, --limit, and the first documents' requests
 * equal to the pinned ones. */
static void test_task_files(void) {
    char path[1024];
    if (!shared_file("eval", path, sizeof path)) return;
    Tokenizer *tok = load_mistral();
    if (!tok) return;
    static const struct {
        const char *name;
        int64_t docs;
        const char *sha256;
    } files[] = {
        {"lambada_openai", 5153,
         "9acdcb12e8c2ef4eb3d0958b547a8c7076488df2d6ff460377881ab3841f3d97"},
        {"piqa", 1838, "61533005e22f175534909b1ec8eacb6da03c233933558d1bafb15787453b1f55"},
        {"hellaswag", 10042, "2acdabc54371c616b58df089db7d04f2a2f83aeb6439ac2e7dbb34241ca662c2"},
        {"winogrande", 1267, "75529b1c24ab7c85919ffb5cb784d431a4bc7d2f3da13e23d3a406bec2431c76"},
        {"arc_easy", 2376, "f24033eac9a09e6cc4e0de236e72e3795492c2d0695cdd267017a919cd61ee67"},
        {"arc_challenge", 1172, "3b853db4be668bd2982414bf6f9f3936ab839c1276762ca7d2646caa7948e48d"},
    };
    for (int f = 0; f < 6; f++) {
        EvalTask t;
        int rc = eval_task_load(&t, files[f].name, path, 3, tok, 1, err, sizeof err);
        CHECK_MSG(rc == 0, "%s", err);
        if (rc) continue;
        CHECK_MSG(t.n_docs_in_file == files[f].docs, "%s: %lld documents", files[f].name,
                  (long long)t.n_docs_in_file);
        CHECK_MSG(strcmp(t.sha256, files[f].sha256) == 0, "%s: sha256 %s", files[f].name, t.sha256);
        CHECK(t.n_docs == 3 && strcmp(t.name, files[f].name) == 0 && strstr(t.path, files[f].name));
        int64_t want_req = 0;
        for (int d = 0; d < 3; d++) {
            CHECK(t.docs[d].index == d && t.docs[d].first_request == want_req);
            want_req += t.docs[d].n_choices;
        }
        CHECK(t.n_requests == want_req);
        for (int i = 0; i < N_PINNED; i++) {
            const PinnedDoc *p = &PINNED[i];
            if (strcmp(p->task, files[f].name) != 0 || p->line != 0) continue;
            CHECK(t.docs[0].gold == p->gold && t.docs[0].n_choices == p->n_choices);
            for (int c = 0; c < p->n_choices; c++) check_request(p, c, &t.requests[c]);
        }
        eval_task_free(&t);
    }
    /* all of one file (no limit) */
    EvalTask t;
    CHECK_MSG(eval_task_load(&t, "arc_challenge", path, 0, tok, 1, err, sizeof err) == 0, "%s",
              err);
    CHECK(t.n_docs == 1172 && t.n_docs_in_file == 1172 && t.docs[1171].index == 1171);
    CHECK(t.requests[t.n_requests - 1].doc == 1171);
    eval_task_free(&t);
    tok_free(tok);
}

/* ------------------------------------------------------------------------------------ */
/* Errors                                                                               */
/* ------------------------------------------------------------------------------------ */

#define PIQA_OK "{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": \"b\", \"label\": 0}\n"
#define HS_OK                                                                                      \
    "{\"activity_label\": \"A\", \"ctx_a\": \"b\", \"ctx_b\": \"c\", \"endings\": [\"d\", "        \
    "\"e\"], \"label\": \"1\"}\n"
#define WG_OK                                                                                      \
    "{\"sentence\": \"a _ b\", \"option1\": \"x\", \"option2\": \"y\", \"answer\": \"1\"}\n"
#define ARC_OK                                                                                     \
    "{\"question\": \"q\", \"choices\": {\"text\": [\"x\", \"y\"], \"label\": [\"A\", \"B\"]}, "   \
    "\"answerKey\": \"B\"}\n"

/* Every failure names the file, the line and the field. */
static void test_load_errors(void) {
    Tokenizer *tok = load_mistral();
    if (!tok) return;
    char *dir = make_dir();
    static const struct {
        const char *task, *text;
        int line;
        const char *msg;
    } cases[] = {
        {"piqa", PIQA_OK "{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": \"b\"}\n", 2,
         "field \"label\" is missing"},
        {"piqa", "{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": \"b\", \"label\": 3}\n", 1,
         "field \"label\" must be 0 or 1, got 3"},
        {"piqa", "{\"goal\": \"g\", \"sol1\": \"a\", \"sol2\": \"b\", \"label\": \"0\"}\n", 1,
         "field \"label\" must be 0 or 1, got \"0\""},
        {"piqa", "{\"goal\": 5, \"sol1\": \"a\", \"sol2\": \"b\", \"label\": 0}\n", 1,
         "field \"goal\" must be a string, got 5"},
        {"piqa", PIQA_OK PIQA_OK "{\"goal\": \"g\",\n", 3, "not valid JSON: "},
        {"piqa", "[1, 2]\n", 1, "a document must be a JSON object"},
        {"lambada_openai", "{\"txt\": \"a b\"}\n", 1, "field \"text\" is missing"},
        {"hellaswag",
         "{\"activity_label\": \"A\", \"ctx_a\": \"b\", \"ctx_b\": \"c\", \"endings\": [\"d\", "
         "\"e\"], \"label\": \"7\"}\n",
         1, "field \"label\" must be an index into \"endings\" (0 to 1), got \"7\""},
        {"hellaswag",
         "{\"activity_label\": \"A\", \"ctx_a\": \"b\", \"ctx_b\": \"c\", \"endings\": [\"d\", 3], "
         "\"label\": 0}\n",
         1, "field \"endings\" item 1 must be a string, got 3"},
        {"hellaswag",
         "{\"activity_label\": \"A\", \"ctx_a\": \"b\", \"ctx_b\": \"c\", \"endings\": []}\n", 1,
         "field \"endings\" must be a non-empty array of strings, got []"},
        {"hellaswag",
         HS_OK
         "{\"activity_label\": \"A\", \"ctx_a\": \"b\", \"ctx_b\": \"c\", \"endings\": [\"d\"]}\n",
         2, "field \"label\" is missing"},
        {"winogrande",
         "{\"sentence\": \"no blank\", \"option1\": \"x\", \"option2\": \"y\", \"answer\": "
         "\"1\"}\n",
         1, "field \"sentence\" has no blank \"_\""},
        {"winogrande",
         WG_OK
         "{\"sentence\": \"a _\", \"option1\": \"x\", \"option2\": \"y\", \"answer\": \"3\"}\n",
         2, "field \"answer\" must be \"1\" or \"2\", got \"3\""},
        {"winogrande",
         "{\"sentence\": \"a _\", \"option1\": \"x\", \"option2\": \"y\", \"answer\": 1}\n", 1,
         "field \"answer\" must be a string, got 1"},
        {"arc_easy",
         ARC_OK "{\"question\": \"q\", \"choices\": {\"text\": [\"x\", \"y\"], \"label\": [\"A\", "
                "\"B\"]}, \"answerKey\": \"E\"}\n",
         2, "field \"answerKey\" is \"E\", which is not in \"choices.label\" [\"A\",\"B\"]"},
        {"arc_challenge",
         "{\"question\": \"q\", \"choices\": {\"text\": [\"x\"], \"label\": [\"A\", \"B\"]}, "
         "\"answerKey\": \"A\"}\n",
         1, "fields \"choices.text\" and \"choices.label\" differ in length (1 and 2)"},
        {"arc_challenge",
         "{\"question\": \"q\", \"choices\": {\"label\": [\"A\"]}, \"answerKey\": \"A\"}\n", 1,
         "field \"choices.text\" is missing"},
        {"arc_challenge", "{\"question\": \"q\", \"choices\": [1], \"answerKey\": \"A\"}\n", 1,
         "field \"choices\" must be an object"},
        /* blank lines are skipped; line numbers stay physical */
        {"arc_easy", "\n" ARC_OK "  \n{\"question\": 1}\n", 4,
         "field \"question\" must be a string, got 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64], want[2048];
        snprintf(name, sizeof name, "%s.jsonl", cases[i].task);
        write_file(dir, name, cases[i].text);
        EvalTask t;
        int rc = eval_task_load(&t, cases[i].task, dir, 0, tok, 1, err, sizeof err);
        snprintf(want, sizeof want, "%s/%s:%d: %s", dir, name, cases[i].line, cases[i].msg);
        CHECK_MSG(rc == -1 && strncmp(err, want, strlen(want)) == 0,
                  "case %zu: got \"%s\", want \"%s\"", i, rc ? err : "success", want);
        CHECK(t.docs == NULL && t.requests == NULL && t.n_docs == 0);
    }
    /* a missing file, an empty one, an unknown task */
    EvalTask t;
    char want[2048];
    char nowhere[1100];
    snprintf(nowhere, sizeof nowhere, "%s/nowhere", dir);
    snprintf(want, sizeof want, "%s/piqa.jsonl: cannot open task file: No such file", nowhere);
    CHECK_MSG(eval_task_load(&t, "piqa", nowhere, 0, tok, 1, err, sizeof err) == -1 &&
                  strncmp(err, want, strlen(want)) == 0,
              "got \"%s\"", err);
    write_file(dir, "piqa.jsonl", "\n \n");
    snprintf(want, sizeof want, "%s/piqa.jsonl: no documents", dir);
    CHECK_MSG(eval_task_load(&t, "piqa", dir, 0, tok, 1, err, sizeof err) == -1 &&
                  strcmp(err, want) == 0,
              "got \"%s\"", err);
    CHECK(eval_task_load(&t, "piqa2", dir, 0, tok, 1, err, sizeof err) == -1 &&
          strcmp(err, "unknown task \"piqa2\" (known: "
                      "lambada_openai,piqa,hellaswag,winogrande,arc_easy,arc_challenge)") == 0);
    /* blank lines skipped: documents count without them */
    write_file(dir, "piqa.jsonl", "\n" PIQA_OK "\n\n" PIQA_OK);
    CHECK_MSG(eval_task_load(&t, "piqa", dir, 0, tok, 1, err, sizeof err) == 0, "%s", err);
    CHECK(t.n_docs_in_file == 2 && t.n_docs == 2 && t.docs[1].index == 1 && t.requests[3].doc == 1);
    eval_task_free(&t);
    rm_dir(dir);
    tok_free(tok);
}

/* ------------------------------------------------------------------------------------ */
/* Metrics                                                                              */
/* ------------------------------------------------------------------------------------ */

/* A task of n documents with the given per-choice ll, choice lengths and gold (no file). */
static EvalTask fake_task(TaskKind kind, const char *name, int n, int k, const double *ll,
                          const int64_t *chars, const int *gold, const int *greedy) {
    EvalTask t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    snprintf(t.name, sizeof t.name, "%s", name);
    snprintf(t.sha256, sizeof t.sha256, "%064d", 7);
    t.n_docs = n;
    t.n_docs_in_file = n + 10;
    t.docs = calloc((size_t)n, sizeof(EvalDoc));
    t.requests = calloc((size_t)(n * k), sizeof(EvalRequest));
    t.n_requests = n * k;
    for (int d = 0; d < n; d++) {
        t.docs[d].index = d;
        t.docs[d].gold = gold ? gold[d] : 0;
        t.docs[d].n_choices = k;
        t.docs[d].first_request = d * k;
        t.docs[d].choice_chars = malloc((size_t)k * sizeof(int64_t));
        for (int c = 0; c < k; c++) {
            t.docs[d].choice_chars[c] = chars ? chars[d * k + c] : 1;
            t.requests[d * k + c].doc = d;
            t.requests[d * k + c].choice = c;
            t.requests[d * k + c].ll = ll[d * k + c];
            t.requests[d * k + c].is_greedy = greedy ? greedy[d * k + c] : 0;
        }
    }
    return t;
}

static void test_metrics(void) {
    /* multiple choice, gold / ll / chars -> acc, acc_norm:
     *  doc 0: tie in ll and in ll/len -> index 0 both: 1, 1
     *  doc 1: ll prefers 0, ll/len prefers 1 (-2/1 < -3/10): 0, 1
     *  doc 2: 1, 1
     *  doc 3: ll prefers 1; ll/len ties (-3/3 = -1/1) -> index 0: 0, 1
     *  doc 4: ll prefers 0, but choice 0 is empty: ll/len = -inf, so acc_norm picks 1: 1, 0 */
    const double ll[] = {-1, -1, -2, -3, -5, -4, -3, -1, -2, -9};
    const int64_t chars[] = {2, 2, 1, 10, 1, 1, 3, 1, 0, 4};
    const int gold[] = {0, 1, 1, 0, 0};
    EvalTask t = fake_task(TASK_PIQA, "piqa", 5, 2, ll, chars, gold, NULL);
    EvalMetrics m = eval_task_metrics(&t);
    /* acc items 1 0 1 0 1: mean 0.6, sample var 0.3, stderr sqrt(0.3 / 5) */
    CHECK(m.has_acc && m.has_acc_norm && !m.has_ppl && m.n == 5);
    CHECK_CLOSE(m.acc, 0.6, 1e-15);
    CHECK_CLOSE(m.acc_stderr, sqrt(0.3 / 5), 1e-15);
    CHECK_CLOSE(m.acc_norm, 0.8, 1e-15); /* 1 1 1 1 0 */
    CHECK_CLOSE(m.acc_norm_stderr, sqrt(0.2 / 5), 1e-15);
    eval_task_free(&t);

    /* winogrande reports acc only */
    t = fake_task(TASK_WINOGRANDE, "winogrande", 5, 2, ll, chars, gold, NULL);
    m = eval_task_metrics(&t);
    CHECK(m.has_acc && !m.has_acc_norm && !m.has_ppl);
    CHECK_CLOSE(m.acc, 0.6, 1e-15);
    eval_task_free(&t);

    /* LAMBADA: ll -1 -2 -3, greedy 1 0 1: acc 2/3, stderr sqrt(1/3)/sqrt(3) = 1/3;
     * ppl exp(2), stderr exp(2) * 1 / sqrt(3) (sample std of ll = 1) */
    const double lll[] = {-1, -2, -3};
    const int greedy[] = {1, 0, 1};
    t = fake_task(TASK_LAMBADA, "lambada_openai", 3, 1, lll, NULL, NULL, greedy);
    m = eval_task_metrics(&t);
    CHECK(m.has_acc && !m.has_acc_norm && m.has_ppl);
    CHECK_CLOSE(m.acc, 2.0 / 3, 1e-15);
    CHECK_CLOSE(m.acc_stderr, 1.0 / 3, 1e-15);
    CHECK_CLOSE(m.ppl, 7.38905609893065, 1e-14);
    CHECK_CLOSE(m.ppl_stderr, 4.266073527774857, 1e-14); /* e^2 / sqrt(3) */
    eval_task_free(&t);

    /* n = 1: stderr undefined (NaN; null in results.json) */
    t = fake_task(TASK_LAMBADA, "lambada_openai", 1, 1, lll, NULL, NULL, greedy);
    m = eval_task_metrics(&t);
    CHECK(m.acc == 1 && isnan(m.acc_stderr) && isnan(m.ppl_stderr));
    CHECK_CLOSE(m.ppl, exp(1.0), 1e-15);
    eval_task_free(&t);
}

static void test_results_json(void) {
    const double ll[] = {-1, -2, -3, -1};
    const int gold[] = {0, 1};
    const int greedy[] = {1, 0, 1, 1};
    EvalTask tasks[2];
    tasks[0] = fake_task(TASK_LAMBADA, "lambada_openai", 1, 1, ll, NULL, NULL, greedy);
    tasks[1] = fake_task(TASK_ARC_EASY, "arc_easy", 2, 2, ll, NULL, gold, NULL);
    EvalMetrics m[2] = {eval_task_metrics(&tasks[0]), eval_task_metrics(&tasks[1])};
    json_t *cfg = json_pack("{si}", "d_model", 64);
    json_t *j = eval_results_json(tasks, m, 2, "runs/x/ckpt", cfg, 1);
    json_decref(cfg); /* the results hold their own copy */
    json_t *lam = json_object_get(json_object_get(j, "results"), "lambada_openai");
    json_t *arc = json_object_get(json_object_get(j, "results"), "arc_easy");
    CHECK(json_real_value(json_object_get(lam, "acc")) == 1.0);
    CHECK(json_is_null(json_object_get(lam, "acc_stderr")));
    CHECK_CLOSE(json_real_value(json_object_get(lam, "perplexity")), exp(1.0), 1e-15);
    CHECK(json_is_null(json_object_get(lam, "perplexity_stderr")));
    CHECK(!json_object_get(lam, "acc_norm"));
    CHECK(strcmp(json_string_value(json_object_get(lam, "alias")), "lambada_openai") == 0);
    CHECK(json_real_value(json_object_get(arc, "acc")) == 1.0 &&
          json_is_real(json_object_get(arc, "acc_stderr")));
    CHECK(json_is_real(json_object_get(arc, "acc_norm")) && !json_object_get(arc, "perplexity"));
    json_t *ns = json_object_get(json_object_get(j, "n-samples"), "arc_easy");
    CHECK(json_integer_value(json_object_get(ns, "original")) == 12 &&
          json_integer_value(json_object_get(ns, "effective")) == 2);
    CHECK(json_integer_value(json_object_get(
              json_object_get(json_object_get(j, "config"), "model_config"), "d_model")) == 64);
    CHECK(json_is_true(json_object_get(json_object_get(j, "config"), "bos")));
    CHECK(strcmp(json_string_value(json_object_get(json_object_get(j, "config"), "checkpoint")),
                 "runs/x/ckpt") == 0);
    CHECK(strlen(json_string_value(
              json_object_get(json_object_get(j, "task_hashes"), "arc_easy"))) == 64);
    CHECK(json_is_false(json_object_get(
        json_object_get(json_object_get(j, "higher_is_better"), "lambada_openai"), "perplexity")));
    CHECK(json_real_value(json_object_get(json_object_get(j, "versions"), "arc_easy")) == 1.0);
    CHECK(!json_object_get(json_object_get(j, "results"), "piqa")); /* not run */
    CHECK(json_integer_value(json_object_get(json_object_get(j, "n-shot"), "arc_easy")) == 0);
    CHECK(json_real_value(json_object_get(j, "date")) > 1.6e9);
    char *s = json_dumps(j, 0);
    CHECK(s && !strstr(s, "nan") && !strstr(s, "inf"));
    free(s);
    json_decref(j);
    eval_task_free(&tasks[0]);
    eval_task_free(&tasks[1]);
}

static void test_print_table(void) {
    /* LAMBADA: ll -3 (ppl e^3 = 20.09), greedy -> 100.0; ARC-c: acc_norm 1/2 -> 50.0;
     * Avg over the two accuracy columns run: 75.0 */
    const double ll[] = {-3, -1, -2, -2, -1};
    const int greedy[] = {1};
    const int gold[] = {0, 0};
    EvalTask tasks[2];
    tasks[0] = fake_task(TASK_LAMBADA, "lambada_openai", 1, 1, ll, NULL, NULL, greedy);
    tasks[1] = fake_task(TASK_ARC_CHALLENGE, "arc_challenge", 2, 2, ll + 1, NULL, gold, NULL);
    EvalMetrics m[2] = {eval_task_metrics(&tasks[0]), eval_task_metrics(&tasks[1])};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    eval_print_table(f, tasks, m, 2, "gla-sel-rope");
    fclose(f);
    const char *want = "| Model | LMB. ppl ↓ | LMB. acc ↑ | PIQA acc ↑ | Hella. acc_n ↑ | Wino. "
                       "acc ↑ | ARC-e acc ↑ | ARC-c acc_n ↑ | Avg. ↑ |\n"
                       "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
                       "| gla-sel-rope | 20.09 | 100.0 | – | – | – | – | 50.0 | 75.0 |\n";
    CHECK_MSG(strcmp(buf, want) == 0, "got\n%s", buf);
    free(buf);
    eval_task_free(&tasks[0]);
    eval_task_free(&tasks[1]);
}

static const TestCase tests[] = {
    {"capitalize", test_capitalize},
    {"hellaswag_preprocess", test_hellaswag_preprocess},
    {"whitespace_move", test_whitespace_move},
    {"encode_edges", test_encode_edges},
    {"pinned_requests", test_pinned_requests},
    {"pinned_load", test_pinned_load},
    {"task_files", test_task_files},
    {"load_errors", test_load_errors},
    {"metrics", test_metrics},
    {"results_json", test_results_json},
    {"print_table", test_print_table},
};

TH_MAIN(tests)
