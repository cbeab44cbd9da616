"""The tables of scripts/kernel_report.sh, from what it left in WORK: per kernels/ file a
folder with ptxas.txt (ptxas -v), the PTX (--keep), `source` (the file's path) and, where
cuobjdump was found, sass.txt (cuobjdump -sass); census.txt, the stdout of bench/gpu_mixers
run under bench/launch_census.c, and with a variant census-variant.txt.

  kernel_report.py resources WORK      the kernels' resources for the census
                                       (ROTOR_CENSUS_RESOURCES): "MANGLED REGS SMEM THREADS"
  kernel_report.py report WORK [--markdown] [--json FILE] [--variant SPEC]

Occupancy is the H100's (sm_90): 65,536 registers and 228 KiB of shared memory per SM, 1 KiB
of it reserved per block, registers allocated per warp in units of 256, at most 32 blocks and
64 warps per SM (bench/launch_census.c answers occupancy queries by the same rule)."""
import argparse
import collections
import glob
import json
import math
import os
import re
import subprocess
import sys

REGS_PER_SM, SMEM_PER_SM, SMEM_RESERVED = 65536, 228 * 1024, 1024
MAX_WARPS, MAX_BLOCKS, REG_UNIT, SMS = 64, 32, 256, 132
# SASS opcodes counted per kernel (static counts in the machine code), by column
SASS = collections.OrderedDict([
    ("LDSM", ("LDSM",)), ("LDS", ("LDS",)), ("STS", ("STS",)), ("LD", ("LD",)), ("ST", ("ST",)),
    ("LDG", ("LDG",)), ("STG", ("STG",)), ("LDGSTS", ("LDGSTS",)), ("HMMA", ("HMMA",)),
    ("HGMMA", ("HGMMA",)), ("RED", ("REDG", "RED", "ATOMG", "ATOM")), ("BAR", ("BAR",)),
    ("FFMA", ("FFMA",)), ("MUFU", ("MUFU",)), ("LDL/STL", ("LDL", "STL"))])


def occupancy(regs, smem, threads):
    """Blocks per SM of `threads` threads and `smem` bytes of shared memory, and the limit."""
    warps = -(-threads // 32)
    limits = {"warps": MAX_WARPS // warps, "blocks": MAX_BLOCKS}
    if regs:
        limits["regs"] = (REGS_PER_SM // (-(-regs * 32 // REG_UNIT) * REG_UNIT)) // warps
    limits["smem"] = SMEM_PER_SM // (smem + SMEM_RESERVED)
    blocks = min(limits.values())
    return blocks, min(limits, key=lambda k: (limits[k], k != "warps"))


def kernels(work):
    """mangled name -> resources of every sm_90a entry function that ptxas compiled."""
    out = {}
    for keep in sorted(glob.glob(os.path.join(work, "*", ""))):
        if not os.path.exists(os.path.join(keep, "ptxas.txt")):
            continue
        source = open(os.path.join(keep, "source")).read().strip()
        maxntid = {}
        for ptx in glob.glob(os.path.join(keep, "*.ptx")):
            text = open(ptx).read()
            for m in re.finditer(r"\.entry\s+([\w$]+)\s*\((.*?)\)\s*((?:\.\w+[^{]*?)*)\{", text, re.S):
                n = re.search(r"\.maxntid\s+(\d+),\s*(\d+),\s*(\d+)", m.group(3))
                if n:
                    maxntid[m.group(1)] = int(n.group(1)) * int(n.group(2)) * int(n.group(3))
        fn, arch = None, None
        for line in open(os.path.join(keep, "ptxas.txt")):
            m = re.search(r"Compiling entry function '([^']+)' for '(\w+)'", line)
            if m:
                fn, arch = m.group(1), m.group(2)
                if arch == "sm_90a":
                    out[fn] = {"file": os.path.basename(source), "stack": 0, "spill_st": 0,
                               "spill_ld": 0, "regs": 0, "smem": 0, "threads": maxntid.get(fn)}
                continue
            if arch != "sm_90a" or fn not in out:
                continue
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m:
                out[fn].update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
            m = re.search(r"Used (\d+) registers", line)
            if m:
                out[fn]["regs"] = int(m.group(1))
                s = re.search(r"(\d+) bytes smem", line)
                out[fn]["smem"] = int(s.group(1)) if s else 0
        sass = os.path.join(keep, "sass.txt")
        if os.path.exists(sass):
            for name, mix in sass_mix(sass).items():
                if name in out:
                    out[name]["sass"] = mix
    return out


def sass_mix(path):
    """mangled name -> {column: count} from cuobjdump -sass."""
    column = {op: col for col, ops in SASS.items() for op in ops}
    mix, counts = {}, None
    for line in open(path):
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            counts = mix.setdefault(m.group(1), dict.fromkeys(SASS, 0))
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)", line)
        if m and counts is not None and m.group(1) in column:
            counts[column[m.group(1)]] += 1
    return mix


def cutlass_label(name):
    """A CUTLASS 3 Hopper GEMM's kernel (c++filt leaves its names mangled) by what tells its
    instances apart: the warpgroup MMA, the mainloop's stages, B's major mode."""
    stages = re.search(r"MainloopSm90TmaGmmaWarpSpecializedILi(\d+)E", name)
    mma = re.search(r"MMA_(\d+x\d+x\d+)_[A-Z0-9]+_SSI\w+?5MajorE0EL\w+?_([01])E", name)
    if not (stages and mma):
        return name
    return (f"cutlass GemmUniversal<{mma.group(1)}, {stages.group(1)} stages, "
            f"B {'MN' if mma.group(2) == '1' else 'K'}-major>")


def demangle(names):
    text = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                          check=True).stdout.split("\n")

    def short(name):
        if name.startswith("_ZN7cutlass13device_kernel"):
            return cutlass_label(name)
        name = re.sub(r"\(anonymous namespace\)::", "", name)
        name = re.sub(r"^void ", "", name)  # a template's return type
        return re.sub(r"\(.*\)$", "", name)  # the parameter list: the same for a kernel's instances
    return dict(zip(names, (short(t) for t in text)))


def census(path):
    """The launches, products and occupancy answers of a census run, per bench op (the
    program's "op=NAME" line follows the op's launches): (launches, gemms, answers,
    refused), launches a list of rows in the order first seen, each launch config once."""
    launches, gemms, answers, refused, pending = [], [], [], [], []
    for line in open(path):
        w = line.split()
        if not w:
            continue
        if w[0].startswith("op="):
            for row in pending:
                row["op"] = w[0][3:]
            pending = []
        elif w[0] == "census" and w[1] in ("launch", "refused"):
            f = dict(x.split("=", 1) for x in w[3:6])
            key = (w[2], f["grid"], f["block"], f["smem"].rstrip(":"))
            if w[1] == "refused":
                refused.append(line.strip())
            row = next((r for r in pending if r["key"] == key), None)
            if row is None:
                row = {"key": key, "op": "-", "kernel": w[2], "launches": 0,
                       "grid": [int(x) for x in key[1].split(",")],
                       "block": [int(x) for x in key[2].split(",")], "dynamic_smem": int(key[3])}
                pending.append(row)
                launches.append(row)
            row["launches"] += 1
        elif w[0] == "census" and w[1] == "gemm":
            gemms.append(" ".join(w[2:]))
        elif w[0] == "census" and w[1] == "occupancy":
            f = dict(x.split("=", 1) for x in w[3:])
            answers.append((w[2], int(f["threads"]), int(f["smem"]), int(f["blocks"])))
    # the same op and config seen in several calls of the op: one row, launches summed
    merged = collections.OrderedDict()
    for r in launches:
        k = (r["op"],) + r.pop("key")
        if k in merged:
            merged[k]["launches"] += r["launches"]
        else:
            merged[k] = r
    return list(merged.values()), collections.Counter(gemms), answers, refused


def resolve(rows, res):
    """Adds each launch's blocks, threads, shared memory, blocks per SM and waves."""
    for r in rows:
        r["blocks"] = math.prod(r["grid"])
        r["threads"] = math.prod(r["block"])
        k = res.get(r["kernel"])
        if not k:
            r["known"] = False
            continue
        r["known"] = True
        r["smem"] = k["smem"] + r["dynamic_smem"]
        r["regs"], r["spills"] = k["regs"], k["spill_st"] + k["spill_ld"]
        r["per_sm"], r["limit"] = occupancy(k["regs"], r["smem"], r["threads"])
        wave = r["per_sm"] * SMS
        r["waves"] = r["blocks"] / wave if wave else math.inf
        r["full_waves"] = math.ceil(r["waves"]) if wave else 0
        r["last_wave"] = (r["blocks"] - (r["full_waves"] - 1) * wave) / wave if wave else 0


def table(head, rows, markdown, left=2):
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" if i < left else "---:" for i in range(len(head))) + "|")
        for r in rows:
            print("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
        return
    width = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(w) if i < left else c.rjust(w)
                        for i, (c, w) in enumerate(zip(r, width))).rstrip())


def grid_text(g):
    return "x".join(str(x) for x in g)


LAUNCH_HEAD = ("op", "kernel", "grid", "block", "dyn smem", "smem", "regs", "blocks/SM",
               "limit", "blocks", "waves", "last wave", "launches")


def launch_cells(r, names):
    base = [r["op"], names[r["kernel"]], grid_text(r["grid"]), str(r["threads"]),
            str(r["dynamic_smem"])]
    if not r["known"]:
        return base + ["-"] * 7 + [str(r["launches"])]
    return base + [str(r["smem"]), str(r["regs"]), str(r["per_sm"]), r["limit"], str(r["blocks"]),
                   "%.2f" % r["waves"], "%d%%" % round(100 * r["last_wave"]), str(r["launches"])]


def kernel_table(res, names, markdown):
    rows = []
    for fn, p in res.items():
        threads = p["threads"]
        per_sm, limiter = occupancy(p["regs"], p["smem"], threads or 256)
        warps = per_sm * -(-(threads or 256) // 32)
        rows.append((names[fn], p["file"], str(p["regs"]), "%d/%d" % (p["spill_st"], p["spill_ld"]),
                     str(p["stack"]), str(p["smem"]), str(threads) if threads else "-",
                     "%d (%d%%)" % (warps, round(100 * warps / 64)), limiter))
    rows.sort(key=lambda r: (r[1], r[0]))
    table(("kernel", "file", "regs", "spill st/ld", "stack", "smem", "block", "warps/SM", "limit"),
          rows, markdown)
    spilling = [r for r in rows if r[3] != "0/0"]
    print("\n%d kernels, %d spilling%s" % (len(rows), len(spilling),
          ": " + ", ".join(r[0] for r in spilling) if spilling else ""))


def sass_table(kernels, res, names, markdown):
    rows = [[names[k]] + [str(res[k]["sass"][c]) for c in SASS] for k in kernels if "sass" in res[k]]
    if not rows:
        print("(no SASS: cuobjdump was not found, or it could not disassemble)")
        return
    table(("kernel",) + tuple(SASS), rows, markdown, left=1)


def compare(base, var, names):
    """Pairs the variant's launches with the default's (per op and kernel, in order) and
    returns (pairs, reasons): the variant is worse for each reason."""
    reasons, pairs = [], []
    for op in dict.fromkeys(r["op"] for r in base + var):
        b = [r for r in base if r["op"] == op]
        v = [r for r in var if r["op"] == op]
        left = list(v)
        for r in b:
            m = next((x for x in left if x["kernel"] == r["kernel"]), None)
            if m:
                left.remove(m)
            pairs.append((r, m))
        pairs += [(None, x) for x in left]
        known = [r for r in b + v if r["known"]]
        if len(known) < len(b + v):
            continue
        spills = [sum({r["kernel"]: r["spills"] for r in s}.values()) for s in (b, v)]
        waves = [sum(r["full_waves"] for r in s) for s in (b, v)]
        if spills[1] > spills[0]:
            reasons.append("%s: its kernels spill %d bytes, not %d" % (op, spills[1], spills[0]))
        if waves[1] > waves[0]:
            reasons.append("%s: its launches take %d waves, not %d" % (op, waves[1], waves[0]))
    for r, m in pairs:
        if not (r and m and r["known"] and m["known"]):
            continue
        if m["full_waves"] > r["full_waves"]:
            reasons.append("%s %s: %d waves, not %d" % (r["op"], names[r["kernel"]],
                                                         m["full_waves"], r["full_waves"]))
        if m["blocks"] == r["blocks"] and m["per_sm"] < r["per_sm"]:
            reasons.append("%s %s: %d blocks per SM, not %d, for the same %d blocks" % (
                r["op"], names[r["kernel"]], m["per_sm"], r["per_sm"], r["blocks"]))
    return pairs, reasons


def report(args):
    res = kernels(args.work)
    if not res:
        sys.exit("no sm_90a entry functions in ptxas's output (is 90a among ROTOR_CUDA_ARCHS?)")
    base, gemms, answers, refused = census(os.path.join(args.work, "census.txt"))
    if refused:
        sys.exit("the census refused launches of the default kernels:\n" + "\n".join(refused))
    runs = [base]
    var_path = os.path.join(args.work, "census-variant.txt")
    variant_failed = args.variant and os.path.exists(var_path + ".failed")
    var = census(var_path)[0] if args.variant else []
    if args.variant:
        runs.append(var)
    for rows in runs:
        resolve(rows, res)
    for fn, threads, smem, blocks in answers:
        if fn in res and occupancy(res[fn]["regs"], res[fn]["smem"] + smem, threads)[0] != blocks:
            sys.exit("bench/launch_census.c and this report disagree on the occupancy of " + fn)
    short = demangle(sorted(set(res) | {r["kernel"] for rows in runs for r in rows}))
    # a kernel's name, with its file where another file has a kernel of the same name
    count = collections.Counter(short[k] for k in res)
    label = {k: "%s (%s)" % (n, res[k]["file"]) if k in res and count[n] > 1 else n
             for k, n in short.items()}
    launched = list(dict.fromkeys(r["kernel"] for rows in runs for r in rows if r["known"]))
    unknown = {r["kernel"] for rows in runs for r in rows if not r["known"]}

    reasons = []
    if not args.variant:
        print("Kernels (ptxas -v, sm_90a; warps/SM at the block size of __launch_bounds__, or "
              "256 threads, without dynamic shared memory)\n")
        kernel_table(res, short, args.markdown)
        print("\nLaunches of bench/gpu_mixers at the 370M shapes (bench/launch_census.c; smem: "
              "static + dynamic bytes per block; waves: blocks / (blocks per SM x %d SMs))\n" % SMS)
        table(LAUNCH_HEAD, [launch_cells(r, label) for r in base if r["known"]], args.markdown)
    else:
        pairs, reasons = compare(base, var, label)
        if variant_failed:
            reasons.insert(0, "the program failed under ROTOR_KERNEL_VARIANT=%s: %s" % (
                args.variant, open(var_path + ".failed").read().strip()))
        print("Launches of bench/gpu_mixers at the 370M shapes, default -> ROTOR_KERNEL_VARIANT=%s "
              "(bench/launch_census.c; a -> b where they differ)\n" % args.variant)
        rows = []
        for r, m in pairs:
            a = launch_cells(r, label) if r else None
            b = launch_cells(m, label) if m else None
            if a and b:
                cells = [x if x == y else "%s -> %s" % (x, y) for x, y in zip(a, b)]
            else:
                cells = list(a or b)
                cells[1] += " (default only)" if a else " (variant only)"
            if all(x["known"] for x in (r, m) if x):
                rows.append(cells)
        table(LAUNCH_HEAD, rows, args.markdown)
    if unknown:
        print("\n%d launched kernels of files not compiled here (--tu) left out" % len(unknown))
    print("\nSASS of the launched kernels (instructions in the machine code, not executed counts; "
          "RED: REDG, RED, ATOMG, ATOM; LD/ST: generic addresses)\n")
    sass_table(launched, res, label, args.markdown)
    if gemms:
        print("\ncuBLASLt products (column-major m x n x k)\n")
        table(("shape", "calls"), [[g, str(n)] for g, n in gemms.items()], args.markdown, left=1)
    if args.variant:
        print("\nThe variant is worse where, against the default, a launch fails, an op's kernels "
              "spill more, a kernel needs more waves, an op's launches need more waves in all, or "
              "a kernel with the same grid fits fewer blocks per SM.")
        print("\n" + ("worse: " + "; ".join(reasons) if reasons else "not worse"))
    if args.json:
        def clean(rows):
            return [{k: v for k, v in r.items() if k != "key"} | {"name": label[r["kernel"]]}
                    for r in rows]
        with open(args.json, "w") as f:
            json.dump({"kernels": {label[k]: v | {"mangled": k} for k, v in res.items()},
                       "launches": clean(base), "variant_launches": clean(var),
                       "gemms": dict(gemms), "worse": reasons}, f, indent=1)
    return 1 if reasons else 0


def resources(args):
    for fn, p in kernels(args.work).items():
        print(fn, p["regs"], p["smem"], p["threads"] or 0)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("resources").add_argument("work")
    r = sub.add_parser("report")
    r.add_argument("work")
    r.add_argument("--markdown", action="store_true")
    r.add_argument("--json")
    r.add_argument("--variant")
    args = ap.parse_args()
    return resources(args) if args.cmd == "resources" else report(args)


if __name__ == "__main__":
    sys.exit(main())
