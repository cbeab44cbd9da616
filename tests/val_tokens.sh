#!/usr/bin/env bash
# train.val_tokens: the validation set is the same windows on any number of ranks and for
# any micro-batch. A model that does not move (lr 1e-30: no fp32 weight changes) is validated on shards of real text
# with 1, 2 and 3 ranks and two micro-batch sizes: the validation losses must agree, while
# train.val_batches' per-rank set (the control) must differ between 1 and 2 ranks.
#   tests/val_tokens.sh build/rotor
set -uo pipefail
rotor=$1
here=$(cd "$(dirname "$0")" && pwd)
shared=${ROTOR_SHARED_DATA:-$here/../../shared/data}
if [ ! -f "$shared/tokenizer/mistral-7b-v0.1.model" ]; then echo "skipped: ../shared/data not found"; exit 77; fi
command -v mpirun > /dev/null || { echo "skipped: no mpirun"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
export OMPI_MCA_btl_vader_single_copy_mechanism=none
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

tok=$shared/tokenizer/mistral-7b-v0.1.model
"$rotor" data tokenize --tokenizer "$tok" --out "$out/shards" --text-docs paragraph --val-fraction 0.05 \
    "$shared/text/tinyshakespeare.txt" > /dev/null || { echo "FAIL: tokenize"; exit 1; }
# 7 windows of 64 tokens plus a part of an eighth: 8 windows, not a multiple of any global
# micro-batch below (ranks x micro_batch = 2, 4, 6, 3, 9)
val_tokens=$((7 * 64 + 5))
validate() { # validate NAME RANKS MICRO_BATCH [--set ...]: one step that does not move the
              # weights, validated; the loss goes to $out/NAME.loss
    local name=$1 np=$2 mb=$3
    shift 3
    if ! mpirun --oversubscribe --bind-to none -np "$np" "$rotor" train "$here/../configs/tiny/gla-selective.ini" \
        --set run.dir="$out/$name" --set run.threads=1 --set model.vocab_size=32000 \
        --set data.train="$out/shards/train" --set data.val="$out/shards/val" --set data.tokenizer="$tok" \
        --set train.seq_len=64 --set train.micro_batch="$mb" --set train.steps=1 --set train.val_every=1 \
        --set train.lr=1e-30 --set train.lr_start=1e-30 --set train.lr_min=0 --set train.weight_decay=0 "$@" \
        > "$out/$name.log" 2>&1; then
        fail "$name ($np ranks): training failed:"
        grep -m3 "error" "$out/$name.log"
        return 1
    fi
    /usr/bin/python3 -c "
import json, sys
print([j['val_loss'] for j in map(json.loads, open(sys.argv[1])) if 'val_loss' in j][-1])" \
        "$out/$name/metrics.jsonl" > "$out/$name.loss"
}
# differ A B REL: exit status 0 when the losses in files A and B differ by more than REL
differ() { /usr/bin/python3 -c "import sys; a, b = (float(open(f).read()) for f in sys.argv[1:3]); sys.exit(not abs(a - b) > float(sys.argv[3]) * abs(a))" "$@"; }
validate r1 1 2 --set train.val_tokens=$val_tokens && echo "1 rank, micro_batch 2: val_loss $(cat "$out/r1.loss")"
for spec in "r2 2 2" "r3 3 2" "r1b4 1 4" "r3b3 3 3"; do
    read -r name np mb <<< "$spec"
    validate "$name" "$np" "$mb" --set train.val_tokens=$val_tokens || continue
    echo "$np ranks, micro_batch $mb: val_loss $(cat "$out/$name.loss")"
    ! differ "$out/r1.loss" "$out/$name.loss" 1e-5 || fail "$np ranks x micro_batch $mb: the loss differs from 1 rank's"
done
# the control: val_batches = 2 micro-batches of every rank is 4 windows on 1 rank, 8 on 2
if validate c1 1 2 --set train.val_batches=2 && validate c2 2 2 --set train.val_batches=2; then
    echo "control (train.val_batches = 2): 1 rank $(cat "$out/c1.loss"), 2 ranks $(cat "$out/c2.loss")"
    differ "$out/c1.loss" "$out/c2.loss" 1e-5 || fail "train.val_batches: the same loss on 1 and 2 ranks, so the check cannot tell sets apart"
fi
[ $fails = 0 ] && echo "all val_tokens checks passed"
exit $((fails != 0))
