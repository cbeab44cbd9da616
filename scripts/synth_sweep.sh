#!/usr/bin/env bash
# Sweeps synthetic-task configs (models) over learning rates, position-embedding variants and
# seeds with `rotor synth`, then collects every run's synth_results.json into OUT/results.md
# (one row per run, and per model and variant the best learning rate, as in Zoology's MQAR
# plots).
#
#   scripts/synth_sweep.sh CONFIG.ini [CONFIG.ini ...] OUT [--lr "1e-3 3e-3"]
#                          [--pe "nope rope selective"] [--seeds "0 1 2"] [--rotor build/rotor]
#                          [--set section.key=value]...
#
# Several configs compare models on one task (e.g. configs/synthetic/s2-gla-cpu.ini and
# s2-transformer-cpu.ini); their runs are named MODEL__VARIANT-lrLR-seedSEED, MODEL the
# config's file name, and with one config VARIANT-lrLR-seedSEED. Variants: nope, rope,
# selective (the config's own [pe] section), and selective-bias, selective-pg,
# selective-pg-bias (the config's [pe] with pe.bias / pe.phase_gate set). A run whose
# synth_results.json exists is skipped, so an interrupted sweep picks up where it stopped.
# Under mpirun, prefix the rotor command: --rotor "mpirun -n 4 build/rotor".
set -euo pipefail

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
[[ $# -ge 1 && ( $1 == -h || $1 == --help ) ]] && usage
positional=()
while [[ $# -gt 0 && $1 != --* ]]; do positional+=("$1"); shift; done
[[ ${#positional[@]} -ge 2 ]] || usage 2
out=${positional[-1]}
configs=("${positional[@]:0:${#positional[@]}-1}")
lrs="1e-3 3e-3" pes="nope rope selective" seeds="0"
root=$(cd "$(dirname "$0")/.." && pwd)
rotor="$root/build/rotor"
sets=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --lr) lrs=$2; shift 2 ;;
        --pe) pes=$2; shift 2 ;;
        --seeds) seeds=$2; shift 2 ;;
        --rotor) rotor=$2; shift 2 ;;
        --set) sets+=(--set "$2"); shift 2 ;;
        *) echo "synth_sweep.sh: unknown option '$1'" >&2; usage 2 ;;
    esac
done
for config in "${configs[@]}"; do
    [[ -f $config ]] || { echo "synth_sweep.sh: $config: no such config" >&2; exit 2; }
done

# shellcheck source=scripts/pe_variants.sh
source "$root/scripts/pe_variants.sh"

mkdir -p "$out"
for config in "${configs[@]}"; do
    model=""
    [[ ${#configs[@]} -gt 1 ]] && model="$(basename "$config" .ini)__"
    for pe in $pes; do
        pe_args=$(pe_sets "$pe")
        for lr in $lrs; do
            for seed in $seeds; do
                dir="$out/$model$pe-lr$lr-seed$seed"
                if [[ -f $dir/synth_results.json ]]; then
                    echo "== $dir: done before, kept"
                    continue
                fi
                echo "== $dir"
                # a run stopped before it finished starts again: its directory is the sweep's own
                if [[ -d $dir ]]; then echo "   (stopped before it finished: started again)"; rm -rf "$dir"; fi
                # shellcheck disable=SC2086 # rotor may be a command line, pe_args several options
                $rotor synth "$config" $pe_args --set "train.lr=$lr" --set "train.seed=$seed" \
                    --set "run.dir=$dir" "${sets[@]}" > "$dir.log" 2>&1 ||
                    { echo "   failed: see $dir.log" >&2; continue; }
                grep -E '^((mqar|copy):|state )|test accuracy' "$dir.log" | sed 's/^/   /' || true
            done
        done
    done
done
/usr/bin/env python3 "$root/scripts/synth_table.py" "$out" > "$out/results.md"
cat "$out/results.md"
