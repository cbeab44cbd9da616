#!/usr/bin/env python3
"""One line per kernel from Nsight Compute's raw CSV (`ncu --import R --csv --page raw`), for
scripts/gpu_check.sh's part "ncu" (docs/gpu.md): launches, median and total duration, SM,
memory and DRAM throughput (% of peak), tensor-pipe and issue-slot use, achieved occupancy,
registers, block and grid, and the two largest warp stall reasons (cycles per issued
instruction). A metric the run did not collect prints "-".

    ncu_table.py RAW_CSV        (sorted by total time, largest first)

The raw page: a header row (ID, ..., Kernel Name, ..., one column per metric), then a row of
units, then one row per profiled launch; numbers may carry thousands separators."""
import csv
import re
import statistics
import sys

COLUMNS = [  # (heading, metric, format)
    ("SM%", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "{:.0f}"),
    ("mem%", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "{:.0f}"),
    ("dram%", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "{:.0f}"),
    ("tensor%", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "{:.0f}"),
    ("issue%", "smsp__issue_active.avg.pct_of_peak_sustained_active", "{:.0f}"),
    ("occ%", "sm__warps_active.avg.pct_of_peak_sustained_active", "{:.0f}"),
    ("regs", "launch__registers_per_thread", "{:.0f}"),
    ("block", "launch__block_size", "{:.0f}"),
    ("grid", "launch__grid_size", "{:.0f}"),
]
DURATION = "gpu__time_duration.sum"
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(.+)_per_issue_active\.ratio$")


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def short_name(name):
    """The kernel's function name without namespace, parameters or template arguments."""
    name = re.sub(r"\(anonymous namespace\)::", "", name)
    depth, out = 0, []
    for ch in name:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    base = "".join(out).split("::")[-1].strip()
    return base.split()[-1] if base else name


def read(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or "Kernel Name" not in rows[0]:
        sys.exit(f"{path}: no 'Kernel Name' column in the header: not ncu's raw CSV page")
    head = rows[0]
    body = rows[1:]
    unit = {}
    if body and number(body[0][head.index("ID")] if "ID" in head else "") is None:
        unit = dict(zip(head, body[0]))
        body = body[1:]
    return head, unit, body


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: ncu_table.py RAW_CSV")
    head, unit, body = read(sys.argv[1])
    kernel = head.index("Kernel Name")
    scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(unit.get(DURATION, "nsecond"))
    if DURATION not in head or scale is None:
        sys.exit(f"{sys.argv[1]}: no {DURATION} in nanoseconds, microseconds, milliseconds or seconds")
    stalls = [(m.group(1), i) for i, h in enumerate(head) if (m := STALL.match(h))]
    per = {}
    for row in body:
        if len(row) != len(head):
            continue
        per.setdefault(short_name(row[kernel]), []).append(row)
    lines = []
    for name, rows in per.items():
        def median(metric):
            if metric not in head:
                return None
            vals = [v for r in rows if (v := number(r[head.index(metric)])) is not None]
            return statistics.median(vals) if vals else None
        us = median(DURATION) * scale
        cells = []
        for _, metric, fmt in COLUMNS:
            v = median(metric)
            cells.append("-" if v is None else fmt.format(v))
        ranked = []
        for reason, i in stalls:
            vals = [v for r in rows if (v := number(r[i])) is not None]
            if vals:
                ranked.append((statistics.median(vals), reason))
        ranked.sort(reverse=True)
        top = " ".join(f"{r}={v:.1f}" for v, r in ranked[:2]) or "-"
        lines.append((us * len(rows), name, len(rows), us, cells, top))
    lines.sort(key=lambda x: -x[0])
    print(f"{'kernel':34} {'n':>4} {'med us':>9} {'tot ms':>8} "
          + " ".join(f"{h:>7}" for h, _, _ in COLUMNS) + "  stalls (cycles per issue)")
    for total, name, n, us, cells, top in lines:
        print(f"{name[:34]:34} {n:4d} {us:9.1f} {total / 1e3:8.2f} "
              + " ".join(f"{c:>7}" for c in cells) + f"  {top}")


if __name__ == "__main__":
    main()
