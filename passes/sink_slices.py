"""Move slices of leading dims up through per-row ops: ``linear(h)[:, a:b]`` -> ``linear(h[:, a:b])``.

A loss usually slices the logits (``logits[:, P-1:-1]``) after the LM head. Both forms compute the same
values, but in the second the vocabulary projection runs only on the selected positions; once the analysis
turns the slice into a re-pack of the selected unique tokens, the LM head, the log-softmax and their
backward run once per unique predicting token. Semantics-preserving on any graph; runs before the analysis.

Autocast regions traced into the graph (``_enter_autocast`` / ``_exit_autocast``, e.g. accelerate's autocast
around ``model.forward`` with the loss outside it) are respected: a moved op keeps the dtypes it ran in. A
linear moved out of a region gets its inputs cast explicitly to the dtype it computed in there (what autocast's
lower-precision rule does), and a move whose op would compute in another dtype at its new place is not made.
"""

from __future__ import annotations

import contextlib
import operator

import torch
import torch.fx as fx

from .nodes import LINEAR as _LINEAR, count, val as _val

_UNARY_METHODS = {"float", "half", "bfloat16", "double", "to", "contiguous", "type_as"}
_BINARY = {operator.mul, operator.add, operator.sub, operator.truediv, torch.mul, torch.add, torch.sub, torch.div}


def _plain_slices(idx):
    """The slice tuple if ``idx`` is only slices (no None/Ellipsis/ints/tensors), else None."""
    if isinstance(idx, slice):
        idx = (idx,)
    if not isinstance(idx, tuple) or not all(isinstance(x, slice) for x in idx):
        return None
    return idx


def _compose(first, second):
    """One slice tuple equal to ``v[first][second]`` for every length of the sliced axis, or None. Taken: one axis
    sliced by both, ``first`` a suffix ``[-k:]`` (``logits_to_keep``) and ``second`` ``[:-m]`` (a loss's shift):
    ``v[-k:][:-m] == v[-k:-m]`` for any length L (both start at max(L - k, 0); both stop at L - m, or are empty
    when m >= min(k, L))."""
    if first is None or second is None:
        return None
    k1, k2 = _touched(first), _touched(second)
    if k1 == 0 or k1 != k2 or any(not _full(x) for x in first[:k1 - 1] + second[:k2 - 1]):
        return None
    a, b = first[k1 - 1], second[k2 - 1]
    ints = all(isinstance(v, int) or v is None for v in (a.start, a.stop, b.start, b.stop))
    if not ints or a.step not in (None, 1) or b.step not in (None, 1):
        return None
    if a.stop is None and a.start is not None and a.start < 0 and b.start in (None, 0) and \
            b.stop is not None and b.stop < 0:
        return first[:k1 - 1] + (slice(a.start, b.stop),)
    return None


def _full(x: slice) -> bool:
    return x.start in (None, 0) and x.stop is None and x.step in (None, 1)


def _touched(idx) -> int:
    """How many leading dims the slice tuple restricts (full slices at the end do not count)."""
    k = 0
    for i, x in enumerate(idx):
        if not (x.start in (None, 0) and x.stop is None and x.step in (None, 1)):
            k = i + 1
    return k


def _fake(fn, *args, regions=()):
    """``fn`` on the example values of ``args``, under the autocast ``regions`` a node at the new place runs in
    (the ambient autocast state, which Dynamo guards on, is already the current one)."""
    vals = [_val(a) for a in args]
    mode = next((v.fake_mode for v in vals if hasattr(v, "fake_mode")), None)
    if mode is None:
        return None
    with contextlib.ExitStack() as stack:
        for device_type, dtype, enabled, cache_enabled in regions:
            stack.enter_context(torch.autocast(device_type, dtype=dtype, enabled=enabled,
                                               cache_enabled=cache_enabled))
        with mode:
            return fn(*vals)


_ENTER, _EXIT = torch.amp.autocast_mode._enter_autocast, torch.amp.autocast_mode._exit_autocast


def _autocast_regions(graph: fx.Graph) -> dict:
    """node -> the autocast regions traced into the graph that enclose it, outermost first (each as its
    ``_enter_autocast`` arguments: device type, dtype, enabled, cache_enabled)."""
    out, stack = {}, []
    for n in graph.nodes:
        if n.op == "call_function" and n.target is _EXIT and stack:
            stack = [e for e in stack if e[0] is not n.args[0]]
        out[n] = tuple(e[1] for e in stack)
        if n.op == "call_function" and n.target is _ENTER:
            stack = stack + [(n, tuple(n.args) + (None,) * (4 - len(n.args)))]
    return out


def _cast_to(graph: fx.Graph, a, dtype: torch.dtype, made: list):
    """``a.to(dtype)`` for a floating tensor node of another dtype (float64 excepted, as autocast does); the
    new node is appended to ``made``."""
    v = _val(a)
    if not isinstance(a, fx.Node) or not isinstance(v, torch.Tensor) or not v.is_floating_point() or \
            v.dtype in (dtype, torch.float64):
        return a
    node = graph.call_method("to", (a, dtype))
    node.meta["example_value"] = _fake(lambda t: t.to(dtype), a)
    made.append(node)
    return node


def _same_module(new: fx.Node, old: fx.Node) -> None:
    """``new`` takes ``old``'s module stack and source line: the passes that group nodes by the module that traced
    them (a sub-layer computed per row, passes/recurrent.py) see a moved op where it was."""
    for key in ("nn_module_stack", "stack_trace"):
        if key in old.meta:
            new.meta[key] = old.meta[key]


def sink_slices(gm: fx.GraphModule) -> int:
    """Rewrite in place; returns how many slices moved."""
    moved = 0
    changed = True
    while changed:
        changed = False
        regions = _autocast_regions(gm.graph)  # nodes inserted below take the regions of the slice they replace
        for g in list(gm.graph.nodes):
            if not (g.op == "call_function" and g.target is operator.getitem):
                continue
            x, idx = g.args
            idx = _plain_slices(idx)
            if idx is None or not isinstance(x, fx.Node) or len(x.users) != 1 or x.op not in ("call_function",
                                                                                              "call_method"):
                continue
            xv = _val(x)
            if not isinstance(xv, torch.Tensor):
                continue
            k = _touched(idx)
            if k == 0:  # a full slice is an identity: drop it
                g.replace_all_uses_with(x)
                gm.graph.erase_node(g)
                changed = True
                continue
            y = x.args[0] if x.args else None
            if not isinstance(y, fx.Node) or not isinstance(_val(y), torch.Tensor):
                continue
            if x.op == "call_function" and x.target is operator.getitem:
                both = _compose(_plain_slices(x.args[1]), idx)
                if both is not None:  # x[-k:][:-m] -> x[-k:-m]: one slice of the axis (one packed space)
                    with gm.graph.inserting_before(g):
                        one = gm.graph.call_function(operator.getitem, (y, both))
                    one.meta["example_value"] = _val(g)
                    _same_module(one, g)
                    g.replace_all_uses_with(one)
                    gm.graph.erase_node(g)
                    gm.graph.erase_node(x)
                    moved += 1
                    changed = True
                continue
            ok = False
            if x.op == "call_function" and x.target in _LINEAR:
                ok = k < xv.dim() and _val(y).dim() == xv.dim()
            elif x.op == "call_method" and x.target in _UNARY_METHODS:
                ok = all(not isinstance(a, fx.Node) for a in list(x.args[1:]) + list(x.kwargs.values()))
            elif x.op == "call_function" and x.target in _BINARY and len(x.args) == 2:
                a, b = x.args
                other = b
                if isinstance(a, fx.Node) and isinstance(b, fx.Node) and _val(b).dim() == xv.dim():
                    y, other = b, a
                ov = _val(other) if isinstance(other, fx.Node) else other
                ok = (_val(y).dim() == xv.dim() and
                      (not isinstance(ov, torch.Tensor) or ov.dim() <= xv.dim() - k))
            if not ok:
                continue
            idx_vals = tuple(slice(_val(x_.start), _val(x_.stop), _val(x_.step)) for x_ in idx)
            here = regions.get(g, ())
            # an autocast boundary lies between x and the slice: a linear keeps the dtype it computed in
            cast = xv.dtype if regions.get(x, ()) != here and x.op == "call_function" and x.target in _LINEAR \
                else None
            made = []
            # insert where the old slice stood: its bounds may be computed after ``x``
            with gm.graph.inserting_before(g):
                new_slice = gm.graph.call_function(operator.getitem, (y, idx))
                new_slice.meta["example_value"] = _fake(lambda v: v[idx_vals], y, regions=here)
                made.append(new_slice)
                new_args = tuple(new_slice if a is y else a for a in x.args)
                if cast is not None:
                    new_args = tuple(_cast_to(gm.graph, a, cast, made) for a in new_args)
                new_x = gm.graph.create_node(x.op, x.target, new_args, dict(x.kwargs))
                made.append(new_x)
                if x.op == "call_method":
                    new_x.meta["example_value"] = _fake(lambda v, *r: getattr(v, x.target)(*r, **x.kwargs),
                                                        *new_args, regions=here)
                else:
                    new_x.meta["example_value"] = _fake(lambda *r: x.target(*r, **x.kwargs), *new_args,
                                                        regions=here)
            nv = new_x.meta["example_value"]
            if any(m.meta["example_value"] is None for m in made) or nv.dtype != xv.dtype:
                # unknown values, or the op would compute in another dtype at the new place: leave it there
                for m in reversed(made):
                    gm.graph.erase_node(m)
                continue
            for m in made:
                _same_module(m, x)  # the moved op still belongs to the module that traced it
            g.replace_all_uses_with(new_x)
            gm.graph.erase_node(g)
            gm.graph.erase_node(x)
            moved += 1
            changed = True
    if moved:
        gm.graph.lint()
        gm.recompile()
        count("slices_sunk", moved)
    return moved
