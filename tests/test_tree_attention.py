"""Tests for replaycompile::tree_attention against the dense reference.

Tree metadata is built here by a small independent helper (not the runtime
plan), so these tests check the kernel against the spec on its own.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F
from helpers import largest_tensor_mode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replaycompile.kernels.tree_attention import tree_attention
from replaycompile.kernels.tree_attention_reference import tree_attention_reference
from strategies import rollout_batches
from trees import build_tree, make_qkv, random_segs

# no block layout: the PyTorch (CPU flash / math) path; the Triton path is tested in test_block_sparse.py
TORCH_PATH = ([], 0, 0)


TOLS = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.float64: dict(rtol=1e-5, atol=1e-5),
    torch.bfloat16: dict(rtol=3e-2, atol=3e-2),
    torch.float16: dict(rtol=5e-3, atol=5e-3),
}


def _close(name, dtype, got, want):
    torch.testing.assert_close(got.double(), want.double(), **TOLS[dtype], msg=lambda m: f"{name}: {m}")


def check_tree(tree, hq=2, hkv=2, d=16, dv=None, dtype=torch.float32, seed=0, transposed=False, grad=True):
    dv = d if dv is None else dv
    scale = 1.0 / math.sqrt(d)
    q, k, v = make_qkv(tree.n, hq, hkv, d, dv, dtype, seed, transposed)
    # ground truth in float64 from the same (rounded) inputs
    qr, kr, vr = (x.detach().double().requires_grad_(grad) for x in (q, k, v))
    ref_out, ref_lse = tree_attention_reference(qr, kr, vr, tree.subtree_end, scale)
    for x in (q, k, v):
        x.requires_grad_(grad)
    out, lse = tree_attention(q, k, v, *tree.meta(), scale, *TORCH_PATH)
    assert out.shape == (1, hq, tree.n, dv) and out.dtype == dtype
    # token-major on CPU ([1, N, H, D] in memory): the layout the model reshapes it to, and the fake's
    assert out.transpose(1, 2).is_contiguous()
    assert lse.shape == (1, hq, tree.n) and lse.dtype == torch.float32
    _close("out", dtype, out, ref_out)
    _close("lse", dtype, lse, ref_lse)
    if not grad:
        return
    go = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed + 1)).to(dtype)
    dq, dk, dv_ = torch.autograd.grad(out, (q, k, v), go)
    rq, rk, rv = torch.autograd.grad(ref_out, (qr, kr, vr), go.double())
    assert dq.dtype == dtype and dk.shape == k.shape and dv_.shape == v.shape
    _close("dq", dtype, dq, rq)
    _close("dk", dtype, dk, rk)
    _close("dv", dtype, dv_, rv)


# ---------------------------------------------------------------- shapes of trees


def test_single_segment_is_plain_causal():
    tree = build_tree([(-1, 0, 37)])
    assert tree.seg_q.tolist() == [[0, 37]]
    check_tree(tree)
    # and equals SDPA causal directly
    q, k, v = make_qkv(37, 2, 2, 16, 16, torch.float32, 3)
    out, _ = tree_attention(q, k, v, *tree.meta(), 0.25, *TORCH_PATH)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25))


def test_g8_branches_from_one_prefix():
    tree = build_tree([(-1, 0, 40)] + [(0, 39, 10 + 3 * i) for i in range(8)])
    assert tree.seg_q.shape[0] == 9
    check_tree(tree, hq=4, hkv=2, d=16)


def test_three_level_tree():
    segs = [(-1, 0, 20), (0, 19, 12), (0, 19, 9), (1, 5, 7), (1, 11, 6), (2, 8, 5), (3, 2, 4)]
    check_tree(build_tree(segs), hq=2, hkv=1, d=8)


def test_length_one_segments_and_multiple_roots():
    segs = [(-1, 0, 1), (-1, 0, 5), (0, 0, 1), (0, 0, 1), (1, 2, 1), (1, 4, 1), (4, 0, 1), (-1, 0, 1)]
    tree = build_tree(segs)
    assert (tree.seg_q[:, 1] - tree.seg_q[:, 0]).min() == 1
    check_tree(tree, hq=4, hkv=1, d=8)


def test_extra_splits_and_maximal_runs():
    rng = random.Random(5)
    segs = random_segs(rng, 2, 6, 20)
    check_tree(build_tree(segs, rng=rng, split_prob=0.2), hq=4, hkv=2, d=16)
    # first child continuing its parent's run: one segment fewer per branch point
    check_tree(build_tree(segs, split_at_branch=False), hq=4, hkv=2, d=16)


@pytest.mark.parametrize("hq,hkv", [(4, 2), (4, 1), (3, 3)])
@pytest.mark.parametrize("d", [8, 16, 64])
def test_gqa_and_head_dims(hq, hkv, d):
    rng = random.Random(hq * 100 + hkv * 10 + d)
    tree = build_tree(random_segs(rng, 2, 8, 30), rng=rng, split_prob=0.05)
    check_tree(tree, hq=hq, hkv=hkv, d=d, seed=d)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("transposed", [False, True])
def test_dtypes_and_layouts(dtype, transposed):
    rng = random.Random(11)
    tree = build_tree(random_segs(rng, 2, 12, 40))
    assert 100 <= tree.n <= 560
    check_tree(tree, hq=4, hkv=2, d=16, dtype=dtype, transposed=transposed)


def test_n_about_300_d64():
    tree = build_tree([(-1, 0, 120)] + [(0, 119, 22)] * 8)
    assert tree.n == 296
    check_tree(tree, hq=4, hkv=2, d=64, transposed=True)


def test_math_fallback_value_dim_differs():
    # Dv != D is not supported by the CPU flash kernel: exercises the math path
    rng = random.Random(2)
    tree = build_tree(random_segs(rng, 2, 6, 25))
    check_tree(tree, hq=4, hkv=2, d=16, dv=8)


def test_math_fallback_chunked(monkeypatch):
    import replaycompile.kernels.tree_attention as ta

    monkeypatch.setattr(ta, "_use_flash", lambda q, v: False)
    monkeypatch.setattr(ta, "_MATH_CHUNK", 7)  # force several query blocks per segment
    rng = random.Random(4)
    tree = build_tree(random_segs(rng, 2, 6, 30), rng=rng, split_prob=0.1)
    check_tree(tree, hq=4, hkv=1, d=16)
    check_tree(tree, hq=2, hkv=2, d=8, dtype=torch.bfloat16, transposed=True)


def test_lse_is_not_differentiable():
    tree = build_tree([(-1, 0, 6), (0, 2, 3)])
    q, k, v = (x.requires_grad_() for x in make_qkv(tree.n, 2, 2, 8, 8, torch.float32, 0))
    out, lse = tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH)
    assert out.requires_grad and not lse.requires_grad


# ---------------------------------------------------------------- vs plain causal SDPA per row


def test_paths_equal_causal_sdpa():
    """Each root-to-leaf path (a rollout row) must see exactly causal attention over itself."""
    rng = random.Random(7)
    tree = build_tree(random_segs(rng, 2, 10, 25), rng=rng, split_prob=0.1)
    hq, hkv, d = 4, 2, 16
    q, k, v = make_qkv(tree.n, hq, hkv, d, d, torch.float32, 9, transposed=True)
    out, _ = tree_attention(q, k, v, *tree.meta(), 0.25, *TORCH_PATH)
    for leaf in tree.leaves():
        path = torch.tensor(tree.path_to(leaf))
        want = F.scaled_dot_product_attention(
            q[:, :, path], k[:, :, path], v[:, :, path], is_causal=True, scale=0.25, enable_gqa=True
        )
        torch.testing.assert_close(out[:, :, path], want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- property test


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    n_roots=st.integers(1, 3),
    n_children=st.integers(0, 8),
    max_len=st.integers(1, 12),
    heads=st.sampled_from([(1, 1), (2, 1), (4, 2), (2, 2)]),
    d=st.sampled_from([8, 16]),
    split=st.sampled_from([0.0, 0.3]),
    split_at_branch=st.booleans(),
)
def test_property_random_trees(seed, n_roots, n_children, max_len, heads, d, split, split_at_branch):
    rng = random.Random(seed)
    segs = random_segs(rng, n_roots, n_children, max_len)
    tree = build_tree(segs, rng=rng, split_prob=split, split_at_branch=split_at_branch)
    # the helper's CSR must agree with subtree_end (sanity of the test itself)
    se = tree.subtree_end.tolist()
    for s, (qs, qe) in enumerate(tree.seg_q.tolist()):
        rs = tree.kv_ranges[tree.seg_kv_ptr[s] : tree.seg_kv_ptr[s + 1]].tolist()
        assert rs[-1] == [qs, qe]
        anc = [a for a, b in rs[:-1] for a in range(a, b)]
        assert anc == [kk for kk in range(qs) if qs < se[kk]]
    check_tree(tree, hq=heads[0], hkv=heads[1], d=d, seed=seed % 1000)


# ---------------------------------------------------------------- op registration / compile


def _opcheck_samples():
    rng = random.Random(3)
    for segs, hq, hkv in [
        ([(-1, 0, 9)], 2, 2),
        ([(-1, 0, 8), (0, 7, 4), (0, 3, 5), (1, 1, 2)], 4, 2),
        (random_segs(rng, 2, 4, 6), 2, 1),
    ]:
        tree = build_tree(segs)
        q, k, v = make_qkv(tree.n, hq, hkv, 8, 8, torch.float32, 1, transposed=hq == 4)
        yield (q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), *tree.meta(), 0.35, *TORCH_PATH)


@pytest.mark.parametrize("i", range(3))
def test_opcheck(i):
    args = list(_opcheck_samples())[i]
    torch.library.opcheck(torch.ops.replaycompile.tree_attention.default, args)


def test_opcheck_backward_op():
    q, k, v, *meta, scale, _, _, _ = list(_opcheck_samples())[1]
    q, k, v = q.detach(), k.detach(), v.detach()
    out, lse = tree_attention(q, k, v, *meta, scale, *TORCH_PATH)
    args = (torch.randn_like(out), q, k, v, out, lse, *meta, scale, *TORCH_PATH)
    torch.library.opcheck(torch.ops.replaycompile.tree_attention_backward.default, args)


def test_fake_strides_are_the_real_ones():
    """A compiled graph reads the ops' outputs with the strides their fakes give (token-major on CPU): the real
    outputs must have exactly those, for the forward and the backward op, head-major or token-major inputs."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    for i in (0, 1):
        q, k, v, *meta, scale, lay, bq, bk = [x.detach() if isinstance(x, torch.Tensor) else x
                                              for x in list(_opcheck_samples())[i]]
        out, lse = tree_attention(q, k, v, *meta, scale, lay, bq, bk)
        g = torch.randn_like(out)
        grads = torch.ops.replaycompile.tree_attention_backward(g, q, k, v, out, lse, *meta, scale, lay, bq, bk)
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fq, fk, fv, fg = (mode.from_tensor(x) for x in (q, k, v, g))
            fout, flse = tree_attention(fq, fk, fv, *meta, scale, lay, bq, bk)
            fgrads = torch.ops.replaycompile.tree_attention_backward(fg, fq, fk, fv, fout, flse, *meta, scale,
                                                                     lay, bq, bk)
        assert out.transpose(1, 2).is_contiguous()
        for real, fake in zip((out, lse, *grads), (fout, flse, *fgrads)):
            assert real.shape == fake.shape and real.stride() == fake.stride(), (i, real.stride(), fake.stride())


def test_torch_compile_dynamic():
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()

    def fn(q, k, v, se, sq, ptr, rg):
        out, lse = tree_attention(q, k, v, se, sq, ptr, rg, 0.25, *TORCH_PATH)
        return out * 2.0, lse

    cnt = CompileCounterWithBackend("aot_eager")
    cfn = torch.compile(fn, backend=cnt, dynamic=True, fullgraph=True)
    # Duck sizing would tie e.g. len(seg_kv_ptr) to Hq when they happen to be
    # equal and recompile when they differ; that is about the caller's guards,
    # not this op, so turn it off here.
    with torch.fx.experimental._config.patch(use_duck_shape=False):
        _run_compiled_twice(cfn)
    assert cnt.frame_count == 1, f"recompiled: {cnt.frame_count} graphs for two N"


def _run_compiled_twice(cfn):
    for segs in ([(-1, 0, 12), (0, 11, 5), (0, 11, 7)], [(-1, 0, 20), (0, 19, 9), (0, 4, 3), (2, 1, 4)]):
        tree = build_tree(segs)
        q, k, v = (x.requires_grad_() for x in make_qkv(tree.n, 4, 2, 16, 16, torch.float32, 0, transposed=True))
        out, lse = cfn(q, k, v, *tree.meta())
        ref_out, ref_lse = tree_attention_reference(q, k, v, tree.subtree_end, 0.25)
        torch.testing.assert_close(out, ref_out * 2.0, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(lse, ref_lse, rtol=1e-5, atol=1e-5)
        g = torch.autograd.grad(out.sum(), (q, k, v))
        rg = torch.autograd.grad((ref_out * 2.0).sum(), (q, k, v))
        for a, b in zip(g, rg):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_tolerances_tell_right_from_a_visibility_bug(dtype):
    """The tolerances above pass the op yet fail an answer with one visibility bit wrong: a branch that no
    longer sees the prompt's last token, or one that also sees the first token of the branch before it."""
    tree = build_tree([(-1, 0, 12), (0, 11, 6), (0, 11, 7)])
    q, k, v = make_qkv(tree.n, 2, 1, 16, 16, dtype, 5)
    qr, kr, vr = (x.double() for x in (q, k, v))
    out, _ = tree_attention(q, k, v, *tree.meta(), 0.25, *TORCH_PATH)
    _close("out", dtype, out, tree_attention_reference(qr, kr, vr, tree.subtree_end, 0.25)[0])
    hidden = tree.subtree_end.clone()
    hidden[11] = 12  # the prompt's last token: visible to itself only
    leaked = tree.subtree_end.clone()
    leaked[12] = 19  # the first branch's first token: also visible to the second branch
    for name, se in (("hidden ancestor", hidden), ("sibling leak", leaked)):
        wrong, _ = tree_attention_reference(qr, kr, vr, se, 0.25)
        with pytest.raises(AssertionError):
            _close(name, dtype, out, wrong)


def test_no_n_by_n_tensor():
    """The README's "never an N x N mask": the CPU path, forward and backward, creates no tensor of N x N
    elements (it works per branch segment: seg_len x visible keys). Every aten op the two kernels run is
    recorded (the ops' Python bodies run under a dispatch mode, so their insides are seen)."""
    from replaycompile.kernels.tree_attention import tree_attention_backward

    prompt, g, own = 1024, 8, 32
    tree = build_tree([(-1, 0, prompt)] + [(0, prompt - 1, own) for _ in range(g)])
    n = tree.n
    q, k, v = make_qkv(n, 2, 1, 16, 16, torch.float32, 0)

    largest = largest_tensor_mode()
    with largest:
        out, lse = tree_attention._init_fn(q, k, v, *tree.meta(), 0.25, *TORCH_PATH)
        grads = tree_attention_backward._init_fn(torch.ones_like(out), q, k, v, out, lse, *tree.meta(), 0.25,
                                                 *TORCH_PATH)
    assert all(torch.isfinite(x).all() for x in grads)
    largest_segment = own * (prompt + own)  # a branch's queries x its visible keys
    assert largest.numel >= largest_segment  # the recorder sees the segment-level tensors
    assert largest.numel <= max(largest_segment, q.numel()) < n * n // 8, (largest.numel, n * n)


def _suffix_case(dv=8, dtype=torch.float32):
    """detach_prefix's branch attention: the queries of a plan's branch tokens over cat(shared keys, own keys),
    from plan.split_shared of a two-level tree; the truth is the dense reference of the whole tree."""
    from replaycompile.runtime.plan import build_plan, split_shared

    ids = torch.tensor([[5, 6, 7, 1, 2, 3, 0], [5, 6, 7, 1, 2, 4, 9], [5, 6, 7, 8, 8, 0, 0], [5, 6, 7, 8, 3, 3, 3]])
    am = (ids > 0).long()
    am[0, 6] = 0
    am[2, 5:] = 0
    plan = build_plan(ids, am)
    split = split_shared(plan)
    n = plan.num_packed
    # tokens in the shared-first order, and their visibility from the plan's subtree_end
    new_of = split.scatter_index.reshape(-1)
    flat_old = plan.scatter_index.reshape(-1)
    old_of = torch.empty(n, dtype=torch.long)
    old_of[new_of[flat_old < n]] = flat_old[flat_old < n]
    idx = torch.arange(n)
    vis = (idx[None, :] <= idx[:, None]) & (idx[:, None] < plan.subtree_end[None, :])
    vis = vis[old_of][:, old_of]
    q, k, v = make_qkv(n, 4, 2, 8, dv, dtype, 2)
    return split, q, k, v, vis


@pytest.mark.parametrize("dv,dtype", [(8, torch.float32), (8, torch.bfloat16), (6, torch.float32)])
def test_fewer_queries_than_keys_is_the_suffix_of_the_tree(dv, dtype):
    """Queries fewer than keys (the last Nq of them): out, lse and the gradients equal the dense reference's
    rows for those queries. dv 8: the flash path, which splits the keys into the ancestors (one call per run of
    segments with equal ancestors; here one run of one range and one of two) and each segment's own causal
    run, merged by log-sum-exp; dv 6: the math path (the CPU flash kernel needs equal head dims)."""
    from replaycompile.kernels.block_sparse_reference import masked_attention_reference

    split, q, k, v, vis = _suffix_case(dv, dtype)
    n_s = split.num_shared
    assert 0 < n_s < q.shape[2]
    qr = q[:, :, n_s:].detach().clone().requires_grad_()
    kk, vv = k.detach().clone().requires_grad_(), v.detach().clone().requires_grad_()
    out, lse = tree_attention(qr, kk, vv, torch.empty(0, dtype=torch.long), split.seg_q_r, split.seg_kv_ptr_r,
                              split.kv_ranges_r, 0.3, *TORCH_PATH)
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    ref, ref_lse = masked_attention_reference(q64, k64, v64, vis[None], 0.3)
    _close("out", dtype, out, ref[:, :, n_s:])
    _close("lse", dtype, lse, ref_lse[:, :, n_s:])
    go = torch.randn(out.shape, generator=torch.Generator().manual_seed(4)).to(dtype)
    got = torch.autograd.grad(out, (qr, kk, vv), go)
    want = torch.autograd.grad(ref[:, :, n_s:], (q64, k64, v64), go.double())
    _close("dq", dtype, got[0], want[0][:, :, n_s:])
    _close("dk", dtype, got[1], want[1])
    _close("dv", dtype, got[2], want[2])
    torch.library.opcheck(torch.ops.replaycompile.tree_attention.default,
                          (qr, kk, vv, torch.empty(0, dtype=torch.long), split.seg_q_r, split.seg_kv_ptr_r,
                           split.kv_ranges_r, 0.3, *TORCH_PATH))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=rollout_batches(), data=st.data(),
       path=st.sampled_from(["flash", "math", "window", "bf16", "key_chunks"]))
def test_query_subset_is_those_rows_of_the_tree(batch, data, path):
    """Queries at any sorted subset of the packed tokens (the last layer's queries at the tokens the loss reads),
    keys at all of them, with ``plan.query_segments``: out, lse and the gradients equal the dense reference's
    rows for those queries, on the flash path (ancestor groups and own runs), the math path (head dims differ),
    a sliding window (positions: the plan's columns), bfloat16 (whose per-segment masked path is for equal
    query and key counts only) and the flash path with the ancestors' backward in chunks of 3 keys (every query
    or a subset)."""
    from unittest import mock

    from replaycompile.kernels import tree_attention as ta

    chunk = 3 * 2 * 8 * 4 if path == "key_chunks" else ta.ANCESTOR_BACKWARD_CHUNK_BYTES  # 3 keys of 2 heads x 8
    with mock.patch.object(ta, "ANCESTOR_BACKWARD_CHUNK_BYTES", chunk):
        _query_subset_case(batch, data, path)


def _query_subset_case(batch, data, path):
    from replaycompile.kernels.block_sparse_reference import masked_attention_reference
    from replaycompile.kernels.tree_attention_reference import tree_visibility_mask
    from replaycompile.runtime.plan import build_plan

    ids, am, pos = batch
    plan = build_plan(ids, am, pos)
    n = plan.num_packed
    if n == 0:
        return
    keep = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if path == "key_chunks" and data.draw(st.booleans()):
        keep = [True] * n  # the exact step's backward (queries = keys)
    index = torch.tensor([i for i in range(n) if keep[i]], dtype=torch.long)
    if index.numel() == 0:
        return
    dtype = torch.bfloat16 if path == "bf16" else torch.float32
    dv = 6 if path == "math" else 8
    window = 3 if path == "window" else 0
    positions = plan.columns if window else None
    q, k, v = make_qkv(n, 4, 2, 8, dv, dtype, 3)
    qs = q[:, :, index].detach().clone().requires_grad_()
    kk, vv = k.detach().clone().requires_grad_(), v.detach().clone().requires_grad_()
    segs = plan.query_segments(index)
    out, lse = tree_attention(qs, kk, vv, torch.empty(0, dtype=torch.long), *segs, 0.3, *TORCH_PATH,
                              positions, window)
    vis = tree_visibility_mask(plan.subtree_end, positions, window)
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    ref, ref_lse = masked_attention_reference(q64, k64, v64, vis[None], 0.3)
    _close("out", dtype, out, ref[:, :, index])
    _close("lse", dtype, lse, ref_lse[:, :, index])
    go = torch.randn(out.shape, generator=torch.Generator().manual_seed(5)).to(dtype)
    got = torch.autograd.grad(out, (qs, kk, vv), go)
    want = torch.autograd.grad(ref[:, :, index], (q64, k64, v64), go.double())
    _close("dq", dtype, got[0], want[0][:, :, index])
    _close("dk", dtype, got[1], want[1])
    _close("dv", dtype, got[2], want[2])


def test_query_subset_opcheck():
    """The op's registration (fake, autograd) holds for a query subset whose own runs do not cover the keys."""
    from replaycompile.runtime.plan import build_plan

    ids = torch.tensor([[5, 6, 7, 1, 2, 3], [5, 6, 7, 1, 4, 9], [5, 6, 7, 8, 8, 0]])
    am = (ids > 0).long()
    plan = build_plan(ids, am)
    index = torch.tensor([2, 4, 5, 7])
    q, k, v = make_qkv(plan.num_packed, 4, 2, 8, 8, torch.float32, 2)
    qs = q[:, :, index].detach().clone().requires_grad_()
    kk, vv = k.detach().requires_grad_(), v.detach().requires_grad_()
    torch.library.opcheck(torch.ops.replaycompile.tree_attention.default,
                          (qs, kk, vv, torch.empty(0, dtype=torch.long), *plan.query_segments(index), 0.3,
                           *TORCH_PATH))
