#!/usr/bin/env bash
# Rebuilds a figure or table of the papers: runs the experiment's sweep (its learning rates,
# seeds and lengths), then draws the figure in the paper's form and writes a Markdown table
# with the paper's numbers beside rotor's.
#
#   scripts/reproduce.sh EXPERIMENT [--scale cpu|paper] [--seeds N] [--jobs N] [--plan]
#                        [--out DIR] [--results DIR] [--only REGEX] [--rotor PATH]
#                        [--launch CMD] [--publish] [--train-only | --report-only]
#                        [--set SECTION.KEY=VALUE]...
#   scripts/reproduce.sh GROUP [the same options]
#   scripts/reproduce.sh --help        # this text and every experiment
#
# GROUP: all (every experiment), selective-rope (fig* and table*), rotrnn, nnrnn, or a
#   comma-separated list of experiments: each in turn with the same options, the next one
#   started whatever became of the last one's runs, then the group's totals (runs, runs
#   done, training tokens, GPU-hours) and the experiments that stopped with an error. With
#   a group, --out DIR is where each experiment's directory goes, DIR/EXPERIMENT/SCALE
#   (default runs/reproduce); a resumed group skips what finished.
#
# --scale cpu (default): the documented reduction of the experiment that finishes in hours
#   on 2 cores (docs/reproduction.md). --scale paper: the paper's settings; the run plan is
#   printed first (runs, tokens, GPU-hours at the measured tokens per second).
# --seeds N: the first N seeds of the experiment's list (default: the experiment's own).
# --jobs N: runs at a time (default 1); each gets nproc / N threads at --scale cpu (a
#   --set run.threads=N overrides it).
# --plan: print the plan (every config is read by `rotor info`, so a bad key fails here,
#   not hours later) and stop.
# --out DIR: where runs, figure and table go (default runs/reproduce/EXPERIMENT/SCALE).
#   A run that finished before (DIR/runs/NAME.done) is skipped: run the same command again
#   to resume after an interruption. A finished run whose settings have changed since (its
#   command, its config's values or its keys other than run.*) is run again, its old
#   directory kept as NAME.superseded. A run that fails is reported and the others go on.
#   A finished run's NAME/provenance.json says where it trained: the commit, the CPU (and
#   GPU), the date, its wall time and its command.
# --results DIR: the results store (default results/reproduce/EXPERIMENT/SCALE, committed):
#   a planned run that the store holds finished with the same settings is taken from it
#   instead of trained, so a sweep resumes on another machine (a fresh clone draws the figure
#   with --report-only). Each run that finishes is saved there (its fingerprint, *.json and
#   *.jsonl, no checkpoints, in the store's two files runs.json and curves.jsonl.gz) when
#   --results or --publish is given (scripts/reproduce_runs.py).
# --only REGEX: train only the planned runs whose names match the extended regular
#   expression (e.g. 'kv16-d64' or '^mad_fuzzy'); the report draws every finished run.
#   Sweeps with disjoint --only may share one --out, e.g. one pinned to each core
#   (taskset -c 0 ... --only '^mad_fuzzy' beside taskset -c 1 ... --only '^mad_memorization').
# --launch CMD: put CMD before each training command, e.g. --launch "mpirun -np 8" for a
#   paper-scale run on 8 GPUs of one node (docs/distributed.md; srun under SLURM).
# --set SECTION.KEY=VALUE: added to every run (after the experiment's own keys), e.g. a
#   quick check of the whole pipeline with --set train.steps=20.
# --publish: copy the figure and table to docs/figures/reproduction/EXPERIMENT-STORE.*
#   (STORE: the results store's directory name, SCALE unless --results names another), save
#   the finished runs in the results store and write the experiment's results page,
#   docs/results/EXPERIMENT.md (scripts/results_page.py).
# --train-only: train the runs and stop, drawing nothing (on a machine without matplotlib,
#   such as a GPU machine: scripts/gpu_check.sh's part repro). --report-only: train
#   nothing, draw the figure and table from the runs finished in DIR (those of a --train-only
#   sweep elsewhere, unpacked there).
#
# An experiment is scripts/experiments/EXPERIMENT.sh (docs/reproduction.md, "Adding an
# experiment"): describe, default_seeds, runs (NAME COMMAND CONFIG SETS, tab-separated),
# report and optionally prepare (data the runs read) and finish_run NAME DIR THREADS (after a
# run trains, before it counts as finished: e.g. evaluating it into DIR, whose *.json the
# results store keeps), with ROOT, ROTOR, SCALE, SEEDS and OUT set; GPU_TOK_S (one GPU's tokens/s; or a function gpu_rate NAME for each run) and RANKS
# (data-parallel ranks a paper run assumes) size the plan.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
EXPERIMENTS="$ROOT/scripts/experiments"

list_experiments() {
    local f
    for f in "$EXPERIMENTS"/*.sh; do
        # shellcheck disable=SC1090
        (source "$f"; printf '  %-16s %s\n' "$(basename "$f" .sh)" "$(describe)")
    done
}
usage() {
    awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"
    echo
    echo "experiments:"
    list_experiments
    exit "${1:-0}"
}
die() { echo "reproduce.sh: $*" >&2; exit 2; }
# the figure and table into docs/figures/reproduction/EXPERIMENT-STORE.* (named after the
# store, so that a store of other settings, e.g. cpu-12000steps, never overwrites the
# scale's), the runs into the store, and the experiment's page docs/results/EXPERIMENT.md
# drawn again from them
publish() {
    local dest="$ROOT/docs/figures/reproduction" f
    mkdir -p "$dest"
    for f in figure.svg table.md; do
        if [[ -f $OUT/$f ]]; then cp "$OUT/$f" "$dest/$EXPERIMENT-$(basename "$RESULTS").${f#*.}"; fi
    done
    python3 "$ROOT/scripts/reproduce_runs.py" save "$OUT" "$RESULTS"
    python3 "$ROOT/scripts/results_page.py" "$EXPERIMENT"
}

[[ $# -ge 1 ]] || usage 2
[[ $1 == -h || $1 == --help ]] && usage
EXPERIMENT=$1
shift

# group_members GROUP: the group's experiments, or fails for a single experiment
group_members() {
    local pattern
    case $1 in
        all) pattern='*' ;;
        selective-rope) pattern='@(fig|table)*' ;;
        rotrnn|nnrnn) pattern="$1-*" ;;
        *,*) tr ',' '\n' <<< "$1"; return 0 ;;
        *) return 1 ;;
    esac
    (shopt -s extglob; cd "$EXPERIMENTS" && for f in $pattern.sh; do echo "${f%.sh}"; done)
}
if members=$(group_members "$EXPERIMENT"); then
    scale=cpu base=$ROOT/runs/reproduce options=()
    while [[ $# -gt 0 ]]; do
        case $1 in
            --out) base=${2:-}; shift 2 ;;
            --scale) scale=${2:-}; options+=("$1" "$scale"); shift 2 ;;
            *) options+=("$1"); shift ;;
        esac
    done
    for e in $members; do
        [[ -f $EXPERIMENTS/$e.sh ]] || die "unknown experiment '$e' in '$EXPERIMENT'"
    done
    stopped=()
    for e in $members; do
        echo "=== $e"
        rm -f "$base/$e/$scale/plan_totals" # an earlier plan's, where this one fails
        "$0" "$e" "${options[@]}" --out "$base/$e/$scale" || stopped+=("$e")
    done
    # shellcheck disable=SC2086 # members: one experiment a word
    python3 - "$base" "$scale" "$EXPERIMENT" $members <<'EOF'
import os, sys
base, scale, group, members = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
runs = done = tokens = unrated = 0
hours = 0.0
for e in members:
    f = os.path.join(base, e, scale, "plan_totals")
    if os.path.exists(f):  # absent where the experiment's plan failed
        r, d, t, h, u = open(f).read().split()
        runs, done, tokens, hours, unrated = runs + int(r), done + int(d), tokens + int(t), hours + float(h), unrated + int(u)
print(f"=== {group} at --scale {scale}: {len(members)} experiments, {runs} runs ({done} done before), "
      f"{tokens:,} training tokens"
      + (f", {hours:,.1f} GPU-hours for the {runs - unrated} runs with a measured rate" if runs > unrated else ""))
EOF
    [[ ${#stopped[@]} == 0 ]] || die "stopped with an error: ${stopped[*]} (see above)"
    exit 0
fi
[[ -f $EXPERIMENTS/$EXPERIMENT.sh ]] ||
    die "unknown experiment '$EXPERIMENT'; the experiments: $(cd "$EXPERIMENTS" && ls ./*.sh | sed 's|^\./||; s|\.sh$||' | tr '\n' ' ')"
SCALE=cpu SEEDS="" JOBS=1 PLAN_ONLY=0 OUT="" RESULTS="" SAVE=0 ONLY="" PUBLISH=0 LAUNCH="" EXTRA_SETS="" STAGES=both
ROTOR="$ROOT/build/rotor"
while [[ $# -gt 0 ]]; do
    case $1 in
        --scale) SCALE=${2:-}; shift 2 ;;
        --seeds) SEEDS=${2:-}; shift 2 ;;
        --jobs) JOBS=${2:-}; shift 2 ;;
        --plan) PLAN_ONLY=1; shift ;;
        --out) OUT=${2:-}; shift 2 ;;
        --results) RESULTS=${2:-}; SAVE=1; shift 2 ;;
        --only) ONLY=${2:-}; shift 2 ;;
        --rotor) ROTOR=${2:-}; shift 2 ;;
        --launch) LAUNCH=${2:-}; shift 2 ;;
        --set) [[ ${2:-} == *.*=* ]] || die "--set takes SECTION.KEY=VALUE, not '${2:-}'"
               EXTRA_SETS+=" $2"; shift 2 ;;
        --publish) PUBLISH=1 SAVE=1; shift ;;
        --train-only) [[ $STAGES == both ]] || die "--train-only and --report-only exclude each other"
                      STAGES=train; shift ;;
        --report-only) [[ $STAGES == both ]] || die "--train-only and --report-only exclude each other"
                       STAGES=report; shift ;;
        -h|--help) usage ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done
[[ $SCALE == cpu || $SCALE == paper ]] || die "--scale must be cpu or paper, not '$SCALE'"
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer, not '$JOBS'"
[[ -z $SEEDS || $SEEDS =~ ^[1-9][0-9]*$ ]] || die "--seeds must be a positive integer, not '$SEEDS'"
[[ -z $ONLY ]] || awk -v re="$ONLY" 'BEGIN { "" ~ re }' 2> /dev/null ||
    die "--only: '$ONLY' is not an extended regular expression"
[[ -x $ROTOR ]] || die "no rotor binary at $ROTOR (build it: scripts/setup.sh, or give --rotor)"
ROTOR=$(cd "$(dirname "$ROTOR")" && pwd)/$(basename "$ROTOR")
OUT=${OUT:-$ROOT/runs/reproduce/$EXPERIMENT/$SCALE}
mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)
RESULTS=${RESULTS:-$ROOT/results/reproduce/$EXPERIMENT/$SCALE}

# shellcheck disable=SC1090
source "$EXPERIMENTS/$EXPERIMENT.sh"
SEEDS=${SEEDS:-$(default_seeds)}
export ROOT ROTOR SCALE SEEDS OUT RESULTS SAVE

# run_fingerprint COMMAND CONFIG SETS: what a run is, as NAME.done records it: its command,
# its config's lines other than comments and its sets other than run.* (where and how it
# runs, e.g. the run.device=cuda of a sweep trained on a GPU machine and drawn here), with the
# output directory and the repository as placeholders in them (data.train=$OUT/data/train),
# so that a run is the same run in any directory and on any machine
run_fingerprint() {
    local s
    {
        printf '%s\n%s\n' "$1" "$2"
        for s in $3; do
            [[ $s == run.* ]] && continue
            s=${s//"$OUT"/'$OUT'}
            echo "${s//"$ROOT"/'$ROOT'}"
        done
        grep -v '^[[:space:]]*\([;#]\|$\)' "$ROOT/$2"
    } | sha256sum | cut -d' ' -f1
}
export -f run_fingerprint

# This sweep's own files in a directory of its own: two sweeps of one OUT (disjoint --only,
# one per core or GPU) would otherwise write each other's runs, plan and config. OUT's
# runs.tsv and plan.tsv are replaced whole (a rename), never seen half written.
own=$(mktemp -d "$OUT/.sweep.XXXXXX")
trap 'rm -rf "$own"' EXIT
trap 'exit 143' TERM INT # by way of the EXIT trap
publish_file() { cp "$own/$1" "$own/$1.copy" && mv "$own/$1.copy" "$OUT/$1"; }
runs_file="$own/runs.tsv"
runs | while IFS=$'\t' read -r name command config sets; do
    printf '%s\t%s\t%s\t%s\n' "$name" "$command" "$config" "$sets$EXTRA_SETS"
done > "$runs_file"
publish_file runs.tsv
# Every run's effective config, read by rotor itself: the plan's tokens, and a bad key or
# value reported before anything trains. Runs that differ only in lr, weight decay or seed
# have the same tokens: one `rotor info` serves them all.
declare -A tokens_of
plan_line() {
    local name=$1 command=$2 config=$3 sets=$4
    local args=() s shape="$config"
    for s in $sets; do
        args+=(--set "$s")
        [[ $s == train.lr=* || $s == train.weight_decay=* || $s == train.seed=* ]] || shape+=" $s"
    done
    if [[ -z ${tokens_of[$shape]:-} ]]; then
        local ini="$own/plan.ini"
        "$ROTOR" info "$ROOT/$config" "${args[@]}" --write-config "$ini" > /dev/null ||
            die "run $name: rotor info $config ${args[*]} failed"
        tokens_of[$shape]=$(python3 - "$ini" <<'EOF'
import configparser, sys
cp = configparser.ConfigParser(comment_prefixes=(";",), interpolation=None)
cp.read(sys.argv[1])
t = cp["train"]
print(t["steps"], int(t["steps"]) * int(t["micro_batch"]) * int(t["grad_accum"]) * int(t["seq_len"]))
EOF
)
    fi
    local st=${tokens_of[$shape]} rate=${GPU_TOK_S:-0}
    if declare -F gpu_rate > /dev/null; then rate=$(gpu_rate "$name"); fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$command" "${st% *}" "${st#* }" "$rate" \
        "$(run_fingerprint "$command" "$config" "$sets")"
}
plan="$OUT/plan.tsv"
while IFS=$'\t' read -r name command config sets; do
    [[ -n $name ]] || continue
    [[ $command == synth || $command == train ]] || die "run $name: command '$command' (synth or train)"
    plan_line "$name" "$command" "$config" "${sets:-}"
done < "$runs_file" > "$own/plan.tsv"
publish_file plan.tsv
python3 "$ROOT/scripts/reproduce_runs.py" restore "$OUT" "$RESULTS"
ranks=1
[[ $SCALE == paper ]] && ranks=${RANKS:-1}
python3 - "$plan" "$OUT" "$SCALE" "$EXPERIMENT" "$ranks" "$ROOT/scripts" <<'EOF'
import os, sys
plan, out, scale, exp, ranks = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
sys.path.insert(0, sys.argv[6])
from reproduce_runs import finished_runs
rows = [l.rstrip("\n").split("\t") for l in open(plan) if l.strip()]
for r in rows:  # tokens of every rank
    r[3] = str(int(r[3]) * ranks)
done = len(finished_runs(out))
tokens = sum(int(r[3]) for r in rows)
if ranks > 1:
    print(f"(each run on {ranks} data-parallel ranks: the configs' global batch assumes them)")
print(f"{exp} at --scale {scale}: {len(rows)} runs ({done} done before), {tokens:,} training tokens")
for r in rows[:8]:
    print(f"  {r[0]:<48} {r[1]:<5} {int(r[2]):>8} steps {int(r[3]):>16,} tokens")
if len(rows) > 8:
    print(f"  ... and {len(rows) - 8} more ({plan})")
rated = [r for r in rows if float(r[4]) > 0]
if rated:
    hours = sum(int(r[3]) / float(r[4]) for r in rated) / 3600
    rates = sorted({f"{float(r[4]):,.0f}" for r in rated})
    print(f"  at {' / '.join(rates)} tokens/s per GPU (docs/gpu.md): {hours:,.1f} GPU-hours"
          + (f" for the {len(rated)} runs with a measured rate" if len(rated) < len(rows) else ""))
if len(rated) < len(rows):
    print(f"  {len(rows) - len(rated)} runs: no measured GPU rate for their models (docs/gpu.md), GPU-hours unknown")
hours = sum(int(r[3]) / float(r[4]) for r in rated) / 3600
with open(os.path.join(out, "plan_totals"), "w") as f:  # what a group's totals add up
    f.write(f"{len(rows)} {done} {tokens} {hours} {len(rows) - len(rated)}\n")
EOF
[[ $PLAN_ONLY == 1 ]] && exit 0
if [[ $STAGES == report ]]; then
    report
    [[ $PUBLISH == 1 ]] && publish
    echo "figure: $OUT/figure.svg, table: $OUT/table.md"
    exit 0
fi
if declare -F prepare > /dev/null; then prepare; fi

# One run: rotor COMMAND CONFIG with the run's sets; NAME.done marks it finished and holds
# its fingerprint.
threads=1
[[ $SCALE == cpu ]] && threads=$(( $(nproc) / JOBS > 0 ? $(nproc) / JOBS : 1 ))
run_one() {
    local name=$1 command=$2 config=$3 sets=$4
    local dir="$OUT/runs/$name" args=() s fingerprint
    fingerprint=$(run_fingerprint "$command" "$config" "$sets")
    if [[ -f $dir.done ]]; then
        [[ $(< "$dir.done") == "$fingerprint" ]] && return 0
        echo "== $name finished with other settings than now: run again (the old run: $name.superseded)"
        rm -rf "$dir.superseded" "$dir.superseded.log"
        if [[ -d $dir ]]; then mv "$dir" "$dir.superseded"; fi
        if [[ -f $dir.log ]]; then mv "$dir.log" "$dir.superseded.log"; fi
        rm "$dir.done"
    fi
    # the threads first, so that a --set run.threads=N of the command line wins
    local run_threads=$threads
    [[ $SCALE == cpu ]] && args+=(--set "run.threads=$threads")
    for s in $sets; do
        args+=(--set "$s")
        [[ $s == run.threads=* ]] && run_threads=${s#*=}
    done
    mkdir -p "$(dirname "$dir")"
    echo "== $name"
    # a run that was stopped before it finished starts again: its directory is the sweep's own
    if [[ -d $dir ]]; then echo "   (stopped before it finished: started again)"; rm -rf "$dir"; fi
    local started=$SECONDS
    # shellcheck disable=SC2086 # LAUNCH is a command line
    if $LAUNCH "$ROTOR" "$command" "$ROOT/$config" "${args[@]}" --set "run.dir=$dir" > "$dir.log" 2>&1 &&
        { ! declare -F finish_run > /dev/null || finish_run "$name" "$dir" "$run_threads" >> "$dir.log" 2>&1; }; then
        python3 "$ROOT/scripts/reproduce_runs.py" provenance "$dir" "$ROOT" $((SECONDS - started)) \
            $LAUNCH "$ROTOR" "$command" "$config" "${args[@]}"
        echo "$fingerprint" > "$dir.done"
        [[ $SAVE == 0 ]] || python3 "$ROOT/scripts/reproduce_runs.py" save "$OUT" "$RESULTS" "$name"
    else
        echo "   $name failed: see $dir.log" >&2
        return 1
    fi
}
export -f run_one
if declare -F finish_run > /dev/null; then export -f finish_run; fi
export threads LAUNCH
failed=0
if [[ -s $runs_file ]]; then
    # The runs in a process group of their own, so that stopping the sweep (SIGTERM, SIGINT)
    # stops them too: each run then checkpoints, is not marked finished, and the next sweep
    # starts it again.
    # shellcheck disable=SC2016 # expanded by the inner bash
    setsid xargs -d '\n' -P "$JOBS" -I{} bash -c 'IFS=$'"'"'\t'"'"' read -r n c f s <<< "$1"; run_one "$n" "$c" "$f" "$s"' _ {} \
        < <(awk -F'\t' -v re="$ONLY" '$1 ~ re' "$runs_file") &
    workers=$!
    trap 'kill -TERM -- -"$workers" 2>/dev/null; wait "$workers"; exit 143' TERM INT
    wait "$workers" || failed=1
    trap 'exit 143' TERM INT
fi
if [[ $STAGES == both ]]; then
    report
    [[ $PUBLISH == 1 ]] && publish
    echo "figure: $OUT/figure.svg, table: $OUT/table.md"
fi
[[ $failed == 0 ]] || { echo "reproduce.sh: some runs failed (their logs are beside them in $OUT/runs)" >&2; exit 1; }
