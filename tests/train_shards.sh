#!/usr/bin/env bash
# A tiny model trained by `rotor train` on shards of ../shared/data/text tokenised with the
# Mistral tokenizer lowers its validation loss (document masking on, validation on held-out
# documents of the same text).
set -euo pipefail
rotor=$1
here=$(cd "$(dirname "$0")" && pwd)
shared=$here/../../shared/data
if [ ! -f "$shared/tokenizer/mistral-7b-v0.1.model" ]; then
  echo "skipped: ../shared/data not found"; exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$rotor" data tokenize --tokenizer "$shared/tokenizer/mistral-7b-v0.1.model" --out "$out/shards" \
  --text-docs paragraph --val-fraction 0.02 "$shared/text" >"$out/tokenize.log"
"$rotor" train "$here/../configs/tiny/gla-selective.ini" --set run.dir="$out/run" \
  --set model.vocab_size=32000 --set model.doc_mask=true \
  --set data.train="$out/shards/train" --set data.val="$out/shards/val" \
  --set data.tokenizer="$shared/tokenizer/mistral-7b-v0.1.model" \
  --set train.steps=200 --set train.val_every=50 --set train.lr=3e-3 >"$out/train.log"
/usr/bin/python3 - "$out/run/metrics.jsonl" <<'PY'
import json, sys
val = [(r["step"], r["val_loss"]) for r in map(json.loads, open(sys.argv[1])) if "val_loss" in r]
print("validation loss:", ", ".join(f"{s}: {v:.3f}" for s, v in val))
assert len(val) == 4, val
for (s0, v0), (s1, v1) in zip(val, val[1:]):
    assert v1 < v0, f"validation loss did not fall from step {s0} ({v0:.4f}) to {s1} ({v1:.4f})"
assert val[-1][1] < 0.8 * 10.37, "still near the uniform loss ln 32000 = 10.37"
PY
