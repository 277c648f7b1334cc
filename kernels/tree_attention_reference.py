"""Reference tree attention: the specification the fast kernels are tested against.

A packed batch holds N unique tokens in DFS preorder of the rows' prefix tree.
Key k is visible to query q iff ``k <= q < subtree_end[k]``, i.e. k is q itself
or an ancestor of q. This module builds that dense [N, N] mask and does plain
softmax attention, so it is O(N^2) and only meant for tests and debugging.
"""

from __future__ import annotations

import torch
from torch import Tensor


def tree_visibility_mask(subtree_end: Tensor) -> Tensor:
    """Dense bool mask [N, N]; mask[q, k] is True iff key k is visible to query q."""
    n = subtree_end.shape[0]
    pos = torch.arange(n, device=subtree_end.device)
    qi = pos[:, None]
    ki = pos[None, :]
    return (ki <= qi) & (qi < subtree_end.to(pos.device)[None, :])


def tree_attention_reference(
    q: Tensor, k: Tensor, v: Tensor, subtree_end: Tensor, scale: float
) -> tuple[Tensor, Tensor]:
    """Tree attention by plain math.

    q [1, Hq, N, D], k [1, Hkv, N, D], v [1, Hkv, N, Dv]; Hq = g * Hkv and query
    head h reads kv head h // g. Computes in float32 (float64 if the inputs are
    float64, so tests can get a tighter ground truth). Returns
    (out [1, Hq, N, Dv] in q.dtype, lse [1, Hq, N] float32), where lse is the
    natural log-sum-exp of the scaled scores over the visible keys.
    Differentiable through ordinary autograd.
    """
    hq, hkv = q.shape[1], k.shape[1]
    assert q.shape[0] == 1 and hq % hkv == 0
    g = hq // hkv
    cdt = torch.promote_types(q.dtype, torch.float32)
    qf = q.to(cdt)
    kf = k.to(cdt).repeat_interleave(g, dim=1)
    vf = v.to(cdt).repeat_interleave(g, dim=1)
    scores = (qf @ kf.transpose(-1, -2)) * scale
    mask = tree_visibility_mask(subtree_end).to(q.device)
    scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    p = torch.exp(scores - lse[..., None])
    out = p @ vf
    return out.to(q.dtype), lse.to(torch.float32)
