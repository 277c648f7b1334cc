"""Writes to a weight's data inside the step (Gemma 3n clamps its AltUp coefficients' ``.data`` in place on every
forward) taken out of the graph and run before it, from the graph's own inputs.

Semantics-preserving where it applies: the write reads only the weight and constants, and no read of that weight
precedes it in the graph, so running it first gives every read the same values. Why: AOT autograd cannot take an
input mutation through a non-differentiable view (``p.data``) in a graph the backend builds, so such a write
would make the packed graph fail to compile; outside the graph it is a plain tensor op.
"""

from __future__ import annotations

import torch
import torch.fx as fx

from .nodes import op_name, subgraph_module

_DATA_VIEWS = ("_get_data_attr", "detach", "view", "reshape", "data")


def _root(x: fx.Node) -> tuple[fx.Node | None, list]:
    """(the graph input ``x`` is a data view of, the views on the way), or (None, []) if it is not one."""
    chain = []
    while x.op != "placeholder":
        if op_name(x) not in _DATA_VIEWS or not x.args or not isinstance(x.args[0], fx.Node):
            return None, []
        chain.append(x)
        x = x.args[0]
    return x, chain


def _is_write(n: fx.Node) -> bool:
    name = op_name(n)
    return (n.op in ("call_method", "call_function") and name.endswith("_") and not name.startswith("_")
            and name not in ("requires_grad_", "retain_grad_") and bool(n.args) and isinstance(n.args[0], fx.Node))


def hoist_weight_writes(gm: fx.GraphModule) -> fx.GraphModule | None:
    """Take each in-place write to a graph input's data view whose other arguments are constants and which no
    other read of that input precedes out of ``gm`` (mutated): returns a module doing those writes from the
    graph's inputs, to run before the graph on every call; None when there is none."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    writes, chains = [], []
    for n in gm.graph.nodes:
        if not _is_write(n):
            continue
        root, chain = _root(n.args[0])
        if root is None or not chain or n.users or any(isinstance(x, fx.Node) for x in list(n.args[1:]) +
                                                       list(n.kwargs.values())):
            continue
        if any(order[u] < order[n] and u not in chain for u in root.users):
            continue  # the weight is read before the write: its place in the graph matters
        writes.append(n)
        chains.append(chain)
    if not writes:
        return None
    prologue = subgraph_module(gm, writes)
    for n, chain in zip(writes, chains):
        gm.graph.erase_node(n)
        for x in chain:  # the views, innermost last: erase the unused ones
            if not x.users:
                gm.graph.erase_node(x)
    gm.graph.lint()
    gm.recompile()
    torch._dynamo.utils.counters["replay"]["weight_writes_hoisted"] += len(writes)
    return prologue
