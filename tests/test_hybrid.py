"""Hybrid models (HF Qwen3-Next: Gated DeltaNet layers interleaved with attention). A Gated DeltaNet layer's
recurrent state (and its short causal conv1d) carries every earlier token of the row; the packed layout does not
scan a state along the prefix tree yet, so such a model is declined with a reason that names the layer, and the
step runs unpacked: loss and every gradient equal eager's.

The compiled steps here use inner="eager": torch's aot_eager (and so the backend's unpacked path under it) fails
on Qwen3-Next's backward in torch 2.13 ("view size is not compatible with input tensor's size and stride", a
`view` of the `cat` of the split q/k/v/z gradients), with or without this backend."""

from __future__ import annotations

import pytest
import torch
from helpers import AOT, assert_same_step, group_batch, run, step_loss
from test_detach_prefix import tree_batch

import replaycompile
from replaycompile.models import tiny_model

EAGER_INNER = {**AOT, "inner": "eager"}


def _compiled_step(model, batch):
    ref = run(step_loss, model, *batch)
    got = run(torch.compile(step_loss, backend="replay", options=EAGER_INNER), model, *batch)
    return ref, got, replaycompile.last_stats()


@pytest.mark.parametrize("layer_types, layer", [
    (["linear_attention", "full_attention"], "model.layers.0.linear_attn"),
    pytest.param(["full_attention", "linear_attention"], "model.layers.1.linear_attn", marks=pytest.mark.slow),
])
def test_qwen3_next_group_is_declined_naming_the_gated_deltanet_layer(layer_types, layer):
    """G rows sharing a prompt: declined, the reason names the Gated DeltaNet layer (its module path and class)
    rather than the first op inside it; the unpacked step equals eager's. With attention before the recurrent
    layer too: the recurrent layer is what stops the packing."""
    model = tiny_model("qwen3_next", layer_types=layer_types, mlp_only_layers=[0, 1])  # dense MLPs: a smaller graph
    ref, got, st = _compiled_step(model, group_batch(lens=(6, 2, 6, 5, 1)))
    assert not st["applied"], st
    reason = st["fallback_reason"]
    assert reason.startswith(f"Gated DeltaNet (linear attention) layer `{layer}` (Qwen3NextGatedDeltaNet)"), reason
    assert "recurrent state" in reason and "at node" in reason, reason
    assert_same_step(ref, got)


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["sdpa", "eager"])
def test_qwen3_next_two_level_tree_is_declined_and_exact(impl):
    """Rows prompt + stem + tail (two branch levels), both attention implementations: declined naming the first
    Gated DeltaNet layer; loss and every gradient (the DeltaNet's conv, decay and gate weights included) equal
    eager's."""
    model = tiny_model("qwen3_next", impl)
    ref, got, st = _compiled_step(model, tree_batch())
    assert not st["applied"] and "`model.layers.0.linear_attn`" in st["fallback_reason"], st
    assert {k for k in ref[1] if "linear_attn" in k} >= {"model.layers.0.linear_attn.conv1d.weight",
                                                           "model.layers.0.linear_attn.A_log",
                                                           "model.layers.0.linear_attn.dt_bias"}
    assert_same_step(ref, got)
