#!/usr/bin/env bash
# train.init_from (src/train/init_from.h), on a tiny GLA trained on real text:
#  - a run initialised from a rotor checkpoint (and from its run directory: the latest
#    checkpoint) with a learning rate of 1e-30 (an update far below every weight's rounding;
#    the least the config allows) validates at the checkpoint's validation loss (within 1e-6 of
#    it; a random start is off by ~3): the weights arrive unchanged; it starts at step 0;
#  - from a Hugging Face style directory made of the same weights in BF16, split into two
#    shards with model.safetensors.index.json: the same loss within BF16 rounding;
#  - errors naming the tensor and both shapes (another d_model), an unexpected tensor, a
#    tensor holding a NaN (naming it), a damaged checkpoint, a missing path, and init_from
#    with decay_from.
set -uo pipefail
rotor=$1
. "$(dirname "$0")/text_ckpt_lib.sh"
common=(--set train.log_every=1 --set run.threads=1)
train_ckpt gla-selective.ini 30 --set train.val_every=30 "${common[@]}"
[ -d "$ckpt" ] || { fail "no step-30 checkpoint"; finish init_from; }
init_args=("$here/../configs/tiny/gla-selective.ini" --set model.vocab_size=32000 --set model.doc_mask=true
           --set data.train="$out/shards/train" --set data.val="$out/shards/val" --set data.tokenizer="$tok"
           --set train.steps=1 --set train.val_every=1 --set train.lr=1e-30 --set train.lr_start=1e-30 --set train.lr_min=1e-30
           "${common[@]}")
val_loss() { python3 -c 'import json,sys; print([json.loads(l)["val_loss"] for l in open(sys.argv[1]) if "val_loss" in l][int(sys.argv[2])])' "$@"; }
want=$(val_loss "$out/run/metrics.jsonl" -1)

# rotor python: BF16 shards of the checkpoint's weights, an index and config.json
python3 - "$ckpt" "$out/hf" <<'PY' || fail "making the Hugging Face style directory"
import json, os, shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    data = b[8 + n:]
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in head.items() if k != "__metadata__"}
def bf16(raw):  # round to nearest even
    out = bytearray()
    for (u,) in struct.iter_unpack("<I", raw):
        out += struct.pack("<H", ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF)
    return bytes(out)
def write(path, tensors):
    head, blobs, off = {}, [], 0
    for k, (dt, shape, raw) in tensors.items():
        head[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(head).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
t = read(os.path.join(src, "model.safetensors"))
os.makedirs(dst)
names = sorted(t)
shards = [names[: len(names) // 2], names[len(names) // 2:]]
wmap = {}
for i, part in enumerate(shards):
    f = "model-%05d-of-00002.safetensors" % (i + 1)
    write(os.path.join(dst, f), {k: ("BF16", t[k][1], bf16(t[k][2])) for k in part})
    wmap.update({k: f for k in part})
json.dump({"metadata": {}, "weight_map": wmap}, open(os.path.join(dst, "model.safetensors.index.json"), "w"))
shutil.copy(os.path.join(src, "config.json"), dst)
# one with a tensor the model lacks
os.makedirs(dst + "-extra")
extra = dict(t)
extra["model.extra.weight"] = ("F32", [2], struct.pack("<2f", 1, 2))
write(os.path.join(dst + "-extra", "model.safetensors"), extra)
# one whose final norm holds a NaN
os.makedirs(dst + "-nan")
nan = dict(t)
dt, shape, raw = nan["model.norm.weight"]
nan["model.norm.weight"] = (dt, shape, struct.pack("<f", float("nan")) + raw[4:])
write(os.path.join(dst + "-nan", "model.safetensors"), nan)
PY

run_init() { # NAME FROM [OPTION...]: a run into $out/NAME initialised from FROM
  local name=$1 from=$2
  shift 2
  "$rotor" train "${init_args[@]}" --set run.dir="$out/$name" --set train.init_from="$from" "$@" >"$out/$name.log" 2>&1
}
for from in "$ckpt" "$out/run"; do
  name=from_$(basename "$from")
  run_init "$name" "$from" || { cat "$out/$name.log"; fail "init_from = $from"; continue; }
  grep -q "initialised from the checkpoint $ckpt" "$out/$name.log" || { cat "$out/$name.log"; fail "$name: no line naming the checkpoint"; }
  got=$(val_loss "$out/$name/metrics.jsonl" 0)
  python3 -c 'import sys; g, w = map(float, sys.argv[1:]); assert abs(g - w) <= 1e-6 * abs(w), (g, w)' "$got" "$want" ||
    fail "$name: validation loss $got, the checkpoint's is $want"
  python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if "\"step\"" in l]; assert r[0]["step"] == 1 and r[0]["tokens"] > 0, r[0]' \
    "$out/$name/metrics.jsonl" || fail "$name does not start at step 0"
done
if run_init hf "$out/hf"; then
  grep -q "initialised from the 2 shards of $out/hf" "$out/hf.log" || { cat "$out/hf.log"; fail "hf: no line naming the shards"; }
  got=$(val_loss "$out/hf/metrics.jsonl" 0)
  python3 -c 'import sys; g, w = map(float, sys.argv[1:]); assert abs(g - w) > 1e-6 * abs(w) and abs(g - w) < 0.02 * abs(w), (g, w)' "$got" "$want" ||
    fail "hf: validation loss $got, the checkpoint's is $want (BF16 weights: close, not equal)"
else
  cat "$out/hf.log"
  fail "init_from = the BF16 shards"
fi

expect() { # NAME PATTERN [OPTION...]: a run that fails with stderr matching PATTERN
  local name=$1 pattern=$2
  shift 2
  if "$rotor" train "${init_args[@]}" --set run.dir="$out/err_$name" "$@" >"$out/err_$name.log" 2>&1; then
    fail "$name: succeeded"
  elif ! grep -qE -- "$pattern" "$out/err_$name.log"; then
    cat "$out/err_$name.log"
    fail "$name: message lacks '$pattern'"
  fi
}
expect shape "model.safetensors: tensor model\.[a-z_.0-9]+ has shape \[[0-9, ]+\], the model expects \[[0-9, ]+\]" \
  --set train.init_from="$ckpt" --set model.hidden_size=96
expect extra "tensor model.extra.weight \[2\] is not a parameter of the model" --set train.init_from="$out/hf-extra"
expect nan "hf-nan/model.safetensors: tensor model.norm.weight holds 1 non-finite values \(the first at element 0\)" \
  --set train.init_from="$out/hf-nan"
expect missing "train.init_from = $out/none: $out/none: no such directory" --set train.init_from="$out/none"
expect both "train.init_from = .* and train.decay_from = .* name two starting points" --set train.init_from="$ckpt" \
  --set train.schedule=wsd --set train.decay_from="$ckpt"
cp -r "$ckpt" "$out/damaged"
printf 'x' | dd of="$out/damaged/model.safetensors" bs=1 seek=4000 conv=notrunc 2>/dev/null
expect damaged "damaged/model.safetensors.*sha256" --set train.init_from="$out/damaged"
finish init_from
