#!/usr/bin/env bash
# GPU verification: every CUDA kernel against its CPU reference (tests/gpu/test_gpu_*), a
# tiny model trained on both backends, the training-step benchmark of the 370M configs
# (tokens/s, MFU, peak memory), the mixer kernels against flash-linear-attention's
# (bench/gpu_mixers, bench/fla_mixers.py), and `rotor` end to end (scripts/gpu_e2e.sh:
# training under mpirun with NCCL, resume, zero-shot eval on GPU against CPU); ends with a
# short table. docs/gpu.md records the results.
#
#   scripts/gpu_check.sh          build for sm_90a and run, on a machine with a GPU and
#                                 the build dependencies (scripts/setup.sh)
#   scripts/gpu_check.sh bundle   build here and pack the programs, the shared libraries
#                                 they need beyond the CUDA toolkit's, Open MPI's runtime
#                                 (mpirun), the configs and ../shared/data's tokenizer, eval
#                                 tasks and text, and the fla-core wheel for the mixer
#                                 baseline into .gpu_bundle/rotor-gpu.tar.xz (for a GPU
#                                 machine without Debian's packages or network; about 34 MB)
#   scripts/gpu_check.sh run [DIR]  unpack and run a bundle (default .gpu_bundle) there
#
# Exit status 0 only if every test passed. With $OUT set, the full log is written there
# (gpu_check.log) as the checks run.
# GPU_CHECK_PARTS (default "tests step bench e2e") runs only some parts: the kernel tests,
# the 370M step benchmark, the mixer benchmark against fla, the end-to-end checks.
# GPU_CHECK_SANITIZER=memcheck (or racecheck, synccheck, initcheck) runs the kernel tests
# under compute-sanitizer with that tool.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-gpu"
configs_370m=(configs/gla-370m-selective-pg.ini configs/gdn-370m-selective-pg.ini
              configs/fox-370m-selective-pg.ini)
# the baseline of bench/fla_mixers.py: fla's kernels alone, pure Python (torch and triton
# come with the GPU machine)
fla_wheel=fla-core==0.6.0

build_gpu() {
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DROTOR_CUDA=ON \
          -DROTOR_CUDA_ARCHS=90a-real -DROTOR_NATIVE=OFF -DROTOR_SHARED_CORE=ON >/dev/null
    cmake --build "$build" -j"$(nproc)" --target rotor gpu_step gpu_mixers \
          $(cd "$root/tests/gpu" && ls test_gpu_*.c | sed 's/\.c$//')
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

# Downloads the fla-core wheel into $1 (wheels/ of a bundle); a failure only warns: the
# mixer benchmark then runs rotor's side alone.
fla_download() {
    mkdir -p "$1"
    python3 -m pip download -q --no-deps --timeout 30 --retries 1 -d "$1" "$fla_wheel" ||
        echo "warning: could not download $fla_wheel; the bench part will skip fla" >&2
}

bundle() {
    build_gpu
    local dir shared="$root/../shared/data"
    dir="$(mktemp -d)"
    mkdir -p "$dir/bin" "$dir/lib" "$dir/configs/tiny" "$dir/data/text"
    cp "$build"/tests/test_gpu_* "$build/bench/gpu_step" "$build/bench/gpu_mixers" \
       "$build/rotor" "$root/bench/fla_mixers.py" "$dir/bin/"
    fla_download "$dir/wheels"
    cp "$root"/configs/tiny/*.ini "$dir/configs/tiny/"
    cp "${configs_370m[@]/#/$root/}" "$dir/configs/"
    cp -r "$shared/tokenizer" "$shared/eval" "$dir/data/"
    cp "$shared/text/tinyshakespeare.txt" "$dir/data/text/"
    bundle_openmpi "$dir"
    # shared libraries beyond glibc, CUDA's and NCCL (the GPU machine has the toolkit, the
    # driver and NCCL; these are hundreds of MB)
    find "$dir/bin" "$dir/ompi" -type f \( -perm -u+x -o -name '*.so*' \) -exec ldd {} \; 2>/dev/null |
        awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | grep -Ev '/(openmpi|pmix2)/' |
        grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libcudart|libcublas[^/]*|libnccl)\.so' |
        while read -r lib; do cp -L "$lib" "$dir/lib/"; done
    cp "$root/scripts/gpu_e2e.sh" "$dir/bin/"
    strip "$dir"/bin/test_gpu_* "$dir"/bin/gpu_step "$dir"/bin/gpu_mixers "$dir"/bin/rotor \
          "$dir"/lib/*
    rm -rf "$root/.gpu_bundle" && mkdir -p "$root/.gpu_bundle"
    XZ_OPT=-T0 tar -C "$dir" -cJf "$root/.gpu_bundle/rotor-gpu.tar.xz" .
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
    local failed=0 parts=" ${GPU_CHECK_PARTS:-tests step bench e2e} " rcfile
    rcfile="$(mktemp)"
    # a hang (a kernel that never ends) costs one program, not the rest: a time limit each
    limited() { # SECONDS NAME COMMAND...
        local secs=$1 name=$2 rc
        shift 2
        echo "== $name" | tee -a "$log"
        { rc=0; timeout -k 10 "$secs" "$@" 2>&1 || rc=$?; echo "$rc" >"$rcfile"; } | tee -a "$log"
        rc=$(cat "$rcfile")
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "FAIL $name: timed out after $secs s" | tee -a "$log"; fi
        [ "$rc" = 0 ] || failed=1
    }
    if [[ $parts == *" tests "* ]]; then
        local san=()
        if [ -n "${GPU_CHECK_SANITIZER:-}" ]; then
            san=(compute-sanitizer --tool "$GPU_CHECK_SANITIZER" --error-exitcode 3)
        fi
        for t in "$dir"/bin/test_gpu_*; do limited 150 "$(basename "$t")" "${san[@]}" "$t"; done
    fi
    if [[ $parts == *" step "* ]]; then
        cd "$dir" # the configs by their short names in the table
        limited 300 gpu_step bin/gpu_step --steps 3 "${configs_370m[@]}"
        cd - >/dev/null
    fi
    if [[ $parts == *" bench "* ]]; then
        limited 120 gpu_mixers "$dir/bin/gpu_mixers"
        # fla from its wheel, unzipped (pure Python); a skip (77: no torch, no fla) is no failure
        local wheel table
        wheel="$( (ls "$dir"/wheels/fla_core-*.whl 2>/dev/null || true) | head -1)"
        if [ -n "$wheel" ]; then
            python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
                "$wheel" "$dir/pylib"
            limited 420 fla_mixers env PYTHONPATH="$dir/pylib${PYTHONPATH:+:$PYTHONPATH}" bash -c \
                'python3 "$1"; rc=$?; [ "$rc" = 77 ] && rc=0; exit "$rc"' - "$dir/bin/fla_mixers.py"
        else
            printf '== fla_mixers\nskipped: no fla-core wheel in %s\n' "$dir/wheels" | tee -a "$log"
        fi
        table="$(mixer_table "$log")"
        if [ -n "$table" ]; then printf '%s\n' "$table" | tee -a "$log"; fi
    fi
    if [[ $parts == *" e2e "* ]]; then
        limited 400 gpu_e2e "$dir/bin/gpu_e2e.sh" "$dir/bin/rotor" "$dir/configs" "$dir/data"
    fi
    echo
    echo "---- summary ----"
    awk '/^== /{prog=$2} /^(ok|FAIL) /{n[prog]++; if ($1=="FAIL") f[prog]++}
         /^skipped/{s[prog]=1}
         END {for (p in n) printf "%-24s %3d tests  %3d failed\n", p, n[p], f[p]; for (p in s) printf "%-24s skipped\n", p}' "$log" | sort
    grep -E ' FAIL$' "$log" | sed 's/^/failed compare: /' || true
    grep -E 'tok/s' "$log" || true
    mixer_table "$log"
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
        mkdir -p "$dir/bin" "$dir/configs" && cp "$build"/tests/test_gpu_* "$build/bench/gpu_step" "$build/rotor" "$dir/bin/"
        cp "$build/bench/gpu_mixers" "$root/bench/fla_mixers.py" "$dir/bin/"
        if [[ " ${GPU_CHECK_PARTS:-bench} " == *" bench "* ]]; then fla_download "$dir/wheels"; fi
        cp "$root/scripts/gpu_e2e.sh" "$dir/bin/"
        cp -r "$root/configs/tiny" "$dir/configs/" && cp "${configs_370m[@]/#/$root/}" "$dir/configs/"
        ln -s "$(cd "$root/../shared/data" && pwd)" "$dir/data"
        run_bundle "$dir"
        ;;
    *) echo "usage: scripts/gpu_check.sh [bundle | run [DIR]]" >&2; exit 2 ;;
esac
