#!/usr/bin/env bash
# scripts/gpu_check.sh's speed part without a GPU, on a bundle of stand-in programs: a variant
# table of two ops (gpu_mixers --list-variants), test programs that fail for one variant,
# comparisons that fail for another, times that make opa:fast and opb:quick the winners, a
# combined check that fails so that only the better one (opa:fast) is kept, step_bench runs
# with the defaults and the winners, ncu and racecheck on the winners. The part must pick
# exactly that, pass despite the failing variants, and write speed.json and speed.txt; then,
# with a variant check that hangs and a short GPU_CHECK_SPEED_LIMIT, cut at the deadline, the
# rest reported as not run and the part failed (the defaults' step did not run); last, the same
# hang with GPU_CHECK_SPEED_RESERVE: cut that much earlier, and the defaults' step run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bundle/bin" "$work/dist" "$work/out" "$work/tools"
cd "$work/bundle/bin"
cat >gpu_mixers <<'EOF'
#!/bin/sh
# variant -> forward and backward ms (the defaults: 10 + 10); wrongcmp is fast but wrong
ms() { case $1 in fast) echo "8 8" ;; wrongcmp) echo "5 5" ;; slow) echo "11 11" ;; quick) echo "9 9" ;; *) echo "10 10" ;; esac; }
case $1 in
--list-variants)
    echo "opa mixa test_gpu_a opa_kernel base fast broken wrongcmp"
    echo "opb mixb test_gpu_b opb_(x|y) base slow quick"
    exit 0 ;;
--compare)
    spec=$2 rc=0
    echo "compare-args $*"
    for item in $(echo "$spec" | tr , ' '); do
        op=${item%%:*} v=${item#*:}
        bench=mixa; [ "$op" = opb ] && bench=mixb
        set -- $(ms "$v")
        verdict=ok; err=1e-3
        [ "$v" = wrongcmp ] && { verdict=FAIL; err=2e-1; rc=1; }
        echo "compare op=$bench spec=$spec shape=4x4096x4x128x256 base_fwd_ms=10 base_bwd_ms=10 fwd_ms=$1 bwd_ms=$2 err=$err tol=3e-2 $verdict"
    done
    exit $rc ;;
*) echo "mixers $* variant=${ROTOR_KERNEL_VARIANT:-}" ;;
esac
EOF
cat >test_gpu_a <<'EOF'
#!/bin/sh
echo "test_a small=${ROTOR_GPU_TEST_SMALL:-0} variant=$ROTOR_KERNEL_VARIANT"
case $ROTOR_KERNEL_VARIANT in *broken*) echo "  x err=1 tol=1e-2 FAIL"; echo "FAIL x"; exit 1 ;; esac
[ "$ROTOR_KERNEL_VARIANT" = "${STANDIN_HANG:-none}" ] && exec sleep 60
echo "  x err=1e-3 tol=1e-2 ok"; echo "ok   x (0.1s)"
EOF
cat >test_gpu_b <<'EOF'
#!/bin/sh
echo "test_b small=${ROTOR_GPU_TEST_SMALL:-0} variant=$ROTOR_KERNEL_VARIANT"
case $ROTOR_KERNEL_VARIANT in *fast*quick* | *quick*fast*) echo "FAIL together"; exit 1 ;; esac
echo "ok   y (0.1s)"
EOF
cat >step_bench <<'EOF'
#!/bin/sh
echo "step_bench $* variant=${ROTOR_KERNEL_VARIANT:-}"
while [ "$1" != --json ]; do shift; done
ms=100; [ -n "${ROTOR_KERNEL_VARIANT:-}" ] && ms=80
printf '{"device": "stand-in", "configs": [{"config": "configs/gla-370m-selective-pg.ini", "micro_batch": 4, "seq_len": 4096, "step_ms": %s, "tokens_per_s": %s, "mfu": 0.25}]}\n' \
    "$ms" "$((16384000 / ms))" >"$2"
EOF
for f in cli_errors.sh gpu_e2e.sh rotor; do printf '#!/bin/sh\necho ok\n' >"$f"; done
cp "$root/bench/ncu_table.py" .
chmod +x ./*
tar -C "$work/bundle" -cJf "$work/dist/rotor-gpu.tar.xz" .
cat >"$work/tools/ncu" <<EOF
#!/bin/sh
case " \$* " in
*" --import "*) cat "$root/tests/data/ncu_raw_sample.csv" ;;
*) echo "ncu \$*"; while [ "\$1" != --force-overwrite ]; do shift; done; shift; exec "\$@" ;;
esac
EOF
printf '#!/bin/sh\necho "sanitizer $*"\nwhile [ "${1#--}" != "$1" ]; do shift 2; done\nexec "$@"\n' >"$work/tools/compute-sanitizer"
chmod +x "$work/tools/"*
fail() { echo "FAIL: $1"; exit 1; }
# run_speed N [VAR=VALUE...]: the speed part on the stand-ins with $work/outN as OUT and its
# output in $work/logN, the exit status in rc
run_speed() {
    local n=$1
    shift
    mkdir -p "$work/out$n"
    rc=0
    env PATH="$work/tools:$PATH" GPU_CHECK_PARTS=speed OUT="$work/out$n" "$@" \
        "$root/scripts/gpu_check.sh" run "$work/dist" >"$work/log$n" 2>&1 || rc=$?
}

run_speed ""
log="$work/out/gpu_check.log" # what the programs printed
sed -n '/^op  *variant/,/^ratio:/p' "$work/log"
[ "$rc" = 0 ] || { cat "$work/log"; fail "exit status $rc, expected 0 (failing variants are results)"; }
# every variant but the defaults was checked, in small mode, and compared if its check passed
for v in opa:fast opa:broken opa:wrongcmp opb:slow opb:quick; do
    grep -q "^== check_$v$" "$log" || fail "no check of $v"
done
grep -q "^test_a small=1 variant=opa:fast$" "$log" || fail "the check not in small mode with its variant"
grep -q "^== compare_opa:broken$" "$log" && fail "opa:broken compared after failing its test"
grep -q "^compare-args --compare opa:fast --reps 10$" "$log" || fail "opa:fast not compared with 10 repetitions"
# the combined check failed, so only the better winner is kept
grep -q "^test_b small=1 variant=opa:fast,opb:quick$" "$log" || fail "the winners not checked together"
grep -q "^speed: the winners fail together; keeping opa:fast alone$" "$log" || fail "no fallback to the best winner"
grep -q "^speed: winners opa:fast$" "$log" || fail "winners: $(grep '^speed: winners' "$log")"
grep -q "^step_bench --steps 2 --profile --json .*speed_step_default.json configs/gla-370m-selective-pg.ini configs/gdn-370m-selective-pg.ini configs/fox-370m-selective-pg.ini variant=$" "$log" ||
    fail "no default step_bench of the three 370M configs"
grep -q "^step_bench .*speed_step_winners.json .* variant=opa:fast$" "$log" || fail "no step_bench with the winners"
grep -q "^step_bench --steps 2 --shape 4096x8 .* variant=opa:fast$" "$log" || fail "no micro-batch 8 step with the winners"
grep -q "^ncu --clock-control none --kernel-name regex:opa_kernel .*gpu_mixers --reps 1 --ops mixa$" "$log" ||
    fail "ncu not on the winners' kernels: $(grep '^ncu' "$log")"
grep -q "^sanitizer --tool racecheck --error-exitcode 3 .*/test_gpu_a$" "$log" || fail "no racecheck of the winners' test"
grep -q "^test_a small=1 variant=opa:fast$" "$log" || fail "racecheck not in small mode"
# the record
python3 - "$work/out/speed.json" <<'PY' || fail "speed.json"
import json, sys
r = json.load(open(sys.argv[1]))
v = {(x["op"], x["variant"]): x for x in r["variants"]}
assert r["winners"] == "opa:fast", r["winners"]
assert r["combined_check_rc"] == "1", r["combined_check_rc"]
assert v["opa", "fast"]["correct"] and abs(v["opa", "fast"]["ratio"] - 0.8) < 1e-9
assert v["opa", "broken"]["check_rc"] == "1" and not v["opa", "broken"]["correct"]
assert v["opa", "wrongcmp"]["compare_rc"] == "1" and not v["opa", "wrongcmp"]["correct"]
assert v["opb", "slow"]["correct"] and v["opb", "slow"]["ratio"] > 1
assert r["steps"]["default"]["configs"][0]["step_ms"] == 100
assert r["steps"]["winners"]["configs"][0]["step_ms"] == 80
PY
row() { grep -E "^$1 +$2 " "$work/out/speed.txt" | tr -s ' '; }
[ "$(row opa broken)" = "opa broken mixa FAILED its test (exit 1) - - - -" ] || fail "table: $(row opa broken)"
[ "$(row opa wrongcmp)" = "opa wrongcmp mixa FAILED the comparison (exit 1) 6.667 20.000 10.000 0.500" ] ||
    fail "table: $(row opa wrongcmp)"
[ "$(row opb quick)" = "opb quick mixb correct 0.033 20.000 18.000 0.900" ] || fail "table: $(row opb quick)"
grep -q "^configs/gla-370m-selective-pg.ini  *4x4096  *100.0 / 163840 / 25.0%  *80.0 / 204800 / 25.0% .* 0.800$" "$work/out/speed.txt" ||
    fail "step table: $(grep '^configs/gla' "$work/out/speed.txt")"
echo "ok: the speed part checks, compares, picks, steps and profiles the winners"

# a variant check that hangs, under a short limit: cut at the deadline, the rest not run
run_speed 2 GPU_CHECK_SPEED_LIMIT=14 GPU_CHECK_SPEED_RESERVE=0 STANDIN_HANG=opa:fast
[ "$rc" = 1 ] || { cat "$work/log2"; fail "deadline: exit status $rc, expected 1"; }
grep -q "^FAIL check_opa:fast: timed out after 1[0-4] s$" "$work/out2/gpu_check.log" || fail "the hanging check not cut at the deadline"
python3 - "$work/out2/speed.json" <<'PY' || fail "speed.json after the deadline"
import json, sys
r = json.load(open(sys.argv[1]))
v = {(x["op"], x["variant"]): x for x in r["variants"]}
assert v["opa", "fast"]["check_rc"] == "124", v["opa", "fast"]
assert v["opb", "quick"]["check_rc"] == "not-run", v["opb", "quick"]
assert r["winners"] == "", r["winners"]
PY
grep -Eq "^speed_step_default +NOT RUN" "$work/log2" || fail "the defaults' step not reported as not run"
echo "ok: the speed part's deadline"

# the same hang with time kept back for the steps: the checks cut GPU_CHECK_SPEED_RESERVE
# seconds before the deadline, the rest not run, the defaults' step run and the part passed
run_speed 3 GPU_CHECK_SPEED_LIMIT=30 GPU_CHECK_SPEED_RESERVE=16 STANDIN_HANG=opa:fast
[ "$rc" = 0 ] || { cat "$work/log3"; fail "reserve: exit status $rc, expected 0"; }
grep -q "^FAIL check_opa:fast: timed out after 1[0-4] s$" "$work/out3/gpu_check.log" ||
    fail "the hanging check not cut at the reserve: $(grep 'check_opa:fast' "$work/out3/gpu_check.log")"
grep -q "^step_bench .*speed_step_default.json .* variant=$" "$work/out3/gpu_check.log" ||
    fail "the defaults' step did not run in the reserved time"
python3 - "$work/out3/speed.json" <<'PY' || fail "speed.json with the reserve"
import json, sys
r = json.load(open(sys.argv[1]))
v = {(x["op"], x["variant"]): x for x in r["variants"]}
assert v["opa", "fast"]["check_rc"] == "124", v["opa", "fast"]
assert v["opb", "quick"]["check_rc"] == "not-run", v["opb", "quick"]
assert r["steps"]["default"]["configs"][0]["step_ms"] == 100, r["steps"]
PY
echo "ok: the speed part keeps the steps' time back"
