"""The indexing ops the rewrite inserts into packed graphs.

They are plain torch code (traced by the inner compiler). ``replay`` is where shared work is undone for the
forward and folded for the backward: an index_select whose gradient is a scatter-add, so every branch's
gradient of a shared token lands on the one packed row that computed it.
"""

from __future__ import annotations

import torch


def _restore_order(x: torch.Tensor, bdim: int, tdim: int, rest: list) -> torch.Tensor:
    """``x`` is [B, T, *rest]: permute B and T back to ``bdim`` and ``tdim``."""
    order = {bdim: 0, tdim: 1}
    order.update({d: i + 2 for i, d in enumerate(rest)})
    return x.permute([order[d] for d in range(len(order))])


def pack_rows(x: torch.Tensor, bdim: int | None, tdim: int, gather_index: torch.Tensor,
              columns: torch.Tensor) -> torch.Tensor:
    """A row value whose entry at (b, t) is fixed by the plan's key, [.., B, .., T, ..] -> size 1 at ``bdim``
    and N at ``tdim``. bdim None (or a broadcast batch axis of size 1): a positional table such as arange(T)
    or the rotary cos/sin, whose value the column alone decides."""
    if bdim is None or x.shape[bdim] == 1:
        return x.index_select(tdim, columns)
    rest = [d for d in range(x.dim()) if d != bdim and d != tdim]
    rows = x.permute([bdim, tdim] + rest).flatten(0, 1).index_select(0, gather_index)   # [N, *rest]
    return _restore_order(rows.unsqueeze(0), bdim, tdim, rest)


def replay(x: torch.Tensor, scatter: torch.Tensor, bdim: int | None, tdim: int) -> torch.Tensor:
    """Packed ``x`` (size 1 at ``bdim``, N at ``tdim``; bdim None: ``tdim`` is a flattened B*T axis) -> the
    original layout, with B and T where ``x`` had them. Padded positions (scatter == N) come back as zeros."""
    n = x.shape[tdim]
    valid = scatter < n
    idx = scatter.clamp(max=n - 1)
    if bdim is None:  # flattened batch*sequence axis
        rows = x.movedim(tdim, 0)
        out = rows.index_select(0, idx.reshape(-1))
        out = torch.where(valid.reshape((-1,) + (1,) * (out.dim() - 1)), out, out.new_zeros(()))
        return out.movedim(0, tdim)
    rest = [d for d in range(x.dim()) if d != bdim and d != tdim]
    rows = x.permute([tdim, bdim] + rest)[:, 0]           # [N, *rest]
    out = rows.index_select(0, idx.reshape(-1)).view(tuple(scatter.shape) + tuple(rows.shape[1:]))
    out = torch.where(valid.view(tuple(scatter.shape) + (1,) * (rows.dim() - 1)), out, out.new_zeros(()))
    return _restore_order(out, bdim, tdim, rest)


def replay_gather(x: torch.Tensor, scatter: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``replay(x).gather(-1, index)`` without materialising the replayed [B, T, V] tensor.

    x is packed [1, N, V]; index is per-row [B, K, j]; scatter [B, K]. The gradient is an index_put with
    accumulation into [N, V]: the vocabulary projection and log-softmax run on packed tokens only."""
    rows = x[0]
    r, valid = _pair_rows(scatter, index, x.shape[1])
    out = rows[r, index]
    return torch.where(valid, out, out.new_zeros(()))


def _pair_rows(scatter: torch.Tensor, index: torch.Tensor, n: int):
    """Each (row, target) pair's packed row, [B, K, j] like index, and which pairs are real: a padded pair
    (scatter == n) is clamped to a row that exists and masked out."""
    return (scatter.clamp(max=n - 1).unsqueeze(-1).expand_as(index),
            (scatter < n).unsqueeze(-1).expand_as(index))


class _LogSoftmaxGather(torch.autograd.Function):
    """``replay_gather(x.log_softmax(-1), scatter, index)`` as the target logit minus the row's log-sum-exp.

    Why not autograd's own: the backward of ``log_softmax`` then ``replay_gather`` scatters the pairs' gradients
    into a zero-filled [N, V] buffer, sums each of its rows and reads it again with the saved [N, V] log-softmax:
    four vocabulary-sized passes (plus the forward's [N, V] log-softmax, written only to be gathered). Here the
    forward keeps only the per-row log-sum-exp, and the backward is ``-G_r * softmax`` (G_r: row r's pairs'
    gradients summed), one pointwise pass over the logits that the inner compiler fuses, plus each pair's
    gradient added at its (row, target). Same math as the reference to rounding (log-softmax subtracts the max
    and the log of the sum in two steps, this in one): a few ulp, not a different result."""

    @staticmethod
    def forward(ctx, x, scatter, index):
        rows = x[0]
        lse = torch.logsumexp(rows, -1)
        r, valid = _pair_rows(scatter, index, x.shape[1])
        out = torch.where(valid, rows[r, index] - lse[r], rows.new_zeros(()))
        ctx.save_for_backward(rows, lse, r, index, valid)
        return out

    @staticmethod
    def backward(ctx, grad):
        rows, lse, r, index, valid = ctx.saved_tensors
        g = torch.where(valid, grad, grad.new_zeros(()))  # padded pairs read nothing, so they send nothing back
        per_row = lse.new_zeros(lse.shape).index_put((r,), g, accumulate=True)
        d = -(per_row.unsqueeze(-1) * torch.exp(rows - lse.unsqueeze(-1)))
        d = d.index_put((r, index), g, accumulate=True)
        return d.unsqueeze(0), None, None


def replay_log_softmax_gather(x: torch.Tensor, scatter: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``replay_gather(x.log_softmax(-1), scatter, index)`` (its specification) with one vocabulary-sized pass in
    backward instead of four, and no [N, V] log-softmax in forward (``_LogSoftmaxGather``). x is packed
    [1, N, V] in float32 or float64 (the rewrite uses it only there: in bf16 the two-step rounding of
    log-softmax is not this one's)."""
    return _LogSoftmaxGather.apply(x, scatter, index)


def cp_gather(x: torch.Tensor, dim: int, pad: torch.Tensor, order: torch.Tensor, group) -> torch.Tensor:
    """Context parallelism: every rank's tokens of ``x`` (this rank's, along ``dim``) in packed order.

    ``pad``: a tensor whose length is how many tokens this rank lacks to the longest rank's count (only its
    length is read: sizes stay symbolic); ``order`` [N]: each packed token's place in the gathered, rank-major
    layout (``context_parallel.ContextShards.order``); ``group``: a process group or its name. Differentiable:
    torch's functional all-gather, whose backward reduce-scatters, so a token's gradient from every rank is
    summed on the rank that owns it."""
    from torch.distributed._functional_collectives import all_gather_single_autograd

    filler = x.new_zeros(tuple(x.shape[:dim]) + (pad.shape[0],) + tuple(x.shape[dim + 1:]))
    x = torch.cat([x, filler], dim)
    return all_gather_single_autograd(x.contiguous(), dim, group).index_select(dim, order)


def cp_sum(x: torch.Tensor, group) -> torch.Tensor:
    """Context parallelism: the sum of ``x`` over the ranks of ``group`` (each holds its own tokens' share, zeros
    elsewhere). Through the functional all-gather, whose backward reduce-scatters: every rank computes the same
    loss from the sum, so each share's gradient is the group size times the loss's (the scale the gathers of
    ``cp_gather`` give too; averaging over the group, as DDP does, undoes it)."""
    from torch.distributed._functional_collectives import all_gather_single_autograd

    return all_gather_single_autograd(x.unsqueeze(0).contiguous(), 0, group).sum(0)
