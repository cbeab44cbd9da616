#!/usr/bin/env bash
# GPU verification: every CUDA kernel against its CPU reference (tests/gpu/test_gpu_*), a
# tiny model trained on both backends, the training-step benchmark of the 370M configs
# (tokens/s, MFU, peak memory), the mixer kernels against flash-linear-attention's
# (bench/gpu_mixers, bench/fla_mixers.py), and `rotor` end to end (scripts/gpu_e2e.sh:
# training under mpirun with NCCL, resume, zero-shot eval on GPU against CPU); ends with a
# short table. On request (part flastep) also fla's own 370M models' training step
# (bench/fla_step.py) against step_bench's, and (part decode) prefill and decoding of the 370M
# configs (bench/decode_bench) against fla's models' (bench/fla_generate.py). docs/gpu.md
# records the results.
#
#   scripts/gpu_check.sh          build for sm_90a and run, on a machine with a GPU and
#                                 the build dependencies (scripts/setup.sh)
#   scripts/gpu_check.sh bundle   build here and pack the programs, the shared libraries
#                                 they need beyond the CUDA toolkit's, Open MPI's runtime
#                                 (mpirun), the configs and ../shared/data's tokenizer, eval
#                                 tasks and text, and the fla-core and flash-linear-attention
#                                 wheels for the fla baselines into
#                                 .gpu_bundle/rotor-gpu.tar.xz (for a GPU machine without
#                                 Debian's packages or network; about 40 MB)
#   scripts/gpu_check.sh run [DIR]  unpack and run a bundle (default .gpu_bundle) there
#
# Exit status 0 only if every test passed. With $OUT set, the full log is written there
# (gpu_check.log) as the checks run.
# GPU_CHECK_PARTS (default "tests step bench e2e") runs only some parts: the kernel tests,
# the 370M step benchmark (Selective RoPE configs with their op profile, JSON in $OUT, the
# GLA and GDN ones also at 16384 x 1, and the NoPE configs), the mixer benchmark against
# fla, the end-to-end checks; and "flastep", in no default: the step of fla's GLA, GDN and
# FoX models at the same shapes, compared with step_bench's when "step" runs with it
# (GPU_CHECK_PARTS="step flastep"). Triton compiles and autotunes fla's kernels for minutes
# (more than 5 for GLA alone on an H100): GPU_CHECK_FLA_MODELS (default gla,gdn,fox) and
# GPU_CHECK_FLA_LIMIT (seconds, default 540) fit it into a time limit. "decode", in no
# default either: bench/decode_bench on the GLA, GDN and FoX Selective RoPE and NoPE configs
# (prefill of 1k to 32k tokens at batch 1, decoding at batch 1 and 64, against recomputing
# the prefix per token; JSON in $OUT), and bench/fla_generate.py on fla's models at the same
# shapes (GPU_CHECK_FLA_MODELS and GPU_CHECK_FLA_LIMIT apply), with a table of the ratios.
# "rnn", in no default: the nonlinear RNN cells at the nnRNN paper's shapes
# (configs/paper/nnrnn, the fixed-hidden-units rows: copy, psMNIST and PTB characters at truncation 150), step_bench's step
# with its op profile against PyTorch's (bench/torch_rnn_step.py: the authors' per-token loop
# and cuDNN's LSTM), to measure the persistent recurrence kernels of kernels/ops/rnn.cu.
# "speed", in no default: the first thing on a GPU machine (docs/gpu.md "Kernel variants"):
# every kernel variant of the variant table checked against the CPU reference (its test
# program) and against the default kernels at the 370M shapes (bench/gpu_mixers --compare),
# timed, the fastest correct variant of each op picked, bench/step_bench --profile of the
# 370M configs with the winners against the defaults, then ncu and racecheck on the winners,
# in at most GPU_CHECK_SPEED_LIMIT seconds (default 480); speed.json and speed.txt in $OUT
# (scripts/lib/gpu_speed.sh says more).
# "verify", in no default: after speed on a GPU machine for a short time (docs/gpu.md "A short time on a GPU machine"),
# the op table on the GPU (tests/test_ops_backends.c against the fp64 results test_ops_grad --refs
# wrote when the bundle was made), every kernel test program (GPU_CHECK_TESTS narrows them to the changed kernels' programs), cli_errors and gpu_e2e, and one profiled GLA-370M step, in at most
# GPU_CHECK_VERIFY_LIMIT seconds (default 360; each program under its own limit too).
# The summary is one table: each program, passed or not, its tests, its worst comparison
# (err/tol, > 1 fails) and its seconds.
# "ncu", in no default: bench/gpu_mixers (the 370M shapes, one repetition) under Nsight
# Compute with the clocks as found, the kernels of GLA, GDN, FoX and Selective RoPE
# (GPU_CHECK_NCU_KERNELS, a regular expression on their names, narrows it); bench/ncu_table.py
# prints one line per kernel (time, throughputs, tensor pipe, occupancy, stalls) and the raw
# CSV goes to $OUT/ncu-mixers.csv.
# "multirank", in no default: tests/dist_train.sh's data-parallel equivalence and ZeRO-1
# resumption on the one GPU, 2 and 3 ranks summing through MPI and host memory
# (run.collectives = mpi).
# "repro", in no default: CPU-scale experiments of scripts/reproduce.sh trained on the GPU
# (run.device = cuda), GPU_CHECK_REPRO (default fig7-mqar) naming them, GPU_CHECK_REPRO_JOBS
# (default 8) runs at a time, each experiment in at most GPU_CHECK_REPRO_LIMIT seconds (480),
# GPU_CHECK_REPRO_SETS more SECTION.KEY=VALUE words for every run, GPU_CHECK_REPRO_SCALE
# (default cpu; paper: the paper-scale plan) and GPU_CHECK_REPRO_ONLY (reproduce.sh's --only
# REGEX, e.g. a few paper-scale runs that fit the time); the runs the results store
# holds finished (results/reproduce, carried in the bundle) are taken from it, the others
# trained; the finished runs come back
# as $OUT/repro-EXPERIMENT.tar.xz, drawn where matplotlib is with `scripts/reproduce.sh
# EXPERIMENT --report-only` (docs/reproduction.md, "Experiments on a GPU machine");
# GPU_CHECK_REPRO_DEVICE=cpu tries the part on a machine without a GPU.
# GPU_CHECK_TESTS (globs, default test_gpu_*) chooses the kernel test programs, run in the
# order given ("test_gpu_gla test_gpu_g[!l]*": gla first); PROGRAM:WORD runs only the
# program's tests whose name holds WORD ("test_gpu_gdn:deltanet").
# GPU_CHECK_SANITIZER=memcheck (or racecheck, synccheck, initcheck) runs the kernel tests
# under compute-sanitizer with that tool; GPU_CHECK_TESTS_LIMIT (seconds, default none) ends
# the part there, the programs not started reported as not run. Under racecheck the tests run
# in small mode (ROTOR_GPU_TEST_SMALL=1, tests/gpu/gpu_test.h: two segment layouts a case, no
# long cases; GPU_CHECK_SMALL=0 turns it off, =1 sets it for any tool).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-gpu"
configs_370m=(configs/gla-370m-selective-pg.ini configs/gdn-370m-selective-pg.ini
              configs/fox-370m-selective-pg.ini configs/deltanet-370m-selective-pg.ini)
# the same models without a position embedding, as fla's models are
configs_nope=(configs/gla-370m-nope.ini configs/gdn-370m-nope.ini configs/fox-370m-nope.ini
              configs/deltanet-370m-nope.ini)
# the fla baselines, pure Python wheels installed with --no-deps (the GPU machine has torch,
# triton, transformers and einops): fla-core (fla's ops and modules) for bench/fla_mixers.py,
# and flash-linear-attention (fla/layers, fla/models; requires fla-core of its own version
# and transformers >= 5.6.2, < 6) for bench/fla_step.py and bench/fla_generate.py
# shellcheck source=lib/gpu_speed.sh
. "$root/scripts/lib/gpu_speed.sh"
fla_version=0.6.0
fla_wheels=("fla-core==$fla_version" "flash-linear-attention==$fla_version")

# The CUTLASS kernel variants are built where their headers can be had (scripts/setup.sh
# --cutlass); without them the build goes on without those variants.
build_gpu() {
    local cutlass=OFF
    if (cd "$root" && scripts/setup.sh --cutlass); then
        cutlass=ON
    else
        echo "warning: no CUTLASS headers: the build has no swiglu_gemm:cutlass" >&2
    fi
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DROTOR_CUDA=ON \
          -DROTOR_CUDA_ARCHS=90a-real -DROTOR_NATIVE=OFF -DROTOR_SHARED_CORE=ON \
          -DROTOR_CUTLASS=$cutlass >/dev/null
    cmake --build "$build" -j"$(nproc)" --target rotor step_bench gpu_mixers decode_bench \
          test_ops_grad test_ops_backends $(cd "$root/tests/gpu" && ls test_gpu_*.c | sed 's/\.c$//')
}

# The op table's runner (tests/test_ops_backends.c) into $1/bin, with the fp64 results it
# compares with, written here on the CPU (test_ops_grad --refs: a second, without checks).
bundle_op_table() {
    cp "$build/tests/test_ops_backends" "$1/bin/"
    "$build/tests/test_ops_grad" --refs "$1/bin/ops_refs.bin" >/dev/null
}

# Open MPI's runtime (Debian's layout under the prefix $1/ompi, found there through
# OPAL_PREFIX and PMIx's component path, see run_bundle), so that `mpirun` runs on a
# machine without it.
bundle_openmpi() {
    local ompi="$1/ompi" libdir
    libdir="$(dirname "$(readlink -f "$(command -v orted)")")/../lib/$(gcc -print-multiarch)"
    mkdir -p "$ompi/bin" "$ompi/lib/$(gcc -print-multiarch)" "$ompi/share"
    cp "$(readlink -f "$(command -v orterun)")" "$ompi/bin/mpirun"
    cp "$(readlink -f "$(command -v orted)")" "$ompi/bin/orted"
    cp -a "$libdir/openmpi" "$libdir/pmix2" "$ompi/lib/$(gcc -print-multiarch)/"
    cp -a /usr/share/openmpi "$ompi/share/"
    rm -rf "$ompi"/lib/*/*/include "$ompi"/lib/*/*/lib/*.a "$ompi"/lib/*/openmpi/lib/*java*
}

# Downloads the fla wheels into $1 (wheels/ of a bundle); a failure only warns: the mixer
# benchmark then runs rotor's side alone, and fla_step skips.
fla_download() {
    mkdir -p "$1"
    python3 -m pip download -q --no-deps --timeout 30 --retries 1 -d "$1" "${fla_wheels[@]}" ||
        echo "warning: could not download ${fla_wheels[*]}; the bench and flastep parts will skip fla" >&2
}

# Unzips the fla wheels of $1/wheels onto $1/pylib (both hold parts of the package fla/;
# Python's zipfile: the GPU machine may lack unzip); fails without the fla-core wheel.
fla_pylib() {
    local w wheels=()
    for w in "$1"/wheels/fla_core-*.whl "$1"/wheels/flash_linear_attention-*.whl; do
        if [ -f "$w" ]; then wheels+=("$w"); fi
    done
    [[ ${wheels[*]:-} == *fla_core-* ]] || return 1
    python3 -c 'import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]' \
        "$1/pylib" "${wheels[@]}"
}

bundle() {
    build_gpu
    local dir shared="$root/../shared/data"
    dir="$(mktemp -d)"
    mkdir -p "$dir/bin" "$dir/lib" "$dir/configs/tiny" "$dir/data/text"
    cp "$build"/tests/test_gpu_* "$build/bench/step_bench" "$build/bench/gpu_mixers" \
       "$build/bench/decode_bench" "$build/rotor" "$root"/bench/fla_{mixers,step,generate,common}.py \
       "$root"/bench/{torch_rnn_step,ncu_table}.py "$root"/tests/reference/ref_{model,fast}.py "$dir/bin/"
    bundle_op_table "$dir"
    fla_download "$dir/wheels"
    cp "$root"/configs/tiny/*.ini "$dir/configs/tiny/"
    mkdir -p "$dir/configs/nnrnn" && cp "$root"/configs/paper/nnrnn/{copy,psmnist,ptb150,ptb300}-{nnrnn,exprnn,rnn_orth,rnn,lstm}.ini "$dir/configs/nnrnn/"
    cp "${configs_370m[@]/#/$root/}" "${configs_nope[@]/#/$root/}" "$dir/configs/"
    cp -r "$shared/tokenizer" "$shared/eval" "$dir/data/"
    cp "$shared"/text/*.txt "$dir/data/text/" # tiny Shakespeare, WikiText-2 (table3-lm at CPU scale)
    bundle_openmpi "$dir"
    # shared libraries beyond glibc, CUDA's and NCCL (the GPU machine has the toolkit, the
    # driver and NCCL; these are hundreds of MB)
    find "$dir/bin" "$dir/ompi" -type f \( -perm -u+x -o -name '*.so*' \) -exec ldd {} \; 2>/dev/null |
        awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | grep -Ev '/(openmpi|pmix2)/' |
        grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libcudart|libcublas[^/]*|libnccl)\.so' |
        while read -r lib; do cp -L "$lib" "$dir/lib/"; done
    cp "$root/scripts/gpu_e2e.sh" "$root"/tests/{cli_errors.sh,dist_train.sh,compare_checkpoints.py} "$dir/bin/"
    mkdir -p "$dir/bin/reference" && cp "$root/tests/reference/ref_safetensors.py" "$dir/bin/reference/"
    # scripts/reproduce.sh with its experiments and every config, as in the repository (part repro)
    mkdir -p "$dir/root/scripts" && cp -r "$root/configs" "$dir/root/"
    cp -r "$root"/scripts/{reproduce.sh,reproduce_runs.py,pe_variants.sh,lib,experiments} "$dir/root/scripts/"
    # the results store: a planned run it holds finished is taken from it, not trained again
    if [ -d "$root/results/reproduce" ]; then
        mkdir -p "$dir/root/results" && cp -r "$root/results/reproduce" "$dir/root/results/"
    fi
    # the commit the runs' provenance.json names (the bundle is no git checkout)
    git -C "$root" rev-parse HEAD > "$dir/root/COMMIT" 2>/dev/null || true
    if [[ -s $dir/root/COMMIT && -n $(git -C "$root" status --porcelain --untracked-files=no) ]]; then
        sed -i 's/$/-dirty/' "$dir/root/COMMIT"
    fi
    strip "$dir"/bin/test_gpu_* "$dir"/bin/{test_ops_backends,step_bench,gpu_mixers,decode_bench,rotor} "$dir"/lib/*
    rm -rf "$root/.gpu_bundle" && mkdir -p "$root/.gpu_bundle"
    XZ_OPT="-T0 -9" tar -C "$dir" -cJf "$root/.gpu_bundle/rotor-gpu.tar.xz" .
    rm -rf "$dir"
    du -h "$root/.gpu_bundle/rotor-gpu.tar.xz"
}

# The bench part's table from a log: per op, the forward and backward ms of rotor (the op=
# lines after "== gpu_mixers") and of fla (after "== fla_mixers"), and fla/rotor (> 1: rotor
# faster) for each and for their sum (each side's forward saves what its own backward
# reads); "-" where fla has no such op or did not run. Nothing without gpu_mixers lines.
mixer_table() {
    awk '
        function ratio(f, r) { return f == "" || r + 0 <= 0 ? "-" : sprintf("%.2fx", f / r) }
        function show(x) { return x == "" ? "-" : x }
        /^== / { prog = $2 }
        /^op=/ {
            delete kv
            for (i = 1; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
            o = kv["op"]
            if (prog == "gpu_mixers") {
                ops[++n] = o; shape[o] = kv["shape"]; rf[o] = kv["fwd_ms"]; rb[o] = kv["bwd_ms"]
            } else if (prog == "fla_mixers") {
                fshape[o] = kv["shape"]; ff[o] = kv["fwd_ms"]; fb[o] = kv["bwd_ms"]
            }
        }
        END {
            if (!n) exit
            printf "%-12s %-20s %10s %10s %10s %10s %8s %8s %8s\n", "mixer (ms)", "BxTxHxKxV",
                   "rotor fwd", "rotor bwd", "fla fwd", "fla bwd", "fwd f/r", "bwd f/r", "sum f/r"
            for (i = 1; i <= n; i++) {
                o = ops[i]
                if ((o in fshape) && fshape[o] != shape[o]) {
                    print "note: fla ran " o " at " fshape[o] ", not " shape[o] ": no ratio"
                    ff[o] = fb[o] = ""
                }
                fs = ff[o] == "" || fb[o] == "" ? "" : ff[o] + fb[o]
                printf "%-12s %-20s %10s %10s %10s %10s %8s %8s %8s\n", o, shape[o], rf[o],
                       rb[o], show(ff[o]), show(fb[o]), ratio(ff[o], rf[o]), ratio(fb[o], rb[o]),
                       ratio(fs, rf[o] + rb[o])
            }
            print "f/r: fla ms / rotor ms (> 1: rotor faster)"
        }' "$1"
}

# The flastep part's table from a log: per stack (gla, gdn, fox), the step ms and tokens/s of
# rotor with Selective RoPE (step_bench's line for configs/<stack>-370m-*.ini, after
# "== gpu_step"; fox-pro is no fla model) and without a position embedding (after
# "== gpu_step_nope"), of fla's own model (bench/fla_step.py's "fla_step model=<stack> ..."
# lines), and fla ms / rotor ms for both (> 1: rotor faster); "-" where rotor's side did not run, fla's FAIL
# or note (note=hopper-guard-bypassed: fla's GDN backward timed past its refusal, wrong
# gradients) in the last column. Nothing unless fla_step ran (its "== fla_step" header is in
# the log) and printed a model's line or FAIL.
step_table() {
    awk '
        function show(x) { return x == "" ? "-" : x }
        /^== / { prog = $2; if (prog == "fla_step") ran = 1 }
        # configs/gla-370m-selective-pg.ini   4 x 4096   152.1 ms   107709 tok/s  MFU ...
        prog == "gpu_step" && $3 == "x" && $6 == "ms" && $8 == "tok/s" {
            name = $1
            sub(/.*\//, "", name)
            if (name ~ /^(gla|gdn|fox)-[0-9]/) {
                s = substr(name, 1, 3); rshape[s] = $2 "x" $4; rms[s] = $5; rtok[s] = $7
            }
        }
        prog == "gpu_step_nope" && $3 == "x" && $6 == "ms" && $8 == "tok/s" {
            name = $1
            sub(/.*\//, "", name)
            if (name ~ /^(gla|gdn|fox)-[0-9]/) { s = substr(name, 1, 3); nms[s] = $5; ntok[s] = $7 }
        }
        /^fla_step / {
            delete kv
            for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
            s = kv["model"]; fshape[s] = kv["shape"]; fms[s] = kv["ms"]; ftok[s] = kv["tok_s"]
            fnote[s] = kv["note"]
        }
        prog == "fla_step" && /^FAIL (gla|gdn|fox):/ { s = substr($2, 1, 3); fnote[s] = "FAIL" }
        END {
            if (!ran) exit
            split("gla gdn fox", stacks, " ")
            rows = ""
            for (i = 1; i <= 3; i++) {
                s = stacks[i]
                if (!(s in fms) && !(s in fnote)) continue
                shape = (s in rshape) ? rshape[s] : fshape[s]
                r = "-"
                if ((s in rms) && rms[s] + 0 > 0 && fms[s] != "") {
                    if (fshape[s] == rshape[s]) r = sprintf("%.2fx", fms[s] / rms[s])
                    else rows = rows "note: fla ran " s " at " fshape[s] ", not " rshape[s] ": no ratio\n"
                }
                rn = "-"
                if ((s in nms) && nms[s] + 0 > 0 && fms[s] != "" && fshape[s] == rshape[s])
                    rn = sprintf("%.2fx", fms[s] / nms[s])
                rows = rows sprintf("%-6s %-8s %9s %11s %9s %11s %9s %11s %7s %7s  %s\n", s,
                                    show(shape), show(rms[s]), show(rtok[s]), show(nms[s]),
                                    show(ntok[s]), show(fms[s]), show(ftok[s]), r, rn, fnote[s])
            }
            if (rows == "") exit
            # (tok_s, not tok/s: the summary greps tok/s for the gpu_step lines)
            printf "%-6s %-8s %9s %11s %9s %11s %9s %11s %7s %7s  %s\n", "step", "BxT",
                   "sel ms", "sel tok_s", "nope ms", "nope tok_s", "fla ms", "fla tok_s",
                   "f/sel", "f/nope", "fla note"
            printf "%s", rows
            print "rotor with Selective RoPE + phase gate (sel) and without position embedding (nope, as the fla models);"
            print "f/sel, f/nope: fla ms / rotor ms (> 1: rotor faster)"
        }' "$1"
}

# The decode part's table from a log: per stack (gla, gdn, fox) and measurement (prefill of T
# tokens; decode at batch B after a prompt of P, S steps), the ms of rotor with Selective RoPE
# (sel) and without a position embedding (nope: the "prefill name=" and "decode name=" lines
# after "== decode_bench" of configs/<stack>-*-selective-pg and -nope; fox-pro is no fla
# model), of fla's model (after "== fla_generate"), and fla ms / rotor ms for both (> 1:
# rotor faster); "-" where a side did not run. Nothing without such lines.
decode_table() {
    awk '
        function ratio(f, r) { return f == "" || r + 0 <= 0 ? "-" : sprintf("%.2fx", f / r) }
        function show(x) { return x == "" ? "-" : x }
        /^== / { prog = $2 }
        /^(prefill|decode) name=/ && (prog == "decode_bench" || prog == "fla_generate") {
            delete kv
            for (i = 2; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
            n = kv["name"]
            if (prog == "fla_generate") {
                s = n; side = "fla"
            } else if (n ~ /^(gla|gdn|fox)-/ && n !~ /^fox-pro/) {
                s = substr(n, 1, 3); side = n ~ /nope/ ? "nope" : "sel"
            } else {
                next
            }
            what = $1 == "prefill" ? "T=" kv["T"] : "B=" kv["batch"] "/P=" kv["prompt"] "/S=" kv["steps"]
            row = s " " $1 " " what
            if (!(row in seen)) { seen[row] = 1; rows[++nr] = row }
            ms[row, side] = $1 == "prefill" ? kv["ms"] : kv["ms_step"]
        }
        END {
            if (!nr) exit
            printf "%-6s %-8s %-16s %10s %10s %10s %7s %7s\n", "stack", "what", "shape", "sel ms",
                   "nope ms", "fla ms", "f/sel", "f/nope"
            for (i = 1; i <= nr; i++) {
                r = rows[i]
                split(r, a, " ")
                printf "%-6s %-8s %-16s %10s %10s %10s %7s %7s\n", a[1], a[2], a[3], show(ms[r, "sel"]),
                       show(ms[r, "nope"]), show(ms[r, "fla"]), ratio(ms[r, "fla"], ms[r, "sel"]),
                       ratio(ms[r, "fla"], ms[r, "nope"])
            }
            print "prefill: ms of one row of T tokens; decode: ms per step of B rows after a prompt of P, S steps;"
            print "sel: rotor with Selective RoPE + phase gate, nope: without position embedding (as the fla models);"
            print "f/sel, f/nope: fla ms / rotor ms (> 1: rotor faster)"
        }' "$1"
}

# the kernel test programs of a bundle DIR that GPU_CHECK_TESTS names, in its order, each
# as PATH or PATH:WORD (its tests whose name holds WORD)
test_programs() {
    local pat word
    for pat in ${GPU_CHECK_TESTS:-test_gpu_*}; do
        word=""
        if [[ $pat == *:* ]]; then word=":${pat#*:}" pat=${pat%%:*}; fi
        for t in "$1"/bin/$pat; do [ ! -x "$t" ] || echo "$t$word"; done
    done
}
test_filter() { [[ $1 != *:* ]] || echo "${1#*:}"; }

run_bundle() {
    local dir="$1" log
    # the log grows in $OUT as the checks run: a run cut short still leaves what it did
    log="${OUT:-$(mktemp -d)}/gpu_check.log"
    : >"$log"
    # NCCL: the toolkit's, else the one of the Python wheels (nvidia-nccl)
    local nccl
    nccl="$(dirname "$( (find /usr/local/cuda*/lib64 /usr/lib /opt -name 'libnccl.so.2' 2>/dev/null || true) | head -1)")"
    export LD_LIBRARY_PATH="$dir/lib:/usr/local/cuda/lib64:$nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export ROTOR_SOURCE_DIR="$dir" PATH="$PATH:/usr/local/cuda/bin"
    if [ -d "$dir/ompi" ]; then
        export OPAL_PREFIX="$dir/ompi" PATH="$dir/ompi/bin:$PATH"
        PMIX_MCA_mca_base_component_path=$(echo "$dir"/ompi/lib/*/pmix2/lib/pmix)
        export PMIX_MCA_mca_base_component_path
    fi
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$log" || true
    local failed=0 parts=" ${GPU_CHECK_PARTS:-tests step bench e2e} " rcfile summary deadline=0
    rcfile="$(mktemp)"
    summary="$(mktemp)" # per program: name, rc, tests, failed, worst err/tol, seconds
    # a hang (a kernel that never ends) costs one program, not the rest: a time limit each;
    # under a part's deadline (epoch seconds, 0 = none) a program gets at most what is left,
    # and none once less than 10 s is (it counts as failed: not verified)
    limited() { # SECONDS NAME COMMAND...
        local secs=$1 name=$2 rc t0 out left
        shift 2
        echo "== $name" | tee -a "$log"
        if [ "$deadline" -gt 0 ]; then
            left=$((deadline - $(date +%s)))
            if [ "$left" -lt 10 ]; then
                echo "skipped: the part's time is spent" | tee -a "$log"
                printf '%s not-run - - - 0\n' "$name" >>"$summary"
                failed=1
                return
            fi
            if [ "$secs" -gt "$left" ]; then secs=$left; fi
        fi
        out="$(mktemp)"
        t0=$(date +%s.%N)
        { rc=0; timeout -k 10 "$secs" "$@" 2>&1 || rc=$?; echo "$rc" >"$rcfile"; } | tee -a "$log" "$out"
        rc=$(cat "$rcfile")
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "FAIL $name: timed out after $secs s" | tee -a "$log"; fi
        [ "$rc" = 0 ] || failed=1
        # the worst of the program's comparisons: err/tol of its "err=E tol=T" lines
        awk -v name="$name" -v rc="$rc" -v t0="$t0" -v t1="$(date +%s.%N)" '
            /^(ok|FAIL) / { n++; if ($1 == "FAIL") f++ }
            /^skipped/ { skipped = 1 }
            {
                e = ""; t = ""
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^err=/) e = substr($i, 5)
                    if ($i ~ /^tol=/) t = substr($i, 5)
                }
                if (e != "" && t + 0 > 0 && e / t > w) w = e / t
            }
            END {
                printf "%s %s %d %d %s %.0f\n", name, skipped && rc == 0 ? "skip" : rc, n, f,
                       w == "" ? "-" : sprintf("%.3f", w), t1 - t0
            }' "$out" >>"$summary"
        rm -f "$out"
    }
    if [[ $parts == *" speed "* ]]; then speed_part; fi
    # verify: what must pass after any change to the kernels, in 6 minutes of command time
    # (docs/gpu.md "A short time on a GPU machine"): the op table on the GPU against its fp64
    # results (tests/test_ops_backends.c, where the bundle has it), every kernel test program,
    # rotor's named errors with a GPU present, rotor end to end, and one profiled 370M GLA step. On an H200
    # (2026-11-28) the twelve test programs took 101 s (gemm 21 s, selrope 15 s, the rest < 13 s),
    # the whole part 138 s.
    if [[ $parts == *" verify "* ]]; then
        deadline=$(($(date +%s) + ${GPU_CHECK_VERIFY_LIMIT:-360}))
        local t
        if [ -x "$dir/bin/test_ops_backends" ]; then
            limited 90 test_ops_backends "$dir/bin/test_ops_backends" "$dir/bin/ops_refs.bin"
        fi
        for t in $(test_programs "$dir"); do
            limited 90 "$(basename "$t")" "${t%%:*}" $(test_filter "$t")
        done
        limited 60 cli_errors "$dir/bin/cli_errors.sh" "$dir/bin/rotor"
        limited 180 gpu_e2e "$dir/bin/gpu_e2e.sh" "$dir/bin/rotor" "$dir/configs" "$dir/data"
        cd "$dir"
        limited 120 gpu_step bin/step_bench --steps 3 --profile --json "${OUT:-/tmp}/gpu_step_verify.json" \
            "${configs_370m[0]}"
        cd - >/dev/null
        deadline=0
    fi
    if [[ $parts == *" tests "* ]]; then
        local san=() api small=${GPU_CHECK_SMALL:-} smallenv=()
        if [ -n "${GPU_CHECK_TESTS_LIMIT:-}" ]; then deadline=$(($(date +%s) + GPU_CHECK_TESTS_LIMIT)); fi
        if [ -n "${GPU_CHECK_SANITIZER:-}" ]; then
            san=(compute-sanitizer --tool "$GPU_CHECK_SANITIZER" --error-exitcode 3)
            [ "$GPU_CHECK_SANITIZER" != racecheck ] || small=${small:-1}
        fi
        [ "${small:-0}" = 0 ] || smallenv=(env ROTOR_GPU_TEST_SMALL=1)
        for t in $(test_programs "$dir"); do
            # NCCL's communicator set-up asks cudaFuncGetAttributes of kernels it has no
            # image for on this GPU and ignores the error (NVIDIA/nccl#1864), which the
            # sanitizer reports as 4 API errors: test_gpu_comm's are not reported; rotor's own
            # API calls abort on any error themselves, and its memory errors still count
            api=()
            if [ ${#san[@]} -gt 0 ] && [ "$(basename "${t%%:*}")" = test_gpu_comm ]; then api=(--report-api-errors no); fi
            limited 150 "$(basename "$t")" "${smallenv[@]}" "${san[@]}" "${api[@]}" "${t%%:*}" $(test_filter "$t")
        done
        # rotor's named errors with a GPU present: an unsupported head size is refused at start-up
        limited 120 cli_errors "$dir/bin/cli_errors.sh" "$dir/bin/rotor"
        deadline=0
    fi
    if [[ $parts == *" step "* ]]; then
        cd "$dir" # the configs by their short names in the table
        limited 300 gpu_step bin/step_bench --steps 3 --profile --json "${OUT:-/tmp}/gpu_step.json" \
            "${configs_370m[@]}"
        # GDN and GLA on one long sequence: a linear-time mixer should keep its tokens/s
        limited 200 gpu_step_long bin/step_bench --steps 2 --shape 16384x1 --profile \
            --json "${OUT:-/tmp}/gpu_step_16k.json" "${configs_370m[@]:0:2}"
        # the same models without a position embedding, as fla's models are (the step table)
        limited 200 gpu_step_nope bin/step_bench --steps 3 --json "${OUT:-/tmp}/gpu_step_nope.json" \
            "${configs_nope[@]}"
        cd - >/dev/null
    fi
    if [[ $parts == *" bench "* ]]; then
        limited 120 gpu_mixers "$dir/bin/gpu_mixers"
        # fla from its wheels, unzipped (pure Python); a skip (77: no torch, no fla) is no failure
        local table
        if fla_pylib "$dir"; then
            limited 420 fla_mixers env PYTHONPATH="$dir/pylib${PYTHONPATH:+:$PYTHONPATH}" bash -c \
                'python3 "$1"; rc=$?; [ "$rc" = 77 ] && rc=0; exit "$rc"' - "$dir/bin/fla_mixers.py"
        else
            printf '== fla_mixers\nskipped: no fla-core wheel in %s\n' "$dir/wheels" | tee -a "$log"
        fi
        table="$(mixer_table "$log")"
        if [ -n "$table" ]; then printf '%s\n' "$table" | tee -a "$log"; fi
    fi
    if [[ $parts == *" flastep "* ]]; then
        # fla's GLA, GDN and FoX models at step_bench's shapes, from the same unzipped wheels as
        # fla_mixers. --bypass-hopper-guard: fla 0.6.0 refuses GDN's backward on Hopper with
        # this machine's Triton 3.6 (fla #640: wrong gradients, fixed in Triton 3.7.1, too large
        # a wheel to carry); the step is timed anyway, and its line says so. Triton compiles
        # and autotunes every kernel in each model's first step: minutes, hence the limit.
        local table
        if fla_pylib "$dir"; then
            limited "${GPU_CHECK_FLA_LIMIT:-540}" fla_step env PYTHONPATH="$dir/pylib${PYTHONPATH:+:$PYTHONPATH}" \
                bash -c 'python3 "$1" --bypass-hopper-guard --models "$2"; rc=$?; [ "$rc" = 77 ] && rc=0; exit "$rc"' \
                - "$dir/bin/fla_step.py" "${GPU_CHECK_FLA_MODELS:-gla,gdn,fox}"
        else
            printf '== fla_step\nskipped: no fla-core wheel in %s\n' "$dir/wheels" | tee -a "$log"
        fi
        table="$(step_table "$log")"
        if [ -n "$table" ]; then printf '%s\n' "$table" | tee -a "$log"; fi
    fi
    if [[ $parts == *" decode "* ]]; then
        # one process per config: each line's peak memory is that config's
        local c table
        for c in "${configs_370m[@]:0:3}" "${configs_nope[@]:0:3}"; do
            limited 300 decode_bench "$dir/bin/decode_bench" \
                --out "${OUT:-/tmp}/decode_$(basename "$c" .ini).json" "$dir/$c"
        done
        if fla_pylib "$dir"; then
            limited "${GPU_CHECK_FLA_LIMIT:-540}" fla_generate env PYTHONPATH="$dir/pylib${PYTHONPATH:+:$PYTHONPATH}" \
                bash -c 'python3 "$1" --models "$2" --out "$3"; rc=$?; [ "$rc" = 77 ] && rc=0; exit "$rc"' \
                - "$dir/bin/fla_generate.py" "${GPU_CHECK_FLA_MODELS:-gla,gdn,fox}" "${OUT:-/tmp}/fla_generate.json"
        else
            printf '== fla_generate\nskipped: no fla-core wheel in %s\n' "$dir/wheels" | tee -a "$log"
        fi
        table="$(decode_table "$log")"
        if [ -n "$table" ]; then printf '%s\n' "$table" | tee -a "$log"; fi
    fi
    if [[ $parts == *" rnn "* ]]; then
        # psMNIST's row length without its images (784 pixels), PTB's vocabulary without its text
        cd "$dir"
        local task sets
        for task in copy psmnist ptb150; do
            case $task in
                psmnist) sets=(--set train.seq_len=784) ;;
                ptb150) sets=(--set model.vocab_size=50) ;;
                *) sets=() ;;
            esac
            limited 300 "gpu_step_rnn_$task" bin/step_bench --steps 3 --profile "${sets[@]}" \
                --json "${OUT:-/tmp}/gpu_step_rnn_$task.json" configs/nnrnn/"$task"-*.ini
            limited 300 "torch_rnn_step_$task" bash -c \
                'python3 bin/torch_rnn_step.py --rotor bin/rotor "$@"; rc=$?; [ "$rc" = 77 ] && rc=0; exit "$rc"' \
                - "${sets[@]}" configs/nnrnn/"$task"-*.ini
        done
        cd - >/dev/null
    fi
    if [[ $parts == *" ncu "* ]]; then
        local ncu rep
        ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1 || true)
        rep="$(mktemp -d)/mixers"
        limited 300 ncu_mixers "${ncu:-ncu}" --clock-control none \
            --kernel-name "regex:${GPU_CHECK_NCU_KERNELS:-gla_|gdn_|fox_|selrope_}" \
            --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
            --export "$rep" --force-overwrite "$dir/bin/gpu_mixers" --reps 1
        limited 120 ncu_table bash -c '"$1" --import "$2.ncu-rep" --csv --page raw --print-units base >"$3" &&
            python3 "$4" "$3"' _ "${ncu:-ncu}" "$rep" "${OUT:-/tmp}/ncu-mixers.csv" "$dir/bin/ncu_table.py"
    fi
    if [[ $parts == *" multirank "* ]]; then
        # two and three ranks on the one GPU, their gradients summed by MPI through host memory
        # (NCCL refuses several ranks on one device), against one rank with the accumulation
        # of both; ZeRO-1 and its checkpoint resumed at 1 and 3 ranks. The tolerances are a
        # first guess for bf16 kernels with atomic sums (the script prints what it measures).
        limited 300 multirank env DIST_DEVICE=cuda DIST_COLLECTIVES=mpi DIST_PARTS="equivalence resume" \
            DIST_RTOL=1e-2 DIST_WTOL=5e-2 DIST_CONFIG="$dir/configs/tiny/gla-selective.ini" PYTHON=python3 \
            "$dir/bin/dist_train.sh" "$dir/bin/rotor"
    fi
    if [[ $parts == *" repro "* ]]; then
        # run.device = cuda trains in bf16 where the CPU trains in fp32 (docs/models.md §precision). A run
        # the limit cuts off is not marked finished: the same sweep elsewhere trains it again.
        local e w sets=() scale=${GPU_CHECK_REPRO_SCALE:-cpu}
        for w in ${GPU_CHECK_REPRO_SETS:-}; do sets+=(--set "$w"); done
        [ -n "${GPU_CHECK_REPRO_ONLY:-}" ] && sets+=(--only "$GPU_CHECK_REPRO_ONLY")
        for e in ${GPU_CHECK_REPRO:-fig7-mqar}; do
            limited "${GPU_CHECK_REPRO_LIMIT:-480}" "repro_$e" env ROTOR_SHARED_DATA="$dir/data" \
                "$dir/root/scripts/reproduce.sh" "$e" --scale "$scale" --train-only --jobs "${GPU_CHECK_REPRO_JOBS:-8}" \
                --rotor "$dir/bin/rotor" --out "$dir/repro/$e" --results "$dir/root/results/reproduce/$e/$scale" \
                --set "run.device=${GPU_CHECK_REPRO_DEVICE:-cuda}" "${sets[@]}"
            # the runs without checkpoints and plots, by Python's tarfile (the machine may lack xz)
            [ -d "$dir/repro/$e/runs" ] && python3 - "$dir/repro/$e" "${OUT:-/tmp}/repro-$e.tar.xz" <<'PY' | tee -a "$log"
import os, sys, tarfile
out, done = sys.argv[1], 0
def keep(info):
    parts = info.name.split("/")
    return None if "checkpoints" in parts or info.name.endswith(".svg") else info
with tarfile.open(sys.argv[2], "w:xz") as tar:
    tar.add(os.path.join(out, "runs"), arcname="runs", filter=keep)
for _, _, files in os.walk(os.path.join(out, "runs")):
    done += sum(f.endswith(".done") for f in files)
print(f"{os.path.basename(out)}: {done} runs finished, in {sys.argv[2]}")
PY
        done
    fi
    if [[ $parts == *" e2e "* ]]; then
        limited 400 gpu_e2e "$dir/bin/gpu_e2e.sh" "$dir/bin/rotor" "$dir/configs" "$dir/data"
    fi
    echo
    echo "---- summary ----"
    awk '
        BEGIN { printf "%-24s %-10s %6s %7s %13s %8s\n", "program", "result", "tests", "failed", "worst err/tol", "seconds" }
        {
            r = $2 == "0" ? "passed" : $2 == "skip" ? "skipped" : $2 == "not-run" ? "NOT RUN" : \
                $2 == "124" || $2 == "137" ? "TIMED OUT" : "FAILED"
            printf "%-24s %-10s %6s %7s %13s %8s\n", $1, r, $3, $4, $5, $6; total += $6
        }
        END { printf "%-24s %-10s %6s %7s %13s %8d\n", "total", "", "", "", "", total }' "$summary"
    grep -E ' FAIL$' "$log" | sed 's/^/failed compare: /' || true
    grep -E 'tok/s' "$log" || true
    grep -E '^recompute ' "$log" || true
    mixer_table "$log"
    step_table "$log"
    decode_table "$log"
    return $failed
}

case "${1:-all}" in
    bundle) bundle ;;
    run)
        dir="$(mktemp -d)"
        # Python's tarfile: the GPU machine may lack the xz program
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="tar")' \
            "${2:-$root/.gpu_bundle}/rotor-gpu.tar.xz" "$dir"
        run_bundle "$dir"
        ;;
    all)
        build_gpu
        dir="$(mktemp -d)"
        mkdir -p "$dir/bin" "$dir/configs" && cp "$build"/tests/test_gpu_* "$build/bench/step_bench" "$build/rotor" "$dir/bin/"
        bundle_op_table "$dir"
        cp "$build/bench/gpu_mixers" "$build/bench/decode_bench" \
           "$root"/bench/fla_{mixers,step,generate,common}.py "$root"/bench/{torch_rnn_step,ncu_table}.py \
           "$root"/tests/reference/ref_{model,fast}.py "$dir/bin/"
        case " ${GPU_CHECK_PARTS:-bench} " in
            *" bench "* | *" flastep "* | *" decode "*) fla_download "$dir/wheels" ;;
        esac
        cp "$root/scripts/gpu_e2e.sh" "$root"/tests/{cli_errors.sh,dist_train.sh,compare_checkpoints.py} "$dir/bin/"
        mkdir -p "$dir/bin/reference" && cp "$root/tests/reference/ref_safetensors.py" "$dir/bin/reference/"
        cp -r "$root/configs/tiny" "$dir/configs/" && cp "${configs_370m[@]/#/$root/}" "${configs_nope[@]/#/$root/}" "$dir/configs/"
        mkdir -p "$dir/configs/nnrnn" && cp "$root"/configs/paper/nnrnn/{copy,psmnist,ptb150,ptb300}-{nnrnn,exprnn,rnn_orth,rnn,lstm}.ini "$dir/configs/nnrnn/"
        ln -s "$(cd "$root/../shared/data" && pwd)" "$dir/data"
        ln -s "$root" "$dir/root"
        run_bundle "$dir"
        ;;
    *) echo "usage: scripts/gpu_check.sh [bundle | run [DIR]]" >&2; exit 2 ;;
esac
