"""Sparrow's acceptance metric: how far a sparse rollout's next-token distributions are from dense decoding.

Per token ``alpha = sum_x min(p_dense(x), p_sparse(x))`` (1 - total variation), summarised per bin of KV length
by its mean and **5th percentile** (the mean hides the few tokens that go badly wrong). ``AcceptanceMonitor``
estimates it during training from the log-probs of the sampled tokens. Tensors in, numbers out: it knows
nothing of models, caches or schedules.
"""

from __future__ import annotations

import logging
import math

import torch
from torch import Tensor

__all__ = ["acceptance", "acceptance_topk", "acceptance_summary", "AcceptanceMonitor", "order_statistic_rank",
           "quantile_lower_bound"]


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


def order_statistic_rank(n: int, quantile: float, confidence: float) -> int:
    """The largest k (1-based) such that the k-th smallest of n i.i.d. samples lies at or below the population's
    ``quantile`` with probability >= ``confidence``; 0 when even the smallest does not (too few samples).

    Distribution-free: for any distribution, P[X_(k) <= q_quantile] >= P[Binom(n, quantile) >= k] (equality
    for a continuous one), since X_(k) <= q exactly when at least k samples fall at or below q. No shape is
    assumed, which matters here: the acceptance tail is a handful of missed retrievals, and a bootstrap of the
    5th percentile from ~100 tokens resamples those same few values and understates the tail's uncertainty."""
    if n < 0 or not 0 < quantile < 1 or not 0 < confidence < 1:
        raise ValueError(f"order_statistic_rank: n={n} must be >= 0, quantile={quantile} and "
                         f"confidence={confidence} in (0, 1)")
    if n == 0:
        return 0
    # P[Binom(n, q) >= k] = 1 - cdf(k - 1) >= confidence  <=>  cdf(k - 1) <= 1 - confidence; the cdf rises with
    # k, so k is the number of j with cdf(j) <= 1 - confidence. Summed in log space (n may be 10^5).
    j = torch.arange(n + 1, dtype=torch.float64)
    log_pmf = (math.lgamma(n + 1) - torch.lgamma(j + 1) - torch.lgamma(n - j + 1) + j * math.log(quantile)
               + (n - j) * math.log1p(-quantile))
    cdf = log_pmf.exp().cumsum(0)
    return min(int((cdf <= 1 - confidence).sum()), n)


def quantile_lower_bound(values: Tensor, quantile: float = 0.05, confidence: float = 0.9) -> tuple[float | None, int]:
    """A lower confidence bound on the population ``quantile`` of ``values`` (treated as i.i.d. samples): the
    k-th smallest value for ``order_statistic_rank``'s k. Returns (bound, k); (None, 0) when n is too small for
    any order statistic to bound the quantile at that confidence (n < log(1 - confidence) / log(1 - quantile):
    45 samples for the p5 at 0.9)."""
    v = values.reshape(-1)
    k = order_statistic_rank(int(v.numel()), quantile, confidence)
    if k == 0:
        return None, 0
    return float(v.double().kthvalue(k).values), k


def acceptance_summary(alpha: Tensor, positions: Tensor, bin_tokens: int = 2048, mask: Tensor | None = None,
                       quantile: float = 0.05, confidence: float | None = None) -> list[dict]:
    """Per position bin (``[i * bin_tokens, (i + 1) * bin_tokens)`` of the KV length at which a token was
    generated): count, mean and the ``quantile`` (field ``p5``: the 5th percentile by default) of alpha. Bins
    without tokens are left out. With a ``confidence``, also ``p5_lower``: a lower confidence bound on that
    quantile (``quantile_lower_bound``; None when the bin has too few tokens for one) and ``p5_rank``, the order
    statistic it is."""
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
        row = dict(bin_start=b * bin_tokens, bin_end=(b + 1) * bin_tokens, count=int(sel.numel()),
                   mean=float(sel.mean()), p5=float(torch.quantile(sel, quantile)))
        if confidence is not None:
            row["p5_lower"], row["p5_rank"] = quantile_lower_bound(sel, quantile, confidence)
        out.append(row)
    return out


class AcceptanceMonitor:
    """Tracks rollout/training mismatch during RL training, per position bin, and warns below the target.

    From the training step's dense log-probs of the sampled tokens and the rollout's log-probs of the same
    tokens, ``min(1, p_dense / p_rollout)`` is a one-sample unbiased estimate of alpha at that position (its
    expectation over the rollout's sampling is ``sum_x min(p_dense, p_rollout)``). The per-bin 5th percentile
    of these estimates is noisier than the p5 of alpha itself; where full or top-k distributions are at hand,
    ``acceptance`` / ``acceptance_topk`` are exact / a lower bound. Each row also carries ``p5_lower``, a lower
    bound on the p5 at ``confidence`` (``acceptance_summary``; None when the bin has too few tokens), treating
    the bin's tokens as i.i.d. (tokens of one sequence are correlated, so it is optimistic there).
    """

    def __init__(self, target: float = 0.86, bin_tokens: int = 2048, quantile: float = 0.05, logger=None,
                 confidence: float = 0.9):
        self.target, self.bin_tokens, self.quantile = target, bin_tokens, quantile
        self.confidence = confidence
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
        rows = acceptance_summary(est, positions, self.bin_tokens, mask, quantile=self.quantile,
                                  confidence=self.confidence)
        for r in rows:
            if r["p5"] < self.target:
                self.log.warning("sparrow: acceptance p5 %.3f < target %.2f for KV lengths %d-%d (mean %.3f, %d "
                                 "tokens): recalibrate the schedule or raise its budget there", r["p5"], self.target,
                                 r["bin_start"], r["bin_end"], r["mean"], r["count"])
        self.history.append(rows)
        return rows
