#!/usr/bin/env bash
# The committed results: `scripts/reproduce.sh EXPERIMENT --report-only` draws the published
# table of every experiment with a results store (docs/figures/reproduction/EXPERIMENT-cpu.md
# from results/reproduce/EXPERIMENT/cpu: the runs, or fig5-prefill's measured rounds), and
# nnrnn-fig1's (analytic: no runs), and those of the stores at other settings (other_stores),
# again, byte for byte; every published table has a store; and every results page
# (docs/results/*.md) is what scripts/results_page.py writes now. Where ../shared/data is
# absent, an experiment whose plan reads it (ROTOR_SHARED_DATA) and cannot be drawn without
# it is skipped, and the test then reports skipped (exit 77) unless something else failed.
#   tests/results_store.sh build/rotor
set -uo pipefail
rotor=$1
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/test_lib.sh"

shared=${ROTOR_SHARED_DATA:-$root/../shared/data}
skipped=()
# needs_shared_data EXPERIMENT: its plan reads ../shared/data, and the data is not here
# (asked once its drawing has failed)
needs_shared_data() {
    grep -q ROTOR_SHARED_DATA "$root/scripts/experiments/$1.sh" && [ ! -d "$shared/text" ]
}

experiments=(nnrnn-fig1)
for store in "$root"/results/reproduce/*/cpu; do experiments+=("$(basename "$(dirname "$store")")"); done
((${#experiments[@]} >= 8)) || fail "only ${#experiments[@]} experiments to draw: the results store is missing"
for e in "${experiments[@]}"; do
    table=$root/docs/figures/reproduction/$e-cpu.md
    if ! "$root/scripts/reproduce.sh" "$e" --report-only --rotor "$rotor" --out "$out/$e" > "$out/$e.log" 2>&1; then
        needs_shared_data "$e" && { skipped+=("$e"); continue; }
        fail "$e --report-only from results/reproduce/$e/cpu: $(tail -2 "$out/$e.log")"
    elif ! diff "$table" "$out/$e/table.md" > "$out/$e.diff"; then
        fail "$e: the table drawn from results/reproduce/$e/cpu differs from $table:"; head -20 "$out/$e.diff"
    fi
done
echo "$((${#experiments[@]} - ${#skipped[@]})) of ${#experiments[@]} experiments drawn again: ${experiments[*]}"

# The stores of an experiment at other settings than its CPU scale's, each with the options
# that drew it (scripts/experiments/EXPERIMENT.md says when and how they ran); every store
# under results/reproduce is one of these or a cpu one.
other_stores=(
    "rotrnn-table1 cpu-2400steps --set train.steps=2400"
    "rotrnn-table1 cpu-4800steps --seeds 3 --set train.steps=4800"
    "fig7-mqar cpu-12000steps --set train.steps=12000"
)
listed=" "
for entry in "${other_stores[@]}"; do
    read -r e store opts <<<"$entry"
    listed+="$e/$store "
    table=$root/docs/figures/reproduction/$e-$store.md
    # shellcheck disable=SC2086 # opts: several words
    if ! "$root/scripts/reproduce.sh" "$e" $opts --report-only --rotor "$rotor" \
        --results "$root/results/reproduce/$e/$store" --out "$out/$e-$store" > "$out/$e-$store.log" 2>&1; then
        needs_shared_data "$e" && { skipped+=("$e/$store"); continue; }
        fail "$e $opts --report-only from results/reproduce/$e/$store: $(tail -2 "$out/$e-$store.log")"
    elif ! diff "$table" "$out/$e-$store/table.md" > "$out/$e-$store.diff"; then
        fail "$e: the table drawn from results/reproduce/$e/$store differs from $table:"; head -20 "$out/$e-$store.diff"
    fi
done
for dir in "$root"/results/reproduce/*/*/; do
    rel=${dir#"$root"/results/reproduce/}; rel=${rel%/}
    [ "${rel##*/}" = cpu ] || [[ "$listed" == *" $rel "* ]] ||
        fail "results/reproduce/$rel: a store tests/results_store.sh does not draw (add it to other_stores)"
done
echo "${#other_stores[@]} stores of other settings drawn again"
# every published table has its store, drawn above (nnrnn-fig1's figure is analytic: no runs)
for table in "$root"/docs/figures/reproduction/*.md; do
    name=$(basename "$table" .md)
    [[ $name =~ ^(.+)-((cpu|paper)(-.+)?)$ ]] || { fail "$table: not named EXPERIMENT-SCALE.md"; continue; }
    [ "${BASH_REMATCH[1]}" = nnrnn-fig1 ] || [ -d "$root/results/reproduce/${BASH_REMATCH[1]}/${BASH_REMATCH[2]}" ] ||
        fail "$table is published but there is no store results/reproduce/${BASH_REMATCH[1]}/${BASH_REMATCH[2]} to draw it from"
done

python3 "$root/scripts/results_page.py" --to "$out/pages" --all || fail "scripts/results_page.py --all"
diff -r "$root/docs/results" "$out/pages" > "$out/pages.diff" ||
    { fail "docs/results is not what scripts/results_page.py writes (run it: scripts/results_page.py --all)"; head -20 "$out/pages.diff"; }

if ((${#skipped[@]})); then
    echo "skipped: ${skipped[*]}: their plans read $shared, which is not here"
    [ $fails = 0 ] && exit 77
fi
[ $fails = 0 ] && echo "the results store draws the published tables, and the results pages are up to date"
exit $((fails != 0))
