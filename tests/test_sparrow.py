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
from replaycompile import rollout
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


@pytest.mark.parametrize("use_triton", [False, True])
@pytest.mark.parametrize("topk", [0, 1, 2])
def test_sparse_decode_matches_reference(topk, use_triton):
    q, k, v, vis = _decode_case()
    sd.reset_page_state()
    kept = select_pages_reference(q, k, vis, 77, topk, 16, 1, 2)
    ref = sparse_decode_reference(q, k, v, vis, kept, 16, 0.25)
    out = sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([77, topk]), 0.25, 16, 1, 2, use_triton, 0)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    # the selected pages: exactly the reference's among pages that hold a visible key
    pages = sd.select_pages(q, k, vis, 77, topk, 16, 1, 2, state_key=1)
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


def test_full_budget_is_dense_decode_exactly():
    q, k, v, vis = _decode_case()
    out = sd.sparse_decode(q, k, v, vis[:, None, None, :], torch.tensor([77, 2]), 0.25, 16, 1, 2, False, 0)
    # 5 pages, 2 + 1 + 2 >= 5: the dense path, bit for bit
    assert torch.equal(out, sd.dense_decode(q, k, v, vis, 77, 0.25))


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
    assert st["mode"] == "sparrow" and st["sparse_layers"] == [1, 2] and st["dense_layers"] == [0]
    assert [g.info is not None for g in sparrow_graphs] == [True]  # one decode graph; prefill is not compiled


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


def test_calibration_is_monotone_and_meets_the_target():
    model = retrieval_model()
    seqs, _ = recall_sequences(2, 1536, window=48, seed=5, windows=calibration_windows(1536 + 48, 512, 48))
    cands = [0, 2, 8, 32, 96]
    cal = calibrate(model, seqs, candidates=cands, target=0.86, bin_tokens=512, window=48, progress=False)
    pages = cal.schedule.pages
    assert len(pages) == 4 and list(pages) == sorted(pages) and all(cal.met), cal.rows()
    assert pages[0] < 96, "the cheapest candidates that meet the target were not taken"
    # the table's rows: every candidate in every bin; with 0 pages the retrievals fail
    assert len(cal.table) == 4 * len(cands) and min(r["p5"] for r in cal.table if r["pages"] == 0) < 0.5
    # re-measured with the calibrated schedule, every bin meets the target
    a, pos = measure_windows(model, seqs, calibration_windows(1584, 512, 48), 48, {"cal": cal.schedule})
    rows = acceptance_summary(a["cal"].flatten(), pos.repeat(2), 512)
    assert len(rows) == 4 and all(r["p5"] >= 0.86 for r in rows), rows


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

    def kl():
        with torch.no_grad():
            lr = dense - ds.sparse_logprobs(seqs, am, ctx)
        return float((lr.exp() - 1 - lr).mean())

    before = kl()
    for _ in range(3):
        ds.step(seqs, am, ctx, mask, torch.zeros(2), rollout_logprobs=dense.clone(), dense_logprobs=dense)
    after = kl()
    assert after < 0.6 * before, (before, after)
    torch.testing.assert_close(ds.dense_logprobs(seqs, am, ctx), dense)  # adapters off: the dense policy


def test_decode_kernel_compiles_for_hopper():
    """No GPU here: compile the Triton split-K decode kernel ahead of time for sm_90, as the block-sparse
    kernels are (tests/test_block_sparse.py)."""
    import inspect

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile
    from triton.runtime.jit import JITFunction

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
    try:
        k = compile(ASTSource(JITFunction(sd._decode_kernel), sig, consts), target=GPUTarget("cuda", 90, 32),
                    options=dict(num_warps=4, num_stages=2))
    except FileNotFoundError as e:
        pytest.skip(f"Triton's CUDA toolchain is missing: {e}")
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
