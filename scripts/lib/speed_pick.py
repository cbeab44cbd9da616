#!/usr/bin/env python3
"""The decisions and the record of scripts/gpu_check.sh's speed part (scripts/lib/gpu_speed.sh).

  speed_pick.py pick RESULTS [--margin M] [--single]
      prints the spec (op:variant,...) of the winners: per op, the variant with the lowest
      time ratio against the default among those that passed their GPU test program and their
      comparison with the default kernels, if it is faster by more than the margin (default
      0.02); --single: only the one winner with the lowest ratio. Why each op got its winner
      (or none) goes to stderr.
  speed_pick.py report RESULTS --json FILE --table FILE [--winners SPEC] [--combined RC]
                       [--step NAME=FILE]...
      writes every result as JSON and a table: per variant its check, its comparison (worst
      err/tol) and times against the default; the winners and their combined check; per
      step_bench run (NAME: default, winners, ...) each config's step ms, tokens/s and MFU,
      with the winners' ratio to the default.

RESULTS has one line per variant tried, tab-separated: op, variant, bench op, the test
program's exit status ("not-run" when the part's time was spent), gpu_mixers --compare's exit
status, and its "compare op=..." line (empty when it printed none).
"""
import argparse
import json
import sys


def parse_results(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("\t")
            parts += [""] * (6 - len(parts))
            op, variant, bench, check, compare_rc, compare = parts[:6]
            kv = dict(w.split("=", 1) for w in compare.split()[1:] if "=" in w)
            row = {"op": op, "variant": variant, "bench": bench, "check_rc": check,
                   "compare_rc": compare_rc, "compare_ok": compare.endswith(" ok")}
            for key in ("base_fwd_ms", "base_bwd_ms", "fwd_ms", "bwd_ms", "err", "tol"):
                if key in kv:
                    row[key] = float(kv[key])
            base = row.get("base_fwd_ms", 0) + row.get("base_bwd_ms", 0)
            if base > 0 and "fwd_ms" in row and "bwd_ms" in row:
                row["ratio"] = (row["fwd_ms"] + row["bwd_ms"]) / base
            row["correct"] = check == "0" and compare_rc == "0" and row["compare_ok"]
            rows.append(row)
    return rows


def verdict(row):
    if row["check_rc"] == "not-run":
        return "not run"
    if row["check_rc"] != "0":
        return "FAILED its test (exit %s)" % row["check_rc"]
    if row["compare_rc"] in ("", "not-run"):
        return "passed its test; not compared"
    if not row["compare_ok"]:
        return "FAILED the comparison (exit %s)" % row["compare_rc"]
    return "correct"


def pick(rows, margin, single):
    best = {}
    for r in rows:
        if not r["correct"] or "ratio" not in r:
            continue
        if r["op"] not in best or r["ratio"] < best[r["op"]]["ratio"]:
            best[r["op"]] = r
    winners = []
    for op in dict.fromkeys(r["op"] for r in rows):
        b = best.get(op)
        if b is None:
            print(f"{op}: no variant passed its checks: the default stays", file=sys.stderr)
        elif b["ratio"] >= 1 - margin:
            print(f"{op}: the best correct variant, {b['variant']}, takes {b['ratio']:.3f} of "
                  f"the default's time: not faster by more than {margin:.0%}", file=sys.stderr)
        else:
            print(f"{op}: {b['variant']} wins, {b['ratio']:.3f} of the default's time",
                  file=sys.stderr)
            winners.append(b)
    if single and winners:
        winners = [min(winners, key=lambda r: r["ratio"])]
    return ",".join(f"{r['op']}:{r['variant']}" for r in winners)


def load_step(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        return {"error": f"{path}: {e}"}


def report(args, rows):
    steps = {}
    for item in args.step or []:
        name, _, path = item.partition("=")
        steps[name] = load_step(path)
    record = {"variants": rows, "winners": args.winners or "",
              "combined_check_rc": args.combined, "steps": steps}
    with open(args.json, "w") as f:
        json.dump(record, f, indent=1)
    lines = ["%-10s %-8s %-5s %-32s %9s %9s %9s %9s" % (
        "op", "variant", "bench", "result", "err/tol", "base ms", "ms", "ratio")]
    for r in rows:
        et = "%.3f" % (r["err"] / r["tol"]) if r.get("tol") else "-"
        base = r.get("base_fwd_ms", 0) + r.get("base_bwd_ms", 0)
        ms = r.get("fwd_ms", 0) + r.get("bwd_ms", 0)
        lines.append("%-10s %-8s %-5s %-32s %9s %9s %9s %9s" % (
            r["op"], r["variant"], r["bench"], verdict(r), et,
            "%.3f" % base if base else "-", "%.3f" % ms if ms else "-",
            "%.3f" % r["ratio"] if "ratio" in r else "-"))
    lines.append("ms: forward + backward of the bench op at the 370M shape; ratio: variant / default "
                 "(< 1: the variant is faster)")
    lines.append("winners: %s%s" % (args.winners or "none (the defaults stay)",
                                    "" if args.combined in (None, "") else
                                    "; combined check exit %s" % args.combined))
    by_config = {}
    for name, data in steps.items():
        for c in data.get("configs", []):
            by_config.setdefault((c["config"], c["micro_batch"], c["seq_len"]), {})[name] = c
    if by_config:
        names = list(steps)
        lines.append("")
        lines.append("%-44s %-10s " % ("step", "BxT") +
                     " ".join("%22s" % (n + " ms / tok/s / MFU") for n in names) + "  ratio")
        for (config, b, t), runs in by_config.items():
            cells = []
            for n in names:
                c = runs.get(n)
                cells.append("%22s" % ("%.1f / %.0f / %.1f%%" % (c["step_ms"], c["tokens_per_s"],
                                                                 100 * c["mfu"]) if c else "-"))
            ratio = "-"
            if "default" in runs and "winners" in runs:
                ratio = "%.3f" % (runs["winners"]["step_ms"] / runs["default"]["step_ms"])
            lines.append("%-44s %-10s " % (config, f"{b}x{t}") + " ".join(cells) + "  " + ratio)
        lines.append("ratio: the winners' step ms / the defaults' (< 1: faster)")
    with open(args.table, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pick")
    p.add_argument("results")
    p.add_argument("--margin", type=float, default=0.02)
    p.add_argument("--single", action="store_true")
    r = sub.add_parser("report")
    r.add_argument("results")
    r.add_argument("--json", required=True)
    r.add_argument("--table", required=True)
    r.add_argument("--winners")
    r.add_argument("--combined")
    r.add_argument("--step", action="append")
    args = ap.parse_args()
    rows = parse_results(args.results)
    if args.cmd == "pick":
        print(pick(rows, args.margin, args.single))
    else:
        report(args, rows)


if __name__ == "__main__":
    main()
