"""Reference chunked log-probs: the specification ``chunked_logprobs`` is tested against.

The unfused computation an HF model plus an RL loss performs on the LM head's input rows: logits by
``F.linear`` in the input dtype (optionally soft-capped there, as Gemma does), upcast, log-softmax, the
target's log-prob gathered, and the entropy of the row's distribution. It holds the full ``[M, V]`` logits, so it
is only for tests and debugging.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["chunked_logprobs_reference", "chunked_pair_logprobs_reference"]


def chunked_logprobs_reference(hidden: Tensor, weight: Tensor, bias: Optional[Tensor], targets: Tensor,
                               softcap: float = 0.0) -> tuple[Tensor, Tensor]:
    """(logp [M], entropy [M]) by plain autograd-able torch.

    ``hidden`` [M, H], ``weight`` [V, H], ``bias`` [V] or None, ``targets`` [M] int64. The softmax runs in float32
    (float64 for float64 inputs, so tests can have a tight ground truth), like ``logits.float().log_softmax(-1)``.
    """
    logits = F.linear(hidden, weight, bias)
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    logp_all = logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(-1)
    logp = logp_all.gather(-1, targets[:, None]).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy


def chunked_pair_logprobs_reference(hidden: Tensor, weight: Tensor, bias: Optional[Tensor], rows: Tensor,
                                    targets: Tensor, softcap: float = 0.0) -> Tensor:
    """logp [P] of ``chunked_pair_logprobs``: pair p's target log-prob of row ``rows[p]``, the rows' logits by the
    unfused computation (each row once, then gathered per pair)."""
    logits = F.linear(hidden, weight, bias)
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    logp_all = logits.to(torch.promote_types(logits.dtype, torch.float32)).log_softmax(-1)
    return logp_all[rows, targets]
