"""Fusion pass: a vocabulary gather of a log-softmax read by nothing else runs as one op.

``log_softmax(x, -1).gather(-1, targets)`` where the log-softmax is packed and has that one reader becomes
``replay_log_softmax_gather(x, ...)``: the log-softmax is computed at the gathered entries only, its ``[N, V]``
output never exists (option ``fusions``, name ``"log_softmax_gather"``). Also the vocabulary-gather matchers the
core packing step and the chunked LM head (``fuse_lm_head``) share.
"""

from __future__ import annotations

import torch
import torch.fx as fx

from .nodes import B, Kind, T, op_name, shape, val
from .region import GraphAnalysis


def is_vocab_gather(n: fx.Node, a: GraphAnalysis) -> bool:
    """``base.gather(-1, index)`` with ``base`` packed, laid out [B, T, V], and a per-row index."""
    if op_name(n) != "gather":
        return False
    base, dim, index = gather_args(n)
    r = a.roles.get(base)
    return (a.kind.get(base) == Kind.PACKED and r is not None and len(r) == 3 and r[:2] == (B, T)
            and dim in (-1, 2) and isinstance(index, fx.Node) and a.kind.get(index) == Kind.ROW)


def loss_vocab_gather(n: fx.Node, a: GraphAnalysis) -> bool:
    """A vocabulary gather where the packed region ends (a row node on its boundary): where the loss reads the
    LM head's log-probs, which the core packing step reads from the packed values and the fusions take over."""
    return a.kind.get(n) == Kind.ROW and n in a.boundaries and is_vocab_gather(n, a)


def gather_args(n: fx.Node):
    """(base, dim, index) of a gather node, positional or keyword."""
    args = list(n.args)
    base = args[0]
    dim = n.kwargs.get("dim", args[1] if len(args) > 1 else None)
    index = n.kwargs.get("index", args[2] if len(args) > 2 else None)
    return base, dim, index


def single_user(x: fx.Node) -> bool:
    return len(x.users) == 1


def log_softmax_input(n: fx.Node):
    """x if ``n`` is ``log_softmax(x, dim=-1)`` (method, torch or F form; no dtype), else None."""
    if op_name(n) != "log_softmax" or not n.args:
        return None
    args = list(n.args[1:])
    dim = n.kwargs.get("dim", args[0] if args else None)
    dtype = n.kwargs.get("dtype", args[1] if len(args) > 1 else None)
    x = n.args[0]
    rank = len(shape(x) or ())
    if dtype is not None or dim not in (-1, rank - 1) or not isinstance(x, fx.Node):
        return None
    return x


def fused_log_softmax_input(base: fx.Node, a: GraphAnalysis):
    """x where the vocabulary gather's ``base`` is ``log_softmax(x, -1)`` read by that gather alone, packed in
    the same space, in float32 or float64 (the same dtype in and out: not an autocast upcast), so that
    ``replay_log_softmax_gather`` can take x in its place; else None."""
    x = log_softmax_input(base) if isinstance(base, fx.Node) else None
    if x is None or not single_user(base) or a.kind.get(x) != Kind.PACKED or a.space.get(x) != a.space.get(base):
        return None
    vx, vb = val(x), val(base)
    if not (isinstance(vx, torch.Tensor) and isinstance(vb, torch.Tensor) and vx.dtype == vb.dtype
            and vx.dtype in (torch.float32, torch.float64)):
        return None
    return x


class LogSoftmaxGather:
    """The decision (which vocabulary gathers read a log-softmax that can be fused: gather node -> x), made from
    the source graph before packing; the core packing step asks ``input_for`` where it emits such a gather."""

    name = "log_softmax_gather"

    def __init__(self, gm: fx.GraphModule, a: GraphAnalysis):
        self.inputs = {}
        for n in gm.graph.nodes:
            if loss_vocab_gather(n, a):
                x = fused_log_softmax_input(gather_args(n)[0], a)
                if x is not None:
                    self.inputs[n] = x

    def input_for(self, n: fx.Node, streams: list):
        """x to fuse into gather ``n`` when every stream in ``streams`` computed it, else None."""
        x = self.inputs.get(n)
        return x if x is not None and all(x in st.env for st in streams) else None
