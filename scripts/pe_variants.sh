# The position-embedding variants of the sweeps (sourced by synth_sweep.sh and mad_sweep.sh):
# pe_sets VARIANT prints the --set options that turn a config into that variant: nope,
# rope, selective (the config's own [pe] section), and selective-bias, selective-pg,
# selective-pg-bias (the config's [pe] with pe.bias / pe.phase_gate set).
pe_sets() {
    case $1 in
        nope) echo "--set pe.type=nope" ;;
        rope) echo "--set pe.type=rope" ;;
        selective) echo "--set pe.type=selective" ;;
        selective-bias) echo "--set pe.type=selective --set pe.bias=true --set pe.phase_gate=false" ;;
        selective-pg) echo "--set pe.type=selective --set pe.bias=false --set pe.phase_gate=true" ;;
        selective-pg-bias) echo "--set pe.type=selective --set pe.bias=true --set pe.phase_gate=true" ;;
        *) echo "unknown PE variant '$1' (nope, rope, selective, selective-bias, selective-pg, selective-pg-bias)" >&2
           exit 2 ;;
    esac
}
