# Selective RoPE paper, Table 3: language models (GLA, Gated DeltaNet, FoX with NoPE, RoPE and
# Selective RoPE, + phase gate, + bias, + both) scored zero-shot on LAMBADA, PIQA, HellaSwag,
# WinoGrande, ARC-e and ARC-c, each at the learning rate of the lowest validation loss.
# Paper (Section 4, Table 4): 370M models, 35B FineWeb tokens, lr 5e-4 ... 8e-3, validation
# on 4M held-out tokens. CPU: the tiny configs (configs/tiny/) with the Mistral tokenizer on
# tiny Shakespeare and WikiText-2's validation text (../shared/data), 1500 steps of 8 x 256
# tokens, lr 2e-3 and 8e-3, the first 200 documents of each task; docs/results/table3-lm.md.
source "$ROOT/scripts/lib/experiments.sh"
describe() { echo "Selective RoPE Table 3: LM (GLA/GDN/FoX x 6 PEs), lr-best by val loss, zero-shot eval"; }
default_seeds() { echo 1; }
# one H100 at 4 x 4096 (docs/gpu.md, 2026-11-24, "first run"): GLA 107.7k, Gated DeltaNet
# 76.4k, FoX 85.5k tokens/s
gpu_rate() {
    case $1 in gla__*) echo 107700 ;; gdn__*) echo 76400 ;; fox__*) echo 85500 ;; esac
}
RANKS=8 # the 370M configs' global batch: 8 ranks x 4 rows x 4 micro-batches of 4096 tokens
SHARED=${ROTOR_SHARED_DATA:-$ROOT/../shared/data}
FAMILIES="gla gdn fox"
VARIANTS="nope rope selective selective-pg selective-bias selective-pg-bias"
prepare() {
    [[ $SCALE == cpu ]] || return 0 # the paper's FineWeb shards: data.train / data.val of the configs
    [[ -f $SHARED/tokenizer/mistral-7b-v0.1.model ]] || { echo "no $SHARED (set ROTOR_SHARED_DATA)" >&2; exit 2; }
    [[ -d $OUT/data/train ]] && return 0
    "$ROTOR" data tokenize --tokenizer "$SHARED/tokenizer/mistral-7b-v0.1.model" --out "$OUT/data" \
        --text-docs paragraph --val-fraction 0.05 \
        "$SHARED/text/tinyshakespeare.txt" "$SHARED/text/wikitext2_valid.txt" > "$OUT/data.log"
}
runs() {
    local fam pe lr seed config lrs sets
    for fam in $FAMILIES; do
        for pe in $VARIANTS; do
            if [[ $SCALE == paper ]]; then
                config=configs/$fam-370m-$pe.ini lrs="5e-4 1e-3 2e-3 4e-3 8e-3" sets=""
            else
                config=configs/tiny/$fam-$pe.ini lrs="2e-3 8e-3"
                sets="model.vocab_size=32000 model.doc_mask=true data.train=$OUT/data/train data.val=$OUT/data/val"
                sets+=" data.tokenizer=$SHARED/tokenizer/mistral-7b-v0.1.model train.seq_len=256 train.steps=1500"
                sets+=" train.val_every=250 train.val_batches=16 train.checkpoint_every=0"
            fi
            for lr in $lrs; do
                for seed in $(first_seeds "$SEEDS" 1234 1235 1236); do
                    run "${fam}__$pe-lr$lr-seed$seed" train "$config" $sets "train.lr=$lr" "train.seed=$seed"
                done
            done
        done
    done
}
# Each run's last checkpoint scored zero-shot as it finishes, into DIR/lm_eval.json (which the
# results store keeps, so that the table is drawn from the store without the checkpoints):
# all documents of each task at paper scale, the first 200 at CPU scale.
finish_run() {
    local dir=$2 threads=$3 limit=()
    [[ $SCALE == cpu ]] && limit=(--limit 200)
    # shellcheck disable=SC2086 # LAUNCH is a command line
    $LAUNCH "$ROTOR" eval --ckpt "$dir/checkpoints/$(< "$dir/checkpoints/latest")" --tasks all \
        --data-dir "$SHARED/eval" "${limit[@]}" --threads "$threads" --out "$dir/lm_eval.json"
}
export SHARED
report() { plot lm "$OUT" "Table 3 (language models)"; }
