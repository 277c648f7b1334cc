"""Context parallelism for packed prefix trees (issue 33, item 1): which packed tokens each rank of a CP group
holds, and tree attention whose queries are a rank's tokens and whose keys are every rank's.

The building blocks of the CP packed step, not yet wired into the backend (``passes/rewrite.py`` still runs
every packed token on every rank): what is here is exact and tested on its own, on one process and on two gloo
ranks (``tests/test_context_parallel.py``).

Shards. ``context_shards(plan, cp)`` cuts the DFS-packed token axis into ``2 * cp`` contiguous chunks of equal
token counts and gives rank r chunks r and ``2cp - 1 - r`` (the head-tail pairing of ring attention's load
balancing). A token's attention reads more keys the later it comes (its ancestors and its segment's tokens up to
it: a prompt's later tokens and every completion token), so pairing an early chunk with a late one balances the
attention work while every rank holds as many tokens (its memory): at a 16K prompt with G=8 the ranks' work is
within 0.2% of each other on 2, 3 and 4 ranks. A short prompt with many completion tokens (which all read about
the prompt's length) balances less well (1.2-1.3x on the tests' batches), and there plain contiguous chunks of
equal token counts are taken where their busiest rank has less work; ``ContextShards.imbalance`` says how well. We first cut chunks of equal attention work instead: at 16K that gave one rank 63% of the tokens and a
1.6x larger peak.

Attention. ``cp_tree_attention`` all-gathers the rank's keys and values with torch's functional collectives
(``all_gather_single_autograd``: its backward is a reduce-scatter, so each key's gradient from every rank's
queries is summed on the rank that owns it), puts them in packed order, and runs ``replaycompile::tree_attention``
with the rank's tokens as queries (``ReplayPlan.query_segments``): the tree's visibility rule is the plan's, so
flat groups, trees of any depth and sliding windows need nothing more (a window reads the keys' positions,
every token's; each query's own is its key's). Why all-gather and not a ring: on the CPU gloo ranks the
tests run on, one collective per layer is cheaper than cp - 1 exchanges, and the gathered K/V of one layer is
transient (the planner's ring term is one K/V block; a gathered layer is cp blocks). torch's own
``context_parallel`` cannot take this op: it swaps SDPA for ring attention over a causal or no mask, and a tree
is neither.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from replaycompile.ops import cp_gather
from replaycompile.plan import ReplayPlan

__all__ = ["ContextShards", "context_shards", "visible_keys", "gather_tokens", "cp_tree_attention"]


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
    """Rank r's packed tokens: chunks r and 2cp-1-r of 2cp contiguous chunks of equal token counts (module
    docstring)."""
    if cp < 1:
        raise ValueError(f"cp is a rank count (>= 1), got {cp}")
    n = plan.num_packed
    cost = visible_keys(plan).double()
    chunks = torch.arange(n).chunk(2 * cp) if n >= 2 * cp else torch.arange(n).chunk(cp)
    chunks = list(chunks) + [torch.empty(0, dtype=torch.int64)] * (2 * cp - len(chunks))
    zigzag = tuple(torch.cat([chunks[r], chunks[2 * cp - 1 - r]]) for r in range(cp))
    # where completions dominate (a short prompt), their work is flat and plain contiguous chunks can balance
    # better: both hold equal token counts, keep the one whose busiest rank has less work
    plain = tuple(torch.arange(n).chunk(cp)) if n >= cp else zigzag
    index = min((zigzag, plain), key=lambda ix: max(float(cost[i].sum()) for i in ix))
    size = max(int(ix.numel()) for ix in index)
    order = torch.empty(n, dtype=torch.int64)
    for r, ix in enumerate(index):
        order[ix] = r * size + torch.arange(ix.numel())
    return ContextShards(cp, index, tuple(float(cost[ix].sum()) for ix in index), size, order)


def gather_tokens(x: torch.Tensor, shards: ContextShards, dim: int, group) -> torch.Tensor:
    """Every rank's tokens of ``x`` (this rank's, along ``dim``) in packed order, differentiably: the backward
    sums each token's gradient over the ranks and hands it to the rank that owns the token (``ops.cp_gather``)."""
    dim = dim % x.dim()
    pad = torch.empty(shards.size - x.shape[dim], dtype=torch.int64)
    return cp_gather(x, dim, pad, shards.order.to(x.device), group)


def cp_tree_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: ReplayPlan, shards: ContextShards,
                      rank: int, group, scale: float, segments=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Tree attention of this rank's queries over every rank's keys and values.

    q [1, Hq, n_r, D], k [1, Hkv, n_r, D], v [1, Hkv, n_r, Dv]: the rank's tokens (``shards.index[rank]``).
    Returns (out [1, Hq, n_r, Dv], lse [1, Hq, n_r]) equal to those rows of tree attention over the whole
    packed batch. ``segments``: ``plan.query_segments(shards.index[rank])``, if the caller already has it."""
    from replaycompile.kernels import tree_attention as _registers_the_op  # noqa: F401

    keys = gather_tokens(k, shards, 2, group)
    values = gather_tokens(v, shards, 2, group)
    seg = segments if segments is not None else plan.query_segments(shards.index[rank])
    no_subtree = torch.empty(0, dtype=torch.int64)
    return torch.ops.replaycompile.tree_attention(q, keys, values, no_subtree, *seg, scale, [], 0, 0)
