#!/usr/bin/env bash
# scripts/reproduce.sh end to end: --help lists every experiment; every plan reads its configs
# through rotor (CPU scale; paper scale for the experiments with few runs); a bad key fails
# before anything trains; a group of two experiments plans both and adds them up; a tiny
# fig8-s2 sweep (1 seed, 20 steps) writes its figure and table with one row per variant and
# model; running it again trains nothing, and with a changed setting trains every run again; a
# results store (--results) takes finished runs to another output directory and --only trains
# a part of the plan, and saving again keeps a stored run of the same fingerprint; --publish
# names the figure and table after the results store and writes the results page; a tiny
# fig7-mqar sweep writes a table section per setting with its widths; a tiny table2-mad
# sweep writes Table 2 and the runs behind its cells with their seeds' range; --report-only reads
# only the runs of its plan, trains nothing and --train-only draws nothing; rotrnn-table2
# refuses a missing dataset and runs on a synthetic one; table3-lm scores each run as it
# finishes and draws its table from the store alone; a run stopped by a signal (rotor synth
# exits 1 without evaluating) is not counted as finished.
#   tests/reproduce_test.sh build/rotor
set -uo pipefail
rotor=$1
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMP_WAIT_POLICY=passive
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
repro() { "$root/scripts/reproduce.sh" "$@" --rotor "$rotor"; }

help=$("$root/scripts/reproduce.sh" --help) || fail "--help"
shared=${ROTOR_SHARED_DATA:-$root/../shared/data}
for f in "$root"/scripts/experiments/*.sh; do
    name=$(basename "$f" .sh)
    grep -q "^  $name " <<< "$help" || fail "--help does not list $name"
    if ! repro "$name" --plan --out "$out/plan-$name" > "$out/plan-$name.log" 2>&1; then
        if [ ! -d "$shared" ] && grep -qF "$shared" "$out/plan-$name.log"; then
            echo "skipped: $name's plan reads $shared, which is not there"
        else
            fail "$name: the CPU-scale plan failed"; tail -3 "$out/plan-$name.log"
        fi
    fi
done
for name in fig5-prefill fig6-copy fig8-s2 fig8-a3 table3-lm; do
    repro "$name" --scale paper --plan --out "$out/paper-$name" > "$out/paper-$name.log" 2>&1 ||
        { fail "$name: the paper-scale plan failed"; tail -3 "$out/paper-$name.log"; }
done
grep -q "GPU-hours" "$out/paper-table3-lm.log" || fail "table3-lm's paper plan gives no GPU-hours"
# a run is the same run in another output directory (table3-lm's sets name OUT's data), so a
# results store serves any clone
repro table3-lm --plan --out "$out/plan-again" > /dev/null 2>&1 || fail "table3-lm's second plan"
cmp -s <(cut -f1,6 "$out/plan-table3-lm/plan.tsv") <(cut -f1,6 "$out/plan-again/plan.tsv") ||
    fail "table3-lm's fingerprints depend on the output directory"
# two sweeps of one output directory (disjoint --only, one per core) planned at once: each
# writes its own files, so OUT's plan and runs lists are whole, once each, and nothing of
# theirs is left behind
repro table2-mad --plan --out "$out/plan-twice" > "$out/plan-twice-1.log" 2>&1 & first=$!
repro table2-mad --plan --out "$out/plan-twice" > "$out/plan-twice-2.log" 2>&1 || fail "the second of two plans at once"
wait "$first" || fail "the first of two plans at once"
cmp -s "$out/plan-table2-mad/plan.tsv" "$out/plan-twice/plan.tsv" ||
    fail "two plans at once: plan.tsv has $(wc -l < "$out/plan-twice/plan.tsv") lines, one plan $(wc -l < "$out/plan-table2-mad/plan.tsv")"
cmp -s <(cut -f1 "$out/plan-table2-mad/runs.tsv") <(cut -f1 "$out/plan-twice/runs.tsv") ||
    fail "two plans at once: runs.tsv differs from one plan's"
[ -z "$(find "$out/plan-twice" -maxdepth 1 -name '.sweep.*')" ] || fail "a plan left its own directory in OUT"

# a group runs its experiments in turn, each in DIR/EXPERIMENT/SCALE, and adds up their plans;
# a member that does not exist stops it before anything runs
grep -q "GROUP: all" <<< "$help" || fail "--help does not describe the groups"
repro fig8-s2,fig8-a3 --plan --out "$out/group" > "$out/group.log" 2>&1 || fail "a group's plan: $(tail -2 "$out/group.log")"
for name in fig8-s2 fig8-a3; do
    grep -q "^=== $name$" "$out/group.log" || fail "the group did not run $name"
    [ -s "$out/group/$name/cpu/plan.tsv" ] || fail "no plan of $name in the group's directory"
done
want=$(( $(sed -n 's/^fig8-\(s2\|a3\) at --scale cpu: \([0-9]*\) runs.*/\2/p' "$out/group.log" | paste -sd+) ))
grep -q "^=== fig8-s2,fig8-a3 at --scale cpu: 2 experiments, $want runs" "$out/group.log" ||
    fail "the group's totals: $(tail -1 "$out/group.log") (the plans add up to $want runs)"
if repro fig8-s2,no-such-experiment --plan --out "$out/group2" > "$out/group2.log" 2>&1; then
    fail "a group with an unknown experiment passed"
fi
grep -q "unknown experiment 'no-such-experiment'" "$out/group2.log" || fail "the unknown member's error: $(tail -1 "$out/group2.log")"
[ ! -e "$out/group2" ] || fail "a group with an unknown member planned something"

if repro fig8-s2 --plan --out "$out/bad" --set train.no_such_key=1 > "$out/bad.log" 2>&1; then
    fail "a plan with an unknown key passed"
fi
grep -q "no_such_key" "$out/bad.log" || fail "the bad key's error does not name it: $(tail -2 "$out/bad.log")"
[ -z "$(ls "$out/bad/runs" 2>/dev/null | grep -v plan)" ] || fail "a run started despite the bad key"

sweep=(--seeds 1 --set train.steps=20 --set train.val_every=0 --set task.test_examples=16)
tiny=("${sweep[@]}" --out "$out/s2")
repro fig8-s2 "${tiny[@]}" > "$out/s2.log" 2>&1 || { fail "fig8-s2 tiny sweep"; tail -5 "$out/s2.log"; }
for f in figure.svg table.md; do [ -s "$out/s2/$f" ] || fail "no $f"; done
rows=$(grep -c "^| \(nope\|rope\|selective\) | 1 |" "$out/s2/table.md")
[ "$rows" = 6 ] || fail "table.md has $rows variant rows, not 6 (3 PEs x 2 models)"
n=$(ls "$out"/s2/runs/*.done 2>/dev/null | wc -l)
[ "$n" = 6 ] || fail "$n runs finished, not 6"
repro fig8-s2 "${tiny[@]}" > "$out/again.log" 2>&1 || fail "the second fig8-s2"
grep -q "6 runs (6 done before)" "$out/again.log" || fail "the second sweep does not see the finished runs"
! grep -q "^== " "$out/again.log" || fail "the second sweep trained again"
# a finished run whose settings changed is run again, its old directory kept beside it
repro fig8-s2 "${tiny[@]}" --set train.log_every=7 > "$out/changed.log" 2>&1 || fail "the changed fig8-s2"
grep -q "6 runs (0 done before)" "$out/changed.log" || fail "the changed sweep counts its runs done: $(grep runs "$out/changed.log")"
n=$(grep -c "finished with other settings than now" "$out/changed.log")
[ "$n" = 6 ] || fail "$n changed runs were run again, not 6"
n=$(ls -d "$out"/s2/runs/*.superseded 2>/dev/null | wc -l)
[ "$n" = 6 ] || fail "$n superseded run directories kept, not 6"

# the results store: --only trains part of the plan and --results saves what finished (no
# checkpoints); a sweep elsewhere takes those runs from the store and trains only the rest;
# a run stored with other settings is trained, not taken
store=(--results "$out/store")
repro fig8-s2 "${sweep[@]}" --out "$out/part" "${store[@]}" --only 'transformer' > "$out/part.log" 2>&1 || fail "the --only sweep"
n=$(grep -c "^== s2-transformer" "$out/part.log"); m=$(grep -c "^== " "$out/part.log")
[ "$n" = 3 ] && [ "$m" = 3 ] || fail "--only 'transformer' trained $m runs, $n of them transformers (not 3 of 3)"
# stored_runs STORE: how many runs STORE holds finished (its runs.json)
stored_runs() { python3 -c 'import json, sys; print(sum("done" in r for r in json.load(open(sys.argv[1])).values()))' "$1/runs.json" 2>/dev/null || echo 0; }
n=$(stored_runs "$out/store")
[ "$n" = 3 ] || fail "the store holds $n finished runs, not 3"
[ "$(ls "$out/store" | tr '\n' ' ')" = "curves.jsonl.gz runs.json " ] || fail "the store holds other files than its two: $(ls "$out/store")"
python3 - "$out/store" <<'EOF' || fail "the stored runs' files: $(head -c 300 "$out/store/runs.json")"
import gzip, json, os, sys
runs = json.load(open(os.path.join(sys.argv[1], "runs.json")))
curves = [json.loads(line) for line in gzip.open(os.path.join(sys.argv[1], "curves.jsonl.gz"), "rt")]
for name, r in runs.items():
    p = r["files"]["provenance.json"]  # where each run trained
    assert p["commit"] and p["cpu"] and p["wall_s"] >= 0 and p["finished"], p
    assert "synth" in p["command"] and "train.steps=20" in p["command"], p["command"]
    assert "synth_results.json" in r["files"], (name, sorted(r["files"]))
assert sorted((c["run"], c["file"]) for c in curves) == sorted((n, "metrics.jsonl") for n in runs), curves
assert all(c["records"] and "loss" in c["records"][-1] for c in curves)
EOF
repro fig8-s2 "${sweep[@]}" --out "$out/elsewhere" "${store[@]}" > "$out/elsewhere.log" 2>&1 || fail "the sweep elsewhere"
n=$(grep -c "^== s2-transformer.*: restored from $out/store" "$out/elsewhere.log")
[ "$n" = 3 ] || fail "$n runs taken from the store, not 3"
grep -q "6 runs (3 done before)" "$out/elsewhere.log" || fail "the sweep elsewhere does not count the stored runs done"
n=$(grep -c "^== s2-gla-cpu__[a-z]*-lr[^:]*$" "$out/elsewhere.log")
[ "$n" = 3 ] || fail "the sweep elsewhere trained $n runs, not the 3 the store lacked"
rows=$(grep -c "^| \(nope\|rope\|selective\) | 1 |" "$out/elsewhere/table.md")
[ "$rows" = 6 ] || fail "the table beside the store has $rows variant rows, not 6"
[ "$(stored_runs "$out/store")" = 6 ] || fail "the sweep elsewhere did not save its 3 runs to the store"
# saving again keeps a stored run whose fingerprint is the same (the copy in the output
# directory may be an older one that says less of where it trained)
sed -i '0,/"provenance.json":{/s//"provenance.json":{"kept":true,/' "$out/store/runs.json"
grep -q '"kept"' "$out/store/runs.json" || fail "the test could not mark a stored run"
python3 "$root/scripts/reproduce_runs.py" save "$out/elsewhere" "$out/store" || fail "saving the sweep elsewhere again"
grep -q '"kept"' "$out/store/runs.json" || fail "saving again overwrote a stored run of the same fingerprint"
# --publish names the figure and table after the store (a store of other settings never
# overwrites the scale's) and writes the results page; in a copy of the scripts and configs,
# so that the repository's docs stay as they are
mkdir -p "$out/repo" && cp -r "$root/scripts" "$root/configs" "$out/repo/"
pub=$out/repo/docs/figures/reproduction
"$out/repo/scripts/reproduce.sh" fig8-s2 "${sweep[@]}" --out "$out/elsewhere" --rotor "$rotor" --report-only --publish \
    --results "$out/repo/results/reproduce/fig8-s2/cpu-20steps" > "$out/publish.log" 2>&1 ||
    fail "--report-only --publish: $(tail -2 "$out/publish.log")"
for f in fig8-s2-cpu-20steps.md fig8-s2-cpu-20steps.svg; do [ -s "$pub/$f" ] || fail "--publish wrote no $f"; done
[ ! -e "$pub/fig8-s2-cpu.md" ] || fail "--publish with the store cpu-20steps wrote the cpu scale's table"
[ "$(stored_runs "$out/repo/results/reproduce/fig8-s2/cpu-20steps")" = 6 ] || fail "--publish did not save the 6 runs"
grep -q "fig8-s2-cpu-20steps.svg" "$out/repo/docs/results/fig8-s2.md" 2>/dev/null ||
    fail "--publish's results page does not show the figure"
repro fig8-s2 "${sweep[@]}" --out "$out/other" "${store[@]}" --set train.log_every=7 > "$out/other.log" 2>&1 || fail "the changed sweep with a store"
! grep -q "restored from" "$out/other.log" || fail "a run stored with other settings was taken from the store"
if repro fig8-s2 "${tiny[@]}" --only 'a(' > "$out/badre.log" 2>&1; then fail "--only with a bad regular expression passed"; fi
grep -q "not an extended regular expression" "$out/badre.log" || fail "--only's error: $(tail -1 "$out/badre.log")"

# fig7-mqar's table: one section per (length, pairs) setting, a column per width of its
# points (scripts/experiments/fig7-mqar.sh, CPU_POINTS), a row per variant
repro fig7-mqar --seeds 1 --out "$out/mqar" --set train.steps=5 --set train.val_every=0 \
    --set task.test_examples=16 > "$out/mqar.log" 2>&1 || { fail "fig7-mqar tiny sweep"; tail -5 "$out/mqar.log"; }
grep -q "^## L = 64, 4 key-value pairs" "$out/mqar/table.md" || fail "fig7-mqar's table has no (64, 4) section"
grep -A2 "^## L = 64, 16 key-value pairs" "$out/mqar/table.md" | grep -q "^| model | d = 32 | d = 64 |$" ||
    fail "fig7-mqar's (64, 16) section has not the widths 32 and 64"
rows=$(grep -c "^| gla-cpu / \(nope\|rope\|selective\) | [0-9.]* (" "$out/mqar/table.md")
[ "$rows" = 6 ] || fail "fig7-mqar's table has $rows variant rows, not 6 (3 PEs x 2 settings)"

# table2-mad's table: a Table 2 row per variant with a cell per task (a dash where it has no
# run), and below it each cell's best lr with its seeds' mean (lowest, highest)
repro table2-mad --seeds 2 --only '^mad_memorization/baseline/(nope|rope)-lr1e-3' --out "$out/mad" \
    --set train.steps=3 --set task.test_examples=16 > "$out/mad.log" 2>&1 || { fail "table2-mad tiny sweep"; tail -5 "$out/mad.log"; }
grep -q "^| nope | — / 82.0 | — / 8.5 | — / 87.3 | [0-9.]* (1) / 38.7 | " "$out/mad/table.md" ||
    fail "table2-mad's nope row: $(grep '^| nope |' "$out/mad/table.md")"
rows=$(grep -cE "^\| mad_memorization \| baseline \| (nope|rope) \| 0.001 \| 0 \| 2 \| [0-9.]+ \([0-9.]+, [0-9.]+\) \|$" "$out/mad/table.md")
[ "$rows" = 2 ] || fail "table2-mad's table has $rows runs rows with 2 seeds and their range, not 2"

# --report-only draws from the finished runs and trains nothing; --train-only draws nothing
rm -f "$out/s2/figure.svg" "$out/s2/table.md"
if repro fig8-s2 "${tiny[@]}" --report-only > "$out/stale.log" 2>&1; then
    fail "--report-only drew the runs of other settings than its plan's"
fi
grep -q "no finished runs of .*plan.tsv" "$out/stale.log" || fail "the stale report's error: $(tail -1 "$out/stale.log")"
repro fig8-s2 "${tiny[@]}" --set train.log_every=7 --report-only > "$out/report.log" 2>&1 ||
    fail "--report-only: $(tail -2 "$out/report.log")"
[ -s "$out/s2/table.md" ] && [ -s "$out/s2/figure.svg" ] || fail "--report-only drew no figure or table"
! grep -q "^== " "$out/report.log" || fail "--report-only trained"
# (a run.* key, as the run.device=cuda of a run on a GPU machine, says where a run ran, not what it is: the
# report without it draws those runs)
short=(--seeds 1 --out "$out/s2t" --set train.steps=5 --set train.val_every=0 --set task.test_examples=16)
repro fig8-s2 "${short[@]}" --set run.bucket_mb=8 --train-only > "$out/train.log" 2>&1 ||
    fail "--train-only: $(tail -2 "$out/train.log")"
[ ! -e "$out/s2t/table.md" ] || fail "--train-only drew a table"
n=$(ls "$out"/s2t/runs/*.done 2>/dev/null | wc -l)
[ "$n" = 6 ] || fail "--train-only finished $n runs, not 6"
repro fig8-s2 "${short[@]}" --report-only > "$out/report2.log" 2>&1 ||
    fail "--report-only of runs trained with another run.* key: $(tail -2 "$out/report2.log")"

# rotrnn-table2 without its dataset stops before training, naming the variable; on a synthetic
# tree in Speech Commands' layout (tests/speech_tones.py) it trains RotRNN and the LRU and
# writes the table with the paper's 95.2 beside each
if ROTOR_SPEECH_COMMANDS=$out/none repro rotrnn-table2 --seeds 1 --out "$out/t2none" > "$out/t2none.log" 2>&1; then
    fail "rotrnn-table2 ran without its dataset"
fi
grep -q "ROTOR_SPEECH_COMMANDS" "$out/t2none.log" || fail "the missing dataset's error: $(tail -2 "$out/t2none.log")"
/usr/bin/python3 "$root/tests/speech_tones.py" "$out/sc" --words 10 --train 8 --val 2 --test 4 > /dev/null
ROTOR_SPEECH_COMMANDS=$out/sc repro rotrnn-table2 --seeds 1 --out "$out/t2" --set task.words=10 \
    --set model.num_classes=10 --set task.sample_stride=16 --set task.max_examples=0 --set train.steps=10 \
    --set train.val_every=5 --set train.val_batches=2 > "$out/t2.log" 2>&1 || { fail "rotrnn-table2 on tones"; tail -5 "$out/t2.log"; }
rows=$(grep -c "^| \(rotrnn\|lru\) | speech35 | 1 | [0-9.]* | 95.2 |" "$out/t2/table.md" 2>/dev/null)
[ "$rows" = 2 ] || fail "rotrnn-table2's table has $rows model rows with the paper's 95.2, not 2"

# table3-lm: each run is scored as it finishes (finish_run: RUN/lm_eval.json, which the store
# keeps), so the table is drawn from the store alone, without checkpoints; a run whose scoring
# fails is not marked finished
if [ -f "$shared/tokenizer/mistral-7b-v0.1.model" ] && [ -d "$shared/eval" ]; then
    lm=(--set train.steps=3 --set train.val_every=3 --set train.val_batches=1 --results "$out/lmstore")
    repro table3-lm "${lm[@]}" --only '^gla__(nope|selective)-lr2e-3-' --out "$out/lm" > "$out/lm.log" 2>&1 ||
        { fail "table3-lm tiny sweep"; tail -5 "$out/lm.log"; }
    n=$(grep -c '"lm_eval.json":{' "$out/lmstore/runs.json" 2>/dev/null)
    [ "$n" = 2 ] || fail "the store holds $n runs' evaluations, not 2"
    rows=$(grep -c "^| gla | \(nope\|selective\) | 2e-3 | [0-9.]* | [0-9.e+]* / " "$out/lm/table.md" 2>/dev/null)
    [ "$rows" = 2 ] || fail "table3-lm's table has $rows rows of rotor's scores beside the paper's, not 2"
    grep -q "the first 200 documents" "$out/lm/table.md" 2>/dev/null || fail "table3-lm's table does not say how many documents"
    # every run's validation loss, a column per lr of the plan (a dash for a run not trained)
    rows=$(grep -c "^| gla | \(nope\|selective\) | [0-9.]* | — |$" "$out/lm/table.md" 2>/dev/null)
    [ "$rows" = 2 ] || fail "table3-lm's every-run section has $rows rows with lr 2e-3's loss and no 8e-3 run, not 2"
    repro table3-lm "${lm[@]}" --out "$out/lm2" --report-only > "$out/lm2.log" 2>&1 ||
        fail "table3-lm drawn from the store: $(tail -2 "$out/lm2.log")"
    cmp -s "$out/lm/table.md" "$out/lm2/table.md" || fail "table3-lm's table from the store differs from the sweep's"
    mkdir -p "$out/noeval"
    ln -s "$shared/tokenizer" "$shared/text" "$out/noeval/"
    if ROTOR_SHARED_DATA=$out/noeval repro table3-lm --set train.steps=3 --only '^gla__nope-lr2e-3-' --out "$out/lm3" \
        --results "$out/lmstore3" > "$out/lm3.log" 2>&1; then
        fail "table3-lm passed without its evaluation data"
    fi
    [ ! -e "$out/lm3/runs/gla__nope-lr2e-3-seed1234.done" ] || fail "a run whose evaluation failed was marked finished"
else
    echo "skipped: table3-lm end to end needs $shared/tokenizer and $shared/eval"
fi

# a run stopped by SIGTERM part way: rotor synth evaluates nothing and exits 1, and the
# sweep does not mark it finished
long=(--seeds 1 --out "$out/stop" --set train.steps=1000000 --set train.log_every=1 --set task.test_examples=16)
setsid "$root/scripts/reproduce.sh" fig8-a3 "${long[@]}" --rotor "$rotor" > "$out/stop.log" 2>&1 &
driver=$!
log=$out/stop/runs/nope-lr3e-3-seed555.log
for _ in $(seq 300); do grep -q "^step " "$log" 2>/dev/null && break; sleep 0.2; done
pkill -TERM -f "run.dir=$out/stop/runs/nope-lr3e-3-seed555" || fail "no run to stop"
for _ in $(seq 100); do grep -q "stopped before train.steps" "$log" 2>/dev/null && break; sleep 0.2; done
grep -q "stopped before train.steps" "$log" || fail "rotor synth did not say it stopped: $(tail -2 "$log")"
[ ! -e "$out/stop/runs/nope-lr3e-3-seed555/synth_results.json" ] || fail "a stopped run was evaluated"
[ ! -e "$out/stop/runs/nope-lr3e-3-seed555.done" ] || fail "a stopped run was marked finished"
# stopping the sweep itself (its process, not its group) stops the run it started next
for _ in $(seq 300); do pgrep -f "run.dir=$out/stop/runs/rope" > /dev/null && break; sleep 0.2; done
pgrep -f "run.dir=$out/stop/runs/rope" > /dev/null || fail "the sweep did not go on to its next run"
kill -TERM "$driver"
wait "$driver" 2>/dev/null
for _ in $(seq 100); do pgrep -f "run.dir=$out/stop/" > /dev/null || break; sleep 0.2; done
pgrep -f "run.dir=$out/stop/" > /dev/null && fail "runs went on after the sweep was stopped"
[ -z "$(ls "$out"/stop/runs/*.done 2>/dev/null)" ] || fail "a run of the stopped sweep was marked finished"
for _ in $(seq 50); do [ -z "$(find "$out/stop" -maxdepth 1 -name '.sweep.*')" ] && break; sleep 0.2; done
[ -z "$(find "$out/stop" -maxdepth 1 -name '.sweep.*')" ] || fail "the stopped sweep left its own directory in OUT"
pkill -TERM -f "run.dir=$out/stop/" 2>/dev/null || true

[ $fails = 0 ] && echo "all reproduce.sh checks passed"
exit $((fails != 0))
