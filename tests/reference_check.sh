#!/usr/bin/env bash
# The C model against the independent PyTorch reference: logits, loss and every parameter
# gradient of each mixer x option x position embedding (tests/reference_cases.c writes the
# cases, tests/reference/rotor_ref.py check recomputes them in float64 with naive mixers).
# Usage: reference_check.sh CASES_BINARY RTOL [CONFIG.ini...] (configs: the cases of
# their models instead, reference_cases.c)
set -euo pipefail
cases_bin=$1
rtol=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$cases_bin" "$out" "$@" >/dev/null
/usr/bin/python3 "$here/reference/rotor_ref.py" check --rtol "$rtol" "$out"/*
