"""rotor's position embeddings of q and k (docs/models.md §position-embeddings), which fla's layers lack: NoPE,
RoPE and Selective RoPE, each a module `rotary` of a mixer whose forward(q, k, x) rotates q and k
[B, T, H, D] given the mixer input x [B, T, d]. Each row of a batch is one segment (positions and
the Selective RoPE sum start at its first token). Parameters are named as rotor's checkpoints
name them (`attn.rotary.*`)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate(x, angle):
    """Half-split pairs (j, j + D/2) rotated by angle [..., D/2], in fp32."""
    P = x.shape[-1] // 2
    x1, x2 = x[..., :P].float(), x[..., P:].float()
    cos, sin = torch.cos(angle), torch.sin(angle)
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).to(x.dtype)


class NoPE(nn.Module):
    def forward(self, q, k, x):
        return q, k


class RoPE(nn.Module):
    """a_j(t) = t theta^(-2j/D)."""

    def __init__(self, dk, theta):
        super().__init__()
        self.dk, self.theta = dk, theta

    def forward(self, q, k, x):
        T = q.shape[1]
        inv = self.theta ** (-torch.arange(0, self.dk, 2, dtype=torch.float64, device=q.device) / self.dk)
        angle = (torch.arange(T, dtype=torch.float64, device=q.device)[:, None] * inv)[None, :, None, :].float()
        return rotate(q, angle), rotate(k, angle)


class WeightNormProj(nn.Module):
    """phi_{h,j} = x_h . s_h W_{h,:,j} / ||W_{h,:,j}||, W [H, d/H, P]."""

    def __init__(self, heads, d_in, P):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(heads, d_in, P))
        self.scalar = nn.Parameter(torch.ones(heads))

    def forward(self, xhat):
        w = self.weight / self.weight.norm(dim=-2, keepdim=True).clamp_min(1e-12)
        return torch.einsum("bthi,hij->bthj", xhat, self.scalar[:, None, None] * w)


def temperatures(pe, dk):
    """tau [1, 1, 1, P] of temp_type rope or rfa (docs/models.md §position-embeddings step 7)."""
    P, theta, tmax = dk // 2, float(pe["temp_theta"]), float(pe["temp_max"])
    if pe["temp_type"] == "rope":
        tau = tmax / theta ** (torch.arange(0, dk, 2, dtype=torch.float64) / dk)
    else:
        tan = torch.tan(torch.linspace(0.0, theta * math.pi, P, dtype=torch.float64) / 2)
        tau = tmax * tan / tan.max()
    return tau.float().reshape(1, 1, 1, P)


class SelectiveRoPE(nn.Module):
    """Input-dependent angles tau_j Phi_{t,h,j}, Phi the running sum of the (conv, bias, phase
    gate) increments phi projected from the per-head L2-normalised mixer input."""

    def __init__(self, pe, d, heads, dk):
        super().__init__()
        if pe.get("gate_parametrization", "standard") != "standard" or pe.get("d_conv", 4) != 4:
            raise ValueError(f"position_embedding {pe}: only gate_parametrization \"standard\" and d_conv 4 exist")
        self.H, self.P, self.d = heads, dk // 2, d
        self.low_rank = pe["phi_parametrization"] == "low-rank"
        if self.low_rank:
            r = int(pe["phi_proj_rank"])
            self.phi_proj = nn.Sequential(nn.Linear(d, r, bias=False), nn.Linear(r, heads * self.P, bias=False))
        else:
            self.phi_proj = WeightNormProj(heads, d // heads, self.P)
        self.skip_conv = bool(pe["skip_conv"])
        self.conv_silu = pe["conv_act"] == "silu"
        if not self.skip_conv:
            self.phi_conv1d = nn.Conv1d(heads * self.P, heads * self.P, 4, groups=heads * self.P, bias=False)
        if pe["use_bias"]:
            self.phi_bias = nn.Parameter(torch.zeros(1, 1, heads, self.P))
        if pe["use_gate"]:
            self.phase_gate_proj = nn.Linear(d, heads, bias=True)
        self.temperature = nn.Parameter(temperatures(pe, dk), requires_grad=bool(pe["temp_grad"]))

    def angles(self, x):
        B, T, _ = x.shape
        x = x.float()
        xhat = x.reshape(B, T, self.H, -1)
        xhat = xhat * torch.rsqrt(xhat.pow(2).sum(-1, keepdim=True) + 1e-6)
        if self.low_rank:
            phi = self.phi_proj(xhat.reshape(B, T, self.d))
        else:
            phi = self.phi_proj(xhat).reshape(B, T, self.H * self.P)
        if self.skip_conv:
            phi = phi - F.pad(phi, (0, 0, 1, 0))[:, :T]
        else:
            phi = F.conv1d(F.pad(phi.transpose(1, 2), (3, 0)), self.phi_conv1d.weight, groups=self.H * self.P)
            phi = phi.transpose(1, 2)
            if self.conv_silu:
                phi = F.silu(phi)
        phi = phi.reshape(B, T, self.H, self.P)
        if hasattr(self, "phi_bias"):
            phi = phi + torch.exp(self.phi_bias)
        if hasattr(self, "phase_gate_proj"):
            phi = phi * torch.sigmoid(self.phase_gate_proj(xhat.reshape(B, T, self.d)))[..., None]
        return self.temperature * phi.cumsum(1)

    def forward(self, q, k, x):
        a = self.angles(x)
        return rotate(q, a), rotate(k, a)


def make_rotary(config, heads, dk):
    """The position embedding of config.json's position_embedding (absent: NoPE)."""
    pe = getattr(config, "position_embedding", None) or {"type": "nope"}
    if pe["type"] == "rope":
        return RoPE(dk, float(pe["theta"]))
    if pe["type"] == "selective_rope":
        return SelectiveRoPE(pe, config.hidden_size, heads, dk)
    if pe["type"] != "nope":
        raise ValueError(f"position_embedding type {pe['type']!r} is not rotor's (nope, rope, selective_rope)")
    return NoPE()
