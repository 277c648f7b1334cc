"""Per-row Python loops over a batched tensor, traced unrolled, folded back into the batched op.

TRL's ``selective_log_softmax`` computes ``torch.stack([torch.logsumexp(lg, dim=-1) for lg in logits])`` ("loop to
reduce peak mem consumption"); Dynamo traces the loop unrolled: ``logits[0]``, ..., ``logits[B-1]``, one
``logsumexp`` each, and a ``stack``. Indexing the batch axis with an integer ends the packed region (a row of the
batch is not a packed value), so each row's logits would be replayed to ``[T, V]`` and reduced there. Folded back
to ``torch.logsumexp(logits, dim=-1)`` the reduction runs on the packed tokens like any per-token op. Equal values
(the same reduction per row; its summation order may differ by rounding); the loop's memory saving is moot in a
packed step, whose logits are those of the unique tokens only. Runs after ``sink_slices``, before the analysis."""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

from .nodes import count, op_name, val


def _row_of(n, base=None):
    """(x, i) where ``n`` is ``x[i]`` for an int i (a row of x), else None."""
    if not isinstance(n, fx.Node) or n.op != "call_function" or n.target is not operator.getitem:
        return None
    x, i = n.args
    if not isinstance(i, int) or isinstance(i, bool) or not isinstance(val(x), torch.Tensor):
        return None
    return x, i


def _last_dim(n: fx.Node, rank: int) -> bool:
    dim = n.kwargs.get("dim", n.args[1] if len(n.args) > 1 else None)
    keep = n.kwargs.get("keepdim", n.args[2] if len(n.args) > 2 else False)
    if isinstance(dim, (tuple, list)) and len(dim) == 1:
        dim = dim[0]
    return not keep and isinstance(dim, int) and dim in (-1, rank - 1)


def fold_row_loops(gm: fx.GraphModule) -> int:
    """Rewrite in place; returns how many loops were folded."""
    g = gm.graph
    folded = 0
    for n in list(g.nodes):
        if n.op != "call_function" or n.target is not torch.stack or not n.args:
            continue
        items = n.args[0]
        dim = n.kwargs.get("dim", n.args[1] if len(n.args) > 1 else 0)
        if dim != 0 or not isinstance(items, (list, tuple)) or not items:
            continue
        rows, x = [], None
        for it in items:
            if not isinstance(it, fx.Node) or op_name(it) != "logsumexp" or len(it.users) != 1:
                break
            r = _row_of(it.args[0])
            if r is None or (x is not None and r[0] is not x) or not _last_dim(it, val(r[0]).dim() - 1):
                break
            x = r[0]
            rows.append(r[1])
        else:
            vx = val(x)
            if rows != list(range(len(items))) or not isinstance(vx.shape[0], int) or vx.shape[0] != len(items):
                continue
            with g.inserting_before(n):
                lse = g.call_function(torch.logsumexp, (x,), {"dim": -1})
            lse.meta["example_value"] = val(n)
            n.replace_all_uses_with(lse)
            g.erase_node(n)
            for it in items:  # the per-row logsumexps and row views (not the whole graph's dead code: in-place
                row = it.args[0]  # writes with unused results must stay)
                g.erase_node(it)
                if not row.users:
                    g.erase_node(row)
            folded += 1
    if folded:
        gm.recompile()
        count("row_loops_folded", folded)
    return folded
