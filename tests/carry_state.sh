#!/usr/bin/env bash
# train.carry_state (docs/models.md §carried-states): truncated backpropagation through time with the
# recurrent state carried across windows, on a generated text read as 8 streams.
#  - A checkpoint holds every stream's state (carry_state.safetensors [8, width]); resuming
#    from it gives the losses, validations and final weights and states of the straight run
#    bit for bit, across a pass boundary (where the streams restart from zero states).
#  - 2 ranks x 1 micro-batch read the streams of 1 rank x 2 accumulated micro-batches: the
#    same losses (to the order of the sums), and the 1-rank checkpoint resumes on 2 ranks.
#  - train.plateau_factor halves the learning rate at each validation that is not the best,
#    and the factor survives resumption.
#  - rotor synth scores the valid and test texts as task.eval_streams carried streams, every
#    symbol after the first once, for the last checkpoint and the best validation's; a resume with another stream count, and a mixer that cannot
#    carry, are refused with messages naming the keys.
set -euo pipefail
rotor=$1
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
fail() { echo "FAIL: $*" >&2; exit 1; }
# py [ARG...] <<'PY': python3 on the script, with out ($out), metrics(RUN) (a run's metrics by
# step) and same_steps(A, B, FIRST, KEYS, VAL_KEYS) (run B logged exactly steps FIRST-30, each
# as run A's in KEYS, and in VAL_KEYS where A validated) defined
py() {
  /usr/bin/python3 -c "import json, sys
out = sys.argv[1]
def metrics(run):
    return {j['step']: j for j in map(json.loads, open(f'{out}/{run}/metrics.jsonl'))}
def same_steps(a, b, first, keys, val_keys):
    a, b = metrics(a), metrics(b)
    assert sorted(b) == list(range(first, 31)), sorted(b)
    for s in b:
        for k in keys + (val_keys if 'val_loss' in a[s] else ()):
            assert a[s][k] == b[s][k], (s, k, a[s][k], b[s][k])
    return a
$(cat)" "$out" "$@"
}
/usr/bin/python3 - "$out/text.txt" <<'PY'
import random, sys
random.seed(3)
words = ["alpha", "beta", "gamma", "delta", "rot", "orbit", "spin", "turn"]
open(sys.argv[1], "w").write(" ".join(random.choice(words) for _ in range(600)) + "\n")
PY
cat > "$out/c.ini" <<INI
[model]
type = lstm
block = rnn
hidden_size = 16
num_layers = 1
[pe]
type = nope
[train]
seq_len = 20
micro_batch = 4
grad_accum = 2
steps = 30
carry_state = true
optimizer = rmsprop
lr = 3e-3
plateau_factor = 0.5
schedule = constant
warmup_frac = 0
weight_decay = 0
val_every = 5
checkpoint_every = 15
keep_checkpoints = 0
log_every = 1
[task]
type = chars
path = $out/text.txt
eval_streams = 4
[data]
train = task
[run]
threads = 1
INI
launch=() # the 2-rank runs: mpirun
run() { # run NAME ARGS...: rotor train of c.ini into $out/NAME (log NAME.log)
  local name=$1; shift
  "${launch[@]}" "$rotor" train "$out/c.ini" --set run.dir="$out/$name" "$@" >"$out/$name.log" 2>&1 \
    || { cat "$out/$name.log"; fail "run $name"; }
}
resume() { # resume FROM STEP NAME ARGS...: run NAME from a copy of FROM's checkpoint of STEP
  local from=$1 step dir=$out/$3/checkpoints
  step=$(printf 'step_%08d' "$2")
  mkdir -p "$dir" && cp -r "$out/$from/checkpoints/$step" "$dir/" && echo "$step" >"$dir/latest"
  shift 2
  run "$@" --resume auto
}
run a
resume a 15 b
py <<'PY'
import struct
same_steps("a", "b", 16, ("loss", "grad_norm", "lr"), ("val_loss", "val_bpc"))
f = open(f"{out}/a/checkpoints/step_00000015/carry_state.safetensors", "rb").read()
n = struct.unpack("<Q", f[:8])[0]
head = json.loads(f[8:8 + n])
assert head["state"]["shape"] == [8, 32] and head["state"]["dtype"] == "F32", head
assert head["__metadata__"]["streams"] == "8", head
vals = struct.unpack(f"<{8 * 32}f", f[8 + n:])
assert any(v != 0 for v in vals), "the saved states are all zero"
n = len(open(f"{out}/text.txt").read())
train = n - 2 * int(n * 0.05) - 1  # labels of the train text (one file cut by the default fractions)
W = max(-(-((j + 1) * train // 8 - j * train // 8) // 20) for j in range(8))
assert 15 < W < 30, W  # the resumed steps cross a pass boundary
print(f"resumed at step 15: steps 16-30 identical (a pass is {W} windows: the streams restart at step {W + 1})")
PY
for f in model.safetensors optimizer.safetensors carry_state.safetensors; do
  cmp "$out/a/checkpoints/step_00000030/$f" "$out/b/checkpoints/step_00000030/$f" || fail "step 30 $f differs after resuming"
done

# train.plateau_factor = 0.5 at a learning rate high enough for validations to get worse
run p --set train.lr=0.3 --set train.checkpoint_every=10
resume p 20 p-b --set train.lr=0.3 --set train.checkpoint_every=10
py <<'PY'
a = same_steps("p", "p-b", 21, ("loss", "lr"), ("val_loss",))
best, halved = None, []
for s in range(5, 30, 5):
    v = a[s]["val_loss"]
    worse = best is not None and v >= best
    assert a[s + 1]["lr"] == a[s]["lr"] * (0.5 if worse else 1), (s, v, best, a[s]["lr"], a[s + 1]["lr"])
    if worse:
        halved.append(s)
    best = v if best is None else min(best, v)
print(f"plateau: the learning rate halved after the validations of steps {halved}, the same after resuming at 20")
PY
# at learning rate 1e-30 (no weight changes in fp32) no validation improves on the first: every
# later one halves the factor
run z --set train.lr=1e-30 --set train.steps=20
py <<'PY'
st = json.load(open(f"{out}/z/checkpoints/step_00000020/trainer_state.json"))["plateau"]
m = metrics("z")
assert st["lr_scale"] == 0.125 and abs(st["best_val_loss"] - m[5]["val_loss"]) < 1e-7, (st, m[5]["val_loss"])
PY
[ "$(grep -c 'is not below the best' "$out/z.log")" = 3 ] || fail "lr 1e-30: not 3 halvings in the log"

launch=(mpirun --oversubscribe --bind-to none -np 2)
run two --set train.grad_accum=1
resume a 15 two-b --set train.grad_accum=1 # the 1-rank checkpoint on 2 ranks
launch=()
py <<'PY'
a = metrics("a")
for run, first in (("two", 1), ("two-b", 16)):
    m = metrics(run)
    worst = max(abs(a[s]["loss"] - m[s]["loss"]) / a[s]["loss"] for s in range(first, 31))
    vworst = max(abs(a[s]["val_loss"] - m[s]["val_loss"]) / a[s]["val_loss"] for s in (20, 30))
    assert worst < 1e-4 and vworst < 1e-4, (run, worst, vworst)
    print(f"{run}: losses of steps {first}-30 agree with 1 rank x 2 micro-batches to {worst:.1e}")
PY

"$rotor" synth "$out/c.ini" --set run.dir="$out/s" --set train.steps=10 --set train.keep_best=val_loss >"$out/s.log" 2>&1 || { cat "$out/s.log"; fail "synth"; }
grep -q "^chars valid: .*(carried states)" "$out/s.log" || fail "synth did not score with carried states"
py <<'PY'
res = json.load(open(f"{out}/s/synth_results.json"))
m, best = res["metrics"], res["best"]
# the best validation's checkpoint is scored too: its valid score is the validation that chose it
assert best["selected_by"] == "val_loss" and abs(best["value"] - best["metrics"]["valid"]["loss"]) < 1e-5, best
n = len(open(f"{out}/text.txt").read())
valid, test = int(n * 0.05), int(n * 0.05)
assert m["valid"]["characters"] == valid - 1 and m["test"]["characters"] == test - 1, (m["valid"], m["test"], n)
assert m["valid"]["streams"] == 4 and m["test"]["streams"] == 4
val = metrics("s")[10]["val_loss"]
assert abs(val - m["valid"]["loss"]) < 1e-5, (val, m["valid"]["loss"])
print(f"synth: valid {m['valid']['bpc']:.3f} / test {m['test']['bpc']:.3f} bits per character over 4 streams")
PY

if "$rotor" train "$out/c.ini" --set train.micro_batch=2 --set run.dir="$out/b" --resume auto >"$out/bad.log" 2>&1; then
  fail "resuming with 4 streams instead of 8 was accepted"
fi
grep -q "carried-state streams" "$out/bad.log" || { cat "$out/bad.log"; fail "no message naming the stream count"; }
if "$rotor" train "$out/c.ini" --set model.type=gla --set run.dir="$out/g" >"$out/gla.log" 2>&1; then
  fail "train.carry_state with model.type = gla was accepted"
fi
grep -q "train.carry_state = true: only the recurrent cells" "$out/gla.log" || { cat "$out/gla.log"; fail "no message for gla"; }
echo "carry_state: ok"
