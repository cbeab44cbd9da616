#!/usr/bin/env python3
"""Data-parallel scaling model of rotor's 370M training on 8 to 512 H100s: gradient bytes per
step, NCCL ring all-reduce time over NVLink and InfiniBand, how much of it the bucketed
overlap hides, and ZeRO-1 memory per GPU. Prints the Markdown tables of docs/scaling.md,
whose "Model" section gives the formulas and where every constant comes from.

    python3 scripts/scaling_model.py            # all three families
    python3 scripts/scaling_model.py --nvlink 450 --ib 45 --alpha-ib 20
"""
import argparse
import math

GIB = 1024 ** 3
SEQ = 4096            # tokens per sequence (Section 4 of the Selective RoPE paper)
PAPER_BATCH = 128     # sequences per step: 35B tokens / Table 4's 66,758 steps / 4096
V, D = 32000, 1024    # vocabulary and width: the LM head's and the embedding's buckets

# family: parameters, measured tokens/s of one H100 at micro_batch 4 x 4096 (docs/gpu.md,
# 2026-11-24), and the GiB that `rotor info` gives at micro_batch 4: activations saved +
# scratch (configs/*-370m-selective-pg-bias.ini)
FAMILIES = {
    "gla": (376.4e6, 107.7e3, 15.91 + 0.87),
    "gdn": (401.6e6, 76.4e3, 19.16 + 0.99),
    "fox": (375.5e6, 85.5e3, 13.17 + 0.74),
}


def allreduce_s(nbytes, n, gpus_per_node, nvlink, ib, alpha_nv, alpha_ib):
    """Ring all-reduce of nbytes over n GPUs: 2(n-1)/n * S / bus bandwidth + 2(n-1) * alpha.
    Within a node the ring runs over NVLink; across nodes every GPU's ring traffic also
    crosses its NIC, so the slowest link (InfiniBand) sets the bandwidth."""
    if n == 1:
        return 0.0
    bw, alpha = (nvlink, alpha_nv) if n <= gpus_per_node else (ib, alpha_ib)
    return 2 * (n - 1) / n * nbytes / (bw * 1e9) + 2 * (n - 1) * alpha * 1e-6


def tree_latency_s(n, gpus_per_node, alpha_nv, alpha_ib):
    """NCCL's tree all-reduce replaces the ring's 2(n-1) latency steps by about 2 log2(n)."""
    alpha = alpha_nv if n <= gpus_per_node else alpha_ib
    return 2 * math.log2(n) * alpha * 1e-6 if n > 1 else 0.0


def row(fam, n, seqs_per_gpu, a):
    params, rate, act_gib = FAMILIES[fam]
    micro = min(4, seqs_per_gpu)
    accum = seqs_per_gpu // micro
    grad_bytes = 4 * params                           # fp32 gradients
    t_compute = seqs_per_gpu * SEQ / rate             # forward + backward of the step
    t_ring = allreduce_s(grad_bytes, n, a.gpus_per_node, a.nvlink, a.ib, a.alpha_nv, a.alpha_ib)
    t_bw = allreduce_s(grad_bytes, n, a.gpus_per_node, a.nvlink, a.ib, 0, 0)
    t_ar = min(t_ring, t_bw + tree_latency_s(n, a.gpus_per_node, a.alpha_nv, a.alpha_ib))
    # buckets overlap the backward of the last micro-batch (about 2/3 of its forward+backward);
    # the embedding's bucket (V x D fp32) starts when the backward ends and is never hidden
    hide = (2 / 3) * t_compute / accum
    t_emb = allreduce_s(4 * V * D, n, a.gpus_per_node, a.nvlink, a.ib, 0, 0)
    exposed = max(0.0, t_ar - t_emb - hide) + t_emb
    eff = t_compute / (t_compute + exposed)
    # memory per GPU: fp32 weights + fp32 gradients + bf16 copy, AdamW moments (2 x fp32)
    # divided by n with ZeRO-1, the activations at micro_batch 4 (scaled for smaller ones)
    fixed = (4 + 4 + 2) * params / GIB
    moments = 8 * params / GIB
    act = act_gib * micro / 4
    return {
        "n": n, "micro": micro, "accum": accum, "grad_gb": grad_bytes / 1e9,
        "compute_ms": 1e3 * t_compute, "allreduce_ms": 1e3 * t_ar, "hidden_ms": 1e3 * min(hide, max(0, t_ar - t_emb)),
        "exposed_ms": 1e3 * exposed, "eff": eff, "mem": fixed + moments + act, "mem_zero": fixed + moments / n + act,
        "tok_s": n * seqs_per_gpu * SEQ / (t_compute + exposed),
    }


def table(title, fam, rows):
    print(f"#### {title}\n")
    print("| GPUs | micro x accum | all-reduce (ms) | hidden (ms) | exposed (ms) | step compute (ms) "
          "| efficiency | tokens/s | GiB/GPU | GiB/GPU ZeRO-1 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']} | {r['micro']} x {r['accum']} | {r['allreduce_ms']:.1f} | {r['hidden_ms']:.1f} "
              f"| {r['exposed_ms']:.1f} | {r['compute_ms']:.0f} | {100 * r['eff']:.1f}% "
              f"| {r['tok_s'] / 1e6:.2f}M | {r['mem']:.1f} | {r['mem_zero']:.1f} |")
    print()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nvlink", type=float, default=450, help="NCCL all-reduce bus bandwidth in a node, GB/s")
    p.add_argument("--ib", type=float, default=45, help="across nodes, GB/s per GPU (400 Gb/s NIC)")
    p.add_argument("--alpha-nv", type=float, default=5, help="latency per ring step in a node, us")
    p.add_argument("--alpha-ib", type=float, default=20, help="latency per ring step across nodes, us")
    p.add_argument("--gpus-per-node", type=int, default=8)
    p.add_argument("--families", default="gla,gdn,fox")
    a = p.parse_args()
    sizes = [8, 16, 32, 64, 128, 256, 512]
    for fam in a.families.split(","):
        params = FAMILIES[fam][0]
        print(f"### {fam}-370m: {params / 1e6:.1f}M parameters, {4 * params / 1e9:.2f} GB of fp32 gradients a step\n")
        table(f"{fam}: the paper's batch ({PAPER_BATCH} x {SEQ} tokens a step; strong scaling, at most "
              f"{PAPER_BATCH} GPUs)", fam, [row(fam, n, PAPER_BATCH // n, a) for n in sizes if n <= PAPER_BATCH])
        table(f"{fam}: 4 sequences per GPU (weak scaling: the batch grows with the GPUs)", fam,
              [row(fam, n, 4, a) for n in sizes])


if __name__ == "__main__":
    main()
