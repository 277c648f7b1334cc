"""Attention restricted to each query's top-k keys (DeepSeek-V3.2 and GLM-5's DSA indexer) on the packed tokens.

The mask such an attention reads is the model's causal-with-padding mask M with the keys outside each query's
selection hidden, the selection being the top k of a score ``S[b, i, j]`` over the keys M lets query i see::

    S  = pair scores of query token i and key token j (matmuls with the keys' tensor transposed, elementwise ops)
    I  = ones(B, T, T).scatter(-1, topk(S masked by M, k).indices, False)     # True: not selected
    mask = M & ~I    (or M.masked_fill(I, min) for an additive mask)

``S`` is a *pair* value: its entry (i, j) depends on per-token values of token i and of token j only (checked
by ``check``, which tags every dimension as batch, query token or key token). On the packed tokens it is the
[1, N, N] matrix of every pair of unique tokens, equal to the row's at every pair the tree lets see (the keys
a row's token sees are exactly its ancestors on the tree). Masked by the tree's visibility instead of M, its
top-k picks the same keys (ties between equal scores aside, as between any two kernels), and the attention runs
on the packed tokens with the resulting dense mask: O(N^2) memory, like the indexer itself.

Recognition here (``find``: the graph's structure, before roles); the pair check needs the leaves' roles
(``check``, called by ``region``); the packed emission is ``emit`` (called by ``rewrite``). M itself is
verified causal-with-padding like any attention mask (the site's ``mask`` becomes M).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import torch
import torch.fx as fx

from replaycompile.kernels.tree_attention_reference import tree_visibility_mask

from .nodes import MATMUL, B, T, Decline, node_desc, op_name, same_size, shape, upstream, val

_AND = {"and_", "__and__", "logical_and", "bitwise_and"}
_FILL = {"new_ones": True, "new_zeros": False}
_CASTS = {"to", "long", "int", "float", "type_as", "contiguous", "bool"}
# ops the pair scores may be built of: per-pair arithmetic, matmuls over feature axes, reshapes of single axes
_ELEMENTWISE = {"mul", "truediv", "div", "add", "sub", "relu", "neg", "abs", "exp", "sigmoid", "tanh", "gelu",
                "silu", "softplus", "pow", "square", "sqrt", "rsqrt", "clamp", "clamp_min", "clamp_max",
                "maximum", "minimum", "float", "to", "type_as", "contiguous", "mul_", "relu_"}
_PAIR_OPS = _ELEMENTWISE | {"matmul", "squeeze", "unsqueeze", "transpose", "sum"}
_VIEWS = {"getitem", "select", "squeeze", "unsqueeze", "expand", "to", "contiguous", "bool"}
# a masked_fill value that hides a key: -inf, or the most negative finite value of a float16/bfloat16/float32
_HIDDEN_BELOW = -6.5e4


@dataclass
class KeySelection:
    final: fx.Node                 # the mask the attention reads
    base: fx.Node                  # M: the causal-with-padding mask the selection narrows
    topk: fx.Node
    scores: fx.Node                # S: the pair scores, before M masks them
    nodes: set                     # every node from the leaves (exclusive) to ``final`` (inclusive); M's
                                   # views among them are re-emitted on the tree's visibility
    leaves: list                   # the per-token values S reads (outside ``nodes``)
    pair: set = field(default_factory=set)      # the nodes of S's computation (S included)
    fills: dict = field(default_factory=dict)   # FILL node -> its shape's tags ('B', 'Q', 'K' or None)
    tags: dict = field(default_factory=dict)    # pair node -> per-dim tags, from ``check``


def _is_bool(n) -> bool:
    v = val(n)
    return isinstance(v, torch.Tensor) and v.dtype == torch.bool


def _is_topk(x: fx.Node) -> bool:
    return x.op in ("call_method", "call_function") and op_name(x) == "topk"


def _reads_topk(x: fx.Node) -> bool:
    return any(_is_topk(y) for y in upstream([x]))


def _view_chain(x, base: fx.Node) -> list | None:
    """The nodes from ``base`` to ``x`` when ``x`` is ``base`` seen through views and casts, else None."""
    chain = []
    while isinstance(x, fx.Node) and x is not base:
        if op_name(x) not in _VIEWS or not x.args or not isinstance(x.args[0], fx.Node):
            return None
        if op_name(x) == "getitem" and not _constant_index(x.args[1]):
            return None
        chain.append(x)
        x = x.args[0]
    return chain if x is base else None


def _constant_index(idx) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice)) and not isinstance(i, bool) and
               (not isinstance(i, slice) or all(isinstance(b, (int, type(None))) for b in (i.start, i.stop, i.step)))
               for i in items)


def _strip(x, names) -> tuple:
    seen = []
    while isinstance(x, fx.Node) and op_name(x) in names and x.args and isinstance(x.args[0], fx.Node):
        seen.append(x)
        x = x.args[0]
    return x, seen


def _last_dim(n: fx.Node, d) -> bool:
    s = shape(n)
    return s is not None and d in (-1, len(s) - 1)


def find(mask: fx.Node) -> KeySelection | None:
    """The key selection at an attention whose mask is ``mask``, or None if the mask is not of that form."""
    if not isinstance(mask, fx.Node) or not _reads_topk(mask):
        return None
    name = op_name(mask)
    if name in _AND and len(mask.args) == 2:
        a, b = mask.args
        sel, base = (a, b) if isinstance(a, fx.Node) and _reads_topk(a) else (b, a)
        hidden = isinstance(sel, fx.Node) and op_name(sel) == "invert"
        picked = sel.args[0] if hidden else sel
        combine = [mask] + ([sel] if hidden else [])
        if not (_is_bool(base) and _is_bool(picked)):
            return None
    elif name == "masked_fill" and len(mask.args) == 3:
        base, picked, value = mask.args
        if not (isinstance(value, (int, float)) and value <= _HIDDEN_BELOW and _is_bool(picked)):
            return None
        hidden, combine = True, [mask]
    else:
        return None
    if not isinstance(base, fx.Node) or _reads_topk(base):
        return None
    # the selection: [views of] FILL.scatter(-1, indices, value), True where hidden
    scatter, reshapes = _strip(picked, {"unsqueeze", "view", "reshape"})
    if op_name(scatter) != "scatter" or len(scatter.args) < 3 or scatter.kwargs:
        return None
    fill, dim, index = scatter.args[:3]
    value = scatter.args[3] if len(scatter.args) > 3 else None
    if not (isinstance(fill, fx.Node) and op_name(fill) in _FILL and len(fill.users) == 1 and _last_dim(fill, dim)
            and isinstance(value, (bool, int, float)) and bool(value) != _FILL[op_name(fill)]
            and bool(value) != hidden):
        return None
    idx, casts = _strip(index, _CASTS)
    if not (isinstance(idx, fx.Node) and idx.op == "call_function" and idx.target is operator.getitem
            and idx.args[1] == 1 and _is_topk(idx.args[0])):
        return None
    topk = idx.args[0]
    k_dim = topk.kwargs.get("dim", topk.args[2] if len(topk.args) > 2 else -1)
    if not _last_dim(topk.args[0], k_dim) or topk.kwargs.get("largest", True) is not True or len(topk.args) > 3:
        return None
    nodes = set(combine) | set(reshapes) | {scatter, fill, idx, topk} | set(casts)
    # the scores masked by M before the top-k: S.masked_fill(~Mv, -inf), or S + Mv (additive)
    masked = topk.args[0]
    mv = None
    if op_name(masked) == "masked_fill" and len(masked.args) == 3 and isinstance(masked.args[2], (int, float)) \
            and masked.args[2] <= _HIDDEN_BELOW and op_name(masked.args[1]) == "invert" and _is_bool(base):
        scores, mv = masked.args[0], masked.args[1].args[0]
        nodes |= {masked, masked.args[1]}
    elif op_name(masked) == "add" and len(masked.args) == 2 and not _is_bool(base):
        scores, mv = masked.args
        if isinstance(scores, fx.Node) and _view_chain(scores, base) is not None:
            scores, mv = mv, scores
        nodes.add(masked)
    else:
        return None
    chain = _view_chain(mv, base)
    if chain is None:
        return None
    nodes |= set(chain)
    # the pair scores: back from S through pair ops while the value has a query and a key axis
    tq, tk = shape(mask)[-2], shape(mask)[-1]
    leaves: list = []
    pair: set = set()
    todo = [scores]
    while todo:
        x = todo.pop()
        if not isinstance(x, fx.Node) or x in nodes or x in leaves:
            continue
        s = shape(x)
        pairish = s is not None and len(s) >= 3 and same_size(s[-1], tk) and \
            any(same_size(d, tq) for d in s[:-1])
        if pairish and op_name(x) in _PAIR_OPS and (op_name(x) != "matmul" or x.target in MATMUL):
            nodes.add(x)
            pair.add(x)
            todo.extend(x.all_input_nodes)
        elif isinstance(val(x), torch.Tensor):
            leaves.append(x)
    if scores not in nodes:
        return None
    sel = KeySelection(mask, base, topk, scores, nodes, leaves, pair)
    sel.fills[fill] = ("B",) + (None,) * (len(shape(fill)) - 3) + ("Q", "K")
    return sel


# ---- the pair check: every dimension of the pair values tagged batch ('B'), query ('Q') or key ('K') ----

def _broadcast(*tags) -> tuple | str:
    n = max(len(t) for t in tags)
    out = []
    for i in range(n):
        seen = {t[len(t) - n + i] for t in tags if len(t) - n + i >= 0} - {None}
        if len(seen) > 1:
            return f"it combines the {' and the '.join(sorted(seen))} axes"
        out.append(seen.pop() if seen else None)
    return tuple(out)


_ROLE_TAG = {B: "B", T: "Q", None: None}


def _leaf_tags(x: fx.Node, a) -> tuple | str:
    r = a.roles.get(x)
    if r is None or any(role not in _ROLE_TAG for role in r):
        return f"its input `{x.name}` is not a per-token value"
    if T not in r and any(r):
        return f"its input `{x.name}` is per-row data, not a per-token value"
    return tuple(_ROLE_TAG[role] for role in r)


def _dims(n: fx.Node, pos: int = 1) -> list:
    d = n.kwargs.get("dim", n.args[pos] if len(n.args) > pos else None)
    return [] if d is None else list(d) if isinstance(d, (list, tuple)) else [d]


def _tags_of(n: fx.Node, tag) -> tuple | str:
    name = op_name(n)
    ins = [tag(x) for x in n.args if isinstance(x, fx.Node) and isinstance(val(x), torch.Tensor)]
    bad = next((t for t in ins if isinstance(t, str)), None)
    if bad is not None:
        return bad
    if name == "matmul":
        x, y = ins
        if len(x) < 2 or len(y) < 2:
            return "a matmul of vectors"
        if x[-1] is not None or y[-2] is not None:
            return "a matmul that sums over a token axis"
        if x[-2] not in (None, "Q") or y[-1] == "B":
            return "a matmul whose rows or columns are not tokens of one kind"
        batch = _broadcast(x[:-2], y[:-2])
        if isinstance(batch, str):
            return batch
        # a token axis as the columns is the keys' (a per-token value transposed, or already the key axis)
        return batch + (x[-2], "K" if y[-1] in ("Q", "K") else None)
    if name in ("unsqueeze", "squeeze", "transpose", "sum"):
        t = list(ins[0])
        nd = len(t)
        if name == "unsqueeze":
            d = n.args[1] if len(n.args) > 1 else n.kwargs["dim"]
            t.insert(d % (nd + 1), None)
            return tuple(t)
        dims = [d % nd for d in _dims(n)] if _dims(n) else [i for i, s in enumerate(shape(n.args[0])) if s == 1]
        if name == "transpose":
            i, j = dims
            t[i], t[j] = t[j], t[i]
            return tuple(t)
        if any(t[d] is not None for d in dims):
            return f"`{name}` over a token axis"
        keep = name == "sum" and bool(n.kwargs.get("keepdim", n.args[2] if len(n.args) > 2 else False))
        return tuple(None if i in dims else r for i, r in enumerate(t)) if keep else \
            tuple(r for i, r in enumerate(t) if i not in dims)
    return _broadcast(*ins) if ins else ()


def check(sel: KeySelection, a, packed) -> str | None:
    """None when the selection's scores are a pair value of per-token inputs (every leaf packed, or a weight
    without token axes) ending as [batch, query, key]; else why not. Fills ``sel.tags``."""
    for x in sel.leaves:
        if not packed(x) and x not in a.tokenfn and any(a.roles.get(x) or ()):
            return f"its input `{x.name}` is not computed on the packed tokens"

    def tag(x):
        if x in sel.tags:
            return sel.tags[x]
        if x in sel.leaves:
            return _leaf_tags(x, a)
        return f"`{x.name}` is outside the selection"

    for n in (x for x in sel.scores.graph.nodes if x in sel.pair):
        t = _tags_of(n, tag)
        if isinstance(t, str):
            return f"{node_desc(n)}: {t}"
        sel.tags[n] = t
    if sel.tags.get(sel.scores) != ("B", "Q", "K"):
        return f"the scores `{sel.scores.name}` are not [batch, query token, key token] (tags {sel.tags.get(sel.scores)})"
    return None


def find_all(sites: list) -> None:
    """Each site whose mask is a key selection gets ``selection``, and its ``mask`` becomes M (the part the mask
    check verifies). A node of a selection that something outside the selections reads declines the graph."""
    for s in sites:
        sel = find(s.mask) if isinstance(s.mask, fx.Node) else None
        if sel is not None:
            s.selection, s.mask = sel, sel.base
    inside = set().union(*[s.selection.nodes for s in sites if s.selection is not None])
    readers: dict = {}  # a selection's final mask -> the attention nodes that read it (an eager site's add)
    for s in sites:
        if s.selection is not None:
            readers.setdefault(s.selection.final, set()).update({s.node} | set(s.internal))
    for n in inside:
        outside = [u for u in n.users if u not in inside and u not in readers.get(n, ())]
        if outside:
            raise Decline(f"{node_desc(n)} is part of an attention's top-k key selection and also read by "
                          f"{node_desc(outside[0])}")


# ---- the packed emission ----

def visibility(subtree_end, positions, window: int, like_ndim: int, dtype: torch.dtype):
    """The tree's visibility [N, N] as M's packed stand-in: [1, .., 1, N, N] bool, or additive (0 / min) in a
    float ``dtype``."""
    vis = tree_visibility_mask(subtree_end, positions, window)
    vis = vis.reshape((1,) * (like_ndim - 2) + tuple(vis.shape))
    if dtype == torch.bool:
        return vis
    return torch.zeros(vis.shape, dtype=dtype, device=vis.device).masked_fill(~vis, torch.finfo(dtype).min)


def emit(g: fx.Graph, sel: KeySelection, vis: fx.Node, n_tok, leaf, row, env: dict) -> fx.Node:
    """The selection's final mask on the packed tokens, into graph ``g``: M is ``vis``, each leaf ``leaf(x)``
    (detached: the selection is discrete), any other outside value ``row(x)``; shapes naming the batch become 1
    and those naming tokens ``n_tok``; the top-k takes at most ``n_tok`` keys (a query sees at most that many,
    so the visible keys it picks are the row's). ``env`` memoizes nodes shared between sites."""
    def arg(x):
        if not isinstance(x, fx.Node):
            return x
        if x is sel.base:
            return vis
        if x in env:
            return env[x]
        if x in sel.leaves:
            env[x] = g.call_method("detach", (leaf(x),))
            return env[x]
        return row(x)

    for n in sel.base.graph.nodes:
        if n not in sel.nodes or n in env:
            continue
        if n in sel.fills:
            size = tuple(1 if t == "B" else n_tok if t in ("Q", "K") else d
                         for t, d in zip(sel.fills[n], shape(n)))
            env[n] = g.call_method(n.target, (arg(n.args[0]), size), dict(n.kwargs))
        elif n is sel.topk:
            k = n.kwargs.get("k", n.args[1])
            k = g.call_function(torch.sym_min, (arg(k), n_tok)) if isinstance(k, fx.Node) else \
                g.call_function(min, (k, n_tok))
            args = (arg(n.args[0]), k) + tuple(fx.node.map_arg(n.args[2:], arg))
            env[n] = g.create_node(n.op, n.target, args, {key: v for key, v in n.kwargs.items() if key != "k"})
        else:
            env[n] = g.node_copy(n, arg)
            env[n].meta = {}
    return env[sel.final]
