"""What every pass reads off an FX node, and the vocabulary of the analysis: roles, kinds, declines.

No pass logic here: the passes (``attention_sites``, ``roles``, ``region``, ``rewrite``, ``sink_slices``,
``mask_probe``) import it so each of them can stay one concern.
"""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx


class Role(str, enum.Enum):
    """What a dimension of a tensor is. A ``str`` enum, so a role compares equal to its name.

    Two more kinds of role are built per graph, for mixture-of-experts routing: ``SlotsRole(k)`` (printed
    "BT*k"), a flattened batch*sequence*k dimension, token-major (k routing slots per token); ``SortedRole(node)``
    (printed "S:<node>"), the token (or slot) axis in the data-dependent order of the sort at <node> (HF's experts
    group the (token, expert) pairs by expert)."""
    B = "B"    # the batch axis
    T = "T"    # the sequence axis
    BT = "BT"  # a flattened batch*sequence axis

    def __str__(self) -> str:
        return self.value

    __repr__ = __str__


B, T, BT = Role.B, Role.T, Role.BT


class Kind(str, enum.Enum):
    """How the rewrite treats a node (``GraphAnalysis.kind``)."""
    PACKED = "packed"      # per-token along T: runs on the packed unique tokens
    ROW = "row"            # computed in the original [B, T, ...] layout
    MASK = "mask"          # only builds an attention mask (verified at run time, then dropped)
    INTERNAL = "internal"  # an inner node of a matmul-softmax-matmul attention, replaced as a whole

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class SlotsRole:
    """A flattened batch*sequence*k dimension, token-major: k mixture-of-experts routing slots per token."""
    k: int

    def __str__(self) -> str:
        return f"{BT.value}*{self.k}"


@dataclass(frozen=True)
class SortedRole:
    """The token (or slot) axis in the data-dependent order of the sort at node ``sort`` (by name)."""
    sort: str

    def __str__(self) -> str:
        return f"S:{self.sort}"


def slots_role(k: int):
    return BT if k == 1 else SlotsRole(k)


def slots(role) -> int | None:
    """k of a slots role (1 for BT), None for any other role."""
    if role == BT:
        return 1
    return role.k if isinstance(role, SlotsRole) else None


def sorted_role(sort_node: fx.Node) -> SortedRole:
    return SortedRole(sort_node.name)


def is_sorted_role(role) -> bool:
    return isinstance(role, SortedRole)


SDPA = {torch._C._nn.scaled_dot_product_attention, torch.nn.functional.scaled_dot_product_attention}
EMBEDDING = {torch.nn.functional.embedding}
LINEAR = {torch._C._nn.linear, torch.nn.functional.linear}
MATMUL = {torch.matmul, operator.matmul}
DROPOUT = {torch.nn.functional.dropout, torch.dropout}
VIEW_NAMES = {"view", "reshape", "flatten", "unflatten", "view_as", "reshape_as"}
EXPAND_NAMES = {"expand", "broadcast_to", "expand_as"}


class Decline(Exception):
    """The graph cannot be packed; the message says why in words a user can act on."""


class NotCandidate(Decline):
    """The graph has nothing to share (a loss tail after a graph break, a non-LM graph)."""


def op_name(node: fx.Node) -> str:
    t = node.target
    if isinstance(t, str):
        return t
    return getattr(t, "__name__", str(t))


def node_desc(node: fx.Node) -> str:
    return f"`{op_name(node)}` at node `{node.name}`"


def val(node: Any):
    """The traced example value of a node (a constant stays itself)."""
    if isinstance(node, fx.Node):
        return node.meta.get("example_value", node.meta.get("val"))
    return node


def shape(node: Any):
    v = val(node)
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


def dim_arg(node: fx.Node, pos: int, default=None):
    if "dim" in node.kwargs:
        return node.kwargs["dim"]
    return node.args[pos] if len(node.args) > pos else default


def norm_dim(d: int, ndim: int) -> int:
    return d % ndim if ndim else 0


def is_symint_node(x) -> bool:
    return isinstance(x, fx.Node) and isinstance(val(x), torch.SymInt)


def upstream(nodes) -> set:
    """``nodes`` and every node they are computed from."""
    needed: set = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n in needed:
            continue
        needed.add(n)
        stack.extend(n.all_input_nodes)
    return needed


def subgraph_module(gm: fx.GraphModule, outputs: list) -> fx.GraphModule:
    """A module computing just ``outputs`` (attention masks, symbolic slice bounds) from the graph's inputs."""
    needed = upstream(outputs)
    g = fx.Graph()
    env: dict = {}
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            env[n] = g.placeholder(n.name)
        elif n in needed:
            env[n] = g.node_copy(n, lambda x: env[x])
            env[n].meta = {}
    g.output(tuple(env[m] for m in outputs))
    return fx.GraphModule(gm, g)


def count(name: str, n: int = 1) -> None:
    """Bump ``torch._dynamo.utils.counters["replay"][name]``: tests assert a pass fired by these counts."""
    if n:
        torch._dynamo.utils.counters["replay"][name] += n
