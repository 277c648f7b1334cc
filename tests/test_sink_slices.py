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


def test_compose_suffix_then_shift_equals_for_every_length():
    """``v[-k:][:-m]`` and the one slice ``v[-k:-m]`` that replaces it (logits_to_keep, then a loss's shift) agree
    for every axis length, including k > L and m >= k (empty)."""
    from replaycompile.passes.sink_slices import _compose
    for L in range(0, 9):
        v = torch.arange(L)
        for k in range(1, 11):
            for m in range(1, 11):
                first = (slice(None), slice(-k, None))
                second = (slice(None), slice(None, -m))
                both = _compose(first, second)
                assert both is not None
                assert torch.equal(v[None][first][second], v[None][both]), (L, k, m)
    assert _compose((slice(None), slice(2, None)), (slice(None), slice(None, -1))) is None  # not a suffix


def test_logits_to_keep_then_shift_packs_the_head_once():
    """model(..., logits_to_keep=C+1).logits[:, :-1]: the two slices become one, so the LM head runs on the
    unique predicting rows (as for logits[:, P-1:-1]); exact."""
    import replaycompile
    from helpers import AOT, assert_same_step, group_batch, run
    from replaycompile.testing.models import tiny_model

    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch()
    c = ids.shape[1] - p

    def step(model, ids, am, adv):
        logits = model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=c + 1).logits[:, :-1]
        logp = logits.float().log_softmax(-1).gather(-1, ids[:, p:, None]).squeeze(-1)
        return -(logp * adv[:, None] * am[:, p:]).sum() / am[:, p:].sum()
    ref = run(step, model, ids, am, adv)
    got = run(torch.compile(step, backend="replay", options=AOT), model, ids, am, adv)
    assert_same_step(ref, got)
    st = replaycompile.last_stats()
    assert st["applied"] and st["lm_head_rows"] > 0, st
    torch._dynamo.reset()
