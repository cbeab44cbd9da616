#!/usr/bin/env bash
# Tokenisation throughput: `rotor data tokenize` (1 thread and all cores) against Debian's
# single-threaded `spm_encode --output_format=id`, same model, same ~20 MB of real text.
#   bench/tokenize.sh [MB]      (needs build/rotor and spm_encode, Debian package sentencepiece)
# Text: ../shared/data/text/*.txt repeated (else licence and copyright texts from
# /usr/share), blank lines removed so that both tools encode exactly the same lines (rotor:
# --text-docs line, one document per line). Model: ../shared/data's Mistral tokenizer (else
# one trained here with `rotor data train-tokenizer`). rotor's time includes reading the
# file and writing the HDF5 shards. Prints a table of MB/s and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-20}
rotor=build/rotor
threads=$(nproc)
data=../shared/data
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMP_WAIT_POLICY=passive
command -v spm_encode >/dev/null || { echo "spm_encode not found (Debian package sentencepiece)"; exit 1; }

if compgen -G "$data/text/*.txt" >/dev/null; then
  sources=("$data"/text/*.txt)
else
  mapfile -t sources < <(find /usr/share/common-licenses /usr/share/doc -type f \( -name copyright -o -path '*common-licenses/*' \) | sort)
fi
grep -hv '^[[:space:]]*$' "${sources[@]}" >"$out/once.txt"
while [ "$(stat -c %s "$out/text.txt" 2>/dev/null || echo 0)" -lt $((mb * 1000000)) ]; do
  cat "$out/once.txt" >>"$out/text.txt"
done
bytes=$(stat -c %s "$out/text.txt")
lines=$(wc -l <"$out/text.txt")

model=$data/tokenizer/mistral-7b-v0.1.model
if [ ! -f "$model" ]; then
  model=$out/bench.model
  "$rotor" data train-tokenizer --out "$out/bench" --vocab-size 8000 "$out/once.txt" >/dev/null 2>&1
fi

now() { date +%s.%N; }
rate() { echo "$bytes / 1000000 / ($2 - $1)" | bc -l; } # MB/s between two times

t0=$(now)
spm_encode --model "$model" --output_format=id <"$out/text.txt" >"$out/ids.txt"
t1=$(now)
spm_rate=$(rate "$t0" "$t1")
spm_tokens=$(wc -w <"$out/ids.txt")

declare -A rotor_rate rotor_tokens
for n in 1 "$threads"; do
  t0=$(now)
  "$rotor" data tokenize --tokenizer "$model" --out "$out/shards$n" --text-docs line \
    --val-fraction 0 --shard-tokens 1000000000 --threads "$n" "$out/text.txt" >/dev/null 2>&1
  t1=$(now)
  rotor_rate[$n]=$(rate "$t0" "$t1")
  # tokens without the BOS of each document
  rotor_tokens[$n]=$(/usr/bin/python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["splits"]["train"]
print(s["tokens"] - s["documents"])' "$out/shards$n/manifest.json")
done

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $threads cores"
echo "text: $(echo "$bytes / 1000000" | bc -l | xargs printf %.1f) MB, $lines lines; model: $(basename "$model")"
printf "%-34s %7s %8s %10s %13s\n" tool threads "MB/s" "MB/s/core" "vs spm_encode"
printf "%-34s %7d %8.2f %10.2f %12.2fx\n" "spm_encode --output_format=id" 1 "$spm_rate" "$spm_rate" 1
for n in 1 "$threads"; do
  r=${rotor_rate[$n]}
  printf "%-34s %7d %8.2f %10.2f %12.2fx\n" "rotor data tokenize" "$n" "$r" \
    "$(echo "$r / $n" | bc -l)" "$(echo "$r / $spm_rate" | bc -l)"
done
same=no
[ "${rotor_tokens[1]}" = "$spm_tokens" ] && [ "${rotor_tokens[$threads]}" = "$spm_tokens" ] && same=yes
echo "tokens (without BOS): rotor ${rotor_tokens[1]}, spm_encode $spm_tokens; identical counts: $same"
