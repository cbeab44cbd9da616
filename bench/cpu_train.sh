#!/usr/bin/env bash
# CPU training throughput of rotor against the PyTorch reference (tests/reference, chunked
# mixers, torch.optim.AdamW): the same model, batch, random tokens and thread count, full
# optimizer steps (clipping included) timed after a warm-up, measured in this run.
#
#   bench/cpu_train.sh [--rounds N] [--steps N] [--threads N] [--sides LIST] [--configs LIST]
#                      [--out DIR]
#
# Sides (--sides, comma-separated; default all four):
#   rotor          build/bench/step_bench --device cpu
#   torch-debian   Debian's python3-torch (/usr/bin/python3)
#   torch-eager    current PyTorch from PyPI (TORCH_VERSION, default 2.15.0) in the virtual
#   torch-compile  environment build/bench-venv, made here on first use; the same with the
#                  model through torch.compile (compiled by the warm-up steps)
# A side that cannot run here (no Debian torch, no network for the venv) is reported skipped.
# Configs (--configs, comma-separated): any config of configs/tiny/ by its name, at d = 256,
# 4 layers, 4 heads (for the families that have heads), vocabulary 4096, 4 rows of 512 tokens,
# and mid-gla / mid-gdn / mid-fox: those families at d = 512, 8 layers, 8 heads, 1 row of 2048.
# Default: gla-selective, gdn-selective, fox-selective, gla-nope, fox-pro-selective-pg-bias and
# mid-gla; `families`: one tiny config of every family (the Selective RoPE variant where a
# family has position embeddings).
# Each round runs every config on every side in turn (the first side rotates per round), so
# a load that comes and goes falls on all sides; the table gives min / median / max tok/s
# over the rounds and rotor's median over each side's. The machine (CPU, ISA, the BLAS
# kernels of each side) heads the output; every measurement goes to OUT/results.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 steps=8 threads=$(nproc) out=
sides=rotor,torch-debian,torch-eager,torch-compile
configs=gla-selective,gdn-selective,fox-selective,gla-nope,fox-pro-selective-pg-bias,mid-gla
families=gla-selective,gdn-selective,fox-selective,fox-pro-selective,transformer-selective,deltanet-selective
families+=,mamba2,lru,rotrnn,rnn,rnn_orth,lstm,nnrnn,exprnn,eurnn
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --sides) sides=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
[ -x build/bench/step_bench ] || { echo "cpu_train.sh: build/bench/step_bench not built (cmake --build build --target step_bench)" >&2; exit 2; }
out=${out:-$(mktemp -d)}
mkdir -p "$out"
: >"$out/results.jsonl"
IFS=, read -r -a side_list <<<"$sides"
[ "$configs" = families ] && configs=$families
IFS=, read -r -a config_list <<<"$configs"

# ---- the sides' interpreters
venv=build/bench-venv torch_version=${TORCH_VERSION:-2.15.0}
declare -A python skip
for side in "${side_list[@]}"; do
  case "$side" in
    rotor) ;;
    torch-debian)
      if /usr/bin/python3 -c 'import torch' 2>/dev/null; then python[$side]=/usr/bin/python3
      else skip[$side]="no Debian python3-torch"; fi ;;
    torch-eager|torch-compile)
      if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null; then
        echo "making $venv with torch $torch_version from PyPI (once)" >&2
        { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet "torch==$torch_version" numpy; } >&2 ||
          { skip[torch-eager]="torch $torch_version could not be installed"; skip[torch-compile]=${skip[torch-eager]}; }
      fi
      [ -n "${skip[$side]:-}" ] || python[$side]=$venv/bin/python ;;
    *) echo "cpu_train.sh: unknown side '$side' (rotor, torch-debian, torch-eager, torch-compile)" >&2; exit 2 ;;
  esac
done

# ---- the configs' keys
config_sets() { # prints the config file and its --set arguments, one per line
  local name=$1 fam heads file
  case "$name" in
    mid-*) fam=${name#mid-}-selective heads=8
      file=configs/tiny/$fam.ini
      printf '%s\n' "$file" model.hidden_size=512 model.num_layers=8 train.seq_len=2048 train.micro_batch=1 ;;
    *) fam=$name heads=4
      file=configs/tiny/$fam.ini
      printf '%s\n' "$file" model.hidden_size=256 model.num_layers=4 train.seq_len=512 train.micro_batch=4 ;;
  esac
  # heads for the families that read model.num_heads (rotor's effective config lists the keys a
  # family reads)
  if [ -f "$file" ] && build/rotor info "$file" --write-config "$out/effective.ini" >/dev/null &&
     grep -q '^num_heads = ' "$out/effective.ini"; then echo "model.num_heads=$heads"; fi
  [[ $fam == gdn-* ]] && echo model.key_head_dim=64
  printf '%s\n' model.vocab_size=4096 "run.threads=$threads"
}
declare -A cfg_file cfg_batch cfg_seq
for c in "${config_list[@]}"; do
  mapfile -t lines < <(config_sets "$c")
  [ -f "${lines[0]}" ] || { echo "cpu_train.sh: unknown config '$c' (${lines[0]} missing)" >&2; exit 2; }
  args=()
  for kv in "${lines[@]:1}"; do args+=(--set "$kv"); done
  printf '%s\n' "${args[@]}" >"$out/$c.sets"
  build/rotor info "${lines[0]}" "${args[@]}" --config-json "$out/$c.json" >/dev/null
  cfg_file[$c]=${lines[0]}
  cfg_batch[$c]=$(printf '%s\n' "${lines[@]}" | sed -n 's/^train.micro_batch=//p')
  cfg_seq[$c]=$(printf '%s\n' "${lines[@]}" | sed -n 's/^train.seq_len=//p')
done

# ---- one measurement: appends a JSON line {config, side, round, tokens_per_s, ...}
measure() {
  local c=$1 side=$2 round=$3 tps blas log
  log=$out/$c.$side.$round.log
  if [ "$side" = rotor ]; then
    mapfile -t args <"$out/$c.sets"
    local sets=()
    for kv in "${args[@]}"; do [ "$kv" = --set ] || sets+=(--set "$kv"); done
    build/bench/step_bench --device cpu --steps "$steps" "${sets[@]}" "${cfg_file[$c]}" >"$log" 2>&1 ||
      { echo "cpu_train.sh: step_bench failed on $c ($log)" >&2; tail -3 "$log" >&2; return 1; }
    tps=$(awk '$8 == "tok/s" { print $7 }' "$log")
    blas="OpenBLAS $(sed -n 's/.*BLAS kernels \([A-Za-z0-9]*\).*/\1/p' "$log" | head -1)"
  else
    local extra=() warmup=2
    [ "$side" = torch-compile ] && extra=(--compile) warmup=3
    OMP_NUM_THREADS=$threads "${python[$side]}" tests/reference/rotor_ref.py bench --config "$out/$c.json" \
      --batch "${cfg_batch[$c]}" --seq "${cfg_seq[$c]}" --steps "$steps" --warmup "$warmup" \
      --threads "$threads" "${extra[@]}" >"$log" 2>"$log.err" ||
      { echo "cpu_train.sh: $side failed on $c ($log.err)" >&2; tail -3 "$log.err" >&2; return 1; }
    tps=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tokens_per_s"])' "$log")
    blas=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("torch", r["torch"], r["blas"])' "$log")
  fi
  printf '{"config": "%s", "side": "%s", "round": %d, "tokens_per_s": %s, "blas": "%s"}\n' \
    "$c" "$side" "$round" "$tps" "$blas" >>"$out/results.jsonl"
}

isa=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|amx_tile)$' | paste -sd, -)
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, ISA $isa; $threads threads, $rounds rounds of $steps steps"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (modified)'), $(date -u +%F)"
for s in "${!skip[@]}"; do echo "skipped: $s (${skip[$s]})"; done
runnable=()
for s in "${side_list[@]}"; do [ -n "${skip[$s]:-}" ] || runnable+=("$s"); done
n=${#runnable[@]}
for ((r = 0; r < rounds; r++)); do
  for c in "${config_list[@]}"; do
    for ((i = 0; i < n; i++)); do
      side=${runnable[$(((i + r) % n))]}
      echo "round $((r + 1))/$rounds: $c on $side" >&2
      measure "$c" "$side" "$r" || true
    done
  done
done
python3 - "$out/results.jsonl" "${config_list[@]}" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
sides = list(dict.fromkeys(r["side"] for r in rows))
blas = {r["side"]: r["blas"] for r in rows}
print("BLAS: " + "; ".join(f"{s}: {blas[s]}" for s in sides))
print(f"{'config':<27} {'side':<14} {'min':>8} {'median':>8} {'max':>8} {'rotor/side':>11}")
for c in sys.argv[2:]:
    tps = {s: [r["tokens_per_s"] for r in rows if r["config"] == c and r["side"] == s] for s in sides}
    ours = statistics.median(tps["rotor"]) if tps.get("rotor") else None
    for s in sides:
        if not tps[s]:
            continue
        med = statistics.median(tps[s])
        ratio = f"{ours / med:10.2f}x" if ours and s != "rotor" else ""
        print(f"{c:<27} {s:<14} {min(tps[s]):8.0f} {med:8.0f} {max(tps[s]):8.0f} {ratio:>11}")
EOF
echo "measurements: $out/results.jsonl"
