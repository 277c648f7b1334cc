"""Property: for random small graphs of per-token ops and causal attention, and random shared-prefix batches,
the rewritten (packed) graph's outputs and gradients equal the original's."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from helpers import AOT, unique_prefix_tokens
from hypothesis import given, settings
from hypothesis import strategies as st

import replaycompile

OPS = ["linear", "silu", "rmsnorm", "layernorm", "gelu_gate", "residual_attn", "attn_masked", "scale", "cast"]
DIM, HEADS, VOCAB = 16, 2, 12


class RandomNet(nn.Module):
    """Embedding, then a random sequence of per-token ops and causal attentions, then a head."""

    def __init__(self, ops, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.ops = list(ops)
        self.emb = nn.Embedding(VOCAB, DIM)
        self.lin = nn.ModuleList(nn.Linear(DIM, DIM) for _ in ops)
        self.gate = nn.ModuleList(nn.Linear(DIM, 2 * DIM, bias=False) for _ in ops)
        self.qkv = nn.ModuleList(nn.Linear(DIM, 3 * DIM) for _ in ops)
        self.norm = nn.ModuleList(nn.LayerNorm(DIM) for _ in ops)
        self.head = nn.Linear(DIM, VOCAB)

    def attention(self, i, x, am):
        b, t, _ = x.shape
        q, k, v = self.qkv[i](x).view(b, t, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        if am is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # causal-and-padding mask built in the graph, as HF builds it
            idx = torch.arange(t)
            mask = (idx[None, :] <= idx[:, None])[None, None] & am.bool()[:, None, None, :]
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return y.transpose(1, 2).reshape(b, t, DIM)

    def forward(self, ids, am=None):
        x = self.emb(ids)
        for i, op in enumerate(self.ops):
            if op == "linear":
                x = self.lin[i](x)
            elif op == "silu":
                x = F.silu(x)
            elif op == "rmsnorm":
                x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            elif op == "layernorm":
                x = self.norm[i](x)
            elif op == "gelu_gate":
                a, b = self.gate[i](x).chunk(2, dim=-1)
                x = F.gelu(a) * b
            elif op == "residual_attn":
                x = x + self.attention(i, x, None)
            elif op == "attn_masked":
                x = x + self.attention(i, x, am)
            elif op == "scale":
                x = x * 0.5 + 1.0
            elif op == "cast":
                x = x.double().float()
        return self.head(x)


@st.composite
def nets_and_batches(draw):
    ops = draw(st.lists(st.sampled_from(OPS), min_size=1, max_size=5))
    ops.insert(draw(st.integers(0, len(ops))), draw(st.sampled_from(["residual_attn", "attn_masked"])))
    g = draw(st.integers(1, 6))
    prompt = draw(st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=8))
    tails = [draw(st.lists(st.integers(0, VOCAB - 1), min_size=0, max_size=5)) for _ in range(g)]
    if draw(st.booleans()):  # a second level: half the rows share a stem
        stem = draw(st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=3))
        tails = [stem + t if i % 2 else t for i, t in enumerate(tails)]
    width = max(len(t) for t in tails) + (0 if any(tails) else 1)
    ids = torch.zeros(g, len(prompt) + width, dtype=torch.long)
    am = torch.zeros_like(ids)
    for i, t in enumerate(tails):
        row = prompt + t
        ids[i, :len(row)] = torch.tensor(row)
        am[i, :len(row)] = 1
    return ops, draw(st.integers(0, 100)), ids, am


@pytest.mark.slow
@settings(max_examples=10)
@given(nets_and_batches())
def test_random_graphs_are_exact(case):
    ops, seed, ids, am = case
    net = RandomNet(ops, seed)
    use_mask = "attn_masked" in ops
    args = (ids, am) if use_mask else (ids,)
    w = torch.randn(*ids.shape, VOCAB, generator=torch.Generator().manual_seed(seed))
    valid = am.bool() if use_mask else torch.ones_like(am, dtype=torch.bool)
    if not use_mask:
        ids.masked_fill_(am == 0, 0)  # no mask: every position is a real token

    def step(f):
        net.zero_grad()
        out = f(*args)
        (out * w * valid[..., None]).sum().backward()
        return out.detach(), {k: p.grad.clone() for k, p in net.named_parameters() if p.grad is not None}

    ref = step(net)
    torch._dynamo.reset()
    got = step(torch.compile(net, backend="replay", options=AOT))
    st_ = replaycompile.last_stats()
    # every op of OPS is per-token or causal attention: the only legitimate decline is a batch that shares
    # nothing (AOT's min_shared_tokens=1), and the count of what should be computed is derived independently
    expected = unique_prefix_tokens(ids, am if use_mask else None)
    if 1 in ids.shape:  # Dynamo specializes size-1 dims: that graph is declined, saying so
        assert not st_["applied"] and "axis of size 1" in st_["fallback_reason"], st_["fallback_reason"]
    elif int(valid.sum()) - expected >= 1:
        assert st_["applied"] and st_["fallback_reason"] is None, st_["fallback_reason"]
        assert st_["tokens_computed"] == expected, (st_, expected)
    else:
        assert not st_["applied"] and "min_shared_tokens" in st_["fallback_reason"], st_["fallback_reason"]
    torch.testing.assert_close(got[0][valid], ref[0][valid], rtol=1e-5, atol=1e-5)
    assert ref[1].keys() == got[1].keys()
    for k in ref[1]:
        torch.testing.assert_close(got[1][k], ref[1][k], rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@settings(max_examples=10)
@given(nets_and_batches(), st.integers(1, 4))
def test_random_graphs_read_at_a_slice_are_exact(case, cut):
    """The loss reads the head's output at columns ``cut:`` only: the values after the last attention (and its
    queries) run at those columns' tokens alone (passes/selected_tokens.py), and outputs and gradients still
    equal eager's."""
    ops, seed, ids, am = case
    net = RandomNet(ops, seed)
    use_mask = "attn_masked" in ops
    if not use_mask:
        ids.masked_fill_(am == 0, 0)
    args = (ids, am) if use_mask else (ids,)
    cut = min(cut, ids.shape[1] - 1)
    w = torch.randn(*ids.shape, VOCAB, generator=torch.Generator().manual_seed(seed))[:, cut:]
    valid = (am.bool() if use_mask else torch.ones_like(am, dtype=torch.bool))[:, cut:]

    def step(f):
        net.zero_grad()
        out = f(*args)
        (out * w * valid[..., None]).sum().backward()
        return out.detach(), {k: p.grad.clone() for k, p in net.named_parameters() if p.grad is not None}

    ref = step(lambda *a: net(*a)[:, cut:])
    torch._dynamo.reset()
    got = step(torch.compile(lambda *a: net(*a)[:, cut:], backend="replay", options=AOT))
    st_ = replaycompile.last_stats()
    if st_["applied"] and cut > 0:
        assert st_["queries_selected"] == 1 and st_["selected_only_values"] > 0, st_
    torch.testing.assert_close(got[0][valid], ref[0][valid], rtol=1e-5, atol=1e-5)
    assert ref[1].keys() == got[1].keys()
    for k in ref[1]:
        torch.testing.assert_close(got[1][k], ref[1][k], rtol=1e-4, atol=1e-5)
