#!/usr/bin/env bash
# Fuzzes tests/fuzz/'s targets with libFuzzer (clang, AddressSanitizer and
# UndefinedBehaviorSanitizer) in build-fuzz/, starting from their seeds in tests/fuzz/corpus/.
#   scripts/fuzz.sh TARGET [SECONDS]   one target, its output on the terminal (default 120 s)
#   scripts/fuzz.sh --all SECONDS      every target for SECONDS each, one line per target, the
#                                      log's end of a failing one (ctest's fuzz_bounded)
# TARGET: safetensors|run_config|eval_doc|serve_request|shard|tokenize_input.
# New interesting inputs collect in build-fuzz/corpus/TARGET/. A failing input (crash, leak,
# timeout, broken check) is written to build-fuzz/crashes/, its path printed, and the script
# fails; once fixed, add the input to tests/fuzz/corpus/TARGET/ so that scripts/test.sh
# replays it from then on. Exit status: 0 no failure, 1 a failure, 2 a usage error, 77 when
# clang or its libFuzzer runtime is missing (ctest: skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(safetensors run_config eval_doc serve_request shard tokenize_input)
usage="usage: scripts/fuzz.sh $(IFS='|'; echo "${targets[*]}") [SECONDS] | --all SECONDS"
if [ "${1:-}" = --all ]; then
    [ $# -eq 2 ] || { echo "$usage" >&2; exit 2; }
    run=("${targets[@]}")
    seconds=$2
else
    target=${1:?$usage}
    [ -d "tests/fuzz/corpus/$target" ] || { echo "fuzz: no target '$target' (tests/fuzz/corpus/$target)" >&2; exit 2; }
    run=("$target")
    seconds=${2:-120}
fi
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: SECONDS = '$seconds': expected a whole number >= 1" >&2; exit 2; }

# clang and its libFuzzer runtime (Debian: clang, libclang-rt-dev): a program that links it.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$probe/probe.c"
if ! command -v clang >/dev/null || ! clang -fsanitize=fuzzer "$probe/probe.c" -o "$probe/probe" 2>/dev/null; then
    echo "fuzz: skipped: needs clang with libFuzzer (Debian: clang, libclang-rt-dev)" >&2
    exit 77
fi

scripts/setup.sh --deps
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROTOR_CUDA=OFF \
    -DROTOR_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${run[@]/#/fuzz_}" >build-fuzz/build.log 2>&1 ||
    { tail -n 40 build-fuzz/build.log; echo "fuzz: the build failed (build-fuzz/build.log)" >&2; exit 1; }
mkdir -p build-fuzz/crashes build-fuzz/logs
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

# fuzz TARGET: runs it for $seconds; with --all its output goes to build-fuzz/logs/TARGET.log.
# Prints the failing inputs and returns 1 on a failure.
fuzz() {
    local target=$1 log=build-fuzz/logs/$1.log status=0
    mkdir -p "build-fuzz/corpus/$target"
    touch "$log.start"
    local cmd=("build-fuzz/tests/fuzz_$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096
               -artifact_prefix="build-fuzz/crashes/$target-" -print_final_stats=1
               "build-fuzz/corpus/$target" "tests/fuzz/corpus/$target")
    if ((${#run[@]} > 1)); then "${cmd[@]}" >"$log" 2>&1 || status=$?; else "${cmd[@]}" || status=$?; fi
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" 2>/dev/null || true)
    if [ "$status" -eq 0 ]; then
        ((${#run[@]} == 1)) || echo "fuzz: $target: ${runs:-?} inputs in ${seconds} s, no failure"
        return 0
    fi
    local seed=""
    if ((${#run[@]} > 1)); then
        tail -n 60 "$log"
        seed=$(grep -a -o 'Seed: [0-9]*' "$log" | head -n 1 || true)
    fi
    echo "fuzz: $target FAILED${seed:+ (libFuzzer $seed)}; failing input(s):"
    find build-fuzz/crashes -name "$target-*" -newer "$log.start" -printf '  %p\n'
    ((${#run[@]} == 1)) || echo "  full log: $log"
    return 1
}

failed=0
for t in "${run[@]}"; do fuzz "$t" || failed=1; done
exit "$failed"
