#!/usr/bin/env python3
"""Loads rotor checkpoints through transformers' AutoModelForCausalLM (trust_remote_code=True,
fla imported) and compares what they compute with rotor's own numbers (docs/interop.md):

    check_interop.py [--atol 1e-4] CASE...     CASE = NAME:CHECKPOINT:SAMPLES:GENERATIONS[:refuse]

SAMPLES is `rotor eval --log-samples` of the checkpoint: every request's log-likelihood is
recomputed from its token ids and must agree within --atol (on the CPU only requests of
at most CPU_MAX_TOKENS tokens). GENERATIONS is `rotor generate
--temperature 0 --prompts` on prompts that are the contexts of the first SAMPLES requests (their
token ids less the continuation are the prompt's, BOS included): model.generate's greedy tokens must equal
rotor's. A case marked `refuse` must fail to load with an error (printed), not a warning.
Prints one line per case and exits 0 when every case passed. Runs on a GPU when there is one,
else on the CPU (fla's Triton kernels then need TRITON_INTERPRET=1).
"""
import argparse
import json
import sys
import time
import warnings

import torch
import fla  # noqa: F401  (registers fla's model types with transformers)
from transformers import AutoModelForCausalLM
from transformers.utils import logging as hf_logging

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# fla's layers run their chunked kernels above 64 tokens, and these fail under Triton's
# interpreter: on the CPU only requests up to this length are scored
CPU_MAX_TOKENS = 64


def one_config_per_kernel():
    """Under Triton's interpreter (the CPU) no kernel can be timed: each autotuned kernel runs
    its first config."""
    from triton.runtime.autotuner import Autotuner
    prune = Autotuner.prune_configs
    Autotuner.prune_configs = lambda self, kwargs: prune(self, kwargs)[:1]


def load(ckpt):
    """The model and a description; warnings are errors (a checkpoint that loads with a
    warning may compute something else)."""
    hf_logging.set_verbosity_error()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model, info = AutoModelForCausalLM.from_pretrained(ckpt, trust_remote_code=True, dtype=torch.float32,
                                                           output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    if bad:
        raise RuntimeError(f"loading info not empty: {bad}")
    return model.to(DEVICE).eval()


@torch.no_grad()
def loglik_errors(model, samples):
    worst = 0.0
    for s in samples:
        ids = torch.tensor([s["tokens"]], device=DEVICE)
        logp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
        n = s["n_continuation"]
        tgt = ids[0, -n:]
        ll = logp[-n - 1:-1].gather(-1, tgt[:, None]).sum().item()
        worst = max(worst, abs(ll - s["ll"]))
    return worst


@torch.no_grad()
def generation_mismatches(model, samples, gens):
    bad = []
    by_context = {}
    for s in samples:
        by_context.setdefault(s["context"], s)
    for g in gens:
        s = by_context[g["prompt"]]
        prompt = s["tokens"][:len(s["tokens"]) - s["n_continuation"]]
        if len(prompt) != g["n_prompt_tokens"]:
            raise RuntimeError(f"prompt {g['index']}: {g['n_prompt_tokens']} tokens for rotor, {len(prompt)} here")
        ids = torch.tensor([prompt], device=DEVICE)
        out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                             max_new_tokens=len(g["tokens"]), min_new_tokens=len(g["tokens"]), pad_token_id=0)
        got = out[0, len(prompt):].tolist()
        if got != g["tokens"]:
            bad.append(f"prompt {g['index']}: {got} != rotor's {g['tokens']}")
    return bad


def check(case, atol):
    name, ckpt, samples_path, gens_path, *flags = case.split(":")
    refuse = flags == ["refuse"]
    cfg = json.load(open(f"{ckpt}/config.json"))
    start = time.time()
    try:
        model = load(ckpt)
    except Exception as e:  # every failure to load: the refusal, or what went wrong
        msg = " ".join(str(e).split())
        ok = refuse and isinstance(e, NotImplementedError)
        return ok, f"{'refused' if ok else 'FAIL'} {name} ({cfg['model_type']}): {type(e).__name__}: {msg[:400]}"
    if refuse:
        return False, f"FAIL {name}: {cfg['model_type']} loaded as {type(model).__name__}, expected a refusal"
    samples = [json.loads(line) for line in open(samples_path)]
    samples = [s for s in samples if DEVICE != "cpu" or len(s["tokens"]) <= CPU_MAX_TOKENS]
    gens = [json.loads(line) for line in open(gens_path)]
    worst = loglik_errors(model, samples)
    bad = generation_mismatches(model, samples, gens)
    ok = worst <= atol and not bad
    ntok = sum(len(g["tokens"]) for g in gens)
    line = (f"{'ok' if ok else 'FAIL'} {name}: {cfg['model_type']} as {type(model).__name__}, {len(samples)} requests "
            f"max |ll - rotor eval| {worst:.2g}, {ntok} greedy tokens of {len(gens)} prompt(s) "
            f"{'= rotor generate' if not bad else 'differ: ' + '; '.join(bad)} ({time.time() - start:.0f} s)")
    return ok, line


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    if DEVICE == "cpu":
        one_config_per_kernel()
    fails = 0
    for case in a.cases:
        try:
            ok, line = check(case, a.atol)
        except Exception as e:
            ok, line = False, f"FAIL {case.split(':')[0]}: {type(e).__name__}: {' '.join(str(e).split())[:400]}"
        fails += not ok
        print(line, flush=True)
    print(f"{len(a.cases) - fails} of {len(a.cases)} checkpoints as expected ({DEVICE})")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
