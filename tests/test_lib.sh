# Shared by the shell tests: sourced after `set -uo pipefail`. Gives $out (a temporary
# directory, removed on exit), fail (prints FAIL and counts into $fails) and finish WHAT (the
# summary line and the exit status); the tests' OpenMP threads sleep rather than spin.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMP_WAIT_POLICY=passive
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# finish WHAT: the summary line and the exit status
finish() {
  [ $fails = 0 ] && echo "all $1 checks passed"
  exit $((fails != 0))
}
