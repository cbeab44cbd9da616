#!/usr/bin/env python3
"""The recurrent statistics of runs' metrics.jsonl (their "recurrent" records, docs/formats.md)
against the step: the state norm of every layer (the RotRNN paper's Fig. 3: RotRNN's per-head
norm, the LRU's whole state), the eigenvalue moduli (mean, and min to max shaded; RotRNN's
gamma, the LRU's nu, the moduli of the nnRNN's W), and the distribution of the angles at the
first and the last validation (the nnRNN paper's Fig. 3 / 5 insets).

    /usr/bin/python3 scripts/plot_recurrent.py OUT.png LABEL=RUN_DIR [LABEL=RUN_DIR ...]

Writes OUT.png and OUT.svg. A label given to several run directories (seeds) draws each of them
in the same colour. Needs matplotlib (Debian's python3-matplotlib)."""
import json
import os
import sys


def read(run_dir):
    path = os.path.join(run_dir, "metrics.jsonl")
    rows = [json.loads(line) for line in open(path) if line.strip()]
    rows = [r for r in rows if "recurrent" in r]
    if not rows:
        sys.exit(f"plot_recurrent: {path} has no recurrent records (a run of a recurrent mixer "
                 "with train.val_every > 0)")
    return rows


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        sys.exit("usage: plot_recurrent.py OUT.png LABEL=RUN_DIR [LABEL=RUN_DIR ...]")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [(a.split("=", 1)[0], read(a.split("=", 1)[1])) for a in argv[2:]]
    colours = {}
    fig, (ax_norm, ax_mod, ax_hist) = plt.subplots(1, 3, figsize=(16, 4.2))
    for label, rows in runs:
        c = colours.setdefault(label, f"C{len(colours)}")
        steps = [r["step"] for r in rows]
        for l in range(len(rows[0]["recurrent"])):
            layer = [r["recurrent"][l] for r in rows]
            key = "state_norm_head" if "state_norm_head" in layer[0] else "state_norm"
            ax_norm.plot(steps, [o[key] for o in layer], color=c, alpha=0.4 + 0.6 / (l + 1), linewidth=1,
                         label=f"{label} ({key})" if l == 0 else None)
            if "modulus_mean" in layer[0]:
                ax_mod.plot(steps, [o["modulus_mean"] for o in layer], color=c, linewidth=1,
                            label=label if l == 0 else None)
                ax_mod.fill_between(steps, [o["modulus_min"] for o in layer], [o["modulus_max"] for o in layer],
                                    color=c, alpha=0.08)
        for r, style in ((rows[0], ":"), (rows[-1], "-")):
            hist = [sum(o["theta_hist"][b] for o in r["recurrent"] if "theta_hist" in o) for b in range(16)]
            if sum(hist):
                edges = [3.141592653589793 * b / 16 for b in range(17)]
                ax_hist.stairs([h / sum(hist) for h in hist], edges, color=c, linestyle=style,
                               label=f"{label}, step {r['step']}")
    ax_norm.set(xlabel="step", ylabel="mean state norm", title="state norm per layer (deeper: fainter)")
    ax_mod.set(xlabel="step", ylabel="|eigenvalue|", title="eigenvalue moduli (mean; min to max shaded)")
    ax_hist.set(xlabel="angle, folded into [0, π]", ylabel="fraction", title="eigenvalue angles (all layers)")
    for ax in (ax_norm, ax_mod, ax_hist):
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = argv[1]
    fig.savefig(out, dpi=110)
    fig.savefig(os.path.splitext(out)[0] + ".svg")


if __name__ == "__main__":
    main(sys.argv)
