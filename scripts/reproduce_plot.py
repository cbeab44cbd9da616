#!/usr/bin/env python3
"""Figures and tables of scripts/reproduce.sh's experiments, in the paper's form, from an
experiment's output directory OUT (its runs in OUT/runs). Writes OUT/figure.svg and
OUT/table.md (the paper's numbers beside rotor's where the paper prints
numbers).

    reproduce_plot.py length  OUT TITLE     accuracy against length (state tracking: prefix
                                            accuracy at each length; copying: string accuracy),
                                            mean over seeds with min-max band, the training
                                            length dashed; one panel per model
    reproduce_plot.py mqar    OUT TITLE     MQAR accuracy against width, the lr with the best
                                            mean over seeds (bars: its seeds' min and max),
                                            one panel per (length, pairs)
    reproduce_plot.py mad     OUT TITLE     Table 2: rotor's MAD scores beside the paper's
    reproduce_plot.py lm      OUT TITLE     Table 3: per model and position embedding the lr of
                                            the lowest final validation loss, its zero-shot
                                            scores (RUN/lm_eval.json, `rotor eval`'s results
                                            written as the run finished) beside the paper's
    reproduce_plot.py prefill OUT TITLE     Figure 5: prefill tokens/s against length

Run names follow scripts/synth_table.py ([MODEL__]VARIANT-lrLR-seedSEED) and, for MAD,
scripts/mad_table.py (TASK/SETTING/VARIANT-lrLR-wdWD-seedSEED). Needs matplotlib (Debian's
python3-matplotlib, installed by scripts/setup.sh)."""
import json
import math
import os
import re
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "rotor"  # the same SVG for the same figure (no random ids)
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mad_table  # noqa: E402
from reproduce_runs import plan_rows, planned_finished  # noqa: E402

NAME = re.compile(r"^(?:(?P<model>.+)__)?(?P<pe>.+?)-lr(?P<lr>.+)-seed(?P<seed>\d+)$")

# Table 2 of the Selective RoPE paper (GLA): Compress, Fuzzy Recall, In-Context Recall,
# Memorize, Noisy Recall, Selective Copy, Average.
PAPER_TABLE2 = {
    "nope": [82.0, 8.5, 87.3, 38.7, 87.6, 91.1, 65.9],
    "rope": [85.2, 7.5, 92.6, 61.4, 91.9, 96.4, 72.5],
    "selective": [85.2, 9.0, 94.0, 57.1, 91.7, 94.9, 72.0],
    "selective-pg": [85.1, 7.5, 96.6, 56.9, 94.3, 93.5, 72.3],
    "selective-bias": [85.0, 8.4, 95.0, 61.3, 91.2, 95.4, 72.7],
    "selective-pg-bias": [85.4, 7.2, 95.9, 60.4, 95.0, 95.6, 73.2],
}
# Table 3 of the Selective RoPE paper: LMB. ppl, LMB. acc, PIQA acc, Hella. acc_norm,
# Wino. acc, ARC-e acc, ARC-c acc_norm, Avg.
PAPER_TABLE3 = {
    ("gla", "nope"): [19.21, 39.4, 69.7, 48.0, 53.1, 50.9, 24.6, 47.6],
    ("gla", "rope"): [23.96, 36.1, 69.7, 47.7, 54.0, 50.9, 25.1, 47.2],
    ("gla", "selective"): [21.50, 37.6, 70.3, 48.1, 52.2, 51.3, 26.2, 47.6],
    ("gla", "selective-pg"): [22.85, 37.2, 70.2, 47.6, 52.2, 52.1, 25.9, 47.5],
    ("gla", "selective-bias"): [20.12, 39.6, 70.7, 47.3, 52.0, 52.1, 25.3, 47.9],
    ("gla", "selective-pg-bias"): [21.16, 37.4, 70.6, 47.9, 53.9, 52.0, 26.2, 48.0],
    ("gdn", "nope"): [22.50, 37.2, 70.9, 47.6, 53.2, 52.0, 25.9, 47.8],
    ("gdn", "rope"): [20.84, 38.9, 70.7, 48.2, 53.4, 51.3, 25.1, 48.0],
    ("gdn", "selective"): [21.23, 39.0, 71.1, 47.9, 53.7, 52.1, 24.8, 48.1],
    ("gdn", "selective-pg"): [18.37, 41.4, 69.5, 48.4, 54.6, 51.7, 26.5, 48.7],
    ("gdn", "selective-bias"): [19.11, 40.5, 70.9, 47.9, 53.9, 51.9, 25.9, 48.5],
    ("gdn", "selective-pg-bias"): [19.28, 39.4, 70.1, 47.6, 54.9, 52.4, 25.4, 48.3],
    ("fox", "nope"): [26.04, 37.4, 69.6, 47.0, 55.2, 50.7, 25.8, 47.6],
    ("fox", "rope"): [23.16, 37.7, 69.5, 47.6, 55.0, 52.7, 25.3, 48.0],
    ("fox", "selective"): [23.28, 38.2, 69.3, 47.6, 53.9, 50.1, 24.0, 47.2],
    ("fox", "selective-pg"): [21.89, 38.2, 70.2, 47.8, 54.1, 52.4, 26.1, 48.1],
    ("fox", "selective-bias"): [23.67, 37.8, 70.0, 48.0, 54.1, 51.7, 25.3, 47.8],
    ("fox", "selective-pg-bias"): [24.98, 37.1, 70.0, 47.9, 54.9, 51.9, 24.9, 47.8],
}
LM_COLUMNS = [("lambada_openai", "perplexity", "LMB. ppl"), ("lambada_openai", "acc", "LMB. acc"),
              ("piqa", "acc", "PIQA acc"), ("hellaswag", "acc_norm", "Hella. acc_n"),
              ("winogrande", "acc", "Wino. acc"), ("arc_easy", "acc", "ARC-e acc"),
              ("arc_challenge", "acc_norm", "ARC-c acc_n")]


def finished(out):
    """(name match, results) of every finished synth run of OUT's plan."""
    runs = []
    for name in planned_finished(out):
        m = NAME.match(name)
        if m:
            with open(os.path.join(out, "runs", name, "synth_results.json")) as f:
                runs.append((m, json.load(f)))
    return runs


def save(fig, out):
    fig.tight_layout()
    fig.savefig(os.path.join(out, "figure.svg"), metadata={"Date": None})


def write_table(out, lines):
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def curve(res):
    """(lengths, accuracies, training length, what) of a state-tracking or copying run."""
    m = res["metrics"]
    if "prefix_accuracy" in m:
        acc = m["prefix_accuracy"]
        return list(range(1, len(acc) + 1)), acc, m["train_len"], "prefix accuracy"
    per = m["string_accuracy"]
    lengths = sorted(per, key=int)
    return [int(k) for k in lengths], [per[k] for k in lengths], m.get("train_max_len"), "string accuracy"


def length_report(out, title):
    runs = finished(out)
    by = defaultdict(list)  # (model, pe) -> curves over seeds
    for m, res in runs:
        by[(m["model"] or res.get("mixer", ""), m["pe"])].append(curve(res))
    models = sorted({k[0] for k in by})
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4), squeeze=False)
    lines = [f"# {title}", "", f"{len(runs)} runs; mean over seeds (min, max).", ""]
    for ax, model in zip(axes[0], models):
        train_len = None
        table_at = None
        for (mod, pe), curves in sorted(by.items()):
            if mod != model:
                continue
            xs, _, train_len, what = curves[0]
            ys = [statistics.mean(c[1][i] for c in curves) for i in range(len(xs))]
            lo = [min(c[1][i] for c in curves) for i in range(len(xs))]
            hi = [max(c[1][i] for c in curves) for i in range(len(xs))]
            ax.plot(xs, ys, label=f"{pe} ({len(curves)} seeds)")
            ax.fill_between(xs, lo, hi, alpha=0.2)
            if table_at is None:
                cand = [train_len, 2 * train_len, 4 * train_len] if train_len else []
                table_at = [t for t in cand if t in xs] + ([xs[-1]] if xs[-1] not in cand else [])
                lines += [f"## {model or 'model'}: {what}", "",
                          "| variant | seeds | " + " | ".join(f"@{t}" for t in table_at) + " |",
                          "|---|---|" + "---|" * len(table_at)]
            cells = []
            for t in table_at:
                i = xs.index(t)
                cells.append(f"{ys[i]:.3f} ({lo[i]:.2f}, {hi[i]:.2f})")
            lines.append(f"| {pe} | {len(curves)} | " + " | ".join(cells) + " |")
        lines.append("")
        if train_len:
            ax.axvline(train_len, ls="--", c="k", lw=1)
        if what == "string accuracy":
            ax.set_xscale("log", base=2)
        ax.set(title=model, xlabel="length", ylabel=what, ylim=(-0.02, 1.02))
        ax.legend(fontsize=8)
    fig.suptitle(title)
    save(fig, out)
    write_table(out, lines)


def mqar_report(out, title):
    runs = finished(out)
    acc = defaultdict(list)  # (model, L, D, width, pe, lr) -> accuracies over seeds
    for m, res in runs:
        g = re.match(r"^(?P<cfg>.+)-L(?P<L>\d+)-kv(?P<kv>\d+)-d(?P<d>\d+)$", m["model"] or "")
        if not g:
            continue
        acc[(g["cfg"], int(g["L"]), int(g["kv"]), int(g["d"]), m["pe"], float(m["lr"]))].append(res["metrics"]["accuracy"])
    best = {}  # (model, L, kv, width, pe) -> (mean, lr, seeds, min, max)
    for (cfg, L, kv, d, pe, lr), xs in acc.items():
        k = (cfg, L, kv, d, pe)
        mean = statistics.mean(xs)
        if k not in best or mean > best[k][0]:
            best[k] = (mean, lr, len(xs), min(xs), max(xs))
    settings = sorted({(k[1], k[2]) for k in best})
    fig, axes = plt.subplots(1, len(settings), figsize=(4.5 * len(settings), 3.8), squeeze=False)
    lines = [f"# {title}", "", "Cell: accuracy at the best lr (mean over seeds; min, max; lr).", ""]
    for ax, (L, kv) in zip(axes[0], settings):
        series = sorted({(k[0], k[4]) for k in best if (k[1], k[2]) == (L, kv)})
        widths = sorted({k[3] for k in best if (k[1], k[2]) == (L, kv)})
        lines += [f"## L = {L}, {kv} key-value pairs", "",
                  "| model | " + " | ".join(f"d = {w}" for w in widths) + " |", "|---|" + "---|" * len(widths)]
        for i, (cfg, pe) in enumerate(series):
            pts = [(w, best[(cfg, L, kv, w, pe)]) for w in widths if (cfg, L, kv, w, pe) in best]
            label = f"{cfg.replace('mqar-', '')} / {pe}"
            # the series side by side at each width (a small factor on the log axis), so
            # that their seeds' ranges do not hide one another
            shift = 2 ** (0.04 * (i - (len(series) - 1) / 2))
            ax.errorbar([w * shift for w, _ in pts], [b[0] for _, b in pts],
                        yerr=[[b[0] - b[3] for _, b in pts], [b[4] - b[0] for _, b in pts]],
                        marker="o", capsize=3, label=label)
            cells = {w: f"{b[0]:.3f} ({b[3]:.3f}, {b[4]:.3f}; {b[1]:g})" for w, b in pts}
            lines.append(f"| {label} | " + " | ".join(cells.get(w, "—") for w in widths) + " |")
        lines.append("")
        ax.set_xscale("log", base=2)
        # half an octave either side of the widths: one width alone keeps its series close
        ax.set_xticks(widths, [str(w) for w in widths])
        ax.set(title=f"L = {L}, {kv} pairs", xlabel="model width", ylabel="accuracy", ylim=(-0.02, 1.02),
               xlim=(min(widths) / 2 ** 0.5, max(widths) * 2 ** 0.5))
        ax.legend(fontsize=7)
    fig.suptitle(title)
    save(fig, out)
    write_table(out, lines)


def mad_report(out, title):
    acc, best, score = mad_table.scores(os.path.join(out, "runs"), set(planned_finished(out)))
    variants = [v for v in PAPER_TABLE2 if any((v, t) in score for t, _ in mad_table.TASKS)]
    names = [n for _, n in mad_table.TASKS] + ["Average"]
    lines = [f"# {title}", "", "Cell: rotor's accuracy (%) / the paper's. rotor: the mean over the task's "
             "settings (count) of the best lr x weight-decay run (the mean over its seeds).", "",
             "| variant | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    ours, spread = {}, {}
    for v in variants:
        vals, lows, highs = [], [], []
        for task, _ in mad_table.TASKS:
            xs = score.get((v, task))
            vals.append((100 * statistics.mean(xs), len(xs)) if xs else None)
            # the seeds' lowest and highest at each setting's best point, averaged over the settings
            seeds = [acc[(v, task, s, lr, wd)] for (pe, t, s), (_, lr, wd, _) in best.items() if (pe, t) == (v, task)]
            lows.append(100 * statistics.mean(min(x) for x in seeds) if seeds else 0)
            highs.append(100 * statistics.mean(max(x) for x in seeds) if seeds else 0)
        full = [x for x in vals if x]
        vals.append((statistics.mean(x[0] for x in full), None) if len(full) == len(mad_table.TASKS) else None)
        ours[v] = vals
        # no bar where the seeds agree or there is no run (NaN draws nothing)
        lows.append(0)  # the average column has no seeds' range
        highs.append(0)
        agree = [not x or lo == hi for x, lo, hi in zip(vals, lows, highs)]
        spread[v] = [[math.nan if a else x[0] - lo for a, x, lo in zip(agree, vals, lows)],
                     [math.nan if a else hi - x[0] for a, x, hi in zip(agree, vals, highs)]]
        cells = []
        for x, p in zip(vals, PAPER_TABLE2[v]):
            if x is None:
                cells.append(f"— / {p:.1f}")
            else:
                cells.append(f"{x[0]:.1f}{f' ({x[1]})' if x[1] else ''} / {p:.1f}")
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    lines += ["", "## The runs behind each cell", "",
              "Each task setting's best lr x weight-decay point: its seeds' mean accuracy (%) (lowest, highest).", "",
              "| task | setting | variant | lr | weight decay | seeds | accuracy |", "|---|---|---|---|---|---|---|"]
    order = {t: i for i, (t, _) in enumerate(mad_table.TASKS)}
    for (v, task, setting), (mean, lr, wd, n) in sorted(best.items(), key=lambda kv: (
            order[kv[0][1]], kv[0][2], variants.index(kv[0][0]) if kv[0][0] in variants else len(variants))):
        xs = acc[(v, task, setting, lr, wd)]
        lines.append(f"| {task} | {setting} | {v} | {lr:g} | {wd:g} | {n} | "
                     f"{100 * mean:.1f} ({100 * min(xs):.1f}, {100 * max(xs):.1f}) |")
    fig, axes = plt.subplots(1, 2, figsize=(13, 4), sharey=True)
    width = 0.8 / max(1, len(variants))
    for ax, (label, src) in zip(axes, (("rotor", ours), ("paper", PAPER_TABLE2))):
        for i, v in enumerate(variants):
            ys = [x[0] if isinstance(x, tuple) else (x if x is not None else 0) for x in src[v]]
            err = spread[v] if src is ours and not all(map(math.isnan, spread[v][0])) else None
            ax.bar([j + i * width for j in range(len(names))], ys, width, label=v, yerr=err, capsize=2)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(names))], names, rotation=30, fontsize=8)
        ax.set(title=label if src is not ours else f"{label} (bars: the seeds' lowest to highest)", ylabel="accuracy (%)")
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.suptitle(title)
    save(fig, out)
    write_table(out, lines)


def final_val_loss(run_dir):
    vals = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line) if line.strip() else {}
            if isinstance(r.get("val_loss"), (int, float)):
                vals.append(r["val_loss"])
    return vals[-1] if vals else float("inf")


def lm_report(out, title):
    loss = {}  # (family, pe, lr) -> final validation loss
    best = {}  # (family, pe) -> (val loss, run name)
    for name in planned_finished(out):
        m = NAME.match(name)
        if not m:
            continue
        val = loss[(m["model"], m["pe"], m["lr"])] = final_val_loss(os.path.join(out, "runs", name))
        key = (m["model"], m["pe"])
        if key not in best or val < best[key][0]:
            best[key] = (val, name)
    evals = {}  # run name -> its lm_eval.json, written by table3-lm's finish_run
    for _, name in best.values():
        path = os.path.join(out, "runs", name, "lm_eval.json")
        if not os.path.isfile(path):
            sys.exit(f"{path}: the lr-best run {name} has no evaluation; train it again "
                     f"(delete {out}/runs/{name}.done)")
        with open(path) as f:
            evals[name] = json.load(f)
    samples = [n for e in evals.values() for n in e["n-samples"].values()]
    docs = (f"the first {max(n['effective'] for n in samples)} documents"
            if any(n["effective"] < n["original"] for n in samples) else "every document")
    heads = [h for _, _, h in LM_COLUMNS] + ["Avg."]
    lines = [f"# {title}", "", f"Per model and position embedding the lr of the lowest final validation loss; "
             f"`rotor eval` on {docs} of each task. "
             "Cell: rotor / the paper (accuracies in %).", "",
             "| model | PE | lr | val loss | " + " | ".join(heads) + " |", "|---|---|---|---|" + "---|" * len(heads)]
    # Table 3's order of models and embeddings; others after them
    fams = list(dict.fromkeys(fam for (fam, _) in PAPER_TABLE3))
    pes = list(dict.fromkeys(pe for (_, pe) in PAPER_TABLE3))
    order = lambda fam_pe: (fams.index(fam_pe[0]) if fam_pe[0] in fams else len(fams), fam_pe[0],  # noqa: E731
                            pes.index(fam_pe[1]) if fam_pe[1] in pes else len(pes), fam_pe[1])
    avgs = defaultdict(dict)
    for (fam, pe), (val, name) in sorted(best.items(), key=lambda kv: order(kv[0])):
        res = evals[name]["results"]
        vals = [res[t][k] * (1 if k == "perplexity" else 100) for t, k, _ in LM_COLUMNS]
        vals.append(statistics.mean(vals[1:]))
        avgs[fam][pe] = vals[-1]
        paper = PAPER_TABLE3.get((fam, pe))
        # LAMBADA's perplexity first: a small model's runs to 1e8, written 1.91e+08
        cells = [f"{vals[0]:.2f}" if vals[0] < 1e4 else f"{vals[0]:.2e}"] + [f"{v:.1f}" for v in vals[1:]]
        if paper:
            cells = [f"{c} / {p:.2f}" if i == 0 else f"{c} / {p:.1f}" for i, (c, p) in enumerate(zip(cells, paper))]
        lr = NAME.match(name)["lr"]
        lines.append(f"| {fam} | {pe} | {lr} | {val:.3f} | " + " | ".join(cells) + " |")
    lrs = sorted({m["lr"] for m in (NAME.match(n) for n, _ in plan_rows(out)) if m}, key=float)
    lines += ["", "## Every run's final validation loss", "",
              "| model | PE | " + " | ".join(f"lr {lr}" for lr in lrs) + " |", "|---|---|" + "---|" * len(lrs)]
    for fam, pe in sorted(best, key=order):
        lines.append(f"| {fam} | {pe} | " + " | ".join(
            f"{loss[(fam, pe, lr)]:.3f}" if (fam, pe, lr) in loss else "—" for lr in lrs) + " |")
    # left: what ranks the variants at a scale where the tasks sit at chance; right: Table 3's average
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(13, 4))
    for i, fam in enumerate(sorted(avgs, key=lambda f: order((f, "")))):
        ax_loss.plot(range(len(pes)), [best[(fam, pe)][0] if (fam, pe) in best else float("nan") for pe in pes],
                     marker="o", label=fam, color=f"C{i}")
        ax_acc.plot(range(len(pes)), [avgs[fam].get(pe, float("nan")) for pe in pes], marker="o",
                    label=f"{fam} rotor", color=f"C{i}")
        ax_acc.plot(range(len(pes)), [PAPER_TABLE3[(fam, pe)][-1] for pe in pes], ls="--", marker="x",
                    label=f"{fam} paper", color=f"C{i}")
    for ax in (ax_loss, ax_acc):
        ax.set_xticks(range(len(pes)), pes, rotation=20, fontsize=8)
    ax_loss.set(ylabel="final validation loss (rotor, lr-best)", title="validation loss")
    ax_acc.set(ylabel="average accuracy (%)", title="zero-shot average")
    ax_loss.legend(fontsize=7)
    ax_acc.legend(fontsize=7, ncol=2)
    fig.suptitle(title)
    save(fig, out)
    write_table(out, lines)


def prefill_report(out, title):
    """bench/decode_bench's prefill-R.json of each round R: each config and length at its
    fastest round."""
    rounds = []
    for name in sorted(os.listdir(out)):
        if re.fullmatch(r"prefill-\d+\.json", name):
            with open(os.path.join(out, name)) as f:
                rounds.append(json.load(f))
    if not rounds:
        sys.exit(f"{out}: no prefill-R.json")
    bench, runs = rounds[0], rounds[0]["runs"]
    for other in rounds[1:]:
        for r, o in zip(runs, other["runs"]):
            for p, q in zip(r["prefill"], o["prefill"]):
                assert (r["name"], p["T"]) == (o["name"], q["T"]), (r["name"], p["T"], o["name"], q["T"])
                if q["tokens_per_s"] > p["tokens_per_s"]:
                    p.update(q)
    fig, ax = plt.subplots(figsize=(6, 4))
    lengths = [r["T"] for r in runs[0]["prefill"]]
    lines = [f"# {title}", "", f"rotor's decoder prefill at batch 1 (bench/decode_bench, device "
             f"{bench.get('device', '?')}): tokens/s, each at the fastest of {len(rounds)} rounds of "
             f"every config in turn (the {'fastest' if bench.get('prefill_stat') == 'min' else 'mean'} of "
             f"{bench.get('reps', '?')} prefills in a round).", "",
             "| config | " + " | ".join(f"T = {t}" for t in lengths) + " |", "|---|" + "---|" * len(lengths)]
    for r in runs:
        xs = [p["T"] for p in r["prefill"]]
        ys = [p["tokens_per_s"] for p in r["prefill"]]
        ax.plot(xs, ys, marker="o", label=r["name"])
        lines.append(f"| {r['name']} | " + " | ".join(f"{y:,.0f}" for y in ys) + " |")
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)  # throughputs side by side: from zero, so that 10 % looks like 10 %
    ax.set(xlabel="sequence length", ylabel="prefill tokens/s", title=title)
    ax.legend(fontsize=8)
    save(fig, out)
    write_table(out, lines)


def main(argv):
    kinds = {"length": (length_report, 2), "mqar": (mqar_report, 2), "mad": (mad_report, 2),
             "lm": (lm_report, 2), "prefill": (prefill_report, 2)}
    if len(argv) < 2 or argv[1] not in kinds or len(argv) - 2 != kinds[argv[1]][1]:
        sys.exit(__doc__)
    fn, _ = kinds[argv[1]]
    fn(*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
