# Selective RoPE paper, Figure 8 (left): S2 word problems (parity) with a one-layer GLA and a
# one-layer Transformer, NoPE / RoPE / Selective RoPE; accuracy against length, training
# length marked. Paper: Table 5's settings (train 128, test 512, seeds 555-999). CPU: train
# 32, test 128 (4x), the CPU configs' lr; docs/results/fig8-s2.md.
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
    local config
    for config in $(configs); do
        pe_seed_runs "$config" "$(basename "$config" .ini)__" $(first_seeds "$SEEDS" 555 666 777 888 999)
    done
}
report() { plot length "$OUT" "Figure 8 (S2): accuracy against length"; }
