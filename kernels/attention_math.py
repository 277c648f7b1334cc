"""The attention backward by its formulas, on one block of queries against the keys they see.

Both PyTorch paths of our attention ops (``tree_attention``'s math path, per segment and query chunk, and
``block_sparse_attention``'s dense-mask path) run inside custom ops, where autograd is off, so they write the
backward out; this is that one piece. Heads are grouped as the ops store them: query head ``i`` reads key/value
head ``i // g`` (``[Hq] = [Hkv, g]``), so the key gradients sum over the ``g`` query heads of a group.
"""

from __future__ import annotations

import torch
from torch import Tensor


def attention_backward(q: Tensor, k: Tensor, v: Tensor, grad_out: Tensor, out: Tensor, lse: Tensor,
                       scores: Tensor, scale: float) -> tuple[Tensor, Tensor, Tensor]:
    """dq [Hkv, g, Lq, D], dk [Hkv, Lk, D], dv [Hkv, Lk, Dv] of ``out = softmax(scores) @ v``.

    q, grad_out, out: [Hkv, g, Lq, D]; k, v: [Hkv, Lk, D]; lse: [Hkv, g, Lq], the forward's log-sum-exp;
    ``scores``: [Hkv, g, Lq, Lk], ``scale * q @ k^T`` with the keys a query does not see at -inf. All in the
    compute dtype. A query that saw no key (lse -inf) gets zero gradients.
    """
    lse = lse.masked_fill(lse == float("-inf"), float("inf"))  # exp(s - inf) = 0, never nan
    p = torch.exp(scores - lse[..., None])
    dp = torch.matmul(grad_out, v[:, None].transpose(-1, -2))
    ds = p * (dp - (grad_out * out).sum(-1, keepdim=True)) * scale
    dq = torch.matmul(ds, k[:, None])
    dk = torch.einsum("hgqk,hgqd->hkd", ds, q)
    dv = torch.einsum("hgqk,hgqd->hkd", p, grad_out)
    return dq, dk, dv
