"""detach_prefix (LongStraw's approximation): the shared tokens run without autograd, the branches with it.

The spec is a hand-written eager computation: each row's shared part (the tokens two or more rows hold) runs
under ``torch.no_grad`` and hands its KV cache to the row's own tokens, which run with autograd; the shared
positions' logits are constants. The backend must equal it, and save nothing for the shared tokens but the
keys and values later tokens read.
"""

from __future__ import annotations

import copy
import inspect

import pytest
import torch
from torch._subclasses.fake_tensor import is_fake
from helpers import AOT, assert_same_step, grpo_loss, prefix_keys, run, step_loss

import replaycompile
from replaycompile.testing.models import tiny_model
from replaycompile.testing.steps import tree_batch  # noqa: F401 - other test files import it from here
from replaycompile.runtime.plan import build_plan, split_shared

DETACH = {**AOT, "mode": "detach_prefix"}


def shared_lengths(ids, am) -> list[int]:
    """Per row, how many leading tokens two or more rows hold (independent of replaycompile.runtime.plan)."""
    keys, mask = prefix_keys(ids, am, None)
    count: dict = {}
    for b in range(len(keys)):
        for t in range(len(keys[b])):
            if mask[b][t]:
                count[keys[b][t]] = count.get(keys[b][t], 0) + 1
    return [sum(1 for t in range(len(keys[b])) if mask[b][t] and count[keys[b][t]] >= 2) for b in range(len(keys))]


def detached_step(model, ids, am, adv, p):
    """The spec: per row, the shared part under no_grad (logits kept as constants, KV cache handed on), then
    the row's own tokens with autograd against that cache."""
    rows = []
    for b, s in enumerate(shared_lengths(ids, am)):
        n = int(am[b].sum())
        with torch.no_grad():
            pre = model(input_ids=ids[b:b + 1, :s], use_cache=True)
        # the cache by position: its keyword and output field are ``cache`` from transformers 5.24, earlier
        # ``past_key_values``
        key = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        own = model(input_ids=ids[b:b + 1, s:n], **{key: copy.deepcopy(getattr(pre, key))},
                    position_ids=torch.arange(s, n)[None], use_cache=True)
        logits = torch.cat([pre.logits[0], own.logits[0]])
        rows.append(torch.cat([logits, logits.new_zeros(ids.shape[1] - n, logits.shape[1])]))
    return grpo_loss(torch.stack(rows), ids, am, adv, p)


@pytest.mark.parametrize("batch", ["group", "tree"])
def test_detach_prefix_equals_the_hand_written_detached_step(batch):
    """Loss and every parameter gradient equal the hand-written computation (fp32, relative 1e-5); the shared
    tokens really are the prompt (and stems), and the step was packed."""
    model = tiny_model("qwen3")
    if batch == "group":
        ids, am, adv, p = tree_batch(stems=((0, (5, 3, 6, 4)),))   # no stems: G=4 rows of one prompt
        n_shared = 9
    else:
        ids, am, adv, p = tree_batch()
        n_shared = 9 + 2 + 3                                        # the prompt and both stems
    ref = run(detached_step, model, ids, am, adv, p)
    got = run(torch.compile(step_loss, backend="replay", options=DETACH), model, ids, am, adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["mode"] == "detach_prefix", st
    assert st["shared_no_grad"] == n_shared and st["shared_chunks"] == 1, st
    assert_same_step(ref, got)
    exact = run(step_loss, model, ids, am, adv, p)
    assert max(((got[1][k] - exact[1][k]).norm() / exact[1][k].norm()).item() for k in exact[1]) > 1e-3, \
        "detach_prefix must differ from exact (else the test cannot tell them apart)"


@pytest.mark.parametrize("batch", ["group", "tree"])
def test_shared_stream_in_chunks_equals_the_spec(batch):
    """shared_chunks=3: the shared tokens' per-token ops run on three chunks of them (each stretch between two
    attentions), with the same loss and gradients as the hand-written detached step; the pass fired."""
    model = tiny_model("qwen3")
    ids, am, adv, p = tree_batch(stems=((0, (5, 3, 6, 4)),)) if batch == "group" else tree_batch()
    ref = run(detached_step, model, ids, am, adv, p)
    torch._dynamo.utils.counters.clear()
    got = run(torch.compile(step_loss, backend="replay", options={**DETACH, "shared_chunks": 3}), model, ids, am,
              adv, p)
    st = replaycompile.last_stats()
    assert st["applied"] and st["shared_chunks"] == 3, st
    # embedding to the first attention, one per layer after it: three stretches in each of the two packed graphs
    assert torch._dynamo.utils.counters["replay"]["shared_stream_stretches_chunked"] == 2 * (1 + 2), \
        dict(torch._dynamo.utils.counters["replay"])
    assert_same_step(ref, got)


def test_shared_chunks_follow_the_traced_batch():
    """"auto" chunks the shared stream by the traced batch's size: whole for a short batch, more chunks as the
    shared tokens grow, never more than MAX_SHARED_CHUNKS; the option is validated."""
    from types import SimpleNamespace

    import torch.fx as fx
    from replaycompile.passes.shared_chunks import MAX_SHARED_CHUNKS, SHARED_CHUNK_BYTES, shared_stream_chunks

    def chunks(rows, cols, width, world=1):
        g = fx.Graph()
        ids, mlp = g.placeholder("ids"), g.placeholder("mlp")
        ids.meta["val"] = torch.empty(rows, cols, dtype=torch.long, device="meta")
        mlp.meta["val"] = torch.empty(rows, cols, width, device="meta")
        return shared_stream_chunks(SimpleNamespace(ids=ids), [[mlp]], world)

    assert chunks(8, 128, 3072) == 1
    # 8 x 8192 positions, half of them shared, 12 KiB each: 384 MiB -> 6 chunks of 64 MiB; on 2 ranks 3
    assert SHARED_CHUNK_BYTES == 64 << 20
    assert chunks(8, 8192, 3072) == 6 and chunks(8, 8192, 3072, world=2) == 3
    assert chunks(8, 102400, 3072) == MAX_SHARED_CHUNKS
    with pytest.raises(ValueError, match="shared_chunks"):
        replaycompile.parse_options({"shared_chunks": 0})
    assert replaycompile.parse_options({"shared_chunks": 4}).shared_chunks == 4


def test_a_longer_batch_than_the_chunks_were_chosen_for_is_warned(monkeypatch, caplog):
    """The chunk count is fixed at compile time; a call whose chunks come out 4x SHARED_CHUNK_BYTES or more says so
    once, naming the option that bounds them (here the bound is lowered instead of the batch lengthened)."""
    import replaycompile.passes.shared_chunks as rw

    model = tiny_model("qwen3")
    ids, am, adv, p = tree_batch(stems=((0, (5, 3, 6, 4)),))
    step = torch.compile(step_loss, backend="replay", options=DETACH)
    run(step, model, ids, am, adv, p)
    assert replaycompile.last_stats()["shared_chunks"] == 1
    assert "shared_chunks" not in caplog.text
    monkeypatch.setattr(rw, "SHARED_CHUNK_BYTES", 64)
    with caplog.at_level("WARNING", logger="replaycompile"):
        run(step, model, ids, am, adv, p)
        run(step, model, ids, am, adv, p)
    assert caplog.text.count("options={'shared_chunks': ") == 1, caplog.text


def _saved_bytes(fn, model, *args) -> int:
    """Bytes of the tensors autograd saves for the backward, parameters (saved by reference) not counted."""
    params = {q.untyped_storage().data_ptr() for q in model.parameters()}
    total = [0]

    def pack(t):
        if is_fake(t) or torch._is_functional_tensor(t):
            return t  # tracing: the compile runs under the hooks too
        if t.untyped_storage().data_ptr() not in params:
            total[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = fn(model, *args)
    loss.backward()
    return total[0]


def test_shared_chunks_save_no_more_than_the_whole_stream():
    """Chunking the shared stream changes what is transient, never what autograd keeps: the step saves exactly the
    bytes of the unchunked one (the GQA keys and values before repeat_kv, not the repeated copies joined from the
    chunks, which once doubled the saved K/V of this 2-of-4-head model)."""
    model = tiny_model("qwen3")
    assert model.config.num_key_value_heads < model.config.num_attention_heads
    ids, am, adv, p = tree_batch(prompt_len=40, stems=((0, (5, 3, 6, 4)),))
    saved = {}
    for k in (1, 3):
        torch._dynamo.reset()
        step = torch.compile(step_loss, backend="replay", options={**DETACH, "shared_chunks": k})
        saved[k] = _saved_bytes(step, model, ids, am, adv, p)
        assert replaycompile.last_stats()["shared_chunks"] == k
    assert saved[3] == saved[1], saved


@pytest.mark.slow
def test_detach_prefix_saves_only_the_shared_keys_and_values():
    """Autograd keeps nothing for the shared tokens but each layer's keys and values: with a long prompt and
    short completions the step saves under a quarter of what exact saves, and at least those K/V."""
    model = tiny_model("qwen3")
    ids, am, adv, p = tree_batch(prompt_len=200, stems=((0, (5, 3, 6, 4)),))
    exact = _saved_bytes(torch.compile(step_loss, backend="replay", options=AOT), model, ids, am, adv, p)
    assert replaycompile.last_stats()["applied"]
    torch._dynamo.reset()
    detach = _saved_bytes(torch.compile(step_loss, backend="replay", options=DETACH), model, ids, am, adv, p)
    assert replaycompile.last_stats()["applied"]
    cfg = model.config
    kv_shared = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * 200 * 4
    assert kv_shared <= detach < exact / 4, (detach, exact, kv_shared)


def test_split_shared_visibility_is_the_tree():
    """The two CSRs of the shared-first split see exactly the ancestors the plan's subtree_end says."""
    ids, am, _, _ = tree_batch()
    plan = build_plan(ids, am)
    split = split_shared(plan)
    n, n_s = plan.num_packed, split.num_shared
    idx = torch.arange(n)
    old_vis = (idx[None, :] <= idx[:, None]) & (idx[:, None] < plan.subtree_end[None, :])
    # old index of each new position
    new_of = split.scatter_index.reshape(-1)
    old_of = torch.empty(n, dtype=torch.long)
    flat_old = plan.scatter_index.reshape(-1)
    real = flat_old < n
    old_of[new_of[real]] = flat_old[real]
    want = old_vis[old_of][:, old_of]
    got = torch.zeros(n, n, dtype=torch.bool)
    for seg_q, ptr, ranges, q0 in ((split.seg_q_s, split.seg_kv_ptr_s, split.kv_ranges_s, 0),
                                   (split.seg_q_r, split.seg_kv_ptr_r, split.kv_ranges_r, n_s)):
        for s, (qs, qe) in enumerate(seg_q.tolist()):
            rs = ranges[ptr[s]:ptr[s + 1]].tolist()
            for q in range(qs, qe):
                for a, b in rs[:-1]:
                    got[q0 + q, a:b] = True
                got[q0 + q, rs[-1][0]:q0 + q + 1] = True
    assert torch.equal(got, want)
    se = torch.arange(n_s)
    vis_s = (se[None, :] <= se[:, None]) & (se[:, None] < split.subtree_end_s[None, :])
    assert torch.equal(vis_s, want[:n_s, :n_s])
    assert torch.equal(split.gather_s, plan.gather_index[old_of[:n_s]])
    assert torch.equal(split.gather_r, plan.gather_index[old_of[n_s:]])
