"""Reference tree attention: the specification the fast kernels are tested against.

A packed batch holds N unique tokens in DFS preorder of the rows' prefix tree.
Key k is visible to query q iff ``k <= q < subtree_end[k]``, i.e. k is q itself
or an ancestor of q. With a sliding window W (``positions`` [N]: each token's
column in its original row) key k is visible only if also
``positions[q] - positions[k] < W``: the window is a distance in the row, not in
the packed order. A negative ``window`` -C is chunked attention (Llama 4): key k is
visible only if ``positions[q] // C == positions[k] // C``, positions counted from
the row's first real token (transformers' ``chunked_overlay``). With ``softcap`` c the scores are ``c * tanh(s / c)`` before
the mask (Gemma 2's attention logit softcapping). With ``sinks`` [Hq] (GPT-OSS's
attention sinks) head h's softmax has one more logit, ``sinks[h]``, whose column
is dropped after it: the probabilities are exp(s) / (sum exp(s) + exp(sinks[h])).
This module builds the dense [N, N] mask and does plain softmax attention, so it
is O(N^2) and only meant for tests and debugging.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .block_sparse_reference import masked_attention_reference


def tree_visibility_mask(subtree_end: Tensor, positions: Tensor | None = None, window: int = 0) -> Tensor:
    """Dense bool mask [N, N]; mask[q, k] is True iff key k is visible to query q."""
    n = subtree_end.shape[0]
    pos = torch.arange(n, device=subtree_end.device)
    qi = pos[:, None]
    ki = pos[None, :]
    mask = (ki <= qi) & (qi < subtree_end.to(pos.device)[None, :])
    if window > 0:
        p = positions.to(pos.device)
        mask &= (p[:, None] - p[None, :]) < window
    elif window < 0:  # chunked attention of -window tokens, positions counted from the row's first real token
        p = positions.to(pos.device)
        mask &= (p[:, None] // -window) == (p[None, :] // -window)
    return mask


def tree_attention_reference(
    q: Tensor, k: Tensor, v: Tensor, subtree_end: Tensor, scale: float,
    positions: Tensor | None = None, window: int = 0, softcap: float = 0.0, sinks: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Tree attention by plain math.

    q [1, Hq, N, D], k [1, Hkv, N, D], v [1, Hkv, N, Dv]; Hq = g * Hkv and query
    head h reads kv head h // g. Computes in float32 (float64 if the inputs are
    float64, so tests can get a tighter ground truth). Returns
    (out [1, Hq, N, Dv] in q.dtype, lse [1, Hq, N] float32), where lse is the
    natural log-sum-exp of the (softcapped) scaled scores over the visible keys
    and the sink. Differentiable through ordinary autograd (sinks included).
    """
    assert q.shape[0] == 1 and q.shape[1] % k.shape[1] == 0
    mask = tree_visibility_mask(subtree_end, positions, window)
    if softcap <= 0 and sinks is None:
        # every query sees at least itself, so the general masked reference never meets an empty row here
        return masked_attention_reference(q, k, v, mask[None], scale)
    return dense_attention_reference(q, k, v, mask, scale, softcap, sinks)


def dense_attention_reference(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float, softcap: float = 0.0, sinks: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Attention under a dense ``mask`` [.., N, N] (bool: True where visible; or additive, 0 / very negative),
    with Gemma 2's softcapping and GPT-OSS's per-head sink logits [Hq] (a column joining every query's softmax,
    dropped after it). Shapes, dtypes and returns as ``tree_attention_reference``, which is this with the tree's
    visibility as the mask; the key selection's packed attention (passes/key_selection.py) runs it with its own."""
    g = q.shape[1] // k.shape[1]
    cdt = torch.promote_types(q.dtype, torch.float32)
    kf = k.to(cdt).repeat_interleave(g, dim=1)
    vf = v.to(cdt).repeat_interleave(g, dim=1)
    scores = (q.to(cdt) @ kf.transpose(-1, -2)) * scale
    if softcap > 0:
        scores = softcap * torch.tanh(scores / softcap)
    mask = mask.to(q.device)
    scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask.to(cdt)
    if sinks is not None:
        # the sink column joins every query's softmax and is dropped after it (as HF's GPT-OSS eager attention)
        sink = sinks.to(cdt).reshape(1, -1, 1, 1).expand(*scores.shape[:3], 1)
        scores = torch.cat([scores, sink], dim=-1)
    lse = torch.logsumexp(scores, dim=-1)
    probs = torch.softmax(scores, dim=-1)
    out = (probs[..., :-1] if sinks is not None else probs) @ vf
    return out.to(q.dtype), lse.to(torch.float32)
