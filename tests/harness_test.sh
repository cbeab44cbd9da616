#!/usr/bin/env bash
# lm-evaluation-harness 0.4.13, for real, against `rotor serve`: its `local-completions` model with
# the remote tokenizer (tokenized requests, batches of 4) runs task YAMLs that read the project's
# task files (dataset_path: json) for PIQA, ARC-Easy and LAMBADA, and a generate_until task on
# LAMBADA's contexts. Checked: acc / acc_norm / perplexity equal `rotor eval`'s on the same
# documents, every request's log-likelihood within 1e-4 (the harness's --log_samples), and the
# generations equal `rotor generate`'s greedy ones cut at the stop string.
# The harness goes into a virtual environment, BUILD/lmeval-venv (or $ROTOR_LMEVAL_VENV), made
# on the first run with pip; where it cannot be made the test reports skipped (77).
set -uo pipefail
rotor=$1
build=$2
. "$(dirname "$0")/text_ckpt_lib.sh"
venv=${ROTOR_LMEVAL_VENV:-$build/lmeval-venv}
test_venv "$venv" "import lm_eval" "lm-eval[api]==0.4.13"

train_ckpt fox-selective.ini 60 --set train.seq_len=256
limit=6
"$rotor" eval --ckpt "$ckpt" --tasks piqa,arc_easy,lambada_openai --data-dir "$shared/eval" --limit $limit \
  --threads 1 --out "$out/results.json" --log-samples "$out/samples.jsonl" >"$out/eval.log" 2>&1 || fail "eval"
head -n $limit "$shared/eval/lambada_openai.jsonl" | /usr/bin/python3 -c '
import json, sys
for l in sys.stdin:
    print(json.dumps({"prompt": " ".join(json.loads(l)["text"].split(" ")[:-1])}))' >"$out/prompts.jsonl"
"$rotor" generate --ckpt "$ckpt" --prompts "$out/prompts.jsonl" --temperature 0 --max-new-tokens 8 --threads 1 \
  >"$out/generated.jsonl" 2>"$out/generate.err" || fail "generate"

# the tasks as the harness's own YAMLs define them, on the local files
mkdir -p "$out/tasks"
cat >"$out/tasks/rotor_piqa.yaml" <<EOF
task: rotor_piqa
dataset_path: json
dataset_kwargs:
  data_files:
    test: $shared/eval/piqa.jsonl
test_split: test
output_type: multiple_choice
doc_to_text: "Question: {{goal}}\nAnswer:"
doc_to_target: label
doc_to_choice: "{{[sol1, sol2]}}"
metric_list: [{metric: acc}, {metric: acc_norm}]
EOF
cat >"$out/tasks/rotor_arc_easy.yaml" <<EOF
task: rotor_arc_easy
dataset_path: json
dataset_kwargs:
  data_files:
    test: $shared/eval/arc_easy.jsonl
test_split: test
output_type: multiple_choice
doc_to_text: "Question: {{question}}\nAnswer:"
doc_to_target: "{{choices.label.index(answerKey)}}"
doc_to_choice: "{{choices.text}}"
metric_list: [{metric: acc}, {metric: acc_norm}]
EOF
cat >"$out/tasks/rotor_lambada_openai.yaml" <<EOF
task: rotor_lambada_openai
dataset_path: json
dataset_kwargs:
  data_files:
    test: $shared/eval/lambada_openai.jsonl
test_split: test
output_type: loglikelihood
doc_to_text: "{{text.split(' ')[:-1]|join(' ')}}"
doc_to_target: "{{' '+text.split(' ')[-1]}}"
metric_list: [{metric: perplexity, aggregation: perplexity, higher_is_better: false}, {metric: acc}]
EOF
cat >"$out/tasks/rotor_lambada_gen.yaml" <<EOF
task: rotor_lambada_gen
dataset_path: json
dataset_kwargs:
  data_files:
    test: $shared/eval/lambada_openai.jsonl
test_split: test
output_type: generate_until
doc_to_text: "{{text.split(' ')[:-1]|join(' ')}}"
doc_to_target: "{{' '+text.split(' ')[-1]}}"
generation_kwargs: {until: ["\n"], max_gen_toks: 8, do_sample: false, temperature: 0}
metric_list: [{metric: exact_match}]
EOF

"$rotor" serve --ckpt "$ckpt" --port 0 --threads 1 >"$out/serve.out" 2>"$out/serve.err" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$out"' EXIT
for _ in $(seq 100); do grep -q "on http://" "$out/serve.out" && break; sleep 0.2; done
port=$(sed -n 's|.*on http://127.0.0.1:\([0-9]*\)/v1.*|\1|p' "$out/serve.out")
[ -n "$port" ] || { cat "$out/serve.err"; fail "the server did not start"; finish harness; }

export HF_HOME=$out/hf HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
"$venv/bin/lm_eval" --model local-completions \
  --model_args "base_url=http://127.0.0.1:$port/v1/completions,tokenizer_backend=remote,tokenized_requests=True,max_length=256" --batch_size 4 \
  --tasks rotor_piqa,rotor_arc_easy,rotor_lambada_openai,rotor_lambada_gen --include_path "$out/tasks" \
  --limit $limit --output_path "$out/harness" --log_samples >"$out/harness.log" 2>&1 \
  || { tail -30 "$out/harness.log"; fail "lm_eval"; }
grep -A12 "|  *Tasks" "$out/harness.log"

/usr/bin/python3 - "$out" <<'PY' || fail "the harness's numbers differ from rotor eval's"
import glob, json, sys
out = sys.argv[1]
rotor = json.load(open(f"{out}/results.json"))["results"]
harness = json.load(open(sorted(glob.glob(f"{out}/harness/**/results_*.json", recursive=True))[-1]))["results"]
for task, keys in {"piqa": ("acc", "acc_norm"), "arc_easy": ("acc", "acc_norm"),
                   "lambada_openai": ("perplexity", "acc")}.items():
    for k in keys:
        a, b = rotor[task][k], harness[f"rotor_{task}"][f"{k},none"]
        assert abs(a - b) <= 1e-6 * max(1, abs(a)), (task, k, a, b)
    print(f"{task}: " + ", ".join(f"{k} {rotor[task][k]:.6g}" for k in keys) + " in both")
ll = {}
for l in open(f"{out}/samples.jsonl"):
    s = json.loads(l)
    ll[(s["task"], s["doc"], s["choice"])] = (s["ll"], s["is_greedy"])
worst, n = 0, 0
for task in ("piqa", "arc_easy", "lambada_openai"):
    path = glob.glob(f"{out}/harness/**/samples_rotor_{task}_*.jsonl", recursive=True)[0]
    for l in open(path):
        s = json.loads(l)
        for choice, (h_ll, h_greedy) in enumerate(s["filtered_resps"]):  # written as strings
            h_ll, h_greedy, (r_ll, r_greedy) = float(h_ll), str(h_greedy) == "True", ll[(task, s["doc_id"], choice)]
            worst, n = max(worst, abs(h_ll - r_ll)), n + 1
            assert abs(h_ll - r_ll) < 1e-4 and h_greedy == bool(r_greedy), (task, s["doc_id"], h_ll, r_ll)
assert n == len(ll), (n, len(ll))
print(f"{n} requests: the harness's log-likelihoods are rotor eval's, max |difference| {worst:.2g}")
gen = [json.loads(l)["completion"].split("\n")[0] for l in open(f"{out}/generated.jsonl")]
path = glob.glob(f"{out}/harness/**/samples_rotor_lambada_gen_*.jsonl", recursive=True)[0]
got = {json.loads(l)["doc_id"]: json.loads(l)["filtered_resps"][0] for l in open(path)}
assert [got[i] for i in range(len(gen))] == gen, (got, gen)
print(f"generate_until: {len(gen)} generations as rotor generate's")
PY
kill -TERM $pid
wait $pid || fail "the server's exit status"
finish harness
