#!/usr/bin/env python3
"""Learning curves of several runs in one figure: each run's metrics.jsonl, its training loss
and its validation loss and (classification runs) validation accuracy against the step.

    /usr/bin/python3 scripts/plot_curves.py [--logy] OUT.png LABEL=RUN_DIR [LABEL=RUN_DIR ...]

--logy draws the losses on a logarithmic scale (runs whose loss spans orders of magnitude).

A label given to several run directories (seeds) draws each of them in the same colour.
Needs matplotlib (Debian's python3-matplotlib, installed by scripts/setup.sh)."""
import json
import os
import sys


def read(run_dir):
    rows = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl")) if line.strip()]
    series = {}
    for key in ("loss", "val_loss", "val_accuracy"):
        pts = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), (int, float))]
        if pts:
            series[key] = pts
    return series


def main(argv):
    logy = len(argv) > 1 and argv[1] == "--logy"
    if logy:
        argv = argv[:1] + argv[2:]
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        sys.exit("usage: plot_curves.py [--logy] OUT.png LABEL=RUN_DIR [LABEL=RUN_DIR ...]")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [(a.split("=", 1)[0], read(a.split("=", 1)[1])) for a in argv[2:]]
    panels = [k for k in ("loss", "val_loss", "val_accuracy") if any(k in s for _, s in runs)]
    titles = {"loss": "training loss", "val_loss": "validation loss", "val_accuracy": "validation accuracy"}
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    colours = {}
    for ax, key in zip(axes[0], panels):
        for label, series in runs:
            if key not in series:
                continue
            colour = colours.setdefault(label, f"C{len(colours)}")
            xs, ys = zip(*series[key])
            first = all(line.get_label() != label for line in ax.get_lines())
            ax.plot(xs, ys, color=colour, label=label if first else None, alpha=0.85)
        if logy and key != "val_accuracy":
            ax.set_yscale("log")
        ax.set_title(titles[key])
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)
    print(f"wrote {argv[1]}")


if __name__ == "__main__":
    main(sys.argv)
