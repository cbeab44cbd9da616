// The C API of tokenizer.h over SentencePiece (Debian's libsentencepiece) and OpenSSL.
//
// Every exported function is extern "C" and noexcept in effect: C++ exceptions (bad_alloc,
// anything thrown inside SentencePiece) are caught at the boundary and turned into the
// documented error result. The model file is read once; its bytes are hashed (sha256) and
// parsed from memory, so the hash always describes exactly the model in use.

#include "tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <openssl/evp.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct Tokenizer {
    sentencepiece::SentencePieceProcessor sp; // const after tok_load: safe to share
    std::string path;
    char sha256[65];
};

namespace {

// printf into err[errlen] (when there is room for a message); always returns -1.
int set_error(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int set_error(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

// The message of the exception being handled, for the catch blocks at the API boundary.
const char *current_exception_message() {
    try {
        throw;
    } catch (const std::exception &e) {
        return e.what();
    } catch (...) {
        return "unknown C++ exception";
    }
}

// Reads a whole file into *out; on failure returns false with errno's message in *why.
bool read_file(const char *path, std::string *out, std::string *why) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        *why = strerror(errno);
        return false;
    }
    char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, got);
    bool ok = !ferror(f);
    if (!ok) *why = strerror(errno);
    fclose(f);
    return ok;
}

// Lower-case hex sha256 of data into hex[65]; false if OpenSSL fails.
bool sha256_hex(const std::string &data, char hex[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(data.data(), data.size(), md, &mdlen, EVP_sha256(), nullptr) || mdlen != 32)
        return false;
    for (unsigned int i = 0; i < mdlen; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return true;
}

bool id_in_range(const Tokenizer *t, int id) { return id >= 0 && id < t->sp.GetPieceSize(); }

} // namespace

extern "C" {

Tokenizer *tok_load(const char *model_path, char *err, size_t errlen) {
    try {
        std::string bytes, why;
        if (!read_file(model_path, &bytes, &why)) {
            set_error(err, errlen, "%s: cannot read tokenizer model: %s", model_path, why.c_str());
            return nullptr;
        }
        auto *t = new Tokenizer();
        t->path = model_path;
        if (!sha256_hex(bytes, t->sha256)) {
            delete t;
            set_error(err, errlen, "%s: sha256 failed (OpenSSL)", model_path);
            return nullptr;
        }
        const auto status = t->sp.LoadFromSerializedProto(bytes);
        if (!status.ok()) {
            delete t;
            set_error(err, errlen, "%s: not a valid SentencePiece model: %s", model_path,
                      status.ToString().c_str());
            return nullptr;
        }
        return t;
    } catch (...) {
        set_error(err, errlen, "%s: %s", model_path, current_exception_message());
        return nullptr;
    }
}

void tok_free(Tokenizer *t) { delete t; }

int tok_vocab_size(const Tokenizer *t) { return t->sp.GetPieceSize(); }
int tok_bos_id(const Tokenizer *t) { return t->sp.bos_id(); }
int tok_eos_id(const Tokenizer *t) { return t->sp.eos_id(); }
int tok_unk_id(const Tokenizer *t) { return t->sp.unk_id(); }
int tok_pad_id(const Tokenizer *t) { return t->sp.pad_id(); }
const char *tok_sha256(const Tokenizer *t) { return t->sha256; }
const char *tok_path(const Tokenizer *t) { return t->path.c_str(); }

int tok_encode(const Tokenizer *t, const char *text, size_t len, int add_bos, int add_eos,
               int32_t **ids, size_t *n, char *err, size_t errlen) {
    *ids = nullptr;
    *n = 0;
    try {
        const int bos = t->sp.bos_id(), eos = t->sp.eos_id();
        if (add_bos && bos < 0)
            return set_error(err, errlen, "%s: the tokenizer has no BOS token", t->path.c_str());
        if (add_eos && eos < 0)
            return set_error(err, errlen, "%s: the tokenizer has no EOS token", t->path.c_str());
        std::vector<int> v;
        // Invalid UTF-8 is not an error here: SentencePiece's normaliser replaces each
        // malformed byte with U+FFFD before segmentation.
        const auto status = t->sp.Encode(std::string_view(text, len), &v);
        if (!status.ok())
            return set_error(err, errlen, "%s: encode failed: %s", t->path.c_str(),
                             status.ToString().c_str());
        const size_t total = v.size() + (add_bos ? 1 : 0) + (add_eos ? 1 : 0);
        auto *out = static_cast<int32_t *>(malloc((total ? total : 1) * sizeof(int32_t)));
        if (!out) return set_error(err, errlen, "%s: out of memory", t->path.c_str());
        size_t k = 0;
        if (add_bos) out[k++] = bos;
        for (int id : v) out[k++] = id;
        if (add_eos) out[k++] = eos;
        *ids = out;
        *n = total;
        return 0;
    } catch (...) {
        return set_error(err, errlen, "%s: encode failed: %s", t->path.c_str(),
                         current_exception_message());
    }
}

char *tok_decode_spans(const Tokenizer *t, const int32_t *ids, size_t n, int64_t *char_begin, char *err,
                       size_t errlen) {
    try {
        std::vector<int> v(ids, ids + n);
        for (size_t i = 0; i < n; i++)
            if (!id_in_range(t, v[i])) {
                set_error(err, errlen, "%s: token id %d at position %zu is out of range [0, %d)",
                          t->path.c_str(), v[i], i, t->sp.GetPieceSize());
                return nullptr;
            }
        // the text SentencePiece's Decode(ids, &text) gives, with the pieces' spans
        auto spt = t->sp.DecodeIdsAsImmutableProto(v);
        if (char_begin) {
            spt.ConvertToUnicodeSpans();
            if (spt.pieces_size() != n) {
                set_error(err, errlen, "%s: decode gave %zu pieces for %zu ids", t->path.c_str(),
                          spt.pieces_size(), n);
                return nullptr;
            }
            for (size_t i = 0; i < n; i++) char_begin[i] = spt.pieces((int)i).begin();
        }
        const std::string &text = spt.text();
        auto *out = static_cast<char *>(malloc(text.size() + 1));
        if (!out) {
            set_error(err, errlen, "%s: out of memory", t->path.c_str());
            return nullptr;
        }
        memcpy(out, text.data(), text.size());
        out[text.size()] = '\0';
        return out;
    } catch (...) {
        set_error(err, errlen, "%s: decode failed: %s", t->path.c_str(),
                  current_exception_message());
        return nullptr;
    }
}

char *tok_decode(const Tokenizer *t, const int32_t *ids, size_t n, char *err, size_t errlen) {
    return tok_decode_spans(t, ids, n, nullptr, err, errlen);
}

const char *tok_id_to_piece(const Tokenizer *t, int id) {
    // IdToPiece returns a reference into the model proto, which lives as long as t.
    return id_in_range(t, id) ? t->sp.IdToPiece(id).c_str() : nullptr;
}

int tok_piece_to_id(const Tokenizer *t, const char *piece) {
    try {
        // SentencePiece maps unknown pieces to the unk id: tell those apart from "<unk>".
        const int id = t->sp.PieceToId(piece);
        return id_in_range(t, id) && t->sp.IdToPiece(id) == piece ? id : -1;
    } catch (...) {
        return -1;
    }
}

int tok_train(const char *const *inputs, int n_inputs, const char *prefix, int vocab_size,
              const char *model_type, int threads, char *err, size_t errlen) {
    try {
        if (n_inputs < 1) return set_error(err, errlen, "tokenizer training: no input files");
        if (strcmp(model_type, "bpe") != 0 && strcmp(model_type, "unigram") != 0)
            return set_error(err, errlen,
                             "tokenizer training: model type '%s' is not supported "
                             "(use bpe or unigram)",
                             model_type);
        if (threads < 1)
            return set_error(err, errlen, "tokenizer training: threads must be >= 1, not %d",
                             threads);
        // SentencePiece splits the input list at commas, so such names cannot be passed.
        std::string input;
        for (int i = 0; i < n_inputs; i++) {
            if (strchr(inputs[i], ','))
                return set_error(err, errlen,
                                 "%s: tokenizer training cannot read file names containing ','",
                                 inputs[i]);
            if (i) input += ',';
            input += inputs[i];
        }
        const std::unordered_map<std::string, std::string> args = {
            {"input", input},
            {"model_prefix", prefix},
            {"vocab_size", std::to_string(vocab_size)},
            {"model_type", model_type},
            {"num_threads", std::to_string(threads)},
            // The Mistral conventions: byte fallback (no unknown characters), ids 0/1/2 for
            // <unk>/<s>/</s>, no padding token, text kept as is (identity normaliser, spaces
            // not collapsed, a dummy space prefix), digits split, runs of spaces as pieces.
            {"byte_fallback", "true"},
            {"unk_id", "0"},
            {"bos_id", "1"},
            {"eos_id", "2"},
            {"pad_id", "-1"},
            {"normalization_rule_name", "identity"},
            {"remove_extra_whitespaces", "false"},
            {"add_dummy_prefix", "true"},
            {"split_digits", "true"},
            {"allow_whitespace_only_pieces", "true"},
            {"character_coverage", "0.9995"},
            // Bounded work: at most 2M sentences, sampled uniformly from the whole input;
            // lines longer than 16 KiB are skipped (SentencePiece's default is 4192 bytes).
            {"input_sentence_size", "2000000"},
            {"shuffle_input_sentence", "true"},
            {"max_sentence_length", "16384"},
            // Progress and warnings off (a process-wide SentencePiece setting); errors still
            // reach stderr and the returned status.
            {"minloglevel", "2"},
        };
        const auto status = sentencepiece::SentencePieceTrainer::Train(args);
        if (!status.ok())
            return set_error(err, errlen, "%s: tokenizer training failed: %s", input.c_str(),
                             status.ToString().c_str());
        return 0;
    } catch (...) {
        return set_error(err, errlen, "tokenizer training failed: %s", current_exception_message());
    }
}

} // extern "C"
