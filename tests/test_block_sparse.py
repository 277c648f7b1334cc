"""The Triton block-sparse attention kernels (run by the Triton interpreter on CPU) against the pure-torch
specs: tree attention (``tree_attention_reference``) and budgeted causal attention
(``block_sparse_reference``); the block-layout builders against brute force; the kernels' GPU compile; the
backend's choice of them by device.

The interpreter costs milliseconds per block pair, so shapes are tiny and blocks are 16 (the smallest
``tl.dot`` tile); ragged lengths, several blocks per list and every full/partial case still occur.
"""

from __future__ import annotations

import copy
import math
import random

import pytest
import torch
from helpers import AOT, group_batch, step_loss
from hypothesis import given, settings
from hypothesis import strategies as st
from torch._subclasses.fake_tensor import FakeTensorMode
from trees import build_tree, compile_for_hopper, make_qkv, random_segs

import replaycompile
from replaycompile import backend
from replaycompile.kernels import block_sparse_attention as bsa
from replaycompile.kernels import tree_attention as ta
from replaycompile.kernels.block_sparse import BlockLayout, causal_block_mask, cdiv, tree_block_mask
from replaycompile.kernels.block_sparse_reference import budget_visibility_mask, masked_attention_reference
from replaycompile.kernels.tree_attention import tree_attention
from replaycompile.kernels.tree_attention_reference import tree_attention_reference, tree_visibility_mask
from replaycompile.passes.rewrite import choose_blocks
from replaycompile.testing.models import tiny_model

# Interpreter: float32 dots are IEEE, so float32 matches to rounding. 16-bit inputs: p is rounded to the input
# dtype before the PV product as on GPUs (bf16 is upcast in the interpreter, so it only sees input rounding).
TOLS = {
    torch.float32: dict(rtol=2e-5, atol=2e-5),
    torch.float16: dict(rtol=1e-2, atol=1e-2),
    torch.bfloat16: dict(rtol=2e-2, atol=2e-2),
}


def _brute_block_masks(mask: torch.Tensor, bq: int, bk: int):
    """(visible, full) per block pair from a dense [H, Nq, Nk] token mask; full needs complete blocks."""
    h, nq, nk = mask.shape
    nqb, nkb = cdiv(nq, bq), cdiv(nk, bk)
    vis = torch.zeros(h, nqb, nkb, dtype=torch.bool)
    full = torch.zeros_like(vis)
    for i in range(nqb):
        for j in range(nkb):
            blk = mask[:, i * bq:(i + 1) * bq, j * bk:(j + 1) * bk]
            vis[:, i, j] = blk.flatten(1).any(1)
            complete = blk.shape[1] == bq and blk.shape[2] == bk
            full[:, i, j] = blk.flatten(1).all(1) & complete
    return vis, full


def _tree_layout(subtree_end, bq=16, bk=16):
    n = int(subtree_end.shape[0])
    return BlockLayout.from_block_masks(*tree_block_mask(subtree_end, bq, bk), bq, bk, n, n)


def _check_tree_kernels(tree, hq, hkv, d, dtype, bq=16, bk=16, seed=0, transposed=False):
    scale = 1.0 / math.sqrt(d)
    q, k, v = make_qkv(tree.n, hq, hkv, d, d, dtype, seed, transposed)
    lay = _tree_layout(tree.subtree_end, bq, bk)
    qr, kr, vr = (x.detach().double().requires_grad_() for x in (q, k, v))
    ref_out, ref_lse = tree_attention_reference(qr, kr, vr, tree.subtree_end, scale)
    go = torch.randn(ref_out.shape, generator=torch.Generator().manual_seed(seed + 1)).to(dtype)
    ref_g = torch.autograd.grad(ref_out, (qr, kr, vr), go.double())

    q, k, v = (x.detach().requires_grad_() for x in (q, k, v))
    out, lse = tree_attention(q, k, v, tree.subtree_end, tree.seg_q, tree.seg_kv_ptr, tree.kv_ranges, scale,
                              lay.tensors(), bq, bk)
    got_g = torch.autograd.grad(out, (q, k, v), go)
    tol = TOLS[dtype]
    torch.testing.assert_close(out.double(), ref_out.detach(), **tol)
    torch.testing.assert_close(lse.double(), ref_lse.double(), **tol)
    for name, a, b in zip("qkv", got_g, ref_g):
        assert a.dtype == dtype and a.shape == b.shape
        torch.testing.assert_close(a.double(), b, **tol, msg=lambda m: f"d{name}: {m}")


# ------------------------------------------------------------------------------------------------ layouts


@settings(max_examples=40)
@given(seed=st.integers(0, 10_000), n_roots=st.integers(1, 3), n_children=st.integers(0, 6),
       max_len=st.integers(1, 30), bq=st.sampled_from([4, 8, 16]), bk=st.sampled_from([4, 8, 16]))
def test_tree_block_mask_equals_brute_force(seed, n_roots, n_children, max_len, bq, bk):
    tree = build_tree(random_segs(random.Random(seed), n_roots, n_children, max_len))
    vis, full = tree_block_mask(tree.subtree_end, bq, bk)
    bvis, bfull = _brute_block_masks(tree_visibility_mask(tree.subtree_end)[None], bq, bk)
    assert torch.equal(vis, bvis)
    assert torch.equal(full, bfull)


@settings(max_examples=40)
@given(nq=st.integers(1, 40), extra=st.integers(0, 40), heads=st.integers(1, 3), seed=st.integers(0, 999),
       bq=st.sampled_from([4, 8, 16]), bk=st.sampled_from([4, 8, 16]))
def test_budget_block_mask_equals_brute_force(nq, extra, heads, seed, bq, bk):
    nk = nq + extra
    g = torch.Generator().manual_seed(seed)
    sel = torch.rand(heads, cdiv(nq, bq), cdiv(nk, bk), generator=g) < 0.5
    vis, full = causal_block_mask(nq, nk, bq, bk, sel)
    bvis, bfull = _brute_block_masks(budget_visibility_mask(sel, nq, nk, bq, bk), bq, bk)
    assert torch.equal(vis, bvis)
    assert torch.equal(full, bfull)


@settings(max_examples=30)
@given(heads=st.integers(1, 3), nqb=st.integers(1, 6), nkb=st.integers(1, 6), seed=st.integers(0, 999))
def test_layout_lists_round_trip_and_transpose(heads, nqb, nkb, seed):
    g = torch.Generator().manual_seed(seed)
    vis = torch.rand(heads, nqb, nkb, generator=g) < 0.5
    full = vis & (torch.rand(heads, nqb, nkb, generator=g) < 0.5)
    lay = BlockLayout.from_block_masks(vis, full, 16, 16, nqb * 16, nkb * 16)
    v2, f2 = lay.block_masks()
    assert torch.equal(v2, vis) and torch.equal(f2, full)
    # the transposed lists hold the same pairs, per key block, in increasing query-block order
    for h in range(heads):
        for j in range(nkb):
            a, b = lay.kv_ptr[h, j].item(), lay.kv_ptr[h, j + 1].item()
            rows = lay.kv_idx[a:b].tolist()
            assert rows == torch.nonzero(vis[h, :, j]).flatten().tolist()
            assert lay.kv_full[a:b].bool().tolist() == full[h, rows, j].tolist()
    assert lay.q_ptr.dtype == lay.q_idx.dtype == torch.int32


def test_layout_rejects_wrong_shapes():
    with pytest.raises(ValueError, match=r"\[heads, 2, 3\]"):
        BlockLayout.from_block_masks(torch.ones(1, 3, 3, dtype=torch.bool), torch.ones(1, 3, 3, dtype=torch.bool),
                                     16, 16, 20, 40)
    with pytest.raises(ValueError, match="selected blocks"):
        causal_block_mask(20, 40, 16, 16, torch.ones(2, 5, dtype=torch.bool))


# ------------------------------------------------------------------------------------------------ tree kernels


def test_tree_g8_branches_ragged():
    """G=8 branches off a 37-token prompt: ancestor blocks full, diagonal blocks partial, ragged last block."""
    tree = build_tree([(-1, 0, 37)] + [(0, 36, 3 + i) for i in range(8)])
    _check_tree_kernels(tree, hq=2, hkv=2, d=16, dtype=torch.float32)


@pytest.mark.parametrize("hq,hkv", [(4, 2), (4, 1), (3, 3)])
def test_tree_gqa(hq, hkv):
    tree = build_tree([(-1, 0, 21), (0, 20, 9), (0, 7, 13), (1, 3, 6)])
    _check_tree_kernels(tree, hq=hq, hkv=hkv, d=16, dtype=torch.float32, transposed=True)


@pytest.mark.parametrize("d", [16, 24, 64])
def test_tree_head_dims(d):
    tree = build_tree([(-1, 0, 19), (0, 18, 11), (0, 18, 5)])
    _check_tree_kernels(tree, hq=2, hkv=1, d=d, dtype=torch.float32)


@pytest.mark.parametrize("bq,bk", [(16, 32), (32, 16)])
def test_tree_unequal_blocks(bq, bk):
    tree = build_tree([(-1, 0, 30), (0, 29, 17), (0, 11, 20)])
    _check_tree_kernels(tree, hq=2, hkv=2, d=16, dtype=torch.float32, bq=bq, bk=bk)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_tree_half_precision(dtype):
    tree = build_tree([(-1, 0, 26), (0, 25, 8), (0, 25, 12), (2, 4, 5)])
    _check_tree_kernels(tree, hq=4, hkv=2, d=32, dtype=dtype)


@settings(max_examples=8)
@given(seed=st.integers(0, 10_000), n_roots=st.integers(1, 2), n_children=st.integers(0, 4),
       max_len=st.integers(1, 20), heads=st.sampled_from([(2, 1), (2, 2)]))
def test_tree_random(seed, n_roots, n_children, max_len, heads):
    tree = build_tree(random_segs(random.Random(seed), n_roots, n_children, max_len))
    _check_tree_kernels(tree, hq=heads[0], hkv=heads[1], d=16, dtype=torch.float32, seed=seed % 100)


def test_tree_equals_cpu_path():
    """Both implementations of the tree-attention op agree (the Triton path and the CPU flash path), and each
    call counts the path that ran, forward and backward."""
    tree = build_tree([(-1, 0, 20), (0, 19, 9), (0, 19, 4)])
    q, k, v = (x.requires_grad_() for x in make_qkv(tree.n, 4, 2, 16, 16, torch.float32, 3))
    meta = (tree.subtree_end, tree.seg_q, tree.seg_kv_ptr, tree.kv_ranges, 0.25)
    res = []
    for layout, path in ((_tree_layout(tree.subtree_end).tensors(), "triton"), ([], "torch")):
        with ta.PathRecorder() as ran:
            out, lse = tree_attention(q, k, v, *meta, layout, 16, 16)
            assert ran.paths() == path and ran.paths("backward") is None
            res.append((out, lse, *torch.autograd.grad(out.sum(), (q, k, v))))
        assert ran.paths("backward") == path
    for x, y in zip(*res):
        torch.testing.assert_close(x, y, rtol=2e-5, atol=2e-5)


# ------------------------------------------------------------------------------------------------ budgets


def _check_budget(nq, nk, hq, hkv, d, sel, dtype=torch.float32, bq=16, bk=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, hq, nq, d, generator=g).to(dtype)
    k = torch.randn(1, hkv, nk, d, generator=g).to(dtype)
    v = torch.randn(1, hkv, nk, d, generator=g).to(dtype)
    scale = d ** -0.5
    lay = BlockLayout.from_block_masks(*causal_block_mask(nq, nk, bq, bk, sel), bq, bk, nq, nk)
    mask = budget_visibility_mask(sel, nq, nk, bq, bk)
    qr, kr, vr = (x.double().requires_grad_() for x in (q, k, v))
    ro, rl = masked_attention_reference(qr, kr, vr, mask, scale)
    go = torch.randn(ro.shape, generator=g).to(dtype)
    rg = torch.autograd.grad(ro, (qr, kr, vr), go.double())
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    out, lse = bsa.block_sparse_attention(q, k, v, lay.tensors(), bq, bk, scale, True)
    gg = torch.autograd.grad(out, (q, k, v), go)
    tol = TOLS[dtype]
    torch.testing.assert_close(out.double(), ro.detach(), **tol)
    torch.testing.assert_close(lse.double(), rl.double(), **tol)
    for name, a, b in zip("qkv", gg, rg):
        torch.testing.assert_close(a.double(), b, **tol, msg=lambda m: f"d{name}: {m}")
    return out, lse, gg


@settings(max_examples=8)
@given(nq=st.integers(1, 40), extra=st.integers(0, 30), per_head=st.booleans(), seed=st.integers(0, 999))
def test_budget_random(nq, extra, per_head, seed):
    nk = nq + extra
    g = torch.Generator().manual_seed(seed)
    heads = 2 if per_head else 1
    sel = torch.rand(heads, cdiv(nq, 16), cdiv(nk, 16), generator=g) < 0.6
    _check_budget(nq, nk, 4, 2, 16, sel, seed=seed)


def test_budget_full_equals_dense_causal():
    """A budget selecting every block is plain causal attention (bottom-right, Nq < Nk as in a decode chunk)."""
    nq, nk = 19, 50
    sel = torch.ones(1, 2, 4, dtype=torch.bool)
    out, lse, _ = _check_budget(nq, nk, 2, 2, 16, sel)
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, nq, 16, generator=g)
    k = torch.randn(1, 2, nk, 16, generator=g)
    v = torch.randn(1, 2, nk, 16, generator=g)
    causal = torch.ones(nq, nk, dtype=torch.bool).tril(nk - nq)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=causal)
    torch.testing.assert_close(out, ref, rtol=2e-5, atol=2e-5)


def test_budget_rows_that_see_nothing():
    """Queries whose selected blocks lie in their future get out 0, lse -inf and zero gradients (no NaN)."""
    sel = torch.zeros(1, 2, 2, dtype=torch.bool)
    sel[0, 0, 1] = True  # query block 0 may only use key block 1: entirely in its future
    sel[0, 1, :] = True
    out, lse, grads = _check_budget(32, 32, 2, 1, 16, sel)
    assert bool((out[:, :, :16] == 0).all()) and bool(torch.isinf(lse[:, :, :16]).all())
    assert all(bool(torch.isfinite(x).all()) for x in grads)
    assert bool((grads[0][:, :, :16] == 0).all())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_budget_half_precision(dtype):
    sel = torch.rand(2, 3, 3, generator=torch.Generator().manual_seed(1)) < 0.7
    _check_budget(40, 40, 4, 2, 32, sel, dtype=dtype)


# ------------------------------------------------------------------------------------------------ ops


def test_opcheck_block_sparse_attention():
    sel = torch.rand(2, 2, 3, generator=torch.Generator().manual_seed(2)) < 0.7
    lay = BlockLayout.from_block_masks(*causal_block_mask(20, 37, 16, 16, sel), 16, 16, 20, 37)
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 20, 4, 16, generator=g).transpose(1, 2).requires_grad_()  # HF strides
    k = torch.randn(1, 2, 37, 16, generator=g).requires_grad_()
    v = torch.randn(1, 2, 37, 16, generator=g).requires_grad_()
    torch.library.opcheck(torch.ops.replaycompile.block_sparse_attention.default,
                          (q, k, v, lay.tensors(), 16, 16, 0.25, True))


def test_opcheck_tree_attention_with_layout():
    tree = build_tree([(-1, 0, 18), (0, 17, 6), (0, 5, 9)])
    q, k, v = (x.requires_grad_() for x in make_qkv(tree.n, 4, 2, 16, 16, torch.float32, 1, transposed=True))
    args = (q, k, v, tree.subtree_end, tree.seg_q, tree.seg_kv_ptr, tree.kv_ranges, 0.3,
            _tree_layout(tree.subtree_end).tensors(), 16, 16)
    torch.library.opcheck(torch.ops.replaycompile.tree_attention.default, args)


def test_budget_op_under_torch_compile():
    """The op is an opaque node inside torch.compile (the interpreter's kernels never meet Dynamo)."""
    sel = torch.ones(1, 2, 2, dtype=torch.bool)
    lay = BlockLayout.from_block_masks(*causal_block_mask(24, 24, 16, 16, sel), 16, 16, 24, 24)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 24, 16, generator=g).requires_grad_() for _ in range(3))

    def fn(q, k, v, *layout):
        out, _ = torch.ops.replaycompile.block_sparse_attention(q, k, v, list(layout), 16, 16, 0.25, True)
        return (out * 2).sum()

    loss = torch.compile(fn, backend="aot_eager", fullgraph=True)(q, k, v, *lay.tensors())
    grads = torch.autograd.grad(loss, (q, k, v))
    causal = torch.ones(24, 24, dtype=torch.bool).tril()
    ref = masked_attention_reference(q, k, v, causal[None], 0.25)[0]
    rgrads = torch.autograd.grad((ref * 2).sum(), (q, k, v))
    torch.testing.assert_close(loss, (ref * 2).sum(), rtol=1e-5, atol=1e-5)
    for a, b in zip(grads, rgrads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_unsupported_inputs_use_the_torch_path(caplog):
    """float64 is not a kernel dtype: the op says so once, answers through the PyTorch path and counts that path
    (not the layout's request) as what ran."""
    tree = build_tree([(-1, 0, 10), (0, 9, 4)])
    q, k, v = make_qkv(tree.n, 2, 2, 16, 16, torch.float64, 0)
    meta = (tree.subtree_end, tree.seg_q, tree.seg_kv_ptr, tree.kv_ranges, 0.25)
    with caplog.at_level("WARNING", logger="replaycompile"), ta.PathRecorder() as ran:
        out, _ = tree_attention(q, k, v, *meta, _tree_layout(tree.subtree_end).tensors(), 16, 16)
    assert "float64" in caplog.text
    assert ran.paths() == "torch"
    ref, _ = tree_attention_reference(q, k, v, tree.subtree_end, 0.25)
    torch.testing.assert_close(out, ref)


def test_default_blocks():
    assert bsa.default_blocks(16, torch.float32, "cpu") == (16, 16)
    assert bsa.default_blocks(64, torch.bfloat16, "cuda") == (128, 64)
    assert bsa.default_blocks(128, torch.bfloat16, "cuda") == (64, 64)


def test_attention_option_picks_the_kernels_by_device(caplog):
    """attention="auto" runs the Triton kernels on CUDA and the PyTorch path on CPU; "torch" never takes them,
    "triton" always. No GPU here: the graph is built with example inputs faked onto CUDA (FakeTensors), which
    is all the choice reads; the packed graph gets the blocks for the model's head dim and dtype."""
    model = tiny_model("qwen3", dtype=torch.bfloat16)
    ids, am, _, _ = group_batch()
    captured = []

    def capture(gm, example_inputs):
        captured.append((gm, example_inputs))
        return gm.forward

    torch.compile(lambda i, m: model(input_ids=i, attention_mask=m, use_cache=False).logits, backend=capture)(ids, am)
    (gm, cpu_inputs), = captured
    with FakeTensorMode(allow_non_fake_inputs=True):
        cuda_inputs = [torch.empty(x.shape, dtype=x.dtype, device="cuda") if isinstance(x, torch.Tensor) else x
                       for x in cpu_inputs]
    d = model.config.head_dim
    cuda_blocks = bsa.default_blocks(d, torch.bfloat16, "cuda")
    cpu_blocks = bsa.default_blocks(d, torch.bfloat16, "cpu")
    assert cuda_blocks == (128, 64)  # head dim <= 64 in bf16: distinct from the metadata-less fallback below

    def blocks(attention, inputs):
        g = backend.ReplayGraph(copy.deepcopy(gm), inputs, backend.ReplayOptions(attention=attention))
        assert g.reason is None, g.reason
        return g.packed.blocks

    assert blocks("auto", cuda_inputs) == cuda_blocks
    assert blocks("auto", cpu_inputs) is None
    assert blocks("torch", cuda_inputs) is None
    assert blocks("triton", cuda_inputs) == cuda_blocks
    assert blocks("triton", cpu_inputs) == cpu_blocks
    # no shape metadata on the query (the analysis reads it, so only a pass dropping it gets here): a warning
    # names the node and the block sizes assumed
    g = backend.ReplayGraph(copy.deepcopy(gm), cuda_inputs, backend.ReplayOptions())
    q_node = g.analysis.attention[0].q
    q_node.meta.pop("example_value", None)
    q_node.meta.pop("val", None)
    with caplog.at_level("WARNING", logger="replaycompile"):
        assert choose_blocks(g.analysis, "auto", "cuda") == (64, 64)
    assert f"`{q_node.name}`" in caplog.text and "head_dim 64 in float32" in caplog.text


def test_stats_report_the_attention_that_ran():
    """last_stats()["attention"] is what executed, not what was asked for: attention="triton" on float64 (not a
    kernel dtype) runs the PyTorch tree attention, and the stats say so."""
    model = tiny_model("qwen3", dtype=torch.float64)
    ids, am, adv, p = group_batch()
    torch.compile(step_loss, backend="replay", options={**AOT, "attention": "triton"})(model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["attention"] == "torch", st


# ------------------------------------------------------------------------------------------------ GPU compile


def _gpu_signature(fn, dtype: str, consts: dict) -> dict:
    import inspect
    sig = {}
    for name in inspect.signature(fn).parameters:
        if name in consts:
            sig[name] = "constexpr"
        elif name in ("Q", "K", "V", "O", "DO", "DQ", "DK", "DV"):
            sig[name] = "*" + dtype
        elif name in ("LSE", "DELTA"):
            sig[name] = "*fp32"
        elif name == "SE":
            sig[name] = "*i64"
        elif name in ("QPTR", "QIDX", "KVPTR", "KVIDX"):
            sig[name] = "*i32"
        elif name in ("QFULL", "KVFULL"):
            sig[name] = "*i8"
        elif name.startswith("scale"):
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    return sig


@pytest.mark.parametrize("kernel", ["fwd", "dkdv", "dq"])
@pytest.mark.parametrize("dtype,tree", [("bf16", True), ("fp16", False)])
def test_kernels_compile_for_hopper(kernel, dtype, tree):
    """No GPU here: compile the kernels ahead of time for sm_90 (Triton's own compiler and ptxas, no device),
    so a kernel that only the interpreter accepts cannot land unnoticed. Fails, not skips, without ptxas where
    the Triton wheel ships it (``compile_for_hopper``)."""
    fn = {"fwd": bsa._fwd_kernel, "dkdv": bsa._bwd_dkdv_kernel, "dq": bsa._bwd_dq_kernel}[kernel]
    consts = dict(GROUP=4, PER_HEAD=not tree, TREE=tree, UPCAST=False, PRECISION="ieee", HEAD_DIM=128,
                  BLOCK_D=128, BLOCK_Q=64, BLOCK_K=64)
    compiled = compile_for_hopper(fn, _gpu_signature(fn, dtype, consts), consts, num_warps=8, num_stages=3)
    assert compiled.metadata.shared <= 232448, "exceeds the H100/H200 shared memory per block"


def test_missing_ptxas_fails_where_the_wheel_ships_it(monkeypatch):
    """Without ptxas the Hopper compile check fails on Linux x86_64 with Triton's wheel (which bundles it) rather
    than skipping: a skip there would hide the only Hopper check CI runs."""
    import trees
    from triton import knobs

    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    monkeypatch.setattr(type(knobs.nvidia).__dict__["ptxas"], "default_path", "/nonexistent/ptxas")
    expected = pytest.fail.Exception if trees._wheel_ships_ptxas() else pytest.skip.Exception
    with pytest.raises(expected, match="ptxas"):
        compile_for_hopper(bsa._fwd_kernel, {}, {})


def test_budget_torch_path_equals_the_kernels():
    """use_triton=False (the dense-mask PyTorch path for CPU training) gives the kernels' outputs and gradients."""
    sel = torch.rand(2, 3, 4, generator=torch.Generator().manual_seed(4)) < 0.6
    lay = BlockLayout.from_block_masks(*causal_block_mask(40, 60, 16, 16, sel), 16, 16, 40, 60)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, h, n, 16, generator=g).requires_grad_() for h, n in ((4, 40), (2, 60), (2, 60)))
    go = torch.randn(1, 4, 40, 16, generator=g)
    res = []
    for use_triton in (True, False):
        out, lse = bsa.block_sparse_attention(q, k, v, lay.tensors(), 16, 16, 0.25, use_triton)
        res.append((out, lse, *torch.autograd.grad(out, (q, k, v), go)))
    for a, b in zip(*res):
        torch.testing.assert_close(a, b, rtol=2e-5, atol=2e-5)
