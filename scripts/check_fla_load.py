#!/usr/bin/env python3
"""Loads rotor checkpoints into flash-linear-attention's Hugging Face models with
strict=True, to confirm that a NoPE/RoPE checkpoint is a drop-in fla checkpoint (GLA, Gated
DeltaNet, FoX, and the Transformer: TransformerForCausalLM; fla's Attention always applies RoPE
with rope_theta, so a NoPE Transformer loads but computes a different function there).

    python3 scripts/check_fla_load.py CHECKPOINT_DIR...

Needs `pip install torch transformers flash-linear-attention` (not a rotor dependency; model
construction and loading run on the CPU). Exit status 0 when every checkpoint loads.
Selective RoPE and FoX-Pro checkpoints carry parameters fla's models do not have and are
expected to fail with exactly those names listed as unexpected.
"""
import json
import sys

import fla  # noqa: F401  (registers gla, gated_deltanet, delta_net, forgetting_transformer, transformer, mamba2)
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForCausalLM

failed = 0
for ckpt in sys.argv[1:]:
    with open(f"{ckpt}/config.json") as f:
        cfg = json.load(f)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**cfg))
    try:
        model.load_state_dict(load_file(f"{ckpt}/model.safetensors"), strict=True)
        print(f"ok   {ckpt}: {type(model).__name__}")
    except RuntimeError as e:
        failed += 1
        print(f"FAIL {ckpt}: {e}")
sys.exit(1 if failed else 0)
