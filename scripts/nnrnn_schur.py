#!/usr/bin/env python3
"""The learned Schur form of an nnRNN checkpoint (the nnRNN paper's §5.3, Fig. 3 and 5, and the
gamma of its supplement §F / Table 7):

    /usr/bin/python3 scripts/nnrnn_schur.py RUN/checkpoints/step_N [OUT.png] [--json OUT.json]
                                            [--params OUT.jsonl]

W = P Theta P^T with Theta = Lambda + T (docs/models.md §nonlinear-rnns): Lambda the 2x2 blocks
gamma_i R(theta_i), T strictly lower triangular. Draws Theta (a), the distribution of the angles
theta_i folded into [0, pi] (the paper's insets), and the mean |entry| of Theta along its k-th
subdiagonal (Fig. 3(c): a delay line shows as a peak at k = 1). Prints (and with --json writes)
the mean gamma (the paper: 0.958 on PTB, about 1 on the copy task), the moduli of Theta's
eigenvalues (the block's determinant gamma^2 + gamma t sin theta, not gamma, once T's in-block
entries train), |T|_F and the mean |entry| per subdiagonal. Reads layer 0 of rotor's
model.safetensors (tests/reference/ref_safetensors.py). --params writes what all of this reads
(gamma, theta and T's strict lower triangle, as float32) as one JSON line, which the results
store keeps where it keeps no checkpoint (load_params reads it back, the same values)."""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "reference"))
import ref_safetensors  # noqa: E402


def load_checkpoint(ckpt):
    """The tensors of RUN/checkpoints/step_N/model.safetensors as float64."""
    path = os.path.join(ckpt, "model.safetensors")
    if not os.path.isfile(path):
        sys.exit(f"{path}: no such file (give a checkpoint directory, RUN/checkpoints/step_N)")
    tensors, _ = ref_safetensors.load(path)
    return {k: v.astype(np.float64) for k, v in tensors.items()}


def save_params(t, path, prefix="model.layers.0.attn."):
    """gamma, theta and the strict lower triangle of T (row i: its first i entries), as the
    float32 values the checkpoint holds (9 significant digits give each one back)."""
    def f32(x):
        return [float("%.9g" % v) for v in np.asarray(x, np.float32).ravel()]
    T = np.asarray(t[prefix + "T"])
    rec = {"gamma": f32(t[prefix + "gamma"]), "theta": f32(t[prefix + "theta"]),
           "T_lower": [f32(T[i, :i]) for i in range(len(T))]}
    with open(path, "w") as f:
        f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def load_params(path, prefix="model.layers.0.attn."):
    """save_params's line as the tensors of load_checkpoint (T zero on and above the diagonal,
    which nothing here reads)."""
    with open(path) as f:
        rec = json.loads(f.readline())
    n = len(rec["T_lower"])
    T = np.zeros((n, n), np.float32)
    for i, row in enumerate(rec["T_lower"]):
        T[i, :i] = row
    return {prefix + "gamma": np.array(rec["gamma"], np.float32).astype(np.float64),
            prefix + "theta": np.array(rec["theta"], np.float32).astype(np.float64),
            prefix + "T": T.astype(np.float64)}


def schur_form(t, prefix="model.layers.0.attn."):
    """Theta = Lambda + T of an nnRNN layer: gamma_i R(theta_i) on the pairs (2i, 2i+1) plus the
    strictly lower triangle of the parameter T (its other entries are never read)."""
    missing = [k for k in ("gamma", "theta", "T") if prefix + k not in t]
    if missing:
        sys.exit(f"no nnRNN layer under {prefix}: {', '.join(prefix + k for k in missing)} missing")
    g, th = t[prefix + "gamma"], t[prefix + "theta"]
    K = np.tril(t[prefix + "T"], -1)
    for i, (gi, ti) in enumerate(zip(g, th)):
        K[2 * i:2 * i + 2, 2 * i:2 * i + 2] += gi * np.array([[np.cos(ti), -np.sin(ti)], [np.sin(ti), np.cos(ti)]])
    return K


def fold(theta):
    """Angles into [0, pi]: theta and -theta give the same conjugate pair."""
    a = np.mod(theta, 2 * np.pi)
    return np.where(a > np.pi, 2 * np.pi - a, a)


def summary(t, prefix="model.layers.0.attn."):
    K = schur_form(t, prefix)
    n = len(K)
    T = np.tril(t[prefix + "T"], -1)
    moduli = np.abs(np.linalg.eigvals(K))
    return {"gamma_mean": float(t[prefix + "gamma"].mean()), "modulus_mean": float(moduli.mean()),
            "modulus_min": float(moduli.min()), "modulus_max": float(moduli.max()),
            "T_norm": float(np.linalg.norm(T)),
            "subdiagonal_mean_abs": [float(np.abs(np.diagonal(K, -k)).mean()) for k in range(1, n)]}


def draw(t, out, prefix="model.layers.0.attn."):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    K, s = schur_form(t, prefix), summary(t, prefix)
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(15, 4.3))
    lim = max(np.abs(K).max(), 1e-12)
    im = a.imshow(K, cmap="RdBu_r", vmin=-lim, vmax=lim)
    fig.colorbar(im, ax=a, fraction=0.046)
    a.set_title(f"Θ = Λ + T (γ̄ = {s['gamma_mean']:.3f}, |T|_F = {s['T_norm']:.3g})")
    b.hist(fold(t[prefix + "theta"]), bins=24, range=(0, np.pi))
    b.set(xlabel="θ_i folded into [0, π]", ylabel="count", title="rotation angles")
    c.plot(np.arange(1, len(K)), s["subdiagonal_mean_abs"])
    c.set(xlabel="k (subdiagonal)", ylabel="mean |Θ entry|", xscale="log", title="lower triangle by subdiagonal")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    fig.savefig(os.path.splitext(out)[0] + ".svg")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("png", nargs="?")
    ap.add_argument("--json")
    ap.add_argument("--params")
    a = ap.parse_args()
    t = load_checkpoint(a.checkpoint)
    s = summary(t)
    if a.png:
        draw(t, a.png)
    if a.json:
        json.dump(s, open(a.json, "w"), indent=1)
    if a.params:
        save_params(t, a.params)
    print(json.dumps({k: v for k, v in s.items() if k != "subdiagonal_mean_abs"}))


if __name__ == "__main__":
    main()
