# mad-lab's grid of MAD task settings (sourced by scripts/mad_sweep.sh and the table2-mad
# experiment of scripts/reproduce.sh).

# mad_grid TASK: mad-lab's changes to the task's baseline, KEY=VALUE words
# (configs/tasks/*.yml of athms/mad-lab; 66 settings with the six baselines).
mad_grid() {
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

# ini_key CONFIG SECTION KEY: the value of a key in an INI file
ini_key() { awk -F' *= *' -v s="[$2]" -v k="$3" '/^\[/ {in_s = ($0 == s)} in_s && $1 == k {print $2; exit}' "$1"; }

# mad_setting_keys CONFIG SETTING: the SECTION.KEY=VALUE words that turn CONFIG's baseline
# into SETTING (baseline, or one KEY=VALUE of the task). A setting that changes
# task.train_examples keeps the config's number of epochs (train.steps scaled), as mad-lab
# trains 200 epochs whatever the training set.
mad_setting_keys() {
    local config=$1 setting=$2
    [[ $setting == baseline ]] && return 0
    [[ $setting == *=* ]] || { echo "setting '$setting' is neither baseline nor KEY=VALUE" >&2; return 2; }
    local words="task.$setting"
    if [[ $setting == train_examples=* ]]; then
        local steps batch n m=${setting#*=}
        steps=$(ini_key "$config" train steps) batch=$(ini_key "$config" train micro_batch)
        n=$(ini_key "$config" task train_examples)
        words+=" train.steps=$(( steps * ((m + batch - 1) / batch) / ((n + batch - 1) / batch) ))"
    fi
    echo "$words"
}
