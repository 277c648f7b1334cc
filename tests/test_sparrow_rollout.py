"""Rollouts (replaycompile/sparrow/rollout.py): sampling, dense and Sparrow decode steps through the backend and its
rewrite (passes/sparrow_rewrite.py), the session's cache."""

from __future__ import annotations

import logging

import pytest
import torch

import replaycompile
import replaycompile.sparrow.graph as sparrow_graph
from helpers import instances_of
from replaycompile import stats
from replaycompile.sparrow import rollout
from replaycompile.testing.models import tiny_model
from replaycompile.sparrow.retrieval import recall_sequences, retrieval_model
from replaycompile.sparrow.schedule import SparrowSchedule


def test_top_p_truncates_by_hand():
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05])
    logits = probs.log().expand(4000, 4)
    for top_p, kept in ((0.75, 2), (0.85, 3), (1.0, 4)):
        tok, lp = rollout._sample(logits, 1.0, top_p, torch.Generator().manual_seed(0))
        counts = torch.bincount(tok, minlength=4)
        # the smallest prefix whose mass reaches top_p, renormalised; nothing outside it
        assert bool((counts[:kept] > 0).all()) and int(counts[kept:].sum()) == 0, (top_p, counts)
        freq = counts[:kept].double() / tok.numel()
        torch.testing.assert_close(freq, (probs[:kept] / probs[:kept].sum()).double(), atol=0.03, rtol=0)
        # the log-prob is that of the untruncated distribution (documented on Rollout)
        torch.testing.assert_close(lp, probs.log()[tok])
    # temperature first, then truncation: at T = 0.5 the top two tokens hold 93% of the mass
    tok, _ = rollout._sample(logits, 0.5, 0.9, torch.Generator().manual_seed(0))
    assert set(tok.tolist()) == {0, 1}


@pytest.fixture
def sparrow_graphs(monkeypatch):
    return instances_of(monkeypatch, sparrow_graph.SparrowGraph)


def _prompts(b=3, t=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(6, 128, (b, t), generator=g)
    am = torch.ones(b, t, dtype=torch.long)
    am[1, :7] = 0
    am[2, :20] = 0
    ids[am == 0] = 0
    return ids, am


@pytest.mark.parametrize("family", ["qwen3", "llama"])
def test_greedy_dense_rollout_equals_hf_generate(family):
    model = tiny_model(family, "sdpa")
    model.generation_config.eos_token_id = 5
    ids, am = _prompts()
    r = rollout.generate(model, ids, am, max_new_tokens=24, temperature=0, pad_token_id=0)
    hf = model.generate(input_ids=ids, attention_mask=am, do_sample=False, max_new_tokens=24, pad_token_id=0)
    assert torch.equal(r.sequences[:, :hf.shape[1]], hf)
    # log-probs are those of a dense forward over the result
    full = model(input_ids=r.sequences, attention_mask=torch.cat([am, r.completion_mask], 1)).logits
    lp = full[:, 39:-1].float().log_softmax(-1).gather(-1, r.completions[..., None]).squeeze(-1)
    m = r.completion_mask.bool()
    torch.testing.assert_close(r.logprobs[m], lp[m], rtol=1e-4, atol=1e-4)


def test_eos_stops_and_masks():
    model = tiny_model("qwen3", "sdpa")
    ids, am = _prompts()
    first = rollout.generate(model, ids, am, max_new_tokens=1, temperature=0).completions[:, 0]
    model.generation_config.eos_token_id = int(first[0])  # row 0 stops at once
    r = rollout.generate(model, ids, am, max_new_tokens=6, temperature=0, pad_token_id=0)
    assert r.completion_mask[0].tolist() == [1, 0, 0, 0, 0, 0]
    assert r.completions[0, 1:].tolist() == [0] * 5 and bool((r.logprobs[0, 1:] == 0).all())


def test_seeded_sampling_is_reproducible():
    model = tiny_model("llama", "sdpa")
    ids, am = _prompts()
    a = rollout.generate(model, ids, am, max_new_tokens=12, top_p=0.9, temperature=0.8,
                         generator=torch.Generator().manual_seed(5))
    b = rollout.generate(model, ids, am, max_new_tokens=12, top_p=0.9, temperature=0.8,
                         generator=torch.Generator().manual_seed(5))
    c = rollout.generate(model, ids, am, max_new_tokens=12, top_p=0.9, temperature=0.8,
                         generator=torch.Generator().manual_seed(6))
    assert torch.equal(a.sequences, b.sequences) and torch.equal(a.logprobs, b.logprobs)
    assert not torch.equal(a.sequences, c.sequences)


def test_prompts_must_be_left_padded():
    model = tiny_model("llama", "sdpa")
    ids, am = _prompts()
    am[0, -1] = 0
    with pytest.raises(ValueError, match="left-padded.*row 0"):
        rollout.generate(model, ids, am, max_new_tokens=2)


def test_full_budget_rollout_equals_dense_and_prefill_stays_dense(sparrow_graphs):
    from torch._dynamo.utils import counters

    model = tiny_model("qwen3", "sdpa", num_hidden_layers=3)
    ids, am = _prompts(t=70)
    counters.clear()
    dense = rollout.generate(model, ids, am, max_new_tokens=20, temperature=0, return_logits=True)
    full = rollout.generate(model, ids, am, max_new_tokens=20, temperature=0, return_logits=True,
                            schedule=SparrowSchedule.dense(dense_layers=(0,)))
    assert torch.equal(full.sequences, dense.sequences)
    torch.testing.assert_close(full.logits, dense.logits, rtol=1e-4, atol=1e-4)
    st = replaycompile.last_stats()
    assert st["mode"] == "sparrow" and st["applied"] and st["sparse_layers"] == [1, 2] and st["dense_layers"] == [0]
    assert st["cache_copied"] is False  # the session sizes its cache in whole pages
    # with a budget that really drops pages, the decoded tokens change but the prompt's logits (prefill) do not
    with sparrow_graph.SparseSteps() as ran:
        sparse = rollout.generate(model, ids, am, max_new_tokens=20, temperature=0, return_logits=True,
                                  schedule=SparrowSchedule.fixed(0, dense_layers=(0,)))
    assert ran.steps == 19  # every decode step after the prefill's token ran through the rewritten graph
    # (compiled vs eager prefill: 1e-5 failed one run in five on the 2-core CPU, 3.4e-5 apart; decode's changes
    # are above 1e-3)
    torch.testing.assert_close(sparse.logits[:, 0], dense.logits[:, 0], rtol=1e-4, atol=1e-4)
    assert (sparse.logits[:, 1:] - dense.logits[:, 1:]).abs().max() > 1e-3
    assert [g.info is not None for g in sparrow_graphs] == [True, True]  # the decode steps only
    # the pass's counters: each decode graph's 3 attentions rewritten, 2 of them sparse (layer 0 stays dense)
    assert counters["replay"]["sparrow_sites"] == 6 and counters["replay"]["sparrow_sites_sparse"] == 4


def test_other_graphs_compile_unchanged_with_a_schedule(sparrow_graphs, caplog):
    """With a schedule, a prefill (several queries per row) and a training forward go through the backend and
    are compiled as they are: equal to eager, left dense with the reason in ``last_stats()``, and no warning
    (they are not decode steps)."""
    model = tiny_model("qwen3", "sdpa", num_hidden_layers=3)
    ids, am = _prompts(t=24)
    compiled = torch.compile(model, backend="replay", options={"schedule": SparrowSchedule.fixed(0), "inner": "eager"})
    stats.record(stats.GraphStats(applied=True, mode="stale"))  # a previous call's stats must not survive
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        with torch.no_grad():
            got = compiled(input_ids=ids, attention_mask=am).logits
            want = model(input_ids=ids, attention_mask=am).logits
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
        st = replaycompile.last_stats()
        assert st["mode"] == "sparrow" and st["applied"] is False and "not one token per row" in st["fallback_reason"]
        compiled(input_ids=ids, attention_mask=am).logits.square().mean().backward()
        got_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        model.zero_grad()
        model(input_ids=ids, attention_mask=am).logits.square().mean().backward()
    for n, p in model.named_parameters():
        torch.testing.assert_close(got_grads[n], p.grad, rtol=1e-5, atol=1e-7)
    assert len(sparrow_graphs) == 2 and all(g.info is None for g in sparrow_graphs)
    assert all("not one token per row" in g.reason for g in sparrow_graphs)
    assert not caplog.records, caplog.text


def test_a_decode_step_left_dense_warns_once_and_says_so_in_stats(monkeypatch, caplog):
    """A one-token-per-row attention the rewrite refuses (here: no mask, so no static cache) runs dense: a
    warning once per reason, and every call's stats say it was not applied and why."""
    monkeypatch.setattr(stats, "_WARNED", set())
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(1, 2, 1, 16, generator=g), torch.randn(1, 2, 64, 16, generator=g), torch.randn(
        1, 2, 64, 16, generator=g)
    opts = {"schedule": SparrowSchedule.fixed(0), "inner": "eager"}
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        for fn in (lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v),
                   lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v) * 1.0):
            f = torch.compile(fn, backend="replay", options=opts)
            for _ in range(2):
                stats.record(stats.GraphStats(applied=True, mode="stale"))
                out = f(q, k, v)
                st = replaycompile.last_stats()
                assert st["mode"] == "sparrow" and st["applied"] is False and "has no mask" in st["fallback_reason"]
            torch.testing.assert_close(out, torch.nn.functional.scaled_dot_product_attention(q, k, v))
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "decode step runs dense" in warned[0] and "pass the attention mask" in warned[0]


def test_the_rewrite_says_what_it_cannot_tell():
    """A graph without shape metadata (not traced by Dynamo) cannot be told from a decode step: refused as
    decode-shaped (so the backend warns), never guessed; a prefill-shaped one is plainly not a decode step."""
    from replaycompile.passes.sparrow_rewrite import NotDecode, rewrite_decode

    def attend(q, k, v, m):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)

    gm = torch.fx.symbolic_trace(attend)
    with pytest.raises(NotDecode, match="no shape metadata") as e:
        rewrite_decode(gm, SparrowSchedule.fixed(0), use_triton=False)
    assert e.value.decode_shaped
    q = next(n for n in gm.graph.nodes if n.name == "q")
    q.meta["val"] = torch.empty(1, 2, 8, 16, device="meta")
    with pytest.raises(NotDecode, match=r"\(1, 2, 8, 16\) queries, not one token per row") as e:
        rewrite_decode(gm, SparrowSchedule.fixed(0), use_triton=False)
    assert not e.value.decode_shaped


@pytest.mark.parametrize("page_score", ["bound", "centroid"])
def test_the_rewrite_passes_the_schedules_page_score_to_the_op(page_score):
    from replaycompile.passes.sparrow_rewrite import rewrite_decode

    def attend(q, k, v, m):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)

    gm = torch.fx.symbolic_trace(attend)
    shapes = dict(q=(1, 2, 1, 16), k=(1, 2, 64, 16), v=(1, 2, 64, 16), m=(1, 1, 1, 64))
    for n in gm.graph.nodes:
        if n.name in shapes:
            n.meta["val"] = torch.empty(shapes[n.name], device="meta")
    new, info = rewrite_decode(gm, SparrowSchedule(pages=(1,), dense_layers=(), page_score=page_score), False)
    ops = [n for n in new.graph.nodes if n.target is torch.ops.replaycompile.sparse_decode.default]
    assert len(ops) == 1 and ops[0].args[-1] == page_score and info.sparse_layers == [0]


@pytest.mark.slow  # over 15 s on 2 cores
def test_user_compiled_decode_step_with_the_default_inductor_inner(sparrow_graphs):
    """The README's own decode step: ``torch.compile(model, backend="replay", options={"schedule": s})`` with
    the default inner (inductor) and the default dense layers (0, 1). It must give the sparse step's logits
    (the eager-inner rewrite is the reference), not the dense ones."""
    model = tiny_model("qwen3", "sdpa", num_hidden_layers=3)
    ids, am = _prompts(t=70)
    sched = SparrowSchedule.fixed(0)  # 5 pages at 71 tokens, 3 kept
    sess = rollout.DecodeSession(model, ids, am, 90)  # a dense prefill into a static cache of 96 slots
    dense, user, ref = sess.clone(), sess.clone(), sess.clone()
    user.step_fn = torch.compile(model, backend="replay", options={"schedule": sched})
    ref.set_schedule(sched, "eager")
    feed = torch.randint(6, 128, (3, 3), generator=torch.Generator().manual_seed(1))
    for i in range(3):
        want, got = ref.step(feed[:, i]), user.step(feed[:, i])
        st = replaycompile.last_stats()
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        assert (got - dense.step(feed[:, i])).abs().max() > 1e-3
    assert st["applied"] and st["cache_copied"] is False
    graphs = {g.inner: g for g in sparrow_graphs}
    assert sorted(graphs) == ["eager", "inductor"] and len(sparrow_graphs) == 2, "one decode graph each"
    assert graphs["inductor"].info.dense_layers == [0, 1] and graphs["inductor"].info.sparse_layers == [2]


def test_a_session_cache_not_in_pages_warns_and_counts_copies(caplog):
    """A session created without the schedule sizes its cache in 16-token pages; a 32-token-page schedule then
    pads and copies it every step: a warning from the session and one from the kernel, and the step's stats."""
    model = tiny_model("qwen3", "sdpa", num_hidden_layers=3)
    ids, am = _prompts(t=100)
    sess = rollout.DecodeSession(model, ids, am, 110)  # 112 slots: 3.5 pages of 32
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        sess.set_schedule(SparrowSchedule.fixed(0, page_size=32))
        sess.step(ids[:, -1])
    assert "cache holds 112 tokens, not a whole number of the schedule's 32-token pages" in caplog.text
    assert "is padded and copied on every sparse decode step because its length 112" in caplog.text
    assert replaycompile.last_stats()["cache_copied"] is True
    assert rollout.DecodeSession(model, ids, am, 110, SparrowSchedule.fixed(0, page_size=32)).max_len == 1024


def test_new_table_values_do_not_recompile(sparrow_graphs):
    model = retrieval_model()
    seqs, is_query = recall_sequences(2, 512, window=32, seed=1)
    sched = SparrowSchedule.fixed(0)
    alphas = {}
    for pages in ((0,), (64,), (0, 64)):
        sched.set_pages(pages)
        out = rollout.DecodeSession(model, seqs[:, :512], torch.ones(2, 512, dtype=torch.long), 576, sched)
        alphas[pages] = torch.stack([out.step(seqs[:, i]) for i in range(512, 540)], 1)
    assert len(sparrow_graphs) == 1, "changing the page table recompiled the decode step"
    # the table is really read: no budget misses retrievals that a full one finds
    assert not torch.equal(alphas[(0,)], alphas[(64,)])
    torch.testing.assert_close(alphas[(0, 64)], alphas[(0,)])  # bucket 0 (KV length <= 2048) -> 0 pages
    with pytest.raises(Exception, match="changed after compiling"):
        sched.page_size = 32
        rollout.DecodeSession(model, seqs[:, :512], torch.ones(2, 512, dtype=torch.long), 576, sched).step(
            seqs[:, 512])


def test_a_session_owns_its_page_centroids():
    """Each DecodeSession keeps its cache's page centroids in its own ``decode_state``, one per layer it
    decodes sparsely; a clone starts with its own, so sessions stepped in turn never share a memo."""
    from replaycompile.kernels import sparse_decode as sd

    model = retrieval_model()
    seqs, _ = recall_sequences(1, 256, window=32, seed=3)
    sched = SparrowSchedule.fixed(0)
    a = rollout.DecodeSession(model, seqs[:, :200], torch.ones(1, 200, dtype=torch.long), 240, sched)
    b = a.clone()
    sd.default_state().clear()
    for i in range(200, 204):
        a.step(seqs[:, i])
        b.step(seqs[:, i])
    sparse = [i for i in range(8) if i not in sched.dense_layers]
    assert sorted(key[0] for key in a.decode_state.pages) == sparse
    assert a.decode_state is not b.decode_state and b.decode_state.pages
    assert not sd.default_state().pages
    assert all(st.upto == 204 for st in a.decode_state.pages.values())  # 200 prefilled + 4 stepped
    torch.testing.assert_close(a.logits, b.logits)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_rollout_emits_no_deprecation_warning(sparse):
    """Prefill and decode steps pass the cache under the name the installed transformers' forward takes
    (``cache`` since the rename; ``past_key_values`` warns that it goes in 5.40), dense and Sparrow-compiled."""
    import warnings

    model = tiny_model("llama", "sdpa")
    ids, am = _prompts()
    sched = SparrowSchedule.fixed(2, bucket_tokens=64) if sparse else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        r = rollout.generate(model, ids, am, max_new_tokens=4, temperature=0, pad_token_id=0, schedule=sched)
    assert r.completions.shape == (3, 4)
    import inspect
    expected = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    assert rollout._cache_kwarg(model) == expected


def test_group_rollout_prefills_once_and_equals_repeated_prompts_and_its_reference_is_teacher_forced():
    model = tiny_model("qwen3", "sdpa")
    ids, am = _prompts()
    # greedy: G completions of a prompt from one prefill equal a rollout of the prompt repeated G times
    grouped = rollout.generate(model, ids, am, max_new_tokens=5, temperature=0, pad_token_id=0, group=2,
                               reference="eager")
    rep = rollout.generate(model, ids.repeat_interleave(2, 0), am.repeat_interleave(2, 0), max_new_tokens=5,
                           temperature=0, pad_token_id=0)
    assert torch.equal(grouped.sequences, rep.sequences)
    torch.testing.assert_close(grouped.logprobs, rep.logprobs)
    # sampled: the reference decoder, fed the rollout's tokens, equals a dense forward over the result
    r = rollout.generate(model, ids, am, max_new_tokens=5, temperature=1.0, pad_token_id=0, group=2,
                         generator=torch.Generator().manual_seed(0), reference="eager")
    assert r.sequences.shape[0] == 6 and r.reference_logits.shape == r.logits.shape == (6, 5, model.config.vocab_size)
    full = model(input_ids=r.sequences, attention_mask=torch.cat([am.repeat_interleave(2, 0),
                                                                  r.completion_mask], 1)).logits
    torch.testing.assert_close(r.reference_logits, full[:, 39:-1].float(), rtol=1e-4, atol=1e-4)
    # (a dense rollout: the reference's logits are its own)
    torch.testing.assert_close(r.reference_logits, r.logits, rtol=1e-5, atol=1e-5)
    assert len(r.timing["step"]) == len(r.timing["reference_step"]) == 4 and r.timing["prefill"] > 0
    with pytest.raises(ValueError, match="reference"):
        rollout.generate(model, ids, am, max_new_tokens=2, reference="sparse")
