"""The Gated DeltaNet tree scan (kernels/tree_scan.py) against its reference, the layer computed row by row
(kernels/tree_scan_reference.py), and the reference against HF's module itself. Outputs at real tokens and the
gradients of every weight and of the input, float64 with the scan in float64 (``float64_scan``: chunk boundaries
differ between the two, so float32 would compare rounding)."""

from __future__ import annotations

import pytest
import torch
from test_detach_prefix import tree_batch
from test_hybrid import float64_scan  # noqa: F401 - fixture
from helpers import group_batch

from replaycompile.kernels.tree_scan import gated_deltanet_packed, gated_deltanet_tree_op, tree_scan_index
from replaycompile.kernels.tree_scan_reference import DeltaNetDims, DeltaNetWeights, gated_deltanet_rows
from replaycompile.testing.models import tiny_model
from replaycompile.runtime.plan import build_plan

WEIGHTS = ("in_proj_qkvz", "in_proj_ba", "conv", "dt_bias", "A_log", "norm", "out_proj")


def _layer(dtype):
    model = tiny_model("qwen3_next", layer_types=["linear_attention", "full_attention"], mlp_only_layers=[0, 1],
                       dtype=dtype)
    m = model.model.layers[0].linear_attn
    with torch.no_grad():  # HF initialises the norm to ones and dt_bias to ones: make every weight matter
        g = torch.Generator().manual_seed(1)
        for p in (m.norm.weight, m.dt_bias, m.A_log):
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    d = DeltaNetDims(m.num_k_heads, m.head_k_dim, m.num_v_heads, m.head_v_dim, m.conv_kernel_size,
                     m.norm.variance_epsilon)
    return m, d


def _weights(m):
    return DeltaNetWeights(m.in_proj_qkvz.weight, m.in_proj_ba.weight, m.conv1d.weight, m.dt_bias, m.A_log,
                           m.norm.weight, m.out_proj.weight)


def _hidden(ids, hidden_size, dtype):
    """Rows of hidden states that are a function of (token id, column) only, so shared prefixes hold equal ones;
    a leaf of autograd (``table``)."""
    g = torch.Generator().manual_seed(2)
    table = torch.randn(int(ids.max()) + 1, ids.shape[1], hidden_size, generator=g, dtype=dtype).requires_grad_()
    return table, table[ids, torch.arange(ids.shape[1])[None, :]]


def _compare(m, d, ids, am):
    """Tree scan vs the rows: outputs at real tokens and every gradient (weights and input), float64 (the layer's
    gated norm runs in float32 whatever the dtype, so rounding differences of 1e-8 relative remain)."""
    plan = build_plan(ids, am)
    table, rows = _hidden(ids, m.hidden_size, torch.float64)
    cot = torch.randn(*ids.shape, m.hidden_size, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    real = am.bool()
    params = [getattr(_weights(m), k) for k in WEIGHTS]

    ref = gated_deltanet_rows(rows, am, _weights(m), d)
    g_ref = torch.autograd.grad((ref * cot * real[..., None]).sum(), params + [table])

    rows = table[ids, torch.arange(ids.shape[1])[None, :]]  # a fresh graph from the leaf
    packed = rows.reshape(-1, rows.shape[-1]).index_select(0, plan.gather_index)[None]
    # the op the packed graph calls: its forward, and its backward (a vjp of the recomputed forward)
    out = gated_deltanet_tree_op(packed, params, plan.scatter_index, plan.gather_index, plan.seg_q, d.num_k_heads,
                                 d.head_k_dim, d.norm_eps)[0]
    got = torch.cat((out, out.new_zeros(1, out.shape[-1]))).index_select(0, plan.scatter_index.reshape(-1))
    got = got.reshape(ref.shape)
    g_got = torch.autograd.grad((got * cot * real[..., None]).sum(), params + [table])

    torch.testing.assert_close(got[real], ref[real], rtol=1e-7, atol=1e-9)
    for name, a, b in zip(WEIGHTS + ("input",), g_got, g_ref):
        err = ((a - b).norm() / b.norm()).item()
        assert err <= 1e-6, f"gradient of {name}: {err:.1e}"
    return plan


def test_reference_equals_the_hf_module():
    """The reference is the layer: HF's ``Qwen3NextGatedDeltaNet.forward`` (no cache, a padding mask) on
    left- and right-padded rows, bit for bit (the same ops in the same order), float32 as shipped."""
    m, d = _layer(torch.float32)
    ids, am, _, _ = group_batch(lens=(6, 2, 6, 5, 1))
    _, rows = _hidden(ids, m.hidden_size, torch.float32)
    with torch.no_grad():
        assert torch.equal(gated_deltanet_rows(rows, am, _weights(m), d), m(rows, attention_mask=am))


@pytest.mark.parametrize("batch", [
    pytest.param(lambda: group_batch(lens=(6, 2, 6, 5, 1)), id="flat-group-left-and-right-padded"),
    pytest.param(lambda: group_batch(lens=(1, 1, 2, 3), left_pad=0), id="completions-shorter-than-the-conv"),
    pytest.param(lambda: tree_batch(), id="two-level-tree"),
    pytest.param(lambda: tree_batch(stems=((1, (2, 1)), (2, (1, 3)), (0, (4,)))), id="stems-shorter-than-conv"),
    pytest.param(lambda: tree_batch(prompt_len=50, stems=((20, (9, 30)), (5, (40, 1)))), id="longer-than-a-chunk"),
])
def test_tree_scan_equals_the_rows(batch, float64_scan):  # noqa: F811
    m, d = _layer(float64_scan)
    ids, am, _, _ = batch()
    plan = _compare(m, d, ids, am)
    index = tree_scan_index(plan.scatter_index, plan.gather_index, plan.seg_q, d.kernel_size)
    assert index.contiguous and len(index.levels) >= 2  # the scan forked: a root and children
    assert index.order.sort().values.equal(torch.arange(plan.num_packed))


def test_two_level_tree_has_three_depths_and_pieces_cut_at_branch_points():
    """prompt -> stems -> tails: three depths; a piece never runs past a branch point, so a child's state is
    its parent piece's final state."""
    ids, am, _, _ = tree_batch()
    plan = build_plan(ids, am)
    index = tree_scan_index(plan.scatter_index, plan.gather_index, plan.seg_q, 4)
    assert [lvl[0].shape[0] for lvl in index.levels] == [1, 2, 5]
    assert index.levels[0][0].shape[1] == 9  # the prompt alone


def test_a_pad_between_real_tokens_runs_the_rows(float64_scan):  # noqa: F811
    """A row with a pad between real tokens steps its state at the pad in eager: the packed call runs the
    reference on the replayed rows instead (counted), still exact."""
    m, d = _layer(float64_scan)
    ids, am, _, _ = group_batch(lens=(6, 2, 6, 5, 1))
    am = am.clone()
    am[1, 5] = 0  # inside the prompt of one row
    before = torch._dynamo.utils.counters["replay"]["recurrent_tree_scan_rows"]
    plan = _compare(m, d, ids, am)
    assert not tree_scan_index(plan.scatter_index, plan.gather_index, plan.seg_q, d.kernel_size).contiguous
    # once in the forward, once in the backward's recomputation
    assert torch._dynamo.utils.counters["replay"]["recurrent_tree_scan_rows"] - before == 2


def test_tree_scan_in_float32_is_within_rounding():
    """float32 as shipped (the scan casts to float32): outputs within 1e-5 of the rows'."""
    m, d = _layer(torch.float32)
    ids, am, _, _ = tree_batch(prompt_len=50, stems=((20, (9, 30)), (5, (40, 1))))
    plan = build_plan(ids, am)
    _, rows = _hidden(ids, m.hidden_size, torch.float32)
    params = [getattr(_weights(m), k) for k in WEIGHTS]
    with torch.no_grad():
        ref = gated_deltanet_rows(rows, am, _weights(m), d).reshape(-1, m.hidden_size)
        packed = rows.reshape(-1, rows.shape[-1]).index_select(0, plan.gather_index)[None]
        out = gated_deltanet_packed(packed, params, plan.scatter_index, plan.gather_index, plan.seg_q,
                                    d.num_k_heads, d.head_k_dim, d.norm_eps)[0]
    torch.testing.assert_close(out, ref.index_select(0, plan.gather_index), rtol=1e-5, atol=1e-6)


def test_opcheck():
    """The packed graph's op (``replaycompile::gated_deltanet_tree``): schema, fake, autograd registration and
    AOT dispatch, on a two-level tree."""
    m, d = _layer(torch.float64)
    ids, am, _, _ = tree_batch()
    plan = build_plan(ids, am)
    _, rows = _hidden(ids, m.hidden_size, torch.float64)
    packed = rows.detach().reshape(-1, rows.shape[-1]).index_select(0, plan.gather_index)[None].requires_grad_()
    params = [getattr(_weights(m), k).detach().requires_grad_() for k in WEIGHTS]
    torch.library.opcheck(gated_deltanet_tree_op, (packed, params, plan.scatter_index, plan.gather_index,
                                                   plan.seg_q, d.num_k_heads, d.head_k_dim, d.norm_eps))
