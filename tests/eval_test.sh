#!/usr/bin/env bash
# `rotor eval` end to end on a tiny checkpoint trained on real text (Mistral tokenizer):
#  - all six tasks run with --limit and give results.json, the Table 3 markdown table and
#    one logged sample per request;
#  - the independent PyTorch reference recomputes every logged request's log-likelihood
#    (float64, naive recurrences) to 1e-4 and agrees on is_greedy;
#  - under mpirun -np 2 (documents split across ranks) the results are the same;
#  - a missing or malformed task file is an error naming the file, line and field.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

train_ckpt fox-selective.ini 60 --set train.seq_len=256

"$rotor" eval --ckpt "$ckpt" --tasks all --data-dir "$shared/eval" --limit 12 --batch 5 \
  --out "$out/results.json" --log-samples "$out/samples.jsonl" >"$out/eval.log" 2>"$out/eval.err" || fail "eval"
cat "$out/eval.log"
grep -q "| LMB. ppl" "$out/eval.log" || fail "no markdown table"
/usr/bin/python3 - "$out/results.json" "$out/samples.jsonl" <<'PY' || fail "results.json / samples"
import json, sys
res = json.load(open(sys.argv[1]))
want = {"lambada_openai": ("acc", "perplexity"), "piqa": ("acc", "acc_norm"), "hellaswag": ("acc", "acc_norm"),
        "winogrande": ("acc",), "arc_easy": ("acc", "acc_norm"), "arc_challenge": ("acc", "acc_norm")}
for task, keys in want.items():
    r = res["results"][task]
    for k in keys:
        assert k in r and k + "_stderr" in r, (task, k, r)
    assert res["n-samples"][task]["effective"] == 12, res["n-samples"][task]
    assert len(res["task_hashes"][task]) == 64
samples = [json.loads(l) for l in open(sys.argv[2])]
per_task = {}
for s in samples:
    per_task[s["task"]] = per_task.get(s["task"], 0) + 1
expected = {"lambada_openai": 12, "piqa": 24, "hellaswag": 48, "winogrande": 24}
for t, n in expected.items():
    assert per_task[t] == n, (t, per_task[t])
print("results.json and samples: ok,", len(samples), "requests")
PY
/usr/bin/python3 "$here/reference/rotor_ref.py" loglik --ckpt "$ckpt" --samples "$out/samples.jsonl" --atol 1e-4 \
  || fail "PyTorch reference disagrees"

mpirun --oversubscribe --bind-to none -np 2 "$rotor" eval --ckpt "$ckpt" --tasks all --data-dir "$shared/eval" \
  --limit 12 --batch 3 --threads 1 --out "$out/results2.json" --log-samples "$out/samples2.jsonl" >/dev/null 2>&1 \
  || fail "eval under mpirun"
/usr/bin/python3 - "$out/samples.jsonl" "$out/samples2.jsonl" <<'PY' || fail "mpirun results differ"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b)
worst = max(abs(x["ll"] - y["ll"]) for x, y in zip(a, b))
assert worst < 1e-4 and all(x["is_greedy"] == y["is_greedy"] for x, y in zip(a, b)), worst
print(f"mpirun -np 2: same requests, max |ll difference| {worst:.2g}")
PY

mkdir -p "$out/bad"
cp "$shared/eval/piqa.jsonl" "$out/bad/"
sed -i '3s/"label": [01]/"labl": 1/' "$out/bad/piqa.jsonl"
msg=$("$rotor" eval --ckpt "$ckpt" --tasks piqa --data-dir "$out/bad" 2>&1 >/dev/null)
grep -q 'piqa.jsonl:3.*label' <<<"$msg" || fail "malformed task file: $msg"
msg=$("$rotor" eval --ckpt "$ckpt" --tasks arc_easy --data-dir "$out/bad" 2>&1 >/dev/null)
grep -q 'arc_easy.jsonl' <<<"$msg" || fail "missing task file: $msg"
msg=$("$rotor" eval --ckpt "$ckpt" --tasks piqa,hellaswg --data-dir "$shared/eval" 2>&1 >/dev/null)
grep -q 'hellaswg' <<<"$msg" || fail "unknown task: $msg"
finish eval
