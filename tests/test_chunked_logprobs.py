"""Tests for replaycompile::chunked_logprobs against the unfused reference (LM head, upcast, log-softmax, gather,
entropy): values and gradients for every chunking of the rows, fp32 / bf16 / fp64, opcheck, torch.compile with a
dynamic row count, and the promise that no [M, V] tensor is ever created."""

from __future__ import annotations

import pytest
import torch
from helpers import largest_tensor_mode
from hypothesis import given, settings
from hypothesis import strategies as st

from replaycompile.kernels.chunked_logprobs import chunked_logprobs, chunked_logprobs_backward
from replaycompile.kernels.chunked_logprobs_reference import chunked_logprobs_reference

H, V = 16, 50

FP32 = dict(rtol=1e-5, atol=1e-5)
FP64 = dict(rtol=1e-10, atol=1e-10)
# bf16: both sides compute the logits in bf16, but the chunked matmuls (and the weight gradient, summed over
# chunks) may round differently from the one big matmul, and one bf16 ulp of a logit is 2^-8 relative; the
# gradients go through a bf16 cast of d loss / d logits on both sides. So values agree to a few bf16 ulps, and
# test_bf16_as_accurate_as_unfused checks the sharper claim: against a float64 ground truth, the op's error is
# no larger than the unfused bf16 computation's own.
BF16 = dict(rtol=2e-2, atol=2e-2)


def make_inputs(m, h=H, v=V, dtype=torch.float32, bias=True, seed=0, logit_scale=1.0):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(m, h, generator=g)
    weight = torch.randn(v, h, generator=g) * (logit_scale / h**0.5)
    b = torch.randn(v, generator=g) if bias else None
    targets = torch.randint(0, v, (m,), generator=g)
    # upstream gradients as an RL loss gives them: per-row advantages (some zero: masked rows) and an entropy weight
    g_logp = torch.randn(m, generator=g) * (torch.rand(m, generator=g) > 0.2)
    g_ent = torch.randn(m, generator=g)
    cast = [x.to(dtype) if x is not None else None for x in (hidden, weight, b)]
    return (*cast, targets, g_logp, g_ent)


def leaves(*xs):
    return [x.detach().clone().requires_grad_(True) if x is not None else None for x in xs]


def op_and_grads(hidden, weight, bias, targets, g_logp, g_ent, chunk, with_entropy, softcap=0.0, use_logp=True):
    hidden, weight, bias = leaves(hidden, weight, bias)
    logp, ent, lse = chunked_logprobs(hidden, weight, bias, targets, chunk, with_entropy, softcap)
    loss = (logp * g_logp.to(logp.dtype)).sum() if use_logp else 0.0
    if with_entropy:
        loss = loss + (ent * g_ent.to(ent.dtype)).sum()
    params = [x for x in (hidden, weight, bias) if x is not None]
    return logp, ent, torch.autograd.grad(loss, params)


def ref_and_grads(hidden, weight, bias, targets, g_logp, g_ent, with_entropy, softcap=0.0, use_logp=True):
    hidden, weight, bias = leaves(hidden, weight, bias)
    logp, ent = chunked_logprobs_reference(hidden, weight, bias, targets, softcap)
    loss = (logp * g_logp.to(logp.dtype)).sum() if use_logp else 0.0
    if with_entropy:
        loss = loss + (ent * g_ent.to(ent.dtype)).sum()
    params = [x for x in (hidden, weight, bias) if x is not None]
    return logp, ent, torch.autograd.grad(loss, params)


def assert_matches(got, want, with_entropy, tol):
    (logp, ent, grads), (rlogp, rent, rgrads) = got, want
    torch.testing.assert_close(logp, rlogp, **tol, msg=lambda m: f"logp: {m}")
    if with_entropy:
        torch.testing.assert_close(ent, rent, **tol, msg=lambda m: f"entropy: {m}")
    else:
        assert ent.shape == (0,)
    for name, g, r in zip(("grad_hidden", "grad_weight", "grad_bias"), grads, rgrads):
        assert g.dtype == r.dtype and g.shape == r.shape, name
        torch.testing.assert_close(g, r, **tol, msg=lambda m: f"{name}: {m}")


# ragged last chunk, one row per chunk, one chunk exactly M, one chunk larger than M, chunks dividing M
CHUNKINGS = [(37, 8), (37, 1), (37, 37), (37, 64), (32, 8)]


@pytest.mark.parametrize("m,chunk", CHUNKINGS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_entropy", [True, False])
def test_fp32_matches_reference(m, chunk, bias, with_entropy):
    hidden, weight, b, targets, g_logp, g_ent = make_inputs(m, bias=bias, seed=m + chunk)
    got = op_and_grads(hidden, weight, b, targets, g_logp, g_ent, chunk, with_entropy)
    want = ref_and_grads(hidden, weight, b, targets, g_logp, g_ent, with_entropy)
    assert got[0].dtype == torch.float32 and got[0].shape == (m,)
    assert_matches(got, want, with_entropy, FP32)


@pytest.mark.parametrize("m,chunk", [(37, 8), (5, 16)])
def test_entropy_only_gradients(m, chunk):
    """A loss that uses only the entropy (grad_logp is None in backward) gets exactly d entropy / d params."""
    hidden, weight, b, targets, g_logp, g_ent = make_inputs(m, seed=3)
    got = op_and_grads(hidden, weight, b, targets, g_logp, g_ent, chunk, True, use_logp=False)
    want = ref_and_grads(hidden, weight, b, targets, g_logp, g_ent, True, use_logp=False)
    assert_matches(got, want, True, FP32)


def test_softcap_matches_reference():
    # logits of scale ~10 against a cap of 5: the tanh is far from linear, so a wrong derivative shows
    hidden, weight, b, targets, g_logp, g_ent = make_inputs(37, seed=5, logit_scale=10.0)
    got = op_and_grads(hidden, weight, b, targets, g_logp, g_ent, 8, True, softcap=5.0)
    want = ref_and_grads(hidden, weight, b, targets, g_logp, g_ent, True, softcap=5.0)
    assert_matches(got, want, True, FP32)
    # and the cap is not a no-op at this scale
    uncapped = ref_and_grads(hidden, weight, b, targets, g_logp, g_ent, True)
    assert not torch.allclose(got[0], uncapped[0], **FP32)


def test_frozen_weight_skips_its_gradient():
    """A frozen LM head (LoRA training): only the hidden gradient is computed, and it is right."""
    hidden, weight, b, targets, g_logp, g_ent = make_inputs(37, seed=7)
    h = hidden.clone().requires_grad_(True)
    logp, ent, _ = chunked_logprobs(h, weight, b, targets, 8, True, 0.0)
    (gh,) = torch.autograd.grad((logp * g_logp).sum() + (ent * g_ent).sum(), (h,))
    _, _, (rgh, *_) = ref_and_grads(hidden, weight, b, targets, g_logp, g_ent, True)
    torch.testing.assert_close(gh, rgh, **FP32)
    gh2, gw, gb = chunked_logprobs_backward(g_logp, g_ent, hidden, weight, b, targets, ent.detach(),
                                            torch.logsumexp(torch.nn.functional.linear(hidden, weight, b), -1),
                                            8, 0.0, True, False, False)
    assert gw.shape == (0,) and gb.shape == (0,)
    torch.testing.assert_close(gh2, rgh, **FP32)


@pytest.mark.parametrize("m,chunk", [(37, 8), (37, 1), (37, 64)])
@pytest.mark.parametrize("bias", [True, False])
def test_bf16_matches_reference(m, chunk, bias):
    hidden, weight, b, targets, g_logp, g_ent = make_inputs(m, dtype=torch.bfloat16, bias=bias, seed=11)
    got = op_and_grads(hidden, weight, b, targets, g_logp, g_ent, chunk, True)
    want = ref_and_grads(hidden, weight, b, targets, g_logp, g_ent, True)
    assert got[0].dtype == torch.float32 and got[2][0].dtype == torch.bfloat16
    assert_matches(got, want, True, BF16)


def test_bf16_as_accurate_as_unfused():
    """Against float64 math on the same bf16-rounded inputs, the chunked op's relative error is at most 1.5x the
    unfused bf16 computation's. Values and the hidden gradient match it exactly in error; the weight gradient is
    a sum of per-chunk bf16 matmuls (each rounded once, summed in float32), measured at 1.0-1.3x."""
    hidden, weight, b, targets, g_logp, g_ent = make_inputs(37, dtype=torch.bfloat16, seed=13)
    got = op_and_grads(hidden, weight, b, targets, g_logp, g_ent, 4, True)
    ref = ref_and_grads(hidden, weight, b, targets, g_logp, g_ent, True)
    exact = ref_and_grads(*(x.double() for x in (hidden, weight, b)), targets, g_logp, g_ent, True)

    def rel_errs(res):
        outs, wants = (res[0], res[1], *res[2]), (exact[0], exact[1], *exact[2])
        return [((x.double() - e).norm() / e.norm()).item() for x, e in zip(outs, wants)]

    for name, e_op, e_ref in zip(("logp", "entropy", "grad_hidden", "grad_weight", "grad_bias"), rel_errs(got),
                                 rel_errs(ref)):
        assert e_op <= 1.5 * e_ref, (name, e_op, e_ref)


@settings(max_examples=30)
@given(m=st.integers(0, 40), v=st.integers(1, 30), h=st.integers(1, 8), chunk=st.integers(1, 45),
       bias=st.booleans(), with_entropy=st.booleans(), softcap=st.sampled_from([0.0, 2.0]),
       seed=st.integers(0, 2**16))
def test_property_fp64_any_shape(m, v, h, chunk, bias, with_entropy, softcap, seed):
    """Any row count (including 0), vocabulary, hidden size and chunking gives the reference to float64 noise."""
    hidden, weight, b, targets, g_logp, g_ent = make_inputs(m, h=h, v=v, dtype=torch.float64, bias=bias, seed=seed,
                                                            logit_scale=3.0)
    got = op_and_grads(hidden, weight, b, targets, g_logp, g_ent, chunk, with_entropy, softcap)
    want = ref_and_grads(hidden, weight, b, targets, g_logp, g_ent, with_entropy, softcap)
    assert got[0].dtype == torch.float64
    assert_matches(got, want, with_entropy, FP64)


@pytest.mark.parametrize("bias,with_entropy,softcap", [(True, True, 0.0), (False, False, 0.0), (True, True, 3.0)])
def test_opcheck(bias, with_entropy, softcap):
    hidden, weight, b, targets, g_logp, g_ent = make_inputs(11, h=4, v=7, bias=bias, seed=17)
    hidden, weight, b = leaves(hidden, weight, b)
    torch.library.opcheck(chunked_logprobs, (hidden, weight, b, targets, 4, with_entropy, softcap))
    # entropies to read: random values (torch.empty's uninitialised memory held NaNs now and then, and NaN != NaN)
    ent = torch.randn(11 if with_entropy else 0)
    lse = torch.randn(11)
    for needs in ((True, True, True), (True, False, False)):
        torch.library.opcheck(chunked_logprobs_backward,
                              (g_logp, g_ent, hidden.detach(), weight.detach(), b.detach() if bias else None,
                               targets, ent, lse, 4, softcap, *needs))


def test_compiled_dynamic_rows():
    """Inside torch.compile(fullgraph=True) the op is one opaque node: two row counts compile once (M symbolic)
    and give the reference's values and gradients."""
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("aot_eager")

    def loss_fn(hidden, weight, bias, targets, adv):
        logp, ent, _ = chunked_logprobs(hidden, weight, bias, targets, 8, True, 0.0)
        return (logp * adv).sum() + 0.01 * ent.sum(), logp

    compiled = torch.compile(loss_fn, fullgraph=True, backend=counter, dynamic=True)
    for m in (37, 20):
        hidden, weight, b, targets, adv, _ = make_inputs(m, seed=m)
        hidden, weight, b = leaves(hidden, weight, b)
        loss, logp = compiled(hidden, weight, b, targets, adv)
        grads = torch.autograd.grad(loss, (hidden, weight, b))
        rh, rw, rb = leaves(hidden, weight, b)
        rlogp, rent = chunked_logprobs_reference(rh, rw, rb, targets)
        rloss = (rlogp * adv).sum() + 0.01 * rent.sum()
        rgrads = torch.autograd.grad(rloss, (rh, rw, rb))
        torch.testing.assert_close(logp, rlogp, **FP32)
        torch.testing.assert_close(loss, rloss, **FP32)
        for g, r in zip(grads, rgrads):
            torch.testing.assert_close(g, r, **FP32)
    assert counter.frame_count == 1, counter.frame_count


def test_no_rows_by_vocab_tensor():
    """The promise of the op: forward and backward never create a tensor of M x V elements, only chunk x V.
    Every aten op the two ops' Python bodies run is recorded by a dispatch mode."""
    m, chunk, v, h = 256, 32, 1000, 16
    hidden, weight, b, targets, g_logp, g_ent = make_inputs(m, h=h, v=v, seed=19)

    largest = largest_tensor_mode()
    with largest:
        logp, ent, lse = chunked_logprobs._init_fn(hidden, weight, b, targets, chunk, True, 0.0)
        grads = chunked_logprobs_backward._init_fn(g_logp, g_ent, hidden, weight, b, targets, ent, lse, chunk, 0.0,
                                                   True, True, True)
    assert all(torch.isfinite(x).all() for x in (logp, ent, *grads))
    assert largest.numel >= chunk * v  # the recorder sees the chunk-level logits
    assert largest.numel <= max(chunk * v, v * h) < m * v // 4, (largest.numel, m * v)
