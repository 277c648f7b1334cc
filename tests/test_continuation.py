"""Packing across graph boundaries in one process: a graph break between decoder layers, and activations that
enter a compiled graph from eager code (``inputs_embeds``)."""

from __future__ import annotations

import pytest
import torch
from helpers import AOT, assert_same_step, group_batch, grpo_loss, run, step_loss, unique_prefix_tokens

import replaycompile
from replaycompile.testing.models import tiny_model


def _break_before(layer):
    """A graph break at the start of ``layer`` (what a data-dependent branch or a disabled hook does)."""
    return layer.register_forward_pre_hook(lambda m, a: torch._dynamo.graph_break())


@pytest.mark.slow  # over 15 s on 2 cores
def test_graph_break_between_layers_continues_packing():
    """A break inside the layer loop makes every layer a graph of its own (as FSDP2's hooks do), and the
    embedding runs outside any graph: the first layer's plan comes from its input's content, the later graphs
    continue from the tags on their inputs."""
    model = tiny_model("qwen3", num_hidden_layers=3)
    ids, am, adv, p = group_batch(prompt_len=12, lens=(5, 3, 6, 4))
    handle = _break_before(model.model.layers[1])
    try:
        ref = run(step_loss, model, ids, am, adv, p)
        step = torch.compile(step_loss, backend="replay", options=AOT)
        got = run(step, model, ids, am, adv, p)
    finally:
        handle.remove()
    assert_same_step(ref, got)
    st = replaycompile.last_stats()
    graphs = st["graphs"]
    assert len(graphs) >= 2 and st["applied"] and st["graphs_packed"] == len(graphs), st
    assert len(graphs) >= 3 and all(g["continued"] for g in graphs), graphs
    assert st["tokens_computed"] == unique_prefix_tokens(ids, am) < st["tokens_in"], st


def test_activations_from_eager_code_get_a_plan_from_their_content():
    """inputs_embeds computed outside the compiled function: no token ids in the graph, so the plan comes from
    the embeddings themselves (equal rows share), and the result equals eager."""
    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch(prompt_len=12, lens=(5, 3, 6, 4))

    def loss_from_embeds(m, emb, am, ids, adv):
        logits = m(inputs_embeds=emb, attention_mask=am, use_cache=False).logits
        return grpo_loss(logits, ids, am, adv, p)

    def step(fn):
        def go(m, ids, am, adv, p):
            return fn(m, m.get_input_embeddings()(ids), am, ids, adv)
        return go

    ref = run(step(loss_from_embeds), model, ids, am, adv, p)
    got = run(step(torch.compile(loss_from_embeds, backend="replay", options=AOT)), model, ids, am, adv, p)
    assert_same_step(ref, got)
    st = replaycompile.last_stats()
    assert st["applied"] and st["continued"], st
    assert st["tokens_computed"] == unique_prefix_tokens(ids, am) < st["tokens_in"], st


def test_per_row_values_that_differ_at_shared_tokens_stay_per_row():
    """A [B, T] float input of a continued graph that is not equal where rows share (per-token weights of the
    loss) is not gathered as if it were an activation: the result stays exact."""
    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch(prompt_len=12, lens=(5, 3, 6, 4))
    w = torch.rand(ids.shape, generator=torch.Generator().manual_seed(1))

    def fn(m, ids, am, adv, p):
        h = m.model(input_ids=ids, attention_mask=am, use_cache=False).last_hidden_state
        torch._dynamo.graph_break()
        logits = m.lm_head(h * w[..., None])
        return grpo_loss(logits, ids, am, adv, p)

    ref = run(fn, model, ids, am, adv, p)
    got = run(torch.compile(fn, backend="replay", options=AOT), model, ids, am, adv, p)
    assert_same_step(ref, got)
    st = replaycompile.last_stats()
    graphs = st["graphs"]
    assert len(graphs) == 2 and not graphs[0]["continued"] and graphs[1]["continued"], graphs
    # the model's graph packed; the LM head's reads h only through the per-row product, so nothing of it can
    # run once per shared token: it runs as it is, and says so
    assert graphs[0]["applied"] and graphs[0]["tokens_computed"] == unique_prefix_tokens(ids, am), graphs
    assert not graphs[1]["applied"] and "per-row value" in graphs[1]["fallback_reason"], graphs


def test_a_tag_is_void_once_its_tensor_changes_in_place():
    """An activation changed in place between two graphs (eager code after a break) is no longer what the
    plan replayed: the next graph checks it again instead of trusting the tag, and stays exact."""
    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch(prompt_len=12, lens=(5, 3, 6, 4))
    noise = torch.randn(ids.shape + (model.config.hidden_size,), generator=torch.Generator().manual_seed(2))

    def fn(m, ids, am, adv, p):
        h = m.model(input_ids=ids, attention_mask=am, use_cache=False).last_hidden_state
        torch._dynamo.graph_break()
        with torch.no_grad():
            h.add_(noise)  # per row: rows that shared a token no longer agree there
        torch._dynamo.graph_break()
        return grpo_loss(m.lm_head(h), ids, am, adv, p)

    ref = run(fn, model, ids, am, adv, p)
    got = run(torch.compile(fn, backend="replay", options=AOT), model, ids, am, adv, p)
    assert_same_step(ref, got)


def test_a_partly_packed_step_says_so(caplog):
    """A later graph that cannot be packed (it mixes tokens along the sequence) runs as it is; the step's
    stats say which graph and why, and one warning names it."""
    model = tiny_model("qwen3")
    # no left padding: the running mean below would read padded positions, whose values the contract leaves open
    ids, am, adv, p = group_batch(prompt_len=12, lens=(5, 3, 6, 4), left_pad=0)

    def fn(m, ids, am, adv, p):
        h = m.model(input_ids=ids, attention_mask=am, use_cache=False).last_hidden_state
        torch._dynamo.graph_break()
        h = h.cumsum(1) / torch.arange(1, h.shape[1] + 1)[None, :, None]  # a running mean: not per token
        return grpo_loss(m.lm_head(h), ids, am, adv, p)

    ref = run(fn, model, ids, am, adv, p)
    with caplog.at_level("WARNING", logger="replaycompile"):
        got = run(torch.compile(fn, backend="replay", options=AOT), model, ids, am, adv, p)
    assert_same_step(ref, got)
    st = replaycompile.last_stats()
    assert not st["applied"] and st["graphs_packed"] == 1 and len(st["graphs"]) == 2, st
    assert st["graphs"][0]["applied"] and not st["graphs"][1]["applied"], st["graphs"]
    assert "cumsum" in st["graphs"][1]["fallback_reason"], st["graphs"][1]
    assert f"graph {st['graphs'][1]['graph']}" in st["fallback_reason"], st["fallback_reason"]
    assert any("partly packed" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_a_plan_made_without_the_padding_mask_is_made_again_from_the_next_graphs_mask():
    """The embedding in a graph of its own (a break right after it, as a PEFT policy's input hook causes): that
    graph sees no padding mask, so its plan counts padding as real; the next graph's mask says otherwise, and it
    plans again from its inputs with the mask's real tokens."""
    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch(prompt_len=12, lens=(5, 3, 6, 4))

    def fn(m, ids, am, adv, p):
        emb = m.get_input_embeddings()(ids)
        torch._dynamo.graph_break()
        logits = m(inputs_embeds=emb, attention_mask=am, use_cache=False).logits
        return grpo_loss(logits, ids, am, adv, p)

    ref = run(fn, model, ids, am, adv, p)
    got = run(torch.compile(fn, backend="replay", options=AOT), model, ids, am, adv, p)
    assert_same_step(ref, got)
    st = replaycompile.last_stats()
    # the re-planned graph starts a step of its own (a new batch): it is packed, with the mask's real tokens
    assert st["applied"] and st["continued"], st["graphs"]
    assert st["tokens_computed"] == unique_prefix_tokens(ids, am) < st["tokens_in"], st


def test_detach_prefix_does_not_continue_and_says_so():
    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch(prompt_len=12, lens=(5, 3, 6, 4))

    def fn(m, ids, am, adv, p):
        h = m.model(input_ids=ids, attention_mask=am, use_cache=False).last_hidden_state
        torch._dynamo.graph_break()
        return grpo_loss(m.lm_head(h), ids, am, adv, p)

    run(torch.compile(fn, backend="replay", options={**AOT, "mode": "detach_prefix"}), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    graphs = st["graphs"]
    assert len(graphs) == 2 and graphs[0]["applied"] and not graphs[1]["applied"], graphs
    assert "detach_prefix" in graphs[1]["fallback_reason"] and not st["applied"], st
