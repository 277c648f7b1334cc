"""The chunked LM head wired into the packed graph: ``log_softmax(linear(h)).gather(targets)`` becomes one
``replaycompile::chunked_logprobs`` over the (packed row, target) pairs, never holding [M, V] logits."""

from __future__ import annotations

import pytest
import torch
from helpers import AOT, assert_same_step, group_batch, grpo_loss, run, step_loss
from test_detach_prefix import detached_step, tree_batch

import replaycompile
import replaycompile.backend as backend
from replaycompile.testing.models import tiny_model

CHUNKED = {**AOT, "lm_head": "chunked"}


def _packed_ops(replay_graphs) -> set:
    return {str(n.target) for g in replay_graphs if g.packed_chunked is not None
            for n in g.packed_chunked.gm.graph.nodes if n.op == "call_function"}


@pytest.mark.parametrize("family", ["qwen3", "llama"])
def test_chunked_lm_head_step_is_exact(family, replay_graphs, monkeypatch):
    """Loss and every gradient equal eager's (fp32, rel 1e-5) with the LM head run in chunks of 8 rows
    (ragged last chunk) over the pairs, the last prompt row read once per branch with its own target."""
    monkeypatch.setattr("replaycompile.passes.fuse_lm_head.LM_HEAD_CHUNK_BUFFER_BYTES", 8 * 4 * 128)   # 8 rows of V=128
    model = tiny_model(family)
    ids, am, adv, p = group_batch(lens=(6, 2, 6, 5, 1))
    ref = run(step_loss, model, ids, am, adv, p)
    got = run(torch.compile(step_loss, backend="replay", options=CHUNKED), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["lm_head_chunked"] == 1, st
    assert_same_step(ref, got)
    ops = _packed_ops(replay_graphs)
    assert "replaycompile.chunked_pair_logprobs.default" in ops
    assert not any("log_softmax" in o for o in ops), "the unfused log-softmax must be gone from the packed graph"
    chunk = next(n.args[5] for g in replay_graphs for n in g.packed_chunked.gm.graph.nodes
                 if str(n.target) == "replaycompile.chunked_pair_logprobs.default")
    pairs = int(am[:, p:].sum())
    assert chunk == 8 and pairs % chunk, "several chunks, the last one ragged"


def test_chunked_lm_head_under_detach_prefix_equals_the_spec():
    model = tiny_model("qwen3")
    ids, am, adv, p = tree_batch()
    ref = run(detached_step, model, ids, am, adv, p)
    got = run(torch.compile(step_loss, backend="replay", options={**CHUNKED, "mode": "detach_prefix"}),
              model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["lm_head_chunked"] == 1 and st["shared_no_grad"] == 14, st
    assert_same_step(ref, got)


def test_auto_chunks_only_large_logits(monkeypatch):
    """lm_head="auto" (the default) keeps the unfused LM head below LM_HEAD_AUTO_THRESHOLD_BYTES of float32 logits at
    the predicting rows and takes the chunked one at or above it; both exact."""
    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch()
    ref = run(step_loss, model, ids, am, adv, p)
    step = torch.compile(step_loss, backend="replay", options=AOT)
    assert_same_step(ref, run(step, model, ids, am, adv, p))
    st = replaycompile.last_stats()
    assert st["lm_head_chunked"] == 0
    rows = st["lm_head_rows"]            # the unique rows the head computes, fewer than the (row, target) pairs
    assert 0 < rows < int(am[:, p:].sum())
    monkeypatch.setattr(backend, "LM_HEAD_AUTO_THRESHOLD_BYTES", rows * 128 * 4 + 4)   # just above: still plain
    assert_same_step(ref, run(step, model, ids, am, adv, p))
    assert replaycompile.last_stats()["lm_head_chunked"] == 0
    monkeypatch.setattr(backend, "LM_HEAD_AUTO_THRESHOLD_BYTES", rows * 128 * 4)       # reached: chunked
    assert_same_step(ref, run(step, model, ids, am, adv, p))
    assert replaycompile.last_stats()["lm_head_chunked"] == 1


def test_logits_used_otherwise_keep_the_unfused_head():
    """A loss that also reads the logits (an entropy bonus from the full distribution) keeps the present path,
    exactly."""
    def loss_with_entropy(model, ids, am, adv, p):
        logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
        lp = logits[:, p - 1:-1].float().log_softmax(-1)
        ent = -(lp.exp() * lp).sum(-1)
        return grpo_loss(logits, ids, am, adv, p) - 0.01 * (ent * am[:, p:]).sum() / am[:, p:].sum()

    model = tiny_model("qwen3")
    ids, am, adv, p = group_batch()
    ref = run(loss_with_entropy, model, ids, am, adv, p)
    got = run(torch.compile(loss_with_entropy, backend="replay", options=CHUNKED), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"], st
    assert_same_step(ref, got)
