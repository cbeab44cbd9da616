# RotRNN paper, Fig. 3: the mean hidden-state norm of the recurrent layers during training on
# ListOps, RotRNN against the LRU, in the deep model (left) and a single layer (right), across
# seeds. Read from the runs' metrics.jsonl ("recurrent" at each validation, docs/formats.md).
# Paper: configs/paper/rotrnn/listops.ini (6 layers) and the same with one layer, 3 seeds (the
# paper does not say how many). CPU: configs/classify/listops-{rotrnn,lru}-cpu.ini (2 layers)
# and one layer, validating every 50 steps, 2 seeds.
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "RotRNN Fig. 3: state norm during training on ListOps, RotRNN and the LRU"; }
default_seeds() { [[ $SCALE == paper ]] && echo 3 || echo 2; }
GPU_TOK_S=0 # no measured GPU rate for RotRNN or the LRU yet (docs/gpu.md)
runs() {
    local m config layers lr seed sets deep
    for m in rotrnn lru; do
        if [[ $SCALE == paper ]]; then
            config=configs/paper/rotrnn/listops.ini deep=6 sets=""
            [[ $m == lru ]] && sets=$(lru_keys "$config")
        else
            config=configs/classify/listops-$m-cpu.ini sets="train.val_every=50" deep=2
        fi
        lr=$(config_lr "$config")
        for layers in $deep 1; do
            for seed in $(first_seeds "$SEEDS" 0 1 2); do
                run "${m}__L$layers-lr$lr-seed$seed" synth "$config" $sets "model.num_layers=$layers" "train.seed=$seed"
            done
        done
    done
}
report() { /usr/bin/python3 "$ROOT/scripts/rnnpaper_report.py" fig3 "$OUT"; }
