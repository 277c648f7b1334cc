"""HF activation checkpointing (``model.gradient_checkpointing_enable()``) under the replay backend: packed and
exact in every mode. Dynamo traces each checkpointed layer as a ``tag_activation_checkpoint`` higher-order op
(for ``use_reentrant=True`` too); ``passes/inline_checkpoint.py`` inlines the bodies before the analysis."""

from __future__ import annotations

import pytest
import torch
from helpers import AOT, assert_same_step, group_batch, run, step_loss, unique_prefix_tokens
from torch.utils.checkpoint import CheckpointPolicy, checkpoint

import replaycompile
import replaycompile.backend as backend
from replaycompile.testing.models import tiny_model
from replaycompile.passes.inline_checkpoint import inline_checkpoints

@pytest.fixture(autouse=True)
def checkpoint_side_effects_not_replayed():
    """transformers >= 5.25 with Hugging Face's ``kernels`` installed (which 5.25 pulls in) sets kernels'
    ``_ACTIVE_KERNEL_FUNCS`` context variable inside each decoder layer's forward; inside a checkpointed layer
    Dynamo refuses that side effect ("HOP: Unsafe side effect") and graph-breaks at every layer, for any backend,
    so the layers run eager and nothing of them can be packed. The setting the README gives as the workaround
    (the side effect is kernel routing state, which the recomputation in backward does not need) traces them
    again; on 5.24 it changes nothing (no side effect to skip)."""
    with torch._dynamo.config.patch(skip_fwd_side_effects_in_bwd_under_checkpoint=True):
        yield


MODES = {"default": None, "non_reentrant": {"use_reentrant": False}, "reentrant": {"use_reentrant": True}}


def checkpointed_model(mode):
    model = tiny_model("qwen3")  # dropout probabilities 0
    model.train()  # HF skips checkpointing in eval mode
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=MODES[mode])
    return model


def regions_inlined() -> int:
    return torch._dynamo.utils.counters["replay"]["checkpoint_regions_inlined"]


@pytest.mark.parametrize("mode", list(MODES))
def test_checkpointed_step_is_packed_and_exact(mode):
    """Loss and every parameter gradient equal eager's with the same checkpointing; the step is packed."""
    model = checkpointed_model(mode)
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5, 1))
    ref = run(step_loss, model, ids, am, adv, p)
    before = regions_inlined()
    got = run(torch.compile(step_loss, backend="replay", options=AOT), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["fallback_reason"] is None, st
    assert st["tokens_computed"] == unique_prefix_tokens(ids, am) < st["tokens_in"], st
    assert regions_inlined() - before == model.config.num_hidden_layers  # one region per decoder layer
    assert_same_step(ref, got)


def _inner_graphs(monkeypatch) -> list:
    """The graphs the backend hands its inner compiler from now on (appended as they compile)."""
    graphs = []
    inner = backend._CountingBackend.__call__

    def spy(self, gm, example_inputs):
        graphs.append(gm)
        return inner(self, gm, example_inputs)

    monkeypatch.setattr(backend._CountingBackend, "__call__", spy)
    return graphs


def test_unpacked_fallback_keeps_recompute_tags(monkeypatch):
    """A batch run unpacked (below min_shared_tokens) compiles the inlined graph as it is: its nodes still carry
    the recompute policy AOT autograd's partitioner honours, so checkpointing still saves activation memory
    there; results equal eager's."""
    model = checkpointed_model("non_reentrant")
    ids, am, adv, p = group_batch()
    graphs = _inner_graphs(monkeypatch)
    ref = run(step_loss, model, ids, am, adv, p)
    opts = {**AOT, "min_shared_tokens": 10**9}
    got = run(torch.compile(step_loss, backend="replay", options=opts), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert not st["applied"] and "min_shared_tokens" in st["fallback_reason"], st
    (regions,) = [{n.meta["ac_graph_id"] for n in gm.graph.nodes
                   if n.meta.get("recompute") == CheckpointPolicy.PREFER_RECOMPUTE} for gm in graphs]
    assert len(regions) == model.config.num_hidden_layers
    assert_same_step(ref, got)


def test_packed_attention_keeps_its_layers_recompute_tag(monkeypatch):
    """The rewrite gives each packed tree attention (and the indexing around it) its layer's recompute tag, so
    AOT autograd's partitioner recomputes it in backward instead of saving every layer's q, k, v, output and
    log-sum-exp (which would make a checkpointed packed step keep more than the layers' inputs)."""
    model = checkpointed_model("non_reentrant")
    ids, am, adv, p = group_batch()
    graphs = _inner_graphs(monkeypatch)
    ref = run(step_loss, model, ids, am, adv, p)
    got = run(torch.compile(step_loss, backend="replay", options=AOT), model, ids, am, adv, p)
    assert replaycompile.last_stats()["applied"]
    attention = [n for gm in graphs for n in gm.graph.nodes
                 if n.target is torch.ops.replaycompile.tree_attention.default]
    assert len(attention) == model.config.num_hidden_layers
    assert all(n.meta.get("recompute") == CheckpointPolicy.PREFER_RECOMPUTE for n in attention)
    assert len({n.meta["ac_graph_id"] for n in attention}) == model.config.num_hidden_layers  # one per layer
    assert_same_step(ref, got)


def test_saved_attention_option_saves_it_and_stays_exact(monkeypatch):
    """``checkpoint_attention="save"``: each checkpointed layer's tree attention is tagged MUST_SAVE (its output
    and log-sum-exp kept, its q/k/v recomputed), the rest of the layer keeps its recompute tag, and the step
    equals eager."""
    from test_detach_prefix import _saved_bytes

    model = checkpointed_model("non_reentrant")
    ids, am, adv, p = group_batch()
    graphs = _inner_graphs(monkeypatch)
    ref = run(step_loss, model, ids, am, adv, p)
    saved = {}
    for how in ("recompute", "save"):
        torch._dynamo.reset()
        graphs.clear()
        step = torch.compile(step_loss, backend="replay", options={**AOT, "checkpoint_attention": how})
        got = run(step, model, ids, am, adv, p)
        assert replaycompile.last_stats()["applied"]
        assert_same_step(ref, got)
        nodes = [n for gm in graphs for n in gm.graph.nodes]
        attention = [n for n in nodes if n.target is torch.ops.replaycompile.tree_attention.default]
        want = CheckpointPolicy.MUST_SAVE if how == "save" else CheckpointPolicy.PREFER_RECOMPUTE
        assert len(attention) == model.config.num_hidden_layers
        assert all(n.meta.get("recompute") == want for n in attention), how
        assert any(n.meta.get("recompute") == CheckpointPolicy.PREFER_RECOMPUTE for n in nodes)
        torch._dynamo.reset()
        saved[how] = _saved_bytes(torch.compile(step_loss, backend="replay",
                                                options={**AOT, "checkpoint_attention": how}), model, ids, am, adv, p)
    # the attention's outputs are kept on top of the layers' inputs
    assert saved["save"] > saved["recompute"], saved


def test_inline_pass_flattens_nested_regions():
    """The pass on its own: nested checkpoints become plain tagged nodes, no higher-order op or body left."""
    def inner(y):
        return torch.sin(y) * 2

    def fn(x, w):
        return checkpoint(lambda y: checkpoint(inner, y, use_reentrant=False).cos() @ w, x, use_reentrant=False)

    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    x, w = torch.randn(3, 4), torch.randn(4, 2)
    torch.compile(fn, backend=capture, fullgraph=True)(x, w)
    (gm,) = graphs
    assert inline_checkpoints(gm) == 2
    assert not list(gm.named_children())
    ops = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
    assert all(n.meta.get("recompute") == CheckpointPolicy.PREFER_RECOMPUTE for n in ops)
    (out,) = gm(x, w)
    torch.testing.assert_close(out, fn(x, w))


@pytest.mark.slow
def test_packed_step_still_recomputes():
    """The rewrite keeps the recompute tags on the packed nodes: a checkpointed packed step saves well under a
    quarter of what the same packed step saves without checkpointing (4 layers), and stays exact."""
    from test_detach_prefix import _saved_bytes

    ids, am, adv, p = group_batch(prompt_len=48)
    saved = {}
    for ckpt in (False, True):
        torch._dynamo.reset()
        model = tiny_model("qwen3", num_hidden_layers=4)
        model.train()
        if ckpt:
            model.gradient_checkpointing_enable()
        saved[ckpt] = _saved_bytes(torch.compile(step_loss, backend="replay", options=AOT), model, ids, am, adv, p)
        assert replaycompile.last_stats()["applied"]
    # the layers' inputs only (the attention is recomputed too): well under a quarter
    assert saved[True] < saved[False] / 4, saved


@pytest.mark.slow  # over 15 s on 2 cores
def test_checkpointed_steps_of_changing_shapes_stay_packed():
    """RL batches change length every step, so the second step runs the dynamic-shape graph, whose checkpoint
    regions call ``.size()`` on packed values: still packed and exact, and the last layer still runs at the loss's
    tokens only (a region's size query that nothing reads is left out when it is inlined, not taken for a reader
    at every token)."""
    model = checkpointed_model("non_reentrant")
    step = torch.compile(step_loss, backend="replay", options=AOT)
    for prompt_len, lens in [(12, (5, 3, 6, 4)), (17, (7, 2, 5, 4))]:
        ids, am, adv, p = group_batch(prompt_len=prompt_len, lens=lens)
        ref = run(step_loss, model, ids, am, adv, p)
        got = run(step, model, ids, am, adv, p)
        assert_same_step(ref, got)
        st = replaycompile.last_stats()
        assert st["applied"] and st["tokens_computed"] == unique_prefix_tokens(ids, am), st
        assert st["queries_selected"] == 1 and st["selected_only_values"] > 10, st
