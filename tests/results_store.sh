#!/usr/bin/env bash
# The committed results: `scripts/reproduce.sh EXPERIMENT --report-only` draws the published
# table of every experiment with a results store (docs/figures/reproduction/EXPERIMENT-cpu.md
# from results/reproduce/EXPERIMENT/cpu: the runs, or fig5-prefill's measured rounds), and
# nnrnn-fig1's (analytic: no runs), again, byte for byte; and every results page
# (docs/results/*.md) is what scripts/results_page.py writes now.
#   tests/results_store.sh build/rotor
set -uo pipefail
rotor=$1
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/test_lib.sh"

experiments=(nnrnn-fig1)
for store in "$root"/results/reproduce/*/cpu; do experiments+=("$(basename "$(dirname "$store")")"); done
((${#experiments[@]} >= 8)) || fail "only ${#experiments[@]} experiments to draw: the results store is missing"
for e in "${experiments[@]}"; do
    table=$root/docs/figures/reproduction/$e-cpu.md
    if ! "$root/scripts/reproduce.sh" "$e" --report-only --rotor "$rotor" --out "$out/$e" > "$out/$e.log" 2>&1; then
        fail "$e --report-only from results/reproduce/$e/cpu: $(tail -2 "$out/$e.log")"
    elif ! diff "$table" "$out/$e/table.md" > "$out/$e.diff"; then
        fail "$e: the table drawn from results/reproduce/$e/cpu differs from $table:"; head -20 "$out/$e.diff"
    fi
done
echo "${#experiments[@]} experiments drawn again: ${experiments[*]}"

python3 "$root/scripts/results_page.py" --to "$out/pages" --all || fail "scripts/results_page.py --all"
diff -r "$root/docs/results" "$out/pages" > "$out/pages.diff" ||
    { fail "docs/results is not what scripts/results_page.py writes (run it: scripts/results_page.py --all)"; head -20 "$out/pages.diff"; }

[ $fails = 0 ] && echo "the results store draws the published tables, and the results pages are up to date"
exit $((fails != 0))
