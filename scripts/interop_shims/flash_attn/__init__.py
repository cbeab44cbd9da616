"""flash-attn's two functions that fla's Attention calls, in torch, for scripts/check_interop.py
on a machine without flash-attn (a CUDA-only package): on the CPU the RoPE Transformer then runs
fla's own layer with this exact softmax attention in place of the kernel. Causal masks are
aligned to the bottom right, as flash-attn's with fewer queries than keys (decoding)."""
import torch


def _attend(q, k, v, causal):
    """q [Tq, H, D], k and v [Tk, H, D]."""
    s = torch.einsum("qhd,khd->hqk", q.float(), k.float()) * q.shape[-1] ** -0.5
    if causal:
        Tq, Tk = q.shape[0], k.shape[0]
        allowed = torch.arange(Tk, device=q.device)[None, :] <= torch.arange(Tq, device=q.device)[:, None] + Tk - Tq
        s = s.masked_fill(~allowed, float("-inf"))
    return torch.einsum("hqk,khd->qhd", s.softmax(-1), v.float()).to(q.dtype)


def _check(window_size):
    if tuple(window_size) != (-1, -1):
        raise NotImplementedError("flash_attn shim: sliding windows are not implemented")


def flash_attn_func(q, k, v, causal=False, window_size=(-1, -1), **kwargs):
    _check(window_size)
    return torch.stack([_attend(q[b], k[b], v[b], causal) for b in range(q.shape[0])])


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None, causal=False,
                           window_size=(-1, -1), **kwargs):
    _check(window_size)
    out = [_attend(q[cu_seqlens_q[i]:cu_seqlens_q[i + 1]], k[cu_seqlens_k[i]:cu_seqlens_k[i + 1]],
                   v[cu_seqlens_k[i]:cu_seqlens_k[i + 1]], causal) for i in range(len(cu_seqlens_q) - 1)]
    return torch.cat(out)
