#!/usr/bin/env bash
# Fuzzes one of tests/fuzz/'s targets with libFuzzer (clang, AddressSanitizer and
# UndefinedBehaviorSanitizer) in build-fuzz/, starting from its seeds in tests/fuzz/corpus/.
#   scripts/fuzz.sh safetensors|run_config|eval_doc|serve_request [SECONDS]   (default 120)
# New interesting inputs collect in build-fuzz/corpus/TARGET/. A failing input is written
# to build-fuzz/crashes/ and the script fails; once fixed, add the input to
# tests/fuzz/corpus/TARGET/ so that scripts/test.sh replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh safetensors|run_config|eval_doc|serve_request [SECONDS]}
seconds=${2:-120}
[ -d "tests/fuzz/corpus/$target" ] || { echo "fuzz: no target '$target' (tests/fuzz/corpus/$target)" >&2; exit 2; }
command -v clang >/dev/null || { echo "fuzz: needs clang (Debian: clang, libclang-rt-dev)" >&2; exit 2; }
scripts/setup.sh --deps
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROTOR_CUDA=OFF \
    -DROTOR_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "fuzz_$target"
mkdir -p "build-fuzz/corpus/$target" build-fuzz/crashes
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
"build-fuzz/tests/fuzz_$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -artifact_prefix="build-fuzz/crashes/$target-" -print_final_stats=1 \
    "build-fuzz/corpus/$target" "tests/fuzz/corpus/$target"
