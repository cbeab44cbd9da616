# nnRNN paper, Fig. 3 and 5 (paper §5.3, supplement §E): the learned Schur form Θ = Λ + T of the
# recurrent matrix after training, on the copy task (Fig. 3a: rotation blocks alone, γ̄ ~ 1, the
# angles spread), on PTB characters (Fig. 3b, c: a structured lower triangle with a delay line,
# aligned angles, γ̄ ~ 0.958) and on psMNIST (Fig. 5: flat angles, a weaker triangle). Read from
# each run's last checkpoint by scripts/nnrnn_schur.py. Paper: configs/paper/nnrnn/copy-nnrnn.ini,
# ptb150-nnrnn.ini and psmnist-nnrnn.ini (the paper shows one trained matrix each). CPU: the copy
# config as it is (minutes), tiny Shakespeare characters with carried states
# (configs/nnrnn/chars-cpu.ini, as nnrnn-ptb) and permuted Fashion-MNIST
# (configs/nnrnn/pfmnist-cpu.ini, as nnrnn-psmnist).
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "nnRNN Fig. 3 / 5: the learned Schur form (copy, PTB characters, psMNIST), nnRNN"; }
default_seeds() { echo 1; }
GPU_TOK_S=0 # no measured GPU rate for the RNN cells yet (docs/gpu.md)
SHARED=${ROTOR_SHARED_DATA:-$ROOT/../shared/data}
runs() {
    local config lr seed
    for seed in $(first_seeds "$SEEDS" 0 1 2); do
        config=configs/paper/nnrnn/copy-nnrnn.ini
        run "nnrnn__copy-lr$(config_lr "$config")-seed$seed" synth "$config" "train.seed=$seed"
        if [[ $SCALE == paper ]]; then
            config=configs/paper/nnrnn/ptb150-nnrnn.ini
            run "nnrnn__ptb150-lr$(config_lr "$config")-seed$seed" synth "$config" "train.seed=$seed"
            config=configs/paper/nnrnn/psmnist-nnrnn.ini
            run "nnrnn__psmnist-lr$(config_lr "$config")-seed$seed" synth "$config" "train.seed=$seed"
        else
            config=configs/nnrnn/chars-cpu.ini
            lr=$(config_lr "$config")
            run "nnrnn__shakespeare150-lr$lr-seed$seed" synth "$config" "task.path=$SHARED/text/tinyshakespeare.txt" \
                train.carry_state=true "train.seed=$seed"
            config=configs/nnrnn/pfmnist-cpu.ini
            run "nnrnn__pfmnist-lr$(config_lr "$config")-seed$seed" synth "$config" "train.seed=$seed"
        fi
    done
}
# the layer the report reads, saved beside the run so that the results store (no checkpoints)
# redraws the figure
finish_run() {
    local dir=$2
    /usr/bin/python3 "$ROOT/scripts/nnrnn_schur.py" "$dir/checkpoints/$(< "$dir/checkpoints/latest")" \
        --params "$dir/schur_params.jsonl"
}
report() { /usr/bin/python3 "$ROOT/scripts/rnnpaper_report.py" schur "$OUT"; }
