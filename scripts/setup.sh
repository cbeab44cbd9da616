#!/usr/bin/env bash
# Installs the Debian packages rotor needs (only those missing) and builds it into build/.
# Idempotent: a second run only rebuilds what changed.
#   scripts/setup.sh            # dependencies + Release build
#   scripts/setup.sh --deps     # dependencies only
#   scripts/setup.sh --cutlass  # only the CUTLASS headers for -DROTOR_CUTLASS=ON: NVIDIA's
#                               # nvidia-cutlass wheel from PyPI into build/cutlass-venv
#                               # (about 40 MB; scripts/gpu_check.sh's build uses it)
#   scripts/setup.sh --interop  # the virtual environment of scripts/check_interop.sh only:
#                               # scripts/interop-requirements.txt from PyPI into
#                               # build/interop-venv (or $ROTOR_INTEROP_VENV), about 6 GB
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config       # toolchain
  libopenblas-openmp-dev                 # BLAS (OpenMP build: no oversubscription in our parallel loops)
  libinih-dev                            # INI config parsing
  libjansson-dev                         # JSON: metrics, checkpoints, config.json
  libhdf5-dev                            # token shards
  libsentencepiece-dev sentencepiece     # tokenizer (and spm_encode for the benchmark)
  zlib1g-dev libzstd-dev zstd            # compressed JSONL inputs (zstd: for the tests)
  libssl-dev                             # sha256 of tokenizer files
  libxxhash-dev                          # deterministic train/validation split
  libprotobuf-c-dev protobuf-c-compiler  # TensorBoard event files (src/io/tensorboard.proto)
  libpng-dev                             # LRA's Pathfinder images (task.type = pathfinder)
  libsndfile1-dev                        # Speech Commands' WAV files (task.type = speech_commands)
  openmpi-bin libopenmpi-dev             # data parallelism under mpirun
  python3 python3-numpy python3-torch    # the independent PyTorch reference used by the tests
  libicu-dev                             # eval: Python str.capitalize (full Unicode case mapping)
  libmicrohttpd-dev                      # rotor serve: the HTTP server
  python3-venv                           # the harness test's virtual environment (lm-eval from PyPI)
  python3-matplotlib                     # bench/plot_profile.py (GPU op profiles as a plot)
  dataset-fashion-mnist                  # Fashion-MNIST's IDX files in /usr/share/datasets/fashion-mnist (configs/classify/)
  clang libclang-rt-14-dev               # libFuzzer: the fuzz targets' bounded runs (scripts/fuzz.sh)
  clang-format                           # the formatting check (tests/format_check.sh)
)

cutlass_version=4.2.0.0
if [ "${1:-}" = "--cutlass" ]; then
  venv=build/cutlass-venv
  if ! compgen -G "$venv/lib/python3*/site-packages/cutlass_library/source/include/cutlass/cutlass.h" >/dev/null; then
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    # the headers only: none of the wheel's Python dependencies
    "$venv/bin/pip" install -q --no-deps "nvidia-cutlass==$cutlass_version"
  fi
  echo "setup: $venv holds nvidia-cutlass $("$venv/bin/pip" show nvidia-cutlass | sed -n 's/^Version: //p')"
  exit 0
fi
if [ "${1:-}" = "--interop" ]; then
  venv=${ROTOR_INTEROP_VENV:-build/interop-venv}
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r scripts/interop-requirements.txt
  echo "setup: $venv holds $("$venv/bin/pip" freeze | grep -E '^(torch|triton|transformers|flash-linear-attention)==' | tr '\n' ' ')"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "${1:-}" = "--deps" ] && exit 0

# cuobjdump (scripts/kernel_report.sh's SASS mix) where the CUDA toolkit has nvcc but not it:
# NVIDIA's wheels of cuobjdump and nvdisasm from PyPI, in build/cuda-tools-venv
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc" ] && ! command -v cuobjdump >/dev/null && [ ! -x "$(dirname "$nvcc")/cuobjdump" ]; then
  tools=build/cuda-tools-venv
  major=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  if [ ! -x "$tools/bin/python" ] || ! compgen -G "$tools/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump" >/dev/null; then
    python3 -m venv "$tools" && "$tools/bin/pip" install -q "nvidia-cuda-cuobjdump==$major.*" "nvidia-cuda-nvdisasm==$major.*" ||
      echo "setup: warning: no cuobjdump from PyPI: scripts/kernel_report.sh leaves out the SASS mix" >&2
  fi
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
echo "setup: built build/rotor"
