#!/usr/bin/env python3
"""Collects a scripts/mad_sweep.sh output directory (runs OUT/TASK/SETTING/VARIANT-lrLR-wdWD-seedSEED)
into Markdown: a Table-2-shaped table and the runs behind it.

Aggregation, as mad-lab's compute_model_mad_scores: for each variant, task and setting the best
run over the learning-rate x weight-decay sweep by test accuracy (mad-lab's accuracy, the
"accuracy" of synth_results.json; with several seeds, the mean over seeds of each lr/wd first),
then the mean over the task's settings. The average column is the mean over the six tasks,
given only when a variant has all six."""
import json
import os
import re
import sys
from collections import defaultdict

NAME = re.compile(r"^(?P<pe>.+?)-lr(?P<lr>.+?)-wd(?P<wd>.+?)-seed(?P<seed>\d+)$")
TASKS = [("mad_compression", "Compress"), ("mad_fuzzy_in_context_recall", "Fuzzy Recall"),
         ("mad_in_context_recall", "In-Context Recall"), ("mad_memorization", "Memorize"),
         ("mad_noisy_in_context_recall", "Noisy Recall"), ("mad_selective_copying", "Selective Copy")]


def scores(out, names=None):
    """(acc, best, score): every run's accuracies over seeds by (variant, task, setting, lr, wd);
    the best lr/wd point by (variant, task, setting) as (mean, lr, wd, seeds); and by
    (variant, task) the best accuracy of each of its settings. NAMES (TASK/SETTING/RUN), when
    given, are the runs to read; the others in OUT are left out."""
    acc = defaultdict(list)
    for task, _ in TASKS:
        for setting in sorted(os.listdir(os.path.join(out, task))) if os.path.isdir(os.path.join(out, task)) else []:
            sdir = os.path.join(out, task, setting)
            for name in sorted(os.listdir(sdir)):
                m = NAME.match(name)
                path = os.path.join(sdir, name, "synth_results.json")
                if m and os.path.isfile(path) and (names is None or f"{task}/{setting}/{name}" in names):
                    with open(path) as f:
                        res = json.load(f)
                    acc[(m["pe"], task, setting, float(m["lr"]), float(m["wd"]))].append(res["metrics"]["accuracy"])
    if not acc:
        sys.exit(f"mad_table.py: no finished runs under {out}")
    best = {}
    for (pe, task, setting, lr, wd), xs in acc.items():
        mean = sum(xs) / len(xs)
        key = (pe, task, setting)
        if key not in best or mean > best[key][0]:
            best[key] = (mean, lr, wd, len(xs))
    score = defaultdict(list)
    for (pe, task, _), (mean, _, _, _) in best.items():
        score[(pe, task)].append(mean)
    return acc, best, score


def main(out):
    acc, best, score = scores(out)
    variants = sorted({pe for pe, _ in score})

    print(f"# MAD: {len(acc)} lr/wd points in {out}\n")
    print("Cell: mean over the task's settings (count in parentheses) of the best run over the "
          "lr x weight-decay sweep, by mad-lab's test accuracy.\n")
    print("| variant | " + " | ".join(name for _, name in TASKS) + " | Average |")
    print("|---|" + "---|" * (len(TASKS) + 1))
    for pe in variants:
        cells, means = [], []
        for task, _ in TASKS:
            xs = score.get((pe, task))
            if xs:
                means.append(sum(xs) / len(xs))
                cells.append(f"{means[-1]:.3f} ({len(xs)})")
            else:
                cells.append("—")
        avg = f"{sum(means) / len(means):.3f}" if len(means) == len(TASKS) else "—"
        print(f"| {pe} | " + " | ".join(cells) + f" | {avg} |")

    print("\n## Best lr / weight decay per task setting\n")
    print("| task | setting | variant | best lr | best wd | seeds | accuracy |")
    print("|---|---|---|---|---|---|---|")
    for (pe, task, setting), (mean, lr, wd, n) in sorted(best.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        print(f"| {task} | {setting} | {pe} | {lr:g} | {wd:g} | {n} | {mean:.3f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: mad_table.py SWEEP_DIR")
    main(sys.argv[1])
