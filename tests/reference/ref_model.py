"""Independent PyTorch reference of the rotor model family (docs/models.md: its mixers, heads and blocks).

The model is built from a Hugging-Face-style config dict and uses fla's tensor names
(docs/formats.md "Checkpoints"), so `model.state_dict()` keys are exactly the checkpoint names.

`forward(input_ids, naive=True)` computes every mixer in its naive form (token-by-token recurrences
for GLA and Gated DeltaNet, an explicit T x T masked softmax for FoX, a token loop for the Selective
RoPE cumulative sum); `naive=False` uses the chunked cores of ref_fast.py.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import ref_fast

L2_EPS = 1e-6  # x / sqrt(sum x^2 + 1e-6): GDN q/k norm and the Selective RoPE input norm
QK_NORM_EPS = 1e-5  # FoX QK-norm (docs/models.md §backbone, §fox)


# ----------------------------------------------------------------------------- helpers

def rms_norm(x, weight, eps):
    """docs/models.md §backbone: y = x * rsqrt(mean(x^2) + eps) * w over the last dim."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def l2_norm(x):
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + L2_EPS)


def swish(x):
    return x * torch.sigmoid(x)


def rotate_half_split(x, angle):
    """docs/models.md §position-embeddings: pairs (j, j+P): (x_j cos a - x_{j+P} sin a, x_j sin a + x_{j+P} cos a)."""
    P = x.shape[-1] // 2
    x1, x2 = x[..., :P], x[..., P:]
    cos, sin = torch.cos(angle), torch.sin(angle)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


class Docs:
    """Document structure of a batch (docs/models.md §backbone document masking).

    With doc_mask, a position starts a document when its input token is bos_token_id, and position 0
    always does. Without doc_mask the whole row is one document (`start` is None).
    """

    def __init__(self, input_ids, cfg, labels=None, truncate=None):
        B, T = input_ids.shape
        # truncated BPTT with carried states (docs/models.md §carried-states): [B, T] True where the state
        # entering a position is carried on without its gradient (a window boundary)
        self.truncate = truncate
        idx = torch.arange(T, device=input_ids.device).expand(B, T)
        # bidirectional scans (docs/models.md §block-dropout-bidirectional): a labeled token also ends its segment
        ends = labels is not None and cfg.get("rotor_bidirectional", False)
        if cfg["doc_mask"] or ends:
            start = input_ids == cfg["bos_token_id"] if cfg["doc_mask"] else torch.zeros_like(input_ids, dtype=torch.bool)
            if ends:
                start[:, 1:] |= labels[:, :-1] != -100
            start[:, 0] = True
            self.start = start
            self.start_idx = torch.where(start, idx, torch.zeros_like(idx)).cummax(1).values
            self.pos = idx - self.start_idx
        else:
            self.start = None
            self.start_idx = None
            self.pos = idx

    def reverse(self, x):
        """x [B, T, ...] with every segment turned around in time (docs/models.md §block-dropout-bidirectional)."""
        B, T = x.shape[0], x.shape[1]
        t = torch.arange(T, device=x.device).expand(B, T)
        if self.start is None:
            return x.flip(1)
        first = torch.where(self.start, t, torch.zeros_like(t)).cummax(1).values
        nxt = torch.where(self.start, t, torch.full_like(t, T)).flip(1).cummin(1).values.flip(1)
        last = torch.cat([nxt[:, 1:], torch.full_like(nxt[:, :1], T)], 1) - 1  # the segment's last token
        src = first + last - t
        return torch.gather(x, 1, src.view(B, T, *([1] * (x.dim() - 2))).expand_as(x))

    def prev(self, x, s):
        """x_{t-s} along dim 1 of x [B, T, C]; zero where t-s precedes the sequence or t's document."""
        y = F.pad(x, (0, 0, s, 0))[:, :x.shape[1]]
        if self.start is not None:
            t = torch.arange(x.shape[1], device=x.device)
            y = y * (self.start_idx <= t - s)[..., None].to(x.dtype)
        return y


def short_conv(x, weight, docs, act):
    """Depthwise causal conv (docs/models.md §gla, §gated-deltanet, §position-embeddings): weight [C, 1, K], tap K-1 multiplies the current token,
    tap 0 the token K-1 steps back; history before the document start is zero."""
    K = weight.shape[-1]
    y = weight[:, 0, K - 1] * x
    for s in range(1, K):
        y = y + weight[:, 0, K - 1 - s] * docs.prev(x, s)
    if act == "silu":
        y = F.silu(y)
    elif act is not None:
        raise ValueError(f"unsupported conv activation {act!r}")
    return y


# ----------------------------------------------------------------------------- naive mixer cores

def _restart(x, start, t):
    """x (batch first) with the rows whose document starts at token t zeroed; x itself when start is None."""
    if start is None:
        return x
    return x * (~start[:, t]).to(x.dtype).view(-1, *[1] * (x.dim() - 1))


def gla_naive(q, k, v, log_a, start):
    """docs/models.md §gla recurrence, one token at a time: S_t = Diag(a_t) S_{t-1} + k_t^T v_t, o_t = q_t S_t
    (q pre-scaled). The state is zeroed at document starts."""
    B, T, H, K = q.shape
    state = q.new_zeros(B, H, K, v.shape[-1])
    out = []
    for t in range(T):
        a = _restart(torch.exp(log_a[:, t]), start, t)
        state = a[..., None] * state + k[:, t, :, :, None] * v[:, t, :, None, :]
        out.append(torch.einsum("bhk,bhkv->bhv", q[:, t], state))
    return torch.stack(out, 1)


def gdn_naive(q, k, v, g, beta, start):
    """docs/models.md §gated-deltanet recurrence, one token at a time:
    S_t = e^{g_t} (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T, o_t = S_t^T q_t (q pre-scaled)."""
    B, T, H, K = q.shape
    state = q.new_zeros(B, H, K, v.shape[-1])
    out = []
    for t in range(T):
        a = _restart(torch.exp(g[:, t]), start, t)
        s = a[..., None, None] * state
        kt, bt = k[:, t], beta[:, t][..., None, None]
        s = s - bt * kt[..., :, None] * torch.einsum("bhk,bhkv->bhv", kt, s)[..., None, :]
        state = s + bt * kt[..., :, None] * v[:, t, :, None, :]
        out.append(torch.einsum("bhk,bhkv->bhv", q[:, t], state))
    return torch.stack(out, 1)


def delta_naive(q, k, v, beta, start):
    """docs/models.md §deltanet, the delta rule without decay, in its error-correcting form:
    S_t = S_{t-1} + b_t k_t (v_t - S_{t-1}^T k_t)^T, o_t = S_t^T q_t (q pre-scaled)."""
    B, T, H, K = q.shape
    state = q.new_zeros(B, H, K, v.shape[-1])
    out = []
    for t in range(T):
        state = _restart(state, start, t)
        kt = k[:, t]
        err = v[:, t] - torch.einsum("bhk,bhkv->bhv", kt, state)
        state = state + beta[:, t][..., None, None] * kt[..., :, None] * err[..., None, :]
        out.append(torch.einsum("bhk,bhkv->bhv", q[:, t], state))
    return torch.stack(out, 1)


def ssd_naive(x, dt, A, B, C, start):
    """docs/models.md §mamba2 Mamba2 SSD per head, one token at a time: h_t = e^{dt_t A} h_{t-1} + (dt_t x_t)^T B_t
    (state [P, N]), y_t = h_t C_t. x [B,T,H,P], dt [B,T,H], A [H], B and C [B,T,H,N]."""
    Bsz, T, H, P = x.shape
    state = x.new_zeros(Bsz, H, P, B.shape[-1])
    out = []
    for t in range(T):
        a = _restart(torch.exp(dt[:, t] * A), start, t)
        state = a[..., None, None] * state + (dt[:, t, :, None] * x[:, t])[..., None] * B[:, t, :, None, :]
        out.append(torch.einsum("bhpn,bhn->bhp", state, C[:, t]))
    return torch.stack(out, 1)


def cdiag_naive(b, loga, angle, start):
    """docs/models.md §lru, §rotrnn: the complex diagonal recurrence h_t = lambda h_{t-1} + b_t with
    lambda = exp(loga + i angle) per channel, one token at a time (b complex [B, T, C]); the state is
    zeroed at document starts."""
    lam = torch.exp(torch.complex(loga, angle))
    h = b.new_zeros(b.shape[0], b.shape[2])
    out = []
    for t in range(b.shape[1]):
        h = _restart(h, start, t)
        h = lam * h + b[:, t]
        out.append(h)
    return torch.stack(out, 1)


def rotrnn_naive(u, P, gamma, theta, xi, B, start):
    """docs/models.md §rotrnn in the state's own basis, one token at a time: per head,
    x_t = gamma A x_{t-1} + xi B u_t with A = P Theta P^T, Theta the 2x2 rotations
    [[cos, -sin], [sin, cos]] by theta on the pairs (2i, 2i+1). u [Bsz, T, d]; P [H, n, n];
    B [H, n, d]. Returns x [Bsz, T, H, n]; the state is zeroed at document starts."""
    H, n = P.shape[0], P.shape[1]
    c, s = torch.cos(theta), torch.sin(theta)  # [H, n/2]
    Theta = u.new_zeros(H, n, n)
    idx = torch.arange(n // 2)
    Theta[:, 2 * idx, 2 * idx], Theta[:, 2 * idx, 2 * idx + 1] = c, -s
    Theta[:, 2 * idx + 1, 2 * idx], Theta[:, 2 * idx + 1, 2 * idx + 1] = s, c
    A = gamma[:, None, None] * P @ Theta @ P.transpose(1, 2)
    x = u.new_zeros(u.shape[0], H, n)
    out = []
    for t in range(u.shape[1]):
        x = _restart(x, start, t)
        x = torch.einsum("hij,bhj->bhi", A, x) + xi[:, None] * torch.einsum("hid,bd->bhi", B, u[:, t])
        out.append(x)
    return torch.stack(out, 1)


def fox_naive(q, k, v, log_f, start):
    """docs/models.md §fox: o_i = sum_{j<=i} softmax_j(q_i.k_j + c_i - c_j) v_j (q pre-scaled), written out as
    an explicit T x T masked softmax; keys of other documents are masked. log_f None: no forget
    gate (the Transformer, §transformer), plain causal softmax attention."""
    B, T, H, D = q.shape
    logits = torch.einsum("bihd,bjhd->bhij", q, k)
    if log_f is not None:
        c = torch.cumsum(log_f, 1).transpose(1, 2)  # [B,H,T]
        logits = logits + (c[..., :, None] - c[..., None, :])
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    allowed = (j <= i).expand(B, 1, T, T)
    if start is not None:
        doc = start.long().cumsum(1)
        allowed = allowed & (doc[:, None, :, None] == doc[:, None, None, :])
    logits = logits.masked_fill(~allowed, float("-inf"))
    w = torch.exp(logits - logits.max(-1, keepdim=True).values)
    w = w / w.sum(-1, keepdim=True)
    return torch.einsum("bhij,bjhd->bihd", w, v)


# ----------------------------------------------------------------------------- modules

class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


class LayerNorm(nn.Module):
    """docs/models.md §zoology-shape (model.norm = layernorm): (x - mean) / sqrt(var + eps) w + b, the biased variance."""

    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)


def backbone_norm(cfg):
    """The blocks' and the final norm: RMSNorm, or LayerNorm with rotor_norm "layernorm" (§zoology-shape)."""
    norm = LayerNorm if cfg.get("rotor_norm", "rmsnorm") == "layernorm" else RMSNorm
    return norm(cfg["hidden_size"], cfg["norm_eps"])


class ShortConv(nn.Module):
    """Holds a depthwise conv weight [C, 1, K] (fla's ShortConvolution name: `<name>.weight`)."""

    def __init__(self, channels, kernel):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(channels, 1, kernel))


class MLP(nn.Module):
    """docs/models.md §backbone SwiGLU: down(swish(x Wg) * (x Wu))."""

    def __init__(self, d, inter):
        super().__init__()
        self.gate_proj = nn.Linear(d, inter, bias=False)
        self.up_proj = nn.Linear(d, inter, bias=False)
        self.down_proj = nn.Linear(inter, d, bias=False)

    def forward(self, x):
        return self.down_proj(swish(self.gate_proj(x)) * self.up_proj(x))


class WeightNormProj(nn.Module):
    """Full-rank per-head phi projection (docs/models.md §position-embeddings step 2 'weight_norm'):
    phi_h = xhat_h . (s_h * W_h / ||W_h||_col), W [H, d/H, P], columns normalised over d/H."""

    def __init__(self, heads, d_in, P):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(heads, d_in, P))
        self.scalar = nn.Parameter(torch.ones(heads))

    def forward(self, xhat):  # [B,T,H,d/H] -> [B,T,H,P]
        w = self.weight / self.weight.norm(dim=-2, keepdim=True).clamp_min(1e-12)
        return torch.einsum("bthi,hij->bthj", xhat, self.scalar[:, None, None] * w)


def rotary_temperature(pe, dk):
    """docs/models.md §position-embeddings step 7. rope: tau_j = temp_max * theta^(-2j/dk); rfa: theta_j = linspace(0, theta*pi, P),
    tau = tan(theta_j / 2) rescaled so that max tau = temp_max."""
    P = dk // 2
    theta, tmax = float(pe["temp_theta"]), float(pe["temp_max"])
    if pe["temp_type"] == "rope":
        tau = tmax / theta ** (torch.arange(0, dk, 2, dtype=torch.float64) / dk)
    elif pe["temp_type"] == "rfa":
        if not 0.0 < theta < 1.0:
            raise ValueError(f"rfa temperature needs 0 < temp_theta < 1, got {theta}")
        tan = torch.tan(torch.linspace(0.0, theta * math.pi, P, dtype=torch.float64) / 2)
        tau = tmax * tan / tan.max()
    else:
        raise ValueError(f"unknown temp_type {pe['temp_type']!r}")
    return tau.reshape(1, 1, 1, P)


class SelectiveRoPE(nn.Module):
    """docs/models.md §position-embeddings Selective RoPE, named as the selective-rope repo (`attn.rotary.*`)."""

    def __init__(self, pe, d, heads, dk):
        super().__init__()
        if pe.get("gate_parametrization", "standard") != "standard":
            raise ValueError("only gate_parametrization 'standard' is supported")
        if pe.get("d_conv", 4) != 4:
            raise ValueError("only d_conv 4 is supported")
        self.H, self.P, self.d = heads, dk // 2, d
        self.low_rank = pe["phi_parametrization"] == "low-rank"
        if self.low_rank:
            r = int(pe["phi_proj_rank"])
            self.phi_proj = nn.Sequential(nn.Linear(d, r, bias=False), nn.Linear(r, heads * self.P, bias=False))
        elif pe["phi_parametrization"] == "full-rank":
            self.phi_proj = WeightNormProj(heads, d // heads, self.P)
        else:
            raise ValueError(f"unknown phi_parametrization {pe['phi_parametrization']!r}")
        self.skip_conv = bool(pe["skip_conv"])
        self.conv_act = pe["conv_act"]
        if not self.skip_conv:
            self.phi_conv1d = ShortConv(heads * self.P, 4)
        self.use_bias = bool(pe["use_bias"])
        if self.use_bias:
            self.phi_bias = nn.Parameter(torch.zeros(1, 1, heads, self.P))
        self.use_gate = bool(pe["use_gate"])
        if self.use_gate:
            self.phase_gate_proj = nn.Linear(d, heads, bias=True)
        self.temperature = nn.Parameter(rotary_temperature(pe, dk).float(), requires_grad=bool(pe["temp_grad"]))

    def angles(self, x, docs, naive):
        """Rotation angles tau_j * Phi_{t,h,j}, [B,T,H,P]."""
        B, T, _ = x.shape
        xhat = l2_norm(x.reshape(B, T, self.H, self.d // self.H))  # step 1
        if self.low_rank:  # step 2
            phi = self.phi_proj(xhat.reshape(B, T, self.d))
        else:
            phi = self.phi_proj(xhat).reshape(B, T, self.H * self.P)
        if self.skip_conv:  # step 3: first difference, no activation (as the selective-rope repo)
            phi = phi - docs.prev(phi, 1)
        else:
            phi = short_conv(phi, self.phi_conv1d.weight, docs, self.conv_act)
        phi = phi.reshape(B, T, self.H, self.P)
        if self.use_bias:  # step 4
            phi = phi + torch.exp(self.phi_bias)
        if self.use_gate:  # step 5
            phi = phi * torch.sigmoid(self.phase_gate_proj(xhat.reshape(B, T, self.d)))[..., None]
        if naive:  # step 6, restarted at document starts
            acc, cum = phi.new_zeros(B, self.H, self.P), []
            for t in range(T):
                if docs.start is not None:
                    acc = acc * (~docs.start[:, t]).to(acc.dtype)[:, None, None]
                acc = acc + phi[:, t]
                cum.append(acc)
            Phi = torch.stack(cum, 1)
        else:
            Phi = phi.cumsum(1)
            if docs.start is not None:
                before = Phi - phi  # exclusive prefix sum, subtracted at each document start
                idx = docs.start_idx[:, :, None, None].expand_as(Phi)
                Phi = Phi - before.gather(1, idx)
        return self.temperature * Phi  # step 7-8

    def forward(self, q, k, x, docs, naive):
        a = self.angles(x, docs, naive)
        return rotate_half_split(q, a), rotate_half_split(k, a)


def make_pe(cfg, heads, dk):
    """Returns ('nope'|'rope'|'selective', SelectiveRoPE module or None)."""
    pe = cfg["position_embedding"]
    kind = pe["type"]
    if kind == "selective_rope":
        return "selective", SelectiveRoPE(pe, cfg["hidden_size"], heads, dk)
    if kind in ("nope", "rope"):
        return kind, None
    raise ValueError(f"unknown position_embedding type {kind!r}")


def apply_rope(q, k, docs, theta):
    """docs/models.md §position-embeddings RoPE: a_j(t) = t * theta^(-2j/dk), t counted from the document start."""
    dk = q.shape[-1]
    inv = theta ** (-torch.arange(0, dk, 2, dtype=q.dtype, device=q.device) / dk)
    a = docs.pos.to(q.dtype)[:, :, None, None] * inv  # [B,T,1,P]
    return rotate_half_split(q, a), rotate_half_split(k, a)


class PositionMixin(nn.Module):
    """Shared position-embedding plumbing: applies NoPE / RoPE / Selective RoPE to q, k [B,T,H,dk]."""

    def setup_pe(self, cfg, heads, dk):
        self.pe_kind, rotary = make_pe(cfg, heads, dk)
        if rotary is not None:
            self.rotary = rotary
        self.rope_theta = float(cfg["position_embedding"].get("theta", 500000.0))

    def apply_pe(self, q, k, x, docs, naive):
        if self.pe_kind == "rope":
            return apply_rope(q, k, docs, self.rope_theta)
        if self.pe_kind == "selective":
            return self.rotary(q, k, x, docs, naive)
        return q, k


class GLAMixer(PositionMixin):
    """docs/models.md §gla, fla GatedLinearAttention names."""

    def __init__(self, cfg):
        super().__init__()
        for key, want in (("feature_map", None), ("clamp_min", None), ("use_output_gate", True),
                          ("conv_size", 4)):
            if cfg.get(key, want) != want:
                raise ValueError(f"gla: {key}={cfg[key]!r} is not supported (expected {want!r})")
        d, H = cfg["hidden_size"], cfg["num_heads"]
        kd, vd = int(d * cfg["expand_k"]), int(d * cfg["expand_v"])
        self.H, self.dk, self.dv = H, kd // H, vd // H
        self.normalizer = float(cfg["gate_logit_normalizer"])
        self.eps = cfg["norm_eps"]
        self.q_proj = nn.Linear(d, kd, bias=False)
        self.k_proj = nn.Linear(d, kd, bias=False)
        self.v_proj = nn.Linear(d, vd, bias=False)
        self.g_proj = nn.Linear(d, vd, bias=False)
        rank = cfg.get("gate_low_rank_dim", 16)  # fla's forget-gate rank, 16 in docs/models.md §gla
        self.gk_proj = nn.Sequential(nn.Linear(d, rank, bias=False), nn.Linear(rank, kd, bias=True))
        self.o_proj = nn.Linear(vd, d, bias=False)
        self.g_norm_swish_gate = RMSNorm(self.dv, self.eps)
        self.use_short_conv = bool(cfg["use_short_conv"])
        if self.use_short_conv:
            self.q_conv1d = ShortConv(kd, 4)
            self.k_conv1d = ShortConv(kd, 4)
            self.v_conv1d = ShortConv(vd, 4)
        self.setup_pe(cfg, H, self.dk)

    def forward(self, x, docs, naive):
        B, T, _ = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        if self.use_short_conv:  # conv + SiLU; no activation otherwise
            q = short_conv(q, self.q_conv1d.weight, docs, "silu")
            k = short_conv(k, self.k_conv1d.weight, docs, "silu")
            v = short_conv(v, self.v_conv1d.weight, docs, "silu")
        q, k = q.view(B, T, self.H, self.dk), k.view(B, T, self.H, self.dk)
        v = v.view(B, T, self.H, self.dv)
        q, k = self.apply_pe(q, k, x, docs, naive)
        log_a = (F.logsigmoid(self.gk_proj(x)) / self.normalizer).view(B, T, self.H, self.dk)
        q = q * self.dk ** -0.5
        core = gla_naive if naive else ref_fast.gla_chunk
        o = core(q, k, v, log_a, docs.start)
        g = self.g_proj(x).view(B, T, self.H, self.dv)
        o = self.g_norm_swish_gate(o) * swish(g)
        return self.o_proj(o.reshape(B, T, self.H * self.dv))


def delta_qkv(m, x, docs, naive):
    """q, k, v of the delta-rule mixers (GDN §gated-deltanet steps 1-4, DeltaNet §deltanet): projections, conv + SiLU
    (SiLU alone without the conv), the position embedding, then L2-normalised q (scaled) and k."""
    B, T, _ = x.shape
    q, k, v = m.q_proj(x), m.k_proj(x), m.v_proj(x)
    if m.use_short_conv:
        q = short_conv(q, m.q_conv1d.weight, docs, "silu")
        k = short_conv(k, m.k_conv1d.weight, docs, "silu")
        v = short_conv(v, m.v_conv1d.weight, docs, "silu")
    else:
        q, k, v = F.silu(q), F.silu(k), F.silu(v)
    q, k = q.view(B, T, m.H, m.dk), k.view(B, T, m.H, m.dk)
    q, k = m.apply_pe(q, k, x, docs, naive)  # after conv + SiLU, before the L2 norm
    return l2_norm(q) * m.dk ** -0.5, l2_norm(k), v.view(B, T, m.H, m.dv)


class GDNMixer(PositionMixin):
    """docs/models.md §gated-deltanet, fla GatedDeltaNet names."""

    def __init__(self, cfg):
        super().__init__()
        for key, want in (("allow_neg_eigval", False), ("use_gate", True), ("conv_size", 4)):
            if cfg.get(key, want) != want:
                raise ValueError(f"gated_deltanet: {key}={cfg[key]!r} is not supported (expected {want!r})")
        d, H = cfg["hidden_size"], cfg["num_heads"]
        if cfg.get("num_v_heads") not in (None, H):
            raise ValueError("gated_deltanet: num_v_heads different from num_heads is not supported")
        self.H, self.dk = H, int(cfg["head_dim"])
        self.dv = int(self.dk * cfg["expand_v"])
        self.eps = cfg["norm_eps"]
        self.q_proj = nn.Linear(d, H * self.dk, bias=False)
        self.k_proj = nn.Linear(d, H * self.dk, bias=False)
        self.v_proj = nn.Linear(d, H * self.dv, bias=False)
        self.a_proj = nn.Linear(d, H, bias=False)
        self.b_proj = nn.Linear(d, H, bias=False)
        self.A_log = nn.Parameter(torch.zeros(H))
        self.dt_bias = nn.Parameter(torch.zeros(H))
        self.g_proj = nn.Linear(d, H * self.dv, bias=False)
        self.o_norm = RMSNorm(self.dv, self.eps)
        self.o_proj = nn.Linear(H * self.dv, d, bias=False)
        self.use_short_conv = bool(cfg["use_short_conv"])
        if self.use_short_conv:
            self.q_conv1d = ShortConv(H * self.dk, 4)
            self.k_conv1d = ShortConv(H * self.dk, 4)
            self.v_conv1d = ShortConv(H * self.dv, 4)
        self.setup_pe(cfg, H, self.dk)

    def forward(self, x, docs, naive):
        B, T, _ = x.shape
        q, k, v = delta_qkv(self, x, docs, naive)
        beta = torch.sigmoid(self.b_proj(x))
        g = -torch.exp(self.A_log) * F.softplus(self.a_proj(x) + self.dt_bias)
        o = gdn_naive(q, k, v, g, beta, docs.start) if naive else ref_fast.gdn_chunk(q, k, v, g, beta, docs.start)
        o = self.o_norm(o) * swish(self.g_proj(x).view(B, T, self.H, self.dv))
        return self.o_proj(o.reshape(B, T, self.H * self.dv))


class DeltaNetMixer(PositionMixin):
    """docs/models.md §deltanet, fla DeltaNet names: short conv + SiLU on q, k, v, L2-normalised q, k,
    beta = sigmoid(b_proj), no decay, per-head o_norm, optional swish output gate (use_gate)."""

    def __init__(self, cfg):
        super().__init__()
        for key, want in (("use_beta", True), ("use_output_norm", True), ("qk_norm", "l2"),
                          ("qk_activation", "silu"), ("conv_size", 4)):
            if cfg.get(key, want) != want:
                raise ValueError(f"delta_net: {key}={cfg[key]!r} is not supported (expected {want!r})")
        d, H = cfg["hidden_size"], cfg["num_heads"]
        kd, vd = int(d * cfg["expand_k"]), int(d * cfg["expand_v"])
        self.H, self.dk, self.dv = H, kd // H, vd // H
        self.q_proj = nn.Linear(d, kd, bias=False)
        self.k_proj = nn.Linear(d, kd, bias=False)
        self.v_proj = nn.Linear(d, vd, bias=False)
        self.b_proj = nn.Linear(d, H, bias=False)
        self.use_short_conv = bool(cfg["use_short_conv"])
        if self.use_short_conv:
            self.q_conv1d = ShortConv(kd, 4)
            self.k_conv1d = ShortConv(kd, 4)
            self.v_conv1d = ShortConv(vd, 4)
        self.use_gate = bool(cfg["use_gate"])
        if self.use_gate:
            self.g_proj = nn.Linear(d, vd, bias=False)
        self.o_norm = RMSNorm(self.dv, cfg["norm_eps"])
        self.o_proj = nn.Linear(vd, d, bias=False)
        self.setup_pe(cfg, H, self.dk)

    def forward(self, x, docs, naive):
        B, T, _ = x.shape
        q, k, v = delta_qkv(self, x, docs, naive)
        beta = torch.sigmoid(self.b_proj(x))
        if naive:
            o = delta_naive(q, k, v, beta, docs.start)
        else:
            o = ref_fast.gdn_chunk(q, k, v, torch.zeros_like(beta), beta, docs.start)
        o = self.o_norm(o)
        if self.use_gate:
            o = o * swish(self.g_proj(x).view(B, T, self.H, self.dv))
        return self.o_proj(o.reshape(B, T, self.H * self.dv))


class FoXMixer(PositionMixin):
    """docs/models.md §fox, fla ForgettingAttention names plus the FoX-Pro extras (shifts, output norm);
    with model_type "transformer", fla's Attention (§transformer): no forget gate, no Pro extras, and QK-norm
    weights of size dh shared by the heads (fla's RMSNorm(head_dim))."""

    def __init__(self, cfg):
        super().__init__()
        if cfg.get("qkv_bias", False) or cfg.get("window_size") is not None:
            raise ValueError(f"{cfg['model_type']}: qkv_bias and window_size are not supported")
        if cfg.get("num_kv_heads") is not None:
            raise ValueError(f"{cfg['model_type']}: num_kv_heads is not supported")
        d, H = cfg["hidden_size"], cfg["num_heads"]
        self.H, self.dh, self.eps = H, d // H, cfg["norm_eps"]
        self.gated = cfg["model_type"] == "forgetting_transformer"
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        if self.gated:
            self.f_proj = nn.Linear(d, H, bias=True)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.use_output_gate = self.gated and bool(cfg["use_output_gate"])
        if self.use_output_gate:
            self.g_proj = nn.Linear(d, d, bias=False)
        self.use_output_norm = self.gated and bool(cfg["use_output_norm"])
        if self.use_output_norm:
            self.o_norm = RMSNorm(d, self.eps)
        self.qk_norm = bool(cfg["qk_norm"])
        if self.qk_norm:
            self.q_norm = RMSNorm(d if self.gated else self.dh, QK_NORM_EPS)
            self.k_norm = RMSNorm(d if self.gated else self.dh, QK_NORM_EPS)
        self.use_k_shift = self.gated and bool(cfg["use_k_shift"])
        if self.use_k_shift:
            self.k_shift_proj = nn.Linear(d, H, bias=False)
        self.use_v_shift = self.gated and bool(cfg["use_v_shift"])
        if self.use_v_shift:
            self.v_shift_proj = nn.Linear(d, H, bias=False)
        self.setup_pe(cfg, H, self.dh)

    def head_norm(self, x, norm):
        """Per-head RMSNorm over dh with a weight per channel of each head (size d) or of one
        head (size dh, shared)."""
        return rms_norm(x, norm.weight.view(-1, self.dh), norm.eps)

    def shift(self, y, x, proj, docs):
        """k_t = a_t y_{t-1} + (1 - a_t) y_t, a_t = sigmoid(x_t W) per head; y_{-1} = 0 at doc starts."""
        a = torch.sigmoid(proj(x))[..., None]  # [B,T,H,1]
        prev = docs.prev(y.flatten(2), 1).view_as(y)
        return a * prev + (1 - a) * y

    def forward(self, x, docs, naive):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.dh)
        k = self.k_proj(x).view(B, T, self.H, self.dh)
        v = self.v_proj(x).view(B, T, self.H, self.dh)
        if self.use_k_shift:
            k = self.shift(k, x, self.k_shift_proj, docs)
        if self.use_v_shift:
            v = self.shift(v, x, self.v_shift_proj, docs)
        if self.qk_norm and self.pe_kind != "selective":  # QK-norm before RoPE (or alone for NoPE)
            q, k = self.head_norm(q, self.q_norm), self.head_norm(k, self.k_norm)
        q, k = self.apply_pe(q, k, x, docs, naive)
        if self.qk_norm and self.pe_kind == "selective":  # after Selective RoPE
            q, k = self.head_norm(q, self.q_norm), self.head_norm(k, self.k_norm)
        log_f = F.logsigmoid(self.f_proj(x)) if self.gated else None  # [B,T,H]
        q = q * self.dh ** -0.5
        core = fox_naive if naive else ref_fast.fox_parallel
        o = core(q, k, v, log_f, docs.start)
        if self.use_output_norm:
            o = self.head_norm(o, self.o_norm)
        o = o.reshape(B, T, self.H * self.dh)
        if self.use_output_gate:
            o = o * torch.sigmoid(self.g_proj(x))
        return self.o_proj(o)


class Mamba2Mixer(nn.Module):
    """docs/models.md §mamba2, fla Mamba2 names: in_proj -> z, x, B, C, dt; conv (bias) + SiLU over x, B, C; the SSD
    with head h reading group h // (H / n_groups); D skip; RMSNorm(y silu(z)) per group; out_proj."""

    def __init__(self, cfg):
        super().__init__()
        for key, want in (("conv_kernel", 4), ("use_bias", False), ("rmsnorm", True), ("norm_before_gate", False),
                          ("D_has_hdim", False)):
            if cfg.get(key, want) != want:
                raise ValueError(f"mamba2: {key}={cfg[key]!r} is not supported (expected {want!r})")
        d = cfg["hidden_size"]
        self.I = int(cfg["expand"] * d)
        self.P, self.N, self.G = cfg["head_dim"], cfg["state_size"], cfg["n_groups"]
        self.H = self.I // self.P
        self.eps = cfg["norm_eps"]
        conv_dim = self.I + 2 * self.G * self.N
        self.in_proj = nn.Linear(d, self.I + conv_dim + self.H, bias=False)
        self.conv1d = ShortConv(conv_dim, 4)
        if cfg.get("use_conv_bias", True):
            self.conv1d.bias = nn.Parameter(torch.zeros(conv_dim))
        self.dt_bias = nn.Parameter(torch.zeros(self.H))
        self.A_log = nn.Parameter(torch.zeros(self.H))
        self.D = nn.Parameter(torch.ones(self.H))
        self.norm = RMSNorm(self.I, self.eps)
        self.out_proj = nn.Linear(self.I, d, bias=False)

    def forward(self, x, docs, naive):
        Bsz, T, _ = x.shape
        I, GN, H, P, N, G = self.I, self.G * self.N, self.H, self.P, self.N, self.G
        z, xbc, dt = self.in_proj(x).split([I, I + 2 * GN, H], -1)
        xbc = short_conv(xbc, self.conv1d.weight, docs, None)
        if getattr(self.conv1d, "bias", None) is not None:
            xbc = xbc + self.conv1d.bias
        xs, Bm, Cm = F.silu(xbc).split([I, GN, GN], -1)
        dt = F.softplus(dt + self.dt_bias)
        xs = xs.view(Bsz, T, H, P)
        Bm = Bm.view(Bsz, T, G, N).repeat_interleave(H // G, 2)
        Cm = Cm.view(Bsz, T, G, N).repeat_interleave(H // G, 2)
        ssd = ssd_naive if naive else ref_fast.ssd_chunk
        y = ssd(xs, dt, -torch.exp(self.A_log), Bm, Cm, docs.start) + self.D[:, None] * xs
        u = (y.reshape(Bsz, T, I) * F.silu(z)).view(Bsz, T, G, I // G)
        u = u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.out_proj(u.reshape(Bsz, T, I) * self.norm.weight)


class LRUMixer(nn.Module):
    """docs/models.md §lru, the Linear Recurrent Unit (Orvieto et al. 2023) as its paper writes it:
    lambda = exp(-exp(nu_log) + i exp(theta_log)), h_t = lambda h_{t-1} + exp(gamma_log) (B_re + i B_im) u_t,
    y_t = Re((C_re + i C_im) h_t) + D u_t, in complex arithmetic."""

    def __init__(self, cfg):
        super().__init__()
        d, N = cfg["hidden_size"], cfg["state_size"]
        self.nu_log, self.theta_log, self.gamma_log = (nn.Parameter(torch.zeros(N)) for _ in range(3))
        self.B_re, self.B_im = nn.Parameter(torch.zeros(N, d)), nn.Parameter(torch.zeros(N, d))
        self.C_re, self.C_im = nn.Parameter(torch.zeros(d, N)), nn.Parameter(torch.zeros(d, N))
        self.bidirectional = cfg.get("rotor_bidirectional", False)
        if self.bidirectional:  # docs/models.md §block-dropout-bidirectional: the reverse scan's readout
            self.C_re2, self.C_im2 = nn.Parameter(torch.zeros(d, N)), nn.Parameter(torch.zeros(d, N))
        self.D = nn.Parameter(torch.zeros(d))

    def forward(self, x, docs, naive):
        Bc = torch.complex(self.B_re, self.B_im) * torch.exp(self.gamma_log)[:, None]
        b = torch.einsum("nd,btd->btn", Bc, x.to(Bc.dtype))
        loga, angle = -torch.exp(self.nu_log), torch.exp(self.theta_log)
        scan = cdiag_naive if naive else ref_fast.cdiag_chunk
        h = scan(b, loga, angle, docs.start)
        y = torch.einsum("dn,btn->btd", torch.complex(self.C_re, self.C_im), h).real + self.D * x
        if self.bidirectional:  # g_t = lambda g_{t+1} + b_t from each segment's last token
            g = docs.reverse(scan(docs.reverse(b), loga, angle, docs.start))
            y = y + torch.einsum("dn,btn->btd", torch.complex(self.C_re2, self.C_im2), g).real
        return y


class RotRNNMixer(nn.Module):
    """docs/models.md §rotrnn, RotRNN (Biegun, Dolga, Cunningham, Barber 2024): per head h of n channels,
    P = expm(M - M^T), gamma = exp(-exp(gamma_log)), xi = sqrt((1 - gamma^2) / ||B_h||_F^2),
    x_t = gamma P Theta P^T x_{t-1} + xi B_h u_t, y_t = C x_t + D u_t. The naive form runs in the
    state's own basis; the fast one in the basis of P, as the complex scan gamma e^{i theta}."""

    def __init__(self, cfg):
        super().__init__()
        d, Ns, H = cfg["hidden_size"], cfg["state_size"], cfg["num_heads"]
        n = Ns // H
        self.theta = nn.Parameter(torch.zeros(H, n // 2))
        self.gamma_log = nn.Parameter(torch.zeros(H))
        self.M = nn.Parameter(torch.zeros(H, n, n))
        self.B = nn.Parameter(torch.zeros(H, n, d))
        self.C = nn.Parameter(torch.zeros(d, Ns))
        self.bidirectional = cfg.get("rotor_bidirectional", False)
        if self.bidirectional:  # docs/models.md §block-dropout-bidirectional: the reverse scan's readout
            self.C2 = nn.Parameter(torch.zeros(d, Ns))
        self.D = nn.Parameter(torch.zeros(d))

    def forward(self, u, docs, naive):
        y = self.states(u, docs, naive) @ self.C.t() + self.D * u
        if self.bidirectional:  # the same recurrence from each segment's last token back
            y = y + docs.reverse(self.states(docs.reverse(u), docs, naive)) @ self.C2.t()
        return y

    def states(self, u, docs, naive):
        """x [Bsz, T, H n]: the heads' states of x_t = gamma A x_{t-1} + xi B u_t."""
        Bsz, T, _ = u.shape
        H, n = self.M.shape[0], self.M.shape[1]
        P = torch.matrix_exp(self.M - self.M.transpose(1, 2))
        gamma = torch.exp(-torch.exp(self.gamma_log))
        xi = torch.sqrt((1 - gamma ** 2) / self.B.pow(2).sum((1, 2)))
        if naive:
            x = rotrnn_naive(u, P, gamma, self.theta, xi, self.B, docs.start)
        else:
            zin = xi[:, None] * torch.einsum("hji,hjd,btd->bthi", P, self.B, u)  # xi P^T B u
            zin = zin.reshape(Bsz, T, H * n // 2, 2)
            loga = torch.log(gamma)[:, None].expand(H, n // 2).reshape(-1)
            z = ref_fast.cdiag_chunk(torch.complex(zin[..., 0], zin[..., 1]), loga, self.theta.reshape(-1),
                                    docs.start)
            z = torch.stack([z.real, z.imag], -1).view(Bsz, T, H, n)
            x = torch.einsum("hij,bthj->bthi", P, z)
        return x.reshape(Bsz, T, H * n)


class ModReLU(nn.Module):
    """modReLU(a) = sign(a) relu(|a| + b), the expRNN code's for real a (docs/models.md §nonlinear-rnns)."""

    def __init__(self, n):
        super().__init__()
        self.b = nn.Parameter(torch.zeros(n))

    def forward(self, a):
        return torch.sign(a) * F.relu(a.abs() + self.b)


def recurrence_naive(z, W, act, start, truncate=None):
    """docs/models.md §nonlinear-rnns: h_t = act(z_t + h_{t-1} W^T) one token at a time, h zeroed at
    document starts, its gradient stopped where truncate is set (§carried-states). z [B, T, n]."""
    h = z.new_zeros(z.shape[0], z.shape[2])
    out = []
    for t in range(z.shape[1]):
        h = _restart(h, start, t)
        if truncate is not None:
            h = torch.where(truncate[:, t, None], h.detach(), h)
        h = act(z[:, t] + h @ W.t())
        out.append(h)
    return torch.stack(out, 1)


class RNNMixer(nn.Module):
    """docs/models.md §nonlinear-rnns, the nnRNN paper's cells: rnn and rnn_orth (W = V.weight, U with a
    bias), exprnn (W = expm(M - M^T)), nnrnn (W = P (Lambda + T) P^T with P = expm(M - M^T),
    Lambda the 2x2 blocks gamma_i R(theta_i), T strictly lower), eurnn (W = R_{L-1} ... R_0,
    R_l the rotation matrix of layer l's channel pairs (l % 2 + 2m, l % 2 + 2m + 1), L the
    config's capacity); tanh or modReLU (rotor_nonlinearity; by default tanh for the first two,
    modReLU for the others)."""

    def __init__(self, cfg):
        super().__init__()
        self.kind = cfg["model_type"]
        n = d = cfg["hidden_size"]
        if self.kind in ("rnn", "rnn_orth"):
            self.U = nn.Linear(d, n)
            self.V = nn.Linear(n, n, bias=False)
        elif self.kind == "exprnn":
            self.input_kernel = nn.Linear(d, n, bias=False)
            self.log_recurrent_kernel = nn.Parameter(torch.zeros(n, n))
        elif self.kind == "eurnn":
            self.U = nn.Linear(d, n, bias=False)
            self.pairs = [torch.arange(l % 2, n - 1, 2) for l in range(cfg["capacity"])]
            self.theta = nn.Parameter(torch.zeros(sum(len(p) for p in self.pairs)))
        else:
            self.U = nn.Linear(d, n, bias=False)
            self.log_P = nn.Parameter(torch.zeros(n, n))
            self.T = nn.Parameter(torch.zeros(n, n))
            self.gamma = nn.Parameter(torch.ones(n // 2))
            self.theta = nn.Parameter(torch.zeros(n // 2))
        # model.nonlinearity: by default modReLU for exprnn and nnrnn, tanh for rnn and rnn_orth
        self.modrelu = cfg.get("rotor_nonlinearity", "modrelu" if self.kind in ("exprnn", "nnrnn", "eurnn") else "tanh") == "modrelu"
        if self.modrelu:
            self.nonlinearity = ModReLU(n)

    def recurrent_matrix(self):
        if self.kind in ("rnn", "rnn_orth"):
            return self.V.weight
        if self.kind == "exprnn":
            M = self.log_recurrent_kernel
            return torch.matrix_exp(M - M.t())
        if self.kind == "eurnn":
            n = self.U.weight.shape[0]
            W, off = torch.eye(n, dtype=self.theta.dtype), 0
            for p in self.pairs:
                th = self.theta[off:off + len(p)]
                off += len(p)
                R = torch.eye(n, dtype=W.dtype)
                R[p, p], R[p, p + 1] = torch.cos(th), -torch.sin(th)
                R[p + 1, p], R[p + 1, p + 1] = torch.sin(th), torch.cos(th)
                W = R @ W
            return W
        P = torch.matrix_exp(self.log_P - self.log_P.t())
        n = P.shape[0]
        c, s = self.gamma * torch.cos(self.theta), self.gamma * torch.sin(self.theta)
        K = torch.tril(self.T, diagonal=-1)
        idx = torch.arange(n // 2)
        Lam = torch.zeros_like(K)
        Lam[2 * idx, 2 * idx], Lam[2 * idx, 2 * idx + 1] = c, -s
        Lam[2 * idx + 1, 2 * idx], Lam[2 * idx + 1, 2 * idx + 1] = s, c
        return P @ (K + Lam) @ P.t()

    def forward(self, x, docs, naive):
        z = (self.input_kernel if self.kind == "exprnn" else self.U)(x)
        act = self.nonlinearity if self.modrelu else torch.tanh
        return recurrence_naive(z, self.recurrent_matrix(), act, docs.start, docs.truncate)


class LSTMMixer(nn.Module):
    """docs/models.md §nonlinear-rnns: gates i, f, g, o of z_t + h_{t-1} W_hh^T, z = x W_ih^T + b;
    c_t = f c_{t-1} + i g, h_t = o tanh(c_t); h and c zeroed at document starts."""

    def __init__(self, cfg):
        super().__init__()
        n = d = cfg["hidden_size"]
        self.weight_ih = nn.Parameter(torch.zeros(4 * n, d))
        self.weight_hh = nn.Parameter(torch.zeros(4 * n, n))
        self.bias = nn.Parameter(torch.zeros(4 * n))

    def forward(self, x, docs, naive):
        z = x @ self.weight_ih.t() + self.bias
        n = self.weight_hh.shape[1]
        h, c = z.new_zeros(z.shape[0], n), z.new_zeros(z.shape[0], n)
        out = []
        for t in range(z.shape[1]):
            if docs.start is not None:
                keep = (~docs.start[:, t]).to(z.dtype)[:, None]
                h, c = h * keep, c * keep
            if docs.truncate is not None:
                cut = docs.truncate[:, t, None]
                h, c = torch.where(cut, h.detach(), h), torch.where(cut, c.detach(), c)
            a = z[:, t] + h @ self.weight_hh.t()
            i, f, g, o = a.split(n, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            out.append(h)
        return torch.stack(out, 1)


MIXERS = {"gla": GLAMixer, "gated_deltanet": GDNMixer, "forgetting_transformer": FoXMixer,
          "transformer": FoXMixer, "delta_net": DeltaNetMixer, "mamba2": Mamba2Mixer, "lru": LRUMixer,
          "rotrnn": RotRNNMixer, "rnn": RNNMixer, "rnn_orth": RNNMixer, "exprnn": RNNMixer, "nnrnn": RNNMixer,
          "eurnn": RNNMixer, "lstm": LSTMMixer}


class BaseConv(nn.Module):
    """docs/models.md §zoology-shape, Zoology's BaseConv: conv(x) * (x W^T + b) + x, conv a depthwise causal
    conv of rotor_base_conv_kernel taps (Zoology's kernel_size, 3 when absent) with bias."""

    def __init__(self, cfg):
        super().__init__()
        d, K = cfg["hidden_size"], cfg.get("rotor_base_conv_kernel", 3)
        self.conv = nn.Module()  # conv.weight [d, 1, K], conv.bias [d]: init_weights sets them
        self.conv.weight = nn.Parameter(torch.empty(d, 1, K))
        self.conv.bias = nn.Parameter(torch.empty(d))
        self.projection = nn.Linear(d, d)

    def forward(self, x, docs, naive):
        return (short_conv(x, self.conv.weight, docs, None) + self.conv.bias) * self.projection(x) + x


def layer_mixers(cfg):
    """The mixer class of each layer: rotor_mixers cycled over the layers (docs/models.md §zoology-shape)."""
    own = MIXERS[cfg["model_type"]]
    names = cfg.get("rotor_mixers", "").replace(",", " ").split()
    if not names:
        return [own] * cfg["num_hidden_layers"]
    return [BaseConv if names[i % len(names)] == "base_conv" else own for i in range(cfg["num_hidden_layers"])]


class Block(nn.Module):
    """docs/models.md §backbone pre-norm block; rotor_mlp "identity" adds Norm(h) in place of the MLP's
    output, "none" leaves the MLP out (§zoology-shape)."""

    def __init__(self, cfg, mixer):
        super().__init__()
        d = cfg["hidden_size"]
        self.attn_norm = backbone_norm(cfg)
        self.attn = mixer(cfg)
        self.kind = cfg.get("rotor_mlp", "auto")
        if self.kind != "none":
            self.mlp_norm = backbone_norm(cfg)
        if self.kind in ("auto", "swiglu"):
            self.mlp = MLP(d, int(cfg["intermediate_size"]))

    def forward(self, h, docs, naive):
        h = h + self.attn(self.attn_norm(h), docs, naive)
        if self.kind == "none":
            return h
        if self.kind == "identity":
            return h + self.mlp_norm(h)
        return h + self.mlp(self.mlp_norm(h))


class GLU(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.gate_proj = nn.Linear(d, d)


class LRABlock(nn.Module):
    """docs/models.md §block-dropout-bidirectional, rotor_block "lra" (S5's SequenceLayer, half_glu1, pre-norm), without
    dropout: g = GELU(Mixer(RMSNorm(h))), h + g sigmoid(g W^T + b)."""

    def __init__(self, cfg):
        super().__init__()
        self.attn_norm = backbone_norm(cfg)
        self.attn = MIXERS[cfg["model_type"]](cfg)
        self.glu = GLU(cfg["hidden_size"])

    def forward(self, h, docs, naive):
        g = F.gelu(self.attn(self.attn_norm(h), docs, naive))
        return h + g * torch.sigmoid(self.glu.gate_proj(g))


class RNNBlock(nn.Module):
    """docs/models.md §nonlinear-rnns, rotor_block "rnn": h = Mixer(h), no norm, residual or MLP."""

    def __init__(self, cfg):
        super().__init__()
        self.attn = MIXERS[cfg["model_type"]](cfg)

    def forward(self, h, docs, naive):
        return self.attn(h, docs, naive)


class Mamba2Block(nn.Module):
    """docs/models.md §mamba2 fla Mamba2Block: h + mixer(norm(h)), no MLP."""

    def __init__(self, cfg):
        super().__init__()
        self.norm = backbone_norm(cfg)
        self.mixer = Mamba2Mixer(cfg)

    def forward(self, h, docs, naive):
        return h + self.mixer(self.norm(h), docs, naive)


class Backbone(nn.Module):
    """fla's model.*; Mamba2's backbone.* has its final norm as norm_f."""

    def __init__(self, cfg):
        super().__init__()
        mamba2 = cfg["model_type"] == "mamba2"
        if cfg.get("rotor_input", "embedding") == "linear":  # docs/models.md §classification: value = id / scale
            self.encoder = nn.Linear(1, cfg["hidden_size"])
        else:
            self.embeddings = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        kind = cfg.get("rotor_block", "prenorm")
        rnn = kind == "rnn"
        if mamba2 or rnn or kind == "lra":
            block = Mamba2Block if mamba2 else RNNBlock if rnn else LRABlock
            self.layers = nn.ModuleList(block(cfg) for _ in range(cfg["num_hidden_layers"]))
        else:
            self.layers = nn.ModuleList(Block(cfg, mixer) for mixer in layer_mixers(cfg))
        if not rnn:  # rnn blocks: the head reads the last block's h
            setattr(self, "norm_f" if mamba2 else "norm", backbone_norm(cfg))


class RotorLM(nn.Module):
    """Embedding -> L blocks -> final RMSNorm -> LM head, untied (docs/models.md §backbone) or tied (§zoology-shape)."""

    def __init__(self, cfg):
        super().__init__()
        # rotor's Hugging Face model of a family ("rotor_" + fla's model_type) computes the family's function
        cfg = {**cfg, "model_type": cfg["model_type"].removeprefix("rotor_")}
        if cfg["model_type"] not in MIXERS:
            raise ValueError(f"unknown model_type {cfg['model_type']!r}")
        if cfg.get("rotor_dropout", 0) or cfg.get("rotor_embed_dropout", 0):
            raise ValueError("rotor_dropout, rotor_embed_dropout: the reference runs without dropout")
        if cfg.get("hidden_act", "swish") not in (("gelu",) if cfg.get("rotor_block") == "lra" else ("swish", "silu")):
            raise ValueError(f"hidden_act {cfg['hidden_act']!r} is not supported")
        self.cfg = cfg
        setattr(self, "backbone" if cfg["model_type"] == "mamba2" else "model", Backbone(cfg))
        self.head = cfg.get("rotor_head", "lm")
        self.autoencoder = self.head == "autoencoder"
        d, eps = cfg["hidden_size"], cfg["norm_eps"]
        self.pair = cfg.get("rotor_pair", "none")
        if self.head == "classifier" and self.pair != "none":  # docs/models.md §classification, LRA's dual encoder
            self.classifier = PairClassifier(d, cfg["num_labels"], self.pair, cfg["rotor_pair_mlp"])
        elif self.head == "classifier":  # docs/models.md §classification
            self.classifier = nn.Linear(d, cfg["num_labels"])
        elif self.autoencoder:  # docs/models.md §autoencoder-head, mad-lab's AutoEncoder decoder and unembedding
            self.decoder = nn.Sequential(RMSNorm(d, eps), nn.Linear(d, d), nn.GELU(),
                                         RMSNorm(d, eps), nn.Linear(d, d), nn.GELU())
            self.unembed = nn.Sequential(RMSNorm(d, eps), nn.Linear(d, cfg["vocab_size"]))
        elif not cfg.get("tie_word_embeddings", False):  # tied (docs/models.md §zoology-shape): the embedding table
            self.lm_head = nn.Linear(d, cfg["vocab_size"], bias=False)

    def forward(self, input_ids, naive=False, labels=None, truncate=None):
        """Logits [B, T, V]; the classifier's [B, classes] from the sequences that end at each
        row's labeled token (labels needed). truncate: see Docs."""
        docs = Docs(input_ids, self.cfg, labels, truncate)
        bb = self.backbone if self.cfg["model_type"] == "mamba2" else self.model
        if hasattr(bb, "encoder"):
            scale, offset = self.cfg["rotor_input_scale"], self.cfg.get("rotor_input_offset", 0)
            h = bb.encoder((input_ids[..., None].to(bb.encoder.weight.dtype) - offset) / scale)
        else:
            h = bb.embeddings(input_ids)
        for layer in bb.layers:
            h = layer(h, docs, naive)
        x = (bb.norm_f if self.cfg["model_type"] == "mamba2" else bb.norm)(h) if hasattr(bb, "norm_f") or hasattr(bb, "norm") else h
        if self.head == "classifier":
            pooled = []
            for b in range(x.shape[0]):
                last = int((labels[b] != -100).nonzero()[0, 0])
                seq = x[b, : last + 1]
                pooled.append(seq[-1] if self.cfg["rotor_pool"] == "last" else seq.mean(dim=0))
            logits = self.classifier(torch.stack(pooled))
            if self.pair != "none":  # rows 2i, 2i + 1 are one pair: both rows carry its logits
                logits = logits.repeat_interleave(2, dim=0)
            return logits
        if not self.autoencoder:
            return self.lm_head(x) if hasattr(self, "lm_head") else x @ bb.embeddings.weight.t()
        T = x.shape[1]
        dec = x[:, -1:, :] + sincos_positions(T, x.shape[2]).to(x.dtype)
        return self.unembed(self.decoder(dec))


class PairClassifier(nn.Module):
    """LRA's classifier_head_dual (docs/models.md §classification): the pooled rows 2i, 2i + 1 are a pair
    u, v; features [u, v, u v, u - v] (nli) or [u, v] (concat), then Dense(H) ReLU Dense(H/2)
    ReLU Dense(classes). forward takes the pooled rows [2P, d] and gives [P, classes]."""

    def __init__(self, d, classes, pair, width):
        super().__init__()
        self.nli = pair == "nli"
        self.mlp = nn.Linear((4 if self.nli else 2) * d, width)
        self.mlp2 = nn.Linear(width, width // 2)
        self.weight = nn.Parameter(torch.empty(classes, width // 2))
        self.bias = nn.Parameter(torch.empty(classes))

    def forward(self, pooled):
        u, v = pooled[0::2], pooled[1::2]
        f = torch.cat([u, v, u * v, u - v] if self.nli else [u, v], dim=1)
        h = torch.relu(self.mlp2(torch.relu(self.mlp(f))))
        return F.linear(h, self.weight, self.bias)


def sincos_positions(T, d):
    """[T, d]: sin(p f_j) for j < d/2, then cos(p f_j), f_j = 10000^(-j / (d/2 - 1)); a zero
    last column for odd d (docs/models.md §autoencoder-head)."""
    half = d // 2
    f = torch.exp(-torch.arange(half, dtype=torch.float64) * math.log(10000.0) / max(half - 1, 1))
    a = torch.arange(T, dtype=torch.float64)[:, None] * f[None, :]
    out = torch.cat([torch.sin(a), torch.cos(a)], dim=1)
    return torch.cat([out, torch.zeros(T, d - 2 * half, dtype=torch.float64)], dim=1)


def lm_loss(logits, labels):
    """Mean cross-entropy over positions whose label is not -100 (labels already shifted).
    A batch with no counted position has loss 0."""
    valid = labels != -100
    nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.clamp_min(0).reshape(-1),
                          reduction="none")
    return (nll * valid.reshape(-1).to(nll.dtype)).sum() / valid.sum().clamp_min(1)


def init_weights(model, gen, std=None):
    """docs/models.md §backbone init: linear/embedding/conv weights ~ N(0, std) (initializer_range, 0.02), biases 0,
    norm weights 1; GDN A_log / dt_bias per docs/models.md §gated-deltanet; weight-norm phi_proj uniform with scalar 1;
    Selective RoPE bias 0 and temperatures per docs/models.md §position-embeddings."""
    std = model.cfg.get("initializer_range", 0.02) if std is None else std
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Embedding, ShortConv)):
                m.weight.normal_(0.0, std, generator=gen)
                if getattr(m, "bias", None) is not None:
                    m.bias.zero_()
                if m is getattr(getattr(model, "model", None), "encoder", None):  # docs/models.md §classification
                    m.bias.normal_(0.0, std, generator=gen)
            elif isinstance(m, (RMSNorm, LayerNorm)):
                m.weight.fill_(1.0)
                if isinstance(m, LayerNorm):
                    m.bias.zero_()
            elif isinstance(m, WeightNormProj):
                m.weight.uniform_(-1.0, 1.0, generator=gen)
                m.scalar.fill_(1.0)
            elif isinstance(m, GDNMixer):
                H = m.A_log.numel()
                m.A_log.copy_(torch.log(torch.rand(H, generator=gen) * 16))
                dt = torch.exp(torch.rand(H, generator=gen) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
                dt = dt.clamp_min(1e-4)
                m.dt_bias.copy_(dt + torch.log(-torch.expm1(-dt)))
            elif isinstance(m, Mamba2Mixer):  # docs/models.md §mamba2
                H = m.A_log.numel()
                m.A_log.copy_(torch.log(1 + 15 * torch.rand(H, generator=gen)))
                dt = torch.exp(torch.rand(H, generator=gen) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
                m.dt_bias.copy_(dt.clamp_min(1e-4) + torch.log(-torch.expm1(-dt.clamp_min(1e-4))))
                m.D.fill_(1.0)
            elif isinstance(m, LRUMixer):  # docs/models.md §lru, the paper's ring init
                cfg, (N, d) = model.cfg, m.B_re.shape
                rmin, rmax = cfg.get("r_min", 0.9), cfg.get("r_max", 0.999)
                u = torch.rand(N, generator=gen, dtype=torch.float64)
                m.nu_log.copy_(torch.log(-0.5 * torch.log(u * (rmax ** 2 - rmin ** 2) + rmin ** 2)))
                m.theta_log.copy_(torch.log(cfg.get("max_phase", 6.28) * torch.rand(N, generator=gen)))
                m.gamma_log.copy_(0.5 * torch.log(-torch.expm1(-2 * torch.exp(m.nu_log))))
                for w in (m.B_re, m.B_im):
                    w.normal_(0.0, (2 * d) ** -0.5, generator=gen)
                for w in (m.C_re, m.C_im):
                    w.normal_(0.0, N ** -0.5, generator=gen)
                m.D.normal_(0.0, 1.0, generator=gen)
            elif isinstance(m, RotRNNMixer):  # docs/models.md §rotrnn, the authors' init
                cfg, (d, Ns) = model.cfg, m.C.shape
                lo, hi = math.log(-math.log(cfg.get("gamma_max", 0.999))), math.log(-math.log(cfg.get("gamma_min", 0.9)))
                m.gamma_log.copy_(lo + torch.rand(m.gamma_log.shape, generator=gen) * (hi - lo))
                m.theta.copy_(cfg.get("max_phase", 6.28) * torch.rand(m.theta.shape, generator=gen))
                m.M.normal_(0.0, 1.0, generator=gen)
                m.B.normal_(0.0, (d + Ns) ** -0.5, generator=gen)
                m.C.normal_(0.0, (d + Ns) ** -0.5, generator=gen)
                m.D.normal_(0.0, 1.0, generator=gen)
            elif isinstance(m, BaseConv):  # docs/models.md §zoology-shape: PyTorch's Conv1d init, U(+-1/sqrt(K))
                bound = m.conv.weight.shape[-1] ** -0.5
                m.conv.weight.uniform_(-bound, bound, generator=gen)
                m.conv.bias.uniform_(-bound, bound, generator=gen)
            if isinstance(m, SelectiveRoPE):
                if m.use_bias:
                    m.phi_bias.zero_()
                m.temperature.copy_(rotary_temperature(model.cfg["position_embedding"], 2 * m.P))


def no_weight_decay(name, param):
    """docs/models.md §training-recipe: no decay on norm weights, biases, A_log, dt_bias, weight-norm scalars, temperatures;
    §rotrnn: none on RotRNN's recurrence parameters theta and M either."""
    return param.dim() < 2 or name.endswith(("temperature", "phi_bias", "attn.theta", "attn.M"))
