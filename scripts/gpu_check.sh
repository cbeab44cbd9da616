#!/usr/bin/env bash
# GPU verification: every CUDA kernel against its CPU reference (tests/gpu/test_gpu_*), a
# tiny model trained on both backends, and the training-step benchmark of the 370M configs
# (tokens/s, MFU, peak memory); ends with a short table. docs/gpu.md records the results.
#
#   scripts/gpu_check.sh          build for sm_90a and run, on a machine with a GPU and
#                                 the build dependencies (scripts/setup.sh)
#   scripts/gpu_check.sh bundle   build here and pack the programs, the shared libraries
#                                 they need beyond the CUDA toolkit's, and the configs into
#                                 .gpu_bundle/rotor-gpu.tar.gz (for a GPU machine without
#                                 Debian's packages; about 25 MB)
#   scripts/gpu_check.sh run [DIR]  unpack and run a bundle (default .gpu_bundle) there
#
# Exit status 0 only if every test passed. With $OUT set, the full log is copied there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-gpu"
configs_370m=(configs/gla-370m-selective-pg.ini configs/gdn-370m-selective-pg.ini
              configs/fox-370m-selective-pg.ini)

build_gpu() {
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DROTOR_CUDA=ON \
          -DROTOR_CUDA_ARCHS=90a-real -DROTOR_NATIVE=OFF >/dev/null
    cmake --build "$build" -j"$(nproc)" --target gpu_step \
          $(cd "$root/tests/gpu" && ls test_gpu_*.c | sed 's/\.c$//')
}

bundle() {
    build_gpu
    local dir
    dir="$(mktemp -d)"
    mkdir -p "$dir/bin" "$dir/lib" "$dir/configs/tiny"
    cp "$build"/tests/test_gpu_* "$build/bench/gpu_step" "$dir/bin/"
    cp "$root"/configs/tiny/*.ini "$dir/configs/tiny/"
    cp "${configs_370m[@]/#/$root/}" "$dir/configs/"
    # shared libraries beyond glibc, CUDA's and NCCL (the GPU machine has the toolkit, the
    # driver and NCCL; these are hundreds of MB)
    for b in "$dir"/bin/*; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
        grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libcudart|libcublas[^/]*|libnccl)\.so' |
        while read -r lib; do cp -L "$lib" "$dir/lib/"; done
    strip "$dir"/bin/* "$dir"/lib/*
    rm -rf "$root/.gpu_bundle" && mkdir -p "$root/.gpu_bundle"
    tar -C "$dir" -czf "$root/.gpu_bundle/rotor-gpu.tar.gz" .
    rm -rf "$dir"
    du -h "$root/.gpu_bundle/rotor-gpu.tar.gz"
}

run_bundle() {
    local dir="$1" log
    log="$(mktemp)"
    # NCCL: the toolkit's, else the one of the Python wheels (nvidia-nccl)
    local nccl
    nccl="$(dirname "$( (find /usr/local/cuda*/lib64 /usr/lib /opt -name 'libnccl.so.2' 2>/dev/null || true) | head -1)")"
    export LD_LIBRARY_PATH="$dir/lib:/usr/local/cuda/lib64:$nccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export ROTOR_SOURCE_DIR="$dir"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$log" || true
    local failed=0
    for t in "$dir"/bin/test_gpu_*; do
        echo "== $(basename "$t")" | tee -a "$log"
        "$t" 2>&1 | tee -a "$log" || failed=1
    done
    echo "== gpu_step" | tee -a "$log"
    (cd "$dir" && bin/gpu_step --steps 3 "${configs_370m[@]}") 2>&1 | tee -a "$log" || failed=1
    echo
    echo "---- summary ----"
    awk '/^== /{prog=$2} /^(ok|FAIL) /{n[prog]++; if ($1=="FAIL") f[prog]++}
         /^skipped/{s[prog]=1}
         END {for (p in n) printf "%-24s %3d tests  %3d failed\n", p, n[p], f[p]; for (p in s) printf "%-24s skipped\n", p}' "$log" | sort
    grep -E ' FAIL$' "$log" | sed 's/^/failed compare: /' || true
    grep -E 'tok/s' "$log" || true
    if [ -n "${OUT:-}" ]; then cp "$log" "$OUT/gpu_check.log"; fi
    rm -f "$log"
    return $failed
}

case "${1:-all}" in
    bundle) bundle ;;
    run)
        dir="$(mktemp -d)"
        tar -C "$dir" -xzf "${2:-$root/.gpu_bundle}/rotor-gpu.tar.gz"
        run_bundle "$dir"
        ;;
    all)
        build_gpu
        dir="$(mktemp -d)"
        mkdir -p "$dir/bin" "$dir/configs" && cp "$build"/tests/test_gpu_* "$build/bench/gpu_step" "$dir/bin/"
        cp -r "$root/configs/tiny" "$dir/configs/" && cp "${configs_370m[@]/#/$root/}" "$dir/configs/"
        run_bundle "$dir"
        ;;
    *) echo "usage: scripts/gpu_check.sh [bundle | run [DIR]]" >&2; exit 2 ;;
esac
