#!/usr/bin/env bash
# A checkpoint saved, reloaded and trained on gives the same losses and the same final
# weights as training straight through (bit for bit on the same machine and threads), under
# each learning-rate schedule, with RMSprop (its square averages saved and restored) and with
# dropout in the lra block (its masks a function of the step: docs/models.md §block-dropout-bidirectional); the
# checkpoint's rotor.ini records the schedule and the optimizer.
set -euo pipefail
rotor=$1
configs=$(cd "$(dirname "$0")/../configs" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A schedule=([gla-selective-pg-bias]=cosine [gdn-rope]=linear [fox-pro-selective]=constant
                     [transformer-rope]=cosine [rotrnn]=constant [lru]=cosine)
declare -A optimizer=([rotrnn]=rmsprop)
for cfg in gla-selective-pg-bias gdn-rope fox-pro-selective transformer-rope rotrnn lru; do
  opt=${optimizer[$cfg]:-adamw}
  common=(--set train.steps=30 --set train.log_every=1 --set train.val_every=10
          --set train.checkpoint_every=15 --set train.keep_checkpoints=0 --set train.seq_len=80
          --set train.schedule="${schedule[$cfg]}" --set train.optimizer="$opt")
  [[ $opt == rmsprop ]] && common+=(--set train.rmsprop_alpha=0.9 --set train.weight_decay=0.01
                                    --set train.lr_recurrent=3e-4)
  [[ $cfg == lru ]] && common+=(--set model.block=lra --set model.dropout=0.2 --set model.dropout_mask=channel)
  "$rotor" train "$configs/tiny/$cfg.ini" "${common[@]}" --set run.dir="$out/$cfg-a" >"$out/$cfg-a.log"
  mkdir -p "$out/$cfg-b/checkpoints"
  cp -r "$out/$cfg-a/checkpoints/step_00000015" "$out/$cfg-b/checkpoints/"
  echo step_00000015 >"$out/$cfg-b/checkpoints/latest"
  grep -qx "schedule = ${schedule[$cfg]}" "$out/$cfg-b/checkpoints/step_00000015/rotor.ini"
  grep -qx "optimizer = $opt" "$out/$cfg-b/checkpoints/step_00000015/rotor.ini"
  "$rotor" train "$configs/tiny/$cfg.ini" "${common[@]}" --set run.dir="$out/$cfg-b" --resume auto >"$out/$cfg-b.log"
  grep -q "resumed from .*step_00000015 at step 15" "$out/$cfg-b.log"
  /usr/bin/python3 - "$out/$cfg-a/metrics.jsonl" "$out/$cfg-b/metrics.jsonl" "$cfg" <<'PY'
import json, sys
a = {j["step"]: j for j in map(json.loads, open(sys.argv[1]))}
b = {j["step"]: j for j in map(json.loads, open(sys.argv[2]))}
assert sorted(b) == list(range(16, 31)), f"resumed run logged steps {sorted(b)}"
for s in b:
    for k in ("loss", "grad_norm", "lr", "tokens") + (("val_loss",) if "val_loss" in a[s] else ()):
        assert a[s][k] == b[s][k], f"step {s}: {k} straight {a[s][k]!r} vs resumed {b[s][k]!r}"
print(f"{sys.argv[3]}: steps 16-30 identical after resuming at 15 (final loss {a[30]['loss']:.6f})")
PY
  cmp "$out/$cfg-a/checkpoints/step_00000030/model.safetensors" "$out/$cfg-b/checkpoints/step_00000030/model.safetensors"
  cmp "$out/$cfg-a/checkpoints/step_00000030/optimizer.safetensors" "$out/$cfg-b/checkpoints/step_00000030/optimizer.safetensors"
done

# A classification run keeps its best validation (train.keep_best = val_accuracy, the
# default) across resumption. Resumed at step 8 with checkpoints/best replaced by a later
# step's checkpoint (as a continuation after step 8 that was discarded leaves it), the run
# restores the best of step 8's trainer state, reports the same best at every validation as
# the straight run, and ends with the same checkpoints/best.
lcfg=$configs/classify/listops-cpu.ini
lcommon=(--set data.train=task --set data.val=task --set train.steps=20 --set train.micro_batch=8
         --set train.val_every=4 --set train.val_batches=2 --set train.log_every=4 --set train.checkpoint_every=8
         --set train.keep_checkpoints=0 --set train.seed=0)
"$rotor" train "$lcfg" "${lcommon[@]}" --set run.dir="$out/listops-a" >"$out/listops-a.log"
mkdir -p "$out/listops-b/checkpoints"
for d in "$out"/listops-a/checkpoints/step_*; do
  (( 10#${d##*step_} <= 8 )) && cp -r "$d" "$out/listops-b/checkpoints/"
done
cp -r "$out/listops-a/checkpoints/step_00000020" "$out/listops-b/checkpoints/best"
echo step_00000008 >"$out/listops-b/checkpoints/latest"
"$rotor" train "$lcfg" "${lcommon[@]}" --set run.dir="$out/listops-b" --resume auto >"$out/listops-b.log"
grep -q "resumed from .*step_00000008 at step 8" "$out/listops-b.log"
grep -q "checkpoints/best: the checkpoint of step [0-9]*, the best val_accuracy so far" "$out/listops-b.log"
/usr/bin/python3 - "$out/listops-a" "$out/listops-b" <<'PY'
import json, re, sys
a, b = sys.argv[1:3]
def validations(run, first):  # "step N: validation ...; [new ]best val_accuracy V at step S" lines
    lines = [l for l in open(f"{run}.log") if re.match(r"step \d+: validation loss", l)]
    return [l for l in lines if int(l.split(":")[0][5:]) > first]
va, vb = validations(a, 8), validations(b, 8)
assert len(va) == 3 and va == vb, f"straight {va} vs resumed {vb}"
assert all("best val_accuracy" in l for l in vb), vb
sa, sb = (json.load(open(f"{r}/checkpoints/best/trainer_state.json")) for r in (a, b))
assert sa["step"] == sb["step"] and sa["best"] == sb["best"] and sa["best"]["step"] == sa["step"], (sa["best"], sb["best"])
print(f"listops: resumed at 8, the same bests; best val_accuracy {sb['best']['value']} at step {sb['step']}")
PY
cmp "$out/listops-a/checkpoints/best/model.safetensors" "$out/listops-b/checkpoints/best/model.safetensors"
