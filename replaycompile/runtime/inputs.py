"""Per call: the packed graph's extra inputs from the batch's plan (the contract ``PackedGraph.extra_inputs``
the rewrite wrote down, one ``PackedInput`` record each). Runs every call; reads the plan and the call's arguments, never rewrites a graph."""

from __future__ import annotations

import torch
import torch.fx as fx

from replaycompile.passes.loss_weights import keep_positions
from replaycompile.passes.packed_graph import (PLAN_INPUTS, SPLIT_INPUTS, LayoutInputs, PackedGraph, PairInputs,
                                          PlanInputs, QuerySegmentInputs, ShardInputs, SliceInputs)

__all__ = ["packed_inputs", "lm_head_rows", "without_lm_head"]


def packed_inputs(packed: PackedGraph, args, plan, split=None) -> tuple[list, dict]:
    """The packed graph's inputs after the original ``args``, in ``packed.extra_inputs`` order, from the batch's
    ``plan`` (``ReplayPlan``) or, for detach_prefix, its shared-first ``split`` (``SharedSplit``), and what it
    found: {"sizes": tokens per space, "positions_dropped", "tokens_dropped", "num_packed", "cp_share"}."""
    src = split if split is not None else plan
    bound: dict = {}
    if packed.bounds_gm is not None:
        nodes = [x for sl in packed.extra_inputs if isinstance(sl, SliceInputs) for x in (sl.start, sl.stop)
                 if isinstance(x, fx.Node)]
        bound = dict(zip(nodes, (int(v) for v in packed.bounds_gm(*args))))
    # per packed space: its scatter [B, K] and its token count (the fused LM head's pairs come from them)
    scatters = [src.scatter_index]
    sizes = [plan.num_packed]
    sel_shared: dict = {}                # slice space -> its selected shared tokens (detach_prefix)
    sel_index: dict = {}                 # slice space -> its selected tokens (indices into space 0)
    weights = None
    dropped = [0, 0]                     # positions whose weights are all zero, tokens no kept position reads
    out = []
    shards = owner = None
    cp_share = None                      # (this rank's tokens, the tokens split) under context parallelism
    for what in packed.extra_inputs:
        if isinstance(what, PlanInputs):
            assert what.split == (split is not None), "a detach_prefix graph takes the batch's SharedSplit"
            out.extend(getattr(src, n) for n in (SPLIT_INPUTS if split is not None else PLAN_INPUTS))
        elif isinstance(what, ShardInputs):
            # this rank's share of the packed tokens, or under detach_prefix of the shared tokens (the branch
            # tokens whole on each rank)
            from replaycompile.context_parallel import context_shards, query_segments, shared_tree

            tree, gather, columns = (shared_tree(split), split.gather_s, split.columns_s) if what.shared else \
                (plan, plan.gather_index, plan.columns)
            rank, world, _ = packed.cp
            shards = context_shards(tree, world)
            mine = shards.index[rank]
            owner = torch.empty(tree.num_packed, dtype=torch.int64)
            for r, ix in enumerate(shards.index):
                owner[ix] = r
            out.extend([gather[mine], columns[mine], torch.empty(shards.size - mine.numel(), dtype=torch.int64),
                        shards.order, *query_segments(tree, mine)])
            if not what.shared:
                sizes[0] = int(mine.numel())
            cp_share = (int(mine.numel()), tree.num_packed, "shared" if what.shared else "packed")
        elif isinstance(what, LayoutInputs):
            lay = split.block_layout_s(*packed.blocks) if split is not None else plan.block_layout(*packed.blocks)
            out.extend(lay.tensors())
        elif isinstance(what, SliceInputs):
            assert what.space == len(sizes), (what.space, len(sizes))
            start, stop = (bound.get(x, x) for x in (what.start, what.stop))
            sel = src.select_columns(start, stop)
            keep_expr = packed.space_keep.get(len(sizes)) if split is None else None
            if keep_expr is not None:
                if weights is None:
                    weights = list(packed.weights_gm(*args))
                keep = keep_positions(keep_expr, weights, *sel[1].shape)
                index, scatter, n_pos, n_tok = plan.refine_selection(sel[0], sel[1], keep)
                sel = (index, scatter)
                dropped[0] += n_pos
                dropped[1] += n_tok
            if shards is not None:
                # this rank's tokens of the slice (indices into its own tokens), the scatter as it is (it
                # reads the gathered slice), then the slice's padding and gathered order (detach_prefix: of
                # its shared tokens; the branch tokens' index as it is)
                rank, world, _ = packed.cp
                own = owner[sel[0]]
                mine = torch.nonzero(own == rank).reshape(-1)
                counts = [int((own == r).sum()) for r in range(world)]
                # a rank that holds none of the slice's tokens computes one of its own tokens there, read by
                # nothing (no position points at it, the gathered order skips it): no op meets an empty slice
                held = [max(c, 1) for c in counts]
                size = max(held)
                order = torch.empty(sel[0].numel(), dtype=torch.int64)
                for r in range(world):
                    order[own == r] = r * size + torch.arange(counts[r])
                local = torch.searchsorted(shards.index[rank], sel[0][mine]) if counts[rank] else \
                    torch.zeros(1, dtype=torch.int64)
                if split is not None:
                    out.extend([local, sel[1], sel[2], torch.empty(size - held[rank], dtype=torch.int64), order])
                    scatters.append(sel[2])
                    sizes.append(int(sel[0].numel() + sel[1].numel()))
                    continue
                lookup = torch.full((sel[0].numel() + 1,), held[rank], dtype=torch.int64)
                lookup[mine] = torch.arange(mine.numel())
                out.extend([local, sel[1], torch.empty(size - held[rank], dtype=torch.int64), order,
                            lookup[sel[1]]])
                scatters.append(sel[1])
                sizes.append(int(sel[0].numel()))
                # the rank's tokens of the slice in packed coordinates (its queries there, if pruned)
                sel_index[len(sizes) - 1] = sel[0][mine] if counts[rank] else shards.index[rank][:1]
                continue
            out.extend(sel)
            scatters.append(sel[-1])
            sizes.append(sum(int(x.shape[0]) for x in sel[:-1]))
            sel_shared[len(sizes) - 1] = int(sel[0].shape[0])
            sel_index[len(sizes) - 1] = sel[0]
        elif isinstance(what, QuerySegmentInputs):
            out.extend(plan.query_segments(sel_index[what.space]))
        elif isinstance(what, PairInputs):
            sp = what.space
            if split is None:
                out.extend(plan.unique_pairs(scatters[sp], 0, sizes[sp]))
                continue
            # per stream: rows of the shared tokens come first in every space
            n_s = split.num_shared if sp == 0 else sel_shared[sp]
            for lo, hi in ((0, n_s), (n_s, sizes[sp])):
                out.extend(plan.unique_pairs(scatters[sp], lo, hi))
        else:
            raise AssertionError(f"unknown packed-graph input {what!r}")
    return out, dict(sizes=sizes, positions_dropped=dropped[0], tokens_dropped=dropped[1],
                     num_packed=plan.num_packed, cp_share=cp_share)

def _pair_inputs(packed: PackedGraph) -> int:
    """How many of the inputs are the chunked LM head's pairs (the last ones)."""
    return packed.lm_head_sites * 3 * (2 if packed.detach_prefix else 1)

def lm_head_rows(packed: PackedGraph, extra: list) -> int:
    """The unique packed rows the chunked LM head would compute logits for, given ``packed_inputs(...)``."""
    n = _pair_inputs(packed)
    return sum(int(x.shape[0]) for x in extra[len(extra) - n + 2::3]) if n else 0

def without_lm_head(packed: PackedGraph, extra: list) -> list:
    """``packed_inputs(...)`` of ``packed`` as those of the same graph without the chunked LM head."""
    n = _pair_inputs(packed)
    return extra[:len(extra) - n] if n else extra
