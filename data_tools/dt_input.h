/* Reading documents from the inputs of `rotor data tokenize` / `train-tokenizer`.
 *
 * An input's kind comes from its name: a final ".gz" means gzip, ".zst" / ".zstd" zstd
 * (concatenated frames allowed); what is left ending in ".jsonl", ".json" or ".ndjson" is
 * JSONL (one JSON object per line, the document in a string field), anything else plain
 * UTF-8 text. A directory stands for all its files, recursively, in sorted path order
 * (names starting with '.' skipped).
 *
 * Text or not: an input of either kind is not text when its bytes (after decompression) hold
 * a NUL byte anywhere, or when its first DT_SNIFF_BYTES hold more bytes that start no valid
 * UTF-8 character than DT_SNIFF_INVALID or 0.1 % of the bytes examined, whichever is more
 * (an executable, an image, an archive, UTF-16 or Latin-1 text). The first DT_SNIFF_BYTES are
 * checked before any document of the input is returned; a NUL byte further on is found as it
 * is read. The message names the file, the byte offset and line of the first offending byte
 * and the bytes there.
 *
 * Documents:
 *   JSONL   the text field of each object; lines holding only whitespace are ignored. A line
 *           that is not UTF-8, or whose text field holds a NUL character (\u0000), is a bad
 *           line.
 *   text    file: the whole file; paragraph: runs of non-blank lines separated by blank
 *           (whitespace-only) lines, joined with "\n"; line: every line. In paragraph and
 *           line mode, "\r\n" line ends count as "\n". The few invalid bytes a text input may
 *           hold become U+FFFD each (as SentencePiece encodes them), so every document is
 *           valid UTF-8 without NUL characters, whatever its kind.
 * Errors (unreadable or corrupt input, an input that is not text, a bad JSONL line) come
 * back with a message naming the file and line or offset, except that bad lines are counted
 * and skipped with skip_bad_lines, and inputs that are not text skipped with skip_binary
 * (both with warnings). */
#ifndef ROTOR_DT_INPUT_H
#define ROTOR_DT_INPUT_H

#include <stddef.h>
#include <stdint.h>

#define DT_SNIFF_BYTES ((size_t)1 << 20)
#define DT_SNIFF_INVALID 8

typedef enum { DT_DOCS_FILE, DT_DOCS_PARAGRAPH, DT_DOCS_LINE } DtTextDocs;

typedef struct {
    const char *text_field; /* JSONL: the field holding the document */
    DtTextDocs text_docs;   /* plain text: what a document is */
    int skip_bad_lines;     /* JSONL: skip (and count) lines that are not usable */
    int skip_binary;        /* skip (and count) inputs that are not text */
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
/* Checks the start of every input (dt_input_sniff), so that a command can refuse its inputs
 * before it writes anything. An input that is not text is fatal, or with skip_binary moved to
 * *skipped with a warning naming it; no input left is fatal too. Dies on read errors. */
void dt_inputs_keep_text(DtInputs *in, int skip_binary, DtInputs *skipped);
void dt_inputs_free(DtInputs *in);

/* Whether the input at path reads as text, judged from its first DT_SNIFF_BYTES (see above):
 * 0; 1 when it is not text, or -1 when it cannot be read, both with a message naming the
 * file in err. */
int dt_input_sniff(const char *path, char *err, size_t errlen);

/* "file" / "paragraph" / "line" -> *out; 0, or -1 for another name. */
int dt_parse_text_docs(const char *name, DtTextDocs *out);
const char *dt_text_docs_name(DtTextDocs d);

/* Documents of all inputs, in order. */
typedef struct DtDocReader DtDocReader;
DtDocReader *dt_docs_open(const DtInputs *in, const DtDocOptions *opt);
/* The next document: 1 with *text / *len (valid until the next call), 0 after the last one,
 * -1 on an error (see above) with its message in err. The reader is not usable after -1. */
int dt_docs_next(DtDocReader *r, const char **text, size_t *len, char *err, size_t errlen);
/* Bytes read so far (after decompression), and bad lines skipped. */
int64_t dt_docs_bytes(const DtDocReader *r);
int64_t dt_docs_bad_lines(const DtDocReader *r);
/* The inputs skipped so far as not text (skip_binary): their paths, borrowed from the
 * DtInputs read, and their number in *n. */
const char *const *dt_docs_skipped(const DtDocReader *r, int *n);
void dt_docs_close(DtDocReader *r);

/* 1 when text[0..len) holds only ASCII whitespace (or nothing): an empty document. */
int dt_is_blank(const char *text, size_t len);

#endif
