#!/usr/bin/env bash
# run.profile_steps (src/train/step_profile.h) on the CPU backend, a tiny GLA on real text:
# steps 3 to 5 of 6 profiled into RUN_DIR/profile; trace.json parses as trace-event JSON with
# three "step N" events (3, 4, 5), each holding its op events back to back inside the step's
# wall time; the op events summed per op and shape equal ops.tsv's ms and calls; the run's
# metrics are those of an unprofiled run (the profile observes, it does not change the step);
# errors: a malformed range and one past train.steps.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"
train_ckpt gla-selective.ini 6 --set train.log_every=1 --set run.threads=1 --set run.profile_steps=3:5
grep -q "run.profile_steps: steps 3 to 5 profiled into $out/run/profile" "$out/train.log" ||
  { cat "$out/train.log"; fail "no line naming the profile"; }
python3 - "$out/run/profile" <<'PY' || fail "the trace and the table"
import csv, json, sys
d = sys.argv[1]
ev = json.load(open(d + "/trace.json"))["traceEvents"]
steps = [e for e in ev if e["cat"] == "step"]
assert [e["name"] for e in steps] == ["step 3", "step 4", "step 5"], [e["name"] for e in steps]
sums = {}
for s in steps:
    ops = [e for e in ev if e["cat"] == "op" and s["ts"] <= e["ts"] < s["ts"] + s["dur"]]
    assert len(ops) > 20, len(ops)
    end = s["ts"]
    for e in sorted(ops, key=lambda e: e["ts"]):
        assert e["ph"] == "X" and e["dur"] >= 0 and abs(e["ts"] - end) < 1e-3, e
        end = e["ts"] + e["dur"]
        k = (e["name"], e["args"]["shape"])
        c, ms = sums.get(k, (0, 0.0))
        sums[k] = (c + e["args"]["calls"], ms + e["dur"] / 1e3)
    assert end <= s["ts"] + s["dur"] + 1e-3, (end, s)
assert sum(1 for e in ev if e["cat"] == "op") == sum(1 for s in steps for e in ev if e["cat"] == "op" and s["ts"] <= e["ts"] < s["ts"] + s["dur"])
rows = list(csv.DictReader(open(d + "/ops.tsv"), delimiter="\t"))
table = {(r["op"], r["shape"]): (int(r["calls"]), float(r["ms"])) for r in rows}
assert set(table) == set(sums), sorted(set(table) ^ set(sums))[:5]
for k, (c, ms) in table.items():
    assert c == sums[k][0] and abs(ms - sums[k][1]) <= 1e-5 + 1e-6 * ms, (k, table[k], sums[k])
assert any(k[0] == "matmul_fwd" for k in table), sorted(table)[:5]
PY
# the same run without the profile: the same losses
"$rotor" train "$here/../configs/tiny/gla-selective.ini" --set run.dir="$out/plain" --set model.vocab_size=32000 \
  --set model.doc_mask=true --set data.train="$out/shards/train" --set data.val="$out/shards/val" \
  --set data.tokenizer="$tok" --set train.steps=6 --set train.val_every=0 --set train.log_every=1 \
  --set run.threads=1 >"$out/plain.log" 2>&1 || fail "the unprofiled run"
python3 - "$out/run/metrics.jsonl" "$out/plain/metrics.jsonl" <<'PY' || fail "the profile changed the losses"
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p) if '"loss"' in l] for p in sys.argv[1:])
assert a == b and len(a) == 6, (a, b)
PY
[ ! -e "$out/plain/profile" ] || fail "an unprofiled run wrote a profile"
for bad in "3" "0:2" "4:3" "2:x" "5:7"; do
  if "$rotor" train "$here/../configs/tiny/gla-selective.ini" --set run.dir="$out/bad" --set train.steps=6 \
       --set run.profile_steps="$bad" >"$out/bad.log" 2>&1; then
    fail "run.profile_steps = $bad accepted"
  elif ! grep -q "run.profile_steps = '\?$bad" "$out/bad.log"; then
    cat "$out/bad.log"
    fail "run.profile_steps = $bad: the message does not name it"
  fi
done
finish profile_steps
