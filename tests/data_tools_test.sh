#!/usr/bin/env bash
# End-to-end tests of `rotor data tokenize | inspect | train-tokenizer`.
#   tests/data_tools_test.sh ROTOR SHARD_ROUNDTRIP
# SHARD_ROUNDTRIP (tests/shard_roundtrip.c) reads shards with plain HDF5 calls and decodes
# every document; the Python below rebuilds the documents expected from the inputs and
# compares. What decoding cannot give back exactly, by SentencePiece's design:
#   - U+2581 "▁" (its whitespace marker) decodes as a space;
#   - an invalid UTF-8 byte (a few are allowed in plain text inputs) is read as U+FFFD;
#   - NUL characters are stored (as the byte piece <0x00>) but tok_decode's C string ends
#     there, so no test document holds one.
# Tests that need the Mistral tokenizer and texts of ../shared/data skip without them.
set -uo pipefail
rotor=$(realpath "$1")
helper=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
data=$here/../../shared/data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
export OMP_WAIT_POLICY=passive
shopt -s nullglob
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_error "pattern" rotor-args...: status 1 and a stderr message matching pattern.
expect_error() {
  local pattern=$1; shift
  local msg status
  msg=$("$rotor" "$@" 2>&1 >/dev/null); status=$?
  if [ $status -ne 1 ] || ! grep -qE -- "$pattern" <<<"$msg"; then
    fail "rotor $* -> status $status, message: $msg (wanted /$pattern/)"
  else
    ok "error /$pattern/"
  fi
}

# ---- checks that need no data ----
for sub in tokenize inspect train-tokenizer; do
  help=$("$rotor" data $sub --help)
  opts=$(grep -oE -- '--[a-z][a-z-]+' <<<"$help" | sort -u | tr '\n' ' ')
  [ -n "$opts" ] && ok "data $sub --help documents: $opts" || fail "data $sub --help"
done
expect_error "unknown data subcommand 'tokenise'; did you mean 'tokenize'" data tokenise
expect_error "unknown option '--shard-token'; did you mean '--shard-tokens'" data tokenize --shard-token 5
expect_error "unknown option '--sampel'; did you mean '--sample'" data inspect x --sampel 2
expect_error "unknown option '--vocab-sise'; did you mean '--vocab-size'" data train-tokenizer --vocab-sise 9
expect_error "missing --tokenizer" data tokenize --out o x.txt
expect_error "--val-fraction = '2': expected a number in \[0, 1\]" data tokenize --val-fraction 2
expect_error "--shard-tokens = 'lots': expected an integer >= 1" data tokenize --shard-tokens lots
expect_error "--text-docs: 'page' is not one of file, paragraph, line" data tokenize --text-docs page
echo "not a model" >notmodel.model
echo "some text" >t.txt
expect_error "notmodel.model: not a valid SentencePiece model" data tokenize --tokenizer notmodel.model --out o t.txt
# inspect: a PATH naming nothing is an error naming it, and nothing else is inspected
expect_error "^rotor: error: nosuch.h5: no such file or directory" data inspect nosuch.h5
expect_error "nodir/\*.h5: no file matches this glob" data inspect 'nodir/*.h5'
msg=$("$rotor" data inspect nosuch.h5 2>&1)
grep -q "0 of 0" <<<"$msg" && fail "inspect nosuch.h5 still reports '0 of 0': $msg" || ok "inspect nosuch.h5: no shard count reported"
# train-tokenizer reads its inputs as tokenize does: an executable is not text
expect_error "^rotor: error: /bin/ls: not text: a NUL byte at byte [0-9]+ \(line 1\) \(--skip-binary skips" \
  data train-tokenizer --out tt/x --vocab-size 300 /bin/ls

if [ ! -f "$data/tokenizer/mistral-7b-v0.1.model" ] || [ ! -d "$data/text" ]; then
  echo "skipped: ../shared/data not found (tokenisation round trips, inspect, train-tokenizer)"
  [ "$fails" = 0 ] && exit 77
  exit 1
fi
model=$data/tokenizer/mistral-7b-v0.1.model
texts=("$data"/text/*.txt)

cat >check.py <<'PY'
"""Expected documents from inputs, and checks of shard dumps (see data_tools_test.sh)."""
import gzip, json, os, sys

BLANK = " \t\n\r\v\f"

def read(path):
    raw = open(path, "rb").read()
    return gzip.decompress(raw) if path.endswith(".gz") else raw

def lines_of(text):  # as rotor: "\n" separated, a final "\n" ends the last line, "\r\n" ok
    ls = text.split("\n")
    if ls and ls[-1] == "":
        ls.pop()
    return [l[:-1] if l.endswith("\r") else l for l in ls]

def expected(mode, paths, field="text"):
    """Documents (non-blank, in order) and the number of blank ones; invalid UTF-8 bytes are
    kept as surrogate escapes (see decoded)."""
    docs = []
    for p in paths:
        text = read(p).decode("utf-8", errors="surrogateescape")
        if mode == "jsonl":
            docs += [json.loads(l)[field] for l in text.split("\n") if l.strip(BLANK)]
        elif mode == "file":
            docs.append(text)
        elif mode == "line":
            docs += lines_of(text)
        elif mode == "paragraph":
            cur = []
            for l in lines_of(text) + [""]:
                if l.strip(BLANK):
                    cur.append(l)
                elif cur:
                    docs.append("\n".join(cur))
                    cur = []
    kept = [d for d in docs if d.strip(BLANK)]
    return kept, len(docs) - len(kept)

def decoded(text):
    """What decoding gives back: invalid bytes as U+FFFD, U+2581 as a space."""
    raw = text.encode("utf-8", errors="surrogateescape")
    return raw.decode("utf-8", errors="replace").replace("\u2581", " ")

def load_dump(path):
    return [json.loads(l) for l in open(path)]

def check(args):
    """check MODE OUTDIR SHA256 VAL_FRACTION SEED [eos] [shard_tokens=N] -- INPUT...:
    every document back, in order, in the right split, shards well formed."""
    sep = args.index("--")
    mode, out, sha, frac, seed = args[:5]
    flags = args[5:sep]
    inputs = args[sep + 1:]
    frac = float(frac)
    eos = "eos" in flags
    shard_tokens = int(next((f.split("=")[1] for f in flags if f.startswith("shard_tokens=")), 0))
    field = next((f.split("=")[1] for f in flags if f.startswith("field=")), "text")
    docs, empty = expected(mode, inputs, field)
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    dump = load_dump(out + ".dump")
    threshold = int(frac * 2.0 ** 64)
    split_docs = {"train": [], "val": []}
    for shard in dump:
        split = os.path.basename(os.path.dirname(shard["path"]))
        a = shard["attrs"]
        want = {"format": "rotor-tokens", "format_version": 1, "vocab_size": a["vocab_size"],
                "bos_id": 1, "eos_id": 2, "tokenizer_sha256": sha,
                "n_tokens": shard["tokens_len"], "n_docs": shard["offsets_len"] - 1}
        for k, v in want.items():
            assert a[k] == v, f"{shard['path']}: attribute {k} = {a[k]!r}, expected {v!r}"
        assert a["source"].startswith("rotor data tokenize: "), a["source"]
        assert shard["tokens_type"] == ("u16le" if a["vocab_size"] <= 65536 else "u32le")
        assert shard["tokens_contiguous"] and shard["offsets_type"] == "u64le", shard["path"]
        assert shard["offsets_ok"], f"{shard['path']}: /doc_offsets inconsistent"
        assert sum(d["n"] for d in shard["docs"]) == a["n_tokens"], shard["path"]
        for d in shard["docs"]:
            assert d["bos"] and d["eos"] == eos, f"{shard['path']}: BOS/EOS wrong in {d}"
        if shard_tokens:  # closed right after the document that reached shard_tokens
            last = shard is [s for s in dump if os.path.dirname(s["path"]) == os.path.dirname(shard["path"])][-1]
            assert last or a["n_tokens"] >= shard_tokens, f"{shard['path']}: closed early"
            assert a["n_tokens"] - shard["docs"][-1]["n"] < shard_tokens, f"{shard['path']}: closed late"
        split_docs[split] += shard["docs"]
    # Every expected document, in input order, in exactly one split; the split from the hash.
    pos = {"train": 0, "val": 0}
    for i, text in enumerate(docs):
        want = decoded(text)
        exact = want == text  # then the stored text hashes as the input did
        for split in ("val", "train") if exact else ("train", "val"):
            lst = split_docs[split]
            if pos[split] < len(lst) and lst[pos[split]]["text"] == want:
                d = lst[pos[split]]
                if exact:
                    in_val = frac >= 1 or int(d["xxh3"], 16) < threshold
                    if in_val != (split == "val"):
                        continue  # a duplicate may sit in the other split's next slot
                pos[split] += 1
                break
        else:
            near = [s for s in ("train", "val") if pos[s] < len(split_docs[s])]
            got = {s: split_docs[s][pos[s]]["text"][:200] for s in near}
            raise AssertionError(f"document {i} {want[:200]!r} not found next; next stored: {got!r}")
    for s in ("train", "val"):
        assert pos[s] == len(split_docs[s]), f"{s}: {len(split_docs[s]) - pos[s]} extra documents"
        m = manifest["splits"][s]
        assert m["documents"] == len(split_docs[s]), (s, m["documents"], len(split_docs[s]))
        assert m["tokens"] == sum(d["n"] for d in split_docs[s]), s
        names = [os.path.relpath(x["path"], out) for x in dump if f"/{s}/" in x["path"]]
        assert [x["name"] for x in m["shards"]] == names, (m["shards"], names)
    assert manifest["skipped"]["empty_documents"] == empty, (manifest["skipped"], empty)
    assert manifest["tokenizer"]["sha256"] == sha
    print(f"{len(docs)} documents ({len(split_docs['val'])} val, {empty} empty skipped) "
          f"in {len(dump)} shard(s)")

def same(args):
    """same DUMP_A DUMP_B: identical shards apart from their paths and sources."""
    def strip(path):
        out = []
        for s in load_dump(path):
            s = dict(s, path=s["path"].split("/", 1)[1])  # without the output directory
            s["attrs"] = dict(s["attrs"], source="")
            out.append(s)
        return out
    assert strip(args[0]) == strip(args[1]), f"{args[0]} and {args[1]} differ"

def same_split(args):
    """same_split DUMP_A DUMP_B: the same documents (as multisets) in each split."""
    def docs(path):
        r = {"train": [], "val": []}
        for s in load_dump(path):
            r[os.path.basename(os.path.dirname(s["path"]))] += [d["text"] for d in s["docs"]]
        return {k: sorted(v) for k, v in r.items()}
    a, b = docs(args[0]), docs(args[1])
    assert a == b, "the splits differ"
    assert a["val"], "no validation documents to compare"
    print(f"{len(a['train'])} train, {len(a['val'])} val documents")

def jsonl(args):
    """jsonl OUT MAX_DOCS FILE...: the first MAX_DOCS paragraphs of each FILE as JSONL records
    with other fields too, and every 97th record a tricky document."""
    out, limit = args[0], int(args[1])
    tricky = ["He said \"hi\" and 'bye' \\o/", "  two leading spaces, trailing  ",
              "\nstarts with a newline\r\nand has CRLF\n", "tabs\tin\ttext", "café, naïve, 日本語, "
              "Ελληνικά, 😀🎉 emoji", "😀 first", "the meta symbol \u2581 decodes as a space",
              "\u2581 leading meta", "   ", "", "x", "line1\n\nline3 after a blank line\n\n"]
    with open(out, "w") as f:
        n = 0
        for p in args[2:]:
            for d in expected("paragraph", [p])[0][:limit]:
                f.write(json.dumps({"id": n, "text": d, "meta": {"len": len(d)}}) + "\n")
                n += 1
                if n % 97 == 0:
                    f.write(json.dumps({"text": tricky[(n // 97) % len(tricky)], "id": n},
                                       ensure_ascii=n % 2 == 0) + "\n")

{"check": check, "same": same, "same_split": same_split, "jsonl": jsonl}[sys.argv[1]](sys.argv[2:])
PY
py() { /usr/bin/python3 "$tmp/check.py" "$@"; }
sha=$(sha256sum "$model" | cut -d' ' -f1)
dump() { "$helper" "$2" 0 "$1"/train/*.h5 "$1"/val/*.h5 >"$1.dump"; } # dump OUTDIR MODEL
tok() { "$rotor" data tokenize --tokenizer "$model" "$@" >/dev/null; }

# run_check NAME MODE OUTDIR VAL_FRACTION [flags] -- INPUTS: dump and compare
run_check() {
  local name=$1 mode=$2 out=$3 frac=$4; shift 4
  local msg
  if dump "$out" "$model" && msg=$(py check "$mode" "$out" "$sha" "$frac" 0 "$@" 2>&1); then
    ok "$name: $msg"
  else
    fail "$name: $msg"
  fi
}

# ---- JSONL, .jsonl.gz, .jsonl.zst round trips ----
py jsonl corpus.jsonl 400 "${texts[@]}"
if tok --out j --val-fraction 0.2 corpus.jsonl; then
  run_check "jsonl round trip" jsonl j 0.2 -- corpus.jsonl
else fail "tokenize corpus.jsonl"; fi
gzip -k corpus.jsonl
if tok --out g --val-fraction 0.2 corpus.jsonl.gz && dump g "$model" && py same j.dump g.dump; then
  ok ".jsonl.gz gives the same shards"
else fail ".jsonl.gz"; fi
if command -v zstd >/dev/null; then
  zstd -q -k corpus.jsonl
  # two concatenated frames: a stream may hold several
  head -n 500 corpus.jsonl | zstd -q >two.jsonl.zst && tail -n +501 corpus.jsonl | zstd -q >>two.jsonl.zst
  if tok --out z --val-fraction 0.2 corpus.jsonl.zst && dump z "$model" && py same j.dump z.dump &&
     tok --out z2 --val-fraction 0.2 two.jsonl.zst && dump z2 "$model" && py same j.dump z2.dump; then
    ok ".jsonl.zst (one frame and two) gives the same shards"
  else fail ".jsonl.zst"; fi
  head -c 20000 corpus.jsonl.zst >cut.jsonl.zst
  expect_error "cut.jsonl.zst: zstd error: the file ends inside a frame" data tokenize --tokenizer "$model" --out cz cut.jsonl.zst
else
  echo "skipped: zstd command not found (.zst inputs; Debian package zstd)"
fi
head -c 20000 corpus.jsonl.gz >cut.jsonl.gz
expect_error "cut.jsonl.gz: gzip error: unexpected end of file" data tokenize --tokenizer "$model" --out cg cut.jsonl.gz
[ -z "$(find cg -name '*.h5*' 2>/dev/null)" ] && ok "a failed run leaves no shard files" || fail "failed run left $(find cg -name '*.h5*')"

# ---- plain text in the three --text-docs modes; CRLF, blank lines, invalid UTF-8 ----
printf 'first para\r\nstill first\r\n \r\n\r\nsecond \xe2\x96\x81 para\n\t\n\xff byte\nno newline at end' >odd.txt
for mode in file paragraph line; do
  if tok --out "t_$mode" --text-docs $mode --val-fraction 0.01 "${texts[@]}" odd.txt; then
    run_check "text --text-docs $mode" $mode "t_$mode" 0.01 -- "${texts[@]}" odd.txt
  else fail "tokenize --text-docs $mode"; fi
done
# a directory input: its files in sorted order
if tok --out dir --text-docs line --val-fraction 0.01 "$data/text" odd.txt && dump dir "$model" &&
   py same t_line.dump dir.dump; then
  ok "a directory input means its files, sorted"
else fail "directory input"; fi

# ---- --append-eos, --text-field, --skip-bad-lines ----
sed 's/"text"/"body"/' corpus.jsonl | head -n 300 >body.jsonl
if tok --out e --append-eos --text-field body --val-fraction 0.5 body.jsonl; then
  run_check "--append-eos --text-field body" jsonl e 0.5 eos field=body -- body.jsonl
else fail "tokenize --append-eos"; fi

# ---- the split: independent of input order and of the number of threads ----
head -n 1000 corpus.jsonl >a.jsonl
tail -n +1001 corpus.jsonl >b.jsonl
if tok --out ab --val-fraction 0.1 a.jsonl b.jsonl && tok --out ba --val-fraction 0.1 b.jsonl a.jsonl &&
   dump ab "$model" && dump ba "$model" && msg=$(py same_split ab.dump ba.dump); then
  ok "inputs in another order: same documents in each split ($msg)"
else fail "split depends on the input order"; fi
opts=(--tokenizer "$model" --text-docs paragraph --shard-tokens 100000 "${texts[@]}")
if OMP_NUM_THREADS=1 "$rotor" data tokenize --out th1 "${opts[@]}" >/dev/null &&
   OMP_NUM_THREADS=2 "$rotor" data tokenize --out th2 "${opts[@]}" >/dev/null &&
   dump th1 "$model" && dump th2 "$model" && py same th1.dump th2.dump &&
   cmp -s th1/manifest.json th2/manifest.json; then
  ok "OMP_NUM_THREADS=1 and 2 write the same shards and manifest"
else fail "output depends on the thread count"; fi

# ---- shard size ----
if tok --out small --text-docs paragraph --shard-tokens 50000 --val-fraction 0.05 "${texts[@]}"; then
  run_check "--shard-tokens 50000" paragraph small 0.05 shard_tokens=50000 -- "${texts[@]}"
  n=$(ls small/train/*.h5 | wc -l)
  t_small=$(/usr/bin/python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(sum(s["tokens"] for s in m["splits"].values()))' small/manifest.json)
  t_big=$(/usr/bin/python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(sum(s["tokens"] for s in m["splits"].values()))' th1/manifest.json)
  [ "$n" -ge 10 ] && [ "$t_small" = "$t_big" ] && "$rotor" data inspect small --sample 0 >/dev/null &&
    ok "$n train shards, all valid, $t_small tokens as with one shard" ||
    fail "shard sizes: $n shards, $t_small vs $t_big tokens"
else fail "tokenize --shard-tokens"; fi

# ---- interrupted run ----
for i in 1 2 3 4 5 6; do cat "${texts[@]}"; done >big.txt
"$rotor" data tokenize --tokenizer "$model" --out int --text-docs paragraph --shard-tokens 200000 \
  --threads 2 big.txt >/dev/null 2>int.err &
pid=$!
for i in $(seq 200); do # interrupt once the first shards are complete
  [ -e int/train/shard_00000.h5 ] && break
  sleep 0.05
done
kill -INT $pid
wait $pid
status=$?
tmpfiles=(int/train/*.tmp int/val/*.tmp)
if [ $status -eq 130 ] && [ ${#tmpfiles[@]} -eq 0 ] && [ ! -e int/manifest.json ] &&
   grep -q "interrupted by SIGINT" int.err; then
  shards=(int/train/*.h5 int/val/*.h5)
  if [ ${#shards[@]} -eq 0 ] || "$rotor" data inspect int --sample 0 >/dev/null; then
    ok "SIGINT: status 130, no .tmp left, no manifest, ${#shards[@]} complete shard(s) valid"
  else fail "SIGINT: a remaining shard is invalid"; fi
else
  fail "SIGINT: status $status, tmp files: ${tmpfiles[*]}, $(cat int.err)"
fi
[ -e int/train/shard_00000.h5 ] || tok --out int --val-fraction 0 t.txt # ensure a shard exists
expect_error "int/train already holds shards .*--overwrite" data tokenize --tokenizer "$model" --out int t.txt
if tok --out int --overwrite --val-fraction 0 t.txt && [ "$(ls int/train)" = shard_00000.h5 ]; then
  ok "--overwrite replaces the old shards"
else fail "--overwrite"; fi

# ---- bad input ----
printf '{"text": "fine"}\n\n{"text": "also fine"}\n{"text": oops}\n{"text": "after"}\n' >bad.jsonl
expect_error "bad.jsonl:4: invalid JSON: .*skip-bad-lines" data tokenize --tokenizer "$model" --out b bad.jsonl
[ -z "$(find b -name '*.h5*' 2>/dev/null)" ] && ok "no shard files after the error" || fail "error left $(find b -name '*.h5*')"
if "$rotor" data tokenize --tokenizer "$model" --out b --skip-bad-lines --val-fraction 0 bad.jsonl >/dev/null 2>b.err &&
   grep -q "bad.jsonl:4: invalid JSON" b.err &&
   /usr/bin/python3 -c 'import json,sys; m=json.load(open("b/manifest.json")); assert m["skipped"]["bad_lines"] == 1 and m["splits"]["train"]["documents"] == 3'; then
  ok "--skip-bad-lines skips and counts"
else fail "--skip-bad-lines: $(cat b.err)"; fi
printf '{"content": "x", "id": 1}\n' >nofield.jsonl
expect_error "nofield.jsonl:1: no field 'text' in the object \(its fields: 'content', 'id'" data tokenize --tokenizer "$model" --out n nofield.jsonl
printf '{"text": 12}\n' >number.jsonl
expect_error "number.jsonl:1: field 'text' is an integer, not a string" data tokenize --tokenizer "$model" --out n number.jsonl
printf '["text"]\n' >array.jsonl
expect_error "array.jsonl:1: expected a JSON object" data tokenize --tokenizer "$model" --out n array.jsonl
expect_error "input missing.jsonl: No such file or directory" data tokenize --tokenizer "$model" --out n missing.jsonl
touch x.parquet
expect_error "x.parquet: Parquet is not read directly: convert it to JSONL" data tokenize --tokenizer "$model" --out n x.parquet

# ---- inputs that are not text (dt_input.h): refused before anything is written (as are bad
# lines of the first block: the output directory is touched when the first shard is written) ----
expect_error "^rotor: error: /bin/ls: not text: a NUL byte at byte [0-9]+ \(line 1\) \(--skip-binary skips such inputs\)" \
  data tokenize --tokenizer "$model" --out bin /bin/ls
[ ! -e bin ] && ok "a refused input: the output directory is not even created" || fail "refused /bin/ls left $(find bin)"
printf 'first line\nsecond\0line\nthird\n' >mid_nul.txt                 # the NUL is byte 17, on line 2
expect_error "mid_nul.txt: not text: a NUL byte at byte 17 \(line 2\)" data tokenize --tokenizer "$model" --out bin mid_nul.txt
printf '\xff\xfeh\0i\0' >utf16.txt
expect_error "utf16.txt: not text: a NUL byte at byte 3 .*UTF-16 byte order mark" data tokenize --tokenizer "$model" --out bin utf16.txt
for i in $(seq 30); do printf 'caf\xe9 cr\xe8me br\xfbl\xe9e\n'; done >latin1.txt # 120 invalid bytes in 540
expect_error "latin1.txt: not UTF-8 text: 120 of its 540 bytes start no valid UTF-8 character \(at most 8 may\), the first at byte 3 \(line 1\): 0xe9 0x20" \
  data tokenize --tokenizer "$model" --out bin latin1.txt
gzip -c /bin/ls >ls.jsonl.gz
expect_error "ls.jsonl.gz: not text: a NUL byte at byte [0-9]+ of the decompressed data" data tokenize --tokenizer "$model" --out bin ls.jsonl.gz
printf '{"text": "fine"}\n{"text": "caf\xe9"}\n' >bad_utf8.jsonl
expect_error "bad_utf8.jsonl:2: not UTF-8: column 14 starts no valid UTF-8 character \(0xe9 0x22 0x7d\)" \
  data tokenize --tokenizer "$model" --out bin bad_utf8.jsonl
printf '{"text": "a\\u0000b"}\n' >nul_field.jsonl
expect_error "nul_field.jsonl:1: field 'text' holds a NUL character \(\\\\u0000\) at byte 1 of its text" \
  data tokenize --tokenizer "$model" --out bin nul_field.jsonl
# a complete earlier run in the directory survives a refused run, even with --overwrite
if tok --out keep --val-fraction 0 t.txt && cp keep/manifest.json keep.manifest &&
   ! "$rotor" data tokenize --tokenizer "$model" --out keep --overwrite t.txt /bin/ls >/dev/null 2>&1 &&
   cmp -s keep/manifest.json keep.manifest && [ "$(ls keep/train)" = shard_00000.h5 ]; then
  ok "a refused run leaves the output directory as it was (shards, manifest)"
else fail "a refused run changed the output directory: $(ls -R keep)"; fi
# --skip-binary: each skipped input named in a warning, the good ones tokenized, listed in the manifest
if "$rotor" data tokenize --tokenizer "$model" --out sb --skip-binary --val-fraction 0 t.txt /bin/ls mid_nul.txt \
     latin1.txt >/dev/null 2>sb.err &&
   [ "$(grep -c 'rotor: warning: .*not \(UTF-8 \)\?text: .*; input skipped$' sb.err)" = 3 ] &&
   grep -q "^rotor: warning: /bin/ls: not text" sb.err && grep -q "^rotor: warning: mid_nul.txt: not text" sb.err &&
   grep -q "^rotor: warning: latin1.txt: not UTF-8 text" sb.err &&
   /usr/bin/python3 -c 'import json; m=json.load(open("sb/manifest.json")); assert m["inputs"] == ["t.txt"], m["inputs"]
assert m["skipped"]["not_text_inputs"] == ["/bin/ls", "mid_nul.txt", "latin1.txt"], m["skipped"]
assert m["splits"]["train"]["documents"] == 1 and m["options"]["skip_binary"]'; then
  ok "--skip-binary skips and names the inputs that are not text"
else fail "--skip-binary: $(cat sb.err)"; fi
expect_error "no input left: the 2 input\(s\) are not text and were skipped \(--skip-binary\)" \
  data tokenize --tokenizer "$model" --out bin --skip-binary /bin/ls latin1.txt
[ ! -e bin ] && ok "refused runs wrote nothing" || fail "refused runs left $(find bin)"
# A NUL past the first MiB is found while reading, here with the first block of 262144
# documents already in the open shard: the run fails, and leaves no partial shard.
/usr/bin/python3 -c 'import sys; sys.stdout.buffer.write(b"w\n" * 600000 + b"\0tail\n")' >late_nul.txt
expect_error "late_nul.txt: not text: a NUL byte at byte 1200000 \(line 600001\)" \
  data tokenize --tokenizer "$model" --out late --text-docs line late_nul.txt
[ -z "$(find late -name '*.h5*')" ] && [ ! -e late/manifest.json ] && ok "a failure mid-shard leaves no shard file" ||
  fail "a failure mid-shard left $(find late -type f)"
if "$rotor" data tokenize --tokenizer "$model" --out late --skip-binary --val-fraction 0 --text-docs line late_nul.txt \
     >/dev/null 2>late.err &&
   grep -q "late_nul.txt: not text: a NUL byte at byte 1200000 (line 600001); the rest of the input skipped (its first 600000 documents were read)" late.err &&
   /usr/bin/python3 -c 'import json; m=json.load(open("late/manifest.json")); assert m["splits"]["train"]["documents"] == 600000
assert m["skipped"]["not_text_inputs"] == ["late_nul.txt"]'; then
  ok "--skip-binary: a NUL past the first MiB skips the rest of the input, the documents before it kept"
else fail "--skip-binary, late NUL: $(cat late.err)"; fi

# ---- inspect ----
if out=$("$rotor" data inspect j --tokenizer "$model" --sample 2 2>&1); then
  docs=$(/usr/bin/python3 -c 'import json; m=json.load(open("j/manifest.json")); print(sum(s["documents"] for s in m["splits"].values()))')
  docs_fmt=$(/usr/bin/python3 -c "print(f'{$docs:,}')")
  if grep -q "total: 2 valid shard(s) of 2, $docs_fmt documents" <<<"$out" && grep -q "^sample 2: " <<<"$out" &&
     grep -q "most frequent ids" <<<"$out" && grep -q "document length (tokens): min" <<<"$out"; then
    ok "inspect on valid shards"
  else fail "inspect output: $out"; fi
else fail "inspect on valid shards: $out"; fi
cp j/train/shard_00000.h5 trunc.h5
truncate -s $(($(stat -c %s trunc.h5) / 2)) trunc.h5
expect_error "trunc.h5: .*(truncated|eof)" data inspect trunc.h5
expect_error "1 of 3 shard file\(s\) invalid" data inspect j trunc.h5
expect_error "nosuch.h5: no such file or directory" data inspect j nosuch.h5

# ---- train-tokenizer, and a tokenizer mismatch ----
if "$rotor" data train-tokenizer --out st/small --vocab-size 500 "$data/text/tinyshakespeare.txt" >tt.out 2>&1 &&
   [ -f st/small.model ] && [ -f st/small.vocab ] && grep -q "500 pieces" tt.out; then
  ok "$(grep "^train-tokenizer: wrote" tt.out)"
  if "$rotor" data tokenize --tokenizer st/small.model --out s --text-docs paragraph "$data/text/tinyshakespeare.txt" >/dev/null &&
     dump s st/small.model && msg=$(py check paragraph s "$(sha256sum st/small.model | cut -d' ' -f1)" 0.001 0 -- "$data/text/tinyshakespeare.txt"); then
    ok "tokenize with the trained tokenizer: $msg"
  else fail "tokenize with the trained tokenizer: $msg"; fi
  expect_error "tokenizer_sha256 $sha differs from st/small.model's" data inspect j --tokenizer st/small.model
else fail "train-tokenizer: $(cat tt.out)"; fi
expect_error "--model-type: 'wordpiece' is not one of bpe, unigram" data train-tokenizer --out q --vocab-size 9 --model-type wordpiece t.txt
expect_error "tokenizer training failed" data train-tokenizer --out q/tiny --vocab-size 100000 t.txt

exit $((fails != 0))
