"""passes/sink_slices.py: a slice of leading dims moves up through per-row ops (``linear(h)[:, a:b]`` ->
``linear(h[:, a:b])``), values unchanged, and the pass counts what it moved."""

from __future__ import annotations

import operator

import torch
import torch.nn.functional as F
from torch._dynamo.utils import counters

from replaycompile.passes.nodes import LINEAR
from replaycompile.passes.sink_slices import sink_slices


def _graph(fn, *args):
    """The Dynamo graph of ``fn`` (with the example values the pass reads) and its example inputs."""
    graphs = []

    def grab(gm, example_inputs):
        graphs.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=grab)(*args)
    (gm, inputs), = graphs
    return gm, inputs


def _slice_inputs(gm) -> list:
    """The node each slice of the graph reads."""
    return [n.args[0] for n in gm.graph.nodes if n.op == "call_function" and n.target is operator.getitem]


def test_slice_moves_before_the_lm_head_and_its_cast():
    """``linear(h).float()[:, 3:-1]``: the slice ends up on h, the linear and the cast run on the selected rows,
    the output is unchanged; the counter says two moves (through the cast, then through the linear)."""
    h = torch.randn(3, 9, 8)
    w = torch.randn(16, 8)

    def head(h, w):
        return F.linear(h, w).float()[:, 3:-1]

    gm, inputs = _graph(head, h, w)
    ref = gm(*inputs)
    counters.clear()
    assert sink_slices(gm) == 2
    assert counters["replay"]["slices_sunk"] == 2
    (src,) = _slice_inputs(gm)
    assert src.op == "placeholder", f"the slice reads {src.name}, not the hidden states"
    lin = next(n for n in gm.graph.nodes if n.op == "call_function" and n.target in LINEAR)
    assert lin.args[0].target is operator.getitem
    torch.testing.assert_close(gm(*inputs), ref, rtol=1e-6, atol=1e-6)  # a matmul over fewer rows may round differently


def test_slice_of_a_value_with_other_users_stays():
    """The logits are used whole too (an entropy over every position): moving the slice would compute the head
    twice, so nothing moves and nothing is counted."""
    h = torch.randn(2, 6, 4)
    w = torch.randn(5, 4)

    def head(h, w):
        logits = F.linear(h, w)
        return logits[:, 1:], logits.logsumexp(-1)

    gm, inputs = _graph(head, h, w)
    ref = gm(*inputs)
    counters.clear()
    assert sink_slices(gm) == 0
    assert counters["replay"].get("slices_sunk", 0) == 0
    (src,) = _slice_inputs(gm)
    assert src.op == "call_function" and src.target in LINEAR
    for a, b in zip(gm(*inputs), ref):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)  # a matmul over fewer rows may round differently


def test_slice_moves_through_a_binary_op_with_a_broadcast_scalar():
    """``(linear(h) / temperature)[:, :-1]``: through the division (a Python scalar) and the linear."""
    h = torch.randn(2, 7, 4)
    w = torch.randn(5, 4)

    def head(h, w):
        return (F.linear(h, w) / 0.7)[:, :-1]

    gm, inputs = _graph(head, h, w)
    ref = gm(*inputs)
    counters.clear()
    assert sink_slices(gm) == 2 and counters["replay"]["slices_sunk"] == 2
    torch.testing.assert_close(gm(*inputs), ref, rtol=1e-6, atol=1e-6)  # a matmul over fewer rows may round differently
