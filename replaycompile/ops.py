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
    n = x.shape[1]
    rows = x[0]
    valid = (scatter < n).unsqueeze(-1)
    idx = scatter.clamp(max=n - 1).unsqueeze(-1).expand_as(index)
    out = rows[idx, index]
    return torch.where(valid, out, out.new_zeros(()))

