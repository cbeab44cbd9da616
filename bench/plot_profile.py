#!/usr/bin/env python3
"""Plots the op profiles of `bench/step_bench --profile --json FILE` runs: for every config, one
stacked bar per run (e.g. before and after a change), the step's device time split into
GEMMs, mixer kernels, Selective RoPE, optimizer, the other ops (norms, convs, gates, loss)
and the time between ops, so that a change's effect can be seen at a glance.

    /usr/bin/python3 bench/plot_profile.py OUT.png LABEL=RUN.json [LABEL=RUN.json ...]

Needs matplotlib (Debian's python3-matplotlib, installed by scripts/setup.sh).
"""
import json
import sys

CATEGORIES = ["GEMM", "mixer kernels", "Selective RoPE", "optimizer", "other ops", "between ops"]
COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#bbbbbb"]
MIXERS = {"gla_fwd", "gla_bwd", "gdn_fwd", "gdn_bwd", "fox_fwd", "fox_bwd"}


def category(op):
    if op.startswith("matmul") or op.startswith("head_matmul"):
        return "GEMM"
    if op in MIXERS:
        return "mixer kernels"
    if op.startswith("selrope") or op.startswith("weightnorm"):
        return "Selective RoPE"
    if op in ("adamw", "adamw_runs", "sumsq", "scale", "zero"):
        return "optimizer"
    return "other ops"


def split(config):
    """ms per category of one config's profiled step."""
    ms = dict.fromkeys(CATEGORIES, 0.0)
    for row in config["profile"]:
        ms[category(row["op"])] += row["ms"]
    ms["between ops"] = config["profile_step_ms"] - sum(ms.values())
    return ms


def main():
    if len(sys.argv) < 3 or any("=" not in a for a in sys.argv[2:]):
        sys.exit("usage: plot_profile.py OUT.png LABEL=RUN.json [LABEL=RUN.json ...]")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = []
    for arg in sys.argv[2:]:
        label, path = arg.split("=", 1)
        with open(path) as f:
            runs.append((label, json.load(f)))
    bars, names = [], []
    for label, run in runs:
        for config in run["configs"]:
            if "profile" not in config:
                continue
            name = config["config"].split("/")[-1].replace(".ini", "")
            names.append(f"{name}\n{config['seq_len']}x{config['micro_batch']} {label}")
            bars.append(split(config))
    order = sorted(range(len(bars)), key=lambda i: names[i])
    fig, ax = plt.subplots(figsize=(1.2 * len(bars) + 3, 6))
    bottom = [0.0] * len(bars)
    for cat, color in zip(CATEGORIES, COLORS):
        vals = [bars[i][cat] for i in order]
        ax.bar(range(len(bars)), vals, bottom=bottom, color=color, label=cat)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([names[i] for i in order], fontsize=7)
    ax.set_ylabel("ms per optimizer step (profiled)")
    ax.set_title(f"{runs[0][1]['device']}: where a training step's time goes")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=110)
    print(f"wrote {sys.argv[1]}")


if __name__ == "__main__":
    main()
