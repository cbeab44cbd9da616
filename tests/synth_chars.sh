#!/usr/bin/env bash
# task.type = chars end to end: `rotor synth` on PTB-format character files (nnRNN's
# data/pennchar names) trains a small GLA for a few steps, logs val_bpc = val_loss / ln 2, and
# scores every character of the valid and test texts once (bits per character, accuracy, the
# vocabulary in synth_results.json and in the checkpoint's data position).
set -euo pipefail
rotor=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$out/ptb"
/usr/bin/python3 - "$out/ptb" <<'PY'
import random, sys
random.seed(1)
words = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran"]
for name, lines in (("train", 300), ("valid", 20), ("test", 30)):
    with open(f"{sys.argv[1]}/{name}.txt", "w") as f:
        for _ in range(lines):
            f.write(" " + " _ ".join(" ".join(w) for w in random.choices(words, k=6)) + " \n")
PY
cat > "$out/ch.ini" <<INI
[model]
type = gla
hidden_size = 32
num_layers = 1
num_heads = 2
[pe]
type = nope
[train]
seq_len = 50
micro_batch = 8
steps = 20
lr = 3e-3
optimizer = rmsprop
weight_decay = 0
val_every = 10
val_batches = 2
log_every = 10
[data]
train = task
[task]
type = chars
text_format = ptb
path = $out/ptb
[run]
dir = $out/run
INI
"$rotor" synth "$out/ch.ini" > "$out/run.log" 2>&1 || { cat "$out/run.log"; fail "rotor synth failed"; }
grep '^chars' "$out/run.log"
/usr/bin/python3 - "$out" <<'PY'
import json, math, sys
out = sys.argv[1]
def symbols(name):
    return sum(len(line.split()) + 1 for line in open(f"{out}/ptb/{name}.txt"))
m = json.load(open(f"{out}/run/synth_results.json"))["metrics"]
vocab = [c for c in "thecatsonamdgr"] + ["_", "<eos>"]
assert m["vocab_size"] == len(m["vocab"]) and set(m["vocab"]) <= set(vocab) and "<eos>" in m["vocab"], m["vocab"]
for split, name in (("valid", "valid"), ("test", "test")):
    r = m[split]
    assert r["characters"] == symbols(name) - 1, (split, r["characters"], symbols(name))
    assert abs(r["bpc"] - r["loss"] / math.log(2)) < 1e-6 * r["bpc"], r
    assert r["bpc"] < math.log2(len(m["vocab"])), f"{split}: {r['bpc']} bits per character, no better than uniform"
rows = [json.loads(l) for l in open(f"{out}/run/metrics.jsonl")]
vals = [r for r in rows if "val_loss" in r]
assert vals and all(abs(r["val_bpc"] - r["val_loss"] / math.log(2)) < 1e-6 for r in vals), vals
st = json.load(open(f"{out}/run/checkpoints/step_00000020/trainer_state.json"))
assert st["data"]["vocab"] == m["vocab"], "the checkpoint's vocabulary"
PY
echo ok
