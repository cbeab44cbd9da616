#!/usr/bin/env bash
# Builds rotor if needed and runs every test (C unit tests, gradient checks, the PyTorch
# reference comparison, end-to-end training runs). Ends with ctest's summary line
# "N% tests passed, N tests failed out of N"; exit status 0 only if all passed.
#   scripts/test.sh             # everything
#   scripts/test.sh -R model    # only tests whose name matches (ctest -R)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Tests share the machine with each other: sleep rather than spin in OpenMP barriers.
export OMP_WAIT_POLICY=passive
cd build
ctest --output-on-failure --timeout 900 "$@"
