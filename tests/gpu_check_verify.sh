#!/usr/bin/env bash
# scripts/gpu_check.sh's verify part without a GPU: a bundle of stand-in programs (the op
# table's runner given the bundle's refs file, one passing and one failing with comparisons, one
# hanging, and stand-ins for cli_errors, gpu_e2e and step_bench) run under a short GPU_CHECK_VERIFY_LIMIT. The summary table must give each its
# result, tests, worst err/tol and seconds; the hang must be cut at the part's deadline, the
# programs after it reported as not run, and the exit status must say the part failed.
# Then the tests part under a stand-in compute-sanitizer (racecheck): the programs in
# GPU_CHECK_TESTS's order (one with a test-name filter), in small mode, test_gpu_comm without
# NCCL's API errors, and GPU_CHECK_TESTS_LIMIT ending the part. Then the ncu part under a
# stand-in ncu whose report is tests/data/ncu_raw_sample.csv: bench/ncu_table.py's table. Last
# the repro part with a stand-in reproduce.sh: the bundle's results store given, the runs
# packed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bundle/bin" "$work/bundle/configs" "$work/dist" "$work/out"
cd "$work/bundle/bin"
printf '#!/bin/sh\necho "small=${ROTOR_GPU_TEST_SMALL:-0}"\necho "  a err=1e-5 tol=1e-4 ok"\necho "  b err=5e-3 tol=1e-2 ok"\necho "ok   a (0.1s)"\necho "ok   b (0.1s)"\n' >test_gpu_a
printf '#!/bin/sh\necho "  q err=3e-2 tol=1e-2 FAIL"\necho "FAIL q (1 checks failed, 0.1s)"\nexit 1\n' >test_gpu_b
printf '#!/bin/sh\necho "ok   z (0.1s)"\nexec sleep 60\n' >test_gpu_c
printf '#!/bin/sh\necho "small=${ROTOR_GPU_TEST_SMALL:-0} filter=$*"\necho "ok   c (0.1s)"\n' >test_gpu_comm
printf '#!/bin/sh\necho "refs=$1"\necho "    cpu-f32 err=2e-1 tol=1"\necho "ok   matmul_bias (0.1s)"\n' >test_ops_backends
printf '#!/bin/sh\necho ok cli\n' >cli_errors.sh
cp cli_errors.sh gpu_e2e.sh
cp cli_errors.sh step_bench
printf '#!/bin/sh\necho "mixers $*"\n' >gpu_mixers
cp "$root/bench/ncu_table.py" .
mkdir -p ../root/scripts ../root/results/reproduce/fig7-mqar/cpu
cat >../root/scripts/reproduce.sh <<'EOF'
#!/bin/sh
echo "reproduce $*"
while [ "$1" != --out ]; do shift; done
mkdir -p "$2/runs/a" && touch "$2/runs/a.done" "$2/runs/a/synth_results.json"
EOF
chmod +x ../root/scripts/reproduce.sh
touch rotor
chmod +x ./*
tar -C "$work/bundle" -cJf "$work/dist/rotor-gpu.tar.xz" .
rc=0
GPU_CHECK_PARTS=verify GPU_CHECK_VERIFY_LIMIT=14 OUT="$work/out" \
    "$root/scripts/gpu_check.sh" run "$work/dist" >"$work/log" 2>&1 || rc=$?
sed -n '/^---- summary/,$p' "$work/log"
fail() { echo "FAIL: $1"; exit 1; }
[ "$rc" = 1 ] || fail "exit status $rc, expected 1"
row() { grep -E "^$1 " "$work/log" | tail -1 | tr -s ' '; }
[ "$(row test_ops_backends)" = "test_ops_backends passed 1 0 0.200 0" ] || fail "test_ops_backends: $(row test_ops_backends)"
grep -q '^refs=.*/bin/ops_refs.bin$' "$work/log" || fail "test_ops_backends not given the bundle's refs file"
[ "$(row test_gpu_a)" = "test_gpu_a passed 2 0 0.500 0" ] || fail "test_gpu_a: $(row test_gpu_a)"
[ "$(row test_gpu_b)" = "test_gpu_b FAILED 1 1 3.000 0" ] || fail "test_gpu_b: $(row test_gpu_b)"
[[ "$(row test_gpu_c)" =~ ^"test_gpu_c TIMED OUT 1 0 - "1[0-5]$ ]] || fail "test_gpu_c: $(row test_gpu_c)"
for p in cli_errors gpu_e2e gpu_step; do
    [ "$(row "$p")" = "$p NOT RUN - - - 0" ] || fail "$p: $(row "$p")"
done
[ -s "$work/out/gpu_check.log" ] || fail "no gpu_check.log in \$OUT"
grep -q '^small=0$' "$work/log" || fail "verify ran in small mode"
echo "ok: verify's summary and deadline"

# the tests part under racecheck, with a stand-in sanitizer that names its arguments
mkdir -p "$work/san" "$work/out2"
printf '#!/bin/sh\necho "sanitizer $*"\nwhile [ "${1#--}" != "$1" ]; do shift 2; done\nexec "$@"\n' >"$work/san/compute-sanitizer"
chmod +x "$work/san/compute-sanitizer"
rc=0
PATH="$work/san:$PATH" GPU_CHECK_PARTS=tests GPU_CHECK_SANITIZER=racecheck GPU_CHECK_TESTS_LIMIT=14 \
    GPU_CHECK_TESTS="test_gpu_comm:zero test_gpu_[ab] test_gpu_c" OUT="$work/out2" \
    "$root/scripts/gpu_check.sh" run "$work/dist" >"$work/log2" 2>&1 || rc=$?
sed -n '/^---- summary/,$p' "$work/log2"
[ "$rc" = 1 ] || fail "tests part: exit status $rc, expected 1"
order=$(grep -E '^== ' "$work/log2" | tr '\n' ' ')
[ "$order" = "== test_gpu_comm:zero == test_gpu_a == test_gpu_b == test_gpu_c == cli_errors " ] ||
    fail "tests part: order $order"
grep -q "^sanitizer --tool racecheck --error-exitcode 3 --report-api-errors no .*/test_gpu_comm zero$" "$work/log2" ||
    fail "test_gpu_comm not run without API errors, on its tests named zero"
grep -q "^small=1 filter=zero$" "$work/log2" || fail "test_gpu_comm's filter not passed"
grep -q "^sanitizer --tool racecheck --error-exitcode 3 .*/bin/test_gpu_a$" "$work/log2" ||
    fail "test_gpu_a not run under the sanitizer"
[ "$(grep -c '^small=1' "$work/log2")" = 2 ] || fail "racecheck not in small mode"
log2row() { grep -E "^$1 " "$work/log2" | tail -1 | tr -s ' '; }
[[ "$(log2row test_gpu_c)" =~ ^"test_gpu_c TIMED OUT 1 0 - "1[0-5]$ ]] || fail "test_gpu_c: $(log2row test_gpu_c)"
[ "$(log2row cli_errors)" = "cli_errors NOT RUN - - - 0" ] || fail "cli_errors: $(log2row cli_errors)"
echo "ok: the tests part's order, small mode, NCCL's API errors and deadline"

# the ncu part: the profile of gpu_mixers, then its raw page through bench/ncu_table.py
mkdir -p "$work/out3"
cat >"$work/san/ncu" <<EOF
#!/bin/sh
case " \$* " in
*" --import "*) cat "$root/tests/data/ncu_raw_sample.csv" ;;
*) echo "ncu \$*"; while [ "\$1" != --force-overwrite ]; do shift; done; shift; exec "\$@" ;;
esac
EOF
chmod +x "$work/san/ncu"
rc=0
PATH="$work/san:$PATH" GPU_CHECK_PARTS=ncu OUT="$work/out3" "$root/scripts/gpu_check.sh" run "$work/dist" \
    >"$work/log3" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$work/log3"; fail "ncu part: exit status $rc"; }
grep -q '^ncu --clock-control none --kernel-name regex:gla_|gdn_|fox_|selrope_ .*--section WarpStateStats' "$work/log3" ||
    fail "ncu part: not profiled with the clocks as found and the mixers' kernels"
grep -q '^mixers --reps 1$' "$work/log3" || fail "ncu part: gpu_mixers not run once"
row3() { grep -E "^$1 " "$work/log3" | tr -s ' '; }
[ "$(row3 gla_bwd_dqdk_kernel)" = "gla_bwd_dqdk_kernel 3 1100.0 3.30 41 - - - - - 168 - - barrier=3.4 long_scoreboard=1.3" ] ||
    fail "ncu table: $(row3 gla_bwd_dqdk_kernel)"
[ "$(row3 gla_scan_kernel)" = "gla_scan_kernel 1 50.0 0.05 5 - - - - - 32 - - long_scoreboard=9.0 wait=2.0" ] ||
    fail "ncu table: $(row3 gla_scan_kernel)"
cmp -s "$work/out3/ncu-mixers.csv" "$root/tests/data/ncu_raw_sample.csv" || fail "ncu part: no raw CSV in \$OUT"
echo "ok: the ncu part's profile and table"

# the repro part: reproduce.sh with the bundle's results store, the finished runs packed
mkdir -p "$work/out4"
rc=0
GPU_CHECK_PARTS=repro OUT="$work/out4" "$root/scripts/gpu_check.sh" run "$work/dist" >"$work/log4" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$work/log4"; fail "repro part: exit status $rc"; }
grep -q "^reproduce fig7-mqar --scale cpu --train-only --jobs 8 --rotor .*/bin/rotor --out .*/repro/fig7-mqar --results .*/root/results/reproduce/fig7-mqar/cpu --set run.device=cuda$" "$work/log4" ||
    fail "repro part: $(grep '^reproduce' "$work/log4")"
grep -q "^fig7-mqar: 1 runs finished" "$work/log4" || fail "repro part: the finished runs not counted"
tar -tJf "$work/out4/repro-fig7-mqar.tar.xz" | grep -q "^runs/a.done$" || fail "repro part: no runs/a.done packed"
echo "ok: the repro part takes the bundle's results store and packs the runs"
# the same at paper scale, narrowed to some runs: the paper-scale store, --only passed on
rc=0
GPU_CHECK_PARTS=repro GPU_CHECK_REPRO_SCALE=paper GPU_CHECK_REPRO_ONLY='zoology.*-seed0$' OUT="$work/out4" \
    "$root/scripts/gpu_check.sh" run "$work/dist" >"$work/log5" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$work/log5"; fail "repro part at paper scale: exit status $rc"; }
grep -q "^reproduce fig7-mqar --scale paper --train-only --jobs 8 --rotor .*/bin/rotor --out .*/repro/fig7-mqar --results .*/root/results/reproduce/fig7-mqar/paper --set run.device=cuda --only zoology\.\*-seed0\$$" "$work/log5" ||
    fail "repro part at paper scale: $(grep '^reproduce' "$work/log5")"
echo "ok: the repro part at paper scale, narrowed by GPU_CHECK_REPRO_ONLY"
