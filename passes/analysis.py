"""Sequence-axis analysis of a Dynamo FX graph: which nodes may run on packed tokens.

Facts only, no mutation. For every node we work out which of its dimensions is the batch axis ``B`` and
which the sequence axis ``T`` (its *roles*), following them from the token inputs through views, reshapes,
transposes, broadcasts and reductions, and we classify the node:

* ``packed``   - per-token along ``T``: it may run on the packed unique tokens of the batch;
* ``row``      - computed in the original ``[B, T, ...]`` layout (parameters, per-row data such as labels
                 or advantages, positional tables like ``arange(T)``, everything after the packed region);
* ``mask``     - only builds the attention mask of an attention site (verified at run time, then dropped);
* ``internal`` - the inner nodes of a matmul-softmax-matmul attention, replaced as a whole.

The packed region must reach every attention site; otherwise the graph is declined and ``reason`` names the
first node that stopped it. A packed value used by a ``row`` node leaves the region there: the rewrite
replays it to ``[B, T, ...]`` (an index op whose backward is the scatter-add that removes duplicated work).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import torch
import torch.fx as fx

from . import recurrent

B, T, BT = "B", "T", "BT"  # roles of a dimension; BT is a flattened batch*sequence dimension
# Two more roles, for mixture-of-experts routing: "BT*k" is a flattened batch*sequence*k dimension, token-major
# (k routing slots per token); "S:<node>" is the token (or slot) axis in the data-dependent order of the sort at
# <node> (HF's experts group the (token, expert) pairs by expert). Both are built by _slots_role / _sorted_role.


def _slots_role(k: int) -> str:
    return BT if k == 1 else f"{BT}*{k}"


def _slots(role) -> int | None:
    """k of a "BT*k" role (1 for BT), None for any other role."""
    if role == BT:
        return 1
    if isinstance(role, str) and role.startswith(BT + "*"):
        return int(role[len(BT) + 1:])
    return None


def _sorted_role(sort_node: fx.Node) -> str:
    return f"S:{sort_node.name}"


def _is_sorted_role(role) -> bool:
    return isinstance(role, str) and role.startswith("S:")

_SDPA = {torch._C._nn.scaled_dot_product_attention, torch.nn.functional.scaled_dot_product_attention}
_EMBEDDING = {torch.nn.functional.embedding}
_LINEAR = {torch._C._nn.linear, torch.nn.functional.linear}
_MATMUL = {torch.matmul, operator.matmul}

# Ops that act on each element (with broadcasting); names cover torch.*, F.* and Tensor methods.
_ELEMENTWISE_NAMES = {
    "add", "sub", "mul", "div", "true_divide", "truediv", "neg", "pow", "rsqrt", "sqrt", "exp", "log", "log1p",
    "tanh", "sigmoid", "sin", "cos", "abs", "erf", "reciprocal", "square", "maximum", "minimum", "clamp", "clip",
    "where", "silu", "gelu", "relu", "softplus", "mish", "float", "half", "bfloat16", "double", "to", "type_as",
    "contiguous", "clone", "detach", "type", "eq", "ne", "lt", "le", "gt", "ge", "and_", "or_", "invert",
    "logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or", "masked_fill", "floordiv", "mod",
    "sub_", "add_", "mul_", "tanh_", "fill_", "rsub", "_log_api_usage_once", "requires_grad_",
    "itruediv", "imul", "iadd", "isub",
}
_REDUCE_NAMES = {"mean", "sum", "amax", "amin", "logsumexp", "norm", "var", "std", "prod", "max", "min", "argmax",
                 "argmin", "all", "any"}
_ALONG_DIM_NAMES = {"softmax", "log_softmax", "cumsum", "cumprod", "sort", "topk"}
_VIEW_NAMES = {"view", "reshape", "flatten", "unflatten", "view_as", "reshape_as"}
_EXPAND_NAMES = {"expand", "broadcast_to", "expand_as"}
_DROPOUT = {torch.nn.functional.dropout, torch.dropout}


def op_name(node: fx.Node) -> str:
    t = node.target
    if isinstance(t, str):
        return t
    return getattr(t, "__name__", str(t))


def _val(node: Any):
    if isinstance(node, fx.Node):
        return node.meta.get("example_value", node.meta.get("val"))
    return node


def _shape(node: Any):
    v = _val(node)
    return tuple(v.shape) if isinstance(v, torch.Tensor) else None


def same_size(a, b) -> bool:
    """Equality of ints or SymInts without guarding (compares sympy expressions)."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    ea = a.node.expr if isinstance(a, torch.SymInt) else a
    eb = b.node.expr if isinstance(b, torch.SymInt) else b
    try:
        return bool(ea == eb)
    except Exception:  # noqa: BLE001 - an undecidable comparison is "not provably equal"
        return False


class Decline(Exception):
    """The graph cannot be packed; the message says why in words a user can act on."""


class _NotCandidate(Decline):
    """The graph has nothing to share (a loss tail after a graph break, a non-LM graph)."""


@dataclass
class AttentionSite:
    node: fx.Node                 # the node whose output is the attention result
    q: fx.Node
    k: fx.Node
    v: fx.Node
    scale: float
    mask: fx.Node | None          # the attention-mask value to verify (bool, or additive float)
    causal_flag: bool             # SDPA is_causal=True (top-left causal) with no mask
    internal: set = field(default_factory=set)  # eager pattern nodes replaced by the site
    softcap: float = 0.0          # scores c * tanh(s / c) before the mask (Gemma 2), 0: none
    sinks: fx.Node | None = None  # per-head sink logits [Hq] joining the softmax (GPT-OSS), None: none


@dataclass
class SliceSite:
    """A partial slice of the sequence axis of a packed value: packs the selected tokens again."""
    node: fx.Node
    start: Any                    # int, or a SymInt node of the graph (evaluated per call)
    stop: Any
    space: int                    # index of the packed space it creates (0 is the whole batch)


@dataclass
class GraphAnalysis:
    ids: fx.Node | None = None                    # token-id placeholder (feeds the embedding)
    token_inputs: list = field(default_factory=list)  # placeholders that enter the plan key (ids, mask, positions)
    attention_mask: fx.Node | None = None
    position_ids: fx.Node | None = None
    batch: Any = None
    seq: Any = None
    roles: dict = field(default_factory=dict)     # node -> tuple of roles per dim
    kind: dict = field(default_factory=dict)      # node -> "packed" | "row" | "mask" | "internal"
    space: dict = field(default_factory=dict)     # packed node -> packed space id
    attention: list = field(default_factory=list)
    slices: list = field(default_factory=list)
    tokenfn: set = field(default_factory=set)     # row values that are per-token functions of the token inputs
    paramdep: set = field(default_factory=set)    # values computed from parameters only (weights)
    boundaries: dict = field(default_factory=dict)  # row node fed by packed values -> why it leaves the region
    seeded: dict = field(default_factory=dict)    # continuation: placeholder -> roles of an activation input
    # mixture-of-experts routing (see _routing_roles): values that are indices into a token axis, by the role of
    # the axis they index; the sorted keys of a sort, by the sorted role; per-expert token counts and offsets
    # of a sorted axis (batch-level values, legal only as a grouped matmul's group offsets); the aranges that
    # build an inverse permutation (``inv[perm] = arange(n)``), by the role of their axis
    token_index: dict = field(default_factory=dict)
    sorted_keys: dict = field(default_factory=dict)
    segments: dict = field(default_factory=dict)
    inverse_aranges: dict = field(default_factory=dict)
    reason: str | None = None                     # why the graph is declined (None: it can be packed)
    candidate: bool = True                        # False: no attention or no token ids (nothing to share)

    @property
    def applicable(self) -> bool:
        return self.reason is None


def _node_desc(node: fx.Node) -> str:
    return f"`{op_name(node)}` at node `{node.name}`"


# --------------------------------------------------------------------------------------------- attention sites

def _sdpa_site(node: fx.Node) -> AttentionSite:
    args = list(node.args) + [None] * 6
    q, k, v = args[0], args[1], args[2]
    kw = node.kwargs
    mask = kw.get("attn_mask", args[3])
    dropout_p = kw.get("dropout_p", args[4] if args[4] is not None else 0.0)
    is_causal = kw.get("is_causal", args[5] if args[5] is not None else False)
    scale = kw.get("scale", None)
    if isinstance(dropout_p, fx.Node) or (dropout_p or 0.0) > 0.0:
        raise Decline(f"attention {_node_desc(node)} uses dropout (dropout_p={dropout_p}): dropout is random per "
                      "row, so shared tokens cannot be computed once; set attention_dropout=0 or call model.eval()")
    if mask is None and not is_causal:
        raise Decline(f"attention {_node_desc(node)} is bidirectional (no mask, is_causal=False): a token would "
                      "see later tokens, so prefixes cannot be shared")
    if mask is not None and is_causal:
        raise Decline(f"attention {_node_desc(node)} has both a mask and is_causal=True")
    if scale is None:
        scale = 1.0 / math.sqrt(_shape(q)[-1])
    if not isinstance(scale, (int, float)):
        raise Decline(f"attention {_node_desc(node)} has a data-dependent scale")
    return AttentionSite(node, q, k, v, float(scale), mask, bool(is_causal and mask is None))


def _skip(n: fx.Node, internal: set) -> fx.Node:
    """Walk up through dtype casts and inactive dropout in the eager attention pattern."""
    while isinstance(n, fx.Node):
        name = op_name(n)
        if name in {"to", "float", "type_as", "contiguous"} and n.op == "call_method":
            internal.add(n)
            n = n.args[0]
        elif n.op == "call_function" and n.target in _DROPOUT:
            p = n.kwargs.get("p", n.args[1] if len(n.args) > 1 else 0.5)
            training = n.kwargs.get("training", n.args[2] if len(n.args) > 2 else True)
            if training and p:
                raise Decline(f"dropout {_node_desc(n)} is active in train mode (p={p}): dropout is random per "
                              "row; call model.eval() or set the dropout probabilities to 0")
            internal.add(n)
            n = n.args[0]
        else:
            return n
    return n


def _is_last_dim(n: fx.Node, dim) -> bool:
    return dim in (-1, len(_shape(n)) - 1)


def _const_arg(n, names) -> float | None:
    """c of ``x <op> c`` (a Python number), for ``op`` in names; else None."""
    if isinstance(n, fx.Node) and op_name(n) in names and len(n.args) == 2 and isinstance(n.args[1], (int, float)) \
            and not isinstance(n.args[1], bool):
        return float(n.args[1])
    return None


def _softcap(scores: fx.Node, internal: set):
    """(c, capped input) when ``scores`` is ``tanh(x / c) * c`` (HF Gemma 2's attn_logit_softcapping), else
    (0.0, scores)."""
    c = _const_arg(scores, {"mul"})
    t = scores.args[0] if c else None
    if not (isinstance(t, fx.Node) and op_name(t) == "tanh" and len(t.users) == 1):
        return 0.0, scores
    d = t.args[0]
    if not (isinstance(d, fx.Node) and len(d.users) == 1 and c > 0 and (
            _const_arg(d, {"truediv", "div"}) == c or _const_arg(d, {"mul"}) == 1.0 / c)):
        return 0.0, scores
    internal.update((scores, t, d))
    return c, d.args[0]


def _sink_column(probs: fx.Node, internal: set):
    """(sinks [Hq], the scores) when ``probs`` is ``softmax(cat([scores, sinks], -1) [- max])[..., :-1]`` with
    ``sinks`` a per-head vector reshaped and expanded to [B, Hq, T, 1] (HF GPT-OSS's eager attention), else
    None. The max subtracted first changes no probability; the dropped last column is the sink's."""
    if not (isinstance(probs, fx.Node) and probs.op == "call_function" and probs.target is operator.getitem):
        return None
    sm, idx = probs.args
    if idx not in ((Ellipsis, slice(None, -1, None)),) or not (isinstance(sm, fx.Node) and op_name(sm) == "softmax"):
        return None
    if not _is_last_dim(sm, sm.kwargs.get("dim", sm.args[1] if len(sm.args) > 1 else None)) or len(sm.users) != 1:
        return None
    combined = sm.args[0]
    part = {probs, sm}
    if isinstance(combined, fx.Node) and op_name(combined) == "sub" and len(combined.args) == 2:
        m = combined.args[1]  # combined - combined.max(-1, keepdim=True).values
        mx = m.args[0] if isinstance(m, fx.Node) and m.op == "call_function" and m.target is operator.getitem \
            and m.args[1] == 0 else None
        if not (isinstance(mx, fx.Node) and op_name(mx) in ("max", "amax") and mx.args[0] is combined.args[0]
                and _is_last_dim(mx.args[0], _dim_arg(mx, 1))):  # a constant along the softmax's axis
            return None
        part |= {combined, m, mx}
        combined = combined.args[0]
    if not (isinstance(combined, fx.Node) and combined.op == "call_function" and combined.target is torch.cat
            and _is_last_dim(combined, _dim_arg(combined, 1, 0)) and len(combined.args[0]) == 2):
        return None
    scores, col = combined.args[0]
    if not (isinstance(col, fx.Node) and _shape(col) is not None and same_size(_shape(col)[-1], 1)):
        return None  # one column, the one the slice drops
    part.add(combined)
    while isinstance(col, fx.Node) and op_name(col) in _EXPAND_NAMES | _VIEW_NAMES and col.op == "call_method" \
            and len(col.users) == 1:
        part.add(col)
        col = col.args[0]
    hq = _shape(scores)[1] if _shape(scores) and len(_shape(scores)) == 4 else None
    if not (isinstance(col, fx.Node) and _shape(col) is not None and len(_shape(col)) == 1 and hq is not None
            and same_size(_shape(col)[0], hq)):
        return None
    internal |= part
    return col, scores


def _eager_site(node: fx.Node) -> AttentionSite | None:
    """matmul(softmax(matmul(q, k^T) * scale + mask), v), as in HF's eager_attention_forward; with Gemma 2's
    softcapping (``tanh(s / c) * c`` before the mask) or GPT-OSS's sinks (a column per head joining the
    softmax, dropped after it)."""
    internal: set = set()
    probs = _skip(node.args[0], internal)
    sink = _sink_column(probs, internal)
    sinks = None
    if sink is not None:
        sinks, scores = sink
    else:
        if not (isinstance(probs, fx.Node) and op_name(probs) == "softmax"):
            return None
        dim = probs.kwargs.get("dim", probs.args[1] if len(probs.args) > 1 else None)
        if not _is_last_dim(probs, dim):
            return None
        internal.add(probs)
        scores = probs.args[0]
    mask = None
    if op_name(scores) in {"add", "iadd"} and len(scores.args) == 2:
        internal.add(scores)
        scores, mask = scores.args
    softcap, scores = _softcap(scores, internal)
    scale = 1.0
    if op_name(scores) in {"mul", "truediv", "div"} and isinstance(scores.args[1], (int, float)):
        internal.add(scores)
        s = float(scores.args[1])
        scale = s if op_name(scores) == "mul" else 1.0 / s
        scores = scores.args[0]
    if not (isinstance(scores, fx.Node) and scores.op == "call_function" and scores.target in _MATMUL):
        return None
    internal.add(scores)
    q, kt = scores.args
    if not (isinstance(kt, fx.Node) and op_name(kt) in {"transpose", "mT"}):
        return None
    if op_name(kt) == "transpose":
        dims = {d % 4 for d in kt.args[1:3]}
        if dims != {2, 3}:
            return None
    internal.add(kt)
    return AttentionSite(node, q, kt.args[0], node.args[1], scale, mask, False, internal, softcap, sinks)


def find_attention_sites(gm: fx.GraphModule) -> list:
    sites = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in _SDPA:
            sites.append(_sdpa_site(node))
        elif node.op == "call_function" and node.target in _MATMUL:
            site = _eager_site(node)
            if site is not None:
                sites.append(site)
    return sites


# ------------------------------------------------------------------------------------------------ role rules

def _norm_dim(d: int, ndim: int) -> int:
    return d % ndim if ndim else 0


def _broadcast_roles(node: fx.Node, inputs: list, roles: dict) -> tuple | None:
    out = _shape(node)
    if out is None:
        return None
    res = [None] * len(out)
    for a in inputs:
        sh = _shape(a)
        r = roles.get(a)
        if sh is None or r is None:
            continue
        off = len(out) - len(sh)
        for i, role in enumerate(r):
            if role is None:
                continue
            j = i + off
            if not same_size(sh[i], out[j]):
                continue  # a size-1 dim broadcast against something else
            if res[j] not in (None, role):
                return None
            res[j] = role
    return tuple(res)


def _proper_divisor(a, b) -> bool:
    """a < b and a divides b, for ints or SymInts (2*s0*s1 over s0*s1), without guarding."""
    if isinstance(a, int) and isinstance(b, int):
        return a < b
    import sympy

    ea = a.node.expr if isinstance(a, torch.SymInt) else sympy.Integer(a)
    eb = b.node.expr if isinstance(b, torch.SymInt) else sympy.Integer(b)
    try:
        ratio = sympy.simplify(eb / ea)
        return ratio != 1 and sympy.fraction(ratio)[1] == 1
    except Exception:  # noqa: BLE001 - undecidable: not provably a divisor
        return False


def _view_roles(in_shape, in_roles, out_shape) -> tuple | None:
    """Map roles through a view by grouping dims of equal products. None: a role dim is mixed with others."""
    res = [None] * len(out_shape)
    i = j = 0
    ni, no = len(in_shape), len(out_shape)
    while i < ni or j < no:
        gi, gj = [], []
        pi = pj = 1
        if i < ni:
            gi.append(i); pi = in_shape[i]; i += 1
        if j < no:
            gj.append(j); pj = out_shape[j]; j += 1
        while not same_size(pi, pj):
            if _proper_divisor(pi, pj) or (j >= no and i < ni):
                if i >= ni:
                    return None
                gi.append(i); pi = pi * in_shape[i]; i += 1
            elif j < no:
                gj.append(j); pj = pj * out_shape[j]; j += 1
            else:
                return None
        # absorb trailing size-1 dims into the group they follow
        role_in = [in_roles[k] for k in gi if in_roles[k] is not None]
        real_out = [k for k in gj if not same_size(out_shape[k], 1)]
        real_in = [k for k in gi if not same_size(in_shape[k], 1)]
        if not role_in:
            continue
        if len(real_in) == 1 and len(real_out) == 1:
            res[real_out[0]] = in_roles[real_in[0]]
        elif set(role_in) <= {B, T} and len(real_out) == 1 and [in_roles[k] for k in real_in] == [B, T]:
            res[real_out[0]] = BT
        elif role_in == [BT] and len(real_out) == 2 and len(real_in) == 1:
            res[real_out[0]], res[real_out[1]] = B, T
        elif (flat := _flatten_slots(in_shape, in_roles, real_in, len(real_out))) is not None:
            res[real_out[0]] = flat
        elif (split := _split_slots(in_roles, real_in, out_shape, real_out)) is not None:
            for k, role in zip(real_out, split):
                res[k] = role
        else:
            return None
    return tuple(res)


def _flatten_slots(in_shape, in_roles, real_in, n_out) -> str | None:
    """[B, T, k, ...] or [BT, k, ...] (token axes, then per-token dims of static size) viewed as one dimension:
    each token's k entries stay consecutive, a token-major "BT*k" axis."""
    roles = [in_roles[k] for k in real_in]
    lead = 2 if roles[:2] == [B, T] else 1 if roles[:1] and _slots(roles[0]) is not None else 0
    if n_out != 1 or not lead or any(r is not None for r in roles[lead:]):
        return None
    sizes = [in_shape[k] for k in real_in[lead:]]
    if not all(isinstance(x, int) for x in sizes):
        return None
    return _slots_role((_slots(roles[0]) if lead == 1 else 1) * math.prod(sizes))


def _split_slots(in_roles, real_in, out_shape, real_out) -> list | None:
    """A "BT*k" axis viewed as [BT*j, k/j ...]: the leading dim keeps whole tokens' slots, the rest are slots."""
    if len(real_in) != 1 or len(real_out) < 2 or (k := _slots(in_roles[real_in[0]])) is None:
        return None
    rest = [out_shape[j] for j in real_out[1:]]
    if not all(isinstance(x, int) for x in rest) or k % math.prod(rest):
        return None
    return [_slots_role(k // math.prod(rest))] + [None] * len(rest)


def _getitem_roles(node: fx.Node, base_roles: tuple, idx) -> tuple | str:
    """Roles after basic indexing. Returns a reason string when the index is not a plain per-token view."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if any(isinstance(x, (fx.Node, torch.Tensor, list)) and not _is_symint_node(x) for x in idx):
        return "advanced (tensor) indexing"
    nd = len(base_roles)
    n_real = sum(1 for x in idx if x is not None and x is not Ellipsis)
    out, d = [], 0
    for x in idx:
        if x is Ellipsis:
            for _ in range(nd - n_real):
                out.append(base_roles[d]); d += 1
        elif x is None:
            out.append(None)
        elif isinstance(x, slice):
            whole = x.start in (None, 0) and x.stop is None and x.step in (None, 1)
            if base_roles[d] == B and not whole:
                return "a slice of the batch axis"
            if not whole and (_slots(base_roles[d]) is not None or _is_sorted_role(base_roles[d])):
                # e.g. capacity routing keeping the first C of the tokens sorted by score: the cut depends on
                # how many tokens the batch holds
                return "a slice of a flattened or sorted token axis"
            out.append(base_roles[d]); d += 1
        else:  # integer index removes the dim
            if base_roles[d] is not None:
                return f"integer index on the {'sequence' if base_roles[d] == T else 'batch'} axis"
            d += 1
    out.extend(base_roles[d:])
    return tuple(out)


def _is_symint_node(x) -> bool:
    return isinstance(x, fx.Node) and isinstance(_val(x), torch.SymInt)


def _dim_arg(node: fx.Node, pos: int, default=None):
    if "dim" in node.kwargs:
        return node.kwargs["dim"]
    return node.args[pos] if len(node.args) > pos else default


# ------------------------------------------------------------------------------------------------- analysis

def _find_inputs(gm: fx.GraphModule, sites: list, a: GraphAnalysis, no_attention_reason: str | None = None
                 ) -> None:
    graph = gm.graph
    emb = [n for n in graph.nodes if n.op == "call_function" and n.target in _EMBEDDING]
    for e in emb:
        ids = e.args[0]
        if isinstance(ids, fx.Node) and ids.op == "placeholder" and _shape(ids) is not None and len(_shape(ids)) == 2:
            a.ids = ids
            break
    if a.ids is None:
        raise _NotCandidate(no_attention_reason or
                            "no token-id input feeding an embedding was found (inputs_embeds or a non-LM graph)")
    a.batch, a.seq = _shape(a.ids)
    for axis, size in (("batch", a.batch), ("sequence", a.seq)):
        if isinstance(size, int) and size == 1:
            # Dynamo specializes size-1 dimensions even with dynamic=True: the axes are then unidentifiable
            raise Decline(f"the graph was traced with a {axis} axis of size 1 (token input `{a.ids.name}` of shape "
                          f"{[int(x) if isinstance(x, int) else str(x) for x in _shape(a.ids)]}): Dynamo "
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
            v = _val(n)
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
        v = _val(p)
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
        v = _val(p)
        if (p.op == "placeholder" and p in mask_feeders and p not in a.token_inputs and isinstance(v, torch.Tensor)
                and v.dim() > 0 and not _is_state(p, v)):
            raise Decline(f"input `{p.name}` of shape {list(v.shape)} feeds the attention mask but is not a [batch, "
                          f"seq] token input like `{a.ids.name}` {list(_shape(a.ids))}; pass a 2-D 0/1 "
                          f"attention_mask (a 4-D or custom mask cannot be packed)")


def _is_state(p: fx.Node, v) -> bool:
    """Parameters and buffers (Dynamo names their placeholders after the module attribute path)."""
    return isinstance(v, torch.nn.Parameter) or "_parameters_" in p.name or "_buffers_" in p.name


def _mask_only_nodes(gm: fx.GraphModule, sites: list) -> set:
    """Nodes whose every use leads only into attention masks (dropped once the mask is verified)."""
    sinks = {s.mask for s in sites if isinstance(s.mask, fx.Node)}
    site_nodes = {s.node for s in sites}
    internal = set().union(*[s.internal for s in sites]) if sites else set()
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
    """The graph's facts. ``seeds`` ({placeholder name: roles}) analyses a *continuation* graph: one without
    token ids whose named inputs are activations of the batch (``[B, T, ...]`` values whose entry at (b, t)
    the caller knows to be a function of the row's prefix up to t, e.g. the hidden states a graph break or a
    DDP/FSDP split passes on). They enter the packed region directly; the caller supplies the plan."""
    a = GraphAnalysis()
    try:
        _analyze(gm, a, seeds)
    except _NotCandidate as e:
        a.reason, a.candidate = str(e), False
    except Decline as e:
        a.reason = str(e)
    return a


def _seed_inputs(gm: fx.GraphModule, a: GraphAnalysis, seeds: dict) -> None:
    by_name = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    for name, roles in seeds.items():
        if name not in by_name:
            raise Decline(f"continuation input `{name}` is not an input of the graph")
        a.seeded[by_name[name]] = tuple(roles)
    if not a.seeded:
        raise _NotCandidate("no activation input of the batch to continue packing from")
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
                if name in _VIEW_NAMES or name in ("getitem", "transpose", "permute", "unsqueeze", "squeeze",
                                                   "select", "narrow", "expand", "t", "view_as", "__getitem__"):
                    todo.append(u)
    first, roles = next(iter(a.seeded.items()))
    shape = _shape(first)
    if roles.count(T) != 1:
        raise Decline(f"continuation input `{first.name}` has no sequence axis")
    a.seq = shape[roles.index(T)]
    a.batch = shape[roles.index(B)] if B in roles else 1


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
    internal = set().union(*[s.internal for s in sites])
    mask_only = _mask_only_nodes(gm, sites)
    roles, kind, space = a.roles, a.kind, a.space
    first_boundary: dict = {}  # row node -> the earliest boundary reason among its packed ancestors
    replayed: set = set()      # row values computed from replayed activations (token-dependent, per row)

    def is_packed(x):
        return isinstance(x, fx.Node) and kind.get(x) == "packed"

    def positional(x):
        """A row value with a sequence axis but no batch axis of size B (e.g. arange(T), rotary tables)."""
        r = roles.get(x)
        return r is not None and T in r and B not in r and BT not in r

    for n in gm.graph.nodes:
        if n.op == "placeholder":
            v = _val(n)
            if n in a.seeded:  # an activation of the batch: packed from the start (gathered on entry)
                kind[n], roles[n], space[n] = "packed", a.seeded[n], 0
                continue
            kind[n] = "row"
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
            leaving = [x for x in n.all_input_nodes if is_packed(x) and _routing_value(x, a)]
            if leaving:
                raise Decline(f"{_node_desc(leaving[0])}: a routing value (expert slots, rows sorted by expert or "
                              f"per-expert counts) is an output of the graph, with no [batch, seq] layout")
            continue
        if n in mask_only:
            kind[n] = "mask"
            continue
        if n.args and is_packed(n.args[0]) and op_name(n) in ("size", "sym_size", "dim", "stride") and \
                n.op == "call_method":
            # the shape of a packed value, as in the original [B, T, ...] layout: the rewrite reads it off the
            # replayed value, whose data nothing uses (dead code once traced); reshapes of packed values take
            # their shapes from the roles, not from these sizes
            kind[n], roles[n] = "row", None
            continue
        if n in internal:
            kind[n] = "internal"
            continue
        if n in a.inverse_aranges:
            # the arange of an inverse permutation: as long as the packed slots (the rewrite sizes it so)
            e = next(iter(n.users)).args[0]
            kind[n], roles[n], space[n] = "packed", (a.inverse_aranges[n],), space.get(e, 0)
            continue
        ins = n.all_input_nodes
        if recurrent.classify(n, a, replayed, same_size, Decline):
            continue  # inside a recurrent layer computed per row (its output re-enters packed: passes/recurrent.py)
        packed_ins = [x for x in ins if is_packed(x)]
        if n in by_node:
            s = by_node[n]
            bad = [x for x in (s.q, s.k, s.v) if not is_packed(x)]
            if bad:
                why = next((first_boundary[x] for x in bad if x in first_boundary), None)
                raise Decline(why or f"attention {_node_desc(n)} has inputs that are not per-token")
            if any(roles.get(x) is None or len(roles[x]) != 4 or roles[x][2] != T or roles[x][0] not in (B, None)
                   for x in (s.q, s.k, s.v)):
                raise Decline(f"attention {_node_desc(n)} does not take [batch, heads, seq, dim] inputs")
            if len({space[x] for x in (s.q, s.k, s.v)}) != 1 or space[s.q] != 0:
                raise Decline(f"attention {_node_desc(n)} mixes sliced and whole sequences")
            if s.sinks is not None and (kind.get(s.sinks) != "row" or any(roles.get(s.sinks) or (None,))):
                raise Decline(f"attention {_node_desc(n)} has sink logits `{s.sinks.name}` that depend on the "
                              "batch or the tokens (a per-head vector of weights is expected)")
            kind[n], roles[n], space[n] = "packed", roles[s.q][:3] + (None,), 0
            continue
        # roles of the output, from the op
        r = _infer_roles(n, roles, a)
        token_ins = [x for x in ins if x in a.tokenfn]
        weights = [x for x in ins if x in a.paramdep]
        per_row = [x for x in ins if not is_packed(x) and x not in a.tokenfn and kind.get(x) != "mask"
                   and roles.get(x) and any(role in (B, BT) for role in roles[x])]
        if not packed_ins and not (token_ins and weights):
            # Not an activation: stays in the [B, T] layout. Values computed from the token inputs alone,
            # token by token, stay gatherable (their value at a packed token is fixed by the plan's key).
            kind[n] = "row"
            roles[n] = r if isinstance(r, tuple) else None
            if weights and not token_ins and not any(roles.get(x) and any(roles[x]) for x in ins):
                a.paramdep.add(n)
            if (token_ins and not per_row and isinstance(r, str) and _prefix_scan(n, roles)
                    and not any(x in replayed for x in ins)):
                # cumsum of the mask along the sequence (left-pad-aware positions): its value at (b, t)
                # depends on the token inputs at (b, <= t) only, which the plan's sharing key covers
                r = roles[n] = roles[n.args[0]]
            if (token_ins and not per_row and isinstance(r, tuple) and (T in r or BT in r)
                    and _seq_slice(n, roles, a) is None and not any(x in replayed for x in ins)):
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
                if is_packed(x) or kind.get(x) == "mask" or x in a.tokenfn:
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
            kind[n], roles[n] = "packed", r
            sl = _seq_slice(n, roles, a)
            if sl is not None and spaces != {0}:
                why = "it slices the sequence axis of an already sliced value"
            elif sl is not None:
                a.slices.append(SliceSite(n, sl[0], sl[1], len(a.slices) + 1))
                space[n] = len(a.slices)
            else:
                space[n] = spaces.pop()
            if why is None:
                continue
        kind[n] = "row"
        roles[n] = r if isinstance(r, tuple) else None
        replayed.add(n)
        # name the earliest cause: a value that left the packed region upstream of this one
        inherited = next((first_boundary[x] for x in ins if x in replayed and x in first_boundary), None)
        reason = inherited or _recurrent_layer_reason(n, why) or f"{_node_desc(n)}: {why}"
        if any(_routing_value(x, a) for x in packed_ins):
            # a slot or sorted-row axis, or the batch's expert counts, has no [B, T] layout to replay to
            raise Decline(_aux_loss_reason(n) or reason)
        a.boundaries[n] = reason
        first_boundary[n] = reason
    if a.seeded and not any(k == "packed" and n not in a.seeded for n, k in kind.items()):
        # every activation input leaves the packed region at once: running it "packed" would compute nothing once
        raise Decline(next(iter(a.boundaries.values()), "no per-token op reads the activation inputs"))


def _is_elementwise(n: fx.Node) -> bool:
    return op_name(n) in _ELEMENTWISE_NAMES or (n.op == "call_function" and n.target in (
        torch.rsqrt, torch.sqrt, torch.exp, torch.tanh, torch.sigmoid, torch.where, torch.neg))


def _prefix_scan(n: fx.Node, roles: dict) -> bool:
    if op_name(n) not in ("cumsum", "cumprod", "cummax") or not n.args or not isinstance(n.args[0], fx.Node):
        return False
    br = roles.get(n.args[0])
    dim = _dim_arg(n, 1)
    return br is not None and isinstance(dim, int) and br[_norm_dim(dim, len(br))] == T


def _misaligned(x: fx.Node, n: fx.Node, out_roles: tuple, a: GraphAnalysis) -> bool:
    """A role-less tensor broadcast against a packed value along its B or T axis would be silently wrong
    after packing (it is indexed by row and column, not by packed token)."""
    if not _is_elementwise(n):
        return False  # weights of linear/embedding are not broadcast against the tokens
    xs, out = _shape(x), _shape(n)
    if xs is None or out is None or any(role is not None for role in (a.roles.get(x) or ())):
        return False
    off = len(out) - len(xs)
    for i, size in enumerate(xs):
        j = i + off
        if 0 <= j < len(out_roles) and out_roles[j] is not None and not same_size(size, 1):
            return True
    return False


def _seq_slice(n: fx.Node, roles: dict, a: GraphAnalysis):
    """(start, stop) when ``n`` slices part of the sequence axis of a packed value, else None."""
    if not (n.op == "call_function" and n.target is operator.getitem):
        return None
    base, idx = n.args
    if isinstance(_val(base), (tuple, list)):
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
                raise Decline(f"{_node_desc(n)} slices the sequence axis with a step")
            start, stop = x.start, x.stop
            for v in (start, stop):
                if v is not None and not isinstance(v, int) and not _is_symint_node(v):
                    raise Decline(f"{_node_desc(n)} slices the sequence axis at a data-dependent position")
            symbolic = any(isinstance(v, fx.Node) for v in (start, stop))
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


def _infer_roles(n: fx.Node, roles: dict, a: GraphAnalysis):
    """Roles of ``n``'s output, a reason string if ``n`` is not per-token, or None if unknown."""
    name = op_name(n)
    ins = n.all_input_nodes
    out_shape = _shape(n)
    if n.op == "call_function" and n.target is torch.arange:
        args = [x for x in n.args]
        if len(args) == 1 and out_shape is not None:
            if same_size(out_shape[0], a.seq):
                return (T,)
            if same_size(out_shape[0], a.batch):
                return (B,)
        return (None,) * len(out_shape) if out_shape is not None else None
    routed = _routing_roles(n, roles, a)
    if routed is not None:
        return routed
    if not any(roles.get(x) and any(r is not None for r in roles[x]) for x in ins):
        return (None,) * len(out_shape) if out_shape is not None else ()
    if n.op == "call_function" and n.target in _EMBEDDING:
        return roles[n.args[0]] + (None,)
    if n.op == "call_function" and n.target in _LINEAR:
        if any(roles.get(x) and any(roles[x]) for x in n.args[1:] if isinstance(x, fx.Node)):
            return "a linear layer whose weight depends on the tokens"
        return roles[n.args[0]][:-1] + (None,)
    if n.op == "call_function" and n.target in _MATMUL:
        x, w = n.args
        if isinstance(w, fx.Node) and roles.get(w) and any(roles[w]):
            return "a matmul between two token-dependent tensors (token mixing)"
        rx = roles[x]
        if rx[-1] is not None:
            return "a matmul that contracts the sequence axis"
        return rx[:-1] + (None,) if len(_shape(w)) >= 2 else rx[:-1]
    if n.op == "call_function" and n.target is torch.cat:
        tensors = n.args[0]
        dim = _dim_arg(n, 1, 0)
        ref = next((roles[x] for x in tensors if isinstance(x, fx.Node) and roles.get(x) and any(roles[x])), None)
        if ref is None:
            return None
        if ref[_norm_dim(dim, len(ref))] is not None:
            return ("concatenation along the sequence or batch axis (a KV cache? training steps should call the "
                    "model with use_cache=False)")
        return _broadcast_roles(n, list(tensors), roles)
    if n.op == "call_function" and n.target is operator.getitem:
        base, idx = n.args
        if isinstance(_val(base), (tuple, list)):  # an output of chunk/split/unbind
            return roles.get(base)
        return _getitem_roles(n, roles[base], idx)
    if n.op == "call_function" and n.target in _DROPOUT:
        p = n.kwargs.get("p", n.args[1] if len(n.args) > 1 else 0.5)
        training = n.kwargs.get("training", n.args[2] if len(n.args) > 2 else True)
        if training and p:
            return f"dropout is active in train mode (p={p}); dropout is random per row"
        return roles[n.args[0]]
    base = n.args[0] if n.args else None
    br = roles.get(base) if isinstance(base, fx.Node) else None
    if name in ("transpose", "swapaxes") and br is not None:
        d0, d1 = (_norm_dim(d, len(br)) for d in n.args[1:3])
        r = list(br)
        r[d0], r[d1] = r[d1], r[d0]
        return tuple(r)
    if name == "permute" and br is not None:
        dims = n.args[1] if len(n.args) == 2 and isinstance(n.args[1], (tuple, list)) else n.args[1:]
        return tuple(br[_norm_dim(d, len(br))] for d in dims)
    if name == "unsqueeze" and br is not None:
        d = _norm_dim(_dim_arg(n, 1), len(br) + 1)
        return br[:d] + (None,) + br[d:]
    if name == "squeeze" and br is not None:
        return _view_roles(_shape(base), br, out_shape)
    if name in _VIEW_NAMES and br is not None:
        r = _view_roles(_shape(base), br, out_shape)
        return r if r is not None else "a reshape that mixes the sequence axis with other dimensions"
    if name in _EXPAND_NAMES and br is not None:
        off = len(out_shape) - len(br)
        return (None,) * off + tuple(
            role if role is None or same_size(_shape(base)[i], out_shape[i + off]) else None
            for i, role in enumerate(br))
    if name in _REDUCE_NAMES and br is not None:
        dim = _dim_arg(n, 1)
        if dim is None:
            return "a reduction over all dimensions, including the sequence axis"
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_norm_dim(d, len(br)) for d in dims]
        if any(br[d] is not None for d in dims):
            return f"a reduction (`{name}`) over the sequence or batch axis"
        keep = n.kwargs.get("keepdim", n.args[2] if len(n.args) > 2 else False)
        if isinstance(_val(n), (tuple, list)):
            return None
        return tuple((None if i in dims else role) for i, role in enumerate(br) if keep or i not in dims)
    if name in ("rms_norm", "layer_norm") and br is not None:
        shape = n.kwargs.get("normalized_shape", n.args[1] if len(n.args) > 1 else None)
        k = len(shape) if isinstance(shape, (tuple, list)) else 1
        if any(role is not None for role in br[len(br) - k:]):
            return f"`{name}` normalises over the sequence or batch axis"
        return br
    if name in ("chunk", "split", "tensor_split", "unbind") and br is not None:
        dim = _dim_arg(n, 2 if name != "unbind" else 1, 0)
        if br[_norm_dim(dim, len(br))] is not None:
            return f"`{name}` along the sequence or batch axis"
        if name == "unbind":
            d = _norm_dim(dim, len(br))
            return br[:d] + br[d + 1:]
        return br
    if name in _ALONG_DIM_NAMES and br is not None:
        dim = _dim_arg(n, 1)
        if dim is None or br[_norm_dim(dim, len(br))] is not None:
            return f"`{name}` along the sequence or batch axis (token mixing)"
        return br
    if name == "gather" and br is not None:
        dim = _norm_dim(_dim_arg(n, 1), len(br))
        if br[dim] is not None:
            return "a gather along the sequence or batch axis"
        return "a gather along the vocabulary with per-row indices"  # the rewrite turns it into an indexed replay
    if _is_elementwise(n):
        tensor_ins = [x for x in list(n.args) + list(n.kwargs.values()) if isinstance(x, fx.Node)]
        return _broadcast_roles(n, tensor_ins, roles)
    return f"an op the analysis does not know ({name}) on the sequence axis"


# ------------------------------------------------------------------------------- mixture-of-experts routing

_GROUPED_MM = {"grouped_mm_fallback", "_grouped_mm", "grouped_mm"}
_CASTS = {"float", "to", "long", "int", "type_as"}


def _routing_roles(n: fx.Node, roles: dict, a: GraphAnalysis):
    """HF's experts (``integrations/moe.py``, grouped_mm) route each token on its own, but through ops that look
    token-mixing one at a time: the (token, expert) pairs are sorted by expert, grouped matmuls run over the
    sorted pairs with per-expert offsets, and an inverse permutation puts the results back. Each sorted row
    still holds one token's pair, so the chain is per-token as long as every value along the sorted axis comes
    from the same sort, the offsets are the counts of that sort's keys, and the results return through its
    inverse permutation. Roles of ``n``, a reason, or None (not a routing op; the general rules apply)."""
    name = op_name(n)
    seg_in = [x for x in n.all_input_nodes if x in a.segments]
    if n.op == "call_function" and n.target is operator.getitem and isinstance(_val(n.args[0]), (tuple, list)):
        base, i = n.args
        rb = roles.get(base) or ()
        if op_name(base) == "sort" and _sorted_role(base) in rb:  # sort's (values, indices)
            d = rb.index(_sorted_role(base))
            if i == 1:  # which slot of the sorted axis each sorted row is
                a.token_index[n] = roles[base.args[0]][d]
            else:       # the keys, in sorted order: they group the rows
                a.sorted_keys[n] = rb[d]
            return rb
        return None
    if name == "sort" and n.args and isinstance(n.args[0], fx.Node):
        br = roles.get(n.args[0])
        dim = _dim_arg(n, 1, -1)
        if br is None or not br:
            return None
        d = _norm_dim(dim, len(br))
        if _slots(br[d]) is None or any(r is not None for i, r in enumerate(br) if i != d):
            return None
        # sorting a token axis mixes tokens only in the order it leaves them in; the indices say which token
        # each sorted row is (token_index), the sorted values key the groups (sorted_keys, on the getitems)
        out = list(br)
        out[d] = _sorted_role(n)
        return tuple(out)
    if seg_in:
        x = seg_in[0]
        if name == "cumsum" and n.args[0] is x:
            a.segments[n] = a.segments[x]
            return (None,) * len(_shape(n))
        if name in _GROUPED_MM:
            return _grouped_mm_roles(n, roles, a)
        return (f"the per-expert token counts at node `{x.name}` are a batch-level value (they count the tokens "
                f"of the whole batch, which a packed batch holds fewer of), used by an op other than a grouped "
                f"matmul's offsets")
    if name == "histc" and n.args and isinstance(n.args[0], fx.Node):
        key = _cast_source(n.args[0])
        if key in a.sorted_keys:
            a.segments[n] = a.sorted_keys[key]
            return (None,) * len(_shape(n))
        return None
    if name in _CASTS and n.args and n.args[0] in a.sorted_keys and n.op == "call_method":
        a.sorted_keys[n] = a.sorted_keys[n.args[0]]
        return None  # roles as any cast
    if name in ("floordiv",) and n.args and n.args[0] in a.token_index and isinstance(n.args[1], int):
        # a slot index // k is the token index ("BT*k" -> "BT")
        k = _slots(a.token_index[n.args[0]])
        if k is not None and n.args[1] > 0 and k % n.args[1] == 0:
            a.token_index[n] = _slots_role(k // n.args[1])
            return roles.get(n.args[0])
        return None
    if n.op == "call_function" and n.target is operator.getitem:
        return _token_gather_roles(n, roles, a) or _weight_gather_roles(n, roles, a)
    if name == "repeat_interleave" and n.args and isinstance(n.args[0], fx.Node):
        # each token's row repeated k times in place: a token-major slot axis (HF's batched_mm experts)
        br, reps = roles.get(n.args[0]), n.kwargs.get("repeats", n.args[1] if len(n.args) > 1 else None)
        dim = n.kwargs.get("dim", n.args[2] if len(n.args) > 2 else None)
        if br is None or not isinstance(reps, int) or not isinstance(dim, int):
            return None
        d = _norm_dim(dim, len(br))
        if _slots(br[d]) is None or any(r is not None for i, r in enumerate(br) if i != d):
            return None
        out = list(br)
        out[d] = _slots_role(_slots(br[d]) * reps)
        return tuple(out)
    if n.op == "call_function" and n.target in (torch.bmm,) and len(n.args) == 2:
        # one small matmul per slot: per-token when both operands carry the same token axis as the batch dim
        r0, r1 = (roles.get(x) if isinstance(x, fx.Node) else None for x in n.args)
        if r0 and r1 and len(r0) == len(r1) == 3 and r0[0] == r1[0] and _slots(r0[0]) is not None \
                and r0[1:] == r1[1:] == (None, None):
            return (r0[0], None, None)
        return None
    if name == "empty_like" and n.args and n.args[0] in a.token_index:
        perm = n.args[0]
        ar = _inverse_arange(n, perm)
        if ar is not None and _is_sorted_role((roles.get(perm) or (None,))[0]) and len(roles[perm]) == 1:
            # inv[perm] = arange(n): inv maps each original slot to its sorted row
            a.token_index[n] = roles[perm][0]
            a.inverse_aranges[ar] = a.token_index[perm]
            return (a.token_index[perm],)
        return None
    if n.op == "call_function" and n.target is operator.setitem and n.args[2] in a.inverse_aranges:
        return ()
    return None


def _recurrent_layer_reason(n: fx.Node, why: str) -> str | None:
    """The reason for a token-mixing node inside a recurrent layer, naming the layer (passes/recurrent.py)."""
    return recurrent.layer_reason(n, why)


def _aux_loss_reason(n: fx.Node) -> str | None:
    """HF's load-balancing loss counts each expert's share of the batch's tokens: named, with what to do."""
    if "load_balancing_loss_func" not in (n.meta.get("stack_trace") or ""):
        return None
    return (f"the router's load-balancing loss (`load_balancing_loss_func`, {_node_desc(n)}) counts each "
            f"expert's share of the batch's tokens, and a packed batch holds each shared token once; call the model "
            f"with output_router_logits=False (the default) inside the compiled step")


def _routing_value(x: fx.Node, a: GraphAnalysis) -> bool:
    """A value along a routing axis (k > 1 slots, or rows sorted by expert) or the batch's expert counts."""
    r = a.roles.get(x) or ()
    return x in a.segments or any((_slots(role) or 1) > 1 or _is_sorted_role(role) for role in r)


def _cast_source(x: fx.Node) -> fx.Node:
    while isinstance(x, fx.Node) and op_name(x) in _CASTS and x.op == "call_method":
        x = x.args[0]
    return x


def _inverse_arange(e: fx.Node, perm: fx.Node) -> fx.Node | None:
    """The arange of ``e[perm] = arange(len(perm))`` when that write is ``e``'s only use before it is read."""
    writes = [u for u in e.users if u.op == "call_function" and u.target is operator.setitem and u.args[0] is e]
    if len(writes) != 1:
        return None
    _, idx, ar = writes[0].args
    if idx is not perm or not (isinstance(ar, fx.Node) and ar.op == "call_function" and ar.target is torch.arange):
        return None
    if len(ar.args) != 1 or len(ar.users) != 1 or not same_size(_shape(ar)[0], _shape(perm)[0]):
        return None
    order = {x: i for i, x in enumerate(e.graph.nodes)}
    if any(order[u] < order[writes[0]] for u in e.users if u is not writes[0]):
        return None
    return ar


def _token_gather_roles(n: fx.Node, roles: dict, a: GraphAnalysis):
    """``x[idx]`` whose index tensor holds indices into x's first axis (a token, slot or sorted-row index):
    row i of the output is the row that idx[i] names, so it takes idx's roles."""
    base, idx = n.args
    if isinstance(idx, tuple) and len(idx) == 1:
        idx = idx[0]
    if not isinstance(idx, fx.Node) or idx not in a.token_index:
        return None
    br = roles.get(base)
    if br is None or not br or br[0] != a.token_index[idx] or any(r is not None for r in br[1:]):
        return None
    return tuple(roles[idx]) + tuple(br[1:])


def _weight_gather_roles(n: fx.Node, roles: dict, a: GraphAnalysis):
    """``W[expert_ids]``: a parameter's rows picked per slot by an integer tensor of per-token values (each
    slot's own expert's weights), so the output takes the index's token axis. The index may be the sorted
    expert ids (GPT-OSS's per-expert biases, ``bias[expert_ids_g]``): each sorted row is one slot's."""
    base, idx = n.args
    if isinstance(idx, tuple) and len(idx) == 1:
        idx = idx[0]
    v = _val(idx)
    if not (isinstance(idx, fx.Node) and base in a.paramdep and isinstance(v, torch.Tensor)
            and not v.is_floating_point() and v.dtype != torch.bool):
        return None
    ri = roles.get(idx)
    if not ri or any(_slots(r) is None and not _is_sorted_role(r) and r is not None for r in ri):
        return None
    return tuple(ri) + (None,) * (len(_shape(base)) - 1)


def _grouped_mm_roles(n: fx.Node, roles: dict, a: GraphAnalysis):
    x = n.args[0]
    w = n.args[1] if len(n.args) > 1 else n.kwargs.get("weight", n.kwargs.get("mat2"))
    offs = n.kwargs.get("offs", n.args[2] if len(n.args) > 2 else None)
    rx = roles.get(x)
    if (rx is None or len(rx) != 2 or not _is_sorted_role(rx[0]) or rx[1] is not None
            or offs not in a.segments or a.segments[offs] != rx[0]):
        return (f"a grouped matmul whose groups (`{getattr(offs, 'name', offs)}`) are not the expert counts of the "
                f"sort that ordered its input `{getattr(x, 'name', x)}`")
    if isinstance(w, fx.Node) and roles.get(w) and any(roles[w]):
        return "a grouped matmul whose weight depends on the tokens"
    return (rx[0], None)
