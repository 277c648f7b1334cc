"""Context parallelism for packed prefix trees (issue 33, item 1): which packed tokens each rank of a CP group
holds, and tree attention whose queries are a rank's tokens and whose keys are every rank's.

The rewrite (``passes/rewrite.py``, ``cp_group``) runs each per-token op of the packed step on the rank's
tokens and each attention as ``replaycompile::cp_tree_attention`` (below); under ``detach_prefix`` it splits the
shared tokens only (they run without autograd) and runs the branch tokens whole on every rank, their attention
as ``replaycompile::cp_branch_attention``. ``tests/test_context_parallel.py`` checks both modes on two gloo
ranks against one process.

Shards. ``context_shards(plan, cp)`` cuts the DFS-packed token axis into ``2 * cp`` contiguous chunks of equal
token counts and gives rank r chunks r and ``2cp - 1 - r`` (the head-tail pairing of ring attention's load
balancing). A token's attention reads more keys the later it comes (its ancestors and its segment's tokens up to
it: a prompt's later tokens and every completion token), so pairing an early chunk with a late one balances the
attention work while every rank holds as many tokens (its memory): at a 16K prompt with G=8 the ranks' work is
within 0.2% of each other on 2, 3 and 4 ranks. A short prompt with many completion tokens (which all read about
the prompt's length) balances less well (1.2-1.3x on the tests' batches), and there plain contiguous chunks of
equal token counts are taken where their busiest rank has less work; ``ContextShards.imbalance`` says how well.
Pairing alone hands every completion to the rank holding the last chunk, and with them the loss's positions and
the LM head's logits: so the tokens only one row holds are cut into cp equal runs of their own, the shared tokens
paired head-tail, wherever that keeps the busiest rank's work within 5% of the best layout's (within 0.03% at a
16K prompt). We first cut chunks of equal attention work instead: at 16K that gave one rank 63% of the tokens
and a 1.6x larger peak.

Attention. ``cp_tree_attention`` all-gathers the rank's keys and values, puts them in packed order, and runs
``replaycompile::tree_attention`` with the rank's tokens as queries (``ReplayPlan.query_segments``): the tree's
visibility rule is the plan's, so flat groups, trees of any depth and sliding windows need nothing more (a window
reads the keys' positions, every token's; each query's own is its key's). Its backward gathers them again and
reduce-scatters their gradients, so each key's gradient from every rank's queries is summed on the rank that owns
it, and no layer keeps more than its own tokens' K/V for the backward. The rewrite hands it K/V before GQA's
``repeat_kv`` (``Packer.unrepeated_kv``): what it gathers, saves and reduces is Hkv heads wide (the flash kernel
reads kv head h // (Hq / Hkv) itself); on gloo the reduce-scatter is an in-place all-reduce of our own buffer
(gloo's reduce-scatter clones its input first). With the ancestors' backward in key chunks
(kernels/tree_attention.py) these took the rank's peak out of the attention's backward (docs/long_context.md,
"Measured"). Why all-gather and not a ring: on the CPU gloo ranks the tests run on, one collective per layer is
cheaper than cp - 1 exchanges, and the gathered K/V of one layer is transient (the planner's ring term is one K/V
block; a gathered layer is cp blocks). Values that are not K/V (the exits of the packed region) go through
``ops.cp_gather``, torch's functional all-gather. torch's own ``context_parallel`` cannot take this op: it swaps
SDPA for ring attention over a causal or no mask, and a tree is neither.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from replaycompile.kernels import autocast as _autocast
from replaycompile.kernels import tree_attention as _tree_attention  # registers replaycompile::tree_attention
from replaycompile.runtime.plan import ReplayPlan, multiplicity

__all__ = ["ContextShards", "context_shards", "visible_keys", "cp_tree_attention", "shared_tree", "query_segments"]


@dataclass(frozen=True, eq=False)
class ContextShards:
    """The packed tokens of each rank of a CP group (see the module docstring)."""

    cp: int
    index: tuple          # per rank: its packed token indices, sorted ([n_r] int64)
    cost: tuple           # per rank: its tokens' summed cost
    size: int             # the longest shard: every rank pads to it for the all-gather
    order: torch.Tensor   # [N] each packed token's place in the gathered (rank-major, padded) layout

    def imbalance(self) -> float:
        """The most loaded rank's cost over the mean (1.0: perfectly balanced)."""
        mean = sum(self.cost) / self.cp
        return max(self.cost) / mean if mean else 1.0


def visible_keys(plan: ReplayPlan) -> torch.Tensor:
    """[N] how many keys each packed token's attention reads: its segment's ancestors, then its own segment's
    tokens up to and including itself."""
    keys = torch.empty(plan.num_packed, dtype=torch.int64)
    ptr = plan.seg_kv_ptr.tolist()
    ranges = plan.kv_ranges.tolist()
    for s in range(plan.num_segments):
        own0, own1 = ranges[ptr[s + 1] - 1]
        anc = sum(b - a for a, b in ranges[ptr[s]:ptr[s + 1] - 1])
        keys[own0:own1] = anc + torch.arange(1, own1 - own0 + 1)
    return keys


def context_shards(plan: ReplayPlan, cp: int) -> ContextShards:
    """Rank r's packed tokens: chunks r and 2cp-1-r of 2cp contiguous chunks of equal token counts, with the tokens
    only one row holds (the completions, where the loss reads) cut into cp equal runs of their own where that keeps
    the work balanced (module docstring)."""
    if cp < 1:
        raise ValueError(f"cp is a rank count (>= 1), got {cp}")
    n = plan.num_packed
    cost = visible_keys(plan).double()

    def zigzag(tokens):
        chunks = list(tokens.chunk(2 * cp)) if tokens.numel() >= 2 * cp else list(tokens.chunk(cp))
        chunks += [torch.empty(0, dtype=torch.int64)] * (2 * cp - len(chunks))
        return [torch.cat([chunks[r], chunks[2 * cp - 1 - r]]) for r in range(cp)]

    every = torch.arange(n)
    candidates = [tuple(zigzag(every))]
    # where completions dominate (a short prompt), their work is flat and plain contiguous chunks can balance
    # better: both hold equal token counts, keep the one whose busiest rank has less work
    candidates.append(tuple(every.chunk(cp)) if n >= cp else candidates[0])
    index = min(candidates, key=lambda ix: max(float(cost[i].sum()) for i in ix))
    # The loss's positions sit in the tokens one row holds; pairing alone hands them all to the rank with the last
    # chunk, and with them the LM head's logits (M x V on one rank: 809 against 655 MB at a 16K prompt). Shared
    # tokens paired head-tail and the single-row tokens in cp equal runs keep counts equal and spread the head;
    # taken where its busiest rank's work is within 5% of the best layout's.
    single = _single_row_tokens(plan)
    if single is not None and 0 < int(single.sum()) and int((~single).sum()) >= 2 * cp:
        shared_part = zigzag(every[~single])
        single_part = list(every[single].chunk(cp)) + [torch.empty(0, dtype=torch.int64)] * cp
        spread = tuple(torch.sort(torch.cat([shared_part[r], single_part[r]])).values for r in range(cp))
        if max(float(cost[i].sum()) for i in spread) <= 1.05 * max(float(cost[i].sum()) for i in index):
            index = spread
    size = max(int(ix.numel()) for ix in index)
    order = torch.empty(n, dtype=torch.int64)
    for r, ix in enumerate(index):
        order[ix] = r * size + torch.arange(ix.numel())
    return ContextShards(cp, index, tuple(float(cost[ix].sum()) for ix in index), size, order)


def _single_row_tokens(plan) -> torch.Tensor | None:
    """[N] bool: the packed tokens exactly one row holds (None for a plan without rows: ``shared_tree``'s)."""
    if getattr(plan, "scatter_index", None) is None:
        return None
    return multiplicity(plan) == 1


def cp_tree_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: ReplayPlan, shards: ContextShards,
                      rank: int, group, scale: float, segments=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Tree attention of this rank's queries over every rank's keys and values.

    q [1, Hq, n_r, D], k [1, Hkv, n_r, D], v [1, Hkv, n_r, Dv]: the rank's tokens (``shards.index[rank]``).
    Returns (out [1, Hq, n_r, Dv], lse [1, Hq, n_r]) equal to those rows of tree attention over the whole
    packed batch. ``segments``: ``plan.query_segments(shards.index[rank])``, if the caller already has it."""
    seg = segments if segments is not None else plan.query_segments(shards.index[rank])
    pad = torch.empty(shards.size - k.shape[2], dtype=torch.int64)
    name = group if isinstance(group, str) else group.group_name
    return torch.ops.replaycompile.cp_tree_attention(q, k, v, pad, shards.order.to(k.device), *seg, scale, name)


# ------------------------------------------------------------------------- the CP attention op
#
# One op for a layer's CP attention, so that its backward gathers the keys and values again instead of saving
# every rank's (each layer would keep cp times its own K/V until the backward reached it: on 8 ranks of a
# 64-layer model the gathered K/V alone outgrow the rank, see README "Context parallelism"). Written with eager
# torch.distributed collectives inside an opaque custom op: AOT's partitioner never recomputes a traced
# collective (every rank must make the same choice), and a ring would pay cp - 1 exchanges per layer for what one
# all-gather does on the gloo ranks we test on. Every rank runs the same graph, so the collectives come in the
# same order on each.


def _resolve(group_name: str):
    from torch.distributed.distributed_c10d import _resolve_process_group

    return _resolve_process_group(group_name)


def _gather_keys(x: torch.Tensor, pad: int, order: torch.Tensor, group) -> torch.Tensor:
    """[1, H, n_r, D] this rank's keys -> [1, H, N, D] every rank's in packed order (a token-major view)."""
    import torch.distributed as dist

    world = dist.get_world_size(group)
    n_r, h, d = x.shape[2], x.shape[1], x.shape[3]
    local = x.new_zeros((n_r + pad, h, d))
    local[:n_r] = x[0].transpose(0, 1)
    every = x.new_empty((world * (n_r + pad), h, d))
    dist.all_gather_into_tensor(every, local, group=group)
    del local
    return every.index_select(0, order).transpose(0, 1).unsqueeze(0)


def _every_rank_kv(k: torch.Tensor, v: torch.Tensor, pad: torch.Tensor, order: torch.Tensor, group_name: str,
                   k_tail: torch.Tensor | None = None, v_tail: torch.Tensor | None = None):
    """(keys, values, group): every rank's ``k``/``v`` in packed order, followed by ``k_tail``/``v_tail`` (the
    branch tokens' under detach_prefix), and the process group."""
    group = _resolve(group_name)
    keys = _gather_keys(k, pad.shape[0], order, group)
    values = _gather_keys(v, pad.shape[0], order, group)
    if k_tail is not None:
        keys, values = torch.cat([keys, k_tail], 2), torch.cat([values, v_tail], 2)
    return keys, values, group


_NO_SUBTREE = torch.empty(0, dtype=torch.int64)  # tree_attention's subtree_end, unused with query segments


def _attention_fake(q, v):
    """(out, lse) of a CP attention op as tree_attention lays them out."""
    hq, n, dv = q.shape[1], q.shape[2], v.shape[3]
    return _tree_attention._new_tokens((1, hq, n, dv), q.dtype, q.device), q.new_empty((1, hq, n),
                                                                                     dtype=torch.float32)


def _attention_backward_fake(q, k, v):
    """(dq, dk, dv) of a CP attention backward op: dq as tree_attention's, dk/dv contiguous like k and v."""
    return _tree_attention._new_tokens(q.shape, q.dtype, q.device), \
        torch.empty_like(k, memory_format=torch.contiguous_format), \
        torch.empty_like(v, memory_format=torch.contiguous_format)


def _scatter_key_grads(g: torch.Tensor, pad: int, order: torch.Tensor, n_r: int, group) -> torch.Tensor:
    """[1, H, N, D] a gradient over every rank's keys -> [1, H, n_r, D] the sum over the ranks of this rank's
    keys' (a reduce-scatter in the gathered layout), contiguous."""
    import torch.distributed as dist

    world = dist.get_world_size(group)
    h, d = g.shape[1], g.shape[3]
    every = g.new_zeros((world * (n_r + pad), h, d))
    every.index_copy_(0, order, g[0].transpose(0, 1))
    if dist.get_backend(group) == "gloo":
        # gloo's reduce-scatter clones its input and all-reduces the clone (one more N-token buffer at the
        # backward's peak); all-reducing this buffer, ours already, in place and keeping our rows does without
        dist.all_reduce(every, group=group)
        mine = every[dist.get_rank(group) * (n_r + pad):]
    else:
        mine = g.new_empty((n_r + pad, h, d))
        dist.reduce_scatter_tensor(mine, every, group=group)
    # a copy of our rows alone (contiguous, as the op's fake says), so the gathered buffer goes now
    return mine[:n_r].transpose(0, 1).unsqueeze(0).contiguous()


@torch.library.custom_op("replaycompile::cp_tree_attention", mutates_args=())
def _cp_tree_attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pad: torch.Tensor, order: torch.Tensor,
                          seg_q: torch.Tensor, seg_kv_ptr: torch.Tensor, kv_ranges: torch.Tensor, scale: float,
                          group_name: str, positions: torch.Tensor | None = None, window: int = 0,
                          softcap: float = 0.0, sinks: torch.Tensor | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """``replaycompile::tree_attention`` of this rank's queries (q [1, Hq, n_r, D], the segment CSR
    ``plan.query_segments``) over every rank's keys and values (k, v: this rank's [1, Hkv, n_r, .], all-gathered
    here). ``pad``: only its length is read (how many tokens this rank lacks to the longest rank's count, kept a
    tensor so sizes stay symbolic); ``order`` [N]: each packed token's place in the gathered rank-major layout;
    ``positions`` etc. as tree_attention's (every packed token's)."""
    keys, values, _ = _every_rank_kv(k, v, pad, order, group_name)
    return torch.ops.replaycompile.tree_attention(q, keys, values, _NO_SUBTREE.to(q.device), seg_q, seg_kv_ptr,
                                                  kv_ranges, scale, [], 0, 0, positions, window, softcap, sinks)


@_cp_tree_attention_op.register_fake
def _(q, k, v, pad, order, seg_q, seg_kv_ptr, kv_ranges, scale, group_name, positions=None, window=0, softcap=0.0,
      sinks=None):
    return _attention_fake(q, v)


@torch.library.custom_op("replaycompile::cp_tree_attention_backward", mutates_args=())
def _cp_tree_attention_backward_op(grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                   out: torch.Tensor, lse: torch.Tensor, pad: torch.Tensor, order: torch.Tensor,
                                   seg_q: torch.Tensor, seg_kv_ptr: torch.Tensor, kv_ranges: torch.Tensor,
                                   scale: float, group_name: str, positions: torch.Tensor | None = None,
                                   window: int = 0, softcap: float = 0.0
                                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) of ``cp_tree_attention`` for this rank's q, k, v: the keys and values gathered again, tree
    attention's backward over them, and each key's gradient summed over the ranks' queries on its owner."""
    keys, values, group = _every_rank_kv(k, v, pad, order, group_name)
    dq, dk, dv = torch.ops.replaycompile.tree_attention_backward(
        grad_out, q, keys, values, out, lse, _NO_SUBTREE.to(q.device), seg_q, seg_kv_ptr, kv_ranges, scale, [], 0,
        0, positions, window, softcap)
    del keys, values
    dk = _scatter_key_grads(dk, pad.shape[0], order, k.shape[2], group)
    dv = _scatter_key_grads(dv, pad.shape[0], order, v.shape[2], group)
    return dq, dk, dv


@_cp_tree_attention_backward_op.register_fake
def _(grad_out, q, k, v, out, lse, pad, order, seg_q, seg_kv_ptr, kv_ranges, scale, group_name, positions=None,
      window=0, softcap=0.0):
    return _attention_backward_fake(q, k, v)


def _setup_context(ctx, inputs, output):
    q, k, v, pad, order, seg_q, seg_kv_ptr, kv_ranges, scale, group_name, positions, window, softcap, sinks = inputs
    out, lse = output
    # this rank's keys and values only: the backward gathers every rank's again
    ctx.save_for_backward(q, k, v, out, lse, pad, order, seg_q, seg_kv_ptr, kv_ranges, positions, sinks)
    ctx.meta = (scale, group_name, window, softcap)
    ctx.mark_non_differentiable(lse)


def _backward(ctx, grad_out, grad_lse):
    q, k, v, out, lse, pad, order, seg_q, seg_kv_ptr, kv_ranges, positions, sinks = ctx.saved_tensors
    scale, group_name, window, softcap = ctx.meta
    dq = dk = dv = dsinks = None
    if grad_out is not None:
        # every rank runs this backward (the reduce-scatter needs them all), whatever its own inputs need
        dq, dk, dv = torch.ops.replaycompile.cp_tree_attention_backward(
            grad_out, q, k, v, out, lse, pad, order, seg_q, seg_kv_ptr, kv_ranges, scale, group_name, positions,
            window, softcap)
        if sinks is not None and ctx.needs_input_grad[13]:
            dsinks = _tree_attention._sinks_grad(grad_out, out, lse, sinks)
    grads = (dq, dk, dv, None, None, None, None, None, None, None, None, None, None, dsinks)
    return grads[:len(ctx.needs_input_grad)]


_cp_tree_attention_op.register_autograd(_backward, setup_context=_setup_context)


# detach_prefix: the shared (S) tokens run without autograd, split over the ranks like the exact step's tokens;
# the branch (R) tokens, a few hundred against a prompt of 100K, run whole on every rank. A branch token's
# attention reads every S key as a constant: the op below gathers them in forward and again in backward, so no
# layer keeps more than the rank's own S keys and values (one process keeps all of them).


@torch.library.custom_op("replaycompile::cp_branch_attention", mutates_args=())
def _cp_branch_attention_op(q: torch.Tensor, k_shared: torch.Tensor, v_shared: torch.Tensor, k: torch.Tensor,
                            v: torch.Tensor, pad: torch.Tensor, order: torch.Tensor, seg_q: torch.Tensor,
                            seg_kv_ptr: torch.Tensor, kv_ranges: torch.Tensor, scale: float, group_name: str,
                            positions: torch.Tensor | None = None, window: int = 0, softcap: float = 0.0,
                            sinks: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``replaycompile::tree_attention`` of the branch tokens' queries q [1, Hq, N_R, D] over ``cat(every rank's
    shared keys, k)``: k_shared/v_shared are this rank's shared tokens' (constants: no gradient), gathered in
    the shared tokens' packed order (``pad``/``order`` as ``cp_tree_attention``'s); k, v [1, Hkv, N_R, .] the
    branch tokens'. The segment CSR and ``positions`` are ``plan.SharedSplit``'s R attention's."""
    keys, values, _ = _every_rank_kv(k_shared, v_shared, pad, order, group_name, k, v)
    return torch.ops.replaycompile.tree_attention(q, keys, values, _NO_SUBTREE.to(q.device), seg_q, seg_kv_ptr,
                                                  kv_ranges, scale, [], 0, 0, positions, window, softcap, sinks)


@_cp_branch_attention_op.register_fake
def _(q, k_shared, v_shared, k, v, pad, order, seg_q, seg_kv_ptr, kv_ranges, scale, group_name, positions=None,
      window=0, softcap=0.0, sinks=None):
    return _attention_fake(q, v)


@torch.library.custom_op("replaycompile::cp_branch_attention_backward", mutates_args=())
def _cp_branch_attention_backward_op(grad_out: torch.Tensor, q: torch.Tensor, k_shared: torch.Tensor,
                                     v_shared: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                                     lse: torch.Tensor, pad: torch.Tensor, order: torch.Tensor, seg_q: torch.Tensor,
                                     seg_kv_ptr: torch.Tensor, kv_ranges: torch.Tensor, scale: float,
                                     group_name: str, positions: torch.Tensor | None = None, window: int = 0,
                                     softcap: float = 0.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dq, dk, dv) of ``cp_branch_attention`` for the branch tokens (the shared keys are constants)."""
    keys, values, _ = _every_rank_kv(k_shared, v_shared, pad, order, group_name, k, v)
    dq, dk, dv = torch.ops.replaycompile.tree_attention_backward(
        grad_out, q, keys, values, out, lse, _NO_SUBTREE.to(q.device), seg_q, seg_kv_ptr, kv_ranges, scale, [], 0,
        0, positions, window, softcap)
    n_s = keys.shape[2] - k.shape[2]
    return dq, dk[:, :, n_s:].contiguous(), dv[:, :, n_s:].contiguous()


@_cp_branch_attention_backward_op.register_fake
def _(grad_out, q, k_shared, v_shared, k, v, out, lse, pad, order, seg_q, seg_kv_ptr, kv_ranges, scale, group_name,
      positions=None, window=0, softcap=0.0):
    return _attention_backward_fake(q, k, v)


def _setup_branch(ctx, inputs, output):
    q, ks, vs, k, v, pad, order, seg_q, seg_kv_ptr, kv_ranges, scale, group_name, positions, window, softcap, \
        sinks = inputs
    out, lse = output
    ctx.save_for_backward(q, ks, vs, k, v, out, lse, pad, order, seg_q, seg_kv_ptr, kv_ranges, positions, sinks)
    ctx.meta = (scale, group_name, window, softcap)
    ctx.mark_non_differentiable(lse)


def _backward_branch(ctx, grad_out, grad_lse):
    q, ks, vs, k, v, out, lse, pad, order, seg_q, seg_kv_ptr, kv_ranges, positions, sinks = ctx.saved_tensors
    scale, group_name, window, softcap = ctx.meta
    dq = dk = dv = dsinks = None
    if grad_out is not None:
        # every rank runs it (its all-gathers need them all)
        dq, dk, dv = torch.ops.replaycompile.cp_branch_attention_backward(
            grad_out, q, ks, vs, k, v, out, lse, pad, order, seg_q, seg_kv_ptr, kv_ranges, scale, group_name,
            positions, window, softcap)
        if sinks is not None and ctx.needs_input_grad[15]:
            dsinks = _tree_attention._sinks_grad(grad_out, out, lse, sinks)
    grads = (dq, None, None, dk, dv, None, None, None, None, None, None, None, None, None, None, dsinks)
    return grads[:len(ctx.needs_input_grad)]


_cp_branch_attention_op.register_autograd(_backward_branch, setup_context=_setup_branch)


def shared_tree(split) -> "SimpleNamespace":
    """The shared tokens of a ``plan.SharedSplit`` as a plan of their own (what ``context_shards``,
    ``visible_keys`` and ``query_segments`` read): they form a prefix tree with its own segment CSR."""
    from types import SimpleNamespace

    return SimpleNamespace(num_packed=split.num_shared, num_segments=int(split.seg_q_s.shape[0]),
                           seg_q=split.seg_q_s, seg_kv_ptr=split.seg_kv_ptr_s, kv_ranges=split.kv_ranges_s)


def query_segments(tree, index: torch.Tensor):
    """``ReplayPlan.query_segments`` of a plan or a ``shared_tree``."""
    return ReplayPlan.query_segments(tree, index)


# cast as the SDPA they replace (kernels/autocast.py); the backward runs in the dtypes the forward saved
_autocast.register("replaycompile::cp_tree_attention", cast=("q", "k", "v"))
_autocast.register("replaycompile::cp_tree_attention_backward")
_autocast.register("replaycompile::cp_branch_attention", cast=("q", "k_shared", "v_shared", "k", "v"))
_autocast.register("replaycompile::cp_branch_attention_backward")
