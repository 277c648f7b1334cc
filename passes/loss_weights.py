"""Which tokens of a sliced packed space the loss weighs by zero, as a function of runtime mask values.

A masked RL loss reads the LM head at every position and multiplies the per-position result by a mask
(``(logp * adv * cm).sum()``, verl's ``masked_mean(x, mask)``, ``torch.where(mask, x, 0)``). At a position whose
weight is zero the product is zero whatever the log-prob was (for a finite one), and its gradient is zero, so
nothing upstream of that position needs computing. This pass proves it from the graph, without running anything:

For a slice's packed space (``region.SliceSite``) every value that leaves the space (a vocabulary gather, or a
replayed packed value read by a row op) is followed forward through *positional* ops (elementwise ops whose
output has the same per-position layout, squeezes of trailing axes) until it is multiplied by a *weight*: a
value computed from the graph's non-parameter inputs alone (never from the model), not requiring grad, never
mutated in place, broadcast over the positions. A position is dropped when, on every path out of the space, one
of the weights met is zero there. Anything else (a reduction before any weight, a graph output, an op the pass
does not know) keeps every position: the space is not refined.

The result is a ``KeepExpr`` per space: a tree of ``("all",)``, ``("and", weight index, rank, child)`` and
``("or", children)``; ``keep_positions`` evaluates it on the weights' runtime values to a ``[B, K]`` bool. Passes
know graphs; the runtime (``replaycompile.runtime.inputs``) evaluates the weights with ``weights_gm`` and hands the
result to the plan, which drops the tokens no kept position reads.

Where the result comes out non-finite with zeros read at the dropped positions (a loss that divides by the
log-prob, say), the backend reruns the call with every position and keeps them all for that graph from then on.
A known deviation: where eager's value at a zero-weight position is non-finite *because of the log-prob itself*
(a ``-inf`` logit at the target, ``exp`` of the log-prob overflowing), eager's loss is NaN (``0 * inf``) and the
packed one finite. Weights drawn at random (dropout, ``rand``), written in place, or requiring grad are not
trusted; values not laid out ``[B, K, ...]`` keep every position."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import torch
import torch.fx as fx

from .nodes import Kind, op_name, shape, upstream, val

ALL = ("all",)

# elementwise ops that keep a value's per-position layout (the other operands are broadcast onto it)
_POINTWISE = {
    "add", "sub", "mul", "div", "truediv", "true_divide", "rsub", "neg", "exp", "log", "log1p", "expm1", "abs",
    "clamp", "clamp_min", "clamp_max", "clip", "minimum", "maximum", "sigmoid", "tanh", "pow", "reciprocal",
    "sqrt", "rsqrt", "square", "float", "double", "to", "type_as", "contiguous", "where", "masked_fill", "detach",
    "softplus", "relu", "exp2", "sign", "negative", "multiply", "subtract", "divide",
}
# reshapes accepted when they only add or drop trailing size-1 axes
_SQUEEZE = {"squeeze", "unsqueeze", "view", "reshape", "flatten"}
# ops that follow an alias of their input (for the in-place check)
_VIEWS = {"getitem", "view", "reshape", "squeeze", "unsqueeze", "transpose", "permute", "expand", "narrow",
          "select", "t", "view_as", "expand_as", "flatten", "unflatten", "movedim", "as_strided", "detach",
          "contiguous", "unbind", "split", "chunk", "diagonal",
          # these may return their input itself: a write through the result writes the input
          "float", "to", "type_as", "double", "half", "bfloat16"}
# Dynamo's in-place operators (``x *= y``): their names have no trailing underscore
_INPLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
                      operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor, operator.setitem}


def _nondeterministic(n: fx.Node) -> bool:
    """A node that draws random numbers: evaluated again for the weights it would draw other ones."""
    name = op_name(n).lower()
    return any(w in name for w in ("rand", "bernoulli", "dropout", "multinomial", "normal", "poisson", "uniform",
                                   "exponential", "geometric", "cauchy"))


def _inplace(n: fx.Node) -> bool:
    if n.op not in ("call_function", "call_method"):
        return False
    name = op_name(n)
    return n.target in _INPLACE_OPERATORS or (name.endswith("_") and not name.startswith("_")) or \
        "out" in n.kwargs


@dataclass
class SpaceWeights:
    """The weights found for a graph: their nodes (inputs of ``weights_gm``) and each refinable space's
    ``KeepExpr`` over them (indices into ``nodes``)."""
    nodes: list = field(default_factory=list)
    keep: dict = field(default_factory=dict)      # space id -> KeepExpr (never ALL)


def _pos_shape(s) -> tuple | None:
    """A value's per-position layout: its shape with trailing size-1 axes dropped past the first two."""
    if s is None or len(s) < 2:
        return None
    s = list(s)
    while len(s) > 2 and s[-1] == 1:
        s.pop()
    return tuple(str(x) for x in s)


def _mutated_roots(gm: fx.GraphModule) -> set:
    """Nodes some in-place op writes into (through views): weights computed from them are not what the
    graph's own weight nodes hold by the time they are read."""
    roots = set()
    for n in gm.graph.nodes:
        if n.args and isinstance(n.args[0], fx.Node) and _inplace(n):
            roots.add(_root(n.args[0]))
    return roots


def _root(n: fx.Node) -> fx.Node:
    while isinstance(n, fx.Node) and n.op in ("call_function", "call_method") and op_name(n) in _VIEWS and \
            n.args and isinstance(n.args[0], fx.Node):
        n = n.args[0]
    return n


class _Finder:
    def __init__(self, gm: fx.GraphModule, a, space_nodes: dict):
        self.gm, self.a = gm, a
        self.weights: list = []
        self._index: dict = {}
        self._memo: dict = {}
        self._mutated = _mutated_roots(gm)
        self._params = {n for n in gm.graph.nodes if n.op == "placeholder"
                        and isinstance(val(n), torch.nn.Parameter)}
        self._space_nodes = space_nodes

    # -- weights
    def weight(self, m, path: fx.Node) -> int | None:
        """The index of ``m`` as a weight of the value ``path`` it multiplies, or None if it is not one."""
        if not isinstance(m, fx.Node):
            return None
        vm = val(m)
        if not isinstance(vm, torch.Tensor) or vm.requires_grad or vm.dim() > len(shape(path) or ()):
            return None
        if vm.is_complex():
            return None
        if m in self._index:
            return self._index[m]
        up = upstream([m])
        for x in up:
            if self.a.kind.get(x) == Kind.PACKED or x in self._params or x.op == "get_attr":
                return None
            if _root(x) in self._mutated or x in self._mutated or _inplace(x) or _nondeterministic(x):
                return None
            vx = val(x)
            if isinstance(vx, torch.Tensor) and vx.requires_grad:
                return None
        self._index[m] = len(self.weights)
        self.weights.append(m)
        return self._index[m]

    # -- the keep expression of a row value at positions [B, K, ...]
    def keep(self, n: fx.Node) -> tuple:
        if n in self._memo:
            return self._memo[n]
        self._memo[n] = ALL  # a cycle cannot occur in a DAG; the placeholder guards recursion depth only
        pos = _pos_shape(shape(n))
        users = list(n.users)
        if pos is None or not users:
            res = ALL
        else:
            parts = []
            for u in users:
                parts.append(self.keep_via(n, u, pos))
                if parts[-1] == ALL:
                    break
            res = ALL if not parts or ALL in parts else (parts[0] if len(parts) == 1 else ("or", tuple(parts)))
        self._memo[n] = res
        return res

    def keep_via(self, n: fx.Node, u: fx.Node, pos: tuple) -> tuple:
        """What ``u`` keeps of ``n``'s positions."""
        if u.op != "call_function" and u.op != "call_method":
            return ALL
        if self.a.kind.get(u) == Kind.PACKED:
            return ALL  # back into the packed region (another space): not followed
        name = op_name(u)
        if _pos_shape(shape(u)) != pos:
            return ALL
        if name in _SQUEEZE:
            return self.keep(u) if u.args and u.args[0] is n else ALL
        if name not in _POINTWISE:
            return ALL
        operands = [x for x in list(u.args) + list(u.kwargs.values()) if isinstance(x, fx.Node)]
        if name in ("mul", "multiply") and len(operands) == 2:
            other = operands[1] if operands[0] is n else operands[0]
            if other is not n:
                w = self.weight(other, u)
                if w is not None:
                    rank = len(shape(u))
                    rest = self.keep(u)
                    return ("and", w, rank, rest)
        if name == "where" and len(u.args) == 3 and u.args[0] is not n and _is_zero(u.args[2]) and u.args[1] is n:
            w = self.weight(u.args[0], u)
            if w is not None:
                return ("and", w, len(shape(u)), self.keep(u))
        if name == "masked_fill" and len(u.args) >= 3 and u.args[0] is n and _is_zero(u.args[2]):
            w = self.weight(u.args[1], u)
            if w is not None:
                return ("and", ~w, len(shape(u)), self.keep(u))  # ~w: kept where the fill mask is False
        return self.keep(u)


def _is_zero(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == 0


def space_weights(gm: fx.GraphModule, a, exits: dict) -> SpaceWeights:
    """The refinable spaces of a graph: ``exits`` maps each slice space to the row nodes where its values leave
    the packed region (vocabulary gathers, and the row ops that read a replayed packed value, with that value:
    ``(row node, packed input or None)``), plus ``None`` for a packed value of the space that is a graph output."""
    f = _Finder(gm, a, {})
    out = SpaceWeights()
    for sp, leaving in exits.items():
        parts = []
        for row, packed_in in leaving:
            if row is None:
                parts = [ALL]
                break
            if packed_in is None:  # a vocabulary gather: its output's positions are the space's
                e = f.keep(row)
            else:
                pos = _pos_shape(shape(packed_in))
                e = ALL if pos is None else f.keep_via(packed_in, row, pos)
            parts.append(e)
            if e == ALL:
                break
        if parts and ALL not in parts:
            out.keep[sp] = parts[0] if len(parts) == 1 else ("or", tuple(parts))
    out.nodes = f.weights
    return out


def keep_positions(expr: tuple, weights: list, b: int, k: int) -> torch.Tensor:
    """``expr`` on the weights' values: [B, K] bool, True where some path keeps the position. A weight of rank r
    multiplies a value laid out [B, K, ...] (r axes): its trailing axes are reduced with any(), its leading ones
    broadcast."""
    if expr == ALL:
        return torch.ones(b, k, dtype=torch.bool)
    if expr[0] == "or":
        out = keep_positions(expr[1][0], weights, b, k)
        for e in expr[1][1:]:
            out = out | keep_positions(e, weights, b, k)
        return out
    _, w, rank, rest = expr
    negate = w < 0
    m = weights[~w if negate else w]
    m = m.detach()
    nz = (m == 0) if negate else (m != 0)
    nz = nz.reshape((1,) * (rank - nz.dim()) + tuple(nz.shape))
    if nz.dim() > 2:
        nz = nz.flatten(2).any(-1)
    nz = torch.broadcast_to(nz.cpu(), (b, k))
    return nz & keep_positions(rest, weights, b, k)
