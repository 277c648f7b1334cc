"""Autocast: fp32 weights under bf16 / fp16 autocast (what TRL's and accelerate's ``bf16=True`` does, and a plain
``torch.autocast``). The custom ops are cast as the ops they replace (``kernels/autocast.py``), and the replay
backend packs autocast steps, with the loss and every gradient equal to eager under the same autocast."""

from __future__ import annotations

from types import MethodType

import pytest
import torch
import torch.nn.functional as F
from helpers import AOT, group_batch, run, step_loss, unique_prefix_tokens
from trees import build_tree, make_qkv

import replaycompile
from replaycompile.kernels import chunked_logprobs as chunked_module
from replaycompile.kernels import sparse_decode as sd
from replaycompile.kernels import tree_attention as tree_module
from replaycompile.kernels.block_sparse import BlockLayout, causal_block_mask
from replaycompile.testing.models import tiny_model
from replaycompile.passes.sink_slices import sink_slices

DTYPES = [torch.bfloat16, torch.float16]
TORCH_PATH = ([], 0, 0)
TREE = [(-1, 0, 8), (0, 7, 4), (0, 3, 5), (1, 1, 2)]


def _tree_args(dv=8, seed=0):
    tree = build_tree(TREE)
    q, k, v = make_qkv(tree.n, 4, 2, 8, dv, torch.float32, seed, transposed=True)
    return q, k, v, tree.meta()


# ------------------------------------------------------------------------------------------------ the ops


@pytest.mark.parametrize("dv", [8, 12])  # 8: the CPU flash path; 12 (head dims differ): the math path
@pytest.mark.parametrize("dtype", DTYPES)
def test_tree_attention_is_cast_as_sdpa(dtype, dv):
    """Under autocast the op casts q, k, v to the autocast dtype, as SDPA does (q and k float32 after RoPE, v
    already in the autocast dtype, as HF's attention hands them over), and its body runs with autocast off: the
    result is bit for bit the op on the cast inputs outside autocast (the math path's matmuls are not cast
    again), and the gradients come back in the inputs' dtypes, bit for bit those through explicit casts."""
    q, k, v, meta = _tree_args(dv)
    v = v.to(dtype)
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    with torch.autocast("cpu", dtype=dtype):
        out, lse = torch.ops.replaycompile.tree_attention(*leaves, *meta, 0.3, *TORCH_PATH)
    assert out.dtype == dtype and lse.dtype == torch.float32
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
    out.backward(g)
    cast = [x.detach().requires_grad_() for x in (q, k, v)]
    want, want_lse = torch.ops.replaycompile.tree_attention(*(x.to(dtype) for x in cast), *meta, 0.3, *TORCH_PATH)
    want.backward(g)
    assert torch.equal(out, want) and torch.equal(lse, want_lse)
    for got, ref in zip(leaves, cast):
        assert got.grad.dtype == got.dtype and torch.equal(got.grad, ref.grad)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tree_attention_equals_sdpa_under_autocast(dtype):
    """A tree of one segment is plain causal attention: the op under autocast equals SDPA under autocast."""
    tree = build_tree([(-1, 0, 11)])
    q, k, v = make_qkv(tree.n, 4, 2, 16, 16, torch.float32, 2)
    with torch.autocast("cpu", dtype=dtype):
        out, _ = torch.ops.replaycompile.tree_attention(q, k, v, *tree.meta(), 0.25, *TORCH_PATH)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25, enable_gqa=True)
    assert out.dtype == ref.dtype == dtype
    torch.testing.assert_close(out, ref, rtol=1e-2, atol=1e-2)


def test_float64_is_not_cast():
    """As autocast leaves SDPA's float64 inputs alone, it leaves the op's."""
    q, k, v, meta = _tree_args()
    q, k, v = q.double(), k.double(), v.double()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, _ = torch.ops.replaycompile.tree_attention(q, k, v, *meta, 0.3, *TORCH_PATH)
    assert out.dtype == torch.float64
    assert torch.equal(out, torch.ops.replaycompile.tree_attention(q, k, v, *meta, 0.3, *TORCH_PATH)[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck_under_autocast(dtype):
    """The autocast kernels keep the ops' contracts (schema, fake, autograd, AOT dispatch), with mixed input
    dtypes under autocast."""
    q, k, v, meta = _tree_args()
    args = (q.requires_grad_(), k.requires_grad_(), v.to(dtype).requires_grad_(), *meta, 0.3, *TORCH_PATH)
    with torch.autocast("cpu", dtype=dtype):
        torch.library.opcheck(torch.ops.replaycompile.tree_attention.default, args)
        out, lse = torch.ops.replaycompile.tree_attention(*(x.detach() if isinstance(x, torch.Tensor) else x
                                                            for x in args))
        bargs = (torch.randn_like(out), q.detach().to(dtype), k.detach().to(dtype), v.detach().to(dtype), out,
                 lse, *meta, 0.3, *TORCH_PATH)
        torch.library.opcheck(torch.ops.replaycompile.tree_attention_backward.default, bargs)


def test_block_sparse_attention_is_cast_as_sdpa():
    """The Sparrow / DistillSparse attention op replaces SDPA too: cast the same way (PyTorch path and the
    Triton kernels in the interpreter), and opcheck under autocast."""
    sel = torch.rand(2, 2, 3, generator=torch.Generator().manual_seed(2)) < 0.7
    lay = BlockLayout.from_block_masks(*causal_block_mask(20, 37, 16, 16, sel), 16, 16, 20, 37)
    g = torch.Generator().manual_seed(0)
    q = torch.randn(1, 20, 4, 16, generator=g).transpose(1, 2)
    k = torch.randn(1, 2, 37, 16, generator=g)
    v = torch.randn(1, 2, 37, 16, generator=g).bfloat16()
    for use_triton in (False, True):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, _ = torch.ops.replaycompile.block_sparse_attention(q, k, v, lay.tensors(), 16, 16, 0.25, use_triton)
        want, _ = torch.ops.replaycompile.block_sparse_attention(q.bfloat16(), k.bfloat16(), v, lay.tensors(), 16,
                                                                 16, 0.25, use_triton)
        assert out.dtype == torch.bfloat16 and torch.equal(out, want), use_triton
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.library.opcheck(torch.ops.replaycompile.block_sparse_attention.default,
                              (q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), lay.tensors(), 16, 16,
                               0.25, False))


def test_sparse_decode_is_cast_as_sdpa():
    """Sparrow's decode attention (a decode step's SDPA): q and the cache's k, v cast to the autocast dtype."""
    g = torch.Generator().manual_seed(0)
    k = torch.randn(2, 2, 160, 16, generator=g)
    v = torch.randn(2, 2, 160, 16, generator=g).bfloat16()
    q = torch.randn(2, 4, 1, 16, generator=g)
    vis = torch.zeros(2, 160, dtype=torch.bool)
    vis[:, :150] = True
    mask = vis[:, None, None, :]
    sd.reset_page_state()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = sd.sparse_decode(q, k, v, mask, torch.tensor([150, 2]), 0.25, 16, 1, 2, False, 0)
    sd.reset_page_state()
    want = sd.sparse_decode(q.bfloat16(), k.bfloat16(), v, mask, torch.tensor([150, 2]), 0.25, 16, 1, 2, False, 0)
    assert out.dtype == torch.bfloat16 and torch.equal(out, want)


def test_chunked_logprobs_is_not_cast():
    """The chunked LM head computes in its inputs' dtypes under autocast (the rewrite casts them to the dtype
    the replaced linear ran in), with autocast off inside: bit for bit its result outside autocast."""
    g = torch.Generator().manual_seed(0)
    h, w = torch.randn(9, 16, generator=g), torch.randn(40, 16, generator=g)
    t = torch.randint(0, 40, (9,), generator=g)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = torch.ops.replaycompile.chunked_logprobs(h, w, None, t, 4, True, 0.0)
    want = torch.ops.replaycompile.chunked_logprobs(h, w, None, t, 4, True, 0.0)
    assert all(torch.equal(a, b) for a, b in zip(got, want))


# ------------------------------------------------------------------------------------------------ the passes


def test_sink_slices_keeps_the_dtype_a_moved_linear_ran_in():
    """accelerate wraps ``model.forward`` in autocast and the loss slices the logits outside it: moving the LM
    head after the slice moves it out of the region, so it gets its inputs cast explicitly to the dtype it ran
    in there. The graph's output is bit for bit the same before and after the move."""
    model = tiny_model("qwen3")
    ids, am, _, p = group_batch()
    graphs = []

    def capture(gm, example_inputs):
        graphs.append((gm, example_inputs))
        return gm.forward

    def fn(model, ids, am):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
        return logits[:, p - 1:-1].float()

    torch.compile(fn, backend=capture)(model, ids, am)
    ((gm, inputs),) = graphs
    with torch.no_grad():
        before = gm(*inputs)
        assert sink_slices(gm) > 0
        after = gm(*inputs)
    (before,), (after,) = before, after
    assert torch.equal(before, after)
    lm_head = [n for n in gm.graph.nodes if n.target is torch._C._nn.linear][-1]
    assert lm_head.meta["example_value"].dtype == torch.bfloat16
    assert all(a.target == "to" for a in lm_head.args[:2]), lm_head.format_node()


# ------------------------------------------------------------------------------------------------ the backend


def _worst(got, ref) -> float:
    return max(((got[1][k].float() - ref[1][k].float()).norm() / ref[1][k].float().norm().clamp_min(1e-30)).item()
               for k in ref[1])


def _autocast_forward(model, dtype):
    """What ``accelerate.Accelerator(mixed_precision=...)`` does to a model: ``forward`` runs under autocast and
    returns float32 outputs (accelerate's own ``convert_outputs_to_fp32``)."""
    convert = pytest.importorskip("accelerate.utils").convert_outputs_to_fp32
    fwd = model.forward.__func__
    model.forward = MethodType(torch.autocast("cpu", dtype=dtype)(fwd), model)
    model.forward = MethodType(convert(model.forward.__func__), model)
    return model


def _steps(where, dtype, options):
    """(eager step, compiled step) with the autocast region ``where``: "around" the compiled call (a training
    loop's ``with torch.autocast(...)``), "inside" it (the loss function opens autocast: Dynamo traces the
    region's enter and exit into the graph), or around the model's forward ("forward", accelerate's)."""
    def inside(model, ids, am, adv, p):
        with torch.autocast("cpu", dtype=dtype):
            return step_loss(model, ids, am, adv, p)

    if where == "inside":
        return inside, torch.compile(inside, backend="replay", options=options)
    if where == "forward":
        return step_loss, torch.compile(step_loss, backend="replay", options=options)
    compiled = torch.compile(step_loss, backend="replay", options=options)

    def around(fn):
        def step(*args):
            with torch.autocast("cpu", dtype=dtype):
                return fn(*args)
        return step

    return around(step_loss), around(compiled)


def check_autocast_step(monkeypatch, family, impl, where, dtype, options, lm_chunked):
    model = tiny_model(family, impl)
    if where == "forward":
        model = _autocast_forward(model, dtype)
    ids, am, adv, p = group_batch(lens=(6, 5, 6, 4, 6, 3))
    eager, compiled = _steps(where, dtype, options)
    ref = run(eager, model, ids, am, adv, p)
    # Eager's own noise: the same step on the rows in another order (loss and gradients are sums over rows, so
    # nothing to un-permute). Eager computes every row alone and alike whatever its place, so this is only the
    # summation order of the weight gradients (accumulated in float32): close to zero. The packed step rounds at
    # other places, legitimately: a shared token's gradient is summed over its branches before it is rounded to
    # the autocast dtype, attention runs per segment. The floor is therefore what the autocast dtype costs on
    # this step, eager under autocast against the float32 step, measured here too; the packed step must also be
    # as accurate as eager under autocast (its own distance to the float32 step no more than 1.5x eager's).
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    alt = run(eager, model, ids[perm], am[perm], adv[perm], p)
    fp32 = run(step_loss, tiny_model(family, impl), ids, am, adv, p)  # the same weights, no autocast

    seen, heads = [], []
    check = tree_module._check_inputs
    chunk_logits = chunked_module._chunk_logits

    def spy_attention(q, k, v, *rest):
        if not isinstance(q, torch._subclasses.FakeTensor):
            seen.append((q.dtype, k.dtype, v.dtype))
        return check(q, k, v, *rest)

    def spy_head(h, weight, *rest):
        heads.append((h.dtype, weight.dtype))
        return chunk_logits(h, weight, *rest)

    monkeypatch.setattr(tree_module, "_check_inputs", spy_attention)
    monkeypatch.setattr(chunked_module, "_chunk_logits", spy_head)
    got = run(compiled, model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] is True, st["fallback_reason"]
    assert st["tokens_computed"] == unique_prefix_tokens(ids, am) < st["tokens_in"], st
    want_path = "triton" if options.get("attention") == "triton" else "torch"
    assert st["attention"] == want_path, st
    # the tree attention ran, on q, k, v in the autocast dtype (as SDPA under autocast)
    if want_path == "torch":
        assert seen and set(seen) == {(dtype,) * 3}, seen
    assert (st["lm_head_chunked"] > 0) == lm_chunked, st
    if lm_chunked:  # the chunked LM head ran its linear in the autocast dtype, as the replaced linear did
        assert heads and set(heads) == {(dtype, dtype)}, heads

    noise_grad = _worst(alt, ref)
    floor_grad = _worst(fp32, ref)
    err = _worst(got, ref)
    assert err <= max(4 * noise_grad, 2 * floor_grad), (err, noise_grad, floor_grad)
    assert _worst(got, fp32) <= 1.5 * _worst(ref, fp32), (_worst(got, fp32), _worst(ref, fp32))
    loss_err = abs(got[0].float() - ref[0].float()).item()
    loss_tol = max(4 * abs(alt[0].float() - ref[0].float()).item(), 2 * abs(fp32[0] - ref[0].float()).item(),
                   0.1 * torch.finfo(dtype).eps * abs(ref[0].item()))
    assert loss_err <= loss_tol, (loss_err, loss_tol)
    return err, floor_grad


SLOW = pytest.mark.slow  # ~30 s each on 2 cores: bf16 stays in the default run through the llama cases
CASES = [
    # family, attention implementation, where the autocast region is, dtype, lm_head, attention
    pytest.param("qwen3", "sdpa", "around", torch.bfloat16, "plain", "torch", marks=SLOW),
    pytest.param("qwen3", "sdpa", "inside", torch.bfloat16, "chunked", "torch", marks=SLOW),
    pytest.param("qwen3", "sdpa", "forward", torch.bfloat16, "chunked", "torch", marks=SLOW),
    ("llama", "sdpa", "around", torch.float16, "chunked", "torch"),
    ("llama", "eager", "forward", torch.bfloat16, "plain", "torch"),
    ("qwen3", "sdpa", "inside", torch.float16, "plain", "torch"),
    ("llama", "sdpa", "around", torch.bfloat16, "plain", "triton"),
]


@pytest.mark.parametrize("family,impl,where,dtype,lm_head,attention", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-{str(c[3])[6:]}-{c[4]}-{c[5]}"
                              for c in (getattr(c, "values", c) for c in CASES)])
def test_autocast_step_is_packed_and_within_eager_noise(monkeypatch, family, impl, where, dtype, lm_head,
                                                        attention):
    """fp32 weights, bf16 / fp16 autocast around the compiled step, inside it, or around the model's forward
    (accelerate): packed, the tree attention runs in the autocast dtype, and the loss and every gradient equal
    eager under the same autocast within eager's noise."""
    options = {**AOT, "lm_head": lm_head, "attention": attention}
    check_autocast_step(monkeypatch, family, impl, where, dtype, options, lm_head == "chunked")


@pytest.mark.slow
def test_autocast_step_with_inductor(monkeypatch):
    """The default inner compiler on a bf16 autocast step (autocast around the compiled call)."""
    check_autocast_step(monkeypatch, "qwen3", "sdpa", "around", torch.bfloat16,
                        {"min_shared_tokens": 1, "lm_head": "chunked"}, True)
