"""Attention narrowed to each query's top-k keys (DeepSeek-V3.2 and GLM-5's DSA indexer; passes/key_selection.py):
the indexer's pair scores run on the packed tokens, masked by the tree's visibility, and the attention runs on the
packed tokens with the selection's mask. Tiny models from bench/families.py (index_topk 4, fewer than the keys, so
the indexer really selects; 8 indexer heads, so the relu scores hold no exact ties, where torch.topk's pick among
equal scores is unspecified even in eager)."""

from __future__ import annotations

import pytest
import torch
from helpers import AOT, assert_same_step, group_batch, load_script, run, step_loss, unique_prefix_tokens
from test_detach_prefix import tree_batch

import replaycompile
from replaycompile.passes import key_selection

families = load_script("bench/families.py")
COUNTER = "attention_sites_key_selection"


def _model(model_type, impl="sdpa", **overrides):
    cfg = families.tiny_config(model_type)
    for k, v in overrides.items():
        setattr(cfg, k, v)
    model, got = families.build_model(cfg)
    assert got == impl
    return model


def _step(model, batch, **options):
    ref = run(step_loss, model, *batch)
    c = torch._dynamo.utils.counters["replay"]
    before = c[COUNTER], c["packed_graphs"]
    got = run(torch.compile(step_loss, backend="replay", options={**AOT, **options}), model, *batch)
    graphs = c["packed_graphs"] - before[1]
    # key-selection attentions per packed graph (the backend may build more than one packed graph per step)
    return ref, got, replaycompile.last_stats(), (c[COUNTER] - before[0]) / max(graphs, 1)


@pytest.mark.parametrize("layout", ["flat", "tree"])
def test_deepseek_v32_top_k_attention_is_packed_exactly(layout):
    """A prompt group (left padding, ragged completions) and a two-level tree: packed, every attention a key
    selection on the packed tokens, loss and every gradient equal to eager's."""
    model = _model("deepseek_v32")
    batch = group_batch() if layout == "flat" else tree_batch()
    ref, got, st, selected = _step(model, batch)
    assert st["applied"], st
    assert selected == model.config.num_hidden_layers, selected
    assert st["tokens_computed"] == unique_prefix_tokens(batch[0], batch[1]) < st["tokens_in"], st
    assert_same_step(ref, got)


def test_hy_v4_eager_attention_with_sinks_and_an_additive_mask_is_packed_exactly():
    """Hunyuan V4: HF's eager attention (sink logits joining the softmax) with a float additive mask narrowed by
    ``masked_fill``: the selection on the packed tokens feeds ``dense_attention_reference``."""
    model = _model("hy_v4", impl="eager")
    ref, got, st, selected = _step(model, group_batch())
    assert st["applied"], st
    assert selected >= 1, selected
    assert_same_step(ref, got)


@pytest.mark.parametrize("softcap, sinks, groups", [(0.0, False, 1), (5.0, False, 2), (0.0, True, 2)])
def test_dense_attention_with_the_tree_mask_is_tree_attention(softcap, sinks, groups):
    """``dense_attention_reference`` (the packed attention of a key selection) with the tree's visibility as its
    mask is the tree attention's reference, softcapping, sinks and grouped keys included; additive or bool mask
    alike. (The reference runs the same function where it softcaps or has sinks: there the bool and additive
    masks are held to each other; without them the reference is the independent masked one.)"""
    from replaycompile.kernels.tree_attention_reference import dense_attention_reference, tree_attention_reference

    g = torch.Generator().manual_seed(0)
    n, hkv, d = 11, 2, 8
    q = torch.randn(1, hkv * groups, n, d, generator=g, dtype=torch.float64)
    k, v = (torch.randn(1, hkv, n, d, generator=g, dtype=torch.float64) for _ in range(2))
    subtree_end = torch.tensor([11, 5, 5, 5, 5, 11, 8, 8, 11, 11, 11])
    sink = torch.randn(hkv * groups, generator=g, dtype=torch.float64) if sinks else None
    want, _ = tree_attention_reference(q, k, v, subtree_end, 0.3, softcap=softcap, sinks=sink)
    for dtype in (torch.bool, torch.float64):
        mask = key_selection.visibility(subtree_end, None, 0, 4, dtype)
        got, _ = dense_attention_reference(q, k, v, mask, 0.3, softcap, sink)
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_glm5_layer_reusing_the_previous_top_k_is_packed_exactly():
    """GLM-5's "shared" indexer layer reuses the previous layer's top-k: the selection's nodes shared by two
    attentions are emitted once, both attentions packed."""
    model = _model("glm_moe_dsa", indexer_types=["full", "shared"])
    assert model.model.layers[1].self_attn.indexer is None
    ref, got, st, selected = _step(model, group_batch())
    assert st["applied"], st
    assert selected == 2, selected
    assert_same_step(ref, got)


def test_the_selection_decides_the_result(monkeypatch):
    """The test above can fail: with the selection dropped (every visible key attended) the packed step is no
    longer eager's, so the indexer really narrows the keys at this config."""
    model = _model("deepseek_v32")
    monkeypatch.setattr(key_selection, "emit", lambda g, sel, vis, *rest: vis)
    ref, got, st, _ = _step(model, group_batch())
    assert st["applied"], st
    with pytest.raises(AssertionError, match="differs|not close"):
        assert_same_step(ref, got)


def test_detach_prefix_declines_naming_the_attention():
    model = _model("deepseek_v32")
    ref, got, st, _ = _step(model, group_batch(), mode="detach_prefix")
    assert not st["applied"], st
    assert "top-k keys" in st["fallback_reason"] and "mode='detach_prefix'" in st["fallback_reason"], st
    assert_same_step(ref, got)


def test_scores_that_read_other_keys_decline(monkeypatch):
    """An indexer whose score for (query, key) also reads the other keys' scores (here: centred over the key
    axis) is not a pair value of the two tokens: on the packed tokens the other keys would be other rows'. Not
    packed, and the step equals eager's."""
    from transformers.models.deepseek_v32 import modeling_deepseek_v32 as hf

    class Centred:
        def __getattr__(self, name):
            return getattr(torch.nn.functional, name)

        @staticmethod
        def relu(x):
            return torch.relu(x - x.mean(-1, keepdim=True))

    monkeypatch.setattr(hf, "F", Centred())
    model = _model("deepseek_v32")
    ref, got, st, selected = _step(model, group_batch())
    assert not st["applied"], st
    assert selected == 0
    assert_same_step(ref, got)
