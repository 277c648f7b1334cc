"""Gated DeltaNet (HF Qwen3-Next) on a batch's prefix tree: every packed token computed once, exactly.

A Gated DeltaNet's output at token t depends on the row's tokens up to t through two states: the causal conv1d's
window (the last ``kernel_size`` inputs) and the delta rule's recurrent state. Rows that share a prefix share
both at every token of it, so the layer can run on the packed tokens (the plan's DFS order) if each state forks
where the rows branch:

* everything but the conv and the scan is per token (projections, gates, gated norm, output projection);
* the conv reads, for each packed token, the packed tokens at the ``kernel_size - 1`` columns before it in a
  row that holds it (``window_index``; a column before the row's start or a pad reads zero, as eager's zero
  history and ``apply_mask_to_padding_states`` give);
* the scan runs on *pieces*: runs of packed tokens that follow each other in every row holding them, cut where
  another row branches off (so a branch point always ends a piece). A piece starts from its parent piece's
  final state (zero for a root), pieces of one depth run as one batch of the chunked delta rule, right-padded
  with tokens that leave the state unchanged (k = v = q = 0, g = 0, beta = 0), parents' depth before children's.

A row whose real tokens are not one contiguous run (a pad between two real tokens) still steps its state at the
pad in eager, which the pieces skip: such a batch runs ``gated_deltanet_rows`` (the reference) on the replayed
rows instead, which is exact too. Chunk boundaries differ from eager's (pieces start chunks at their own start),
so results equal eager's to rounding, not bit for bit. Plain torch ops: autograd runs through it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from .tree_scan_reference import (DeltaNetDims, DeltaNetWeights, SplitDeltaNetWeights, decay_and_gate, delta_rule,
                                  gated_deltanet_rows, gated_norm_out, project, split_qkv)

__all__ = ["DeltaNetDims", "DeltaNetWeights", "SplitDeltaNetWeights", "TreeScanIndex", "tree_scan_index",
           "gated_deltanet_tree", "gated_deltanet_packed", "gated_deltanet_tree_op"]


@dataclass(frozen=True, eq=False)
class TreeScanIndex:
    """A batch's prefix tree as the tree scan reads it. N: packed tokens; the index N names a zero row."""

    num_packed: int
    window_index: Tensor       # [N, K]: packed token at columns t-K+1 .. t of a row holding token (b, t); N: zero
    levels: tuple              # per depth: (token_index [P, L] (N past a piece's end), parent [P] (row in the
    #                            previous depth's states; -1 at depth 0), token positions [M] valid in the flat [P*L])
    order: Tensor              # [N]: the packed token of each scan output, levels concatenated
    contiguous: bool           # every row's real tokens are one run (else the pieces are not its history)


def _pieces(pred: Tensor, n: int, seg_starts: list[int]) -> tuple[list[int], list[int]] | None:
    """(piece starts, parent piece of each (-1: a root)) or None when a piece's first token does not continue
    another piece's last one (not a tree of runs)."""
    starts = set(seg_starts)
    branch = pred[torch.tensor(seg_starts, dtype=torch.int64)] if seg_starts else pred[:0]
    starts.update(int(p) + 1 for p in branch.tolist() if p < n and p + 1 < n)
    inner = torch.ones(n, dtype=torch.bool)
    starts_t = torch.tensor(sorted(starts), dtype=torch.int64)
    inner[starts_t] = False
    # inside a piece each token continues the one before it in packed order
    if not bool((pred[inner] == torch.arange(n)[inner] - 1).all()):
        return None
    starts = starts_t.tolist()
    ends = starts[1:] + [n]
    last_of = {e - 1: i for i, e in enumerate(ends)}
    parents = []
    for s in starts:
        p = int(pred[s])
        if p == n:
            parents.append(-1)
        elif p in last_of and last_of[p] < len(parents):
            parents.append(last_of[p])
        else:
            return None
    return starts, parents


def tree_scan_index(scatter_index: Tensor, gather_index: Tensor, seg_q: Tensor, kernel_size: int) -> TreeScanIndex:
    """The tree scan's index from a ``ReplayPlan``'s ``scatter_index`` [B, T], ``gather_index`` [N] and
    ``seg_q`` [S, 2] (CPU int64)."""
    B, T = scatter_index.shape
    n = int(gather_index.shape[0])
    b, t = gather_index // T, gather_index % T
    scat = torch.cat((scatter_index, torch.full((B, 1), n, dtype=torch.int64)), dim=1)  # column T: "before start"
    offs = torch.arange(-(kernel_size - 1), 1, dtype=torch.int64)
    cols = t[:, None] + offs[None, :]
    cols = torch.where(cols >= 0, cols, torch.full_like(cols, T))
    window = scat[b[:, None], cols]
    real = scatter_index < n
    first = torch.where(real, torch.arange(T)[None, :], T).min(1).values
    last = torch.where(real, torch.arange(T)[None, :], -1).max(1).values
    contiguous = bool((real.sum(1) == (last - first + 1).clamp_min(0)).all())
    empty = torch.empty(0, dtype=torch.int64)
    pieces = _pieces(window[:, -2] if kernel_size > 1 else torch.where(t > 0, scat[b, t - 1], n), n,
                     seg_q[:, 0].tolist()) if contiguous else None
    if pieces is None:
        return TreeScanIndex(n, window, (), empty, False)
    starts, parents = pieces
    ends = starts[1:] + [n]
    depth, pos_in_level, by_level = [], [], []
    for i, p in enumerate(parents):
        dd = 0 if p < 0 else depth[p] + 1
        depth.append(dd)
        if dd == len(by_level):
            by_level.append([])
        pos_in_level.append(len(by_level[dd]))
        by_level[dd].append(i)
    levels, order = [], []
    for members in by_level:
        lens = torch.tensor([ends[i] - starts[i] for i in members], dtype=torch.int64)
        L = int(lens.max())
        st = torch.tensor([starts[i] for i in members], dtype=torch.int64)
        ar = torch.arange(L, dtype=torch.int64)
        valid = ar[None, :] < lens[:, None]
        tok = torch.where(valid, st[:, None] + ar[None, :], n)
        parent = torch.tensor([pos_in_level[parents[i]] if parents[i] >= 0 else -1 for i in members],
                              dtype=torch.int64)
        flat_valid = torch.nonzero(valid.reshape(-1)).reshape(-1)
        levels.append((tok, parent, flat_valid))
        order.append(tok.reshape(-1).index_select(0, flat_valid))
    return TreeScanIndex(n, window, tuple(levels), torch.cat(order), True)


def _zero_row(x: Tensor) -> Tensor:
    return torch.cat((x, x.new_zeros((1,) + tuple(x.shape[1:]))), dim=0)


def gated_deltanet_tree(x: Tensor, w: DeltaNetWeights | SplitDeltaNetWeights, d: DeltaNetDims,
                        index: TreeScanIndex) -> Tensor:
    """The layer on packed tokens: ``x`` [N, hidden] (the plan's DFS order) -> [N, hidden]. ``index.contiguous``
    must hold (``gated_deltanet_packed`` falls back to the rows otherwise)."""
    assert index.contiguous, "a row with a pad between real tokens: run the rows (gated_deltanet_packed)"
    dev = x.device
    n = index.num_packed
    mixed, z, b, a = project(x, w, d)
    # the depthwise causal conv as a weighted sum over each token's window (zero rows before a row's start)
    win = _zero_row(mixed.to(w.conv.dtype)).index_select(0, index.window_index.reshape(-1).to(dev))
    win = win.reshape(n, d.kernel_size, -1)
    conv = torch.einsum("nkc,ck->nc", win, w.conv[:, 0, :])
    mixed = F.silu(conv).to(mixed.dtype)
    q, k, v = split_qkv(mixed, d)
    beta, g = decay_and_gate(b, a, w)
    q, k, v, beta, g = (_zero_row(y) for y in (q, k, v, beta, g))  # the pad tokens: no change to the state
    scan = delta_rule()
    outs, state = [], None
    for tok, parent, flat_valid in index.levels:
        tok, parent, flat_valid = tok.to(dev), parent.to(dev), flat_valid.to(dev)
        P, L = tok.shape
        flat = tok.reshape(-1)
        qs, ks, vs, bs, gs = (y.index_select(0, flat).reshape(P, L, *y.shape[1:]) for y in (q, k, v, beta, g))
        init = None if state is None else state.index_select(0, parent)
        core, state = scan(qs, ks, vs, g=gs, beta=bs, initial_state=init, output_final_state=True,
                           use_qk_l2norm_in_kernel=True)
        outs.append(core.reshape(P * L, *core.shape[2:]).index_select(0, flat_valid))
    order = index.order.to(dev)
    inverse = torch.empty_like(order).index_copy_(0, order, torch.arange(n, device=dev))
    core = torch.cat(outs).index_select(0, inverse)
    return gated_norm_out(core, z, w, d)


_last_index: list = [None, None, None]  # (scatter_index, kernel_size, TreeScanIndex): one plan, several layers


def _weights(weights) -> DeltaNetWeights | SplitDeltaNetWeights:
    """The layer's weights from the op's list: 7 (fused grouped projections, Qwen3-Next) or 9 (split, Qwen3.5)."""
    return DeltaNetWeights(*weights) if len(weights) == 7 else SplitDeltaNetWeights(*weights)


def _dims(weights, num_k_heads: int, head_k_dim: int, norm_eps: float) -> DeltaNetDims:
    w = _weights(weights)
    return DeltaNetDims(num_k_heads, head_k_dim, int(w.dt_bias.shape[0]), int(w.norm.shape[0]),
                        int(w.conv.shape[-1]), norm_eps)


def _index(scatter_index: Tensor, gather_index: Tensor, seg_q: Tensor, kernel_size: int) -> TreeScanIndex:
    cached = _last_index
    if cached[0] is scatter_index and cached[1] == kernel_size:
        return cached[2]
    index = tree_scan_index(scatter_index.cpu(), gather_index.cpu(), seg_q.cpu(), kernel_size)
    cached[:] = [scatter_index, kernel_size, index]
    return index


def gated_deltanet_rows_of(x: Tensor, mask: Tensor | None, weights: list, num_k_heads: int, head_k_dim: int,
                           norm_eps: float) -> Tensor:
    """The reference on rows [B, T, hidden] from the op's arguments (what the backend checks a layer against)."""
    return gated_deltanet_rows(x, mask, _weights(weights), _dims(weights, num_k_heads, head_k_dim, norm_eps))


def gated_deltanet_packed(x: Tensor, weights: list, scatter_index: Tensor, gather_index: Tensor, seg_q: Tensor,
                          num_k_heads: int, head_k_dim: int, norm_eps: float) -> Tensor:
    """The layer on a batch's packed tokens: ``x`` [1, N, hidden] packed, the layer's weights (7 fused or 9
    split, see ``_weights``), the plan's index tensors and the sizes the weights' shapes do not give; [1, N,
    hidden]. Plain torch ops (autograd runs through it). A batch with a pad between two real tokens of a row
    runs the reference on the replayed rows (counted: ``counters["replay"]["recurrent_tree_scan_rows"]``)."""
    w = _weights(weights)
    d = _dims(weights, num_k_heads, head_k_dim, norm_eps)
    index = _index(scatter_index, gather_index, seg_q, d.kernel_size)
    if index.contiguous:
        return gated_deltanet_tree(x[0], w, d, index)[None]
    import torch._dynamo.utils as dynamo_utils  # only on this path: the kernels' import must not load Dynamo

    dynamo_utils.counters["replay"]["recurrent_tree_scan_rows"] += 1
    B, T = scatter_index.shape
    rows = _zero_row(x[0]).index_select(0, scatter_index.reshape(-1)).reshape(B, T, -1)
    mask = (scatter_index < index.num_packed).to(x.dtype)
    out = gated_deltanet_rows(rows, mask, w, d)
    return out.reshape(B * T, -1).index_select(0, gather_index)[None]


def backward_by_recompute(packed_fn, grad: Tensor, x: Tensor, weights: list, scatter_index: Tensor,
                          gather_index: Tensor, seg_q: Tensor, sizes: tuple) -> list[Tensor]:
    """[grad of x] + [grad of each weight] of ``packed_fn(x, weights, scatter_index, gather_index, seg_q, *sizes)``
    recomputed under autograd. torch.func.vjp: a custom op's body runs below autograd's dispatch keys, where
    autograd.grad sees no graph."""
    def layer(x, *ws):
        return packed_fn(x, list(ws), scatter_index, gather_index, seg_q, *sizes)

    _, vjp = torch.func.vjp(layer, x, *weights)
    return list(vjp(grad))


# The packed graph's call: an opaque op (its Python runs over the plan's pieces and depths, which no compiler
# should trace), with a registered fake, so any inner compiler (inductor included) compiles the rest of the graph
# around it; its backward recomputes the forward under autograd (the layer's activations are not kept between
# the two: a recurrent layer's are small beside the attention's).
@torch.library.custom_op("replaycompile::gated_deltanet_tree", mutates_args=())
def gated_deltanet_tree_op(x: Tensor, weights: list[Tensor], scatter_index: Tensor, gather_index: Tensor,
                           seg_q: Tensor, num_k_heads: int, head_k_dim: int, norm_eps: float) -> Tensor:
    with torch.no_grad():
        return gated_deltanet_packed(x, weights, scatter_index, gather_index, seg_q, num_k_heads, head_k_dim,
                                     norm_eps)


@gated_deltanet_tree_op.register_fake
def _(x, weights, scatter_index, gather_index, seg_q, num_k_heads, head_k_dim, norm_eps):
    return x.new_empty(x.shape)


@torch.library.custom_op("replaycompile::gated_deltanet_tree_backward", mutates_args=())
def gated_deltanet_tree_backward(grad: Tensor, x: Tensor, weights: list[Tensor], scatter_index: Tensor,
                                 gather_index: Tensor, seg_q: Tensor, num_k_heads: int, head_k_dim: int,
                                 norm_eps: float) -> list[Tensor]:
    return backward_by_recompute(gated_deltanet_packed, grad, x, weights, scatter_index, gather_index, seg_q,
                                 (num_k_heads, head_k_dim, norm_eps))


@gated_deltanet_tree_backward.register_fake
def _(grad, x, weights, scatter_index, gather_index, seg_q, num_k_heads, head_k_dim, norm_eps):
    return [x.new_empty(x.shape)] + [w.new_empty(w.shape) for w in weights]


def register_recompute_autograd(op, backward_op) -> None:
    """``op(x, weights, scatter_index, gather_index, seg_q, *sizes)``'s autograd: save its tensors, and call
    ``backward_op(grad, x, weights, scatter_index, gather_index, seg_q, *sizes)`` (the tree-scan ops share it)."""
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], *inputs[1], *inputs[2:5])
        ctx.sizes = inputs[5:]
        ctx.n_weights = len(inputs[1])

    def backward(ctx, grad):
        saved = ctx.saved_tensors
        x, weights, index = saved[0], list(saved[1:1 + ctx.n_weights]), saved[1 + ctx.n_weights:]
        grads = backward_op(grad, x, weights, *index, *ctx.sizes)
        return (grads[0], grads[1:]) + (None,) * (3 + len(ctx.sizes))

    op.register_autograd(backward, setup_context=setup_context)


register_recompute_autograd(gated_deltanet_tree_op, gated_deltanet_tree_backward)
