"""replaycompile::chunked_pair_logprobs (the LM head on unique rows, read at (row, target) pairs) against its
reference: values and gradients for random pairs (rows read several times, rows read by none), every chunking,
fp32 / bf16 / fp64, softcap and bias, opcheck of both ops."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from replaycompile.kernels.chunked_logprobs import chunked_pair_logprobs, chunked_pair_logprobs_backward
from replaycompile.kernels.chunked_logprobs_reference import chunked_pair_logprobs_reference


def make(m, p, h, v, bias, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(m, h, generator=g).to(dtype)
    weight = (torch.randn(v, h, generator=g) / h ** 0.5).to(dtype)
    b = torch.randn(v, generator=g).to(dtype) if bias else None
    rows = torch.randint(0, m, (p,), generator=g)
    targets = torch.randint(0, v, (p,), generator=g)
    grad = torch.randn(p, generator=g)
    return hidden, weight, b, rows, targets, grad


def run(fn, hidden, weight, b, rows, targets, grad, *extra):
    leaves = [x.clone().requires_grad_() for x in (hidden, weight) + ((b,) if b is not None else ())]
    out = fn(leaves[0], leaves[1], leaves[2] if b is not None else None, rows, targets, *extra)
    logp = out[0] if isinstance(out, tuple) else out
    (logp.float() * grad).sum().backward()
    return [logp.detach()] + [x.grad for x in leaves]


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 9), p=st.integers(1, 20), chunk=st.integers(1, 10), bias=st.booleans(),
       softcap=st.sampled_from([0.0, 2.5]), seed=st.integers(0, 2**16))
def test_matches_reference(m, p, chunk, bias, softcap, seed):
    args = make(m, p, 6, 11, bias, seed)
    got = run(chunked_pair_logprobs, *args, chunk, softcap)
    want = run(chunked_pair_logprobs_reference, *args, softcap)
    for a, b in zip(got, want):
        assert rel(a, b) < 1e-5, (rel(a, b), m, p, chunk)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.bfloat16, 2e-2)])
def test_dtypes(dtype, tol):
    args = make(7, 15, 8, 13, True, 3, dtype)
    got = run(chunked_pair_logprobs, *args, 3, 0.0)
    want = run(chunked_pair_logprobs_reference, *args, 0.0)
    assert got[0].dtype == torch.promote_types(dtype, torch.float32)
    for a, b in zip(got, want):
        assert rel(a, b) < tol


def test_each_row_once_per_chunk():
    """The pairs' rows are read where their chunk's logits are: a row read by many pairs is one logits row, and
    the result equals the per-pair computation of the original op (rows repeated)."""
    from replaycompile.kernels.chunked_logprobs import chunked_logprobs
    hidden, weight, b, rows, targets, grad = make(4, 40, 8, 16, False, 5)
    got = run(chunked_pair_logprobs, hidden, weight, b, rows, targets, grad, 3, 0.0)
    per_pair = run(lambda h, w, bb, r, t, c: chunked_logprobs(h[r], w, bb, t, c, False, 0.0)[0],
                   hidden, weight, b, rows, targets, grad, 3)
    for a, c in zip(got, per_pair):
        assert rel(a, c) < 1e-6


@pytest.mark.parametrize("bias,softcap", [(True, 0.0), (False, 0.0), (True, 3.0)])
def test_opcheck(bias, softcap):
    hidden, weight, b, rows, targets, grad = make(6, 10, 4, 7, bias, 17)
    leaves = [x.requires_grad_() for x in (hidden, weight) + ((b,) if bias else ())]
    torch.library.opcheck(chunked_pair_logprobs, (leaves[0], leaves[1], leaves[2] if bias else None, rows, targets,
                                                  4, softcap))
    lse = torch.randn(6)
    for needs in ((True, True, True), (True, False, False)):
        torch.library.opcheck(chunked_pair_logprobs_backward,
                              (grad, hidden.detach(), weight.detach(), b.detach() if bias else None, rows, targets,
                               lse, 4, softcap, *needs))
