# nnRNN paper, Fig. 2 (and supplement Fig. 4 right): permuted sequential MNIST, validation
# accuracy of nnRNN, expRNN, LSTM, RNN-orth and RNN. Paper: configs/paper/nnrnn/psmnist-MODEL.ini
# (Table 3's 512-unit rows, batch 128; MNIST's IDX files in data/mnist/ under the directory this
# runs in), 3 runs a model (supplement A.2). CPU: configs/nnrnn/pfmnist-cpu.ini (permuted
# Fashion-MNIST from Debian's dataset-fashion-mnist, 128 units, 1200 steps of 32, one lr for all
# models), 2 seeds; docs/nnrnn.md, "Permuted Fashion-MNIST".
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "nnRNN Fig. 2: permuted sequential MNIST (CPU: permuted Fashion-MNIST), five models"; }
default_seeds() { [[ $SCALE == paper ]] && echo 3 || echo 2; }
GPU_TOK_S=0 # no measured GPU rate for the RNN cells yet (docs/gpu.md)
runs() {
    local m config lr seed sets
    for m in nnrnn exprnn lstm rnn_orth rnn; do
        if [[ $SCALE == paper ]]; then
            config=configs/paper/nnrnn/psmnist-$m.ini sets=""
        else
            config=configs/nnrnn/pfmnist-cpu.ini sets="model.type=$m"
        fi
        lr=$(config_lr "$config")
        for seed in $(first_seeds "$SEEDS" 0 1 2); do
            run "${m}__psmnist-lr$lr-seed$seed" synth "$config" $sets "train.seed=$seed"
        done
    done
}
report() { /usr/bin/python3 "$ROOT/scripts/rnnpaper_report.py" psmnist "$OUT"; }
