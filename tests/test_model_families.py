"""Issue 30's rules, one test per promise, on the families that needed them (tiny models from bench/families.py,
``inner="aot_eager"``; the sweeps are tests/test_families.py: the issue families under aot_eager marked slow (CI), the
whole sweep and the issue families under inductor marked sweep).

Each family here declined or was wrong before a rule about what an op does to the token axis: GPT-2 (token ids
reshaped before the embedding, Conv1D's addmm), Llama 4 (ids moved with ``.to``, complex rope), Apertus (binary
``torch.min``), Ministral 3 (a per-position scale), ERNIE 4.5 (rope tables repeated per pair), DeepSeek-V3 (MLA's
keys built with ``new_empty`` and filled in place; group-limited routing's scatter), Qwen3.5 (a Gated DeltaNet of
another class, run on the prefix tree; multimodal rope's positions expanded to the batch), Falcon-H1 (a Mamba
layer's output scaled outside it), RecurrentGemma (a recurrence that carries its pads: declined, not wrong), BERT-style
decoders (a position buffer sliced to T, a token-type buffer read at the positions, RoBERTa's positions counted
from the ids), GPT-J (a rope table indexed at the positions), Falcon (a constant index list on the head axis), Megatron-BERT (a constant zeros((B, T)) of token types), RoFormer
(positions as arange(0, T)), Granite SWA (sinks as a rescale by sigmoid(lse - sinks) after the softmax), Gemma 3n (AltUp's per-token
matmul, its coefficients' in-place clamp run before the graph)."""

from __future__ import annotations

import dataclasses
import logging

import pytest
import torch
from helpers import group_batch, grpo_loss, load_script

import replaycompile
from replaycompile.testing.models import tiny_model
from replaycompile.passes import recurrent

families = load_script("bench/families.py")


@pytest.mark.parametrize("model_type", ["gpt2", "apertus", "ministral3", "ernie4_5_moe", "deepseek_v3", "glm4_moe",
                                        "falcon_h1", "bert-generation", "bert", "roberta", "gptj", "falcon", "megatron-bert", "roformer", "granite_swa", "gemma3n_text"])
def test_family_packs_exactly(model_type):
    """Packed (the stats say so), fewer tokens computed than in the batch, loss, logits and every gradient equal
    eager's; no layer left per row where the rules follow every op (a recurrent layer's the only exception)."""
    r = families.run_family(model_type, "flat", inner="aot_eager")
    assert r["status"] == "packed", r
    assert r["tokens_computed"] < r["tokens_in"], r
    if model_type != "falcon_h1":
        assert not r["recurrent_per_row"], r
    else:  # its Mamba layer per row, its output (times ssm_out_multiplier) gathered back
        assert r["recurrent_per_row"], r


@pytest.mark.slow
def test_qwen3_5_gated_deltanet_runs_on_the_prefix_tree_under_inductor():
    """Qwen3.5's Gated DeltaNet (split projections, another class than Qwen3-Next's) runs as the tree-scan op with
    the default inner compiler, on a two-level tree; exact."""
    r = families.run_family("qwen3_5_text", "tree")
    assert r["status"] == "packed", r
    assert r["recurrent_tree_scan"] and not r["recurrent_per_row"], r


@pytest.mark.parametrize("model_type", ["nemotron_h", "granitemoehybrid"])
def test_mamba2_mixers_run_on_the_prefix_tree(model_type):
    """Nemotron-H's and Granite 4's Mamba-2 mixers (found by their graph, each its own class) run as the
    ``mamba2_tree`` op on a two-level tree: packed, exact, no layer per row."""
    r = families.run_family(model_type, "tree", inner="aot_eager")
    assert r["status"] == "packed", r
    assert r["recurrent_tree_scan"] and not r["recurrent_per_row"], r


def test_a_tree_scan_site_that_differs_from_its_layer_stays_per_row(monkeypatch, caplog):
    """A site is recognised by its weights' names and sizes read off its graph; the first call holds the kernel
    to the layer itself. A site read wrong (here: the gated norm's epsilon) is caught there: the layer
    runs per row instead, the log says by how much it differed, and the step is exact."""
    real = recurrent._mamba2_site

    def misread(*args):
        site = real(*args)
        return dataclasses.replace(site, sizes=site.sizes[:4] + (1.0,))

    monkeypatch.setattr(recurrent, "_mamba2_site", misread)
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        r = families.run_family("nemotron_h", "flat", inner="aot_eager")
    assert r["status"] == "packed", r
    assert r["recurrent_per_row"] == ["model.layers.0.mixer"] and not r["recurrent_tree_scan"], r
    assert any("differs from the layer" in m.getMessage() for m in caplog.records)


@pytest.mark.parametrize("layout", ["flat", "tree"])
def test_llama4_chunked_attention_is_packed_exactly(layout, replay_graphs):
    """Llama 4's chunked attention layers (chunks of 8, shorter than the prompt, counted from each row's first
    real token: the flat group is left-padded) are found by the mask check as chunks and packed with the chunk
    applied by position; its MoE, which writes its routed experts into the shared expert's output in place,
    runs per row rather than silently losing that write. Exact."""
    r = families.run_family("llama4_text", layout, inner="aot_eager")
    assert r["status"] == "packed", r
    windows = replay_graphs[-1].masks.windows
    assert windows and any(w < 0 for w in windows), windows


def test_an_inplace_write_of_row_values_into_a_packed_tensor_declines():
    """``out.add_(rows)`` where ``out`` is packed and the added value was computed per row: the rewrite would
    write into a replayed copy and later reads of ``out`` would miss it. The analysis declines, naming it."""
    import torch.fx as fx

    from replaycompile.passes import region

    g = fx.Graph()
    out, rows = g.placeholder("out"), g.placeholder("rows")
    add = g.call_method("add_", (out, rows))
    g.output(add)
    assert region._inplace_target(add) is out
    assert region._inplace_target(g.call_method("add", (out, rows))) is None


def test_a_weight_clamped_in_place_inside_the_step_is_still_clamped():
    """Gemma 3n clamps its AltUp coefficients' ``.data`` in place on every training forward: the write runs
    before the graph (passes/weight_writes.py), so the step packs and the weight is clamped as eager clamps it."""
    cfg = families.tiny_config("gemma3n_text")
    model, _ = families.build_model(cfg)
    coefs = model.model.layers[0].altup.prediction_coefs.weight
    limit = model.config.altup_coef_clip
    with torch.no_grad():
        coefs[0, 0] = 5 * limit
    before = torch._dynamo.utils.counters["replay"]["weight_writes_hoisted"]
    step = torch.compile(families.grpo_step, backend="replay", options={"inner": "aot_eager"})
    step(model, *families.group_batch())
    assert coefs[0, 0].item() == limit
    assert torch._dynamo.utils.counters["replay"]["weight_writes_hoisted"] > before
    assert replaycompile.last_stats()["applied"]


def test_a_layer_that_carries_its_pads_is_declined_not_wrong():
    """RecurrentGemma's recurrence does not zero padded positions, so its real outputs depend on the pads' states,
    which a packed step never computes: the padding probe declines it, naming the layer; the step equals eager's."""
    r = families.run_family("recurrent_gemma", "flat", inner="aot_eager")
    assert r["status"] == "declined", r
    assert "temporal_block" in r["reason"] and "padded positions" in r["reason"], r


def test_a_model_graph_without_token_ids_leaves_a_stats_record_and_a_warning(caplog):
    """Never a silent decline: a model called with inputs_embeds built inside the step from no token ids has
    nothing to key the plan on; its graph still records stats (not applied, with the reason) and warns once."""
    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch()
    embeds = torch.randn(model.config.hidden_size)

    def step(model, embeds, ids, am, adv, p):
        e = embeds.expand(*ids.shape, -1) * torch.arange(ids.shape[1])[None, :, None]
        return grpo_loss(model(inputs_embeds=e, attention_mask=am, use_cache=False).logits, ids, am, adv, p)

    before = (replaycompile.last_stats() or {}).get("call", 0)
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        torch.compile(step, backend="replay", options={"inner": "aot_eager"})(model, embeds, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["call"] > before and not st["applied"], st
    assert "no token-id input" in st["fallback_reason"], st
    assert any("no token-id input" in r.getMessage() for r in caplog.records)


def test_per_row_layers_name_the_op_that_made_them_so(replay_graphs):
    """The analysis says why a sub-layer runs per row: the first token-mixing op it met, and for a sibling of the
    same class, that one's."""
    r = families.run_family("falcon_h1", "flat", inner="aot_eager")
    assert r["status"] == "packed" and r["recurrent_per_row"], r
    reasons = replay_graphs[-1].analysis.mixer_reasons
    assert all(reasons.get(path) for path in r["recurrent_per_row"]), reasons
    assert torch._dynamo.utils.counters["replay"][recurrent.PROBE_COUNTER] >= len(r["recurrent_per_row"])
