#!/usr/bin/env bash
# What each CUDA kernel costs the SM and what its launches at the 370M shapes ask of the GPU,
# without a GPU, so that a change to a kernel can be judged before it runs on a GPU (docs/gpu.md
# "Kernel resources").
#
#   scripts/kernel_report.sh [--markdown] [--tu FILE,...] [--json OUT] [BUILD]
#   scripts/kernel_report.sh --variant SPEC [--tu FILE,...] [--json OUT] [BUILD]
#
# Compiles each kernels/ translation unit (or only those named by --tu, e.g. --tu gla,gdn)
# with the build's own command (BUILD's compile_commands.json, default build/; configured
# here) plus ptxas -v, disassembles it with cuobjdump -sass where cuobjdump is found (PATH,
# or beside nvcc), builds BUILD's gpu_mixers and launch census (bench/launch_census.c) and
# runs gpu_mixers --reps 1 under it: every kernel launch of the mixer ops at the 370M shapes
# is recorded, not run. Prints
#   - per kernel (entry function): registers, spill stores / loads, stack, static shared
#     memory, the block size of its __launch_bounds__ and the warps per SM those allow;
#   - per op of gpu_mixers and launch configuration: grid, block, dynamic and total shared
#     memory, registers, blocks per SM and what limits them, blocks, waves on 132 SMs
#     (blocks / (blocks per SM x 132)), the last wave's fill, and the number of launches;
#   - the SASS mix of the launched kernels (LDSM, LDS, STS, generic LD/ST, LDG, STG, LDGSTS,
#     HMMA, HGMMA, global atomics, barriers, FFMA, MUFU, local memory);
#   - the cuBLASLt product shapes, if any.
# --variant SPEC (as ROTOR_KERNEL_VARIANT, e.g. gdn_scan:c32s2) runs the census twice, with
# the defaults and with SPEC, prints the launches side by side and exits 1 if the variant is
# worse by the rule printed with them (a launch fails, more spills, more waves, fewer blocks
# per SM for the same grid). --json writes every number to OUT. Exits 2 on a setup error.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
markdown=() variant="" tus="" json=()
while [ $# -gt 0 ]; do
    case "$1" in
    --markdown) markdown=(--markdown); shift ;;
    --variant) variant=${2:?--variant needs a spec}; shift 2 ;;
    --tu) tus=${2:?--tu needs file names}; shift 2 ;;
    --json) json=(--json "$(realpath -m "${2:?--json needs a file}")"); shift 2 ;;
    -*) echo "usage: $0 [--markdown] [--variant SPEC] [--tu FILE,...] [--json OUT] [BUILD]" >&2; exit 2 ;;
    *) break ;;
    esac
done
build=$(realpath -m "${1:-$root/build}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/kernel_tus.sh
. "$root/scripts/lib/kernel_tus.sh"
kernel_tus "$root" "$build" >"$work/tus"
[ -s "$work/tus" ] || { echo "no CUDA translation units in $build (configured with ROTOR_CUDA=ON?)" >&2; exit 2; }

nvcc=$(awk -F'\t' 'NR == 1 { split($2, w, " "); print w[1] }' "$work/tus")
cuobjdump=$(command -v cuobjdump || true)
[ -n "$cuobjdump" ] || [ ! -x "$(dirname "$nvcc")/cuobjdump" ] || cuobjdump=$(dirname "$nvcc")/cuobjdump
# NVIDIA's wheel, which scripts/setup.sh installs where the toolkit lacks cuobjdump
[ -n "$cuobjdump" ] || cuobjdump=$(compgen -G "$root/build/cuda-tools-venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump" | head -1 || true)
[ -n "$cuobjdump" ] || echo "no cuobjdump (PATH, beside $nvcc, or build/cuda-tools-venv): no SASS mix" >&2

compiled=0
while IFS=$'\t' read -r dir command file; do
    name=$(basename "$file" .cu)
    if [ -n "$tus" ] && ! tr ',' '\n' <<<"$tus" | grep -qx "$name"; then continue; fi
    keep="$work/$name"
    mkdir -p "$keep"
    command=$(sed -E "s# -o [^ ]+# -o $keep/$name.o#" <<<"$command")
    echo "compiling ${file#"$root"/}" >&2
    (cd "$dir" && eval "$command -Xptxas -v --keep --keep-dir $keep") 2>"$keep/ptxas.txt" >/dev/null
    printf '%s\n' "${file#"$root"/}" >"$keep/source"
    if [ -n "$cuobjdump" ] && ! "$cuobjdump" -sass "$keep/$name.o" >"$keep/sass.txt" 2>"$keep/sass.err"; then
        echo "cuobjdump -sass failed on $name.o ($(head -c 300 "$keep/sass.err")): no SASS mix" >&2
        rm -f "$keep/sass.txt"
    fi
    compiled=$((compiled + 1))
done <"$work/tus"
[ "$compiled" -gt 0 ] || { echo "--tu $tus names no kernels/ translation unit" >&2; exit 2; }
python3 "$root/scripts/lib/kernel_report.py" resources "$work" >"$work/resources.txt"

# The census: gpu_mixers under the stand-in runtime, which must define every runtime and
# cuBLASLt function the program imports (a missing one would reach the real runtime).
echo "building gpu_mixers and the launch census in $build" >&2
cmake --build "$build" --target gpu_mixers launch_census >"$work/build.log" 2>&1 ||
    { tail -20 "$work/build.log" >&2; exit 2; }
shim=$build/bench/liblaunch_census.so program=$build/bench/gpu_mixers
missing=$(comm -23 <(nm -D --undefined-only "$program" "$build"/librotor_core*.so 2>/dev/null |
                     awk '{ sub(/@.*/, "", $NF); print $NF }' | grep -E '^(__cuda|cuda|cublas)' | sort -u) \
                   <(nm -D --defined-only "$shim" | awk '{ print $NF }' | sort -u))
if [ -n "$missing" ]; then
    echo "bench/launch_census.c does not stand in for what gpu_mixers imports: $missing" >&2
    exit 2
fi
# with a variant, every op (the dense products' too, which run only when named), so that a
# variant of any op is screened
ops=()
[ -z "$variant" ] || ops=(--ops all)
census() { # census OUT [SPEC]
    env -u ROTOR_KERNEL_VARIANT ${2:+ROTOR_KERNEL_VARIANT=$2} ROTOR_CENSUS_RESOURCES="$work/resources.txt" \
        LD_PRELOAD="$shim" "$program" --reps 1 ${ops[@]+"${ops[@]}"} >"$1" 2>"$1.err"
}
echo "census of gpu_mixers${variant:+ with the defaults}" >&2
census "$work/census.txt" || { echo "gpu_mixers failed under the census:" >&2; tail -5 "$work/census.txt.err" >&2; exit 2; }
if [ -n "$variant" ]; then
    echo "census of gpu_mixers with ROTOR_KERNEL_VARIANT=$variant" >&2
    census "$work/census-variant.txt" "$variant" || tail -3 "$work/census-variant.txt.err" >"$work/census-variant.txt.failed"
fi
python3 "$root/scripts/lib/kernel_report.py" report "$work" ${markdown[@]+"${markdown[@]}"} \
    ${json[@]+"${json[@]}"} ${variant:+--variant "$variant"}
