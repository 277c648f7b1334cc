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

import operator
from dataclasses import dataclass

import torch
import torch.fx as fx

from replaycompile import ops
from replaycompile.kernels import tree_attention as _tree_attention_module  # noqa: F401 - registers the op

from .analysis import B, BT, T, Decline, GraphAnalysis, _shape, _val, op_name

PLAN_INPUTS = ("gather_index", "columns", "scatter_index", "subtree_end", "seg_q", "seg_kv_ptr", "kv_ranges")


@dataclass
class PackedGraph:
    gm: fx.GraphModule              # inputs: the original ones, then rc_<PLAN_INPUTS>, [rc_layout_0..5],
    detach_prefix: bool             # [rc_shared], per slice (index, scatter) of its packed space
    blocks: tuple[int, int] | None  # (block_q, block_k) of the tree's block layout (Triton attention), or None


def _shape_arg(roles, shape, n_node):
    out = []
    for role, size in zip(roles, shape):
        if role == B:
            out.append(1)
        elif role in (T, BT):
            out.append(n_node)
        elif isinstance(size, int):
            out.append(size)
        else:
            raise Decline("a reshape with a symbolic size outside the batch and sequence axes")
    return out


def rewrite(gm: fx.GraphModule, a: GraphAnalysis, detach_prefix: bool = False,
            blocks: tuple[int, int] | None = None) -> PackedGraph:
    """The packed graph. ``blocks`` given: attention runs the Triton block-sparse kernels on a block layout of
    the tree with those block sizes, which the caller passes as six more inputs after the plan's."""
    g = fx.Graph()
    row_env: dict = {}
    packed_env: dict = {}
    old_nodes = list(gm.graph.nodes)
    for n in old_nodes:
        if n.op == "placeholder":
            row_env[n] = g.placeholder(n.name, type_expr=n.type)
    plan = {name: g.placeholder(f"rc_{name}") for name in PLAN_INPUTS}
    layout = [g.placeholder(f"rc_layout_{i}") for i in range(6)] if blocks is not None else []
    block_q, block_k = blocks if blocks is not None else (0, 0)
    shared = g.placeholder("rc_shared") if detach_prefix else None
    subs = []
    for s in a.slices:
        subs.append((g.placeholder(f"rc_sub{s.space}_index"), g.placeholder(f"rc_sub{s.space}_scatter")))

    n_tok = [g.call_method("size", (plan["gather_index"], 0))]
    cols = [plan["columns"]]
    gath = [plan["gather_index"]]
    scat = [plan["scatter_index"]]
    for idx, sc in subs:
        n_tok.append(g.call_method("size", (idx, 0)))
        cols.append(g.call_function(torch.index_select, (plan["columns"], 0, idx)))
        gath.append(g.call_function(torch.index_select, (plan["gather_index"], 0, idx)))
        scat.append(sc)
    packed_rows: dict = {}  # (row node, space) -> its values at that space's packed tokens

    def get_row(x):
        if not isinstance(x, fx.Node):
            return x
        if x in row_env:
            return row_env[x]
        if x in packed_env:
            r = a.roles[x]
            pn = packed_env[x]
            sp = a.space[x]
            if B in r:
                val = g.call_function(ops.replay, (pn, scat[sp], r.index(B), r.index(T)))
            elif BT in r:
                val = g.call_function(ops.replay, (pn, scat[sp], None, r.index(BT)))
            else:
                raise Decline(f"node `{x.name}` has no batch axis to replay to")
            row_env[x] = val
            return val
        # lazily copy a row node that nothing copied yet (e.g. a mask node shared with positions)
        row_env[x] = g.node_copy(x, get_row)
        row_env[x].meta = {}
        return row_env[x]

    def get_packed(x, sp):
        if not isinstance(x, fx.Node):
            return x
        if x in packed_env:
            return packed_env[x]
        r = a.roles.get(x)
        positional = r is not None and T in r and B not in r and BT not in r
        if x in a.tokenfn or positional:
            # gatherable row values: token-input functions (by row and column) and positional tables (by column)
            key = (x, sp)
            if key not in packed_rows:
                if BT in r:  # a flattened [B*T] axis: its index is b*T + t, which gather_index holds
                    packed_rows[key] = g.call_function(torch.index_select, (get_row(x), r.index(BT), gath[sp]))
                else:
                    bdim = r.index(B) if B in r else None
                    packed_rows[key] = g.call_function(ops.pack_rows, (get_row(x), bdim, r.index(T), gath[sp],
                                                                       cols[sp]))
            return packed_rows[key]
        return get_row(x)

    sites = {s.node: s for s in a.attention}
    for n in old_nodes:
        if n.op in ("placeholder", "output"):
            continue
        k = a.kind.get(n)
        if k in ("mask", "internal"):
            continue
        if k == "row":
            if n in a.boundaries and _is_vocab_gather(n, a):
                base, dim, index = _gather_args(n)
                sp = a.space[base]
                row_env[n] = g.call_function(ops.replay_gather, (packed_env[base], scat[sp], get_row(index)))
                continue
            if n not in row_env:
                get_row(n)
            continue
        sp = a.space[n]
        if n in sites:
            s = sites[n]
            q, kk, v = (packed_env[x] for x in (s.q, s.k, s.v))
            if shared is not None:
                q, kk, v = (g.call_function(ops.detach_rows, (t, shared, 2)) for t in (q, kk, v))
            res = g.call_function(torch.ops.replaycompile.tree_attention.default,
                                  (q, kk, v, plan["subtree_end"], plan["seg_q"], plan["seg_kv_ptr"],
                                   plan["kv_ranges"], s.scale, layout, block_q, block_k))
            packed_env[n] = g.call_function(operator.getitem, (res, 0))
            continue
        packed_env[n] = _emit_packed(g, n, a, lambda x: get_packed(x, sp), n_tok[sp], subs)

    out_node = next(x for x in old_nodes if x.op == "output")
    g.output(fx.node.map_arg(out_node.args[0], get_row))
    g.eliminate_dead_code()
    new_gm = fx.GraphModule(gm, g)
    new_gm.recompile()
    return PackedGraph(new_gm, detach_prefix, blocks)


def _is_vocab_gather(n: fx.Node, a: GraphAnalysis) -> bool:
    if op_name(n) != "gather":
        return False
    base, dim, index = _gather_args(n)
    r = a.roles.get(base)
    return (a.kind.get(base) == "packed" and r is not None and len(r) == 3 and r[:2] == (B, T)
            and dim in (-1, 2) and isinstance(index, fx.Node) and a.kind.get(index) == "row")


def _gather_args(n: fx.Node):
    args = list(n.args)
    base = args[0]
    dim = n.kwargs.get("dim", args[1] if len(args) > 1 else None)
    index = n.kwargs.get("index", args[2] if len(args) > 2 else None)
    return base, dim, index


def _emit_packed(g: fx.Graph, n: fx.Node, a: GraphAnalysis, arg, n_tok, subs) -> fx.Node:
    name = op_name(n)
    roles = a.roles[n]
    out_shape = _shape(n)
    if name in ("view", "reshape", "flatten", "unflatten", "squeeze") and n.op == "call_method" or \
            (n.op == "call_function" and n.target in (torch.reshape, torch.flatten)):
        return g.call_method("reshape", (arg(n.args[0]), _shape_arg(roles, out_shape, n_tok)))
    if name in ("expand", "broadcast_to") and out_shape is not None:
        shape = [-1 if r is not None else s for r, s in zip(roles, out_shape)]
        if any(not isinstance(s, int) for s in shape):
            raise Decline(f"an expand with a symbolic size at node `{n.name}`")
        return g.call_method("expand", (arg(n.args[0]), shape))
    if n.op == "call_function" and n.target is operator.getitem and not isinstance(_val(n.args[0]), (tuple, list)):
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
        if sl is not None:
            out = g.call_function(torch.index_select, (out, roles.index(T), subs[sl.space - 1][0]))
        return out
    new = g.node_copy(n, arg)
    new.meta = {}
    return new
