# nnRNN paper, Table 1 (both halves) and supplement Table 7: Penn Treebank characters, test bits
# per character at truncation 150 and 300. Paper: configs/paper/nnrnn/ptb{150,300}-MODEL.ini for
# RNN, RNN-orth, expRNN (1024 units, and 1386 for the fixed-parameter half), nnRNN, the LSTM
# (1024, and Table 5's 475), nnRNN with gamma clamped at 1 and 0.958 (Table 7); PTB's character
# files in data/pennchar/ under the directory this runs in; 5 runs a model (supplement A.3).
# EURNN's rows are not here. CPU: configs/nnrnn/chars-cpu.ini on tiny Shakespeare (128 units,
# 1000 steps of 32 x 150, the state carried across windows as the paper's), one seed;
# docs/nnrnn.md, "Characters".
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "nnRNN Tables 1 and 7: PTB characters (CPU: tiny Shakespeare), test bpc"; }
default_seeds() { [[ $SCALE == paper ]] && echo 5 || echo 1; }
GPU_TOK_S=0 # no measured GPU rate for the RNN cells yet (docs/gpu.md)
SHARED=${ROTOR_SHARED_DATA:-$ROOT/../shared/data}
runs() {
    local m t config lr seed
    if [[ $SCALE == paper ]]; then
        for t in 150 300; do
            for m in nnrnn nnrnn-gamma1 nnrnn-gamma0958 exprnn exprnn-h1386 lstm lstm-h475 rnn_orth rnn; do
                config=configs/paper/nnrnn/ptb$t-$m.ini
                lr=$(config_lr "$config")
                for seed in $(first_seeds "$SEEDS" 0 1 2 3 4); do
                    run "${m}__ptb$t-lr$lr-seed$seed" synth "$config" "train.seed=$seed"
                done
            done
        done
        return
    fi
    config=configs/nnrnn/chars-cpu.ini
    lr=$(config_lr "$config")
    for m in nnrnn exprnn lstm rnn_orth rnn; do
        for seed in $(first_seeds "$SEEDS" 0 1 2); do
            run "${m}__shakespeare150-lr$lr-seed$seed" synth "$config" "model.type=$m" \
                "task.path=$SHARED/text/tinyshakespeare.txt" train.carry_state=true "train.seed=$seed"
        done
    done
}
report() { /usr/bin/python3 "$ROOT/scripts/rnnpaper_report.py" ptb "$OUT"; }
