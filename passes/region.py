"""The region decision: which nodes of a Dynamo FX graph run on packed tokens, and whether the graph packs.

Facts first, decisions second, no mutation (functorch's partitioner's order). Facts: the attention sites
(``attention_sites.py``), the token inputs, the nodes that only build masks, and each node's *roles* (which of
its dimensions is the batch axis ``B`` and which the sequence axis ``T``, ``roles.py``). Decisions, in graph
order, each node's ``Kind``:

* ``PACKED``   - per-token along ``T``: it may run on the packed unique tokens of the batch;
* ``ROW``      - computed in the original ``[B, T, ...]`` layout (parameters, per-row data such as labels
                 or advantages, positional tables like ``arange(T)``, everything after the packed region);
* ``MASK``     - only builds the attention mask of an attention site (verified at run time, then dropped);
* ``INTERNAL`` - the inner nodes of a matmul-softmax-matmul attention, replaced as a whole.

The packed region must reach every attention site; otherwise the graph is declined and ``reason`` names the
first node that stopped it. A packed value used by a ``ROW`` node leaves the region there: the rewrite
replays it to ``[B, T, ...]`` (an index op whose backward is the scatter-add that removes duplicated work).
Every layout the rewrite will need is decided here too (``_check_layout``), so the rewrite never declines.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import torch
import torch.fx as fx

from .attention_sites import find_attention_sites
from . import key_selection, recurrent
from .cross_entropy import REFINABLE
from .nodes import (EMBEDDING, VIEW_NAMES, B, BT, Decline, Kind, NotCandidate, T, count, is_symint_node,
                    node_desc, op_name, same_size, shape, val)
from .roles import NEW_TENSOR_NAMES, constant_table, infer_roles, is_elementwise, prefix_scan, routing_value


@dataclass
class SliceSite:
    """A partial slice of the sequence axis of a packed value: packs the selected tokens again."""
    node: fx.Node
    start: Any                    # int, or a SymInt node of the graph (evaluated per call)
    stop: Any
    space: int                    # index of the packed space it creates (0 is the whole batch)


@dataclass
class RoutingFacts:
    """Mixture-of-experts routing, as the role rules found it (passes/roles.py), read by the region and the
    rewrite: values that are indices into a token axis, by the role of the axis they index; the sorted keys of
    a sort, by the sorted role; per-expert token counts and offsets of a sorted axis (batch-level values, legal
    only as a grouped matmul's group offsets), by the sorted role; the aranges that build an inverse permutation
    (``inv[perm] = arange(n)``), by the role of their axis."""
    token_index: dict = field(default_factory=dict)
    sorted_keys: dict = field(default_factory=dict)
    segments: dict = field(default_factory=dict)
    inverse_aranges: dict = field(default_factory=dict)

    def nodes(self) -> set:
        """Every node the routing facts name (the rewrite copies them as they are)."""
        return set(self.token_index) | set(self.sorted_keys) | set(self.segments) | set(self.inverse_aranges)

    def __bool__(self) -> bool:
        return bool(self.token_index or self.sorted_keys or self.segments or self.inverse_aranges)


@dataclass
class GraphAnalysis:
    ids: fx.Node | None = None                    # token-id placeholder (feeds the embedding)
    token_inputs: list = field(default_factory=list)  # placeholders that enter the plan key (ids, mask, positions)
    attention_mask: fx.Node | None = None
    position_ids: fx.Node | None = None
    batch: Any = None
    seq: Any = None
    roles: dict = field(default_factory=dict)     # node -> tuple of roles per dim
    kind: dict = field(default_factory=dict)      # node -> Kind
    space: dict = field(default_factory=dict)     # packed node -> packed space id
    attention: list = field(default_factory=list)
    slices: list = field(default_factory=list)
    tokenfn: set = field(default_factory=set)     # row values that are per-token functions of the token inputs
    paramdep: set = field(default_factory=set)    # values computed from parameters only (weights)
    boundaries: dict = field(default_factory=dict)  # row node fed by packed values -> why it leaves the region
    seeded: dict = field(default_factory=dict)    # continuation: placeholder -> roles of an activation input
    routing: RoutingFacts = field(default_factory=RoutingFacts)  # mixture-of-experts routing
    # sub-layers computed per row (passes/recurrent.py): module path -> class name; and the token-mixing
    # sub-layers an analysis met (module path -> class), which ``analyze`` then tries per row
    per_row_modules: dict = field(default_factory=dict)
    mixers: dict = field(default_factory=dict)
    mixer_reasons: dict = field(default_factory=dict)  # module path -> the token-mixing op that made it per row
    reason: str | None = None                     # why the graph is declined (None: it can be packed)
    candidate: bool = True                        # False: no attention or no token ids (nothing to share)

    @property
    def applicable(self) -> bool:
        return self.reason is None


def _find_inputs(gm: fx.GraphModule, sites: list, a: GraphAnalysis, no_attention_reason: str | None = None
                 ) -> None:
    graph = gm.graph
    emb = [n for n in graph.nodes if n.op == "call_function" and n.target in EMBEDDING]
    for e in emb:
        ids = _token_source(e.args[0])
        if ids is not None:
            a.ids = ids
            break
    if a.ids is None:
        raise NotCandidate(no_attention_reason or
                            "no token-id input feeding an embedding was found (inputs_embeds or a non-LM graph)")
    a.batch, a.seq = shape(a.ids)
    for axis, size in (("batch", a.batch), ("sequence", a.seq)):
        if isinstance(size, int) and size == 1:
            # Dynamo specializes size-1 dimensions even with dynamic=True: the axes are then unidentifiable
            raise Decline(f"the graph was traced with a {axis} axis of size 1 (token input `{a.ids.name}` of shape "
                          f"{[int(x) if isinstance(x, int) else str(x) for x in shape(a.ids)]}): Dynamo "
                          f"specializes size-1 dimensions, so rows and tokens cannot be told apart (a single row "
                          f"shares nothing with another); batches of other shapes compile graphs of their own")
    g = nx.DiGraph()
    for n in graph.nodes:
        for u in n.all_input_nodes:
            g.add_edge(u, n)
    mask_feeders: set = set()
    for s in sites:
        if isinstance(s.mask, fx.Node):
            mask_feeders |= nx.ancestors(g, s.mask) | {s.mask}
    if not sites:  # no attention here: the masks built for later graphs ([.., T, T] values) name the padding mask
        for n in graph.nodes:
            v = val(n)
            if n.op != "placeholder" and isinstance(v, torch.Tensor) and v.dim() == 4 and \
                    same_size(v.shape[-1], a.seq) and same_size(v.shape[-2], a.seq):
                mask_feeders |= nx.ancestors(g, n) | {n}
    qkv_feeders: set = set()
    for s in sites:
        for x in (s.q, s.k, s.v):
            qkv_feeders |= nx.ancestors(g, x) | {x}
    for p in graph.nodes:
        if p.op != "placeholder" or p is a.ids:
            continue
        v = val(p)
        if not isinstance(v, torch.Tensor) or v.dim() != 2 or v.is_floating_point():
            continue
        # The batch size of a mask or position input may be a symbol of its own (Dynamo unifies it with the
        # ids' only when some op ties them): accept any batch size here; each call checks the real shapes.
        if not (same_size(v.shape[1], a.seq) and (same_size(v.shape[0], a.batch) or same_size(v.shape[0], 1)
                                                  or isinstance(v.shape[0], torch.SymInt))):
            continue
        if p in mask_feeders and a.attention_mask is None:
            a.attention_mask = p
        elif p in qkv_feeders and a.position_ids is None:
            a.position_ids = p
    a.token_inputs = [x for x in (a.ids, a.attention_mask, a.position_ids) if x is not None]
    # Every input a mask reads must enter the plan's key: a mask input the plan ignored would let packed
    # tokens see keys (padding) that the model hides.
    for p in graph.nodes:
        v = val(p)
        if (p.op == "placeholder" and p in mask_feeders and p not in a.token_inputs and isinstance(v, torch.Tensor)
                and v.dim() > 0 and not _is_state(p, v)):
            raise Decline(f"input `{p.name}` of shape {list(v.shape)} feeds the attention mask but is not a [batch, "
                          f"seq] token input like `{a.ids.name}` {list(shape(a.ids))}; pass a 2-D 0/1 "
                          f"attention_mask (a 4-D or custom mask cannot be packed)")


# Ops that hand the token ids on unchanged in value and in [batch, seq] layout: a device or dtype move
# (``ids.to(device)``: Llama 4) or a reshape to the same 2-D shape (``ids.view(-1, T)``: GPT-2). The embedding
# still reads the token input through them.
_IDS_PASS_THROUGH = VIEW_NAMES | {"to", "contiguous", "long", "int", "clone", "detach"}


def _token_source(x) -> fx.Node | None:
    """The 2-D placeholder whose values an embedding's index argument ``x`` is, through ops that keep the values
    and the [batch, seq] shape (``_IDS_PASS_THROUGH``); None when it is something else (inputs_embeds, a
    computed index)."""
    want = shape(x) if isinstance(x, fx.Node) else None
    if want is None or len(want) != 2:
        return None
    while isinstance(x, fx.Node) and x.op != "placeholder":
        if op_name(x) not in _IDS_PASS_THROUGH or not x.args or not isinstance(x.args[0], fx.Node):
            return None
        src = shape(x.args[0])
        if src is None or len(src) != 2 or not all(same_size(u, v) for u, v in zip(src, want)):
            return None
        x = x.args[0]
    return x if isinstance(x, fx.Node) else None


def _is_state(p: fx.Node, v) -> bool:
    """Parameters and buffers (Dynamo names their placeholders after the module attribute path)."""
    return isinstance(v, torch.nn.Parameter) or "_parameters_" in p.name or "_buffers_" in p.name


def _replaced_nodes(sites: list) -> set:
    """The nodes the attention sites replace as a whole: an eager pattern's inner nodes and a top-k key
    selection's (the rewrite emits them itself)."""
    return set().union(*[s.internal for s in sites], *[s.selection.nodes for s in sites if s.selection is not None])


def _mask_only_nodes(gm: fx.GraphModule, sites: list) -> set:
    """Nodes whose every use leads only into attention masks (dropped once the mask is verified)."""
    sinks = {s.mask for s in sites if isinstance(s.mask, fx.Node)}
    site_nodes = {s.node for s in sites}
    internal = _replaced_nodes(sites)
    only: set = set()
    for n in reversed(list(gm.graph.nodes)):
        if n.op in ("placeholder", "output"):
            continue
        users = list(n.users)
        if not users:
            continue
        ok = True
        for u in users:
            if u in only:
                continue
            if u in internal and n in sinks:
                continue
            if u in site_nodes and n in sinks and n is not next(s for s in sites if s.node is u).q:
                continue
            ok = False
            break
        if ok:
            only.add(n)
    return only


def analyze(gm: fx.GraphModule, seeds: dict | None = None) -> GraphAnalysis:
    """The graph's facts and the region decision (``a.reason`` None: it packs). ``seeds`` ({placeholder name: roles}) analyses a *continuation* graph: one without
    token ids whose named inputs are activations of the batch (``[B, T, ...]`` values whose entry at (b, t)
    the caller knows to be a function of the row's prefix up to t, e.g. the hidden states a graph break or a
    DDP/FSDP split passes on). They enter the packed region directly; the caller supplies the plan."""
    per_row: dict = {}
    reasons: dict = {}
    while True:
        a = GraphAnalysis(per_row_modules=dict(per_row), mixer_reasons=reasons)
        try:
            _analyze(gm, a, seeds)
        except NotCandidate as e:
            a.reason, a.candidate = str(e), False
            count("graphs_not_candidate")
        except Decline as e:
            new = {c for path, c in a.mixers.items() if path not in per_row}
            if new:
                # A sub-layer that mixes tokens without attention (a recurrent scan, a short causal conv): analyse
                # again with every sub-layer of its class computed per row (their causality per row is checked
                # on the first call's shapes: recurrent.verify_per_row).
                for cls in new:
                    first = next(p for p, c in a.mixers.items() if c is cls)
                    for path in recurrent.same_class_sublayers(gm, {cls}):
                        reasons.setdefault(path, f"its class's `{first}`: {reasons.get(first, '?')}")
                per_row.update(recurrent.same_class_sublayers(gm, new))
                continue
            a.reason = str(e)
            count("graphs_declined")
            torch._dynamo.utils.counters["replay_declines"][a.reason] += 1
        else:
            count("graphs_packable")
        return a


def _seed_inputs(gm: fx.GraphModule, a: GraphAnalysis, seeds: dict) -> None:
    by_name = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    for name, roles in seeds.items():
        if name not in by_name:
            raise Decline(f"continuation input `{name}` is not an input of the graph")
        a.seeded[by_name[name]] = tuple(roles)
    if not a.seeded:
        raise NotCandidate("no activation input of the batch to continue packing from")
    # an input changed in place must change in the caller's tensor: its packed copy would hide the write
    for p in a.seeded:
        seen, todo = set(), [p]
        while todo:
            x = todo.pop()
            for u in x.users:
                if u in seen:
                    continue
                seen.add(u)
                name = op_name(u)
                if (name.endswith("_") and not name.startswith("_") or name in ("copy_", "index_put_")) and \
                        u.args and u.args[0] is x:
                    raise Decline(f"node `{u.name}` ({name}) writes into the input `{p.name}` in place")
                if name in VIEW_NAMES or name in ("getitem", "transpose", "permute", "unsqueeze", "squeeze",
                                                   "select", "narrow", "expand", "t", "view_as", "__getitem__"):
                    todo.append(u)
    first, roles = next(iter(a.seeded.items()))
    sh = shape(first)
    if roles.count(T) != 1:
        raise Decline(f"continuation input `{first.name}` has no sequence axis")
    a.seq = sh[roles.index(T)]
    a.batch = sh[roles.index(B)] if B in roles else 1


def _analyze(gm: fx.GraphModule, a: GraphAnalysis, seeds: dict | None = None) -> None:
    sites = find_attention_sites(gm)
    if seeds:
        _seed_inputs(gm, a, seeds)
    else:
        # a graph with token ids but no attention (the head of a forward that a DDP bucket split or a graph
        # break cut before the first attention) is packed too, so the graphs after it can continue from its
        # outputs; without token ids it has nothing to share
        _find_inputs(gm, sites, a, no_attention_reason=None if sites else
                     "the graph has no attention, so there is no shared prefix to compute once")
    a.attention = sites
    by_node = {s.node: s for s in sites}
    internal = _replaced_nodes(sites)
    mask_only = _mask_only_nodes(gm, sites)
    roles, kind, space = a.roles, a.kind, a.space
    first_boundary: dict = {}  # row node -> the earliest boundary reason among its packed ancestors
    replayed: set = set()      # row values computed from replayed activations (token-dependent, per row)

    def is_packed(x):
        return isinstance(x, fx.Node) and kind.get(x) == Kind.PACKED

    def positional(x):
        """A row value with a sequence axis but no batch axis of size B (e.g. arange(T), rotary tables)."""
        r = roles.get(x)
        return r is not None and T in r and B not in r and BT not in r

    for n in gm.graph.nodes:
        if n.op == "placeholder":
            v = val(n)
            if n in a.seeded:  # an activation of the batch: packed from the start (gathered on entry)
                kind[n], roles[n], space[n] = Kind.PACKED, a.seeded[n], 0
                continue
            kind[n] = Kind.ROW
            if n in a.token_inputs:
                roles[n] = (B, T) if same_size(v.shape[0], a.batch) else (None, T)
                a.tokenfn.add(n)
            elif isinstance(v, torch.Tensor):
                # per-row data (labels, masks, advantages): its batch axis, if any, is dim 0 of size B
                r = [None] * v.dim()
                if _is_state(n, v):
                    if isinstance(v, torch.nn.Parameter) or "_parameters_" in n.name:
                        a.paramdep.add(n)
                elif v.dim() >= 2 and (same_size(v.shape[0], a.batch) or same_size(v.shape[0], 1)):
                    # [B, T, ...] per-row data, or [1, T, ...] data that depends on the column only
                    r[0] = B if same_size(v.shape[0], a.batch) and not same_size(v.shape[0], 1) else None
                    if same_size(v.shape[1], a.seq):
                        r[1] = T
                elif v.dim() == 1 and same_size(v.shape[0], a.batch):
                    r[0] = B
                roles[n] = tuple(r)
            continue
        if n.op == "output":
            leaving = [x for x in n.all_input_nodes if is_packed(x) and routing_value(x, a)]
            if leaving:
                raise Decline(f"{node_desc(leaving[0])}: a routing value (expert slots, rows sorted by expert or "
                              f"per-expert counts) is an output of the graph, with no [batch, seq] layout")
            continue
        if n in mask_only:
            # an activation's shape, dtype or device (HF's mask functions read inputs_embeds' size) is not data
            metadata = op_name(n) in ("size", "sym_size", "dim", "stride", "numel") or (
                op_name(n) == "getattr" and len(n.args) > 1 and n.args[1] in ("dtype", "device", "shape", "ndim"))
            data = [] if metadata else [x for x in n.all_input_nodes if is_packed(x) or x in replayed]
            if data:
                # a score bias computed from the hidden states (Inkling's relative logits): the mask check
                # evaluates masks from the inputs alone and cannot stand for it
                raise Decline(f"{node_desc(n)} builds an attention's mask or score bias from the activations "
                              f"(`{data[0].name}`), which the mask check cannot verify as causal-with-padding")
            kind[n] = Kind.MASK
            continue
        if n.args and is_packed(n.args[0]) and op_name(n) in ("size", "sym_size", "dim", "stride") and \
                n.op == "call_method":
            # the shape of a packed value, as in the original [B, T, ...] layout: the rewrite reads it off the
            # replayed value, whose data nothing uses (dead code once traced); reshapes of packed values take
            # their shapes from the roles, not from these sizes
            kind[n], roles[n] = Kind.ROW, None
            continue
        if n in internal:
            kind[n] = Kind.INTERNAL
            continue
        if n in a.routing.inverse_aranges:
            # the arange of an inverse permutation: as long as the packed slots (the rewrite sizes it so)
            e = next(iter(n.users)).args[0]
            kind[n], roles[n], space[n] = Kind.PACKED, (a.routing.inverse_aranges[n],), space.get(e, 0)
            continue
        ins = n.all_input_nodes
        verdict = recurrent.classify(n, a, replayed, same_size, Decline)
        for x, r in verdict.admitted:  # a per-row layer's output, read here: gatherable (passes/recurrent.py)
            a.tokenfn.add(x)
            roles[x] = r
        if verdict.row:  # inside a recurrent layer computed per row
            kind[n], roles[n] = Kind.ROW, None
            replayed.add(n)
            continue
        packed_ins = [x for x in ins if is_packed(x)]
        if n in by_node:
            s = by_node[n]
            # a gatherable input (a per-row layer's output, as Inkling's convolved values) is read at the packed
            # tokens like the token inputs
            bad = [x for x in (s.q, s.k, s.v) if not is_packed(x) and x not in a.tokenfn]
            if bad:
                why = next((first_boundary[x] for x in bad if x in first_boundary), None)
                raise Decline(why or f"attention {node_desc(n)} has inputs that are not per-token")
            if any(roles.get(x) is None or len(roles[x]) != 4 or roles[x][2] != T or roles[x][0] not in (B, None)
                   for x in (s.q, s.k, s.v)):
                raise Decline(f"attention {node_desc(n)} does not take [batch, heads, seq, dim] inputs")
            if len({space.get(x, 0) for x in (s.q, s.k, s.v)}) != 1 or space.get(s.q, 0) != 0:
                raise Decline(f"attention {node_desc(n)} mixes sliced and whole sequences")
            if s.sinks is not None and (kind.get(s.sinks) != Kind.ROW or any(roles.get(s.sinks) or (None,))):
                raise Decline(f"attention {node_desc(n)} has sink logits `{s.sinks.name}` that depend on the "
                              "batch or the tokens (a per-head vector of weights is expected)")
            if s.selection is not None:
                why = key_selection.check(s.selection, a, is_packed)
                if why is not None:
                    raise Decline(f"attention {node_desc(n)} reads only each query's top-k keys, by scores that are "
                                  f"not a function of the query's and the key's tokens alone: {why}")
            kind[n], roles[n], space[n] = Kind.PACKED, roles[s.q][:3] + (None,), 0
            continue
        # roles of the output, from the op
        r = infer_roles(n, roles, a)
        if not packed_ins and isinstance(r, tuple) and B not in r and _expands_to_batch(n, r, a):
            # a positional table (positions, rope angles) broadcast to the batch (``positions.view(1, 1, T)
            # .expand(k, B, T)``: multimodal rope's sections): equal along that axis, so it is the batch axis of a
            # gatherable value (row b's entry at column t is the table's at t)
            r = tuple(B if i == _expands_to_batch(n, r, a) - 1 else role for i, role in enumerate(r))
            a.tokenfn.add(n)
        if not ins and isinstance(r, tuple) and constant_table(n, a) is not None:
            a.tokenfn.add(n)  # a constant [B, T] tensor: gatherable like the token inputs (roles.constant_table)
        token_ins = [x for x in ins if x in a.tokenfn]
        weights = [x for x in ins if x in a.paramdep]
        per_row = [x for x in ins if not is_packed(x) and x not in a.tokenfn and kind.get(x) != "mask"
                   and roles.get(x) and any(role in (B, BT) for role in roles[x])]
        if not packed_ins and not (token_ins and weights):
            # Not an activation: stays in the [B, T] layout. Values computed from the token inputs alone,
            # token by token, stay gatherable (their value at a packed token is fixed by the plan's key).
            kind[n] = Kind.ROW
            roles[n] = r if isinstance(r, tuple) else None
            if weights and not token_ins and not any(roles.get(x) and any(roles[x]) for x in ins):
                a.paramdep.add(n)
            if (token_ins and not per_row and isinstance(r, str) and prefix_scan(n, roles)
                    and not any(x in replayed for x in ins)):
                # cumsum of the mask along the sequence (left-pad-aware positions): its value at (b, t)
                # depends on the token inputs at (b, <= t) only, which the plan's sharing key covers
                r = roles[n] = roles[n.args[0]]
            if (token_ins and not per_row and isinstance(r, tuple) and (T in r or BT in r)
                    and _seq_slice(n, roles, a) is None
                    # a per-row layer's admitted output (replayed, and gatherable) scaled on its way out (Falcon-H1's
                    # ``ssm_out_multiplier``) is still a per-token function of gatherable values
                    and not any(x in replayed and x not in a.tokenfn for x in ins)):
                a.tokenfn.add(n)
            if any(x in replayed for x in ins):
                replayed.add(n)
            carried = [first_boundary[x] for x in ins if x in first_boundary]
            if carried:
                first_boundary[n] = carried[0]
            continue
        if not packed_ins:
            packed_ins = token_ins  # the first activation: token inputs are gathered into space 0
            for x in token_ins:
                space.setdefault(x, 0)
        # token-dependent node: decide whether it stays packed
        why = None
        if isinstance(r, str):
            why = r
        elif r is None:
            why = "cannot follow the sequence axis through it"
        spaces = {space[x] for x in packed_ins if is_packed(x)} or {0}
        if why is None and len(spaces) > 1:
            why = "it combines values sliced differently along the sequence axis"
        if why is None:
            for x in ins:
                if is_packed(x) or kind.get(x) == Kind.MASK or x in a.tokenfn:
                    continue
                if x in replayed:
                    why = first_boundary.get(x) or f"it combines shared activations with `{x.name}`, which " \
                                                    "left the packed region"
                    break
                rx = roles.get(x)
                if rx and any(role in (B, BT) for role in rx):
                    why = f"it combines shared activations with the per-row value `{x.name}`"
                    break
                if rx and T in rx and not positional(x):
                    why = f"it combines shared activations with the per-row value `{x.name}`"
                    break
                if isinstance(r, tuple) and _misaligned(x, n, r, a):
                    why = (f"it combines shared activations with `{x.name}`, which has an axis as long as the "
                           f"batch or the sequence that the analysis cannot identify")
                    break
        if why is None and isinstance(r, tuple):
            kind[n], roles[n] = Kind.PACKED, r
            sl = _seq_slice(n, roles, a)
            if sl is not None and spaces != {0} and n.meta.get(REFINABLE):
                sl = None  # the head's rows are a slice's already (sunk below the final norm): an identity here
            if sl is not None and spaces != {0}:
                why = "it slices the sequence axis of an already sliced value"
            elif sl is not None:
                a.slices.append(SliceSite(n, sl[0], sl[1], len(a.slices) + 1))
                space[n] = len(a.slices)
            else:
                space[n] = spaces.pop()
            if why is None:
                continue
        kind[n] = Kind.ROW
        roles[n] = r if isinstance(r, tuple) else None
        replayed.add(n)
        # name the earliest cause: a value that left the packed region upstream of this one
        inherited = next((first_boundary[x] for x in ins if x in replayed and x in first_boundary), None)
        reason = inherited or recurrent.layer_reason(n, why, a) or f"{node_desc(n)}: {why}"
        if any(routing_value(x, a) for x in packed_ins):
            # a slot or sorted-row axis, or the batch's expert counts, has no [B, T] layout to replay to
            raise Decline(_aux_loss_reason(n) or reason)
        a.boundaries[n] = reason
        first_boundary[n] = reason
    if a.seeded and not any(k == Kind.PACKED and n not in a.seeded for n, k in kind.items()):
        # every activation input leaves the packed region at once: running it packed would compute nothing once
        raise Decline(next(iter(a.boundaries.values()), "no per-token op reads the activation inputs"))
    _check_layout(gm, a)


def is_reshape(n: fx.Node) -> bool:
    """A reshape the rewrite re-emits with packed sizes (``packed_reshape``)."""
    return (op_name(n) in ("view", "reshape", "flatten", "unflatten", "squeeze") and n.op == "call_method") or \
        (n.op == "call_function" and n.target in (torch.reshape, torch.flatten))


def packed_reshape(roles: tuple, out_shape, n_tok) -> list | str:
    """The sizes of a reshape of a packed value, with ``n_tok`` packed tokens: the batch axis becomes 1, the
    sequence axis ``n_tok``, a routing axis -1 (inferred); or why it has no packed form."""
    out = []
    for role, size in zip(roles, out_shape):
        if role == B:
            out.append(1)
        elif role in (T, BT):
            out.append(n_tok)
        elif role is not None:
            out.append(-1)  # a routing axis ("BT*k" slots, "S:..." sorted rows): k * n_tok long, inferred
        elif isinstance(size, int):
            out.append(size)
        else:
            return "a reshape with a symbolic size outside the batch and sequence axes"
    if out.count(-1) > 1:
        return "a reshape with two routing axes"
    return out


def _expands_to_batch(n: fx.Node, r: tuple, a: GraphAnalysis) -> int:
    """1 + the dimension an expand of a positional value (roles with T, without B) broadcasts from size 1 to the
    batch size (the last such dimension: the batch sits right before the positions), or 0."""
    if not is_expand(n) or T not in r or not isinstance(n.args[0], fx.Node):
        return 0
    base, out = shape(n.args[0]), shape(n)
    br = a.roles.get(n.args[0])
    if base is None or out is None or br is None or B in br or BT in br or len(base) != len(out):
        return 0
    dims = [i for i, (x, y) in enumerate(zip(base, out)) if r[i] is None and same_size(x, 1)
            and same_size(y, a.batch) and not same_size(y, 1)]
    return dims[-1] + 1 if dims else 0


def is_expand(n: fx.Node) -> bool:
    return op_name(n) in ("expand", "broadcast_to") and shape(n) is not None


def _check_layout(gm: fx.GraphModule, a: GraphAnalysis) -> None:
    """Decide, before anything is rewritten, that every packed node has a packed layout and every value that
    leaves the region can be replayed, so the rewrite never declines halfway through building a graph."""
    sites = {s.node for s in a.attention}
    for n in gm.graph.nodes:
        k = a.kind.get(n)
        target = _inplace_target(n)
        if target is not None and not any(a.roles.get(target) or ()) and _weight_data(target):
            # Gemma 3n clamps its AltUp coefficients' .data in place each step: AOT autograd cannot take an
            # input mutation through a non-differentiable view in a graph of ours (the packed graph's inputs)
            raise Decline(f"in-place `{op_name(n)}` at node `{n.name}` writes a weight's data inside the step "
                          f"(`{target.name}`), which the packed graph cannot take")
        if n.op == "output" or k == Kind.ROW:
            # a row node (or the output) reads packed values in the [B, T] layout: each is replayed there
            target = _inplace_target(n)
            if target is not None and a.kind.get(target) == Kind.PACKED:
                # the replayed copy would take the write, and the packed tensor read afterwards would miss it
                # (Llama 4's shared expert output `out.add_(routed experts)`, the experts run per row)
                raise Decline(f"in-place `{op_name(n)}` at node `{n.name}` writes values computed per row into "
                              f"`{target.name}`, a packed tensor")
            for x in n.all_input_nodes:
                r = a.roles.get(x) or ()
                if a.kind.get(x) == Kind.PACKED and x.op != "placeholder" and B not in r and BT not in r:
                    raise Decline(f"node `{x.name}` has no batch axis to replay to")
        elif k == Kind.PACKED and n.op != "placeholder" and n not in sites and n not in a.routing.inverse_aranges:
            if is_reshape(n) or op_name(n) in NEW_TENSOR_NAMES:
                why = packed_reshape(a.roles[n], shape(n), 0)
                if isinstance(why, str):
                    raise Decline(why)
            elif is_expand(n) and any(not isinstance(s, int) for r, s in zip(a.roles[n], shape(n)) if r is None):
                raise Decline(f"an expand with a symbolic size at node `{n.name}`")



def _weight_data(x: fx.Node) -> bool:
    """``x`` is a graph input or a view of one's data (``p.data``, ``p.detach()``), not computed from tokens."""
    while x.op != "placeholder":
        if op_name(x) not in ("_get_data_attr", "detach", "view", "reshape", "data") or not x.args or \
                not isinstance(x.args[0], fx.Node):
            return False
        x = x.args[0]
    return True


def _inplace_target(n: fx.Node) -> fx.Node | None:
    """The tensor an in-place op (a ``foo_`` method or ``torch.foo_``, ``operator.iadd``-style) writes, or None."""
    if n.op not in ("call_method", "call_function") or not n.args or not isinstance(n.args[0], fx.Node):
        return None
    name = op_name(n)
    if name.endswith("_") and not name.startswith("_") and name not in ("requires_grad_", "retain_grad_"):
        return n.args[0]
    if n.op == "call_function" and getattr(n.target, "__name__", "").startswith("i") and \
            n.target.__module__ == "_operator" and name in ("iadd", "isub", "imul", "itruediv"):
        return n.args[0]
    return None


def _misaligned(x: fx.Node, n: fx.Node, out_roles: tuple, a: GraphAnalysis) -> bool:
    """A role-less tensor broadcast against a packed value along its B or T axis would be silently wrong
    after packing (it is indexed by row and column, not by packed token)."""
    if not is_elementwise(n):
        return False  # weights of linear/embedding are not broadcast against the tokens
    xs, out = shape(x), shape(n)
    if xs is None or out is None:
        return False
    xr = a.roles.get(x) or (None,) * len(xs)
    off = len(out) - len(xs)
    for i, size in enumerate(xs):
        j = i + off
        # a dimension without a role where the result has one (a table's batch-sized axis that the analysis
        # could not name): gathered by row and column, it would keep its size against the packed axis
        if xr[i] is None and 0 <= j < len(out_roles) and out_roles[j] is not None and not same_size(size, 1):
            return True
    return False


def _seq_slice(n: fx.Node, roles: dict, a: GraphAnalysis):
    """(start, stop) when ``n`` slices part of the sequence axis of a packed value, else None."""
    if not (n.op == "call_function" and n.target is operator.getitem):
        return None
    base, idx = n.args
    if isinstance(val(base), (tuple, list)):
        return None
    if not isinstance(idx, tuple):
        idx = (idx,)
    br = roles.get(base)
    if br is None or T not in br:
        return None
    tdim = br.index(T)
    nd = len(br)
    n_real = sum(1 for x in idx if x is not None and x is not Ellipsis)
    d = 0
    for x in idx:
        if x is Ellipsis:
            d += nd - n_real
            continue
        if x is None:
            continue
        if d == tdim:
            if not isinstance(x, slice):
                return None
            if x.step not in (None, 1):
                raise Decline(f"{node_desc(n)} slices the sequence axis with a step")
            start, stop = x.start, x.stop
            for v in (start, stop):
                if v is not None and not isinstance(v, int) and not is_symint_node(v):
                    raise Decline(f"{node_desc(n)} slices the sequence axis at a data-dependent position")
            symbolic = any(isinstance(v, fx.Node) for v in (start, stop))
            if n.meta.get(REFINABLE):  # a full slice placed to give the LM head's rows a space (cross_entropy.py)
                return (0 if start is None else start, 2**62 if stop is None else stop)
            if not symbolic:
                if start in (None, 0) and stop is None:
                    return None
                if isinstance(a.seq, int):
                    s0, s1, _ = slice(start, stop).indices(a.seq)
                    if s0 == 0 and s1 == a.seq:
                        return None
            # bounds that are SymInt nodes are evaluated per call by the runtime
            return (0 if start is None else start, 2**62 if stop is None else stop)
        d += 1
    return None



def _aux_loss_reason(n: fx.Node) -> str | None:
    """HF's load-balancing loss counts each expert's share of the batch's tokens: named, with what to do."""
    if "load_balancing_loss_func" not in (n.meta.get("stack_trace") or ""):
        return None
    return (f"the router's load-balancing loss (`load_balancing_loss_func`, {node_desc(n)}) counts each "
            f"expert's share of the batch's tokens, and a packed batch holds each shared token once; call the model "
            f"with output_router_logits=False (the default) inside the compiled step")


def mode_decline(a: GraphAnalysis, mode: str, per_row_layers: dict) -> str | None:
    """Why ``mode`` cannot pack this analysed graph (None: it can). ``per_row_layers``: the recurrent layers
    computed per row (``recurrent.per_row_layers``), path -> class name."""
    if mode != "detach_prefix":
        return None
    selecting = [x for x in a.attention if x.selection is not None]
    if selecting:
        return (f"attention `{selecting[0].node.name}` reads only each query's top-k keys (a sparse indexer), which "
                f"mode='detach_prefix' does not support; use mode='exact'")
    if per_row_layers:
        path, cls = next(iter(per_row_layers.items()))
        # its shared positions would feed the branch tokens through a state autograd still sees, which is neither
        # exact nor LongStraw's approximation (the shared state a constant)
        return (f"recurrent layer `{path}` ({cls}) is computed per row, which mode='detach_prefix' does not support "
                f"(its state at the branch point would not be a constant); use mode='exact'")
    return None


def square_token_input(placeholders) -> str | None:
    """Why the axes could not be told apart, when an integer [B, T] input has one symbol for both sizes:
    Dynamo's duck shaping gives equal sizes one symbol, so a square batch (B == T) loses which axis is which."""
    for n in placeholders:
        v = n.meta.get("example_value", n.meta.get("val"))
        if isinstance(v, torch.Tensor) and v.dim() == 2 and not v.is_floating_point() and \
                isinstance(v.shape[0], torch.SymInt) and isinstance(v.shape[1], torch.SymInt) and \
                v.shape[0].node.expr == v.shape[1].node.expr:
            return (f"input `{n.name}` has batch size == sequence length ({v.shape[0]}), and Dynamo's duck shaping "
                    f"gave both one symbol, so the batch and sequence axes cannot be told apart; pad the batch to "
                    f"another length, or set torch.fx.experimental._config.use_duck_shape = False")
    return None
