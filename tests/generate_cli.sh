#!/usr/bin/env bash
# `rotor generate` end to end on a tiny checkpoint trained on real text (Mistral tokenizer):
#  - greedy generation gives the same text twice, and so does seeded sampling (another seed
#    gives other text);
#  - --prompts FILE.jsonl with 3 prompts writes 3 JSON lines whose completions (text and
#    tokens) are those of the single-prompt greedy runs, and prompt 0 of a seeded batch
#    samples what it samples alone;
#  - prompt + completion stay within the training context (train.seq_len = 64), also beside
#    a shorter prompt in the same batch;
#  - EOS ends a row: with the checkpoint's eos_token_id set to a token the greedy run
#    produces, the completion stops just before its first occurrence, stop_reason "eos";
#  - bad arguments exit with status 1 and a message naming the problem.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"

train_ckpt gla-selective.ini 40 --set train.seq_len=64 --set train.lr=1e-2

# gen NAME ARGS...: stdout to $out/NAME.txt; a failure is reported with its message
gen() {
  local name=$1; shift
  "$rotor" generate --ckpt "$ckpt" "$@" >"$out/$name.txt" 2>"$out/$name.err" || fail "generate $name: $(cat "$out/$name.err")"
}
p0="First Citizen:"
p1="ROMEO: But soft, what light through yonder window breaks?"
p2="To be, or not to be"
long="$(printf 'Now is the winter of our discontent made glorious summer by this sun of York; %.0s' 1 2 3)"
greedy=(--temperature 0 --max-new-tokens 16)
sample=(--temperature 1 --top-k 50 --top-p 0.9 --max-new-tokens 16)

gen greedy_a --prompt "$p1" "${greedy[@]}" --out "$out/greedy_a.jsonl"
gen greedy_b --prompt "$p1" "${greedy[@]}"
cmp -s "$out/greedy_a.txt" "$out/greedy_b.txt" || fail "greedy generation differs between two runs"
[ "$(wc -c <"$out/greedy_a.txt")" -gt 1 ] || fail "greedy generation printed no text"
grep -q "16 tokens generated" "$out/greedy_a.err" || fail "summary: $(cat "$out/greedy_a.err")"
gen sample_a --prompt "$p0" "${sample[@]}" --seed 7
gen sample_b --prompt "$p0" "${sample[@]}" --seed 7
gen sample_c --prompt "$p0" "${sample[@]}" --seed 8
cmp -s "$out/sample_a.txt" "$out/sample_b.txt" || fail "seeded sampling differs between two runs"
cmp -s "$out/sample_a.txt" "$out/sample_c.txt" && fail "seeds 7 and 8 sampled the same text"

# batched: three prompts against the single runs
for i in 0 1 2; do
  p=p$i
  gen "single_$i" --prompt "${!p}" "${greedy[@]}" --out "$out/single_$i.jsonl"
  /usr/bin/python3 -c 'import json, sys; print(json.dumps({"prompt": sys.argv[1]}))' "${!p}" >>"$out/prompts.jsonl"
done
gen batch --prompts "$out/prompts.jsonl" "${greedy[@]}" --out "$out/batch.jsonl"
gen batch_stdout --prompts "$out/prompts.jsonl" "${greedy[@]}"
gen batch_sample --prompts "$out/prompts.jsonl" "${sample[@]}" --seed 7
gen sample_0 --prompt "$p0" "${sample[@]}" --seed 7 --out "$out/sample_0.jsonl"
# the context: a long prompt is cut at 64 tokens in all, beside a short one that is not
/usr/bin/python3 -c 'import json, sys
for p in sys.argv[1:]: print(json.dumps({"prompt": p}))' "$long" "$p0" >"$out/mixed.jsonl"
gen mixed --prompts "$out/mixed.jsonl" "${greedy[@]}"
/usr/bin/python3 - "$out" <<'PY' || fail "batched output"
import json, sys
out = sys.argv[1]
def lines(name):
    return [json.loads(l) for l in open(f"{out}/{name}")]
batch = lines("batch.jsonl")
assert len(batch) == 3, len(batch)
assert lines("batch_stdout.txt") == batch, "--out and stdout differ"
keys = {"index", "prompt", "completion", "tokens", "n_tokens", "n_prompt_tokens", "stop_reason"}
for i, row in enumerate(batch):
    assert set(row) == keys, row.keys()
    single, = lines(f"single_{i}.jsonl")
    text = open(f"{out}/single_{i}.txt", encoding="utf-8").read()
    assert text.endswith("\n") and text[:-1] == single["completion"], (text, single["completion"])
    assert row["index"] == i and row["prompt"] == single["prompt"], row
    for k in ("completion", "tokens", "n_tokens", "n_prompt_tokens", "stop_reason"):
        assert row[k] == single[k], (i, k, row[k], single[k])
    assert row["n_tokens"] == len(row["tokens"]) and row["stop_reason"] in ("eos", "length"), row
    assert row["stop_reason"] == "eos" or row["n_tokens"] == 16, row
sampled = lines("batch_sample.txt")[0]
alone, = lines("sample_0.jsonl")
assert sampled["tokens"] == alone["tokens"], (sampled, alone)
assert open(f"{out}/sample_0.txt", encoding="utf-8").read() == alone["completion"] + "\n"
long_row, short_row = lines("mixed.txt")
assert long_row["n_prompt_tokens"] > 48, long_row
assert long_row["stop_reason"] == "eos" or long_row["n_prompt_tokens"] + long_row["n_tokens"] == 64, long_row
assert short_row["tokens"] == batch[0]["tokens"], (short_row, batch[0])
print("batched: ok;", " | ".join(repr(r["completion"]) for r in batch))
PY

# EOS: the 4th greedy token of p1 made the end-of-sequence token
cp -r "$ckpt" "$out/eos_ckpt"
/usr/bin/python3 - "$out/greedy_a.jsonl" "$out/eos_ckpt/config.json" >"$out/eos_want.json" <<'PY' || fail "EOS setup"
import json, sys
row = json.loads(open(sys.argv[1]).readline())
eos = row["tokens"][3]
cfg = json.load(open(sys.argv[2]))
cfg["eos_token_id"] = eos
json.dump(cfg, open(sys.argv[2], "w"), indent=2)
print(json.dumps(row["tokens"][:row["tokens"].index(eos)]))
PY
# the edited config.json no longer matches its recorded sha256: refused, unless --no-verify
"$rotor" generate --ckpt "$out/eos_ckpt" --prompt "$p1" "${greedy[@]}" >/dev/null 2>"$out/eos.err" &&
  fail "generate loaded an edited config.json without --no-verify"
grep -Eq "config.json: .*(sha256|bytes).*--no-verify" "$out/eos.err" || fail "the edited config.json: $(cat "$out/eos.err")"
"$rotor" generate --ckpt "$out/eos_ckpt" --no-verify --prompt "$p1" "${greedy[@]}" --out "$out/eos.jsonl" >/dev/null \
  2>"$out/eos.err" || fail "generate with EOS: $(cat "$out/eos.err")"
/usr/bin/python3 - "$out/eos.jsonl" "$out/eos_want.json" <<'PY' || fail "EOS did not end the completion"
import json, sys
row = json.loads(open(sys.argv[1]).readline())
want = json.load(open(sys.argv[2]))
assert row["stop_reason"] == "eos" and row["tokens"] == want and row["n_tokens"] == len(want), (row, want)
print(f"EOS: stopped after {len(want)} tokens")
PY

expect_error() { # expect_error "pattern" rotor-generate-args...
  local pattern=$1; shift
  local msg status
  msg=$("$rotor" generate "$@" 2>&1 >/dev/null); status=$?
  if [ $status -ne 1 ] || ! grep -qE -- "$pattern" <<<"$msg"; then
    fail "rotor generate $* -> status $status, message: $msg (wanted /$pattern/)"
  else
    echo "ok: $pattern"
  fi
}
printf '{"prompt": "a"}\n{"prompt": "b"\n' >"$out/bad_json.jsonl"
printf '{"prompt": "a"}\n\n{"text": "b"}\n' >"$out/no_field.jsonl"
printf '{"prompt": "a"}\n{"prompt": ""}\n' >"$out/empty.jsonl"
: >"$out/none.jsonl"
/usr/bin/python3 -c 'import json, sys
for p in sys.argv[1:]: print(json.dumps({"prompt": p}))' "$p0" "$long $long" >"$out/too_long.jsonl"
expect_error "--ckpt DIR is required" --prompt "$p0"
expect_error "--ckpt $out/missing: No such file or directory" --ckpt "$out/missing" --prompt "$p0"
expect_error "--ckpt $out/shards: neither a checkpoint directory \(config.json\) nor a run directory" --ckpt "$out/shards" --prompt "$p0"
expect_error "--prompt is empty" --ckpt "$ckpt" --prompt ""
expect_error "no prompt: give --prompt TEXT or --prompts FILE.jsonl" --ckpt "$ckpt"
expect_error "--prompt and --prompts cannot be used together" --ckpt "$ckpt" --prompt "$p0" --prompts "$out/prompts.jsonl"
expect_error "--top-p = 0: must be in \(0, 1\]" --ckpt "$ckpt" --prompt "$p0" --top-p 0
expect_error "--top-p = 1.5: must be in \(0, 1\]" --ckpt "$ckpt" --prompt "$p0" --top-p 1.5
expect_error "--temperature = -0.5: must be a number >= 0" --ckpt "$ckpt" --prompt "$p0" --temperature -0.5
expect_error "--temperature = 'warm': expected a number" --ckpt "$ckpt" --prompt "$p0" --temperature warm
expect_error "--top-k = -1: must be >= 0" --ckpt "$ckpt" --prompt "$p0" --top-k -1
expect_error "--max-new-tokens = '0': expected an integer >= 1" --ckpt "$ckpt" --prompt "$p0" --max-new-tokens 0
expect_error "unknown option '--temprature'; did you mean '--temperature'\?" --ckpt "$ckpt" --prompt "$p0" --temprature 0
expect_error "--prompt: the prompt is [0-9]+ tokens with BOS; the context is 64 tokens \(train.seq_len in .*rotor.ini\)" \
  --ckpt "$ckpt" --prompt "$long $long"
expect_error "too_long.jsonl:2: the prompt is [0-9]+ tokens with BOS; the context is 64" --ckpt "$ckpt" \
  --prompts "$out/too_long.jsonl"
expect_error "bad_json.jsonl:2: not valid JSON" --ckpt "$ckpt" --prompts "$out/bad_json.jsonl"
expect_error "no_field.jsonl:3: expected an object with a string \"prompt\"" --ckpt "$ckpt" --prompts "$out/no_field.jsonl"
expect_error "empty.jsonl:2: the prompt is empty" --ckpt "$ckpt" --prompts "$out/empty.jsonl"
expect_error "none.jsonl: no prompts in the file" --ckpt "$ckpt" --prompts "$out/none.jsonl"
expect_error "--prompts $out/absent.jsonl: No such file" --ckpt "$ckpt" --prompts "$out/absent.jsonl"
"$rotor" generate --help | grep -q -- "--top-p P" || fail "rotor generate --help"
"$rotor" --help | grep -q "generate --ckpt DIR" || fail "rotor --help does not list generate"
finish generate
