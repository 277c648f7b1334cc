"""Sparrow: the schedule, the acceptance metric, the TIS loss, the sparse decode op and its graph rewrite,
rollouts, the retrieval test model and calibration."""

from __future__ import annotations

import json
import logging
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import replaycompile
import replaycompile.backend as backend
from helpers import instances_of
from replaycompile import rollout, sparrow
from replaycompile.kernels import sparse_decode as sd
from replaycompile.kernels.sparse_decode_reference import select_pages_reference, sparse_decode_reference
from replaycompile.models import tiny_model
from replaycompile.retrieval import recall_accuracy, recall_sequences, retrieval_model
from replaycompile.sparrow import (AcceptanceMonitor, SparrowSchedule, acceptance, acceptance_summary,
                                   acceptance_topk, calibrate, calibration_windows, measure_acceptance,
                                   measure_windows, tis_policy_loss)

# ------------------------------------------------------------------------------------------------ schedule


def test_schedule_budget_and_json_round_trip(tmp_path):
    s = SparrowSchedule(pages=(4, 8, 8, 16), bucket_tokens=64, dense_layers=(0,))
    assert s.topk_pages(1) == 4 and s.topk_pages(64) == 4 and s.topk_pages(65) == 8 and s.topk_pages(10_000) == 16
    assert s.budget(16) == 1  # one page exists
    assert s.budget(190) == 8 + 3 and s.budget_tokens(190) == 176 and s.budget(200) == 13  # all 13 pages
    path = tmp_path / "schedule.json"
    s.save(path)
    assert json.loads(path.read_text())["format"] == "replaycompile.sparrow_schedule"
    t = SparrowSchedule.load(path)
    assert t == s and t.to_json() == s.to_json()


@pytest.mark.parametrize("kwargs,match", [
    (dict(pages=(8, 4)), "must not decrease.*bucket 1 keeps 4"),
    (dict(pages=()), "empty"),
    (dict(pages=(4, -1)), r"pages\[1\]"),
    (dict(pages=(4,), page_size=12), "power of two"),
    (dict(pages=(4,), bucket_tokens=100), "multiple of page_size"),
    (dict(pages=(4,), local_pages=0), "local_pages"),
    (dict(pages=(4,), dense_layers=(1, 1)), "dense_layers"),
    (dict(pages=(1,) * 300), "at most 256"),
])
def test_schedule_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SparrowSchedule(**kwargs)


def test_schedule_json_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown field.*budget"):
        SparrowSchedule.from_dict({"pages": [1], "budget": 3})
    with pytest.raises(ValueError, match="not a Sparrow schedule"):
        SparrowSchedule.from_dict({"format": "other", "pages": [1]})
    with pytest.raises(ValueError, match="missing field 'pages'"):
        SparrowSchedule.from_dict({})
    bad = tmp_path / "bad.json"
    bad.write_text("{pages: 1")
    with pytest.raises(ValueError, match="not valid JSON"):
        SparrowSchedule.load(bad)


def test_set_pages_validates_first():
    s = SparrowSchedule(pages=(2, 4))
    with pytest.raises(ValueError, match="must not decrease"):
        s.set_pages((4, 2))
    assert s.pages == (2, 4)
    s.set_pages((1, 3, 9))
    assert s.pages == (1, 3, 9) and s.table(padded=True).shape == (256,) and int(s.table(padded=True)[-1]) == 9


def test_backend_accepts_schedule_paths_and_rejects_other_values(tmp_path):
    p = tmp_path / "s.json"
    SparrowSchedule(pages=(3,)).save(p)
    assert replaycompile.parse_options({"schedule": str(p)}).schedule.pages == (3,)
    with pytest.raises(ValueError, match="SparrowSchedule"):
        replaycompile.parse_options({"schedule": [3, 4]})


# ------------------------------------------------------------------------------------------------ metric, loss


def test_acceptance_by_hand():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    q = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    a = acceptance(p.log()[None], q.log()[None])
    assert a.shape == (1,) and abs(a.item() - (0.2 + 0.3 + 0.2)) < 1e-12
    assert abs(acceptance(p.log(), p.log() + 3.0).item() - 1.0) < 1e-12  # logits are shift invariant
    # top-k: a lower bound, exact when k covers the vocabulary
    lb = acceptance_topk(p.log()[:2], torch.tensor([0, 1]), q.log()[[2, 1]], torch.tensor([2, 1]))
    assert abs(lb.item() - 0.3) < 1e-12
    full = acceptance_topk(p.log(), torch.tensor([0, 1, 2]), q.log()[[2, 1, 0]], torch.tensor([2, 1, 0]))
    assert abs(full.item() - 0.7) < 1e-12


@settings(max_examples=30)
@given(seed=st.integers(0, 1000), k=st.integers(1, 12))
def test_topk_acceptance_is_a_lower_bound(seed, k):
    g = torch.Generator().manual_seed(seed)
    d, s = (torch.randn(4, 12, generator=g, dtype=torch.float64) * 2 for _ in range(2))
    dl, di = d.log_softmax(-1).topk(k)
    sl, si = s.log_softmax(-1).topk(k)
    assert bool((acceptance_topk(dl, di, sl, si) <= acceptance(d, s) + 1e-12).all())


def test_acceptance_summary_bins():
    alpha = torch.tensor([1.0, 0.9, 0.2, 1.0, 0.5, 0.7], dtype=torch.float64)
    pos = torch.tensor([0, 10, 20, 100, 110, 130])
    rows = acceptance_summary(alpha, pos, bin_tokens=100)
    assert [(r["bin_start"], r["count"]) for r in rows] == [(0, 3), (100, 3)]
    assert abs(rows[0]["mean"] - 0.7) < 1e-12
    assert abs(rows[1]["p5"] - (0.5 + 0.05 * 2 * (0.7 - 0.5))) < 1e-12  # linear interpolation, like numpy


def test_tis_loss_by_hand():
    logp = torch.tensor([[math.log(0.5), math.log(0.2)]], requires_grad=True)
    old = torch.tensor([[math.log(0.4), math.log(0.2)]])
    roll = torch.tensor([[math.log(0.1), math.log(0.4)]])
    adv = torch.tensor([1.0])
    mask = torch.tensor([[1.0, 1.0]])
    loss, stats = tis_policy_loss(logp, old, roll, adv, mask, clip_low=0.2, tis_cap=2.0)
    # token 1: ratio 1.25 clipped to 1.2 (A > 0), w = min(0.4 / 0.1, 2) = 2 -> -2.4
    # token 2: ratio 1, w = 0.2 / 0.4 = 0.5 -> -0.5
    assert abs(loss.item() - (-2.4 - 0.5) / 2) < 1e-6
    assert stats["clip_fraction"] == 0.5 and stats["tis_truncated_fraction"] == 0.5
    loss.backward()
    assert logp.grad[0, 0] == 0  # clipped: no gradient
    assert abs(logp.grad[0, 1].item() - (-0.5 * 1.0 / 2)) < 1e-6
    with pytest.raises(ValueError, match="aggregation"):
        tis_policy_loss(logp, old, roll, adv, mask, aggregation="sum")


def test_tis_loss_seq_mean_and_clip_high_by_hand():
    logp = torch.tensor([[0.5, 0.2, 0.3], [0.6, 0.1, 1.0]]).log().requires_grad_()
    old = torch.tensor([[0.4, 0.2, 0.2], [0.5, 0.2, 1.0]]).log().requires_grad_()
    roll = torch.tensor([[0.4, 0.1, 0.2], [0.5, 0.2, 1.0]]).log().requires_grad_()
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    loss, stats = tis_policy_loss(logp, old, roll, adv, mask, clip_low=0.2, clip_high=0.3, tis_cap=1.5,
                                  aggregation="seq-mean")
    # row 0 (A = 1): ratio 1.25 inside [0.8, 1.3] -> -1.25; ratio 1, w = min(0.2 / 0.1, 1.5) -> -1.5;
    #   ratio 1.5 clipped to 1.3 -> -1.3; mean -1.35
    # row 1 (A = -1): ratio 1.2 -> 1.2; ratio 0.5 clipped up to 0.8 (the pessimistic side) -> 0.8; mean 1.0
    assert abs(loss.item() - (-1.35 + 1.0) / 2) < 1e-6
    assert abs(stats["clip_fraction"] - 2 / 5) < 1e-6 and abs(stats["tis_truncated_fraction"] - 1 / 5) < 1e-6
    assert abs(stats["tis_weight_mean"] - 5.5 / 5) < 1e-6
    loss.backward()
    # seq-mean weighs a token by 1 / (rows * its row's tokens); clipped tokens get no gradient
    torch.testing.assert_close(logp.grad[0], torch.tensor([-1.25 / 6, -1.5 / 6, 0.0]))
    assert logp.grad[1, 1] == 0 and logp.grad[1, 2] == 0
    assert old.grad is None and roll.grad is None  # the ratio's baseline and the TIS weight are constants
    token_mean, _ = tis_policy_loss(logp, old, roll, adv, mask, clip_low=0.2, clip_high=0.3, tis_cap=1.5)
    assert abs(token_mean.item() - (-4.05 + 2.0) / 5) < 1e-6
    symmetric, _ = tis_policy_loss(logp, old, roll, adv, mask, clip_low=0.2, tis_cap=1.5, aggregation="seq-mean")
    assert abs(symmetric.item() - ((-1.2 - 1.5 - 1.2) / 3 + 1.0) / 2) < 1e-6  # clip_high defaults to clip_low


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


def test_monitor_warns_below_target(caplog):
    mon = AcceptanceMonitor(target=0.86, bin_tokens=64)
    dense = torch.zeros(2, 40)
    roll = torch.zeros(2, 40)
    dense[:, :4] = -3.0  # p_dense / p_rollout = e^-3 on a few tokens of the first bin
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        rows = mon.update(dense, roll, torch.ones(2, 40), prompt_lengths=30)
    assert [r["bin_start"] for r in rows] == [0, 64]
    assert rows[0]["p5"] < 0.86 and rows[1]["p5"] == 1.0
    assert "KV lengths 0-64" in caplog.text and "KV lengths 64-128" not in caplog.text


# ------------------------------------------------------------------------------------------------ decode op


def _decode_case(b=2, hq=4, hkv=2, d=16, length=100, kv_len=77, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    k = torch.randn(b, hkv, length, d, generator=g).to(dtype)
    v = torch.randn(b, hkv, length, d, generator=g).to(dtype)
    q = torch.randn(b, hq, 1, d, generator=g).to(dtype)
    vis = torch.zeros(b, length, dtype=torch.bool)
    vis[:, :kv_len] = True
    vis[-1, :21] = False  # a left-padded row
    return q, k, v, vis


def _softmax_attention(q, k, v, vis, kv_len, scale):
    """Plain softmax attention of every query head over its KV head's visible keys, in float64: the dense
    decode specification, independent of the op's code."""
    g = q.shape[1] // k.shape[1]
    kk = k[:, :, :kv_len].double().repeat_interleave(g, 1)
    vv = v[:, :, :kv_len].double().repeat_interleave(g, 1)
    s = (q.double() @ kk.transpose(-1, -2)) * scale
    s = s.masked_fill(~vis[:, None, None, :kv_len], float("-inf"))
    return (s.softmax(-1) @ vv).to(q.dtype)


@pytest.mark.parametrize("use_triton", [False, True])
@pytest.mark.parametrize("topk", [0, 1, 3])
def test_sparse_decode_matches_reference(topk, use_triton):
    q, k, v, vis = _decode_case(length=160, kv_len=150)
    assert 1 + 2 + topk < 10  # 10 pages: every budget really selects
    sd.reset_page_state()
    kept = select_pages_reference(q, k, vis, 150, topk, 16, 1, 2)
    ref = sparse_decode_reference(q, k, v, vis, kept, 16, 0.25)
    out = sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([150, topk]), 0.25, 16, 1, 2, use_triton, 0)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    # the sparse path ran: pages were left out, and it shows in the output
    assert not bool(kept.all()) and (out - _softmax_attention(q, k, v, vis, 150, 0.25)).abs().max() > 1e-3
    # the selected pages: exactly the reference's among pages that hold a visible key
    pages = sd.select_pages(q, k, vis, 150, topk, 16, 1, 2, state_key=1)
    got = torch.zeros_like(kept).scatter_(2, pages, True)
    has = torch.stack([vis[:, p * 16:(p + 1) * 16].any(1) for p in range(kept.shape[2])], 1)[:, None]
    assert torch.equal(got & has, kept & has)


def test_triton_decode_bf16_and_splits():
    q, k, v, vis = _decode_case(hq=8, hkv=2, d=32, length=200, kv_len=190, dtype=torch.bfloat16)
    pages = torch.arange(12).expand(2, 2, 12)
    kept = torch.ones(2, 2, 12, dtype=torch.bool)
    ref = sparse_decode_reference(q, k, v, vis, kept, 16, 0.2)
    for n_split in (1, 3):
        out = sd.triton_decode(q, k, v, vis, pages, 16, 0.2, n_split=n_split, pages_per_iter=2)
        torch.testing.assert_close(out.float(), ref.float(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("use_triton", [False, True])
def test_full_budget_is_dense_decode_exactly(use_triton):
    q, k, v, vis = _decode_case(length=112, kv_len=77)
    dense = _softmax_attention(q, k, v, vis, 77, 0.25)
    # 5 pages, 1 + 2 + 2 >= 5: the op attends to every page
    out = sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([77, 2]), 0.25, 16, 1, 2, use_triton, 0)
    torch.testing.assert_close(out, dense, rtol=1e-6, atol=1e-6)
    # and the selection path with a budget that covers every page gives the same attention
    sd.reset_page_state()
    pages = sd.select_pages(q, k, vis, 77, 2, 16, 1, 2, state_key=2)
    assert torch.equal(pages, torch.arange(5).expand(2, 2, 5))
    torch.testing.assert_close(sd._gather_decode(q, k, v, vis, pages, 16, 0.25), dense, rtol=1e-6, atol=1e-6)


def test_a_cache_not_in_whole_pages_is_copied_with_a_warning(caplog):
    """The CPU path gathers whole contiguous pages: any other cache is padded and copied every step (correct,
    slow), which says so once per shape and counts in ``cache_copies``."""
    q, k, v, vis = _decode_case(length=100, kv_len=90)
    kept = select_pages_reference(q, k, vis, 90, 1, 16, 1, 2)
    ref = sparse_decode_reference(q, k, v, vis, kept, 16, 0.25)
    sd.reset_page_state()
    before = sd.cache_copies()
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        for _ in range(2):
            out = sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([90, 1]), 0.25, 16, 1, 2, False, 13)
            torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert sd.cache_copies() == before + 2
    msgs = [r.getMessage() for r in caplog.records if "padded and copied" in r.getMessage()]
    assert len(msgs) == 1 and "[2, 2, 100, 16]" in msgs[0] and "not a multiple of the page size 16" in msgs[0], msgs
    caplog.clear()
    kt = k.transpose(1, 2).contiguous().transpose(1, 2)[:, :, :96]  # whole pages, strided
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        out = sd.sparse_decode(q, kt, v[:, :, :96], vis[:, None, None, :96], torch.tensor([90, 1]), 0.25, 16, 1, 2,
                               False, 14)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert "because it is not contiguous:" in caplog.text and "not a multiple" not in caplog.text


def test_page_centroids_are_incremental_and_reset_on_a_new_sequence():
    q, k, v, vis = _decode_case(length=128, kv_len=60)
    sd.reset_page_state()
    for n in range(60, 100):  # decode: one more visible key per step
        vis[:, n - 1] = True
        vis[-1, :21] = False
        sd.select_pages(q, k, vis, n, 1, 16, 1, 2, state_key=7)
    st = next(iter(sd._STATES.values()))
    fresh = sd.PageState(k, 16)
    fresh.update(k, vis, 99)
    torch.testing.assert_close(st.sums, fresh.sums)
    assert st.upto == 99
    k2 = k.clone()
    k2[:, :, 0] += 1  # another sequence in the same cache buffer
    sd.select_pages(q, k2, vis, 99, 1, 16, 1, 2, state_key=7)
    fresh2 = sd.PageState(k2, 16)
    fresh2.update(k2, vis, 99)
    torch.testing.assert_close(st.sums, fresh2.sums)


def test_opcheck_decode_ops():
    q, k, v, vis = _decode_case()
    mask = vis[:, None, None, :]
    torch.library.opcheck(torch.ops.replaycompile.sparse_decode.default,
                          (q, k, v, mask, torch.tensor([77, 1]), 0.25, 16, 1, 2, False, 3))
    torch.library.opcheck(torch.ops.replaycompile.sparrow_budget.default,
                          (mask, SparrowSchedule(pages=(1, 2)).table(), 64))
    assert sd.sparrow_budget(mask, torch.tensor([1, 2, 3]), 64).tolist() == [77, 2]


# ------------------------------------------------------------------------------------------------ rollouts


@pytest.fixture
def sparrow_graphs(monkeypatch):
    return instances_of(monkeypatch, backend.SparrowGraph)


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
    model = tiny_model("qwen3", "sdpa", num_hidden_layers=3)
    ids, am = _prompts(t=70)
    dense = rollout.generate(model, ids, am, max_new_tokens=20, temperature=0, return_logits=True)
    full = rollout.generate(model, ids, am, max_new_tokens=20, temperature=0, return_logits=True,
                            schedule=SparrowSchedule.dense(dense_layers=(0,)))
    assert torch.equal(full.sequences, dense.sequences)
    torch.testing.assert_close(full.logits, dense.logits, rtol=1e-4, atol=1e-4)
    st = replaycompile.last_stats()
    assert st["mode"] == "sparrow" and st["applied"] and st["sparse_layers"] == [1, 2] and st["dense_layers"] == [0]
    assert st["cache_copied"] is False  # the session sizes its cache in whole pages
    # with a budget that really drops pages, the decoded tokens change but the prompt's logits (prefill) do not
    sparse = rollout.generate(model, ids, am, max_new_tokens=20, temperature=0, return_logits=True,
                              schedule=SparrowSchedule.fixed(0, dense_layers=(0,)))
    torch.testing.assert_close(sparse.logits[:, 0], dense.logits[:, 0], rtol=1e-5, atol=1e-5)
    assert (sparse.logits[:, 1:] - dense.logits[:, 1:]).abs().max() > 1e-3
    assert [g.info is not None for g in sparrow_graphs] == [True, True]  # the decode steps only


def test_other_graphs_compile_unchanged_with_a_schedule(sparrow_graphs, caplog):
    """With a schedule, a prefill (several queries per row) and a training forward go through the backend and
    are compiled as they are: equal to eager, left dense with the reason in ``last_stats()``, and no warning
    (they are not decode steps)."""
    model = tiny_model("qwen3", "sdpa", num_hidden_layers=3)
    ids, am = _prompts(t=24)
    compiled = torch.compile(model, backend="replay", options={"schedule": SparrowSchedule.fixed(0), "inner": "eager"})
    backend._record({"applied": True, "mode": "stale"})  # a previous call's stats must not survive
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
    monkeypatch.setattr(backend.SparrowGraph, "_warned", set())
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(1, 2, 1, 16, generator=g), torch.randn(1, 2, 64, 16, generator=g), torch.randn(
        1, 2, 64, 16, generator=g)
    opts = {"schedule": SparrowSchedule.fixed(0), "inner": "eager"}
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        for fn in (lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v),
                   lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v) * 1.0):
            f = torch.compile(fn, backend="replay", options=opts)
            for _ in range(2):
                backend._record({"applied": True, "mode": "stale"})
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


# ------------------------------------------------------------------------------------------------ retrieval


def test_retrieval_model_really_retrieves():
    model = retrieval_model()
    for ctx in (256, 1024):
        seqs, is_query = recall_sequences(2, ctx, seed=ctx)
        assert recall_accuracy(model, seqs, is_query) == 1.0
    # and it needs the far key: with the planted pairs removed it cannot answer
    seqs, is_query = recall_sequences(2, 1024, seed=3)
    wiped = seqs.clone()
    wiped[:, 1:1024][(wiped[:, 1:1024] >= 16)] = 1
    assert recall_accuracy(model, wiped, is_query) < 0.2


def test_sparse_decoding_breaks_the_tail_not_the_mean():
    """The paper's effect on the recall model: with too few pages, p5 alpha collapses while the mean stays high;
    enough pages bring the tail back."""
    model = retrieval_model()
    seqs, _ = recall_sequences(2, 1024, window=64, seed=4)
    alphas, pos = measure_acceptance(model, seqs, 1024, {"few": SparrowSchedule.fixed(0),
                                                           "many": SparrowSchedule.fixed(48)})
    few, many = alphas["few"].flatten(), alphas["many"].flatten()
    assert few.mean() > 0.85 and torch.quantile(few, 0.05) < 0.5
    assert torch.quantile(many, 0.05) > 0.99


@pytest.mark.slow
def test_calibration_takes_the_cheapest_candidates_and_holds_out_of_sample():
    """Calibration's choice, read from its own table: per bin the chosen count meets the target, and the next
    cheaper candidate fails in that bin or an earlier one (so no cheaper non-decreasing table meets it). Then
    the schedule on held-out prompts (another seed). With 96 tokens per bin a p5 is the ~5th-worst token, so
    one missed retrieval decides it and a held-out draw does not pin a per-bin p5 down (held-out seeds 6 and 8
    each miss it in a 2-page bin); what is checked out of sample is the fraction of tokens below the target (at most
    1.5x the 5% the quantile allows, per bin) and the p5 pooled over the bins."""
    model = retrieval_model()
    wins = calibration_windows(1536 + 48, 512, 48)
    seqs, _ = recall_sequences(2, 1536, window=48, seed=5, windows=wins)
    cands = [0, 2, 8, 32]
    cal = calibrate(model, seqs, candidates=cands, target=0.86, bin_tokens=512, window=48, progress=False)
    pages = cal.schedule.pages
    assert len(pages) == 4 and list(pages) == sorted(pages) and all(cal.met), cal.rows()
    p5 = {(r["bin_start"] // 512, r["pages"]): r["p5"] for r in cal.table}
    assert len(p5) == len(cal.table) == 4 * len(cands), "every candidate in every bin"
    for b, chosen in enumerate(pages):
        assert p5[b, chosen] >= 0.86, (b, chosen, cal.rows())
        i = cands.index(chosen)
        assert i == 0 or any(p5[e, cands[i - 1]] < 0.86 for e in range(b + 1)), (b, chosen, cal.rows())
    assert max(pages) > 0 and min(p5[b, 0] for b in range(4)) < 0.5  # 0 pages misses the retrievals
    # out of sample
    held, _ = recall_sequences(2, 1536, window=48, seed=6, windows=wins)
    a, pos = measure_windows(model, held, wins, 48, {"cal": cal.schedule})
    alpha, pos = a["cal"].flatten(), pos.repeat(2)
    below = [float((alpha[pos // 512 == b] < 0.86).double().mean()) for b in range(4)]
    assert max(below) <= 0.075 and torch.quantile(alpha.double(), 0.05) >= 0.86, (below, pages)


def _rows(spec, bin_tokens=100):
    return [dict(bin_start=b * bin_tokens, bin_end=(b + 1) * bin_tokens, pages=c, p5=p5, mean=p5, count=96)
            for b, c, p5 in spec]


def test_calibration_choice_by_hand(caplog):
    """``choose_pages`` from measured tables, no model: the cheapest candidate meeting the target per bin (0 is
    a choice), made non-decreasing; a bin without data carries a value; a bin nothing meets goes dense, loudly."""
    table = _rows([(0, 0, 0.90), (0, 2, 0.95), (1, 0, 0.50), (1, 2, 0.90), (1, 8, 0.99), (2, 0, 0.95),
                   (2, 2, 0.99)])
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        assert sparrow.choose_pages(table, 0.86, 100, 4) == ([0, 2, 2, 2], [True, True, True, None])
    assert not caplog.records
    # a leading bin without data takes the first measured value; a failing bin keeps every page from there on
    table = _rows([(1, 0, 0.90), (1, 4, 0.95), (2, 0, 0.30), (2, 4, 0.70), (3, 0, 0.99)])
    with caplog.at_level(logging.WARNING, logger="replaycompile"):
        pages, met = sparrow.choose_pages(table, 0.86, 100, 4)
    every = SparrowSchedule.dense().pages[0]
    assert (pages, met) == ([0, 0, every, every], [None, True, False, True])
    assert "KV lengths 200-300" in caplog.text and "best p5 0.7000, with 4 pages" in caplog.text
    assert "KV lengths 100-200" not in caplog.text
    with pytest.raises(ValueError, match="no measurements"):
        sparrow.choose_pages([], 0.86, 100, 2)


def test_bench_verdicts_need_held_out_data_of_the_same_schedule():
    import argparse
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "bench" / "sparrow_bench.py"
    spec = importlib.util.spec_from_file_location("sparrow_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    def row(v, data, p5, b=0):
        return dict(variant=v, data=data, bin_start=b, bin_end=b + 512, p5=p5, mean=1.0)

    assert "not measured" in bench.acceptance_verdict(dict(acceptance=[], met=None), 0.86)  # throughput only
    in_sample = [row("calibrated", "calibration", 1.0), row("fixed 0", "calibration", 0.1)]
    assert "not measured" in bench.acceptance_verdict(dict(acceptance=in_sample, met=[True]), 0.86)
    held = [row("calibrated", "held-out", 0.9), row("calibrated", "held-out", 1.0, 512)]
    assert bench.acceptance_verdict(dict(acceptance=held, met=[True, True]), 0.86).endswith(": True")
    v = bench.acceptance_verdict(dict(acceptance=held, met=[True, False]), 0.86)  # bucket 1 ran dense
    assert ": False" in v and "calibration failed in buckets [1]" in v
    v = bench.acceptance_verdict(dict(acceptance=held + [row("calibrated", "held-out", 0.5, 1024)], met=None), 0.86)
    assert ": False" in v and "1024-1536: 0.500" in v
    sched = SparrowSchedule(pages=(2, 8), bucket_tokens=512)
    args = argparse.Namespace(acceptance_from="prev.json", schedule="s.json", bin=512)
    bench.check_acceptance_source(dict(schedule=sched.to_dict(), args=dict(bin=512)), sched, args)
    with pytest.raises(SystemExit, match=r"another schedule \(pages \[2, 16\]\)"):
        other = SparrowSchedule(pages=(2, 16), bucket_tokens=512)
        bench.check_acceptance_source(dict(schedule=other.to_dict(), args=dict(bin=512)), sched, args)
    with pytest.raises(SystemExit, match="its bins are 1024 tokens"):
        bench.check_acceptance_source(dict(schedule=sched.to_dict(), args=dict(bin=1024)), sched, args)


# ------------------------------------------------------------------------------------------------ DistillSparse


def test_distill_sparse_reduces_the_kl_and_leaves_the_dense_policy_alone():
    from replaycompile.distill import DistillSparse

    model = retrieval_model()
    ctx = 256
    seqs, _ = recall_sequences(2, ctx, window=32, seed=2, query_every=4)
    am = torch.ones_like(seqs)
    ds = DistillSparse(model, SparrowSchedule.fixed(0, bucket_tokens=512), r=16, lora_alpha=32, lr=3e-3,
                       kl_coef=1.0)
    assert all(p.requires_grad for n, p in ds.model.named_parameters() if "lora_" not in n), \
        "the RL trainer's base weights must stay trainable"
    dense = ds.dense_logprobs(seqs, am, ctx)
    mask = torch.ones_like(dense)

    # the policy term: advantages, and rollout log-probs that differ from the sparse policy's (ratios != 1, some
    # clipped); the step's gradient is captured instead of applied, and checked against the loss written out
    roll = dense + 0.3 * torch.randn(dense.shape, generator=torch.Generator().manual_seed(0))
    adv = torch.tensor([1.0, -0.5])
    grads = []
    ds.opt.step = lambda: grads.append([p.grad.clone() for p in ds.lora_params])
    ds.kl_coef = 0.01  # both terms of a similar size in the gradient (the KL of 0 pages is large)
    terms = ds.step(seqs, am, ctx, mask, adv, rollout_logprobs=roll, dense_logprobs=dense)
    del ds.opt.step
    logp = ds.sparse_logprobs(seqs, am, ctx)
    ratio = torch.exp(logp - roll)  # TIS weight 1: the sparse policy's old log-probs are the rollout's
    pg = -torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.2) * adv[:, None]).mean()
    log_r = dense - logp
    kl_term = (log_r.exp() - 1 - log_r).mean()
    clipped = float(((ratio < 0.8) | (ratio > 1.2)).double().mean())
    assert 0 < clipped < 1 and abs(terms["clip_fraction"] - clipped) < 1e-6
    assert abs(terms["policy_loss"] - pg.item()) < 1e-5 and abs(terms["kl"] - kl_term.item()) < 1e-5
    assert abs(terms["loss"] - (pg + 0.01 * kl_term).item()) < 1e-5
    pg_grad = torch.autograd.grad(pg, ds.lora_params, retain_graph=True)
    kl_grad = torch.autograd.grad(0.01 * kl_term, ds.lora_params)
    norm = lambda gs: torch.cat([g.flatten() for g in gs]).norm()  # noqa: E731
    want = [a + b for a, b in zip(pg_grad, kl_grad)]
    assert norm([a - b for a, b in zip(grads[0], want)]) < 1e-4 * norm(want), "the step's gradient is not its loss's"
    assert norm(pg_grad) > 0.2 * norm(want) and norm(kl_grad) > 0.2 * norm(want), (norm(pg_grad), norm(kl_grad))
    ds.kl_coef = 1.0

    def kl():
        with torch.no_grad():
            lr = dense - ds.sparse_logprobs(seqs, am, ctx)
        return float((lr.exp() - 1 - lr).mean())

    before = kl()
    for _ in range(3):  # the KL term alone (zero advantages) pulls the sparse policy toward the dense one
        ds.step(seqs, am, ctx, mask, torch.zeros(2), rollout_logprobs=dense.clone(), dense_logprobs=dense)
    after = kl()
    assert after < 0.6 * before, (before, after)
    torch.testing.assert_close(ds.dense_logprobs(seqs, am, ctx), dense)  # adapters off: the dense policy


def test_decode_kernel_compiles_for_hopper():
    """No GPU here: compile the Triton split-K decode kernel ahead of time for sm_90, as the block-sparse
    kernels are (tests/test_block_sparse.py)."""
    import inspect

    from trees import compile_for_hopper

    consts = dict(GROUP=4, BLOCK_G=16, HEAD_DIM=128, BLOCK_D=128, PAGE=16, PAGES_PER_ITER=4, N_SPLIT=8, UPCAST=False)
    sig = {}
    for name in inspect.signature(sd._decode_kernel).parameters:
        if name in consts:
            sig[name] = "constexpr"
        elif name in ("Q", "K", "V"):
            sig[name] = "*bf16"
        elif name in ("O_ACC", "O_M", "O_L"):
            sig[name] = "*fp32"
        elif name == "VIS":
            sig[name] = "*i8"
        elif name == "PAGES":
            sig[name] = "*i32"
        elif name == "scale_log2":
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    # fails (not skips) where the Triton wheel ships ptxas: this is CI's only Hopper check of the decode kernel
    k = compile_for_hopper(sd._decode_kernel, sig, consts, num_warps=4, num_stages=2)
    assert k.metadata.shared <= 232448


def test_reserved_pages_that_coincide_free_their_slot():
    """A heavily left-padded row: its sink page is one of the local pages, and the freed slot goes to the next
    best page, as the reference says (the budget per row stays sink + local + topk)."""
    q, k, v, vis = _decode_case(length=160, kv_len=150)
    vis[-1, :130] = False  # row 1: real tokens only in pages 8 and 9 -> sink page 8 is also a local page
    sd.reset_page_state()
    kept = select_pages_reference(q, k, vis, 150, 1, 16, 1, 2)
    pages = sd.select_pages(q, k, vis, 150, 1, 16, 1, 2, state_key=11)
    got = torch.zeros_like(kept).scatter_(2, pages, True)
    has = torch.stack([vis[:, p * 16:(p + 1) * 16].any(1) for p in range(kept.shape[2])], 1)[:, None]
    assert torch.equal(got & has, kept & has)
    ref = sparse_decode_reference(q, k, v, vis, kept, 16, 0.25)
    out = sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([150, 1]), 0.25, 16, 1, 2, False, 12)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
