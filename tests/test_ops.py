"""kernels/packing.py (replaycompile.kernels.packing), the index ops the rewrite inserts: ``pack_rows`` (row layout -> packed tokens),
``replay`` (packed -> row layout, zeros at pads; its backward sums every row's gradient of a shared token into
the one packed row), ``replay_gather`` (``replay(x).gather(-1, index)`` without the [B, T, V] tensor) and
``replay_log_softmax_gather`` (``replay_gather(x.log_softmax(-1), ...)`` with its own one-pass backward).
Plain torch functions, not custom ops: checked against their definitions and with gradcheck."""

from __future__ import annotations

import torch
from helpers import group_batch
from hypothesis import given, settings
from hypothesis import strategies as st

from replaycompile.kernels import packing as ops
from replaycompile.runtime.plan import build_plan


def _plan():
    ids, am, _, _ = group_batch(prompt_len=6, lens=(3, 1, 4), left_pad=1)
    return ids, am, build_plan(ids, am)


def _rows_of(plan, am):
    """For each real (b, t) its packed index: the reference the ops must agree with."""
    return [(b, t, int(plan.scatter_index[b, t])) for b in range(am.shape[0]) for t in range(am.shape[1])
            if am[b, t]]


def test_pack_then_replay_is_the_identity_on_real_tokens_and_zero_at_pads():
    ids, am, plan = _plan()
    # a per-row value that is equal wherever the plan shares a token (a function of the token's prefix)
    x = torch.randn(plan.num_packed, 5, dtype=torch.float64)[plan.scatter_index.clamp(max=plan.num_packed - 1)]
    packed = ops.pack_rows(x, 0, 1, plan.gather_index, plan.columns)
    assert packed.shape == (1, plan.num_packed, 5)
    back = ops.replay(packed, plan.scatter_index, 0, 1)
    real = am.bool()
    torch.testing.assert_close(back[real], x[real], rtol=0, atol=0)
    assert bool((back[~real] == 0).all())
    # other axis orders: [T, B, D] with bdim 1
    xt = x.transpose(0, 1)
    back_t = ops.replay(ops.pack_rows(xt, 1, 0, plan.gather_index, plan.columns), plan.scatter_index, 1, 0)
    torch.testing.assert_close(back_t.transpose(0, 1)[real], x[real], rtol=0, atol=0)


def test_pack_rows_of_a_positional_table_reads_the_column():
    _, am, plan = _plan()
    table = torch.randn(1, am.shape[1], 3)            # [1, T, D]: the rotary cos/sin, say
    packed = ops.pack_rows(table, 0, 1, plan.gather_index, plan.columns)
    torch.testing.assert_close(packed[0], table[0, plan.columns], rtol=0, atol=0)
    packed = ops.pack_rows(table[0], None, 0, plan.gather_index, plan.columns)   # [T, D], no batch axis
    torch.testing.assert_close(packed, table[0, plan.columns], rtol=0, atol=0)


def test_replay_backward_sums_the_rows_of_a_shared_token():
    _, am, plan = _plan()
    packed = torch.randn(1, plan.num_packed, 4, dtype=torch.float64, requires_grad=True)
    g = torch.randn(*am.shape, 4, dtype=torch.float64)
    ops.replay(packed, plan.scatter_index, 0, 1).backward(g)
    ref = torch.zeros(plan.num_packed, 4, dtype=torch.float64)
    for b, t, i in _rows_of(plan, am):
        ref[i] += g[b, t]
    torch.testing.assert_close(packed.grad[0], ref, rtol=0, atol=1e-12)
    assert plan.num_packed < int(am.sum()), "the batch shares tokens, so some packed row sums several"
    assert torch.autograd.gradcheck(lambda x: ops.replay(x, plan.scatter_index, 0, 1),
                                    (packed.detach().requires_grad_(),))


def test_replay_of_a_flattened_axis():
    """bdim None: ``tdim`` is a flattened B*T axis ([B*T, D] in the row layout)."""
    _, am, plan = _plan()
    packed = torch.randn(plan.num_packed, 2, dtype=torch.float64, requires_grad=True)
    out = ops.replay(packed, plan.scatter_index, None, 0)
    assert out.shape == (am.numel(), 2)
    flat = plan.scatter_index.reshape(-1)
    real = flat < plan.num_packed
    torch.testing.assert_close(out[real], packed[flat[real]], rtol=0, atol=0)
    assert bool((out[~real] == 0).all())
    assert torch.autograd.gradcheck(lambda x: ops.replay(x, plan.scatter_index, None, 0), (packed,))


def test_replay_gather_equals_replay_then_gather():
    ids, am, plan = _plan()
    vocab = 11
    packed = torch.randn(1, plan.num_packed, vocab, dtype=torch.float64, requires_grad=True)
    index = torch.randint(0, vocab, (*am.shape, 1))
    got = ops.replay_gather(packed, plan.scatter_index, index)
    ref = ops.replay(packed, plan.scatter_index, 0, 1).gather(-1, index)
    torch.testing.assert_close(got, ref, rtol=0, atol=0)
    assert torch.autograd.gradcheck(lambda x: ops.replay_gather(x, plan.scatter_index, index), (packed,))


@st.composite
def _pairs(draw):
    """Packed logits [1, N, V] and (row, target) pairs [B, K, j] over them: pads (scatter == N), rows read by
    several pairs with the same target (a shared token) and with different ones (a branch point), targets
    repeated within a row's j."""
    n, vocab = draw(st.integers(1, 6)), draw(st.integers(2, 9))
    b, k, j = draw(st.integers(1, 4)), draw(st.integers(1, 5)), draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    x = (3 * torch.randn(1, n, vocab, generator=g, dtype=torch.float64)).requires_grad_()
    scatter = torch.randint(0, n + 1, (b, k), generator=g)  # n: a pad
    index = torch.randint(0, vocab, (b, k, j), generator=g)
    return x, scatter, index


@settings(max_examples=40, deadline=None)
@given(_pairs())
def test_log_softmax_gather_equals_its_specification(case):
    """Values and gradients (a random upstream gradient, pads' entries included: they must send nothing back)
    equal ``replay_gather(x.log_softmax(-1), ...)`` in float64, and gradcheck holds."""
    x, scatter, index = case
    got = ops.replay_log_softmax_gather(x, scatter, index)
    ref = ops.replay_gather(x.log_softmax(-1), scatter, index)
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
    w = torch.randn_like(ref)
    (g_got,) = torch.autograd.grad((got * w).sum(), x)
    (g_ref,) = torch.autograd.grad((ref * w).sum(), x)
    torch.testing.assert_close(g_got, g_ref, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda t: ops.replay_log_softmax_gather(t, scatter, index), (x,))


def test_log_softmax_gather_compiles_whole_and_matches_in_float32():
    """Dynamo traces the autograd.Function into the graph (no graph break: a break would run the vocabulary
    passes eagerly, the slowdown this op exists to remove), and the compiled float32 values and gradient equal
    the reference's to float32 rounding."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    g = torch.Generator().manual_seed(0)
    x = (4 * torch.randn(1, 7, 50, generator=g)).requires_grad_()
    scatter = torch.tensor([[0, 1, 2, 7], [0, 1, 3, 4], [0, 5, 6, 7]])
    index = torch.randint(0, 50, (3, 4, 1), generator=g)
    fn = torch.compile(lambda t: ops.replay_log_softmax_gather(t, scatter, index).sum(), backend="aot_eager",
                       fullgraph=True)
    got = fn(x)
    (g_got,) = torch.autograd.grad(got, x)
    ref = ops.replay_gather(x.log_softmax(-1), scatter, index).sum()
    (g_ref,) = torch.autograd.grad(ref, x)
    assert sum(counters["graph_break"].values()) == 0
    torch.testing.assert_close(got, ref, rtol=1e-6, atol=1e-5)
    torch.testing.assert_close(g_got, g_ref, rtol=1e-6, atol=1e-6)
