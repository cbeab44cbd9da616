# RotRNN paper, Table 1: Long Range Arena test accuracy (at the best validation) of RotRNN and
# the LRU. Paper: configs/paper/rotrnn/TASK.ini (Table 3 / Appendix B.2) for the six tasks, the
# LRU at the same settings (model.type = lru); LRA's release under data/ of the directory this
# runs in (docs/classification.md); 3 seeds (the paper does not say how many). CPU: ListOps
# with expressions of 11..127 tokens, configs/classify/listops-{rotrnn,lru}-cpu.ini, 5 seeds
# (docs/rotrnn.md, "CPU-scale comparison": 2 seeds put the LRU above RotRNN, against the paper).
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "RotRNN Table 1: LRA, RotRNN and the LRU (CPU: short ListOps)"; }
default_seeds() { [[ $SCALE == paper ]] && echo 3 || echo 5; }
GPU_TOK_S=0 # no measured GPU rate for RotRNN or the LRU yet (docs/gpu.md)
runs() {
    local task m config lr seed
    if [[ $SCALE == paper ]]; then
        for task in listops text retrieval image pathfinder pathx; do
            config=configs/paper/rotrnn/$task.ini
            lr=$(config_lr "$config")
            for m in rotrnn lru; do
                for seed in $(first_seeds "$SEEDS" 0 1 2); do
                    run "${m}__$task-lr$lr-seed$seed" synth "$config" $([[ $m == lru ]] && lru_keys "$config") "train.seed=$seed"
                done
            done
        done
        return
    fi
    for m in rotrnn lru; do
        config=configs/classify/listops-$m-cpu.ini
        lr=$(config_lr "$config")
        for seed in $(first_seeds "$SEEDS" 0 1 2 3 4); do
            run "${m}__listops128-lr$lr-seed$seed" synth "$config" "train.seed=$seed"
        done
    done
}
report() { /usr/bin/python3 "$ROOT/scripts/rnnpaper_report.py" lra "$OUT"; }
