#!/usr/bin/env bash
# GPU verification: every CUDA kernel against its CPU reference (tests/gpu/test_gpu_*), a
# tiny model trained on both backends, the training-step benchmark of the 370M configs
# (tokens/s, MFU, peak memory), and `rotor` end to end (scripts/gpu_e2e.sh: training under
# mpirun with NCCL, resume, zero-shot eval on GPU against CPU); ends with a short table.
# docs/gpu.md records the results.
#
#   scripts/gpu_check.sh          build for sm_90a and run, on a machine with a GPU and
#                                 the build dependencies (scripts/setup.sh)
#   scripts/gpu_check.sh bundle   build here and pack the programs, the shared libraries
#                                 they need beyond the CUDA toolkit's, Open MPI's runtime
#                                 (mpirun), the configs and ../shared/data's tokenizer, eval
#                                 tasks and text into .gpu_bundle/rotor-gpu.tar.xz (for a
#                                 GPU machine without Debian's packages; about 32 MB)
#   scripts/gpu_check.sh run [DIR]  unpack and run a bundle (default .gpu_bundle) there
#
# Exit status 0 only if every test passed. With $OUT set, the full log is written there
# (gpu_check.log) as the checks run.
# GPU_CHECK_PARTS (default "tests step e2e") runs only some parts: the kernel tests, the
# 370M step benchmark, the end-to-end checks. GPU_CHECK_SANITIZER=memcheck (or racecheck,
# synccheck, initcheck) runs the kernel tests under compute-sanitizer with that tool.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-gpu"
configs_370m=(configs/gla-370m-selective-pg.ini configs/gdn-370m-selective-pg.ini
              configs/fox-370m-selective-pg.ini)

build_gpu() {
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DROTOR_CUDA=ON \
          -DROTOR_CUDA_ARCHS=90a-real -DROTOR_NATIVE=OFF -DROTOR_SHARED_CORE=ON >/dev/null
    cmake --build "$build" -j"$(nproc)" --target rotor gpu_step \
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

bundle() {
    build_gpu
    local dir shared="$root/../shared/data"
    dir="$(mktemp -d)"
    mkdir -p "$dir/bin" "$dir/lib" "$dir/configs/tiny" "$dir/data/text"
    cp "$build"/tests/test_gpu_* "$build/bench/gpu_step" "$build/rotor" "$dir/bin/"
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
    strip "$dir"/bin/test_gpu_* "$dir"/bin/gpu_step "$dir"/bin/rotor "$dir"/lib/*
    rm -rf "$root/.gpu_bundle" && mkdir -p "$root/.gpu_bundle"
    XZ_OPT=-T0 tar -C "$dir" -cJf "$root/.gpu_bundle/rotor-gpu.tar.xz" .
    rm -rf "$dir"
    du -h "$root/.gpu_bundle/rotor-gpu.tar.xz"
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
    local failed=0 parts=" ${GPU_CHECK_PARTS:-tests step e2e} " rcfile
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
        cp "$root/scripts/gpu_e2e.sh" "$dir/bin/"
        cp -r "$root/configs/tiny" "$dir/configs/" && cp "${configs_370m[@]/#/$root/}" "$dir/configs/"
        ln -s "$(cd "$root/../shared/data" && pwd)" "$dir/data"
        run_bundle "$dir"
        ;;
    *) echo "usage: scripts/gpu_check.sh [bundle | run [DIR]]" >&2; exit 2 ;;
esac
