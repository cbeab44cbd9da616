#!/usr/bin/env bash
# CPU training throughput of rotor against the PyTorch reference (tests/reference, chunked
# mixers, torch.optim.AdamW), same model, batch and thread count, measured in this run.
#   bench/cpu_train.sh [steps]     (needs build/rotor and Debian's python3-torch)
# Prints a table of tokens/s per mixer and the ratio rotor / PyTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-12}
threads=$(nproc)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# small config: d=256, 4 layers, 4 heads (Gated DeltaNet: of 64 keys), vocab 4096, 4 rows of 512
# tokens, Selective RoPE
small=(--set model.hidden_size=256 --set model.num_layers=4 --set model.num_heads=4
       --set model.vocab_size=4096 --set train.seq_len=512
       --set train.micro_batch=4 --set train.val_every=0 --set train.checkpoint_every=0
       --set train.log_every=2 --set train.steps="$steps" --set run.threads="$threads")
kernels=$(build/rotor train configs/tiny/gla-selective.ini "${small[@]}" --set train.steps=1 \
          --set run.dir="$out/probe" | sed -n 's/.*BLAS kernels \(.*\)/\1/p')
export OPENBLAS_CORETYPE=$kernels  # the same BLAS kernels for both sides
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $threads threads, OpenBLAS $kernels"
printf "%-26s %12s %12s %8s\n" config "rotor tok/s" "torch tok/s" ratio
for cfg in gla-selective gdn-selective fox-selective gla-nope fox-pro-selective-pg-bias; do
  family=()
  [[ $cfg == gdn-* ]] && family=(--set model.key_head_dim=64)
  build/rotor train "configs/tiny/$cfg.ini" "${small[@]}" "${family[@]}" --set run.dir="$out/$cfg" >/dev/null
  build/rotor info "configs/tiny/$cfg.ini" "${small[@]}" "${family[@]}" --config-json "$out/$cfg.json" >/dev/null
  ours=$(/usr/bin/python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(statistics.median(r["tokens_per_s"] for r in rows[1:]))' "$out/$cfg/metrics.jsonl")
  theirs=$(/usr/bin/python3 tests/reference/rotor_ref.py bench --config "$out/$cfg.json" \
           --batch 4 --seq 512 --steps "$steps" --warmup 2 --threads "$threads" 2>/dev/null |
           /usr/bin/python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["tokens_per_s"])')
  printf "%-26s %12.0f %12.0f %7.2fx\n" "$cfg" "$ours" "$theirs" "$(echo "$ours / $theirs" | bc -l)"
done
