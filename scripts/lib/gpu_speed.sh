# The speed part of scripts/gpu_check.sh (docs/gpu.md "Kernel variants"), sourced by its
# run_bundle, whose limited, dir, log, rcfile, deadline and failed it uses. In at most
# GPU_CHECK_SPEED_LIMIT seconds (default 480), for every op of the variant table
# (gpu_mixers --list-variants) and each of its variants but the default:
#   1. the op's GPU test program with ROTOR_KERNEL_VARIANT=op:variant, against the CPU
#      reference (small mode unless GPU_CHECK_SPEED_SMALL=0: two segment layouts a case,
#      every kernel configuration);
#   2. gpu_mixers --compare op:variant: the variant against the default kernels at the 370M
#      shapes on the GPU itself (catches shape-specific bugs) and both timed
#      (GPU_CHECK_SPEED_REPS repetitions, default 10);
# these two stop GPU_CHECK_SPEED_RESERVE seconds (default 150) before the deadline, the variants
# not reached reported as not run, so that the steps below keep their time;
# then the winners (scripts/lib/speed_pick.py: per op the fastest correct variant, if faster by
# more than GPU_CHECK_SPEED_MARGIN, default 0.02) checked together once more (both steps with
# the combined spec; on a failure only the single best winner is kept); bench/step_bench
# --profile on the GLA, GDN and FoX 370M configs with the defaults and with the winners, and
# GLA at micro-batch 8 x 4096 with them; and while time is left, Nsight Compute on the
# winners' kernels and racecheck (small mode) on their test programs. A variant that fails
# is a result, not a failure of the part: the part fails only when a step with the defaults
# fails. $OUT gets speed.json (every result) and speed.txt (the table, also in the log).
speed_part() {
    local out=${OUT:-$(mktemp -d)} res op bench test kernels variants v spec rc_check rc_cmp line
    local winners combined="" keep=$failed
    res="$out/speed.tsv"
    : >"$res"
    deadline=$(($(date +%s) + ${GPU_CHECK_SPEED_LIMIT:-480}))
    local small=(env ROTOR_GPU_TEST_SMALL="${GPU_CHECK_SPEED_SMALL:-1}")
    # one run of COMMAND under limited, its exit status (not-run when skipped) on stdout
    status_of() {
        echo not-run >"$rcfile"
        limited "$@" >/dev/null </dev/null
        cat "$rcfile"
    }
    if ! "$dir/bin/gpu_mixers" --list-variants >"$out/speed_variants.txt"; then
        echo "FAIL speed: gpu_mixers --list-variants" | tee -a "$log"
        failed=1
        return
    fi
    # the variants' checks stop GPU_CHECK_SPEED_RESERVE seconds (default 150) before the
    # deadline, so that the 370M steps after them still run
    local full=$deadline
    deadline=$((full - ${GPU_CHECK_SPEED_RESERVE:-150}))
    while read -r op bench test kernels variants; do
        for v in ${variants#* }; do
            spec="$op:$v"
            rc_check=$(status_of 120 "check_$spec" "${small[@]}" ROTOR_KERNEL_VARIANT="$spec" "$dir/bin/$test")
            rc_cmp=not-run
            line=""
            if [ "$rc_check" = 0 ]; then
                rc_cmp=$(status_of 120 "compare_$spec" "$dir/bin/gpu_mixers" --compare "$spec" \
                    --reps "${GPU_CHECK_SPEED_REPS:-10}")
                line=$(grep -E "^compare op=$bench spec=$spec " "$log" | tail -1 || true)
            fi
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$op" "$v" "$bench" "$rc_check" "$rc_cmp" "$line" >>"$res"
        done
    done < <(grep -v '^ ' "$out/speed_variants.txt")
    failed=$keep
    local pick=(python3 "$root/scripts/lib/speed_pick.py" pick "$res" --margin "${GPU_CHECK_SPEED_MARGIN:-0.02}")
    winners=$("${pick[@]}" 2> >(tee -a "$log" >&2))
    # several winners: checked together (tests and comparison), else the best one alone
    if [[ $winners == *,* ]]; then
        combined=0
        local tests
        tests=$(awk -v w=",$winners," 'index(w, "," $1 ":") {print $3}' "$out/speed_variants.txt" | sort -u)
        for test in $tests; do
            [ "$(status_of 120 "check_combined_$test" "${small[@]}" ROTOR_KERNEL_VARIANT="$winners" "$dir/bin/$test")" = 0 ] || combined=1
        done
        [ "$(status_of 120 compare_combined "$dir/bin/gpu_mixers" --compare "$winners" --reps "${GPU_CHECK_SPEED_REPS:-10}")" = 0 ] || combined=1
        failed=$keep
        if [ "$combined" != 0 ]; then
            winners=$("${pick[@]}" --single 2>/dev/null)
            echo "speed: the winners fail together; keeping $winners alone" | tee -a "$log"
        fi
    fi
    deadline=$full
    echo "speed: winners ${winners:-none}" | tee -a "$log"
    # the 370M steps with the defaults, then with the winners; a default step that fails fails the part
    cd "$dir"
    local steps=(--step "default=$out/speed_step_default.json")
    limited 200 speed_step_default bin/step_bench --steps "${GPU_CHECK_SPEED_STEPS:-2}" --profile \
        --json "$out/speed_step_default.json" "${configs_370m[@]:0:3}"
    if [ -n "$winners" ]; then
        keep=$failed
        limited 200 speed_step_winners env ROTOR_KERNEL_VARIANT="$winners" bin/step_bench \
            --steps "${GPU_CHECK_SPEED_STEPS:-2}" --profile --json "$out/speed_step_winners.json" \
            "${configs_370m[@]:0:3}"
        steps+=(--step "winners=$out/speed_step_winners.json")
    fi
    # micro-batch 8 x 4096 fits (docs/gpu.md "Memory")
    limited 120 speed_step_mb8 env ROTOR_KERNEL_VARIANT="$winners" bin/step_bench --steps 2 \
        --shape 4096x8 --json "$out/speed_step_mb8.json" "${configs_370m[0]}"
    steps+=(--step "mb8=$out/speed_step_mb8.json")
    cd - >/dev/null
    if [ -n "$winners" ]; then
        local ncu regex
        ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1 || true)
        regex=$(awk -v w=",$winners," 'index(w, "," $1 ":") {printf "%s%s", n++ ? "|" : "", $4}' "$out/speed_variants.txt")
        if [ -n "$ncu" ]; then
            local rep ops
            rep="$(mktemp -d)/speed"
            ops=$(awk -v w=",$winners," 'index(w, "," $1 ":") {print $2}' "$out/speed_variants.txt" | sort -u | paste -sd,)
            limited 120 speed_ncu env ROTOR_KERNEL_VARIANT="$winners" "$ncu" --clock-control none \
                --kernel-name "regex:$regex" --section SpeedOfLight --section Occupancy \
                --section LaunchStats --section WarpStateStats --export "$rep" --force-overwrite \
                "$dir/bin/gpu_mixers" --reps 1 --ops "$ops"
            limited 60 speed_ncu_table bash -c '"$1" --import "$2.ncu-rep" --csv --page raw --print-units base >"$3" &&
                python3 "$4" "$3"' _ "$ncu" "$rep" "$out/speed_ncu.csv" "$dir/bin/ncu_table.py"
        else
            echo "speed: no ncu on this machine" | tee -a "$log"
        fi
        for test in $(awk -v w=",$winners," 'index(w, "," $1 ":") {print $3}' "$out/speed_variants.txt" | sort -u); do
            limited 150 "speed_racecheck_$test" env ROTOR_GPU_TEST_SMALL=1 ROTOR_KERNEL_VARIANT="$winners" \
                compute-sanitizer --tool racecheck --error-exitcode 3 "$dir/bin/$test"
        done
        failed=$keep
    fi
    deadline=0
    python3 "$root/scripts/lib/speed_pick.py" report "$res" --json "$out/speed.json" \
        --table "$out/speed.txt" --winners "$winners" --combined "$combined" "${steps[@]}" | tee -a "$log"
}
