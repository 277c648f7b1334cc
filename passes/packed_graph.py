"""The packed graph the rewrite hands the runtime, and the contract of its extra inputs.

``PackedGraph`` is the record ``rewrite.rewrite`` writes; ``replaycompile.runtime.inputs.packed_inputs`` reads it
and builds, per call, the tensors its ``extra_inputs`` name, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch.fx as fx

# The plan's tensors the packed graph takes, by attribute name of ``plan.ReplayPlan``, in order
PLAN_INPUTS = ("gather_index", "columns", "scatter_index", "subtree_end", "seg_q", "seg_kv_ptr", "kv_ranges")
# detach_prefix: the shared tokens (S) and the branch tokens (R) run as two streams (``plan.SharedSplit``)
SPLIT_INPUTS = ("gather_s", "columns_s", "gather_r", "columns_r", "scatter_index", "subtree_end_s", "seg_q_s",
                "seg_kv_ptr_s", "kv_ranges_s", "seg_q_r", "seg_kv_ptr_r", "kv_ranges_r")


@dataclass(frozen=True)
class PlanInputs:
    """The plan's index tensors: ``PLAN_INPUTS`` of ``plan.ReplayPlan``, or for detach_prefix (``split``)
    ``SPLIT_INPUTS`` of its ``plan.SharedSplit``."""
    split: bool = False


@dataclass(frozen=True)
class LayoutInputs:
    """The six tensors of the tree's ``BlockLayout`` for ``PackedGraph.blocks`` (the Triton attention)."""


@dataclass(frozen=True)
class ShardInputs:
    """Context parallelism: this rank's share of the packed tokens (``shared``: of detach_prefix's shared
    tokens; the branch tokens run whole on each rank): its gather index and columns, the padding to the longest
    rank's count, every token's place in the gathered layout, and its query segments (three tensors)."""
    shared: bool = False


@dataclass(frozen=True)
class SliceInputs:
    """One slice of the sequence axis, packed again: its index and scatter (detach_prefix: index_s, index_r,
    scatter; under context parallelism the rank's share, padding, order and local scatter). ``start``/``stop``:
    ints, or nodes of the original graph (SymInts ``PackedGraph.bounds_gm`` computes from the inputs)."""
    space: int
    start: Any
    stop: Any


@dataclass(frozen=True)
class QuerySegmentInputs:
    """Attention runs its queries at the slice ``space``'s tokens only: the segment CSR of
    ``plan.query_segments`` (three tensors)."""
    space: int


@dataclass(frozen=True)
class PairInputs:
    """One chunked LM head reading space ``space``: per stream, the flat (b, k) of each valid pair, its row
    among the unique rows the pairs read, and those rows (three tensors per stream)."""
    space: int


# what ``PackedGraph.extra_inputs`` holds, in order
PackedInput = PlanInputs | LayoutInputs | ShardInputs | SliceInputs | QuerySegmentInputs | PairInputs


@dataclass
class PackedGraph:
    """The packed graph and the contract of its inputs: the original ones, then what
    ``replaycompile.runtime.inputs.packed_inputs(packed, args, plan, split)`` builds per call."""
    gm: fx.GraphModule
    detach_prefix: bool             # two streams: S without autograd, R with it (plan.SharedSplit)
    blocks: tuple[int, int] | None  # (block_q, block_k) of the tree's block layout (Triton attention), or None
    # the packed graph's inputs after the original ones, in order (``PackedInput``): the plan's, the block
    # layout when ``blocks``, this rank's shard under context parallelism, per slice of the sequence axis its
    # inputs, the query segments where attention runs its queries at a slice's tokens only, then per chunked LM
    # head its pairs
    extra_inputs: tuple = ()
    lm_head_sites: int = 0          # vocabulary gathers run as the chunked LM head ("pairs" inputs, at the end)
    lm_head_vocab: int = 0          # their vocabulary size (0: none)
    bounds_gm: fx.GraphModule | None = field(default=None, repr=False)  # the slices' SymInt bounds from the inputs
    # (output index, bdim, tdim) of each output that is a whole-batch packed value, replayed: the next graph of
    # a forward may pack it again (continuation)
    row_outputs: tuple = ()
    # packed nodes of the batch's space run on a slice's tokens only (passes/selected_tokens.py), and the
    # attention sites among them (their queries at those tokens, keys and values at all)
    selected_nodes: int = 0
    selected_attention: int = 0
    # slice spaces whose tokens the loss may weigh by zero (passes/loss_weights.py): space -> KeepExpr over the
    # outputs of ``weights_gm`` (the weights, from the graph's inputs); the runtime drops the tokens that no kept
    # position reads
    space_keep: dict = field(default_factory=dict)
    weights_gm: fx.GraphModule | None = field(default=None, repr=False)
    # spaces of the vocabulary gathers' logits (the LM head's rows: ``head_rows``)
    head_spaces: tuple = ()
    # context parallelism (a "cp" input): (rank, world, 0), set by the backend; the shards are the plan's
    cp: tuple | None = None
    # detach_prefix: the chunks its shared stream's stretches run in (1: whole), and the widest stretch's output
    # bytes per token, which chose it (``shared_stream_chunks``)
    shared_chunks: int = 1
    shared_bytes_per_token: float = 0.0
