#!/usr/bin/env python3
"""The baseline of bench/gpu_mixers.c: flash-linear-attention's Triton kernels (fla-core
0.6.0) for GLA, Gated DeltaNet and FoX on the same shapes and input distributions, the
forward and the backward timed apart. Prints the same lines as gpu_mixers,

    op=<name> shape=<B>x<T>x<H>x<K>x<V> fwd_ms=<x> bwd_ms=<y>

where fwd is a training forward (inputs requiring grad, so fla saves what its backward
needs) and bwd the backward alone (torch.autograd.grad over one retained graph). Each time
is the median over --reps repetitions (after warm-up) of a few calls between two CUDA
events. The same work as rotor's ops: scale 1/sqrt(K), no initial state, no final state,
one sequence per row of [B, T, H, K] tensors, gates in fp32 like rotor's, GDN's q and k
L2-normalised before the call (use_qk_l2norm_in_kernel off: rotor's mixer normalises them
outside gdn_fwd too), FoX without window or sink. GLA and GDN keep their chunk states V-first
(state_v_first), as fla's own GatedLinearAttention and GatedDeltaNet layers call them.

    python3 bench/fla_mixers.py [--reps N]

Needs torch, triton and fla-core 0.6.0 (pure Python: `pip download fla-core==0.6.0
--no-deps`, the wheel unzipped onto PYTHONPATH; scripts/gpu_check.sh does this). Prints
"skipped: ..." and exits 77 without them or without a GPU; exits 1 if an op fails or
writes a non-finite value.
"""
import argparse
import statistics
import sys

from fla_common import FLA_VERSION, ROWS, SEQ_LEN, require_torch_gpu, skip  # noqa: E402

WARMUP, CALLS = 3, 5
torch = require_torch_gpu()
import torch.nn.functional as F  # noqa: E402

try:
    import triton
    import fla
    from fla.ops.forgetting_attn import parallel_forgetting_attn
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule
    from fla.ops.gla import chunk_gla
except ImportError as e:
    skip(f"fla {FLA_VERSION} or triton not importable ({e}); "
         f"`pip download fla-core=={FLA_VERSION} --no-deps` and unzip it onto PYTHONPATH")

DEV = "cuda"
BF16 = torch.bfloat16


def time_ms(fn, reps):
    """Median over reps of the mean time of CALLS back-to-back calls, in ms."""
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(CALLS):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / CALLS)
    return statistics.median(times)


def normal(*shape):
    return torch.randn(*shape, device=DEV, dtype=torch.float32).to(BF16)


def uniform(lo, hi, *shape):
    return torch.empty(*shape, device=DEV, dtype=torch.float32).uniform_(lo, hi)


def bench(name, shape, call, inputs, reps):
    """Times call(*inputs) (a training forward returning o) and the backward of o from a
    random dout into every input; fails on a non-finite o or gradient."""
    for x in inputs:
        x.requires_grad_(True)
    fwd = time_ms(lambda: call(*inputs), reps)
    o = call(*inputs)
    dout = torch.randn_like(o)
    grads = []

    def backward():
        grads[:] = torch.autograd.grad(o, inputs, dout, retain_graph=True)

    bwd = time_ms(backward, reps)
    for what, t in [("o", o)] + list(zip(("dq", "dk", "dv"), grads)):
        if not torch.isfinite(t).all():
            raise RuntimeError(f"non-finite values in {what}")
    print(f"op={name} shape={'x'.join(map(str, shape))} fwd_ms={fwd:.4f} bwd_ms={bwd:.4f}",
          flush=True)


def bench_gla(reps, H=4, K=128, V=256):
    q, k, v = normal(ROWS, SEQ_LEN, H, K), normal(ROWS, SEQ_LEN, H, K), normal(ROWS, SEQ_LEN, H, V)
    g = uniform(-0.1, -0.001, ROWS, SEQ_LEN, H, K)  # log alpha per key channel

    def call(q, k, v, g):
        o, _ = chunk_gla(q, k, v, g, scale=K ** -0.5, initial_state=None,
                         output_final_state=False, state_v_first=True)
        return o

    bench("gla", (ROWS, SEQ_LEN, H, K, V), call, [q, k, v, g], reps)


def bench_gdn(reps, H=8, K=128, V=128):
    q = F.normalize(normal(ROWS, SEQ_LEN, H, K).float(), p=2, dim=-1).to(BF16)
    k = F.normalize(normal(ROWS, SEQ_LEN, H, K).float(), p=2, dim=-1).to(BF16)
    v = normal(ROWS, SEQ_LEN, H, V)
    beta, g = uniform(0.05, 0.95, ROWS, SEQ_LEN, H), uniform(-0.5, -0.001, ROWS, SEQ_LEN, H)

    def call(q, k, v, beta, g):
        o, _ = chunk_gated_delta_rule(q, k, v, g, beta, scale=K ** -0.5, initial_state=None,
                                      output_final_state=False, use_qk_l2norm_in_kernel=False,
                                      state_v_first=True)
        return o

    bench("gdn", (ROWS, SEQ_LEN, H, K, V), call, [q, k, v, beta, g], reps)


def bench_fox(reps, H=16, D=64):
    q, k, v = (normal(ROWS, SEQ_LEN, H, D) for _ in range(3))
    logf = uniform(-0.1, -0.001, ROWS, SEQ_LEN, H)  # log forget gates near 0

    def call(q, k, v, logf):
        return parallel_forgetting_attn(q, k, v, logf, scale=D ** -0.5)

    bench("fox", (ROWS, SEQ_LEN, H, D, D), call, [q, k, v, logf], reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=20, help="timed repetitions (median)")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error(f"--reps {args.reps}: needs at least 1")
    if fla.__version__ != FLA_VERSION:
        print(f"note: fla {fla.__version__}, not the {FLA_VERSION} this benchmark was written for")
    torch.manual_seed(20261122)
    print(f"device {torch.cuda.get_device_name()}: fla {fla.__version__} Triton kernels "
          f"(torch {torch.__version__}, triton {triton.__version__}), {ROWS} rows x {SEQ_LEN} "
          f"tokens, median of {args.reps}", flush=True)
    failed = 0
    for run in (bench_gla, bench_gdn, bench_fox):
        name = run.__name__.removeprefix("bench_")
        try:
            run(args.reps)
        except Exception as e:  # one op's failure (a Triton compile error, say) spares the rest
            print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
            failed = 1
        torch.cuda.empty_cache()
    sys.exit(failed)


if __name__ == "__main__":
    main()
