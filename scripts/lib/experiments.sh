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

# config_lr CONFIG: the config's train.lr as written in it
config_lr() { awk -F' *= *' '$1 == "lr" {print $2; exit}' "$ROOT/$1"; }

# pe_seed_runs CONFIG PREFIX SEED...: a `rotor synth` run of CONFIG at its own lr for each
# position embedding (NoPE, RoPE, the config's Selective RoPE) and each seed, named
# PREFIX + VARIANT-lrLR-seedSEED (PREFIX: "" or "MODEL__").
pe_seed_runs() {
    local config=$1 prefix=$2 lr pe seed
    shift 2
    lr=$(config_lr "$config")
    for pe in nope rope selective; do
        for seed in "$@"; do
            run "$prefix$pe-lr$lr-seed$seed" synth "$config" $(pe_keys "$pe") "train.seed=$seed"
        done
    done
}

# lru_keys CONFIG: the LRU in place of a RotRNN config, with its state at the same width (N
# reals: N / 2 complex channels, the equivalence of the RotRNN paper's §4.1)
lru_keys() {
    echo "model.type=lru model.complex_state_size=$(( $(awk -F' *= *' '$1 == "real_state_size" {print $2; exit}' "$ROOT/$1") / 2 ))"
}

# plot KIND ARGS...: scripts/reproduce_plot.py (matplotlib from Debian's python3-matplotlib).
plot() { /usr/bin/python3 "$ROOT/scripts/reproduce_plot.py" "$@"; }
