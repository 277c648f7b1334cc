"""Attention sinks (GPT-OSS) shared exactly.

The op: ``tree_attention`` with ``sinks`` [Hq] adds one logit per head to every query's softmax and drops its
column, checked against the dense reference (values, lse and the gradients of q, k, v and the sinks) with and
without windows and softcapping, and with fewer queries than keys. End to end: a tiny GPT-OSS (sliding and full
layers, sinks, top-k routed experts) is packed, its attention runs as the tree attention, and the loss and every
gradient equal eager's.
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
from test_sliding_window import TWO_LEVEL, depths
from trees import build_tree, make_qkv, random_segs

TORCH_PATH = ([], 0, 0)
TOL = dict(rtol=1e-5, atol=1e-5)


def make_sinks(hq, seed, spread=2.0):
    return torch.randn(hq, generator=torch.Generator().manual_seed(seed + 7)) * spread


def check_sinks(tree, sinks, window=0, softcap=0.0, hq=4, hkv=2, d=8, dv=None, seed=0):
    dv = d if dv is None else dv
    scale = 1.0 / math.sqrt(d)
    pos = depths(tree)
    q, k, v = make_qkv(tree.n, hq, hkv, d, dv, torch.float32, seed)
    ins64 = [x.detach().double().requires_grad_() for x in (q, k, v, sinks)]
    ref, ref_lse = tree_attention_reference(*ins64[:3], tree.subtree_end, scale, pos, window, softcap, ins64[3])
    ins = [x.detach().clone().requires_grad_() for x in (q, k, v, sinks)]
    out, lse = tree_attention(*ins[:3], *tree.meta(), scale, *TORCH_PATH, pos, window, softcap, ins[3])
    torch.testing.assert_close(out.double(), ref, **TOL)
    torch.testing.assert_close(lse.double(), ref_lse.double(), **TOL)
    go = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed + 1))
    got = torch.autograd.grad(out, ins, go)
    want = torch.autograd.grad(ref, ins64, go.double())
    for name, a, b in zip(("q", "k", "v", "sinks"), got, want):
        torch.testing.assert_close(a.double(), b, **TOL, msg=lambda m: f"d{name}: {m}")
    return out


@pytest.mark.parametrize("window,softcap", [(0, 0.0), (5, 0.0), (0, 2.0), (13, 2.0)])
@pytest.mark.parametrize("dv", [8, 6])   # 8: the CPU flash paths; 6: the math paths
def test_sinks_against_reference(window, softcap, dv):
    check_sinks(build_tree(TWO_LEVEL), make_sinks(4, 0), window, softcap, dv=dv)


def test_a_sink_takes_probability_from_every_key():
    """A very large sink takes (nearly) all the probability: the output goes to zero; a very small one leaves
    the attention as it was."""
    tree = build_tree(TWO_LEVEL)
    q, k, v = make_qkv(tree.n, 2, 2, 8, 8, torch.float32, 3)
    plain, plain_lse = tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH)
    low, _ = tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH, None, 0, 0.0, torch.full((2,), -60.0))
    high, high_lse = tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH, None, 0, 0.0, torch.full((2,), 60.0))
    torch.testing.assert_close(low, plain, rtol=1e-6, atol=1e-6)
    assert high.abs().max() < 1e-15 * plain.abs().max() + 1e-20
    torch.testing.assert_close(high_lse, torch.full_like(high_lse, 60.0))
    assert bool((plain_lse < 60).all())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), window=st.sampled_from([0, 1, 3, 8]), softcap=st.sampled_from([0.0, 1.5]))
def test_random_trees_with_sinks_against_reference(seed, window, softcap):
    rng = random.Random(seed)
    tree = build_tree(random_segs(rng, rng.randint(1, 2), rng.randint(1, 4), 9), rng, split_prob=0.3)
    check_sinks(tree, make_sinks(2, seed), window, softcap, hq=2, hkv=1, seed=seed)


def test_fewer_queries_than_keys_with_sinks():
    """detach_prefix's branch call: the queries are the last keys' tokens; the sinks apply per query as well."""
    tree = build_tree(TWO_LEVEL)
    q, k, v = make_qkv(tree.n, 4, 2, 8, 8, torch.float32, 4)
    sinks = make_sinks(4, 4)
    full, _ = tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH, None, 0, 0.0, sinks)
    n_q = tree.n - 12  # every token after the 12-token prompt (its root segment)
    seg_q, ptr, kv = tree.meta()[1:]
    assert int(seg_q[0, 1]) == 12
    seg_q_r = seg_q[1:] - 12
    kv_r = kv[int(ptr[1]):]
    ptr_r = ptr[1:] - ptr[1]
    part, _ = tree_attention(q[:, :, 12:], k, v, torch.empty(0, dtype=torch.int64), seg_q_r, ptr_r, kv_r, 0.3,
                             *TORCH_PATH, None, 0, 0.0, sinks)
    assert part.shape[2] == n_q
    torch.testing.assert_close(part, full[:, :, 12:], rtol=1e-6, atol=1e-6)


def test_sinks_on_the_triton_path():
    """With a block layout the Triton kernels run (the interpreter, on CPU) and the sinks rescale their result
    as the PyTorch path's: values and every gradient equal the reference."""
    from test_block_sparse import _tree_layout

    from replaycompile.kernels import tree_attention as ta

    tree = build_tree([(-1, 0, 20), (0, 19, 9), (0, 19, 4)])
    q, k, v = make_qkv(tree.n, 4, 2, 16, 16, torch.float32, 3)
    sinks = make_sinks(4, 3)
    ins64 = [x.detach().double().requires_grad_() for x in (q, k, v, sinks)]
    ref, _ = tree_attention_reference(*ins64[:3], tree.subtree_end, 0.25, sinks=ins64[3])
    ins = [x.detach().clone().requires_grad_() for x in (q, k, v, sinks)]
    with ta.PathRecorder() as ran:
        out, _ = tree_attention(*ins[:3], *tree.meta(), 0.25, _tree_layout(tree.subtree_end).tensors(), 16, 16,
                                None, 0, 0.0, ins[3])
        go = torch.randn(out.shape, generator=torch.Generator().manual_seed(4))
        got = torch.autograd.grad(out, ins, go)
    assert ran.paths() == "triton" and ran.paths("backward") == "triton"
    torch.testing.assert_close(out.double(), ref, rtol=2e-5, atol=2e-5)
    for name, a, b in zip(("q", "k", "v", "sinks"), got, torch.autograd.grad(ref, ins64, go.double())):
        torch.testing.assert_close(a.double(), b, rtol=2e-5, atol=2e-5, msg=lambda m: f"d{name}: {m}")


@pytest.mark.parametrize("window,softcap", [(0, 0.0), (5, 3.0)])
def test_opcheck_with_sinks(window, softcap):
    tree = build_tree(TWO_LEVEL)
    q, k, v = make_qkv(tree.n, 4, 2, 8, 8, torch.float32, 2)
    args = (q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), *tree.meta(), 0.35, *TORCH_PATH,
            depths(tree), window, softcap, make_sinks(4, 2).requires_grad_())
    torch.library.opcheck(torch.ops.replaycompile.tree_attention.default, args)


def test_bad_sinks_shape_is_refused():
    tree = build_tree(TWO_LEVEL)
    q, k, v = make_qkv(tree.n, 4, 2, 8, 8, torch.float32, 2)
    with pytest.raises(RuntimeError, match="sinks must be"):
        tree_attention(q, k, v, *tree.meta(), 0.3, *TORCH_PATH, None, 0, 0.0, torch.zeros(2))


# ---------------------------------------------------------------- end to end: a tiny GPT-OSS

from helpers import assert_same_step, instances_of  # noqa: E402
from test_analysis import capture  # noqa: E402
from test_sliding_window import BATCHES, WINDOW, eager_and_replay  # noqa: E402

from replaycompile.testing.models import tiny_model  # noqa: E402
from replaycompile.passes.region import analyze  # noqa: E402

TREE_ATTENTION = torch.ops.replaycompile.tree_attention.default


def gpt_oss():
    """Layer 0 sliding (window 4, smaller than the prompts), layer 1 full; both with sinks, drawn wide enough
    (N(0, 1)) that a wrong sink shows in the loss."""
    model = tiny_model("gpt_oss", "eager", sliding_window=WINDOW,
                       layer_types=["sliding_attention", "full_attention"]).float()
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(1)
        for layer in model.model.layers:
            layer.self_attn.sinks.normal_()
    return model


def rewritten_calls(graph):
    """The tree-attention calls of a ReplayGraph's packed graph, as (args) tuples."""
    return [n.args for n in graph.packed.gm.graph.nodes if n.op == "call_function" and n.target is TREE_ATTENTION]


def test_gpt_oss_sink_attention_is_an_attention_site():
    """The analysis takes HF GPT-OSS's eager attention (cat of the sink column, max subtracted, softmax, the
    column sliced off) as one site per layer with the layer's sinks parameter, and nothing declines the graph
    (the top-k routing with its per-expert biases included)."""
    model = gpt_oss()
    ids, am, _, _ = BATCHES["flat"]()
    (gm,) = capture(lambda i, m: model(input_ids=i, attention_mask=m, use_cache=False).logits, ids, am)
    a = analyze(gm)
    assert a.reason is None, a.reason
    assert len(a.attention) == 2
    assert all(s.sinks is not None and "sinks" in s.sinks.name and s.softcap == 0 for s in a.attention)
    assert len({s.sinks for s in a.attention}) == 2  # each layer's own


@pytest.mark.slow  # about 30 s each under load
@pytest.mark.parametrize("batch", sorted(BATCHES))
def test_gpt_oss_is_packed_and_exact(batch, monkeypatch):
    from replaycompile.backend import ReplayGraph

    graphs = instances_of(monkeypatch, ReplayGraph)
    ref, got, stats = eager_and_replay(gpt_oss(), BATCHES[batch]())
    assert stats["applied"] is True, stats["fallback_reason"]
    assert stats["tokens_computed"] < stats["tokens_in"]
    assert stats["attention"] == "torch"
    (g,) = [g for g in graphs if g.packed is not None]
    calls = rewritten_calls(g)
    assert len(calls) == 2 and all(len(c) == 15 and c[14] is not None for c in calls)  # both sites, with sinks
    assert g.masks.windows == [WINDOW, 0]  # the sliding layer keeps its window, by row distance
    assert "model.layers.0.self_attn.sinks" in got[1]
    assert_same_step(ref, got)


@pytest.mark.slow  # about 45 s under load
def test_gpt_oss_detach_prefix_equals_the_detached_eager_step():
    """detach_prefix: the shared stream reads the sinks detached, the branch stream with autograd (its queries
    see the shared keys, the window over the concatenated columns); the step equals eager's with the shared rows
    detached."""
    from test_detach_prefix import detached_step, tree_batch
    from test_sliding_window import grads_of

    import replaycompile
    from helpers import AOT, step_loss

    model = gpt_oss()
    ids, am, adv, p = tree_batch()
    ref = grads_of(model, lambda: detached_step(model, ids, am, adv, p))
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="replay", options={**AOT, "mode": "detach_prefix"})
    got = grads_of(model, lambda: step_loss(compiled, ids, am, adv, p))
    stats = replaycompile.last_stats()
    assert stats["applied"] and stats["shared_no_grad"] > 0 and stats["attention"] == "torch", stats
    assert_same_step(ref, got)


class SinkAttention(torch.nn.Module):
    """One eager attention with a sink column, as GPT-OSS writes it (``variant="gpt_oss"``), or with a change
    that makes it something else: the sink prepended and the first column dropped (a sink too, but not the
    form HF writes, which is all the pattern takes), or a max over the queries subtracted (not constant along
    the softmax's axis: the probabilities change)."""

    def __init__(self, variant, vocab=32, dim=16, heads=2):
        super().__init__()
        self.variant, self.heads = variant, heads
        self.emb = torch.nn.Embedding(vocab, dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.sinks = torch.nn.Parameter(torch.randn(heads))
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, ids):
        b, t = ids.shape
        x = self.emb(ids)
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        i = torch.arange(t)
        mask = torch.zeros(t, t).masked_fill(i[None, :] > i[:, None], float("-inf"))
        s = torch.matmul(q, k.transpose(2, 3)) * 0.5 + mask
        sinks = self.sinks.reshape(1, -1, 1, 1).expand(b, -1, t, 1)
        c = torch.cat([sinks, s] if self.variant == "first" else [s, sinks], dim=-1)
        c = c - c.max(dim=-2 if self.variant == "max_over_queries" else -1, keepdim=True).values
        p = torch.softmax(c, dim=-1)
        p = p[..., 1:] if self.variant == "first" else p[..., :-1]
        y = torch.matmul(p, v).transpose(1, 2).reshape(b, t, -1)
        return self.head(x + y)


@pytest.mark.parametrize("variant", ["gpt_oss", "first", "max_over_queries"])
def test_only_the_sink_pattern_is_a_sink_site(variant):
    """Anything else is no attention site: its QK^T matmul mixes tokens, so the scores leave the packed region
    there and the attention runs on the replayed rows (exact, not shared)."""
    model = SinkAttention(variant)
    ids = torch.randint(0, 32, (3, 8), generator=torch.Generator().manual_seed(0))
    (gm,) = capture(model, ids)
    a = analyze(gm)
    if variant == "gpt_oss":
        assert a.reason is None and len(a.attention) == 1 and a.attention[0].sinks.name.endswith("sinks_")
    else:
        assert not a.attention
        assert any("matmul" in why and "token mixing" in why for why in a.boundaries.values()), a.boundaries
