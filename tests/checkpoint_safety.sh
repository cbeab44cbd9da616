#!/usr/bin/env bash
# Nothing lost, nothing silently wrong, on a tiny checkpoint trained on real text:
#  - a checkpoint whose model.safetensors had 64 bytes (finite floats) written into its middle
#    is refused, naming the file, by `train --resume DIR`, `generate`, `eval` and `serve`, which
#    load it only with --no-verify; `--resume auto` skips it with a warning saying why;
#  - `generate --ckpt RUN_DIR` takes the latest intact checkpoint, past the damaged one, saying so;
#  - under --no-verify, weights that are NaN are refused, naming the tensor, by `generate` and
#    `train --resume DIR`, and so is NaN optimizer state by `train --resume DIR`; finite
#    weights whose logits overflow make `generate` and `eval` fail
#    saying so (eval writes no results), and `serve` answer 500 saying so (to a generation and
#    to a scoring request) and go on;
#  - when every checkpoint is damaged, `--resume auto` fails and changes nothing;
#  - a newest checkpoint whose trainer_state.json is cut short, whose optimizer.safetensors
#    is missing, or a `latest` naming a deleted directory: `--resume auto` warns, naming what
#    is wrong, and takes the previous one;
#  - `--resume auto` with train.steps below the checkpoint's step refuses and changes nothing;
#    at train.steps it says the run is complete and trains nothing;
#  - a fresh `rotor train` into a run directory that holds a run refuses and changes nothing;
#    `--overwrite` moves the old run aside, intact;
#  - a second trainer in a run directory exits at once naming the PID of the first; the lock
#    of a trainer killed with -9 does not block `--resume auto`;
#  - a checkpoint of a run whose data.tokenizer was a relative path is evaluated from another
#    directory (its copy of the tokenizer); one without the copy and record names rotor.ini
#    and --tokenizer;
#  - the terminal shows a short summary of the config, the run directory all of it
#    (rotor.ini), and one process does not claim to reduce gradients by MPI.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"
# expect_fail NAME PATTERN CMD...: CMD exits non-zero and its stderr matches PATTERN (grep -E)
expect_fail() {
  local name=$1 pattern=$2
  shift 2
  if "$@" >"$out/$name.out" 2>"$out/$name.err"; then fail "$name: exit status 0"; return; fi
  grep -Eq -- "$pattern" "$out/$name.err" || { fail "$name: stderr lacks /$pattern/:"; cat "$out/$name.err"; }
}
# corrupt FILE [BYTE]: 64 bytes BYTE (default '?', 0x3f: floats near 0.75) written into its
# middle, its size unchanged
corrupt() {
  local size
  size=$(stat -c %s "$1")
  head -c 64 /dev/zero | tr '\0' "${2:-?}" | dd of="$1" bs=1 seek=$((size / 2)) conv=notrunc status=none
}
# set_tensor FILE NAME VALUE: every element of the F32 tensor NAME of safetensors FILE set to VALUE
set_tensor() {
  /usr/bin/python3 - "$@" <<'PY'
import json, struct, sys
path, name, value = sys.argv[1], sys.argv[2], float(sys.argv[3])
with open(path, "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    a, b = json.loads(f.read(n))[name]["data_offsets"]
    f.seek(8 + n + a)
    f.write(struct.pack("<%df" % ((b - a) // 4), *[value] * ((b - a) // 4)))
PY
}
# tree_sum DIR: the checksum of every file under DIR, to tell that nothing changed
tree_sum() { (cd "$1" && find . -type f ! -name rotor.lock -print0 | sort -z | xargs -0 sha256sum | sha256sum); }
# train ARG...: rotor train in $shared, where the run's relative data.tokenizer is
train() { (cd "$shared" && exec "$rotor" train "$@"); }

# A run of 10 steps, checkpoints at 5 and 10, the tokenizer given relative to $shared.
cd "$shared" || exit 1
"$rotor" data tokenize --tokenizer tokenizer/mistral-7b-v0.1.model --out "$out/shards" --text-docs paragraph \
  --val-fraction 0.02 text/tinyshakespeare.txt >/dev/null || fail "tokenize"
run_args=("$here/../configs/tiny/gla-selective.ini" --set model.vocab_size=32000 --set data.train="$out/shards/train"
          --set data.tokenizer=tokenizer/mistral-7b-v0.1.model --set train.val_every=0 --set train.log_every=1
          --set train.checkpoint_every=5 --set train.keep_checkpoints=0 --set run.threads=1)
train "${run_args[@]}" --set run.dir="$out/run" --set train.steps=10 >"$out/train.log" 2>&1 ||
  { cat "$out/train.log"; fail "train"; finish checkpoint_safety; }
cd "$out" || exit 1
run=$out/run ck=$run/checkpoints
lines=$(grep -c '^' "$run/metrics.jsonl")

# -- the config: all of it in the run directory, a summary on the terminal
[ -f "$run/rotor.ini" ] && grep -qx "type = gla" "$run/rotor.ini" || fail "run.dir/rotor.ini lacks the effective config"
before_step=$(sed -n '/^step 1\//q;p' "$out/train.log" | wc -l)
((before_step <= 30)) || fail "$before_step lines before the first step (the config should be a summary)"
grep -q "rotor.ini" "$out/train.log" || fail "the summary does not name the run directory's rotor.ini"
grep -q "MPI" "$out/train.log" && fail "one process says it reduces gradients by MPI"

# -- the tokenizer: recorded by absolute path and sha256, copied into the checkpoint
grep -q '"path": "/' "$ck/step_00000010/trainer_state.json" || fail "the tokenizer's path is not absolute"
cmp -s "$ck/step_00000010/tokenizer.model" "$tok" || fail "the checkpoint holds no copy of the tokenizer"
mkdir -p "$out/elsewhere" && cd "$out/elsewhere" || exit 1
"$rotor" generate --ckpt "$ck/step_00000010" --prompt "ROMEO:" --max-new-tokens 4 --threads 1 >"$out/gen.out" 2>&1 ||
  { cat "$out/gen.out"; fail "generate from another directory"; }
old=$out/old-ckpt
cp -r "$ck/step_00000005" "$old" && rm "$old/tokenizer.model"
/usr/bin/python3 - "$old" <<'PY' # a checkpoint of before the record: no copy, no "tokenizer"
import json, sys
p = sys.argv[1] + "/trainer_state.json"
s = json.load(open(p))
del s["tokenizer"], s["files"]["tokenizer.model"], s["file_sizes"]["tokenizer.model"]
json.dump(s, open(p, "w"), indent=2)
PY
expect_fail old_tokenizer "rotor.ini: data.tokenizer = tokenizer/mistral-7b-v0.1.model is not found from here.*--tokenizer" \
  "$rotor" generate --ckpt "$old" --prompt "ROMEO:" --max-new-tokens 4 --threads 1
"$rotor" generate --ckpt "$old" --tokenizer "$tok" --prompt "ROMEO:" --max-new-tokens 4 --threads 1 >/dev/null 2>&1 ||
  fail "--tokenizer does not rescue the old checkpoint"
cd "$out" || exit 1

# -- resuming a run at its end, or past train.steps
sum=$(tree_sum "$run")
expect_fail steps_below "train.steps = 5 is below step 10, where the run resumes .*raise train.steps" \
  train "${run_args[@]}" --set run.dir="$run" --set train.steps=5 --resume auto
[ "$(tree_sum "$run")" = "$sum" ] || fail "a resume refused for train.steps changed the run directory"
train "${run_args[@]}" --set run.dir="$run" --set train.steps=10 --resume auto >"$out/complete.log" 2>&1 ||
  { cat "$out/complete.log"; fail "resume auto of a complete run"; }
grep -q "at step 10 .*: the run is complete (train.steps), nothing to train" "$out/complete.log" ||
  fail "resume auto of a complete run does not say it is complete"
[ "$(grep -c '^' "$run/metrics.jsonl")" = "$lines" ] || fail "resume auto of a complete run changed metrics.jsonl"

# -- a fresh start into a run directory that holds a run
sum=$(tree_sum "$run")
expect_fail fresh_into_run "already holds a run .*--resume auto.*--overwrite" \
  train "${run_args[@]}" --set run.dir="$run" --set train.steps=10
[ "$(tree_sum "$run")" = "$sum" ] || fail "the refused fresh start changed the run directory"

# -- a corrupt checkpoint, for every command that reads one
cp -r "$run" "$out/pristine"
corrupt "$ck/step_00000010/model.safetensors"
sum=$(tree_sum "$run")
damaged="step_00000010/model.safetensors: sha256 .* differs"
expect_fail resume_dir "$damaged" train "${run_args[@]}" --set run.dir="$run" --set train.steps=12 \
  --resume "$ck/step_00000010"
expect_fail generate "$damaged.*--no-verify" "$rotor" generate --ckpt "$ck/step_00000010" --prompt "ROMEO:" --threads 1
expect_fail eval "$damaged" "$rotor" eval --ckpt "$ck/step_00000010" --tasks piqa --data-dir "$shared/eval" --limit 2 \
  --threads 1 --out "$out/results.json"
expect_fail serve "$damaged" timeout 60 "$rotor" serve --ckpt "$ck/step_00000010" --port 0 --threads 1
[ "$(tree_sum "$run")" = "$sum" ] || fail "a refused load changed the run directory"
"$rotor" generate --ckpt "$ck/step_00000010" --no-verify --prompt "ROMEO:" --max-new-tokens 2 --threads 1 \
  >/dev/null 2>&1 || fail "generate --no-verify"
"$rotor" generate --ckpt "$run" --prompt "ROMEO:" --max-new-tokens 2 --threads 1 >/dev/null 2>"$out/gen_run.err" ||
  { cat "$out/gen_run.err"; fail "generate --ckpt RUN_DIR"; }
grep -q "skipping the checkpoint step_00000010: .*sha256" "$out/gen_run.err" &&
  grep -q "its latest intact checkpoint, .*step_00000005" "$out/gen_run.err" ||
  { cat "$out/gen_run.err"; fail "generate --ckpt RUN_DIR does not take step 5 past the damaged step 10, saying so"; }

# -- under --no-verify: NaN weights, and weights whose logits overflow
nan=$out/nan-ckpt overflow=$out/overflow-ckpt
cp -r "$out/pristine/checkpoints/step_00000010" "$nan" && corrupt "$nan/model.safetensors" '\377'
nonfinite="nan-ckpt/model.safetensors: tensor model\.[a-z0-9_.]+ holds [0-9]+ non-finite values"
expect_fail nan_generate "$nonfinite" "$rotor" generate --ckpt "$nan" --no-verify --prompt "ROMEO:" --threads 1
expect_fail nan_resume "$nonfinite" train "${run_args[@]}" --set run.dir="$out/run-nan" --set train.steps=12 \
  --resume "$nan" --no-verify
[ -e "$out/run-nan/checkpoints" ] && fail "a refused resume from NaN weights wrote checkpoints"
nan_opt=$out/nan-opt-ckpt
cp -r "$out/pristine/checkpoints/step_00000010" "$nan_opt" && corrupt "$nan_opt/optimizer.safetensors" '\377'
expect_fail nan_opt_resume "nan-opt-ckpt/optimizer state [a-z_]+: tensor [a-z0-9_.]+ holds [0-9]+ non-finite values" \
  train "${run_args[@]}" --set run.dir="$out/run-nan-opt" --set train.steps=12 --resume "$nan_opt" --no-verify
cp -r "$out/pristine/checkpoints/step_00000010" "$overflow" && set_tensor "$overflow/model.safetensors" model.norm.weight 3e38
expect_fail overflow_generate "prompt 0: the logits after 0 generated tokens are not finite" \
  "$rotor" generate --ckpt "$overflow" --no-verify --prompt "ROMEO:" --threads 1
expect_fail overflow_eval "log-likelihoods of [0-9]+ requests are not finite .*, the first of piqa document 0 choice 0" \
  "$rotor" eval --ckpt "$overflow" --no-verify --tasks piqa --data-dir "$shared/eval" --limit 2 --threads 1 \
  --out "$out/overflow-results.json"
[ -e "$out/overflow-results.json" ] && fail "eval wrote results from logits that are not finite"
"$rotor" serve --ckpt "$overflow" --no-verify --port 0 --threads 1 >"$out/serve.out" 2>"$out/serve.err" &
server=$!
for _ in $(seq 100); do grep -q "on http://" "$out/serve.out" && break; sleep 0.2; done
port=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\)/v1.*|\1|p' "$out/serve.out")
/usr/bin/python3 - "$port" <<'PY' || fail "serve: overflowing logits"
import http.client, json, sys
def post(body):
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, json.loads(r.read())
for what, body in [("generation", {"prompt": "ROMEO:", "max_tokens": 4}),
                   ("scoring", {"prompt": "ROMEO: so", "max_tokens": 0, "echo": True, "logprobs": 1})]:
    status, j = post(body)
    msg = j.get("error", {}).get("message", "")
    if status != 500 or "logits for this request are not finite" not in msg:
        sys.exit("%s: %d %s" % (what, status, j))
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
c.request("GET", "/health")
if c.getresponse().status != 200: sys.exit("the server does not answer /health after the 500s")
PY
kill $server && wait $server 2>/dev/null
train "${run_args[@]}" --set run.dir="$run" --set train.steps=12 --resume auto >"$out/auto.log" 2>&1 ||
  { cat "$out/auto.log"; fail "resume auto past the damaged checkpoint"; }
grep -q "skipping the checkpoint step_00000010: .*model.safetensors: sha256" "$out/auto.log" ||
  fail "resume auto does not say why it skipped step 10"
grep -q "resumed from .*step_00000005 at step 5" "$out/auto.log" || fail "resume auto did not take step 5"

# -- every checkpoint damaged: resume auto fails and changes nothing
rm -rf "$run" && cp -r "$out/pristine" "$run"
corrupt "$ck/step_00000005/model.safetensors"
corrupt "$ck/step_00000010/optimizer.safetensors"
sum=$(tree_sum "$run")
expect_fail all_damaged "none of its 2 checkpoints is intact" \
  train "${run_args[@]}" --set run.dir="$run" --set train.steps=12 --resume auto
grep -q "initialised from seed" "$out/all_damaged.out" && fail "all damaged: started from step 0"
[ "$(tree_sum "$run")" = "$sum" ] || fail "all damaged: the run directory changed"
[ "$(grep -c '^' "$run/metrics.jsonl")" = "$lines" ] || fail "all damaged: metrics.jsonl changed"

# -- the fallbacks that used to be silent
fallback() { # NAME PATTERN: resume auto warns with PATTERN and resumes from step 5
  train "${run_args[@]}" --set run.dir="$run" --set train.steps=12 --resume auto \
    >"$out/$1.log" 2>&1 || { cat "$out/$1.log"; fail "$1: resume auto failed"; return; }
  grep -Eq "warning: .*$2" "$out/$1.log" || { fail "$1: no warning matching /$2/"; cat "$out/$1.log"; }
  grep -q "resumed from .*step_00000005 at step 5" "$out/$1.log" || fail "$1: did not resume from step 5"
}
reset_run() { rm -rf "$run" && cp -r "$out/pristine" "$run"; }
reset_run && truncate -s 100 "$ck/step_00000010/trainer_state.json"
fallback truncated_state "step_00000010: .*trainer_state.json: .*cut short"
reset_run && rm "$ck/step_00000010/optimizer.safetensors"
fallback missing_optimizer "step_00000010: .*optimizer.safetensors: missing"
reset_run && rm -r "$ck/step_00000010"
fallback latest_deleted "latest names .*step_00000010, which does not exist"

# -- --overwrite moves the old run aside, intact
reset_run
sum=$(tree_sum "$run")
train "${run_args[@]}" --set run.dir="$run" --set train.steps=3 --overwrite >"$out/overwrite.log" 2>&1 ||
  { cat "$out/overwrite.log"; fail "--overwrite"; }
aside=$(ls -d "$run".old-* 2>/dev/null | head -1)
[ -n "$aside" ] && [ "$(tree_sum "$aside")" = "$sum" ] || fail "--overwrite did not keep the old run intact"
grep -q "moved the earlier run .* to $aside" "$out/overwrite.log" || fail "--overwrite does not say where the run went"
[ "$(grep -c '^' "$run/metrics.jsonl")" = 3 ] || fail "--overwrite: the new run's metrics.jsonl"

# -- two trainers in one run directory; a killed trainer's lock
rm -rf "$run" "$run".old-*
# the first trainer writes no checkpoint before its end (never reached): nothing fills the disk
(cd "$shared" && exec "$rotor" train "${run_args[@]}" --set run.dir="$run" --set train.steps=100000 \
  --set train.checkpoint_every=0) >"$out/first.log" 2>&1 &
first=$!
trap 'kill -9 $first 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 100); do grep -qs "^step 1/" "$out/first.log" && break; sleep 0.1; done
t0=$(date +%s%N)
expect_fail second "in use by another trainer \(rotor train PID $first " \
  train "${run_args[@]}" --set run.dir="$run" --set train.steps=100000 --resume auto
(($(date +%s%N) - t0 < 5000000000)) || fail "the second trainer took more than 5 s to give up"
kill -0 $first 2>/dev/null || fail "the first trainer died"
kill -9 $first
wait $first 2>/dev/null
train "${run_args[@]}" --set run.dir="$run" --set train.steps=2 --resume auto >"$out/after_kill.log" 2>&1 ||
  { cat "$out/after_kill.log"; fail "the lock of a killed trainer blocks --resume auto"; }

finish checkpoint_safety
