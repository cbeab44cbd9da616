/* The six zero-shot tasks of docs/evaluation.md part A: task files, the harness's request strings
 * and the whole-minus-prefix tokenisation. Every rule below reproduces lm-evaluation-harness
 * (EleutherAI/lm-evaluation-harness, checked at commit 4e7e0d47):
 *  - lm_eval/tasks/lambada/lambada_openai.yaml   doc_to_text "{{text.split(' ')[:-1]|join(' ')}}",
 *                                                 doc_to_target "{{' '+text.split(' ')[-1]}}"
 *  - lm_eval/tasks/piqa/piqa.yaml                "Question: {{goal}}\nAnswer:", [sol1, sol2], label
 *  - lm_eval/tasks/hellaswag/utils.py            preprocess() and process_docs()
 *  - lm_eval/tasks/winogrande/preprocess_winogrande.py   doc_to_text/doc_to_target/doc_to_choice
 *  - lm_eval/tasks/arc/arc_easy.yaml (+ arc_challenge.yaml)  choices.text,
 * choices.label.index(answerKey)
 *  - lm_eval/api/task.py construct_requests: (ctx, target_delimiter + choice) per choice; for
 *    winogrande ("multiple input": doc_to_text returns an int) (context_i, " " + target) per
 *    context; process_results: completion_len = len(choice) for choice in doc_to_choice(doc).
 *  - lm_eval/api/model.py TemplateLM.loglikelihood / _encode_pair: the trailing-whitespace
 *    move, whole-minus-context tokenisation, and the empty-context case.
 *
 * Python string semantics are reproduced on UTF-8: str.strip/rstrip use Python's whitespace
 * set (str.isspace), str.split(' ') splits on single spaces only, str.capitalize uses full
 * Unicode case mapping (ICU, see eval_capitalize). Strings from JSON are valid UTF-8 without
 * NUL (jansson rejects both), so C strings carry them exactly. */
#include "eval.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/ucasemap.h>

#include "util/error.h"
#include "util/sha256.h"

const char *const EVAL_TASK_NAMES =
    "lambada_openai,piqa,hellaswag,winogrande,arc_easy,arc_challenge";

static const struct {
    const char *name;
    TaskKind kind;
} TASKS[] = {
    {"lambada_openai", TASK_LAMBADA}, {"piqa", TASK_PIQA},
    {"hellaswag", TASK_HELLASWAG},    {"winogrande", TASK_WINOGRANDE},
    {"arc_easy", TASK_ARC_EASY},      {"arc_challenge", TASK_ARC_CHALLENGE},
};
#define N_TASKS ((int)(sizeof TASKS / sizeof TASKS[0]))

/* ------------------------------------------------------------------------------------ */
/* Python str semantics on UTF-8                                                        */
/* ------------------------------------------------------------------------------------ */

/* Python's str.isspace (CPython _PyUnicode_IsWhitespace: bidirectional class WS, B or S, or
 * category Zs). The complete set as of Unicode 14/15, checked against
 * [c for c in range(0x110000) if chr(c).isspace()] on Python 3.11. */
static int py_isspace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Decodes the code point at s (valid UTF-8 assumed; a malformed byte decodes as itself, one
 * byte long, which is never whitespace above 0x7F) and stores its byte length in *len. */
static uint32_t utf8_decode(const char *s, size_t avail, size_t *len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t n = u[0] < 0x80 ? 1 : u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    if (n == 0 || n > avail) {
        *len = 1;
        return u[0];
    }
    uint32_t c = n == 1 ? u[0] : n == 2 ? u[0] & 0x1Fu : n == 3 ? u[0] & 0x0Fu : u[0] & 0x07u;
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *len = 1;
            return u[0];
        }
        c = (c << 6) | (u[i] & 0x3Fu);
    }
    *len = n;
    return c;
}

/* Byte length of s[:n].rstrip() (Python whitespace). */
static size_t py_rstrip_len(const char *s, size_t n) {
    while (n > 0) {
        size_t start = n - 1;
        while (start > 0 && ((unsigned char)s[start] & 0xC0) == 0x80 && n - start < 4) start--;
        size_t len;
        uint32_t c = utf8_decode(s + start, n - start, &len);
        if (start + len != n) { /* a stray continuation byte: not whitespace */
            break;
        }
        if (!py_isspace(c)) break;
        n = start;
    }
    return n;
}

/* Byte offset of s[:n].lstrip() (Python whitespace). */
static size_t py_lstrip_off(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t len;
        if (!py_isspace(utf8_decode(s + i, n - i, &len))) break;
        i += len;
    }
    return i;
}

/* Python s.strip(), malloc'd. */
static char *py_strip(const char *s) {
    size_t n = strlen(s), a = py_lstrip_off(s, n), b = py_rstrip_len(s, n);
    if (b < a) b = a;
    char *out = rt_malloc(b - a + 1);
    memcpy(out, s + a, b - a);
    out[b - a] = '\0';
    return out;
}

/* Python s.replace(old, new): every non-overlapping occurrence, left to right. Frees s. */
static char *py_replace(char *s, const char *old, const char *new_) {
    size_t lo = strlen(old), ln = strlen(new_), count = 0;
    for (const char *p = strstr(s, old); p; p = strstr(p + lo, old)) count++;
    if (count == 0) return s;
    char *out = rt_malloc(strlen(s) - count * lo + count * ln + 1), *q = out;
    const char *p = s;
    for (const char *m = strstr(p, old); m; m = strstr(p, old)) {
        memcpy(q, p, (size_t)(m - p));
        q += m - p;
        memcpy(q, new_, ln);
        q += ln;
        p = m + lo;
    }
    strcpy(q, p);
    free(s);
    return out;
}

/* Number of code points (Python len). */
static int64_t py_len(const char *s) {
    int64_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* Concatenation of up to three strings (NULL ends the list early), malloc'd. */
static char *concat3(const char *a, const char *b, const char *c) {
    size_t la = strlen(a), lb = b ? strlen(b) : 0, lc = c ? strlen(c) : 0;
    char *out = rt_malloc(la + lb + lc + 1);
    memcpy(out, a, la);
    if (lb) memcpy(out + la, b, lb);
    if (lc) memcpy(out + la + lb, c, lc);
    out[la + lb + lc] = '\0';
    return out;
}

/* Python str.capitalize (3.8+): the first character title-cased, the rest lower-cased, both
 * with the full (SpecialCasing) mappings and Final_Sigma in the context of the whole string:
 * "ßa" -> "Ssa", "ǆA" -> "ǅa", "ΑΣ" -> "Ας". ICU's titlecasing with WHOLE_STRING (titlecase
 * only index 0, lowercase the rest) and NO_BREAK_ADJUSTMENT (index 0 even when uncased) in
 * the root locale is exactly that. GLib was considered: its g_unichar_totitle is the simple
 * mapping ("ß" stays "ß") and its final-sigma rule ignores the preceding letter. Remaining
 * difference: the Unicode version (ICU 72: 15.0; Python 3.11: 14.0), which only touches
 * characters new in 15.0. */
char *eval_capitalize(const char *text) {
    UErrorCode st = U_ZERO_ERROR;
    UCaseMap *cm =
        ucasemap_open("", U_TITLECASE_WHOLE_STRING | U_TITLECASE_NO_BREAK_ADJUSTMENT, &st);
    RT_ASSERT(U_SUCCESS(st));
    int32_t len = (int32_t)strlen(text);
    int32_t need = ucasemap_utf8ToTitle(cm, NULL, 0, text, len, &st);
    RT_ASSERT(st == U_BUFFER_OVERFLOW_ERROR || U_SUCCESS(st));
    char *out = rt_malloc((size_t)need + 1);
    st = U_ZERO_ERROR;
    ucasemap_utf8ToTitle(cm, out, need + 1, text, len, &st);
    RT_ASSERT(U_SUCCESS(st));
    out[need] = '\0';
    ucasemap_close(cm);
    return out;
}

/* lm_eval/tasks/hellaswag/utils.py preprocess():
 *     text = text.strip(); text = text.replace(" [title]", ". ")
 *     text = re.sub("\\[.*?\\]", "", text); text = text.replace("  ", " ")
 * The regex deletes, left to right, each '[' up to the first following ']' when no '\n'
 * lies between them (Python's '.' does not match '\n'); a '[' without such a ']' stays. */
char *eval_hellaswag_preprocess(const char *text) {
    char *s = py_replace(py_strip(text), " [title]", ". ");
    size_t n = strlen(s), o = 0;
    char *out = rt_malloc(n + 1);
    for (size_t i = 0; i < n;) {
        if (s[i] != '[') {
            out[o++] = s[i++];
            continue;
        }
        size_t j = i + 1;
        while (j < n && s[j] != ']' && s[j] != '\n') j++;
        if (j < n && s[j] == ']') {
            i = j + 1; /* delete s[i..j] */
        } else {
            /* No match here, nor at any '[' before j: they would stop at the same '\n' or
             * end. Copy them through. */
            memcpy(out + o, s + i, j - i);
            o += j - i;
            i = j;
        }
    }
    out[o] = '\0';
    free(s);
    return py_replace(out, "  ", " ");
}

/* ------------------------------------------------------------------------------------ */
/* Documents                                                                            */
/* ------------------------------------------------------------------------------------ */

/* The requests of one document as the harness builds them. */
typedef struct {
    int n; /* choices (requests) */
    int gold;
    char **context; /* [n] */
    char **cont;    /* [n] continuation, with the " " target delimiter */
    char **choice;  /* [n] the harness's doc_to_choice strings (acc_norm lengths) */
} DocStrings;

static void doc_strings_free(DocStrings *d) {
    for (int i = 0; i < d->n; i++) {
        free(d->context[i]);
        free(d->cont[i]);
        free(d->choice[i]);
    }
    free(d->context);
    free(d->cont);
    free(d->choice);
    memset(d, 0, sizeof *d);
}

static void doc_strings_alloc(DocStrings *d, int n) {
    d->n = n;
    d->context = rt_calloc((size_t)n, sizeof(char *));
    d->cont = rt_calloc((size_t)n, sizeof(char *));
    d->choice = rt_calloc((size_t)n, sizeof(char *));
}

/* A JSON value for an error message, compact and cut to ~60 characters. */
static void json_repr(const json_t *v, char *buf, size_t len) {
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(buf, len, "%s", s ? s : "?");
    if (s && strlen(s) >= len && len > 4) strcpy(buf + len - 4, "...");
    free(s);
}

/* doc[field] as a string. */
static int get_string(const json_t *doc, const char *field, const char **out, char *err,
                      size_t errlen) {
    const json_t *v = json_object_get(doc, field);
    if (!v) return rt_error(err, errlen, NULL, "field \"%s\" is missing", field);
    if (!json_is_string(v)) {
        char got[64];
        json_repr(v, got, sizeof got);
        return rt_error(err, errlen, NULL, "field \"%s\" must be a string, got %s", field, got);
    }
    *out = json_string_value(v);
    return 0;
}

/* A field's value v as a non-empty array of strings (items in *out, a malloc'd array);
 * `what` names the field in messages ("endings", "choices.text"). */
static int get_string_array(const json_t *v, const char *what, const char ***out, int *n, char *err,
                            size_t errlen) {
    char got[64];
    if (!v) return rt_error(err, errlen, NULL, "field \"%s\" is missing", what);
    if (!json_is_array(v) || json_array_size(v) == 0) {
        json_repr(v, got, sizeof got);
        return rt_error(err, errlen, NULL,
                        "field \"%s\" must be a non-empty array of strings, got %s", what, got);
    }
    size_t k = json_array_size(v);
    const char **items = rt_malloc(k * sizeof(char *));
    for (size_t i = 0; i < k; i++) {
        const json_t *it = json_array_get(v, i);
        if (!json_is_string(it)) {
            json_repr(it, got, sizeof got);
            free(items);
            return rt_error(err, errlen, NULL, "field \"%s\" item %zu must be a string, got %s",
                            what, i, got);
        }
        items[i] = json_string_value(it);
    }
    *out = items;
    *n = (int)k;
    return 0;
}

/* lambada_openai: context = " ".join(text.split(" ")[:-1]), i.e. text up to its last ' '
 * (or "" without one); continuation = " " + text.split(" ")[-1]. Only ' ' splits: runs of
 * spaces give empty words and newlines stay inside words. */
static int lambada_strings(const json_t *doc, DocStrings *d, char *err, size_t errlen) {
    const char *text;
    if (get_string(doc, "text", &text, err, errlen)) return -1;
    const char *sp = strrchr(text, ' ');
    size_t cut = sp ? (size_t)(sp - text) : 0;
    const char *last = sp ? sp + 1 : text;
    doc_strings_alloc(d, 1);
    d->gold = 0;
    d->context[0] = rt_malloc(cut + 1);
    memcpy(d->context[0], text, cut);
    d->context[0][cut] = '\0';
    d->cont[0] = concat3(" ", last, NULL);
    d->choice[0] = rt_strdup(last);
    return 0;
}

/* piqa: "Question: {goal}\nAnswer:" with " " + sol1 / " " + sol2 (unstripped); gold = label. */
static int piqa_strings(const json_t *doc, DocStrings *d, char *err, size_t errlen) {
    const char *goal, *sol[2];
    if (get_string(doc, "goal", &goal, err, errlen) ||
        get_string(doc, "sol1", &sol[0], err, errlen) ||
        get_string(doc, "sol2", &sol[1], err, errlen))
        return -1;
    const json_t *label = json_object_get(doc, "label");
    if (!label) return rt_error(err, errlen, NULL, "field \"label\" is missing");
    if (!json_is_integer(label) || json_integer_value(label) < 0 || json_integer_value(label) > 1) {
        char got[64];
        json_repr(label, got, sizeof got);
        return rt_error(err, errlen, NULL, "field \"label\" must be 0 or 1, got %s", got);
    }
    doc_strings_alloc(d, 2);
    d->gold = (int)json_integer_value(label);
    for (int i = 0; i < 2; i++) {
        d->context[i] = concat3("Question: ", goal, "\nAnswer:");
        d->cont[i] = concat3(" ", sol[i], NULL);
        d->choice[i] = rt_strdup(sol[i]);
    }
    return 0;
}

/* hellaswag (utils.py process_docs): query = preprocess(activity_label + ": " + ctx_a + " " +
 * ctx_b.capitalize()), choices = [preprocess(e) for e in endings], gold = int(label) (the
 * dataset's label is a string such as "3"; a JSON integer is accepted too). */
static int hellaswag_strings(const json_t *doc, DocStrings *d, char *err, size_t errlen) {
    const char *act, *ctx_a, *ctx_b, **endings;
    int n;
    if (get_string(doc, "activity_label", &act, err, errlen) ||
        get_string(doc, "ctx_a", &ctx_a, err, errlen) ||
        get_string(doc, "ctx_b", &ctx_b, err, errlen) ||
        get_string_array(json_object_get(doc, "endings"), "endings", &endings, &n, err, errlen))
        return -1;
    const json_t *label = json_object_get(doc, "label");
    long long gold = -1;
    if (json_is_integer(label)) {
        gold = json_integer_value(label);
    } else if (json_is_string(label) && json_string_value(label)[0] >= '0' &&
               json_string_value(label)[0] <= '9') {
        char *end;
        errno = 0;
        long long v = strtoll(json_string_value(label), &end, 10);
        if (*end == '\0' && errno == 0) gold = v;
    }
    if (gold < 0 || gold >= n) {
        free(endings);
        if (!label) return rt_error(err, errlen, NULL, "field \"label\" is missing");
        char got[64];
        json_repr(label, got, sizeof got);
        return rt_error(err, errlen, NULL,
                        "field \"label\" must be an index into \"endings\" (0 to %d), got %s",
                        n - 1, got);
    }
    char *cap = eval_capitalize(ctx_b);
    size_t len = strlen(act) + strlen(ctx_a) + strlen(cap) + 4;
    char *raw = rt_malloc(len);
    snprintf(raw, len, "%s: %s %s", act, ctx_a, cap);
    char *query = eval_hellaswag_preprocess(raw);
    doc_strings_alloc(d, n);
    d->gold = (int)gold;
    for (int i = 0; i < n; i++) {
        d->context[i] = rt_strdup(query);
        d->choice[i] = eval_hellaswag_preprocess(endings[i]);
        d->cont[i] = concat3(" ", d->choice[i], NULL);
    }
    free(query);
    free(raw);
    free(cap);
    free(endings);
    return 0;
}

/* winogrande (preprocess_winogrande.py): i = sentence.index("_"); the choices are the two
 * contexts sentence[:i] + option; one shared continuation " " + sentence[i+1:].strip();
 * gold = {"1": 0, "2": 1}[answer]. process_results measures acc_norm lengths on
 * doc_to_choice, i.e. on the contexts. */
static int winogrande_strings(const json_t *doc, DocStrings *d, char *err, size_t errlen) {
    const char *sentence, *opt[2], *answer;
    if (get_string(doc, "sentence", &sentence, err, errlen) ||
        get_string(doc, "option1", &opt[0], err, errlen) ||
        get_string(doc, "option2", &opt[1], err, errlen) ||
        get_string(doc, "answer", &answer, err, errlen))
        return -1;
    const char *blank = strchr(sentence, '_');
    if (!blank) return rt_error(err, errlen, NULL, "field \"sentence\" has no blank \"_\"");
    if (strcmp(answer, "1") != 0 && strcmp(answer, "2") != 0)
        return rt_error(err, errlen, NULL, "field \"answer\" must be \"1\" or \"2\", got \"%s\"",
                        answer);
    size_t i = (size_t)(blank - sentence);
    char *prefix = rt_malloc(i + 1);
    memcpy(prefix, sentence, i);
    prefix[i] = '\0';
    char *target = py_strip(blank + 1);
    doc_strings_alloc(d, 2);
    d->gold = answer[0] - '1';
    for (int k = 0; k < 2; k++) {
        d->context[k] = concat3(prefix, opt[k], NULL);
        d->cont[k] = concat3(" ", target, NULL);
        d->choice[k] = rt_strdup(d->context[k]);
    }
    free(prefix);
    free(target);
    return 0;
}

/* arc_easy / arc_challenge: "Question: {question}\nAnswer:" with " " + choices.text[k];
 * gold = choices.label.index(answerKey) (the first match). */
static int arc_strings(const json_t *doc, DocStrings *d, char *err, size_t errlen) {
    const char *question, *key, **text = NULL, **label = NULL;
    int nt, nl;
    if (get_string(doc, "question", &question, err, errlen)) return -1;
    const json_t *choices = json_object_get(doc, "choices");
    if (!choices) return rt_error(err, errlen, NULL, "field \"choices\" is missing");
    if (!json_is_object(choices))
        return rt_error(err, errlen, NULL,
                        "field \"choices\" must be an object with \"text\" and \"label\"");
    if (get_string_array(json_object_get(choices, "text"), "choices.text", &text, &nt, err, errlen))
        return -1;
    if (get_string_array(json_object_get(choices, "label"), "choices.label", &label, &nl, err,
                         errlen) ||
        get_string(doc, "answerKey", &key, err, errlen)) {
        free(text);
        free(label);
        return -1;
    }
    int gold = -1;
    for (int k = 0; k < nl && gold < 0; k++)
        if (strcmp(label[k], key) == 0) gold = k;
    int rc = 0;
    if (nt != nl) {
        rc = rt_error(err, errlen, NULL,
                      "fields \"choices.text\" and \"choices.label\" differ in length (%d and %d)",
                      nt, nl);
    } else if (gold < 0) {
        char got[64];
        json_repr(json_object_get(choices, "label"), got, sizeof got);
        rc = rt_error(err, errlen, NULL,
                      "field \"answerKey\" is \"%s\", which is not in \"choices.label\" %s", key,
                      got);
    } else {
        doc_strings_alloc(d, nt);
        d->gold = gold;
        for (int k = 0; k < nt; k++) {
            d->context[k] = concat3("Question: ", question, "\nAnswer:");
            d->cont[k] = concat3(" ", text[k], NULL);
            d->choice[k] = rt_strdup(text[k]);
        }
    }
    free(text);
    free(label);
    return rc;
}

/* The requests of a parsed document; 0, or -1 with a message naming the field. */
static int doc_strings(TaskKind kind, const json_t *doc, DocStrings *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    if (!json_is_object(doc))
        return rt_error(err, errlen, NULL, "a document must be a JSON object");
    switch (kind) {
    case TASK_LAMBADA: return lambada_strings(doc, d, err, errlen);
    case TASK_PIQA: return piqa_strings(doc, d, err, errlen);
    case TASK_HELLASWAG: return hellaswag_strings(doc, d, err, errlen);
    case TASK_WINOGRANDE: return winogrande_strings(doc, d, err, errlen);
    case TASK_ARC_EASY:
    case TASK_ARC_CHALLENGE: return arc_strings(doc, d, err, errlen);
    }
    return rt_error(err, errlen, NULL, "unknown task kind %d", (int)kind);
}

int eval_build_strings(TaskKind kind, const json_t *doc, int choice, char **context,
                       char **continuation, char *err, size_t errlen) {
    DocStrings d;
    if (doc_strings(kind, doc, &d, err, errlen)) return -1;
    if (choice < 0 || choice >= d.n) {
        doc_strings_free(&d);
        return rt_error(err, errlen, NULL, "choice %d out of range (the document has %d)", choice,
                        d.n);
    }
    *context = d.context[choice];
    *continuation = d.cont[choice];
    d.context[choice] = d.cont[choice] = NULL;
    doc_strings_free(&d);
    return 0;
}

/* ------------------------------------------------------------------------------------ */
/* Tokenisation (docs/evaluation.md "Scoring a request"; lm_eval/api/model.py) */
/* ------------------------------------------------------------------------------------ */

/* TemplateLM.loglikelihood / _encode_pair, for a causal model:
 *   if context == "": context_enc = [prefix_token_id] (BOS), continuation_enc = encode(cont)
 *   else: n_spaces = len(context) - len(context.rstrip()); move them to the continuation;
 *         whole = encode(context + continuation); context_enc = encode(context);
 *         continuation_enc = whole[len(context_enc):]
 * and _loglikelihood_tokens scores context_enc + continuation_enc. So tokens = [BOS] +
 * context_enc + whole[len(context_enc):]: the context part is context_enc even where whole
 * splits the context differently (never observed with SentencePiece, whose pieces do not
 * cross a space and every continuation here starts with one). When context_enc is at least
 * as long as whole, the continuation is empty (Python slicing): n_cont = 0, and the runner
 * scores ll = 0 with is_greedy true, as the harness's empty slice does. The empty context
 * conditions on BOS even without add_bos, as the harness conditions on its prefix token. */

/* Step 1: the trailing whitespace of *context (Python rstrip) moves to the front of
 * *continuation. */
static void move_trailing_space(char **context, char **continuation) {
    size_t clen = strlen(*context), keep = py_rstrip_len(*context, clen);
    if (keep == clen) return;
    char *cont = concat3(*context + keep, *continuation, NULL);
    free(*continuation);
    *continuation = cont;
    (*context)[keep] = '\0';
    *context = rt_realloc(*context, keep + 1);
}

/* Step 2 for moved strings whose context is already encoded (ctx, n_ctx): tokens = [BOS
 * when bos] + ctx + encode(context + continuation)[n_ctx:]. */
static int encode_with_context(const Tokenizer *tok, int bos, const char *context,
                               const char *continuation, const int32_t *ctx, size_t n_ctx,
                               int32_t **tokens, int *n_tokens, int *n_cont, char *err,
                               size_t errlen) {
    if (bos && tok_bos_id(tok) < 0)
        return rt_error(err, errlen, NULL, "the tokenizer has no BOS token");
    char *text = concat3(context, continuation, NULL);
    int32_t *whole = NULL;
    size_t n_whole = 0;
    int rc = tok_encode(tok, text, strlen(text), 0, 0, &whole, &n_whole, err, errlen);
    free(text);
    if (rc) return -1;
    size_t nc = n_whole > n_ctx ? n_whole - n_ctx : 0, n = (size_t)bos + n_ctx + nc;
    int32_t *ids = rt_malloc(n * sizeof(int32_t));
    if (bos) ids[0] = tok_bos_id(tok);
    if (n_ctx) memcpy(ids + bos, ctx, n_ctx * sizeof(int32_t));
    if (nc) memcpy(ids + bos + n_ctx, whole + n_ctx, nc * sizeof(int32_t));
    free(whole);
    *tokens = ids;
    *n_tokens = (int)n;
    *n_cont = (int)nc;
    return 0;
}

int eval_encode_request(const Tokenizer *tok, int add_bos, char **context, char **continuation,
                        int32_t **tokens, int *n_tokens, int *n_cont, char *err, size_t errlen) {
    int bos = add_bos || (*context)[0] == '\0';
    move_trailing_space(context, continuation);
    int32_t *ctx = NULL;
    size_t n_ctx = 0;
    int rc = tok_encode(tok, *context, strlen(*context), 0, 0, &ctx, &n_ctx, err, errlen);
    if (rc == 0)
        rc = encode_with_context(tok, bos, *context, *continuation, ctx, n_ctx, tokens, n_tokens,
                                 n_cont, err, errlen);
    free(ctx);
    return rc;
}

/* eval_encode_request for the n requests of one document, encoding a context shared by
 * consecutive requests once. */
static int encode_doc(const Tokenizer *tok, int add_bos, EvalRequest *req, int n, char *err,
                      size_t errlen) {
    int32_t *ctx = NULL;
    size_t n_ctx = 0;
    const char *encoded = NULL; /* the context ctx holds */
    int rc = 0;
    for (int c = 0; c < n && rc == 0; c++) {
        EvalRequest *r = &req[c];
        int bos = add_bos || r->context[0] == '\0';
        move_trailing_space(&r->context, &r->continuation);
        if (!encoded || strcmp(encoded, r->context) != 0) {
            free(ctx);
            ctx = NULL;
            rc = tok_encode(tok, r->context, strlen(r->context), 0, 0, &ctx, &n_ctx, err, errlen);
            encoded = r->context;
        }
        if (rc == 0)
            rc = encode_with_context(tok, bos, r->context, r->continuation, ctx, n_ctx, &r->tokens,
                                     &r->n_tokens, &r->n_cont, err, errlen);
    }
    free(ctx);
    return rc;
}

/* ------------------------------------------------------------------------------------ */
/* Task files                                                                           */
/* ------------------------------------------------------------------------------------ */

/* Puts "where: " in front of the message in err; returns -1. */
static int prefix_error(char *err, size_t errlen, const char *where) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", err);
    return rt_error(err, errlen, where, "%s", msg);
}

/* Appends document d (file index `index`, on line `lineno`) and its untokenised requests
 * to t; (*line)[i] is the line of t->docs[i]. */
static void add_doc(EvalTask *t, const DocStrings *d, int64_t index, int64_t lineno, int64_t **line,
                    int64_t *cap_docs, int64_t *cap_req) {
    if (t->n_docs == *cap_docs) {
        *cap_docs = *cap_docs ? 2 * *cap_docs : 1024;
        t->docs = rt_realloc(t->docs, (size_t)*cap_docs * sizeof(EvalDoc));
        *line = rt_realloc(*line, (size_t)*cap_docs * sizeof(int64_t));
    }
    (*line)[t->n_docs] = lineno;
    while (t->n_requests + d->n > *cap_req) {
        *cap_req = *cap_req ? 2 * *cap_req : 4096;
        t->requests = rt_realloc(t->requests, (size_t)*cap_req * sizeof(EvalRequest));
    }
    EvalDoc *doc = &t->docs[t->n_docs++];
    doc->index = index;
    doc->gold = d->gold;
    doc->n_choices = d->n;
    doc->first_request = t->n_requests;
    doc->choice_chars = rt_malloc((size_t)d->n * sizeof(int64_t));
    for (int i = 0; i < d->n; i++) {
        doc->choice_chars[i] = py_len(d->choice[i]);
        EvalRequest *r = &t->requests[t->n_requests++];
        memset(r, 0, sizeof *r);
        r->doc = index;
        r->choice = i;
        r->context = rt_strdup(d->context[i]);
        r->continuation = rt_strdup(d->cont[i]);
    }
}

/* Tokenises every request of t, documents in parallel (the Tokenizer is thread-safe). On
 * failure the message is that of the first failing document, prefixed with its file:line
 * (line[d] is document d's line number). */
static int tokenize_task(EvalTask *t, const int64_t *line, const Tokenizer *tok, int add_bos,
                         char *err, size_t errlen) {
    int64_t bad = -1;
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t d = 0; d < t->n_docs; d++) {
        char msg[512];
        if (encode_doc(tok, add_bos, &t->requests[t->docs[d].first_request], t->docs[d].n_choices,
                       msg, sizeof msg)) {
#pragma omp critical(eval_tokenize_error)
            if (bad < 0 || d < bad) {
                bad = d;
                snprintf(err, errlen, "%s", msg);
            }
        }
    }
    if (bad < 0) return 0;
    char where[1100];
    snprintf(where, sizeof where, "%s:%lld", t->path, (long long)line[bad]);
    return prefix_error(err, errlen, where);
}

/* Blank (all-whitespace) lines are skipped, as JSON Lines readers do; document indices count
 * documents, line numbers in messages count physical lines from 1. Every document of the
 * file is parsed and checked, the first `limit` are tokenised. */
int eval_task_load(EvalTask *t, const char *name, const char *data_dir, int64_t limit,
                   const Tokenizer *tok, int add_bos, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    int k = 0;
    while (k < N_TASKS && strcmp(TASKS[k].name, name) != 0) k++;
    if (k == N_TASKS)
        return rt_error(err, errlen, NULL, "unknown task \"%s\" (known: %s)", name,
                        EVAL_TASK_NAMES);
    t->kind = TASKS[k].kind;
    snprintf(t->name, sizeof t->name, "%s", name);
    if ((size_t)snprintf(t->path, sizeof t->path, "%s/%s.jsonl", data_dir, name) >= sizeof t->path)
        return rt_error(err, errlen, NULL, "task file path too long: %s/%s.jsonl", data_dir, name);
    FILE *f = fopen(t->path, "rb");
    if (!f) return rt_error(err, errlen, t->path, "cannot open task file: %s", strerror(errno));
    if (sha256_file(t->path, t->sha256, err, errlen)) {
        fclose(f);
        return -1;
    }
    char *text = NULL, where[1100];
    size_t text_cap = 0;
    ssize_t len;
    int64_t lineno = 0, cap_docs = 0, cap_req = 0, *line = NULL;
    int rc = 0;
    while (rc == 0 && (len = getline(&text, &text_cap, f)) >= 0) {
        lineno++;
        if (py_lstrip_off(text, (size_t)len) == (size_t)len) continue;
        snprintf(where, sizeof where, "%s:%lld", t->path, (long long)lineno);
        json_error_t jerr;
        json_t *doc = json_loadb(text, (size_t)len, 0, &jerr);
        if (!doc) {
            rc = rt_error(err, errlen, where, "not valid JSON: %s", jerr.text);
            break;
        }
        DocStrings d;
        rc = doc_strings(t->kind, doc, &d, err, errlen);
        json_decref(doc);
        if (rc) {
            prefix_error(err, errlen, where);
            break;
        }
        if (limit <= 0 || t->n_docs < limit)
            add_doc(t, &d, t->n_docs_in_file, lineno, &line, &cap_docs, &cap_req);
        doc_strings_free(&d);
        t->n_docs_in_file++;
    }
    if (rc == 0 && ferror(f))
        rc = rt_error(err, errlen, t->path, "read error: %s", strerror(errno));
    if (rc == 0 && t->n_docs_in_file == 0) rc = rt_error(err, errlen, t->path, "no documents");
    free(text);
    fclose(f);
    if (rc == 0) rc = tokenize_task(t, line, tok, add_bos, err, errlen);
    free(line);
    if (rc) eval_task_free(t);
    return rc;
}

void eval_task_free(EvalTask *t) {
    for (int64_t i = 0; i < t->n_docs; i++) free(t->docs[i].choice_chars);
    for (int64_t i = 0; i < t->n_requests; i++) {
        free(t->requests[i].context);
        free(t->requests[i].continuation);
        free(t->requests[i].tokens);
    }
    free(t->docs);
    free(t->requests);
    memset(t, 0, sizeof *t);
}
