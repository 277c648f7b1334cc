"""Sparrow's acceptance metric: how far a sparse rollout's next-token distributions are from dense decoding.

Per token ``alpha = sum_x min(p_dense(x), p_sparse(x))`` (1 - total variation), summarised per bin of KV length
by its mean and **5th percentile** (the mean hides the few tokens that go badly wrong). ``AcceptanceMonitor``
estimates it during training from the log-probs of the sampled tokens. Tensors in, numbers out: it knows
nothing of models, caches or schedules.
"""

from __future__ import annotations

import logging

import torch
from torch import Tensor

__all__ = ["acceptance", "acceptance_topk", "acceptance_summary", "AcceptanceMonitor"]


def acceptance(dense_logits: Tensor, sparse_logits: Tensor) -> Tensor:
    """Per-token acceptance ``alpha = sum_x min(p_dense(x), p_sparse(x))`` (= 1 - total variation), exactly,
    from full logits [..., V]. Computed in float64 (an alpha near 1 is a difference of near-equal sums)."""
    if dense_logits.shape != sparse_logits.shape:
        raise ValueError(f"dense and sparse logits differ in shape: {tuple(dense_logits.shape)} vs "
                         f"{tuple(sparse_logits.shape)}")
    pd = dense_logits.double().softmax(-1)
    ps = sparse_logits.double().softmax(-1)
    return torch.minimum(pd, ps).sum(-1).clamp(0.0, 1.0)


def acceptance_topk(dense_logprobs: Tensor, dense_ids: Tensor, sparse_logprobs: Tensor, sparse_ids: Tensor) -> Tensor:
    """A lower bound on alpha from top-k log-probs of each side ([..., k] values and token ids): the sum over
    tokens in both top-k lists of ``min(p_dense, p_sparse)``. Tokens outside either list only add to alpha."""
    same = dense_ids[..., :, None] == sparse_ids[..., None, :]  # [..., k_dense, k_sparse]
    pd = dense_logprobs.double().exp()[..., :, None]
    ps = sparse_logprobs.double().exp()[..., None, :]
    return torch.where(same, torch.minimum(pd, ps), torch.zeros((), dtype=torch.float64)).sum((-1, -2))


def acceptance_summary(alpha: Tensor, positions: Tensor, bin_tokens: int = 2048, mask: Tensor | None = None,
                       quantile: float = 0.05) -> list[dict]:
    """Per position bin (``[i * bin_tokens, (i + 1) * bin_tokens)`` of the KV length at which a token was
    generated): count, mean and the ``quantile`` (field ``p5``: the 5th percentile by default) of alpha. Bins
    without tokens are left out."""
    a = alpha.reshape(-1).double()
    pos = positions.reshape(-1).to(torch.int64)
    if mask is not None:
        keep = mask.reshape(-1).bool()
        a, pos = a[keep], pos[keep]
    out = []
    if a.numel() == 0:
        return out
    bins = pos // bin_tokens
    for b in torch.unique(bins).tolist():
        sel = a[bins == b]
        out.append(dict(bin_start=b * bin_tokens, bin_end=(b + 1) * bin_tokens, count=int(sel.numel()),
                        mean=float(sel.mean()), p5=float(torch.quantile(sel, quantile))))
    return out


class AcceptanceMonitor:
    """Tracks rollout/training mismatch during RL training, per position bin, and warns below the target.

    From the training step's dense log-probs of the sampled tokens and the rollout's log-probs of the same
    tokens, ``min(1, p_dense / p_rollout)`` is a one-sample unbiased estimate of alpha at that position (its
    expectation over the rollout's sampling is ``sum_x min(p_dense, p_rollout)``). The per-bin 5th percentile
    of these estimates is noisier than the p5 of alpha itself; where full or top-k distributions are at hand,
    ``acceptance`` / ``acceptance_topk`` are exact / a lower bound.
    """

    def __init__(self, target: float = 0.86, bin_tokens: int = 2048, quantile: float = 0.05, logger=None):
        self.target, self.bin_tokens, self.quantile = target, bin_tokens, quantile
        self.log = logger or logging.getLogger("replaycompile")
        self.history: list = []

    def update(self, dense_logprobs: Tensor, rollout_logprobs: Tensor, mask: Tensor, prompt_lengths) -> list[dict]:
        """dense/rollout log-probs and mask [B, L] over completion tokens; ``prompt_lengths``: int or [B] (the
        KV length at the first completion token). Returns the per-bin summary and logs a warning per bin whose
        p5 is below the target."""
        b, l = dense_logprobs.shape
        start = torch.as_tensor(prompt_lengths).reshape(-1, 1).expand(b, 1)
        positions = start + torch.arange(l)[None]
        est = torch.exp(dense_logprobs.double() - rollout_logprobs.double()).clamp(max=1.0)
        rows = acceptance_summary(est, positions, self.bin_tokens, mask, quantile=self.quantile)
        for r in rows:
            if r["p5"] < self.target:
                self.log.warning("sparrow: acceptance p5 %.3f < target %.2f for KV lengths %d-%d (mean %.3f, %d "
                                 "tokens): recalibrate the schedule or raise its budget there", r["p5"], self.target,
                                 r["bin_start"], r["bin_end"], r["mean"], r["count"])
        self.history.append(rows)
        return rows
