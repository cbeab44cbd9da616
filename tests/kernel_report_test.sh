#!/usr/bin/env bash
# scripts/kernel_report.sh on the build (GLA's and GDN's files, and norm.cu, whose RMSNorm
# backward launcher asks the occupancy API, which the census answers for compiled files only):
# the launch census of bench/gpu_mixers must give the shared memory, grids and waves the
# launchers compute at the 370M shapes, --variant gdn_scan:c32s1 must halve the GDN scans'
# grids and not be worse, an unknown variant must be, and the rule must flag synthetic
# launches that are worse. The SASS mix is checked where cuobjdump is found. Skipped (77) in a build without CUDA.
#   kernel_report_test.sh BUILD WITH_CUDA(0/1)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1
[ "${2:-0}" = 1 ] || { echo "skipped: no CUDA in this build"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/scripts/kernel_report.sh" --tu gla,gdn,norm --variant gdn_scan:c32s1 --json "$work/r.json" \
    "$build" >"$work/out.txt" 2>"$work/err.txt" || { cat "$work/out.txt" "$work/err.txt"; exit 1; }
grep -q "^not worse" "$work/out.txt" || { echo "gdn_scan:c32s1 reported worse"; cat "$work/out.txt"; exit 1; }
sass=1
grep -q "no SASS mix" "$work/err.txt" && { sass=0; echo "no cuobjdump: the SASS mix is not checked"; }
python3 - "$work/r.json" "$sass" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
sass = sys.argv[2] == "1"
fails = []

def launch(rows, op, name):
    hits = [x for x in rows if x["op"] == op and x["name"] == name]
    if len(hits) != 1:
        sys.exit("%s %s: %d launch configurations, not 1" % (op, name, len(hits)))
    return hits[0]

def expect(what, got, want):
    if got != want:
        fails.append("%s: %r, not %r" % (what, got, want))

# 4 rows x 4096 tokens, GDN H=8 K=V=128: 4 x 8 x (128/32) = 128 blocks of 32 columns would not
# fill 132 SMs, so the scans take 16 columns, double-buffered where that fits. BwdScanLayout
# (kernels/ops/gdn.cu) at K=128, BV=16, 2 stages: per-chunk inputs q, k, w 3 x 64x136 bf16,
# P 64x72 bf16, dO 64x24 bf16, the gates 1024 = 65536 bytes, twice, + the state 128x20 fp32 and
# 128x24 bf16 + two 64x20 fp32 tiles + 64x24 bf16 = 160768 bytes: 1 block per SM, 256 blocks,
# 2 waves on 132 SMs (the second 124/132 full).
b = launch(r["launches"], "gdn", "gdn_bwd_scan<true>")
expect("gdn_bwd_scan dynamic smem", b["dynamic_smem"], 160768)
expect("gdn_bwd_scan grid", b["grid"], [4, 8, 8])
expect("gdn_bwd_scan blocks per SM", b["per_sm"], 1)
expect("gdn_bwd_scan waves", (b["blocks"], b["full_waves"], round(b["last_wave"], 3)), (256, 2, round(124 / 132, 3)))
# FwdScanLayout at K=128, BV=16, 2 stages: (2 x 64x136 + 64x24 bf16 + 1024) x 2 + 10240 +
# 6144 + 64x20 fp32 + 64x24 bf16 = 102400 bytes; its 128 registers allow 2 blocks per SM.
f = launch(r["launches"], "gdn", "gdn_fwd_scan<true>")
expect("gdn_fwd_scan dynamic smem", f["dynamic_smem"], 102400)
expect("gdn_fwd_scan blocks per SM", (f["per_sm"], f["limit"]), (2, "regs"))
expect("gdn_bwd_wy dynamic smem", launch(r["launches"], "gdn", "gdn_bwd_wy<true>")["dynamic_smem"], 137984)
# GLA's scores kernel: SCORES_SMEM (kernels/ops/gla.cu), one block per (chunk, head)
s = launch(r["launches"], "gla", "gla_scores_kernel<false>")
expect("gla_scores_kernel dynamic smem", s["dynamic_smem"], 56576)
expect("gla_scores_kernel grid", s["grid"], [256, 4, 1])
expect("gla_scores_kernel launches (forward and backward)", s["launches"], 16)
# c32s1: 32 columns, one stage, half the blocks in one wave
v = launch(r["variant_launches"], "gdn", "gdn_bwd_scan<true>")
expect("c32s1 gdn_bwd_scan grid", v["grid"], [4, 8, 4])
expect("c32s1 gdn_bwd_scan blocks and waves", (v["blocks"], v["full_waves"]), (128, 1))
expect("c32s1 gdn_bwd_scan dynamic smem", v["dynamic_smem"], 119808)
expect("c32s1 verdict", r["worse"], [])
if sass:
    k = r["kernels"]
    for name in ("gdn_bwd_scan<true>", "gla_bwd_dqdk_kernel<float>"):
        if not k[name]["sass"]["HMMA"]:
            fails.append(name + ": no HMMA in its SASS")
        expect(name + " local memory instructions", k[name]["sass"]["LDL/STL"], 0)
    if not k["gdn_bwd_scan<true>"]["sass"]["LDGSTS"]:
        fails.append("gdn_bwd_scan<true>: no LDGSTS (cp.async) in its SASS")
if fails:
    sys.exit("\n".join(fails))
EOF

# a variant that does not run is worse
if "$root/scripts/kernel_report.sh" --tu gdn,norm --variant gdn_scan:c64 "$build" >"$work/bad.txt" 2>&1; then
    echo "an unknown variant was not reported worse"; cat "$work/bad.txt"; exit 1
fi
grep -q "worse: the program failed" "$work/bad.txt" || { cat "$work/bad.txt"; exit 1; }

# the rule on synthetic census runs of one kernel k (32 registers, 256 threads: 8 blocks per
# SM) and one k2 that spills: op w gets more waves, op b fewer blocks per SM for its grid,
# op s a spilling kernel instead of k
mkdir -p "$work/fake/x"
echo kernels/ops/x.cu >"$work/fake/x/source"
cat >"$work/fake/x/ptxas.txt" <<'EOF'
ptxas info    : Compiling entry function '_Z1kv' for 'sm_90a'
ptxas info    : Function properties for _Z1kv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers
ptxas info    : Compiling entry function '_Z2k2v' for 'sm_90a'
ptxas info    : Function properties for _Z2k2v
    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers
EOF
printf '%s\n' "census launch _Z1kv grid=1000,1,1 block=256,1,1 smem=0" "op=w" \
    "census launch _Z1kv grid=1000,1,1 block=256,1,1 smem=0" "op=b" \
    "census launch _Z1kv grid=8,1,1 block=256,1,1 smem=0" "op=s" >"$work/fake/census.txt"
printf '%s\n' "census launch _Z1kv grid=1100,1,1 block=256,1,1 smem=0" "op=w" \
    "census launch _Z1kv grid=1000,1,1 block=256,1,1 smem=60000" "op=b" \
    "census launch _Z2k2v grid=8,1,1 block=256,1,1 smem=0" "op=s" >"$work/fake/census-variant.txt"
if python3 "$root/scripts/lib/kernel_report.py" report "$work/fake" --variant x:y >"$work/fake.txt"; then
    echo "synthetic worse launches not reported worse"; cat "$work/fake.txt"; exit 1
fi
for want in "w k: 2 waves, not 1" "b k: 3 blocks per SM, not 8, for the same 1000 blocks" \
            "s: its kernels spill 16 bytes, not 0"; do
    grep -qF "$want" "$work/fake.txt" || { echo "missing: $want"; cat "$work/fake.txt"; exit 1; }
done
echo "ok kernel_report"
