"""Sliding-window attention (and Gemma 2's softcapping) shared exactly.

The op: ``tree_attention`` with a window W hides key k from query q when their columns in the row are W or more
apart, checked against the dense reference on trees whose windows are smaller than the prefix, than a branch,
and cross the branch point. End to end: tiny Mistral, Qwen2, Gemma 2 and Gemma 3 with windows smaller than the
prompt are packed, and the loss and every gradient equal eager's.
"""

from __future__ import annotations

import math
import random

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replaycompile.kernels.tree_attention import tree_attention
from replaycompile.kernels.tree_attention_reference import tree_attention_reference
from trees import build_tree, make_qkv, random_segs

TORCH_PATH = ([], 0, 0)


def depths(tree, start: int = 0) -> torch.Tensor:
    """Each packed token's column in its row: its depth in the tree (plus a left-padding offset)."""
    return torch.tensor([start + len(tree.path_to(i)) - 1 for i in range(tree.n)], dtype=torch.int64)


def check_window(tree, window, softcap=0.0, hq=4, hkv=2, d=8, dv=None, seed=0, start=0):
    dv = d if dv is None else dv
    scale = 1.0 / math.sqrt(d)
    pos = depths(tree, start)
    q, k, v = make_qkv(tree.n, hq, hkv, d, dv, torch.float32, seed)
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    ref, ref_lse = tree_attention_reference(q64, k64, v64, tree.subtree_end, scale, pos, window, softcap)
    for x in (q, k, v):
        x.requires_grad_()
    out, lse = tree_attention(q, k, v, *tree.meta(), scale, *TORCH_PATH, pos, window, softcap)
    tol = dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out.double(), ref, **tol)
    torch.testing.assert_close(lse.double(), ref_lse.double(), **tol)
    go = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed + 1))
    got = torch.autograd.grad(out, (q, k, v), go)
    want = torch.autograd.grad(ref, (q64, k64, v64), go.double())
    for name, a, b in zip("qkv", got, want):
        torch.testing.assert_close(a.double(), b, **tol, msg=lambda m: f"d{name}: {m}")
    return out


# a 12-token prompt, branches of 5, 7 and 3 at its end, and a second level: two branches off the 7-token one
TWO_LEVEL = [(-1, 0, 12), (0, 11, 5), (0, 11, 7), (2, 3, 4), (2, 3, 2), (0, 11, 3)]


@pytest.mark.parametrize("window", [1, 2, 3, 6, 12, 14, 40])
@pytest.mark.parametrize("dv", [8, 6])   # 8: the CPU flash kernel with a mask; 6: the math path
def test_window_against_reference(window, dv):
    """W = 1 (only itself), smaller than a branch (2, 3), than the prefix (6), crossing the branch point (12, 14:
    a branch query sees the prompt's tail only) and longer than every row (40: plain tree attention)."""
    check_window(build_tree(TWO_LEVEL), window, dv=dv)


def test_window_longer_than_rows_is_tree_attention():
    tree = build_tree(TWO_LEVEL)
    q, k, v = make_qkv(tree.n, 4, 2, 8, 8, torch.float32, 5)
    plain, _ = tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH)
    windowed, _ = tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH, depths(tree), 100)
    torch.testing.assert_close(windowed, plain, rtol=1e-6, atol=1e-6)


def test_window_hides_keys_by_row_distance_not_packed_distance():
    """The first token of the second branch is packed 6 places after the prompt's last token but sits right
    after it in its row: a window of 2 shows it that token and nothing earlier."""
    tree = build_tree([(-1, 0, 4), (0, 3, 5), (0, 3, 3)])
    q, k, v = make_qkv(tree.n, 2, 2, 8, 8, torch.float32, 1)
    v = torch.zeros_like(v)
    v[0, :, 3] = 1.0  # only the prompt's last token carries a value
    out, _ = tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH, depths(tree), 2)
    first_of_second = 4 + 5
    assert depths(tree)[first_of_second] == 4
    assert bool((out[0, :, first_of_second] > 0).all())       # sees the prompt's last token
    assert bool((out[0, :, first_of_second + 1] == 0).all())   # one further: out of the window


@pytest.mark.parametrize("chunk", [1, 2, 4, 5, 12, 40])
@pytest.mark.parametrize("dv", [8, 6])
def test_chunk_against_reference(chunk, dv):
    """Chunked attention (Llama 4; window -C): a query sees the keys of its own C-token chunk of the row, chunks
    counted from the row's first real token: chunks of one token, shorter than a branch, ending inside the prompt
    and inside branches (5), as long as the prompt (12: a branch starts a new chunk) and longer than every row."""
    check_window(build_tree(TWO_LEVEL), -chunk, dv=dv)


def test_chunk_boundaries_follow_positions_not_packed_order():
    """Positions 0..3 of the prompt then each branch: with chunks of 4 a branch's first token (position 4) starts
    a new chunk and sees only itself, though it is packed right after its parent's last token."""
    tree = build_tree([(-1, 0, 4), (0, 3, 5), (0, 3, 3)])
    q, k, v = make_qkv(tree.n, 2, 2, 8, 8, torch.float32, 1)
    v = torch.zeros_like(v)
    v[0, :, :4] = 1.0  # only the prompt carries values
    out, _ = tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH, depths(tree), -4)
    assert bool((out[0, :, 3] > 0).all())
    assert bool((out[0, :, 4] == 0).all()) and bool((out[0, :, 9] == 0).all())  # both branches' first tokens


@pytest.mark.parametrize("window", [0, 3, 13])
def test_softcap_against_reference(window):
    check_window(build_tree(TWO_LEVEL), window, softcap=2.0)


def test_left_padding_offsets_positions():
    # a row's columns start after its left padding; only differences matter
    check_window(build_tree(TWO_LEVEL), 5, start=7)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), window=st.integers(-12, 20).filter(bool), softcap=st.sampled_from([0.0, 1.5]))
def test_random_trees_against_reference(seed, window, softcap):
    rng = random.Random(seed)
    tree = build_tree(random_segs(rng, rng.randint(1, 2), rng.randint(1, 4), 9), rng, split_prob=0.3)
    check_window(tree, window, softcap, hq=2, hkv=1, seed=seed)


def test_opcheck_with_window_and_softcap():
    tree = build_tree(TWO_LEVEL)
    q, k, v = make_qkv(tree.n, 4, 2, 8, 8, torch.float32, 2)
    for window, softcap in [(5, 0.0), (5, 3.0), (-4, 0.0)]:
        args = (q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), *tree.meta(), 0.35, *TORCH_PATH,
                depths(tree), window, softcap)
        torch.library.opcheck(torch.ops.replaycompile.tree_attention.default, args)


def test_window_without_positions_is_refused():
    tree = build_tree(TWO_LEVEL)
    q, k, v = make_qkv(tree.n, 2, 2, 8, 8, torch.float32, 2)
    with pytest.raises(RuntimeError, match="needs positions"):
        tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH, None, 4)


# ---------------------------------------------------------------- end to end: HF models with small windows

from helpers import AOT, assert_same_step, group_batch, step_loss  # noqa: E402
from test_detach_prefix import tree_batch  # noqa: E402

import replaycompile  # noqa: E402
from replaycompile.testing.models import _TINY  # noqa: E402

WINDOW = 4  # smaller than the 9-10 token prompts and crossing every branch point

# family -> (config overrides, attention implementations); each has at least one sliding and one full layer
# except Mistral (one window for every layer)
FAMILIES = {
    "mistral": (dict(sliding_window=WINDOW), ("sdpa", "eager")),
    # Qwen2: layers from max_window_layers on slide
    "qwen2": (dict(use_sliding_window=True, sliding_window=WINDOW, max_window_layers=1), ("sdpa",)),
    # Gemma 2 runs eager attention only (transformers refuses sdpa for it); softcapping off here, on below
    "gemma2": (dict(sliding_window=WINDOW, query_pre_attn_scalar=16, attn_logit_softcapping=None,
                    final_logit_softcapping=None), ("eager",)),
    "gemma3_text": (dict(sliding_window=WINDOW, query_pre_attn_scalar=16,
                         layer_types=["sliding_attention", "full_attention"]), ("sdpa", "eager")),
}


def hf_model(family, impl, **extra):
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(family, **{**_TINY, **FAMILIES[family][0], **extra})
    cfg._attn_implementation = impl
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return AutoModelForCausalLM.from_config(cfg).float()


def grads_of(model, loss_fn):
    for p in model.parameters():
        p.grad = None
    loss = loss_fn()
    loss.backward()
    return loss.detach(), {k: p.grad.detach().clone() for k, p in model.named_parameters() if p.grad is not None}


def eager_and_replay(model, batch):
    ids, am, adv, p = batch
    ref = grads_of(model, lambda: step_loss(model, ids, am, adv, p))
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="replay", options=AOT)
    got = grads_of(model, lambda: step_loss(compiled, ids, am, adv, p))
    return ref, got, replaycompile.last_stats()


BATCHES = {"flat": lambda: group_batch(prompt_len=10, lens=(5, 3, 6, 4)), "two_level": lambda: tree_batch()}


# about 20 s each under load: one case runs by default, the rest under -m slow
CASES = [pytest.param(f, i, b, marks=() if (f, i, b) == ("mistral", "sdpa", "two_level") else pytest.mark.slow)
         for f, (_, impls) in FAMILIES.items() for i in impls for b in sorted(BATCHES)]


@pytest.mark.parametrize("family,impl,batch", CASES)
def test_family_with_small_window_is_packed_and_exact(family, impl, batch):
    ids, am, adv, p = b = BATCHES[batch]()
    assert int(am.sum(1).min()) > WINDOW  # every row is longer than the window
    ref, got, stats = eager_and_replay(hf_model(family, impl), b)
    assert stats["applied"] is True, stats["fallback_reason"]
    assert stats["tokens_computed"] < stats["tokens_in"]
    assert stats["attention"] == "torch"  # the packed tree attention ran (with the windows)
    assert_same_step(ref, got)


def test_each_layer_gets_its_own_window(monkeypatch):
    """Gemma 3 with layer 0 sliding and layer 1 full: the mask check finds window 4 at the first attention and
    none at the second (HF builds both masks; each layer reads the one its layer_types names)."""
    from helpers import instances_of

    from replaycompile.backend import ReplayGraph

    graphs = instances_of(monkeypatch, ReplayGraph)
    _, _, stats = eager_and_replay(hf_model("gemma3_text", "sdpa"), BATCHES["flat"]())
    assert stats["applied"] is True
    (g,) = [g for g in graphs if g.masks is not None and g.masks.sites]
    assert g.masks.windows == [WINDOW, 0]


def test_gemma2_softcapped_attention_is_an_attention_site():
    """HF Gemma 2's eager attention with attn_logit_softcapping (scores * scale / c, tanh, * c, + mask, softmax)
    is one site per layer with softcap c and the scale before it; nothing declines the graph."""
    from test_analysis import capture

    from replaycompile.passes.region import analyze

    model = hf_model("gemma2", "eager", attn_logit_softcapping=0.5)
    ids, am, _, _ = BATCHES["flat"]()
    (gm,) = capture(lambda i, m: model(input_ids=i, attention_mask=m, use_cache=False).logits, ids, am)
    a = analyze(gm)
    assert a.reason is None, a.reason
    assert [(s.softcap, s.scale, s.sinks) for s in a.attention] == [(0.5, 16 ** -0.5, None)] * 2


@pytest.mark.slow  # about 20 s each under load
@pytest.mark.parametrize("batch", sorted(BATCHES))
def test_gemma2_softcapping_is_shared_and_exact(batch, monkeypatch):
    """With attn_logit_softcapping the eager scores go through ``tanh(s / c) * c`` before the mask: the analysis
    takes that as the site's softcap, and both layers (sliding and full) run as the tree attention with it."""
    from helpers import instances_of

    from replaycompile.backend import ReplayGraph

    graphs = instances_of(monkeypatch, ReplayGraph)
    ref, got, stats = eager_and_replay(hf_model("gemma2", "eager", attn_logit_softcapping=0.5), BATCHES[batch]())
    assert stats["applied"] is True, stats["fallback_reason"]
    assert stats["tokens_computed"] < stats["tokens_in"]
    assert stats["attention"] == "torch"
    (g,) = [g for g in graphs if g.packed is not None]
    assert [s.softcap for s in g.analysis.attention] == [0.5, 0.5]
    calls = [n.args for n in g.packed.gm.graph.nodes
             if n.op == "call_function" and n.target is torch.ops.replaycompile.tree_attention.default]
    assert [c[13] for c in calls] == [0.5, 0.5]  # rewritten with the softcap, not replayed rows
    assert g.masks.windows == [WINDOW, 0]
    assert_same_step(ref, got)


@pytest.mark.slow
def test_detach_prefix_with_window_equals_the_detached_eager_step():
    """detach_prefix: the branch queries read the shared keys with the window applied over the concatenated
    (shared, branch) columns; the step equals eager's with the shared rows detached."""
    from test_detach_prefix import detached_step

    model = hf_model("mistral", "sdpa")
    ids, am, adv, p = tree_batch()
    ref = grads_of(model, lambda: detached_step(model, ids, am, adv, p))
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="replay", options={**AOT, "mode": "detach_prefix"})
    got = grads_of(model, lambda: step_loss(compiled, ids, am, adv, p))
    stats = replaycompile.last_stats()
    assert stats["applied"] and stats["shared_no_grad"] > 0 and stats["attention"] == "torch", stats
    assert_same_step(ref, got)


@pytest.mark.parametrize("split", [False, True])
def test_chunk_positions_count_from_each_rows_first_real_token(split):
    """The positions chunked attention reads (``rewrite.chunk_positions``): each packed token's column minus its
    row's left padding, for the whole plan and for detach_prefix's shared and branch streams alike."""
    from helpers import group_batch

    from replaycompile.passes.rewrite import chunk_positions
    from replaycompile.runtime.plan import build_plan, split_shared

    ids, am, _, _ = group_batch(lens=(6, 2, 6, 5, 1))
    am = am.clone()
    ids2, am2 = ids.clone(), am.clone()
    ids2[:, :3], am2[:, :3] = 0, 0  # a second group left-padded by 3
    ids, am = torch.cat((ids, ids2)), torch.cat((am, am2))
    plan = build_plan(ids, am)
    T = ids.shape[1]
    lead = (am.cumsum(1) == 0).sum(1)
    if split:
        sp = split_shared(plan)
        streams = [(sp.columns_s, sp.gather_s), (sp.columns_r, sp.gather_r)]
        every = [sp.gather_s, sp.gather_r]
        scatter = sp.scatter_index
    else:
        streams, every, scatter = [(plan.columns, plan.gather_index)], [plan.gather_index], plan.scatter_index
    got = []
    for cols, gath in streams:
        want = cols - lead[gath // T]
        got.append(chunk_positions(cols, gath, scatter, every))
        assert torch.equal(got[-1], want)
    assert int(torch.cat(got).min()) == 0  # every row's first real token is position 0
