# nnRNN paper, supplement Fig. 4 left: the copy task at T = 200 (Table 2's fixed-hidden-units
# rows: nnRNN, expRNN, LSTM, RNN-orth, RNN with 128 units, batch 10, 1500 updates). Small enough
# to run at the paper's settings on a CPU (20 to 80 s a run on one core), so both scales run
# configs/paper/nnrnn/copy-MODEL.ini; the paper has 6 runs a model (supplement A.1), the CPU
# scale 2. docs/nnrnn.md, "Copy memory at the paper's settings".
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "nnRNN Fig. 4 left: copy task T = 200, five models at the paper's settings (Table 2)"; }
default_seeds() { [[ $SCALE == paper ]] && echo 6 || echo 2; }
GPU_TOK_S=0 # no measured GPU rate for the RNN cells yet (docs/gpu.md)
runs() {
    local m config lr seed
    for m in nnrnn exprnn lstm rnn_orth rnn; do
        config=configs/paper/nnrnn/copy-$m.ini
        lr=$(config_lr "$config")
        for seed in $(first_seeds "$SEEDS" 0 1 2 3 4 5); do
            run "${m}__copy-lr$lr-seed$seed" synth "$config" "train.seed=$seed"
        done
    done
}
report() { /usr/bin/python3 "$ROOT/scripts/rnnpaper_report.py" copy "$OUT"; }
