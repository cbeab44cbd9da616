#!/usr/bin/env bash
# The recurrent statistics of metrics.jsonl (its "recurrent" record at each validation,
# docs/formats.md): for a short RotRNN ListOps run and a short nnRNN copy run with gamma clamped
# at 0.958, the last validation's moduli and angles equal those computed here from the last
# checkpoint (RotRNN: gamma = exp(-exp(gamma_log)); nnRNN: the eigenvalues of its Schur form
# Lambda + T by numpy, not the clamped gamma), the angle histogram counts every channel, and the
# state norms are positive with the whole state's at least its heads' mean. About 10 s on one core.
set -euo pipefail
rotor=$1
configs=$(cd "$(dirname "$0")/../configs" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$rotor" synth "$configs/classify/listops-rotrnn-cpu.ini" --set train.steps=20 --set train.val_every=10 \
  --set task.test_examples=64 --set run.threads=1 --set run.dir="$out/rotrnn" >"$out/rotrnn.log"
"$rotor" synth "$configs/nnrnn/copy-cpu.ini" --set task.delay=30 --set train.steps=40 --set train.val_every=20 \
  --set model.gamma_clamp=0.958 --set run.threads=1 --set run.dir="$out/nnrnn" >"$out/nnrnn.log"
/usr/bin/python3 - "$out" "$(dirname "$0")/../scripts" <<'PY'
import json, math, sys
import numpy as np

out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from nnrnn_schur import fold, load_checkpoint, schur_form  # noqa: E402

def tensors(run, step):
    return load_checkpoint(f"{out}/{run}/checkpoints/step_{step:08d}")

def last_stats(run):
    recs = [json.loads(l) for l in open(f"{out}/{run}/metrics.jsonl") if '"recurrent"' in l]
    assert recs, f"{run}: no recurrent record in metrics.jsonl"
    return recs[-1]["step"], recs[-1]["recurrent"]

def close(a, b, what):
    assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6), f"{what}: metrics {a}, checkpoint {b}"

def hist(theta):
    return np.bincount(np.minimum((fold(theta) / np.pi * 16).astype(int), 15), minlength=16).tolist()

step, layers = last_stats("rotrnn")
t = tensors("rotrnn", step)
assert len(layers) == 2, f"rotrnn: {len(layers)} layer records, the config has 2"
for l, o in enumerate(layers):
    p = f"model.layers.{l}.attn."
    gamma = np.exp(-np.exp(t[p + "gamma_log"]))
    close(o["modulus_min"], gamma.min(), f"rotrnn layer {l} modulus_min")
    close(o["modulus_max"], gamma.max(), f"rotrnn layer {l} modulus_max")
    close(o["theta_mean"], t[p + "theta"].mean(), f"rotrnn layer {l} theta_mean")
    assert o["theta_hist"] == hist(t[p + "theta"].ravel()), f"rotrnn layer {l}: {o['theta_hist']}"
    assert 0 < o["state_norm_head"] <= o["state_norm"], f"rotrnn layer {l}: {o}"

step, (o,) = last_stats("nnrnn")
t = tensors("nnrnn", step)
p = "model.layers.0.attn."
T = np.tril(t[p + "T"], -1)
assert all(math.isclose(o[k], 0.958, rel_tol=1e-7) for k in ("gamma_min", "gamma_max")), f"nnrnn gamma: {o}"
K = schur_form(t, p)
mod = np.abs(np.linalg.eigvals(K))
for k, v in (("modulus_min", mod.min()), ("modulus_max", mod.max()), ("modulus_mean", mod.mean())):
    close(o[k], v, f"nnrnn {k}")
assert abs(mod.max() - 0.958) > 1e-4, "nnrnn: the moduli equal the clamped gamma; T's in-block entries are ignored"
close(o["T_norm"], np.linalg.norm(T), "nnrnn T_norm")
assert o["state_norm"] > 0 and "state_norm_head" not in o, f"nnrnn: {o}"
print(f"recurrent metrics: rotrnn gamma in [{layers[0]['modulus_min']:.4f}, {layers[0]['modulus_max']:.4f}], "
      f"nnrnn moduli in [{o['modulus_min']:.4f}, {o['modulus_max']:.4f}] with gamma 0.958")
PY
