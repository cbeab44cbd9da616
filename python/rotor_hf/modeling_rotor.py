"""rotor's Hugging Face causal LMs (docs/interop.md): the models of rotor checkpoints whose
function no model of flash-linear-attention computes, loaded by transformers with
trust_remote_code=True from the checkpoint (config.json's auto_map).

The backbone is rotor's (docs/models.md §backbone: embedding, prenorm blocks of mixer and SwiGLU MLP,
final RMSNorm, untied head) in plain torch; the mixers are fla's layers (GLA, Gated DeltaNet,
DeltaNet, ForgettingAttention) and fla's ops with what fla lacks added: the position embeddings of
rotor_pe.py (RoPE, Selective RoPE; NoPE for the Transformer), FoX-Pro's shifts and output norm.
The families and shapes that no model here computes refuse to load with the reason.

Each row of a batch is one document: no padding (attention_mask all ones), and no restart at a
BOS inside a row (rotor's model.doc_mask). Generation runs the whole prefix at every step (no
cache).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import GenerationMixin, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from fla.layers import DeltaNet, ForgettingAttention, GatedDeltaNet, GatedLinearAttention
from fla.ops.attn import parallel_attn
from fla.ops.delta_rule import chunk_delta_rule, fused_recurrent_delta_rule
from fla.ops.forgetting_attn import parallel_forgetting_attn
from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
from fla.ops.gla import chunk_gla, fused_recurrent_gla

from .configuration_rotor import (RotorConfig, RotorDeltaNetConfig, RotorEURNNConfig, RotorExpRNNConfig,
                                  RotorForgettingTransformerConfig, RotorGatedDeltaNetConfig, RotorGLAConfig,
                                  RotorLRUConfig, RotorLSTMConfig, RotorMamba2Config, RotorNnRNNConfig,
                                  RotorRNNConfig, RotorRNNOrthConfig, RotorRotRNNConfig, RotorTransformerConfig)
from .rotor_pe import make_rotary

QK_NORM_EPS = 1e-5  # FoX's and the Transformer's QK-norm (docs/models.md §backbone)


class RMSNorm(nn.Module):
    """x rsqrt(mean x^2 + eps) w over the last dimension, in fp32; w may hold one weight per head
    and channel when x is [..., H, dh] (shape (H, dh) given as w_shape)."""

    def __init__(self, size, eps, w_shape=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps, self.w_shape = eps, w_shape

    def forward(self, x):
        w = self.weight.view(self.w_shape) if self.w_shape else self.weight
        y = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * w).to(x.dtype)


def heads(x, d):
    return x.unflatten(-1, (-1, d))


def recurrent_mode(T):
    """The fused recurrent kernel for inputs of up to 64 tokens without gradients, the chunked one
    otherwise (fla's GatedDeltaNet's choice)."""
    return T <= 64 and not torch.is_grad_enabled()


class RotorGatedLinearAttention(GatedLinearAttention):
    """docs/models.md §gla with the position embedding on q, k after the short conv."""

    def __init__(self, config, layer_idx):
        super().__init__(hidden_size=config.hidden_size, expand_k=config.expand_k, expand_v=config.expand_v,
                         num_heads=config.num_heads, use_short_conv=config.use_short_conv, conv_size=4,
                         use_output_gate=True, gate_fn="swish", norm_eps=config.norm_eps,
                         gate_logit_normalizer=config.gate_logit_normalizer,
                         gate_low_rank_dim=config.gate_low_rank_dim, fuse_norm=True, layer_idx=layer_idx)
        self.rotary = make_rotary(config, self.num_heads, self.head_k_dim)

    def forward(self, x):
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        if self.use_short_conv:
            q, k, v = self.q_conv1d(x=q)[0], self.k_conv1d(x=k)[0], self.v_conv1d(x=v)[0]
        q, k, v = heads(q, self.head_k_dim), heads(k, self.head_k_dim), heads(v, self.head_v_dim)
        q, k = self.rotary(q, k, x)
        gk = F.logsigmoid(heads(self.gk_proj(x), self.head_k_dim)) / self.gate_logit_normalizer
        if recurrent_mode(x.shape[1]):
            o, _ = fused_recurrent_gla(q=q, k=k, v=v, gk=gk, state_v_first=True)
        else:
            o, _ = chunk_gla(q=q, k=k, v=v, g=gk, state_v_first=True)
        o = self.g_norm_swish_gate(o, heads(self.g_proj(x), self.head_v_dim))
        return self.o_proj(o.flatten(-2))


def delta_qkv(layer, x):
    """q, k, v of Gated DeltaNet and DeltaNet: silu(short conv) or silu alone, as heads."""
    q, k, v = layer.q_proj(x), layer.k_proj(x), layer.v_proj(x)
    if layer.use_short_conv:
        q, k, v = layer.q_conv1d(x=q)[0], layer.k_conv1d(x=k)[0], layer.v_conv1d(x=v)[0]
    else:
        q, k, v = F.silu(q), F.silu(k), F.silu(v)
    q, k = layer.rotary(heads(q, layer.head_k_dim), heads(k, layer.head_k_dim), x)
    return q, k, heads(v, layer.head_v_dim)


def delta_readout(layer, x, o):
    o = layer.o_norm(o, heads(layer.g_proj(x), layer.head_v_dim)) if layer.use_gate else layer.o_norm(o)
    return layer.o_proj(o.flatten(-2))


class RotorGatedDeltaNet(GatedDeltaNet):
    """docs/models.md §gated-deltanet with the position embedding on q, k before their L2 norm."""

    def __init__(self, config, layer_idx):
        super().__init__(hidden_size=config.hidden_size, expand_v=config.expand_v, head_dim=config.head_dim,
                         num_heads=config.num_heads, use_gate=True, use_short_conv=config.use_short_conv,
                         conv_size=4, norm_eps=config.norm_eps, layer_idx=layer_idx)
        self.rotary = make_rotary(config, self.num_heads, self.head_k_dim)

    def forward(self, x):
        q, k, v = delta_qkv(self, x)
        op = fused_recurrent_gated_delta_rule if recurrent_mode(x.shape[1]) else chunk_gated_delta_rule
        o, _ = op(q=q, k=k, v=v, g=self.a_proj(x), beta=self.b_proj(x), use_qk_l2norm_in_kernel=True,
                  use_beta_sigmoid_in_kernel=True, use_gate_in_kernel=True, A_log=self.A_log, dt_bias=self.dt_bias,
                  state_v_first=True)
        return delta_readout(self, x, o)


class RotorDeltaNet(DeltaNet):
    """docs/models.md §deltanet with the position embedding on q, k before their L2 norm."""

    def __init__(self, config, layer_idx):
        super().__init__(hidden_size=config.hidden_size, expand_k=config.expand_k, expand_v=config.expand_v,
                         num_heads=config.num_heads, use_beta=True, use_gate=config.use_gate,
                         use_short_conv=config.use_short_conv, conv_size=4, qk_activation="silu", qk_norm="l2",
                         norm_eps=config.norm_eps, layer_idx=layer_idx)
        self.rotary = make_rotary(config, self.num_heads, self.head_k_dim)

    def forward(self, x):
        q, k, v = delta_qkv(self, x)
        op = fused_recurrent_delta_rule if recurrent_mode(x.shape[1]) else chunk_delta_rule
        o, _ = op(q=q, k=k, v=v, beta=self.b_proj(x).sigmoid(), use_qk_l2norm_in_kernel=True)
        return delta_readout(self, x, o)


def qk_pipeline(layer, q, k, x):
    """FoX's and the Transformer's order (docs/models.md §fox step 4): QK-norm then RoPE, or
    Selective RoPE then QK-norm."""
    selective = hasattr(layer.rotary, "angles")
    if layer.qk_norm and not selective:
        q, k = layer.norm_q(q), layer.norm_k(k)
    q, k = layer.rotary(q, k, x)
    if layer.qk_norm and selective:
        q, k = layer.norm_q(q), layer.norm_k(k)
    return q, k


class RotorForgettingAttention(ForgettingAttention):
    """docs/models.md §fox: fla's ForgettingAttention with the position embedding and FoX-Pro's
    k/v shifts and output norm."""

    def __init__(self, config, layer_idx):
        super().__init__(hidden_size=config.hidden_size, num_heads=config.num_heads, qk_norm=config.qk_norm,
                         use_output_gate=config.use_output_gate, layer_idx=layer_idx)
        d, H = config.hidden_size, config.num_heads
        self.rotary = make_rotary(config, H, self.head_dim)
        if getattr(config, "use_output_norm", False):
            self.o_norm = RMSNorm(d, config.norm_eps, (H, self.head_dim))
        if getattr(config, "use_k_shift", False):
            self.k_shift_proj = nn.Linear(d, H, bias=False)
        if getattr(config, "use_v_shift", False):
            self.v_shift_proj = nn.Linear(d, H, bias=False)

    def norm_q(self, q):
        return self.q_norm(q.flatten(-2)).view_as(q)

    def norm_k(self, k):
        return self.k_norm(k.flatten(-2)).view_as(k)

    def shift(self, y, x, proj):
        """a y_{t-1} + (1 - a) y_t per head, a = sigmoid(x W), y_{-1} = 0."""
        a = torch.sigmoid(proj(x))[..., None]
        return a * F.pad(y, (0, 0, 0, 0, 1, 0))[:, :-1] + (1 - a) * y

    def forward(self, x):
        q, k, v = (heads(p(x), self.head_dim) for p in (self.q_proj, self.k_proj, self.v_proj))
        if hasattr(self, "k_shift_proj"):
            k = self.shift(k, x, self.k_shift_proj)
        if hasattr(self, "v_shift_proj"):
            v = self.shift(v, x, self.v_shift_proj)
        q, k = qk_pipeline(self, q, k, x)
        o = parallel_forgetting_attn(q, k, v, F.logsigmoid(self.f_proj(x).float()))
        if hasattr(self, "o_norm"):
            o = self.o_norm(o)
        o = o.flatten(-2)
        if self.use_output_gate:
            o = o * torch.sigmoid(self.g_proj(x))
        return self.o_proj(o)


class RotorAttention(nn.Module):
    """docs/models.md §transformer: causal softmax attention (fla's attention op) with rotor's position
    embedding, QK-norm of one weight per channel shared by the heads."""

    def __init__(self, config, layer_idx):
        super().__init__()
        d, H = config.hidden_size, config.num_heads
        self.head_dim, self.qk_norm = d // H, config.qk_norm
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(d, d, bias=False) for _ in range(4))
        if self.qk_norm:
            self.q_norm, self.k_norm = RMSNorm(self.head_dim, QK_NORM_EPS), RMSNorm(self.head_dim, QK_NORM_EPS)
        self.rotary = make_rotary(config, H, self.head_dim)

    def norm_q(self, q):
        return self.q_norm(q)

    def norm_k(self, k):
        return self.k_norm(k)

    def forward(self, x):
        q, k, v = (heads(p(x), self.head_dim) for p in (self.q_proj, self.k_proj, self.v_proj))
        q, k = qk_pipeline(self, q, k, x)
        return self.o_proj(parallel_attn(q, k, v).flatten(-2))


class RotorMLP(nn.Module):
    def __init__(self, d, width):
        super().__init__()
        self.gate_proj = nn.Linear(d, width, bias=False)
        self.up_proj = nn.Linear(d, width, bias=False)
        self.down_proj = nn.Linear(width, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class RotorBlock(nn.Module):
    def __init__(self, config, layer_idx, mixer):
        super().__init__()
        self.attn_norm = RMSNorm(config.hidden_size, config.norm_eps)
        self.attn = mixer(config, layer_idx)
        self.mlp_norm = RMSNorm(config.hidden_size, config.norm_eps)
        self.mlp = RotorMLP(config.hidden_size, config.intermediate_size)

    def forward(self, h):
        h = h + self.attn(self.attn_norm(h))
        return h + self.mlp(self.mlp_norm(h))


class RotorBackbone(nn.Module):
    def __init__(self, config, mixer):
        super().__init__()
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(RotorBlock(config, i, mixer) for i in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.norm_eps)

    def forward(self, input_ids):
        h = self.embeddings(input_ids)
        for layer in self.layers:
            h = layer(h)
        return self.norm(h)


# rotor's model shapes beside the causal LM (docs/models.md §autoencoder-head, §classification, §block-dropout-bidirectional, §zoology-shape): config.json keys
ROTOR_SHAPES = {"rotor_head": "its head", "rotor_input": "its linear input encoder",
                "rotor_block": "its block", "rotor_bidirectional": "its bidirectional scan",
                "rotor_norm": "its LayerNorms", "rotor_mlp": "its blocks' MLP", "rotor_mixers": "its layers' mixers (BaseConv layers)",
                "tie_word_embeddings": "its tied LM head"}


def refusal(config, why):
    return NotImplementedError(f"{config.model_type} checkpoint: {why}; rotor itself runs it (rotor eval, rotor "
                               "generate, rotor serve; docs/interop.md)")


class RotorPreTrainedModel(PreTrainedModel):
    config_class = RotorConfig
    base_model_prefix = "model"
    _no_split_modules = ["RotorBlock"]


class RotorCausalLM(RotorPreTrainedModel, GenerationMixin):
    mixer = None  # the layer class of the family

    def __init__(self, config):
        for key, what in ROTOR_SHAPES.items():
            if getattr(config, key, None) not in (None, "lm", "embedding", "prenorm", "rmsnorm", "auto", "swiglu", "", False):
                raise refusal(config, f"{what} ({key} = {getattr(config, key)!r}) has no Hugging Face model here")
        super().__init__(config)
        self.model = RotorBackbone(config, self.mixer)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, labels=None, **kwargs):
        if attention_mask is not None and not bool(attention_mask.all()):
            raise ValueError("rotor's models take rows without padding (an attention_mask of ones)")
        logits = self.lm_head(self.model(input_ids)).float()
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=-100)
        return CausalLMOutputWithPast(loss=loss, logits=logits)

    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        return {"input_ids": input_ids}  # the whole prefix at every step

    def generate(self, *args, **kwargs):
        kwargs["use_cache"] = False
        return super().generate(*args, **kwargs)


class RotorGLAForCausalLM(RotorCausalLM):
    config_class, mixer = RotorGLAConfig, RotorGatedLinearAttention


class RotorGatedDeltaNetForCausalLM(RotorCausalLM):
    config_class, mixer = RotorGatedDeltaNetConfig, RotorGatedDeltaNet


class RotorDeltaNetForCausalLM(RotorCausalLM):
    config_class, mixer = RotorDeltaNetConfig, RotorDeltaNet


class RotorForgettingTransformerForCausalLM(RotorCausalLM):
    config_class, mixer = RotorForgettingTransformerConfig, RotorForgettingAttention


class RotorTransformerForCausalLM(RotorCausalLM):
    config_class, mixer = RotorTransformerConfig, RotorAttention


class RotorRefused(RotorPreTrainedModel):
    """A family no model here computes: loading fails with why."""
    why = ""

    def __init__(self, config):
        raise refusal(config, self.why)


class RotorMamba2ForCausalLM(RotorRefused):
    config_class = RotorMamba2Config
    why = ("n_groups > 1 has no model that computes it everywhere: fla's Mamba2 gives head h the B/C group "
           "h // (H / n_groups) in mamba_ssm's kernels, as rotor, but h % n_groups in its torch fallback "
           "(docs/models.md §mamba2); a checkpoint with n_groups = 1 loads as fla's mamba2")


NO_FLA_LAYER = "fla has no such layer and no model is shipped for it"


class RotorLRUForCausalLM(RotorRefused):
    config_class, why = RotorLRUConfig, f"the LRU (docs/models.md §lru): {NO_FLA_LAYER}"


class RotorRotRNNForCausalLM(RotorRefused):
    config_class, why = RotorRotRNNConfig, f"the RotRNN (docs/models.md §rotrnn): {NO_FLA_LAYER}"


class RotorRNNForCausalLM(RotorRefused):
    config_class, why = RotorRNNConfig, f"the tanh RNN (docs/models.md §nonlinear-rnns): {NO_FLA_LAYER}"


class RotorRNNOrthForCausalLM(RotorRefused):
    config_class, why = RotorRNNOrthConfig, f"the orthogonal RNN (docs/models.md §nonlinear-rnns): {NO_FLA_LAYER}"


class RotorExpRNNForCausalLM(RotorRefused):
    config_class, why = RotorExpRNNConfig, f"expRNN (docs/models.md §nonlinear-rnns): {NO_FLA_LAYER}"


class RotorNnRNNForCausalLM(RotorRefused):
    config_class, why = RotorNnRNNConfig, f"nnRNN (docs/models.md §nonlinear-rnns): {NO_FLA_LAYER}"


class RotorEURNNForCausalLM(RotorRefused):
    config_class, why = RotorEURNNConfig, f"EURNN (docs/models.md §nonlinear-rnns): {NO_FLA_LAYER}"


class RotorLSTMForCausalLM(RotorRefused):
    config_class, why = RotorLSTMConfig, f"the LSTM (docs/models.md §lstm): {NO_FLA_LAYER}"
