#!/usr/bin/env bash
# Weighted data mixtures from `rotor train` (docs/formats.md "Data mixtures"), a tiny GLA on
# two real texts (tiny Shakespeare, WikiText-2) tokenised into two shard sets:
#  - data.train = shake=...:3, wiki=...:1 with data.stages = "6: shake=1, wiki=1" draws
#    3:1 windows a step for steps 1-6 and 1:1 after, logged as data_tokens per source, and
#    prints the stage change; validation (held out of both sources) runs;
#  - resumed from its step-4 checkpoint (before the change), the run ends with the weights
#    and optimizer state of the uninterrupted run, bit for bit;
#  - 2 ranks under mpirun (the same global batch) draw the same tokens from each source;
#  - data.on_exhausted = stop with a small third source ends the run with exit status 0,
#    a checkpoint of its last step and a message naming the source; restart notes the
#    source's second epoch instead;
#  - bad mixtures are errors naming the key.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"
"$rotor" data tokenize --tokenizer "$tok" --out "$out/shake" --text-docs paragraph --val-fraction 0 \
  "$shared/text/tinyshakespeare.txt" >/dev/null || fail "tokenize shakespeare"
"$rotor" data tokenize --tokenizer "$tok" --out "$out/wiki" --text-docs paragraph --val-fraction 0 \
  "$shared/text/wikitext2_valid.txt" >/dev/null || fail "tokenize wikitext"
head -c 6000 "$shared/text/wikitext2_test.txt" >"$out/small.txt"
"$rotor" data tokenize --tokenizer "$tok" --out "$out/small" --text-docs paragraph --val-fraction 0 \
  "$out/small.txt" >/dev/null || fail "tokenize the small text"
mix="$out/shake/train:3, $out/wiki/train:1" # named shake and wiki after their directories
args=("$here/../configs/tiny/gla-selective.ini" --set model.vocab_size=32000 --set model.doc_mask=true
      --set data.tokenizer="$tok" --set train.seq_len=64 --set train.micro_batch=2 --set train.grad_accum=2
      --set train.steps=12 --set train.val_every=6 --set train.val_batches=2 --set train.log_every=1
      --set train.checkpoint_every=4 --set train.keep_checkpoints=0 --set run.threads=1)
"$rotor" train "${args[@]}" --set data.train="$mix" --set data.stages="6: shake=1, wiki=1" \
  --set run.dir="$out/straight" >"$out/straight.log" 2>&1 || { cat "$out/straight.log"; fail "the mixture run"; }
grep -q "data: stage 1 of data.stages from step 6: shake 0.5, wiki 0.5" "$out/straight.log" ||
  { cat "$out/straight.log"; fail "no stage change in the log"; }
python3 - "$out/straight/metrics.jsonl" <<'PY' || fail "data_tokens"
import json, sys
rows = {r["step"]: r for r in map(json.loads, open(sys.argv[1])) if "loss" in r}
# 4 windows of 64 tokens a step: 3 + 1 for steps 1-6, 2 + 2 for steps 7-12
for step in range(1, 13):
    s6 = min(step, 6)
    want = {"shake": 64 * (3 * s6 + 2 * (step - s6)), "wiki": 64 * (s6 + 2 * (step - s6))}
    assert rows[step]["data_tokens"] == want, (step, rows[step]["data_tokens"], want)
assert "val_loss" in rows[6] and "val_loss" in rows[12], "no validation"
PY
cp -r "$out/straight" "$out/resumed"
rm -rf "$out/resumed/checkpoints/step_00000008" "$out/resumed/checkpoints/step_00000012"
rm -f "$out/resumed/checkpoints/latest"
"$rotor" train "${args[@]}" --set data.train="$mix" --set data.stages="6: shake=1, wiki=1" \
  --set run.dir="$out/resumed" --resume auto >"$out/resumed.log" 2>&1 || { cat "$out/resumed.log"; fail "the resumed run"; }
grep -q "resumed from $out/resumed/checkpoints/step_00000004 at step 4" "$out/resumed.log" ||
  { cat "$out/resumed.log"; fail "did not resume from step 4"; }
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$out/straight/checkpoints/step_00000012/$f" "$out/resumed/checkpoints/step_00000012/$f" ||
    fail "$f of the run resumed across the stage change differs from the uninterrupted run's"
done
# 2 ranks, 1 row each: the same 4 windows a step
if command -v mpirun >/dev/null; then
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$rotor" train "${args[@]}" \
    --set data.train="$mix" --set data.stages="6: shake=1, wiki=1" --set train.micro_batch=1 \
    --set run.dir="$out/ranks" >"$out/ranks.log" 2>&1 || { cat "$out/ranks.log"; fail "2 ranks"; }
  python3 - "$out/straight/metrics.jsonl" "$out/ranks/metrics.jsonl" <<'PY' || fail "2 ranks drew other data"
import json, math, sys
a, b = ({r["step"]: r for r in map(json.loads, open(p)) if "loss" in r} for p in sys.argv[1:])
for s in a:
    assert a[s]["data_tokens"] == b[s]["data_tokens"], (s, a[s]["data_tokens"], b[s]["data_tokens"])
    assert math.isclose(a[s]["loss"], b[s]["loss"], rel_tol=1e-4), (s, a[s]["loss"], b[s]["loss"])
PY
else
  echo "skipped: the 2-rank check (no mpirun)"
fi
# data.on_exhausted = stop: the small source (a quarter of each step) runs out
small="shake=$out/shake/train:3, small=$out/small/train:1"
windows=$(python3 -c "import json; m = json.load(open('$out/small/manifest.json')); print((m['train']['tokens'] - 1) // 64)" 2>/dev/null ||
          echo "")
"$rotor" train "${args[@]}" --set data.train="$small" --set data.on_exhausted=stop --set train.steps=1000 \
  --set train.val_every=0 --set run.dir="$out/stop" >"$out/stop.log" 2>&1 || { cat "$out/stop.log"; fail "the stop run"; }
grep -Eq "data.train: source 'small' \(.*\) ran out: all of its [0-9]+ windows were drawn by step [0-9]+; the run ends after step [0-9]+ of 1000" \
  "$out/stop.log" || { cat "$out/stop.log"; fail "no message naming the source that ran out"; }
last=$(sed -n 's/.*the run ends after step \([0-9]*\) of 1000.*/\1/p' "$out/stop.log")
[ -n "$last" ] && [ -d "$out/stop/checkpoints/step_$(printf %08d "$last")" ] || fail "no checkpoint of the last step ($last)"
[ -z "$windows" ] || [ "$last" = "$windows" ] || fail "stopped after step $last, the small source has $windows windows"
"$rotor" train "${args[@]}" --set data.train="$small" --set train.steps=$((last + 2)) --set train.val_every=0 \
  --set run.dir="$out/restart" >"$out/restart.log" 2>&1 || { cat "$out/restart.log"; fail "the restart run"; }
grep -Eq "data: source 'small' \(.*\): epoch 1 done \([0-9]+ windows\); epoch 2 starts in a fresh order" "$out/restart.log" ||
  { cat "$out/restart.log"; fail "no note of the small source's second epoch"; }
expect() { # NAME PATTERN OPTION...: rotor train with OPTIONs fails, stderr matching PATTERN
  local name=$1 pattern=$2
  shift 2
  if "$rotor" train "${args[@]}" --set run.dir="$out/$name" "$@" >"$out/$name.out" 2>"$out/$name.err"; then
    fail "$name: exit status 0"
    return
  fi
  grep -Eq -- "$pattern" "$out/$name.err" || { fail "$name: stderr lacks /$pattern/:"; cat "$out/$name.err"; }
}
expect no_weight "data.train: every source of a mixture needs a weight" --set data.train="shake=$out/shake/train, wiki=$out/wiki/train:1"
expect late_stage "data.stages: the stage at step 12 never starts: train.steps = 12" --set data.train="$mix" \
  --set data.stages="12: shake=1, wiki=0"
expect unknown "'web=1' must be NAME=WEIGHT with a source of data.train" --set data.train="$mix" \
  --set data.stages="3: shake=1, web=1"
expect bad_policy "data.on_exhausted = .never.: expected one of restart, stop" --set data.on_exhausted=never
finish data_mixture
