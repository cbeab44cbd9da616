#!/usr/bin/env bash
# Checkpoints written before the family and task keys were renamed (rotor 7ec4987, kept in
# tests/data/checkpoints-2026-11-27) resume under today's names: step 2 from the kept step 1
# gives the loss and gradient norm that the old version logged for its step 2. They agreed to
# every digit metrics.jsonl keeps on the machine that wrote them (one thread, a Release build);
# another machine's BLAS kernels or another build's flags round differently, so the check allows
# a relative 1e-6.
set -euo pipefail
rotor=$1
data=$(cd "$(dirname "$0")/data/checkpoints-2026-11-27" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for dir in "$data"/*/; do
  name=$(basename "$dir")
  mkdir -p "$out/$name/checkpoints"
  cp -r "$dir/step_00000001" "$out/$name/checkpoints/"
  echo step_00000001 >"$out/$name/checkpoints/latest"
  OMP_WAIT_POLICY=passive "$rotor" train "$dir/config.ini" --set run.dir="$out/$name" --resume auto >"$out/$name.log"
  grep -q "resumed from .*step_00000001 at step 1" "$out/$name.log"
  /usr/bin/python3 - "$out/$name/metrics.jsonl" "$dir/expected_step2.json" "$name" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
want = json.load(open(sys.argv[2]))
got = [r for r in rows if r["step"] == want["step"]][-1]
for key in ("loss", "grad_norm"):
    if abs(got[key] - want[key]) > 1e-6 * abs(want[key]):
        sys.exit(f"{sys.argv[3]}: step {want['step']} {key} {got[key]!r}, the old version logged {want[key]!r}")
print(f"{sys.argv[3]}: step {want['step']} loss {got['loss']}, grad_norm {got['grad_norm']} "
      f"(the old version: {want['loss']}, {want['grad_norm']})")
PY
done
