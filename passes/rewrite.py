"""Rewrite a Dynamo FX graph into the packed layout, using the facts of ``analysis``.

The packed graph takes the original inputs plus the runtime plan's index tensors. Token inputs are gathered
to ``[1, N]``; every ``packed`` node runs on those N unique tokens (shape arguments naming the batch become 1
and those naming the sequence become N); each attention becomes ``replaycompile::tree_attention``; where a
packed value meets a ``row`` node it is replayed to ``[B, T, ...]``. A slice of the sequence axis (as the LM
head's ``logits_to_keep`` or a loss's ``logits[:, P-1:-1]``) packs the selected tokens again, so the
vocabulary projection runs once per unique selected token. A vocabulary gather with per-row targets
(``log_softmax(...).gather(-1, ids)``) reads the packed tensor directly instead of replaying it.
"""

from __future__ import annotations

import functools
import logging
import math
import operator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx

from replaycompile.kernels import packing as ops
from replaycompile.kernels import chunked_logprobs as _chunked_logprobs_module  # noqa: F401 - registers the op
from replaycompile.kernels import tree_attention as _tree_attention_module  # noqa: F401 - registers the op
from replaycompile.kernels.block_sparse_attention import default_blocks
from replaycompile.kernels.tree_attention_reference import dense_attention_reference
import replaycompile.kernels.ssd_tree  # noqa: F401 - registers replaycompile::mamba2_tree
import replaycompile.kernels.tree_scan  # noqa: F401 - registers replaycompile::gated_deltanet_tree

from . import key_selection
from .loss_weights import space_weights
from .nodes import LINEAR, B, BT, Kind, T, count, op_name, shape, slots, subgraph_module, val
from .region import GraphAnalysis, is_expand, is_reshape, packed_reshape
from .roles import NEW_TENSOR_NAMES
from .selected_tokens import selected_only, token_axis

log = logging.getLogger("replaycompile")

# Rows of logits per chunk of the fused LM head: about this many bytes of float32 logits at a time
LM_HEAD_CHUNK_BUFFER_BYTES = 64 << 20
# detach_prefix's shared stream (no autograd, nothing saved) runs each stretch of per-token ops between two
# attentions in chunks of its tokens, so a stretch's widest intermediates (the MLP's) exist for one chunk at a
# time: chunks of about this many bytes of the stretch's outputs, at most MAX_SHARED_CHUNKS (unrolled in the graph)
SHARED_CHUNK_BYTES = 64 << 20
MAX_SHARED_CHUNKS = 16

# The plan's tensors the packed graph takes, by attribute name of ``plan.ReplayPlan``, in order
PLAN_INPUTS = ("gather_index", "columns", "scatter_index", "subtree_end", "seg_q", "seg_kv_ptr", "kv_ranges")
# detach_prefix: the shared tokens (S) and the branch tokens (R) run as two streams (``plan.SharedSplit``)
SPLIT_INPUTS = ("gather_s", "columns_s", "gather_r", "columns_r", "scatter_index", "subtree_end_s", "seg_q_s",
                "seg_kv_ptr_s", "kv_ranges_s", "seg_q_r", "seg_kv_ptr_r", "kv_ranges_r")


def choose_blocks(a: GraphAnalysis, attention: str, device: str) -> tuple[int, int] | None:
    """Block sizes of the Triton tree attention, or None for the PyTorch path.

    ``attention="triton"`` always takes the kernels (on CPU tensors they run in the Triton interpreter: slow, for
    testing); ``"auto"`` takes them on CUDA; ``"torch"`` never. ``device``: the token inputs' device type."""
    if attention == "torch" or not a.attention or (attention == "auto" and device != "cuda"):
        return None
    node = a.attention[0].q
    q = val(node)
    if not isinstance(q, torch.Tensor):
        # block sizes only tune speed (any size is exact), but say which ones and why
        log.warning("replay: the query `%s` of the first attention carries no shape metadata; the Triton tree "
                    "attention uses the block sizes for head_dim 64 in float32, which may be slower (if the "
                    "model is not 64/float32, please report this graph)", node.name)
        return default_blocks(64, torch.float32, device)
    # the attention's output dtype: under autocast q is traced in float32 but the kernel runs in bf16/fp16
    out = val(a.attention[0].node)
    return default_blocks(int(q.shape[-1]), out.dtype if isinstance(out, torch.Tensor) else q.dtype, device)


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


class _Stream:
    """The packed tokens one copy of the per-token ops runs on: all of them (exact), or the shared (S) or the
    branch (R) tokens of detach_prefix. Per packed space (0 = all tokens, then one per slice): the token count,
    the columns and flat b*T+t of its tokens; and the stream's values of packed nodes."""

    def __init__(self, g: fx.Graph, name: str, gather, columns, no_grad: bool):
        self.name = name
        self.no_grad = no_grad          # S: every value from outside the stream enters detached
        self.n_tok = [g.call_method("size", (gather, 0))]
        self.cols = [columns]
        self.gath = [gather]
        self.sub_index: list = []       # per slice: this stream's selected tokens, as indices into space 0
        self.env: dict = {}             # packed node -> its value on this stream's tokens
        self.rows: dict = {}            # (row node, space) -> its values at this stream's packed tokens

    def add_slice(self, g: fx.Graph, index) -> None:
        self.sub_index.append(index)
        self.n_tok.append(g.call_method("size", (index, 0)))
        self.cols.append(g.call_function(torch.index_select, (self.cols[0], 0, index)))
        self.gath.append(g.call_function(torch.index_select, (self.gath[0], 0, index)))


def chunk_positions(columns, gather, scatter_index, gathers: list):
    """Each packed token's position from its row's first real token (chunked attention's positions: transformers
    counts chunks from there), from its column and its row (``gather`` = b * T + t). Rows that share a token
    share their left padding, so the row the plan took it from stands for all. ``gathers``: the plan's gather
    indices of every packed token (pads hold their count in ``scatter_index``)."""
    num_packed = sum(x.shape[0] for x in gathers)
    pads = (scatter_index >= num_packed).long().cumprod(1).sum(1)   # [B]: leading pads per row
    rows = torch.div(gather - columns, scatter_index.shape[1], rounding_mode="floor")
    return columns - pads.index_select(0, rows)


def tree_scan_call(kind: str = "gated_deltanet"):
    """The op the packed graph calls for a recurrent layer of ``kind`` (``recurrent.TreeScanSite.kind``) run on
    the prefix tree: opaque to the inner compiler (kernels/tree_scan.py, kernels/ssd_tree.py), so inductor
    compiles the graph around it."""
    return {"gated_deltanet": torch.ops.replaycompile.gated_deltanet_tree.default,
            "mamba2": torch.ops.replaycompile.mamba2_tree.default}[kind]


def rewrite(gm: fx.GraphModule, a: GraphAnalysis, detach_prefix: bool = False, attention: str = "torch",
            device: str = "cpu", chunked_lm_head: bool = True, windows: dict | None = None,
            tree_scan: dict | None = None, prune: bool = True, cp_group: str | None = None,
            shared_chunks: int | None = None, save_checkpointed_attention: bool = False) -> PackedGraph:
    """The packed graph of a graph the analysis accepted (``a.reason is None``); it never declines.

    ``attention``/``device``: the tree attention's implementation (``choose_blocks``); with the Triton kernels
    it runs on a block layout of the tree, six more inputs after the plan's.

    ``detach_prefix``: every per-token op runs twice, on the shared tokens with every outside input detached
    (so autograd saves nothing for them) and on the branch tokens with autograd; a branch token's attention
    reads the shared tokens' keys and values as constants. Where a value leaves the packed region the two are
    concatenated in the shared-first order the plan's scatter indices use.

    ``chunked_lm_head``: where the LM head's output is used only through ``log_softmax(-1).gather(-1, targets)``
    (``lm_head_chains``), the three run as ``replaycompile::chunked_logprobs`` on the (packed row, target) pairs,
    never holding [M, V] logits; the caller passes each such gather's pairs ("pairs" in ``extra_inputs``).

    ``windows``: attention node -> W, a sliding window the mask check verified at that site; its tree attention
    hides keys W or more columns before the query in the row (the plan's ``columns``), which keeps sharing
    exact when the window crosses a branch point.

    ``tree_scan``: module path -> ``recurrent.TreeScanSite``: those recurrent layers run as one
    ``replaycompile::gated_deltanet_tree`` call on the packed tokens (their per-row nodes are not copied).

    ``prune``: values read only at a slice's tokens (``selected_tokens.selected_only``: the last layer's queries,
    attention output and MLP, where the loss reads its positions) run on those tokens alone; the attention among
    them reads all keys with the queries of those tokens (the plan's ``query_segments``, "query_segments" in
    ``extra_inputs``). Exact mode on the PyTorch attention path only (the Triton kernels take queries and keys
    at the same tokens; detach_prefix's two streams keep their own layout).

    ``cp_group`` (the name of a process group): context parallelism. Every per-token op runs on this rank's
    packed tokens only (the "cp" inputs: its gather index and columns, then per space the padding and the order
    that put every rank's tokens back in packed order); each attention all-gathers keys and values and reads
    them with this rank's queries (``replaycompile.context_parallel``); a value that leaves the packed region is
    all-gathered first, so every rank computes the same loss (the gathers' backward sums over the ranks: each
    rank's parameter gradients are its tokens' share times the group size, and averaging them over the group, as
    DDP and FSDP2 do, gives the batch's gradient). The caller asks for it only in exact mode on the PyTorch
    attention path, with ``chunked_lm_head`` off and no recurrent layers; with ``prune`` the last layer runs at the
    rank's tokens of the loss's slice (queries there, every rank's keys).

    ``shared_chunks`` (detach_prefix): each stretch of the shared stream's per-token ops between two attentions
    runs on that many chunks of the shared tokens, one after the other (``torch.tensor_split``, outputs
    concatenated: the same values), so its intermediates exist for one chunk at a time; None picks it from the
    traced batch (``shared_stream_chunks``), 1 turns it off.

    ``save_checkpointed_attention``: in an activation-checkpointed layer the tree attention's output and
    log-sum-exp are saved for the backward (``CheckpointPolicy.MUST_SAVE``) and its queries, keys and values
    recomputed, instead of recomputing the attention too (the backend option ``checkpoint_attention="save"``)."""
    assert a.reason is None, a.reason
    if cp_group is not None:
        assert not chunked_lm_head and not tree_scan, "context parallelism: declined by the backend"
        attention = "torch"
    scan_sites = {s.output: s for s in (tree_scan or {}).values()}
    scan_inside = {n for s in scan_sites.values() for n in s.inside}
    blocks = choose_blocks(a, attention, device)
    g = fx.Graph()
    row_env: dict = {}
    old_nodes = list(gm.graph.nodes)
    for n in old_nodes:
        if n.op == "placeholder":
            row_env[n] = g.placeholder(n.name, type_expr=n.type)
    names = SPLIT_INPUTS if detach_prefix else PLAN_INPUTS
    plan = {name: g.placeholder(f"rc_{name}") for name in names}
    extra: list[PackedInput] = [PlanInputs(split=detach_prefix)]
    layout = [g.placeholder(f"rc_layout_{i}") for i in range(6)] if blocks is not None else []
    if blocks is not None:
        extra.append(LayoutInputs())
    block_q, block_k = blocks if blocks is not None else (0, 0)
    if detach_prefix:
        shared = plan["gather_s"], plan["columns_s"]
        if cp_group is not None:
            # the shared tokens split over the ranks (this rank's: "cp_shared"), the branch tokens whole on each
            cp_in = {name: g.placeholder(f"rc_cp_{name}_s") for name in ("gather", "columns", "pad", "order")}
            cp_qseg = [g.placeholder(f"rc_cp_qseg_s_{i}") for i in range(3)]
            extra.append(ShardInputs(shared=True))
            shared = cp_in["gather"], cp_in["columns"]
            cp_space = [(cp_in["pad"], cp_in["order"])]
            cp_local_scatter = {}
        streams = [_Stream(g, "S", *shared, no_grad=True),
                   _Stream(g, "R", plan["gather_r"], plan["columns_r"], no_grad=False)]
        no_subtree = g.call_function(torch.empty, ((0,),), {"dtype": torch.int64})
    elif cp_group is not None:
        # this rank's tokens; per space, the padding to the longest rank's count and every token's place in the
        # gathered layout (ContextShards.order)
        cp_in = {name: g.placeholder(f"rc_cp_{name}") for name in ("gather", "columns", "pad", "order")}
        cp_qseg = [g.placeholder(f"rc_cp_qseg_{i}") for i in range(3)]
        extra.append(ShardInputs())
        streams = [_Stream(g, "all", cp_in["gather"], cp_in["columns"], no_grad=False)]
        cp_space = [(cp_in["pad"], cp_in["order"])]
        cp_local_scatter = {}  # slice space -> [B, K] the rank's own index of each position's token (n_r: not its)
    else:
        streams = [_Stream(g, "all", plan["gather_index"], plan["columns"], no_grad=False)]
    scat = [plan["scatter_index"]]
    for sl in a.slices:
        for st in streams:
            st.add_slice(g, g.placeholder(f"rc_sub{sl.space}_index_{st.name}"))
        scat.append(g.placeholder(f"rc_sub{sl.space}_scatter"))
        extra.append(SliceInputs(sl.space, sl.start, sl.stop))
        if cp_group is not None:
            cp_space.append((g.placeholder(f"rc_cp_sub{sl.space}_pad"), g.placeholder(f"rc_cp_sub{sl.space}_order")))
            if not detach_prefix:
                cp_local_scatter[sl.space] = g.placeholder(f"rc_cp_sub{sl.space}_local_scatter")
    sites = {s.node: s for s in a.attention}
    sel, sel_space = {}, None
    if prune and not detach_prefix and blocks is None:
        excluded = set(scan_sites) | scan_inside | set(windows or {}) | a.routing.nodes() | \
            {s.node for s in a.attention if s.selection is not None}
        sel, sel_space = selected_only(a, sites, excluded)
    if sel:
        qseg = [g.placeholder(f"rc_sub{sel_space}_qseg_{i}") for i in range(3)]
        extra.append(QuerySegmentInputs(sel_space))
        no_subtree_sel = g.call_function(torch.empty, ((0,),), {"dtype": torch.int64})
    runs: dict = {}  # shared-stream node -> the stretch of per-token nodes it ends (detach_prefix, chunked)
    if detach_prefix:
        stretches = _shared_stretches(old_nodes, a, sites)
        width = stretch_bytes_per_token(a, stretches)
        if shared_chunks is None:
            shared_chunks = shared_stream_chunks(a, stretches, 1 if cp_group is None else _world_size(cp_group))
        if shared_chunks > 1:
            runs = {r[-1]: r for r in stretches}
            count("shared_stream_stretches_chunked", len(runs))
            log.info("replay: detach_prefix runs the shared tokens' per-token ops in %d chunks (%d stretches "
                     "between attentions)", shared_chunks, len(runs))
    in_run = {x for r in runs.values() for x in r}
    # the keys and values GQA's repeat_kv expanded (the detached attention below reads the source, kv heads only):
    # a chunked stretch joins the source, never the repeated copy, which would be saved for the branch backward
    kv_source = {x: src for s in sites.values() for x in (s.k, s.v)
                 if (src := _repeat_kv_source(x)) is not None} if runs else {}
    kv_read = set(kv_source.values())
    chains = lm_head_chains(gm, a) if chunked_lm_head else {}
    pairs = {}
    for i, (gather, (h, _, _, _)) in enumerate(chains.items()):
        # per stream: the flat (b, k) of each valid pair, its row among the unique rows the pairs read, and those
        # rows (packed indices of the space, sorted)
        pairs[gather] = [(g.placeholder(f"rc_pairs{i}_flat_{st.name}"), g.placeholder(f"rc_pairs{i}_local_{st.name}"),
                          g.placeholder(f"rc_pairs{i}_rows_{st.name}")) for st in streams]
        extra.append(PairInputs(a.space[h]))
    detached: dict = {}
    selection_env: dict = {}  # key-selection nodes emitted on the packed tokens (sites may share them)

    def full(x, sp):
        """A packed node's values on all packed tokens of its space (streams concatenated; every rank's tokens
        gathered under context parallelism)."""
        vals = [st.env[x] for st in streams]
        if cp_group is not None:
            axis = a.roles[x].index(T) if T in a.roles[x] else a.roles[x].index(BT)
            pad, order = cp_space[sp]
            vals[0] = g.call_function(ops.cp_gather, (vals[0], axis, pad, order, cp_group))
        if len(vals) == 1:
            return vals[0]
        return g.call_function(torch.cat, (vals, a.roles[x].index(T) if T in a.roles[x] else a.roles[x].index(BT)))

    def get_row(x):
        if not isinstance(x, fx.Node):
            return x
        if x in row_env:
            return row_env[x]
        if x in streams[0].env:
            r = a.roles[x]
            sp = a.space[x]
            pn = full(x, sp)
            if B in r:
                val = g.call_function(ops.replay, (pn, scat[sp], r.index(B), r.index(T)))
            elif BT in r:
                val = g.call_function(ops.replay, (pn, scat[sp], None, r.index(BT)))
            else:
                raise AssertionError(f"node `{x.name}` has no batch axis to replay to (region._check_layout)")
            row_env[x] = val
            return val
        # lazily copy a row node that nothing copied yet (e.g. a mask node shared with positions)
        row_env[x] = g.node_copy(x, get_row)
        row_env[x].meta = _kept_meta(x)
        return row_env[x]

    def no_grad(v, x):
        if not isinstance(val(x), torch.Tensor):
            return v
        if v not in detached:
            detached[v] = g.call_method("detach", (v,))
        return detached[v]

    def get_packed(x, sp, st: _Stream):
        if not isinstance(x, fx.Node):
            return x
        if x in st.env:
            return st.env[x]
        if x in scan_sites:
            # a recurrent layer run on the prefix tree: its packed output straight from its packed input
            key = (x, sp)
            if key not in st.rows:
                site = scan_sites[x]
                st.rows[key] = g.call_function(
                    tree_scan_call(site.kind),
                    (st.env[site.hidden], [get_row(w) for w in site.weights], plan["scatter_index"],
                     plan["gather_index"], plan["seg_q"], *site.sizes))
            return st.rows[key]
        r = a.roles.get(x)
        positional = r is not None and T in r and B not in r and BT not in r
        if x in a.tokenfn or positional:
            # gatherable row values: token-input functions (by row and column) and positional tables (by column)
            key = (x, sp)
            if key not in st.rows:
                if BT in r:  # a flattened [B*T] axis: its index is b*T + t, which gather_index holds
                    v = g.call_function(torch.index_select, (get_row(x), r.index(BT), st.gath[sp]))
                else:
                    bdim = r.index(B) if B in r else None
                    v = g.call_function(ops.pack_rows, (get_row(x), bdim, r.index(T), st.gath[sp], st.cols[sp]))
                st.rows[key] = no_grad(v, x) if st.no_grad else v
            return st.rows[key]
        v = get_row(x)
        return no_grad(v, x) if st.no_grad else v

    # continuation inputs (activations a graph break passed on): gathered to the packed tokens on entry; their
    # entries at two (b, t) that share a packed token are equal, which the caller checked or knows
    for p, r in a.seeded.items():
        for st in streams:
            v = g.call_function(ops.pack_rows, (row_env[p], r.index(B) if B in r else None, r.index(T),
                                                st.gath[0], st.cols[0]))
            st.env[p] = no_grad(v, p) if st.no_grad else v

    def to_selected(x, st: _Stream):
        """A value as a node computed on the selected tokens (space ``sel_space``) reads it."""
        if not isinstance(x, fx.Node):
            return x
        if x in sel:
            return st.env[x]
        if x in st.env or x in scan_sites:
            key = (x, "selected")
            if key not in st.rows:
                v = st.env[x] if x in st.env else get_packed(x, 0, st)
                axis = token_axis(a, x)
                st.rows[key] = v if axis is None else g.call_function(
                    torch.index_select, (v, axis, st.sub_index[sel_space - 1]))
            return st.rows[key]
        return get_packed(x, sel_space, st)

    def emit_chunked_stretch(stretch: list) -> None:
        """The shared stream's copy of ``stretch`` (per-token nodes, in order) on ``shared_chunks`` chunks of its
        tokens; a value read after the stretch is the concatenation of its chunks."""
        st, members = streams[0], set(stretch)
        pieces: dict = {}  # outside value -> its chunks (None: no token axis, read whole)
        sizes = g.call_function(torch.tensor_split, (st.gath[0], shared_chunks))
        chunk_envs = []
        for j in range(shared_chunks):
            env: dict = {}

            def arg(x, env=env, j=j):
                if not isinstance(x, fx.Node):
                    return x
                if x in env:
                    return env[x]
                if x not in pieces:
                    v = get_packed(x, 0, st)
                    axis = token_axis(a, x)
                    per_token = axis is not None and (x in st.env or (x, 0) in st.rows)
                    pieces[x] = g.call_function(torch.tensor_split, (v, shared_chunks, axis)) if per_token else v
                    pieces[x, "split"] = per_token
                if not pieces[x, "split"]:
                    return pieces[x]
                env[x] = g.call_function(operator.getitem, (pieces[x], j))
                return env[x]

            n_tok = g.call_method("size", (g.call_function(operator.getitem, (sizes, j)), 0))
            for x in stretch:
                env[x] = _emit_packed(g, x, a, arg, n_tok, st.sub_index)
            chunk_envs.append(env)
        for x in stretch:
            outside = [u for u in x.users if u not in members]
            if x in kv_source and kv_source[x] in members and outside and all(u in sites for u in outside):
                continue  # the attention reads the keys before repeat_kv: the repeated ones are never joined
            if outside or x in kv_read:
                st.env[x] = g.call_function(torch.cat, ([e[x] for e in chunk_envs], token_axis(a, x)))

    pending = None  # (the graph's last node before a packed node was emitted, that node): see _tag_since
    for n in old_nodes:
        if pending is not None:
            _tag_since(*pending)
            pending = None
        if n.op in ("placeholder", "output"):
            continue
        k = a.kind.get(n)
        if k in (Kind.MASK, Kind.INTERNAL) or n in scan_inside:
            continue
        if k == Kind.ROW:
            if n in chains:
                h, w, bias, dtype = chains[n]
                # the shared rows' logits are constants under detach_prefix: their pairs read a detached head
                parts = [(flat, local, rows, no_grad(get_row(w), w) if st.no_grad else get_row(w),
                          no_grad(get_row(bias), bias) if st.no_grad and bias is not None else get_row(bias))
                         for st, (flat, local, rows) in zip(streams, pairs[n])]
                row_env[n] = _emit_chunked_logprobs(g, n, shape(w), full(h, a.space[h]), parts,
                                                    get_row(_gather_args(n)[2]), scat[a.space[h]], dtype)
                continue
            if n in a.boundaries and _is_vocab_gather(n, a) and cp_group is not None and \
                    a.space[_gather_args(n)[0]] in cp_local_scatter:
                # each rank gathers its own tokens' log-probs (zeros elsewhere) and the ranks' results are summed:
                # the logits never leave the rank (no [M, V] gather)
                base, dim, index = _gather_args(n)
                sp = a.space[base]
                x = _fused_log_softmax_input(base, a)
                local = cp_local_scatter[sp]
                if x is not None and x in streams[0].env:
                    part = g.call_function(ops.replay_log_softmax_gather, (streams[0].env[x], local, get_row(index)))
                else:
                    part = g.call_function(ops.replay_gather, (streams[0].env[base], local, get_row(index)))
                row_env[n] = g.call_function(ops.cp_sum, (part, cp_group))
                count("context_parallel_local_logprobs")
                continue
            if n in a.boundaries and _is_vocab_gather(n, a):
                base, dim, index = _gather_args(n)
                sp = a.space[base]
                x = _fused_log_softmax_input(base, a)
                if x is not None and all(x in st.env for st in streams):
                    # the log-softmax is read only here: fused with the gather (its [N, V] output never exists)
                    row_env[n] = g.call_function(ops.replay_log_softmax_gather, (full(x, sp), scat[sp],
                                                                                 get_row(index)))
                else:
                    row_env[n] = g.call_function(ops.replay_gather, (full(base, sp), scat[sp], get_row(index)))
                continue
            if n not in row_env:
                get_row(n)
            continue
        sp = a.space[n]
        pending = (_last_node(g), n)
        if n in sel:
            st = streams[0]
            if n in sites:  # queries at the selected tokens, keys and values at all
                s = sites[n]
                sinks = None if s.sinks is None else get_row(s.sinks)
                tail = (None, 0, s.softcap, sinks) if sinks is not None else (None, 0, s.softcap) if s.softcap \
                    else ()
                if cp_group is not None:
                    # the rank's selected queries over every rank's keys and values
                    pad, order = cp_space[0]
                    res = g.call_function(torch.ops.replaycompile.cp_tree_attention.default,
                                          (to_selected(s.q, st), get_packed(s.k, 0, st), get_packed(s.v, 0, st),
                                           pad, order, *qseg, s.scale, cp_group) + tail)
                    st.env[n] = g.call_function(operator.getitem, (res, 0))
                    continue
                res = g.call_function(torch.ops.replaycompile.tree_attention.default,
                                      (to_selected(s.q, st), get_packed(s.k, 0, st), get_packed(s.v, 0, st),
                                       no_subtree_sel, *qseg,
                                       s.scale, [], 0, 0) + tail)
                st.env[n] = g.call_function(operator.getitem, (res, 0))
            else:
                st.env[n] = _emit_packed(g, n, a, lambda x, st=st: to_selected(x, st), st.n_tok[sel_space],
                                         st.sub_index, sel)
            continue
        if n in sites:
            s = sites[n]
            window = (windows or {}).get(n, 0)

            def extras(cols, st: _Stream, gather=None):
                """The op's trailing arguments (positions, window, softcap, sinks), as far as the site needs them;
                the shared stream of detach_prefix reads the sinks detached, as every outside input. A chunk
                (window -C) reads positions from each row's first real token (``gather``: the keys' b * T + t)."""
                sinks = None if s.sinks is None else get_row(s.sinks)
                sinks = no_grad(sinks, s.sinks) if sinks is not None and st.no_grad else sinks
                if window < 0:
                    every = [plan["gather_s"], plan["gather_r"]] if detach_prefix else [plan["gather_index"]]
                    cols = g.call_function(chunk_positions, (cols, gather, plan["scatter_index"], every))
                tail = (cols if window else None, window, s.softcap, sinks)
                while tail and tail[-1] in (None, 0, 0.0):  # defaults left out, as before sinks and softcap
                    tail = tail[:-1]
                return tail
            if s.selection is not None:
                # top-k keys per query: the selection's mask on the packed tokens, then dense attention with it
                assert not detach_prefix, "declined by the backend"
                st = streams[0]
                cols = plan["columns"] if window > 0 else g.call_function(
                    chunk_positions, (plan["columns"], plan["gather_index"], plan["scatter_index"],
                                      [plan["gather_index"]])) if window < 0 else None
                m = val(s.selection.base)
                vis = g.call_function(key_selection.visibility, (plan["subtree_end"], cols, window, m.dim(), m.dtype))
                mask = key_selection.emit(g, s.selection, vis, st.n_tok[0], lambda x, st=st: get_packed(x, 0, st),
                                          get_row, selection_env)
                q, kk, v = (get_packed(x, 0, st) for x in (s.q, s.k, s.v))
                if s.softcap or s.sinks is not None:
                    res = g.call_function(dense_attention_reference,
                                          (q, kk, v, mask, s.scale, s.softcap, get_row(s.sinks)))
                    st.env[n] = g.call_function(operator.getitem, (res, 0))
                    continue
                gqa = int(shape(s.q)[1]) != int(shape(s.k)[1]) if all(
                    isinstance(shape(x)[1], int) for x in (s.q, s.k)) else True
                st.env[n] = g.call_function(torch.nn.functional.scaled_dot_product_attention, (q, kk, v),
                                            {"attn_mask": mask, "scale": s.scale, "enable_gqa": gqa})
                continue
            if detach_prefix:
                # keys and values before GQA's repeat_kv where the model repeats them (the op reads kv head
                # h // (Hq / Hkv) itself): the branch backward saves the shared K/V once, not once per query head
                kv = [_repeat_kv_source(x) for x in (s.k, s.v)]
                kv = [x if x is not None and all(x in st.env for st in streams) else y for x, y in zip(kv, (s.k, s.v))]
                (qs, ks, vs), (qr, kr, vr) = ([st.env[x] for x in (s.q, *kv)] for st in streams)
                if cp_group is not None:
                    # the rank's shared queries over every rank's shared keys; the branch queries over those
                    # (gathered again in backward: constants, never saved whole) and the branch keys
                    pad, order = cp_space[0]
                    res = g.call_function(torch.ops.replaycompile.cp_tree_attention.default,
                                          (qs, ks, vs, pad, order, *cp_qseg, s.scale, cp_group)
                                          + extras(plan["columns_s"], streams[0], plan["gather_s"]))
                    streams[0].env[n] = g.call_function(operator.getitem, (res, 0))
                    cols_all = g.call_function(torch.cat, ([plan["columns_s"], plan["columns_r"]],)) if window \
                        else None
                    gath_all = g.call_function(torch.cat, ([plan["gather_s"], plan["gather_r"]],)) if window < 0 \
                        else None
                    res = g.call_function(torch.ops.replaycompile.cp_branch_attention.default,
                                          (qr, ks, vs, kr, vr, pad, order, plan["seg_q_r"], plan["seg_kv_ptr_r"],
                                           plan["kv_ranges_r"], s.scale, cp_group)
                                          + extras(cols_all, streams[1], gath_all))
                    streams[1].env[n] = g.call_function(operator.getitem, (res, 0))
                    continue
                res = g.call_function(torch.ops.replaycompile.tree_attention.default,
                                      (qs, ks, vs, plan["subtree_end_s"], plan["seg_q_s"], plan["seg_kv_ptr_s"],
                                       plan["kv_ranges_s"], s.scale, layout, block_q, block_k)
                                      + extras(plan["columns_s"], streams[0], plan["gather_s"]))
                streams[0].env[n] = g.call_function(operator.getitem, (res, 0))
                # the branch queries see the shared keys (constants here) followed by their own
                k_all = g.call_function(torch.cat, ([ks, kr], 2))
                v_all = g.call_function(torch.cat, ([vs, vr], 2))
                cols_all = g.call_function(torch.cat, ([plan["columns_s"], plan["columns_r"]],)) if window else None
                gath_all = g.call_function(torch.cat, ([plan["gather_s"], plan["gather_r"]],)) if window < 0 else None
                res = g.call_function(torch.ops.replaycompile.tree_attention.default,
                                      (qr, k_all, v_all, no_subtree, plan["seg_q_r"], plan["seg_kv_ptr_r"],
                                       plan["kv_ranges_r"], s.scale, [], 0, 0) + extras(cols_all, streams[1],
                                                                                          gath_all))
                streams[1].env[n] = g.call_function(operator.getitem, (res, 0))
                continue
            st = streams[0]
            q, kk, v = (get_packed(x, 0, st) for x in (s.q, s.k, s.v))
            if cp_group is not None:
                # this rank's queries over every rank's keys and values (the segment CSR of its tokens)
                # (context_parallel.py: the op gathers them in forward and again in backward, so no layer keeps
                # more than the rank's own K/V); a window reads the keys' positions (all tokens'), each query's
                # is its own key's
                pad, order = cp_space[0]
                res = g.call_function(torch.ops.replaycompile.cp_tree_attention.default,
                                      (q, kk, v, pad, order, *cp_qseg, s.scale, cp_group)
                                      + extras(plan["columns"], st, plan["gather_index"]))
                st.env[n] = g.call_function(operator.getitem, (res, 0))
                continue
            res = g.call_function(torch.ops.replaycompile.tree_attention.default,
                                  (q, kk, v, plan["subtree_end"], plan["seg_q"], plan["seg_kv_ptr"],
                                   plan["kv_ranges"], s.scale, layout, block_q, block_k)
                                  + extras(plan["columns"], st, plan["gather_index"]))
            st.env[n] = g.call_function(operator.getitem, (res, 0))
            continue
        for st in streams:
            if n in in_run and st is streams[0]:
                continue  # the shared stream's copy comes with its stretch's chunks
            st.env[n] = _emit_packed(g, n, a, lambda x, st=st: get_packed(x, sp, st), st.n_tok[sp], st.sub_index,
                                     sel)
        if n in runs:
            emit_chunked_stretch(runs[n])

    if pending is not None:
        _tag_since(*pending)
    if save_checkpointed_attention:
        _save_checkpointed_attention(g)
    out_node = next(x for x in old_nodes if x.op == "output")
    g.output(fx.node.map_arg(out_node.args[0], get_row))
    g.eliminate_dead_code(is_impure_node=_keeps)
    new_gm = fx.GraphModule(gm, g)
    new_gm.recompile()
    vocab = max((int(shape(w)[0]) for _, w, _, _ in chains.values()), default=0)
    weights = _space_weights(gm, a, old_nodes) if not detach_prefix and cp_group is None and a.slices else None
    head_spaces = tuple(a.space[_gather_args(n)[0]] for n in old_nodes
                        if a.kind.get(n) == Kind.ROW and n in a.boundaries and _is_vocab_gather(n, a))
    bound_nodes = [x for sl in a.slices for x in (sl.start, sl.stop) if isinstance(x, fx.Node)]
    _count_rewrites(new_gm)
    count("sequence_slices_repacked", len(a.slices))
    n_sel_attention = sum(1 for x in sel if x in sites)
    if sel:
        count("selected_only_nodes", len(sel))
        count("attention_queries_selected", n_sel_attention)
        log.info("replay: %d values run only at the %s's selected tokens, %d attention(s) among them with queries "
                 "there only (nothing else reads them at the other tokens)", len(sel), _slice_name(a, sel_space),
                 n_sel_attention)
    if weights is not None and weights.keep:
        count("loss_weighted_spaces", len(weights.keep))
        log.info("replay: the loss weighs %s by runtime masks: positions whose weights are zero are not computed",
                 ", ".join(f"the {_slice_name(a, sp)}'s tokens" for sp in sorted(weights.keep)))
    if cp_group is not None:
        count("context_parallel_graphs")
    return PackedGraph(new_gm, detach_prefix, blocks, tuple(extra), len(chains), vocab,
                       subgraph_module(gm, bound_nodes) if bound_nodes else None, _row_outputs(out_node, a),
                       len(sel), n_sel_attention,
                       space_keep=dict(weights.keep) if weights is not None else {},
                       weights_gm=subgraph_module(gm, weights.nodes) if weights is not None and weights.keep
                       else None, head_spaces=head_spaces,
                       shared_chunks=shared_chunks if runs else 1, shared_bytes_per_token=width if detach_prefix else 0.0)


def _space_weights(gm: fx.GraphModule, a: GraphAnalysis, nodes: list):
    """``loss_weights.space_weights`` of the graph: where each slice space's values leave the packed region."""
    exits: dict = {sl.space: [] for sl in a.slices}
    for n in nodes:
        if n.op == "output":
            for x in n.all_input_nodes:
                if a.kind.get(x) == Kind.PACKED and a.space.get(x) in exits:
                    exits[a.space[x]].append((None, None))
            continue
        if a.kind.get(n) != Kind.ROW:
            continue
        for x in n.all_input_nodes:
            if a.kind.get(x) != Kind.PACKED or a.space.get(x) not in exits:
                continue
            gathered = _is_vocab_gather(n, a) and _gather_args(n)[0] is x
            r = a.roles.get(x)
            if not gathered and (r is None or tuple(r[:2]) != (B, T)):
                exits[a.space[x]].append((None, None))  # positions not laid out [B, K, ...]: keep them all
                continue
            exits[a.space[x]].append((n, None if gathered else x))
    return space_weights(gm, a, exits)


def _slice_name(a: GraphAnalysis, space: int) -> str:
    sl = next(s for s in a.slices if s.space == space)
    return f"slice `{sl.node.name}`"


def _row_outputs(out_node: fx.Node, a: GraphAnalysis) -> tuple:
    out = out_node.args[0]
    out = out if isinstance(out, (tuple, list)) else (out,)
    rows = []
    for i, x in enumerate(out):
        r = a.roles.get(x) if isinstance(x, fx.Node) else None
        if a.kind.get(x) == Kind.PACKED and a.space.get(x) == 0 and r is not None and B in r and T in r:
            rows.append((i, r.index(B), r.index(T)))
    return tuple(rows)


_TREE_ATTENTION = torch.ops.replaycompile.tree_attention.default
_CHUNKED_LOGPROBS = torch.ops.replaycompile.chunked_pair_logprobs.default


def _count_rewrites(gm: fx.GraphModule) -> None:
    """What the packed graph holds, once dead code is gone: ``counters["replay"]``."""
    calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    count("packed_graphs")
    count("attention_sites_rewritten", calls.count(_TREE_ATTENTION))
    # attentions narrowed to top-k keys per query (passes/key_selection.py): dense attention on the packed tokens
    count("attention_sites_key_selection", calls.count(torch.nn.functional.scaled_dot_product_attention) +
          calls.count(dense_attention_reference))
    count("replays_inserted", calls.count(ops.replay))
    count("vocab_gathers", calls.count(ops.replay_gather) + calls.count(ops.replay_log_softmax_gather))
    count("vocab_gathers_log_softmax_fused", calls.count(ops.replay_log_softmax_gather))
    count("lm_head_chunked_sites", calls.count(_CHUNKED_LOGPROBS))
    count("token_inputs_packed", calls.count(ops.pack_rows))
    count("recurrent_tree_scan_calls", calls.count(tree_scan_call()) + calls.count(tree_scan_call("mamba2")))


def _keeps(n: fx.Node) -> bool:
    """Nodes dead code elimination must keep: FX's impure ones and in-place methods, whose result is often
    unused while their write is read through the tensor they change (GPT-OSS's ``out.add_(bias)``)."""
    return n.is_impure() or (n.op == "call_method" and isinstance(n.target, str) and n.target.endswith("_")
                             and not n.target.startswith("_")) or \
        (n.op == "call_function" and n.target is operator.setitem)  # x[:, t] = h_t (RecurrentGemma's scan)


def _repeat_kv_source(x):
    """The keys (or values) that GQA's ``repeat_kv`` repeated into ``x`` (the Hugging Face form
    ``k[:, :, None, :, :].expand(b, hkv, n_rep, t, d).reshape(b, hkv * n_rep, t, d)``), or None where ``x`` is
    not that: query head h of the result reads head h // n_rep of the source."""
    if not (isinstance(x, fx.Node) and op_name(x) in ("reshape", "view") and x.args):
        return None
    e = x.args[0]
    if not (isinstance(e, fx.Node) and op_name(e) == "expand" and e.args):
        return None
    gi = e.args[0]
    if not (isinstance(gi, fx.Node) and gi.op == "call_function" and gi.target is operator.getitem):
        return None
    src, idx = gi.args
    full = slice(None, None, None)
    if not (isinstance(src, fx.Node) and idx in ((full, full, None, full, full), (full, full, None, Ellipsis),
                                                  (full, full, None))):
        return None
    s_src, s_exp, s_out = shape(src), shape(e), shape(x)
    if not (s_src is not None and s_exp is not None and s_out is not None
            and len(s_src) == 4 and len(s_exp) == 5 and len(s_out) == 4
            and all(isinstance(v, int) for v in (s_src[1], s_exp[1], s_exp[2], s_out[1]))
            and s_exp[1] == s_src[1] and s_out[1] == s_src[1] * s_exp[2]):
        return None
    return src


def _single_user(x: fx.Node) -> bool:
    return len(x.users) == 1


def _log_softmax_input(n: fx.Node):
    """x if ``n`` is ``log_softmax(x, dim=-1)`` (method, torch or F form; no dtype), else None."""
    if op_name(n) != "log_softmax" or not n.args:
        return None
    args = list(n.args[1:])
    dim = n.kwargs.get("dim", args[0] if args else None)
    dtype = n.kwargs.get("dtype", args[1] if len(args) > 1 else None)
    x = n.args[0]
    rank = len(shape(x) or ())
    if dtype is not None or dim not in (-1, rank - 1) or not isinstance(x, fx.Node):
        return None
    return x


def _fused_log_softmax_input(base: fx.Node, a: GraphAnalysis):
    """x where the vocabulary gather's ``base`` is ``log_softmax(x, -1)`` read by that gather alone, packed in
    the same space, in float32 or float64 (the same dtype in and out: not an autocast upcast), so that
    ``ops.replay_log_softmax_gather`` can take x in its place; else None."""
    x = _log_softmax_input(base) if isinstance(base, fx.Node) else None
    if x is None or not _single_user(base) or a.kind.get(x) != Kind.PACKED or a.space.get(x) != a.space.get(base):
        return None
    vx, vb = val(x), val(base)
    if not (isinstance(vx, torch.Tensor) and isinstance(vb, torch.Tensor) and vx.dtype == vb.dtype
            and vx.dtype in (torch.float32, torch.float64)):
        return None
    return x


def lm_head_chains(gm: fx.GraphModule, a: GraphAnalysis) -> dict:
    """Vocabulary gathers that read the LM head only through a log-softmax: ``gather(log_softmax(
    [float...](linear(h, W, b)), -1), -1, targets)`` where each intermediate has that one user and the targets
    have one per position. gather node -> (h, W, b or None, dtype): ``dtype`` is the one the linear computed in,
    its output's (under autocast that is the autocast dtype, whatever h and W are): the chunked op gets h, W and
    b cast to it, so it is exact wherever it lands relative to an autocast region. Where autocast cast the
    linear, the log-softmax must run in the op's float32 (a ``.float()`` before it, or an autocast rule that
    upcasts it, as on CUDA), else the chain keeps the plain path: CPU autocast runs a bf16 log-softmax."""
    out = {}
    for n in gm.graph.nodes:
        if a.kind.get(n) != Kind.ROW or n not in a.boundaries or not _is_vocab_gather(n, a):
            continue
        base, _, index = _gather_args(n)
        idx_shape = shape(index)
        if idx_shape is None or idx_shape[-1] != 1 or not _single_user(base):
            continue
        x = _log_softmax_input(base)
        if x is None or not _single_user(x):
            continue
        ok = True
        while op_name(x) in ("float", "to") and len(x.args) >= 1 and isinstance(x.args[0], fx.Node):
            v, vx = val(x), val(x.args[0])
            if not (isinstance(v, torch.Tensor) and isinstance(vx, torch.Tensor) and v.dtype == torch.float32
                    and v.shape == vx.shape) or not _single_user(x.args[0]):
                ok = False
                break
            x = x.args[0]
        if not ok or x.op != "call_function" or x.target not in LINEAR:
            continue
        h = x.args[0]
        w = x.kwargs.get("weight", x.args[1] if len(x.args) > 1 else None)
        bias = x.kwargs.get("bias", x.args[2] if len(x.args) > 2 else None)
        vh, vw, vx, vb = val(h), val(w), val(x), val(bias)
        if not (isinstance(vh, torch.Tensor) and isinstance(vw, torch.Tensor) and isinstance(vx, torch.Tensor)
                and vw.dim() == 2 and a.kind.get(h) == Kind.PACKED and a.kind.get(w) != Kind.PACKED
                and isinstance(vw.shape[1], int) and vx.is_floating_point()
                and vh.is_floating_point() and vw.is_floating_point()):
            continue
        dtype = vx.dtype
        cast = {vh.dtype, vw.dtype} | ({vb.dtype} if isinstance(vb, torch.Tensor) else set())
        if cast != {dtype}:  # autocast chose the linear's dtype
            vs = val(base)
            if torch.float64 in cast or not isinstance(vs, torch.Tensor) or \
                    vs.dtype != torch.promote_types(dtype, torch.float32):
                continue
        out[n] = (h, w, bias, dtype)
    return out


def lm_head_chunk_rows(vocab: int) -> int:
    """Rows per chunk of the chunked LM head: a power of two near LM_HEAD_CHUNK_BUFFER_BYTES of fp32 logits, at most
    4096 (the memory model reads the same rule)."""
    return min(4096, 1 << max(0, (LM_HEAD_CHUNK_BUFFER_BYTES // (4 * max(vocab, 1))).bit_length() - 1))


def _emit_chunked_logprobs(g: fx.Graph, n: fx.Node, w_shape, h, parts, index, scatter, dtype) -> fx.Node:
    """``gather(log_softmax(linear(h)), -1, index)`` at the valid (row, position) pairs of ``scatter``, zeros at
    pads, shaped like ``index``: the LM head runs once on each unique packed row the pairs read (a shared
    last-prompt row once, however many branches read it), ``chunk`` rows at a time, in ``dtype`` (the replaced
    linear's; h, weight and bias are cast to it where autocast cast them). ``parts``: (pair_flat, pair_local,
    unique rows, weight, bias) per stream."""
    vocab, hidden = int(w_shape[0]), int(w_shape[1])
    chunk = lm_head_chunk_rows(vocab)
    h2 = g.call_method("reshape", (h, (-1, hidden)))
    idx = g.call_method("reshape", (index, (-1,)))
    out = None
    for pair_flat, pair_local, uniq, w, bias in parts:
        rows = _to(g, g.call_function(torch.index_select, (h2, 0, uniq)), dtype)
        w, bias = _to(g, w, dtype), _to(g, bias, dtype)
        targets = g.call_function(torch.index_select, (idx, 0, pair_flat))
        res = g.call_function(torch.ops.replaycompile.chunked_pair_logprobs.default,
                              (rows, w, bias, pair_local, targets, chunk, 0.0))
        logp = g.call_method("to", (g.call_function(operator.getitem, (res, 0)), val(n).dtype))
        if out is None:
            out = g.call_method("new_zeros", (logp, (g.call_method("numel", (scatter,)),)))
        out = g.call_method("index_copy", (out, 0, pair_flat, logp))
    return g.call_method("view_as", (out, index))


def _to(g: fx.Graph, x, dtype):
    """``x.to(dtype)`` where ``x`` (a node of the new graph, or None) may hold another dtype; a no-op there."""
    return x if x is None else g.call_method("to", (x, dtype))


def _is_vocab_gather(n: fx.Node, a: GraphAnalysis) -> bool:
    if op_name(n) != "gather":
        return False
    base, dim, index = _gather_args(n)
    r = a.roles.get(base)
    return (a.kind.get(base) == Kind.PACKED and r is not None and len(r) == 3 and r[:2] == (B, T)
            and dim in (-1, 2) and isinstance(index, fx.Node) and a.kind.get(index) == Kind.ROW)


def _gather_args(n: fx.Node):
    args = list(n.args)
    base = args[0]
    dim = n.kwargs.get("dim", args[1] if len(args) > 1 else None)
    index = n.kwargs.get("index", args[2] if len(args) > 2 else None)
    return base, dim, index


def _world_size(group_name: str) -> int:
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _resolve_process_group

    return dist.get_world_size(_resolve_process_group(group_name))


def _shared_stretches(old_nodes: list, a: GraphAnalysis, sites: dict) -> list:
    """The stretches of per-token nodes (packed, all tokens' space, a token axis, not an attention) that run one
    after another in graph order with nothing between them that reads a packed value; a graph with MoE routing
    (whose tokens meet in an expert's batch) has none."""
    if a.routing:
        return []
    stretches, cur = [], []
    for n in old_nodes:
        if n.op in ("placeholder", "output"):
            continue
        k = a.kind.get(n)
        per_token = k == Kind.PACKED and a.space.get(n) == 0 and n not in sites and token_axis(a, n) is not None
        if per_token:
            cur.append(n)
            continue
        if k in (Kind.MASK, Kind.INTERNAL) or (k == Kind.ROW and not any(a.kind.get(x) == Kind.PACKED
                                                                        for x in n.all_input_nodes)):
            continue  # reads no packed value: emitted without the stretch's values
        if cur:
            stretches.append(cur)
        cur = []
    if cur:
        stretches.append(cur)
    return stretches


def _hint(size) -> int:
    """A size at the value it was traced with (a dynamic one counts at its hint)."""
    return size if isinstance(size, int) else int(size.node.hint or 1)


def stretch_bytes_per_token(a: GraphAnalysis, stretches: list) -> float:
    """The widest stretch's output bytes per position of the traced batch (views included: an upper bound of what
    is alive at once)."""
    ids = val(a.ids) if a.ids is not None else None
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        return 0.0
    positions = max(1, _hint(ids.shape[0]) * _hint(ids.shape[1]))
    return max((sum(math.prod(_hint(d) for d in v.shape) * v.element_size() for v in map(val, stretch)
                    if isinstance(v, torch.Tensor)) / positions for stretch in stretches), default=0.0)


def shared_stream_chunks(a: GraphAnalysis, stretches: list, world: int = 1, shared_tokens: int | None = None) -> int:
    """How many chunks detach_prefix's shared stream runs its stretches in: enough that the widest stretch's
    outputs (``stretch_bytes_per_token``) for one chunk stay near SHARED_CHUNK_BYTES, at most MAX_SHARED_CHUNKS.
    The shared tokens (``shared_tokens``, or estimated as half the traced batch's positions: a shared token sits
    in two rows or more) are split over ``world`` ranks. The count is fixed when the graph is compiled: a later,
    longer batch runs with larger chunks (the backend warns once when they pass 4x SHARED_CHUNK_BYTES)."""
    ids = val(a.ids) if a.ids is not None else None
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or not stretches:
        return 1
    if shared_tokens is None:
        shared_tokens = _hint(ids.shape[0]) * _hint(ids.shape[1]) // 2
    need = shared_tokens / max(world, 1) * stretch_bytes_per_token(a, stretches)
    return int(min(MAX_SHARED_CHUNKS, max(1, math.ceil(need / SHARED_CHUNK_BYTES))))


def _emit_packed(g: fx.Graph, n: fx.Node, a: GraphAnalysis, arg, n_tok, sub_index, selected=()) -> fx.Node:
    """``n`` on the packed tokens, its inputs through ``arg``; ``selected``: nodes already computed on the
    tokens of their slice (a slice of one of them is just its full slice)."""
    roles = a.roles[n]
    out_shape = shape(n)
    if is_reshape(n):
        sizes = packed_reshape(roles, out_shape, n_tok)
        assert not isinstance(sizes, str), sizes  # region._check_layout declined such graphs
        return g.call_method("reshape", (arg(n.args[0]), sizes))
    if op_name(n) in NEW_TENSOR_NAMES and n.op == "call_method":
        sizes = packed_reshape(roles, out_shape, n_tok)
        assert not isinstance(sizes, str), sizes  # region._check_layout declined such graphs
        fill = (arg(n.args[-1]),) if op_name(n) == "new_full" else ()
        return g.call_method(op_name(n), (arg(n.args[0]), sizes) + fill, {k: arg(v) for k, v in n.kwargs.items()
                                                                           if k != "size"})
    if n in a.routing.inverse_aranges:  # arange(k * tokens) of an MoE inverse permutation, on the packed tokens' slots
        n_slots = g.call_function(operator.mul, (n_tok, slots(a.routing.inverse_aranges[n])))
        return g.call_function(torch.arange, (n_slots,), dict(n.kwargs))
    if is_expand(n):
        sizes = [-1 if r is not None else s for r, s in zip(roles, out_shape)]
        assert all(isinstance(s, int) for s in sizes), n.name  # region._check_layout declined such graphs
        return g.call_method("expand", (arg(n.args[0]), sizes))
    idx_nodes = n.args[1] if len(n.args) > 1 and isinstance(n.args[1], tuple) else n.args[1:2]
    token_gather = any(isinstance(i, fx.Node) and i in a.routing.token_index for i in idx_nodes)  # MoE: copied as is
    if n.op == "call_function" and n.target is operator.getitem and not isinstance(val(n.args[0]), (tuple, list)) \
            and not token_gather:
        base, idx = n.args
        sl = next((s for s in a.slices if s.node is n), None)
        if not isinstance(idx, tuple):
            idx = (idx,)
        br = a.roles[base]
        new_idx, d = [], 0
        n_real = sum(1 for x in idx if x is not None and x is not Ellipsis)
        for x in idx:
            if x is Ellipsis:
                new_idx.append(x)
                d += len(br) - n_real
            elif x is None:
                new_idx.append(x)
            else:
                new_idx.append(slice(None) if br[d] in (B, T, BT) else x)
                d += 1
        out = g.call_function(operator.getitem, (arg(base), fx.node.map_arg(tuple(new_idx), arg)))
        if sl is not None and base not in selected:
            out = g.call_function(torch.index_select, (out, roles.index(T), sub_index[sl.space - 1]))
        return out
    new = g.node_copy(n, arg)
    new.meta = _kept_meta(n)
    return new


def _last_node(g: fx.Graph) -> fx.Node:
    return next(reversed(g.nodes), None) or g._root


def _tag_since(mark: fx.Node, n: fx.Node) -> None:
    """Give the ops emitted for packed node ``n`` after ``mark`` (its tree attention and the indexing around it,
    which ``_emit_packed`` does not copy) ``n``'s recompute tags: without them AOT autograd's partitioner saves
    the attention's q, k, v, output and log-sum-exp of every checkpointed layer instead of recomputing them."""
    meta = _kept_meta(n)
    if not meta:
        return
    x = mark.next
    while x.op != "root":
        if x.op in ("call_function", "call_method") and "recompute" not in x.meta:
            x.meta.update(meta)
        x = x.next


def _save_checkpointed_attention(g: fx.Graph) -> None:
    """Every tree attention that carries a checkpointed layer's recompute tag: saved (its output and log-sum-exp
    kept for the backward), not recomputed; the layer's other ops keep their tag."""
    from torch.utils.checkpoint import CheckpointPolicy

    ops = {torch.ops.replaycompile.tree_attention.default}
    if hasattr(torch.ops.replaycompile, "cp_tree_attention"):  # registered with context parallelism
        ops.add(torch.ops.replaycompile.cp_tree_attention.default)
    for x in g.nodes:
        if x.target in ops and x.meta.get("recompute") == CheckpointPolicy.PREFER_RECOMPUTE:
            x.meta["recompute"] = CheckpointPolicy.MUST_SAVE
            count("checkpointed_attention_saved")


def _kept_meta(n: fx.Node) -> dict:
    """Metadata a copied node keeps: activation checkpointing's recompute tags (passes/inline_checkpoint.py),
    which AOT autograd's partitioner reads; shapes and values are stale in the packed layout."""
    return {k: n.meta[k] for k in ("recompute", "ac_graph_id") if k in n.meta}
