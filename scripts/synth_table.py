#!/usr/bin/env python3
"""Collects the synth_results.json files of a scripts/synth_sweep.sh output directory
(runs named [MODEL__]VARIANT-lrLR-seedSEED) into Markdown tables: every run, then per model
and variant the learning rate with the best mean score over seeds (the score: MQAR accuracy, state tracking
prefix accuracy at the test length, copying mean string accuracy over the evaluated lengths,
classification the test accuracy of the best validation's checkpoint, or of the last one)."""
import json
import os
import re
import sys
from collections import defaultdict

NAME = re.compile(r"^(?:(?P<model>.+)__)?(?P<pe>.+?)-lr(?P<lr>.+)-seed(?P<seed>\d+)$")


def columns(res):
    """(header, values, score) of one run's results."""
    m = res["metrics"]
    if "per_class_accuracy" in m:  # classification: the last checkpoint, and the best validation's
        if "best" not in res:
            return ["test acc"], [m["accuracy"]], m["accuracy"]
        best = res["best"]
        return (["test acc (last)", "test acc (best val)", "best val acc", "best step"],
                [m["accuracy"], best["test_accuracy"], best.get("val_accuracy", float("nan")), best["step"]],
                best["test_accuracy"])
    if "accuracy" in m:  # mqar
        return ["accuracy"], [m["accuracy"]], m["accuracy"]
    if "prefix_accuracy" in m:  # state tracking: at the training length, twice it, the test length
        at = sorted({m["train_len"], min(2 * m["train_len"], m["test_len"]), m["test_len"]})
        return (["token acc"] + [f"prefix acc @{t}" for t in at],
                [m["token_accuracy"]] + [m["prefix_accuracy"][t - 1] for t in at],
                m["prefix_accuracy_test_len"])
    per = m["string_accuracy"]  # copy
    lengths = sorted(per, key=int)
    vals = [per[k] for k in lengths]
    return [f"len {k}" for k in lengths], vals, sum(vals) / len(vals)


def fmt(v):
    """A step (an integer, or a mean of steps) without decimals, a score with three."""
    return f"{v:.0f}" if isinstance(v, int) or (v >= 2 and float(v).is_integer()) else f"{v:.3f}"


def main(out):
    runs = []
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name, "synth_results.json")
        match = NAME.match(name)
        if not match or not os.path.isfile(path):
            continue
        with open(path) as f:
            res = json.load(f)
        header, vals, score = columns(res)
        variant = f"{match['model']} / {match['pe']}" if match["model"] else match["pe"]
        runs.append((variant, float(match["lr"]), int(match["seed"]), header, vals, score, res))
    if not runs:
        sys.exit(f"synth_table.py: no finished runs under {out}")
    header = runs[0][3]
    task = runs[0][6]["task"]
    print(f"# {task}: {len(runs)} runs in {out}\n")
    print("| variant | lr | seed | " + " | ".join(header) + " |")
    print("|---|---|---|" + "---|" * len(header))
    for pe, lr, seed, _, vals, _, _ in sorted(runs, key=lambda r: (r[0], r[1], r[2])):
        print(f"| {pe} | {lr:g} | {seed} | " + " | ".join(fmt(v) for v in vals) + " |")

    by = defaultdict(list)
    for pe, lr, _, _, vals, score, _ in runs:
        by[(pe, lr)].append((score, vals))
    best = {}
    for (pe, lr), items in by.items():
        mean = sum(s for s, _ in items) / len(items)
        if pe not in best or mean > best[pe][1]:
            best[pe] = (lr, mean, items)
    print("\n## Best learning rate per variant (mean over seeds)\n")
    print("| variant | best lr | seeds | " + " | ".join(header) + " |")
    print("|---|---|---|" + "---|" * len(header))
    for pe in sorted(best):
        lr, _, items = best[pe]
        means = [sum(v[i] for _, v in items) / len(items) for i in range(len(header))]
        print(f"| {pe} | {lr:g} | {len(items)} | " + " | ".join(fmt(v) for v in means) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: synth_table.py SWEEP_DIR")
    main(sys.argv[1])
