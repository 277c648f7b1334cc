"""The policy loss for sparse rollouts: PPO clipping with truncated importance sampling (TIS).

A sparse rollout samples from a slightly different distribution than the dense policy that is trained; the
TIS weight ``min(p_old / p_rollout, cap)`` corrects for it. Log-probs in, a loss out.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["tis_policy_loss"]


def tis_policy_loss(logp: Tensor, logp_old: Tensor, logp_rollout: Tensor, advantages: Tensor, mask: Tensor, *,
                    clip_low: float = 0.2, clip_high: float | None = None, tis_cap: float = 2.0,
                    aggregation: str = "token-mean") -> tuple[Tensor, dict]:
    """GRPO/DAPO policy loss with PPO clipping and truncated importance sampling for a sparse rollout.

    logp: the current policy's log-probs of the sampled tokens [B, L] (differentiable); logp_old: the training
    engine's (dense) log-probs at rollout time, detached; logp_rollout: what the (sparse) rollout engine gave;
    advantages: [B] or [B, L]; mask: completion tokens [B, L]. Per token:

        ratio = exp(logp - logp_old);  pg = -min(ratio * A, clip(ratio, 1 - clip_low, 1 + clip_high) * A)
        w = min(exp(logp_old - logp_rollout), tis_cap)      (detached: corrects rollout/training mismatch)
        loss = sum(w * pg * mask) / sum(mask)               ("token-mean", DAPO) or the mean of per-row means
                                                             ("seq-mean", GRPO)

    ``clip_high`` defaults to ``clip_low`` (symmetric PPO); DAPO's clip-higher sets it larger. Returns the loss and
    diagnostics (clip fraction, mean TIS weight, fraction of truncated weights).
    """
    if aggregation not in ("token-mean", "seq-mean"):
        raise ValueError(f"aggregation={aggregation!r} must be 'token-mean' or 'seq-mean'")
    if tis_cap <= 0:
        raise ValueError(f"tis_cap={tis_cap!r} must be positive")
    clip_high = clip_low if clip_high is None else clip_high
    mask = mask.to(logp.dtype)
    adv = advantages if advantages.dim() == logp.dim() else advantages[:, None]
    ratio = torch.exp(logp - logp_old.detach())
    unclipped = ratio * adv
    clipped = ratio.clamp(1 - clip_low, 1 + clip_high) * adv
    pg = -torch.minimum(unclipped, clipped)
    raw_w = torch.exp(logp_old.detach() - logp_rollout.detach())
    w = raw_w.clamp(max=tis_cap)
    per_tok = w * pg * mask
    if aggregation == "token-mean":
        loss = per_tok.sum() / mask.sum().clamp_min(1)
    else:
        loss = (per_tok.sum(-1) / mask.sum(-1).clamp_min(1)).mean()
    n = mask.sum().clamp_min(1)
    stats = dict(clip_fraction=float(((unclipped != clipped).to(mask.dtype) * mask).sum() / n),
                 tis_weight_mean=float((w * mask).sum() / n),
                 tis_truncated_fraction=float(((raw_w > tis_cap).to(mask.dtype) * mask).sum() / n))
    return loss, stats
