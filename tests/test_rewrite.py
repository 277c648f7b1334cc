"""The rewrite (passes/rewrite.py) and its contract with the runtime: the packed graph declares its extra inputs
and builds them from a batch's plan (``runtime.inputs.packed_inputs``); the packed graph run on them equals eager. Every
pass's counters (``torch._dynamo.utils.counters["replay"]``) say what it did, so a pass that silently stops
matching fails here."""

from __future__ import annotations

import pytest
import torch
from helpers import AOT, group_batch, step_loss
from torch._dynamo.utils import counters

import replaycompile
from replaycompile.testing.models import tiny_model
from replaycompile.passes.region import analyze
from replaycompile.passes.packed_graph import PLAN_INPUTS, SPLIT_INPUTS, LayoutInputs
from replaycompile.passes.rewrite import choose_blocks, rewrite
from replaycompile.runtime.inputs import lm_head_rows, packed_inputs, without_lm_head
from replaycompile.passes.sink_slices import sink_slices
from replaycompile.runtime.plan import build_plan, split_shared

LAYERS = 2


def _captured_step(model, ids, am, adv, p):
    """The Dynamo graph of the GRPO step (model + loss) and its example inputs, as the backend receives them."""
    graphs = []

    def grab(gm, example_inputs):
        graphs.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    torch.compile(lambda i, m: step_loss(model, i, m, adv, p), backend=grab)(ids, am)
    (gm, inputs), = graphs
    return gm, inputs


def _args(gm, inputs, ids, am):
    """The graph's real inputs for (ids, am): the captured ones, with the token inputs replaced."""
    a = analyze(gm)
    pos = {n: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
    args = list(inputs)
    args[pos[a.ids]] = ids
    args[pos[a.attention_mask]] = am
    return a, args


@pytest.mark.parametrize("detach_prefix", [False, True], ids=["exact", "detach_prefix"])
@pytest.mark.parametrize("chunked", [False, True], ids=["plain_head", "chunked_head"])
def test_packed_graph_runs_on_the_inputs_it_declares(detach_prefix, chunked):
    """``runtime.inputs.packed_inputs(packed, args, plan, split)`` gives exactly the placeholders the packed graph added, in its
    order, and the packed graph run on them gives eager's loss (exact mode: and its gradients)."""
    model = tiny_model("qwen3", num_hidden_layers=LAYERS)
    ids, am, adv, p = group_batch(prompt_len=12)
    gm, inputs = _captured_step(model, ids, am, adv, p)
    counters.clear()
    assert sink_slices(gm) >= 1  # the loss's logits[:, p-1:-1] moves before the LM head
    assert counters["replay"]["slices_sunk"] >= 1
    a, args = _args(gm, inputs, ids, am)
    assert a.reason is None, a.reason
    packed = rewrite(gm, a, detach_prefix=detach_prefix, chunked_lm_head=chunked)
    assert packed.blocks is None  # the PyTorch path on CPU: no block layout among the inputs
    ph = [n for n in packed.gm.graph.nodes if n.op == "placeholder"]
    n_orig = len(args)
    assert [n.name for n in ph[:n_orig]] == [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    names = SPLIT_INPUTS if detach_prefix else PLAN_INPUTS
    assert [n.name for n in ph[n_orig:n_orig + len(names)]] == [f"rc_{x}" for x in names]
    assert packed.lm_head_sites == (1 if chunked else 0)

    plan = build_plan(ids, am)
    split = split_shared(plan) if detach_prefix else None
    extra, _ = packed_inputs(packed, args, plan, split)
    assert len(extra) == len(ph) - n_orig
    assert all(isinstance(x, torch.Tensor) and x.dtype == torch.int64 for x in extra)
    if chunked:
        # the unique rows the pairs read: the shared last prompt row once, then each row's own; exact mode
        # leaves out the positions the loss weighs by zero (those predicting a pad: passes/loss_weights.py)
        b = ids.shape[0]
        predicting = am[:, p:] if not detach_prefix else am[:, p - 1:-1]
        assert lm_head_rows(packed, extra) == int(predicting.sum()) - (b - 1)
        assert len(without_lm_head(packed, extra)) == len(extra) - 3 * (2 if detach_prefix else 1)
    else:
        assert lm_head_rows(packed, extra) == 0 and without_lm_head(packed, extra) == extra

    model.zero_grad()
    ref = step_loss(model, ids, am, adv, p)
    ref.backward()
    ref_grads = {k: v.grad.clone() for k, v in model.named_parameters()}
    model.zero_grad()
    (got,) = packed.gm(*args, *extra)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)
    if not detach_prefix:
        got.backward()
        for k, v in model.named_parameters():
            torch.testing.assert_close(v.grad, ref_grads[k], rtol=1e-4, atol=1e-6, msg=k)


def test_rewrite_counters_say_what_the_packed_graph_holds():
    """One packed graph of a 2-layer model's GRPO step: an attention per layer rewritten, the loss's vocabulary
    gather read off the packed logits (no [B, T, V] replay), the loss's slice packed again; with the chunked LM
    head the gather is a chunked_logprobs call instead."""
    model = tiny_model("qwen3", num_hidden_layers=LAYERS)
    ids, am, adv, p = group_batch(prompt_len=12)
    gm, inputs = _captured_step(model, ids, am, adv, p)
    sink_slices(gm)
    a, _ = _args(gm, inputs, ids, am)
    counters.clear()
    rewrite(gm, a, chunked_lm_head=False)
    c = dict(counters["replay"])
    assert c["packed_graphs"] == 1
    assert c["attention_sites_rewritten"] == LAYERS
    assert c["vocab_gathers"] == 1 and c.get("lm_head_chunked_sites", 0) == 0
    assert c["sequence_slices_repacked"] == 1
    assert c["token_inputs_packed"] >= 1  # ids, and the positional tables (rotary cos/sin) by column
    counters.clear()
    rewrite(gm, a, chunked_lm_head=True)
    c = dict(counters["replay"])
    assert c["lm_head_chunked_sites"] == 1 and c.get("vocab_gathers", 0) == 0
    counters.clear()
    rewrite(gm, a, detach_prefix=True, chunked_lm_head=False)
    # two streams: the shared tokens' attention and the branch tokens' attention per layer
    assert counters["replay"]["attention_sites_rewritten"] == 2 * LAYERS


def test_block_sizes_are_chosen_in_the_rewrite():
    """The Triton layout's block sizes come from the rewrite (``choose_blocks``), never from the runtime: none
    on CPU under "auto", the kernels' defaults for the device under "triton", none under "torch"."""
    from replaycompile.kernels.block_sparse_attention import default_blocks

    model = tiny_model("qwen3", num_hidden_layers=1)
    ids, am, adv, p = group_batch()
    gm, inputs = _captured_step(model, ids, am, adv, p)
    a, _ = _args(gm, inputs, ids, am)
    head_dim = model.config.head_dim
    assert choose_blocks(a, "auto", "cpu") is None
    assert choose_blocks(a, "torch", "cuda") is None
    assert choose_blocks(a, "triton", "cpu") == default_blocks(head_dim, torch.float32, "cpu")
    packed = rewrite(gm, a, attention="triton", device="cpu", chunked_lm_head=False)
    assert packed.blocks == default_blocks(head_dim, torch.float32, "cpu")
    assert any(isinstance(x, LayoutInputs) for x in packed.extra_inputs)
    plan = build_plan(ids, am)
    assert len(a.slices) == 1  # the loss's logits[:, p-1:-1]
    assert len(packed_inputs(packed, inputs, plan)[0]) == len(PLAN_INPUTS) + 6 + 2  # the plan, the layout, the slice's two


def test_backend_counts_every_pass_of_a_step():
    """Through torch.compile: the analysis accepts the graph, the rewrite builds the plain and the chunked
    packed graphs, the mask is verified once; a declined graph is counted by its reason."""
    model = tiny_model("qwen3", num_hidden_layers=1)
    ids, am, adv, p = group_batch()
    counters.clear()
    step = torch.compile(lambda i, m: step_loss(model, i, m, adv, p), backend="replay", options=AOT)
    loss = step(ids, am)
    assert replaycompile.last_stats()["applied"], replaycompile.last_stats()
    torch.testing.assert_close(loss, step_loss(model, ids, am, adv, p), rtol=1e-5, atol=1e-6)
    c = counters["replay"]
    assert c["graphs_packable"] == 1 and c["slices_sunk"] >= 1 and c["masks_verified"] == 1
    assert c["packed_graphs"] == 2  # lm_head="auto": the plain and the chunked LM head, chosen per call
    assert c["attention_sites_rewritten"] == 2  # one layer, in each of the two packed graphs
    assert not counters["replay_declines"]

    counters.clear()
    torch._dynamo.reset()
    model.train()
    model.config.attention_dropout = 0.5
    for layer in model.model.layers:
        layer.self_attn.attention_dropout = 0.5
    out = torch.compile(lambda i, m: model(input_ids=i, attention_mask=m, use_cache=False).logits,
                        backend="replay", options=AOT)(ids, am)
    assert out.shape == (*ids.shape, model.config.vocab_size)
    assert counters["replay"]["graphs_declined"] == 1 and counters["replay"].get("packed_graphs", 0) == 0
    (reason,) = counters["replay_declines"]
    assert "dropout" in reason, reason
