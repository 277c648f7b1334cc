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

import logging
import operator

import torch
import torch.fx as fx

from replaycompile.kernels import packing as ops
from replaycompile.kernels import tree_attention as _tree_attention_module  # noqa: F401 - registers the op
from replaycompile.kernels.block_sparse_attention import default_blocks
from replaycompile.kernels.tree_attention_reference import dense_attention_reference

from . import key_selection
from .fuse_lm_head import ChunkedLMHead
from .fuse_log_softmax import LogSoftmaxGather, gather_args, is_vocab_gather, loss_vocab_gather
from .fuse_tree_scan import TreeScan, tree_scan_call
from .loss_weights import space_weights
from .nodes import B, BT, Kind, T, count, op_name, shape, slots, subgraph_module, val
from .packed_graph import (PLAN_INPUTS, SPLIT_INPUTS, LayoutInputs, PackedGraph, PackedInput, PlanInputs,
                           ShardInputs, SliceInputs)
from .region import GraphAnalysis, is_expand, is_reshape, packed_reshape
from .roles import NEW_TENSOR_NAMES
from .selected_tokens import SelectedTokens, token_axis
from .shared_chunks import SharedChunks

log = logging.getLogger("replaycompile")


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


class Packer:
    """The core packing step while it builds the packed graph: the new graph ``g``, the plan's inputs, the streams
    of packed tokens and the environments from source nodes to new ones. ``rewrite`` walks the source graph once
    and hands each node to the fusion passes that took it (their own modules: ``fuse_lm_head``,
    ``fuse_log_softmax``, ``fuse_tree_scan``, ``selected_tokens``, ``shared_chunks``) or emits it here: a row
    node copied, a packed node on the packed tokens, an attention as the tree attention."""

    def __init__(self, gm: fx.GraphModule, a: GraphAnalysis, detach_prefix: bool, blocks, windows: dict | None,
                 cp_group: str | None, tree_scan: TreeScan | None):
        self.a = a
        self.detach_prefix, self.blocks, self.windows, self.cp_group = detach_prefix, blocks, windows or {}, cp_group
        self.tree_scan = tree_scan
        self.selected: SelectedTokens | None = None
        self.lm_head: ChunkedLMHead | None = None
        self.log_softmax: LogSoftmaxGather | None = None
        self.shared_chunks: SharedChunks | None = None
        self.g = g = fx.Graph()
        self.row_env: dict = {}
        self.old_nodes = list(gm.graph.nodes)
        for n in self.old_nodes:
            if n.op == "placeholder":
                self.row_env[n] = g.placeholder(n.name, type_expr=n.type)
        names = SPLIT_INPUTS if detach_prefix else PLAN_INPUTS
        self.plan = plan = {name: g.placeholder(f"rc_{name}") for name in names}
        self.extra: list[PackedInput] = [PlanInputs(split=detach_prefix)]
        self.layout = [g.placeholder(f"rc_layout_{i}") for i in range(6)] if blocks is not None else []
        if blocks is not None:
            self.extra.append(LayoutInputs())
        self.block_q, self.block_k = blocks if blocks is not None else (0, 0)
        self.cp_space: list = []          # per space: (padding to the longest rank's count, gathered order)
        self.cp_local_scatter: dict = {}  # slice space -> [B, K] the rank's own index of each position's token
        if detach_prefix:
            shared = plan["gather_s"], plan["columns_s"]
            if cp_group is not None:
                # the shared tokens split over the ranks (this rank's: "cp_shared"), the branch tokens whole on each
                cp_in = {name: g.placeholder(f"rc_cp_{name}_s") for name in ("gather", "columns", "pad", "order")}
                self.cp_qseg = [g.placeholder(f"rc_cp_qseg_s_{i}") for i in range(3)]
                self.extra.append(ShardInputs(shared=True))
                shared = cp_in["gather"], cp_in["columns"]
                self.cp_space = [(cp_in["pad"], cp_in["order"])]
            self.streams = [_Stream(g, "S", *shared, no_grad=True),
                            _Stream(g, "R", plan["gather_r"], plan["columns_r"], no_grad=False)]
            self.no_subtree = g.call_function(torch.empty, ((0,),), {"dtype": torch.int64})
        elif cp_group is not None:
            # this rank's tokens; per space, the padding to the longest rank's count and every token's place in
            # the gathered layout (ContextShards.order)
            cp_in = {name: g.placeholder(f"rc_cp_{name}") for name in ("gather", "columns", "pad", "order")}
            self.cp_qseg = [g.placeholder(f"rc_cp_qseg_{i}") for i in range(3)]
            self.extra.append(ShardInputs())
            self.streams = [_Stream(g, "all", cp_in["gather"], cp_in["columns"], no_grad=False)]
            self.cp_space = [(cp_in["pad"], cp_in["order"])]
        else:
            self.streams = [_Stream(g, "all", plan["gather_index"], plan["columns"], no_grad=False)]
        self.scat = [plan["scatter_index"]]
        for sl in a.slices:
            for st in self.streams:
                st.add_slice(g, g.placeholder(f"rc_sub{sl.space}_index_{st.name}"))
            self.scat.append(g.placeholder(f"rc_sub{sl.space}_scatter"))
            self.extra.append(SliceInputs(sl.space, sl.start, sl.stop))
            if cp_group is not None:
                self.cp_space.append((g.placeholder(f"rc_cp_sub{sl.space}_pad"),
                                      g.placeholder(f"rc_cp_sub{sl.space}_order")))
                if not detach_prefix:
                    self.cp_local_scatter[sl.space] = g.placeholder(f"rc_cp_sub{sl.space}_local_scatter")
        self.sites = {s.node: s for s in a.attention}
        self.detached: dict = {}
        self.selection_env: dict = {}  # key-selection nodes emitted on the packed tokens (sites may share them)

    # -- values of source nodes in the new graph
    def full(self, x, sp):
        """A packed node's values on all packed tokens of its space (streams concatenated; every rank's tokens
        gathered under context parallelism)."""
        g, axis = self.g, token_axis(self.a, x)
        vals = [st.env[x] for st in self.streams]
        if self.cp_group is not None:
            pad, order = self.cp_space[sp]
            vals[0] = g.call_function(ops.cp_gather, (vals[0], axis, pad, order, self.cp_group))
        if len(vals) == 1:
            return vals[0]
        return g.call_function(torch.cat, (vals, axis))

    def get_row(self, x):
        """A source node's value in the row layout ``[B, T, ...]`` (a packed value replayed to its rows)."""
        if not isinstance(x, fx.Node):
            return x
        if x in self.row_env:
            return self.row_env[x]
        if x in self.streams[0].env:
            r = self.a.roles[x]
            sp = self.a.space[x]
            pn = self.full(x, sp)
            if B in r:
                v = self.g.call_function(ops.replay, (pn, self.scat[sp], r.index(B), r.index(T)))
            elif BT in r:
                v = self.g.call_function(ops.replay, (pn, self.scat[sp], None, r.index(BT)))
            else:
                raise AssertionError(f"node `{x.name}` has no batch axis to replay to (region._check_layout)")
            self.row_env[x] = v
            return v
        # lazily copy a row node that nothing copied yet (e.g. a mask node shared with positions)
        self.row_env[x] = self.g.node_copy(x, self.get_row)
        self.row_env[x].meta = _kept_meta(x)
        return self.row_env[x]

    def no_grad(self, v, x):
        """``v`` (the new graph's value of source node ``x``) detached, once."""
        if not isinstance(val(x), torch.Tensor):
            return v
        if v not in self.detached:
            self.detached[v] = self.g.call_method("detach", (v,))
        return self.detached[v]

    def produces(self, x) -> bool:
        """A fusion pass emits ``x``'s packed value itself (a tree-scan layer's output)."""
        return self.tree_scan is not None and x in self.tree_scan.sites

    def get_packed(self, x, sp, st: _Stream):
        """A value as a packed node of space ``sp`` on stream ``st`` reads it."""
        if not isinstance(x, fx.Node):
            return x
        if x in st.env:
            return st.env[x]
        if self.produces(x):
            return self.tree_scan.packed_value(self, x, sp, st)
        a = self.a
        r = a.roles.get(x)
        positional = r is not None and T in r and B not in r and BT not in r
        if x in a.tokenfn or positional:
            # gatherable row values: token-input functions (by row and column) and positional tables (by column)
            key = (x, sp)
            if key not in st.rows:
                if BT in r:  # a flattened [B*T] axis: its index is b*T + t, which gather_index holds
                    v = self.g.call_function(torch.index_select, (self.get_row(x), r.index(BT), st.gath[sp]))
                else:
                    bdim = r.index(B) if B in r else None
                    v = self.g.call_function(ops.pack_rows, (self.get_row(x), bdim, r.index(T), st.gath[sp],
                                                             st.cols[sp]))
                st.rows[key] = self.no_grad(v, x) if st.no_grad else v
            return st.rows[key]
        v = self.get_row(x)
        return self.no_grad(v, x) if st.no_grad else v

    def copy_packed(self, n: fx.Node, arg, n_tok, sub_index, selected=None) -> fx.Node:
        """``n`` on ``n_tok`` packed tokens, its inputs through ``arg`` (``_emit_packed``); ``selected``: nodes
        computed on their slice's tokens already (by default the selected-tokens pass's)."""
        if selected is None:
            selected = self.selected.nodes if self.selected else ()
        return _emit_packed(self.g, n, self.a, arg, n_tok, sub_index, selected)

    def seed_continuation_inputs(self) -> None:
        """Continuation inputs (activations a graph break passed on): gathered to the packed tokens on entry; their
        entries at two (b, t) that share a packed token are equal, which the caller checked or knows."""
        for p, r in self.a.seeded.items():
            for st in self.streams:
                v = self.g.call_function(ops.pack_rows, (self.row_env[p], r.index(B) if B in r else None,
                                                         r.index(T), st.gath[0], st.cols[0]))
                st.env[p] = self.no_grad(v, p) if st.no_grad else v

    # -- the nodes the core emits
    def emit_row(self, n: fx.Node) -> None:
        """A row node: copied (``get_row``), except a vocabulary gather, which reads the packed values directly."""
        a, g = self.a, self.g
        if not loss_vocab_gather(n, a):
            if n not in self.row_env:
                self.get_row(n)
            return
        base, dim, index = gather_args(n)
        sp = a.space[base]
        if self.cp_group is not None and sp in self.cp_local_scatter:
            # each rank gathers its own tokens' log-probs (zeros elsewhere) and the ranks' results are summed: the
            # logits never leave the rank (no [M, V] gather)
            x = self.log_softmax.input_for(n, self.streams[:1]) if self.log_softmax else None
            local = self.cp_local_scatter[sp]
            if x is not None:
                part = g.call_function(ops.replay_log_softmax_gather, (self.streams[0].env[x], local,
                                                                      self.get_row(index)))
            else:
                part = g.call_function(ops.replay_gather, (self.streams[0].env[base], local, self.get_row(index)))
            self.row_env[n] = g.call_function(ops.cp_sum, (part, self.cp_group))
            count("context_parallel_local_logprobs")
            return
        x = self.log_softmax.input_for(n, self.streams) if self.log_softmax else None
        if x is not None:
            # the log-softmax is read only here: fused with the gather (its [N, V] output never exists)
            self.row_env[n] = g.call_function(ops.replay_log_softmax_gather, (self.full(x, sp), self.scat[sp],
                                                                             self.get_row(index)))
        else:
            self.row_env[n] = g.call_function(ops.replay_gather, (self.full(base, sp), self.scat[sp],
                                                                 self.get_row(index)))

    def emit_packed(self, n: fx.Node) -> None:
        """A per-token node on each stream's packed tokens (the shared stream's copy of a chunked stretch comes
        with the stretch's last node)."""
        sp = self.a.space[n]
        chunks = self.shared_chunks
        for st in self.streams:
            if chunks is not None and st is self.streams[0] and chunks.owns(n):
                continue
            st.env[n] = self.copy_packed(n, lambda x, st=st: self.get_packed(x, sp, st), st.n_tok[sp], st.sub_index)
        if chunks is not None:
            chunks.emit_stretch(self, n)

    def _attention_tail(self, s, window: int, cols, st: _Stream, gather=None) -> tuple:
        """The tree attention's trailing arguments (positions, window, softcap, sinks), as far as the site needs
        them; the shared stream of detach_prefix reads the sinks detached, as every outside input. A chunk
        (window -C) reads positions from each row's first real token (``gather``: the keys' b * T + t)."""
        plan = self.plan
        sinks = None if s.sinks is None else self.get_row(s.sinks)
        sinks = self.no_grad(sinks, s.sinks) if sinks is not None and st.no_grad else sinks
        if window < 0:
            every = [plan["gather_s"], plan["gather_r"]] if self.detach_prefix else [plan["gather_index"]]
            cols = self.g.call_function(chunk_positions, (cols, gather, plan["scatter_index"], every))
        tail = (cols if window else None, window, s.softcap, sinks)
        while tail and tail[-1] in (None, 0, 0.0):  # defaults left out, as before sinks and softcap
            tail = tail[:-1]
        return tail

    def kv_sources(self, s, streams) -> tuple:
        """The (k, v) nodes an attention site reads: the keys and values before GQA's repeat_kv where the model
        repeats them and every stream in ``streams`` has both (tree attention and the CP ops read kv head
        h // (Hq / Hkv) themselves), so what the attention saves for its backward (and under CP gathers and
        reduces) is Hkv heads wide, not Hq (``counters["replay"]["attention_kv_unrepeated"]``); else the site's
        own."""
        src = tuple(_repeat_kv_source(x) for x in (s.k, s.v))
        if all(x is not None and all(x in st.env for st in streams) for x in src):
            count("attention_kv_unrepeated")
            return src
        return s.k, s.v

    def unrepeated_kv(self, s, st: _Stream) -> tuple:
        """An attention site's packed keys and values on stream ``st`` (``kv_sources``)."""
        return tuple(self.get_packed(x, 0, st) for x in self.kv_sources(s, [st]))

    def emit_attention(self, n: fx.Node) -> None:
        """An attention site as the tree attention on the packed tokens (or, with key selection, dense attention
        under the selection's mask)."""
        g, plan, s = self.g, self.plan, self.sites[n]
        window = self.windows.get(n, 0)
        if s.selection is not None:
            # top-k keys per query: the selection's mask on the packed tokens, then dense attention with it
            assert not self.detach_prefix, "declined by the backend"
            st = self.streams[0]
            cols = plan["columns"] if window > 0 else g.call_function(
                chunk_positions, (plan["columns"], plan["gather_index"], plan["scatter_index"],
                                  [plan["gather_index"]])) if window < 0 else None
            m = val(s.selection.base)
            vis = g.call_function(key_selection.visibility, (plan["subtree_end"], cols, window, m.dim(), m.dtype))
            mask = key_selection.emit(g, s.selection, vis, st.n_tok[0], lambda x: self.get_packed(x, 0, st),
                                      self.get_row, self.selection_env)
            q, kk, v = (self.get_packed(x, 0, st) for x in (s.q, s.k, s.v))
            if s.softcap or s.sinks is not None:
                res = g.call_function(dense_attention_reference,
                                      (q, kk, v, mask, s.scale, s.softcap, self.get_row(s.sinks)))
                st.env[n] = g.call_function(operator.getitem, (res, 0))
                return
            gqa = int(shape(s.q)[1]) != int(shape(s.k)[1]) if all(
                isinstance(shape(x)[1], int) for x in (s.q, s.k)) else True
            st.env[n] = g.call_function(torch.nn.functional.scaled_dot_product_attention, (q, kk, v),
                                        {"attn_mask": mask, "scale": s.scale, "enable_gqa": gqa})
            return
        if self.detach_prefix:
            self._emit_detached_attention(n, s, window)
            return
        st = self.streams[0]
        q = self.get_packed(s.q, 0, st)
        kk, v = self.unrepeated_kv(s, st)
        if self.cp_group is not None:
            # this rank's queries over every rank's keys and values (the segment CSR of its tokens)
            # (context_parallel.py: the op gathers them in forward and again in backward, so no layer keeps more
            # than the rank's own K/V); a window reads the keys' positions (all tokens'), each query's is its own
            # key's
            pad, order = self.cp_space[0]
            res = g.call_function(torch.ops.replaycompile.cp_tree_attention.default,
                                  (q, kk, v, pad, order, *self.cp_qseg, s.scale, self.cp_group)
                                  + self._attention_tail(s, window, plan["columns"], st, plan["gather_index"]))
            st.env[n] = g.call_function(operator.getitem, (res, 0))
            return
        res = g.call_function(torch.ops.replaycompile.tree_attention.default,
                              (q, kk, v, plan["subtree_end"], plan["seg_q"], plan["seg_kv_ptr"],
                               plan["kv_ranges"], s.scale, self.layout, self.block_q, self.block_k)
                              + self._attention_tail(s, window, plan["columns"], st, plan["gather_index"]))
        st.env[n] = g.call_function(operator.getitem, (res, 0))

    def _emit_detached_attention(self, n: fx.Node, s, window: int) -> None:
        """detach_prefix: the shared queries over the shared keys, the branch queries over those (constants) and
        their own."""
        g, plan, streams = self.g, self.plan, self.streams
        # keys and values before GQA's repeat_kv: the branch backward saves the shared K/V once, not once per
        # query head
        kv = self.kv_sources(s, streams)
        (qs, ks, vs), (qr, kr, vr) = ([st.env[x] for x in (s.q, *kv)] for st in streams)

        def both_streams():
            """The keys' columns and gather indices over both streams, where the window reads them."""
            cols = g.call_function(torch.cat, ([plan["columns_s"], plan["columns_r"]],)) if window else None
            gath = g.call_function(torch.cat, ([plan["gather_s"], plan["gather_r"]],)) if window < 0 else None
            return cols, gath

        if self.cp_group is not None:
            # the rank's shared queries over every rank's shared keys; the branch queries over those (gathered
            # again in backward: constants, never saved whole) and the branch keys
            pad, order = self.cp_space[0]
            res = g.call_function(torch.ops.replaycompile.cp_tree_attention.default,
                                  (qs, ks, vs, pad, order, *self.cp_qseg, s.scale, self.cp_group)
                                  + self._attention_tail(s, window, plan["columns_s"], streams[0], plan["gather_s"]))
            streams[0].env[n] = g.call_function(operator.getitem, (res, 0))
            cols, gath = both_streams()
            res = g.call_function(torch.ops.replaycompile.cp_branch_attention.default,
                                  (qr, ks, vs, kr, vr, pad, order, plan["seg_q_r"], plan["seg_kv_ptr_r"],
                                   plan["kv_ranges_r"], s.scale, self.cp_group)
                                  + self._attention_tail(s, window, cols, streams[1], gath))
            streams[1].env[n] = g.call_function(operator.getitem, (res, 0))
            return
        res = g.call_function(torch.ops.replaycompile.tree_attention.default,
                              (qs, ks, vs, plan["subtree_end_s"], plan["seg_q_s"], plan["seg_kv_ptr_s"],
                               plan["kv_ranges_s"], s.scale, self.layout, self.block_q, self.block_k)
                              + self._attention_tail(s, window, plan["columns_s"], streams[0], plan["gather_s"]))
        streams[0].env[n] = g.call_function(operator.getitem, (res, 0))
        # the branch queries see the shared keys (constants here) followed by their own
        k_all = g.call_function(torch.cat, ([ks, kr], 2))
        v_all = g.call_function(torch.cat, ([vs, vr], 2))
        cols, gath = both_streams()
        res = g.call_function(torch.ops.replaycompile.tree_attention.default,
                              (qr, k_all, v_all, self.no_subtree, plan["seg_q_r"], plan["seg_kv_ptr_r"],
                               plan["kv_ranges_r"], s.scale, [], 0, 0)
                              + self._attention_tail(s, window, cols, streams[1], gath))
        streams[1].env[n] = g.call_function(operator.getitem, (res, 0))


# the fusion passes ``rewrite`` runs beside the core packing step, by name (the backend option ``fusions``)
FUSIONS = tuple(sorted(f.name for f in (ChunkedLMHead, LogSoftmaxGather, SelectedTokens, TreeScan)))


def rewrite(gm: fx.GraphModule, a: GraphAnalysis, detach_prefix: bool = False, attention: str = "torch",
            device: str = "cpu", chunked_lm_head: bool = True, windows: dict | None = None,
            tree_scan: dict | None = None, prune: bool = True, cp_group: str | None = None,
            shared_chunks: int | None = None, save_checkpointed_attention: bool = False,
            log_softmax_gather: bool = True) -> PackedGraph:
    """The packed graph of a graph the analysis accepted (``a.reason is None``); it never declines.

    The core packing step (``Packer``) and, each behind its flag, the fusion passes (``FUSIONS``), decided from
    the source graph first and emitted as the core walks it:

    ``chunked_lm_head`` (``fuse_lm_head.ChunkedLMHead``): where the LM head's output is used only through
    ``log_softmax(-1).gather(-1, targets)``, the three run as ``replaycompile::chunked_pair_logprobs`` on the
    (packed row, target) pairs, never holding [M, V] logits; the caller passes each such gather's pairs.

    ``log_softmax_gather`` (``fuse_log_softmax.LogSoftmaxGather``): a vocabulary gather of a log-softmax read
    by nothing else reads the log-softmax's input (its [N, V] output never exists).

    ``tree_scan`` (module path -> ``recurrent.TreeScanSite``; ``fuse_tree_scan.TreeScan``): those recurrent
    layers run as one ``replaycompile::gated_deltanet_tree`` / ``mamba2_tree`` call on the packed tokens (their
    per-row nodes are not copied).

    ``prune`` (``selected_tokens.SelectedTokens``): values read only at a slice's tokens (the last layer's
    queries, attention output and MLP, where the loss reads its positions) run on those tokens alone; the
    attention among them reads all keys with the queries of those tokens (the plan's ``query_segments``). Exact
    mode on the PyTorch attention path only (the Triton kernels take queries and keys at the same tokens;
    detach_prefix's two streams keep their own layout).

    The layout, not fusions:

    ``attention``/``device``: the tree attention's implementation (``choose_blocks``); with the Triton kernels
    it runs on a block layout of the tree, six more inputs after the plan's.

    ``detach_prefix``: every per-token op runs twice, on the shared tokens with every outside input detached
    (so autograd saves nothing for them) and on the branch tokens with autograd; a branch token's attention
    reads the shared tokens' keys and values as constants. Where a value leaves the packed region the two are
    concatenated in the shared-first order the plan's scatter indices use. ``shared_chunks``
    (``shared_chunks.SharedChunks``): each stretch of the shared stream's per-token ops between two attentions
    runs on that many chunks of the shared tokens; None picks it from the traced batch, 1 turns it off.

    ``windows``: attention node -> W, a sliding window the mask check verified at that site; its tree attention
    hides keys W or more columns before the query in the row (the plan's ``columns``), which keeps sharing
    exact when the window crosses a branch point.

    ``cp_group`` (the name of a process group): context parallelism. Every per-token op runs on this rank's
    packed tokens only (the "cp" inputs: its gather index and columns, then per space the padding and the order
    that put every rank's tokens back in packed order); each attention all-gathers keys and values and reads
    them with this rank's queries (``replaycompile.context_parallel``); a value that leaves the packed region is
    all-gathered first, so every rank computes the same loss (the gathers' backward sums over the ranks: each
    rank's parameter gradients are its tokens' share times the group size, and averaging them over the group, as
    DDP and FSDP2 do, gives the batch's gradient). The caller asks for it only in exact mode on the PyTorch
    attention path, with ``chunked_lm_head`` off and no recurrent layers; with ``prune`` the last layer runs at the
    rank's tokens of the loss's slice (queries there, every rank's keys).

    ``save_checkpointed_attention``: in an activation-checkpointed layer the tree attention's output and
    log-sum-exp are saved for the backward (``CheckpointPolicy.MUST_SAVE``) and its queries, keys and values
    recomputed, instead of recomputing the attention too (the backend option ``checkpoint_attention="save"``)."""
    assert a.reason is None, a.reason
    if cp_group is not None:
        assert not chunked_lm_head and not tree_scan, "context parallelism: declined by the backend"
        attention = "torch"
    blocks = choose_blocks(a, attention, device)
    scan = TreeScan(tree_scan) if tree_scan else None
    p = Packer(gm, a, detach_prefix, blocks, windows, cp_group, scan)
    if prune and not detach_prefix and blocks is None:
        excluded = (set(scan.sites) | scan.inside if scan else set()) | set(p.windows) | a.routing.nodes() | \
            {s.node for s in a.attention if s.selection is not None}
        p.selected = SelectedTokens(a, p.sites, excluded) or None
    if p.selected:
        p.selected.setup(p)
    if detach_prefix:
        world = 1 if cp_group is None or shared_chunks is not None else _world_size(cp_group)
        p.shared_chunks = SharedChunks(p.old_nodes, a, p.sites, world, shared_chunks, _repeat_kv_source)
    if chunked_lm_head:
        p.lm_head = ChunkedLMHead(gm, a)
        p.lm_head.setup(p)
    if log_softmax_gather:
        p.log_softmax = LogSoftmaxGather(gm, a)
    p.seed_continuation_inputs()

    pending = None  # (the graph's last node before a packed node was emitted, that node): see _tag_since
    for n in p.old_nodes:
        if pending is not None:
            _tag_since(*pending)
            pending = None
        if n.op in ("placeholder", "output"):
            continue
        k = a.kind.get(n)
        if k in (Kind.MASK, Kind.INTERNAL) or (scan is not None and n in scan.inside):
            continue
        if k == Kind.ROW:
            if not (p.lm_head is not None and p.lm_head.emit_row(p, n)):
                p.emit_row(n)
            continue
        pending = (_last_node(p.g), n)
        if p.selected and p.selected.emit_packed(p, n):
            continue
        if n in p.sites:
            p.emit_attention(n)
        else:
            p.emit_packed(n)
    if pending is not None:
        _tag_since(*pending)
    if save_checkpointed_attention:
        _save_checkpointed_attention(p.g)
    return _finish(gm, a, p, detach_prefix, cp_group)


def _finish(gm: fx.GraphModule, a: GraphAnalysis, p: Packer, detach_prefix: bool, cp_group) -> PackedGraph:
    """The packed GraphModule (outputs in the row layout, dead code gone) and its record."""
    g, old_nodes = p.g, p.old_nodes
    out_node = next(x for x in old_nodes if x.op == "output")
    g.output(fx.node.map_arg(out_node.args[0], p.get_row))
    g.eliminate_dead_code(is_impure_node=_keeps)
    new_gm = fx.GraphModule(gm, g)
    new_gm.recompile()
    weights = _space_weights(gm, a, old_nodes) if not detach_prefix and cp_group is None and a.slices else None
    head_spaces = tuple(a.space[gather_args(n)[0]] for n in old_nodes if loss_vocab_gather(n, a))
    bound_nodes = [x for sl in a.slices for x in (sl.start, sl.stop) if isinstance(x, fx.Node)]
    _count_rewrites(new_gm)
    count("sequence_slices_repacked", len(a.slices))
    sel = p.selected.nodes if p.selected else {}
    n_sel_attention = p.selected.attention if p.selected else 0
    if sel:
        count("selected_only_nodes", len(sel))
        count("attention_queries_selected", n_sel_attention)
        log.info("replay: %d values run only at the %s's selected tokens, %d attention(s) among them with queries "
                 "there only (nothing else reads them at the other tokens)", len(sel),
                 _slice_name(a, p.selected.space), n_sel_attention)
    if weights is not None and weights.keep:
        count("loss_weighted_spaces", len(weights.keep))
        log.info("replay: the loss weighs %s by runtime masks: positions whose weights are zero are not computed",
                 ", ".join(f"the {_slice_name(a, sp)}'s tokens" for sp in sorted(weights.keep)))
    if cp_group is not None:
        count("context_parallel_graphs")
    chunks = p.shared_chunks
    return PackedGraph(new_gm, detach_prefix, p.blocks, tuple(p.extra),
                       len(p.lm_head.chains) if p.lm_head else 0, p.lm_head.vocab if p.lm_head else 0,
                       subgraph_module(gm, bound_nodes) if bound_nodes else None, _row_outputs(out_node, a),
                       len(sel), n_sel_attention,
                       space_keep=dict(weights.keep) if weights is not None else {},
                       weights_gm=subgraph_module(gm, weights.nodes) if weights is not None and weights.keep
                       else None, head_spaces=head_spaces,
                       shared_chunks=chunks.count if chunks is not None and chunks.runs else 1,
                       shared_bytes_per_token=chunks.bytes_per_token if chunks is not None else 0.0)


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
            gathered = is_vocab_gather(n, a) and gather_args(n)[0] is x
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


def _world_size(group_name: str) -> int:
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _resolve_process_group

    return dist.get_world_size(_resolve_process_group(group_name))


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
