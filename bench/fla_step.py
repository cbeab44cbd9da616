#!/usr/bin/env python3
"""The baseline of bench/step_bench.c: one full optimizer step of flash-linear-attention's own
Hugging Face models (flash-linear-attention + fla-core 0.6.0) at the shapes of rotor's 370M
configs, micro-batch 4 x seq_len 4096, timed the way step_bench times rotor's:

    gla  GLAForCausalLM                    configs/gla-370m-selective-pg.ini
    gdn  GatedDeltaNetForCausalLM          configs/gdn-370m-selective-pg.ini
    fox  ForgettingTransformerForCausalLM  configs/fox-370m-selective-pg.ini

Shapes (docs/models.md §backbone, §gla, §gated-deltanet, §fox, §named-configurations): hidden 1024, 24 layers, vocab 32000 with the LM head untied from the
embedding, SwiGLU MLP of width 2816 (hidden_ratio 4), RMSNorm eps 1e-6, init std 0.02. GLA:
4 heads, expand_k 0.5, expand_v 1 (dk 128, dv 256), short conv 4, swish output gate, forget
gate of rank 16 normalised by 16 (the layer's defaults). GDN: 8 heads of 128, expand_v 1,
short conv 4, output gate, no negative eigenvalues. FoX: 16 heads of 64, forget gate with
bias, no QK-norm, no output gate, no window. fla's models have no Selective RoPE (and these
three no position embedding of any kind), so each is timed with fla's default, no position
embedding: rotor's configs compute Selective RoPE + phase gate on top, which these do not.
Their parameter counts equal rotor's NoPE configs (374.67M, 399.72M, 374.26M).

A step is what rotor's training step does, in fla's idiom: zero_grad, a forward with labels
under bf16 autocast over fp32 weights (fla's fused RMSNorm, fused SwiGLU and fused
cross-entropy over the logits, its defaults), backward, global-norm gradient clipping at 1.0,
torch.optim.AdamW(fused=True) with lr 1e-3, betas (0.9, 0.95), eps 1e-8, weight decay 0.1
except on norm weights, biases, A_log and dt_bias (docs/models.md §training-recipe). Tokens and labels are uniform
random ids, the same batch every step (fla shifts the labels inside the model). Eager mode,
no torch.compile. After --warmup steps (the first one compiles and autotunes the Triton
kernels), each of --steps steps is timed between two CUDA events; the median is reported,
with tokens/s and the peak of torch.cuda.max_memory_allocated() over the timed steps (weights,
gradients, AdamW moments, activations; step_bench's peak is its memory pool's over all steps). One line per model:

    fla_step model=<m> shape=<B>x<T> ms=<x> tok_s=<y> peak_gib=<z> params=<n> loss=<l> [note=...]

after a header line naming the device and the torch, triton and fla versions.

    python3 bench/fla_step.py [--steps N] [--warmup N] [--models gla,gdn,fox]
                              [--bypass-hopper-guard]

--bypass-hopper-guard: fla refuses the backward of gated chunk kernels (Gated DeltaNet's
chunk_bwd_dqkwg) on Hopper with Triton >= 3.4.0 and < 3.7.1, whose code generation gives
wrong gradients there (fla issue #640). The flag turns off that one check (the Triton
version test in fla/ops/common/chunk_o.py) so that the kernels' speed can be timed; the
gradients, and so the weights after the step, are known to be wrong, and the line of every
model that went through the bypassed check carries note=hopper-guard-bypassed. Without it
such a model prints its FAIL line.

Needs torch, triton, transformers, einops and fla-core + flash-linear-attention 0.6.0 (pure
Python: `pip download fla-core==0.6.0 flash-linear-attention==0.6.0 --no-deps`, both wheels
unzipped onto PYTHONPATH; scripts/gpu_check.sh does this, part flastep). Prints
"skipped: ..." and exits 77 without torch, a GPU or fla; a model that fails prints
"FAIL <model>: <error>", the others still run, and the exit status is then 1.
"""
import argparse
import gc
import importlib
import statistics
import sys
import time

from fla_common import FLA_VERSION, ROWS, SEQ_LEN, require_torch_gpu, skip  # noqa: E402

VOCAB, HIDDEN, LAYERS = 32000, 1024, 24
MLP_WIDTH = 256 * -(-int(HIDDEN * 4 * 2 / 3) // 256)  # docs/models.md §backbone: 2816 for hidden_ratio 4
# `rotor info configs/<stack>-370m-nope.ini`: the same models without a position embedding
ROTOR_NOPE_PARAMS = {"gla": 374_672_384, "gdn": 399_724_928, "fox": 374_261_120}
MODELS = ("gla", "gdn", "fox")

# every line as soon as it is printed: the log of a run cut short by a time limit keeps it
sys.stdout.reconfigure(line_buffering=True)
torch = require_torch_gpu()
try:
    import triton
    import fla
    from fla.models.forgetting_transformer import (ForgettingTransformerConfig,
                                                   ForgettingTransformerForCausalLM)
    from fla.models.gated_deltanet import GatedDeltaNetConfig, GatedDeltaNetForCausalLM
    from fla.models.gla import GLAConfig, GLAForCausalLM
except ImportError as e:
    skip(f"fla {FLA_VERSION} models, transformers or triton not importable ({e}); `pip download "
         f"fla-core=={FLA_VERSION} flash-linear-attention=={FLA_VERSION} --no-deps` and unzip "
         f"both onto PYTHONPATH")

DEV = "cuda"


def dist_version(name):
    """Version of an installed (or unzipped wheel's) distribution, or "?"."""
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # no dist-info on the path: the package was copied some other way
        return "?"


# The fla config per model. Common fields: docs/models.md §backbone and §named-configurations; fuse_norm, fuse_swiglu and
# fuse_cross_entropy are fla's defaults, written out so that a change of default shows here.
COMMON = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, hidden_ratio=4,
              intermediate_size=MLP_WIDTH, hidden_act="swish", norm_eps=1e-6,
              initializer_range=0.02, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
              fuse_norm=True, fuse_swiglu=True, fuse_cross_entropy=True,
              fuse_linear_cross_entropy=False, use_l2warp=False, use_cache=False)


def make_config(name):
    if name == "gla":  # docs/models.md §gla: dk = 1024 * 0.5 / 4 = 128, dv = 1024 / 4 = 256
        return GLAForCausalLM, GLAConfig(
            **COMMON, num_heads=4, num_kv_heads=None, expand_k=0.5, expand_v=1.0,
            attn_mode="chunk", use_short_conv=True, conv_size=4, use_output_gate=True,
            feature_map=None, clamp_min=None, use_gk=True, use_gv=False,
            elementwise_affine=True)
    if name == "gdn":  # docs/models.md §gated-deltanet: dk = dv = 128
        return GatedDeltaNetForCausalLM, GatedDeltaNetConfig(
            **COMMON, num_heads=8, num_v_heads=None, head_dim=128, expand_v=1.0,
            attn_mode="chunk", use_short_conv=True, conv_size=4, use_gate=True,
            output_gate_activation="swish", allow_neg_eigval=False)
    if name == "fox":  # docs/models.md §fox: dh = 1024 / 16 = 64
        return ForgettingTransformerForCausalLM, ForgettingTransformerConfig(
            **COMMON, num_heads=16, num_kv_heads=None, qkv_bias=False, qk_norm=False,
            window_size=None, use_output_gate=False, elementwise_affine=True)
    raise ValueError(name)


def param_groups(model, weight_decay):
    """docs/models.md §training-recipe: weight decay on the matrices (and conv kernels), none on norm weights,
    biases, and what fla marks _no_weight_decay (A_log, dt_bias)."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if (p.ndim < 2 or getattr(p, "_no_weight_decay", False)
                or name.endswith((".A_log", ".dt_bias"))):
            no_decay.append(p)
        else:
            decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


class HopperGuardBypass:
    """Stands in for fla.ops.common.chunk_o.TRITON_ABOVE_3_7_1, which that module reads only
    in chunk_bwd_dqkwg's check `g is not None and IS_NVIDIA_HOPPER and TRITON_ABOVE_3_4_0
    and not TRITON_ABOVE_3_7_1`: it is true, so the check never raises, and it counts the
    times it was asked where the real value was false, i.e. where the check would have
    raised (the `and` chain reaches it only on Hopper with Triton >= 3.4.0 and a gate)."""

    def __init__(self, real):
        self.real = bool(real)
        self.hits = 0

    def __bool__(self):
        if not self.real:
            self.hits += 1
        return True


def bypass_hopper_guard():
    """Installs HopperGuardBypass; None (with a note) where fla has no such check."""
    chunk_o = importlib.import_module("fla.ops.common.chunk_o")
    if not hasattr(chunk_o, "TRITON_ABOVE_3_7_1"):
        print(f"note: --bypass-hopper-guard: fla {fla.__version__} has no TRITON_ABOVE_3_7_1 "
              f"check in fla.ops.common.chunk_o; nothing bypassed")
        return None
    guard = HopperGuardBypass(chunk_o.TRITON_ABOVE_3_7_1)
    chunk_o.TRITON_ABOVE_3_7_1 = guard
    return guard


def bench(name, steps, warmup, guard):
    """Builds the model, times its steps, prints its line."""
    torch.manual_seed(1234)
    cls, config = make_config(name)
    model = cls(config).to(DEV)  # fp32 master weights
    model.train()
    nparams = sum(p.numel() for p in model.parameters())
    if nparams != ROTOR_NOPE_PARAMS[name]:
        print(f"note: fla's {name} has {nparams} parameters, rotor's {name}-370m-nope "
              f"{ROTOR_NOPE_PARAMS[name]}: the shapes differ")
    opt = torch.optim.AdamW(param_groups(model, 0.1), lr=1e-3, betas=(0.9, 0.95), eps=1e-8,
                            fused=True)
    gen = torch.Generator(device=DEV).manual_seed(1)
    tokens = torch.randint(0, VOCAB, (ROWS, SEQ_LEN), device=DEV, generator=gen)
    labels = torch.randint(0, VOCAB, (ROWS, SEQ_LEN), device=DEV, generator=gen)
    params = list(model.parameters())
    hits0 = guard.hits if guard else 0

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = model(input_ids=tokens, labels=labels, use_cache=False, return_dict=True).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
        opt.step()
        return loss

    for i in range(warmup):  # progress: Triton's compiling and autotuning take minutes
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        print(f"  {name}: warm-up step {i + 1} of {warmup} took {time.perf_counter() - t0:.1f} s")
    # the peak of the steady steps, not of Triton's autotuning in the first one
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    ms = statistics.median(times)
    loss = loss.item()
    peak = torch.cuda.max_memory_allocated() / 2**30
    note = " note=hopper-guard-bypassed" if guard and guard.hits > hits0 else ""
    print(f"fla_step model={name} shape={ROWS}x{SEQ_LEN} ms={ms:.1f} "
          f"tok_s={ROWS * SEQ_LEN / (ms / 1e3):.0f} peak_gib={peak:.2f} params={nparams} "
          f"loss={loss:.3f}{note}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=5, help="timed steps (median)")
    ap.add_argument("--warmup", type=int, default=2,
                    help="untimed steps first (Triton compiles and autotunes in the first)")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated subset of gla,gdn,fox")
    ap.add_argument("--bypass-hopper-guard", action="store_true",
                    help="time GDN on Hopper with Triton 3.4.0-3.7.0 although fla refuses "
                         "its backward there (fla #640: wrong gradients); marks the line")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 1:
        ap.error("--steps and --warmup need at least 1")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    bad = [m for m in models if m not in MODELS]
    if bad or not models:
        ap.error(f"--models {args.models}: choose from {','.join(MODELS)}")
    if fla.__version__ != FLA_VERSION:
        print(f"note: fla {fla.__version__}, not the {FLA_VERSION} this benchmark was written for")
    guard = bypass_hopper_guard() if args.bypass_hopper_guard else None
    print(f"device {torch.cuda.get_device_name()}: torch {torch.__version__}, triton "
          f"{triton.__version__}, fla-core {dist_version('fla-core')}, flash-linear-attention "
          f"{dist_version('flash-linear-attention')} (fla {fla.__version__}); {ROWS} x "
          f"{SEQ_LEN}, bf16 autocast, fused AdamW, median of {args.steps} steps after "
          f"{args.warmup} warm-up{', Hopper guard bypassed' if guard else ''}")
    failed = 0
    for name in models:
        try:
            bench(name, args.steps, args.warmup, guard)
        except Exception as e:  # one model's failure (fla's guard, a compile error) spares the rest
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            failed = 1
        gc.collect()  # the model, its optimizer and a failed step's graph
        torch.cuda.empty_cache()
    sys.exit(failed)


if __name__ == "__main__":
    main()
