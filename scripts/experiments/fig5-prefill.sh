# Selective RoPE paper, Figure 5: prefill throughput at batch 1 against sequence length, GLA
# with NoPE, RoPE and Selective RoPE (the paper: its Triton kernels against torch.compile on a
# B200). rotor's decoder prefill (bench/decode_bench): paper scale the 370M GLA configs on a
# GPU, 1k-32k tokens; CPU a small GLA (d 256, 2 layers), 1k-8k tokens; docs/results/fig5-prefill.md.
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "Selective RoPE Fig. 5: prefill tokens/s against length, GLA x NoPE/RoPE/Selective"; }
default_seeds() { echo 1; }
runs() { :; } # a benchmark: no training
report() {
    local bench args=() stat=(--reps 3)
    bench=$(dirname "$ROTOR")/bench/decode_bench
    if [[ $SCALE == paper ]]; then
        args=(--device cuda --lengths 1024,2048,4096,8192,16384,32768
              "$ROOT"/configs/gla-370m-{nope,rope,selective}.ini)
    else
        args=(--device cpu --lengths 1024,2048,4096,8192 --set model.hidden_size=256
              "$ROOT"/configs/tiny/gla-{nope,rope,selective}.ini)
        stat=(--reps 20 --stat min) # prefills of 20-250 ms on a VM whose speed drifts by 20 %
    fi
    # rounds of every config in turn: the report takes each config and length at its fastest
    # round, so that a slow spell of the machine does not land on one config alone. The results
    # store keeps the rounds (a benchmark has no runs), so that a fresh clone draws the
    # published figure from them, as --report-only draws the others from their runs.
    local r
    for r in 1 2 3; do
        [[ -f $OUT/prefill-$r.json || ! -f $RESULTS/prefill-$r.json ]] || cp "$RESULTS/prefill-$r.json" "$OUT/"
        if [[ ! -f $OUT/prefill-$r.json ]]; then
            [[ -x $bench ]] || { echo "no $bench (build the bench/ targets)" >&2; exit 2; }
            "$bench" --batches 1 --prompt 64 --steps 4 "${stat[@]}" --out "$OUT/prefill-$r.json" \
                "${args[@]}" > "$OUT/prefill-$r.log"
        fi
        [[ $SAVE == 0 ]] || { mkdir -p "$RESULTS" && cp "$OUT/prefill-$r.json" "$RESULTS/"; }
    done
    plot prefill "$OUT" "Figure 5: prefill throughput, batch 1"
}
