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

# mad-lab's changes to each task's baseline (configs/tasks/*.yml of athms/mad-lab)
grid() {
    local n="train_examples=6400 train_examples=3200 train_examples=1600 train_examples=800"
    case $1 in
        mad_in_context_recall|mad_fuzzy_in_context_recall)
            echo "vocab=32 vocab=64 vocab=128 seq_len=256 seq_len=512 seq_len=1024 $n" ;;
        mad_noisy_in_context_recall)
            echo "vocab=48 vocab=80 vocab=144 seq_len=256 seq_len=512 seq_len=1024 $n frac_noise=0.4 frac_noise=0.6 frac_noise=0.8" ;;
        mad_selective_copying)
            echo "vocab=32 vocab=64 vocab=128 seq_len=512 seq_len=1024 $n num_tokens_to_copy=32 num_tokens_to_copy=64 num_tokens_to_copy=96" ;;
        mad_compression) echo "vocab=32 vocab=64 vocab=128 seq_len=64 seq_len=128 seq_len=256 $n" ;;
        mad_memorization) echo "vocab=512 vocab=1024 vocab=2048 vocab=4096 vocab=8192" ;;
    esac
}

# key CONFIG SECTION KEY: the value of a key in an INI file
key() { awk -F' *= *' -v s="[$2]" -v k="$3" '/^\[/ {in_s = ($0 == s)} in_s && $1 == k {print $2; exit}' "$1"; }

mkdir -p "$out"
for config in $configs; do
    [[ -f $config ]] || { echo "mad_sweep.sh: $config: no such config" >&2; exit 2; }
    task=$(key "$config" task type)
    [[ $task == mad_* ]] || { echo "mad_sweep.sh: $config: task.type = $task is not a MAD task" >&2; exit 2; }
    steps=$(key "$config" train steps) batch=$(key "$config" train micro_batch) n=$(key "$config" task train_examples)
    list=$settings
    [[ $settings == all ]] && list="baseline $(grid "$task")"
    for setting in $list; do
        extra=()
        if [[ $setting != baseline ]]; then
            [[ $setting == *=* ]] || { echo "mad_sweep.sh: setting '$setting' is neither baseline nor KEY=VALUE" >&2; exit 2; }
            extra=(--set "task.$setting")
            if [[ $setting == train_examples=* ]]; then # the same epochs: steps x new batches per epoch / old
                m=${setting#*=}
                extra+=(--set "train.steps=$(( steps * ((m + batch - 1) / batch) / ((n + batch - 1) / batch) ))")
            fi
        fi
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
