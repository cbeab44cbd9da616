#!/usr/bin/env bash
# End to end from the repository alone: installs and builds rotor, fetches real English text
# (the Linux kernel documentation, from Debian's linux-doc package), trains a SentencePiece
# tokenizer for it (unless --tokenizer MODEL is given), tokenises it into HDF5 shards and
# trains a small GLA + Selective RoPE model on the CPU, with validation on held-out documents.
#   scripts/quickstart.sh [--tokenizer MODEL] [--set section.key=value]...
# With your own tokenizer, also give its vocabulary size: --set model.vocab_size=N.
set -euo pipefail
cd "$(dirname "$0")/.."
tokenizer=""
train_args=()
while (($#)); do
  case $1 in
    --tokenizer) tokenizer=$2; shift 2 ;;
    --set) train_args+=(--set "$2"); shift 2 ;;
    *) echo "usage: scripts/quickstart.sh [--tokenizer MODEL] [--set section.key=value]..." >&2; exit 1 ;;
  esac
done
scripts/setup.sh
work=data/quickstart
mkdir -p "$work"

if [ ! -d "$work/text" ]; then
  echo "quickstart: fetching text (Debian package linux-doc-6.1: the kernel documentation)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && { apt-get download linux-doc-6.1 2>/dev/null || { apt-get update -qq && apt-get download linux-doc-6.1; }; })
  dpkg-deb -x "$tmp"/linux-doc-6.1_*.deb "$tmp/x"
  src="$tmp/x/usr/share/doc/linux-doc-6.1/html/_sources"
  mkdir -p "$work/text.tmp"
  # one document per page, English only (the translations/ tree holds other languages)
  (cd "$src" && find . -name '*.rst.txt' -not -path './translations/*' | sort) |
    while read -r f; do cp "$src/$f" "$work/text.tmp/$(echo "${f#./}" | tr / _)"; done
  mv "$work/text.tmp" "$work/text"
fi
echo "quickstart: $(ls "$work/text" | wc -l) documents, $(du -sh "$work/text" | cut -f1) of text"

if [ -z "$tokenizer" ]; then
  tokenizer=$work/tokenizer.model
  if [ ! -f "$tokenizer" ]; then
    build/rotor data train-tokenizer --out "$work/tokenizer" --vocab-size 8000 "$work/text"
  fi
fi
if [ ! -f "$work/shards/manifest.json" ]; then
  build/rotor data tokenize --tokenizer "$tokenizer" --out "$work/shards" --val-fraction 0.02 \
    --overwrite "$work/text"
fi
build/rotor train configs/quickstart.ini --set data.tokenizer="$tokenizer" "${train_args[@]}"
