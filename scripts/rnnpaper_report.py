#!/usr/bin/env python3
"""Figures and tables of scripts/reproduce.sh's experiments for the RotRNN and nnRNN papers
(scripts/experiments/{nnrnn,rotrnn}-*.sh), from an experiment's output directory OUT (its runs
in OUT/runs, named MODEL__VARIANT-lrLR-seedSEED). Writes OUT/figure.svg and OUT/table.md, the paper's numbers beside rotor's where the paper prints numbers.

    rnnpaper_report.py copy    OUT    nnRNN Fig. 4 left: validation loss against the step per
                                      model; table: test loss (baseline) and copied-symbol accuracy
    rnnpaper_report.py psmnist OUT    nnRNN Fig. 2: validation accuracy against the step; table:
                                      best validation accuracy and the test accuracy there
    rnnpaper_report.py ptb     OUT    nnRNN Tables 1 and 7: test bits per character (best
                                      validation's checkpoint) beside the paper's; validation bpc
                                      curves
    rnnpaper_report.py lra     OUT    RotRNN Table 1: test accuracy at the best validation beside
                                      the paper's RotRNN and LRU rows; validation accuracy curves
    rnnpaper_report.py speech  OUT    RotRNN Table 2: the same for Speech Commands
    rnnpaper_report.py fig3    OUT    RotRNN Fig. 3: the state norm of every layer during
                                      training (scripts/plot_recurrent.py); table: its mean and
                                      spread over layers and seeds at the last validation
    rnnpaper_report.py schur   OUT    nnRNN Fig. 3 / 5: the learned Schur form of each task's
                                      last checkpoint or saved layer (scripts/nnrnn_schur.py); table: mean gamma,
                                      eigenvalue moduli, the non-normal part, the angles' spread

Means are over seeds (the runs that differ only in SEED). Needs matplotlib (Debian's
python3-matplotlib)."""
import glob
import json
import os
import re
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reproduce_runs import planned_finished  # noqa: E402

NAME = re.compile(r"^(?:(?P<model>.+)__)?(?P<variant>.+?)-lr(?P<lr>.+)-seed(?P<seed>\d+)$")

# nnRNN Table 1 (test BPC; fixed # params ~1.32M, fixed # hidden units N = 1024) and Table 7
# (gamma clamped), keyed by rotor's run names (MODEL__ptbT, the -hN and -gamma variants)
PAPER_PTB = {
    "rnn__ptb150": 2.89, "rnn__ptb300": 2.90, "rnn_orth__ptb150": 1.62, "rnn_orth__ptb300": 1.66,
    "exprnn__ptb150": 1.51, "exprnn__ptb300": 1.55, "exprnn-h1386__ptb150": 1.49, "exprnn-h1386__ptb300": 1.52,
    "nnrnn__ptb150": 1.47, "nnrnn__ptb300": 1.49, "nnrnn-gamma1__ptb150": 1.46, "nnrnn-gamma1__ptb300": 1.49,
    "nnrnn-gamma0958__ptb150": 1.47, "nnrnn-gamma0958__ptb300": 1.49, "lstm__ptb150": 1.37,
}
# RotRNN Tables 1 (LRA) and 2 (speech35: Speech Commands, 35 words), test accuracy in %:
# RotRNN and the authors' LRU reproduction, keyed by the task a run's variant names
PAPER_ACCURACY = {
    "rotrnn": {"listops": 61.1, "text": 89.6, "retrieval": 89.9, "image": 85.9, "pathfinder": 93.0, "pathx": 89.2,
               "speech35": 95.2},
    "lru": {"listops": 57.9, "text": 89.4, "retrieval": 89.4, "image": 85.2, "pathfinder": 90.0, "pathx": 92.8,
            "speech35": 95.2},
}


def runs(out):
    """{(model, variant): [run_dir, ...]} of the finished runs of the plan."""
    groups = defaultdict(list)
    for name in planned_finished(out):
        m = NAME.match(name)
        if m:
            groups[(m["model"] or "", m["variant"])].append(os.path.join(out, "runs", name))
    return groups


def metrics(run_dir):
    return [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl")) if line.strip()]


def results(run_dir):
    path = os.path.join(run_dir, "synth_results.json")
    return json.load(open(path)) if os.path.exists(path) else {}


def mean(xs):
    xs = [x for x in xs if x is not None]
    return statistics.mean(xs) if xs else None


def fmt(x, spec=".4f"):
    return "" if x is None else format(x, spec)


def curves(out, groups, key, ylabel, title, logy=False):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, ((model, variant), dirs) in enumerate(sorted(groups.items())):
        for j, d in enumerate(dirs):
            pts = [(r["step"], r[key]) for r in metrics(d) if isinstance(r.get(key), (int, float))]
            if pts:
                ax.plot(*zip(*pts), color=f"C{i % 10}", linewidth=1, label=f"{model} {variant}" if j == 0 else None)
    ax.set(xlabel="step", ylabel=ylabel, title=title)
    if logy:
        ax.set_yscale("log")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, out)


def save(fig, out):
    """OUT/figure.svg, the same bytes for the same figure (no date, no random ids)."""
    import matplotlib
    matplotlib.rcParams["svg.hashsalt"] = "rotor"
    fig.savefig(os.path.join(out, "figure.svg"), metadata={"Date": None})


def write_table(out, lines):
    text = "\n".join(lines) + "\n"
    open(os.path.join(out, "table.md"), "w").write(text)
    print(text, end="")


def best(res):
    """The best validation's checkpoint's results where synth scored one, else the last."""
    b = res.get("best")
    return b if isinstance(b, dict) else res.get("metrics", {})


def copy_report(out):
    g = runs(out)
    curves(out, g, "val_loss", "validation cross-entropy", "nnRNN Fig. 4 left: copy task, T = 200", logy=True)
    lines = ["| model | seeds | test loss | memoryless baseline | copied-symbol accuracy |",
             "|---|---|---|---|---|"]
    for (model, variant), dirs in sorted(g.items()):
        ms = [results(d).get("metrics", {}) for d in dirs]
        lines.append(f"| {model} ({variant}) | {len(dirs)} | {fmt(mean([m.get('test_loss') for m in ms]))} | "
                     f"{fmt(mean([m.get('baseline_loss') for m in ms]))} | {fmt(mean([m.get('accuracy') for m in ms]), '.3f')} |")
    lines.append("\nThe paper gives the copy task as curves only (Fig. 2 left, supplement Fig. 4 left; paper §5.1: the "
                 "orthogonal RNNs, RNN-orth, EURNN, expRNN and the nnRNN, solve it quickly, the nnRNN matching the "
                 "best of them; the LSTM struggles and the RNN fails; the memoryless baseline is 0.095).")
    write_table(out, lines)


def psmnist_report(out):
    g = runs(out)
    curves(out, g, "val_accuracy", "validation accuracy", "nnRNN Fig. 2: permuted sequential MNIST")
    lines = ["| model | seeds | best validation accuracy | test accuracy there | test accuracy, last step |",
             "|---|---|---|---|---|"]
    for (model, variant), dirs in sorted(g.items()):
        rs = [results(d) for d in dirs]
        lines.append(f"| {model} ({variant}) | {len(dirs)} | {fmt(mean([best(r).get('val_accuracy') for r in rs]), '.3f')} | "
                     f"{fmt(mean([best(r).get('test_accuracy') for r in rs]), '.3f')} | "
                     f"{fmt(mean([r.get('last', {}).get('test_accuracy') for r in rs]), '.3f')} |")
    lines.append("\nThe paper gives psMNIST as curves only (Fig. 2, supplement Fig. 4 right; paper §5.1: the nnRNN "
                 "matches the orthogonal RNNs, expRNN and RNN-orth, and the RNN and the LSTM do less well).")
    write_table(out, lines)


def test_bpc(res):
    b = res.get("best")
    m = b.get("metrics", b) if isinstance(b, dict) else res.get("metrics", {})
    return m.get("test", {}).get("bpc")


def ptb_report(out):
    g = runs(out)
    curves(out, g, "val_bpc", "validation bits per character", "nnRNN Table 1: PTB characters")
    lines = ["| model | data | seeds | test bpc (rotor) | test bpc (paper) |", "|---|---|---|---|---|"]
    for (model, variant), dirs in sorted(g.items()):
        paper = PAPER_PTB.get(f"{model}__{variant}")
        lines.append(f"| {model} | {variant} | {len(dirs)} | {fmt(mean([test_bpc(results(d)) for d in dirs]), '.3f')} | "
                     f"{fmt(paper, '.2f')} |")
    lines.append("\nPaper: Table 1 (fixed hidden units N = 1024; the -h1386 expRNN is the fixed-parameter half, "
                 "where RNN, RNN-orth and nnRNN are the same), the LSTM's 1.37 from paper §5.2, Table 7 for the clamped "
                 "gamma. Data other than ptb150 / ptb300 is not PTB: no paper number applies.")
    write_table(out, lines)


def accuracy_report(out, title, note):
    g = runs(out)
    curves(out, g, "val_accuracy", "validation accuracy", title)
    lines = ["| model | task | seeds | test accuracy at best validation (rotor, %) | paper (%) |", "|---|---|---|---|---|"]
    for (model, variant), dirs in sorted(g.items()):
        acc = mean([best(results(d)).get("test_accuracy") for d in dirs])
        task = variant.split("-")[0]
        lines.append(f"| {model} | {variant} | {len(dirs)} | {fmt(None if acc is None else 100 * acc, '.1f')} | "
                     f"{fmt(PAPER_ACCURACY.get(model, {}).get(task), '.1f')} |")
    lines.append("\n" + note)
    write_table(out, lines)


def lra_report(out):
    accuracy_report(out, "RotRNN Table 1: LRA", "Paper: Table 1 (RotRNN; LRU: the RotRNN authors' reproduction). CPU "
                    "runs are short ListOps expressions (docs/rotrnn.md): the paper's numbers do not apply to them.")


def speech_report(out):
    accuracy_report(out, "RotRNN Table 2: Speech Commands", "Paper: Table 2 (35 words at 16 kHz; LRU: the RotRNN "
                    "authors' reproduction; S4 96.1, S4D 95.8, Liquid-S4 96.8, S5 96.8 from their papers). CPU runs "
                    "read 3500 clips a split at 2 kHz with a two-layer model: the paper's numbers do not apply to them.")


def fig3_report(out):
    import plot_recurrent
    g = runs(out)
    args = [f"{model} {variant}={d}" for (model, variant), dirs in sorted(g.items()) for d in dirs]
    plot_recurrent.main(["plot_recurrent.py", os.path.join(out, "figure.png")] + args)
    lines = ["| model | seeds | layers | state norm at the last validation: mean | spread over layers and seeds (sd) |",
             "|---|---|---|---|---|"]
    for (model, variant), dirs in sorted(g.items()):
        norms = []
        for d in dirs:
            last = [r for r in metrics(d) if "recurrent" in r][-1]["recurrent"]
            norms += [o.get("state_norm_head", o["state_norm"]) for o in last]
        sd = statistics.stdev(norms) if len(norms) > 1 else 0.0
        lines.append(f"| {model} ({variant}) | {len(dirs)} | {len(norms) // len(dirs)} | {norms and statistics.mean(norms):.4f} | {sd:.4f} |")
    lines.append("\nRotRNN: the per-head norm (1 for white unit inputs); the LRU: the whole state's. The paper "
                 "(Fig. 3) shows RotRNN's norms near-constant across layers and seeds and the LRU's varying widely; it "
                 "prints no numbers.")
    write_table(out, lines)


# nnRNN paper §5.3 and supplement §E, per task: what Fig. 3 / 5 show of the learned Θ
PAPER_SCHUR = {
    "copy": "γ̄ ~ 1; T ~ 0 (2x2 rotation blocks alone); angles roughly uniform",
    "ptb": "γ̄ ~ 0.958; T structured, a delay line at k = 1; angles strongly aligned",
    "psmnist": "angles flat (close to uniform); T weaker than on PTB, not absent",
}


def schur_task(variant):
    """The paper's task a run's variant stands for (CPU scale: characters for PTB, permuted
    Fashion-MNIST for psMNIST)."""
    for key, task in (("copy", "copy"), ("ptb", "ptb"), ("shakespeare", "ptb"), ("mnist", "psmnist")):
        if key in variant:
            return task
    return None


def schur_params(run_dir):
    """The nnRNN layer of a run: from its last checkpoint, else from the schur_params.jsonl its
    finish_run wrote (what the results store keeps; scripts/nnrnn_schur.py --params)."""
    import nnrnn_schur
    steps = sorted(glob.glob(os.path.join(run_dir, "checkpoints", "step_*")))
    if steps:
        return nnrnn_schur.load_checkpoint(steps[-1])
    saved = os.path.join(run_dir, "schur_params.jsonl")
    if not os.path.isfile(saved):
        sys.exit(f"rnnpaper_report: {run_dir} has neither a checkpoint (checkpoints/step_N) nor {saved}")
    return nnrnn_schur.load_params(saved)


def schur_stats(t):
    """nnrnn_schur's summary, and: |T|_F against |Λ|_F, the mean |entry| of T off the 2x2 blocks,
    the delay line (Θ's first subdiagonal outside the blocks, at odd rows) against the rest of T,
    and the angles' distance from uniform on [0, π] (Kolmogorov-Smirnov: 0 uniform, 1 one angle)."""
    import numpy as np
    import nnrnn_schur
    p = "model.layers.0.attn."
    s = nnrnn_schur.summary(t, p)
    n = len(t[p + "T"])
    lower = np.tril(np.ones((n, n), bool), -1)
    for i in range(0, n, 2):
        lower[i + 1, i] = False  # the in-block entry t_i belongs to the block's eigenvalues
    T = np.where(lower, t[p + "T"], 0.0)
    delay = np.array([abs(T[i + 1, i]) for i in range(1, n - 1, 2)])
    rest = lower.copy()
    for i in range(1, n - 1, 2):
        rest[i + 1, i] = False
    a = np.sort(nnrnn_schur.fold(t[p + "theta"])) / np.pi
    m = len(a)
    ks = max(np.max(np.arange(1, m + 1) / m - a), np.max(a - np.arange(m) / m))
    return dict(s, T_ratio=float(np.linalg.norm(T) / np.sqrt(2 * np.sum(t[p + "gamma"] ** 2))),
                T_off_mean=float(np.abs(T[lower]).mean()), delay_mean=float(delay.mean()),
                rest_mean=float(np.abs(T[rest]).mean()), angle_ks=float(ks))


def schur_report(out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import nnrnn_schur
    p = "model.layers.0.attn."
    g = runs(out)
    tasks = sorted(g.items(), key=lambda kv: list(PAPER_SCHUR).index(schur_task(kv[0][1]) or "copy"))
    fig, axes = plt.subplots(len(tasks), 3, figsize=(15, 4.2 * len(tasks)), squeeze=False)
    lines = ["| task (run) | seeds | γ̄ | eigenvalue moduli: mean (min, max) | ‖T‖_F / ‖Λ‖_F | "
             "mean abs(T) off the blocks: delay line / rest | angles' KS distance from uniform | the paper (Fig. 3 / 5) |",
             "|---|---|---|---|---|---|---|---|"]
    for row, ((model, variant), dirs) in zip(axes, tasks):
        ts = [schur_params(d) for d in dirs]
        st = [schur_stats(t) for t in ts]
        K = nnrnn_schur.schur_form(ts[0], p)
        lim = max(np.abs(K).max(), 1e-12)
        im = row[0].imshow(K, cmap="RdBu_r", vmin=-lim, vmax=lim)
        fig.colorbar(im, ax=row[0], fraction=0.046)
        row[0].set_title(f"{variant}: Θ = Λ + T (γ̄ = {st[0]['gamma_mean']:.3f})")
        row[1].hist(np.concatenate([nnrnn_schur.fold(t[p + "theta"]) for t in ts]), bins=24, range=(0, np.pi))
        row[1].set(xlabel="θ_i folded into [0, π]", ylabel="count", title=f"{variant}: rotation angles")
        for s in st:
            row[2].plot(np.arange(1, len(K)), s["subdiagonal_mean_abs"], color="C0", linewidth=1)
        row[2].set(xlabel="k (subdiagonal)", ylabel="mean |Θ entry|", xscale="log",
                   title=f"{variant}: lower triangle by subdiagonal")
        avg = {k: mean([s[k] for s in st]) for k in ("gamma_mean", "modulus_mean", "T_ratio", "delay_mean",
                                                     "rest_mean", "angle_ks")}
        lines.append(f"| {schur_task(variant)} ({variant}) | {len(dirs)} | {avg['gamma_mean']:.3f} | "
                     f"{avg['modulus_mean']:.3f} ({min(s['modulus_min'] for s in st):.3f}, "
                     f"{max(s['modulus_max'] for s in st):.3f}) | {avg['T_ratio']:.3f} | "
                     f"{avg['delay_mean']:.4f} / {avg['rest_mean']:.4f} | {avg['angle_ks']:.3f} | "
                     f"{PAPER_SCHUR.get(schur_task(variant), '')} |")
    fig.tight_layout()
    save(fig, out)
    lines.append("\nΛ: the 2x2 blocks γ_i R(θ_i); T: the lower triangle outside them (the in-block entries t_i "
                 "are part of the blocks' eigenvalues, docs/models.md §nonlinear-rnns). The delay line is T's first "
                 "subdiagonal between neighbouring blocks. The figure shows the first seed's Θ; the paper prints "
                 "no numbers but γ̄.")
    write_table(out, lines)


def main(argv):
    kinds = {"copy": copy_report, "psmnist": psmnist_report, "ptb": ptb_report, "lra": lra_report, "fig3": fig3_report,
             "schur": schur_report, "speech": speech_report}
    if len(argv) != 3 or argv[1] not in kinds:
        sys.exit(__doc__)
    kinds[argv[1]](argv[2])


if __name__ == "__main__":
    main(sys.argv)
