"""Fast (chunked / parallel) mixer cores used by `bench`, and checked against the naive recurrent
cores of ref_model.py by `selftest`.

All cores take q already multiplied by the softmax / readout scale, tensors in [B, T, H, *] layout,
and an optional bool tensor `start` [B, T] marking document starts (document masking, docs/models.md §backbone).
Document masking is handled exactly with segment masks: a pair (i, j) interacts only when i and j
lie in the same document, and the state carried into a chunk reaches position i only when no
document starts between the chunk start and i.  Log-gate cumulative sums are taken across document
boundaries, but only differences inside one document are ever used, so they stay exact.
"""
import math

import torch
import torch.nn.functional as F

NEG_INF = float("-inf")


def _chunk(x, n_chunks, size):
    """[B, T, H, *] -> [B, H, N, C, *], zero padded at the end of time."""
    x = x.transpose(1, 2)
    pad = n_chunks * size - x.shape[2]
    if pad:
        x = F.pad(x, (0, 0) * (x.dim() - 3) + (0, pad))
    return x.reshape(x.shape[0], x.shape[1], n_chunks, size, *x.shape[3:])


def _doc_masks(start, n_chunks, size):
    """Segment masks for chunked cores (all shaped to broadcast over heads).

    same  [B,1,N,C,C]  position i and j of a chunk are in the same document
    first [B,1,N,C]    no document starts in the chunk up to and including i (the carried state reaches i)
    last  [B,1,N,C]    j is in the same document as the chunk's last position
    keep  [B,1,N]      no document starts anywhere in the chunk (the carried state survives the chunk)
    """
    B, T = start.shape
    s = F.pad(start, (0, n_chunks * size - T)).view(B, 1, n_chunks, size).long()
    seg = s.cumsum(-1)  # document index inside the chunk; 0 = the document carried in
    same = seg[..., :, None] == seg[..., None, :]
    first = seg == 0
    last = seg == seg[..., -1:]
    keep = seg[..., -1] == 0
    return same, first, last, keep



def _chunk_decays(G, x, start, N, chunk):
    """From the in-chunk cumulative log decays G [B,H,N,C]: L[t,s] = exp(G_t - G_s) for s <= t,
    gam = exp(G) (the decay from the chunk start), x [B,H,N,C,*] decayed to the chunk end, and
    each chunk's total decay [B,H,N]; with document starts, nothing decays across one."""
    tril = torch.ones(chunk, chunk, dtype=torch.bool, device=G.device).tril()
    L = torch.exp((G[..., :, None] - G[..., None, :]).masked_fill(~tril, NEG_INF))
    gam = torch.exp(G)
    x_dec = x * torch.exp(G[..., -1:] - G)[..., None]
    decay = torch.exp(G[..., -1])
    if start is not None:
        same, first, last, keep = _doc_masks(start, N, chunk)
        L, gam, x_dec, decay = L * same, gam * first, x_dec * last[..., None], decay * keep
    return L, gam, x_dec, decay

def _gla_scores(q, k, b, blocks):
    """Intra-block GLA scores A[i, j] = sum_c q_ic k_jc exp(b_ic - b_jc) for j <= i (0 above), for
    q, k, b [..., n, K] with b the cumulative log decay (non-increasing along n).

    Only non-positive ranges are exponentiated: the n rows are split into sub-blocks of size
    blocks[0]; scores between different sub-blocks use the first row r of the query sub-block as
    reference, exp(b_i - b_r) * exp(b_r - b_j) with both exponents <= 0, and scores inside one
    sub-block recurse with blocks[1:]; the last level is formed pairwise.
    """
    n, K = q.shape[-2:]
    lead = q.shape[:-2]
    if not blocks:
        tril = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        expo = (b[..., :, None, :] - b[..., None, :, :]).masked_fill(~tril[..., None], NEG_INF)
        return (q[..., :, None, :] * k[..., None, :, :] * torch.exp(expo)).sum(-1)
    c = blocks[0]
    S = n // c
    qs, ks, bs = (x.reshape(*lead, S, c, K) for x in (q, k, b))
    ref = bs[..., :1, :]  # [..., S, 1, K]
    before = torch.arange(n, device=q.device)[None, :] < (torch.arange(S, device=q.device) * c)[:, None]
    expo = (ref - b.unsqueeze(-3)).masked_fill(~before[..., None], NEG_INF)  # [..., S, n, K]
    a_off = torch.einsum("...sik,...sjk->...sij", qs * torch.exp(bs - ref), k.unsqueeze(-3) * torch.exp(expo))
    a_diag = _gla_scores(qs, ks, bs, blocks[1:])  # [..., S, c, c]
    eye = torch.eye(S, dtype=q.dtype, device=q.device)
    return (a_off + torch.einsum("...sij,st->...sitj", a_diag, eye).reshape(*lead, S, c, n)).reshape(*lead, n, n)


def gla_chunk(q, k, v, log_a, start=None, chunk=64, blocks=(16, 4)):
    """Chunked GLA (docs/models.md §gla): S_t = Diag(a_t) S_{t-1} + k_t^T v_t, o_t = q_t S_t.

    Gates stay in log space (fp32 in training) and only non-positive ranges are exponentiated:
    intra-chunk scores by _gla_scores (sub-chunks of 16, then 4, then pairwise), inter-chunk
    contributions through the states entering each chunk.
    """
    B, T, H, K = q.shape
    Vd = v.shape[-1]
    N = math.ceil(T / chunk)
    q, k, v, log_a = (_chunk(x, N, chunk) for x in (q, k, v, log_a))
    b = log_a.cumsum(-2)  # [B,H,N,C,K] inclusive log decay from the chunk start
    A = _gla_scores(q, k, b, blocks)

    b_last = b[..., -1:, :]
    k_dec = k * torch.exp(b_last - b)  # key decayed to the chunk end
    q_dec = q * torch.exp(b)  # query decayed from the chunk start
    decay = torch.exp(b_last.squeeze(-2))  # [B,H,N,K]
    if start is not None:
        same, first, last, keep = _doc_masks(start, N, chunk)
        A = A * same
        k_dec = k_dec * last[..., None]
        q_dec = q_dec * first[..., None]
        decay = decay * keep[..., None]
    o = A @ v

    # inter-chunk: states entering each chunk, then one batched readout
    kv = k_dec.transpose(-1, -2) @ v  # [B,H,N,K,V]
    state = q.new_zeros(B, H, K, Vd)
    states = []
    for dec_n, kv_n in zip(decay.unbind(2), kv.unbind(2)):  # unbind: cheap backward, unlike indexing
        states.append(state)
        state = dec_n[..., None] * state + kv_n
    o = o + q_dec @ torch.stack(states, 2)
    return o.reshape(B, H, N * chunk, Vd)[:, :, :T].transpose(1, 2)


def gdn_chunk(q, k, v, g, beta, start=None, chunk=64):
    """Chunked Gated DeltaNet (docs/models.md §gated-deltanet) with the WY/UT transform; DeltaNet (§deltanet) is g = 0.

    Inside a chunk with inclusive log decays G and S0 the entering state, the pseudo-values
    u_t = beta_t (v_t - e^{g_t} S_{t-1}^T k_t) satisfy (I + A) U = beta V - diag(beta e^G) K S0 with
    A[t, j] = beta_t (k_t . k_j) e^{G_t - G_j} (j < t), solved by a unit lower-triangular solve; then
    O = (Q e^G) S0 + (Q K^T o e^{G_i - G_j})_{j<=i} U and S_C = e^{G_C} S0 + (K e^{G_C - G})^T U.
    """
    B, T, H, K = q.shape
    Vd = v.shape[-1]
    N = math.ceil(T / chunk)
    q, k, v = (_chunk(x, N, chunk) for x in (q, k, v))
    g, beta = (_chunk(x[..., None], N, chunk)[..., 0] for x in (g, beta))  # [B,H,N,C]
    G = g.cumsum(-1)
    L, gam, k_dec, decay = _chunk_decays(G, k, start, N, chunk)
    A = (beta[..., None] * (k @ k.transpose(-1, -2)) * L).tril(-1)
    rhs = torch.cat([v * beta[..., None], k * (beta * gam)[..., None]], -1)
    eye = torch.eye(chunk, dtype=q.dtype, device=q.device)
    X = torch.linalg.solve_triangular(A + eye, rhs, upper=False, unitriangular=True)
    w_v, w_k = X[..., :Vd], X[..., Vd:]
    qk = (q @ k.transpose(-1, -2)) * L
    q_dec = q * gam[..., None]

    state = q.new_zeros(B, H, K, Vd)
    outs = []
    for w_v_n, w_k_n, q_n, qk_n, dec_n, k_n in zip(*(x.unbind(2) for x in (w_v, w_k, q_dec, qk, decay, k_dec))):
        u = w_v_n - w_k_n @ state
        outs.append(q_n @ state + qk_n @ u)
        state = dec_n[..., None, None] * state + k_n.transpose(-1, -2) @ u
    o = torch.stack(outs, 2)
    return o.reshape(B, H, N * chunk, Vd)[:, :, :T].transpose(1, 2)


def fox_parallel(q, k, v, log_f, start=None, block=256):
    """FoX (docs/models.md §fox): causal softmax attention with the forget-gate bias c_i - c_j, c = cumsum(log f).

    Query blocks of `block` rows attend to keys [0, block end) only (the causal lower half). The bias
    rides in the score matmul as one extra channel: q' = [q, 1], k'_j = [k_j, c_r - c_j] with r the
    block's first query, which differs from c_i - c_j by a per-row constant that softmax ignores.
    log_f None: no forget gate (the Transformer), c = 0.
    """
    B, T, H, D = q.shape
    if log_f is None:
        log_f = q.new_zeros(B, T, H)
    q, k, v = (x.transpose(1, 2).contiguous() for x in (q, k, v))  # [B,H,T,D]
    c = log_f.transpose(1, 2).cumsum(-1)  # [B,H,T]
    seg = start.long().cumsum(-1)[:, None] if start is not None else None  # [B,1,T]
    ones = q.new_ones(B, H, T, 1)
    outs = []
    for r in range(0, T, block):
        e = min(r + block, T)
        qa = torch.cat([q[:, :, r:e], ones[:, :, r:e]], -1)
        ka = torch.cat([k[:, :, :e], (c[:, :, r:r + 1] - c[:, :, :e])[..., None]], -1)
        scores = qa @ ka.transpose(-1, -2)  # [B,H,e-r,e]
        allowed = torch.arange(e, device=q.device)[None, :] <= torch.arange(r, e, device=q.device)[:, None]
        if seg is not None:
            allowed = allowed & (seg[..., r:e, None] == seg[..., None, :e])
        p = torch.softmax(scores.masked_fill(~allowed, NEG_INF), -1)
        outs.append(p @ v[:, :, :e])
    return torch.cat(outs, 2).transpose(1, 2)


def ssd_chunk(x, dt, A, Bm, Cm, start=None, chunk=64):
    """Chunked Mamba2 SSD (docs/models.md §mamba2), Mamba2's own chunked form: per head
    h_t = e^{dt_t A} h_{t-1} + (dt_t x_t)^T B_t, y_t = h_t C_t. Inside a chunk with inclusive
    log decays G (G_t = sum dt A), y = ((C B^T) o e^{G_i - G_j})_{j<=i} (dt x) + e^G C h0; the
    state leaving it is e^{G_C} h0 + (dt x e^{G_C - G})^T B. x [B,T,H,P], dt [B,T,H], A [H],
    Bm and Cm [B,T,H,N]."""
    Bsz, T, H, P = x.shape
    N = math.ceil(T / chunk)
    xd, Bc, Cc = (_chunk(t, N, chunk) for t in (x * dt[..., None], Bm, Cm))  # [B,H,N,C,*]
    G = _chunk((dt * A)[..., None], N, chunk)[..., 0].cumsum(-1)  # [B,H,N,C]
    L, gam, x_dec, decay = _chunk_decays(G, xd, start, N, chunk)
    y = ((Cc @ Bc.transpose(-1, -2)) * L) @ xd
    hx = x_dec.transpose(-1, -2) @ Bc  # [B,H,N,P,N]: each chunk's own contribution to the state
    state = x.new_zeros(Bsz, H, P, Bm.shape[-1])
    states = []
    for dec_n, hx_n in zip(decay.unbind(2), hx.unbind(2)):
        states.append(state)
        state = dec_n[..., None, None] * state + hx_n
    y = y + (Cc * gam[..., None]) @ torch.stack(states, 2).transpose(-1, -2)
    return y.reshape(Bsz, H, N * chunk, P)[:, :, :T].transpose(1, 2)


def cdiag_chunk(b, loga, angle, start=None, chunk=32):
    """The LRU / RotRNN scan (docs/models.md §lru, §rotrnn) chunked: per complex channel
    h_t = lambda h_{t-1} + b_t with lambda = exp(loga + i angle), zeroed at document starts.
    Inside a chunk, h_i = sum_{j<=i, same document} lambda^(i-j) b_j + lambda^(i+1) h0 (h0 the
    state entering it, reaching i when no document starts before i in the chunk); the chunks'
    entering states by a loop over chunks. b complex [B, T, C]; loga, angle [C]."""
    Bsz, T, Ch = b.shape
    N = math.ceil(T / chunk)
    bc = _chunk(b[:, :, None], N, chunk)[:, 0]  # [B,N,L,C]
    lam = torch.complex(loga, angle)
    i = torch.arange(chunk, device=b.device)
    lag = i[:, None] - i[None, :]
    kern = torch.exp(lag.clamp_min(0).to(loga.dtype)[..., None] * lam) * (lag >= 0)[..., None]  # [L,L,C]
    reach = torch.exp((i + 1).to(loga.dtype)[:, None] * lam)  # lambda^(i+1) [L,C]
    if start is None:
        y = torch.einsum("ijc,bnjc->bnic", kern, bc)
        reach = reach.expand(Bsz, N, chunk, Ch)
    else:
        same, first, _, _ = _doc_masks(start, N, chunk)
        y = torch.einsum("bnij,ijc,bnjc->bnic", same[:, 0].to(kern.dtype), kern, bc)
        reach = reach * first[:, 0, ..., None]
    h = b.new_zeros(Bsz, Ch)
    outs = []
    for y_n, reach_n in zip(y.unbind(1), reach.unbind(1)):  # y_n [B,L,C]
        y_n = y_n + reach_n * h[:, None]
        outs.append(y_n)
        h = y_n[:, -1]
    return torch.cat(outs, 1)[:, :T]
