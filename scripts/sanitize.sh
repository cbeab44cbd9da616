#!/usr/bin/env bash
# Builds the host code with AddressSanitizer + UndefinedBehaviorSanitizer (leak checks
# included) in build-sanitize/ and runs the CPU test suite there. Every process a test starts
# writes its sanitizer reports to build-sanitize/sanitizer-logs/, and the script judges those
# logs: a report from a program that a test expects to fail (bad configs, killed ranks) is
# not hidden by that test's pass.
#   scripts/sanitize.sh              # every CPU test (about half an hour on 2 cores)
#   scripts/sanitize.sh -R grad      # only tests whose name matches (ctest -R)
#   scripts/sanitize.sh -L fast      # only the tests labelled fast (.ci/run): builds only
#                                    # their programs (target fast_tests), a few minutes
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/setup.sh --deps
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROTOR_CUDA=OFF \
      -DROTOR_SANITIZE=ON >/dev/null
# -L LABEL: only the programs of the tests so labelled, where a target LABEL_tests names them
target=all
args=("$@")
for ((k = 0; k + 1 < ${#args[@]}; k++)); do
    if [ "${args[k]}" = -L ]; then target=${args[k + 1]}_tests; fi
done
if [ "$target" != all ] && ! cmake --build build-sanitize --target help | grep -qw -- "$target"; then
    target=all
fi
cmake --build build-sanitize -j"$(nproc)" --target "$target"

logs=$root/build-sanitize/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
export OMP_WAIT_POLICY=passive
# Full stacks (not only frame pointers) so that leaks inside libraries are attributed to them.
export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:log_path=$logs/asan:log_exe_name=1
export UBSAN_OPTIONS=print_stacktrace=1:log_path=$logs/ubsan:log_exe_name=1
# Leaks do not change exit statuses (tests check those); the logs are judged below.
export LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp:exitcode=0
# Open MPI unloads its components at exit; kept loaded, their leaks have names to suppress.
export OMPI_MCA_mca_base_component_disable_dlclose=1
status=0
(cd build-sanitize && ctest --output-on-failure --timeout 1800 -LE gpu "$@") || status=$?

# Memory errors and undefined behaviour anywhere fail the run; a leak report fails it when a
# leaked block was allocated from rotor's own code (some of Open MPI's leaks come from
# components it has unloaded, which no suppression can name).
reports=()
for f in "$logs"/*; do
    [ -e "$f" ] || continue
    if grep -q "ERROR: AddressSanitizer\|runtime error:" "$f" ||
       { grep -q "ERROR: LeakSanitizer" "$f" &&
         grep -Eq " in [^ ]+ $root/(src|eval|data_tools|tokenizer|tests|kernels)/" "$f"; }; then
        reports+=("$f")
    fi
done
if ((${#reports[@]})); then
    for f in "${reports[@]}"; do
        echo "== $f"
        cat "$f"
    done
    echo "sanitize: ${#reports[@]} process(es) reported errors (above)"
    exit 1
fi
[ "$status" -eq 0 ] || exit "$status"
echo "sanitize: no sanitizer reports"
