"""Reference Gated DeltaNet (HF Qwen3-Next's ``Qwen3NextGatedDeltaNet``, no cache) computed row by row: the
specification ``tree_scan.gated_deltanet_tree`` is tested against, and its fallback.

``gated_deltanet_rows`` is the layer's forward as eager runs it on ``[B, T, hidden]`` rows: padded positions
zeroed (``apply_mask_to_padding_states``), the q/k/v/z/b/a projections, the causal depthwise conv1d (zero
history) with SiLU, the chunked gated delta rule from a zero state (``delta_rule.py``, ours: bitwise transformers 5.24's torch
fallback in float32, specified by the token-by-token recurrence beside it), the gated RMS norm and the output projection. The
per-token steps are shared with the tree scan (``project``, ``decay_and_gate``, ``gated_norm_out``), so the two
differ only where the tree scan differs: the conv and the scan.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor


@dataclass(frozen=True)
class DeltaNetDims:
    """The sizes and constants of one Gated DeltaNet layer that its weights' shapes do not all say."""

    num_k_heads: int
    head_k_dim: int
    num_v_heads: int
    head_v_dim: int
    kernel_size: int
    norm_eps: float


@dataclass(frozen=True)
class DeltaNetWeights:
    in_proj_qkvz: Tensor  # [2 * key_dim + 2 * value_dim, hidden]
    in_proj_ba: Tensor    # [2 * num_v_heads, hidden]
    conv: Tensor          # [conv_dim, 1, kernel_size] (nn.Conv1d's depthwise weight, no bias)
    dt_bias: Tensor       # [num_v_heads]
    A_log: Tensor         # [num_v_heads]
    norm: Tensor          # [head_v_dim]
    out_proj: Tensor      # [hidden, value_dim]


@dataclass(frozen=True)
class SplitDeltaNetWeights:
    """A Gated DeltaNet whose projections are separate and not grouped by key head (HF Qwen3.5, OLMo hybrid):
    q|k|v in one projection (all query heads, then all key heads, then all value heads), z, b and a apart."""

    in_proj_qkv: Tensor   # [2 * key_dim + value_dim, hidden]
    in_proj_z: Tensor     # [value_dim, hidden]
    in_proj_b: Tensor     # [num_v_heads, hidden]
    in_proj_a: Tensor     # [num_v_heads, hidden]
    conv: Tensor
    dt_bias: Tensor
    A_log: Tensor
    norm: Tensor
    out_proj: Tensor


def delta_rule():
    """The chunked gated delta rule (``delta_rule.chunk_gated_delta_rule``: our own, float32 as the layers' torch
    fallback computes it, float64 for float64 inputs), looked up at call time so a test can swap it."""
    from . import delta_rule as dr

    return dr.chunk_gated_delta_rule


def project(x: Tensor, w: DeltaNetWeights | SplitDeltaNetWeights, d: DeltaNetDims):
    """Per token: (mixed q|k|v before the conv [..., conv_dim], z [..., Hv, dv], b [..., Hv], a [..., Hv]), in
    the grouped head order of the layer's ``fix_query_key_value_ordering`` (fused weights), or as the split
    projections give them."""
    lead = x.shape[:-1]
    if isinstance(w, SplitDeltaNetWeights):
        return (F.linear(x, w.in_proj_qkv), F.linear(x, w.in_proj_z).reshape(*lead, d.num_v_heads, d.head_v_dim),
                F.linear(x, w.in_proj_b), F.linear(x, w.in_proj_a))
    r = d.num_v_heads // d.num_k_heads
    qkvz = F.linear(x, w.in_proj_qkvz).view(*lead, d.num_k_heads, 2 * d.head_k_dim + 2 * r * d.head_v_dim)
    ba = F.linear(x, w.in_proj_ba).view(*lead, d.num_k_heads, 2 * r)
    q, k, v, z = torch.split(qkvz, [d.head_k_dim, d.head_k_dim, r * d.head_v_dim, r * d.head_v_dim], dim=-1)
    b, a = torch.split(ba, [r, r], dim=-1)
    mixed = torch.cat((q.reshape(*lead, -1), k.reshape(*lead, -1), v.reshape(*lead, -1)), dim=-1)
    return (mixed, z.reshape(*lead, d.num_v_heads, d.head_v_dim), b.reshape(*lead, d.num_v_heads),
            a.reshape(*lead, d.num_v_heads))


def split_qkv(mixed: Tensor, d: DeltaNetDims):
    """The conv's output [..., conv_dim] as (q [..., Hk, dk], k [..., Hk, dk], v [..., Hv, dv])."""
    lead = mixed.shape[:-1]
    key_dim = d.num_k_heads * d.head_k_dim
    q, k, v = torch.split(mixed, [key_dim, key_dim, d.num_v_heads * d.head_v_dim], dim=-1)
    return (q.reshape(*lead, -1, d.head_k_dim), k.reshape(*lead, -1, d.head_k_dim),
            v.reshape(*lead, -1, d.head_v_dim))


def decay_and_gate(b: Tensor, a: Tensor, w: DeltaNetWeights) -> tuple[Tensor, Tensor]:
    """(beta, g): the delta rule's write strength and log decay, with the layer's dtype promotions."""
    return b.sigmoid(), -w.A_log.float().exp() * F.softplus(a.float() + w.dt_bias)


def gated_norm_out(core: Tensor, z: Tensor, w: DeltaNetWeights, d: DeltaNetDims) -> Tensor:
    """The gated RMS norm (in float32, as ``Qwen3NextRMSNormGated``) and the output projection, per token."""
    dtype = core.dtype
    h = core.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + d.norm_eps)
    h = w.norm * h.to(dtype)
    h = (h * F.silu(z.to(torch.float32))).to(dtype)
    return F.linear(h.reshape(*h.shape[:-2], -1), w.out_proj)


def gated_deltanet_rows(x: Tensor, mask: Tensor | None, w: DeltaNetWeights, d: DeltaNetDims) -> Tensor:
    """The layer on rows: ``x`` [B, T, hidden], ``mask`` [B, T] (1 real, 0 pad) or None; [B, T, hidden]."""
    if mask is not None:
        x = (x * mask[:, :, None]).to(x.dtype)
    T = x.shape[1]
    mixed, z, b, a = project(x, w, d)
    conv = F.conv1d(mixed.transpose(1, 2).to(w.conv.dtype), w.conv, None, padding=d.kernel_size - 1,
                    groups=mixed.shape[-1])[:, :, :T]
    mixed = F.silu(conv).to(mixed.dtype).transpose(1, 2)
    q, k, v = split_qkv(mixed, d)
    beta, g = decay_and_gate(b, a, w)
    core, _ = delta_rule()(q, k, v, g=g, beta=beta, initial_state=None, output_final_state=False,
                           use_qk_l2norm_in_kernel=True)
    return gated_norm_out(core, z, w, d)
