# nnRNN paper, Fig. 1(c) and supplement Table 6: Fisher memory curves of the paper's eq. 2
# matrices (N = 100; alpha on the subdiagonal, beta below it, d on the diagonal), computed
# analytically by scripts/fisher_memory.py: no training, the same at both scales. The table
# puts the sums J_tot beside Table 6; docs/nnrnn.md, "Fisher memory curves".
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "nnRNN Fig. 1(c) / Table 6: Fisher memory curves of the paper's matrices (analytic, no runs)"; }
default_seeds() { echo 1; }
runs() { :; }
report() {
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$ROOT/scripts/fisher_memory.py" fig1 "$OUT/figure.svg" --table "$OUT/table.md"
}
