# Selective RoPE paper, Figure 8 (left): S2 word problems (parity) with a one-layer GLA and a
# one-layer Transformer, NoPE / RoPE / Selective RoPE; accuracy against length, training
# length marked. Paper: Table 5's settings (train 128, test 512, seeds 555-999). CPU: train
# 32, test 128 (4x), the CPU configs' lr; docs/reproduction.md.
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "Selective RoPE Fig. 8: S2 (parity), 1-layer GLA and Transformer x NoPE/RoPE/Selective"; }
default_seeds() { echo 5; }
GPU_TOK_S=0 # no measured rate for these 1-layer models yet (docs/gpu.md)
configs() {
    if [[ $SCALE == paper ]]; then
        echo configs/paper/selective-rope/s2-gla.ini configs/paper/selective-rope/s2-transformer.ini
    else
        echo configs/synthetic/s2-gla-cpu.ini configs/synthetic/s2-transformer-cpu.ini
    fi
}
runs() {
    local config pe seed lr
    for config in $(configs); do
        lr=$(awk -F' *= *' '$1 == "lr" {print $2; exit}' "$ROOT/$config")
        for pe in nope rope selective; do
            for seed in $(first_seeds "$SEEDS" 555 666 777 888 999); do
                run "$(basename "$config" .ini)__$pe-lr$lr-seed$seed" synth "$config" \
                    $(pe_keys "$pe") "train.seed=$seed"
            done
        done
    done
}
report() { plot length "$OUT" "Figure 8 (S2): accuracy against length"; }
