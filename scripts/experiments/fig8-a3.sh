# Selective RoPE paper, Figure 8 (right): A3 word problems with a two-layer DeltaNet, NoPE /
# RoPE / Selective RoPE; accuracy against length, training length marked. Paper: Table 5's
# settings (train 128, test 512, seeds 555-999). CPU: train 32, test 128 (4x), the CPU
# config's lr; docs/results/fig8-a3.md.
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "Selective RoPE Fig. 8: A3, 2-layer DeltaNet x NoPE/RoPE/Selective"; }
default_seeds() { echo 5; }
GPU_TOK_S=0 # no measured rate for this model yet (docs/gpu.md)
runs() {
    local config=configs/synthetic/a3-deltanet-cpu.ini
    [[ $SCALE == paper ]] && config=configs/paper/selective-rope/a3-deltanet.ini
    pe_seed_runs "$config" "" $(first_seeds "$SEEDS" 555 666 777 888 999)
}
report() { plot length "$OUT" "Figure 8 (A3): accuracy against length"; }
