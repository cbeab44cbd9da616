#!/usr/bin/env bash
# `rotor synth` on the classification tasks end to end (docs/classification.md "ListOps and
# text"): generated ListOps through configs/classify/listops-cpu.ini (a short run: the data
# path, validation on its own split with its accuracy, the best validation's checkpoint and
# the test accuracy's fields of it and the last, not learning), LRA's
# ListOps files and an aclImdb directory under task.path, and the errors that name a too
# short train.seq_len and a file's bad line.
set -euo pipefail
rotor=$1
src=$(cd "$(dirname "$0")/.." && pwd)
cfg=$src/configs/classify/listops-cpu.ini
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
short=(--set train.steps=30 --set train.micro_batch=8 --set train.val_every=15 --set train.val_batches=2
       --set train.log_every=15 --set train.seed=0)

# metrics NAME EXPR: asserts the Python expression EXPR over m = the run's metrics
metrics() {
    /usr/bin/env python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['metrics']; assert $2, m" \
        "$out/$1/synth_results.json" || fail "$1: synth_results.json: $2"
}

# validations every 5 steps; keep_checkpoints = 1 prunes every step but the last, not best
"$rotor" synth "$cfg" --set run.dir="$out/gen" "${short[@]}" --set train.val_every=5 --set train.keep_checkpoints=1 \
    --set task.test_examples=100 > "$out/gen.log" 2>&1 || { cat "$out/gen.log"; fail "rotor synth (generated ListOps) failed"; }
grep -q "validation loss .*, accuracy " "$out/gen.log" || fail "no validation accuracy on the generated validation split"
metrics gen "m['examples'] == 100 and m['classes'] == 10 and m['source'] == 'generated' and 0 <= m['accuracy'] <= 1"
# the best validation accuracy's checkpoint (the first step of the highest in metrics.jsonl),
# and both checkpoints' test accuracies, one line each
[[ -f $out/gen/accuracy.svg ]] || fail "no accuracy.svg"
grep -q "^last checkpoint (step 30.*test accuracy" "$out/gen.log" || fail "no line for the last checkpoint"
grep -q "^best checkpoint (step .*, val_accuracy .*test accuracy" "$out/gen.log" || fail "no line for the best checkpoint"
/usr/bin/python3 - "$out/gen" <<'PY' || fail "gen: the best checkpoint"
import json, sys
run = sys.argv[1]
val = [(j["step"], j["val_accuracy"]) for j in map(json.loads, open(f"{run}/metrics.jsonl")) if "val_loss" in j]
assert [s for s, _ in val] == [5, 10, 15, 20, 25, 30], val
top = max(a for _, a in val)
step = min(s for s, a in val if a == top)
state = json.load(open(f"{run}/checkpoints/best/trainer_state.json"))
assert state["step"] == step and state["best"] == {"metric": "val_accuracy", "value": state["best"]["value"], "step": step}, state
assert abs(state["best"]["value"] - top) < 1e-8, (state["best"], top)
res = json.load(open(f"{run}/synth_results.json"))
best, last = res["best"], res["last"]
assert best["step"] == step and best["selected_by"] == "val_accuracy" and best["val_accuracy"] == top, best
assert best["checkpoint"].endswith("/checkpoints/best") and best["test_accuracy"] == best["metrics"]["accuracy"], best
assert last["step"] == 30 and last["val_accuracy"] == val[-1][1] and last["test_accuracy"] == res["metrics"]["accuracy"], last
print(f"best val_accuracy {top} at step {step}: test accuracy {best['test_accuracy']}, last {last['test_accuracy']}")
PY

if "$rotor" synth "$cfg" --set run.dir="$out/short" --set train.seq_len=40 > "$out/short.log" 2>&1; then
    fail "train.seq_len = 40 was accepted for expressions of up to 63 tokens"
fi
grep -q "train.seq_len = 40 is shorter than the longest expression" "$out/short.log" || { cat "$out/short.log"; fail "unclear error for train.seq_len"; }

# LRA's files: a header, then expressions in their parenthesised form (csv.writer's \r\n)
mkdir -p "$out/lra"
lines=('( ( ( [MAX 2 ) 9 ) ] )\t9' '( ( ( ( [MED 1 ) 2 ) 7 ) ] )\t2' '( ( ( [SM 5 ) 7 ) ] )\t2'
       '( ( ( ( [MIN 4 ) ( ( ( [MAX 3 ) 8 ) ] ) ) 6 ) ] )\t4' '( ( ( [MED 3 ) 8 ) ] )\t5')
for split in train val test; do
    { printf 'Source\tTarget\r\n'; for l in "${lines[@]}"; do printf "$l\r\n"; done; } > "$out/lra/basic_$split.tsv"
done
printf '( ( ( [MIN 1 ) 1 ) ] )\t1\r\n' >> "$out/lra/basic_test.tsv"
"$rotor" synth "$cfg" --set run.dir="$out/files" "${short[@]}" --set task.path="$out/lra" > "$out/files.log" 2>&1 ||
    { cat "$out/files.log"; fail "rotor synth (LRA's ListOps files) failed"; }
metrics files "m['examples'] == 6 and m['source'].endswith('/lra')"
printf '( ( ( [SM 5 ) 7 ) ] )\t3\r\n' >> "$out/lra/basic_train.tsv"
if "$rotor" synth "$cfg" --set run.dir="$out/bad" --set task.path="$out/lra" > "$out/bad.log" 2>&1; then
    fail "a wrong Target was accepted"
fi
grep -q "basic_train.tsv:7: Target 3, but the expression's value is 2" "$out/bad.log" || { cat "$out/bad.log"; fail "unclear error for a wrong Target"; }

# an aclImdb directory: train/ trains, test/ validates and tests
for d in train/neg train/pos test/neg test/pos; do mkdir -p "$out/imdb/$d"; done
for i in 0 1 2 3; do
    echo "  A dull film, review $i. " > "$out/imdb/train/neg/${i}_2.txt"
    echo "A fine film, review $i, longer than the row of sixty-four bytes it is cut to." > "$out/imdb/train/pos/${i}_9.txt"
done
echo "Dull." > "$out/imdb/test/neg/0_1.txt"
echo "Fine." > "$out/imdb/test/pos/0_8.txt"
echo "Fine too." > "$out/imdb/test/pos/1_8.txt"
"$rotor" synth "$cfg" --set run.dir="$out/text" "${short[@]}" --set task.type=text_bytes --set task.path="$out/imdb" \
    --set model.vocab_size=257 > "$out/text.log" 2>&1 || { cat "$out/text.log"; fail "rotor synth (text_bytes) failed"; }
metrics text "m['examples'] == 3 and m['classes'] == 2 and m['majority_class'] == 1"
echo "ok: generated ListOps, LRA's files, aclImdb"
