# Selective RoPE paper, Figure 6: copying (Jelassi et al. 2024) with GLA and NoPE / RoPE /
# Selective RoPE: string accuracy against string length, the longest training string
# marked. Paper: Table 6 (strings of 2-64 in training, 2-512 in test, seed 42). CPU: the
# same lengths with a two-layer GLA of width 128 (configs/synthetic/copy-gla-cpu-64.ini),
# 3 seeds; docs/results/fig6-copy.md.
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "Selective RoPE Fig. 6: copying, GLA x NoPE/RoPE/Selective, train to 64, test to 512"; }
default_seeds() { [[ $SCALE == paper ]] && echo 1 || echo 3; }
GPU_TOK_S=0 # no measured rate for this model yet (docs/gpu.md)
runs() {
    local config=configs/synthetic/copy-gla-cpu-64.ini
    [[ $SCALE == paper ]] && config=configs/paper/selective-rope/copy-gla.ini
    pe_seed_runs "$config" "" $(first_seeds "$SEEDS" 42 43 44 45 46)
}
report() { plot length "$OUT" "Figure 6 (copying): string accuracy against length"; }
