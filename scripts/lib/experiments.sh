# Helpers for the experiment files of scripts/reproduce.sh (scripts/experiments/*.sh source
# this file; docs/reproduction.md, "Adding an experiment").

# shellcheck source=scripts/pe_variants.sh
source "$ROOT/scripts/pe_variants.sh"

# run NAME COMMAND CONFIG [SECTION.KEY=VALUE]...: one line of an experiment's `runs`.
run() {
    local name=$1 command=$2 config=$3
    shift 3
    printf '%s\t%s\t%s\t%s\n' "$name" "$command" "$config" "$*"
}

# pe_keys VARIANT: the variant's keys as SECTION.KEY=VALUE words (pe_variants.sh's variants).
pe_keys() { pe_sets "$1" | sed 's/--set //g'; }

# first_seeds N SEED...: the first N of the list (the experiment's seeds, in the paper's order).
first_seeds() {
    local n=$1
    shift
    [[ $n -le $# ]] || { echo "this experiment has $# seeds ($*), not $n" >&2; exit 2; }
    echo "${@:1:n}"
}

# plot KIND ARGS...: scripts/reproduce_plot.py (matplotlib from Debian's python3-matplotlib).
plot() { /usr/bin/python3 "$ROOT/scripts/reproduce_plot.py" "$@"; }
