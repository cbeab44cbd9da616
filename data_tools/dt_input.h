/* Reading documents from the inputs of `rotor data tokenize` / `train-tokenizer`.
 *
 * An input's kind comes from its name: a final ".gz" means gzip, ".zst" / ".zstd" zstd
 * (concatenated frames allowed); what is left ending in ".jsonl", ".json" or ".ndjson" is
 * JSONL (one JSON object per line, the document in a string field), anything else plain
 * UTF-8 text. A directory stands for all its files, recursively, in sorted path order
 * (names starting with '.' skipped).
 *
 * Documents:
 *   JSONL   the text field of each object; lines holding only whitespace are ignored.
 *   text    file: the whole file (bytes as they are); paragraph: runs of non-blank lines
 *           separated by blank (whitespace-only) lines, joined with "\n"; line: every line.
 *           In paragraph and line mode, "\r\n" line ends count as "\n".
 * Errors (unreadable or corrupt input, a bad JSONL line) stop the program with a message
 * naming the file and line, except that bad lines are counted and skipped with
 * skip_bad_lines. */
#ifndef ROTOR_DT_INPUT_H
#define ROTOR_DT_INPUT_H

#include <stddef.h>
#include <stdint.h>

typedef enum { DT_DOCS_FILE, DT_DOCS_PARAGRAPH, DT_DOCS_LINE } DtTextDocs;

typedef struct {
    const char *text_field; /* JSONL: the field holding the document */
    DtTextDocs text_docs;   /* plain text: what a document is */
    int skip_bad_lines;     /* JSONL: skip (and count) lines that are not usable */
} DtDocOptions;

/* The input files, after directory expansion, in processing order. */
typedef struct {
    char **paths;
    int n;
} DtInputs;

/* Expands the command-line inputs. Dies naming the input when one is missing, unreadable,
 * an empty directory, or of a kind that cannot be read (.parquet, .bz2, ...: the message says
 * how to convert it). */
void dt_inputs_expand(DtInputs *in, char *const *args, int nargs);
void dt_inputs_free(DtInputs *in);

/* "file" / "paragraph" / "line" -> *out; 0, or -1 for another name. */
int dt_parse_text_docs(const char *name, DtTextDocs *out);
const char *dt_text_docs_name(DtTextDocs d);

/* Documents of all inputs, in order. */
typedef struct DtDocReader DtDocReader;
DtDocReader *dt_docs_open(const DtInputs *in, const DtDocOptions *opt);
/* The next document: returns 1 with *text / *len (valid until the next call), 0 after the
 * last one. Dies on errors (see above). */
int dt_docs_next(DtDocReader *r, const char **text, size_t *len);
/* Bytes read so far (after decompression), and bad lines skipped. */
int64_t dt_docs_bytes(const DtDocReader *r);
int64_t dt_docs_bad_lines(const DtDocReader *r);
void dt_docs_close(DtDocReader *r);

/* 1 when text[0..len) holds only ASCII whitespace (or nothing): an empty document. */
int dt_is_blank(const char *text, size_t len);

#endif
