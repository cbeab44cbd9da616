#!/usr/bin/env bash
# Runs any part of the MAD grid (mad-lab's 66 task settings x its lr x weight-decay sweep)
# for MAD configs x position-embedding variants with `rotor synth`, then writes OUT/results.md
# with scripts/mad_table.py: a Table-2-shaped table (rows: variant; columns: the six tasks
# and their average; a cell: the mean over the task's settings of the best lr/wd run).
#
#   scripts/mad_sweep.sh OUT [--configs "C.ini ..."] [--settings "baseline seq_len=256 ..." | all]
#                        [--pe "nope rope selective"] [--lr "1e-4 5e-4 1e-3"] [--wd "0 0.1"]
#                        [--seeds 0] [--rotor build/rotor] [--set section.key=value]...
#
# --configs: one config per task (default: the six of configs/synthetic/mad/). --settings:
# "baseline" is the config's own task setting, KEY=VALUE changes one [task] key of it (as
# mad-lab's grid does), "all" is baseline plus mad-lab's changes of the task (the default is
# baseline). A setting that changes task.train_examples keeps the config's number of epochs
# (train.steps scaled), as mad-lab trains 200 epochs whatever the training set. Runs are
# OUT/TASK/SETTING/VARIANT-lrLR-wdWD-seedSEED; one with a synth_results.json is kept.
set -euo pipefail

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
[[ $# -ge 1 && ( $1 == -h || $1 == --help ) ]] && usage
[[ $# -ge 1 && $1 != --* ]] || usage 2
out=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
configs=$(ls "$root"/configs/synthetic/mad/*.ini)
settings="baseline" pes="nope rope selective" lrs="1e-4 5e-4 1e-3" wds="0 0.1" seeds="0"
rotor="$root/build/rotor"
sets=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --configs) configs=$2; shift 2 ;;
        --settings) settings=$2; shift 2 ;;
        --pe) pes=$2; shift 2 ;;
        --lr) lrs=$2; shift 2 ;;
        --wd) wds=$2; shift 2 ;;
        --seeds) seeds=$2; shift 2 ;;
        --rotor) rotor=$2; shift 2 ;;
        --set) sets+=(--set "$2"); shift 2 ;;
        *) echo "mad_sweep.sh: unknown option '$1'" >&2; usage 2 ;;
    esac
done
# shellcheck source=scripts/pe_variants.sh
source "$root/scripts/pe_variants.sh"

# shellcheck source=scripts/lib/mad_grid.sh
source "$root/scripts/lib/mad_grid.sh"

mkdir -p "$out"
for config in $configs; do
    [[ -f $config ]] || { echo "mad_sweep.sh: $config: no such config" >&2; exit 2; }
    task=$(ini_key "$config" task type)
    [[ $task == mad_* ]] || { echo "mad_sweep.sh: $config: task.type = $task is not a MAD task" >&2; exit 2; }
    list=$settings
    [[ $settings == all ]] && list="baseline $(mad_grid "$task")"
    for setting in $list; do
        extra=()
        keys=$(mad_setting_keys "$config" "$setting") || { echo "mad_sweep.sh: $config" >&2; exit 2; }
        for k in $keys; do extra+=(--set "$k"); done
        for pe in $pes; do
            pe_args=$(pe_sets "$pe")
            for lr in $lrs; do
                for wd in $wds; do
                    for seed in $seeds; do
                        dir="$out/$task/$setting/$pe-lr$lr-wd$wd-seed$seed"
                        if [[ -f $dir/synth_results.json ]]; then
                            echo "== $dir: done before, kept"
                            continue
                        fi
                        echo "== $dir"
                        # a run stopped before it finished starts again: its directory is the sweep's own
                        if [[ -d $dir ]]; then echo "   (stopped before it finished: started again)"; rm -rf "$dir"; fi
                        mkdir -p "$(dirname "$dir")"
                        # shellcheck disable=SC2086 # rotor may be a command line, pe_args several options
                        $rotor synth "$config" $pe_args --set "train.lr=$lr" --set "train.weight_decay=$wd" \
                            --set "train.seed=$seed" --set "run.dir=$dir" "${extra[@]}" "${sets[@]}" > "$dir.log" 2>&1 ||
                            { echo "   failed: see $dir.log" >&2; continue; }
                        grep -E '^mad_' "$dir.log" | sed 's/^/   /'
                    done
                done
            done
        done
    done
done
/usr/bin/env python3 "$root/scripts/mad_table.py" "$out" > "$out/results.md"
cat "$out/results.md"
