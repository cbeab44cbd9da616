# Shared by the `rotor synth` end-to-end tests (synth_s2.sh, synth_s2_transformer.sh): sourced
# after `set -euo pipefail` with $rotor and $cfg set. Gives $out (removed on exit), fail, run
# (one `rotor synth` of $cfg at seed 0 on 256 test sequences, printing its S2 result line),
# field (a metric of a run's synth_results.json), at (prefix accuracy at element T) and ge.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

run() { # name, extra --set options...
    local name=$1
    shift
    "$rotor" synth "$cfg" --set "run.dir=$out/$name" --set train.seed=0 --set task.test_examples=256 \
        --set train.val_every=0 --set train.log_every=500 "$@" > "$out/$name.log" 2>&1 ||
        { cat "$out/$name.log"; fail "rotor synth ($name) failed"; }
    grep '^state S2' "$out/$name.log" | sed "s/^/$name: /"
}

# field NAME KEY: a number from RUN/synth_results.json
field() { /usr/bin/env python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metrics'][sys.argv[2]])" \
    "$out/$1/synth_results.json" "$2"; }
ge() { /usr/bin/env python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)" "$1" "$2"; }

# at NAME T: the fraction of test sequences right up to element T
at() { /usr/bin/env python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metrics']['prefix_accuracy'][int(sys.argv[2]) - 1])" \
    "$out/$1/synth_results.json" "$2"; }
