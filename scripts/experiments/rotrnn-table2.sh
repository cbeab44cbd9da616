# RotRNN paper, Table 2: 35-word Speech Commands (Warden 2018) test accuracy at the best
# validation, RotRNN and the LRU (the authors' reproduction, 95.2 % both). Paper:
# configs/paper/rotrnn/speech-commands.ini (Table 3 / Appendix B), the LRU at the same state
# width; 3 seeds (the paper does not say how many). CPU: configs/classify/
# speech-commands-rotrnn-cpu.ini (2 layers, d 64, 3500 clips a split at 2 kHz), 2 seeds. The
# dataset is not in Debian: ROTOR_SPEECH_COMMANDS names its directory as released
# (speech_commands_v0.02, docs/classification.md "Speech Commands"); default data/ of the
# directory this runs in, as LRA.
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "RotRNN Table 2: Speech Commands (35 words), RotRNN and the LRU"; }
default_seeds() { [[ $SCALE == paper ]] && echo 3 || echo 2; }
GPU_TOK_S=0 # no measured GPU rate for RotRNN or the LRU yet (docs/gpu.md)
SPEECH=${ROTOR_SPEECH_COMMANDS:-$PWD/data/speech_commands_v0.02}
prepare() {
    [[ -f $SPEECH/validation_list.txt && -f $SPEECH/testing_list.txt ]] || {
        echo "rotrnn-table2: $SPEECH is not Speech Commands as released (no validation_list.txt /" \
             "testing_list.txt); set ROTOR_SPEECH_COMMANDS to the speech_commands_v0.02 directory" >&2
        exit 2
    }
}
runs() {
    local m config lr seed
    if [[ $SCALE == paper ]]; then config=configs/paper/rotrnn/speech-commands.ini; else
        config=configs/classify/speech-commands-rotrnn-cpu.ini; fi
    lr=$(config_lr "$config")
    for m in rotrnn lru; do
        for seed in $(first_seeds "$SEEDS" 0 1 2); do
            run "${m}__speech35-lr$lr-seed$seed" synth "$config" $([[ $m == lru ]] && lru_keys "$config") \
                "task.path=$SPEECH" "train.seed=$seed"
        done
    done
}
report() { /usr/bin/python3 "$ROOT/scripts/rnnpaper_report.py" speech "$OUT"; }
