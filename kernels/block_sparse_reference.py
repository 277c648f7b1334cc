"""Reference block-sparse (budgeted) attention: the specification the Triton kernels are tested against.

A budget gives each query block the key blocks it may attend to (per KV head or shared); inside them attention
is causal, bottom-right aligned (query i sits at position ``i + n_k - n_q``). This module expands that to a
dense [heads, n_q, n_k] mask and runs plain softmax attention: O(n_q x n_k), for tests and debugging only.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["budget_visibility_mask", "masked_attention_reference"]


def budget_visibility_mask(selected: Tensor, n_q: int, n_k: int, block_q: int, block_k: int) -> Tensor:
    """Dense bool [heads, n_q, n_k]: key k visible to query q iff its block is selected for q's block and
    ``k <= q + n_k - n_q``. ``selected`` is bool [heads, nQB, nKB]."""
    if selected.dim() == 2:
        selected = selected[None]
    qb = torch.arange(n_q) // block_q
    kb = torch.arange(n_k) // block_k
    dense = selected.bool().cpu()[:, qb][:, :, kb]
    causal = torch.arange(n_k)[None, :] <= (torch.arange(n_q) + (n_k - n_q))[:, None]
    return dense & causal[None]


def masked_attention_reference(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float) -> tuple[Tensor, Tensor]:
    """Softmax attention under a visibility mask, by plain math.

    q [1, Hq, Nq, D], k/v [1, Hkv, Nk, D(v)], mask bool [1 or Hkv, Nq, Nk] (a per-KV-head mask applies to that
    head's query group). Computes in float32 (float64 for float64 inputs). Returns (out in q.dtype, lse float32,
    natural log-sum-exp over visible keys); a query that sees nothing gets out 0 and lse -inf.
    Differentiable through ordinary autograd.
    """
    hq, hkv = q.shape[1], k.shape[1]
    g = hq // hkv
    cdt = torch.promote_types(q.dtype, torch.float32)
    kf = k.to(cdt).repeat_interleave(g, dim=1)
    vf = v.to(cdt).repeat_interleave(g, dim=1)
    scores = (q.to(cdt) @ kf.transpose(-1, -2)) * scale
    mask = mask.to(q.device)
    if mask.shape[0] > 1:
        mask = mask.repeat_interleave(g, dim=0)
    mask = mask[None]
    scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    p = torch.where(mask, torch.exp(scores - lse.masked_fill(lse == float("-inf"), 0)[..., None]), 0)
    out = p @ vf
    return out.to(q.dtype), lse.to(torch.float32)
