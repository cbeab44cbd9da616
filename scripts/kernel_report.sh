#!/usr/bin/env bash
# What each CUDA kernel costs the SM, without a GPU: for every kernel of the sm_90a build, its
# registers, spills, stack, static shared memory and the occupancy they allow on an H100, so
# that a change to a kernel can be judged before a lease (docs/gpu.md "Kernel resources").
#
#   scripts/kernel_report.sh [--markdown] [BUILD]   compile each kernels/ translation unit with
#       the build's own command (BUILD's compile_commands.json, default build/; configured
#       here) plus ptxas -v, and print one row per kernel (entry function)
#
# Columns: the kernel (demangled, template arguments kept), its file, registers per thread,
# bytes of spill stores / loads and of stack frame, static shared memory, the block size its
# __launch_bounds__ fixes ("-": chosen at launch), and the warps per SM that the registers
# and static shared memory allow (of 64) at that block size, or at 256 threads where the
# launch chooses it, with what limits them (regs, smem, blocks or the 64 warps: "warps").
# Dynamic shared memory is set at launch and not counted: the kernels that use it (FoX
# attention, the GDN/GLA chunk kernels) say so in their launchers.
# H100 (sm_90): 65,536 registers and 228 KiB of shared memory per SM (1 KiB of it reserved per
# block), registers allocated per warp in units of 256, at most 32 blocks and 64 warps per SM.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
markdown=0
if [ "${1:-}" = --markdown ]; then markdown=1; shift; fi
build=${1:-$root/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/kernel_tus.sh
. "$root/scripts/lib/kernel_tus.sh"
kernel_tus "$root" "$build" >"$work/tus"
[ -s "$work/tus" ] || { echo "no CUDA translation units in $build (configured with ROTOR_CUDA=ON?)" >&2; exit 2; }

while IFS=$'\t' read -r dir command file; do
    name=$(basename "$file" .cu)
    keep="$work/$name"
    mkdir -p "$keep"
    command=$(sed -E "s# -o [^ ]+# -o $keep/$name.o#" <<<"$command")
    echo "compiling ${file#"$root"/}" >&2
    (cd "$dir" && eval "$command -Xptxas -v --keep --keep-dir $keep") 2>"$keep/ptxas.txt" >/dev/null
    printf '%s\n' "${file#"$root"/}" >"$keep/source"
done <"$work/tus"

python3 - "$work" "$markdown" <<'EOF'
import glob, os, re, subprocess, sys

work, markdown = sys.argv[1], sys.argv[2] == "1"
REGS_PER_SM, SMEM_PER_SM, SMEM_RESERVED = 65536, 228 * 1024, 1024
MAX_WARPS, MAX_BLOCKS, REG_UNIT = 64, 32, 256

def occupancy(regs, smem, threads):
    warps = -(-threads // 32)
    regs_per_warp = -(-regs * 32 // REG_UNIT) * REG_UNIT if regs else 0
    limits = {"warps": MAX_WARPS // warps, "blocks": MAX_BLOCKS}
    if regs_per_warp:
        limits["regs"] = (REGS_PER_SM // regs_per_warp) // warps
    limits["smem"] = SMEM_PER_SM // (smem + SMEM_RESERVED)
    blocks = min(limits.values())
    limiter = min(limits, key=lambda k: (limits[k], k != "warps"))
    return blocks * warps, limiter

rows = []
for keep in sorted(glob.glob(os.path.join(work, "*", ""))):
    source = open(os.path.join(keep, "source")).read().strip()
    maxntid = {}
    for ptx in glob.glob(os.path.join(keep, "*.ptx")):
        text = open(ptx).read()
        for m in re.finditer(r"\.entry\s+([\w$]+)\s*\((.*?)\)\s*((?:\.\w+[^{]*?)*)\{", text, re.S):
            n = re.search(r"\.maxntid\s+(\d+),\s*(\d+),\s*(\d+)", m.group(3))
            if n:
                maxntid[m.group(1)] = int(n.group(1)) * int(n.group(2)) * int(n.group(3))
    fn, arch, props = None, None, {}
    for line in open(os.path.join(keep, "ptxas.txt")):
        m = re.search(r"Compiling entry function '([^']+)' for '(\w+)'", line)
        if m:
            fn, arch = m.group(1), m.group(2)
            if arch == "sm_90a":
                props[fn] = {"stack": 0, "spill_st": 0, "spill_ld": 0, "regs": 0, "smem": 0}
            continue
        if arch != "sm_90a" or fn not in props:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            props[fn].update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            props[fn]["regs"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            props[fn]["smem"] = int(s.group(1)) if s else 0
    for fn, p in props.items():
        threads = maxntid.get(fn)
        warps, limiter = occupancy(p["regs"], p["smem"], threads or 256)
        rows.append((source, fn, p, threads, warps, limiter))

if not rows:
    sys.exit("no sm_90a entry functions in ptxas's output (is 90a among ROTOR_CUDA_ARCHS?)")
names = subprocess.run(["c++filt"], input="\n".join(r[1] for r in rows), capture_output=True,
                       text=True, check=True).stdout.split("\n")

def short(name):
    name = re.sub(r"\(anonymous namespace\)::", "", name)
    name = re.sub(r"^void ", "", name)  # a template's return type
    return re.sub(r"\(.*\)$", "", name)  # the parameter list: the same for a kernel's instances

head = ("kernel", "file", "regs", "spill st/ld", "stack", "smem", "block", "warps/SM", "limit")
table = []
for (source, fn, p, threads, warps, limiter), name in zip(rows, names):
    table.append((short(name), os.path.basename(source), str(p["regs"]),
                  "%d/%d" % (p["spill_st"], p["spill_ld"]), str(p["stack"]), str(p["smem"]),
                  str(threads) if threads else "-", "%d (%d%%)" % (warps, round(100 * warps / 64)),
                  limiter))
table.sort(key=lambda r: (r[1], r[0]))
if markdown:
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i < 2 else "---:" for i in range(len(head))) + "|")
    for r in table:
        print("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
else:
    width = [max(len(r[i]) for r in table + [head]) for i in range(len(head))]
    for r in [head] + table:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, width))))
spilling = [r for r in table if r[3] != "0/0"]
print("\n%d kernels, %d spilling%s" % (len(table), len(spilling),
      ": " + ", ".join(r[0] for r in spilling) if spilling else ""))
EOF
