"""The Mamba-2 tree scan (kernels/ssd_tree.py) against its reference, the mixer computed row by row
(kernels/ssd_reference.py), and the reference against HF's module itself (Nemotron-H's mixer, and Granite 4's).
Outputs at real tokens and the gradients of every weight and of the input, float64 (the scan keeps float64)."""

from __future__ import annotations

import pytest
import torch
from test_detach_prefix import tree_batch
from helpers import group_batch, load_script

from replaycompile.kernels.ssd_reference import Mamba2Dims, Mamba2Weights, mamba2_rows, ssd_scan
from replaycompile.kernels.ssd_tree import mamba2_packed, mamba2_tree_op
from replaycompile.kernels.tree_scan import tree_scan_index
from replaycompile.runtime.plan import build_plan

families = load_script("bench/families.py")
WEIGHTS = ("in_proj", "conv", "conv_bias", "dt_bias", "A_log", "D", "norm", "out_proj")


def _mixer(model_type="nemotron_h", dtype=torch.float32, chunk=8):
    cfg = families.tiny_config(model_type)
    model, _ = families.build_model(cfg)
    model = model.to(dtype)
    m = next(mod for mod in model.modules() if hasattr(mod, "A_log") and hasattr(mod, "D"))
    with torch.no_grad():  # HF initialises D, dt_bias and the norm to ones: make every weight matter
        g = torch.Generator().manual_seed(1)
        for p in (m.norm.weight, m.dt_bias, m.A_log, m.D, m.conv1d.bias):
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=torch.float32).to(p.dtype))
    d = Mamba2Dims(m.num_heads, m.head_dim, m.n_groups, m.ssm_state_size, m.conv_kernel_size,
                   m.intermediate_size // m.norm.group_size, m.time_step_limit[0], m.time_step_limit[1],
                   m.norm.variance_epsilon, chunk)
    return m, d


def _weights(m):
    return Mamba2Weights(m.in_proj.weight, m.conv1d.weight, m.conv1d.bias, m.dt_bias, m.A_log, m.D, m.norm.weight,
                         m.out_proj.weight)


def _hidden(ids, hidden_size, dtype):
    """Rows that are a function of (token id, column) only, so shared prefixes hold equal ones; ``table`` the leaf."""
    g = torch.Generator().manual_seed(2)
    table = torch.randn(int(ids.max()) + 1, ids.shape[1], hidden_size, generator=g, dtype=dtype).requires_grad_()
    return table, table[ids, torch.arange(ids.shape[1])[None, :]]


def _sizes(d):
    return (d.n_groups, d.norm_groups, d.dt_min, d.dt_max, d.norm_eps)


@pytest.mark.parametrize("model_type", ["nemotron_h", "granitemoehybrid"])
def test_reference_equals_the_hf_module(model_type):
    """The reference is the layer: HF's mixer (no cache, a padding mask, its torch path) on left- and
    right-padded rows, float32 as shipped, its own chunk size (the same sums in the same order but for einsum's
    contraction paths)."""
    m, _ = _mixer(model_type)
    d = Mamba2Dims(m.num_heads, m.head_dim, m.n_groups, m.ssm_state_size, m.conv_kernel_size,
                   m.intermediate_size // m.norm.group_size, m.time_step_limit[0], m.time_step_limit[1],
                   m.norm.variance_epsilon, m.chunk_size)
    ids, am, _, _ = group_batch(lens=(6, 2, 6, 5, 1))
    _, rows = _hidden(ids, m.hidden_size, torch.float32)
    with torch.no_grad():
        ref = m(rows, attention_mask=am)
        got = mamba2_rows(rows, am, _weights(m), d)
    real = am.bool()
    torch.testing.assert_close(got[real], ref[real], rtol=1e-5, atol=1e-6)


def test_scan_from_a_state_continues_the_scan():
    """The fork the tree relies on: scanning a sequence in two parts, the second from the first's final state,
    equals scanning it whole (any chunk size)."""
    g = torch.Generator().manual_seed(0)
    b, L, H, P, N = 2, 23, 4, 3, 5
    x, B, C = (torch.randn(b, L, H, k, generator=g, dtype=torch.float64) for k in (P, N, N))
    dt = torch.rand(b, L, H, generator=g, dtype=torch.float64)
    A, D = -torch.rand(H, generator=g, dtype=torch.float64), torch.randn(H, generator=g, dtype=torch.float64)
    whole, s_whole = ssd_scan(x, dt, A, B, C, D, chunk=4)
    first, s1 = ssd_scan(x[:, :9], dt[:, :9], A, B[:, :9], C[:, :9], D, chunk=8)
    second, s2 = ssd_scan(x[:, 9:], dt[:, 9:], A, B[:, 9:], C[:, 9:], D, chunk=5, initial_state=s1)
    torch.testing.assert_close(torch.cat((first, second), 1), whole)
    torch.testing.assert_close(s2, s_whole)


def _compare(m, d, ids, am):
    plan = build_plan(ids, am)
    table, rows = _hidden(ids, m.hidden_size, torch.float64)
    cot = torch.randn(*ids.shape, m.hidden_size, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    real = am.bool()
    params = [getattr(_weights(m), k) for k in WEIGHTS]
    ref = mamba2_rows(rows, am, _weights(m), d)
    g_ref = torch.autograd.grad((ref * cot * real[..., None]).sum(), params + [table])

    rows = table[ids, torch.arange(ids.shape[1])[None, :]]
    packed = rows.reshape(-1, rows.shape[-1]).index_select(0, plan.gather_index)[None]
    out = mamba2_tree_op(packed, params, plan.scatter_index, plan.gather_index, plan.seg_q, *_sizes(d))[0]
    got = torch.cat((out, out.new_zeros(1, out.shape[-1]))).index_select(0, plan.scatter_index.reshape(-1))
    got = got.reshape(ref.shape)
    g_got = torch.autograd.grad((got * cot * real[..., None]).sum(), params + [table])
    torch.testing.assert_close(got[real], ref[real], rtol=1e-7, atol=1e-9)
    for name, a, b in zip(WEIGHTS + ("input",), g_got, g_ref):
        err = ((a - b).norm() / b.norm()).item()
        assert err <= 1e-6, f"gradient of {name}: {err:.1e}"
    return plan


@pytest.mark.parametrize("batch", [
    pytest.param(lambda: group_batch(lens=(6, 2, 6, 5, 1)), id="flat-group-left-and-right-padded"),
    pytest.param(lambda: group_batch(lens=(1, 1, 2, 3), left_pad=0), id="completions-shorter-than-the-conv"),
    pytest.param(lambda: tree_batch(), id="two-level-tree"),
    pytest.param(lambda: tree_batch(prompt_len=50, stems=((20, (9, 30)), (5, (40, 1)))), id="longer-than-a-chunk"),
])
def test_tree_scan_equals_the_rows(batch):
    m, d = _mixer(dtype=torch.float64)
    ids, am, _, _ = batch()
    plan = _compare(m, d, ids, am)
    index = tree_scan_index(plan.scatter_index, plan.gather_index, plan.seg_q, d.kernel_size)
    assert index.contiguous and len(index.levels) >= 2  # the scan forked: a root and children


def test_a_pad_between_real_tokens_runs_the_rows():
    m, d = _mixer(dtype=torch.float64)
    ids, am, _, _ = group_batch(lens=(6, 2, 6, 5, 1))
    am = am.clone()
    am[1, 5] = 0
    before = torch._dynamo.utils.counters["replay"]["recurrent_tree_scan_rows"]
    _compare(m, d, ids, am)
    assert torch._dynamo.utils.counters["replay"]["recurrent_tree_scan_rows"] - before == 2


def test_tree_scan_in_float32_is_within_rounding():
    m, d = _mixer(dtype=torch.float32)
    ids, am, _, _ = tree_batch(prompt_len=50, stems=((20, (9, 30)), (5, (40, 1))))
    plan = build_plan(ids, am)
    _, rows = _hidden(ids, m.hidden_size, torch.float32)
    params = [getattr(_weights(m), k) for k in WEIGHTS]
    with torch.no_grad():
        ref = mamba2_rows(rows, am, _weights(m), d).reshape(-1, m.hidden_size)
        packed = rows.reshape(-1, rows.shape[-1]).index_select(0, plan.gather_index)[None]
        out = mamba2_packed(packed, params, plan.scatter_index, plan.gather_index, plan.seg_q, *_sizes(d))[0]
    torch.testing.assert_close(out, ref.index_select(0, plan.gather_index), rtol=1e-5, atol=1e-6)


def test_opcheck():
    """``replaycompile::mamba2_tree``: schema, fake, autograd registration and AOT dispatch, on a two-level tree,
    with and without the conv's bias."""
    m, d = _mixer(dtype=torch.float64)
    ids, am, _, _ = tree_batch()
    plan = build_plan(ids, am)
    _, rows = _hidden(ids, m.hidden_size, torch.float64)
    packed = rows.detach().reshape(-1, rows.shape[-1]).index_select(0, plan.gather_index)[None].requires_grad_()
    params = [getattr(_weights(m), k).detach().requires_grad_() for k in WEIGHTS]
    for ws in (params, params[:2] + params[3:]):
        torch.library.opcheck(mamba2_tree_op, (packed, ws, plan.scatter_index, plan.gather_index, plan.seg_q,
                                               *_sizes(d)))
