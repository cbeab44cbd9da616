#!/usr/bin/env bash
# docs/models.md §named-configurations, §training-recipe on an 80 GB GPU: every 370M config at its micro-batch x 4096 tokens fits, by
# the model's own accounting of its device buffers (`rotor info`, the CUDA backend's element
# sizes: bf16 activations, fp32 master weights, gradients and AdamW moments) with 8 GiB left
# for the CUDA context, cuBLASLt's workspace and the kernels' scratch; and the accounting
# grows with the tokens as activations must (twice the micro-batch: more than 1.8x the
# activation bytes).
set -euo pipefail
rotor=$1
configs=$(cd "$(dirname "$0")/../configs" && pwd)
fails=0
for f in "$configs"/*-370m-*.ini; do
  line=$("$rotor" info "$f" | grep '^GPU memory per rank')
  mb=$(sed -E 's/.*micro_batch ([0-9]+) x seq_len ([0-9]+).*/\1 \2/' <<<"$line")
  read -r micro seq <<<"$mb"
  total=$(sed -E 's/.*: ([0-9.]+) GiB =.*/\1/' <<<"$line")
  act=$(sed -E 's/.* ([0-9.]+) saved.*/\1/' <<<"$line")
  act2=$("$rotor" info "$f" --set train.micro_batch=$((2 * micro)) | grep '^GPU memory per rank' |
         sed -E 's/.* ([0-9.]+) saved.*/\1/')
  verdict=$(awk -v t="$total" -v m="$micro" -v s="$seq" -v a="$act" -v a2="$act2" \
    'BEGIN { ok = t + 8 <= 80e9 / 2^30 && m >= 4 && s == 4096 && a2 > 1.8 * a; print ok ? "ok" : "FAIL" }')
  printf '%-28s micro %d x %d: %6.2f GiB (activations %.2f, at twice the batch %.2f)  %s\n' \
    "$(basename "$f" .ini)" "$micro" "$seq" "$total" "$act" "$act2" "$verdict"
  [ "$verdict" = ok ] || fails=$((fails + 1))
done
exit $((fails != 0))
