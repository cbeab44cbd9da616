#!/usr/bin/env bash
# scripts/wandb_sync.py in W&B's offline mode (the wandb package from PyPI in a virtual
# environment BUILD/wandb-venv, or $ROTOR_WANDB_VENV, made on first use; skipped when it cannot
# be made), on a tiny GLA trained on real text with validations:
#  - the records of metrics.jsonl, sent after the run, are the W&B run's history: every number
#    at its step under train/X, val/X, equal; the run's config is its rotor.ini;
#  - sent again, nothing is sent twice and the W&B run keeps its id (RUN_DIR/wandb_sync.json);
#  - --follow beside a running trainer sends every step and ends when the trainer ends.
# The offline run file is read with a reader of W&B's record log (LevelDB's log format after a
# 7-byte header) and W&B's own Record protocol buffer.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"
venv=${ROTOR_WANDB_VENV:-$(cd "$(dirname "$rotor")" && pwd)/wandb-venv}
test_venv "$venv" "import wandb" "wandb==0.31.0"
export WANDB_SILENT=true WANDB_MODE=offline
sync=("$venv/bin/python" "$here/../scripts/wandb_sync.py")
train_ckpt gla-selective.ini 20 --set train.val_every=10 --set train.log_every=1 --set run.threads=1
check() { # RUN_DIR: the W&B history of its offline runs against its metrics.jsonl
  "$venv/bin/python" - "$1" <<'PY'
import glob, json, struct, sys
from wandb.proto import wandb_internal_pb2 as pb
run = sys.argv[1]
def records(path):  # W&B's record log: a 7-byte header, then LevelDB log blocks of 32 KiB
    b = open(path, "rb").read()
    assert b[:4] == b":W&B", path
    pos, out, part, BLOCK = 7, [], b"", 32768
    while pos + 7 <= len(b):
        left = BLOCK - pos % BLOCK
        if left < 7:
            pos += left
            continue
        _, n, kind = struct.unpack("<IHB", b[pos:pos + 7])
        if n == 0 and kind == 0:
            pos += left
            continue
        data, pos = b[pos + 7:pos + 7 + n], pos + 7 + n
        if kind == 1: out.append(data)
        elif kind == 2: part = data
        elif kind == 3: part += data
        elif kind == 4: out.append(part + data)
    return out
hist, config = {}, {}
for f in sorted(glob.glob(run + "/wandb/offline-run-*/run-*.wandb")):
    for d in records(f):
        r = pb.Record()
        r.ParseFromString(d)
        kind = r.WhichOneof("record_type")
        if kind == "history":
            items = {(i.key or "/".join(i.nested_key)): json.loads(i.value_json) for i in r.history.item}
            step = items.pop("_step")
            assert step not in hist, ("step sent twice", step)
            hist[step] = {k: v for k, v in items.items() if not k.startswith("_")}
        elif kind in ("run", "config"):  # the config comes with the run record, updates after
            items = r.run.config.update if kind == "run" else r.config.update
            config.update({i.key: json.loads(i.value_json) for i in items})
want = {}
for line in open(run + "/metrics.jsonl"):
    r = json.loads(line)
    if "step" in r:
        want[r["step"]] = {("val/" + k[4:] if k.startswith("val_") else "train/" + k): v for k, v in r.items()
                           if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}
assert hist == want, sorted(set(hist) ^ set(want)) or [(s, hist[s], want[s]) for s in want if hist[s] != want[s]][:2]
assert config.get("train", {}).get("steps") in ("20", "12"), sorted(config)
assert any(v["val/loss"] > 0 for v in hist.values() if "val/loss" in v)
print("%d steps, %d metrics" % (len(hist), sum(map(len, hist.values()))))
PY
}
"${sync[@]}" "$out/run" >"$out/sync1.log" 2>&1 || { cat "$out/sync1.log"; fail "sync"; }
grep -q "20 step(s) sent to W&B run .*, up to step 20" "$out/sync1.log" || { cat "$out/sync1.log"; fail "sync: not 20 steps"; }
check "$out/run" || fail "the W&B history of the run"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$out/run/wandb_sync.json")
"${sync[@]}" "$out/run" >"$out/sync2.log" 2>&1 || { cat "$out/sync2.log"; fail "sync again"; }
grep -q "0 step(s) sent to W&B run $id, up to step 20" "$out/sync2.log" || { cat "$out/sync2.log"; fail "sync again: sent steps twice or a new run"; }
check "$out/run" || fail "the W&B history after a second sync"
# --follow beside a running trainer
"$rotor" train "$here/../configs/tiny/gla-selective.ini" --set run.dir="$out/live" --set model.vocab_size=32000 \
  --set model.doc_mask=true --set data.train="$out/shards/train" --set data.val="$out/shards/val" \
  --set data.tokenizer="$tok" --set train.steps=12 --set train.val_every=6 --set train.log_every=1 --set run.threads=1 \
  >"$out/live.log" 2>&1 &
trainer=$!
for _ in $(seq 100); do [ -s "$out/live/metrics.jsonl" ] && break; sleep 0.2; done
"${sync[@]}" "$out/live" --follow --poll 0.5 >"$out/follow.log" 2>&1 || { cat "$out/follow.log"; fail "--follow"; }
wait "$trainer" || { cat "$out/live.log"; fail "the live run"; }
grep -q "12 step(s) sent to W&B run .*, up to step 12" "$out/follow.log" || { cat "$out/follow.log"; fail "--follow: not every step"; }
check "$out/live" || fail "the W&B history of the followed run"
finish wandb_sync
