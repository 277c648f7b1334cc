"""Mixture-of-experts models (HF Qwen3-MoE, Mixtral; GPT-OSS's routing): top-k routing is per token, so rows that
share a prefix are packed; loss and every gradient equal eager's. The routing's batch-level pieces (the per-expert
token counts, the load-balancing aux loss) stay exact or are declined with their reason."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from helpers import AOT, assert_same_step, group_batch, grpo_loss, run, step_loss, unique_prefix_tokens
from test_analysis import capture
from test_detach_prefix import tree_batch

import replaycompile
from replaycompile.testing.models import tiny_model
from replaycompile.passes.nodes import BT, SlotsRole, SortedRole
from replaycompile.passes.region import analyze

MOE = ["qwen3_moe", "mixtral"]


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
@pytest.mark.parametrize("family", MOE)
def test_moe_group_step_is_exact(family, impl):
    """G rows sharing a prompt, completions of different lengths: packed (each unique token routed and computed
    once), loss and every gradient (router and expert weights included) equal eager's."""
    model = tiny_model(family, impl)
    assert model.config._experts_implementation == "grouped_mm"  # HF's default experts path
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5, 1))
    ref = run(step_loss, model, ids, am, adv, p)
    got = run(torch.compile(step_loss, backend="replay", options=AOT), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["fallback_reason"] is None, st
    assert st["tokens_computed"] == unique_prefix_tokens(ids, am) < st["tokens_in"], st
    assert_same_step(ref, got)


@pytest.mark.parametrize("family", MOE)
def test_moe_batched_mm_experts_are_exact(family):
    """experts_implementation="batched_mm" (each slot's row repeated, its expert's weights gathered, one bmm
    per slot): packed and exact too."""
    model = tiny_model(family, experts_implementation="batched_mm")
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5, 1))
    ref = run(step_loss, model, ids, am, adv, p)
    got = run(torch.compile(step_loss, backend="replay", options=AOT), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["tokens_computed"] == unique_prefix_tokens(ids, am) < st["tokens_in"], st
    assert_same_step(ref, got)


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
@pytest.mark.parametrize("family", MOE)
def test_moe_two_level_tree_is_exact(family, impl):
    """Rows prompt + stem + tail (two branch levels): packed and exact."""
    model = tiny_model(family, impl)
    ids, am, adv, p = tree_batch()
    ref = run(step_loss, model, ids, am, adv, p)
    got = run(torch.compile(step_loss, backend="replay", options=AOT), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"], st
    assert st["tokens_computed"] == unique_prefix_tokens(ids, am) < st["tokens_in"], st
    assert_same_step(ref, got)


def test_moe_aux_loss_is_declined_naming_it():
    """output_router_logits=True: the load-balancing loss counts each expert's share of the batch's tokens
    (scatter_add_ over the [B*T*k] slots), which a packed batch holds each shared token of once. Declined,
    the reason names the aux loss and what to do; loss and every gradient equal eager's."""
    model = tiny_model("qwen3_moe", output_router_logits=True)
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5, 1))

    def step(model, ids, am, adv, p):
        out = model(input_ids=ids, attention_mask=am, use_cache=False, output_router_logits=True)
        return grpo_loss(out.logits, ids, am, adv, p) + out.aux_loss

    ref = run(step, model, ids, am, adv, p)
    got = run(torch.compile(step, backend="replay", options=AOT), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert not st["applied"], st
    assert "load_balancing_loss_func" in st["fallback_reason"] and "output_router_logits=False" in \
        st["fallback_reason"], st["fallback_reason"]
    assert_same_step(ref, got)


def test_moe_routing_roles_in_the_graph():
    """On Qwen3-MoE's graph the analysis follows the token axis through the routing: the flattened [B*T]
    and [B*T*k] slot axes, the sort by expert (its rows in data-dependent order), the grouped matmuls over the
    sorted rows, the inverse permutation; the per-expert counts are only offsets. Every grouped matmul and
    every sort is packed."""
    model = tiny_model("qwen3_moe")
    ids, am, _, _ = group_batch()
    (gm,) = capture(model, input_ids=ids, attention_mask=am, use_cache=False)
    a = analyze(gm)
    assert a.applicable, a.reason
    sorts = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is torch.sort]
    mms = [n for n in gm.graph.nodes if "grouped_mm" in str(n.target)]
    assert len(sorts) == model.config.num_hidden_layers and len(mms) == 2 * len(sorts)
    assert all(a.kind[n] == "packed" for n in sorts + mms)
    assert all(a.roles[n][0] == a.roles[mms[0]][0] for n in mms[:2])
    assert isinstance(a.roles[mms[0]][0], SortedRole)
    assert set(a.routing.token_index.values()) == {BT, SlotsRole(2), a.roles[mms[0]][0], a.roles[mms[2]][0]}
    assert len(a.routing.segments) == 2 * len(sorts)  # histc and its cumsum, per layer
    assert set(a.routing.inverse_aranges.values()) == {SlotsRole(2)}
    views = [n for n in gm.graph.nodes if n.name in ("expert_ids", "expert_ids_1")]
    assert views and all(a.roles[n] == (SlotsRole(2),) for n in views)
    assert BT in {r for n in gm.graph.nodes for r in (a.roles.get(n) or ())}


class ToyMoE(nn.Module):
    """Embedding -> causal attention -> a top-2 MoE written as HF's grouped_mm path does it, with one twist
    (``variant``) that breaks its per-token property."""

    def __init__(self, variant="ok", vocab=32, dim=16, experts=4):
        super().__init__()
        self.variant, self.experts = variant, experts
        self.emb = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.router = nn.Linear(dim, experts)
        self.w = nn.Parameter(torch.randn(experts, dim, dim) * 0.1)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.emb(ids)
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, 2, d // 2).permute(2, 0, 3, 1, 4)
        x = x + F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        h = x.view(-1, d)
        top_w, top_i = self.router(h).softmax(-1).topk(2, dim=-1)
        ids_flat, w_flat = top_i.reshape(-1), top_w.reshape(-1)
        keys, perm = torch.sort(ids_flat)
        rows = h[perm // 2]
        counts = torch.histc(keys.float(), bins=self.experts, min=0, max=self.experts - 1)
        if self.variant == "other_sort":  # offsets of one sort, rows of another
            _, perm2 = torch.sort((ids_flat + 1) % self.experts)
            rows = h[perm2 // 2]
        offs = torch.cumsum(counts, dim=0, dtype=torch.int32)
        out = torch.ops.transformers.grouped_mm_fallback(rows, self.w, offs=offs)
        if self.variant == "counts":  # the batch's expert counts reach the activations
            out = out * counts[0]
        out = out * w_flat[perm].unsqueeze(-1)
        inv = torch.empty_like(perm)
        inv[perm] = torch.arange(perm.size(0))
        y = out[inv].view(b * t, 2, d).sum(1).reshape(b, t, d)
        return self.head(x + y)


@pytest.fixture(autouse=True)
def _grouped_mm_op():
    import transformers.integrations.moe  # noqa: F401 - registers torch.ops.transformers.grouped_mm_fallback


def test_toy_moe_is_packed_and_exact():
    from test_analysis import shared_ids

    torch.manual_seed(0)
    model = ToyMoE()
    ids = shared_ids()
    (gm,) = capture(model, ids)
    assert analyze(gm).applicable, analyze(gm).reason
    ref = model(ids)
    got = torch.compile(model, backend="replay", options=AOT)(ids)
    st = replaycompile.last_stats()
    assert st["applied"] and st["tokens_computed"] < st["tokens_in"], st
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("variant,words", [
    ("other_sort", "grouped matmul whose groups"),
    ("counts", "per-expert token counts"),
])
def test_toy_moe_batch_level_routing_is_declined(variant, words):
    """The counts of one sort used as the groups of rows another sort ordered, or the batch's per-expert
    counts multiplied into the activations: not per-token, declined naming the node; results equal eager."""
    from test_analysis import shared_ids

    torch.manual_seed(0)
    model = ToyMoE(variant)
    ids = shared_ids()
    (gm,) = capture(model, ids)
    a = analyze(gm)
    assert not a.applicable and words in a.reason and "node `" in a.reason, a.reason
    got = torch.compile(model, backend="replay", options=AOT)(ids)
    assert not replaycompile.last_stats()["applied"]
    torch.testing.assert_close(got, model(ids), rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # three shapes, two compiles of a 2-layer MoE step: ~110 s on the shared 2-core CPU
def test_moe_recompiles_over_batches_of_different_shapes():
    """Three batches of different shapes through one compiled Qwen3-MoE step: the grouped_mm experts have no
    data-dependent shapes, so a step is one graph; the second shape recompiles once with dynamic shapes and
    the third reuses it. Every call packed and exact."""
    model = tiny_model("qwen3_moe")
    compiled = torch.compile(step_loss, backend="replay", options=AOT)
    graphs = set()
    for lens, prompt in (((5, 3, 6, 4), 10), ((6, 2, 6, 5, 1), 8), ((4, 4, 2), 12)):
        ids, am, adv, p = group_batch(prompt_len=prompt, lens=lens)
        ref = run(step_loss, model, ids, am, adv, p)
        got = run(compiled, model, ids, am, adv, p)
        st = replaycompile.last_stats()
        assert st["applied"] and len(st["graphs"]) == 1, st
        graphs.add(st["graph"])
        assert_same_step(ref, got)
    assert st["recompiles"] <= 1 and len(graphs) == 2, (st, graphs)


@pytest.mark.slow  # about 30 s under load; the analysis alone runs by default (tests/test_attention_sinks.py)
def test_gpt_oss_is_packed_and_exact():
    """GPT-OSS (eager attention with attention sinks; a top-k router with biases over the grouped_mm experts,
    per-expert biases gathered by sorted expert id, added in place): packed, and equal to eager. (Sliding
    layers: tests/test_attention_sinks.py.)"""
    model = tiny_model("gpt_oss", "eager")
    ids, am, adv, p = group_batch()
    ref = run(step_loss, model, ids, am, adv, p)
    got = run(torch.compile(step_loss, backend="replay", options=AOT), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["attention"] == "torch", st
    assert_same_step(ref, got)


def test_setitem_not_an_inverse_permutation_is_declined():
    """``inv[perm] = values`` where values is not arange(len(perm)) does not invert the sort: not followed."""
    torch.manual_seed(0)
    from test_analysis import shared_ids

    class Bad(ToyMoE):
        def forward(self, ids):
            x = self.emb(ids)
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, 2, d // 2).permute(2, 0, 3, 1, 4)
            x = x + F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
            h = x.view(-1, d)
            keys, perm = torch.sort(self.router(h).argmax(-1))
            inv = torch.empty_like(perm)
            inv[perm] = torch.arange(perm.size(0)).flip(0)
            return self.head(x + h[perm][inv].view(b, t, d))

    (gm,) = capture(Bad(), shared_ids())
    a = analyze(gm)
    assert not a.applicable, "a non-inverse write must not be followed"
    assert any(n.target is operator.setitem for n in gm.graph.nodes)
