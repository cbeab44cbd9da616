/* Zero-shot evaluation exactly as lm-evaluation-harness scores it (docs/evaluation.md part A):
 * task adapters build (context, continuation) requests, requests are tokenised
 * whole-minus-prefix, a model gives each its log-likelihood, and the metrics follow. */
#ifndef ROTOR_EVAL_H
#define ROTOR_EVAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* One loglikelihood request. */
typedef struct {
    int64_t doc;   /* document index in the task file (0-based line of data) */
    int choice;    /* choice index; 0 for LAMBADA */
    char *context; /* after moving trailing whitespace to the continuation */
    char *continuation;
    int32_t *tokens; /* [BOS] + context tokens + continuation tokens (untruncated) */
    int n_tokens;
    int n_cont;    /* the continuation is the last n_cont tokens */
    double ll;     /* filled by the runner: sum of continuation log-probabilities */
    int is_greedy; /* filled by the runner: every continuation token is the argmax */
} EvalRequest;

/* One scored document. */
typedef struct {
    int64_t index; /* line index in the task file */
    int gold;      /* correct choice (multiple choice) */
    int n_choices;
    int64_t first_request; /* its requests are first_request .. first_request+n_choices-1 */
    int64_t *choice_chars; /* Unicode code points of each raw choice (acc_norm) */
} EvalDoc;

typedef enum {
    TASK_LAMBADA,
    TASK_PIQA,
    TASK_HELLASWAG,
    TASK_WINOGRANDE,
    TASK_ARC_EASY,
    TASK_ARC_CHALLENGE
} TaskKind;

typedef struct {
    TaskKind kind;
    char name[32];          /* "lambada_openai", "piqa", "hellaswag", "winogrande", "arc_easy",
                               "arc_challenge" */
    char path[1024];        /* the task file */
    char sha256[65];        /* of the task file */
    int64_t n_docs_in_file; /* documents in the file */
    EvalDoc *docs;
    int64_t n_docs; /* documents evaluated (--limit) */
    EvalRequest *requests;
    int64_t n_requests;
} EvalTask;

/* Known task names, comma-separated (for --help and errors). */
extern const char *const EVAL_TASK_NAMES;

/* Loads DATA_DIR/<name>.jsonl and builds the requests of its first `limit` documents (all
 * when limit <= 0), tokenised with `tok`, BOS first when add_bos. Returns 0, or -1 with a
 * message naming the file, line and field at fault. */
int eval_task_load(EvalTask *t, const char *name, const char *data_dir, int64_t limit,
                   const Tokenizer *tok, int add_bos, char *err, size_t errlen);
void eval_task_free(EvalTask *t);

/* Harness request building, exposed for the tests:
 * the (context, continuation) strings of choice `choice` of a parsed JSON document, the
 * number of choices, the gold index and the raw choice strings (for acc_norm). */
int eval_build_strings(TaskKind kind, const json_t *doc, int choice, char **context,
                       char **continuation, char *err, size_t errlen);
/* HellaSwag's preprocess(t) (docs/evaluation.md part A): strip, " [title]" -> ". ", delete
 * non-greedy
 * "[...]" (not across newlines), one pass of "  " -> " ". New string. */
char *eval_hellaswag_preprocess(const char *text);
/* Python str.capitalize (first character title-cased, the rest lower-cased). */
char *eval_capitalize(const char *text);
/* Whole-minus-prefix tokenisation (docs/evaluation.md "Scoring a request", steps 1-2): moves
 * trailing whitespace of *context to the front of *continuation (reallocating both), then encodes
 * context + continuation and context alone; tokens = [BOS if add_bos] + context tokens +
 * whole[len(context tokens):] (the harness's _encode_pair), n_cont = len(whole) - len(context
 * tokens). */
int eval_encode_request(const Tokenizer *tok, int add_bos, char **context, char **continuation,
                        int32_t **tokens, int *n_tokens, int *n_cont, char *err, size_t errlen);

/* ---- metrics ---- */
typedef struct {
    int has_acc, has_acc_norm, has_ppl;
    double acc, acc_stderr, acc_norm, acc_norm_stderr, ppl, ppl_stderr;
    int64_t n;
} EvalMetrics;
/* From the requests' ll / is_greedy: acc (argmax ll, ties to the lowest index), acc_norm
 * (argmax ll / choice_chars), LAMBADA acc = mean is_greedy and perplexity = exp(-mean ll)
 * with a delta-method stderr; accuracy stderr = sample std / sqrt(n). */
EvalMetrics eval_task_metrics(const EvalTask *t);

/* results.json shaped like lm-evaluation-harness's, plus the checkpoint, its config, the
 * task files' sha256 and the document counts (new reference). */
json_t *eval_results_json(const EvalTask *tasks, const EvalMetrics *m, int n, const char *ckpt,
                          const json_t *config, int add_bos);
/* The paper's Table 3 columns as a markdown table. */
void eval_print_table(FILE *f, const EvalTask *tasks, const EvalMetrics *m, int n,
                      const char *model_name);

#endif
