"""Reference tree attention: the specification the fast kernels are tested against.

A packed batch holds N unique tokens in DFS preorder of the rows' prefix tree.
Key k is visible to query q iff ``k <= q < subtree_end[k]``, i.e. k is q itself
or an ancestor of q. This module builds that dense [N, N] mask and does plain
softmax attention, so it is O(N^2) and only meant for tests and debugging.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .block_sparse_reference import masked_attention_reference


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
    assert q.shape[0] == 1 and q.shape[1] % k.shape[1] == 0
    # every query sees at least itself, so the general masked reference never meets an empty row here
    return masked_attention_reference(q, k, v, tree_visibility_mask(subtree_end)[None], scale)
