"""The last layer runs its queries, attention output and MLP only at the tokens the loss reads
(passes/selected_tokens.py): exact, fired where the loss slices the logits, and not where the last layer's output
is read at every token."""

from __future__ import annotations

import pytest
import torch
from helpers import AOT, assert_same_step, group_batch, grpo_loss, run, step_loss
from torch._dynamo.utils import counters

import replaycompile
from replaycompile.testing.models import tiny_model


def _keep_step(model, ids, am, adv, p):
    """TRL's form: ``logits_to_keep`` (the LM head's own slice of the hidden states)."""
    c = ids.shape[1] - p
    logits = model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=c + 1).logits
    full = torch.cat([logits.new_zeros(ids.shape[0], p - 1, logits.shape[-1]), logits], 1)
    return grpo_loss(full, ids, am, adv, p)


@pytest.mark.parametrize("family,step", [("qwen3", step_loss), ("llama", _keep_step)])
def test_last_layer_queries_run_at_the_loss_tokens(family, step):
    """The loss reads the logits at the completion positions: the last layer's attention takes queries there only
    (one site per step), every value after it too, and loss and gradients equal eager's in float64."""
    model = tiny_model(family).double()
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5, 1))
    ref = run(step, model, ids, am, adv.double(), p)
    before = counters["replay"]["attention_queries_selected"]
    got = run(torch.compile(step, backend="replay", options=AOT), model, ids, am, adv.double(), p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["queries_selected"] == 1 and st["selected_only_values"] > 10, st
    assert counters["replay"]["attention_queries_selected"] - before >= 1  # per packed graph built
    assert_same_step(ref, got, rtol=1e-6)  # the loss takes float32 log-softmax


def test_a_query_chunked_with_its_gate_runs_at_the_loss_tokens():
    """Qwen3-Next's attention chunks one projection into query and output gate (a tuple): with eager attention the
    gate is read at the selected tokens while the chunk is not, so the search leaves the gate on every token (it
    once index-selected the tuple, and the packed graph failed to compile) and still prunes the rest, exactly.
    Float32: transformers' eager Qwen3-Next attention returns NaN on a padded float64 batch."""
    model = tiny_model("qwen3_next", "eager", layer_types=["full_attention"] * 2, mlp_only_layers=[0, 1])
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5, 1))
    ref = run(step_loss, model, ids, am, adv, p)
    got = run(torch.compile(step_loss, backend="replay", options=AOT), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["queries_selected"] == 1 and st["selected_only_values"] > 10, st
    assert_same_step(ref, got)


def test_values_read_at_every_token_stay_on_every_token():
    """The loss also reads the final hidden states at every position: nothing of the last layer may be dropped,
    and the step is still exact."""
    model = tiny_model("qwen3").double()
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5, 1))

    def step(model, ids, am, adv, p):
        out = model(input_ids=ids, attention_mask=am, use_cache=False, output_hidden_states=True)
        h = out.hidden_states[-1]
        return grpo_loss(out.logits, ids, am, adv, p) + 1e-2 * (h.pow(2).mean(-1) * am).sum() / am.sum()

    ref = run(step, model, ids, am, adv.double(), p)
    got = run(torch.compile(step, backend="replay", options=AOT), model, ids, am, adv.double(), p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["queries_selected"] == 0 and st["selected_only_values"] == 0, st
    assert_same_step(ref, got, rtol=1e-6)  # the loss takes float32 log-softmax


def test_detach_prefix_keeps_its_own_layout():
    """detach_prefix's two streams run every token (the option is documented as exact mode only)."""
    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5, 1))
    run(torch.compile(step_loss, backend="replay", options={**AOT, "mode": "detach_prefix"}), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["queries_selected"] == 0, st
