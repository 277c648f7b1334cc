"""Which packed values the step reads only at the tokens of a slice of the sequence axis.

After the analysis, a slice of the sequence axis (the loss's ``logits[:, P-1:-1]``, or ``logits_to_keep``, moved
before the LM head by ``sink_slices``) packs the selected tokens again: a new packed space. Everything after it
runs on those tokens only, but the per-token ops before it still run on all N packed tokens, though some of
their results are read only at the selected ones: in the last decoder layer, the prompt's query projection,
attention output, output projection, MLP and final norm feed nothing but the slice. Only the last layer's keys
and values are read at every token (by the selected queries).

``selected_only`` finds those values: a packed value of the whole batch (space 0) whose every use is the slice
itself, a per-token op that is again selected-only, or the query of an attention that is selected-only. The
rewrite then computes them on the selected tokens alone, which is exact: the tokens dropped are read by nothing.
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx

from replaycompile.kernels import tree_attention as _tree_attention_module  # noqa: F401 - registers the op

from .nodes import BT, Kind, T, val
from .packed_graph import QuerySegmentInputs
from .region import GraphAnalysis


def token_axis(a: GraphAnalysis, x: fx.Node) -> int | None:
    """The token axis of a packed value (its T or flattened B*T dim), or None."""
    r = a.roles.get(x)
    if r is None:
        return None
    if T in r:
        return r.index(T)
    if BT in r:
        return r.index(BT)
    return None


def selected_only(a: GraphAnalysis, sites: dict, excluded: set) -> tuple[dict, int | None]:
    """(packed node -> the slice space whose tokens are all its uses read, that space) for the space-0 nodes
    that can run on the tokens of one slice space alone; ({}, None) when none can.

    ``sites``: attention node -> its ``AttentionSite``; ``excluded``: nodes that must run on every token
    (attention with a sliding window, recurrent layers and their insides, MoE routing values that index the token
    axis). Per-token ops are the packed nodes other than attention and those: by construction a packed value at
    a token depends only on values at that token, except through attention."""
    slice_space = {sl.node: sl.space for sl in a.slices}
    nodes = [n for n in a.kind if a.kind[n] == Kind.PACKED]
    order = sorted(nodes, key={n: i for i, n in enumerate(nodes[0].graph.nodes)}.__getitem__,
                   reverse=True) if nodes else []
    blocked = set(excluded)
    while True:
        sel = _select(a, sites, order, slice_space, blocked)
        # a value computed on the selected tokens reads the others there (an index_select of their token axis),
        # which a tuple (``torch.chunk``'s, when only one of its parts is selected) has not: such a reader runs
        # on every token, and the search runs again without it
        tuple_readers = {x for x in sel for y in x.all_input_nodes
                         if y not in sel and a.space.get(y) == 0 and not isinstance(val(y), torch.Tensor)}
        if not tuple_readers:
            break
        blocked |= tuple_readers
    if not any(x in sites for x in sel):
        return {}, None   # without an attention on the selected tokens the gain is a few per-token ops: keep it simple
    targets = set(sel.values())
    if len(targets) != 1:
        # values selected for different slices: keep those of the slice the attention's queries serve
        s = next(sel[x] for x in sel if x in sites)
        sel = {x: sp for x, sp in sel.items() if sp == s}
    return sel, next(iter(sel.values()))


def _select(a: GraphAnalysis, sites: dict, order: list, slice_space: dict, blocked: set) -> dict:
    """One pass over the packed nodes, users before inputs: node -> the slice space its uses read."""
    sel: dict = {}
    for x in order:
        if a.space.get(x) != 0 or x in blocked or token_axis(a, x) is None or not x.users:
            continue
        spaces = set()
        for u in x.users:
            if u in slice_space and u.args and u.args[0] is x and x not in _flat(u.args[1:]) and \
                    a.kind.get(u) == Kind.PACKED:
                spaces.add(slice_space[u])
            elif u in sites and u in sel and _only_query(sites[u], x):
                spaces.add(sel[u])
            elif u not in sites and u in sel:
                spaces.add(sel[u])
            else:
                spaces = None
                break
        if spaces is not None and len(spaces) == 1:
            sel[x] = spaces.pop()
    return sel


class SelectedTokens:
    """Fusion pass (option ``fusions``, name ``"selected_tokens"``): the values ``selected_only`` found run on
    the selected tokens of their slice alone; an attention among them runs its queries there and reads every
    key (the plan's query segments, ``QuerySegmentInputs``)."""

    name = "selected_tokens"

    def __init__(self, a: GraphAnalysis, sites: dict, excluded: set):
        self._sites = sites
        self.nodes, self.space = selected_only(a, sites, excluded)

    def __bool__(self) -> bool:
        return bool(self.nodes)

    @property
    def attention(self) -> int:
        """How many attention sites run their queries at the selected tokens only."""
        return sum(1 for x in self.nodes if x in self._sites)

    def setup(self, p) -> None:
        self.qseg = [p.g.placeholder(f"rc_sub{self.space}_qseg_{i}") for i in range(3)]
        p.extra.append(QuerySegmentInputs(self.space))
        self.no_subtree = p.g.call_function(torch.empty, ((0,),), {"dtype": torch.int64})

    def value(self, p, x, st):
        """A value as a node computed on the selected tokens reads it."""
        if not isinstance(x, fx.Node):
            return x
        if x in self.nodes:
            return st.env[x]
        if x in st.env or p.produces(x):
            key = (x, "selected")
            if key not in st.rows:
                v = st.env[x] if x in st.env else p.get_packed(x, 0, st)
                axis = token_axis(p.a, x)
                st.rows[key] = v if axis is None else p.g.call_function(
                    torch.index_select, (v, axis, st.sub_index[self.space - 1]))
            return st.rows[key]
        return p.get_packed(x, self.space, st)

    def emit_packed(self, p, n: fx.Node) -> bool:
        if n not in self.nodes:
            return False
        g, st = p.g, p.streams[0]
        if n not in p.sites:
            st.env[n] = p.copy_packed(n, lambda x: self.value(p, x, st), st.n_tok[self.space], st.sub_index)
            return True
        # queries at the selected tokens, keys and values at all
        s = p.sites[n]
        sinks = None if s.sinks is None else p.get_row(s.sinks)
        tail = (None, 0, s.softcap, sinks) if sinks is not None else (None, 0, s.softcap) if s.softcap else ()
        q, (k, v) = self.value(p, s.q, st), p.unrepeated_kv(s, st)
        if p.cp_group is not None:
            # the rank's selected queries over every rank's keys and values
            pad, order = p.cp_space[0]
            res = g.call_function(torch.ops.replaycompile.cp_tree_attention.default,
                                  (q, k, v, pad, order, *self.qseg, s.scale, p.cp_group) + tail)
        else:
            res = g.call_function(torch.ops.replaycompile.tree_attention.default,
                                  (q, k, v, self.no_subtree, *self.qseg, s.scale, [], 0, 0) + tail)
        st.env[n] = g.call_function(operator.getitem, (res, 0))
        return True


def _only_query(site, x: fx.Node) -> bool:
    """``x`` enters the attention only as its query."""
    return site.q is x and x not in (site.k, site.v, site.mask, site.sinks) and \
        sum(1 for y in _flat(site.node.args) + list(site.node.kwargs.values()) if y is x) <= 1


def _flat(args) -> list:
    out = []
    fx.node.map_aggregate(args, out.append)
    return out
