"""Mamba-2 (HF Nemotron-H, Granite 4) on a batch's prefix tree: every packed token computed once, exactly.

The same construction as the Gated DeltaNet's tree scan (``tree_scan.py``, whose index this reuses): everything
but the conv and the scan is per token; the conv reads each packed token's window of the ``kernel_size - 1``
packed tokens before it in a row that holds it (zero before a row's start); the SSD scan runs on the tree's
pieces, a piece starting from its parent piece's final state, the pieces of one depth as one batch right-padded
with tokens that leave the state unchanged (dt = 0, x = B = C = 0). A batch with a pad between two real tokens
of a row runs the reference (``ssd_reference.mamba2_rows``) on the replayed rows instead. Chunk boundaries
differ from eager's, so results equal eager's to rounding, not bit for bit.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .ssd_reference import (Mamba2Dims, Mamba2Weights, _acc, gated_norm_out, mamba2_dims, mamba2_rows, mamba2_weights,
                            project, split_xbc, ssd_scan)
from .tree_scan import TreeScanIndex, _index, _zero_row, backward_by_recompute, register_recompute_autograd

__all__ = ["mamba2_tree", "mamba2_packed", "mamba2_tree_op"]


def mamba2_tree(x: Tensor, w: Mamba2Weights, d: Mamba2Dims, index: TreeScanIndex) -> Tensor:
    """The mixer on packed tokens: ``x`` [N, hidden] (the plan's DFS order) -> [N, hidden]."""
    assert index.contiguous, "a row with a pad between real tokens: run the rows (mamba2_packed)"
    dev = x.device
    n = index.num_packed
    gate, xbc, dt = project(x, w, d)
    win = _zero_row(xbc.to(w.conv.dtype)).index_select(0, index.window_index.reshape(-1).to(dev))
    conv = torch.einsum("nkc,ck->nc", win.reshape(n, d.kernel_size, -1), w.conv[:, 0, :])
    if w.conv_bias is not None:
        conv = conv + w.conv_bias
    xs, B, C = split_xbc(F.silu(conv).to(xbc.dtype), d)
    xs, B, C, dt = (_zero_row(y) for y in (xs, B, C, dt))  # the pad tokens: no change to the state
    A = -torch.exp(_acc(w.A_log))
    outs, state = [], None
    for tok, parent, flat_valid in index.levels:
        tok, parent, flat_valid = tok.to(dev), parent.to(dev), flat_valid.to(dev)
        P, L = tok.shape
        flat = tok.reshape(-1)
        xs_, B_, C_, dt_ = (y.index_select(0, flat).reshape(P, L, *y.shape[1:]) for y in (xs, B, C, dt))
        init = None if state is None else state.index_select(0, parent)
        y, state = ssd_scan(xs_, dt_, A, B_, C_, w.D, d.chunk, init)
        outs.append(y.reshape(P * L, *y.shape[2:]).index_select(0, flat_valid))
    order = index.order.to(dev)
    inverse = torch.empty_like(order).index_copy_(0, order, torch.arange(n, device=dev))
    y = torch.cat(outs).index_select(0, inverse)
    return gated_norm_out(y, gate, w, d, x.dtype)


def mamba2_rows_of(x: Tensor, mask: Tensor | None, weights: list, n_groups: int, norm_groups: int, dt_min: float,
                   dt_max: float, norm_eps: float) -> Tensor:
    """The reference on rows [B, T, hidden] from the op's arguments (what the backend checks a layer against)."""
    return mamba2_rows(x, mask, mamba2_weights(weights),
                       mamba2_dims(weights, n_groups, norm_groups, dt_min, dt_max, norm_eps))


def mamba2_packed(x: Tensor, weights: list, scatter_index: Tensor, gather_index: Tensor, seg_q: Tensor,
                  n_groups: int, norm_groups: int, dt_min: float, dt_max: float, norm_eps: float) -> Tensor:
    """The mixer on a batch's packed tokens: ``x`` [1, N, hidden], its weights (``mamba2_weights``), the plan's
    index tensors and the sizes the weights' shapes do not give; [1, N, hidden]. Plain torch ops."""
    w = mamba2_weights(weights)
    d = mamba2_dims(weights, n_groups, norm_groups, dt_min, dt_max, norm_eps)
    index = _index(scatter_index, gather_index, seg_q, d.kernel_size)
    if index.contiguous:
        return mamba2_tree(x[0], w, d, index)[None]
    import torch._dynamo.utils as dynamo_utils

    dynamo_utils.counters["replay"]["recurrent_tree_scan_rows"] += 1
    B, T = scatter_index.shape
    rows = _zero_row(x[0]).index_select(0, scatter_index.reshape(-1)).reshape(B, T, -1)
    mask = (scatter_index < index.num_packed).to(x.dtype)
    out = mamba2_rows(rows, mask, w, d)
    return out.reshape(B * T, -1).index_select(0, gather_index)[None]


# An opaque op with a fake and a recomputing backward, as the Gated DeltaNet's (tree_scan.py says why).
@torch.library.custom_op("replaycompile::mamba2_tree", mutates_args=())
def mamba2_tree_op(x: Tensor, weights: list[Tensor], scatter_index: Tensor, gather_index: Tensor, seg_q: Tensor,
                   n_groups: int, norm_groups: int, dt_min: float, dt_max: float, norm_eps: float) -> Tensor:
    with torch.no_grad():
        return mamba2_packed(x, weights, scatter_index, gather_index, seg_q, n_groups, norm_groups, dt_min, dt_max,
                             norm_eps)


@mamba2_tree_op.register_fake
def _(x, weights, scatter_index, gather_index, seg_q, n_groups, norm_groups, dt_min, dt_max, norm_eps):
    return x.new_empty(x.shape)


@torch.library.custom_op("replaycompile::mamba2_tree_backward", mutates_args=())
def mamba2_tree_backward(grad: Tensor, x: Tensor, weights: list[Tensor], scatter_index: Tensor,
                         gather_index: Tensor, seg_q: Tensor, n_groups: int, norm_groups: int, dt_min: float,
                         dt_max: float, norm_eps: float) -> list[Tensor]:
    return backward_by_recompute(mamba2_packed, grad, x, weights, scatter_index, gather_index, seg_q,
                                 (n_groups, norm_groups, dt_min, dt_max, norm_eps))


@mamba2_tree_backward.register_fake
def _(grad, x, weights, scatter_index, gather_index, seg_q, n_groups, norm_groups, dt_min, dt_max, norm_eps):
    return [x.new_empty(x.shape)] + [w.new_empty(w.shape) for w in weights]


register_recompute_autograd(mamba2_tree_op, mamba2_tree_backward)
