#!/usr/bin/env bash
# Zero-shot scores during training (train.eval_tasks, eval/train_eval.c), on a tiny GLA trained
# on real text with the Mistral tokenizer, scoring LAMBADA and PIQA (6 documents each) every 10
# steps:
#  - the scores logged at steps 10 and 20 (eval_TASK_METRIC in metrics.jsonl) equal those of
#    `rotor eval --limit 6` of the checkpoints saved at those steps;
#  - scoring leaves training untouched: every step's loss equals that of the same run without
#    train.eval_tasks;
#  - missing or bad keys are errors naming them.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"
eval_keys=(--set train.eval_tasks=lambada_openai,piqa --set train.eval_every=10 --set train.eval_limit=6
           --set train.eval_data_dir="$shared/eval")
common=(--set train.log_every=1 --set train.checkpoint_every=10 --set train.keep_checkpoints=0 --set run.threads=1)
train_ckpt gla-selective.ini 20 "${common[@]}" "${eval_keys[@]}"
grep -q "step 10: zero-shot lambada_openai_acc" "$out/train.log" || { cat "$out/train.log"; fail "no zero-shot line at step 10"; }
for step in 10 20; do
  "$rotor" eval --ckpt "$out/run/checkpoints/step_000000$step" --tasks lambada_openai,piqa --data-dir "$shared/eval" \
    --limit 6 --threads 1 --out "$out/eval$step.json" >"$out/eval$step.log" 2>&1 || { cat "$out/eval$step.log"; fail "rotor eval"; }
done
python3 - "$out/run/metrics.jsonl" "$out/eval10.json" "$out/eval20.json" <<'PY' || fail "in-training scores differ from rotor eval's"
import json, math, sys
rows = {r["step"]: r for r in map(json.loads, open(sys.argv[1])) if "loss" in r}
n = 0
for step, path in ((10, sys.argv[2]), (20, sys.argv[3])):
    res = json.load(open(path))["results"]
    for task, metrics in res.items():
        for m in ("acc", "acc_norm", "perplexity"):
            if m in metrics:
                got = rows[step][f"eval_{task}_{m}"]
                assert math.isclose(got, metrics[m], rel_tol=1e-8), (step, task, m, got, metrics[m])
                n += 1
    assert not any(k.startswith("eval_") for k in rows[step - 1]), f"scores at step {step - 1}"
assert n == 8, n
print(f"{n} scores equal rotor eval's")
PY
cp "$out/run/metrics.jsonl" "$out/with_eval.jsonl"
"$rotor" train "$here/../configs/tiny/gla-selective.ini" --set run.dir="$out/plain" --set model.vocab_size=32000 \
  --set model.doc_mask=true --set data.train="$out/shards/train" --set data.val="$out/shards/val" \
  --set data.tokenizer="$tok" --set train.steps=20 --set train.val_every=0 "${common[@]}" >"$out/plain.log" 2>&1 ||
  { cat "$out/plain.log"; fail "the run without scores"; }
python3 - "$out/with_eval.jsonl" "$out/plain/metrics.jsonl" <<'PY' || fail "scoring changed the training"
import json, sys
a, b = ([(r["step"], r["loss"]) for r in map(json.loads, open(p)) if "loss" in r] for p in sys.argv[1:])
assert a == b and len(a) == 20, (a, b)
PY
expect() { # NAME PATTERN OPTION...: rotor train fails, stderr matching PATTERN
  local name=$1 pattern=$2
  shift 2
  if "$rotor" train "$here/../configs/tiny/gla-selective.ini" --set run.dir="$out/$name" --set model.vocab_size=32000 \
      --set data.train="$out/shards/train" --set data.tokenizer="$tok" --set train.steps=2 "$@" \
      >"$out/$name.out" 2>"$out/$name.err"; then
    fail "$name: exit status 0"
    return
  fi
  grep -Eq -- "$pattern" "$out/$name.err" || { fail "$name: stderr lacks /$pattern/:"; cat "$out/$name.err"; }
}
expect no_dir "need train.eval_data_dir \(the folder of the task files\)" --set train.eval_tasks=piqa --set train.eval_every=1
expect no_tasks "need train.eval_tasks \(the tasks to score\)" --set train.eval_every=5
expect unknown "train.eval_tasks = piqa,squad .*squad" "${eval_keys[@]}" --set train.eval_tasks=piqa,squad
finish eval_in_training
