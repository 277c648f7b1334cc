"""HF's ``labels`` loss as a masked log-prob gather: ``cross_entropy(logits.view(-1, V), labels.view(-1),
ignore_index=i)`` -> ``-(log_softmax(logits).gather(-1, where(valid, labels, 0)) * valid)``, summed or averaged over
the valid positions, with the LM head's input behind a refinable full slice of the sequence axis.

Why: ``F.cross_entropy`` is one opaque reduction over the flattened ``[B*T, V]`` logits, so the analysis would
replay the whole logits tensor to rows; an HF model called with ``labels`` (``ForCausalLMLoss``: logits upcast,
labels padded with ``ignore_index`` and shifted) computes exactly the decomposed form. Decomposed, the gather is a
vocabulary gather of the packed logits and the ``valid`` factor a weight (``passes/loss_weights.py``), so the LM
head runs once per unique kept token; the full slice in front of the LM head gives those tokens a packed space of
their own (``region._seq_slice`` honours ``REFINABLE``), which the runtime shrinks to the kept tokens.

Semantics-preserving (to summation order): ``reduction="mean"`` divides by the number of valid targets (0/0 =
NaN when none, as eager); ignored positions contribute exactly 0 to value and gradient. Taken only where the call
has no class weights and no label smoothing, the input is ``[N, V]`` viewed from ``[B, T, V]`` and the target
``[N]`` viewed from ``[B, T]``; anything else is left as it is. Runs after ``sink_slices``, before the analysis."""

from __future__ import annotations

import contextlib
import operator

import torch
import torch.fx as fx
import torch.nn.functional as F

from .nodes import LINEAR, count, op_name, val

# node meta key: a full slice of the sequence axis that still makes a packed space (``region._seq_slice``)
REFINABLE = "replay_refinable_slice"

_VIEWS = {"view", "reshape"}


def _source(x, rank: int):
    """The [B, T, ...] tensor ``x`` is a flattening view of (through same-dtype ``to``/``contiguous``, as HF
    moves the labels to the logits' device), or None."""
    while isinstance(x, fx.Node) and op_name(x) in ("to", "contiguous") and x.args and \
            isinstance(x.args[0], fx.Node) and isinstance(val(x), torch.Tensor) and \
            isinstance(val(x.args[0]), torch.Tensor) and val(x).dtype == val(x.args[0]).dtype:
        x = x.args[0]
    if not isinstance(x, fx.Node) or op_name(x) not in _VIEWS or not x.args:
        return None
    src = x.args[0]
    v = val(src)
    if not isinstance(src, fx.Node) or not isinstance(v, torch.Tensor) or v.dim() != rank:
        return None
    return src


def _fake(fn, *args):
    vals = [val(a) if isinstance(a, fx.Node) else a for a in args]
    mode = next((v.fake_mode for v in vals if hasattr(v, "fake_mode")), None)
    ctx = mode if mode is not None else contextlib.nullcontext()
    with ctx:
        return fn(*vals)


def _add(g: fx.Graph, before: fx.Node, kind: str, target, args, kwargs=None, fn=None) -> fx.Node:
    with g.inserting_before(before):
        n = g.call_function(target, args, kwargs or {}) if kind == "f" else g.call_method(target, args, kwargs or {})
    run = fn or (target if kind == "f" else (lambda x, *a, **k: getattr(x, target)(*a, **k)))
    n.meta["example_value"] = _fake(run, *args, **(kwargs or {})) if kwargs else _fake(run, *args)
    return n


def _erase_unused(nodes) -> None:
    """Erase the given nodes and, up their first-argument chains, every node left without users. Only these:
    dead code elimination over the whole graph would also drop in-place writes whose results are unused."""
    stack = [x for x in nodes if isinstance(x, fx.Node)]
    while stack:
        x = stack.pop()
        name = op_name(x) if x.op in ("call_function", "call_method") else ""
        writes = name.endswith("_") or x.target is operator.setitem or "out" in x.kwargs
        if name and not writes and not x.users:
            ins = list(x.all_input_nodes)
            x.graph.erase_node(x)
            stack.extend(ins)


def _ce_args(n: fx.Node):
    """(input, target, ignore_index, reduction) of an F.cross_entropy call it can decompose, else None."""
    if n.op != "call_function" or n.target is not F.cross_entropy:
        return None
    names = ["input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction", "label_smoothing"]
    bound = dict(zip(names, n.args))
    bound.update(n.kwargs)
    if bound.get("weight") is not None or bound.get("size_average") is not None or bound.get("reduce") is not None:
        return None
    if bound.get("label_smoothing", 0.0) not in (0, 0.0):
        return None
    ignore = bound.get("ignore_index", -100)
    reduction = bound.get("reduction", "mean")
    if not isinstance(ignore, int) or reduction not in ("mean", "sum", "none"):
        return None
    return bound.get("input"), bound.get("target"), ignore, reduction


def decompose_cross_entropy(gm: fx.GraphModule) -> int:
    """Rewrite in place; returns how many cross-entropy calls were decomposed."""
    g = gm.graph
    done = 0
    heads = []
    for n in list(g.nodes):
        parts = _ce_args(n)
        if parts is None:
            continue
        x, y, ignore, reduction = parts
        if not isinstance(val(x), torch.Tensor) or val(x).dim() != 2:
            continue  # classes on dim 1 of a 3-D input mean something else
        xs, ys = _source(x, 3), _source(y, 2)
        vx, vy = val(xs), val(ys)
        if xs is None or ys is None or not vx.is_floating_point() or vy.dtype != torch.int64:
            continue
        if tuple(str(s) for s in vx.shape[:2]) != tuple(str(s) for s in vy.shape):
            continue
        valid = _add(g, n, "f", operator.ne, (ys, ignore))
        safe = _add(g, n, "f", torch.where, (valid, ys, 0))
        idx = _add(g, n, "m", "unsqueeze", (safe, -1))
        lsm = _add(g, n, "f", torch.log_softmax, (xs, -1))
        gat = _add(g, n, "m", "gather", (lsm, -1, idx))
        sq = _add(g, n, "m", "squeeze", (gat, -1))
        neg = _add(g, n, "f", operator.neg, (sq,))
        # where, not a product: an ignored position is 0 even where its substituted log-prob is -inf (as eager)
        nll = _add(g, n, "f", torch.where, (valid, neg, 0.0))
        if reduction == "none":
            out = _add(g, n, "m", "reshape", (nll, (-1,)))
        else:
            total = _add(g, n, "m", "sum", (nll,))
            if reduction == "sum":
                out = total
            else:
                cnt = _add(g, n, "m", "sum", (valid,))
                out = _add(g, n, "f", operator.truediv, (total, cnt))
        n.replace_all_uses_with(out)
        g.erase_node(n)
        _erase_unused([x, y])
        heads.append(xs)
        done += 1
    if done:
        for xs in heads:  # the flattening views are gone: the logits' readers are the gathers alone
            _refinable_head(g, xs)
        gm.recompile()
        count("cross_entropy_decomposed", done)
    return done


def _refinable_head(g: fx.Graph, logits: fx.Node) -> None:
    """Put a full slice of the sequence axis, marked ``REFINABLE``, in front of the LM head whose output the
    logits are (through upcasts), so its rows get a packed space of their own; nothing where the chain has other
    readers (the logits returned too, say)."""
    x = logits
    while op_name(x) in ("float", "to") and x.args and isinstance(x.args[0], fx.Node) and len(x.users) == 1:
        x = x.args[0]
    if x.op != "call_function" or x.target not in LINEAR or len(x.users) != 1 or not x.args:
        return
    h = x.args[0]
    vh = val(h)
    if not isinstance(h, fx.Node) or not isinstance(vh, torch.Tensor) or vh.dim() != 3:
        return
    if h.op == "call_function" and h.target is operator.getitem:
        return  # already a slice (a loss's logits[:, :-1], sunk before the head): it makes the space
    # (a slice sunk further, below the final norm, is found by the analysis: there this one is an identity)
    idx = (slice(None), slice(0, None), slice(None))
    sl = _add(g, x, "f", operator.getitem, (h, idx))
    sl.meta[REFINABLE] = True
    x.replace_input_with(h, sl)
