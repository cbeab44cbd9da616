#!/usr/bin/env bash
# The C, CUDA and header files of src/, kernels/, eval/, data_tools/ and tests/ are as
# clang-format 14 (Debian's, .clang-format at the root) writes them; fails naming each file that
# is not, with the command that formats it. Skipped without clang-format 14 (another version
# lays out some constructs otherwise).
set -uo pipefail
cd "$(dirname "$0")/.."
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$fmt" ] || ! "$fmt" --version | grep -q 'version 14\.'; then
  echo "skipped: clang-format 14 not found (scripts/setup.sh installs Debian's clang-format)"
  exit 77
fi
mapfile -t files < <(git ls-files -co --exclude-standard -- src kernels eval data_tools tests |
                     grep -E '\.(c|h|cu|cuh)$' | grep -v '^tests/data/')
bad=$("$fmt" --dry-run -Werror "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
if [ -n "$bad" ]; then
  echo "FAIL: not formatted (format with: $fmt -i FILE):"
  echo "$bad" | sed 's/^/  /'
  exit 1
fi
echo "all ${#files[@]} files formatted"
