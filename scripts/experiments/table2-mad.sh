# Selective RoPE paper, Table 2: the MAD suite with GLA and NoPE / RoPE / Selective RoPE
# (+ phase gate, + bias, + both). Paper (Appendix B.2.1): mad-lab's 66 task settings x its
# 6 optimizer settings (lr 1e-4, 5e-4, 1e-3 x weight decay 0, 0.1); a cell is the mean over
# the task's settings of the best run. CPU: each task's baseline setting at CPU size
# (configs/synthetic/mad-*-cpu.ini) trained cpu_steps TASK steps, lr 5e-4 and 1e-3 (the top
# of the paper's grid), weight decay 0, cpu_seeds TASK seeds; docs/results/table2-mad.md.
source "$ROOT/scripts/lib/experiments.sh"
source "$ROOT/scripts/lib/mad_grid.sh"
describe() { echo "Selective RoPE Table 2: MAD, GLA x NoPE/RoPE/Selective (+pg, +bias, +both)"; }
default_seeds() { echo 1; }
GPU_TOK_S=0 # no measured rate for these 2-layer models yet (docs/gpu.md)
VARIANTS="nope rope selective selective-pg selective-bias selective-pg-bias"
# The table's rows. Its "Selective RoPE" is the plain one, without phase gate and bias,
# whatever the MAD configs' own [pe] section has (bias on).
variant_keys() {
    if [[ $1 == selective ]]; then echo "$(pe_keys selective) pe.bias=false pe.phase_gate=false"; else pe_keys "$1"; fi
}
# CPU training steps of a task (batch 32; memorization's 128): 8000 (20 epochs of mad-lab's
# 12,800 examples; mad-lab trains 200), where from 2000 steps to 8000 the test accuracy at lr
# 1e-3 rose by 43-57 points on compression and 5-12 on in-context, noisy recall and selective
# copying; memorization 2000 (1000 epochs of its 256 examples: its loss is near 0 by step
# 700). docs/results/table2-mad.md, "table2-mad".
cpu_steps() { [[ $1 == memorization ]] && echo 2000 || echo 8000; }
# CPU seeds of a task: fuzzy recall at least 3, where one run of the same config and seed
# moved by up to 18 points between two CPUs (its loss stays near a uniform guess), as much as
# the spread of the variants; docs/results/table2-mad.md, "table2-mad".
cpu_seeds() { [[ $1 == fuzzy-in-context-recall && $SEEDS -lt 3 ]] && echo 3 || echo "$SEEDS"; }
TASKS="compression fuzzy-in-context-recall in-context-recall memorization noisy-in-context-recall selective-copying"
runs() {
    local name config task settings setting lrs wds extra pe lr wd seed seeds
    for name in $TASKS; do
        if [[ $SCALE == paper ]]; then
            config=configs/synthetic/mad/$name.ini lrs="1e-4 5e-4 1e-3" wds="0 0.1" extra="" seeds=$SEEDS
            task=$(ini_key "$ROOT/$config" task type)
            settings="baseline $(mad_grid "$task")"
        else
            config=configs/synthetic/mad-$name-cpu.ini lrs="5e-4 1e-3" wds=0 extra="train.steps=$(cpu_steps "$name")"
            seeds=$(cpu_seeds "$name")
            task=$(ini_key "$ROOT/$config" task type)
            settings=baseline
        fi
        for setting in $settings; do
            local keys
            keys=$(mad_setting_keys "$ROOT/$config" "$setting")
            for pe in $VARIANTS; do
                for lr in $lrs; do
                    for wd in $wds; do
                        for seed in $(first_seeds "$seeds" 0 1 2 3 4); do
                            run "$task/$setting/$pe-lr$lr-wd$wd-seed$seed" synth "$config" $(variant_keys "$pe") \
                                $extra $keys "train.lr=$lr" "train.weight_decay=$wd" "train.seed=$seed"
                        done
                    done
                done
            done
        done
    done
}
report() { plot mad "$OUT" "Table 2 (MAD)"; }
