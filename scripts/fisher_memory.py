#!/usr/bin/env python3
"""Fisher memory curves of linear recurrences (the nnRNN paper's Fig. 1(c) and Table 6).

    python3 scripts/fisher_memory.py fig1 OUT.svg [--table OUT.md]   # the paper's Fig. 1(c) (or OUT.png)
    python3 scripts/fisher_memory.py checkpoint RUN/checkpoints/step_N [--steps K] [--plot OUT.png]

For h_t = W h_{t-1} + u s_t + noise (white, unit variance), the Fisher memory curve of Ganguli,
Huh and Sompolinsky (2008), the nnRNN supplement's eq. 7, is

    J(k) = u^T (W^k)^T C^{-1} W^k u,   C = sum_{j >= 0} W^j (W^j)^T,

the Fisher information h_t keeps about a signal injected k steps earlier (unit noise: the paper's
epsilon = 1). C is summed until its terms vanish (W must be stable or nilpotent) and used
through a QR factor (noise_factor).

fig1: the paper's matrices of eq. 2, N = 100: Theta with d on the diagonal, alpha on the first
subdiagonal and beta below it, source u = e_1, for alpha in {0.95, 1, 1.05}, beta in {0, 0.005},
d in {0, 0.2}; draws the curves (Fig. 1(c)) and writes the sums J_tot = sum_k J(k) beside the
paper's Table 6 (the d = 0 rows agree to the paper's three digits, the d = 0.2 rows within
2.5%). checkpoint: the recurrent W of a trained nnRNN / expRNN / RNN checkpoint
(rotor's model.safetensors, docs/models.md §nonlinear-rnns, one layer) with the source u = U w, the input
direction of a scalar input (model.input = linear: its encoder weight w through the input
matrix U); prints J(k) for k < steps and its sum, C summed over the same `steps` terms (the
noise a state has seen after a sequence of that length: a trained W may have eigenvalues of
modulus 1 or more, where the infinite sum diverges).
"""
import argparse
import json
import os
import sys

import numpy as np

# The paper's Table 6: (alpha, beta, d) -> J_tot
TABLE6 = {(0.95, 0.0, 0.0): 3.03, (1.00, 0.0, 0.0): 5.19, (1.05, 0.0, 0.0): 12.1,
          (0.95, 0.005, 0.0): 3.18, (1.00, 0.005, 0.0): 5.30, (1.05, 0.005, 0.0): 12.1,
          (0.95, 0.0, 0.2): 12.0, (1.00, 0.0, 0.2): 16.2, (1.05, 0.0, 0.2): 20.5,
          (0.95, 0.005, 0.2): 12.1, (1.00, 0.005, 0.2): 16.3, (1.05, 0.005, 0.2): 20.4}


def noise_factor(W, horizon=None, tol=1e-13):
    """Upper triangular R with R^T R = C = sum_j W^j (W^j)^T, j < horizon, or until a term is
    below tol of the largest when horizon is None (then W must be stable: spectral radius < 1,
    or nilpotent). C itself is too ill-conditioned to invert in float64 for the paper's d = 0.2
    matrices (condition numbers to 1e26); R's is its square root. R is updated by a QR of
    [R; (W^j)^T, ...] every 64 terms (Householder QR: backward stable; memory 65 n^2)."""
    if horizon is None:
        rho = max(abs(np.linalg.eigvals(W)))
        if rho >= 1 - 1e-9 and np.abs(np.linalg.matrix_power(W, len(W))).max() > 0:
            sys.exit(f"fisher_memory: W has spectral radius {rho:.6f} >= 1, so the stationary noise "
                     "covariance is infinite: give a finite horizon (the checkpoint command's --steps)")
    R, term, top, j, batch = np.eye(len(W)), np.eye(len(W)), 1.0, 1, []
    while horizon is None or j < horizon:
        term = W @ term
        size = np.abs(term).max() ** 2
        top = max(top, size)
        if horizon is None and size <= tol * top:
            break
        batch.append(term.T)
        if len(batch) == 64:  # bounded memory, few QRs
            R, batch = np.linalg.qr(np.vstack([R] + batch), mode="r"), []
        j += 1
    return np.linalg.qr(np.vstack([R] + batch), mode="r") if batch else R


def fisher_memory_curve(W, u, steps, horizon=None):
    """J(k) = |R^-T W^k u|^2 for k = 0 .. steps-1 (eq. 7 of the supplement, unit noise; C over
    `horizon` terms, or all)."""
    from scipy.linalg import solve_triangular
    R = noise_factor(W, horizon)
    J, x = np.empty(steps), np.asarray(u, dtype=float)
    for k in range(steps):
        y = solve_triangular(R, x, trans="T")
        J[k] = y @ y
        x = W @ x
    return J


def paper_theta(n, alpha, beta, d):
    """Eq. 2: d on the diagonal, alpha on the first subdiagonal, beta on the ones below."""
    return d * np.eye(n) + alpha * np.eye(n, k=-1) + beta * np.tril(np.ones((n, n)), k=-2)


def fig1(out_png, table_md, n=100, steps=200):
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "rotor"  # the same SVG for the same figure
    import matplotlib.pyplot as plt

    rows, fig = [], plt.figure(figsize=(6, 4))
    colours = {0.95: "tab:blue", 1.0: "tab:orange", 1.05: "tab:green"}
    for (alpha, beta, d), paper in TABLE6.items():
        W = paper_theta(n, alpha, beta, d)
        J = fisher_memory_curve(W, np.eye(n)[0], steps)
        rows.append((alpha, beta, d, J.sum(), paper))
        plt.plot(np.arange(steps), J, color=colours[alpha], marker="s" if d == 0 else "^", markevery=10,
                 markersize=3, linestyle="-" if beta == 0 else "--", linewidth=1,
                 label=f"α={alpha:g} β={beta:g} d={d:g}")
    plt.yscale("log")
    plt.ylim(1e-4, 2)
    plt.xlabel("k (time steps since the signal)")
    plt.ylabel("Fisher memory J(k)")
    plt.title(f"Fisher memory curves, N = {n} (nnRNN Fig. 1(c))")
    plt.legend(fontsize=6, ncol=2)
    plt.tight_layout()
    fig.savefig(out_png, metadata={"Date": None} if out_png.endswith(".svg") else None)
    lines = ["| α | β | d | J_tot (rotor) | J_tot (paper, Table 6) |", "|---|---|---|---|---|"]
    lines += [f"| {a:g} | {b:g} | {d:g} | {j:.2f} | {p:g} |" for a, b, d, j, p in rows]
    text = "\n".join(lines) + "\n"
    if table_md:
        open(table_md, "w").write(text)
    print(text, end="")


def checkpoint_w(t, prefix="model.layers.0.attn."):
    """The recurrent matrix W and input matrix U of rotor's nonlinear RNN layer (docs/models.md §nonlinear-rnns)."""
    from scipy.linalg import expm
    from nnrnn_schur import schur_form
    if prefix + "V.weight" in t:
        return t[prefix + "V.weight"], t[prefix + "U.weight"]
    if prefix + "log_recurrent_kernel" in t:
        M = t[prefix + "log_recurrent_kernel"]
        return expm(M - M.T), t[prefix + "input_kernel.weight"]
    if prefix + "log_P" in t:
        M = t[prefix + "log_P"]
        P = expm(M - M.T)
        return P @ schur_form(t, prefix) @ P.T, t[prefix + "U.weight"]
    sys.exit(f"fisher_memory: no rnn, rnn_orth, exprnn or nnrnn layer under {prefix} in the checkpoint")


def checkpoint(ckpt, steps, plot):
    from nnrnn_schur import load_checkpoint
    t = load_checkpoint(ckpt)
    W, U = checkpoint_w(t)
    if "model.encoder.weight" not in t:
        sys.exit(f"fisher_memory: {ckpt}: no model.encoder.weight (the source direction needs a scalar "
                 "input, model.input = linear)")
    u = U @ t["model.encoder.weight"][:, 0]
    J = fisher_memory_curve(W, u, steps, horizon=steps)
    print(json.dumps({"checkpoint": ckpt, "J": [round(x, 6) for x in J], "J_tot": J.sum(),
                      "spectral_radius": float(max(abs(np.linalg.eigvals(W))))}))
    if plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plt.figure(figsize=(5, 3.5))
        plt.semilogy(J)
        plt.xlabel("k")
        plt.ylabel("J(k)")
        plt.title(os.path.basename(os.path.normpath(ckpt)))
        plt.tight_layout()
        plt.savefig(plot)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fig1")
    f.add_argument("png")
    f.add_argument("--table")
    c = sub.add_parser("checkpoint")
    c.add_argument("dir")
    c.add_argument("--steps", type=int, default=1000)
    c.add_argument("--plot")
    a = ap.parse_args()
    if a.cmd == "fig1":
        fig1(a.png, a.table)
    else:
        checkpoint(a.dir, a.steps, a.plot)


if __name__ == "__main__":
    main()
