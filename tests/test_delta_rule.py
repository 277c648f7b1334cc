"""The gated delta rule the tree scan runs (kernels/delta_rule.py, issue 31: our own, not transformers'): the
chunked form equals its specification, the token-by-token recurrence, for any length, chunk size, head grouping
and initial state; and it is the computation the models run (transformers' own fallback, bitwise in float32 on
the version the suite pins)."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from replaycompile.kernels.delta_rule import chunk_gated_delta_rule, recurrent_gated_delta_rule


def inputs(seed, b, t, hk, r, dk, dv, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    hv = hk * r
    q = torch.randn(b, t, hk, dk, generator=g, dtype=dtype)
    k = torch.randn(b, t, hk, dk, generator=g, dtype=dtype)
    v = torch.randn(b, t, hv, dv, generator=g, dtype=dtype)
    decay = -torch.rand(b, t, hv, generator=g, dtype=dtype) * 2
    beta = torch.rand(b, t, hv, generator=g, dtype=dtype)
    s0 = torch.randn(b, hv, dk, dv, generator=g, dtype=dtype)
    return q, k, v, decay, beta, s0


def rel(a, b):
    return float((a - b).norm() / b.norm().clamp(min=1e-300))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), t=st.integers(1, 40), chunk=st.sampled_from([1, 4, 8, 16]),
       hk=st.integers(1, 2), r=st.sampled_from([1, 2]), with_state=st.booleans(), l2=st.booleans())
def test_chunked_equals_the_recurrence(seed, t, chunk, hk, r, with_state, l2):
    q, k, v, decay, beta, s0 = inputs(seed, 2, t, hk, r, 4, 3)
    init = s0 if with_state else None
    o1, s1 = chunk_gated_delta_rule(q, k, v, decay, beta, chunk_size=chunk, initial_state=init,
                                    output_final_state=True, use_qk_l2norm_in_kernel=l2)
    o2, s2 = recurrent_gated_delta_rule(q, k, v, decay, beta, initial_state=init, output_final_state=True,
                                        use_qk_l2norm_in_kernel=l2)
    assert o1.shape == (2, t, hk * r, 3) and o1.dtype == torch.float64
    assert rel(o1, o2) < 1e-12 and rel(s1, s2) < 1e-12


def test_a_state_carried_across_a_split_is_the_whole_scan():
    """Scanning a prefix, then the rest from its final state, is scanning the whole: what the tree scan does at a
    branch point."""
    q, k, v, decay, beta, _ = inputs(3, 1, 50, 2, 2, 8, 4)
    whole, s_whole = chunk_gated_delta_rule(q, k, v, decay, beta, chunk_size=16, output_final_state=True)
    a, s_a = chunk_gated_delta_rule(q[:, :23], k[:, :23], v[:, :23], decay[:, :23], beta[:, :23], chunk_size=16,
                                    output_final_state=True)
    b, s_b = chunk_gated_delta_rule(q[:, 23:], k[:, 23:], v[:, 23:], decay[:, 23:], beta[:, 23:], chunk_size=16,
                                    initial_state=s_a, output_final_state=True)
    assert rel(torch.cat([a, b], 1), whole) < 1e-12 and rel(s_b, s_whole) < 1e-12


def test_float32_is_the_models_own_scan():
    """transformers' torch fallback (what a Gated DeltaNet layer runs without flash-linear-attention): bitwise
    equal in float32 on the pinned version, so a packed layer differs from eager only where packing differs. A
    cross-check against the model's code, not the specification (the recurrence above is)."""
    from transformers.models.qwen3_next import modeling_qwen3_next as hf

    q, k, v, decay, beta, s0 = inputs(5, 2, 70, 2, 2, 8, 6, dtype=torch.float32)
    ours = chunk_gated_delta_rule(q, k, v, decay, beta, initial_state=s0, output_final_state=True,
                                  use_qk_l2norm_in_kernel=True)
    theirs = hf.torch_chunk_gated_delta_rule(q, k, v, decay, beta, initial_state=s0, output_final_state=True,
                                             use_qk_l2norm_in_kernel=True)
    assert rel(ours[0], theirs[0]) < 1e-6 and rel(ours[1], theirs[1]) < 1e-6
    assert torch.equal(ours[0], theirs[0]), "transformers' fallback changed its order of operations"
